"""Mailboxes: rewrite every message of an mbox or a Maildir (what a file is, mbox or
not, is told by :mod:`rewriter.containers.formats`, re-exported here).

An mbox is read as a byte stream, one message at a time (memory stays flat in the size
of the mbox): :func:`iter_mbox` yields each ``From `` separator line as found and the
message bytes after it, and the pieces it yields always add up to the input, byte for
byte. :func:`rewrite_mbox` writes each separator unchanged and each message as
:func:`rewriter.mime.message.rewrite_message` returns it (quoting a ``From `` line the rewrite
made, and moving a right Content-Length by the change in size). A large mbox can be done in
pieces, each by a worker of its own: :func:`plan_mbox` scans it once for them, and the outputs of
:func:`rewrite_mbox_piece` for each, joined, are :func:`rewrite_mbox`'s. A Maildir is a folder of message
files; :func:`rewrite_maildir` replaces the ones that change (see
../shared/research/mime-base-urls.md §3.4 for why neither goes through the stdlib
``mailbox`` module: it re-quotes ``From `` lines and changes line breaks).

>>> import io
>>> data = (b"From a@example.org Sat Jan  1 00:00:00 2000\\nSubject: one\\n\\nhi\\n>From here\\n\\n"
...         b"From b@example.org Sat Jan  1 00:00:00 2000\\nSubject: two\\n\\nbye\\n")
>>> detect_format(data)
'mbox'
>>> for separator, message in iter_mbox(io.BytesIO(data)):
...     print(separator, message)
b'From a@example.org Sat Jan  1 00:00:00 2000\\n' b'Subject: one\\n\\nhi\\n>From here\\n\\n'
b'From b@example.org Sat Jan  1 00:00:00 2000\\n' b'Subject: two\\n\\nbye\\n'
"""

from __future__ import annotations

import codecs
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, TypedDict

from rewriter.containers.formats import detect_format, is_warc
from rewriter.containers.pieces import PIECE_SIZE, Piece
from rewriter.disk.files import identity, not_written, replacing
from rewriter.document.model import LEFT_RELATIVE, MessageResult, Unit, placed
from rewriter.mime.message import rewrite_message
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "MaildirReport",
    "MboxReport",
    "detect_format",
    "is_maildir",
    "is_warc",
    "iter_maildir",
    "iter_mbox",
    "plan_mbox",
    "rewrite_maildir",
    "rewrite_mbox",
    "rewrite_mbox_message",
    "rewrite_mbox_piece",
]


CHUNK_SIZE = 1 << 20
# A message longer than this is copied through an mbox unchanged rather than held whole.
MAX_MESSAGE = 64 << 20


# ---------------------------------------------------------------------------
# mbox as a byte stream
# ---------------------------------------------------------------------------

_SEPARATOR = b"\nFrom "
_CONTENT_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*(\d{1,18})[ \t]*\r?$", re.I | re.M)
_HEADING_END = re.compile(rb"\r?\n\r?\n")
# Between where a Content-Length says the body ends and the next From_ line there may be
# the line break that ends the last line (mutt's mbox.c checks offset + length + 1, and
# the Netscape messages of mimekit-content-length.mbox need exactly that) or a blank line.
_SLACK = 4
# A Content-Length pointing further ahead than this on a stream that cannot seek is not
# followed up (the check would have to buffer everything up to there).
_MAX_LOOKAHEAD = 256 << 20


def _content_length(data: bytes, start: int, end: int) -> tuple[int, int, int, int] | None:
    """``(value, digits start, digits end, body start)`` of the Content-Length field in
    the heading of the message ``data[start:end]``; None without one or a heading end."""
    if data.startswith((b"\n", b"\r\n"), start):
        return None  # an empty heading
    heading_end = _HEADING_END.search(data, start, end)
    if heading_end is None:
        return None
    field = _CONTENT_LENGTH.search(data, start, heading_end.start() + 1)
    if field is None:
        return None
    return int(field.group(1)), field.start(1), field.end(1), heading_end.end()


def _only_line_breaks(data: bytes) -> bool:
    return not data.strip(b"\r\n")


class _Source(Protocol):
    """What the splitter reads: a binary stream (seeking only if it says it can; one with
    ``read`` alone is read as a pipe)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def seekable(self) -> bool: ...

    def tell(self) -> int: ...

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int: ...


class _MboxSplitter:
    """The state of :func:`iter_mbox`: ``data`` holds stream bytes from offset ``base``.

    Offsets are stream offsets, so dropping consumed bytes (only when a chunk is read)
    never invalidates one. ``start`` is where the current message's separator begins
    (or, once some of an oversize message has been spilled, where the rest begins):
    nothing before it is kept.

    Where a message ends depends on the stream's bytes alone, never on where its chunks
    happen to end (so a piece of the file read on its own is cut as the whole file is):
    every decision reads offsets and bytes, and bytes go to *spill* only once the message
    they belong to is known to be over the limit.
    """

    def __init__(
        self,
        stream: _Source,
        chunk_size: int,
        limit: int | None = None,
        spill: Callable[[bytes], object] | None = None,
    ) -> None:
        self.stream = stream
        self.chunk_size = chunk_size
        self.data = b""
        self.base = 0
        self.start = 0
        self.eof = False
        # A message longer than *limit* is handed to *spill* as it comes and forgotten:
        # memory stays flat whatever one message's size.
        self.limit = limit
        self.spill = spill
        self.spilled = 0  # bytes of the current message already spilled; 0: none
        # A stream with no seekable() at all (rewriter.run.batch's _Replayed) is read as a pipe.
        seekable = getattr(stream, "seekable", None)
        self.seekable = bool(seekable is not None and seekable())
        # A Content-Length further ahead than this is not followed up on a stream that
        # cannot seek (it would be buffered); with a limit, no further than the limit.
        self.lookahead = _MAX_LOOKAHEAD if limit is None or spill is None else min(_MAX_LOOKAHEAD, limit)

    @property
    def end(self) -> int:
        return self.base + len(self.data)

    @property
    def origin(self) -> int:
        """Where the current message starts, its spilled bytes included."""
        return self.start - self.spilled

    def read(self) -> bool:
        """One more chunk; False at the end of the stream."""
        if self.eof:
            return False
        # Reads grow with the message held, so that a long message costs linear copying;
        # with a limit, capped at a quarter of it, so that what is held stays near 2.5
        # times the limit whatever the message's size.
        size = max(self.chunk_size, self.end - self.start)
        if self.spill is not None and self.limit is not None:
            size = min(size, max(self.chunk_size, self.limit // 4))
        chunk = self.stream.read(size)
        if not chunk:
            self.eof = True
            return False
        self.data = self.data[self.start - self.base :] + chunk
        self.base = self.start
        return True

    def read_to(self, offset: int) -> None:
        while self.end < offset and self.read():
            pass

    def oversize(self, extent: int) -> bool:
        """Whether the current message, running at least to *extent*, is over the limit."""
        return self.spill is not None and self.limit is not None and extent - self.origin > self.limit

    def release(self, upto: int, extent: int) -> None:
        """The current message runs at least to *extent*: if that puts it over the limit,
        its bytes before *upto* go to *spill* and are forgotten."""
        if upto > self.start and self.oversize(extent):
            self.spill(self.piece(self.start, upto))  # type: ignore[misc]
            self.spilled += upto - self.start
            self.start = upto

    def read_message(self, end: int | None) -> None:
        """Read on to *end*, where the current message is known to end (None: the end of
        the stream); all of it is the message's, so an oversize one is spilled as it comes."""
        while end is None or self.end < end:
            self.release(self.end, self.end if end is None else end)
            if not self.read():
                return

    def piece(self, start: int, end: int) -> bytes:
        return self.data[start - self.base : end - self.base]

    def line_end(self, offset: int) -> int:
        """The end of the line starting at *offset* (the current message's From_ line),
        with its line break."""
        while True:
            found = self.data.find(b"\n", max(offset - self.base, 0))
            if found >= 0:
                return found + self.base + 1
            self.release(self.end, self.end)  # all of it is the line's
            if not self.read():
                return self.end

    def peek(self, offset: int, size: int) -> bytes:
        """``size`` stream bytes from *offset* (fewer at the end), without keeping them if
        the stream can seek; b"" if they lie too far ahead to buffer."""
        if not self.seekable:
            if offset - self.start > self.lookahead:
                return b""  # even if it is buffered already: what is buffered depends on the reads
            self.read_to(offset + size)  # nothing spilled: these bytes may be the next messages'
        elif offset + size > self.end and not self.eof:
            here = self.stream.tell()  # our offsets count from where the stream was at first
            try:
                self.stream.seek(here - self.end + offset)
                return self.stream.read(size)
            finally:
                self.stream.seek(here)
        return self.piece(offset, offset + size)

    def declared_end(self, expected: int) -> int | None:
        """Where the next From_ line starts if a Content-Length says the body ends at
        *expected*: ``-1`` for the end of the stream, None when nothing plausible is there."""
        window = self.peek(expected - 1, _SLACK + 6)
        for skip in range(_SLACK + 1):
            if skip and window[skip : skip + 1] not in (b"\r", b"\n"):
                return None  # something other than line breaks after the declared end
            if len(window) == skip + 1:
                return -1  # the stream ends there
            if window[skip : skip + 1] == b"\n" and window[skip + 1 : skip + 6] == b"From ":
                return expected + skip
        return None

    def next_separator(self, body: int) -> int | None:
        """Where the From_ line after the message whose body starts at *body* starts;
        None when the message runs to the end of the stream (then all of it is read)."""
        search = max(body - 1, self.start)  # the separator's own line break may precede a From_ line
        while True:
            found = self.data.find(_SEPARATOR, max(search - self.base, 0))
            if found >= 0:
                break
            search = max(search, self.end - len(_SEPARATOR) + 1)  # a match may straddle chunks
            self.release(search, search + 1)  # the next From_ line starts after *search*, if any
            if not self.read():
                return None
        candidate = found + self.base + 1
        if self.oversize(candidate):
            # Over the limit by the line rule already (a Content-Length can only make it
            # longer): copied as it is, by the line rule alone; its heading may be gone.
            return candidate
        declared = _content_length(self.data, body - self.base, candidate - self.base)
        if declared is None:
            return candidate
        expected = self.base + declared[3] + declared[0]  # where the Content-Length says the body ends
        if expected <= candidate <= expected + _SLACK and _only_line_breaks(self.piece(expected, candidate)):
            return candidate  # the length agrees with the line rule
        if candidate > expected:
            return candidate  # the length is too short to be right
        target = self.declared_end(expected)
        if target is None:
            return candidate  # the length leads nowhere: the line rule
        # An mboxcl2 body with unquoted From lines: the length skips them (as mutt does).
        self.read_message(None if target < 0 else target)
        return None if target < 0 else target

    def messages(self) -> Iterator[tuple[int, int | None, int]]:
        """``(start, body, end)`` of each message in stream offsets, yielded while its bytes
        are in ``data``: ``[start, body)`` is its separator, ``[body, end)`` the message.
        An oversize one has gone to *spill*, all of it, and comes with body None."""
        self.read_to(len(codecs.BOM_UTF8) + 5)
        if not self.data:
            return
        lead = len(codecs.BOM_UTF8) if self.data.startswith(codecs.BOM_UTF8) else 0
        body: int = self.line_end(lead) if self.data.startswith(b"From ", lead) else 0
        while True:
            following = self.next_separator(body)
            end = self.end if following is None else following
            if self.oversize(end):
                self.spill(self.piece(self.start, end))  # type: ignore[misc]
                yield self.origin, None, end
                self.spilled = 0
            else:
                yield self.start, body, end
            if following is None:
                return
            self.start = following
            body = self.line_end(following)


def iter_mbox(stream: BinaryIO, chunk_size: int = CHUNK_SIZE) -> Iterator[tuple[bytes, bytes]]:
    """Split an mbox into ``(separator, message)`` pairs, reading *stream* chunk by chunk.

    The separator is the ``From `` line exactly as found, with its line break (and, for
    the first one, a UTF-8 byte order mark before it); the message is every byte up to
    the next separator, including the blank line before it. Everything yielded, joined,
    is the input. Bytes before the first separator (a file not starting with ``From ``)
    come first, with separator ``b""``. Line breaks are LF or CRLF.

    The From_-line rule: a line starting with ``From `` is a separator wherever it is,
    blank line before it or not, as Python's ``mailbox``, Thunderbird and MimeKit read
    mboxes: in mimekit-simple.mbox 2 of 2 and in mimekit-content-length.mbox 10 of 28
    From_ lines after the first have no blank line before them, and an
    mboxo/mboxrd writer quotes body lines (``>From ``), which are never touched. One
    exception, after mutt: when a message's heading has a Content-Length (mboxcl,
    mboxcl2) and a From_ line (or the end of the file) is where it says the body ends
    (give or take a line break), ``From `` lines before that are body lines. A length
    that does not lead to a From_ line is ignored (4 of the 29 in
    mimekit-content-length.mbox are wrong, by 4 to 2,045 bytes).

    Memory is bounded by about twice the largest message plus *chunk_size*.

    >>> import io
    >>> [pair for pair in iter_mbox(io.BytesIO(b"junk\\nFrom x\\r\\nA: b\\r\\n\\r\\nFrom y"))]
    [(b'', b'junk\\n'), (b'From x\\r\\n', b'A: b\\r\\n\\r\\n'), (b'From y', b'')]
    """
    for separator, message, _ in _split(stream, chunk_size):
        yield separator, message  # type: ignore[misc]


def _split(
    stream: _Source,
    chunk_size: int = CHUNK_SIZE,
    limit: int | None = None,
    spill: Callable[[bytes], object] | None = None,
) -> Iterator[tuple[bytes, bytes | None, int]]:
    """:func:`iter_mbox`'s ``(separator, message, size)``; with *spill*, a message (with
    its separator) longer than *limit* bytes goes to *spill* as it is read, and comes as
    ``(b"", None, size)``. Which messages those are does not depend on *chunk_size*. A
    message over the limit by the From_-line rule is not lengthened by its Content-Length,
    and on a stream that cannot seek a Content-Length is followed no further than *limit*
    bytes ahead (what lies between would be held)."""
    if chunk_size < 1:
        raise ValueError("chunk_size must be positive")
    splitter = _MboxSplitter(stream, chunk_size, limit, spill)
    for start, body, end in splitter.messages():
        if body is None:
            yield b"", None, end - start
        else:
            yield splitter.piece(start, body), splitter.piece(body, end), end - start


def _from_lines(data: bytes) -> list[int]:
    """Offsets of the lines of *data* that start with ``From ``."""
    offsets = [0] if data.startswith(b"From ") else []
    found = data.find(_SEPARATOR)
    while found >= 0:
        offsets.append(found + 1)
        found = data.find(_SEPARATOR, found + 1)
    return offsets


def _quote_new_from_lines(before: bytes, after: bytes) -> tuple[bytes, int]:
    """*after* with ``>`` before each line starting ``From `` that *before* did not have.

    URL splices essentially never make one: a splice replaces a URL inside a line, and
    a serialised URL has neither a line break nor a space, so no new line can begin and
    no line's first five bytes can become ``From ``. What can: a quoted-printable body
    whose changed lines are re-wrapped, so that a soft line break now falls before a
    word "From ". A reader would cut the message there; quoting keeps it whole.
    """
    offsets = _from_lines(after)
    if not offsets:
        return after, 0
    lines = Counter(before[start : before.find(b"\n", start) + 1 or len(before)] for start in _from_lines(before))
    pieces: list[bytes] = []
    last = quoted = 0
    for start in offsets:
        line = after[start : after.find(b"\n", start) + 1 or len(after)]
        if lines[line] > 0:
            lines[line] -= 1
            continue
        pieces += (after[last:start], b">")
        last = start
        quoted += 1
    if not quoted:
        return after, 0
    pieces.append(after[last:])
    return b"".join(pieces), quoted


def _fix_content_length(before: bytes, after: bytes) -> bytes:
    """*after* with its Content-Length field moved by the change in size, when *before*'s
    was right (the next From_ line or the end of the file followed the body it counted):
    mboxcl readers trust a right one, and it would now point into the middle of a line."""
    if len(after) == len(before):
        return after
    declared = _content_length(before, 0, len(before))
    if declared is None:
        return after
    value, digits, digits_end, body = declared
    tail = len(before) - body - value
    if not (0 <= tail <= _SLACK and _only_line_breaks(before[len(before) - tail :])):
        return after
    if after[:body] != before[:body]:
        return after  # the heading changed: not ours to edit
    return after[:digits] + str(value + len(after) - len(before)).encode() + after[digits_end:]


@dataclass(frozen=True, slots=True)
class MboxReport:
    """What happened to one message of an mbox.

    ``index`` counts from 0; ``offset`` is where its separator starts in the input;
    ``size``/``output_size`` count the message without its separator. ``parts``: MIME
    entities; ``rewritten_parts``: HTML/CSS bodies changed; ``links``: links found;
    ``rewritten_links``: made absolute; ``quoted``: new ``From `` lines quoted;
    ``relative``: links left relative (no base, or unresolvable).
    """

    index: int
    offset: int
    size: int
    output_size: int
    changed: bool
    parts: int = 0
    rewritten_parts: int = 0
    links: int = 0
    rewritten_links: int = 0
    quoted: int = 0
    problems: tuple[str, ...] = ()
    relative: int = 0  # links left relative: no base, or unresolvable
    result: MessageResult | None = field(default=None, repr=False, compare=False)  # with_links=True

    def unit(self, *, report: bool = False) -> Unit:
        """This message as the run's tally takes it, named by its number (from 1), with this
        report as a plain dict when *report*. One the engine could not read (too large, or it
        failed on it) was kept as it was, and fails; the problems of one it read are its own
        and the mbox's (quoted From lines)."""
        number = self.index + 1
        own = self._as_dict() if report else None
        read = self.result is not None
        return Unit(
            {"message": number},
            self.result,
            "message",
            self.problems if read else None,
            errors=() if read else placed(self.problems, "message", f"message {number}"),
            failed=not read,
            bytes_in=self.size,
            bytes_out=self.output_size,
            changed=self.changed,
            report=own,
        )

    def _as_dict(self) -> dict[str, object]:
        """This report as a plain dict (the engine's result left out)."""
        from dataclasses import fields

        return {
            item.name: list(value) if isinstance(value := getattr(self, item.name), tuple) else value
            for item in fields(self)
            if item.name != "result"
        }


def _counts(result: MessageResult) -> tuple[int, int, int, int]:
    """(parts, rewritten parts, links, rewritten links) of a message's result."""
    return (
        len(result.parts),
        sum(1 for part in result.parts if part.action == "rewritten"),
        sum(part.count() for part in result.parts),
        sum(part.count("rewritten") for part in result.parts),
    )


def _rewrite(
    data: bytes, url: str | None, policy: Policy
) -> tuple[bytes, tuple[int, int, int, int], list[str], int, MessageResult | None]:
    """The rewritten message, its counts, problems, links left relative and the engine's
    result; the input unchanged (and no result) if the engine raises."""
    try:
        result = rewrite_message(data, url=url, policy=policy)
    except Exception as error:  # a bug in the engine: keep the message and go on with the next
        problem = Problem("message", f"not rewritten, kept as it was: internal error: {type(error).__name__}: {error}")
        return data, (0, 0, 0, 0), [problem], 0, None
    left = sum(part.count(*LEFT_RELATIVE) for part in result.parts)
    return result.output, _counts(result), list(result.problems), left, result


def rewrite_mbox_message(
    message: bytes, url: str | None, policy: Policy, *, unseparated: bool = False
) -> tuple[bytes, tuple[int, int, int, int], list[str], int, int, MessageResult | None]:
    """One message of an mbox as :func:`rewrite_mbox` writes it: rewritten, with new lines
    starting "From " quoted and Content-Length fixed. *unseparated*: it is the first and no
    From_ line came before it. (output, counts, problems, lines quoted, links left relative,
    the engine's result)."""
    output, counts, problems, relative, result = _rewrite(message, url, policy)
    quoted = 0
    if output != message:
        output, quoted = _quote_new_from_lines(message, output)
        output = _fix_content_length(message, output)
    if quoted:
        problems.append(Problem("message", f"{quoted} new line(s) starting with 'From ' quoted as '>From '"))
    if unseparated:
        problems.insert(0, Problem("input", "no From_ line before it: the file does not start like an mbox"))
    return output, counts, problems, quoted, relative, result


class MboxOptions(TypedDict, total=False):
    """The keyword arguments of :func:`rewrite_mbox` and :func:`rewrite_mbox_piece`: *url* the
    retrieval URL of every message (usually none: each message's headings give its base);
    *policy*; *with_links*: each report carries the engine's result (parts and links) as
    ``result``; *max_message*: a message (with its From_ line) longer than that many bytes
    (:data:`MAX_MESSAGE` when not given) is copied through unchanged, and reported."""

    url: str | None
    policy: Policy
    with_links: bool
    max_message: int


def rewrite_mbox(source: BinaryIO, target: BinaryIO, **options: Unpack[MboxOptions]) -> Iterator[MboxReport]:
    """Rewrite every message of the mbox *source* into *target*, yielding one report each.

    Streams: each message is read, rewritten, written and forgotten before the next (the
    caller must exhaust the iterator). Separators and ``>From`` quoting are written as
    found; a message is written unchanged when it has nothing to rewrite, and when the
    engine fails on it (a bug, reported). *options* are :class:`MboxOptions`; a message
    longer than ``max_message`` is copied through as it is read: memory stays flat
    whatever the file holds.

    >>> import io
    >>> mbox = (b"From a Sat Jan  1 00:00:00 2000\\nContent-Type: text/html\\n"
    ...         b"Content-Location: http://example.org/docs/\\n\\n<img src=logo.png>\\n")
    >>> target = io.BytesIO()
    >>> [(report.index, report.rewritten_links) for report in rewrite_mbox(io.BytesIO(mbox), target)]
    [(0, 1)]
    >>> target.getvalue().splitlines()[-1]
    b'<img src=http://example.org/docs/logo.png>'
    """
    _streams(source, target, "rewrite_mbox")
    yield from _rewrite_messages(source, target, 0, 0, **options)


def _streams(source: object, target: object, name: str) -> None:
    """A clear TypeError for a path (or anything else) given where a binary stream goes."""
    for role, value, method in (("source", source, "read"), ("target", target, "write")):
        if not callable(getattr(value, method, None)):
            raise TypeError(
                f"{name}() takes binary streams (open(path, {'rb' if method == 'read' else 'wb'!r})), "
                f"not {type(value).__name__} as its {role}; mbox files by name: rewriter.run.batch or the command line"
            )


def _rewrite_messages(
    source: _Source,
    target: BinaryIO,
    first: int,
    offset: int,
    *,
    url: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    with_links: bool = False,
    max_message: int = MAX_MESSAGE,
) -> Iterator[MboxReport]:
    """:func:`rewrite_mbox`, the messages of *source* counted from index *first* and
    stream offset *offset* (a piece's, for :func:`rewrite_mbox_piece`)."""
    for index, (separator, message, size) in enumerate(_split(source, CHUNK_SIZE, max_message, target.write), first):
        if message is None:
            problem = Problem("limit", f"larger than {max_message:,} bytes ({size:,}): copied unchanged, not rewritten")
            yield MboxReport(index, offset, size, size, False, problems=(problem,))
            offset += size
            continue
        output, counts, problems, quoted, relative, result = rewrite_mbox_message(
            message, url, policy, unseparated=not separator and index == 0
        )
        parts, rewritten_parts, links, rewritten_links = counts
        target.write(separator)
        target.write(output)
        report = MboxReport(
            index,
            offset,
            len(message),
            len(output),
            output != message,
            parts,
            rewritten_parts,
            links,
            rewritten_links,
            quoted,
            tuple(problems),
            relative,
            result if with_links else None,
        )
        offset += len(separator) + len(message)
        # Forgotten now, not when the next message has been read and rewritten: two
        # messages, their outputs and results would be alive at once.
        del message, output, result
        yield report


# ---------------------------------------------------------------------------
# A large mbox in pieces (issue 20)
# ---------------------------------------------------------------------------


def _forget(data: bytes) -> None:
    """The spill of a scan that only looks for boundaries: an oversize message's bytes
    are not needed."""


def plan_mbox(stream: BinaryIO, *, piece_size: int = PIECE_SIZE, max_message: int = MAX_MESSAGE) -> Iterator[Piece]:
    """The pieces of the mbox *stream* (all of it, from offset 0), for
    :func:`rewrite_mbox_piece`: one scan, yielding each piece as soon as it is closed.

    The pieces cover the file exactly and in order, and each begins where
    :func:`rewrite_mbox` (with the same *max_message*, which decides which messages are
    oversize and so where some end) begins a message: the scan is its splitter's. A piece
    holds as many whole messages as fit in *piece_size* bytes, and more than *piece_size*
    only when it is one message (an oversize one, or a large *max_message*); a piece is
    yielded once the message after it is found not to fit, so the last one is known
    (``last=True``). A byte order mark is part of the first From_ line, and text before
    the first From_ line is the first message (index 0, reported as not behind a From_
    line), both in the first piece, as :func:`rewrite_mbox` reads them. An empty file has
    one piece, empty and last, whose rewrite writes nothing. Memory stays
    flat: the scan holds one message (at most about 2.5 times *max_message*) and forgets an
    oversize one as it is read. *stream* must be seekable, as the pieces are read by seeking.

    >>> import io
    >>> mbox = b"From a\\n\\none\\nFrom b\\n\\ntwo\\nFrom c\\n\\nthree\\n"
    >>> [(p.start, p.end, p.first, p.number, p.last) for p in plan_mbox(io.BytesIO(mbox), piece_size=25)]
    [(0, 24, 0, 0, False), (24, 38, 2, 1, True)]
    >>> list(plan_mbox(io.BytesIO(b"")))
    [Piece(start=0, end=0, first=0, number=0, last=True)]
    """
    if piece_size < 1:
        raise ValueError("piece_size must be positive")
    if not stream.seekable():
        raise ValueError("plan_mbox needs a seekable stream: each piece is read by seeking to it")
    return _plan(stream, piece_size, max_message)


def _plan(stream: BinaryIO, piece_size: int, max_message: int) -> Iterator[Piece]:
    stream.seek(0)
    start = first = number = end = 0
    for index, (begin, _, end) in enumerate(_MboxSplitter(stream, CHUNK_SIZE, max_message, _forget).messages()):
        if end - start > piece_size and begin > start:  # this message does not fit: the piece closes before it
            yield Piece(start, begin, first, number)
            start, first, number = begin, index, number + 1
    yield Piece(start, end, first, number, last=True)


class _Window:
    """The bytes ``[start, end)`` of a seekable stream as a stream of their own, offsets
    counted from *start*: reads and seeks never reach past *end*, so a piece's split sees
    the end of the stream exactly where the piece ends."""

    def __init__(self, stream: BinaryIO, start: int, end: int) -> None:
        self.stream = stream
        self.start = start
        self.end = end
        self.position = start
        stream.seek(start)

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position - self.start

    def seek(self, offset: int, whence: int = os.SEEK_SET, /) -> int:
        if whence != os.SEEK_SET:
            raise ValueError("only absolute seeks")
        self.position = self.start + min(max(offset, 0), self.end - self.start)
        self.stream.seek(self.position)
        return self.position - self.start

    def read(self, size: int = -1, /) -> bytes:
        left = self.end - self.position
        data = self.stream.read(left if size < 0 else min(size, left)) if left > 0 else b""
        self.position += len(data)
        return data


def rewrite_mbox_piece(
    stream: BinaryIO, piece: Piece, target: BinaryIO, **options: Unpack[MboxOptions]
) -> Iterator[MboxReport]:
    """Rewrite the messages of one piece (of :func:`plan_mbox`) of the mbox *stream* into
    *target*, yielding one report each, as :func:`rewrite_mbox` does for the whole file.

    Only the piece's bytes are read (*stream* is seeked to ``piece.start``; the split stops
    at ``piece.end`` as at the end of a file). Reports count ``index`` and ``offset`` in the
    whole file. The outputs of every piece of a plan, joined in order, are
    :func:`rewrite_mbox`'s output byte for byte, and the reports are its reports, given the
    same *max_message* to both :func:`plan_mbox` and this: it is the same loop, and the
    split ends each message inside a piece where it ends in the whole file (a piece ends
    where a message does, and a message's end depends on no byte after the From_ line
    that follows it). The first message of the file is reported as not behind a From_
    line in the first piece only. A piece not beginning with a From_ line (but for the
    first) is refused: it was not planned on this file.

    >>> import io
    >>> mbox = (b"From a\\nContent-Type: text/html\\nContent-Location: http://example.org/\\n\\n"
    ...         b"<img src=a.png>\\n" * 3)
    >>> pieces = list(plan_mbox(io.BytesIO(mbox), piece_size=100))
    >>> target = io.BytesIO()
    >>> [(p.start, p.end, p.first) for p in pieces]
    [(0, 86, 0), (86, 172, 1), (172, 258, 2)]
    >>> [(r.index, r.offset, r.rewritten_links) for r in rewrite_mbox_piece(io.BytesIO(mbox), pieces[1], target)]
    [(1, 86, 1)]
    >>> target.getvalue().splitlines()[-1]
    b'<img src=http://example.org/a.png>'
    >>> joined, whole = io.BytesIO(), io.BytesIO()
    >>> for piece in pieces:
    ...     _ = list(rewrite_mbox_piece(io.BytesIO(mbox), piece, joined))
    >>> _ = list(rewrite_mbox(io.BytesIO(mbox), whole))
    >>> joined.getvalue() == whole.getvalue()
    True
    """
    _streams(stream, target, "rewrite_mbox_piece")
    window = _Window(stream, piece.start, piece.end)
    if piece.start and window.read(5) != b"From ":
        raise ValueError(f"piece {piece.number} does not begin with a From_ line at offset {piece.start}")
    window.seek(0)
    yield from _rewrite_messages(window, target, piece.first, piece.start, **options)


# ---------------------------------------------------------------------------
# Maildir
# ---------------------------------------------------------------------------

_MAILDIR_SUBFOLDERS = ("cur", "new", "tmp")
# The codes of what rewrite_maildir says of a message file itself (not of its content): always
# said, as errors (a file not read or not written, a size in its name that no longer matches).
_MAILDIR_OWN = frozenset({"input", "output", "message"})
# Dovecot's ",S=<size>" and ",W=<size>" name fields state the message size.
_SIZE_IN_NAME = re.compile(r",[SW]=\d+")


def is_maildir(path: Path) -> bool:
    """Whether *path* is a Maildir: a folder with cur/, new/ and tmp/ folders in it."""
    return all((Path(path) / name).is_dir() for name in _MAILDIR_SUBFOLDERS)


def iter_maildir(folder: Path) -> Iterator[Path]:
    """The message files of a Maildir: cur/ then new/, each sorted by name.

    tmp/ holds deliveries not finished yet, and names starting with "." are not
    messages (the Maildir convention, which Python's ``mailbox`` follows too).
    Maildir++ subfolders (``.Sent/``) are Maildirs of their own, not visited.
    """
    for sub in ("cur", "new"):
        directory = Path(folder) / sub
        if directory.is_dir():
            yield from sorted(p for p in directory.iterdir() if not p.name.startswith(".") and p.is_file())


@dataclass(frozen=True, slots=True)
class MaildirReport:
    """What happened to one message file of a Maildir.

    ``path`` is the message file; ``target`` the file written (None when nothing was:
    unchanged in place, or unreadable). Counts as in :class:`MboxReport`.
    """

    path: Path
    target: Path | None
    changed: bool
    parts: int = 0
    rewritten_parts: int = 0
    links: int = 0
    rewritten_links: int = 0
    problems: tuple[str, ...] = ()
    relative: int = 0
    result: MessageResult | None = field(default=None, repr=False, compare=False)  # with_links=True
    name: str = ""  # its path in the Maildir
    unwritten: bool = False  # it was to be written, and was not

    def unit(self) -> Unit:
        """This message file as the run's tally takes it, named by its path in the Maildir
        (``message cur/1000.host:2,S``), each of its problems said once, under that name: what
        the engine left as it was among its warnings, what this module says of the file (it
        could not be read or written, the size in its name is wrong) among its errors. One
        the engine could not read, or that was to be written and was not, fails."""
        size = self.path.stat().st_size if self.path.exists() else 0
        name = self.name or str(self.path)
        read = self.result is not None
        left: list[str] = []  # said by the tally, under the unit's where
        wrong: list[str] = []
        for problem in self.problems:
            (wrong if not read or getattr(problem, "code", None) in _MAILDIR_OWN else left).append(problem)
        return Unit(
            {"message": name},
            self.result,
            "message",
            left if read else None,
            errors=placed(wrong, "message", f"message {name}"),
            failed=self.result is None or self.unwritten,
            bytes_in=size,
            changed=self.changed and not self.unwritten,
        )


def _write_message(path: Path, data: bytes, scratch: Path, like: os.stat_result, *, sync: bool = True) -> None:
    """Put *data* at *path* in one rename, with *like*'s mode and times.

    The temporary file goes to the Maildir's tmp/ *scratch* (same filesystem, so the
    rename is atomic), where Maildir writers keep unfinished files because readers never
    list it: a reader sees the old message or the new one, never half of one. Some readers
    take the arrival time from the file's mtime, so the times stay.
    """
    times = (like.st_atime_ns, like.st_mtime_ns)
    mode = stat.S_IMODE(like.st_mode)
    with replacing(path, mode, scratch=scratch, times=times, make=False, sync=sync) as replacement:
        replacement.stream.write(data)


def rewrite_maildir(
    folder: Path,
    target_folder: Path | None = None,
    *,
    url: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    with_links: bool = False,
    write: bool = True,
    sync: bool = True,
) -> Iterator[MaildirReport]:
    """Rewrite every message of the Maildir *folder*, yielding one report each.

    With no *target_folder*, in place: a message file that changes is replaced in one
    rename, keeping its name (with the ``:2,FLAGS`` info), mode and mtime; one that does
    not is left alone. Do not run it while a mail client renames files in the folder
    (a file renamed meanwhile is skipped and reported). Otherwise every message is
    written to *target_folder* at the same relative path (cur/, new/, tmp/ are created);
    nothing else is copied. A file that cannot be read or written is reported, and the
    others go on. With *with_links*, each report carries the engine's result. With
    *write* False, nothing is written (each report's target is None): the links are found.
    *sync* False: no fsync of what is written (still one rename each).

    >>> import pathlib, shutil, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("cur", "new", "tmp"):
    ...     (folder / name).mkdir()
    >>> _ = (folder / "new" / "1.eml").write_bytes(b"Content-Type: text/html\\n"
    ...     b"Content-Location: http://example.org/\\n\\n<a href=next.html>next</a>\\n")
    >>> is_maildir(folder), [path.name for path in iter_maildir(folder)]
    (True, ['1.eml'])
    >>> [(report.path.name, report.changed, report.rewritten_links) for report in rewrite_maildir(folder)]
    [('1.eml', True, 1)]
    >>> (folder / "new" / "1.eml").read_bytes().splitlines()[-1]
    b'<a href=http://example.org/next.html>next</a>'
    >>> shutil.rmtree(folder)
    """
    folder = Path(folder)
    if not is_maildir(folder):
        raise NotADirectoryError(f"{folder} is not a Maildir (it needs cur/, new/ and tmp/ folders)")
    destination = folder if target_folder is None else Path(target_folder)
    if destination.resolve() == folder.resolve():
        destination = folder  # in place
    elif write:
        for name in _MAILDIR_SUBFOLDERS:
            (destination / name).mkdir(parents=True, exist_ok=True)
    for path in iter_maildir(folder):
        yield _maildir_message(path, folder, destination, url, policy, with_links=with_links, write=write, sync=sync)


def _maildir_message(
    path: Path,
    folder: Path,
    destination: Path,
    url: str | None,
    policy: Policy,
    *,
    with_links: bool,
    write: bool,
    sync: bool,
) -> MaildirReport:
    """One message file of :func:`rewrite_maildir`: read, rewritten, written (in place when
    *destination* is *folder*), and its report."""
    relative = path.relative_to(folder)
    name = str(relative)
    in_place = destination == folder
    try:
        before = path.stat()
        data = path.read_bytes()
    except OSError as error:
        problem = Problem("input", f"cannot be read: {error.strerror}")
        return MaildirReport(path, None, False, problems=(problem,), name=name, unwritten=write)
    output, counts, problems, left, result = _rewrite(data, url, policy)
    changed = output != data
    if changed and _SIZE_IN_NAME.search(path.name):
        mismatch = "the size in its name (,S=/,W=) no longer matches; Dovecot may complain"
        problems.append(Problem("message", mismatch))
    written: Path | None = destination / relative
    try:
        if not write or (in_place and not changed):
            written = None
        elif in_place:
            if identity(path.stat()) != identity(before):
                raise FileExistsError(0, "it changed while it was being rewritten")
            _write_message(path, output, folder / "tmp", before, sync=sync)
        else:
            _write_message(destination / relative, output, destination / "tmp", before, sync=sync)
    except OSError as error:
        problems.append(Problem("output", not_written(error)))
        written = None
    return MaildirReport(
        path,
        written,
        changed,
        *counts,
        problems=tuple(problems),
        relative=left,
        result=result if with_links else None,
        name=name,
        unwritten=write and written is None and not (in_place and not changed),
    )
