"""Where jobs run: in this process, in worker processes, or on Dask; one ``map`` for all three.

An executor's :meth:`~Executor.map` takes a function, a stream of items and values every
call shares, and yields ``(index, result)`` for each item as it finishes, *index* being the
item's place in the stream. The stream is read only as the executor has room for more
(a few items per worker ahead), so that planning a million files or a 50 GB mbox costs the
caller no memory; the caller puts results back in order where it needs to (the pipeline
does, in :mod:`rewriter.run.batch`). A job whose worker died gives a
:class:`~rewriter.run.workers.Failed` with ``died=True``, which the pipeline tries once more.

- :class:`Serial`: in this process, in order (one worker, and every test's reference).
- :class:`Processes`: :mod:`rewriter.run.workers`' processes, which die with the command.
- :class:`DaskExecutor`: a ``dask.distributed`` cluster (an address, a ``Client``, a
  cluster object) or a ``LocalCluster`` on 127.0.0.1 started for the run; or one of Dask's
  local schedulers. Workers read and write the paths they are given, so a cluster of
  several machines needs one shared file system.

Any object with the same ``map`` serves (the PySpark recipe in ``docs/spark.md`` is one).

>>> sorted(Serial().map(divmod, [7, 9], 2))
[(0, (3, 1)), (1, (4, 1))]
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from distributed import Client

    from rewriter.run.workers import Failed  # at run time only where one is made: workers imports multiprocessing

__all__ = [
    "BATCH_JOBS",
    "EXTRA_HINT",
    "SMALL_PLAN",
    "DaskExecutor",
    "DaskMissing",
    "Executor",
    "Processes",
    "Serial",
    "tune_allocator",
]

Item = TypeVar("Item")
Result = TypeVar("Result")

EXTRA_HINT = "pip install 'rewriter[dask]'"
AHEAD = 2  # items in flight per worker on Dask: the one it does and the next
# Jobs in one batch at most, on every executor here: a batch costs one round trip to its worker (a
# Dask task: about a millisecond of the scheduler's), one commit of its pages and one sync of each
# of its folders, and its engines run between two bursts of system calls (128 rather than 32: 0.84-0.92
# of the user CPU on small pages). rewriter.run.pipeline.Batching sizes each batch, by bytes too.
BATCH_JOBS = 128

# A plan no larger than this (jobs, input bytes) is done in this process even where worker
# processes were asked for: starting them, and the small first batches that spread a run over
# them, cost more than they save. On pages of 1.6 KB, -j 2 took 1.18 times -j 1's time for 22
# pages, 1.06 for 200, 1.00 for 400 and 0.84 for 800 (docs/performance.md).
SMALL_PLAN = (256, 512 << 10)
# REWRITER_SMALL_PLAN=JOBS[,BYTES] sets it for a run; 0 starts the workers whatever the plan (the
# test suite does: its plans are small, and its tests of the workers are about the workers).
SMALL_PLAN_VARIABLE = "REWRITER_SMALL_PLAN"


# glibc's allocator for a run's process (and the workers it forks): blocks up to this size come
# from the heap, not from a mapping of their own, and this much free memory at the heap's top
# stays with the process. With its adaptive defaults, each page's text and output (100 KB to a
# few MB) comes and goes as fresh mappings and trimmed heap, which the kernel faults in and
# zeroes again for the next page: 29,000 page faults on the corpus against 11,000, 3 % of the
# command line's CPU (docs/decisions.md). What a page held then stays for the next one.
MMAP_THRESHOLD = 32 << 20  # glibc's largest (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems)
TRIM_THRESHOLD = 64 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
_ALLOCATOR_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def tune_allocator() -> bool:
    """Set :data:`MMAP_THRESHOLD` and :data:`TRIM_THRESHOLD` for this process (``mallopt``),
    for a run that reads document after document; whether it was done: only with glibc, and
    never over the user's own settings (``MALLOC_*_`` variables, ``GLIBC_TUNABLES``). The
    command line does it for its runs; a program that uses the library decides for itself."""
    if not sys.platform.startswith("linux") or any(name in os.environ for name in _ALLOCATOR_VARIABLES):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 - glibc, whose mallopt takes these (musl's does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


class DaskMissing(ImportError):
    """Dask (or dask.distributed) is not installed."""


class Executor(Protocol):
    """What runs a pipeline's jobs: each item it is given is a batch of them."""

    workers: int
    batch: int  # jobs of one batch at most (rewriter.run.pipeline.Batching: BATCH_JOBS at most)

    def map(
        self, function: Callable[..., Result], items: Iterable[Any], *shared: Any
    ) -> Iterator[tuple[int, Result | Failed]]:
        """``(index, function(item, *shared))`` for each item, as each finishes."""
        ...


class Serial:
    """Every job in this process, one after another, in order, up to BATCH_JOBS a batch: a batch's
    pages are made durable and put in place together when it ends, its folders synced once
    (``rewriter.run.batch.run_batch``)."""

    workers = 1
    batch = BATCH_JOBS
    # Jobs run in this process: the bytes the planner read of a small file (Job.data) go with
    # them. Any other executor's jobs go without (rewriter.run.pipeline.execute): a worker reads
    # its files itself, rather than have a pipe or a scheduler carry them.
    in_process = True

    def map(
        self, function: Callable[..., Result], items: Iterable[Any], *shared: Any
    ) -> Iterator[tuple[int, Result | Failed]]:
        for index, item in enumerate(items):
            try:
                yield index, function(item, *shared)
            except Exception as error:  # one job fails; the next goes on
                from rewriter.run.workers import Failed

                yield index, Failed(f"{type(error).__name__}: {error}")


def small_plan() -> tuple[int, int] | None:
    """:data:`SMALL_PLAN`, or what ``REWRITER_SMALL_PLAN`` says (None: ``0``, no plan is small)."""
    value = os.environ.get(SMALL_PLAN_VARIABLE, "").strip()
    if not value:
        return SMALL_PLAN
    try:
        jobs, _, size = value.partition(",")
        most = (int(jobs), int(size) if size else SMALL_PLAN[1])
    except ValueError:
        return SMALL_PLAN
    return None if most[0] <= 0 else most


class Processes:
    """*workers* processes of :mod:`rewriter.run.workers` (fork where the system has it), each
    taking a batch of jobs at a time, as :class:`Serial` does them (its pages committed together).
    A worker that dies costs its batch: each job of it is done once more, alone.

    A plan of at most *small* (jobs, input bytes; by default :func:`small_plan`) is done in this
    process, as :class:`Serial` would (:func:`rewriter.run.pipeline.execute` reads that far
    ahead to know); None: every plan goes to the workers."""

    batch = BATCH_JOBS

    def __init__(self, workers: int, small: tuple[int, int] | Literal["default"] | None = "default") -> None:
        self.workers = max(1, workers)
        self.small = small_plan() if small == "default" else small

    def map(
        self, function: Callable[..., Result], items: Iterable[Any], *shared: Any
    ) -> Iterator[tuple[int, Result | Failed]]:
        from rewriter.run.workers import map_unordered

        return map_unordered(function, items, self.workers, shared=shared)


Scheduler = Literal["distributed", "processes", "threads", "synchronous"]


class DaskExecutor:
    """Jobs as Dask tasks.

    *client*: a ``distributed.Client``, a cluster object, or a scheduler address
    (``tcp://10.0.0.5:8786``); with none, ``scheduler="distributed"`` starts a
    ``LocalCluster`` of *workers* processes (one thread each) on 127.0.0.1 for as long as
    the executor is open, and ``"processes"``, ``"threads"`` or ``"synchronous"`` use
    Dask's local schedulers (results then come a window of tasks at a time). On a cluster
    this executor starts, a task whose worker dies fails at once (Dask's
    ``allowed-failures`` is 0) so that the pipeline retries it and names it; a cluster of
    the caller's retries by its own settings, unseen.
    """

    def __init__(
        self,
        client: Client | str | object | None = None,
        *,
        workers: int | None = None,
        scheduler: Scheduler = "distributed",
    ) -> None:
        try:
            import dask  # noqa: F401
        except ImportError as error:
            raise DaskMissing(f"running on Dask needs the dask extra: {EXTRA_HINT}") from error
        if client is not None or scheduler == "distributed":
            try:
                import distributed  # noqa: F401
            except ImportError as error:
                raise DaskMissing(f"a Dask cluster needs dask.distributed: {EXTRA_HINT}") from error
        self.batch = BATCH_JOBS
        self.given = client
        self.scheduler = scheduler
        self.requested = workers
        self.client: Client | None = None
        self.stack = contextlib.ExitStack()
        self.workers = max(1, workers or os.cpu_count() or 1)

    def __enter__(self) -> DaskExecutor:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Connect to the cluster, or start the local one (idempotent)."""
        if self.client is not None or (self.given is None and self.scheduler != "distributed"):
            return
        from distributed import Client, LocalCluster

        if type(self.given).__name__ == "Client":
            self.client = self.given  # type: ignore[assignment]
        elif self.given is not None:  # an address or a cluster object: ours to close
            self.client = self.stack.enter_context(Client(self.given))
        else:
            import dask

            # The scheduler's HTTP server warns when its usual port is taken, and then takes
            # another: nothing for the user to do, so nothing said.
            # Its workers sample their own stacks every 10 ms (Dask's profiler) and their memory
            # every 100 ms: 5-7 % of a run's CPU, for a dashboard no one sees here. Each worker's
            # event loop wakes every 20 ms to time itself and every 500 ms to read the system's
            # counters; each wake takes the GIL from the task, which then waits for the loop's
            # thread to get a core (both are busy with tasks): jobs took 12 % more wall time
            # than in our worker processes. And the nanny starts workers with
            # MALLOC_TRIM_THRESHOLD_=65536, so that glibc hands freed memory back at once, and
            # the next page's allocations fault it in again: 4-7 % of the jobs' CPU. They get
            # the allocator settings of our own processes instead (tune_allocator).
            quiet = {
                "distributed.scheduler.allowed-failures": 0,
                "distributed.worker.profile.enabled": False,
                "distributed.worker.memory.monitor-interval": "1s",
                "distributed.admin.tick.interval": "1s",
                "distributed.admin.system-monitor.interval": "5s",
                "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": str(TRIM_THRESHOLD),
                "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD),
            }
            with dask.config.set(quiet), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                cluster = self.stack.enter_context(
                    LocalCluster(
                        n_workers=self.workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        dashboard_address=None,
                        # A worker whose heartbeat is in flight as the cluster closes logs the
                        # failure with its traceback at ERROR, to the run's standard error; a task
                        # that fails or a worker that dies comes back as its job's outcome, so
                        # Dask's own log says nothing the run does not.
                        silence_logs=50,  # logging.CRITICAL (logging itself is not imported for it)
                    )
                )
                self.client = self.stack.enter_context(Client(cluster))
        assert self.client is not None
        self.workers = max(1, sum(self.client.nthreads().values()))

    def close(self) -> None:
        self.stack.close()
        self.client = None

    def map(
        self, function: Callable[..., Result], items: Iterable[Any], *shared: Any
    ) -> Iterator[tuple[int, Result | Failed]]:
        self.open()
        if self.client is None:
            return self._local(function, items, shared)
        return self._distributed(self.client, function, items, shared)

    def _distributed(
        self, client: Client, function: Callable[..., Result], items: Iterable[Any], shared: tuple[Any, ...]
    ) -> Iterator[tuple[int, Result | Failed]]:
        from distributed import as_completed

        from rewriter.run.workers import Failed

        # Each shared value goes to every worker once, not with every task.
        sent = [client.scatter(value, broadcast=True, hash=False) for value in shared]
        stream = enumerate(items)
        running: dict[Any, int] = {}
        finished = as_completed()

        def submit() -> bool:
            taken = next(stream, None)
            if taken is None:
                return False
            index, item = taken
            future = client.submit(function, item, *sent, pure=False)
            running[future] = index
            finished.add(future)
            return True

        room = self.workers * AHEAD
        while len(running) < room and submit():
            pass
        try:
            for future in finished:
                index = running.pop(future)
                result: Result | Failed
                try:
                    result = future.result()
                except Exception as error:  # the task's worker died, or the task could not be sent
                    died = type(error).__name__ in ("KilledWorker", "CommClosedError", "FutureCancelledError")
                    result = Failed(f"the Dask worker stopped: {type(error).__name__}: {error}", died=died)
                future.release()
                yield index, result
                submit()
        finally:
            for future in running:
                future.cancel()
            for future in sent:
                future.release()

    def _local(
        self, function: Callable[..., Result], items: Iterable[Any], shared: tuple[Any, ...]
    ) -> Iterator[tuple[int, Result | Failed]]:
        import dask

        from rewriter.run.workers import Failed

        window: list[tuple[int, Any]] = []
        options = {} if self.scheduler == "synchronous" else {"num_workers": self.workers}

        def flush() -> Iterator[tuple[int, Result | Failed]]:
            calls = [dask.delayed(function, pure=False)(item, *shared) for _, item in window]
            try:
                done = list(dask.compute(*calls, scheduler=self.scheduler, **options))
            except Exception as error:  # the local pool broke: every task of the window fails alike
                done = [Failed(f"the Dask scheduler stopped: {type(error).__name__}: {error}", died=True)] * len(calls)
            yield from zip((index for index, _ in window), done, strict=True)
            window.clear()

        for taken in enumerate(items):
            window.append(taken)
            if len(window) >= self.workers * 4:
                yield from flush()
        if window:
            yield from flush()
