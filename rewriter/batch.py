"""Batch runs: many files, folders, mboxes and Maildirs, in parallel, with atomic writes.

A run is planned first, as a list of :class:`Job` (one input, one output), then each job
is done by :func:`run_job`, in this process or in worker processes: the outcomes come
back in the order of the plan whatever the number of workers, so outputs and reports
are the same for ``-j 1`` and ``-j 8``.

Every file is written through a temporary file in the same folder (fsync, rename, then
fsync of the folder): a reader, a crash or a ``kill -9`` sees the old content or the
new, never a mix. A failure in one job is reported in its :class:`Outcome`; the
others go on.

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
import functools
import gc
import os
import shutil
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

from rewriter.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:
    from rewriter.html import HTMLResult, Link, Status
    from rewriter.mime import MessageResult

__all__ = [
    "DEFAULT_INCLUDE",
    "Job",
    "Outcome",
    "Settings",
    "Unrecognised",
    "located_links",
    "plan",
    "process",
    "run",
    "run_job",
    "tally",
    "totals",
    "write_atomically",
]

# What a folder walk takes when no --include is given: what browsers save and mail
# programs export. A file named on the command line is always taken.
DEFAULT_INCLUDE: tuple[str, ...] = (
    "*.html",
    "*.htm",
    "*.xhtml",
    "*.shtml",
    "*.css",
    "*.eml",
    "*.mht",
    "*.mhtml",
    "*.mbox",
    "*.mbx",
)
# Our temporary files: ".NAME.rewriter-XXXXXXXX.tmp" beside NAME (a kill -9 can leave one).
_TEMPORARY_PREFIX = ".rewriter-"
_TEMPORARY_SUFFIX = ".tmp"

State = Literal["rewritten", "unchanged", "failed"]


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


@dataclass(slots=True)
class Outcome:
    """What happened to one job: its messages for standard error, its counts, its links."""

    shown: str
    state: State = "unchanged"
    ok: bool = True  # False: something failed, or links stayed relative
    messages: list[str] = field(default_factory=list)
    rewritten: int = 0  # links made absolute
    kept: int = 0  # links left as they were on purpose (absolute, same-document)
    relative: int = 0  # links left relative: no base, or unresolvable
    bytes_in: int = 0
    bytes_out: int = 0
    records: list[dict[str, object]] = field(default_factory=list)
    output: bytes | None = None  # the output, for a job whose target is standard output

    def fail(self, message: str) -> Outcome:
        self.state, self.ok = "failed", False
        self.messages.append(f"rewriter: {self.shown}: {message}")
        return self


# --------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------


def _matches(relative: str, patterns: Sequence[str]) -> bool:
    """A glob matches the path under the walked folder, or the file name alone."""
    name = relative.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def _is_maildir(path: Path) -> bool:
    return all((path / name).is_dir() for name in ("cur", "new", "tmp"))


def _walk(root: Path, include: Sequence[str], exclude: Sequence[str], skip: Path | None) -> Iterator[tuple[Path, bool]]:
    """(path, is a Maildir) for each input under *root*, sorted, symbolic links not followed.

    A Maildir found on the way is one input (its message files have no suffix to match).
    *skip* is the output folder, when it lies inside *root*.
    """
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        folders.sort()
        kept = []
        for name in folders:
            path = here / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink() or (skip is not None and path.resolve() == skip) or _matches(relative, exclude):
                continue
            if _is_maildir(path):
                yield path, True
                continue
            kept.append(name)
        folders[:] = kept
        for name in sorted(files):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if name.startswith(".") and _TEMPORARY_PREFIX in name and name.endswith(_TEMPORARY_SUFFIX):
                continue  # ours, left by a killed run
            if path.is_symlink() and not _inside(path, root):
                continue  # never reach out of the tree through a link
            if not path.is_file():
                continue  # a named pipe or a device: reading one could block or never end
            if _matches(relative, include) and not _matches(relative, exclude):
                yield path, False


def _same_file(source: str, target: str) -> bool:
    try:
        return os.path.samefile(source, target)
    except OSError:
        return False  # the target does not exist yet


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return True


def plan(
    inputs: Sequence[str],
    output: str | None = None,
    *,
    in_place: bool = False,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> tuple[list[Job], list[str]]:
    """The jobs for *inputs* (files, folders, Maildirs, ``-``), and the inputs that cannot be.

    Outputs: in place; or *output*, a file for one input or a folder (several inputs,
    or a folder input, or an existing folder), where each input keeps its path under
    the folder it came from; or, with neither, standard output (one file only). A folder
    is walked for *include* globs (default :data:`DEFAULT_INCLUDE`) less *exclude*
    globs; a glob matches the path under the folder or the file name.
    """
    include = tuple(include) or DEFAULT_INCLUDE
    problems: list[str] = []
    jobs: list[Job] = []
    folder_output = output is not None and output != "-" and (len(inputs) > 1 or Path(output).is_dir())
    several_trees = len(inputs) > 1
    skip = Path(output).resolve() if output not in (None, "-") else None
    for given in inputs:
        if given == "-":
            if in_place:
                problems.append("rewriter: <stdin>: cannot be rewritten in place")
                continue
            target = None if output in (None, "-") else (str(Path(output) / "stdin") if folder_output else output)
            jobs.append(Job("-", target, "<stdin>"))
            continue
        path = Path(given)
        if not path.exists() and not path.is_symlink():
            problems.append(f"rewriter: {given}: no such file or folder")
            continue
        if path.is_dir():
            if not in_place and output in (None, "-"):
                problems.append(f"rewriter: {given}: a folder needs -o DIR or --in-place")
                continue
            base = Path(output) / path.resolve().name if several_trees and output else Path(output or ".")
            if _is_maildir(path):
                jobs.append(Job(given, given if in_place else str(base), given, maildir=True, in_place=in_place))
                continue
            for found, maildir in _walk(path, include, exclude, skip):
                if in_place and found.is_symlink():
                    continue  # its target, when in the tree, is rewritten as itself
                relative = found.relative_to(path)
                target = str(found) if in_place else str(base / relative)
                jobs.append(Job(str(found), target, str(found), maildir=maildir, in_place=in_place))
            continue
        if in_place and path.is_symlink():
            problems.append(f"rewriter: {given}: a symbolic link is not rewritten in place (name its target)")
        elif in_place:
            jobs.append(Job(given, given, given, in_place=True))
        elif output in (None, "-"):
            jobs.append(Job(given, None, given))
        elif folder_output:
            jobs.append(Job(given, str(Path(output) / path.name), given))
        else:
            jobs.append(Job(given, output, given))
    # -o naming an input would change it without --in-place: refused, file by file.
    kept_jobs = []
    for job in jobs:
        if not job.in_place and job.target is not None and job.source != "-" and _same_file(job.source, job.target):
            problems.append(f"rewriter: {job.shown}: the output is the input itself; use --in-place to rewrite it")
        else:
            kept_jobs.append(job)
    jobs = kept_jobs
    to_stdout = [job for job in jobs if job.target is None]
    if len(jobs) > 1 and to_stdout:
        problems.append("rewriter: several inputs need -o DIR (a folder for the outputs) or --in-place")
        jobs = [job for job in jobs if job.target is not None]
    return jobs, problems


# --------------------------------------------------------------------------
# One document
# --------------------------------------------------------------------------


def process(
    data: bytes, name: str, settings: Settings, *, rewrite: bool = True
) -> tuple[str, HTMLResult | MessageResult]:
    """Run the engine *data*'s format needs (told by its content, *name* only breaking
    ties): (format, result). Raises :class:`Unrecognised` for what is none of them, and
    the engine's :class:`~rewriter.html.NoBaseError` when the policy requires a base."""
    from rewriter.formats import detect_format

    fmt = settings.format if settings.format != "auto" else detect_format(data[:65536], name)
    if fmt == "unknown":
        raise Unrecognised("neither HTML, CSS, a MIME message nor an mbox (it looks like binary data)")
    policy = settings.policy
    if fmt in ("message", "mbox"):
        from rewriter.mime import find_message_links, rewrite_message  # imported for mail alone

        engine = rewrite_message if rewrite else find_message_links
        return fmt, engine(data, url=settings.url, policy=policy)
    if fmt == "css":
        from rewriter.stylesheet import find_css_links, rewrite_css

        css_engine = rewrite_css if rewrite else find_css_links
        return fmt, css_engine(data, url=settings.url, charset=settings.charset, policy=policy)
    from rewriter.html import find_links, rewrite_html

    html_engine = rewrite_html if rewrite else find_links
    return fmt, html_engine(data, url=settings.url, charset=settings.charset, policy=policy)


def located_links(result: HTMLResult | MessageResult, *statuses: Status) -> list[tuple[str, Link]]:
    """(where, link) for every link of *result* (with *statuses*: those that have one of
    them, whose byte spans alone are worked out): the part path for a message, "" for a document."""
    parts = getattr(result, "parts", None)
    if parts is None:
        return [("", link) for link in (result.links_with(*statuses) if statuses else result.links)]
    return [(part.path, link) for part in parts for link in (part.links_with(*statuses) if statuses else part.links)]


_RELATIVE: tuple[Status, ...] = ("no-base", "unresolvable")  # links left relative


def tally(
    outcome: Outcome,
    result: HTMLResult | MessageResult,
    settings: Settings,
    extra: dict[str, object],
    problems: Sequence[str] | None = None,
) -> None:
    """Count *result*'s links into *outcome*, name each problem (*problems*, else the
    result's) and each link left relative, and keep every link as a record when the
    settings ask for them."""
    message = hasattr(result, "parts")
    where = "".join(f"{key} {value}: " for key, value in extra.items())
    for problem in result.problems if problems is None else problems:
        outcome.messages.append(f"rewriter: {outcome.shown}: {where}{problem}")
    counts: Counter[str] = Counter()
    for part in result.parts if message else (result,):  # type: ignore[union-attr]
        counts.update(part.status_counts)
    outcome.rewritten += counts["rewritten"]
    relative = sum(counts[status] for status in _RELATIVE)
    outcome.relative += relative
    outcome.kept += counts.total() - counts["rewritten"] - relative
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
            outcome.messages.append(
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


# --------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------


def _temporary_beside(path: Path) -> tuple[int, Path]:
    handle, name = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}{_TEMPORARY_PREFIX}", suffix=_TEMPORARY_SUFFIX
    )
    return handle, Path(name)


def _sync_folder(folder: Path) -> None:
    """fsync a folder, so that a rename in it survives a crash (where the system allows)."""
    with contextlib.suppress(OSError):
        handle = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def _commit(temporary: Path, path: Path, mode: int | None, backup: str | None) -> None:
    """Rename *temporary* over *path*, after keeping the old file as *path* + *backup*.

    *mode*: the permissions to give it; by default those of the file it replaces.
    """
    if mode is None:
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _new_file_mode()
    if mode is not None:
        os.chmod(temporary, mode)
    if backup and path.exists():
        _backup(path, Path(str(path) + backup))
    os.replace(temporary, path)
    _sync_folder(path.parent)


def _new_file_mode() -> int:
    """What open() would give a new file: 0o666 less the umask (mkstemp makes 0o600)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def _backup(path: Path, backup: Path) -> None:
    """*backup* becomes the old *path*, in one rename: a hard link where the system has
    them, else a copy."""
    handle, scratch = _temporary_beside(backup)
    os.close(handle)
    try:
        try:
            scratch.unlink()
            os.link(path, scratch)
        except OSError:
            shutil.copy2(path, scratch)
        os.replace(scratch, backup)
    except BaseException:
        scratch.unlink(missing_ok=True)
        raise


class _Replacement:
    """The stream a new *path* is written to; ``keep = False`` leaves *path* as it was."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.keep = True


@contextlib.contextmanager
def _replacing(path: Path, mode: int | None = None, backup: str | None = None) -> Iterator[_Replacement]:
    """Write a temporary file beside *path* and rename it over *path* when the block ends
    (fsync first): *path* holds the old content or the new, never a part. On an error, or
    with ``keep = False``, the temporary file goes and *path* is untouched."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = _temporary_beside(path)
    try:
        with os.fdopen(handle, "wb") as stream:
            replacement = _Replacement(stream)
            yield replacement
            stream.flush()
            os.fsync(stream.fileno())
        if replacement.keep:
            _commit(temporary, path, mode, backup)
        else:
            temporary.unlink()
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_atomically(path: Path, data: bytes, *, mode: int | None = None, backup: str | None = None) -> None:
    """Write *data* to *path* so that it holds the old content or the new, never a part.

    *mode*: the permissions to give it (default: those of the file it replaces).
    """
    with _replacing(path, mode, backup) as replacement:
        replacement.stream.write(data)


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
    outcome = Outcome(job.shown)
    try:
        if job.maildir:
            return _maildir(job, settings, outcome)
        return _file(job, settings, outcome)
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
def _opened(job: Job) -> Iterator[BinaryIO]:
    if job.source != "-":
        with open(job.source, "rb") as stream:
            yield stream
        return
    if sys.stdin is None:
        raise OSError(errno.EBADF, "standard input is closed")
    yield sys.stdin.buffer


def _file(job: Job, settings: Settings, outcome: Outcome) -> Outcome:
    from rewriter.formats import detect_format
    from rewriter.html import NoBaseError

    source = None if job.source == "-" else Path(job.source)
    with _opened(job) as stream:
        head = stream.read(65536)
        fmt = settings.format if settings.format != "auto" else detect_format(head, source.name if source else None)
        if fmt == "mbox":  # streamed, message by message
            return _mbox(job, _Replayed(head, stream), source, settings, outcome)  # type: ignore[arg-type]
        data = head + stream.read(max(settings.max_size + 1 - len(head), 0))
        if len(data) > settings.max_size:
            return _too_large(job, _Replayed(data, stream), source, settings, outcome)  # type: ignore[arg-type]
    outcome.bytes_in = len(data)
    try:
        _, result = process(data, job.shown, settings)
    except (Unrecognised, NoBaseError) as error:
        return outcome.fail(str(error))
    tally(outcome, result, settings, {})
    output = result.output
    outcome.bytes_out = len(output)
    outcome.state = "rewritten" if output != data else "unchanged"
    if job.target is None:
        outcome.output = output
    elif job.in_place:
        if output != data:  # unchanged: not written at all (its time and any backup stay)
            write_atomically(Path(job.target), output, backup=settings.backup)
    else:
        write_atomically(Path(job.target), output, mode=_mode(source))
    return outcome


def _too_large(job: Job, stream: BinaryIO, source: Path | None, settings: Settings, outcome: Outcome) -> Outcome:
    """A document over the size limit: copied unchanged, chunk by chunk, and reported."""
    outcome.fail(f"larger than {settings.max_size:,} bytes: copied unchanged, not rewritten (see --max-size)")
    if job.in_place:
        return outcome  # unchanged: nothing to write
    if job.target is None:
        sink = _standard_output()
        shutil.copyfileobj(stream, sink, 1 << 20)  # type: ignore[misc]
        sink.flush()
        return outcome
    with _replacing(Path(job.target), _mode(source)) as replacement:
        shutil.copyfileobj(stream, replacement.stream, 1 << 20)  # type: ignore[misc]
    return outcome


def _mode(source: Path | None) -> int | None:
    """The permissions of a regular file *source*, for its copy (None for a pipe or stdin)."""
    if source is None:
        return None
    status = source.stat()
    return stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else None


def _mbox(job: Job, stream: BinaryIO, source: Path | None, settings: Settings, outcome: Outcome) -> Outcome:
    """Stream an mbox message by message: memory stays flat whatever its size."""
    from rewriter.mailbox import MAX_MESSAGE, rewrite_mbox

    def each(sink: BinaryIO) -> bool:
        changed = False
        for report in rewrite_mbox(
            stream,
            sink,
            url=settings.url,
            policy=settings.policy,
            with_links=True,
            max_message=min(settings.max_size, MAX_MESSAGE),
        ):
            changed = changed or report.changed
            outcome.bytes_in += report.size
            outcome.bytes_out += report.output_size
            if report.result is None:  # too large, or the engine failed on it: kept as it was
                outcome.ok = False
                outcome.messages.extend(
                    f"rewriter: {outcome.shown}: message {report.index + 1}: {problem}" for problem in report.problems
                )
                continue
            # The report's problems: the message's, and the mbox's own (quoted From lines).
            tally(outcome, report.result, settings, {"message": report.index + 1}, report.problems)
        outcome.state = "rewritten" if changed else "unchanged"
        return changed

    if job.target is None:
        sink = _standard_output()
        each(sink)
        sink.flush()
        return outcome
    backup = settings.backup if job.in_place else None
    with _replacing(Path(job.target), _mode(source), backup) as replacement:
        # In place, an unchanged mbox is not written at all (its time and any backup stay).
        replacement.keep = each(replacement.stream) or not job.in_place
    return outcome


def _maildir(job: Job, settings: Settings, outcome: Outcome) -> Outcome:
    from rewriter.mailbox import rewrite_maildir

    folder = Path(job.source)
    if job.in_place and settings.backup:
        # NAME+SUFFIX in cur/ or new/ would be a second copy of the message to every mail reader.
        return outcome.fail("not rewritten: --backup cannot keep copies inside a Maildir (use -o DIR for a copy)")
    target = None if job.in_place else Path(job.target)  # type: ignore[arg-type]
    count = failed = 0
    for report in rewrite_maildir(folder, target, url=settings.url, policy=settings.policy, with_links=True):
        count += 1
        outcome.bytes_in += report.path.stat().st_size if report.path.exists() else 0
        if report.result is not None:
            tally(outcome, report.result, settings, {"message": str(report.path.relative_to(folder))})
        for problem in report.problems:
            outcome.messages.append(f"rewriter: {outcome.shown}: {problem}")
        # Nothing written is a failure, but for a message left alone in place on purpose.
        unwritten = report.target is None and not (job.in_place and not report.changed)
        if report.result is None or unwritten:
            failed += 1
            outcome.ok = False
        if report.changed and not unwritten:
            outcome.state = "rewritten"
    if failed and failed == count:
        outcome.state = "failed"
    return outcome


# --------------------------------------------------------------------------
# A run
# --------------------------------------------------------------------------


def _size(job: Job) -> int:
    with contextlib.suppress(OSError):
        return 0 if job.source == "-" else os.stat(job.source).st_size
    return 0


def _warm() -> None:
    """Import the page and style sheet engines before forking, so that the workers start
    with them (bs4's import alone took 0.3 s). The MIME engine is left to the workers
    that meet mail: a batch of pages never needs it, and it adds 17-22 ms."""
    import rewriter.html
    import rewriter.stylesheet  # noqa: F401
    from rewriter.encoding import sniff

    sniff(b"<meta charset=utf-8>", None)


def run(jobs: Sequence[Job], settings: Settings, workers: int = 1) -> Iterator[Outcome]:
    """Do *jobs* with *workers* processes; the outcomes come in the order of *jobs*.

    The largest inputs start first, so that a big file does not finish the run alone.
    """
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            yield run_job(job, settings)
        return
    _warm()
    order = sorted(range(len(jobs)), key=lambda index: -_size(jobs[index]))
    # Objects the workers inherit stay out of their collector's sight: its passes would
    # otherwise write to every inherited object and copy each page of them (gc.freeze docs).
    gc.freeze()
    try:
        yield from _in_workers(jobs, settings, workers, order)
    finally:
        gc.unfreeze()


def _in_workers(jobs: Sequence[Job], settings: Settings, workers: int, order: list[int]) -> Iterator[Outcome]:
    def lost(index: int, reason: str) -> Outcome:  # the job's worker died (killed, out of memory)
        return Outcome(jobs[index].shown).fail(f"not rewritten: {reason}")

    from rewriter.workers import run_ordered  # multiprocessing: imported only when there are workers

    yield from run_ordered(functools.partial(run_job, settings=settings), jobs, order, workers, lost)


def totals(outcomes: Iterable[Outcome]) -> dict[str, int]:
    """The closing summary's figures."""
    figures = dict.fromkeys(
        ("files", "rewritten_files", "unchanged_files", "failed_files", "rewritten", "kept", "relative", "bytes"), 0
    )
    for outcome in outcomes:
        figures["files"] += 1
        figures[f"{outcome.state}_files"] += 1
        figures["rewritten"] += outcome.rewritten
        figures["kept"] += outcome.kept
        figures["relative"] += outcome.relative
        figures["bytes"] += outcome.bytes_in
    return figures
