"""What reading a WARC gives: a document (a ``response`` or ``resource`` record) or damage, the
bound on a decoded body, and the one-line text of a problem; shared by every module of the package."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Union

from rewriter.containers.pieces import MAX_DOCUMENT
from rewriter.document.model import Unit, placed
from rewriter.problems import Problem

MAX_BODY = MAX_DOCUMENT  # the decoded bytes of one body held at most, by default (as rewriter's --max-size)


_BLOCK = 1 << 20


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

    def unit(self) -> Unit:
        """This damage as the run's tally takes it: a unit that fails, named by its offset."""
        problem = self.problem
        if isinstance(problem, Problem) and problem.where:  # placed where it was found already
            return Unit({"offset": self.offset}, errors=[problem], failed=True)
        return Unit({"offset": self.offset}, errors=placed([problem], "record", f"offset {self.offset}"), failed=True)


Source = Union[str, "os.PathLike[str]", IO[bytes]]


Wanted = Callable[[int, str, str, "int | None", "str | None"], bool]  # offset, record type, uri, status, content type


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


def _success(kind: str, status: int | None) -> bool:
    """A resource record, or a 2xx response other than 206: a whole representation (RFC 9110 §15.3)."""
    return kind == "resource" if status is None else 200 <= status < 300 and status != 206
