"""Issue 30, second round: a hostile WACZ (issue 32's newer container) against every verb that reads one.

Each case is an attack: a ZIP whose JSON is nested too deeply to read, an encrypted member, a name given
twice, logs that inflate far beyond the WACZ (or a log named ``..``), many members each within the
per-member ratio, and a ``manifest.json`` planted in the output folder as a link to ``/dev/zero``. Every
one must be read or refused with a message naming the file (and the member), never a traceback, and in
flat memory. Every WACZ is made here with zipfile (no py-wacz needed).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest
from conftest import run_cli

from rewriter.containers.wacz import WaczError, extract_logs, extract_warcs, read_wacz

ROOT = Path(__file__).resolve().parent.parent
CRAWL = (ROOT / "fixtures" / "warc" / "crawl.warc.gz").read_bytes()
PAGES = b'{"format": "json-pages-1.0", "id": "pages"}\n{"id": "p", "url": "https://example.org/", "ts": "2024"}\n'
DEEP = b"[" * 100_000 + b"]" * 100_000


def wacz(path: Path, members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return path


VERBS = {
    "links": [],
    "explain": [],
    "rewrite-wacz": ["-o", "out.wacz"],
    "rewrite-dir": ["-o", "site/"],
    "unpack": ["-o", "mirror"],
}


def run(tmp_path: Path, verb: str, path: Path) -> tuple[int, str]:
    done = run_cli(tmp_path, verb.split("-")[0], str(path), *VERBS[verb])  # never a traceback
    return done.returncode, done.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("member", ["datapackage.json", "pages/pages.jsonl", "pages/extraPages.jsonl"])
def test_json_nested_too_deeply_in_a_wacz_is_passed_over_never_a_traceback(
    tmp_path: Path, member: str, verb: str
) -> None:
    """Before: a RecursionError traceback (datapackage.json: every verb; pages.jsonl: unpack), and
    ``rewrite -o y.wacz`` refused the whole WACZ with the recursion message."""
    data = PAGES + DEEP + b"\n" if member.startswith("pages/") else DEEP
    path = wacz(tmp_path / "deep.wacz", [("archive/data.warc.gz", CRAWL), (member, data)])
    status, said = run(tmp_path, verb, path)
    assert status in (0, 1) and "recursion" not in said, said
    if verb == "rewrite-wacz":
        pytest.importorskip("wacz.main")
        assert status == 0 and (tmp_path / "out.wacz").is_file(), said
    found = read_wacz(path)
    assert found.warcs == ("archive/data.warc.gz",)
    assert found.page_urls == (("https://example.org/",) if member == "pages/pages.jsonl" else ())


@pytest.mark.parametrize("verb", sorted(VERBS))
@pytest.mark.parametrize("member", ["archive/data.warc.gz", "datapackage.json"])
def test_an_encrypted_member_is_refused_by_name(tmp_path: Path, member: str, verb: str) -> None:
    """Before: zipfile's RuntimeError ('password required for extraction') as a traceback."""
    path = wacz(tmp_path / "locked.wacz", [("archive/data.warc.gz", CRAWL), ("datapackage.json", b"{}")])
    data = bytearray(path.read_bytes())
    for signature, flags_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):  # local, central
        at = data.find(signature)
        while at >= 0:
            if data[at + name_at : at + name_at + len(member)] == member.encode():
                data[at + flags_at] |= 0x01  # general purpose bit 0: encrypted
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))
    status, said = run(tmp_path, verb, path)
    assert status == 1 and "encrypted" in said and member in said and str(path.name) in said, said
    assert not (tmp_path / "out.wacz").exists() and not (tmp_path / "mirror").exists()


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_a_member_named_twice_is_refused(tmp_path: Path, verb: str) -> None:
    """Before: both were taken out to the same file (zipfile reads the last of the name twice), so a
    validator reading the first and this run reading the last saw different WARC files."""
    other = (ROOT / "fixtures" / "warc" / "crawl.warc.gz").read_bytes()
    with pytest.warns(UserWarning, match="Duplicate name"):
        path = wacz(tmp_path / "twice.wacz", [("archive/data.warc.gz", CRAWL), ("archive/data.warc.gz", other)])
    status, said = run(tmp_path, verb, path)
    assert status == 1 and "archive/data.warc.gz: two members of this name" in said, said
    with pytest.raises(WaczError, match="two members"):
        read_wacz(path)


def test_logs_that_inflate_far_beyond_the_wacz_are_refused(tmp_path: Path) -> None:
    """Before: ``rewrite x.wacz -o y.wacz`` inflated a 300 KB log to 300 MiB in the scratch folder (no
    ratio was checked for logs/) and py-wacz copied it into y.wacz."""
    path = wacz(
        tmp_path / "logs.wacz",
        [("archive/data.warc.gz", CRAWL), ("logs/crawl.log", bytes(300 << 20))],
        compression=zipfile.ZIP_DEFLATED,
    )
    assert path.stat().st_size < 1 << 20
    status, said = run(tmp_path, "rewrite-wacz", path)
    assert status == 1 and "ZIP bomb" in said and not (tmp_path / "out.wacz").exists(), said


def test_a_log_alone_over_the_ratio_is_refused_when_taken_out(tmp_path: Path) -> None:
    """A log within the WACZ's total but over the per-member ratio is refused by name, not written."""
    log = bytes(3 << 20)
    path = wacz(
        tmp_path / "log.wacz",
        [("archive/data.warc", os.urandom(1 << 20)), ("logs/crawl.log", log)],
        compression=zipfile.ZIP_DEFLATED,
    )
    with zipfile.ZipFile(path) as archive:  # the WACZ large enough for the total, the log over the ratio
        assert archive.getinfo("logs/crawl.log").compress_size * 200 < len(log)
    found = read_wacz(path)
    with pytest.raises(WaczError, match=r"logs/crawl.log: .* compressed bytes said to hold"):
        extract_logs(found, tmp_path / "logs")


def test_many_members_each_within_the_ratio_are_refused_together(tmp_path: Path) -> None:
    """Before: each member was checked alone (1 MiB or 200 times its compressed size), so 300 members
    of 1 MiB that each deflate to 1 KB (a WARC record first, then zeros) filled 300 MiB of disk from a
    300 KB file."""
    member = CRAWL + bytes((1 << 20) - 4096 - len(CRAWL))  # a WARC record first: it passes the check of one
    path = wacz(
        tmp_path / "many.wacz",
        [(f"archive/part-{number:04d}.warc.gz", member) for number in range(300)],
        compression=zipfile.ZIP_DEFLATED,
    )
    assert path.stat().st_size < 2 << 20
    with pytest.raises(WaczError, match="ZIP bomb"):
        read_wacz(path)
    status, said = run(tmp_path, "unpack", path)
    assert status == 1 and "ZIP bomb" in said and not (tmp_path / "mirror").exists(), said


def test_a_log_named_dot_dot_is_not_taken_out(tmp_path: Path) -> None:
    """Before: ``logs/..`` matched the logs pattern and was opened as the scratch folder's parent
    ('Is a directory'), and the WACZ was refused with a message about the output."""
    pytest.importorskip("wacz.main")
    path = wacz(tmp_path / "dots.wacz", [("archive/data.warc.gz", CRAWL), ("logs/..", b"x"), ("logs/ok.log", b"y")])
    assert read_wacz(path).logs == ("logs/ok.log",)
    status, said = run(tmp_path, "rewrite-wacz", path)
    assert status == 0 and (tmp_path / "out.wacz").is_file(), said
    with zipfile.ZipFile(tmp_path / "out.wacz") as archive:
        assert "logs/ok.log" in archive.namelist()


@pytest.mark.parametrize("planted", ["link to /dev/zero", "named pipe"])
def test_a_manifest_planted_in_the_output_folder_is_not_read(tmp_path: Path, planted: str) -> None:
    """Before: ``unpack x.wacz -o DIR`` read DIR/manifest.json back through a link to /dev/zero (a
    MemoryError traceback, after filling the memory), or blocked on a named pipe."""
    path = wacz(tmp_path / "crawl.wacz", [("archive/data.warc.gz", CRAWL), ("pages/pages.jsonl", PAGES)])
    (tmp_path / "mirror").mkdir()
    manifest = tmp_path / "mirror" / "manifest.json"
    if planted == "named pipe":
        os.mkfifo(manifest)
    else:
        manifest.symlink_to("/dev/zero")
    done = run_cli(tmp_path, "unpack", str(path), "-o", "mirror", timeout=60)
    said = done.stderr.decode()
    assert "already holds manifest.json: the manifest is manifest-2.json" in said, said
    assert (tmp_path / "mirror" / "manifest-2.json").is_file()


def test_taking_out_a_wacz_needs_no_more_than_its_members(tmp_path: Path) -> None:
    """The checks pass a WACZ as py-wacz and ArchiveWeb.page write one: deflated members within the ratio."""
    path = wacz(
        tmp_path / "fine.wacz",
        [("archive/data.warc.gz", CRAWL), ("pages/pages.jsonl", PAGES), ("logs/a.log", b"line\n" * 1000)],
        compression=zipfile.ZIP_DEFLATED,
    )
    found = read_wacz(path)
    (out,) = extract_warcs(found, tmp_path / "x")
    assert out.read_bytes() == CRAWL
    logs = extract_logs(found, tmp_path / "logs")
    assert logs is not None and (logs / "a.log").read_bytes() == b"line\n" * 1000


def _damaged(tmp_path: Path, how: str) -> Path:
    path = wacz(tmp_path / "damaged.wacz", [("archive/data.warc", b"WARC/1.1\r\n" + bytes(4000))], zipfile.ZIP_DEFLATED)
    data = bytearray(path.read_bytes())
    if how == "version":  # the central heading's "version needed to extract": 25.5
        data[data.index(b"PK\x01\x02") + 6] = 255
    else:  # the deflate stream itself: a reserved block type
        data[30 + len("archive/data.warc")] = 0x07
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("how", ["version", "deflate"])
@pytest.mark.parametrize("verb", ["links", "unpack"])
def test_a_zip_damaged_where_zipfile_raises_other_errors_is_named(tmp_path: Path, how: str, verb: str) -> None:
    """Before: zipfile's NotImplementedError ('zip file version 25.5') and zlib.error ('invalid block
    type') came out as tracebacks; found by flipping bytes of a WACZ py-wacz made."""
    path = _damaged(tmp_path, how)
    status, said = run(tmp_path, verb, path)
    assert status == 1 and path.name in said, said
    with pytest.raises(WaczError):
        extract_warcs(read_wacz(path), tmp_path / "x")


@pytest.mark.parametrize("how", ["many members", "a count that lies"])
def test_a_zip_of_very_many_members_is_refused_before_its_directory_is_read(tmp_path: Path, how: str) -> None:
    """Before: zipfile read the whole central directory first, about 600 bytes of memory for each
    member: 300,000 empty members (a 27 MB file) took 216 MB, a million 600 MB. The end record's
    count and the directory's size are checked first; a count that lies is caught by the size."""
    path = tmp_path / "many.wacz"
    count, pad = (120_000, "") if how == "many members" else (150_000, "p" * 100)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.warc.gz", CRAWL)
        for number in range(count):
            archive.writestr(f"x/{pad}{number}", b"")
    if how == "a count that lies":  # ZIP64 end record and the classic one: "1 member"
        data = bytearray(path.read_bytes())
        for signature, fields in ((b"PK\x06\x06", (24, 32)), (b"PK\x05\x06", (8, 10))):
            at = data.rfind(signature)
            if at >= 0:
                for field_at in fields:
                    width = 8 if signature == b"PK\x06\x06" else 2
                    data[at + field_at : at + field_at + width] = (1).to_bytes(width, "little")
        path.write_bytes(bytes(data))
    with pytest.raises(WaczError, match="more than a WACZ holds"):
        read_wacz(path)
    status, said = run(tmp_path, "links", path)
    assert status == 1 and "refused unread" in said, said


def _gzip_bomb_warc(size: int) -> bytes:
    """A .warc.gz of one resource record whose body is *size* zero bytes (about a thousandth of that)."""
    import zlib

    head = (
        b"WARC/1.1\r\nWARC-Type: resource\r\nWARC-Target-URI: http://h/zeros\r\nWARC-Date: 2024-01-01T00:00:00Z\r\n"
        b"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\nContent-Type: text/plain\r\n"
        b"Content-Length: %d\r\n\r\n" % size
    )
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [packer.compress(head)]
    block = bytes(1 << 20)
    parts += [packer.compress(block) for _ in range(size >> 20)]
    return b"".join([*parts, packer.compress(b"\r\n\r\n"), packer.flush()])


@pytest.mark.parametrize("verb", ["unpack", "rewrite-dir", "explain"])
def test_a_gzip_member_joined_to_plain_warc_files_is_not_inflated_without_bound(tmp_path: Path, verb: str) -> None:
    """Before: a WACZ of a plain .warc and a .warc.gz had the .warc.gz inflated whole onto the
    scratch disk to join them: a 1 MB member became 1 GiB there (300 KB, 300 MiB here) before any
    record was read, whatever --max-size said."""
    plain = __import__("gzip").decompress(CRAWL)
    path = wacz(tmp_path / "mixed.wacz", [("archive/a.warc", plain), ("archive/b.warc.gz", _gzip_bomb_warc(300 << 20))])
    assert path.stat().st_size < 1 << 20
    status, said = run(tmp_path, verb, path)
    assert status == 1 and "archive/b.warc.gz: inflates to more than 200 times its size" in said, said


def test_plain_and_gzip_warc_files_are_still_joined(tmp_path: Path) -> None:
    plain = __import__("gzip").decompress(CRAWL)
    path = wacz(tmp_path / "mixed.wacz", [("archive/a.warc", plain), ("archive/b.warc.gz", CRAWL)])
    status, said = run(tmp_path, "rewrite-dir", path)
    assert status in (0, 1) and "inflates" not in said, said
    assert (tmp_path / "site").is_dir()
