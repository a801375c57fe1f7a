"""What a run says: messages fit for a terminal, JSON that stays JSON, and the ``--report`` file.

Every message of the command line goes through :func:`escape_controls`, and every JSON line
through :func:`json_text`, wherever they are made (in the caller or in a worker), so that a
name or a URL taken from a document can never drive a terminal. :class:`ReportFile` writes
``--report`` as the jobs finish: lines go to a temporary file beside the report (memory
stays flat whatever the number of links), which takes the report's name when the run ends,
so that a file under that name is always whole.

>>> json_text({"url": "a\\u202eb"})
'{"url": "a\\\\u202eb"}'
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewriter.disk.files import Replacement

__all__ = ["ReportFile", "escape_controls", "json_lines", "json_text"]

# What never reaches a terminal raw: the C0 controls (line ends and tabs too) and DEL, the C1
# controls, the bidirectional formatting characters (they reorder what follows them on screen:
# U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), the line and paragraph separators, and
# lone surrogates (a byte of a file name that is not UTF-8, kept by surrogateescape). Each
# compiled at its first use: their wide classes cost 0.4 ms each to compile, and a quiet run
# writes no message.
_UNSAFE = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"


@cache
def _terminal_unsafe() -> re.Pattern[str]:
    return re.compile(f"[\x00-\x1f{_UNSAFE}]")


@cache
def _json_unsafe() -> re.Pattern[str]:  # less the C0 controls, which json.dumps escapes already
    return re.compile(f"[{_UNSAFE}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x80:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8: shown as that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    r"""*text* fit for a terminal: each character that could drive one (see above) written
    as an escape, ``\xNN`` for ASCII controls and bytes that are not UTF-8, ``\uNNNN`` for
    the others. A backslash is left as it is. Every message of the command line goes through it.

    >>> escape_controls("a\x1b[2Jb\x07\r\u202etxt.exe\udcff\x9b")
    'a\\x1b[2Jb\\x07\\x0d\\u202etxt.exe\\xff\\u009b'
    """
    return _terminal_unsafe().sub(_escape, text)


def json_text(value: object, **options: Any) -> str:
    """*value* as JSON (non-ASCII as it is) with the characters :func:`escape_controls`
    escapes written as ``\\uNNNN``: still valid JSON, read back as the same value."""
    text = json.dumps(value, ensure_ascii=False, **options)
    return _json_unsafe().sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def json_lines(records: list[dict[str, object]]) -> str:
    """*records* as JSON Lines, one :func:`json_text` line each."""
    return "".join(json_text(record) + "\n" for record in records)


class ReportFile:
    """``--report PATH``: JSON Lines, or one JSON array for a name ending in ``.json``.

    :meth:`add` takes a job's records as JSON Lines text, in the order of the plan; the text
    goes straight to a temporary file beside *path*. :meth:`commit` gives it *path*'s name
    (atomically); :meth:`discard` (or leaving the ``with`` block on an error) removes it.
    *sync*: False, no fsync (``--no-fsync``).
    """

    def __init__(self, path: Path, *, sync: bool = True) -> None:
        from rewriter.disk.files import replacing

        self.path = path
        self.array = path.suffix.lower() == ".json"
        self.first = True
        self._context = replacing(path, sync=sync)
        self._replacement: Replacement = self._context.__enter__()
        if self.array:
            self._replacement.stream.write(b"[")

    def add(self, lines: str) -> None:
        """A job's records, as JSON Lines (each line one record)."""
        if not lines:
            return
        if self.array:
            body = lines.rstrip("\n").replace("\n", ",\n")
            lines = ("\n" if self.first else ",\n") + body
        self.first = False
        self._replacement.stream.write(lines.encode("utf-8", "surrogateescape"))

    def add_file(self, path: Path, root: Path | None = None) -> None:
        """A job's records, from the JSON Lines file a worker wrote, copied in chunks; under
        *root* (where the run's work folder lies) through no symbolic link, and only a
        regular file (:func:`rewriter.disk.files.open_regular`)."""
        from rewriter.disk.files import open_regular

        with open_regular(path, root) as stream:
            if not self.array:
                while chunk := stream.read(1 << 20):
                    self._replacement.stream.write(chunk)
                return
            for line in stream:  # one record a line: written as the array's items
                text = line.rstrip(b"\n")
                if text:
                    self._replacement.stream.write((b"\n" if self.first else b",\n") + text)
                    self.first = False

    def commit(self) -> None:
        if self.array:
            self._replacement.stream.write(b"\n]\n" if not self.first else b"]\n")
        self._context.__exit__(None, None, None)

    def discard(self) -> None:
        self._replacement.keep = False
        self._context.__exit__(None, None, None)
