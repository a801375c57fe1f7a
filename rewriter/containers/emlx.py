"""Apple Mail's message files, ``.emlx`` and ``.partial.emlx``: read and rewritten in their
own format.

An ``.emlx`` file is three things, one after the other: a line holding the byte count of
the message (ASCII decimal digits, then a line feed), exactly that many bytes of RFC 5322
message, and an Apple XML property list (the message's flags, dates, remote ids). A
``.partial.emlx`` has the same layout (a message whose large attachments Mail keeps apart).
:func:`split_emlx` cuts a file into the three; :func:`run_emlx` runs the MIME engine on the
message, as on any ``.eml``, and puts the file together again: the new count on the first
line (its padding kept when it fits), the rewritten message, the property list byte for
byte. What a file is (an ``.emlx`` or not) is told by
:func:`rewriter.containers.formats.what_file_is`, not here.

>>> message = b"Content-Type: text/html\\nContent-Location: http://example.org/a/\\n\\n<a href=b.html>b</a>\\n"
>>> plist = b'<?xml version="1.0" encoding="UTF-8"?>\\n<plist version="1.0"><dict/></plist>\\n'
>>> data = b"%d\\n" % len(message) + message + plist
>>> from rewriter.mime.message import rewrite_message
>>> output = run_emlx(data, rewrite_message).output
>>> split_emlx(output).message.splitlines()[-1], split_emlx(output).plist == plist
(b'<a href=http://example.org/a/b.html>b</a>', True)
>>> output.split(b"\\n", 1)[0] == b"%d" % (len(message) + 21)
True
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from rewriter.document.model import MessageResult

__all__ = ["Emlx", "EmlxError", "run_emlx", "split_emlx"]

# The first line: the message's byte count. Apple writes the digits alone; some writers pad
# them with spaces (to a fixed width), and a file that went through a CRLF conversion ends
# the line with a carriage return: both are read, and kept when the file is written again.
_COUNT_LINE = re.compile(rb"([ \t]*)([0-9]{1,18})([ \t]*)(\r?\n)")
_COUNT_LINE_MAX = 64  # a count line longer than this is none
# How a property list opens (Apple's XML plist: an XML declaration, a doctype or the element).
_PLIST_START = re.compile(rb"[ \t\r\n]*(?:<\?xml|<!DOCTYPE[ \t\r\n]+plist|<plist)", re.I)


class EmlxError(ValueError):
    """A file that is not an ``.emlx`` as Apple Mail writes one: no count on its first line,
    a count larger than the file, no property list after the message. Its text says which."""


@dataclass(frozen=True, slots=True)
class Emlx:
    """An ``.emlx`` file cut in its three pieces: *count_line* (with its line break),
    *message* (exactly as many bytes as the count says) and *plist* (everything after)."""

    count_line: bytes
    message: bytes
    plist: bytes

    def joined(self, message: bytes) -> bytes:
        """The file again with *message* in place of its own: the count on the first line
        made *message*'s (in the same padding when it fits), the property list as it was."""
        lead, digits, pad, end = _count_parts(self.count_line)
        count = b"%d" % len(message)
        if pad:  # the digits were padded to a width: the same width when the new count fits in it
            count = count.ljust(len(digits) + len(pad), b" ") if len(count) < len(digits) + len(pad) else count
        return b"".join((lead, count, end, message, self.plist))


def _count_parts(line: bytes) -> tuple[bytes, bytes, bytes, bytes]:
    found = _COUNT_LINE.fullmatch(line)
    assert found is not None  # split_emlx made it
    return found.group(1), found.group(2), found.group(3), found.group(4)


def split_emlx(data: bytes) -> Emlx:
    """*data*, an ``.emlx`` file, cut in its count line, its message and its property list.
    Raises :class:`EmlxError` when it is not one.

    >>> split_emlx(b"4\\nA: b<?xml version='1.0'?><plist/>")
    Emlx(count_line=b'4\\n', message=b'A: b', plist=b"<?xml version='1.0'?><plist/>")
    >>> split_emlx(b"40\\nA: b\\n\\n<?xml?><plist/>")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rewriter.containers.emlx.EmlxError: not an Apple Mail .emlx: its first line counts 40 bytes of message, ...
    """
    found = _COUNT_LINE.match(data, 0, _COUNT_LINE_MAX)
    if found is None:
        first = data[: data.find(b"\n")] if b"\n" in data[:_COUNT_LINE_MAX] else data[:_COUNT_LINE_MAX]
        raise EmlxError(
            f"not an Apple Mail .emlx: its first line is not the message's byte count (it is {first[:40]!r})"
        )
    count, start = int(found.group(2)), found.end()
    if count > len(data) - start:
        raise EmlxError(
            f"not an Apple Mail .emlx: its first line counts {count:,} bytes of message, "
            f"and only {len(data) - start:,} follow"
        )
    plist = data[start + count :]
    if not plist.strip():
        raise EmlxError(
            f"not an Apple Mail .emlx: no property list after the {count:,} bytes of message its first line counts"
        )
    if not _PLIST_START.match(plist):
        raise EmlxError(
            f"not an Apple Mail .emlx: what follows the {count:,} bytes of message its first line counts is no "
            f"property list (it begins {plist[:20]!r}): the count is wrong"
        )
    return Emlx(data[:start], data[start : start + count], plist)


def run_emlx(data: bytes, engine: Callable[..., Any], **options: Any) -> MessageResult:
    """*engine* (the MIME engine's rewrite or its link finder, with *options*: ``url``,
    ``policy``) run on the message of the ``.emlx`` file *data*; its result, whose output is
    the whole file again (:meth:`Emlx.joined`). Raises :class:`EmlxError` when *data* is not
    an ``.emlx``."""
    emlx = split_emlx(data)
    result = engine(emlx.message, **options)
    output = data if result.output == emlx.message else emlx.joined(result.output)
    return replace(result, output=output)
