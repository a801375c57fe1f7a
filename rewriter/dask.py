"""Scale-out on Dask: files, mbox messages and WARC pages rewritten as ``dask.bag`` tasks.

The engines are the ones every other entry point uses; only where the work runs changes.
:func:`run_jobs` does a plan of :class:`rewriter.batch.Job` (``batch.plan``) with
:func:`rewriter.batch.run_job` in Dask tasks, and gives the outcomes in plan order, as
``batch.run`` does. :func:`rewrite_files` plans globs, files and folders under an output
folder and returns one plain dict per file. :func:`rewrite_mbox_messages` splits an mbox
with the splitter of :mod:`rewriter.mailbox` and rewrites its messages in tasks; the
output is byte-identical to :func:`rewriter.mailbox.rewrite_mbox`'s. :func:`rewrite_warc_records`
rewrites the pages of a WARC in tasks; the mirror and the report are those of
:func:`rewriter.warc.rewrite_warc`.

Where the tasks run: Dask's local scheduler by default (``scheduler="processes"``, or
``"threads"``, ``"synchronous"``), or a ``dask.distributed`` cluster given as ``client``
(a ``Client``, a cluster object, or a scheduler address such as ``"tcp://10.0.0.5:8786"``).
Workers read and write the paths they are given: on a cluster of several machines they
must see one shared file system. Standard input (``-``) is always read here, never in a task.
Without Dask the module still imports, and each function raises :class:`DaskMissing` (an
``ImportError``) naming the extra to install: ``pip install 'rewriter[dask]'``.

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

import contextlib
import dataclasses
import glob
import heapq
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from rewriter.batch import Job, Outcome, Settings, plan, run_job
from rewriter.files import is_temporary
from rewriter.policy import DEFAULT_POLICY, Policy

EXTRA_HINT = "pip install 'rewriter[dask]'"

try:
    import dask
    import dask.bag

    _MISSING: ImportError | None = None
except ImportError as error:  # pragma: no cover - depends on the environment
    _MISSING = error
    # The module still imports (pytest --doctest-modules collects it); its example needs Dask.
    __doc__ = (__doc__ or "").split("\n>>> ", 1)[0] + f"\n\n(The example needs Dask: {EXTRA_HINT}.)\n"


class DaskMissing(ImportError):
    """Dask is not installed: raised by every function of this module that needs it."""


def _require() -> None:
    if _MISSING is not None:
        raise DaskMissing(f"rewriter.dask needs Dask and dask.distributed: {EXTRA_HINT}") from _MISSING


if TYPE_CHECKING:
    from distributed import Client

    from rewriter.mailbox import MboxReport
    from rewriter.warc import WarcDocument, WarcEntry, WarcReport, _Planned

__all__ = [
    "EXTRA_HINT",
    "DaskMissing",
    "as_record",
    "rewrite_files",
    "rewrite_mbox_messages",
    "rewrite_warc_records",
    "run_jobs",
]

Scheduler = Literal["processes", "threads", "synchronous"]
T = TypeVar("T")
R = TypeVar("R")

WINDOW = 64 << 20  # mbox messages or WARC bodies held in memory at once, in bytes
TASKS_PER_THREAD = 4  # batches per worker thread: big enough to amortise, small enough to balance


# --------------------------------------------------------------------------
# Where the tasks run
# --------------------------------------------------------------------------


@contextlib.contextmanager
def _connected(client: Client | str | None) -> Iterator[Client | None]:
    """A distributed ``Client`` for *client* (opened and closed here for an address or a
    cluster), or None for the local scheduler."""
    if client is None or _is_client(client):
        yield client
        return
    try:
        from distributed import Client
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise DaskMissing(f"a Dask cluster needs dask.distributed: {EXTRA_HINT}") from error
    with Client(client) as connected:  # an address ("tcp://host:port") or a cluster object
        yield connected


def _is_client(value: object) -> bool:
    return type(value).__name__ == "Client" and hasattr(value, "compute") and hasattr(value, "nthreads")


def _threads(client: Client | None, workers: int | None) -> int:
    """How many tasks can run at once."""
    if client is not None:
        return max(1, sum(client.nthreads().values()))
    return max(1, workers or os.cpu_count() or 1)


def _bins(sizes: Sequence[int], count: int) -> list[list[int]]:
    """Item indices in *count* batches of about equal size: the largest first, each to the
    lightest batch so far (so that a big file does not finish the run alone)."""
    count = max(1, min(count, len(sizes)))
    heap = [(0, number) for number in range(count)]
    bins: list[list[int]] = [[] for _ in range(count)]
    for index in sorted(range(len(sizes)), key=lambda index: (-sizes[index], index)):
        load, number = heapq.heappop(heap)
        bins[number].append(index)
        heapq.heappush(heap, (load + max(sizes[index], 1), number))
    return [batch for batch in bins if batch]


def _apply(batch: list[tuple[int, Any]], function: Callable[..., Any], *args: Any) -> list[tuple[int, Any]]:
    """One task: *function* on each item of a batch, with its position."""
    return [(index, function(item, *args)) for index, item in batch]


def _map(
    function: Callable[..., R],
    items: Sequence[T],
    sizes: Sequence[int],
    args: tuple[Any, ...],
    client: Client | None,
    scheduler: Scheduler,
    workers: int | None,
) -> list[R | BaseException]:
    """``function(item, *args)`` for every item, in a ``dask.bag`` of balanced batches;
    the results in item order. A batch whose task failed (a worker died) gives the
    exception for each of its items."""
    if not items:
        return []
    count = _threads(client, workers) * TASKS_PER_THREAD
    batches = [[(index, items[index]) for index in batch] for batch in _bins(sizes, count)]
    bag = dask.bag.from_sequence(batches, npartitions=len(batches)).map(_apply, function, *args)
    parts = bag.to_delayed()
    results: list[Any] = [None] * len(items)
    done: list[Any]
    if client is not None:
        futures = client.compute(parts)
        done = []
        for future in futures:
            try:
                done.append(future.result())
            except Exception as error:  # the task's worker died, or the task could not be sent
                done.append(error)
    else:
        try:
            options = {} if workers is None or scheduler == "synchronous" else {"num_workers": workers}
            done = list(dask.compute(*parts, scheduler=scheduler, **options))
        except Exception as error:  # the local pool broke: every item fails alike
            done = [error] * len(parts)
    for batch, part in zip(batches, done, strict=True):
        if isinstance(part, BaseException):
            for index, _ in batch:
                results[index] = part
            continue
        for values in part:  # a partition: the list of what _apply gave for its one batch
            for index, value in values:
                results[index] = value
    return results


# --------------------------------------------------------------------------
# Files: the batch engine's jobs
# --------------------------------------------------------------------------


def _size(job: Job) -> int:
    with contextlib.suppress(OSError):
        return os.stat(job.source).st_size
    return 0


def run_jobs(
    jobs: Sequence[Job],
    settings: Settings = Settings(),  # noqa: B008 - immutable
    *,
    client: Client | str | None = None,
    scheduler: Scheduler = "processes",
    workers: int | None = None,
) -> list[Outcome]:
    """Do *jobs* with :func:`rewriter.batch.run_job` in Dask tasks; the outcomes in the order
    of *jobs*, as :func:`rewriter.batch.run` gives them (a drop-in for it).

    *client*: a ``distributed.Client``, a cluster, or a scheduler address; None runs on
    the local *scheduler* with *workers* processes or threads (default: the cores). A job
    reading standard input is done here. A task whose worker dies fails its jobs, each
    reported in its outcome; nothing is raised for what the inputs hold.
    """
    _require()
    jobs = list(jobs)
    outcomes: list[Outcome | None] = [None] * len(jobs)
    remote = [index for index, job in enumerate(jobs) if job.source != "-"]
    for index, job in enumerate(jobs):
        if job.source == "-":
            outcomes[index] = run_job(job, settings)
    if remote:
        with _connected(client) as connected:
            chosen = [jobs[index] for index in remote]
            done = _map(run_job, chosen, [_size(job) for job in chosen], (settings,), connected, scheduler, workers)
        for index, outcome in zip(remote, done, strict=True):
            if isinstance(outcome, BaseException):
                outcome = Outcome(jobs[index].shown).fail(f"not rewritten: the worker stopped: {outcome}")
            outcomes[index] = outcome
    return outcomes  # type: ignore[return-value]


def _has_magic(text: str) -> bool:
    return any(char in text for char in "*?[")


def _glob_jobs(pattern: str, out_dir: Path, exclude: Sequence[str]) -> list[Job]:
    """A job per regular file *pattern* matches (``**`` included), its target under *out_dir*
    at its path under the pattern's leading folder (the part before the first wildcard)."""
    from rewriter.batch import _matches

    parts = Path(pattern).parts
    fixed = next(number for number, part in enumerate(parts) if _has_magic(part))
    root = Path(*parts[:fixed]) if fixed else Path(".")
    jobs = []
    for found in sorted(glob.glob(pattern, recursive=True)):
        path = Path(found)
        name = path.name
        if is_temporary(name):
            continue  # ours, left by a killed run
        if not path.is_file() or path.is_symlink():
            continue
        relative = path.relative_to(root) if path.is_relative_to(root) else Path(name)
        if _matches(relative.as_posix(), exclude):
            continue
        jobs.append(Job(found, str(out_dir / relative), found, root=str(out_dir)))  # no link below out_dir followed
    return jobs


def as_record(report: Outcome | MboxReport | WarcEntry) -> dict[str, object]:
    """A plain dict of one report: a file's :class:`~rewriter.batch.Outcome` (without its
    output bytes), an mbox message's :class:`~rewriter.mailbox.MboxReport` (without the
    engine's result), or a WARC record's :class:`~rewriter.warc.WarcEntry`. Tuples become lists.

    >>> as_record(Outcome("a.html", "rewritten", rewritten=2))["rewritten"]
    2
    """
    fields = [field.name for field in dataclasses.fields(report) if field.name not in ("output", "result")]
    record: dict[str, object] = {}
    for name in fields:
        value = getattr(report, name)
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
    Each file is one :func:`rewriter.batch.run_job`, written atomically. A record is
    :func:`as_record` of its outcome plus ``target``; an input that cannot be planned is a
    record with ``state`` ``"failed"``.
    """
    _require()
    names = [inputs] if isinstance(inputs, str) else list(inputs)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)  # a folder, so that plan() puts every input under it
    patterns = [name for name in names if _has_magic(name) and not os.path.lexists(name)]
    literal = [name for name in names if name not in patterns]
    jobs: list[Job] = []
    problems: list[tuple[str | None, str]] = []
    if literal:
        planned, found = plan(literal, str(out), include=include, exclude=exclude)
        jobs += planned
        problems += [(None, problem) for problem in found]
    for pattern in patterns:
        matched = _glob_jobs(pattern, out, exclude)
        if not matched:
            problems.append((pattern, f"rewriter: {pattern}: no file matches"))
        jobs += matched
    unique: dict[str, Job] = {}
    for job in jobs:
        key = job.target or job.source
        if key in unique:
            problems.append((job.shown, f"rewriter: {job.shown}: its output {key} is another input's: skipped"))
        else:
            unique[key] = job
    jobs = list(unique.values())
    outcomes = run_jobs(jobs, settings, client=client, scheduler=scheduler, workers=workers)
    records = [{**as_record(outcome), "target": job.target} for job, outcome in zip(jobs, outcomes, strict=True)]
    for shown, problem in problems:
        failed = Outcome(shown or "")
        failed.state, failed.ok = "failed", False
        failed.messages.append(problem)
        records.append({**as_record(failed), "file": shown, "target": None})
    return records


# --------------------------------------------------------------------------
# mbox: one task per batch of messages
# --------------------------------------------------------------------------


def _message_task(
    item: tuple[int, bool, bytes], url: str | None, policy: Policy
) -> tuple[bytes, tuple[int, int, int, int], tuple[str, ...], int, int]:
    """One message as :func:`rewriter.mailbox.rewrite_mbox` rewrites it: (output, counts,
    problems, quoted, relative)."""
    from rewriter.mailbox import rewrite_mbox_message

    index, has_separator, message = item
    output, counts, problems, quoted, relative, _ = rewrite_mbox_message(
        message, url, policy, unseparated=not has_separator and index == 0
    )
    return output, counts, tuple(problems), quoted, relative


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
) -> list[dict[str, object]]:
    """Rewrite the mbox at *mbox_path* into *out_path*, its messages in Dask tasks; one
    record per message (:func:`as_record` of the :class:`~rewriter.mailbox.MboxReport`
    that :func:`~rewriter.mailbox.rewrite_mbox` would yield).

    The mbox is split here, *window* bytes of messages at a time; each window's messages
    are rewritten in tasks and written back in order, so that the output is byte for byte
    ``rewrite_mbox``'s. A message over *max_message* bytes (default ``MAX_MESSAGE``) is
    copied through unchanged, as there. *out_path* is written atomically, with the mode
    of the input.
    """
    _require()
    from rewriter.files import mode_of, replacing
    from rewriter.mailbox import CHUNK_SIZE, MAX_MESSAGE, MboxReport, _split

    limit = MAX_MESSAGE if max_message is None else max_message
    source_path = Path(mbox_path)
    records: list[dict[str, object]] = []
    pending: list[tuple[int, int, bytes, bytes]] = []  # index, offset, separator, message
    with contextlib.ExitStack() as stack:
        connected = stack.enter_context(_connected(client))
        source = stack.enter_context(open(source_path, "rb"))
        target = stack.enter_context(replacing(Path(out_path), mode_of(source_path))).stream

        def flush() -> None:
            items = [(index, bool(separator), message) for index, _, separator, message in pending]
            sizes = [len(message) for _, _, _, message in pending]
            done = _map(_message_task, items, sizes, (url, policy), connected, scheduler, workers)
            for (index, offset, separator, message), result in zip(pending, done, strict=True):
                if isinstance(result, BaseException):
                    problem = f"not rewritten, kept as it was: the worker stopped: {result}"
                    result = (message, (0, 0, 0, 0), (problem,), 0, 0)
                output, counts, problems, quoted, relative = result
                target.write(separator)
                target.write(output)
                report = MboxReport(
                    index, offset, len(message), len(output), output != message, *counts, quoted, problems, relative
                )
                records.append(as_record(report))
            pending.clear()

        def spill(data: bytes) -> None:  # an oversize message, as it is read: what came before goes first
            flush()
            target.write(data)

        offset = held = 0
        for index, (separator, message, size) in enumerate(_split(source, CHUNK_SIZE, limit, spill)):
            if message is None:
                flush()
                problem = f"larger than {limit:,} bytes ({size:,}): copied unchanged, not rewritten"
                records.append(as_record(MboxReport(index, offset, size, size, False, problems=(problem,))))
                offset += size
                continue
            pending.append((index, offset, separator, message))
            offset += len(separator) + len(message)
            held += len(message)
            if held >= window:
                flush()
                held = 0
        flush()
    return records


# --------------------------------------------------------------------------
# WARC: one task per batch of pages
# --------------------------------------------------------------------------


def _page_task(item: tuple[_Planned, WarcDocument], policy: Policy) -> tuple[list[str], int, bytes | None]:
    """One page as :func:`rewriter.warc.rewrite_warc` rewrites it: (the record's problems,
    links rewritten, output to write or None)."""
    from rewriter.warc import _rendered

    planned, document = item
    output = _rendered(planned, document, policy, {}, {}, False)
    return planned.problems, planned.links, output


def rewrite_warc_records(
    warc: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    client: Client | str | None = None,
    scheduler: Scheduler = "processes",
    workers: int | None = None,
    window: int = WINDOW,
) -> WarcReport:
    """:func:`rewriter.warc.rewrite_warc` with the pages rewritten in Dask tasks: the same
    files, manifest and :class:`~rewriter.warc.WarcReport` (``[as_record(entry) for entry
    in report.entries]`` gives the records as dicts).

    Reading, naming and writing stay here (names are picked in one folder walk, and every
    file is written exclusively through the folder's descriptor); the pages go to the
    tasks *window* bytes of bodies at a time.
    """
    _require()
    from rewriter.warc import WarcDocument, WarcReport, _finish, _Folders, _open, _read_source, _store

    # rewriter.warc._mirror(unpack=False), but for where the pages are rewritten.
    warc, out_dir = Path(warc), Path(out_dir)

    opened = _open(warc, out_dir, policy, unpack=False)
    if isinstance(opened, WarcReport):
        return opened
    root, manifest, entries, planned, problems = opened
    with root:
        by_offset = {item.offset: item for item in planned if item.file is not None}
        folders = _Folders(root)
        try:
            with _connected(client) as connected:
                pending: list[tuple[_Planned, WarcDocument]] = []

                def flush() -> None:
                    sizes = [len(document.body or b"") for _, document in pending]
                    done = _map(_page_task, pending, sizes, (policy,), connected, scheduler, workers)
                    for (item, _), result in zip(pending, done, strict=True):
                        if isinstance(result, BaseException):
                            item.problems.append(f"offset {item.offset}: not rewritten: the worker stopped: {result}")
                            continue
                        item.problems, item.links, output = result
                        if output is not None:
                            _store(folders, item, output)
                    pending.clear()

                held = 0
                for item in _read_source(warc, lambda offset, *_: offset in by_offset):
                    if isinstance(item, WarcDocument) and item.offset in by_offset:
                        pending.append((by_offset[item.offset], item))
                        held += len(item.body or b"")
                        if held >= window:
                            flush()
                            held = 0
                flush()
        finally:
            folders.close()
        return _finish(warc, out_dir, root, manifest, entries, problems)
