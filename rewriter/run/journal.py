"""The journal of a run: what is done, beside the output, so that a killed run can be resumed.

A run with an output (``-o DIR``, ``-o FILE`` or ``--in-place``) and more than one job keeps
a work folder beside it: ``.rewriter-run/`` in the output folder (or the folder rewritten in
place), ``.NAME.rewriter-run/`` beside an output file. In it, ``journal.jsonl`` gets one JSON
line per finished job, in the order they finish: the job's key (its input and, for a piece of
a large container, the piece's first byte), the input's identity when it was read (size and
modification time), and its outcome (state, counts, messages, report lines). The pieces of a
split container wait in ``pieces/`` until the whole output can be put together.

``rewriter rewrite ... --resume`` reads the journal of the run that did not finish: a job
whose input is still the one read and whose output is there is not done again; its outcome
is taken from the journal, so that the summary and ``--report`` are those of a run never
stopped. A journal written with other options is refused (its outputs would not be the
ones asked for). A run that goes to its end removes its work folder.

Only JSON is read back (never pickle): a work folder planted in an output folder can make a
resumed run skip jobs, but never run code.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp()) / ".rewriter-run"
>>> journal = Journal.open(folder, {"rules": "rfc3986"}, resume=False)
>>> offset = journal.record("page.html", (10, 5), {"state": "rewritten"})
>>> journal.read(offset)["outcome"]
{'state': 'rewritten'}
>>> again = Journal.open(folder, {"rules": "rfc3986"}, resume=True)
>>> again.done("page.html", (10, 5)) is not None, again.done("page.html", (11, 5))
(True, None)
>>> again.close(finished=True); folder.exists()
False
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

__all__ = [
    "WORK_FOLDER",
    "Journal",
    "JournalError",
    "identity_of",
    "is_work_folder",
    "piece_path",
    "work_folder_for",
]

WORK_FOLDER = ".rewriter-run"
_JOURNAL = "journal.jsonl"
_VERSION = 1


class JournalError(ValueError):
    """A journal that cannot be resumed: written with other options, or unreadable."""


def is_work_folder(name: str) -> bool:
    """Whether a folder named *name* is a run's work folder (never walked for inputs).

    >>> is_work_folder(".rewriter-run"), is_work_folder(".out.mbox.rewriter-run"), is_work_folder("rewriter-run")
    (True, True, False)
    """
    return name.startswith(".") and name.endswith(WORK_FOLDER.removeprefix("."))


def work_folder_for(output: Path, *, folder: bool) -> Path:
    """Where a run writing *output* keeps its work folder: inside *output* when it is a
    folder, else beside it as ``.NAME.rewriter-run``."""
    if folder:
        return output / WORK_FOLDER
    return output.parent / f".{output.name}.{WORK_FOLDER.removeprefix('.')}"


class Journal:
    """The journal file of one work folder (see the module docstring)."""

    def __init__(self, folder: Path, stream: Any, earlier: dict[str, tuple[tuple[int, int], int]]) -> None:
        self.folder = folder
        self.stream = stream
        self.earlier = earlier  # key -> (identity, offset) of the jobs a killed run had done

    @classmethod
    def open(cls, folder: Path, fingerprint: dict[str, object], *, resume: bool) -> Journal:
        """The journal in *folder* for a run with *fingerprint* (its options). With
        *resume*, the jobs an earlier run with the same options finished are kept (a
        journal of other options raises :class:`JournalError`); otherwise it starts empty."""
        path = folder / _JOURNAL
        earlier: dict[str, tuple[tuple[int, int], int]] = {}
        header = {"rewriter-journal": _VERSION, "options": fingerprint}
        if resume and path.exists():
            earlier = cls._read_earlier(path, header)
            stream = open(path, "ab")  # noqa: SIM115 - held for the run
        else:
            if folder.exists():
                shutil.rmtree(folder / "pieces", ignore_errors=True)
            folder.mkdir(parents=True, exist_ok=True)
            stream = open(path, "wb")  # noqa: SIM115 - held for the run
            stream.write(_line(header))
            stream.flush()
        (folder / "pieces").mkdir(exist_ok=True)
        return cls(folder, stream, earlier)

    @staticmethod
    def _read_earlier(path: Path, header: dict[str, object]) -> dict[str, tuple[tuple[int, int], int]]:
        earlier: dict[str, tuple[tuple[int, int], int]] = {}
        with open(path, "rb") as stream:
            first = stream.readline()
            try:
                found = json.loads(first)
            except ValueError:
                raise JournalError(f"{path}: not a journal of rewriter") from None
            if not isinstance(found, dict) or found.get("rewriter-journal") != _VERSION:
                raise JournalError(f"{path}: not a journal of this version of rewriter")
            if found.get("options") != header["options"]:
                raise JournalError(f"{path}: written by a run with other options; rerun without --resume to start over")
            while True:
                offset = stream.tell()
                line = stream.readline()
                if not line.endswith(b"\n"):
                    break  # the end, or a line the killed run did not finish
                try:
                    entry = json.loads(line)
                    key, identity = entry["key"], entry["identity"]
                    earlier[str(key)] = ((int(identity[0]), int(identity[1])), offset)
                except (ValueError, KeyError, TypeError, IndexError):
                    continue  # a damaged line: that job is done again
        return earlier

    def done(self, key: str, identity: tuple[int, int] | None) -> int | None:
        """Where the journal holds the outcome of the job *key* done by an earlier run on
        an input with *identity*; None when it must be done (again)."""
        found = self.earlier.get(key)
        if found is None or identity is None or found[0] != identity:
            return None
        return found[1]

    def record(self, key: str, identity: tuple[int, int] | None, outcome: dict[str, object]) -> int:
        """Add a finished job; its offset in the journal. Written through at once (a killed
        run loses at most the job it was recording), not synced: a line lost to a crash of
        the system only means that job is done again."""
        offset = self.stream.tell()
        self.stream.write(_line({"key": key, "identity": list(identity or (-1, -1)), "outcome": outcome}))
        self.stream.flush()
        return offset

    def read(self, offset: int) -> dict[str, Any]:
        """The entry at *offset* (from :meth:`record` or :meth:`done`)."""
        with open(self.folder / _JOURNAL, "rb") as stream:
            stream.seek(offset)
            entry: dict[str, Any] = json.loads(stream.readline())
            return entry

    def piece_path(self, key: str, number: int) -> Path:
        """Where the output of piece *number* of the container *key* waits."""
        return piece_path(self.folder, key, number)

    def close(self, *, finished: bool) -> None:
        """Close the journal; a *finished* run removes its work folder."""
        with contextlib.suppress(OSError):
            self.stream.close()
        if finished:
            shutil.rmtree(self.folder, ignore_errors=True)


def piece_path(folder: Path, key: str, number: int) -> Path:
    """Where the output of piece *number* of the container *key* waits in the work *folder*."""
    import hashlib  # only for a container done in pieces (2 ms of start-up otherwise)

    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return folder / "pieces" / f"{digest}-{number:06d}"


def _line(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def identity_of(path: str) -> tuple[int, int] | None:
    """(size, modification time in ns) of *path*, or None when it cannot be read."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns
