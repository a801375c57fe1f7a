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

The work folder lies in the tree it serves, where a worker on another machine (Dask) finds
it, and it is untrusted as that tree is. It is made, opened and removed through
:mod:`rewriter.disk.files`: no symbolic link is followed there, a link (or a pipe) met where
the run keeps its files is named and refused (:class:`~rewriter.disk.files.Refused`), and it
is removed without following one. The journal is untrusted input: only JSON is read back
(never pickle), each entry is checked field by field (:func:`entry_problem`), a report file
it names must be the one this run would have written for that job, and a journal with an
entry that fails is refused with the line and the reason (:class:`JournalError`); only an
unfinished last line (a run killed while writing it) is passed over, and cut off.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp()) / ".rewriter-run"
>>> journal = Journal.open(folder, {"rules": "rfc3986"}, resume=False)
>>> key = "page.html\\0out/page.html\\0write"  # its input, its output, what is done
>>> [offset] = journal.record_all([(key, (10, 5), {"shown": "page.html", "state": "rewritten"})])
>>> journal.read(offset)["outcome"]
{'shown': 'page.html', 'state': 'rewritten'}
>>> again = Journal.open(folder, {"rules": "rfc3986"}, resume=True)
>>> again.done(key, (10, 5)) is not None, again.done(key, (11, 5))
(True, None)
>>> again.close(finished=True); folder.exists()
False
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from rewriter.disk.files import Folder, Refused, kind_of, write_all
from rewriter.run.jobs import outcome_problem

__all__ = [
    "WORK_FOLDER",
    "Journal",
    "JournalError",
    "entry_problem",
    "identity_of",
    "is_work_folder",
    "piece_path",
    "report_path",
    "work_folder_for",
]

WORK_FOLDER = ".rewriter-run"
_JOURNAL = "journal.jsonl"
_VERSION = 1
_KEY_ROOM = 1 << 16  # characters of a key: two paths and a number (PATH_MAX is 4096 bytes)
_INTEGER = 1 << 63  # counts, sizes and times are 64-bit integers
# The longest journal line read: a job's report lines go to reports/ above 256 KiB, so only
# its messages make a line long, and no run writes one this long (hundreds of thousands of
# messages for one file). A longer line is refused unread, never held whole.
_LINE_MAX = 64 << 20


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
        stream.flush()
        self._end = stream.tell()  # where the next line goes: kept here, not asked of the system a line

    @property
    def root(self) -> Path:
        """The folder the work folder lies in: below it, no symbolic link is followed."""
        return self.folder.parent

    @classmethod
    def open(cls, folder: Path, fingerprint: dict[str, object], *, resume: bool) -> Journal:
        """The journal in *folder* for a run with *fingerprint* (its options). With
        *resume*, the jobs an earlier run with the same options finished are kept (a
        journal of other options, or one that fails its checks, raises :class:`JournalError`);
        otherwise it starts empty. A symbolic link at the work folder, its journal or its
        ``pieces``/``reports`` folders raises :class:`~rewriter.disk.files.Refused`."""
        path = folder / _JOURNAL
        earlier: dict[str, tuple[tuple[int, int], int]] = {}
        header = {"rewriter-journal": _VERSION, "options": fingerprint}
        with Folder.open(folder, folder.parent, make=True) as work:
            for name in ("pieces", "reports"):
                inner = work.status(name)
                if inner is not None and not stat.S_ISDIR(inner.st_mode):
                    raise Refused(f"{folder / name} is {kind_of(inner.st_mode)}, not a folder; it is not followed")
                if inner is not None:
                    _check_own_files(folder / name, folder.parent)
            found = work.status(_JOURNAL)
            if found is not None and not stat.S_ISREG(found.st_mode):
                raise Refused(f"{path} is {kind_of(found.st_mode)}; the journal is never read or written through one")
            if resume and found is not None:
                stream = os.fdopen(work.open_file(_JOURNAL, os.O_RDWR), "r+b")
                try:
                    names = os.fstat(stream.fileno()).st_nlink
                    if names != 1:  # another name of it could lie outside the tree: never appended to
                        raise Refused(f"{path} has {names} names (hard links); a journal has one")
                    earlier, end = _read_earlier(stream, path, header, folder)
                    stream.truncate(end)  # a line the killed run did not finish: appended to, it would be damaged
                    stream.seek(end)
                    if end == 0:  # killed before its header was whole: nothing was done
                        stream.write(_line(header))
                        stream.flush()
                except BaseException:
                    stream.close()
                    raise
            else:
                for name in ("pieces", "reports"):  # a killed run's, removed: never through a link
                    work.remove_tree(name)
                work.unlink(_JOURNAL)  # a killed run's (a regular file: checked above)
                stream = os.fdopen(work.open_file(_JOURNAL, os.O_RDWR | os.O_CREAT | os.O_EXCL), "r+b")
                stream.write(_line(header))
                stream.flush()
        try:
            Folder.open(folder / "pieces", folder.parent).close()
        except BaseException:
            stream.close()
            raise
        return cls(folder, stream, earlier)

    def done(self, key: str, identity: tuple[int, int] | None) -> int | None:
        """Where the journal holds the outcome of the job *key* done by an earlier run on
        an input with *identity*; None when it must be done (again)."""
        found = self.earlier.get(key)
        if found is None or identity is None or found[0] != identity:
            return None
        return found[1]

    def record_all(self, entries: list[tuple[str, tuple[int, int] | None, dict[str, object]]]) -> list[int]:
        """Add finished jobs, each a (key, identity, outcome); their offsets in the journal.
        Written through at once, in one write(2) (a batch's outcomes: a killed run loses at most
        the jobs it was recording, an unfinished last line being passed over when resumed), not
        synced: a line lost to a crash of the system only means that job is done again."""
        offsets, lines = [], []
        end = self._end
        for key, identity, outcome in entries:
            line = _line({"key": key, "identity": list(identity or (-1, -1)), "outcome": outcome})
            offsets.append(end)
            lines.append(line)
            end += len(line)
        write_all(self.stream.fileno(), b"".join(lines))  # at the end (the stream's buffer is empty)
        self._end = end
        return offsets

    def read(self, offset: int) -> dict[str, Any]:
        """The entry at *offset* (from :meth:`record_all` or :meth:`done`), read from the journal
        this run holds open (never opened again by its name)."""
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.pread(self.stream.fileno(), 1 << 16, offset + len(line))
            if not chunk:
                break
            line += chunk[: chunk.find(b"\n") + 1] if b"\n" in chunk else chunk
        entry: dict[str, Any] = json.loads(line)
        return entry

    def holds(self, path: Path) -> bool:
        """Whether the file *path* of the work folder (a piece, a report) is there, a regular
        file reached through no symbolic link."""
        try:
            with Folder.open(path.parent, self.root, make=False) as folder:
                found = folder.status(path.name)
        except OSError:
            return False
        return found is not None and stat.S_ISREG(found.st_mode)

    def piece_path(self, key: str, number: int) -> Path:
        """Where the output of piece *number* of the container *key* waits."""
        return piece_path(self.folder, key, number)

    def close(self, *, finished: bool) -> None:
        """Close the journal; a *finished* run removes its work folder (never through a
        symbolic link: one found in its place is removed itself)."""
        with contextlib.suppress(OSError):
            self.stream.close()
        if finished:
            with contextlib.suppress(OSError), Folder.open(self.folder.parent, None, make=False) as parent:
                parent.remove_tree(self.folder.name)


def _check_own_files(inner: Path, root: Path) -> None:
    """Each entry of the work folder's *inner* folder (``pieces/``, ``reports/``) is a regular
    file with one name, as a run writes them: a symbolic link, a folder, a pipe or a file with
    a second name (a hard link, which could lie outside the tree) planted there is named and
    refused (:class:`~rewriter.disk.files.Refused`), never read, appended to or silently
    passed over."""
    with Folder.open(inner, root, make=False) as folder:
        with os.scandir(folder.fd if folder.fd is not None else folder.path) as scan:
            names = [entry.name for entry in scan]
        for name in names:
            found = folder.status(name)
            if found is None:
                continue
            if not stat.S_ISREG(found.st_mode):
                raise Refused(f"{inner / name} is {kind_of(found.st_mode)}; a run's own files are never followed")
            if found.st_nlink != 1:
                raise Refused(f"{inner / name} has {found.st_nlink} names (hard links); a run's own files have one")


def _read_earlier(
    stream: Any, path: Path, header: dict[str, object], folder: Path
) -> tuple[dict[str, tuple[tuple[int, int], int]], int]:
    """The jobs of the journal *stream* (key -> (identity, offset)), and where its last whole
    line ends. Raises :class:`JournalError` naming the line that fails its checks."""
    earlier: dict[str, tuple[tuple[int, int], int]] = {}
    first = stream.readline(_LINE_MAX + 1)
    if len(first) > _LINE_MAX:
        raise JournalError(f"{path}: not a journal of rewriter (its first line is longer than {_LINE_MAX:,} bytes)")
    try:
        found = json.loads(first)
    except (ValueError, RecursionError):
        raise JournalError(f"{path}: not a journal of rewriter") from None
    if not isinstance(found, dict) or found.get("rewriter-journal") != _VERSION:
        raise JournalError(f"{path}: not a journal of this version of rewriter")
    options = found.get("options")
    if options != header["options"]:
        differ = _differing(options, header["options"])
        raise JournalError(f"{path}: written by a run with other options{differ}; rerun without --resume to start over")
    if not first.endswith(b"\n"):
        return earlier, 0  # the header itself unfinished: nothing was done
    number, end = 1, len(first)
    while True:
        offset = stream.tell()
        line = stream.readline(_LINE_MAX + 1)
        if len(line) > _LINE_MAX:
            raise JournalError(
                f"{path}, line {number + 1}: longer than {_LINE_MAX:,} bytes, which no run writes; "
                "rerun without --resume to start over"
            )
        if not line.endswith(b"\n"):
            return earlier, end  # the end, or a line the killed run did not finish
        number, end = number + 1, offset + len(line)
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError) as error:
            why = _first_line(error)
            raise JournalError(
                f"{path}, line {number}: not JSON ({why}); rerun without --resume to start over"
            ) from None
        problem = entry_problem(entry, folder)
        if problem is not None:
            raise JournalError(f"{path}, line {number}: {problem}; rerun without --resume to start over")
        size, time = entry["identity"]
        earlier[entry["key"]] = ((size, time), offset)


def _first_line(error: BaseException) -> str:
    return str(error).split("\n", 1)[0][:200]


def _differing(found: object, wanted: object) -> str:
    """Which options of a journal's header differ from this run's (for the message)."""
    if not isinstance(found, dict) or not isinstance(wanted, dict):
        return ""
    names = sorted(name for name in wanted.keys() | found.keys() if found.get(name) != wanted.get(name))
    return f" ({', '.join(str(name) for name in names[:8])})" if names else ""


def entry_problem(entry: object, folder: Path) -> str | None:
    """Why *entry*, a line of the journal of the work *folder*, is not one a run writes
    (a wrong type, a field missing or added, a value out of range, a file named that is not
    this run's own); None when it is one. Each field is checked, and the outcome's
    (:func:`rewriter.run.jobs.outcome_problem`)."""
    if not isinstance(entry, dict) or set(entry) != {"key", "identity", "outcome"}:
        return "an entry has exactly the fields key, identity and outcome"
    key, identity, outcome = entry["key"], entry["identity"], entry["outcome"]
    if not isinstance(key, str) or not key or len(key) > _KEY_ROOM:
        return "its key is not a string of a run's job"
    parts = key.split("\0")
    if len(parts) not in (3, 4) or parts[2] not in ("dry", "write", "unpack") or not parts[0]:
        return "its key is not a run's: input, output, what was done"
    if len(parts) == 4 and not (parts[3].isascii() and parts[3].isdigit() and len(parts[3]) < 20):
        return "its key's piece is not a byte offset"
    if (
        not isinstance(identity, list)
        or len(identity) != 2
        or not all(type(value) is int and -_INTEGER <= value < _INTEGER for value in identity)
    ):
        return "its identity is not two integers (size, time)"
    if not isinstance(outcome, dict):
        return "its outcome is not an object"
    return outcome_problem(outcome, report_path(folder, key), piece=len(parts) == 4)


def report_path(folder: Path, key: str) -> Path:
    """Where the report lines of the job *key*, when they are many, wait in the work *folder*:
    the one file a journal entry may name."""
    import hashlib

    digest = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return folder / "reports" / f"{digest}.jsonl"


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
