"""``rewriter rewrite``: a checked request (:class:`~rewriter.cli.request.RunRequest`) to a
journal, an executor and a report held open together, the plan through the pipeline, and
each outcome to the terminal (:mod:`rewriter.cli.output`).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rewriter.cli.output import RunTotals, Silent, counted, progress_for, summary, write_bytes
from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE
from rewriter.cli.request import RunRequest
from rewriter.disk.files import same_file
from rewriter.problems import Problem, said

if TYPE_CHECKING:
    from rewriter.run.batch import Job, Outcome, Settings
    from rewriter.run.journal import Journal
    from rewriter.run.pipeline import Leftovers
    from rewriter.run.report import ReportFile


class Stop(Exception):
    """The run cannot go on: its exit status (what went wrong is said already)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def run_rewrite(request: RunRequest, out: TextIO, err: TextIO) -> int:
    """Rewrite every input of *request*; the exit status."""
    others, mirrors = _mirrors(request)
    if not (others or mirrors):
        return EXIT_OK
    args = request.options
    batch = bool(mirrors) or len(request.files) > 1 or any(Path(name).is_dir() for name in request.files if name != "-")
    quiet = args.quiet or not batch
    settings = replace(request.settings(records=bool(args.report)), report_text=bool(args.report))
    run = RunTotals()
    try:
        with contextlib.ExitStack() as stack:
            journal = _journal(request, err, batch)
            from rewriter.run.pipeline import Leftovers

            leftovers = Leftovers(settings.backup)  # the temporary files a killed run left where this one writes
            executor = _executor(request, err)
            stack.callback(_close, executor)
            stack.enter_context(_kept(journal))
            started = time.perf_counter()  # the run's time: from its executor's start to its summary
            progress = _progress(request, others, mirrors, quiet, err)
            # Its jobs carry the bytes the planner read only where they run in this process.
            whole = getattr(executor, "in_process", False)
            plan = _planned(request, others, mirrors, journal, leftovers, settings, read_whole=whole)
            stack.callback(progress.close)
            report = stack.enter_context(_report(request, leftovers, settings, err))
            outcomes = _released(plan, settings, executor, journal, leftovers)
            status = _drive(outcomes, request, run, report, journal, out, progress)
            if report is not None:
                status = _commit(report, request, err) or status
    except Stop as stop:
        return stop.status
    if not args.quiet:  # every run says what it did, one input or many (issue 32)
        err.write(summary(run.figures, time.perf_counter() - started, run.unplanned) + "\n")
        for line in run.closing():
            err.write(line + "\n")
    if leftovers.removed and not args.quiet:
        plural = "file" if leftovers.removed == 1 else "files"
        err.write(f"rewriter: removed {leftovers.removed:,} temporary {plural} a killed run left\n")
    return status


def _drive(
    items: Iterable[Outcome | str],
    request: RunRequest,
    run: RunTotals,
    report: ReportFile | None,
    journal: Journal | None,
    out: TextIO,
    progress: Silent,
) -> int:
    """Each outcome to where it goes (the report, standard output, standard error); the status."""
    args = request.options
    status = EXIT_OK
    for item in items:
        if isinstance(item, str):
            progress.write(said(item))
            run.unplanned += 1
            status = EXIT_SOME_FAILED
            progress.update(1)  # an input, failed: the summary counts it too
            continue
        if report is not None:
            report.add(item.report)
            if item.report_file is not None and journal is not None:  # the work folder's (checked)
                report.add_file(Path(item.report_file), root=journal.root)
        item.report = ""
        if item.output is not None:
            try:
                write_bytes(out, item.output)
            except OSError as error:
                problem = Problem("output", f"cannot write to standard output: {error.strerror}", (item.shown,))
                progress.write(said(problem))
                item.ok = False
            item.output = None
        for line in run.add(item, quiet=args.quiet, verbose=args.verbose):
            progress.write(line)
        if not item.ok:
            status = EXIT_SOME_FAILED
        if (item.piece is None or item.piece.last) and item.state != "copied":  # as the summary counts
            progress.update(1)
    return status


def _options(request: RunRequest) -> dict[str, Any]:
    """The planner's options."""
    args = request.options
    return {
        "in_place": args.in_place,
        "include": args.include or (),
        "exclude": args.exclude or (),
        "copy_others": not args.no_copy_others,
        "backup": args.backup,
        "kinds": request.kinds,
    }


def _progress(request: RunRequest, others: list[str], mirrors: list[Job], quiet: bool, err: TextIO) -> Silent:
    """The progress bar (on a terminal): its length is a walk of the plan that keeps nothing, its
    inputs counted as the summary counts them (:func:`~rewriter.cli.output.counted`)."""
    from rewriter.run.batch import iter_plan

    total = 0
    if not quiet and getattr(err, "isatty", lambda: False)():
        planned = iter_plan(others, request.options.output, **_options(request), read_whole=False)
        total = len(mirrors) + sum(1 for item in planned if counted(item))
    return progress_for(total, err, quiet)


@contextlib.contextmanager
def _report(request: RunRequest, leftovers: Leftovers, settings: Settings, err: TextIO) -> Iterator[ReportFile | None]:
    """The --report file, open for the run (discarded if the run does not reach its commit)."""
    name = request.options.report
    if not name:
        yield None
        return
    try:
        from rewriter.disk.files import remove_temporaries_of
        from rewriter.run.report import ReportFile

        leftovers.removed += remove_temporaries_of(Path(name))
        report = ReportFile(Path(name), sync=settings.sync)
    except OSError as error:
        err.write(f"rewriter rewrite: cannot write the report {name}: {error.strerror or error}\n")
        raise Stop(EXIT_SOME_FAILED) from None
    try:
        yield report
    except BaseException:
        report.discard()
        raise


def _commit(report: ReportFile, request: RunRequest, err: TextIO) -> int:
    """The report made whole; a failed status if it cannot be (0 otherwise)."""
    try:
        report.commit()
    except OSError as error:
        err.write(f"rewriter rewrite: cannot write the report {request.options.report}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    return EXIT_OK


@contextlib.contextmanager
def _kept(journal: Journal | None) -> Iterator[None]:
    """The journal closed at the run's end: finished, or (the run stopped) kept for --resume."""
    if journal is None:
        yield
        return
    try:
        yield
    except BaseException:
        journal.close(finished=False)
        raise
    journal.close(finished=True)


def _close(executor: object) -> None:
    close = getattr(executor, "close", None)
    if close is not None:
        close()


def _released(
    plan: Iterable[Job | str],
    settings: Settings,
    executor: object,
    journal: Journal | None,
    leftovers: Leftovers | None = None,
) -> Iterator[Outcome | str]:
    """The pipeline's outcomes; before forking workers, the engines are imported (so that
    each worker starts with them) and the collector's objects frozen."""
    import gc

    from rewriter.run.executors import Processes, tune_allocator
    from rewriter.run.pipeline import execute

    tune_allocator()  # this process's, and those of the workers it forks
    forking = isinstance(executor, Processes)
    if forking:
        from rewriter.run.batch import warm_up

        warm_up()
        gc.freeze()
    try:
        yield from execute(plan, settings, executor, journal=journal, leftovers=leftovers)  # type: ignore[arg-type]
    finally:
        if forking:
            gc.unfreeze()


def _executor(request: RunRequest, err: TextIO) -> object:
    """The executor the options ask for, or :class:`Stop` with the status of why there is none."""
    from rewriter.run.executors import DaskExecutor, DaskMissing, Processes, Serial

    args = request.options
    workers = args.jobs or os.cpu_count() or 1
    if args.dask:
        try:
            executor = DaskExecutor(None if args.dask == "local" else args.dask, workers=args.jobs)
            executor.open()
        except DaskMissing as error:
            err.write(f"rewriter rewrite: {error}\n")
            raise Stop(EXIT_USAGE) from None
        except OSError as error:  # the scheduler cannot be reached
            err.write(f"rewriter rewrite: Dask at {args.dask}: {error.strerror or error}\n")
            raise Stop(EXIT_SOME_FAILED) from None
        return executor
    files = request.files
    single = len(files) == 1 and not (files[0] != "-" and Path(files[0]).is_dir())
    if workers <= 1 or (single and not _large(files[0], args.piece_size)):
        return Serial()
    return Processes(workers)


def _large(name: str, piece_size: int | None) -> bool:
    """Whether the one input is large enough to be done in pieces (then by several workers)."""
    from rewriter.containers.pieces import PIECE_SIZE

    with contextlib.suppress(OSError):
        return name != "-" and os.stat(name).st_size >= (piece_size or PIECE_SIZE)
    return False


def _journal(request: RunRequest, err: TextIO, batch: bool) -> Journal | None:
    """The run's journal (None for a run that keeps none: standard output, or one small
    file), or :class:`Stop` with the status of why it cannot be kept."""
    from rewriter.disk.files import Refused
    from rewriter.run.journal import Journal, JournalError

    args = request.options
    if request.to_stdout() or (not batch and not _large(request.files[0], args.piece_size)):
        return None
    folder = _work_folder(request)
    if folder is None:
        return None
    existed = os.path.lexists(folder / "journal.jsonl")
    try:
        journal = Journal.open(folder, request.fingerprint(), resume=args.resume)
    except JournalError as error:
        err.write(f"rewriter rewrite: cannot resume: {error}\n")
        raise Stop(EXIT_USAGE) from None
    except Refused as error:  # a link or a pipe where the run keeps its own files: nothing done
        err.write(f"rewriter rewrite: cannot keep the journal in {folder}: {error}\n")
        raise Stop(EXIT_USAGE) from None
    except OSError as error:
        err.write(f"rewriter rewrite: cannot keep the journal in {folder}: {error.strerror or error}\n")
        raise Stop(EXIT_SOME_FAILED) from None
    if args.resume and not existed and not args.quiet:
        err.write(f"rewriter rewrite: no journal at {folder}: nothing to resume, the run starts from the beginning\n")
    elif existed and not args.resume and not args.quiet:
        err.write(
            f"rewriter rewrite: {folder} held the journal of a run that did not finish: starting over "
            "(--resume goes on from where it stopped)\n"
        )
    return journal


def _work_folder(request: RunRequest) -> Path | None:
    """Where the run keeps its journal: beside the output (or the first input, in place);
    None when every job would be refused (the output is the input): nothing to keep."""
    from rewriter.run.journal import work_folder_for

    args, files = request.options, request.files
    if args.in_place:
        first = Path(files[0])
        return work_folder_for(first, folder=first.is_dir())
    output = Path(args.output)
    if any(same_file(name, output) for name in files if name != "-"):
        return None
    as_folder = len(files) > 1 or args.output.endswith(("/", os.sep)) or output.is_dir()
    as_folder = as_folder or any(Path(name).is_dir() for name in files if name != "-")
    # A web archive mirrored (or unpacked) into -o DIR: DIR is a folder, made or not yet.
    as_folder = as_folder or bool(_mirrors(request)[1])
    return work_folder_for(output, folder=as_folder)


def _mirrors(request: RunRequest) -> tuple[list[str], list[Job]]:
    """The inputs that are not web archives mirrored into a folder, and the archives that are:
    each named with ``-o DIR`` is a job mirroring it into the folder, its pages rewritten
    against their URLs (the archive itself is never changed), done by the pipeline like any
    input (rewriter.run.pipeline.MirrorFolder). One archive written to ``-o OUT.warc`` or
    ``OUT.warc.gz``, or to standard output, is a WARC out: a job of the pipeline, like any
    other input (and so is an archive found in a folder: it keeps its path and its format)."""
    files, kinds = list(request.files), request.kinds
    # rewriter.containers.warc, with warcio and fsspec, is imported only for archives (0.28 s).
    warcs = [name for name in files if (kind := kinds.get(name)) is not None and kind.format in ("warc", "arc")]
    output = request.options.output
    if not warcs or output in (None, "-"):
        return files, []
    # -o OUT.warc[.gz] (one input) is a WARC out; any other -o is the folder the pages go to
    # (unpack's -o always is: its records unpacked, rewriter.cli.verbs.bundle).
    unpack = request.verb == "unpack"
    warc_out = not unpack and len(files) == 1 and output.lower().endswith((".warc", ".warc.gz"))
    if warc_out and not Path(output).is_dir():
        return files, []
    from rewriter.run.batch import Job

    mirrors = []
    for name in warcs:
        folder = Path(output)
        if len(files) > 1:  # one folder each, named after the file
            stem = Path(name).name
            for suffix in (".gz", ".warc", ".arc"):
                stem = stem.removesuffix(suffix)
            folder = folder / stem
        kind = kinds[name]
        assert kind is not None  # warcs holds only the named archives
        mirrors.append(Job(name, str(folder), name, format=kind.format, why=kind.reason, mirror=True, unpack=unpack))
    return [name for name in files if name not in warcs], mirrors


def _planned(
    request: RunRequest,
    others: list[str],
    mirrors: list[Job],
    journal: Journal | None,
    leftovers: Leftovers,
    settings: Settings,
    *,
    read_whole: bool = True,
) -> Iterator[Job | str]:
    """The run's plan: the archives mirrored into folders (their pieces), then the other inputs
    (*read_whole*: the planner's small documents go to their jobs, see iter_plan)."""
    from rewriter.containers.pieces import PIECE_SIZE
    from rewriter.run.batch import iter_plan
    from rewriter.run.pipeline import MirrorFolder

    args = request.options
    size = args.piece_size or PIECE_SIZE
    for job in mirrors:
        if journal is None:  # never: a run with a folder out keeps one
            yield Problem("mirror", "not mirrored: the run keeps no journal", (job.shown,))
            continue
        yield from MirrorFolder.jobs(job, settings, journal, piece_size=size, leftovers=leftovers)
    if others:
        pieces: dict[str, Any] = {"piece_size": size, "max_message": settings.max_size} if journal is not None else {}
        output = args.output if not mirrors or len(request.files) == 1 else os.path.join(args.output, "")
        # Jobs done in other processes read their files anyway: the small ones are told there.
        yield from iter_plan(
            others, output, **pieces, **_options(request), read_whole=read_whole, untold=not read_whole
        )
