"""Batch runs: many files, folders, mboxes and Maildirs, in parallel, with atomic writes.

A run is planned first, as a list of :class:`Job` (one input, one output), then each job
is done by :func:`run_job`, in this process or in worker processes: the outcomes come
back in the order of the plan whatever the number of workers, so outputs and reports
are the same for ``-j 1`` and ``-j 8``.

Every file is written through a temporary file in the same folder (fsync, rename, then
fsync of the folder; :mod:`rewriter.disk.files`): a reader, a crash or a ``kill -9`` sees the
old content or the new, never a mix. A failure in one job is reported in its :class:`Outcome`; the
others go on.

In place, only regular files are rewritten (a named pipe or a device is refused, never
replaced), and a file that another process changed, replaced or removed while it was being
rewritten is left as it is and reported. Under ``-o DIR`` (and in a folder rewritten in
place), folders are made and opened one level at a time and no symbolic link inside the
tree is followed. A temporary name holds at most 64 bytes of its file's name, so that a
file whose name has the file system's largest length (255 bytes) can be rewritten too.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "page.html").write_bytes(b"<!-- saved from url=(0019)http://example.org/ --><a href=x>x</a>")
>>> jobs, problems = plan([str(folder)], in_place=True)
>>> [outcome.state for outcome in run(jobs, Settings())]
['rewritten']
>>> (folder / "page.html").read_bytes()[-34:]
b'<a href=http://example.org/x>x</a>'
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import gc
import glob
import os
import shutil
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from rewriter.containers.formats import SNIFF_SIZE, Kind, kind_of_path, what_file_is
from rewriter.containers.pieces import Piece
from rewriter.disk.files import (
    O_CLOEXEC,
    O_NOFOLLOW,
    CommitGroup,
    Folder,
    Refused,
    Replacement,
    commit_group,
    committing,
    folder_syncs_deferred,
    is_temporary,
    kind_of,
    mode_of,
    replacing,
    write_atomically,
)
from rewriter.document.model import DocumentResult
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.run.journal import is_work_folder, piece_path

if TYPE_CHECKING:
    from rewriter.containers.mailbox import MboxOptions, MboxReport
    from rewriter.containers.warc import MirrorPlan
    from rewriter.document.model import Link, MessageResult, Status
    from rewriter.run.collection import LocalCopies, Locations
    from rewriter.url.base import Layer

__all__ = [
    "Job",
    "Outcome",
    "Settings",
    "Unrecognised",
    "count_into",
    "job_settings",
    "kinds_of",
    "located_links",
    "plan",
    "process",
    "run",
    "run_job",
    "tally",
    "totals",
    "write_atomically",
]

State = Literal["rewritten", "unchanged", "failed", "copied"]


class Unrecognised(ValueError):
    """The input is neither HTML, CSS, a MIME message nor an mbox."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every job of a run shares (immutable, and sent to each worker once)."""

    policy: Policy = DEFAULT_POLICY
    url: str | None = None  # the retrieval URL (RFC 1808 §3.3)
    charset: str | None = None  # a transport charset
    format: str = "auto"  # auto, html, css, message, mbox
    backup: str | None = None  # in place: keep the old file as NAME + this suffix
    records: bool = False  # gather every link for a report
    # A document larger than this is not held in memory: it is copied unchanged and reported
    # (an mbox is streamed whatever its size; each of its messages has this limit too).
    max_size: int = 1 << 30
    # Each file's own retrieval URL (--url-root, --url-map), asked before *url*.
    locations: Locations | None = None
    # Keep a page's relative references to files of its input folder as written (status
    # "local"); False: --absolutize-local.
    local_copies: bool = True
    # One document's local copies (set per job by job_settings, for HTML and CSS).
    local: LocalCopies | None = None
    # *url* is a collection's (--url-root, --url-map): a page's saved-from mark wins over it, as
    # its <base> does (the mark says where this very page came from; the layout only suggests it).
    url_from_collection: bool = False
    # Gather each document's or part's base and counts (rows of ``rewriter explain``).
    explain: bool = False
    # The records go back as JSON Lines text (Outcome.report), made in the worker: the
    # caller only writes them (--report), holding no dict of them.
    report_text: bool = False
    # The run's work folder (rewriter.run.journal), where a piece of a container writes its output.
    work: str | None = None
    # Each message of an mbox as a record of its own (Outcome.units: rewriter.run.dask).
    units: bool = False
    # fsync each file written (and its folder after the rename), so that it survives a crash
    # of the system; False: --no-fsync (still atomic for readers and for a killed run).
    sync: bool = True


@dataclass(frozen=True, slots=True)
class Job:
    """One input and where its output goes.

    *source* is a path or ``-`` (standard input); *target* a path (the source itself
    in place) or None for standard output; *shown* is how messages name it.
    """

    source: str
    target: str | None
    shown: str
    maildir: bool = False
    in_place: bool = False  # --in-place: the target is the source, replaced only when it changes
    # The folder of the tree the target lies in (-o DIR, or the folder rewritten in place): no
    # symbolic link below it is followed when the target's folders are made and opened.
    root: str | None = None
    # The input folder the source was found in (a file named alone: its own folder): the
    # collection its retrieval URL and its local copies are told from. None for stdin.
    tree: str | None = None
    # Nothing is written: each document is read and its links found (``links``, ``explain``),
    # through the same steps as a rewrite. A WARC's pages are read too.
    dry: bool = False
    # A file of a folder that is not rewritten, copied unchanged into the output folder.
    copy: bool = False
    # What the file is (rewriter.containers.formats.what_file_is: html, css, message, mbox,
    # warc, arc or other), told once by the planner from its head, and why; None: told by the
    # job from the stream it reads (standard input, a named pipe, a file the planner could
    # not read, which the job then names).
    format: str | None = None
    why: str | None = None
    # A piece of a large container (its bytes [start, end)), done as a job of its own.
    piece: Piece | None = None
    # In place, for a container done in pieces: the input's status when it was planned; a
    # file changed since is left as it is.
    status: os.stat_result | None = None
    # A WARC (or ARC) whose records go to files in the folder *target* (a mirror, its pages
    # rewritten), not into a WARC: each piece writes its records by the plan of the whole file,
    # kept in the work folder (:func:`mirror_plan_path`; rewriter.run.pipeline.MirrorFolder).
    mirror: bool = False


@dataclass(slots=True)
class Outcome:
    """What happened to one job: its messages for standard error, its counts, its links."""

    shown: str
    state: State = "unchanged"
    ok: bool = True  # False: something failed, or links stayed relative
    messages: list[str] = field(default_factory=list)  # what went wrong: always said
    warnings: list[str] = field(default_factory=list)  # what the engines left as it was, and why: not with -q
    rewritten: int = 0  # links made absolute
    kept: int = 0  # links left as they were on purpose (absolute, same-document, local, part)
    local: int = 0  # of those kept: local copies (status "local")
    relative: int = 0  # links left relative: no base, or unresolvable
    no_base: int = 0  # of those: for want of a base
    bytes_in: int = 0
    bytes_out: int = 0
    records: list[dict[str, object]] = field(default_factory=list)
    output: bytes | None = None  # the output, for a job whose target is standard output
    details: list[str] = field(default_factory=list)  # each link left relative, for -v
    format: str | None = None  # what the input was: html, css, message, mbox, maildir, warc, arc, other
    rows: list[dict[str, object]] = field(default_factory=list)  # explain: each document or part
    report: str = ""  # the records as JSON Lines (Settings.report_text)
    # ... or, when they are many, the file in the run's work folder that holds them (so that
    # neither the executor's pipes nor the caller's memory carry them)
    report_file: str | None = None
    # What a resumed run must find at the source to take this outcome as done: (size,
    # modification time) of the input read, or in place of the file written.
    identity: tuple[int, int] | None = None
    retried: str | None = None  # why the job was done a second time (its worker died)
    resumed: bool = False  # taken from the journal of a run that was stopped
    piece: Piece | None = None  # the piece of a container this outcome is of
    units: list[dict[str, object]] = field(default_factory=list)  # each message's report (Settings.units)

    def weight(self) -> int:
        """About how many bytes this outcome holds (records, messages, output)."""
        return (
            len(self.report)
            + sum(len(line) for line in self.details)
            + 200 * (len(self.records) + len(self.rows) + len(self.messages) + len(self.warnings))
            + len(self.output or b"")
            + 200
        )

    def fail(self, message: str) -> Outcome:
        self.state, self.ok = "failed", False
        self.messages.append(f"rewriter: {self.shown}: {message}")
        return self

    def left_relative(self) -> str | None:
        """The one line that says how many links of this file stayed relative, and why
        (None when none did); each of them is in :attr:`details`.

        >>> print(Outcome("page.html", relative=3, no_base=2).left_relative())  # doctest: +NORMALIZE_WHITESPACE
        rewriter: page.html: 3 links left relative: 2 with no base (give --url, --url-root or --canonical-base),
        1 unresolvable (see -v or --report)
        """
        if not self.relative:
            return None
        unresolvable = self.relative - self.no_base
        why = []
        if self.no_base:
            count = f"{self.no_base:,} with " if unresolvable else ""
            why.append(f"{count}no base (give --url, --url-root or --canonical-base)")
        if unresolvable:
            count = f"{unresolvable:,} " if self.no_base else ""
            why.append(f"{count}unresolvable (see -v or --report)")
        plural = "" if self.relative == 1 else "s"
        return f"rewriter: {self.shown}: {self.relative:,} link{plural} left relative: {', '.join(why)}"


# --------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------


def _matches(relative: str, patterns: Sequence[str]) -> bool:
    """A glob matches the path under the walked folder, or the file name alone; the
    extension (after the last "." of the last segment) without regard to case, on either
    side, so that ``*.htm`` takes ``INDEX.HTM`` (folder and file names keep their case).

    >>> [_matches(name, ["*.htm", "Drafts/*.CSS"]) for name in ("INDEX.HTM", "a/b.Htm", "Drafts/x.css", "drafts/x.css")]
    [True, True, True, False]
    """
    name = relative.rsplit("/", 1)[-1]
    folded_relative, folded_name = _extension_folded(relative), _extension_folded(name)
    for pattern in patterns:
        folded = _extension_folded(pattern)
        if (
            fnmatch.fnmatchcase(relative, pattern)
            or fnmatch.fnmatchcase(name, pattern)
            or fnmatch.fnmatchcase(folded_relative, folded)
            or fnmatch.fnmatchcase(folded_name, folded)
        ):
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


def _walk(
    root: Path, include: Sequence[str], exclude: Sequence[str], skip: Path | None, *, others: bool = False
) -> Iterator[tuple[str, str, Found, Kind | None]]:
    """(path, its path under *root* with "/" between names, what it is, what its content is)
    for each input under *root*, sorted, symbolic links not followed.

    Every regular file that *include* takes (all, when it is empty) is read for what it is
    (:func:`~rewriter.containers.formats.what_file_is`, from its head): a document whatever
    its name (wget keeps ``view.php?id=2``), ``other`` when it is none. A Maildir found on
    the way is one input (its message files have no suffix to match). *skip* is the output
    folder, when it lies inside *root*. With *others*, the regular files that are no document,
    or that --include does not take, come too (to be copied); what --exclude names never.
    Read with os.scandir, whose entries say what each is: a regular file costs no stat call.
    A folder that cannot be read is passed over, as os.walk does.
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
            if _matches(relative, exclude) or is_work_folder(entry.name):
                continue  # a run's journal and pieces (rewriter.run.journal) are never an input
            if _is_maildir(Path(entry.path)):
                yield entry.path, relative, "maildir", None
                continue
            kept.append((entry.path, relative + "/"))
        for entry in files:
            found = _walked_file(entry, prefix, root, include, exclude)
            if found is not None and (found[2] == "input" or others):
                yield found
        pending.extend(reversed(kept))  # depth first, in order, as os.walk goes


def _walked_file(
    entry: os.DirEntry[str], prefix: str, root: Path, include: Sequence[str], exclude: Sequence[str]
) -> tuple[str, str, Found, Kind | None] | None:
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
    if _matches(relative, exclude):
        return None
    if include and not _matches(relative, include):
        return entry.path, relative, "other", None
    kind = _kind(entry.path)
    if kind is None or kind.document:  # unreadable: its job says why
        return entry.path, relative, "input", kind
    return entry.path, relative, "other", kind


def kinds_of(names: Iterable[str]) -> dict[str, Kind | None]:
    """What each file named on a command line is (:func:`iter_plan`'s decision, made once, for
    a caller that must know it before the plan: the web archives the command line mirrors);
    None for standard input, a folder, a named pipe and a file that cannot be read."""
    return {name: _kind_of_named(name) for name in names}


def _kind_of_named(name: str) -> Kind | None:
    return _kind(name) if name != "-" and os.path.isfile(name) else None


def _kind(path: str) -> Kind | None:
    """What the regular file *path* is, from its head (read once, here); None when it
    cannot be read (the job that reads it then says why)."""
    try:
        return kind_of_path(path)
    except OSError:
        return None


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """What os.walk calls a folder: one, or a link to one."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _same_file(source: str, target: str) -> bool:
    """Whether *target* is the file *source* (the target first: most do not exist yet)."""
    try:
        return os.path.samestat(os.stat(target), os.stat(source))
    except OSError:
        return False  # the target does not exist yet


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
    """
    include = tuple(include)
    if in_place and backup:  # a page's backup holds a page too: the next run would rewrite it
        exclude = (*exclude, "*" + glob.escape(backup))
    if len(inputs) > 1 and not in_place and output in (None, "-") and not dry:
        yield "rewriter: several inputs need -o DIR (a folder for the outputs) or --in-place"
        return
    # -o names a folder when it ends in "/", is one already, or takes several inputs.
    folder_output = (
        output is not None
        and output != "-"
        and (len(inputs) > 1 or output.endswith(("/", os.sep)) or Path(output).is_dir())
    )
    several_trees = len(inputs) > 1
    skip = _resolved(Path(output)) if output not in (None, "-") else None
    root = output if output not in (None, "-") else None  # the output tree, when there is one

    def checked(job: Job) -> Iterator[Job | str]:
        # -o naming an input would change it without --in-place: refused, file by file.
        if not job.in_place and job.target is not None and job.source != "-" and _same_file(job.source, job.target):
            yield f"rewriter: {job.shown}: the output is the input itself; use --in-place to rewrite it"
        elif piece_size is not None and not job.copy and not job.maildir and job.source != "-":
            yield from _split(job, piece_size, max_message)
        else:
            yield job

    for given in inputs:
        if given == "-":
            if in_place:
                yield "rewriter: <stdin>: cannot be rewritten in place"
                continue
            target = None if output in (None, "-") else (str(Path(output) / "stdin") if folder_output else output)
            yield Job("-", target, "<stdin>", root=root if folder_output else None, dry=dry)
            continue
        path = Path(given)
        if not path.exists() and not path.is_symlink():
            yield f"rewriter: {given}: no such file or folder"
            continue
        if path.is_dir():
            if not in_place and output in (None, "-") and not dry:
                yield f"rewriter: {given}: a folder needs -o DIR or --in-place"
                continue
            base = Path(output) / _resolved(path).name if several_trees and output else Path(output or ".")
            if _is_maildir(path):
                target = given if in_place else (None if dry else str(base))
                yield Job(given, target, given, maildir=True, in_place=in_place, root=root, tree=given, dry=dry)
                continue
            walked = _walk(path, include, exclude, skip, others=copy_others and not in_place and not dry)
            for job in _walked_jobs(walked, given, base, in_place=in_place, root=root, dry=dry):
                yield from checked(job)
            continue
        alone = os.path.dirname(given) or "."  # a file named alone: its folder is its collection
        if in_place and path.is_symlink():
            yield f"rewriter: {given}: a symbolic link is not rewritten in place (name its target)"
        elif in_place and not path.is_file():
            # Replacing a named pipe or a device with a regular file would break whatever uses it.
            yield f"rewriter: {given}: {kind_of(path.stat().st_mode)}, not a regular file: not rewritten in place"
        else:
            # What it is, told here once (a named pipe is told by its job, from what it reads).
            kind = kinds[given] if kinds is not None and given in kinds else _kind_of_named(given)
            told = Job(given, None, given, tree=alone)
            if kind is not None:
                told = replace(told, format=kind.format, why=kind.reason)
            if in_place:
                told = replace(told, target=given, in_place=True)
            elif output in (None, "-") or dry:
                told = replace(told, dry=dry)
            elif folder_output:
                told = replace(told, target=str(Path(output) / path.name), root=root)
            else:
                told = replace(told, target=output)
            yield from checked(told)


def _walked_jobs(
    walked: Iterable[tuple[str, str, Found, Kind | None]],
    given: str,
    base: Path,
    *,
    in_place: bool,
    root: str | None,
    dry: bool,
) -> Iterator[Job]:
    """The jobs of a folder *given*'s walk: each document (or Maildir) and, to be copied, each
    other file; in place, no link (its target, when in the tree, is rewritten as itself) and
    no web archive (it records what was fetched)."""
    for found, relative, what, kind in walked:
        if in_place and (os.path.islink(found) or (kind is not None and kind.format in ("warc", "arc"))):
            continue
        target = found if in_place else (None if dry else str(base / _archive_name(relative)))
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
                yield replace(job, piece=piece, status=status if job.in_place else None)
    except OSError as error:
        yield f"rewriter: {job.shown}: {error.strerror or error}"


# --------------------------------------------------------------------------
# One document
# --------------------------------------------------------------------------


def process(
    data: bytes, name: str, settings: Settings, *, rewrite: bool = True, format: str | None = None
) -> tuple[str, DocumentResult | MessageResult]:
    """Run the engine *data*'s format needs (*format* when it is told already, else told by
    the content, *name* only breaking ties; the engine from :mod:`rewriter.document.engines`):
    (format, result). Raises :class:`Unrecognised` for what is none of them, and the
    engine's :class:`~rewriter.document.model.NoBaseError` when the policy requires a base."""
    from rewriter.document.engines import engine

    fmt = format or (settings.format if settings.format != "auto" else what_file_is(data[:SNIFF_SIZE], name).format)
    if fmt not in ("html", "css", "message", "mbox"):
        raise Unrecognised("neither HTML, CSS, a MIME message nor an mbox (it looks like binary data)")
    policy = settings.policy
    found = engine(fmt).run(rewrite=rewrite)
    if settings.url_from_collection:  # --url-root/--url-map: a saved-from mark knows better (url.base.PRECEDENCE)
        policy = policy.clone(url_guessed=True)
    if fmt in ("message", "mbox"):  # a message: its own headings give each part's base
        return fmt, found(data, url=settings.url, policy=policy)
    if settings.local is not None:  # a page's copies on disk; never a message's
        policy = policy.with_keep(settings.local)
    return fmt, found(data, url=settings.url, charset=settings.charset, policy=policy)


def job_key(job: Job, *, whole: bool = False) -> str:
    """What names *job* in a journal: its input and output, and for a piece its first byte
    (*whole*: the container's, without the piece)."""
    key = f"{job.source}\0{job.target}\0{'dry' if job.dry else 'write'}"
    if job.piece is not None and not whole:
        key += f"\0{job.piece.start}"
    return key


_OUTCOME_FIELDS = (
    "shown",
    "state",
    "ok",
    "messages",
    "warnings",
    "rewritten",
    "kept",
    "local",
    "relative",
    "no_base",
    "bytes_in",
    "bytes_out",
    "records",
    "details",
    "format",
    "rows",
    "report",
    "report_file",
    "retried",
)


def outcome_json(outcome: Outcome) -> dict[str, object]:
    """*outcome* as plain JSON values, for the journal (its standard-output bytes aside): the
    fields that are not their default, which :func:`outcome_from_json` gives back (a page's
    line is a third as long, and a third of the time to write)."""
    value: dict[str, object] = {"shown": outcome.shown}
    for name, default in _OUTCOME_DEFAULTS:
        field_value = getattr(outcome, name)
        if field_value != default:
            value[name] = field_value
    if outcome.identity is not None:
        value["identity"] = list(outcome.identity)
    piece = outcome.piece
    if piece is not None:
        value["piece"] = [piece.start, piece.end, piece.first, piece.number, piece.last]
    return value


_OUTCOME_DEFAULTS = tuple((name, getattr(Outcome("x"), name)) for name in _OUTCOME_FIELDS if name != "shown")


_OUTCOME_TYPES: dict[str, type] = {
    "shown": str,
    "state": str,
    "ok": bool,
    "messages": list,
    "warnings": list,
    "details": list,
    "records": list,
    "rows": list,
    "report": str,
    "format": str,
    "report_file": str,
    "retried": str,
}
_STATES = frozenset(("rewritten", "unchanged", "failed", "copied"))
_COUNTS = ("rewritten", "kept", "local", "relative", "no_base", "bytes_in", "bytes_out")
_LARGEST = 1 << 63  # counts and sizes are 64-bit integers


def outcome_problem(value: dict[str, object], report_file: Path, *, piece: bool) -> str | None:
    """Why *value*, an outcome read back from a journal, is not one :func:`outcome_json` writes
    (each field checked: its type, its range, no field but theirs); None when it is one. The
    one file it may name is *report_file*, the work folder's for its job; *piece*: whether
    its job is a piece of a container."""
    known = {*_OUTCOME_FIELDS, "identity", "piece"}
    if "shown" not in value:
        return "its outcome has no shown"
    for name, field_value in value.items():
        if name not in known:
            return f"its outcome has an unknown field {name[:40]!r}"
        if name in _COUNTS:
            if type(field_value) is not int or not 0 <= field_value < _LARGEST:
                return f"its outcome's {name} is not a count"
            continue
        if name in ("identity", "piece"):
            size = 2 if name == "identity" else 5
            if (
                not isinstance(field_value, list)
                or len(field_value) != size
                or not all(type(item) is int and -_LARGEST <= item < _LARGEST for item in field_value[:4])
                or (name == "piece" and type(field_value[4]) is not bool)
            ):
                return f"its outcome's {name} is not {size} integers"
            continue
        if not isinstance(field_value, _OUTCOME_TYPES[name]) or (name != "ok" and type(field_value) is bool):
            return f"its outcome's {name} is not a {_OUTCOME_TYPES[name].__name__}"
        if name in ("messages", "warnings", "details") and not all(isinstance(item, str) for item in field_value):  # type: ignore[attr-defined]
            return f"its outcome's {name} are not all text"
        if name in ("records", "rows") and not all(isinstance(item, dict) for item in field_value):  # type: ignore[attr-defined]
            return f"its outcome's {name} are not all objects"
    if value.get("state", "unchanged") not in _STATES:
        return "its outcome's state is not one a run gives"
    if "report_file" in value and value["report_file"] != str(report_file):
        return f"its outcome names a file that is not this run's report of the job ({value['report_file']!r})"
    if "piece" in value and not piece:
        return "its outcome is of a piece, and its job is not"
    return None


def outcome_from_json(value: dict[str, object]) -> Outcome:
    """The :class:`Outcome` :func:`outcome_json` wrote."""
    outcome = Outcome(str(value["shown"]))
    for name in _OUTCOME_FIELDS:
        if name in value:
            setattr(outcome, name, value[name])
    identity = value.get("identity")
    if isinstance(identity, list) and len(identity) == 2:
        outcome.identity = (int(identity[0]), int(identity[1]))
    piece = value.get("piece")
    if isinstance(piece, list) and len(piece) == 5:
        outcome.piece = Piece(int(piece[0]), int(piece[1]), int(piece[2]), int(piece[3]), bool(piece[4]))
    return outcome


REPORT_INLINE = 256 << 10  # a job's report lines above this go to the work folder, not through the pipes


def run_batch(jobs: Sequence[Job], settings: Settings) -> list[Outcome]:
    """Do each job of a batch (:func:`run_job`); with ``report_text``, each outcome's records
    become JSON Lines text here, in the worker, and when they are many (a piece of a large
    mbox holds millions of links) a file in the run's work folder.

    Every outcome it returns is of files that survive a crash. The pages it writes to an
    output folder are one :class:`~rewriter.disk.files.CommitGroup`, made durable and put in
    place together when the batch ends (where the system allows; a page that cannot be is
    failed then, and left as it was); the folders of its other writes are fsynced once each,
    at the end too (:func:`~rewriter.disk.files.folder_syncs_deferred`)."""
    outcomes: list[Outcome] = []
    group = CommitGroup.create() if settings.sync and len(jobs) > 1 else None
    with folder_syncs_deferred(), committing(group):
        try:
            for job in jobs:
                if group is not None:
                    group.key = len(outcomes)  # the outcome a page it writes belongs to
                outcome = run_job(job, settings)
                if settings.report_text and outcome.records:
                    from rewriter.run.report import json_lines

                    outcome.report = json_lines(outcome.records)
                    outcome.records = []
                    if settings.work is not None and len(outcome.report) > REPORT_INLINE:
                        _report_aside(job, outcome, settings.work, sync=settings.sync)
                outcomes.append(outcome)
        except BaseException:
            if group is not None:
                group.discard()
            raise
        if group is not None:
            for index, reason in group.commit().items():
                assert isinstance(index, int)
                outcomes[index].fail(reason)
    return outcomes


def _report_aside(job: Job, outcome: Outcome, work: str, *, sync: bool = True) -> None:
    """Put *outcome*'s report lines in a file of the work folder (atomically), named by the job."""
    from rewriter.run.journal import report_path

    path = report_path(Path(work), job_key(job))
    try:  # no symbolic link followed from the folder the work folder lies in
        data = outcome.report.encode("utf-8", "surrogateescape")
        write_atomically(path, data, root=Path(work).parent, sync=sync)
    except OSError:
        return  # kept in the outcome: slower, never lost
    outcome.report, outcome.report_file = "", str(path)


def job_settings(job: Job, settings: Settings) -> Settings:
    """*settings* for one job: its own retrieval URL (from the collection's locations, else
    the run's --url) and, for a file in a folder, its local copies."""
    if job.source == "-" or job.tree is None:
        return settings
    from rewriter.run.collection import LocalCopies

    url, own = settings.url, None
    if settings.locations is not None:
        own = settings.locations.url_of(job.source, job.tree)
    local = LocalCopies(job.source, job.tree, settings.locations) if settings.local_copies else None
    return replace(settings, url=own or url, local=local, url_from_collection=own is not None)


def located_links(result: DocumentResult | MessageResult, *statuses: Status) -> list[tuple[str, Link]]:
    """(where, link) for every link of *result* (with *statuses*: those that have one of
    them, whose byte spans alone are worked out): the part path for a message, "" for a document."""
    if isinstance(result, DocumentResult):
        return [("", link) for link in (result.links_with(*statuses) if statuses else result.links)]
    parts = result.parts
    return [(part.path, link) for part in parts for link in (part.links_with(*statuses) if statuses else part.links)]


_RELATIVE: tuple[Status, ...] = ("no-base", "unresolvable")  # links left relative


def tally(
    outcome: Outcome,
    result: DocumentResult | MessageResult,
    settings: Settings,
    extra: dict[str, object],
    problems: Sequence[str] | None = None,
    *,
    fmt: str = "html",
) -> None:
    """Count *result*'s links into *outcome*, name each problem (*problems*, else the
    result's) and each link left relative, and keep every link as a record (and each
    document's or part's row, for explain) when the settings ask for them. *fmt*: what
    the document is (html, css, message)."""
    message = not isinstance(result, DocumentResult)
    if settings.explain:
        outcome.rows.extend(_rows(result, fmt, extra))
    where = "".join(f"{key} {value}: " for key, value in extra.items())
    for problem in result.problems if problems is None else problems:
        outcome.warnings.append(f"rewriter: {outcome.shown}: {where}{problem}")
    counts: Counter[str] = Counter()
    for counted in (result,) if isinstance(result, DocumentResult) else result.parts:
        counts.update(counted.status_counts)
    outcome.rewritten += counts["rewritten"]
    relative = sum(counts[status] for status in _RELATIVE)
    outcome.relative += relative
    outcome.no_base += counts["no-base"]
    outcome.kept += counts.total() - counts["rewritten"] - relative
    outcome.local += counts["local"]
    every = located_links(result) if settings.records else None  # all their spans, once
    if relative:
        outcome.ok = False
        left = (
            located_links(result, *_RELATIVE)
            if every is None
            else [(part, link) for part, link in every if link.status in _RELATIVE]
        )
        for part, link in left:
            label = f"part {part}: " if part else ""
            outcome.details.append(
                f"rewriter: {outcome.shown}: {where}{label}<{link.element} {link.attribute}> {link.original!r} at "
                f"bytes {link.start}-{link.end}: {link.status}: {link.reason}"
            )
    if every is not None:
        for part, link in every:
            record: dict[str, object] = {"file": outcome.shown, **extra}
            if message:
                record["part"] = part
            record.update(link._asdict())
            outcome.records.append(record)


def _rows(result: DocumentResult | MessageResult, fmt: str, extra: dict[str, object]) -> list[dict[str, object]]:
    """``explain``'s rows: for each MIME part (or the one document) its type, what was done,
    its base, the layer that gave it (and the part whose heading did), and its link counts."""
    entries: list[tuple[str, str, str | None, Layer | None, str | None, tuple[Link, ...], str]]
    if isinstance(result, DocumentResult):
        kind = "text/css" if fmt == "css" else "text/html"
        entries = [("", kind, result.base, result.layer, None, result.links, "document")]
    else:
        entries = [(p.path, p.content_type, p.base, p.layer, p.origin, p.links, p.action) for p in result.parts]
    rows: list[dict[str, object]] = []
    for path, kind, base, layer, origin, links, action in entries:
        counts = Counter(link.status for link in links)
        relative = sum(counts[status] for status in _RELATIVE)
        rows.append(
            {
                **extra,
                "path": path,
                "type": kind,
                "action": action,
                "base": base,
                "layer": layer,
                "origin": origin,
                "links": len(links),
                "rewritten": counts["rewritten"] + counts["relinked"],
                "kept": len(links) - counts["rewritten"] - counts["relinked"] - relative,
                "relative": relative,
            }
        )
    return rows


# --------------------------------------------------------------------------
# Writing (files through rewriter.disk.files: atomic replace, folders walked without links)
# --------------------------------------------------------------------------


def _standard_output() -> BinaryIO:
    """Standard output's bytes, after what its text layer holds (one input: the main process)."""
    if sys.stdout is None:
        raise OSError(errno.EBADF, "standard output is closed")
    sys.stdout.flush()
    return sys.stdout.buffer


# --------------------------------------------------------------------------
# Jobs
# --------------------------------------------------------------------------


def run_job(job: Job, settings: Settings) -> Outcome:
    """Do one job; every failure is in the outcome, never raised."""
    outcome = Outcome(job.shown, piece=job.piece)
    try:
        if job.copy:
            return _copy(job, outcome, sync=settings.sync)
        settings = job_settings(job, settings)
        if job.mirror:
            return _warc_folder(job, settings, outcome)
        if job.maildir:
            return _maildir(job, settings, outcome)
        if job.piece is not None and job.format in ("warc", "arc"):
            return _warc(job, settings, outcome, job.format)
        if job.piece is not None:
            return _piece(job, settings, outcome)
        if job.format in ("warc", "arc"):
            return _warc(job, settings, outcome, job.format)
        return _file(job, settings, outcome)
    except Refused as error:  # its message says it all
        return outcome.fail(str(error))
    except OSError as error:
        named = error.filename not in (None, job.source, job.shown)
        return outcome.fail(f"{error.strerror or error}" + (f": {error.filename}" if named else ""))
    except Exception as error:  # a bug in an engine: this job fails, the others go on
        return outcome.fail(f"not rewritten: internal error: {type(error).__name__}: {error}")


class _Replayed:
    """A stream read once: its first bytes (already read, to tell its format) and then
    the rest, so that pipes and standard input are read a single time."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head, self.rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return self.rest.read(size)
        if size < 0:
            data, self.head = self.head + self.rest.read(), b""
            return data
        data, self.head = self.head[:size], self.head[size:]
        return data


@contextlib.contextmanager
def _opened(job: Job) -> Iterator[tuple[BinaryIO, os.stat_result | None]]:
    """The job's input, and in place its status when opened (to tell, before the rename,
    whether another process changed it meanwhile)."""
    if job.source == "-":
        if sys.stdin is None:
            raise OSError(errno.EBADF, "standard input is closed")
        yield sys.stdin.buffer, None
        return
    if not job.in_place:  # a named pipe may be read (<(command)); it is never replaced
        with open(job.source, "rb") as stream:
            yield stream, None
        return
    # In place: only a regular file, never through a link. O_NONBLOCK: opening a named pipe
    # does not wait for a writer, so that it can be refused.
    nonblocking = getattr(os, "O_NONBLOCK", 0)
    try:
        handle = os.open(job.source, os.O_RDONLY | nonblocking | O_NOFOLLOW | O_CLOEXEC | getattr(os, "O_BINARY", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise Refused("a symbolic link is not rewritten in place (name its target)") from None
        raise
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise Refused(f"{kind_of(status.st_mode)}, not a regular file: not rewritten in place")
        if nonblocking:
            os.set_blocking(handle, True)
        stream = os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise
    with stream:
        yield stream, status


def _file(job: Job, settings: Settings, outcome: Outcome) -> Outcome:
    from rewriter.document.model import NoBaseError

    source = None if job.source == "-" else Path(job.source)
    with _opened(job) as (stream, read):
        size = None  # a regular file's size, as fstat gives it
        mode = None  # and its permissions, for its copy
        if source is not None:
            status = read or os.fstat(stream.fileno())
            outcome.identity = (status.st_size, status.st_mtime_ns)
            if stat.S_ISREG(status.st_mode):
                size, mode = status.st_size, stat.S_IMODE(status.st_mode)
        head, fmt, why = b"", job.format, job.why
        if fmt is None:  # standard input, a pipe, a file the planner could not read: told once, here
            head = stream.read(SNIFF_SIZE)
            kind = what_file_is(head, None if source is None else source.name)
            fmt, why = kind.format, kind.reason
        if fmt in ("warc", "arc"):
            if size is None:
                return outcome.fail(f"{why}: a web archive is read from a file, not from a pipe")
            return _warc(job, settings, outcome, fmt)
        if settings.format != "auto":  # --format: the engine the user names
            fmt = settings.format
        if fmt == "mbox":  # streamed, message by message
            outcome.format = fmt
            return _mbox(job, _Replayed(head, stream), source, settings, outcome, read)  # type: ignore[arg-type]
        left = None if size is None else size - len(head)
        rest = _read_up_to(stream, max(settings.max_size + 1 - len(head), 0), left)
        data = head + rest if head else rest
        if len(data) > settings.max_size:
            return _too_large(job, _Replayed(data, stream), source, settings, outcome)  # type: ignore[arg-type]
    outcome.bytes_in = len(data)
    if fmt == "other":
        return _as_it_is(job, settings, outcome, data, why or "not a document", mode)
    try:
        fmt, result = process(data, job.shown, settings, rewrite=not job.dry, format=fmt)
    except (Unrecognised, NoBaseError) as error:
        return outcome.fail(str(error))
    outcome.format = fmt
    tally(outcome, result, settings, {}, fmt=fmt)
    output = result.output
    outcome.bytes_out = len(output)
    outcome.state = "rewritten" if output != data else "unchanged"
    if job.dry:
        return outcome
    if job.target is None:
        outcome.output = output
    elif job.in_place:
        if output != data:  # unchanged: not written at all (its time and any backup stay)
            write_atomically(
                Path(job.target), output, backup=settings.backup, root=_root(job), expect=read, sync=settings.sync
            )
            outcome.identity = _identity_now(job.target, outcome.identity)
    else:
        _write_out(job, output, mode, settings)
    return outcome


def _write_out(job: Job, output: bytes, mode: int | None, settings: Settings) -> None:
    """*output* written to the job's target (not in place): with its batch (run_batch), or alone."""
    assert job.target is not None
    if (group := commit_group()) is not None:  # put in place with its batch (run_batch)
        group.write(Path(job.target), output, mode=mode, root=_root(job))
    else:
        write_atomically(Path(job.target), output, mode=mode, root=_root(job), sync=settings.sync)


def _as_it_is(job: Job, settings: Settings, outcome: Outcome, data: bytes, why: str, mode: int | None) -> Outcome:
    """A file named on the command line that is no document (an image, a font, a script,
    data): never read by an engine, never failed; written out byte for byte, and said so."""
    outcome.format, outcome.bytes_out = "other", len(data)
    if job.dry or job.in_place:
        outcome.warnings.append(f"rewriter: {job.shown}: {why}: left as it is")
        return outcome
    outcome.warnings.append(f"rewriter: {job.shown}: {why}: copied as it is")
    outcome.state = "copied"
    if job.target is None:
        outcome.output = data
    else:
        _write_out(job, data, mode, settings)
    return outcome


def _read_up_to(stream: BinaryIO, limit: int, expected: int | None) -> bytes:
    """What *stream* has left, *limit* bytes at most: ``stream.read(limit)``, but sized by what
    the file's status says is left (*expected*). read(limit) makes a buffer of *limit* bytes
    (--max-size, 1 GiB by default) and shrinks it: about 60 us a file (reading the corpus's 320
    pages, 0.029 -> 0.011 s). One byte more than expected tells a file that grew since its
    status was taken; the rest is read then, as read(limit) would have."""
    if expected is None or not 0 <= expected < limit:
        return stream.read(limit)
    first = stream.read(expected + 1)  # shorter only at the end of the file
    if len(first) <= expected:
        return first
    return first + stream.read(limit - len(first))


def _copy(job: Job, outcome: Outcome, *, sync: bool = True) -> Outcome:
    """A file that is not rewritten, copied unchanged (atomically, its permissions kept) so
    that the output folder is a complete mirror of the input folder."""
    assert job.target is not None
    source = Path(job.source)
    target = Path(job.target)
    with open(source, "rb") as stream, replacing(target, mode_of(source), root=_root(job), sync=sync) as replacement:
        shutil.copyfileobj(stream, replacement.stream, 1 << 20)
        outcome.bytes_in = stream.tell()
    outcome.state = "copied"
    return outcome


def _root(job: Job) -> Path | None:
    return None if job.root is None else Path(job.root)


def _too_large(job: Job, stream: BinaryIO, source: Path | None, settings: Settings, outcome: Outcome) -> Outcome:
    """A document over the size limit: copied unchanged, chunk by chunk, and reported."""
    if job.dry:
        return outcome.fail(f"larger than {settings.max_size:,} bytes: not read (see --max-size)")
    outcome.fail(f"larger than {settings.max_size:,} bytes: copied unchanged, not rewritten (see --max-size)")
    if job.in_place:
        return outcome  # unchanged: nothing to write
    if job.target is None:
        sink = _standard_output()
        shutil.copyfileobj(stream, sink, 1 << 20)
        sink.flush()
        return outcome
    with replacing(Path(job.target), mode_of(source), root=_root(job), sync=settings.sync) as replacement:
        shutil.copyfileobj(stream, replacement.stream, 1 << 20)
    return outcome


def _mbox_options(settings: Settings) -> MboxOptions:
    """How a run rewrites an mbox's messages: its URL and policy, each report with its links
    (the run names the ones left relative), messages larger than the run's --max-size copied."""
    from rewriter.containers.mailbox import MAX_MESSAGE

    return {
        "url": settings.url,
        "policy": settings.policy,
        "with_links": True,
        "max_message": min(settings.max_size, MAX_MESSAGE),
    }


def _mbox(
    job: Job,
    stream: BinaryIO,
    source: Path | None,
    settings: Settings,
    outcome: Outcome,
    read: os.stat_result | None = None,
) -> Outcome:
    """Stream an mbox message by message: memory stays flat whatever its size. *read*: in
    place, the input's status when it was opened."""
    from rewriter.containers.mailbox import rewrite_mbox

    def each(sink: BinaryIO) -> bool:
        return _tally_messages(rewrite_mbox(stream, sink, **_mbox_options(settings)), outcome, settings)

    if job.dry:
        each(_Discarded())  # type: ignore[arg-type]  # the one method rewrite_mbox writes with
        return outcome
    if job.target is None:
        sink = _standard_output()
        each(sink)
        sink.flush()
        return outcome
    backup = settings.backup if job.in_place else None
    with replacing(
        Path(job.target), mode_of(source), backup, root=_root(job), expect=read, sync=settings.sync
    ) as replacement:
        # In place, an unchanged mbox is not written at all (its time and any backup stay).
        replacement.keep = each(replacement.stream) or not job.in_place
    if job.in_place and replacement.keep:
        outcome.identity = _identity_now(job.target, outcome.identity)
    return outcome


def _tally_messages(reports: Iterable[MboxReport], outcome: Outcome, settings: Settings) -> bool:
    """Count an mbox's (or a piece's) messages into *outcome*, as they are rewritten; whether
    any changed."""
    changed = False
    for report in reports:
        changed = changed or report.changed
        if settings.units:
            outcome.units.append(_unit(report))
        outcome.bytes_in += report.size
        outcome.bytes_out += report.output_size
        if report.result is None:  # too large, or the engine failed on it: kept as it was
            outcome.ok = False
            outcome.messages.extend(
                f"rewriter: {outcome.shown}: message {report.index + 1}: {problem}" for problem in report.problems
            )
            continue
        # The report's problems: the message's, and the mbox's own (quoted From lines).
        tally(outcome, report.result, settings, {"message": report.index + 1}, report.problems, fmt="message")
    outcome.state = "rewritten" if changed else "unchanged"
    return changed


def _unit(report: MboxReport) -> dict[str, object]:
    """One message's report as a plain dict (the engine's result left out)."""
    from dataclasses import fields

    return {
        item.name: list(value) if isinstance(value := getattr(report, item.name), tuple) else value
        for item in fields(report)
        if item.name != "result"
    }


def _piece(job: Job, settings: Settings, outcome: Outcome) -> Outcome:
    """One piece of a large container: its messages or records, read from its own bytes,
    written to the work folder (the caller joins the pieces in order), or only read."""
    from rewriter.containers.mailbox import rewrite_mbox_piece

    assert job.piece is not None
    outcome.format = job.format
    with open(job.source, "rb") as stream:
        status = os.fstat(stream.fileno())
        outcome.identity = (status.st_size, status.st_mtime_ns)

        def each(sink: BinaryIO) -> bool:
            assert job.piece is not None
            reports = rewrite_mbox_piece(stream, job.piece, sink, **_mbox_options(settings))
            return _tally_messages(reports, outcome, settings)

        if job.dry or job.target is None:
            each(_Discarded())  # type: ignore[arg-type]
            return outcome
        if settings.work is None:
            return outcome.fail("not rewritten: a piece of a container needs the run's work folder")
        with replacing(pieces_path(settings.work, job), root=Path(settings.work).parent, sync=settings.sync) as out:
            each(out.stream)
    return outcome


def replacing_target(
    job: Job, backup: str | None = None, *, sync: bool = True
) -> contextlib.AbstractContextManager[Replacement]:
    """The atomic replacement of *job*'s target, for a container put together from pieces:
    its folders opened under the job's root, its mode from the input, in place its backup
    and the check that the input is still the one planned."""
    assert job.target is not None
    source = Path(job.source)
    return replacing(Path(job.target), mode_of(source), backup, root=_root(job), expect=job.status, sync=sync)


def _identity_now(path: str, otherwise: tuple[int, int] | None) -> tuple[int, int] | None:
    with contextlib.suppress(OSError):
        status = os.stat(path)
        return status.st_size, status.st_mtime_ns
    return otherwise


def _maildir(job: Job, settings: Settings, outcome: Outcome) -> Outcome:
    from rewriter.containers.mailbox import rewrite_maildir

    folder = Path(job.source)
    outcome.format = "maildir"
    if job.in_place and settings.backup:
        # NAME+SUFFIX in cur/ or new/ would be a second copy of the message to every mail reader.
        return outcome.fail("not rewritten: --backup cannot keep copies inside a Maildir (use -o DIR for a copy)")
    target = None if job.in_place or job.dry else Path(job.target)  # type: ignore[arg-type]
    if target is not None and job.root is not None:
        # Its folders are made here, one level at a time, none through a symbolic link.
        for sub in ("cur", "new", "tmp"):
            Folder.open(target / sub, Path(job.root)).close()
    count = failed = 0
    reports = rewrite_maildir(
        folder,
        target,
        url=settings.url,
        policy=settings.policy,
        with_links=True,
        write=not job.dry,
        sync=settings.sync,
    )
    for report in reports:
        count += 1
        outcome.bytes_in += report.path.stat().st_size if report.path.exists() else 0
        if report.result is not None:
            extra: dict[str, object] = {"message": str(report.path.relative_to(folder))}
            tally(outcome, report.result, settings, extra, fmt="message")
        for problem in report.problems:
            outcome.messages.append(f"rewriter: {outcome.shown}: {problem}")
        # Nothing written is a failure, but for a message left alone in place on purpose.
        unwritten = not job.dry and report.target is None and not (job.in_place and not report.changed)
        if report.result is None or unwritten:
            failed += 1
            outcome.ok = False
        if report.changed and not unwritten:
            outcome.state = "rewritten"
    if failed and failed == count:
        outcome.state = "failed"
    return outcome


class _Discarded:
    """A sink that keeps nothing: a dry run's output."""

    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        pass


def _warc(job: Job, settings: Settings, outcome: Outcome, archive: str) -> Outcome:
    """A WARC or ARC file, or a piece of one: each page read against its own URL, and
    written out as a WARC whose every record is the input's, byte for byte, each page
    followed by a conversion record of it rewritten (:func:`rewriter.containers.warc.rewrite_warc_piece`);
    or, for ``links`` and ``explain``, only read."""
    from rewriter.containers.warc import WarcDamage, rewrite_warc_piece

    outcome.format = archive
    if job.in_place:
        return outcome.fail(
            "not rewritten: a web archive records what was fetched, and is never changed in place "
            "(give -o OUT.warc.gz: its pages come after their records, rewritten)"
        )
    status = os.stat(job.source)
    outcome.identity = (status.st_size, status.st_mtime_ns)

    def each(target: BinaryIO | None, gzip: bool) -> None:
        changed = False
        pages = rewrite_warc_piece(
            job.source,
            job.piece,
            target,
            policy=settings.policy,
            gzip=gzip,
            rewrite=not job.dry,
            max_size=settings.max_size,
            container="arc" if archive == "arc" else "warc",
        )
        for item in pages:
            if isinstance(item, WarcDamage):
                outcome.messages.append(f"rewriter: {outcome.shown}: offset {item.offset}: {item.problem}")
                outcome.ok = False
                continue
            outcome.bytes_in += item.size
            where: dict[str, object] = {"record": item.uri}
            if item.result is None:
                outcome.messages.extend(
                    f"rewriter: {outcome.shown}: record {item.uri}: {problem}" for problem in item.problems
                )
                outcome.ok = False
                continue
            outcome.warnings.extend(f"rewriter: {outcome.shown}: record {item.uri}: {p}" for p in item.problems)
            tally(outcome, item.result, settings, where, fmt=item.format)
            changed = changed or item.converted
        outcome.state = "rewritten" if changed else "unchanged"

    if job.dry:
        each(None, False)
    elif job.piece is not None:
        if settings.work is None or job.target is None:
            return outcome.fail("not rewritten: a piece of a container needs the run's work folder")
        with replacing(pieces_path(settings.work, job), root=Path(settings.work).parent, sync=settings.sync) as out:
            each(out.stream, job.target.endswith(".gz"))
    elif job.target is None:
        with open(job.source, "rb") as head:
            gzip = head.read(2) == b"\x1f\x8b"  # to standard output: the input's own compression
        sink = _standard_output()
        each(sink, gzip)
        sink.flush()
    else:
        with replacing(Path(job.target), mode_of(Path(job.source)), root=_root(job), sync=settings.sync) as replacement:
            each(replacement.stream, job.target.endswith(".gz"))
    return outcome


def _warc_folder(job: Job, settings: Settings, outcome: Outcome) -> Outcome:
    """A piece of a WARC (or ARC) mirrored into the folder *job.target*: its records written by
    the plan of the whole file (:func:`rewriter.containers.warc.write_mirror_piece`), each page
    tallied against its own URL, each problem of its records said; what each record became goes
    to the work folder, for the manifest the last piece's sink writes."""
    import json

    from rewriter.containers.warc import write_mirror_piece

    outcome.format = job.format
    status = os.stat(job.source)
    outcome.identity = (status.st_size, status.st_mtime_ns)
    if settings.work is None or job.piece is None:
        return outcome.fail("not rewritten: a web archive mirrored into a folder needs the run's work folder")
    plan = load_mirror_plan(settings.work, job)
    done: list[bytes] = []
    for record in write_mirror_piece(plan, job.piece, policy=settings.policy, max_size=settings.max_size):
        outcome.bytes_in += record.size
        if record.result is not None:
            tally(outcome, record.result, settings, {"record": record.url}, (), fmt=record.format or "html")
        if record.written:
            outcome.state = "rewritten"
        line = [record.offset, record.written, record.links, list(record.problems)]
        done.append(json.dumps(line, ensure_ascii=True).encode("ascii") + b"\n")
    for entry in sorted(plan.entries, key=lambda entry: entry.offset):  # the piece's, first pass and second
        outcome.messages.extend(f"rewriter: {job.shown}: {problem}" for problem in entry.problems)
    outcome.ok = outcome.ok and not outcome.messages
    path = pieces_path(settings.work, job)
    write_atomically(path, b"".join(done), root=Path(settings.work).parent, sync=settings.sync)
    return outcome


def pieces_path(work: str, job: Job) -> Path:
    """Where the worker writes a piece's output (the journal's own place for it)."""
    assert job.piece is not None
    return piece_path(Path(work), job_key(job, whole=True), job.piece.number)


def mirror_plan_path(work: str, job: Job, number: int | None = None) -> Path:
    """Where the plan of *job*'s mirror waits in the work folder: what every piece needs (*number*
    None), or the records of piece *number*."""
    first = piece_path(Path(work), job_key(job, whole=True), 0)
    stem = first.name.rpartition("-")[0]
    return first.with_name(f"{stem}-plan.json" if number is None else f"{stem}-plan-{number:06d}.json")


def load_mirror_plan(work: str, job: Job, *, every: bool = False) -> MirrorPlan:
    """The plan of *job*'s mirror with the records of its piece (*every*: of all its pieces)
    (:class:`~rewriter.containers.warc.MirrorPlan`); ValueError when the work folder's is not one."""
    import json

    from rewriter.containers.warc import MirrorPlan
    from rewriter.disk.files import open_regular

    root = Path(work).parent

    def read(path: Path) -> object:
        with open_regular(path, root) as stream:
            try:
                return json.loads(stream.read())
            except (ValueError, RecursionError) as error:
                raise ValueError(f"{path}: not a mirror's plan: {error}") from None

    head = read(mirror_plan_path(work, job))
    if every:
        numbers = [piece.number for piece in MirrorPlan.from_json(head, []).pieces]
    else:
        assert job.piece is not None
        numbers = [job.piece.number]
    entries: list[object] = []
    for number in numbers:
        found = read(mirror_plan_path(work, job, number))
        if not isinstance(found, list):
            raise ValueError(f"{mirror_plan_path(work, job, number)}: a piece's records are a list")
        entries.extend(found)
    return MirrorPlan.from_json(head, entries)


# --------------------------------------------------------------------------
# A run
# --------------------------------------------------------------------------


def _size(job: Job) -> int:
    with contextlib.suppress(OSError):
        return 0 if job.source == "-" else os.stat(job.source).st_size
    return 0


def warm_up() -> None:
    """Import the page and style sheet engines before forking, so that the workers start
    with them. The MIME engine is left to the workers that meet mail: a batch of pages
    never needs it, and it adds 17-22 ms."""
    from rewriter.document.encoding import sniff

    sniff(b"<meta charset=utf-8>", None)


def run(jobs: Iterable[Job], settings: Settings, workers: int = 1) -> Iterator[Outcome]:
    """Do *jobs* with *workers* processes (:mod:`rewriter.run.pipeline`); the outcomes come in
    the order of *jobs*."""
    from rewriter.run.executors import Executor, Processes, Serial
    from rewriter.run.pipeline import execute

    jobs = list(jobs) if isinstance(jobs, (list, tuple)) else jobs
    few = isinstance(jobs, list) and len(jobs) <= 1
    executor: Executor = Serial() if workers <= 1 or few else Processes(workers)
    if isinstance(executor, Processes):
        warm_up()
        # Objects the workers inherit stay out of their collector's sight: its passes would
        # otherwise write to every inherited object and copy each page of them (gc.freeze docs).
        gc.freeze()
    try:
        for item in execute(jobs, settings, executor):
            if isinstance(item, Outcome):
                yield item
    finally:
        if isinstance(executor, Processes):
            gc.unfreeze()


def totals(outcomes: Iterable[Outcome]) -> dict[str, int]:
    """The closing summary's figures."""
    names = ("files", "rewritten_files", "unchanged_files", "failed_files", "relative_files", "rewritten", "kept")
    figures = dict.fromkeys((*names, "local", "relative", "no_base", "bytes", "copied_files"), 0)
    for outcome in outcomes:
        count_into(figures, outcome)
    return figures


def count_into(figures: dict[str, int], outcome: Outcome) -> None:
    """Add *outcome* to *figures* (:func:`totals`'s): a run keeps its totals as the outcomes go
    by, without a tally of its own for each one."""
    if outcome.state == "copied":  # not an input: a file of its folder, copied beside the outputs
        figures["copied_files"] += 1
        return
    figures["files"] += 1
    figures[f"{outcome.state}_files"] += 1
    figures["relative_files"] += outcome.relative > 0
    figures["rewritten"] += outcome.rewritten
    figures["kept"] += outcome.kept
    figures["local"] += outcome.local
    figures["relative"] += outcome.relative
    figures["no_base"] += outcome.no_base
    figures["bytes"] += outcome.bytes_in
