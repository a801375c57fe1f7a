"""Inflates nothing without a bound: decompression bombs in web archives.

Each archive here is an attack, built in tmp_path: a ``.warc.gz`` of a few MB whose bodies
inflate to gigabytes (a body sent with ``Content-Encoding: gzip``, the same one chunked too,
and a record whose own gzip member is the bomb), written by hand from WARC 1.1 §4 and Annex D,
RFC 1952 and RFC 9112 §7.1. The bombs are gzip streams of zeros made without holding what
they inflate to: one MiB of zeros deflated once, after a full flush (which empties the
compressor's window), gives the same bytes every time, and the stream is that block repeated.

Each command (``rewrite`` to a WARC out, ``unpack``, ``links``) is run as a user runs it, in
a fresh interpreter that reports its own peak resident size (VmHWM) and its children's, and
must stay under :data:`BOUND` with ``--max-size 10M``, name the record's URL and the limit,
and keep the record as recorded. A 1 GiB bomb is always run (a few seconds each);
``REWRITER_SLOW_TESTS=1`` adds a 4 GiB one.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

import rewriter
from rewriter.containers.warc import iter_documents, rewrite_warc_piece, unpack_warc

SLOW = os.environ.get("REWRITER_SLOW_TESTS") == "1"
MIB = 1 << 20
LIMIT = 10 * MIB
# What a run may take at its peak: the interpreter with the package and warcio loaded (~50 MB),
# a body of at most LIMIT held with its joined copy, and the inflater's steps. The attack as
# reported peaked at 581 MB for 100 MiB; an unbounded run of these bombs takes a gigabyte or more.
BOUND = 200 * MIB
URL = "http://bomb.example/page.html"
PAGE = b'<a href="next.html">next</a>'

_ZEROS = bytes(MIB)


def _zeros_block() -> bytes:
    """A mebibyte of zeros as raw deflate data (RFC 1951), ended by a full flush: any number of
    these in a row, after a full flush, is a valid deflate stream of that many MiB of zeros."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(_ZEROS) + compressor.flush(zlib.Z_FULL_FLUSH)


def gzip_member(before: bytes, zeros: int, after: bytes = b"") -> bytes:
    """One gzip member (RFC 1952) of *before*, *zeros* MiB of zeros, then *after*: a few KB for each
    GiB of zeros, built block by block (the zeros are never held)."""
    block = _zeros_block()
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    head = compressor.compress(before) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(before)
    for _ in range(zeros):
        crc = zlib.crc32(_ZEROS, crc)
    crc = zlib.crc32(after, crc)
    tail = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    end = tail.compress(after) + tail.flush()
    size = len(before) + zeros * MIB + len(after)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return header + head + block * zeros + end + struct.pack("<II", crc, size & 0xFFFFFFFF)


def chunked(data: bytes, size: int = 64 << 10) -> bytes:
    """*data* in the chunked transfer coding (RFC 9112 §7.1)."""
    pieces = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return b"".join(pieces) + b"0\r\n\r\n"


def warc_heading(uri: str, kind: str, length: int, content_type: str, number: int) -> bytes:
    fields = [
        ("WARC-Type", kind),
        ("WARC-Record-ID", f"<urn:uuid:00000000-0000-4000-8000-{number:012d}>"),
        ("WARC-Date", "2024-05-01T12:00:00Z"),
        ("WARC-Target-URI", uri),
        ("Content-Type", content_type),
        ("Content-Length", str(length)),
    ]
    return b"WARC/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in fields).encode() + b"\r\n"


def response(uri: str, fields: list[tuple[str, str]], body: bytes, number: int) -> bytes:
    """A response record (WARC 1.1 §6.3), uncompressed."""
    http = b"HTTP/1.1 200 OK\r\n" + "".join(f"{n}: {v}\r\n" for n, v in fields).encode() + b"\r\n" + body
    return warc_heading(uri, "response", len(http), "application/http;msgtype=response", number) + http + b"\r\n\r\n"


def page_record(number: int) -> bytes:
    """An ordinary page after the bomb: it must still be read and rewritten."""
    return gzip.compress(
        response("http://bomb.example/after.html", [("Content-Type", "text/html")], PAGE, number), mtime=0
    )


def bomb_warc(path: Path, kind: str, gib: int) -> Path:
    """A .warc.gz whose first record holds a body of *gib* GiB of zeros, then an ordinary page.

    ``coded``: ``Content-Encoding: gzip`` of the zeros, the record's member gzip around that
    (gzip in gzip); ``chunked``: the same body chunked too; ``member``: a text/html response
    whose record's gzip member itself inflates to the zeros (no content coding)."""
    html = [("Content-Type", "text/html")]
    if kind == "member":
        http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
        length = len(http) + gib * 1024 * MIB
        heading = warc_heading(URL, "response", length, "application/http;msgtype=response", 1)
        first = gzip_member(heading + http, gib * 1024, b"\r\n\r\n")
    else:
        body = gzip_member(b"", gib * 1024)
        fields = [*html, ("Content-Encoding", "gzip")]
        if kind == "chunked":
            body, fields = chunked(body), [*fields, ("Transfer-Encoding", "chunked")]
        first = gzip.compress(response(URL, fields, body, 1), compresslevel=9, mtime=0)
    path.write_bytes(first + page_record(2))
    return path


KINDS = ["coded", "chunked", "member"]

_CHILD = """
import json, resource, sys
sys.path.insert(0, {root!r})
from rewriter.cli.commands import main

code = main({argv!r})  # the command line's own main: entry_point would leave by os._exit
status = open("/proc/self/status").read()
peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
sys.stdout.flush()
sys.stderr.write("\\n" + json.dumps({{"peak": max(peak, children), "code": code}}) + "\\n")
"""


def run_measured(cwd: Path, *argv: str) -> tuple[int, int, str, bytes]:
    """``rewriter ARGV`` in a fresh interpreter: its peak resident size (its own or a worker's),
    its exit code, what it said on standard error, and its standard output."""
    root = str(Path(rewriter.__file__).resolve().parents[1])
    code = _CHILD.format(root=root, argv=list(argv))
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, timeout=600, check=False)
    err = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-3000:]
    last = (err.strip().splitlines() or [""])[-1]
    assert done.returncode == 0 and last.startswith("{"), f"exit status {done.returncode} (killed?): {err[-2000:]}"
    said = json.loads(last)
    return said["peak"], said["code"], err, done.stdout


def check_command(tmp_path: Path, warc: Path, command: str) -> None:
    if command == "rewrite":
        out = tmp_path / "out.warc.gz"
        peak, code, err, _ = run_measured(
            tmp_path, "rewrite", str(warc), "-o", str(out), "--max-size", "10M", "-j", "1"
        )
        # The bomb's record is kept as recorded (the same gzip member), with no conversion after it.
        data = out.read_bytes()
        assert data.startswith(warc.read_bytes()[: len(warc.read_bytes()) - len(page_record(2))])
        kinds = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI")) for r in ArchiveIterator(io.BytesIO(data))]
        assert kinds == [
            ("response", URL),
            ("response", "http://bomb.example/after.html"),
            ("conversion", "http://bomb.example/after.html"),
        ]
    elif command == "unpack":
        out = tmp_path / "mirror"
        peak, code, err, _ = run_measured(tmp_path, "unpack", str(warc), "-o", str(out), "--max-size", "10M")
        assert (out / "bomb.example" / "after.html").read_bytes() == b'<a href="http://bomb.example/next.html">next</a>'
        assert not (out / "bomb.example" / "page.html").exists()
        manifest = json.loads((out / "manifest.json").read_text())
        assert any("10,485,760 bytes" in problem for entry in manifest for problem in entry["problems"])
    else:
        peak, code, err, stdout = run_measured(tmp_path, "links", str(warc), "--max-size", "10M")
        assert b"http://bomb.example/next.html" in stdout  # the page after it is read
    assert code == 1, err[-2000:]
    named = [line for line in err.splitlines() if URL in line and "10,485,760 bytes" in line]
    assert named, err[-2000:]
    assert peak < BOUND, f"{command}: peak resident size {peak / MIB:.0f} MiB (bound {BOUND / MIB:.0f} MiB)"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["rewrite", "unpack", "links"])
def test_a_1_gib_bomb_runs_in_flat_memory_and_is_named_and_kept(tmp_path: Path, command: str, kind: str) -> None:
    warc = bomb_warc(tmp_path / "bomb.warc.gz", kind, 1)
    assert warc.stat().st_size < 4 * MIB
    check_command(tmp_path, warc, command)


@pytest.mark.skipif(not SLOW, reason="4 GiB inflated per run (~20 s each): set REWRITER_SLOW_TESTS=1")
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", ["rewrite", "unpack", "links"])
def test_a_4_gib_bomb_runs_in_flat_memory_and_is_named_and_kept(tmp_path: Path, command: str, kind: str) -> None:
    warc = bomb_warc(tmp_path / "bomb.warc.gz", kind, 4)
    check_command(tmp_path, warc, command)


def heading_bomb(path: Path, gib: int) -> Path:
    """A .warc.gz whose first member inflates to a WARC heading with a line of *gib* GiB (of zeros,
    no line end), then an ordinary page: warcio reads a line whole, however long."""
    path.write_bytes(gzip_member(b"WARC/1.1\r\nWARC-Type: resource\r\nX-Long: ", gib * 1024) + page_record(2))
    return path


@pytest.mark.parametrize("command", ["rewrite", "unpack", "links"])
def test_a_member_that_inflates_to_an_endless_heading_line_runs_in_flat_memory(tmp_path: Path, command: str) -> None:
    warc = heading_bomb(tmp_path / "heading.warc.gz", 1)
    if command == "rewrite":
        out = tmp_path / "out.warc.gz"
        peak, code, err, _ = run_measured(tmp_path, "rewrite", str(warc), "-o", str(out), "-j", "1")
        kinds = [r.rec_type for r in ArchiveIterator(io.BytesIO(out.read_bytes()))]
        assert kinds == ["response", "conversion"]  # the bomb's member left out, and named
        assert "left out of the output" in err
    elif command == "unpack":
        out = tmp_path / "mirror"
        peak, code, err, _ = run_measured(tmp_path, "unpack", str(warc), "-o", str(out))
        assert (out / "bomb.example" / "after.html").exists()
    else:
        peak, code, err, stdout = run_measured(tmp_path, "links", str(warc))
        assert b"http://bomb.example/next.html" in stdout
    assert code == 1 and "offset 0: unreadable record: ValueError: a heading longer than 1,048,576 bytes" in err, err
    assert peak < BOUND, f"{command}: peak resident size {peak / MIB:.0f} MiB (bound {BOUND / MIB:.0f} MiB)"


# --- the limit, counted in decoded bytes ----------------------------------------------------------------------


def small_warc(path: Path, fields: list[tuple[str, str]], body: bytes) -> Path:
    path.write_bytes(gzip.compress(response(URL, fields, body, 1), mtime=0))
    return path


def test_the_limit_counts_inflated_bytes_not_recorded_ones(tmp_path: Path) -> None:
    page = b"<a href=x.html>x</a>" + b" " * 5000
    coded = gzip.compress(page)
    assert len(coded) < 1000
    path = small_warc(tmp_path / "a.warc.gz", [("Content-Type", "text/html"), ("Content-Encoding", "gzip")], coded)
    (document,) = iter_documents(path, max_size=len(page))
    assert document.body == page and not document.problems
    (document,) = iter_documents(path, max_size=len(page) - 1)
    assert document.body is None
    assert document.problems == (
        f"offset 0: the decoded body of {URL} is larger than {len(page) - 1:,} bytes (--max-size): not read, "
        "its record kept as recorded",
    )


def test_chunk_framing_is_not_counted_against_the_limit(tmp_path: Path) -> None:
    page = b"<a href=x.html>x</a>" * 50
    body = chunked(page, size=1)  # seven bytes sent for each byte of the page
    path = small_warc(tmp_path / "c.warc.gz", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")], body)
    (document,) = iter_documents(path, max_size=len(page))
    assert document.body == page and not document.problems


@pytest.mark.parametrize("compress", [True, False], ids=["gz", "plain"])
def test_warc_out_of_a_body_over_the_limit_copies_its_record_unchanged(tmp_path: Path, compress: bool) -> None:
    page = b"<a href=x.html>x</a>" * 100
    record = response(URL, [("Content-Type", "text/html"), ("Content-Encoding", "gzip")], gzip.compress(page), 1)
    path = tmp_path / ("in.warc.gz" if compress else "in.warc")
    path.write_bytes(gzip.compress(record, mtime=0) if compress else record)
    target = io.BytesIO()
    items = list(rewrite_warc_piece(path, None, target, gzip=compress, max_size=len(page) - 1))
    assert target.getvalue() == path.read_bytes()
    (item,) = items
    assert getattr(item, "result", "?") is None and not getattr(item, "converted", True)
    assert any("larger than" in problem and URL in problem for problem in item.problems)  # type: ignore[union-attr]
    target = io.BytesIO()
    items = list(rewrite_warc_piece(path, None, target, gzip=compress, max_size=len(page)))
    assert [getattr(item, "converted", None) for item in items] == [True]


def test_unpack_names_a_body_over_the_limit_and_writes_the_rest(tmp_path: Path) -> None:
    warc = bomb_warc(tmp_path / "small.warc.gz", "coded", 0)  # an empty coded body: under any limit
    report = unpack_warc(warc, tmp_path / "out", max_size=1)
    assert report.documents == ("bomb.example/page.html",) and report.problems  # the page's 28 bytes: over 1
    assert any("bomb.example/after.html" in problem and "larger than 1 bytes" in problem for problem in report.problems)
