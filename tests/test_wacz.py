"""WACZ in and out (issue 32): ``rewrite``, ``links``, ``explain`` and ``unpack`` read a WACZ through its
WARC files; ``rewrite x.wacz -o y.wacz`` and ``pack page.html -o page.wacz`` write one that py-wacz's own
``wacz validate`` accepts; bad inputs are named, never a traceback, and leave no output.

Every WACZ here is made in tmp_path by the test: with py-wacz (``wacz create``, through
rewriter.containers.wacz.build_wacz) from ``fixtures/warc/crawl.warc.gz``, or by hand with zipfile for
the shapes py-wacz does not make (two WARC files, damage, no archive/).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import run_cli
from warcio.archiveiterator import ArchiveIterator

from rewriter.containers.formats import is_wacz, what_file_is
from rewriter.containers.wacz import WaczError, build_wacz, extract_warcs, pages_jsonl, read_wacz

# py-wacz (the test extra) writes and validates WACZ files; the tests that read one made by hand,
# or bad ones, run without it.
NEEDS_WACZ = "py-wacz writes and validates WACZ files: pip install wacz"

ROOT = Path(__file__).resolve().parent.parent
CRAWL = ROOT / "fixtures" / "warc" / "crawl.warc.gz"
SAVED = ROOT / "fixtures" / "saved" / "guide.html"
PAGES = [("https://example.org/", "2024-03-10T12:00:00Z", "Example")]


def validate(path: Path) -> str:
    """What ``wacz validate -f PATH`` says; it must say the WACZ is valid (its exit status says
    so too: py-wacz's ``python -m wacz`` does not pass it on, so its main is called here)."""
    pytest.importorskip("wacz.main", reason=NEEDS_WACZ)
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from wacz.main import main; sys.exit(main())", "validate", "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Validation succeeded" in done.stdout, done.stdout + done.stderr
    return done.stdout


def records(data: bytes) -> list[tuple[str, str | None, str | None, bytes]]:
    """(type, target URI, record ID, content) of each record of a WARC file's bytes."""
    found = []
    for record in ArchiveIterator(io.BytesIO(data)):
        headers = record.rec_headers
        found.append(
            (
                record.rec_type,
                headers.get_header("WARC-Target-URI"),
                headers.get_header("WARC-Record-ID"),
                record.content_stream().read(),
            )
        )
    return found


@pytest.fixture(scope="module")
def crawl_wacz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A WACZ of the crawl, made by py-wacz, its one page listed."""
    pytest.importorskip("wacz.main", reason=NEEDS_WACZ)
    path = tmp_path_factory.mktemp("wacz") / "crawl.wacz"
    build_wacz(path, [CRAWL], pages=pages_jsonl(PAGES), title="crawl")
    return path


def two_warcs(path: Path) -> Path:
    """A WACZ whose page and style sheet are in two WARC files (as Browsertrix writes several):
    made by hand, no index (the reader never needs one)."""
    members = CRAWL.read_bytes()
    # the crawl's records, as their gzip members: warcinfo, the page's request and response, then the rest
    offsets = _member_offsets(members)
    first, second = members[: offsets[3]], members[: offsets[1]] + members[offsets[3] :]
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/one.warc.gz", first)
        archive.writestr("archive/two.warc.gz", second)
        archive.writestr("pages/pages.jsonl", pages_jsonl(PAGES))
        archive.writestr("datapackage.json", json.dumps({"profile": "data-package", "resources": []}))
    return path


def _member_offsets(data: bytes) -> list[int]:
    """Where each gzip member (each record) of a WARC file's bytes begins."""
    import zlib

    offsets, position = [], 0
    while position < len(data):
        offsets.append(position)
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        inflater.decompress(data[position:])
        position = len(data) - len(inflater.unused_data)
    return offsets


# -- what a file is ----------------------------------------------------------------------------------------


def test_formats_tells_a_wacz(crawl_wacz: Path, tmp_path: Path) -> None:
    head = crawl_wacz.read_bytes()[:8192]
    assert what_file_is(head, str(crawl_wacz)).format == "wacz"
    assert what_file_is(head, "renamed.zip").format == "wacz"  # its first member is a WACZ's
    assert is_wacz(head) and not is_wacz(b"PK\x03\x04" + bytes(26) + b"word/document.xml", "a.docx")
    assert what_file_is(b"not a zip", "x.wacz").format == "wacz"  # named .wacz: reading it says what is wrong
    assert not what_file_is(head, str(crawl_wacz)).document  # in a folder walk, copied as it is


def test_read_wacz(crawl_wacz: Path, tmp_path: Path) -> None:
    wacz = read_wacz(crawl_wacz)
    assert wacz.warcs == ("archive/crawl.warc.gz",)
    assert wacz.page_urls == ("https://example.org/",)
    assert wacz.title == "crawl"
    [path] = extract_warcs(wacz, tmp_path)
    assert path.read_bytes() == CRAWL.read_bytes()


# -- rewrite x.wacz -o y.wacz ------------------------------------------------------------------------------


def test_rewrite_wacz_to_wacz_validates(crawl_wacz: Path, tmp_path: Path) -> None:
    validate(crawl_wacz)
    out = tmp_path / "out.wacz"
    done = run_cli(tmp_path, "rewrite", str(crawl_wacz), "-o", str(out))
    assert done.returncode == 0, done.stderr
    validate(out)
    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
        assert archive.getinfo("archive/crawl.warc.gz").compress_type == zipfile.ZIP_STORED
        assert archive.read("pages/pages.jsonl") == pages_jsonl(PAGES)  # kept as it was
        package = json.loads(archive.read("datapackage.json"))
        warc = archive.read("archive/crawl.warc.gz")
        index = gzip.decompress(archive.read("indexes/index.cdx.gz")).decode()
    assert {"indexes/index.cdx.gz", "indexes/index.idx", "datapackage.json", "datapackage-digest.json"} <= set(names)
    assert package["title"] == "crawl"
    [entry] = [resource for resource in package["resources"] if resource["path"] == "archive/crawl.warc.gz"]
    assert entry["hash"] == "sha256:" + hashlib.sha256(warc).hexdigest() and entry["bytes"] == len(warc)
    # every record of the input kept, and the records WARC out adds for the pages, rewritten
    # (their type and form are WARC out's: rewriter.containers.warc.out)
    found, kept = records(warc), records(CRAWL.read_bytes())
    ids = {record_id for _, _, record_id, _ in kept}
    assert {record_id for _, _, record_id, _ in found} >= ids
    conversions = {uri: content for _, uri, record_id, content in found if record_id not in ids}
    assert set(conversions) == {"https://example.org/", "https://example.org/css/site.css"}
    assert b'href="https://example.org/css/site.css"' in conversions["https://example.org/"]
    assert b'href="https://example.org/news/?page=2"' in conversions["https://example.org/"]
    assert b'url("https://example.org/img/logo.png")' in conversions["https://example.org/css/site.css"]
    # the index holds the captures, so a replay tool replays the original page
    assert '"url": "https://example.org/"' in index and "offset" in index


def test_rewrite_two_warcs_to_wacz(tmp_path: Path) -> None:
    pytest.importorskip("wacz.main", reason=NEEDS_WACZ)
    source = two_warcs(tmp_path / "two.wacz")
    out = tmp_path / "two-out.wacz"
    done = run_cli(tmp_path, "rewrite", str(source), "-o", str(out))
    assert done.returncode == 0, done.stderr
    validate(out)
    with zipfile.ZipFile(out) as archive:
        assert {"archive/one.warc.gz", "archive/two.warc.gz"} <= set(archive.namelist())


# -- links, explain, unpack, rewrite -o DIR ------------------------------------------------------------------


def test_links_of_a_wacz(crawl_wacz: Path, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "links", str(crawl_wacz))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.decode().splitlines()
    assert "https://example.org/\ta\thref\trewritten\tabout/\thttps://example.org/about/" in lines
    assert (
        "https://example.org/css/site.css\t\t#stylesheet\trewritten\t../img/logo.png\thttps://example.org/img/logo.png"
        in lines
    )
    assert str(tmp_path) not in done.stdout.decode() + done.stderr.decode()


def test_explain_names_the_member(crawl_wacz: Path, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "explain", "--json", str(crawl_wacz))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["file"] == f"{crawl_wacz}/archive/crawl.warc.gz"
    assert document["format"] == "warc"


def test_unpack_a_wacz(tmp_path: Path) -> None:
    source = two_warcs(tmp_path / "two.wacz")  # the page in one WARC, its style sheet in the other
    done = run_cli(tmp_path, "unpack", str(source), "-o", str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "site" / "example.org" / "index.html").read_bytes()
    assert b'href="css/site.css"' in page and b'src="img/logo.png"' in page  # pointed at the files
    assert (tmp_path / "site" / "example.org" / "css" / "site.css").is_file()
    # pages.jsonl: where its pages are, to open
    index = tmp_path / "site" / "example.org" / "index.html"
    assert f"  https://example.org/ -> {index}" in done.stderr.decode().splitlines()


def test_rewrite_a_wacz_into_a_folder(crawl_wacz: Path, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "rewrite", str(crawl_wacz), "-o", str(tmp_path / "pages") + "/")
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "pages" / "example.org" / "index.html").read_bytes()
    assert b'href="https://example.org/about/"' in page


def test_a_wacz_needs_an_output(crawl_wacz: Path, tmp_path: Path) -> None:
    done = run_cli(tmp_path, "rewrite", str(crawl_wacz))
    assert done.returncode == 2 and b"give -o OUT.wacz" in done.stderr
    done = run_cli(tmp_path, "rewrite", "--in-place", str(crawl_wacz))
    assert done.returncode == 2 and b"never changed in place" in done.stderr
    before = crawl_wacz.read_bytes()
    done = run_cli(tmp_path, "rewrite", str(crawl_wacz), "-o", str(crawl_wacz))
    assert done.returncode == 1 and b"the output is the input itself" in done.stderr
    assert crawl_wacz.read_bytes() == before


# -- pack -o page.wacz ---------------------------------------------------------------------------------------


def test_pack_a_saved_page_as_wacz(tmp_path: Path) -> None:
    pytest.importorskip("wacz.main", reason=NEEDS_WACZ)
    out = tmp_path / "guide.wacz"
    url = "https://example.org/docs/guide.html"
    done = run_cli(tmp_path, "pack", str(SAVED), "--url", url, "-o", str(out))
    assert done.returncode == 0, done.stderr
    validate(out)
    with zipfile.ZipFile(out) as archive:
        [header, page] = [json.loads(line) for line in archive.read("pages/pages.jsonl").splitlines()]
        [member] = [name for name in archive.namelist() if name.startswith("archive/")]
        warc = archive.read(member)
        index = gzip.decompress(archive.read("indexes/index.cdx.gz")).decode()
    assert header["format"] == "json-pages-1.0"
    assert page["url"] == url and page["title"] == "Guide"
    found = {uri: content for kind, uri, _, content in records(warc) if kind == "resource"}
    assert set(found) == {
        url,
        "https://example.org/docs/guide_files/logo.png",
        "https://example.org/docs/guide_files/menu.js",
        "https://example.org/docs/guide_files/site.css",
    }
    assert (
        found["https://example.org/docs/guide_files/logo.png"]
        == (SAVED.parent / "guide_files" / "logo.png").read_bytes()
    )
    assert b'src="https://example.org/docs/guide_files/logo.png"' in found[url]
    assert all(f'"url": "{uri}"' in index for uri in found)  # each file found by its URL
    # and the WACZ reads back: its links as the saved page's
    links = run_cli(tmp_path, "links", str(out))
    assert links.returncode == 0 and b"https://example.org/about" in links.stdout


# -- bad inputs ----------------------------------------------------------------------------------------------


def _bad(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    if name == "not-a-zip.wacz":
        path.write_bytes(b"<p>no zip here</p>")
    elif name == "no-archive.wacz":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("datapackage.json", "{}")
    elif name == "not-a-warc.wacz":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("archive/data.warc.gz", b"hello")
    elif name == "bad-crc.wacz":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("archive/data.warc.gz", CRAWL.read_bytes())
        data = bytearray(path.read_bytes())
        data[data.index(b"archive/data.warc.gz") + 20 + 300] ^= 0xFF  # inside the member's bytes
        path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize(
    ("name", "member", "says"),
    [
        ("not-a-zip.wacz", None, "not a ZIP file"),
        ("no-archive.wacz", None, "no WARC file under archive/"),
        ("not-a-warc.wacz", "archive/data.warc.gz", "not a WARC file"),
        ("bad-crc.wacz", "archive/data.warc.gz", "damaged in the ZIP"),
    ],
)
@pytest.mark.parametrize("verb", ["rewrite", "links", "explain", "unpack"])
def test_bad_input(tmp_path: Path, name: str, member: str | None, says: str, verb: str) -> None:
    path = _bad(tmp_path, name)
    output = {"rewrite": ["-o", str(tmp_path / "out.wacz")], "unpack": ["-o", str(tmp_path / "site")]}
    done = run_cli(tmp_path, verb, str(path), *output.get(verb, []))
    said = done.stderr.decode()
    assert done.returncode == 1, said
    assert str(path) in said and says in said and (member is None or member in said)
    assert not (tmp_path / "out.wacz").exists() and not (tmp_path / "site").exists()
    with pytest.raises(WaczError):
        extract_warcs(read_wacz(path), tmp_path / "x")


def test_damaged_warc_inside_writes_no_wacz(tmp_path: Path) -> None:
    data = CRAWL.read_bytes()
    offsets = _member_offsets(data)
    damaged = data[: offsets[2] + 10] + b"junk" * 30 + data[offsets[3] :]  # the page's record cut short
    path = tmp_path / "damaged.wacz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.warc.gz", damaged)
    done = run_cli(tmp_path, "rewrite", str(path), "-o", str(tmp_path / "out.wacz"))
    said = done.stderr.decode()
    assert done.returncode == 1
    assert f"{path}/archive/data.warc.gz: offset {offsets[2]}" in said, said
    assert "not written" in said and not (tmp_path / "out.wacz").exists()


def test_a_changed_warc_and_other_members(crawl_wacz: Path, tmp_path: Path) -> None:
    """A WARC whose digest is not datapackage.json's is said (it was changed after the WACZ was
    made); logs/ are carried over into the WACZ made again, any other member is named."""
    changed = tmp_path / "changed.wacz"
    with zipfile.ZipFile(crawl_wacz) as source, zipfile.ZipFile(changed, "w") as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "archive/crawl.warc.gz":
                data = data[: _member_offsets(data)[3]]  # the page's records only: another WARC
            archive.writestr(info.filename, data)
        archive.writestr("logs/crawl.log", b"a log line\n")
        archive.writestr("screenshots/page.png", b"\x89PNG")
    out = tmp_path / "out.wacz"
    done = run_cli(tmp_path, "rewrite", str(changed), "-o", str(out))
    said = done.stderr.decode()
    assert f"{changed}: archive/crawl.warc.gz: its sha256 is not the one datapackage.json gives" in said
    assert f"{changed}: screenshots/page.png: not carried over into {out}" in said
    validate(out)
    with zipfile.ZipFile(out) as archive:
        assert archive.read("logs/crawl.log") == b"a log line\n"


def test_the_shipped_fixture(tmp_path: Path) -> None:
    """fixtures/wacz/crawl.wacz (fixtures/wacz/make_crawl.py): valid, the crawl's WARC and its page."""
    shipped = ROOT / "fixtures" / "wacz" / "crawl.wacz"
    validate(shipped)
    wacz = read_wacz(shipped)
    assert wacz.page_urls == ("https://example.org/",)
    [path] = extract_warcs(wacz, tmp_path)
    assert path.read_bytes() == CRAWL.read_bytes()


def test_explain_of_several_warcs_is_one_document(tmp_path: Path) -> None:
    source = two_warcs(tmp_path / "two.wacz")
    done = run_cli(tmp_path, "explain", "--json", str(source))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["file"] == f"{source}/archive.warc.gz"
    links = run_cli(tmp_path, "links", "--json", str(source))
    assert links.returncode == 0, links.stderr
    pages = {json.loads(line)["record"] for line in links.stdout.splitlines()}
    assert pages == {"https://example.org/", "https://example.org/css/site.css"}


def test_a_wacz_on_standard_input_is_named(tmp_path: Path) -> None:
    data = two_warcs(tmp_path / "two.wacz").read_bytes()
    for verb in ("links", "rewrite"):
        done = run_cli(tmp_path, verb, "-", stdin=data)
        assert done.returncode == 1 and b"a WACZ is read from a file named on the command line" in done.stderr
        assert done.stdout == b""
