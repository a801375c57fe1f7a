"""Pieces of a large container: an mbox cut at message boundaries, a WARC at record offsets.

A container larger than :data:`PIECE_SIZE` is done as several jobs, one per piece, so that
one 50 GB file keeps every worker busy. The caller scans the file once for the boundaries
(:func:`rewriter.containers.mailbox.plan_mbox`, :func:`rewriter.containers.warc.plan_warc`); each worker reads its
own piece; the outputs of the pieces, joined in order, are the output of the whole file,
byte for byte what the container's one-pass function writes.

>>> Piece(0, 10, 0, 0, last=True).size
10
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PIECE_SIZE", "Piece"]

# About how many input bytes one job of a container holds: large enough that a job's fixed
# costs vanish, small enough that a worker's memory and a retried job stay small.
# The most bytes of one document (a file, a message, a WARC body decoded) read into memory, by
# default: one place for the run's --max-size and the WARC reader's own default.
MAX_DOCUMENT = 1 << 30
PIECE_SIZE = 64 << 20


@dataclass(frozen=True, slots=True)
class Piece:
    """The bytes ``[start, end)`` of a container, holding whole messages or records.

    *first* is the index (from 0, in the whole file) of its first message or record,
    *number* the piece's own index, and *last* says that no piece follows it.
    """

    start: int
    end: int
    first: int
    number: int
    last: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start
