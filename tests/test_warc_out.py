"""WARC out (issue 20): ``rewriter.containers.warc.plan_warc`` and ``rewrite_warc_piece``, ARC input, and
``rewriter.containers.formats.container_format``.

Every archive here is written in tmp_path by the test: WARCs with warcio's own writer (fixed
record IDs and dates, so that the bytes are the same on every run), ARC v1 files by hand
from the format's definition. The collection holds what a crawl holds: a warcinfo, a
request, a chunked and gzip-coded page, a style sheet, an image and a script, a revisit of
the page (identical-payload-digest profile), a 301, a 206, a resource record, a page in
ISO-8859-1 and one with nothing to rewrite. The acceptance checks: warcio's checker finds no
digest problem in the output; every record but the conversion records is the input's, byte
for byte; each conversion record's block is ``rewrite_html`` (``rewrite_css``) of the decoded
page against its own URI and HTTP charset; and the outputs of the pieces, joined, are the
output of the whole file. Of a damaged input (a damaged gzip member, a record cut short, junk
between records), the damage is left out and named, and the output still passes warcio's
checker, each conversion record right after its page's record.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import itertools
import os
import subprocess
import sys
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_cli
from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rewriter.containers.formats import container_format, is_arc, is_warc
from rewriter.containers.pieces import PIECE_SIZE, Piece
from rewriter.containers.warc import WarcDamage, WarcPage, iter_documents, plan_warc, rewrite_warc_piece
from rewriter.css.stylesheet import rewrite_css
from rewriter.html.engine import find_links, rewrite_html

DATE = "2024-05-01T12:00:00Z"
PAGE = b'<!doctype html><link rel=stylesheet href="s/site.css"><a href="next.html#n">n</a> <img src="/img/logo.png">'
CSS = b"body { background: url(../img/bg.png) } @import 'print.css';"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
LATIN = "<p>caf\u00e9 <a href='men\u00fc.html'>men\u00fc</a></p>".encode("iso-8859-1")
NOTES = b"<a href=notes/2.html>2</a>"
SAME = b'<p>nothing relative: <a href="http://example.org/">x</a></p>'
UTF16 = '<p><a href="next.html">next</a></p>'.encode("utf-16-le")  # no BOM: only the HTTP charset tells


def chunked(data: bytes, size: int = 9) -> bytes:
    """*data* in the chunked transfer coding (RFC 9112 §7.1)."""
    pieces = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return b"".join(pieces) + b"0\r\n\r\n"


def sha1_b32(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def record_id(name: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}>"


def http(status: str, *fields: tuple[str, str]) -> StatusAndHeaders:
    return StatusAndHeaders(status, list(fields), protocol="HTTP/1.1")


SENT_PAGE = chunked(gzip.compress(PAGE, mtime=0))  # as the server sent it: gzip content coding, then chunks

# (what the test expects of it, the record): kind, uri, payload, http heading, Content-Type of a non-HTTP block
COLLECTION: list[tuple[str, str, bytes, StatusAndHeaders | None, str | None]] = [
    ("warcinfo", "", b"software: rewriter tests\r\nformat: WARC File Format 1.1\r\n", None, "application/warc-fields"),
    (
        "request",
        "http://h/site/",
        b"",
        StatusAndHeaders("GET /site/ HTTP/1.1", [("Host", "h")], is_http_request=True),
        None,
    ),
    (
        "response",
        "http://h/site/",
        SENT_PAGE,
        http(
            "200 OK",
            ("Content-Type", "text/html; charset=utf-8"),
            ("Transfer-Encoding", "chunked"),
            ("Content-Encoding", "gzip"),
        ),
        None,
    ),
    ("response", "http://h/site/s/site.css", CSS, http("200 OK", ("Content-Type", "text/css")), None),
    ("response", "http://h/img/logo.png", PNG, http("200 OK", ("Content-Type", "image/png")), None),
    (
        "response",
        "http://h/app.js",
        b"location.href = 'x.html'",
        http("200 OK", ("Content-Type", "text/javascript")),
        None,
    ),
    ("revisit", "http://h/site/", b"", http("200 OK", ("Content-Type", "text/html; charset=utf-8")), None),
    ("response", "http://h/old", b"", http("301 Moved Permanently", ("Location", "/site/")), None),
    ("response", "http://h/part.html", PAGE[:40], http("206 Partial Content", ("Content-Type", "text/html")), None),
    ("resource", "http://h/notes.html", NOTES, None, "text/html"),
    ("response", "http://h/latin.html", LATIN, http("200 OK", ("Content-Type", "text/html; charset=iso-8859-1")), None),
    ("response", "http://h/utf16.html", UTF16, http("200 OK", ("Content-Type", "text/html; charset=UTF-16LE")), None),
    ("response", "http://h/same.html", SAME, http("200 OK", ("Content-Type", "text/html")), None),
]
# The pages, and what each conversion record's block must be: the engine's output, computed here directly.
EXPECTED = {
    "http://h/site/": rewrite_html(PAGE, url="http://h/site/", charset="utf-8").output,
    "http://h/site/s/site.css": rewrite_css(CSS, url="http://h/site/s/site.css").output,
    "http://h/notes.html": rewrite_html(NOTES, url="http://h/notes.html").output,
    "http://h/latin.html": rewrite_html(LATIN, url="http://h/latin.html", charset="iso-8859-1").output,
    "http://h/utf16.html": rewrite_html(UTF16, url="http://h/utf16.html", charset="UTF-16LE").output,
}
PAGES = [*EXPECTED, "http://h/same.html"]


def write_collection(path: Path, *, compress: bool, records: list | None = None) -> Path:
    """The collection as a WARC at *path*, written by warcio (gzip: one member per record)."""
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=compress)
        for number, (kind, uri, payload, heading, content_type) in enumerate(records or COLLECTION):
            fixed = {"WARC-Record-ID": record_id(f"{number} {uri}"), "WARC-Date": DATE}
            if kind == "revisit":
                record = writer.create_revisit_record(
                    uri, sha1_b32(SENT_PAGE), uri, DATE, http_headers=heading, warc_headers_dict=fixed
                )
            elif heading is not None:
                record = writer.create_warc_record(
                    uri, kind, payload=io.BytesIO(payload), http_headers=heading, warc_headers_dict=fixed
                )
            else:
                record = writer.create_warc_record(
                    uri, kind, payload=io.BytesIO(payload), warc_content_type=content_type, warc_headers_dict=fixed
                )
            writer.write_record(record)
    return path


@dataclass
class Read:
    """One record of an output, as warcio reads it back."""

    kind: str
    fields: dict[str, str]
    block: bytes  # after the HTTP heading, for a record with one
    raw: bytes  # its bytes in the file, from its start to the next record's
    digests: bool | None  # warcio's digest check: True passed, None nothing checked, False failed


def read_back(data: bytes) -> list[Read]:
    """Every record of *data* (a WARC, plain or gzip), with the raw bytes it takes up."""
    found: list[tuple[int, Read]] = []
    iterator = ArchiveIterator(io.BytesIO(data), check_digests=True)
    for record in iterator:
        block = record.raw_stream.read()
        offset = iterator.get_record_offset()
        fields = dict(record.rec_headers.headers)
        found.append((offset, Read(record.rec_type, fields, block, b"", record.digest_checker.passed)))
    starts = [offset for offset, _ in found] + [len(data)]
    for (offset, read), end in zip(found, starts[1:], strict=True):
        read.raw = data[offset:end]
    return [read for _, read in found]


def run(path: Path, piece: Piece | None = None, **options: object) -> tuple[bytes, list[WarcPage | WarcDamage]]:
    """WARC out of *piece* of *path* (the whole file by default): the bytes written, the items yielded."""
    target = io.BytesIO()
    items = list(rewrite_warc_piece(path, piece, target, **options))  # type: ignore[arg-type]
    return target.getvalue(), items


def without_conversions(data: bytes) -> bytes:
    return b"".join(read.raw for read in read_back(data) if read.kind != "conversion")


def warcio_check(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """warcio's ``warcio check -v``: what it printed; fails the test on any problem it found."""
    capsys.readouterr()
    status = Checker(SimpleNamespace(inputs=[str(path)], verbose=True)).process_all()
    said = capsys.readouterr().out
    assert status == 0 and "failed" not in said and "exception" not in said, said
    return said


COMPRESSIONS = [pytest.param(True, id="gz"), pytest.param(False, id="plain")]


# --- the conversion records --------------------------------------------------------------------------------


@pytest.mark.parametrize("compress_out", COMPRESSIONS)
@pytest.mark.parametrize("compress_in", COMPRESSIONS)
def test_warc_out_passes_warcio_check_and_adds_one_conversion_per_changed_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compress_in: bool, compress_out: bool
) -> None:
    path = write_collection(tmp_path / "in.warc", compress=compress_in)
    data, items = run(path, gzip=compress_out)
    out = tmp_path / ("out.warc.gz" if compress_out else "out.warc")
    out.write_bytes(data)
    said = warcio_check(out, capsys)
    records = read_back(data)
    conversions = [read for read in records if read.kind == "conversion"]
    assert said.count("digest pass") >= len(conversions) + 9  # every record with a digest, the conversions too
    assert all(read.digests is True for read in conversions)
    assert [read.fields["WARC-Target-URI"] for read in conversions] == list(EXPECTED)
    assert [read.kind for read in records if read.kind != "conversion"] == [kind for kind, *_ in COLLECTION]
    assert (data[:2] == b"\x1f\x8b") is compress_out
    pages = [item for item in items if isinstance(item, WarcPage)]
    assert [page.uri for page in pages] == PAGES and not [item for item in items if isinstance(item, WarcDamage)]
    assert [page.converted for page in pages] == [True, True, True, True, True, False]
    assert [page.format for page in pages] == ["html", "css", "html", "html", "html", "html"]
    assert pages[0].size == len(PAGE) and pages[0].charset == "utf-8" and pages[3].charset == "iso-8859-1"
    assert rewrite_html(UTF16, url="http://h/utf16.html").output == UTF16 != EXPECTED["http://h/utf16.html"]


@pytest.mark.parametrize("typed", [False, True], ids=["untyped", "typed"])
@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_each_conversion_is_the_page_rewritten_against_its_own_uri_and_follows_it(
    tmp_path: Path, compress: bool, typed: bool
) -> None:
    # Issue 32: no payload digest (the block has no HTTP payload, WARC 1.1 §5.9), and an empty
    # Content-Type unless typed_conversions (so that pywb replays the original capture).
    path = write_collection(tmp_path / "in.warc", compress=compress)
    data, _ = run(path, gzip=compress, typed_conversions=typed)
    records = read_back(data)
    for index, read in enumerate(records):
        if read.kind != "conversion":
            continue
        original = records[index - 1]  # right after the record it converts
        uri = read.fields["WARC-Target-URI"]
        assert read.block == EXPECTED[uri] != original.block
        assert read.fields["WARC-Refers-To"] == original.fields["WARC-Record-ID"]
        assert (
            read.fields["WARC-Record-ID"]
            == f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, read.fields['WARC-Refers-To'])}>"
        )
        assert (read.fields["WARC-Date"], original.fields["WARC-Target-URI"]) == (DATE, uri)
        sent = next(heading for kind, at, _, heading, _ in COLLECTION if kind == original.kind and at == uri)
        heading = dict(sent.headers) if sent is not None else {}
        page_type = heading.get("Content-Type", original.fields["Content-Type"])
        assert read.fields["Content-Type"] == (page_type if typed else "")
        assert read.fields["WARC-Block-Digest"] == sha1_b32(read.block)
        assert "WARC-Payload-Digest" not in read.fields
        assert read.raw.startswith(b"\x1f\x8b" if compress else b"WARC/1.0\r\nWARC-Type: conversion\r\n")


def test_a_conversion_is_what_the_command_line_writes_for_the_page_and_its_url(tmp_path: Path) -> None:
    path = write_collection(tmp_path / "in.warc", compress=True)
    data, _ = run(path, gzip=True)
    (block,) = [read.block for read in read_back(data) if read.fields.get("WARC-Target-URI") == "http://h/latin.html"][
        1:
    ]
    (tmp_path / "latin.html").write_bytes(LATIN)
    done = run_cli(
        tmp_path, "rewrite", "latin.html", "--url", "http://h/latin.html", "--charset", "iso-8859-1", "-o", "cli.html"
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cli.html").read_bytes() == block


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_every_other_record_is_kept_byte_for_byte(tmp_path: Path, compress: bool) -> None:
    path = write_collection(tmp_path / "in.warc", compress=compress)
    data, _ = run(path, gzip=compress)
    assert without_conversions(data) == path.read_bytes()
    assert len(data) > len(path.read_bytes())


def test_a_change_of_compression_keeps_each_records_uncompressed_bytes(tmp_path: Path) -> None:
    packed = write_collection(tmp_path / "in.warc.gz", compress=True)
    plain = write_collection(tmp_path / "in.warc", compress=False)
    unpacked, _ = run(packed, gzip=False)
    assert unpacked[:5] == b"WARC/" and without_conversions(unpacked) == gzip.decompress(packed.read_bytes())
    assert without_conversions(unpacked) == plain.read_bytes()
    repacked, _ = run(plain, gzip=True)
    kept = without_conversions(repacked)
    assert gzip.decompress(kept) == plain.read_bytes()
    # one gzip member per record (WARC 1.1 Annex D): each member holds one record and ends where the next begins
    members = [read.raw for read in read_back(repacked)]
    assert all(zlib.decompressobj(31).decompress(member)[:5] == b"WARC/" for member in members)
    assert all(not _after_member(member) for member in members)
    assert unpacked == gzip.decompress(repacked)  # the same records, the same conversions, either way


@pytest.mark.parametrize("compress_out", COMPRESSIONS)
@pytest.mark.parametrize("members", [0, 4], ids=["one gzip stream", "members then one stream"])
def test_a_file_that_is_one_gzip_stream_is_written_one_member_per_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], members: int, compress_out: bool
) -> None:
    plain = write_collection(tmp_path / "in.warc", compress=False).read_bytes()
    packed = write_collection(tmp_path / "in.warc.gz", compress=True).read_bytes()
    own = [read.raw for read in read_back(packed)][:members]  # the first records each in a member of its own
    path = tmp_path / "stream.warc.gz"
    path.write_bytes(b"".join(own) + gzip.compress(plain[len(gzip.decompress(b"".join(own))) :], mtime=0))
    data, items = run(path, gzip=compress_out)
    (damage,) = [item.problem for item in items if isinstance(item, WarcDamage)]
    assert damage.endswith("bytes of the decompressed data")
    assert [page.uri for page in items if isinstance(page, WarcPage)] == PAGES
    (tmp_path / "out.warc").write_bytes(data)
    warcio_check(tmp_path / "out.warc", capsys)
    kept = without_conversions(data)
    assert (gzip.decompress(kept) if compress_out else kept) == plain
    if compress_out:  # the records in members of their own are kept as they are
        assert [read.raw for read in read_back(data) if read.kind != "conversion"][:members] == own
    assert [read.block for read in read_back(data) if read.kind == "conversion"] == list(EXPECTED.values())


def _after_member(member: bytes) -> bytes:
    decompressor = zlib.decompressobj(31)
    decompressor.decompress(member)
    assert decompressor.eof
    return decompressor.unused_data


def test_outputs_are_the_same_bytes_on_every_run_and_in_another_process(tmp_path: Path) -> None:
    path = write_collection(tmp_path / "in.warc.gz", compress=True)
    first, _ = run(path, gzip=True)
    assert run(path, gzip=True)[0] == first
    script = (
        "import sys; from rewriter.containers.warc import rewrite_warc_piece\n"
        "with open(sys.argv[2], 'wb') as out: list(rewrite_warc_piece(sys.argv[1], None, out, gzip=True))\n"
    )
    environment = {**os.environ, "PYTHONHASHSEED": "12345", "TZ": "Pacific/Kiritimati"}
    subprocess.run([sys.executable, "-c", script, path, tmp_path / "other.warc.gz"], check=True, env=environment)
    assert (tmp_path / "other.warc.gz").read_bytes() == first


def test_digests_follow_the_originals_algorithm_and_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + PAGE
    heading = (
        "WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-4000-8000-000000000001>\r\n"
        f"WARC-Date: {DATE}\r\nWARC-Target-URI: http://h/p.html\r\nContent-Type: application/http;msgtype=response\r\n"
        f"WARC-Block-Digest: sha256:{hashlib.sha256(block).hexdigest()}\r\n"
        f"WARC-Payload-Digest: sha256:{hashlib.sha256(PAGE).hexdigest()}\r\nContent-Length: {len(block)}\r\n\r\n"
    )
    path = tmp_path / "sha256.warc"
    path.write_bytes(heading.encode() + block + b"\r\n\r\n")
    data, _ = run(path, gzip=False)
    (tmp_path / "out.warc").write_bytes(data)
    warcio_check(tmp_path / "out.warc", capsys)
    (_, conversion) = read_back(data)
    expected = rewrite_html(PAGE, url="http://h/p.html").output
    assert conversion.fields["WARC-Block-Digest"] == "sha256:" + hashlib.sha256(expected).hexdigest()
    assert "WARC-Payload-Digest" not in conversion.fields  # the block has no HTTP payload (WARC 1.1 §5.9)
    assert data.startswith(path.read_bytes()) and b"\r\nWARC/1.1\r\nWARC-Type: conversion\r\n" in data


# --- pieces ---------------------------------------------------------------------------------------------------


def damaged_collection(tmp_path: Path, compress: bool) -> tuple[Path, int]:
    """The collection with the image's record damaged (16 bytes of its gzip member zeroed; in a plain
    file, 50 bytes of its block gone); and where that record begins."""
    clean = write_collection(tmp_path / f"clean{compress}.warc", compress=compress).read_bytes()
    with open(tmp_path / f"clean{compress}.warc", "rb") as stream:
        offset = next(
            item.offset for item in iter_documents(stream) if getattr(item, "uri", "") == "http://h/img/logo.png"
        )
    data = bytearray(clean)
    if compress:
        data[offset + 12 : offset + 28] = b"\x00" * 16
    else:
        del data[offset + 400 : offset + 450]
    path = tmp_path / f"damaged.warc{'.gz' if compress else ''}"
    path.write_bytes(bytes(data))
    return path, offset


def inputs(tmp_path: Path, name: str) -> Path:
    if name == "gz" or name == "plain":
        return write_collection(tmp_path / f"in-{name}.warc", compress=name == "gz")
    if name == "one gzip stream":
        plain = write_collection(tmp_path / "plain.warc", compress=False).read_bytes()
        (tmp_path / "one.warc.gz").write_bytes(gzip.compress(plain, mtime=0))
        return tmp_path / "one.warc.gz"
    return damaged_collection(tmp_path, compress=name == "damaged gz")[0]


INPUTS = ["gz", "plain", "damaged gz", "damaged plain", "one gzip stream"]


def record_starts(path: Path) -> list[int]:
    """Where warcio's own iterator finds each record of a (whole) file."""
    with open(path, "rb") as stream:
        iterator = ArchiveIterator(stream)
        return [iterator.get_record_offset() for _ in iterator]


@pytest.mark.parametrize("name", INPUTS)
def test_the_pieces_hold_every_byte_once_and_begin_at_records(tmp_path: Path, name: str) -> None:
    path = inputs(tmp_path, name)
    size = path.stat().st_size
    for piece_size in (1, 700, 4000, PIECE_SIZE):
        pieces = list(plan_warc(path, piece_size=piece_size))
        assert pieces[0].start == 0 and pieces[-1].end == size and pieces[-1].last
        assert all(a.end == b.start and not a.last for a, b in itertools.pairwise(pieces))
        assert [piece.number for piece in pieces] == list(range(len(pieces)))
        assert all(piece.size >= piece_size for piece in pieces[:-1])
        firsts = [piece.first for piece in pieces]
        assert firsts == sorted(set(firsts)) and firsts[0] == 0
        if name in ("gz", "plain"):
            starts = record_starts(path)
            assert {piece.start for piece in pieces} <= set(starts)
            assert all(starts[piece.first] == piece.start for piece in pieces)
            if piece_size == 1:  # every record a piece of its own
                assert [piece.start for piece in pieces] == starts and len(pieces) == len(COLLECTION)
    if name == "one gzip stream":  # no offsets to cut at: one piece
        assert list(plan_warc(path, piece_size=1)) == [Piece(0, size, 0, 0, last=True)]
    with pytest.raises(ValueError):
        list(plan_warc(path, piece_size=0))


@pytest.mark.parametrize("compress_out", COMPRESSIONS)
@pytest.mark.parametrize("name", INPUTS)
def test_the_pieces_outputs_joined_are_the_whole_files_output(tmp_path: Path, name: str, compress_out: bool) -> None:
    path = inputs(tmp_path, name)
    whole, whole_items = run(path, gzip=compress_out)
    assert whole
    for piece_size in (1, 700, 4000, PIECE_SIZE):
        joined, items = b"", []
        for piece in plan_warc(path, piece_size=piece_size):
            data, found = run(path, piece, gzip=compress_out)
            joined += data
            items += found
        assert joined == whole, piece_size
        pages = [(page.uri, page.record, page.offset, page.converted) for page in items if isinstance(page, WarcPage)]
        assert pages == [(p.uri, p.record, p.offset, p.converted) for p in whole_items if isinstance(p, WarcPage)]
    assert Piece(0, path.stat().st_size, 0, 0, last=True) == next(plan_warc(path, piece_size=1 << 40))
    assert run(path, next(plan_warc(path, piece_size=1 << 40)), gzip=compress_out)[0] == whole


# --- damage ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_a_damaged_record_is_left_out_and_named_and_every_other_record_kept(tmp_path: Path, compress: bool) -> None:
    path, offset = damaged_collection(tmp_path, compress)
    data, items = run(path, gzip=compress)
    damage = [item for item in items if isinstance(item, WarcDamage)]
    assert damage and any(str(offset) in item.problem for item in damage), damage
    left = [item for item in damage if "left out of the output" in item.problem]
    assert [item.offset for item in left] == [offset], left
    pages = [item for item in items if isinstance(item, WarcPage)]
    assert [page.uri for page in pages if page.converted] == list(EXPECTED)
    # The output is the clean file's output without the damaged record: every other byte kept, in order.
    clean = read_back(run(tmp_path / f"clean{compress}.warc", gzip=compress)[0])
    image = [read.raw for read in clean if read.fields.get("WARC-Target-URI") == "http://h/img/logo.png"]
    assert data == b"".join(read.raw for read in clean if read.raw not in image)


def test_a_damaged_record_is_left_out_of_a_plain_output_which_passes_warcio_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, offset = damaged_collection(tmp_path, compress=True)
    data, items = run(path, gzip=False)
    left = [item for item in items if isinstance(item, WarcDamage) and "left out of the output" in item.problem]
    assert [item.offset for item in left] == [offset]
    (tmp_path / "out.warc").write_bytes(data)
    warcio_check(tmp_path / "out.warc", capsys)
    uris = [read.fields.get("WARC-Target-URI") for read in read_back(data)]
    assert "http://h/img/logo.png" not in uris and uris.count("http://h/latin.html") == 2


def test_garbage_in_a_plain_file_goes_with_the_record_before_it_and_a_piece_starts_only_at_records(
    tmp_path: Path,
) -> None:
    clean = write_collection(tmp_path / "in.warc", compress=False)
    plain = clean.read_bytes()
    cut = plain.index(b"WARC/1.0", plain.index(b"http://h/site/s/site.css") - 300)
    path = tmp_path / "junk.warc"
    path.write_bytes(b"junk before\r\n" + plain[:cut] + b"no record here\r\n" * 40 + plain[cut:])
    pieces = list(plan_warc(path, piece_size=1))  # the junk before the first record is the first piece's
    assert [piece.first for piece in pieces] == list(range(len(COLLECTION)))
    assert pieces[0].start == 0 and pieces[1].start == plain.index(b"WARC/1.0", 1) + len(b"junk before\r\n")
    assert pieces[3].start == len(b"junk before\r\n") + cut + len(b"no record here\r\n") * 40
    data, items = run(path, gzip=False)
    damage = [item for item in items if isinstance(item, WarcDamage)]
    assert [item.offset for item in damage if "left out" not in item.problem] == [0, pieces[3].start - 16 * 40]
    assert [item.offset for item in items if isinstance(item, WarcPage)][1] == pieces[3].start
    # The junk is left out (named), each page's conversion right after it: the output is the clean file's.
    assert [item.offset for item in damage if "left out" in item.problem] == [0, pieces[3].start - 16 * 40]
    assert data == run(clean, gzip=False)[0]
    assert b"".join(run(path, piece, gzip=False)[0] for piece in pieces) == data


def damaged_inputs(tmp_path: Path) -> dict[str, Path]:
    """Every damaged WARC and ARC the tests build, and more: damage after a page, a record cut
    short at the end of the file, junk between records."""
    found: dict[str, Path] = {}
    for compress in (True, False):
        name = "gz" if compress else "plain"
        found[f"damaged {name}"] = damaged_collection(tmp_path, compress)[0]  # the record after the style sheet
        clean = write_collection(tmp_path / f"whole-{name}.warc", compress=compress).read_bytes()
        starts = record_starts(tmp_path / f"whole-{name}.warc")
        cut = tmp_path / f"cut-{name}.warc"  # the last record (after a page) cut short
        cut.write_bytes(clean[: (starts[-1] + len(clean)) // 2])
        found[f"cut {name}"] = cut
        junk = tmp_path / f"junk-{name}.warc"  # junk between the page and its style sheet, and at the end
        junk.write_bytes(clean[: starts[3]] + b"junk\r\n" * 30 + clean[starts[3] :] + b"\x1f\x8b\x08junk")
        found[f"junk {name}"] = junk
        arc = bytearray(write_arc(tmp_path / f"crawl-{name}.arc", compress=compress).read_bytes())
        offsets = [item.offset for item in iter_documents(tmp_path / f"crawl-{name}.arc")]
        if compress:  # the style sheet's member damaged
            arc[offsets[1] + 12 : offsets[1] + 28] = bytes(16)
        else:
            arc[offsets[1] : offsets[1]] = b"junk junk\n" * 3
        found[f"damaged arc {name}"] = tmp_path / f"damaged-{name}.arc"
        found[f"damaged arc {name}"].write_bytes(bytes(arc))
    plain = write_collection(tmp_path / "length.warc", compress=False).read_bytes()
    flipped = bytearray(plain)  # a byte of the style sheet changed: the record is framed whole, its block is not
    flipped[plain.index(b"background")] ^= 0x20
    found["flipped plain"] = tmp_path / "flipped.warc"
    found["flipped plain"].write_bytes(bytes(flipped))
    length = plain.index(b"Content-Length: ", plain.index(b"WARC-Type: request"))
    found["no Content-Length"] = tmp_path / "bad.warc"
    found["no Content-Length"].write_bytes(
        plain[:length] + b"Content-Length: many" + plain[plain.index(b"\r\n", length) :]
    )
    return found


DAMAGED = [
    "damaged gz",
    "damaged plain",
    "cut gz",
    "cut plain",
    "junk gz",
    "junk plain",
    "damaged arc gz",
    "damaged arc plain",
    "no Content-Length",
    "flipped plain",
]


@pytest.mark.parametrize("compress_out", COMPRESSIONS)
@pytest.mark.parametrize("name", DAMAGED)
def test_warc_out_of_a_damaged_input_passes_warcio_check_each_conversion_right_after_its_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, compress_out: bool
) -> None:
    path = damaged_inputs(tmp_path)[name]
    data, items = run(path, gzip=compress_out)
    out = tmp_path / "out.warc"
    out.write_bytes(data)
    warcio_check(out, capsys)
    records = read_back(data)
    converted = [page.uri for page in items if isinstance(page, WarcPage) and page.converted]
    conversions = [index for index, read in enumerate(records) if read.kind == "conversion"]
    assert [records[index].fields["WARC-Target-URI"] for index in conversions] == converted and converted
    for index in conversions:  # the record it converts is the one just before it
        assert records[index].fields["WARC-Refers-To"] == records[index - 1].fields["WARC-Record-ID"]
    assert any(isinstance(item, WarcDamage) and "left out of the output" in item.problem for item in items)
    joined = b"".join(run(path, piece, gzip=compress_out)[0] for piece in plan_warc(path, piece_size=1))
    assert joined == data


@pytest.mark.parametrize("compress_out", COMPRESSIONS)
def test_a_record_whose_block_digest_fails_is_left_out_with_no_conversion(tmp_path: Path, compress_out: bool) -> None:
    path = damaged_inputs(tmp_path)["flipped plain"]
    data, items = run(path, gzip=compress_out)
    uris = [read.fields.get("WARC-Target-URI") for read in read_back(data)]
    assert (
        "http://h/site/s/site.css" not in uris and uris.count("http://h/site/") == 4
    )  # request, page, conversion, revisit
    (sheet,) = [item for item in items if isinstance(item, WarcPage) and item.uri == "http://h/site/s/site.css"]
    assert not sheet.converted and any("block digest fails" in problem for problem in sheet.problems)
    left = [item.problem for item in items if isinstance(item, WarcDamage) and "left out" in item.problem]
    assert len(left) == 1 and "block digest fails" in left[0]


def test_every_damage_reading_names_is_named_by_warc_out_too(tmp_path: Path) -> None:
    plain = write_collection(tmp_path / "in.warc", compress=False).read_bytes()
    request = plain.index(b"WARC-Type: request")
    length = plain.index(b"Content-Length: ", request)
    path = tmp_path / "bad.warc"  # the request's Content-Length is no number (WARC 1.1 §5.3)
    path.write_bytes(plain[:length] + b"Content-Length: many" + plain[plain.index(b"\r\n", length) :])
    damage = [item for item in iter_documents(path) if isinstance(item, WarcDamage)]
    assert damage and "Content-Length" in damage[0].problem
    for target in (io.BytesIO(), None):
        items = list(rewrite_warc_piece(path, None, target, gzip=False))
        assert all(item in items for item in damage), (damage, items)
        assert [page.uri for page in items if isinstance(page, WarcPage)] == PAGES


# --- dry runs -------------------------------------------------------------------------------------------------


def links(page: WarcPage) -> list[tuple[str, str | None, str]]:
    assert page.result is not None
    return [(link.original, link.resolved, link.status) for link in page.result.links]


def found(page: bytes, url: str) -> list[tuple[str, str | None, str]]:
    """The links the HTML engine's finder reports for *page* read at *url*, called directly."""
    return [(link.original, link.resolved, link.status) for link in find_links(page, url=url).links]


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_a_dry_run_writes_nothing_and_finds_the_same_links(tmp_path: Path, compress: bool) -> None:
    path = write_collection(tmp_path / "in.warc", compress=compress)
    before = path.read_bytes()
    dry = [item for item in rewrite_warc_piece(path, None, None, gzip=compress, rewrite=False)]
    _, written = run(path, gzip=compress)
    assert [type(item) for item in dry] == [WarcPage] * len(PAGES)
    assert [(p.uri, p.record, p.offset) for p in dry] == [(p.uri, p.record, p.offset) for p in written]  # type: ignore[union-attr]
    for page, rewritten in zip(dry, written, strict=True):
        assert isinstance(page, WarcPage) and isinstance(rewritten, WarcPage)
        assert links(page) == links(rewritten) and links(page)
        assert not page.converted
    site = dry[0]
    assert isinstance(site, WarcPage)
    assert links(site) == found(PAGE, "http://h/site/")
    converted = [p.converted for p in rewrite_warc_piece(path, None, None, gzip=compress)]  # type: ignore[union-attr]
    assert converted == [uri in EXPECTED for uri in PAGES]
    assert path.read_bytes() == before
    with pytest.raises(ValueError):
        list(rewrite_warc_piece(path, None, io.BytesIO(), gzip=compress, rewrite=False))


def test_a_file_that_cannot_be_read_is_one_damage(tmp_path: Path) -> None:
    target = io.BytesIO()
    (item,) = rewrite_warc_piece(tmp_path / "missing.warc", None, target, gzip=True)
    assert isinstance(item, WarcDamage) and "cannot read" in item.problem and target.getvalue() == b""
    with pytest.raises(OSError):
        list(plan_warc(tmp_path / "missing.warc"))
    (tmp_path / "empty.warc").write_bytes(b"")
    assert list(plan_warc(tmp_path / "empty.warc")) == [Piece(0, 0, 0, 0, last=True)]
    assert run(tmp_path / "empty.warc", gzip=True) == (b"", [])


# --- ARC ------------------------------------------------------------------------------------------------------

ARC_VERSION = b"1 0 rewriter-tests\nURL IP-address Archive-date Content-type Archive-length\n"


def arc_record(line: bytes, block: bytes) -> bytes:
    """One ARC v1 record: its URL-record line (with the block's length), the block, a line end."""
    return line + b" %d\n" % len(block) + block + b"\n"


def write_arc(path: Path, *, compress: bool) -> Path:
    """An ARC v1 file (a version block, then URL records), plain or one gzip member per record."""
    records = [arc_record(b"filedesc://crawl.arc 0.0.0.0 20240501120000 text/plain", ARC_VERSION)]
    for uri, heading, body in (
        (b"http://h/site/", b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n", PAGE),
        (b"http://h/site/s/site.css", b"HTTP/1.0 200 OK\r\nContent-Type: text/css\r\n\r\n", CSS),
        (b"http://h/img/logo.png", b"HTTP/1.0 200 OK\r\nContent-Type: image/png\r\n\r\n", PNG),
        (b"http://h/old", b"HTTP/1.0 301 Moved\r\nLocation: /site/\r\n\r\n", b""),
    ):
        records.append(arc_record(uri + b" 10.0.0.1 20240501120000 text/html", heading + body))
    path.write_bytes(b"".join(gzip.compress(record, mtime=0) for record in records) if compress else b"".join(records))
    return path


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_an_arc_file_is_told_from_a_warc_and_its_pages_are_read(tmp_path: Path, compress: bool) -> None:
    path = write_arc(tmp_path / "crawl.arc", compress=compress)
    assert container_format(path) == "arc" and is_arc(path) and not is_warc(path)
    documents = list(iter_documents(path))
    assert [(d.uri, d.status, d.content_type, d.body) for d in documents] == [  # type: ignore[union-attr]
        ("http://h/site/", 200, "text/html", PAGE),
        ("http://h/site/s/site.css", 200, "text/css", CSS),
        ("http://h/img/logo.png", 200, "image/png", PNG),
        ("http://h/old", 301, None, b""),
    ]
    dry = list(rewrite_warc_piece(path, None, None, gzip=False, rewrite=False))
    assert [page.uri for page in dry] == ["http://h/site/", "http://h/site/s/site.css"]  # type: ignore[union-attr]
    assert links(dry[0]) == found(PAGE, "http://h/site/")  # type: ignore[arg-type]


@pytest.mark.parametrize("compress_out", COMPRESSIONS)
@pytest.mark.parametrize("compress_in", COMPRESSIONS)
def test_warc_out_of_an_arc_file_is_a_warc(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compress_in: bool, compress_out: bool
) -> None:
    path = write_arc(tmp_path / "crawl.arc", compress=compress_in)
    data, items = run(path, gzip=compress_out)
    assert not [item for item in items if isinstance(item, WarcDamage)]
    out = tmp_path / "out.warc"
    out.write_bytes(data)
    warcio_check(out, capsys)
    assert container_format(out) == "warc"
    records = read_back(data)
    assert [read.kind for read in records] == ["warcinfo", "response", "conversion", "response", "conversion"] + [
        "response"
    ] * 2
    assert records[0].fields["WARC-Filename"] == "crawl.arc" and records[0].block == ARC_VERSION
    assert records[1].block == PAGE and records[1].fields["Content-Type"] == "application/http;msgtype=response"
    assert records[2].block == rewrite_html(PAGE, url="http://h/site/").output
    assert records[4].block == rewrite_css(CSS, url="http://h/site/s/site.css").output
    assert records[2].fields["WARC-Refers-To"] == records[1].fields["WARC-Record-ID"]
    assert records[5].block == PNG
    whole = [gzip.decompress(read.raw) if compress_out else read.raw for read in records]
    assert all(raw.endswith(b"\r\n\r\n") and raw.startswith(b"WARC/1.0\r\n") for raw in whole)  # WARC 1.1 §4
    assert run(path, gzip=compress_out)[0] == data  # the record IDs are made, not drawn: the same every run
    joined = b"".join(run(path, piece, gzip=compress_out)[0] for piece in plan_warc(path, piece_size=1))
    assert joined == data


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_a_damaged_arc_record_costs_that_record_and_reading_goes_on_at_the_next(tmp_path: Path, compress: bool) -> None:
    whole = write_arc(tmp_path / "crawl.arc", compress=compress)
    offsets = [item.offset for item in iter_documents(whole)]
    data = bytearray(whole.read_bytes())
    if compress:  # the style sheet's member damaged
        data[offsets[1] + 12 : offsets[1] + 28] = bytes(16)
    else:  # junk before the style sheet's record; its URL must not be taken for a record's start
        data[offsets[1] : offsets[1]] = b"junk junk\n" * 3
    path = tmp_path / "damaged.arc"
    path.write_bytes(bytes(data))
    found = list(iter_documents(path))
    read = [item.uri for item in found if not isinstance(item, WarcDamage)]
    assert read == ["http://h/site/"] + ([] if compress else ["http://h/site/s/site.css"]) + [
        "http://h/img/logo.png",
        "http://h/old",
    ]
    assert [item.offset for item in found if isinstance(item, WarcDamage)] == [offsets[1]]
    out, _ = run(path, gzip=True)
    assert b"".join(run(path, piece, gzip=True)[0] for piece in plan_warc(path, piece_size=1)) == out


# --- telling archives apart -----------------------------------------------------------------------------------


def test_container_format_tells_warc_arc_and_neither(tmp_path: Path) -> None:
    write_collection(tmp_path / "a.warc", compress=False)
    write_collection(tmp_path / "b.warc.gz", compress=True)
    write_arc(tmp_path / "c.arc", compress=False)
    write_arc(tmp_path / "d.arc.gz", compress=True)
    (tmp_path / "e.html").write_bytes(PAGE)
    (tmp_path / "f.gz").write_bytes(gzip.compress(b"filedesc is not at the start"))
    (tmp_path / "g.arc").write_bytes(b"filedesc://x.arc 0.0.0.0 20240501120000 text/plain 4\n2 0 x\n")  # ARC v2
    (tmp_path / "h").write_bytes(b"")
    names = ["a.warc", "b.warc.gz", "c.arc", "d.arc.gz", "e.html", "f.gz", "g.arc", "h", "missing"]
    assert [container_format(tmp_path / name) for name in names] == ["warc", "warc", "arc", "arc"] + [None] * 5
    assert [is_arc(tmp_path / name) for name in names] == [False, False, True, True] + [False] * 5
    assert [is_warc(tmp_path / name) for name in names] == [True, True] + [False] * 7
    assert container_format(tmp_path) is None
