"""Doing one job: a document read, run through the engine its format needs (the table of
:mod:`rewriter.document.engines`) and written; or a container (an mbox, a piece of one, a
Maildir, a WARC or ARC written out or mirrored into a folder) read and written document by
document, each handed to the tally (:func:`rewriter.run.tally.fold`) as a uniform unit.

Every file is written through a temporary file in the same folder (:mod:`rewriter.disk.files`):
a reader, a crash or a ``kill -9`` sees the old content or the new, never a mix. A failure is
reported in the job's :class:`~rewriter.run.jobs.Outcome`, never raised.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "page.html").write_bytes(b"<a href=x>x</a>")
>>> job = Job(str(folder / "page.html"), str(folder / "out.html"), "page.html")
>>> outcome = run_job(job, Settings(url="http://h/"))
>>> (outcome.state, outcome.rewritten, (folder / "out.html").read_bytes())
('rewritten', 1, b'<a href=http://h/x>x</a>')
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

# What a page's job uses is imported here, not in its functions: an import there costs 1 us a call.
import contextlib
import errno
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from rewriter.containers.emlx import EmlxError
from rewriter.containers.formats import COMPRESSED_MBOXES, SNIFF_SIZE, what_file_is
from rewriter.disk.files import (
    O_BINARY,
    O_CLOEXEC,
    O_NOFOLLOW,
    O_NONBLOCK,
    CommitGroup,
    Folder,
    Refused,
    Replacement,
    commit_group,
    committing,
    folder_syncs_deferred,
    kind_of,
    mode_of,
    replacing,
    write_atomically,
)
from rewriter.document.engines import engine
from rewriter.document.model import DocumentResult, NoBaseError, Unit
from rewriter.policy import Policy, copied
from rewriter.problems import Problem, as_problem, report_record
from rewriter.run.collection import LocalCopies, Places
from rewriter.run.jobs import WHOLE_FORMATS, Job, Outcome, Settings, Unrecognised, job_key
from rewriter.run.journal import piece_path
from rewriter.run.plan import read_ahead, told
from rewriter.run.tally import fold

if TYPE_CHECKING:
    from rewriter.containers.mailbox import MboxOptions
    from rewriter.containers.warc import MirroredRecord, MirrorPlan
    from rewriter.document.model import MessageResult

__all__ = [
    "REPORT_INLINE",
    "job_settings",
    "load_mirror_plan",
    "mirror_plan_path",
    "pieces_path",
    "process",
    "replacing_target",
    "run_batch",
    "run_job",
]


def process(
    data: bytes, name: str, settings: Settings, *, rewrite: bool = True, format: str | None = None
) -> tuple[str, DocumentResult | MessageResult]:
    """Run the engine *data*'s format needs (*format* when it is told already, else told by
    the content, *name* only breaking ties; the engine from :mod:`rewriter.document.engines`):
    (format, result). Raises :class:`Unrecognised` for what is none of them, and the
    engine's :class:`~rewriter.document.model.NoBaseError` when the policy requires a base."""
    told = settings.format not in ("auto", "warc", "arc")  # a web archive is never a document: told by its content
    fmt = format or (settings.format if told else what_file_is(data[:SNIFF_SIZE], name).format)
    if fmt not in ("html", "css", "message", "mbox", "emlx"):
        raise Unrecognised("neither HTML, CSS, a MIME message nor an mbox (it looks like binary data)")
    policy = settings.policy
    found = engine("message" if fmt == "emlx" else fmt).run(rewrite=rewrite)  # an .emlx holds a message
    if settings.url_from_collection:  # --url-root/--url-map: a saved-from mark knows better (url.base.PRECEDENCE)
        policy = _url_guessed(policy)
    if fmt == "emlx":  # Apple Mail's: the message between its byte count and its property list
        from rewriter.containers.emlx import run_emlx

        return fmt, run_emlx(data, found, url=settings.url, policy=policy)
    if fmt in ("message", "mbox"):  # a message: its own headings give each part's base
        return fmt, found(data, url=settings.url, policy=policy)
    if settings.local is not None:  # a page's copies on disk; never a message's
        policy = policy.with_keep(settings.local)
    # Rewriting with no report or explain, the tally needs only each status's count and the links
    # left relative: no record for each link (they were most of a link-dense page's peak memory).
    lean = {"links": False} if rewrite and not settings.records and not settings.explain else {}
    return fmt, found(data, url=settings.url, charset=settings.charset, policy=policy, **lean)


# The copy of a run's policy with url_guessed, made once for the run, not once a file: by the
# policy's identity (the original kept beside it, so that its id is never another's).
_GUESSED: dict[int, tuple[Policy, Policy]] = {}


def _url_guessed(policy: Policy) -> Policy:
    if policy.url_guessed:
        return policy
    found = _GUESSED.get(id(policy))
    if found is None or found[0] is not policy:
        if len(_GUESSED) >= 16:
            _GUESSED.clear()
        found = _GUESSED[id(policy)] = (policy, copied(policy, url_guessed=True))
    return found[1]


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
    jobs = read_ahead(jobs)  # a worker's: its small files read before its engines run
    group = CommitGroup.create() if settings.sync and len(jobs) > 1 else None
    with folder_syncs_deferred(), committing(group):
        try:
            for job in jobs:
                if group is not None:
                    group.key = len(outcomes)  # the outcome a page it writes belongs to
                outcome = run_job(job, settings)
                said = (*outcome.messages, *outcome.warnings)
                if settings.report_text and (outcome.records or said):
                    from rewriter.run.report import json_lines

                    # its links, then what was said of it: each problem with its code and where it is
                    problems = [report_record(problem, outcome.shown) for problem in said]
                    outcome.report = json_lines([*outcome.records, *problems])
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
                outcomes[index].fail(reason, "output")
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
    url, own = settings.url, None
    listings = settings.listings
    places = Places.of_document(job.tree, job.source, listings)  # worked out once for the folder's pages
    if settings.locations is not None:
        own = settings.locations.url_of(job.source, job.tree, places)
    # A mirror tool's layout (--layout wget): its names are read back to their URLs, with
    # --absolutize-local or without (no file of it is a copy kept as written).
    named = settings.locations is not None and settings.locations.layout.reads_names
    local = None
    if settings.local_copies or named:
        # One memo of classifications for the pages of a folder (LocalCopies.shared), kept for the run.
        shared = None if places is None else places.shared
        local = LocalCopies(job.source, job.tree, settings.locations, listings, shared, places)
    return copied(settings, url=own or url, local=local, url_from_collection=own is not None)


def _standard_output() -> BinaryIO:
    """Standard output's bytes, after what its text layer holds (one input: the main process)."""
    if sys.stdout is None:
        raise OSError(errno.EBADF, "standard output is closed")
    sys.stdout.flush()
    return sys.stdout.buffer


def run_job(job: Job, settings: Settings) -> Outcome:
    """Do one job; every failure is in the outcome, never raised."""
    if job.untold is not None:  # a small file the planner left to its job (read_ahead tells a batch's first)
        job = told(job)
    outcome = Outcome(job.shown, piece=job.piece, why=_why(job, settings) if settings.explain else None)
    if job.untold == "passed":
        outcome.state = "passed"  # no input: the pipeline drops it, as the planner would have
        return outcome
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
        return outcome.fail(f"not rewritten: internal error: {type(error).__name__}: {error}", "not-done")


def _why(job: Job, settings: Settings) -> str | None:
    """Why the job's input is read as what it is (``explain``): the planner's reason, or --format."""
    return job.why if settings.format == "auto" else f"as --format {settings.format} says"


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
    nonblocking = O_NONBLOCK
    try:
        handle = os.open(job.source, os.O_RDONLY | nonblocking | O_NOFOLLOW | O_CLOEXEC | O_BINARY)
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
    """A file (or standard input, or a pipe): a document read whole and rewritten, an mbox
    streamed, a web archive handed on, anything else copied as it is."""
    told = job.format if settings.format == "auto" else settings.format
    if job.data is not None and job.status is not None and told in WHOLE_FORMATS and len(job.data) <= settings.max_size:
        return _planned(job, settings, outcome, told)
    source = None if job.source == "-" else Path(job.source)
    with _opened(job) as (stream, read):
        size, mode = _status(outcome, stream, read) if source is not None else (None, None)
        head, fmt, why = b"", job.format, job.why
        if fmt is None:  # standard input, a pipe, a file the planner could not read: told once, here
            head = stream.read(SNIFF_SIZE)
            kind = what_file_is(head, None if source is None else source.name)
            fmt, why = kind.format, kind.reason
            if settings.explain and settings.format == "auto":
                outcome.why = why
        if fmt in ("warc", "arc"):
            if size is None:
                return outcome.fail(f"{why}: a web archive is read from a file, not from a pipe")
            return _warc(job, settings, outcome, fmt)
        if settings.format in ("warc", "arc"):  # --format warc: the input must be a web archive
            return outcome.fail(f"--format {settings.format}, but this is no web archive: {why}")
        if fmt == "wacz" and settings.format == "auto":  # its WARC files are read by the command line's verbs
            return outcome.fail(f"{why}: a WACZ is read from a file named on the command line, not from a pipe")
        if settings.format != "auto" and not (settings.format == "mbox" and fmt in COMPRESSED_MBOXES):
            fmt = settings.format  # --format: the engine the user names (mbox: a compressed one is one)
        if fmt == "mbox":  # streamed, message by message
            outcome.format = fmt
            return _mbox(job, _Replayed(head, stream), source, settings, outcome, read)  # type: ignore[arg-type]
        if fmt in COMPRESSED_MBOXES:  # streamed through its decompressor, compressed back
            from rewriter.containers.compressed import decompressed

            outcome.format = fmt
            unpacked = decompressed(_Replayed(head, stream))
            return _mbox(job, unpacked, source, settings, outcome, read, unpacked.compressing)  # type: ignore[arg-type]
        left = None if size is None else size - len(head)
        rest = _read_up_to(stream, max(settings.max_size + 1 - len(head), 0), left)
        data = head + rest if head else rest
        if len(data) > settings.max_size:
            return _too_large(job, _Replayed(data, stream), source, settings, outcome)  # type: ignore[arg-type]
    outcome.bytes_in = len(data)
    if fmt == "other":
        return _as_it_is(job, settings, outcome, data, why or "not a document", mode)
    return _document(job, settings, outcome, data, fmt, mode, read)


def _planned(job: Job, settings: Settings, outcome: Outcome, fmt: str) -> Outcome:
    """A small document the planner read whole (Job.data): the job does not open it again. In
    place, its status is the one the planner's descriptor gave, which the rename checks."""
    data, read = job.data, job.status
    assert data is not None and read is not None
    outcome.identity = (read.st_size, read.st_mtime_ns)  # what a resumed run compares
    outcome.bytes_in = len(data)
    return _document(job, settings, outcome, data, fmt, stat.S_IMODE(read.st_mode), read)


def _status(outcome: Outcome, stream: BinaryIO, read: os.stat_result | None) -> tuple[int | None, int | None]:
    """A file's size and permissions (for its copy), as fstat gives them (None for what is no
    regular file); its identity goes in *outcome*, for a resumed run."""
    status = read or os.fstat(stream.fileno())
    outcome.identity = (status.st_size, status.st_mtime_ns)
    if stat.S_ISREG(status.st_mode):
        return status.st_size, stat.S_IMODE(status.st_mode)
    return None, None


def _document(
    job: Job, settings: Settings, outcome: Outcome, data: bytes, fmt: str, mode: int | None, read: os.stat_result | None
) -> Outcome:
    """A document read whole: its engine run, its links tallied, its output written (in place
    only when it changed; *read*: the input's status when it was opened)."""
    try:
        fmt, result = process(data, job.shown, settings, rewrite=not job.dry, format=fmt)
    except (Unrecognised, NoBaseError) as error:
        return outcome.fail(str(error))
    except EmlxError as error:  # kept as it is, as a file over --max-size is
        outcome.format = "emlx"
        if job.dry or job.in_place:
            return outcome.fail(f"{error}: left as it is")
        outcome.fail(f"{error}: copied as it is")
        return _unchanged(job, settings, outcome, data, mode)
    outcome.format = fmt
    output = result.output
    fold(outcome, [Unit({}, result, fmt, bytes_out=len(output), changed=output != data)], settings)
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
        group.write(job.target, output, mode=mode, root=job.root)
    else:
        write_atomically(Path(job.target), output, mode=mode, root=_root(job), sync=settings.sync)


def _as_it_is(job: Job, settings: Settings, outcome: Outcome, data: bytes, why: str, mode: int | None) -> Outcome:
    """A file named on the command line that is no document (an image, a font, a script,
    data): never read by an engine, never failed; written out byte for byte, and said so."""
    outcome.format, outcome.bytes_out = "other", len(data)
    if job.dry or job.in_place:
        outcome.warnings.append(Problem("not-a-document", f"{why}: left as it is", (job.shown,)))
        return outcome
    outcome.warnings.append(Problem("not-a-document", f"{why}: copied as it is", (job.shown,)))
    outcome.state = "copied"
    return _unchanged(job, settings, outcome, data, mode)


def _unchanged(job: Job, settings: Settings, outcome: Outcome, data: bytes, mode: int | None) -> Outcome:
    """*outcome*, with the input *data* written out byte for byte (to standard output or the
    job's target; never in place)."""
    outcome.bytes_out = len(data)
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
        return outcome.fail(f"larger than {settings.max_size:,} bytes: not read (see --max-size)", "limit")
    outcome.fail(f"larger than {settings.max_size:,} bytes: copied unchanged, not rewritten (see --max-size)", "limit")
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
    packing: Callable[[BinaryIO], contextlib.AbstractContextManager[BinaryIO]] | None = None,
) -> Outcome:
    """Stream an mbox message by message: memory stays flat whatever its size. *read*: in
    place, the input's status when it was opened. *packing*: what the output goes through
    (a compressed mbox's compressor, :meth:`rewriter.containers.compressed.Decompressed.compressing`)."""
    from rewriter.containers.mailbox import rewrite_mbox

    def each(sink: BinaryIO) -> bool:
        with contextlib.nullcontext(sink) if packing is None or job.dry else packing(sink) as out:
            reports = rewrite_mbox(stream, out, **_mbox_options(settings))
            return fold(outcome, (report.unit(report=settings.units) for report in reports), settings).changed

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
            return fold(outcome, (report.unit(report=settings.units) for report in reports), settings).changed

        if job.dry or job.target is None:
            each(_Discarded())  # type: ignore[arg-type]
            return outcome
        if settings.work is None:
            return outcome.fail("not rewritten: a piece of a container needs the run's work folder", "not-done")
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
    """A Maildir: each message file rewritten on its own (in place, or into the same layout
    under the target); the job fails when every message does."""
    from rewriter.containers.mailbox import rewrite_maildir

    folder = Path(job.source)
    outcome.format = "maildir"
    if job.in_place and settings.backup:
        # NAME+SUFFIX in cur/ or new/ would be a second copy of the message to every mail reader.
        return outcome.fail(
            "not rewritten: --backup cannot keep copies inside a Maildir (use -o DIR for a copy)", "not-done"
        )
    target = None if job.in_place or job.dry else Path(job.target)  # type: ignore[arg-type]
    if target is not None and job.root is not None:
        # Its folders are made here, one level at a time, none through a symbolic link.
        for sub in ("cur", "new", "tmp"):
            Folder.open(target / sub, Path(job.root)).close()
    reports = rewrite_maildir(
        folder,
        target,
        url=settings.url,
        policy=settings.policy,
        with_links=True,
        write=not job.dry,
        sync=settings.sync,
    )
    tallied = fold(outcome, (report.unit() for report in reports), settings)
    if tallied.failed and tallied.failed == tallied.units:
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
    from rewriter.containers.warc import rewrite_warc_piece

    outcome.format = archive
    if job.in_place:
        return outcome.fail(
            "not rewritten: a web archive records what was fetched, and is never changed in place "
            "(give -o OUT.warc.gz: its pages come after their records, rewritten)",
            "not-done",
        )
    status = os.stat(job.source)
    outcome.identity = (status.st_size, status.st_mtime_ns)

    def each(target: BinaryIO | None, gzip: bool) -> None:
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
        fold(outcome, (page.unit() for page in pages), settings)

    if job.dry:
        each(None, False)
    elif job.piece is not None:
        if settings.work is None or job.target is None:
            return outcome.fail("not rewritten: a piece of a container needs the run's work folder", "not-done")
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
    from rewriter.containers.warc import write_mirror_piece
    from rewriter.containers.warc.mirror import NOT_A_PAGE

    outcome.format = job.format
    status = os.stat(job.source)
    outcome.identity = (status.st_size, status.st_mtime_ns)
    if settings.work is None or job.piece is None:
        return outcome.fail(
            "not rewritten: a web archive mirrored into a folder needs the run's work folder", "not-done"
        )
    plan = load_mirror_plan(settings.work, job)
    done: list[bytes] = []
    records = write_mirror_piece(plan, job.piece, policy=settings.policy, max_size=settings.max_size)
    fold(outcome, (record.unit() for record in _noted(records, done)), settings)
    for entry in sorted(plan.entries, key=lambda entry: entry.offset):  # the piece's, first pass and second
        for problem in entry.problems:  # what is no web page is said, and fails nothing
            said = as_problem(problem, "mirror").at(job.shown)
            (outcome.warnings if said.code == NOT_A_PAGE else outcome.messages).append(said)
    outcome.ok = outcome.ok and not outcome.messages
    path = pieces_path(settings.work, job)
    write_atomically(path, b"".join(done), root=Path(settings.work).parent, sync=settings.sync)
    return outcome


def _noted(records: Iterable[MirroredRecord], done: list[bytes]) -> Iterator[MirroredRecord]:
    """*records* as they come, each noted in *done* (a JSON line: its offset, whether it was
    written, its links, its problems) for the manifest."""
    import json

    for record in records:
        problems = [as_problem(problem, "mirror").to_json() for problem in record.problems]  # with their codes
        line = [record.offset, record.written, record.links, problems]
        done.append(json.dumps(line, ensure_ascii=True).encode("ascii") + b"\n")
        yield record


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
