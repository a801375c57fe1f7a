"""Scale-out on Dask: the pipeline of :mod:`rewriter.run.pipeline` with its jobs as Dask tasks.

Nothing here rewrites anything: every function plans jobs as ``rewriter rewrite`` plans
them (:func:`rewriter.run.batch.iter_plan`), and runs them through
:func:`rewriter.run.pipeline.execute` on a :class:`rewriter.run.executors.DaskExecutor`, so that
outputs and reports are byte for byte those of the serial run. :func:`run_jobs` does a
plan; :func:`rewrite_files` plans files, folders and glob patterns under an output folder;
:func:`rewrite_mbox_messages` does one mbox in pieces (each piece a task) and gives a record
per message as the pieces finish; :func:`rewrite_warc_records` mirrors a WARC into a folder
in pieces too (each a task), planned here.

Where the tasks run: a ``dask.distributed`` cluster given as ``client`` (a ``Client``, a
cluster object, or a scheduler address such as ``"tcp://10.0.0.5:8786"``), else Dask's local
scheduler (``scheduler="processes"``, ``"threads"``, ``"synchronous"``), or a ``LocalCluster``
on 127.0.0.1 with ``scheduler="distributed"``. Workers read and write the paths they are
given: on a cluster of several machines they must see one shared file system. Standard input
(``-``) is always read here, never in a task. Without Dask the module still imports, and each
function raises :class:`DaskMissing` (an ``ImportError``) naming the extra to install:
``pip install 'rewriter[dask]'``.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> (folder / "site").mkdir()
>>> _ = (folder / "site" / "page.html").write_bytes(b"<!-- saved from url=(0019)http://example.org/ --><a href=x>x</a>")
>>> records = rewrite_files([str(folder / "site")], folder / "out", scheduler="synchronous")
>>> [(pathlib.Path(record["file"]).name, record["state"], record["rewritten"]) for record in records]
[('page.html', 'rewritten', 1)]
>>> (folder / "out" / "page.html").read_bytes()[-34:]
b'<a href=http://example.org/x>x</a>'
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import dataclasses
import glob
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rewriter.disk.files import is_temporary
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem, said_all
from rewriter.run.executors import EXTRA_HINT, DaskExecutor, DaskMissing, Scheduler
from rewriter.run.jobs import SAID_FIELDS, Job, Outcome, Settings
from rewriter.run.plan import iter_plan, matches
from rewriter.run.work import run_job

try:
    import dask  # noqa: F401

    _MISSING: ImportError | None = None
except ImportError as error:  # pragma: no cover - depends on the environment
    _MISSING = error
    # The module still imports (pytest --doctest-modules collects it); its example needs Dask.
    __doc__ = (__doc__ or "").split("\n>>> ", 1)[0] + f"\n\n(The example needs Dask: {EXTRA_HINT}.)\n"

if TYPE_CHECKING:
    from distributed import Client

    from rewriter.containers.mailbox import MboxReport
    from rewriter.containers.warc import WarcEntry, WarcReport

__all__ = [
    "EXTRA_HINT",
    "DaskMissing",
    "as_record",
    "rewrite_files",
    "rewrite_mbox_messages",
    "rewrite_warc_records",
    "run_jobs",
]

WINDOW = 64 << 20  # the size of one piece of an mbox: one task's share


def _require() -> None:
    if _MISSING is not None:
        raise DaskMissing(f"rewriter.run.dask needs Dask and dask.distributed: {EXTRA_HINT}") from _MISSING


def _executor(client: Client | str | None, scheduler: Scheduler, workers: int | None) -> DaskExecutor:
    _require()
    return DaskExecutor(client, workers=workers, scheduler="distributed" if client is not None else scheduler)


def run_jobs(
    jobs: Iterable[Job],
    settings: Settings = Settings(),  # noqa: B008 - immutable
    *,
    client: Client | str | None = None,
    scheduler: Scheduler = "processes",
    workers: int | None = None,
) -> list[Outcome]:
    """Do *jobs* in Dask tasks; the outcomes in the order of *jobs*, as
    :func:`rewriter.run.batch.run` gives them (a drop-in for it). A job reading standard input is
    done here. A task whose worker dies is tried once more, then fails its jobs, each reported
    in its outcome; nothing is raised for what the inputs hold."""
    _require()
    jobs = list(jobs)
    here = {index: run_job(job, settings) for index, job in enumerate(jobs) if job.source == "-"}
    remote = [job for job in jobs if job.source != "-"]
    done = iter(_execute(remote, settings, client, scheduler, workers))
    return [here[index] if index in here else next(done) for index in range(len(jobs))]


def _execute(
    plan: Iterable[Job | str],
    settings: Settings,
    client: Client | str | None,
    scheduler: Scheduler,
    workers: int | None,
    journal: object = None,
) -> Iterator[Outcome]:
    """The pipeline's outcomes on Dask; a problem of the plan becomes a failed outcome."""
    from rewriter.run.pipeline import execute

    with _executor(client, scheduler, workers) as executor:
        for item in execute(plan, settings, executor, journal=journal):  # type: ignore[arg-type]
            if isinstance(item, str):
                failed = Outcome(item.where[0] if isinstance(item, Problem) and item.where else "")
                failed.state, failed.ok = "failed", False
                failed.messages.append(item)
                yield failed
            else:
                yield item


def _has_magic(text: str) -> bool:
    return any(char in text for char in "*?[")


def _glob_jobs(pattern: str, out_dir: Path, exclude: Sequence[str]) -> list[Job]:
    """A job per regular file *pattern* matches (``**`` included), its target under *out_dir*
    at its path under the pattern's leading folder (the part before the first wildcard)."""
    parts = Path(pattern).parts
    fixed = next(number for number, part in enumerate(parts) if _has_magic(part))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    jobs = []
    for found in sorted(glob.glob(pattern, recursive=True)):
        path = Path(found)
        if is_temporary(path.name):
            continue  # ours, left by a killed run
        if not path.is_file() or path.is_symlink():
            continue
        relative = path.relative_to(root) if path.is_relative_to(root) else Path(path.name)
        if matches(relative.as_posix(), exclude):
            continue
        jobs.append(Job(found, str(out_dir / relative), found, root=str(out_dir)))  # no link below out_dir followed
    return jobs


def as_record(report: Outcome | MboxReport | WarcEntry) -> dict[str, object]:
    """A plain dict of one report: a file's :class:`~rewriter.run.batch.Outcome` (without its
    output bytes and pipeline bookkeeping), an mbox message's
    :class:`~rewriter.containers.mailbox.MboxReport` (without the engine's result), or a WARC record's
    :class:`~rewriter.containers.warc.WarcEntry`. Tuples become lists.

    >>> as_record(Outcome("a.html", "rewritten", rewritten=2))["rewritten"]
    2
    """
    left_out = ("output", "result", "report", "identity", "retried", "resumed", "piece", "units")
    fields = [field.name for field in dataclasses.fields(report) if field.name not in left_out]
    record: dict[str, object] = {}
    for name in fields:
        value = getattr(report, name)
        if name in SAID_FIELDS:  # an outcome's problems: the lines standard error gets, as text
            value = said_all(value)
        record["file" if name == "shown" else name] = list(value) if isinstance(value, (list, tuple)) else value
    return record


def rewrite_files(
    inputs: str | Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    settings: Settings = Settings(),  # noqa: B008 - immutable
    client: Client | str | None = None,
    scheduler: Scheduler = "processes",
    workers: int | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> list[dict[str, object]]:
    """Rewrite files, folders and glob patterns into *out_dir*; one record per input file.

    Paths and folders are planned as ``rewriter rewrite INPUT... -o OUT_DIR`` plans them
    (a folder is walked for *include* globs less *exclude*, and keeps its relative paths;
    with several inputs, each goes under its own name). A glob pattern (``pages/**/*.html``)
    takes every regular file it matches, at its path under the pattern's leading folder.
    Each file is one :func:`rewriter.run.batch.run_job`, written atomically. A record is
    :func:`as_record` of its outcome plus ``target``; an input that cannot be planned is a
    record with ``state`` ``"failed"``.
    """
    _require()
    names = [inputs] if isinstance(inputs, str) else list(inputs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)  # a folder, so that the plan puts every input under it
    planned = _files_plan(names, out, include, exclude)
    jobs = [item for item in planned if isinstance(item, Job)]
    outcomes = iter(run_jobs(jobs, settings, client=client, scheduler=scheduler, workers=workers))
    records = [{**as_record(next(outcomes)), "target": item.target} for item in planned if isinstance(item, Job)]
    return records + [_unplanned(item, names) for item in planned if isinstance(item, str)]


def _files_plan(names: list[str], out: Path, include: Sequence[str], exclude: Sequence[str]) -> list[Job | str]:
    """:func:`rewrite_files`'s plan: the paths and folders of *names* planned as the command
    line plans them, then each glob pattern's matches; a job whose output is an earlier job's
    is a problem (a str), not a job."""
    patterns = [name for name in names if _has_magic(name) and not os.path.lexists(name)]
    literal = [name for name in names if name not in patterns]
    planned: list[Job | str] = []
    if literal:
        planned += iter_plan(
            literal, str(out), include=include, exclude=exclude, read_whole=False
        )  # Dask tasks read their files
    for pattern in patterns:
        planned += _glob_jobs(pattern, out, exclude) or [Problem("input", "no file matches", (pattern,))]
    seen: set[str] = set()
    for index, item in enumerate(planned):
        if isinstance(item, Job):
            key = item.target or item.source
            if key in seen:
                planned[index] = Problem("output", f"its output {key} is another input's: skipped", (item.shown,))
            seen.add(key)
    return planned


def _unplanned(problem: str, names: Sequence[str]) -> dict[str, object]:
    """The record of an input that could not be planned (*problem*), named by the input of
    *names* it is of."""
    place = problem.where[:1] if isinstance(problem, Problem) else ()
    shown = place[0] if place and place[0] in names else None
    failed = Outcome(shown or "")
    failed.state, failed.ok = "failed", False
    failed.messages.append(problem)
    return {**as_record(failed), "file": shown, "target": None}


def rewrite_mbox_messages(
    mbox_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    url: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    client: Client | str | None = None,
    scheduler: Scheduler = "processes",
    workers: int | None = None,
    max_message: int | None = None,
    window: int = WINDOW,
) -> Iterator[dict[str, object]]:
    """Rewrite the mbox at *mbox_path* into *out_path*, in pieces of about *window* bytes,
    each a Dask task; yield a record per message (:func:`as_record` of the
    :class:`~rewriter.containers.mailbox.MboxReport` that :func:`~rewriter.containers.mailbox.rewrite_mbox` would
    yield) as the pieces finish, in order, holding none of them.

    The output is byte for byte ``rewrite_mbox``'s. A message over *max_message* bytes
    (default ``MAX_MESSAGE``) is copied through unchanged, as there. *out_path* is written
    atomically, with the mode of the input, when the last piece is done; until then the
    pieces wait in ``.NAME.rewriter-run`` beside it.
    """
    _require()
    from rewriter.containers.mailbox import MAX_MESSAGE
    from rewriter.run.journal import Journal, work_folder_for

    source, target = Path(mbox_path), Path(out_path)
    limit = MAX_MESSAGE if max_message is None else max_message
    settings = Settings(url=url, policy=policy, max_size=limit, units=True, format="mbox")
    job = Job(str(source), str(target), str(source), format="mbox")
    journal = Journal.open(work_folder_for(target, folder=False), {}, resume=False)
    finished = False
    try:
        for outcome in _execute(_pieces(job, window, limit), settings, client, scheduler, workers, journal):
            yield from outcome.units
            for message in outcome.messages if outcome.state == "failed" and not outcome.units else ():
                raise OSError(message)
        finished = True
    finally:
        journal.close(finished=finished)


def _pieces(job: Job, size: int, max_message: int) -> Iterator[Job]:
    """*job*'s mbox as pieces of about *size* bytes (one piece at least)."""
    from rewriter.containers.mailbox import plan_mbox

    with open(job.source, "rb") as stream:
        for piece in plan_mbox(stream, piece_size=max(1, size), max_message=max_message):
            yield dataclasses.replace(job, piece=piece)


def rewrite_warc_records(
    warc: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    client: Client | str | None = None,
    scheduler: Scheduler = "processes",
    workers: int | None = None,
    window: int = WINDOW,
    max_size: int | None = None,
) -> WarcReport:
    """:func:`rewriter.containers.warc.rewrite_warc` on Dask: the same files, manifest and
    :class:`~rewriter.containers.warc.WarcReport`. The archive is read once here (which file
    each record becomes, :func:`~rewriter.containers.warc.plan_mirror`), then written in pieces
    of about *window* bytes, each a Dask task, as ``rewriter rewrite crawl.warc.gz -o DIR``
    does (:class:`rewriter.run.pipeline.MirrorFolder`); the plan and the pieces' notes wait in
    ``.DIR.rewriter-run`` beside the folder until the manifest is written. *max_size*: the
    decoded bytes of one body (None: rewrite_warc's default)."""
    _require()
    from rewriter.containers.warc import MAX_BODY, WarcReport, finish_mirror
    from rewriter.run.journal import Journal, work_folder_for
    from rewriter.run.pipeline import MirrorFolder

    source, target = Path(warc), Path(out_dir)
    settings = Settings(policy=policy, max_size=MAX_BODY if max_size is None else max_size)
    job = Job(str(source), str(target), str(source), format="warc", mirror=True)
    journal = Journal.open(work_folder_for(target, folder=False), {}, resume=False)
    finished = False
    try:
        pieces = list(MirrorFolder.jobs(job, settings, journal, piece_size=max(1, window)))
        problem = next((item for item in pieces if isinstance(item, str)), None)
        if problem is not None:  # the folder cannot be made, or the archive not read: nothing written
            finished = True
            detail = problem.detail if isinstance(problem, Problem) else problem
            return WarcReport(source, target, None, (), (), 0, (detail,))
        for outcome in _execute(pieces, settings, client, scheduler, workers, journal):
            for message in outcome.messages:  # a piece's task that did nothing (it died)
                if isinstance(message, Problem) and message.code == "not-done":
                    raise OSError(f"{warc}: a Dask task stopped: {message.detail}")
        report = finish_mirror(MirrorFolder.done(job, journal))  # the manifest is there: the same, written once
        finished = True
        return report
    finally:
        journal.close(finished=finished)
