"""WARC out: the pieces of a file cut at record starts (:func:`plan_warc`), and each piece written
back record for record, each page followed by its conversion record (:func:`rewrite_warc_piece`)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, BinaryIO, cast

from rewriter.containers.formats import Container, sniff_container
from rewriter.containers.pieces import PIECE_SIZE, Piece
from rewriter.containers.warc.model import _BLOCK, MAX_BODY, WarcDamage, WarcDocument, _clean, _success
from rewriter.containers.warc.page import WarcPage, _arc_id, _header, _page
from rewriter.containers.warc.read import _Event, _GzipStream, _Record, _records, _Whole, _Window
from rewriter.document.engines import DOCUMENT_TYPES
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem, as_problem

if TYPE_CHECKING:
    pass


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
    typed_conversions: bool = False,
) -> Iterator[WarcPage | WarcDamage]:
    """WARC out: write every record of *piece* (None: the whole file) of the WARC at *path* to
    *target*, each page followed by a conversion record of it rewritten; yield each page and
    each damage, in file order.

    A page (see :class:`WarcPage`) is rewritten with ``engine.rewrite(body, url=target_uri,
    charset=http_charset, policy=policy)`` of its decoded body (chunking and content coding
    undone), as ``rewriter rewrite --url URI`` rewrites those bytes. When the output differs,
    a ``conversion`` record (WARC 1.1 §6.7) follows the page's record: its block is the
    rewritten page; ``WARC-Refers-To`` (§5.11) names the page's record; ``WARC-Target-URI``
    and ``WARC-Date`` are the page's; ``WARC-Record-ID`` (§5.2) is ``urn:uuid:`` +
    uuid5(NAMESPACE_URL, the page's record ID), so that every run on every machine writes the
    same record; ``WARC-Block-Digest`` (§5.8) is computed with the algorithm and encoding of the
    page's own digests (sha1 in base 32, as warcio writes, when it has none). It has no
    ``WARC-Payload-Digest`` (§5.9: its block has no HTTP payload) and an empty ``Content-Type``
    (the type is its original's, by ``WARC-Refers-To``), so that a replay tool replays the
    original capture, not the conversion (see :mod:`rewriter.containers.warc.page`);
    *typed_conversions* gives it the document's ``Content-Type`` instead. Every record is
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
        events = _records(stream, _page_body, start=start, end=end, limit=max_size, container=container)
        yield from _pages_out(events, out, index, end, policy, rewrite, container, typed_conversions)


def _pages_out(
    events: Iterator[_Event],
    out: _Out | None,
    index: int,
    end: int | None,
    policy: Policy,
    rewrite: bool,
    container: Container,
    typed: bool = False,
) -> Iterator[WarcPage | WarcDamage]:
    """The record loop's *events* of one piece (its first record the file's *index*-th) given to
    *out* (None: a dry run), each page rewritten; the pages and the damage, in file order."""
    for event in events:
        if isinstance(event, _Whole):
            if end is not None:
                yield WarcDamage(event.position, as_problem(_NOT_PLANNED, "record").at(f"offset {event.position}"))
                return
            if out is not None:
                out.whole(event.position)
        elif isinstance(event, WarcDamage):
            yield event
        elif event.again:
            if out is not None:
                out.add(event, None)
        else:
            page, conversion = _page(event, index, policy, rewrite, container, write=out is not None, typed=typed)
            index += 1
            if out is not None:
                out.add(event, conversion)
                yield from out.take()
            yield from [page] if page is not None else _record_problems(event)
    if out is not None:
        out.close(end)
        yield from out.take()


def _record_problems(record: _Record) -> Iterator[WarcDamage]:
    """The problems of a record that is no page: a digest, its heading."""
    if isinstance(record.item, WarcDocument):
        yield from (WarcDamage(record.offset, problem) for problem in record.item.problems)
    elif isinstance(record.item, WarcDamage):
        yield record.item


_NOT_PLANNED = (
    "the file is one gzip stream from here, which plan_warc never cuts into pieces: this piece is not of "
    "its plan (was the file changed?); the piece is not written on from here"
)


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
            self.left.append(
                WarcDamage(start, Problem("record", f"{amount} {what}: left out of the output", (f"offset {start}",)))
            )


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
