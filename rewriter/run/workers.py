"""Worker processes that do a stream of jobs and give each result back as it finishes.

Each worker is a process with one pipe to the parent. The parent takes jobs from the
stream only as workers need them, keeps two in hand for every worker (so a worker never
waits for the parent between jobs) and yields each result with the job's index as it
comes (:func:`map_unordered`); :func:`run_ordered` puts them back in list order. A worker
that dies (killed, out of memory, a crash in a C library) costs the job it was doing,
which comes back as a :class:`Failed`; the jobs it held but had not started go to the
other workers, and a new worker takes its place.

Why not :class:`concurrent.futures.ProcessPoolExecutor`: measured on the HTML corpus
(docs/decisions.md), it left each worker idle 0.55 ms between jobs, 4.5 % of a run, and
one dead worker breaks the whole pool, failing every job not yet done.

Workers never outlive their parent, even one killed with SIGKILL (which runs no clean-up
of its own), so that no file is rewritten after the command is gone:

- on Linux, each worker asks the kernel to SIGKILL it when its parent ends
  (``prctl(PR_SET_PDEATHSIG)``, through ctypes), then checks that its parent is still the
  process that started it: one that died before the request leaves the worker adopted;
- on every system, each worker holds the reading end of a pipe (the *lifeline*) whose only
  writer is the parent, which never writes to it: a watchdog thread reading it gets
  end-of-file the moment the parent dies, and ends the worker at once (``os._exit``: no
  clean-up that could finish a job), and the worker looks at the pipe again before each
  job, so that it starts none once its parent is gone.

A temporary file the killed worker was writing is left, as one of the parent's would be.

>>> sorted(map_unordered(abs, [-3, 4, -5], workers=2))
[(0, 3), (1, 4), (2, 5)]
>>> list(run_ordered(abs, [-3, 4, -5], [2, 0, 1], workers=2, lost=lambda index, why: None))
[3, 4, 5]
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from multiprocessing.context import DefaultContext, ForkContext, ForkServerContext, SpawnContext

    # What multiprocessing.get_context gives: each can start a Process.
    ProcessContext = DefaultContext | ForkContext | ForkServerContext | SpawnContext

Item = TypeVar("Item")
Result = TypeVar("Result")

AHEAD = 2  # jobs a worker holds at once: the one it does, and the next one, already sent
_STOP = b""  # parent to worker: no more jobs
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_ORPHANED = 70  # a worker's exit status when its parent is gone (no one reads it)


__all__ = ["Failed", "default_context", "map_unordered", "run_ordered"]


@dataclass(frozen=True, slots=True)
class Failed:
    """A job without a result: its function raised, its result would not pickle, or its
    worker died (*died*: then the job may be tried again). Every executor gives it (here,
    where a job's death is seen first; :mod:`rewriter.run.executors` imports it from here)."""

    reason: str
    died: bool = False


def default_context() -> ProcessContext:
    """fork where the system has it: workers start with the parent's imports (the engines
    take 0.3 s to import) and its jobs, without pickling them."""
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _done(work: Callable[..., Result], item: object, shared: tuple[Any, ...]) -> Result | Failed:
    """``work(item, *shared)``; what it raised, as a :class:`Failed`."""
    try:
        return work(item, *shared)
    except Exception as error:  # the job fails; the worker goes on
        return Failed(f"{type(error).__name__}: {error}")


def _pickled(work: Callable[..., Result], item: object, shared: tuple[Any, ...]) -> bytes:
    """:func:`_done`, pickled for the pipe; a result that will not pickle is a :class:`Failed`."""
    try:
        return pickle.dumps(_done(work, item, shared), pickle.HIGHEST_PROTOCOL)
    except Exception as error:
        return pickle.dumps(Failed(f"its result could not be pickled: {error}"), pickle.HIGHEST_PROTOCOL)


def _die_with_parent() -> None:
    """Linux: have the kernel send this process SIGKILL when the thread that started it
    ends (``PR_SET_PDEATHSIG``). Elsewhere, or where libc will not, nothing: the watchdog
    of :func:`_watch_parent` is then the only guard."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes  # here, not at the top: 3 ms that only a worker on Linux pays

        ctypes.CDLL(None, use_errno=True).prctl(
            ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL), *[ctypes.c_ulong(0)] * 3
        )
    except (ImportError, OSError, AttributeError):  # no ctypes, no libc or no prctl in it
        pass


def parent_gone(expected_parent: int | None, lifeline: Connection | None) -> bool:
    """Whether the parent is gone: this process has another parent than *expected_parent*
    (None: not known, as with forkserver), or *lifeline* has something to read, which can
    only be end-of-file, the parent never writing to it."""
    if expected_parent is not None and os.getppid() != expected_parent:
        return True
    try:
        return lifeline is not None and lifeline.poll()
    except (OSError, EOFError, ValueError):
        return True


def _watch_parent(lifeline: Connection) -> None:
    """Start the watchdog: a thread that reads *lifeline* and ends this process at once
    when that stops blocking (end-of-file: the parent is gone, and so is every copy of its
    end). ``os._exit`` runs no clean-up that could finish the job in hand and commit it."""

    def watch() -> None:
        with contextlib.suppress(BaseException):
            lifeline.recv_bytes()
        os._exit(_ORPHANED)

    threading.Thread(target=watch, name="rewriter-lifeline", daemon=True).start()


def _guard(expected_parent: int | None, lifeline: Connection | None, deathsig: bool = True) -> None:
    """Tie this worker to its parent: the kernel's signal where there is one (*deathsig*),
    then leave at once if the parent died already (before the request could take effect),
    else watch *lifeline*."""
    if deathsig:
        _die_with_parent()
    if parent_gone(expected_parent, lifeline):
        os._exit(_ORPHANED)
    if lifeline is not None:
        _watch_parent(lifeline)


def _serve(
    work: Callable[..., Result],
    shared: tuple[Any, ...],
    pipe: Connection,
    inherited: list[Connection],
    lifeline: Connection | None = None,
    expected_parent: int | None = None,
    deathsig: bool = False,
) -> None:
    """A worker's life: take a pickled job, send back its pickled result, until told to
    stop or its parent is gone (see the module docstring)."""
    for connection in inherited:  # fork: the parent's ends, which would keep our pipes open
        connection.close()
    _guard(expected_parent, lifeline, deathsig)
    # SIGTERM unwinds like an exception, so a file being written is cleaned up (files.replacing).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    try:
        while (message := pipe.recv_bytes()) != _STOP:
            if parent_gone(expected_parent, lifeline):
                break  # jobs sent before the parent died are still in the pipe: none is started
            pipe.send_bytes(_pickled(work, pickle.loads(message), shared))
    except (EOFError, OSError, KeyboardInterrupt, SystemExit):
        pass  # the parent is gone or stopping us: nothing to report to
    finally:
        pipe.close()


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    pipe: Connection
    held: deque[tuple[int, Any]] = field(default_factory=deque)  # (index, job) sent, in the order it does them


def _death(process: BaseProcess) -> str:
    process.join()
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


class _Crew(Generic[Item, Result]):
    """The parent's side: the workers, the jobs not yet taken, the results not yet given."""

    def __init__(
        self, work: Callable[..., Result], items: Iterable[Item], shared: tuple[Any, ...], context: ProcessContext
    ) -> None:
        self.work, self.shared, self.context = work, shared, context
        self.stream = enumerate(items)  # taken only as workers need jobs: the stream may be endless
        self.exhausted = False
        self.again: deque[tuple[int, Item]] = deque()  # jobs a dead worker held but had not started
        self.results: deque[tuple[int, Result | Failed]] = deque()
        self.workers: dict[Connection, _Worker] = {}
        self.stopped: list[_Worker] = []
        # Every worker reads the lifeline; only this process holds its writing end, and
        # never writes: end-of-file tells a worker that its parent is gone.
        self.lifeline, self.lifeline_end = context.Pipe(duplex=False)
        # Whom a worker finds as its parent while this one lives (forkserver: the server).
        method = context.get_start_method()
        self.parent = os.getpid() if method in ("fork", "spawn") else None

    def next_job(self) -> tuple[int, Item] | None:
        if self.again:
            return self.again.popleft()
        if self.exhausted:
            return None
        job = next(self.stream, None)
        if job is None:
            self.exhausted = True
        return job

    @property
    def pending(self) -> bool:
        """Jobs are left: not yet taken, or held by a worker."""
        return bool(self.again) or not self.exhausted or any(worker.held for worker in self.workers.values())

    def start(self) -> _Worker | None:
        """One more worker (None when the system will not start one); it has no job yet."""
        mine, theirs = self.context.Pipe()
        inherited = []
        if self.context.get_start_method() == "fork":
            inherited = [*self.workers, *(worker.pipe for worker in self.stopped), mine, self.lifeline_end]
        # PR_SET_PDEATHSIG fires when the *thread* that started the worker ends: only the
        # main thread lives as long as the process. From another, the watchdog alone.
        deathsig = threading.current_thread() is threading.main_thread()
        arguments = (self.work, self.shared, theirs, inherited, self.lifeline, self.parent, deathsig)
        process = self.context.Process(target=_serve, args=arguments, daemon=True)
        try:
            process.start()
        except OSError:  # no more processes or memory: the workers there are go on, or the parent works
            mine.close()
            return None
        finally:
            theirs.close()
        worker = _Worker(process, mine)
        self.workers[mine] = worker
        return worker

    def hire(self, count: int) -> None:
        """Start *count* workers and give them their first jobs, one each in turn (so
        that two jobs go to two workers, not to the first one)."""
        crew = [worker for worker in (self.start() for _ in range(count)) if worker is not None]
        for _ in range(AHEAD):
            for worker in crew:
                self.hand(worker)

    def hand(self, worker: _Worker) -> None:
        """Send *worker* its next job; with none left and none held, tell it to stop."""
        if self.workers.get(worker.pipe) is not worker:
            return  # stopped already
        job = self.next_job()
        if job is not None:
            try:
                message = pickle.dumps(job[1], pickle.HIGHEST_PROTOCOL)
            except Exception as error:  # a job that will not pickle fails alone
                self.results.append((job[0], Failed(f"it could not be sent to a worker: {error}")))
                self.hand(worker)
                return
            worker.held.append(job)
        elif worker.held:
            return
        else:
            del self.workers[worker.pipe]
            self.stopped.append(worker)
            message = _STOP
        with contextlib.suppress(OSError):  # it died: reading its pipe says so, and its jobs go on then
            worker.pipe.send_bytes(message)

    def receive(self, worker: _Worker) -> None:
        try:
            payload = worker.pipe.recv_bytes()
        except (EOFError, OSError):
            self.bury(worker)
            return
        index, _ = worker.held.popleft()
        try:
            self.results.append((index, pickle.loads(payload)))
        except Exception as error:  # a result that pickles but will not load back
            self.results.append((index, Failed(f"its result could not be read: {type(error).__name__}: {error}")))
        self.hand(worker)

    def do_here(self) -> None:
        """The next job, done in this process: no worker could be started."""
        job = self.next_job()
        if job is not None:
            self.results.append((job[0], _done(self.work, job[1], self.shared)))

    def bury(self, worker: _Worker) -> None:
        """A worker died: the job it was doing fails, the ones it held go back in line."""
        del self.workers[worker.pipe]
        worker.pipe.close()
        why = _death(worker.process)
        if worker.held:
            index, _ = worker.held.popleft()
            self.results.append((index, Failed(f"the worker stopped ({why})", died=True)))
            self.again.extendleft(reversed(worker.held))
        if self.again or not self.exhausted:
            self.hire(1)

    def close(self, finished: bool) -> None:
        """Stop every worker: told to, after a finished run; terminated, after an interruption."""
        for worker in list(self.workers.values()):
            if finished:
                self.hand(worker)
            else:
                worker.process.terminate()
        for worker in [*self.stopped, *self.workers.values()]:
            worker.process.join()
            worker.pipe.close()
        self.lifeline_end.close()  # after the joins: a worker still finishing is not cut short
        self.lifeline.close()


def map_unordered(
    work: Callable[..., Result],
    items: Iterable[Item],
    workers: int,
    *,
    shared: tuple[Any, ...] = (),
    context: ProcessContext | None = None,
) -> Iterator[tuple[int, Result | Failed]]:
    """``(index, work(item, *shared))`` for every item, done by *workers* processes and
    yielded as each finishes; *index* is the item's place in *items*.

    *items* is read only as workers need jobs (at most two ahead for each), so that an
    endless stream or a walk of a million files costs no memory here. A job whose worker
    dies, whose *work* raises, or whose item or result will not pickle gives a
    :class:`Failed`. *work* and *shared* reach the workers once each: inherited with fork
    (*context*, default :func:`default_context`), else pickled at the worker's start.
    """
    crew: _Crew[Item, Result] = _Crew(work, items, shared, context or default_context())
    finished = False
    try:
        crew.hire(max(1, workers))
        while True:
            while crew.results:
                yield crew.results.popleft()
            if not crew.pending:
                break
            if not crew.workers:
                crew.do_here()
                continue
            for pipe in wait(list(crew.workers)):
                worker = crew.workers.get(pipe)  # type: ignore[call-overload]
                if worker is not None:
                    crew.receive(worker)
        finished = True
    finally:
        crew.close(finished)


def run_ordered(
    work: Callable[[Item], Result],
    items: Sequence[Item],
    order: Sequence[int],
    workers: int,
    lost: Callable[[int, str], Result],
    context: ProcessContext | None = None,
) -> Iterator[Result]:
    """``work(item)`` for every item, done by *workers* processes taking the items in
    *order* (indices into *items*), yielded in the order of *items*.

    A job whose worker dies, or whose *work* raises, yields ``lost(index, reason)``.
    """
    held: dict[int, Result] = {}
    turn = 0
    ordered = list(order)
    for position, result in map_unordered(work, (items[index] for index in ordered), workers, context=context):
        index = ordered[position]
        held[index] = lost(index, result.reason) if isinstance(result, Failed) else result
        while turn in held:
            yield held.pop(turn)
            turn += 1
