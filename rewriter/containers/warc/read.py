"""Reading a WARC or ARC file record by record with warcio, and going on past damage: the record
loop (:func:`_records`) that reading, the mirror, the plan of pieces and WARC out all run, and
:func:`iter_documents`, the documents it gives. Damage never raises: it is named by its offset."""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import os
import re
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, BinaryIO, cast

from warcio.archiveiterator import ArchiveIterator, ARCIterator, WARCIterator
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser

from rewriter.containers.formats import ARC_LINE, Container, gzip_holds_arc, gzip_holds_warc, sniff_container
from rewriter.containers.warc.http import _Body, _content_type
from rewriter.containers.warc.model import _BLOCK, MAX_BODY, Source, Wanted, WarcDamage, WarcDocument, _clean
from rewriter.problems import Problem, as_problem

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer
    from warcio.recordloader import ArcWarcRecord  # untyped: Any to mypy


_HEADING = 1 << 20  # the lines of a record's headings (WARC and HTTP) read at most, together


_WARC_LINE = re.compile(rb"WARC/(?:1\.[01]|0\.1[78])\r?\n")  # a record's first line (WARC 1.1 §4, and before)


_ARC_START = re.compile(rb"(?<=\n)" + ARC_LINE.pattern)  # an ARC v1 record's first line, after a line's end


_ARC_OVERLAP = 8192  # how far an ARC record's first line may reach past a window searched for one


_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False)


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
    file = _File.opened(stream, start, container)
    position = file.head if start is None else start
    skip = 0
    while True:
        if file.seekable:
            try:
                file.reader.seek(position)
            except (OSError, EOFError, ValueError, zlib.error) as error:
                yield WarcDamage(
                    position,
                    Problem("record", f"cannot read on from here: {_clean(str(error))}", (f"offset {position}",)),
                )
                return
        bound = end if file.whole is None else None
        stop = yield from _run(file.reader, wanted, skip, file.told, digests, bound, limit)
        if stop.bounded:
            return
        skip = 0
        if stop.one_gzip_stream and file.seekable and file.whole is None:
            yield WarcDamage(
                position,
                Problem(
                    "record",
                    "the file is one gzip stream, not one gzip member per record (WARC 1.1 Annex D); it is read"
                    " as a whole, and offsets from here count bytes of the decompressed data",
                    (f"offset {position}",),
                ),
            )
            yield _Whole(position)
            file.read_whole(position)
            skip, position = stop.count, 0
            continue
        following = yield from _past_damage(file, stop, position)
        if following is None or (file.whole is None and end is not None and following >= end):
            return
        position = following  # always beyond the last start: every round moves on


@dataclass(slots=True)
class _File:
    """What the record loop knows of the file it reads: whether it can seek (only then is damage
    passed), what it holds (WARC or ARC records), whether it is gzip, its size, and the reader
    warcio runs on (the stream, or its decompressed data once it is found to be one gzip stream)."""

    stream: IO[bytes]
    reader: IO[bytes]
    seekable: bool
    head: int  # where the stream stood
    told: Container  # what the file is: WARC or ARC records
    gzipped: bool = False
    size: int = 0
    whole: _GzipStream | None = None

    @classmethod
    def opened(cls, stream: IO[bytes], start: int | None, container: Container | None) -> _File:
        seekable = _seekable(stream)
        head = stream.tell() if seekable else 0
        file = cls(stream, stream, seekable, head, container or "warc")
        if seekable:
            first = head if start is None else 0
            file.told = container or sniff_container(cast(BinaryIO, stream), first) or "warc"
            stream.seek(first)
            file.gzipped = stream.read(2) == b"\x1f\x8b"
            file.size = stream.seek(0, os.SEEK_END)
        return file

    def read_whole(self, position: int) -> None:
        """From *position* on, read the file as one gzip stream (see :class:`_Whole`)."""
        self.whole = _GzipStream(_Window(self.stream, position))
        self.reader = cast("IO[bytes]", self.whole)  # a binary file like any other to warcio
        self.gzipped = False


def _past_damage(file: _File, stop: _Stop, position: int) -> Generator[WarcDamage, None, int | None]:
    """After a run of warcio's iterator from *position* ended by *stop*: the damage named, and
    the offset of the next record to read from (None: reading stops)."""
    # warcio's offsets can step back on a damaged file; from here they only go forward.
    floor = position if stop.last is None else max(position, stop.last)
    last = max(stop.end, floor)
    whole, size = file.whole, file.size
    if stop.damage is None:
        if whole is not None and whole.error is not None:
            problem = f"the gzip stream is cut short or damaged: {whole.error}"
            yield WarcDamage(last, Problem("record", problem, (f"decompressed offset {last}",)))
            return None
        if whole is not None or not file.seekable or last >= size or not _unread(file.stream, last, size):
            return None
        stop.damage, stop.problem = last, f"{size - last} bytes that are no {file.told.upper()} record"
    damage = max(stop.damage, floor)
    where = f"offset {damage}" if stop.damage >= floor else f"after the record at offset {floor}"
    if not file.seekable:
        yield WarcDamage(
            damage, Problem("record", f"{stop.problem}; the stream cannot seek, so reading stops here", (where,))
        )
        return None
    # A gzip member ends where it ends; in a plain file, a wrong Content-Length before the damage
    # may have swallowed the start of the next record, so the search begins after the last one read.
    after = damage if file.gzipped or stop.last is None else floor
    following = _next_start(file.reader, after + 1, file.gzipped, file.told)
    then = "no record can be found after it" if following is None else f"reading goes on at offset {following}"
    if stop.problem:
        yield WarcDamage(damage, Problem("record", f"{stop.problem}; {then}", (where,)))
    return following


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
                yield WarcDamage(iterator.offset, Problem("record", f"{_said(noise)}", (f"offset {iterator.offset}",)))
            stop.end = iterator.offset
            return stop
        except Exception as error:  # warcio raises many kinds on a damaged file; none may escape
            if bound is not None and iterator.offset >= bound:
                stop.bounded = True  # the next piece's own damage
                return stop
            stop.damage = iterator.offset
            message = _clean(str(error), 120)
            if _without_target(error):
                message = "no WARC-Target-URI, which WARC 1.1 §5.6 requires of a record with an HTTP message"
            elif type(error).__module__.split(".")[0] != "warcio":
                message = f"{type(error).__name__}: {message}"
            stop.one_gzip_stream = "non-chunked gzip" in message
            stop.problem = f"unreadable record: {message}"
            return stop
        offset = iterator.offset
        if _said(noise):
            yield WarcDamage(offset, Problem("record", _said(noise), (f"before offset {offset}",)))
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
        first = as_problem(item.problem, "record")
        return WarcDamage(
            item.offset, Problem(first.code, f"{first.detail}; {as_problem(problem, 'record').detail}", first.where)
        )
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
    kind: str = getattr(record, "rec_type", None) or ""
    unread = _unreadable(record, kind, offset)
    if unread is not None:
        return unread
    uri = record.rec_headers.get_header("WARC-Target-URI") or ""
    problems: list[str] = []
    http, relevant, own_parse = _http_heading(record, kind, uri, offset, problems)
    status = _status(http, offset, problems) if relevant else None
    if http is not None:
        content_type, charset = _content_type(http.get_header("Content-Type"))
    elif kind == "response":  # a non-HTTP response (dns:, whois:): its body is no resource of the site
        content_type, charset = None, None
    else:
        content_type, charset = _content_type(record.content_type)
    keep = relevant and (wanted is None or wanted(offset, kind, uri, status, content_type))
    reader = _Body(http, f"offset {offset}", _clean(uri, 120) or "(no URI)", limit) if keep else None
    damage = _block(record, kind, uri, offset, reader, relevant, own_parse, problems)
    if damage is not None and not relevant:
        return WarcDamage(offset, damage), True
    if not relevant:
        return None, False
    body: bytes | None = None
    if reader is not None and damage is None:
        body, decoding = reader.finish()
        problems.extend(decoding)
    redirect = status is not None and 300 <= status < 400 and http is not None
    location = http.get_header("Location") if redirect and http is not None else None
    document = WarcDocument(uri, status, content_type, charset, body, location, offset, kind, tuple(problems))
    return document, damage is not None


def _unreadable(record: ArcWarcRecord, kind: str, offset: int) -> tuple[WarcDamage, bool] | None:
    """The damage of a record whose heading lacks what every record has, and whether the file is
    damaged there; None when it has it."""
    length = record.rec_headers.get_header("Content-Length")
    if length is None or not length.strip().isdigit():
        # WARC 1.1 §5.3: every record has one; without it the heading was cut short or damaged.
        problem = (
            f"a record without a valid Content-Length ({_clean(str(length), 40)}): its heading is cut short or damaged"
        )
        return WarcDamage(offset, as_problem(problem, "record").at(f"offset {offset}")), True
    if not kind:
        return WarcDamage(
            offset, Problem("record", "a record without WARC-Type (WARC 1.1 §5.5): not read", (f"offset {offset}",))
        ), False
    return None


def _status(http: StatusAndHeaders | None, offset: int, problems: list[str]) -> int | None:
    """The HTTP status of a response (None when it has no heading, or an unreadable status line)."""
    if http is None:
        return None
    try:
        return int(http.get_statuscode())
    except (TypeError, ValueError):
        problems.append(
            Problem("record", f"unreadable HTTP status line {_clean(http.statusline, 80)!r}", (f"offset {offset}",))
        )
        return None


def _http_heading(
    record: ArcWarcRecord, kind: str, uri: str, offset: int, problems: list[str]
) -> tuple[StatusAndHeaders | None, bool, bool]:
    """A record's HTTP heading (None: it has none), whether the record is one to read (a
    ``response`` or ``resource`` whose heading, if any, is readable), and whether the heading was
    parsed here rather than by warcio. Its problems go to *problems*."""
    http = record.http_headers
    relevant = kind in ("response", "resource")
    if relevant and not uri:
        problems.append(
            Problem("record", f"a {kind} record without WARC-Target-URI (WARC 1.1 §5.7)", (f"offset {offset}",))
        )
    own_parse = kind == "response" and http is None and uri[:6].lower().startswith(("http:", "https:"))
    if own_parse and record.length:
        # warcio reads the HTTP heading only after a lower-case "http:" or "https:" (RFC 3986 §3.1: any case).
        try:
            with _captured():
                http = record.http_headers = _HTTP_PARSER.parse(record.raw_stream)
        except Exception as error:  # an unreadable heading: the body is not taken
            problems.append(
                Problem("record", f"unreadable HTTP heading: {_clean(str(error), 80)}", (f"offset {offset}",))
            )
            relevant = False
    return http, relevant, own_parse


def _block(
    record: ArcWarcRecord,
    kind: str,
    uri: str,
    offset: int,
    body: _Body | None,
    relevant: bool,
    own_parse: bool,
    problems: list[str],
) -> str | None:
    """Read the rest of a record's block (into *body*, when there is one): the problem of a
    block cut short (None when it was read whole, the problem then in *problems* too when the
    record is *relevant*); what warcio said of it and its digests' problems into *problems*."""
    with _captured() as noise:
        failure = _raw(record.raw_stream, body)
    missing = getattr(record.raw_stream, "limit", 0)
    damage = None
    if failure is not None or (isinstance(missing, int) and missing > 0):
        how = f"{missing} of its bytes are missing" if missing else failure
        damage = Problem(
            "record",
            f"the {kind} record for {_clean(uri, 120) or '(no URI)'} is cut short ({how}): truncated or damaged",
            (f"offset {offset}",),
        )
        if not relevant:
            return damage
        problems.append(damage)
    elif _said(noise):
        problems.append(Problem("record", f"{_said(noise)}", (f"offset {offset}",)))
    checker = getattr(record, "digest_checker", None)
    for problem in getattr(checker, "problems", None) or ():
        if not (own_parse and problem.startswith("payload digest")):  # warcio took the heading for payload
            problems.append(as_problem(problem, "record").at(f"offset {offset}"))
    return damage


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


def _without_target(error: Exception) -> bool:
    """Whether *error* is warcio's reading the HTTP heading of a record that has no
    WARC-Target-URI (it calls ``startswith`` on None there)."""
    if not isinstance(error, AttributeError):
        return False
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    return frame is not None and frame.tb_frame.f_code.co_name == "load_http_headers"
