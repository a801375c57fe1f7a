"""The planner: the jobs of a run, one per input (a file, a folder's documents, a Maildir,
standard input), each told once what it is, and in their places the inputs that cannot be
jobs (a message each).

A folder is walked as the jobs are taken (:func:`iter_plan` is a stream), each file told by
what it holds (:func:`~rewriter.containers.formats.what_file_is`), whatever its name; a large
mbox or web archive becomes pieces, each a job of its own.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "view.php?id=2").write_bytes(b"<!doctype html><a href=x>x</a>")
>>> _ = (folder / "logo.png").write_bytes(b"\\x89PNG\\r\\n\\x1a\\n")
>>> jobs, problems = plan([str(folder)], str(folder / "out"), copy_others=True)
>>> [(pathlib.Path(job.source).name, job.format, job.copy) for job in jobs]
[('logo.png', 'other', True), ('view.php?id=2', 'html', False)]
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from rewriter.containers.formats import SNIFF_SIZE, Kind, what_file_is
from rewriter.disk.files import O_BINARY, O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, is_temporary, kind_of, same_file
from rewriter.problems import Problem
from rewriter.run.jobs import WHOLE_FORMATS, Job
from rewriter.run.journal import is_work_folder

__all__ = ["Found", "iter_plan", "kinds_of", "matches", "plan", "read_ahead", "told"]


def matches(relative: str, patterns: Sequence[str]) -> bool:
    """A glob matches the path under the walked folder, or the file name alone; the
    extension (after the last "." of the last segment) without regard to case, on either
    side, so that ``*.htm`` takes ``INDEX.HTM`` (folder and file names keep their case).

    >>> [matches(name, ["*.htm", "Drafts/*.CSS"]) for name in ("INDEX.HTM", "a/b.Htm", "Drafts/x.css", "drafts/x.css")]
    [True, True, True, False]
    """
    if not patterns:
        return False
    name = relative.rsplit("/", 1)[-1]
    for pattern in patterns:  # as written first: the folded forms only when none matches (two calls a file)
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(name, pattern):
            return True
    folded_relative, folded_name = _extension_folded(relative), _extension_folded(name)
    for pattern in patterns:
        folded = _extension_folded(pattern)
        if fnmatch.fnmatchcase(folded_relative, folded) or fnmatch.fnmatchcase(folded_name, folded):
            return True
    return False


def _extension_folded(path: str) -> str:
    """*path* with the extension of its last segment in lower case."""
    segment_start = path.rfind("/") + 1
    dot = path.rfind(".")
    return path if dot < segment_start else path[:dot] + path[dot:].lower()


def _is_maildir(path: Path) -> bool:
    return all((path / name).is_dir() for name in ("cur", "new", "tmp"))


Found = Literal["input", "maildir", "other"]

# A document of a walk this small is read whole when it is told what it is, and its bytes go to
# its job (Job.data): one open a page, where the job would open and read it again. A batch holds
# 8 MiB of input at most (pipeline.BATCH_BYTES), so a few batches in flight hold little.
WHOLE_FILE = 1 << 20


class _Read:
    """What the planner read of a file: what it is, the status of the descriptor it read it
    through, and its bytes when it read it whole. *kind* None: not read, its status from the
    walk (a small file its job tells, :func:`told`)."""

    # Plain classes here, not dataclasses: making one costs about a millisecond of every run's start-up.
    __slots__ = ("data", "kind", "status")

    def __init__(self, kind: Kind | None, data: bytes | None = None, status: os.stat_result | None = None) -> None:
        self.kind, self.data, self.status = kind, data, status


Walked = tuple[str, str, Found, "_Read | None"]


def _walk(
    root: Path,
    include: Sequence[str],
    exclude: Sequence[str],
    skip: Path | None,
    *,
    others: bool = False,
    follow: bool = True,
    whole: int = 0,
    untold: int = 0,
) -> Iterator[Walked]:
    """(path, its path under *root* with "/" between names, what it is, what its content is)
    for each input under *root*, sorted, symbolic links not followed.

    Every regular file that *include* takes (all, when it is empty) is read for what it is
    (:func:`~rewriter.containers.formats.what_file_is`, from its head): a document whatever
    its name (wget keeps ``view.php?id=2``), ``other`` when it is none. A Maildir found on
    the way is one input (its message files have no suffix to match). *skip* is the output
    folder, when it lies inside *root*. With *others*, the regular files that are no document,
    or that --include does not take, come too (to be copied); what --exclude names never.
    Read with os.scandir, whose entries say what each is: a regular file costs no stat call.
    A folder that cannot be read is passed over, as os.walk does. A document of at most *whole*
    bytes is read whole (:data:`WHOLE_FILE`; 0: only heads), through no symbolic link unless *follow*.
    A file of at most *untold* bytes is not read at all: its job tells what it is (:func:`told`).
    """
    pending = [(os.fspath(root), "")]
    while pending:
        folder, prefix = pending.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=_entry_name)
        except OSError:
            continue
        folders: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        for entry in entries:
            (folders if _is_dir(entry) else files).append(entry)
        kept = []
        for entry in folders:
            relative = prefix + entry.name
            if entry.is_symlink() or (skip is not None and _resolved(Path(entry.path)) == skip):
                continue
            if matches(relative, exclude) or is_work_folder(entry.name):
                continue  # a run's journal and pieces (rewriter.run.journal) are never an input
            if _is_maildir(Path(entry.path)):
                yield entry.path, relative, "maildir", None
                continue
            kept.append((entry.path, relative + "/"))
        for entry in files:
            found = _walked_file(entry, prefix, root, include, exclude, follow, whole, untold)
            if found is not None and (found[2] == "input" or others):
                yield found
        pending.extend(reversed(kept))  # depth first, in order, as os.walk goes


def _walked_file(
    entry: os.DirEntry[str],
    prefix: str,
    root: Path,
    include: Sequence[str],
    exclude: Sequence[str],
    follow: bool,
    whole: int,
    untold: int = 0,
) -> Walked | None:
    """What :func:`_walk` yields for one file of a folder; None for one it passes over."""
    name, relative = entry.name, prefix + entry.name
    if is_temporary(name):
        return None  # ours, left by a killed run
    if entry.is_symlink() and not _inside(Path(entry.path), root):
        return None  # never reach out of the tree through a link
    try:
        if not entry.is_file():  # through a link: what it names
            return None  # a named pipe or a device: reading one could block or never end
    except OSError:
        return None
    if matches(relative, exclude):
        return None
    if include and not matches(relative, include):
        return entry.path, relative, "other", None
    if untold:
        try:
            status = entry.stat()  # what a job's batch is sized by (rewriter.run.pipeline)
        except OSError:
            return entry.path, relative, "input", None  # its job says why
        if status.st_size <= untold:
            return entry.path, relative, "input", _Read(None, status=status)
    read = _read(entry.path, follow, whole)
    return entry.path, relative, _found(read), read


def _found(read: _Read | None) -> Found:
    """What a walk takes a file it read for: an input when it is a document (or unreadable: its
    job says why), else one of the others (copied, with --copy-others)."""
    return "input" if read is None or read.kind is None or read.kind.document else "other"


def _read(path: str, follow: bool, whole: int) -> _Read | None:
    """What the regular file *path* is, from its head, and its bytes when it is small (read
    once, here, through one descriptor: no buffered file object's own system calls); None
    when it cannot be read, or is no longer a regular file (the job that reads it says why)."""
    flags = os.O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_BINARY
    try:
        handle = os.open(path, flags if follow else flags | O_NOFOLLOW)
    except OSError:
        return None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):  # swapped since the walk saw it: a pipe is not read
            return None
        size = status.st_size
        # One byte more than the file holds, up to the head: a file grown since is not taken whole.
        data = os.read(handle, min(size + 1, SNIFF_SIZE))
        kind = what_file_is(data[:SNIFF_SIZE], path)
        if kind.format not in WHOLE_FORMATS or size > whole:
            return _Read(kind, status=status)  # its size sizes its batch (rewriter.run.pipeline)
        if len(data) == SNIFF_SIZE:
            data += os.read(handle, size + 1 - len(data))
    except OSError:
        return None
    finally:
        os.close(handle)
    return _Read(kind, data, status) if len(data) == size else _Read(kind, status=status)


def told(job: Job) -> Job:
    """*job*, a small file of a folder that the planner left untold (``Job.untold``: its jobs
    run in other processes, which read the file anyway), told what it is here, as the planner
    tells a file it reads (:func:`_found`): a document with its bytes when it is read whole; a
    copy when it is none and the run copies the others, else ``untold="passed"`` (the run passes
    over it, as the planner would have). A file that cannot be read is left to its job, which
    says why."""
    if job.untold not in ("copy", "pass"):
        return job
    read = _read(job.source, not job.in_place, WHOLE_FILE)
    if read is None or read.kind is None:
        return replace(job, untold=None)
    kind, status = read.kind, read.status
    if _found(read) == "input":
        return replace(
            job,
            untold=None,
            format=kind.format,
            why=kind.reason,
            data=read.data,
            status=status if read.data is not None else None,
            size=None if status is None else status.st_size,
        )
    copy = job.untold == "copy"
    return replace(job, untold=None if copy else "passed", copy=copy, format=kind.format, why=kind.reason)


def read_ahead(jobs: Sequence[Job]) -> list[Job]:
    """*jobs* (a batch), each small document of a folder that the planner told by its head
    alone (a run whose jobs go to other processes) given its bytes (``Job.data``), read as
    :func:`iter_plan` reads one whole, all before any engine runs: the batch's engines then
    run one after another with no system call between them (their caches stay warm). A file
    that cannot be read so, or no longer is what the planner told, is left to its job."""
    ready: list[Job] = []
    for job in jobs:
        if job.untold is not None:
            ready.append(told(job))
            continue
        # Only a walk's jobs carry the size the planner saw, and only a document's format is one of
        # WHOLE_FORMATS (a copy, a piece, a web archive, a Maildir: none is); _read decides again.
        if job.data is None and job.format in WHOLE_FORMATS and job.size is not None and job.size <= WHOLE_FILE:
            read = _read(job.source, not job.in_place, WHOLE_FILE)
            if read is not None and read.data is not None and read.kind is not None and read.kind.format == job.format:
                job = replace(job, data=read.data, status=read.status, size=len(read.data))
        ready.append(job)
    return ready


def kinds_of(names: Iterable[str]) -> dict[str, Kind | None]:
    """What each file named on a command line is (:func:`iter_plan`'s decision, made once, for
    a caller that must know it before the plan: the web archives the command line mirrors);
    None for standard input, a folder, a named pipe and a file that cannot be read."""
    return {name: _kind_of_named(name) for name in names}


def _kind_of_named(name: str) -> Kind | None:
    return _kind(name) if name != "-" and os.path.isfile(name) else None


def _kind(path: str) -> Kind | None:
    """What the regular file *path* is, from its head (read once, here, as a walk reads each
    file: :func:`_read`); None when it cannot be read (the job that reads it then says why)."""
    read = _read(path, True, 0)
    return None if read is None else read.kind


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """What os.walk calls a folder: one, or a link to one."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _resolved(path: Path) -> Path:
    """*path* with its links followed; as it is when that cannot be known (a relative path
    when the working folder is gone: Path.resolve() needs os.getcwd())."""
    try:
        return path.resolve()
    except OSError:
        return path


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def plan(inputs: Sequence[str], output: str | None = None, **options: Any) -> tuple[list[Job], list[str]]:
    """The jobs for *inputs* (files, folders, Maildirs, ``-``), and the inputs that cannot be:
    :func:`iter_plan` (the same *options*), all at once."""
    jobs: list[Job] = []
    problems: list[str] = []
    for item in iter_plan(inputs, output, **options):
        if isinstance(item, str):
            problems.append(item)
        else:
            jobs.append(item)
    return jobs, problems


def iter_plan(
    inputs: Sequence[str],
    output: str | None = None,
    *,
    in_place: bool = False,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    copy_others: bool = False,
    dry: bool = False,
    piece_size: int | None = None,
    max_message: int | None = None,
    backup: str | None = None,
    kinds: Mapping[str, Kind | None] | None = None,
    read_whole: bool = True,
    untold: bool = False,
) -> Iterator[Job | str]:
    """The jobs for *inputs* (files, folders, Maildirs, ``-``) and, in their places, what
    cannot be a job (a str, the message), as a stream: a folder is walked as the jobs are
    taken, so that a million files cost no memory.

    Outputs: in place; or *output*, a file for one input or a folder (several inputs,
    or a folder input, or an existing folder, or a name ending in "/"), where each input
    keeps its path under the folder it came from; or, with neither, standard output (one
    file only). A folder is walked for its documents, each file told by what it holds
    (:func:`~rewriter.containers.formats.what_file_is`), whatever its name; *include* globs
    (when given) and *exclude* globs filter on top; a glob matches the path under the folder
    or the file name. With *copy_others*, a folder's other files (but those *exclude* names)
    are copied to the output folder unchanged, so that it is a complete mirror; in place they
    are left alone, and so is a web archive (it records what was fetched). *dry*: nothing is
    written (``links``, ``explain``). Each job carries what its file is (``Job.format``).

    With *piece_size*, an mbox at least that large that is written to a file or only read
    is done in pieces of about that size (:mod:`rewriter.containers.pieces`), each a job; *max_message*
    must be what the jobs are given (``min(Settings.max_size, MAX_MESSAGE)``, the default),
    since it decides where an mbox's messages end.

    With *read_whole* (the default), a document of a folder up to :data:`WHOLE_FILE` is read
    whole as it is told what it is, and its job carries its bytes (``Job.data``): for jobs done
    in this process. Without, only heads are read (a plan counted, or done by other processes).
    With *untold* (jobs done by other processes, which read each file anyway), a folder's files
    up to that size (and smaller than a piece) are not read here at all: each job tells what its
    file is, where it runs (:func:`told`, ``Job.untold``); not in place, where a web archive is
    left alone.
    """
    if in_place and backup:  # a page's backup holds a page too: the next run would rewrite it
        exclude = (*exclude, "*" + glob.escape(backup))
    if len(inputs) > 1 and not in_place and output in (None, "-") and not dry:
        yield Problem("input", "several inputs need -o DIR (a folder for the outputs) or --in-place")
        return
    to_file = output is not None and output != "-"
    request = _Request(
        output,
        in_place=in_place,
        include=tuple(include),
        exclude=tuple(exclude),
        copy_others=copy_others,
        dry=dry,
        piece_size=piece_size,
        max_message=max_message,
        kinds=kinds,
        # -o names a folder when it ends in "/", is one already, or takes several inputs.
        folder_output=output is not None
        and to_file
        and (len(inputs) > 1 or output.endswith(("/", os.sep)) or Path(output).is_dir()),
        several=len(inputs) > 1,
        whole=WHOLE_FILE if read_whole else 0,
        untold=0 if not untold or in_place else min(WHOLE_FILE, (piece_size or WHOLE_FILE + 1) - 1),
        skip=_resolved(Path(output)) if output is not None and to_file else None,
    )
    for given in inputs:
        yield from _input_jobs(given, request)


class _Request:
    """What every input of one plan shares: :func:`iter_plan`'s options, and what follows from them:
    *output* (None or "-": standard output); *folder_output*, -o names a folder, where each input
    keeps its path; *several* inputs, each folder's files under its own name in the output folder;
    *whole*, a folder's documents up to this size are read whole (Job.data; 0: only heads); *untold*,
    a folder's files up to this size are not read, told by their jobs (0: none); *skip*, the output
    folder, never walked as an input."""

    __slots__ = (
        "copy_others",
        "dry",
        "exclude",
        "folder_output",
        "in_place",
        "include",
        "kinds",
        "max_message",
        "output",
        "piece_size",
        "several",
        "skip",
        "untold",
        "whole",
    )

    def __init__(
        self,
        output: str | None,
        *,
        in_place: bool,
        include: tuple[str, ...],
        exclude: tuple[str, ...],
        copy_others: bool,
        dry: bool,
        piece_size: int | None,
        max_message: int | None,
        kinds: Mapping[str, Kind | None] | None,
        folder_output: bool,
        several: bool,
        whole: int,
        untold: int,
        skip: Path | None,
    ) -> None:
        self.output, self.in_place, self.include, self.exclude = output, in_place, include, exclude
        self.copy_others, self.dry, self.piece_size, self.max_message = copy_others, dry, piece_size, max_message
        self.kinds, self.folder_output, self.several, self.whole, self.skip = kinds, folder_output, several, whole, skip
        self.untold = untold

    @property
    def to_stdout(self) -> bool:
        return self.output in (None, "-")

    @property
    def root(self) -> str | None:
        """The output tree, when there is one (no symbolic link below it is followed)."""
        return None if self.to_stdout else self.output


def _input_jobs(given: str, request: _Request) -> Iterator[Job | str]:
    """The jobs of one input (a file, a folder, ``-``), or why it can be none."""
    if given == "-":
        yield _stdin_job(request)
        return
    path = Path(given)
    if not path.exists() and not path.is_symlink():
        yield Problem("input", "no such file or folder", (given,))
    elif path.is_dir():
        yield from _folder_jobs(given, path, request)
    else:
        yield from _file_jobs(given, path, request)


def _stdin_job(request: _Request) -> Job | str:
    if request.in_place:
        return "rewriter: <stdin>: cannot be rewritten in place"
    output = request.output
    if request.to_stdout or output is None:
        target = None
    else:
        target = str(Path(output) / "stdin") if request.folder_output else output
    return Job("-", target, "<stdin>", root=request.root if request.folder_output else None, dry=request.dry)


def _folder_jobs(given: str, path: Path, request: _Request) -> Iterator[Job | str]:
    """A folder's jobs: one for a Maildir, else one for each file its walk takes."""
    output, in_place, dry = request.output, request.in_place, request.dry
    if not in_place and request.to_stdout and not dry:
        yield Problem("input", "a folder needs -o DIR or --in-place", (given,))
        return
    base = Path(output) / _resolved(path).name if request.several and output else Path(output or ".")
    if _is_maildir(path):
        target = given if in_place else (None if dry else str(base))
        yield Job(given, target, given, maildir=True, in_place=in_place, root=request.root, tree=given, dry=dry)
        return
    others = request.copy_others and not in_place and not dry
    walked = _walk(
        path,
        request.include,
        request.exclude,
        request.skip,
        others=others,
        follow=not in_place,
        whole=request.whole,
        untold=request.untold,
    )
    # Whether an output is its input is asked of their folders, once each pair: two names of
    # one folder hold one file (a folder rewritten into itself, through a link or a mount);
    # two folders apart hold two, a hard link aside, whose entry the rename replaces.
    same_folders: dict[tuple[str, str], bool] = {}
    for job in _walked_jobs(walked, given, base, in_place=in_place, root=request.root, dry=dry, others=others):
        itself = False
        if not job.in_place and job.target is not None:
            folders = (os.path.dirname(job.target), os.path.dirname(job.source))
            itself = same_folders.get(folders)  # type: ignore[assignment]
            if itself is None:
                itself = same_folders[folders] = same_file(*folders)
            itself = itself and same_file(job.target, job.source)
        yield from _checked(job, request, itself)


def _file_jobs(given: str, path: Path, request: _Request) -> Iterator[Job | str]:
    """A file named on the command line: its job, told here once what it is (a named pipe is
    told by its job, from what it reads)."""
    in_place, output = request.in_place, request.output
    if in_place and path.is_symlink():
        yield Problem("input", "a symbolic link is not rewritten in place (name its target)", (given,))
        return
    if in_place and not path.is_file():
        # Replacing a named pipe or a device with a regular file would break whatever uses it.
        yield Problem("input", f"{kind_of(path.stat().st_mode)}, not a regular file: not rewritten in place", (given,))
        return
    kinds = request.kinds
    kind = kinds[given] if kinds is not None and given in kinds else _kind_of_named(given)
    told = Job(given, None, given, tree=os.path.dirname(given) or ".")  # a file alone: its folder is its collection
    if kind is not None:
        told = replace(told, format=kind.format, why=kind.reason)
    if in_place:
        told = replace(told, target=given, in_place=True)
    elif request.to_stdout or request.dry or output is None:
        told = replace(told, dry=request.dry)
    elif request.folder_output:
        told = replace(told, target=str(Path(output) / path.name), root=request.root)
    else:
        told = replace(told, target=output)
    yield from _checked(told, request)


def _checked(job: Job, request: _Request, itself: bool | None = None) -> Iterator[Job | str]:
    """*job* as it is, or its pieces, or why it cannot be: -o naming an input would change it
    without --in-place, and is refused, file by file (*itself*: whether it does, when the
    caller knows)."""
    if itself is None:
        itself = not job.in_place and job.target is not None and job.source != "-" and same_file(job.target, job.source)
    if itself:
        yield Problem("output", "the output is the input itself; use --in-place to rewrite it", (job.shown,))
    elif request.piece_size is not None and not job.copy and not job.maildir and job.source != "-":
        yield from _split(job, request.piece_size, request.max_message)
    else:
        yield job


def _walked_jobs(
    walked: Iterable[Walked],
    given: str,
    base: Path,
    *,
    in_place: bool,
    root: str | None,
    dry: bool,
    others: bool = False,
) -> Iterator[Job]:
    """The jobs of a folder *given*'s walk: each document (or Maildir) and, to be copied, each
    other file; in place, no link (its target, when in the tree, is rewritten as itself) and
    no web archive (it records what was fetched)."""
    folder = os.fspath(base)
    for found, relative, what, read in walked:
        kind = None if read is None else read.kind
        if in_place and (os.path.islink(found) or (kind is not None and kind.format in ("warc", "arc"))):
            continue
        target = found if in_place else (None if dry else os.path.join(folder, _archive_name(relative)))
        yield Job(
            found,
            target,
            found,
            maildir=what == "maildir",
            in_place=in_place,
            root=given if in_place else root,
            tree=given,
            copy=what == "other",
            dry=dry,
            format=None if kind is None else kind.format,
            why=None if kind is None else kind.reason,
            data=None if read is None else read.data,
            status=None if read is None or read.data is None else read.status,
            size=None if read is None or read.status is None else read.status.st_size,
            untold=None if read is None or read.kind is not None else "copy" if others else "pass",
        )


def _archive_pieces(job: Job, archive: str, piece_size: int) -> Iterator[Job]:
    """A large WARC or ARC file's jobs: a piece each (a run in place refuses it whole)."""
    if job.in_place:
        yield job
        return
    from rewriter.containers.warc import plan_warc

    for piece in plan_warc(job.source, piece_size=piece_size):
        yield replace(job, piece=piece)


def _archive_name(relative: str) -> str:
    """An output's path under its folder: an ARC file's becomes a WARC's, which it is then
    (``crawl.arc.gz`` is written as ``crawl.warc.gz``)."""
    folded = relative.lower()
    for old, new in ((".arc.gz", ".warc.gz"), (".arc", ".warc")):
        if folded.endswith(old):
            return relative[: -len(old)] + new
    return relative


def _split(job: Job, piece_size: int, max_message: int | None) -> Iterator[Job | str]:
    """*job*, or its pieces when it is a large mbox or web archive (each with the format the
    planner told). Only a file written to a file, or only read, is split."""
    if (job.target is None and not job.dry) or job.format not in ("mbox", "warc", "arc"):
        yield job  # standard output: streamed in one job, as it is read; the others are whole
        return
    try:
        status = os.stat(job.source)
    except OSError:
        yield job  # the job says why it cannot be read
        return
    if not stat.S_ISREG(status.st_mode) or status.st_size < piece_size:
        yield job
        return
    if job.format in ("warc", "arc"):
        yield from _archive_pieces(job, job.format, piece_size)
        return
    from rewriter.containers.mailbox import MAX_MESSAGE, plan_mbox

    limit = MAX_MESSAGE if max_message is None else min(max_message, MAX_MESSAGE)
    try:
        with open(job.source, "rb") as stream:
            for piece in plan_mbox(stream, piece_size=piece_size, max_message=limit):
                yield replace(job, piece=piece, status=status if job.in_place else None, data=None)
    except OSError as error:
        yield Problem("input", f"{error.strerror or error}", (job.shown,))
