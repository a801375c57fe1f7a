"""Web archives: read the pages of a WARC (or ARC) file, write it back with its pages
rewritten (WARC out), or mirror its pages into a folder.

A WARC file (ISO 28500:2017, WARC 1.1) holds what a crawler fetched: each ``response``
record an HTTP response (RFC 9112 §4-§6: status line, header fields, body as sent),
each ``resource`` record a resource without HTTP around it. :func:`iter_documents`
reads both with :mod:`warcio`, plain or gzip (one gzip member per record, WARC 1.1
Annex D), and gives each body with the chunked transfer coding (RFC 9112 §7.1) and the
content coding (RFC 9110 §8.4) undone. Damage never raises: a record that is cut short
or cannot be parsed is named by its offset, and reading goes on at the next record. An
ARC v1 file (the Internet Archive's format before WARC) is read the same way, each record
as the WARC record warcio's ARC-to-WARC reading makes of it.

:func:`rewrite_warc_piece` is WARC out: every record written back as it was, each page
(a whole 2xx HTML or CSS response, or a resource record) followed by a ``conversion``
record (WARC 1.1 §6.7) holding it rewritten against its own URL. :func:`plan_warc` cuts a
large file into pieces at record starts, which are written independently and joined.

:func:`rewrite_warc` writes every HTML and CSS page of the archive with its relative
links made absolute against the page's own URL (its ``WARC-Target-URI``: a redirect's
target is a record of its own, RFC 9110 §15.4). :func:`unpack_warc` writes every
resource, and points each link the archive can answer (directly or through its
recorded redirects) at the file that answers it, by a relative path.

The mirror is ``OUT/<host>[_<port>]/<path segments>``: a path ending in ``/`` gets an
``index`` file, a query is folded into the last name (``search?q=1`` is
``search_q=1.html``), and every name is made by :class:`rewriter.disk.names.Folder`, so that
nothing is written outside OUT, nothing is overwritten, and each file appears whole or
not at all. ``OUT/manifest.json`` lists what each record became. A mirror is three steps, which a
run of the pipeline does apart (rewriter.run.pipeline.MirrorFolder): :func:`plan_mirror` reads
the file once and picks every file's name, :func:`write_mirror_piece` writes the records of one
piece of the file by that plan (pieces in any order, or at once), :func:`finish_mirror` writes
the manifest.

>>> import io, tempfile, pathlib
>>> from warcio.warcwriter import WARCWriter
>>> from warcio.statusandheaders import StatusAndHeaders
>>> buffer = io.BytesIO()
>>> writer = WARCWriter(buffer, gzip=True)
>>> http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
>>> writer.write_record(writer.create_warc_record("http://example.org/docs/", "response",
...     payload=io.BytesIO(b'<a href="guide.html">guide</a>'), http_headers=http))
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "site.warc.gz").write_bytes(buffer.getvalue())
>>> report = rewrite_warc(folder / "site.warc.gz", folder / "out")
>>> report.documents, report.links, report.problems
(('example.org/docs/index.html',), 1, ())
>>> (folder / "out" / "example.org" / "docs" / "index.html").read_bytes()
b'<a href="http://example.org/docs/guide.html">guide</a>'
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import hashlib
import io
import json
import mimetypes
import os
import re
import struct
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, BinaryIO, Union, cast
from urllib.parse import quote, urlsplit

from warcio.archiveiterator import ArchiveIterator, ARCIterator, WARCIterator
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

from rewriter.bundle.unpack import declare_charset
from rewriter.containers.formats import ARC_LINE, Container, gzip_holds_arc, gzip_holds_warc, is_warc, sniff_container
from rewriter.containers.pieces import PIECE_SIZE, Piece
from rewriter.disk.files import open_regular
from rewriter.disk.names import Folder
from rewriter.document.engines import CSS_TYPES, DOCUMENT_TYPES, HTML_TYPES, EngineFormat, engine_for_type
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.url.resolve import Rules, UnresolvableReference, remove_dot_segments, resolve, url_key

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer
    from warcio.recordloader import ArcWarcRecord  # untyped: Any to mypy

    from rewriter.document.model import DocumentResult

__all__ = [
    "CSS_TYPES",
    "DOCUMENT_TYPES",
    "HTML_TYPES",
    "MAX_BODY",
    "MirrorPlan",
    "MirroredRecord",
    "WarcDamage",
    "WarcDocument",
    "WarcEntry",
    "WarcPage",
    "WarcReport",
    "finish_mirror",
    "follow_redirects",
    "is_warc",
    "iter_documents",
    "plan_mirror",
    "plan_warc",
    "redirect_map",
    "rewrite_warc",
    "rewrite_warc_piece",
    "unpack_warc",
    "url_key",
    "write_mirror_piece",
]

MANIFEST = "manifest.json"
MAX_BODY = 1 << 30  # the decoded bytes of one body held at most, by default (as rewriter's --max-size)
MAX_DEPTH = 20  # folders below the host; deeper segments are folded into the file's name
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}
# JavaScript MIME type essences (MIME Sniffing §4.6), named by their common one for the extension.
_JAVASCRIPT = frozenset(
    {"application/javascript", "application/ecmascript", "application/x-javascript", "application/x-ecmascript"}
    | {"text/ecmascript", "text/jscript", "text/livescript", "text/x-javascript", "text/x-ecmascript"}
)
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n")  # RFC 9112 §7.1 chunk-size [chunk-ext] CRLF
_PARAMETER = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')
_BLOCK = 1 << 20
_HEADING = 1 << 20  # the lines of a record's headings (WARC and HTTP) read at most, together
_LINE = 1 << 16  # a chunk-size line at most this long; coded bytes that inflate to nothing, as long: not coded
_CODINGS = frozenset({"gzip", "deflate"})  # content codings undone (RFC 9110 §8.4.1), each inflated in steps
_WARC_LINE = re.compile(rb"WARC/(?:1\.[01]|0\.1[78])\r?\n")  # a record's first line (WARC 1.1 §4, and before)
_ARC_START = re.compile(rb"(?<=\n)" + ARC_LINE.pattern)  # an ARC v1 record's first line, after a line's end
_ARC_OVERLAP = 8192  # how far an ARC record's first line may reach past a window searched for one
_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False)


# --------------------------------------------------------------------------
# Reading records
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WarcDocument:
    """One ``response`` or ``resource`` record.

    ``status`` is the HTTP status (None for a resource record, or when unreadable);
    ``content_type`` the bare type, lower-cased, and ``charset`` its parameter, from the
    HTTP ``Content-Type`` (a resource record's own ``Content-Type``); ``body`` the
    payload with chunking and content coding undone, None when it cannot be (see
    ``problems``); ``location`` the ``Location`` field of a 3xx response, as sent;
    ``offset`` where the record begins in the file.
    """

    uri: str
    status: int | None
    content_type: str | None
    charset: str | None
    body: bytes | None = field(repr=False)
    location: str | None
    offset: int
    record_type: str = "response"
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WarcDamage:
    """Part of the file that could not be read as records, from *offset* on."""

    offset: int
    problem: str


Source = Union[str, "os.PathLike[str]", IO[bytes]]
Wanted = Callable[[int, str, str, "int | None", "str | None"], bool]  # offset, record type, uri, status, content type


def iter_documents(stream_or_path: Source, *, max_size: int = MAX_BODY) -> Iterator[WarcDocument | WarcDamage]:
    """Every ``response`` and ``resource`` record of a WARC or ARC file (plain or gzip), in file order.

    *stream_or_path* is a path or a binary stream (read from where it stands; only a
    seekable one can go on past damage, and only a seekable one is told from an ARC file,
    whose records warcio reads as the WARC records they would be). The file is only read. A
    part that cannot be read comes as a :class:`WarcDamage` naming its offset, and reading
    goes on at the next record that can be found; nothing is raised. Revisit, request,
    metadata and warcinfo records are passed over. A body is decoded (inflated) in steps and
    counted: one whose decoded bytes would be more than *max_size* is not read (``body`` None, a
    problem naming it), so that no body, however small as recorded, takes more memory than that.
    """
    yield from _read_source(stream_or_path, None, max_size)


def _read_source(source: Source, wanted: Wanted | None, limit: int) -> Iterator[WarcDocument | WarcDamage]:
    for event in _source_events(source, wanted, limit):
        if isinstance(event, WarcDamage):
            yield event
        elif isinstance(event, _Record) and not event.again and event.item is not None:
            yield event.item


def _source_events(source: Source, wanted: Wanted | None, limit: int) -> Iterator[_Event]:
    if isinstance(source, (str, os.PathLike)):
        try:
            stream = open(source, "rb")  # noqa: SIM115 - the with below closes it
        except OSError as error:
            yield WarcDamage(0, f"cannot read {os.fspath(source)}: {error.strerror or error}")
            return
        with stream:
            yield from _records(stream, wanted, limit=limit)
    else:
        yield from _records(source, wanted, limit=limit)


@dataclass(slots=True)
class _Record:
    """One record as the record loop read it: what :func:`_read` made of it, and what WARC out
    needs of its heading. Reading, the plan of pieces and WARC out all go through this loop."""

    offset: int  # where it begins: in the file, or in the decompressed data of a one-stream file
    item: WarcDocument | WarcDamage | None  # None: a record of no other type, read whole
    damaged: bool  # not read whole (cut short, its gzip member damaged): the file is damaged here
    headers: StatusAndHeaders | None = None  # its WARC heading (an ARC record's, as warcio converts it)
    http: StatusAndHeaders | None = None
    again: bool = False  # read a second time, from the decompressed data (see _Whole)
    end: int | None = None  # where it ends (its gzip member, or its blank lines), when read whole
    block_failed: bool = False  # its block is not what its WARC-Block-Digest says (WARC 1.1 §5.8)


@dataclass(frozen=True, slots=True)
class _Whole:
    """From here on the file is read as one gzip stream decompressed from *position*, and offsets
    count its decompressed bytes. The records this run had read are passed over, but for the
    last of them, which comes once more as a record read ``again``."""

    position: int


_Event = _Record | _Whole | WarcDamage


@dataclass(slots=True)
class _Stop:
    """Why one run of the warcio iterator ended."""

    damage: int | None = None  # where the damage is, None: the end was reached
    problem: str = ""
    count: int = 0  # records the run read
    last: int | None = None  # where the last of them begins
    one_gzip_stream: bool = False
    end: int = 0
    bounded: bool = False  # a record at or after the bound was reached: it is the next piece's


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    """warcio reports some damage only on standard error; catch it, to report it as a problem."""
    text = io.StringIO()
    with contextlib.redirect_stderr(text):
        yield text


def _said(text: io.StringIO) -> str:
    return _clean(text.getvalue(), 300)


def _seekable(stream: IO[bytes]) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _records(
    stream: IO[bytes],
    wanted: Wanted | None,
    *,
    start: int | None = None,
    end: int | None = None,
    digests: bool = True,
    limit: int = 0,
    container: Container | None = None,
) -> Iterator[_Event]:
    """The record loop: run warcio's iterator; on damage, look for the next record and run it again from there.

    Reads from where *stream* stands, or from *start*, a record's offset (a piece: the kind of
    file is then told from its first bytes, not from *start*'s); stops before the first
    record that begins at or after *end*. *digests*: whether warcio checks them. *limit*: the
    decoded bytes of a body held at most (the bodies *wanted*). *container*: what the file is,
    when the planner told it already (rewriter.containers.formats.what_file_is): not read again.
    """
    seekable = _seekable(stream)
    reader: IO[bytes] = stream
    head = stream.tell() if seekable else 0
    position = head if start is None else start
    gzipped = False
    told: Container = container or "warc"  # what the file is: WARC or ARC records
    whole: _GzipStream | None = None
    size = 0
    if seekable:
        first = head if start is None else 0
        told = container or sniff_container(cast(BinaryIO, stream), first) or "warc"
        stream.seek(first)
        gzipped = stream.read(2) == b"\x1f\x8b"
        size = stream.seek(0, os.SEEK_END)
    skip = 0
    while True:
        if seekable:
            try:
                reader.seek(position)
            except (OSError, EOFError, ValueError, zlib.error) as error:
                yield WarcDamage(position, f"offset {position}: cannot read on from here: {_clean(str(error))}")
                return
        stop = yield from _run(reader, wanted, skip, told, digests, end if whole is None else None, limit)
        if stop.bounded:
            return
        skip = 0
        if stop.one_gzip_stream and seekable and whole is None:
            yield WarcDamage(
                position,
                f"offset {position}: the file is one gzip stream, not one gzip member per record (WARC 1.1 "
                "Annex D); it is read as a whole, and offsets from here count bytes of the decompressed data",
            )
            yield _Whole(position)
            whole = _GzipStream(_Window(stream, position))
            reader = cast("IO[bytes]", whole)  # a binary file like any other to warcio
            gzipped, skip, position = False, stop.count, 0
            continue
        # warcio's offsets can step back on a damaged file; from here they only go forward.
        floor = position if stop.last is None else max(position, stop.last)
        last = max(stop.end, floor)
        if stop.damage is None:
            if whole is not None and whole.error is not None:
                problem = f"the gzip stream is cut short or damaged: {whole.error}"
                yield WarcDamage(last, f"decompressed offset {last}: {problem}")
                return
            if whole is not None or not seekable or last >= size or not _unread(stream, last, size):
                return
            stop.damage, stop.problem = last, f"{size - last} bytes that are no {told.upper()} record"
        damage = max(stop.damage, floor)
        where = f"offset {damage}" if stop.damage >= floor else f"after the record at offset {floor}"
        if not seekable:
            yield WarcDamage(damage, f"{where}: {stop.problem}; the stream cannot seek, so reading stops here")
            return
        # A gzip member ends where it ends; in a plain file, a wrong Content-Length before the damage
        # may have swallowed the start of the next record, so the search begins after the last one read.
        after = damage if gzipped or stop.last is None else floor
        following = _next_start(reader, after + 1, gzipped, told)
        then = "no record can be found after it" if following is None else f"reading goes on at offset {following}"
        if stop.problem:
            yield WarcDamage(damage, f"{where}: {stop.problem}; {then}")
        if following is None or (whole is None and end is not None and following >= end):
            return
        position = following  # always beyond the last start: every round moves on


class _Window(io.RawIOBase):
    """The bytes of *stream* from *start* on, as a file of their own: a gzip reader that rewinds
    seeks its file to 0, which must be where the stream it decompresses begins."""

    def __init__(self, stream: IO[bytes], start: int) -> None:
        super().__init__()
        self.stream = stream
        self.start = start
        stream.seek(start)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(size)

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.stream.read(len(view))
        view[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self.stream.tell() - self.start

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_SET:
            offset += self.start
        return self.stream.seek(offset, whence) - self.start


class _GzipStream(io.RawIOBase):
    """A file that is one gzip stream, read as its decompressed bytes. warcio takes an EOFError
    for the end of the file; here a cut or damaged stream ends the data, and ``error`` says why."""

    def __init__(self, stream: IO[bytes] | io.RawIOBase) -> None:
        super().__init__()
        self.inner = gzip.GzipFile(fileobj=stream, mode="rb")
        self.error: str | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.error is not None:
            return b""
        try:
            # read1: one decompression step, so that what comes before a cut is returned before the error.
            return self.inner.read1(size if size > 0 else io.DEFAULT_BUFFER_SIZE)
        except (EOFError, OSError, zlib.error) as error:
            self.error = _clean(str(error)) or type(error).__name__
            return b""

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self.inner.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.error = None
        return self.inner.seek(offset, whence)


def _clean(text: str, limit: int = 200) -> str:
    """*text* on one line, bytes that are not printable ASCII escaped, cut to *limit*.

    >>> _clean("first line: \\x8b\\x08\\x00 x\\n y")
    'first line: \\\\x8b\\\\x08\\\\x00 x y'
    """
    text = " ".join(text.split())
    escaped = "".join(
        char if " " <= char <= "~" else f"\\x{ord(char):02x}" if ord(char) < 256 else char for char in text
    )
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "\u2026"


def _unread(stream: IO[bytes], start: int, size: int) -> bool:
    """Whether the bytes from *start* on hold more than line breaks."""
    stream.seek(start)
    while start < size:
        data = stream.read(_BLOCK)
        if not data:
            return False
        if data.strip(b"\r\n"):
            return True
        start += len(data)
    return False


def _run(
    reader: IO[bytes],
    wanted: Wanted | None,
    skip: int,
    container: Container,
    digests: bool,
    bound: int | None,
    limit: int,
) -> Generator[_Event, None, _Stop]:
    """One run of warcio's iterator, until the end, damage, or a record at or after *bound*. The
    first *skip* records are passed over (read before, see :class:`_Whole`), the last of them
    given as read ``again``."""
    iterator: ArchiveIterator
    if container == "arc":  # ARC v1 records, each read as the WARC record it would be (warcio's arc2warc)
        iterator = ARCIterator(reader, arc2warc=True, check_digests=digests)
    else:
        iterator = WARCIterator(reader, check_digests=digests)
    heading = _Heading(iterator.reader)
    stop = _Stop()
    while True:
        try:
            with _captured() as noise:
                heading.used = 0  # each record's heading has its own bound
                record = next(iterator)
        except StopIteration:
            if _said(noise):
                yield WarcDamage(iterator.offset, f"offset {iterator.offset}: {_said(noise)}")
            stop.end = iterator.offset
            return stop
        except Exception as error:  # warcio raises many kinds on a damaged file; none may escape
            if bound is not None and iterator.offset >= bound:
                stop.bounded = True  # the next piece's own damage
                return stop
            stop.damage = iterator.offset
            message = _clean(str(error), 120)
            if type(error).__module__.split(".")[0] != "warcio":
                message = f"{type(error).__name__}: {message}"
            stop.one_gzip_stream = "non-chunked gzip" in message
            stop.problem = f"unreadable record: {message}"
            return stop
        offset = iterator.offset
        if _said(noise):
            yield WarcDamage(offset, f"before offset {offset}: {_said(noise)}")
        if bound is not None and offset >= bound:
            stop.bounded = True
            return stop
        stop.count += 1
        stop.last = offset
        if stop.count < skip:
            continue
        if stop.count == skip:
            yield _Record(offset, None, False, again=True)
            continue
        item, damaged = _read(record, offset, wanted, limit)
        end = None
        if not damaged and not _member_ends(iterator):
            problem = f"offset {offset}: the gzip member of this record is cut short (its end and checksum are missing)"
            item = WarcDamage(offset, problem) if item is None else _with_problem(item, problem)
            damaged = True
        elif not damaged:
            end = iterator.offset  # warcio's, once the record is read to its end: what follows may be damage
        checker = getattr(record, "digest_checker", None)
        failed = any(str(problem).startswith("block digest failed") for problem in getattr(checker, "problems", ()))
        yield _Record(offset, item, damaged, record.rec_headers, record.http_headers, end=end, block_failed=failed)
        if damaged:  # the container is damaged here: warcio cannot be trusted to find the next record
            stop.damage = offset
            return stop


class _Heading:
    """A bound on the lines warcio reads for one record (its WARC heading, its HTTP heading, the
    blank lines after it), taken on warcio's reader: it reads a line whole, however long, and a
    small gzip member can inflate to a line of gigabytes. Past :data:`_HEADING` bytes the record
    is unreadable (damage: reading goes on at the next record)."""

    def __init__(self, reader: BufferedReader) -> None:
        self.readline = reader.readline
        self.used = 0
        reader.readline = self.bounded

    def bounded(self, length: int | None = None) -> bytes:
        left = _HEADING - self.used
        if left <= 0:
            raise ValueError(f"a heading longer than {_HEADING:,} bytes")
        line: bytes = self.readline(left if length is None or length < 0 else min(length, left))
        self.used += len(line)
        return line


def _member_ends(iterator: ArchiveIterator) -> bool:
    """Whether the record just read ends its gzip member whole (true of a plain file)."""
    try:
        with _captured():
            iterator.read_to_end()  # what warcio does before the next record: the blank lines, the member's end
    except Exception:  # damage after the record's block: reported as the member cut short
        return False
    decompressor = getattr(iterator.reader, "decompressor", None)
    # A member that holds the next record's first line too is no cut: warcio names that case itself.
    return decompressor is None or bool(getattr(decompressor, "eof", True)) or bool(iterator.next_line)


def _with_problem(item: WarcDocument | WarcDamage, problem: str) -> WarcDocument | WarcDamage:
    if isinstance(item, WarcDamage):
        return WarcDamage(item.offset, f"{item.problem}; {problem}")
    return dataclasses.replace(item, problems=(*item.problems, problem))


def _next_start(reader: IO[bytes], after: int, gzipped: bool, container: Container = "warc") -> int | None:
    """The offset of the first record (gzip member) that begins at or after *after* (at least 1).

    An ARC record's first line is taken only after a line's end (its URL alone would match
    from any of its characters on), and may be long: the windows overlap by 8 KiB."""
    arc = container == "arc"
    holds = gzip_holds_arc if arc else gzip_holds_warc
    line, back, overlap = (_ARC_START, 1, _ARC_OVERLAP) if arc else (_WARC_LINE, 0, 16)
    position = max(after, back)
    try:
        while True:
            reader.seek(position - back)  # an ARC line's start is seen with the line end before it
            data = reader.read(_BLOCK + overlap + back)
            if len(data) <= back:
                return None
            window = min(len(data) - back, _BLOCK)
            if gzipped:
                index = data.find(b"\x1f\x8b\x08", back, back + window)
                while index >= 0:
                    if holds(cast(BinaryIO, reader), position - back + index):
                        return position - back + index
                    index = data.find(b"\x1f\x8b\x08", index + 1, back + window)
            else:
                match = line.search(data, back)
                if match is not None and match.start() < back + window:
                    return position - back + match.start()
            position += window
    except (OSError, EOFError, ValueError, zlib.error):
        return None


def _read(
    record: ArcWarcRecord, offset: int, wanted: Wanted | None, limit: int
) -> tuple[WarcDocument | WarcDamage | None, bool]:
    """The document (or damage) of one record, and whether the file is damaged within it. Its body
    (when *wanted*) is decoded as it is read, *limit* bytes of it held at most (see :class:`_Body`)."""
    kind = getattr(record, "rec_type", None)
    rec_headers = record.rec_headers
    length = rec_headers.get_header("Content-Length")
    if length is None or not length.strip().isdigit():
        # WARC 1.1 §5.3: every record has one; without it the heading was cut short or damaged.
        problem = (
            f"a record without a valid Content-Length ({_clean(str(length), 40)}): its heading is cut short or damaged"
        )
        return WarcDamage(offset, f"offset {offset}: {problem}"), True
    if not kind:
        return WarcDamage(offset, f"offset {offset}: a record without WARC-Type (WARC 1.1 §5.5): not read"), False
    http = record.http_headers
    uri = rec_headers.get_header("WARC-Target-URI") or ""
    relevant = kind in ("response", "resource")
    status: int | None = None
    problems: list[str] = []
    if relevant and not uri:
        problems.append(f"offset {offset}: a {kind} record without WARC-Target-URI (WARC 1.1 §5.7)")
    own_parse = kind == "response" and http is None and uri[:6].lower().startswith(("http:", "https:"))
    if own_parse and record.length:
        # warcio reads the HTTP heading only after a lower-case "http:" or "https:" (RFC 3986 §3.1: any case).
        try:
            with _captured():
                http = record.http_headers = _HTTP_PARSER.parse(record.raw_stream)
        except Exception as error:  # an unreadable heading: the body is not taken
            problems.append(f"offset {offset}: unreadable HTTP heading: {_clean(str(error), 80)}")
            relevant = False
    if relevant and http is not None:
        try:
            status = int(http.get_statuscode())
        except (TypeError, ValueError):
            problems.append(f"offset {offset}: unreadable HTTP status line {_clean(http.statusline, 80)!r}")
    type_field = http.get_header("Content-Type") if http is not None else record.content_type
    if kind == "response" and http is None:
        type_field = None  # a non-HTTP response (dns:, whois:): its body is no resource of the site
    content_type, charset = _content_type(type_field)
    keep = relevant and (wanted is None or wanted(offset, kind, uri, status, content_type))
    reader = _Body(http, f"offset {offset}", _clean(uri, 120) or "(no URI)", limit) if keep else None
    with _captured() as noise:
        failure = _raw(record.raw_stream, reader)
    missing = getattr(record.raw_stream, "limit", 0)
    damaged = failure is not None or (isinstance(missing, int) and missing > 0)
    if damaged:
        how = f"{missing} of its bytes are missing" if missing else failure
        problem = (
            f"offset {offset}: the {kind} record for {_clean(uri, 120) or '(no URI)'} is cut short ({how}): "
            "truncated or damaged"
        )
        if not relevant:
            return WarcDamage(offset, problem), True
        problems.append(problem)
    elif _said(noise):
        problems.append(f"offset {offset}: {_said(noise)}")
    checker = getattr(record, "digest_checker", None)
    for problem in getattr(checker, "problems", None) or ():
        if not (own_parse and problem.startswith("payload digest")):  # warcio took the heading for payload
            problems.append(f"offset {offset}: {problem}")
    if not relevant:
        return None, False
    body: bytes | None = None
    if reader is not None and not damaged:
        body, decoding = reader.finish()
        problems.extend(decoding)
    location = None
    if status is not None and 300 <= status < 400 and http is not None:
        location = http.get_header("Location")
    return WarcDocument(uri, status, content_type, charset, body, location, offset, kind, tuple(problems)), damaged


def _raw(stream: IO[bytes], body: _Body | None) -> str | None:
    """Read the rest of a record's block in blocks, each given to *body* (drained when None); the
    error that stopped the reading, if any."""
    try:
        while True:
            data = stream.read(_BLOCK)
            if not data:
                break
            if body is not None:
                body.feed(data)
    except Exception as error:  # a damaged gzip member, a short read: reported, never raised
        return _clean(str(error)) or type(error).__name__
    return None


def _content_type(value: str | None) -> tuple[str | None, str | None]:
    """The bare type, lower-cased, and the charset parameter of a Content-Type (RFC 9110 §8.3).

    >>> _content_type('Text/HTML; Charset="Shift_JIS"')
    ('text/html', 'Shift_JIS')
    """
    if not value:
        return None, None
    essence = value.split(";", 1)[0].strip().lower()
    charset = None
    for name, raw in _PARAMETER.findall(value):
        if name.lower() == "charset":
            raw = raw.strip()
            if len(raw) >= 2 and raw[0] == raw[-1] == '"':
                raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
            charset = raw.strip() or None
            break
    return (essence if "/" in essence else None), charset


class _Body:
    """A record's payload undone as it is read, block by block: the chunked transfer coding (RFC
    9112 §7.1), then the content coding (RFC 9110 §8.4.1: gzip or deflate), inflated in steps of
    at most 1 MiB. The decoded bytes are counted as they come: past *limit* (``--max-size``) none
    is kept and decoding stops, so that a small body that inflates to gigabytes is never held.
    Nothing is raised; :meth:`finish` gives the body (None when it cannot be) and the problems."""

    def __init__(self, http: StatusAndHeaders | None, where: str, name: str, limit: int) -> None:
        self.where = where
        self.name = name  # the record's URI, for the problem of a body over the limit
        self.limit = limit
        self.chunked = False
        self.coding: str | None = None
        self.refused: str | None = None  # a coding not undone here: the body is not given (when there is one)
        if http is not None:
            transfer = [token.strip().lower() for token in (http.get_header("Transfer-Encoding") or "").split(",")]
            transfer = [token for token in transfer if token and token != "identity"]
            coding = [token.strip().lower() for token in (http.get_header("Content-Encoding") or "").split(",")]
            coding = [token for token in coding if token and token != "identity"]
            if transfer not in ([], ["chunked"]):
                self.refused = f"Transfer-Encoding {http.get_header('Transfer-Encoding')!r} cannot be undone"
            elif len(coding) > 1 or (coding and coding[0] not in _CODINGS):
                self.refused = f"Content-Encoding {http.get_header('Content-Encoding')!r} cannot be decoded here"
            if self.refused is None:
                self.chunked, self.coding = bool(transfer), (coding[0] if coding else None)
        self.pieces: list[bytes] = []
        self.size = 0  # decoded bytes, kept or not
        self.fed = False
        self.problems: list[str] = []
        self.failure: str | None = None  # why the body cannot be given; decoding stops
        self.over = False
        # The chunked framing: "start" (not known to be chunked yet), "size", "data", "end" (its CRLF),
        # "done" (the last chunk read: trailer fields are no content), "plain" (not chunked after all).
        self.state = "start" if self.chunked else "plain"
        self.framing = b""  # a chunk-size line (or a data's CRLF) read in part
        self.left = 0  # bytes of the current chunk's data still to come
        # The content coding: None when there is none, or the body turned out not to be coded.
        self.inflater = _inflater(self.coding) if self.coding else None
        self.raw_deflate = False  # "deflate" read as a bare deflate stream (RFC 1951), as senders do
        self.head: list[bytes] | None = [] if self.coding else None  # coded bytes read while none inflated yet
        self.headed = 0  # their length

    def feed(self, data: bytes) -> None:
        """The next bytes of the payload, as recorded."""
        if not data:
            return
        self.fed = True
        if self.refused or self.failure or self.over:
            return
        if self.state != "plain":
            self._dechunk(data)
        else:
            self._decode(data)

    def finish(self) -> tuple[bytes | None, list[str]]:
        """The body and the problems met (the body None when it cannot be given)."""
        if not self.fed:
            return b"", []
        if self.refused:
            return None, [f"{self.where}: {self.refused}"]
        if not self.failure and not self.over:
            if self.state == "start":  # no chunk-size line before the end: not chunked
                self._not_chunked()
            elif self.state not in ("plain", "done"):
                self.failure = "the chunked body is cut short or malformed"
        if not self.failure and not self.over and self.inflater is not None and not self.inflater.eof:
            self.failure = f"the {self.coding} body is cut short"
        if self.over:
            return None, [*self.problems, f"{self.where}: {self.over_problem}"]
        if self.failure:  # nothing is taken: what was to be taken as recorded is not said
            return None, [f"{self.where}: {self.failure}"]
        body = b"".join(self.pieces)
        self.pieces = []
        return body, self.problems

    @property
    def over_problem(self) -> str:
        decoded = " decoded" if self.chunked or self.coding else ""
        size = f"larger than {self.limit:,} bytes (--max-size)"
        return f"the{decoded} body of {self.name} is {size}: not read, its record kept as recorded"

    def _dechunk(self, data: bytes) -> None:
        position = 0
        while position < len(data) and self.state not in ("done", "plain") and not (self.failure or self.over):
            if self.state == "data":
                take = min(self.left, len(data) - position)
                self._decode(data[position : position + take])
                self.left -= take
                position += take
                if not self.left:
                    self.state = "end"
                continue
            # A chunk-size line (RFC 9112 §7.1: chunk-size [chunk-ext] CRLF), or the CRLF after a chunk's data.
            end = data.find(b"\n", position)
            self.framing += data[position : len(data) if end < 0 else end + 1]
            position = len(data) if end < 0 else end + 1
            if end < 0 and len(self.framing) <= _LINE:
                continue
            if self.state == "end":
                if self.framing != b"\r\n":
                    self.failure = "the chunked body is cut short or malformed"
                self.framing, self.state = b"", "size"
                continue
            line = _CHUNK_LINE.fullmatch(self.framing)
            if line is None:
                if self.state == "start":
                    self._not_chunked(data[position:])
                    return
                self.failure = "the chunked body is cut short or malformed"
                return
            self.framing, self.left = b"", int(line.group(1), 16)
            self.state = "data" if self.left else "done"
        if self.state == "plain" and position < len(data):
            self._decode(data[position:])

    def _not_chunked(self, rest: bytes = b"") -> None:
        """Transfer-Encoding says chunked, but the body does not begin as one: it is taken as recorded."""
        self.problems.append(f"{self.where}: Transfer-Encoding is chunked, but the body is not: taken as recorded")
        held, self.framing, self.state = self.framing, b"", "plain"
        self._decode(held + rest)

    def _decode(self, data: bytes) -> None:
        if self.inflater is None:
            self._keep(data)
        else:
            self._inflate(data)

    def _inflate(self, data: bytes) -> None:
        inflater = self.inflater
        assert inflater is not None
        if self.head is not None:
            self.head.append(data)
            self.headed += len(data)
            if self.headed > _LINE:  # long enough to be sure of the coding: no falling back from here
                self.head = None
        try:
            while True:
                if inflater.eof:
                    if data or inflater.unused_data:
                        self.failure = f"data after the end of the {self.coding} body (a second member?)"
                    return
                out = inflater.decompress(data, _BLOCK)
                if out:
                    self.head = None  # it is coded: from here on an error is damage
                    self._keep(out)
                    if self.over:
                        return
                data = inflater.unconsumed_tail
                if not data and len(out) < _BLOCK:  # a full step may leave output within zlib: one more
                    if inflater.eof and inflater.unused_data:
                        self.failure = f"data after the end of the {self.coding} body (a second member?)"
                    return
        except zlib.error as error:
            if self.head is None:
                self.failure = f"the body cannot be decoded: {_clean(str(error))}"
                return
        # Nothing inflated yet: a bare deflate stream for "deflate", else the body is not coded.
        held, self.head, self.headed = b"".join(self.head), [], 0
        if self.coding == "deflate" and not self.raw_deflate:
            self.raw_deflate, self.inflater = True, zlib.decompressobj(-zlib.MAX_WBITS)
            self._inflate(held)
            return
        self.problems.append(f"{self.where}: Content-Encoding is {self.coding}, but the body is not: taken as recorded")
        self.inflater = self.head = None
        self._keep(held)

    def _keep(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            self.over, self.pieces = True, []
        elif data:
            self.pieces.append(data)


def _inflater(coding: str) -> zlib._Decompress:
    """A decompressor for a content coding: gzip (RFC 1952), or deflate in its zlib wrapping (RFC 1950)."""
    return zlib.decompressobj(16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS)


# --------------------------------------------------------------------------
# URLs and redirects
# --------------------------------------------------------------------------


def redirect_map(documents: Iterable[WarcDocument], *, rules: Rules = "rfc3986", strict: bool = True) -> dict[str, str]:
    """From each 3xx response with a ``Location``: its URL (:func:`url_key`) → the Location
    resolved against its target URI (RFC 9110 §10.2.2). The first record of a URL wins; a
    Location that cannot be resolved is left out.

    >>> page = WarcDocument("http://h/old", 301, None, None, b"", "new/", 0)
    >>> redirect_map([page])
    {'http://h/old': 'http://h/new/'}
    """
    redirects: dict[str, str] = {}
    for document in documents:
        status, location = document.status, document.location
        if status is None or not 300 <= status < 400 or not location or not location.strip():
            continue
        key = url_key(document.uri)
        if key in redirects:
            continue
        try:
            redirects[key] = resolve(document.uri, location.strip(), rules=rules, strict=strict)
        except UnresolvableReference:
            continue
    return redirects


def follow_redirects(
    url: str, redirects: Mapping[str, str], *, stop: Callable[[str], bool] | None = None
) -> str | None:
    """The URL a chain of *redirects* (from :func:`redirect_map`) leads *url* to: the first that
    does not redirect, or the first for which *stop* is true. None when the chain loops.

    >>> chain = {"http://h/a": "http://h/b", "http://h/b": "http://h/c", "http://h/x": "http://h/x"}
    >>> follow_redirects("http://h/a", chain), follow_redirects("http://h/x", chain)
    ('http://h/c', None)
    """
    seen: set[str] = set()
    current = url
    while True:
        if stop is not None and stop(current):
            return current
        key = url_key(current)
        if key in seen:
            return None
        seen.add(key)
        following = redirects.get(key)
        if following is None:
            return current
        current = following


# --------------------------------------------------------------------------
# The mirror
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WarcEntry:
    """What one record became: ``file`` is its path under the output folder (POSIX
    separators), None when it was not written; ``location`` the resolved Location of a
    redirect. A damaged part of the file is an entry with no ``url``."""

    url: str | None
    file: str | None
    status: int | None
    content_type: str | None
    offset: int
    problems: tuple[str, ...] = ()
    location: str | None = None
    links: int = 0  # links rewritten (or relinked) in it


@dataclass(frozen=True, slots=True)
class WarcReport:
    """The outcome of :func:`rewrite_warc` or :func:`unpack_warc`."""

    warc: Path
    out_dir: Path
    manifest: str | None  # its name under out_dir, None when it could not be written
    entries: tuple[WarcEntry, ...]  # in file order
    documents: tuple[str, ...]  # the files written, in file order
    links: int  # links rewritten or relinked
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def files(self) -> dict[str, str]:
        """Each URL written → its file under out_dir (what ``manifest.json`` records)."""
        return {entry.url: entry.file for entry in self.entries if entry.url is not None and entry.file is not None}

    def summary(self) -> str:
        """One line: what was written.

        >>> WarcReport(Path("a.warc"), Path("out"), MANIFEST, (), ("h/index.html",), 3, ()).summary()
        '1 file written (3 links rewritten or relinked), no problem'
        """
        files = len(self.documents)
        problems = len(self.problems)
        return (
            f"{files} file{'s' if files != 1 else ''} written ({self.links} link{'s' if self.links != 1 else ''} "
            f"rewritten or relinked), {problems or 'no'} problem{'s' if problems > 1 else ''}"
        )


@dataclass(slots=True)
class _Planned:
    offset: int
    url: str
    key: str
    status: int | None
    content_type: str | None
    folders: tuple[str, ...]
    leaf: str
    naming_type: str | None
    file: str | None = None
    problems: list[str] = field(default_factory=list)
    location: str | None = None  # a redirect's, resolved
    sent: str | None = None  # a redirect's Location field, as sent
    links: int = 0
    written: bool = False
    whole: bool = False  # read after the point where the file is one gzip stream (MirrorPlan.holds)


def _success(kind: str, status: int | None) -> bool:
    """A resource record, or a 2xx response other than 206: a whole representation (RFC 9110 §15.3)."""
    return kind == "resource" if status is None else 200 <= status < 300 and status != 206


def _has_host(url: str) -> bool:
    try:
        return bool(urlsplit(url).netloc)
    except ValueError:
        return False


def _fits(extension: str, content_type: str | None) -> bool:
    """Whether a file name's *extension* says *content_type* (an .htm page, a .css sheet)."""
    if not extension or content_type is None:
        return False
    guessed = mimetypes.guess_type("x" + extension.lower(), strict=False)[0]
    return guessed == content_type or (guessed in HTML_TYPES and content_type in HTML_TYPES)


def _layout(url: str, content_type: str | None) -> tuple[tuple[str, ...], str]:
    """The raw folder names (host first) and file name of *url* in the mirror.

    >>> _layout("http://Example.org:8080/a/b/", "text/html")
    (('example.org_8080', 'a', 'b'), 'index')
    >>> _layout("https://h/search.html?q=a/b", "text/html")
    (('h',), 'search_q=a%2Fb.html')
    """
    bare = url.partition("#")[0]
    try:
        parts = urlsplit(bare)
        scheme, netloc, path, query = parts.scheme.lower(), parts.netloc, parts.path, parts.query
    except ValueError:
        scheme, _, rest = bare.partition("://")
        netloc, slash, rest = rest.partition("/")
        path, _, query = (slash + rest).partition("?")
    host = netloc.rpartition("@")[2].lower()
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and not name.endswith("]" if "[" in name else ":"):
        host = name if port == _DEFAULT_PORTS.get(scheme) else f"{name}_{port}"
    segments = remove_dot_segments(path).split("/")[1:] if path.startswith("/") else path.split("/")
    segments = segments or [""]
    folders, leaf = segments[:-1], segments[-1]
    if len(folders) > MAX_DEPTH:
        leaf = "_".join([*folders[MAX_DEPTH:], leaf])
        folders = folders[:MAX_DEPTH]
    leaf = leaf or "index"
    if "?" in bare:
        stem, extension = os.path.splitext(leaf)
        if not _fits(extension, content_type):
            stem, extension = leaf, ""
        leaf = f"{stem}_{query}{extension}"
    escape = str.maketrans({"/": "%2F", "\\": "%5C"})
    return tuple(raw.translate(escape) for raw in [host or scheme or "file", *folders]), leaf.translate(escape)


def _relative(path: str, folder: str) -> str:
    """*path* (under the output folder) as seen from *folder*, POSIX separators.

    >>> _relative("h/a/b.html", "h/c/d"), _relative("h/x.png", "h")
    ('../../a/b.html', 'x.png')
    """
    target, start = path.split("/"), folder.split("/") if folder else []
    common = 0
    while common < len(start) and common < len(target) - 1 and start[common] == target[common]:
        common += 1
    return "/".join([".."] * (len(start) - common) + target[common:])


class _Folders:
    """Open subfolders of the output folder by their names, the last few kept open."""

    def __init__(self, root: Folder, size: int = 32) -> None:
        self.root = root
        self.size = size
        self.open: OrderedDict[tuple[str, ...], Folder] = OrderedDict()

    def get(self, names: tuple[str, ...]) -> Folder:
        depth = len(names)
        while depth and names[:depth] not in self.open:
            depth -= 1
        folder = self.open[names[:depth]] if depth else self.root
        if depth:
            self.open.move_to_end(names[:depth])
        for index in range(depth, len(names)):
            folder = folder.folder(names[index])
            self.open[names[: index + 1]] = folder
            while len(self.open) > self.size:
                self.open.popitem(last=False)[1].close()
        return folder

    def close(self) -> None:
        for folder in self.open.values():
            folder.close()
        self.open.clear()


def _plan_names(root: Folder, planned: list[_Planned]) -> None:
    """Give each planned record its file: folders depth-first in URL order, so that a folder's
    names are all picked while it is open, and no two records share a name."""
    stack: list[tuple[str, Folder]] = []
    names: list[str] = []
    try:
        for item in sorted(planned, key=lambda item: (item.folders, item.leaf, item.key, item.offset)):
            common = 0
            while common < len(stack) and common < len(item.folders) and stack[common][0] == item.folders[common]:
                common += 1
            while len(stack) > common:
                stack.pop()[1].close()
                names.pop()
            try:
                for raw in item.folders[common:]:
                    parent = stack[-1][1] if stack else root
                    name = parent.pick(raw)
                    stack.append((raw, parent.folder(name)))
                    names.append(name)
            except OSError as error:
                item.problems.append(f"offset {item.offset}: no folder for it: {error.strerror or error}")
                continue
            parent = stack[-1][1] if stack else root
            item.file = "/".join([*names, parent.pick(item.leaf, item.naming_type)])
    finally:
        for _, folder in stack:
            folder.close()


def _naming_type(content_type: str | None) -> str | None:
    return "text/javascript" if content_type in _JAVASCRIPT else content_type


def rewrite_warc(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_BODY,
) -> WarcReport:
    """Write each HTML and CSS page of the WARC at *path* (2xx responses and resource records)
    under *out_dir*, its relative links made absolute against its own ``WARC-Target-URI``.

    Each output is ``rewrite_html(body, url=target_uri, charset=charset, policy=policy)``
    (``rewrite_css`` for a style sheet) of the decoded body; see the module docstring for
    the layout. The WARC is only read; nothing is raised for what it holds. A body whose decoded
    bytes are more than *max_size* is not read, and its record is named (see :func:`iter_documents`).
    """
    return _mirror(Path(path), Path(out_dir), policy, max_size, unpack=False)


def unpack_warc(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_BODY,
) -> WarcReport:
    """Write every resource of the WARC at *path* (2xx responses and resource records) under
    *out_dir*, as a mirror a browser can read offline.

    HTML and CSS are rewritten with ``policy.clone(remove_base=True, relink=...)``: a link
    whose absolute URL the WARC holds, directly or through its recorded redirects, becomes
    the relative path from the document's folder to that file (percent-encoded, fragment
    kept); every other link is made absolute. An HTML page whose charset only HTTP gave,
    and which a browser reading the file would guess otherwise, gets a ``<meta charset>``
    first. A body whose decoded bytes are more than *max_size* is not written, and its record is
    named (see :func:`iter_documents`).
    """
    return _mirror(Path(path), Path(out_dir), policy, max_size, unpack=True)


def _mirror(warc: Path, out_dir: Path, policy: Policy, limit: int, *, unpack: bool) -> WarcReport:
    try:
        plan = plan_mirror(warc, out_dir, policy=policy, max_size=limit, unpack=unpack)
    except OSError as error:
        problem = f"cannot write into {out_dir}: {error.strerror or error}"
        return WarcReport(warc, out_dir, None, (), (), 0, (problem,))
    for _ in write_mirror_piece(plan, None, policy=policy, max_size=limit):
        pass
    return finish_mirror(plan)


class MirrorPlan:
    """The first pass of a mirror (:func:`plan_mirror`): every record worth an entry of the
    manifest, in file order, the file of each record to write picked under the output folder
    (``file``), and the manifest's name. The second pass (:func:`write_mirror_piece`) writes
    the records of a piece of the file by it, so that pieces are written independently and
    in any order; :func:`finish_mirror` writes the manifest. A run in pieces keeps it as JSON
    (:meth:`head_json`, :meth:`entries_json`): a resumed run writes the names the killed one
    picked, which the files it wrote have taken since."""

    def __init__(
        self, warc: str, out_dir: str, unpack: bool, manifest: str, entries: list[_Planned], problems: list[str]
    ) -> None:
        self.warc, self.out_dir, self.unpack, self.manifest = warc, out_dir, unpack, manifest
        self.entries = entries  # in file order
        self.problems = problems  # the mirror's own (the manifest's name)
        self.files: dict[str, str] = {}  # each URL written -> its file (unpack: what links are relinked to)
        self.redirects: dict[str, str] = {}
        self.whole: int | None = None  # where the file is read as one gzip stream from (see _Whole)
        self.identity: tuple[int, int] | None = None  # the archive's (size, mtime) when planned, for a run
        self.pieces: list[Piece] = [Piece(0, 0, 0, 0, last=True)]  # what plan_warc gives (plan_mirror)

    def relinked(self, policy: Policy) -> None:
        """Fill :attr:`files` and :attr:`redirects` from the entries (unpack relinks by them)."""
        self.files = {item.key: item.file for item in self.entries if item.file is not None}
        self.redirects = redirect_map(
            (WarcDocument(e.url, e.status, None, None, None, e.sent, e.offset) for e in self.entries if e.location),
            rules=policy.rules,
            strict=policy.strict,
        )

    def holds(self, entry: _Planned, piece: Piece | None) -> bool:
        """Whether *entry*'s record is read by *piece* (None: the whole file); each entry is of
        one piece. Past the point where the file is one gzip stream, offsets count decompressed
        bytes: those records are the last piece's, which runs to the end."""
        if piece is None:
            return True
        if self.whole is not None and entry.whole:
            return piece.last
        return piece.start <= entry.offset and (piece.last or entry.offset < piece.end)

    def head_json(self) -> dict[str, object]:
        """What every piece needs: the files, the manifest's name, the redirects to follow."""
        return {
            "warc": self.warc,
            "out_dir": self.out_dir,
            "unpack": self.unpack,
            "manifest": self.manifest,
            "problems": self.problems,
            "files": self.files,
            "redirects": self.redirects,
            "whole": self.whole,
            "pieces": [[piece.start, piece.end, piece.first, piece.number, piece.last] for piece in self.pieces],
            "identity": None if self.identity is None else list(self.identity),
        }

    def entries_json(self, piece: Piece | None) -> list[list[object]]:
        """The entries of *piece*, as JSON arrays."""
        return [
            [e.offset, e.url, e.key, e.status, e.content_type, e.file, e.problems, e.location, e.sent, e.whole]
            for e in self.entries
            if self.holds(e, piece)
        ]

    @classmethod
    def from_json(cls, head: object, entries: Iterable[object]) -> MirrorPlan:
        """The plan :meth:`head_json` and :meth:`entries_json` wrote (each value checked:
        the work folder is as untrusted as the tree it lies in); ValueError when it is not one."""
        if not isinstance(head, dict):
            raise ValueError("a mirror's plan is an object")
        texts = [head.get(name) for name in ("warc", "out_dir", "manifest")]
        if not all(isinstance(text, str) for text in texts) or not isinstance(head.get("unpack"), bool):
            raise ValueError("a mirror's plan names its archive, its folder and its manifest")
        files, redirects, problems = head.get("files"), head.get("redirects"), head.get("problems")
        for mapping in (files, redirects):
            if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in (*mapping, *mapping.values())):
                raise ValueError("a mirror's plan maps URLs to names")
        if not isinstance(problems, list) or not all(isinstance(problem, str) for problem in problems):
            raise ValueError("a mirror's problems are text")
        whole = head.get("whole")
        if whole is not None and type(whole) is not int:
            raise ValueError("a mirror's plan says where the file is one gzip stream by an offset")
        plan = cls(str(texts[0]), str(texts[1]), bool(head["unpack"]), str(texts[2]), [], list(problems))
        plan.files, plan.redirects, plan.whole = dict(files), dict(redirects), whole  # type: ignore[arg-type]
        plan.pieces = [_piece_from_json(value) for value in _listed(head.get("pieces"))] or plan.pieces
        identity = head.get("identity")
        if isinstance(identity, list) and len(identity) == 2 and all(type(value) is int for value in identity):
            plan.identity = (identity[0], identity[1])
        plan.entries = [_entry_from_json(value) for value in entries]
        return plan


def _listed(value: object) -> list[object]:
    if not isinstance(value, list):
        raise ValueError("a mirror's pieces are a list")
    return value


def _piece_from_json(value: object) -> Piece:
    if (
        not isinstance(value, list)
        or len(value) != 5
        or not all(type(number) is int and number >= 0 for number in value[:4])
        or type(value[4]) is not bool
    ):
        raise ValueError("a mirror's piece is four offsets and whether it is the last")
    return Piece(value[0], value[1], value[2], value[3], last=value[4])


def _entry_from_json(value: object) -> _Planned:
    if not isinstance(value, list) or len(value) != 10:
        raise ValueError("a mirror's entry is an array of 10 values")
    offset, url, key, status, content_type, file, problems, location, sent, whole = value
    if type(offset) is not int or not isinstance(url, str) or not isinstance(key, str):
        raise ValueError("a mirror's entry has an offset, a URL and its key")
    if (status is not None and type(status) is not int) or type(whole) is not bool:
        raise ValueError("a mirror's entry has a status")
    if not all(text is None or isinstance(text, str) for text in (content_type, file, location, sent)):
        raise ValueError("a mirror's entry has a type, a file, a Location")
    if not isinstance(problems, list) or not all(isinstance(problem, str) for problem in problems):
        raise ValueError("a mirror's entry's problems are text")
    if file is not None and any(name in ("", ".", "..") or "\0" in name for name in file.split("/")):
        raise ValueError(f"a mirror's file is a path of plain names, not {file[:80]!r}")
    entry = _Planned(offset, url, key, status, content_type, (), "", None, file=file, problems=list(problems))
    entry.location, entry.sent, entry.whole = location, sent, whole
    return entry


@dataclass(frozen=True, slots=True)
class MirroredRecord:
    """What the second pass did with one record to write: ``written`` whether its file is there
    (a run done again finds the file it wrote before, and takes it as written when its bytes are
    the same); ``links`` rewritten or relinked; ``problems`` of this pass; ``result`` the engine's
    (None for what no engine reads, or when the record was not rewritten); ``size`` its body's bytes."""

    offset: int
    url: str
    file: str
    written: bool
    links: int
    problems: tuple[str, ...]
    format: str | None
    size: int
    result: DocumentResult | None = field(repr=False)


def plan_mirror(
    warc: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_BODY,
    unpack: bool = False,
    piece_size: int = PIECE_SIZE,
) -> MirrorPlan:
    """The first pass of :func:`rewrite_warc` (*unpack*: :func:`unpack_warc`): every record read,
    the files of those to write picked (their folders made) in *out_dir*, which is made, and the
    pieces of *piece_size* the second pass may be done in (``pieces``: :func:`plan_warc`'s,
    from the same reading). Raises OSError when *out_dir* cannot be."""

    def candidate(offset: int, kind: str, uri: str, status: int | None, content_type: str | None) -> bool:
        if not _success(kind, status) or not _has_host(uri):
            return False
        return unpack or content_type in DOCUMENT_TYPES

    with Folder(Path(out_dir)) as root:
        problems: list[str] = []
        manifest = root.pick(MANIFEST)
        if manifest != MANIFEST:
            problems.append(f"{out_dir} already holds {MANIFEST}: the manifest is {manifest}")
        plan = MirrorPlan(os.fspath(warc), os.fspath(out_dir), unpack, manifest, [], problems)
        planned = _plan(Path(warc), candidate, plan, policy, max_size, piece_size)
        _plan_names(root, planned)
    if unpack:
        plan.relinked(policy)
    return plan


def write_mirror_piece(
    plan: MirrorPlan, piece: Piece | None, *, policy: Policy = DEFAULT_POLICY, max_size: int = MAX_BODY
) -> Iterator[MirroredRecord]:
    """The second pass for *piece* of the file (None: the whole file): each record of it that the
    plan writes, its body read again, HTML and CSS rewritten (relinked to the mirror when
    unpacking), written to its file; yielded in file order. The plan's entries take what was done."""
    by_offset = {item.offset: item for item in plan.entries if item.file is not None and plan.holds(item, piece)}
    if not by_offset:
        return
    start, end = (None, None) if piece is None else (piece.start, None if piece.last else piece.end)
    with Folder(Path(plan.out_dir)) as root:
        folders = _Folders(root)
        try:
            for item in _piece_documents(plan.warc, lambda offset, *_: offset in by_offset, start, end, max_size):
                entry = by_offset.get(item.offset)
                if entry is None or entry.written:
                    continue
                before = len(entry.problems)
                output, result, fmt = _rendered(entry, item, policy, plan)
                if output is not None:
                    _store(folders, entry, output)
                yield MirroredRecord(
                    entry.offset,
                    entry.url,
                    entry.file or "",
                    entry.written,
                    entry.links,
                    tuple(entry.problems[before:]),
                    fmt,
                    len(item.body or b""),
                    result,
                )
        finally:
            folders.close()


def _piece_documents(
    warc: str, wanted: Wanted, start: int | None, end: int | None, limit: int
) -> Iterator[WarcDocument]:
    """The documents *wanted* of the records that begin in [*start*, *end*) (None: from the
    first, to the last) of the file at *warc*, read once each."""
    try:
        stream = open(warc, "rb")  # noqa: SIM115 - the with below closes it
    except OSError:
        return  # its records are not written; the first pass named an unreadable file
    with stream:
        for event in _records(stream, wanted, start=start, end=end, limit=limit):
            if isinstance(event, _Record) and not event.again and isinstance(event.item, WarcDocument):
                yield event.item


def finish_mirror(plan: MirrorPlan) -> WarcReport:
    """The last step of a mirror: ``manifest.json`` (what each record became), and the report."""
    with Folder(Path(plan.out_dir)) as root:
        return _finish(Path(plan.warc), Path(plan.out_dir), root, plan.manifest, plan.entries, list(plan.problems))


def _finish(
    warc: Path, out_dir: Path, root: Folder, manifest: str, entries: list[_Planned], problems: list[str]
) -> WarcReport:
    """The last step of a mirror: each record's entry, ``manifest.json``, and the report."""
    frozen = tuple(
        WarcEntry(
            e.url or None,
            e.file if e.written else None,
            e.status,
            e.content_type,
            e.offset,
            tuple(e.problems),
            e.location,
            e.links,
        )
        for e in sorted(entries, key=lambda e: e.offset)
    )
    problems.extend(problem for entry in frozen for problem in entry.problems)
    listing = [
        {
            "url": entry.url,
            "file": entry.file,
            "status": entry.status,
            "content_type": entry.content_type,
            "offset": entry.offset,
            "problems": list(entry.problems),
            **({"location": entry.location} if entry.location else {}),
        }
        for entry in frozen
    ]
    written: str | None = manifest
    data = json.dumps(listing, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
    try:
        root.write(manifest, data)
    except FileExistsError as error:  # a killed run's, of the same plan: taken when it is the same
        if not _holds(root.path, manifest, data):
            problems.append(f"{MANIFEST} not written: {error.strerror or error}")
            written = None
    except OSError as error:
        problems.append(f"{MANIFEST} not written: {error.strerror or error}")
        written = None
    documents = tuple(entry.file for entry in frozen if entry.file is not None)
    return WarcReport(warc, out_dir, written, frozen, documents, sum(e.links for e in frozen), tuple(problems))


def _plan(
    warc: Path, candidate: Wanted, plan: MirrorPlan, policy: Policy, limit: int, piece_size: int
) -> list[_Planned]:
    """The first pass: every record worth an entry (into *plan*), and those to write (first 2xx
    of each URL), returned; and the pieces of the file (into *plan*: as :func:`plan_warc` cuts)."""
    entries = plan.entries
    planned: list[_Planned] = []
    first: dict[str, int] = {}
    cut = _Cuts(piece_size)
    for event in _source_events(warc, candidate, limit):
        if isinstance(event, _Whole):
            plan.whole = event.position
            continue
        if isinstance(event, _Record) and not event.again:
            cut.record(event.offset, whole=plan.whole is not None)
        item = event if isinstance(event, WarcDamage) else event.item
        if item is None or (isinstance(event, _Record) and event.again):
            continue
        if isinstance(item, WarcDamage):
            entries.append(_Planned(item.offset, "", "", None, None, (), "", None, problems=[item.problem]))
            entries[-1].whole = plan.whole is not None
            continue
        entry = _Planned(item.offset, item.uri, url_key(item.uri), item.status, item.content_type, (), "", None)
        entry.whole = plan.whole is not None
        entry.problems.extend(item.problems)
        if item.status is not None and 300 <= item.status < 400:
            if not item.location:
                continue
            entry.sent = item.location
            entry.location = _resolved_location(item, policy)
            if entry.location is None:
                entry.problems.append(f"offset {item.offset}: Location {item.location!r} cannot be resolved")
        elif candidate(item.offset, item.record_type, item.uri, item.status, item.content_type):
            if item.body is None:
                entry.problems.append(f"offset {item.offset}: not written")
            elif entry.key in first:
                entry.problems.append(
                    f"offset {item.offset}: {_clean(item.uri, 120)} is also the record at offset "
                    f"{first[entry.key]}, which is the one written"
                )
            else:
                first[entry.key] = item.offset
                entry.naming_type = _naming_type(item.content_type)
                entry.folders, entry.leaf = _layout(entry.key, entry.naming_type)
                planned.append(entry)
        elif item.status == 206 and _has_host(item.uri) and (plan.unpack or item.content_type in DOCUMENT_TYPES):
            entry.problems.append(
                f"offset {item.offset}: 206 Partial Content holds only part of {_clean(item.uri, 120)}: not written"
            )
        elif not item.problems:
            continue
        entries.append(entry)
    with contextlib.suppress(OSError):
        plan.pieces = [*cut.pieces, Piece(cut.start, os.stat(warc).st_size, cut.first, cut.number, last=True)]
    return planned


class _Cuts:
    """The pieces of a file, cut as :func:`plan_warc` cuts them, from the records as they are read."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pieces: list[Piece] = []
        self.start = self.first = self.number = self.count = 0

    def record(self, offset: int, *, whole: bool) -> None:
        if not whole and self.count > self.first and offset >= self.start + self.size:
            self.pieces.append(Piece(self.start, offset, self.first, self.number))
            self.start, self.first, self.number = offset, self.count, self.number + 1
        self.count += 1


def _resolved_location(document: WarcDocument, policy: Policy) -> str | None:
    try:
        return resolve(document.uri, (document.location or "").strip(), rules=policy.rules, strict=policy.strict)
    except UnresolvableReference:
        return None


def _store(folders: _Folders, item: _Planned, output: bytes) -> None:
    """Write one record's *output* to its planned file; a failure is the record's problem. A file
    there with the same bytes is the one a killed run wrote by the same plan: it is taken."""
    assert item.file is not None
    folder_path, _, name = item.file.rpartition("/")
    try:
        folders.get(tuple(folder_path.split("/")) if folder_path else ()).write(name, output)
    except (OSError, ValueError) as error:
        if isinstance(error, FileExistsError) and _holds(folders.root.path, item.file, output):
            item.written = True
            return
        item.problems.append(f"offset {item.offset}: not written: {getattr(error, 'strerror', None) or error}")
        return
    item.written = True


def _holds(root: Path, file: str, output: bytes) -> bool:
    """Whether *file* under *root* is a regular file (reached through no link) of *output*'s bytes."""
    try:
        with open_regular(root / file, root) as stream:
            return stream.read(len(output) + 1) == output
    except OSError:
        return False


def _rendered(
    item: _Planned, document: WarcDocument, policy: Policy, plan: MirrorPlan
) -> tuple[bytes | None, DocumentResult | None, str | None]:
    """What one record's file holds: its body, HTML and CSS rewritten (relinked to the
    mirror when unpacking); None, with the record's problem noted, when it is not written.
    And the engine's result and format (None for what no engine reads)."""
    if document.body is None or url_key(document.uri) != item.key:
        item.problems.append(f"offset {item.offset}: the record read differently the second time: not written")
        return None, None, None
    assert item.file is not None
    content_type = document.content_type
    engine = engine_for_type(content_type)
    if engine is None:
        return document.body, None, None
    folder_path = item.file.rpartition("/")[0]
    unpack = plan.unpack
    used = policy
    if unpack:
        used = policy.clone(remove_base=True, relink=_relinker(plan.files, plan.redirects, folder_path))
    try:
        result = engine.rewrite(document.body, url=document.uri, charset=document.charset, policy=used)
    except Exception as error:  # the engines never raise by contract; should one, the record is reported
        item.problems.append(f"offset {item.offset}: not rewritten: {_clean(str(error)) or type(error).__name__}")
        return None, None, None
    item.links = _tally(result, item)
    if unpack and content_type == "text/html":
        return declare_charset(document.body, result.output, document.charset, result.encoding), result, engine.format
    return result.output, result, engine.format


def _tally(result: DocumentResult, item: _Planned) -> int:
    """Links rewritten or relinked; the document's own problems and links left relative go to *item*."""
    count = left = 0
    for link in result.links:
        if link.status == "rewritten" or link.status == "relinked":
            count += 1
        elif link.status == "no-base" or link.status == "unresolvable":
            left += 1
    item.problems.extend(f"offset {item.offset}: {problem}" for problem in result.problems)
    if left:
        item.problems.append(f"offset {item.offset}: {left} link{'s' if left > 1 else ''} left relative (unresolvable)")
    return count


def _relinker(files: Mapping[str, str], redirects: Mapping[str, str], folder: str) -> Callable[[str], str | None]:
    """The ``Policy.relink`` of one document in *folder*: a URL the mirror holds → its relative path."""

    def relink(url: str) -> str | None:
        target, mark, fragment = url.partition("#")
        final = follow_redirects(target, redirects, stop=lambda current: url_key(current) in files)
        path = files.get(url_key(final)) if final is not None else None
        if path is None:
            return None
        return quote(_relative(path, folder)) + mark + fragment

    return relink


# --------------------------------------------------------------------------
# Pieces, and WARC out
# --------------------------------------------------------------------------


def plan_warc(path: str | os.PathLike[str], *, piece_size: int = PIECE_SIZE) -> Iterator[Piece]:
    """The pieces of the WARC (or ARC) file at *path*, streamed as they close, from one reading
    of its records (plain, or one gzip member per record: WARC 1.1 Annex D).

    A piece begins where a record begins (the first, at 0: what comes before the first record
    is its) and ends where the first record at least *piece_size* bytes after its start
    begins (the last piece, at the end of the file), so that together they hold every byte
    of the file once: a damaged stretch is in the piece it starts in. ``first`` is the index
    of the piece's first record, counting every record of the file from 0.
    Payloads are read through without being held, and digests are not checked: memory stays
    flat. A file that is one gzip stream (not a member per record) has no offsets to cut at
    after the point where that is found: the piece there runs to the end. An empty file, or
    one with no record, is one piece. Raises ``OSError`` when the file cannot be read, and
    ``ValueError`` for a *piece_size* below 1.

    >>> import io, tempfile
    >>> from warcio.warcwriter import WARCWriter
    >>> with tempfile.NamedTemporaryFile(suffix=".warc.gz") as file:
    ...     writer = WARCWriter(file, gzip=True)
    ...     for n in range(3):
    ...         writer.write_record(writer.create_warc_record(f"http://h/{n}", "resource",
    ...             payload=io.BytesIO(b"x" * 5000), warc_content_type="text/plain"))
    ...     file.flush()
    ...     pieces = list(plan_warc(file.name, piece_size=100))
    >>> [(piece.first, piece.number, piece.last) for piece in pieces]
    [(0, 0, False), (1, 1, False), (2, 2, True)]
    >>> pieces[0].end == pieces[1].start and pieces[1].end == pieces[2].start
    True
    """
    if piece_size < 1:
        raise ValueError(f"piece_size must be 1 or more, not {piece_size}")
    with open(path, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        start = first = number = count = 0
        whole = False
        for event in _records(stream, _no_body, start=0, digests=False):
            if isinstance(event, _Whole):
                whole = True
            elif isinstance(event, _Record) and not event.again:
                if not whole and count > first and event.offset >= start + piece_size:
                    yield Piece(start, event.offset, first, number)
                    start, first, number = event.offset, count, number + 1
                count += 1
    yield Piece(start, size, first, number, last=True)


def _no_body(offset: int, kind: str, uri: str, status: int | None, content_type: str | None) -> bool:
    return False


def _page_body(offset: int, kind: str, uri: str, status: int | None, content_type: str | None) -> bool:
    return _success(kind, status) and content_type in DOCUMENT_TYPES


@dataclass(frozen=True, slots=True)
class WarcPage:
    """One page of a WARC as :func:`rewrite_warc_piece` read it: a whole 2xx ``response``
    (not 206) or a ``resource`` record of an HTML or CSS type.

    ``format`` is the engine's (``html`` or ``css``); ``record`` the index of its record in
    the file (from 0) and ``offset`` where it begins; ``size`` the length of its decoded
    body; ``result`` what the engine returned (the rewritten page, or with ``rewrite=False``
    the links found), None when the body could not be decoded or the engine failed (see
    ``problems``, which hold the record's own; the page's are the result's). ``converted``:
    its rewritten page differs from the recorded one, so a conversion record follows it in
    the output (would follow it, with no target).
    """

    uri: str
    format: EngineFormat
    offset: int
    record: int
    status: int | None
    content_type: str
    charset: str | None
    size: int
    result: DocumentResult | None = field(repr=False)
    converted: bool
    problems: tuple[str, ...] = ()


def rewrite_warc_piece(
    path: str | os.PathLike[str],
    piece: Piece | None,
    target: BinaryIO | None,
    *,
    policy: Policy = DEFAULT_POLICY,
    gzip: bool,
    rewrite: bool = True,
    max_size: int = MAX_BODY,
    container: Container | None = None,
) -> Iterator[WarcPage | WarcDamage]:
    """WARC out: write every record of *piece* (None: the whole file) of the WARC at *path* to
    *target*, each page followed by a conversion record of it rewritten; yield each page and
    each damage, in file order.

    A page (see :class:`WarcPage`) is rewritten with ``engine.rewrite(body, url=target_uri,
    charset=http_charset, policy=policy)`` of its decoded body (chunking and content coding
    undone), as ``rewriter rewrite --url URI`` rewrites those bytes. When the output differs,
    a ``conversion`` record (WARC 1.1 §6.7) follows the page's record: its block is the
    rewritten page; ``WARC-Refers-To`` (§5.11) names the page's record; ``WARC-Target-URI``,
    ``WARC-Date`` and the document's ``Content-Type`` are the page's; ``WARC-Record-ID``
    (§5.2) is ``urn:uuid:`` + uuid5(NAMESPACE_URL, the page's record ID), so that every run on
    every machine writes the same record; ``WARC-Block-Digest`` and ``WARC-Payload-Digest``
    (§5.8, §5.9: the block is the payload) are computed with the algorithm and encoding of the
    page's own digests (sha1 in base 32, as warcio writes, when it has none). Every record is
    kept, revisits (§6.7.2, which name the original by URI and digest) and requests included:
    the records a revisit refers to are still there, unchanged.

    The records are written as they are when *gzip* is the input's compression (the raw
    bytes of each gzip member). Otherwise each record's uncompressed bytes are the same, framed
    anew: one gzip member per record (Annex D) or, to a plain output, each record's gzip member
    decompressed. What is no whole record (a damaged or cut gzip member, a record cut short or
    whose length runs into the next, junk between records) is left out, each stretch named by a
    :class:`WarcDamage`: the output is a WARC every reader reads to its end, each page's
    conversion record right after the page's record, whatever damage follows it. A file that is
    one gzip stream is framed anew from where that is found. Conversion records are gzip members
    of their own (mtime 0, OS 255: RFC 1952 §2.3) or plain, as *gzip* says.

    An ARC file's records cannot be kept byte for byte in a WARC: each is written as the
    WARC record warcio's ARC-to-WARC reading makes of it (its ARC fields as WARC fields,
    the version block a ``warcinfo`` record, the ARC block as the WARC block), with a record
    ID made from its offset and fields (uuid5), so that every run writes the same bytes.

    Pieces (:func:`plan_warc`) are independent: the outputs of a file's pieces, joined in
    order, are byte for byte the output of the whole file. With *target* None nothing is
    written (a dry run), and with ``rewrite=False`` the engine only finds links (only
    without a target). A page whose decoded body is more than *max_size* bytes is not read
    (its ``result`` None, a problem naming it and the limit): its record is kept as recorded,
    with no conversion. Nothing is raised for what the file holds; errors writing *target*
    propagate. The generator must be run to its end for the output to be whole.
    """
    if target is not None and not rewrite:
        raise ValueError("rewrite=False only finds links: there is no output to write")
    with contextlib.ExitStack() as files:
        try:
            stream = files.enter_context(open(path, "rb"))
            copy = files.enter_context(open(path, "rb")) if target is not None else None
        except OSError as error:
            yield WarcDamage(0, f"cannot read {os.fspath(path)}: {error.strerror or error}")
            return
        start, end, index = (0, None, 0) if piece is None else (piece.start, piece.end, piece.first)
        end = None if piece is None or piece.last else end
        # What the file is, when the planner did not tell it (rewriter.containers.formats.what_file_is).
        container = container or sniff_container(cast(BinaryIO, stream), 0) or "warc"
        stream.seek(0)
        gzipped = stream.read(2) == b"\x1f\x8b"
        out = None
        if copy is not None and target is not None:
            out = _Out(copy, target, gzipped=gzipped, gzip=gzip, arc=container == "arc", start=start)
        for event in _records(stream, _page_body, start=start, end=end, limit=max_size, container=container):
            if isinstance(event, _Whole):
                if end is not None:
                    yield WarcDamage(event.position, f"offset {event.position}: {_NOT_PLANNED}")
                    return
                if out is not None:
                    out.whole(event.position)
            elif isinstance(event, WarcDamage):
                yield event
            elif event.again:
                if out is not None:
                    out.add(event, None)
            else:
                page, conversion = _page(event, index, policy, rewrite, container, write=out is not None)
                index += 1
                if out is not None:
                    out.add(event, conversion)
                    yield from out.take()
                if page is not None:
                    yield page
                elif isinstance(event.item, WarcDocument):  # a record's own problems: a digest, its heading
                    yield from (WarcDamage(event.offset, problem) for problem in event.item.problems)
                elif isinstance(event.item, WarcDamage):
                    yield event.item
        if out is not None:
            out.close(end)
            yield from out.take()


_NOT_PLANNED = (
    "the file is one gzip stream from here, which plan_warc never cuts into pieces: this piece is not of "
    "its plan (was the file changed?); the piece is not written on from here"
)


def _page(
    record: _Record, index: int, policy: Policy, rewrite: bool, container: Container, *, write: bool
) -> tuple[WarcPage | None, bytes | None]:
    """The page a record is (None when it is none), and its conversion record (None when not
    to be written)."""
    document = record.item
    if not isinstance(document, WarcDocument) or not _success(document.record_type, document.status):
        return None, None
    engine = engine_for_type(document.content_type)
    if engine is None or engine.format == "message" or document.content_type is None:
        return None, None
    problems = list(document.problems)
    result: DocumentResult | None = None
    if document.body is not None:
        run = engine.rewrite if rewrite else engine.find
        try:
            result = run(document.body, url=document.uri or None, charset=document.charset, policy=policy)
        except Exception as error:  # the engines never raise by contract; should one, the page is reported
            problems.append(f"offset {record.offset}: not rewritten: {_clean(str(error)) or type(error).__name__}")
    changed = rewrite and result is not None and result.output != document.body
    conversion = None
    if changed and record.block_failed:  # its bytes are not those recorded: it is left out of the output
        problems.append(f"offset {record.offset}: its block digest fails (WARC 1.1 §5.8): no conversion")
        changed = False
    if changed and result is not None:
        original = _arc_id(record) if container == "arc" else _header(record.headers, "WARC-Record-ID")
        if original is None:
            problems.append(f"offset {record.offset}: a record without WARC-Record-ID (WARC 1.1 §5.2): no conversion")
            changed = False
        elif write:
            conversion = _conversion(record, document, result.output, original)
    page = WarcPage(
        document.uri,
        engine.format,
        record.offset,
        index,
        document.status,
        document.content_type,
        document.charset,
        len(document.body or b""),
        result,
        changed,
        tuple(problems),
    )
    return page, conversion


def _header(headers: StatusAndHeaders | None, name: str) -> str | None:
    """A field of a heading, on one line (a value with a line break would break the record)."""
    value = headers.get_header(name) if headers is not None else None
    return None if value is None else " ".join(str(value).split()) or None


def _conversion(record: _Record, document: WarcDocument, output: bytes, original: str) -> bytes:
    """The conversion record (WARC 1.1 §6.7) of a page rewritten to *output*, unframed."""
    headers = record.headers
    version = getattr(headers, "protocol", None)  # the page's record's (WARC 1.0 for an older one)
    version = version if version in ("WARC/1.0", "WARC/1.1") else "WARC/1.0"
    block = _Digest.like(_header(headers, "WARC-Block-Digest"))
    payload = _Digest.like(_header(headers, "WARC-Payload-Digest"))
    block, payload = block or payload or _SHA1, payload or block or _SHA1
    http = record.http if document.record_type == "response" else None
    content_type = _header(http, "Content-Type") if http is not None else _header(headers, "Content-Type")
    fields = [
        ("WARC-Type", "conversion"),  # §5.5, §6.7
        ("WARC-Record-ID", f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, original)}>"),  # §5.2
        ("WARC-Target-URI", " ".join(document.uri.split()) or None),  # §5.7
        ("WARC-Date", _header(headers, "WARC-Date")),  # §5.4: the page's, as the record it converts
        ("WARC-Refers-To", original),  # §5.11
        ("Content-Type", content_type),  # §5.6
        ("WARC-Block-Digest", block.of(output)),  # §5.8
        ("WARC-Payload-Digest", payload.of(output)),  # §5.9
        ("Content-Length", str(len(output))),  # §5.3
    ]
    heading = "".join(f"{name}: {value}\r\n" for name, value in fields if value is not None)
    return f"{version}\r\n{heading}\r\n".encode() + output + b"\r\n\r\n"  # §4: the record's end


def _arc_id(record: _Record) -> str:
    """The record ID of the WARC record an ARC record is written as: uuid5 of its offset and its
    fields (not warcio's, which is random), so that every run writes the same ID."""
    fields = [] if record.headers is None else record.headers.headers
    name = " ".join(f"{key}: {value}" for key, value in fields if key != "WARC-Record-ID")
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'arc record at {record.offset}: {name}')}>"


_HASHES = {"sha1": "sha1", "sha-1": "sha1", "sha256": "sha256", "sha-256": "sha256", "sha512": "sha512"}
_HASHES |= {"sha-512": "sha512", "sha384": "sha384", "sha-384": "sha384", "md5": "md5"}


@dataclass(frozen=True, slots=True)
class _Digest:
    """How a record writes a digest, ``labelled-digest = algorithm ":" digest-value`` (WARC
    1.1 §5.8): the algorithm's name as written, and the encoding of its value (base 32 as
    WARC 1.1 suggests, base 16 or base 64 as some tools write)."""

    label: str
    algorithm: str  # hashlib's name
    encoding: str  # "base32", "base16" or "base64"
    lower: bool = False
    padded: bool = True

    @classmethod
    def like(cls, value: str | None) -> _Digest | None:
        """The way *value* is written; None when it names no algorithm known here.

        >>> _Digest.like("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
        _Digest(label='sha1', algorithm='sha1', encoding='base32', lower=False, padded=True)
        >>> _Digest.like("sha256:" + "ab" * 32).encoding, _Digest.like("crc32:x")
        ('base16', None)
        """
        label, colon, text = (value or "").strip().partition(":")
        algorithm = _HASHES.get(label.lower())
        if not colon or algorithm is None:
            return None
        size = hashlib.new(algorithm).digest_size
        bare = text.rstrip("=")
        if len(text) == 2 * size and re.fullmatch(r"[0-9A-Fa-f]+", text):
            return cls(label, algorithm, "base16", text != text.upper())
        if len(bare) == -(-8 * size // 5) and re.fullmatch(r"[A-Za-z2-7]+", bare):
            return cls(label, algorithm, "base32", bare != bare.upper(), bare != text or len(bare) % 8 == 0)
        if len(bare) == -(-4 * size // 3) and re.fullmatch(r"[A-Za-z0-9+/]+", bare):
            return cls(label, algorithm, "base64", False, bare != text or len(bare) % 4 == 0)
        return cls(label, algorithm, "base32")

    def of(self, data: bytes) -> str:
        digest = hashlib.new(self.algorithm, data).digest()
        if self.encoding == "base16":
            text = digest.hex()
            return f"{self.label}:{text if self.lower else text.upper()}"
        text = (base64.b32encode(digest) if self.encoding == "base32" else base64.b64encode(digest)).decode("ascii")
        text = text if self.padded else text.rstrip("=")
        return f"{self.label}:{text.lower() if self.lower else text}"


_SHA1 = _Digest("sha1", "sha1", "base32")


class _Frame:
    """The bytes of one record on their way to the target: as they are, or as one gzip member
    of their own (WARC 1.1 Annex D), whose header (RFC 1952 §2.3) has no name, MTIME 0 and
    OS 255, so that the same bytes give the same member on every machine and every run."""

    HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"

    def __init__(self, target: BinaryIO, gzip: bool) -> None:
        self.target = target
        self.compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS) if gzip else None
        self.crc = 0
        self.size = 0
        if self.compressor is not None:
            target.write(self.HEADER)

    def write(self, data: bytes) -> None:
        if self.compressor is None:
            self.target.write(data)
            return
        self.crc = zlib.crc32(data, self.crc)
        self.size += len(data)
        self.target.write(self.compressor.compress(data))

    def close(self) -> None:
        if self.compressor is not None:
            self.target.write(self.compressor.flush() + struct.pack("<II", self.crc, self.size & 0xFFFFFFFF))


class _Out:
    """WARC out for one piece (see :func:`rewrite_warc_piece`): a record's span runs from its
    start to the next record's (or the piece's end), and is written when that is known, then
    the record's conversion record. *source* is a handle of its own on the input file."""

    def __init__(self, source: IO[bytes], target: BinaryIO, *, gzipped: bool, gzip: bool, arc: bool, start: int):
        self.source = source
        self.view: IO[bytes] | _GzipStream = source  # what spans are read from
        self.target = target
        self.gzipped = gzipped  # the spans read are gzip members
        self.gzip = gzip
        self.arc = arc
        self.cursor: int | None = start  # where the open span begins; None: not known yet (see whole)
        self.pending: _Record | None = None  # the record of the open span (None: bytes before a first record)
        self.after: bytes | None = None  # its conversion record
        self.waiting = False  # the pending record is read again from the decompressed data
        self.left: list[WarcDamage] = []

    def take(self) -> list[WarcDamage]:
        """What was left out of the output since last asked."""
        taken, self.left = self.left, []
        return taken

    def add(self, record: _Record, conversion: bytes | None) -> None:
        """A record begins: the open span ends there."""
        if record.again:
            if self.waiting and self.cursor is None:
                self.cursor, self.waiting = record.offset, False
                if self.pending is not None:  # its end was an offset in the file, not in the decompressed data
                    self.pending = dataclasses.replace(self.pending, end=None)
            return
        if self.cursor is None:  # the first record read from the decompressed data, none read again
            if self.waiting and self.pending is not None:
                self._leave(self.pending.offset, None, "of a record not found again in the decompressed data")
            self.waiting = False
            self.cursor = record.offset
        else:
            self._flush(max(record.offset, self.cursor))
        self.pending, self.after = record, conversion

    def whole(self, position: int) -> None:
        """From *position* on, the file is read as one gzip stream (see :class:`_Whole`)."""
        if self.pending is not None and self.cursor is not None and self.pending.offset >= position:
            self.waiting = True  # its bytes are written from the decompressed data, once found there
        elif self.cursor is not None:
            self._flush(max(position, self.cursor))
            self.pending = self.after = None
        self.view = _GzipStream(_Window(self.source, position))
        self.gzipped = False
        self.cursor = None

    def close(self, end: int | None) -> None:
        """The piece ends at *end* (None: the end of the file)."""
        if self.cursor is None:
            if self.waiting and self.pending is not None:
                self._leave(self.pending.offset, None, "of a record not found again in the decompressed data")
            return
        self._flush(None if isinstance(self.view, _GzipStream) else end)

    def _chunks(self, start: int, end: int | None) -> Iterator[bytes]:
        """The bytes [start, end) of the view (to its end when *end* is None), in blocks."""
        self.view.seek(start)
        left = None if end is None else end - start
        while left is None or left > 0:
            data = self.view.read(_BLOCK if left is None else min(_BLOCK, left))
            if not data:
                return
            if left is not None:
                left -= len(data)
            yield data

    def _flush(self, end: int | None) -> None:
        """Write the open span, up to *end*: its record, then its conversion record, then nothing
        of what follows the record in the span (damage, junk), which is named as left out; a
        reader of the output reaches every record, and each page's conversion right after it."""
        start, record = self.cursor, self.pending
        assert start is not None
        if record is not None and record.end is not None and end is not None and record.end > end:
            # Its length runs into the next record found, which it must not swallow: it is damaged.
            self._leave(start, self._size(start, end), "that are no whole record")
        elif self.arc:
            self._arc(record, start, end)
        elif record is None or record.damaged:
            self._leave(start, self._size(start, end), "that are no whole record")
        elif record.block_failed:
            self._leave(start, self._size(start, end), "of a record whose block digest fails (WARC 1.1 §5.8)")
        else:
            stop = end
            if record.end is not None and (end is None or start <= record.end < end):
                stop = record.end
            self._record(record, start, stop)
            if stop != end:
                self._leave(stop if stop is not None else start, self._size(stop, end), "that are no whole record")
        if self.after is not None:
            frame = _Frame(self.target, self.gzip)
            frame.write(self.after)
            frame.close()
        self.cursor, self.after = end, None

    def _size(self, start: int | None, end: int | None) -> int:
        return 0 if start is None else sum(map(len, self._chunks(start, end)))

    def _record(self, record: _Record, start: int, end: int | None) -> None:
        """A whole record's bytes [start, end): as they are, or framed anew (see :func:`rewrite_warc_piece`)."""
        if self.gzipped == self.gzip:
            for data in self._chunks(start, end):
                self.target.write(data)
        elif not self.gzipped:
            frame: _Frame | None = None
            for data in self._chunks(start, end):
                frame = frame or _Frame(self.target, True)
                frame.write(data)
            if frame is not None:
                frame.close()
        else:
            inflater = _Inflater(self._chunks(start, end))
            for data in inflater:
                self.target.write(data)
            if inflater.error is not None:
                self._leave(start, None, f"of the record's gzip member: {inflater.error}")
            self._leave(start + inflater.size, inflater.rest, "after the record's gzip member")

    def _arc(self, record: _Record | None, start: int, end: int | None) -> None:
        """An ARC record written as the WARC record warcio reads it as (WARC 1.1 §4: heading,
        block, two line ends)."""
        length = _header(record.headers, "Content-Length") if record is not None else None
        if record is None or record.damaged or record.headers is None or length is None or not length.isdigit():
            self._leave(start, sum(map(len, self._chunks(start, end))), "that are no whole ARC record")
            return
        chunks: Iterable[bytes] = self._chunks(start, end)
        if self.gzipped:
            chunks = _Inflater(chunks)
        reader = _Lines(chunks)
        reader.readline()  # the ARC record's first line: its fields are the heading's
        fields = [
            (name, _arc_id(record) if name == "WARC-Record-ID" else value) for name, value in record.headers.headers
        ]
        heading = "".join(f"{name}: {' '.join(str(value).split())}\r\n" for name, value in fields)
        frame = _Frame(self.target, self.gzip)
        frame.write(f"{record.headers.protocol or 'WARC/1.0'}\r\n{heading}\r\n".encode())
        left = int(length)
        while left > 0:
            data = reader.read(min(left, _BLOCK))
            if not data:
                break
            frame.write(data)
            left -= len(data)
        frame.write(b"\r\n\r\n")
        frame.close()
        # What follows the record in its span, past its line end, is damage: named, as left out.
        tail = junk = 0
        for data in reader.rest():
            tail += len(data)
            junk = junk or bool(data.strip(b"\r\n"))
        if isinstance(chunks, _Inflater):
            if junk:
                self._leave(start, None, "of the record's gzip member, after the record, that are no record")
            self._leave(start + chunks.size, chunks.rest, "after the record's gzip member")
        elif junk:
            self._leave(start + reader.taken, tail, "that are no whole ARC record")

    def _leave(self, start: int, size: int | None, what: str) -> None:
        """Say that *size* bytes (None: some) from *start* are not in the output."""
        if size != 0:
            amount = "bytes" if size is None else f"{size} bytes"
            self.left.append(WarcDamage(start, f"offset {start}: {amount} {what}: left out of the output"))


class _Inflater:
    """The decompressed bytes of the gzip member that *chunks* begin with, in blocks of at most
    1 MiB (a small member can hold much more); ``size`` is the member's own length, ``rest``
    the number of bytes after it, ``error`` says why it could not be read to its end."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = chunks
        self.size = 0
        self.rest = 0
        self.error: str | None = None

    def __iter__(self) -> Iterator[bytes]:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        for data in self.chunks:
            if decompressor.eof or self.error is not None:
                self.rest += len(data)
                continue
            self.size += len(data)
            try:
                while True:
                    out = decompressor.decompress(data, _BLOCK)
                    if out:
                        yield out
                    data = decompressor.unconsumed_tail
                    if not data and len(out) < _BLOCK:
                        break
            except zlib.error as error:
                self.error = _clean(str(error))
                continue
            if decompressor.eof:
                self.size -= len(decompressor.unused_data)
                self.rest += len(decompressor.unused_data)
        if not decompressor.eof and self.error is None:
            self.error = "the gzip member is cut short"


class _Lines:
    """A reader of lines and blocks over an iterable of byte strings."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks = iter(chunks)
        self.buffer = b""
        self.taken = 0  # bytes handed out

    def _fill(self) -> bool:
        data = next(self.chunks, b"")
        self.buffer += data
        return bool(data)

    def rest(self) -> Iterator[bytes]:
        """What is left, in blocks."""
        if self.buffer:
            yield self.buffer
        self.buffer = b""
        yield from self.chunks

    def readline(self) -> bytes:
        while b"\n" not in self.buffer and len(self.buffer) < _BLOCK and self._fill():
            pass
        end = self.buffer.find(b"\n") + 1 or len(self.buffer)
        line, self.buffer = self.buffer[:end], self.buffer[end:]
        self.taken += len(line)
        return line

    def read(self, size: int) -> bytes:
        if not self.buffer:
            self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        self.taken += len(data)
        return data
