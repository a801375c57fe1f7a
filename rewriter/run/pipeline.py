"""The pipeline: plan -> jobs -> engine -> results, the same for every verb and executor.

:func:`execute` takes the plan of a run (:func:`rewriter.run.batch.iter_plan`: jobs, and the
inputs that cannot be jobs, in a fixed order), groups small jobs into batches, has an
:mod:`executor <rewriter.run.executors>` do them (:func:`rewriter.run.batch.run_batch`, the engines
picked by :mod:`rewriter.document.engines`), and yields each job's :class:`~rewriter.run.batch.Outcome`
in the order of the plan, whatever the order they finish in: outputs, reports and messages
are byte for byte the same for the serial executor, the worker processes and Dask.

Streamed and bounded: the plan is read only as the executor has room; an outcome that
finishes early waits in memory while it is small, else in the journal on disk; a container
split into pieces is put together piece by piece. So the caller's memory stays flat
whatever the number of inputs, links or messages.

Resumable: with a :class:`~rewriter.run.journal.Journal`, every finished job is recorded as it
finishes, and a job that an earlier, killed run recorded is not done again.

A job whose worker died is tried once more, alone; its outcome says so (``retried``), and a
second death fails it. A piece that fails leaves its container's output as it was.

Sinks own the output layouts that span jobs: :class:`_Assembly` joins a container's pieces
into its one output file (an mbox, a WARC out), and :class:`MirrorFolder` plans a WARC mirrored
into a folder, which its pieces write, and writes its manifest after the last.

>>> import pathlib, tempfile
>>> from rewriter.run.jobs import Settings
>>> from rewriter.run.plan import iter_plan
>>> from rewriter.run.executors import Serial
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "a.html").write_bytes(b"<a href=x>x</a>")
>>> _ = (folder / "b.html").write_bytes(b"<a href=y>y</a>")
>>> plan = iter_plan([str(folder)], str(folder / "out"))
>>> [(o.shown.rsplit("/", 1)[-1], o.rewritten) for o in execute(plan, Settings(url="http://h/"), Serial())]
[('a.html', 1), ('b.html', 1)]
>>> (folder / "out" / "b.html").read_bytes()
b'<a href=http://h/y>y</a>'
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rewriter.disk.files import Folder, not_written, temporaries_in
from rewriter.policy import copied
from rewriter.problems import Problem, said_from_json
from rewriter.run.executors import BATCH_JOBS, Serial
from rewriter.run.jobs import Job, Outcome, Settings, job_key, outcome_from_json, outcome_json
from rewriter.run.plan import told
from rewriter.run.work import load_mirror_plan, mirror_plan_path, pieces_path, replacing_target, run_batch

if TYPE_CHECKING:
    from rewriter.containers.warc import MirrorPlan
    from rewriter.disk.files import Replacement
    from rewriter.run.executors import Executor
    from rewriter.run.journal import Journal
    from rewriter.run.workers import Failed

__all__ = ["BATCH_BYTES", "BATCH_JOBS", "SHARED_BATCH_BYTES", "Batching", "Leftovers", "MirrorFolder", "execute"]

# How many jobs at most: BATCH_JOBS (rewriter.run.executors, with what a batch costs).
BATCH_BYTES = 8 << 20  # input bytes in one batch at most, with one worker
# With several, a batch is a few milliseconds of work (a batch of large pages is a page or two), so
# that the workers end the run together: the last batches given out are done while others wait.
SHARED_BATCH_BYTES = 256 << 10
HELD_BYTES = 8 << 20  # outcomes finished early held in memory; past this, read back from the journal


class _Slot:
    """One place of the plan: a problem, a job waiting for its outcome, or its outcome; *offset*,
    where the journal holds the outcome; *retried*, why the job was tried again."""

    # Plain classes here, not dataclasses: making one costs about a millisecond of every run's start-up.
    __slots__ = ("job", "offset", "outcome", "problem", "retried")

    def __init__(self, job: Job | None = None, problem: str | None = None) -> None:
        self.job, self.problem = job, problem
        self.outcome: Outcome | None = None
        self.offset: int | None = None
        self.retried: str | None = None


class _State:
    __slots__ = ("batches", "held", "planned", "retry", "sent", "slots")

    def __init__(self) -> None:
        self.slots: dict[int, _Slot] = {}
        self.batches: dict[int, list[int]] = {}  # batch index -> plan places
        self.planned = 0  # places the plan has given so far
        self.sent = 0  # batches given to the executor so far
        self.held = 0  # bytes of outcomes held in memory
        self.retry: list[int] = []  # places whose worker died, to be done again


class Batching(NamedTuple):
    """How the plan's jobs go in batches, for every executor (the one place that sizes them):
    consecutive jobs, up to *jobs* of them and *size* input bytes (a job larger than that, or a
    piece of a container, alone). With several *workers* the first batches are smaller, one job
    for each worker's first, then twice as many in each round of them, up to *jobs*: a run of
    a few files is spread over every worker, and its first outcomes come early.

    >>> [Batching(jobs=32, workers=2).most(sent) for sent in range(12)]
    [1, 1, 2, 2, 4, 4, 8, 8, 16, 16, 32, 32]
    """

    jobs: int = BATCH_JOBS
    size: int = BATCH_BYTES
    workers: int = 1

    @classmethod
    def of(cls, executor: object) -> Batching:
        """The batching for *executor*: its ``batch`` (the jobs of one batch at most, by default
        :data:`BATCH_JOBS`, which is also the most any takes) and its ``workers``."""
        jobs = max(1, min(getattr(executor, "batch", BATCH_JOBS), BATCH_JOBS))
        workers = max(1, getattr(executor, "workers", 1))
        return cls(jobs, BATCH_BYTES if workers == 1 else SHARED_BATCH_BYTES, workers)

    def most(self, sent: int) -> int:
        """The jobs the batch after *sent* others may take."""
        if self.workers == 1:
            return self.jobs
        return min(self.jobs, 1 << min(sent // self.workers, 30))


def _size(job: Job) -> int:
    if job.piece is not None:
        return job.piece.size
    if job.size is not None:  # the planner's
        return job.size
    if job.status is not None:
        return job.status.st_size
    with contextlib.suppress(OSError):
        return 0 if job.source == "-" else os.stat(job.source).st_size
    return 0


def _batches(
    plan: Iterable[Job | str],
    state: _State,
    journal: Journal | None,
    batching: Batching,
    leftovers: Leftovers | None = None,
) -> Iterator[list[Job]]:
    """The plan's jobs in batches of consecutive small jobs (:class:`Batching`); problems and
    jobs an earlier run finished take their places without being sent."""
    batch: list[Job] = []
    places: list[int] = []
    size = 0
    most = batching.most(0)

    def close() -> list[Job]:
        nonlocal batch, places, size, most
        state.batches[state.sent] = places
        state.sent += 1
        done, batch, places, size = batch, [], [], 0
        most = batching.most(state.sent)
        return done

    for item in plan:
        place = state.planned
        state.planned += 1
        if isinstance(item, str):
            state.slots[place] = _Slot(problem=item)
            continue
        slot = _Slot(job=item)
        state.slots[place] = slot
        if leftovers is not None:
            leftovers.remove(item, journal)
        if journal is not None and journal.earlier:  # a run resumed: a fresh journal has nothing done
            slot.offset = _resumed(item, journal)
            if slot.offset is not None:
                continue
        job_size = _size(item) if most > 1 else 0  # one job a batch: no size to weigh
        if batch and (size + job_size > batching.size or item.piece is not None):
            yield close()  # a full batch went as soon as it was full
        batch.append(item)
        places.append(place)
        size += job_size
        if item.piece is not None or len(batch) >= most:
            yield close()
    if batch:
        yield close()


class Leftovers:
    """The temporary files a killed run left where this run writes, removed as each job is
    planned (before any of its own is written): for each job, those of its output's name, of
    its piece, of its report file, of a Maildir's messages. Only regular files named by our
    temporary pattern (:func:`~rewriter.disk.files.temporary_name`), through no symbolic link.
    A temporary of a name this run writes can only be a killed run's: each name is written
    by one job. In place with *backup* (a suffix), those of the backup's name too: the old
    file is kept as NAME + it through a temporary of its own. :attr:`removed` counts them."""

    def __init__(self, backup: str | None = None) -> None:
        self.removed = 0
        self.backup = backup
        self.folders: dict[str, dict[str, list[str]]] = {}  # each folder read once

    def remove(self, job: Job, journal: Journal | None) -> None:
        if job.dry or job.target is None:
            return
        if job.maildir:  # its messages' temporaries, in its tmp/: the one job writing there
            root = None if job.root is None else Path(job.root)
            with contextlib.suppress(OSError), Folder.open(Path(job.target) / "tmp", root, make=False) as scratch:
                self.removed += scratch.remove_temporaries()
            return
        if (job.piece is None or job.piece.number == 0) and not job.mirror:  # a mirror's: MirrorFolder.jobs
            self._remove_named(job.target, job.root)
            if job.in_place and self.backup:
                self._remove_named(job.target + self.backup, job.root)
        if journal is not None:
            key = job_key(job, whole=job.piece is not None)
            if job.piece is not None:
                self.remove_of(journal.piece_path(key, job.piece.number), journal.root)
            elif journal.earlier:
                from rewriter.run.journal import report_path

                self.remove_of(report_path(journal.folder, job_key(job)), journal.root)

    def remove_of(self, path: Path, root: Path | None) -> None:
        """Remove the temporaries a killed run left of the file *path* (under *root*)."""
        self._remove_named(os.fspath(path), None if root is None else os.fspath(root))

    def _remove_named(self, path: str, root: str | None) -> None:
        folder, name = os.path.split(path)
        found = self.folders.get(folder)
        if found is None:  # each folder listed once (paths as strings: a Path a job costs more than the listing)
            if len(self.folders) > 256:
                self.folders.clear()  # a long run over many folders: memory stays bounded
            found = self.folders[folder] = temporaries_in(Path(folder), None if root is None else Path(root))
        names = found.pop(name, ())
        if names:
            top = None if root is None else Path(root)
            with contextlib.suppress(OSError), Folder.open(Path(folder), top, make=False) as opened:
                self.removed += sum(opened.unlink_regular(name) for name in names)


def _resumed(job: Job, journal: Journal) -> int | None:
    """Where the journal holds the outcome of *job* done by the run being resumed, when its
    input is unchanged and its output is there; else None (it is done again)."""
    from rewriter.run.journal import identity_of

    identity = identity_of(job.source) if job.source != "-" else None
    offset = journal.done(job_key(job), identity)
    if offset is None:
        return None
    if job.piece is not None:
        piece = journal.piece_path(job_key(job, whole=True), job.piece.number)
        return offset if job.dry or journal.holds(piece) else None
    if job.target is not None and not job.dry and not os.path.lexists(job.target):
        return None
    aside = journal.read(offset)["outcome"].get("report_file")
    if aside is not None and not journal.holds(Path(aside)):  # checked: the job's own (journal.entry_problem)
        return None  # its report lines are gone with the work folder: done again
    return offset


def execute(
    plan: Iterable[Job | str],
    settings: Settings,
    executor: Executor,
    *,
    journal: Journal | None = None,
    leftovers: Leftovers | None = None,
) -> Iterator[Outcome | str]:
    """Do every job of *plan* with *executor*; yield, in the order of the plan, each job's
    outcome (a piece of a container included) and each problem the plan gave (a str). The
    temporary files a killed run left where the jobs write are removed first, and counted in
    *leftovers* (a :class:`Leftovers` of the caller's, to say how many)."""
    state = _State()
    work = None if journal is None else str(journal.folder)
    assembly = _Assembly(settings.backup, sync=settings.sync)
    mirrors = MirrorFolder()
    turn = 0

    def release() -> Iterator[Outcome | str]:
        nonlocal turn
        while True:
            slot = state.slots.get(turn)
            if slot is None:
                return
            if slot.problem is not None:
                item: Outcome | str = slot.problem
            elif slot.outcome is not None or slot.offset is not None:
                item = _taken(slot, state, journal)
            else:
                return  # not finished yet
            del state.slots[turn]
            turn += 1
            if isinstance(item, Outcome) and item.state == "passed":
                continue  # a file its job found to be no input (Job.untold): not in the plan, as if never walked
            if isinstance(item, Outcome) and slot.job is not None and slot.job.piece is not None:
                (mirrors if slot.job.mirror else assembly).add(slot.job, item, journal)
            yield item

    def finish(places: list[int], result: list[Outcome] | Failed, again: bool) -> None:
        if not isinstance(result, list):  # a Failed (rewriter.run.workers: imported by the executors that make one)
            for place in places:
                slot = state.slots[place]
                assert slot.job is not None
                if result.died and not again:
                    slot.retried = result.reason
                    state.retry.append(place)
                    _forget_temporaries(slot.job, work)
                    continue
                why = f"{result.reason}, and again when it was tried once more" if again else result.reason
                if slot.job.untold == "pass" and told(slot.job).untold == "passed":
                    # no input, as the planner would have told it: passed over, not failed
                    _done([slot], [Outcome(slot.job.shown, state="passed")], state, journal)
                    continue
                _done([slot], [Outcome(slot.job.shown).fail(f"not rewritten: {why}", "not-done")], state, journal)
            return
        _done([state.slots[place] for place in places], result, state, journal)

    leftovers = Leftovers(settings.backup) if leftovers is None else leftovers
    plan, executor = _sized(plan, executor)
    if not getattr(executor, "in_process", False):
        plan = _without_data(plan)
    jobs = _batches(plan, state, journal, Batching.of(executor), leftovers)
    for index, result in executor.map(run_batch, jobs, _with_work(settings, work)):
        finish(state.batches.pop(index), result, again=False)
        yield from release()
    while state.retry:  # each job of a batch whose worker died, alone, once more
        retry, state.retry = state.retry, []
        singles = [[state.slots[place].job] for place in retry]
        for index, result in executor.map(run_batch, singles, _with_work(settings, work)):
            finish([retry[index]], result, again=True)
            yield from release()
    yield from release()
    assembly.close()


def _sized(plan: Iterable[Job | str], executor: Executor) -> tuple[Iterable[Job | str], Executor]:
    """The plan and the executor that does it: *executor*, or :class:`~rewriter.run.executors.Serial`
    when the whole plan is no larger than the executor's ``small`` (jobs, input bytes), which the
    plan is read ahead to know; a piece of a container is never small."""
    small: tuple[int, int] | None = getattr(executor, "small", None)
    if small is None:
        return plan, executor
    stream = iter(plan)
    ahead: list[Job | str] = []
    jobs = size = 0
    for item in stream:
        ahead.append(item)
        if isinstance(item, Job):
            jobs += 1
            size += _size(item)
            if item.piece is not None or jobs > small[0] or size > small[1]:
                return itertools.chain(ahead, stream), executor
    return ahead, Serial()


def _without_data(plan: Iterable[Job | str]) -> Iterator[Job | str]:
    """*plan*'s jobs without the bytes the planner read (Job.data), for an executor whose jobs
    run in other processes."""
    for item in plan:
        yield copied(item, data=None) if isinstance(item, Job) and item.data is not None else item


def _forget_temporaries(job: Job, work: str | None) -> None:
    """What the dead worker was writing for *job* (a temporary beside its output, or its
    piece's), removed before the job is done again."""
    from rewriter.disk.files import remove_temporaries_of

    if job.mirror and work is not None:
        MirrorFolder.forget(job, work)
    if job.piece is not None and work is not None:
        remove_temporaries_of(pieces_path(work, job), Path(work).parent)
    elif job.target is not None and not job.dry:
        remove_temporaries_of(Path(job.target), None if job.root is None else Path(job.root))


def _with_work(settings: Settings, work: str | None) -> Settings:
    return settings if settings.work == work else replace(settings, work=work)


def _done(slots: list[_Slot], outcomes: list[Outcome], state: _State, journal: Journal | None) -> None:
    """The outcomes of a batch's jobs: recorded in the journal (one write for the batch), and
    each held until its turn (in memory while the outcomes held are small, else read back
    from the journal then)."""
    for slot, outcome in zip(slots, outcomes, strict=True):
        if slot.retried is not None:
            outcome.retried = slot.retried
    if journal is None:
        for slot, outcome in zip(slots, outcomes, strict=True):
            slot.outcome = outcome
        return
    entries = []
    for slot, outcome in zip(slots, outcomes, strict=True):
        assert slot.job is not None
        entries.append((job_key(slot.job), outcome.identity, outcome_json(outcome)))
    for slot, outcome, offset in zip(slots, outcomes, journal.record_all(entries), strict=True):
        slot.offset = offset
        size = outcome.weight()
        if state.held + size > HELD_BYTES:
            continue  # read back in its turn
        state.held += size
        slot.outcome = outcome


def _taken(slot: _Slot, state: _State, journal: Journal | None) -> Outcome:
    if slot.outcome is not None:
        if journal is not None:
            state.held -= slot.outcome.weight()
        return slot.outcome
    assert journal is not None and slot.offset is not None
    outcome = outcome_from_json(journal.read(slot.offset)["outcome"])
    if slot.job is not None and slot.retried is None and outcome.retried is None:
        outcome.resumed = True
    return outcome


class _Assembly:
    """The output of a container done in pieces: each piece's output, in order, appended to
    a temporary file beside the target, which replaces the target after the last piece.
    A piece that failed leaves the target as it was."""

    def __init__(self, backup: str | None, *, sync: bool = True) -> None:
        self.backup = backup  # in place: the old file kept as NAME + this
        self.sync = sync  # False: --no-fsync
        self.context: contextlib.AbstractContextManager[Replacement] | None = None
        self.replacement: Replacement | None = None
        self.failed = False
        self.changed = False

    def add(self, job: Job, outcome: Outcome, journal: Journal | None) -> None:
        assert job.piece is not None
        if job.dry or job.target is None or journal is None:
            return
        if job.piece.number == 0:
            self.close()
            self.failed = False
            self.changed = False
            self.context = replacing_target(job, self.backup if job.in_place else None, sync=self.sync)
            self.replacement = self.context.__enter__()
        if self.replacement is None:
            return
        piece = journal.piece_path(job_key(job, whole=True), job.piece.number)
        if outcome.state == "failed" or not journal.holds(piece):
            self.failed = True
        elif not self.failed:
            from rewriter.disk.files import open_regular

            try:  # through no symbolic link: the work folder lies in the tree
                stream = open_regular(piece, journal.root)
            except OSError as error:
                self.failed = True
                outcome.fail(f"not written: its piece {piece} cannot be read: {error.strerror or error}", "output")
            else:
                with stream:
                    _copy_all(stream, self.replacement.stream)
                self.changed = self.changed or outcome.state == "rewritten"
        if job.piece.last:
            self._end(job, outcome)

    def _end(self, job: Job, outcome: Outcome) -> None:
        assert self.context is not None and self.replacement is not None
        if self.failed:
            self.replacement.keep = False
            outcome.fail("not written: a piece of it failed; the output is left as it was", "output")
        elif job.in_place and not self.changed:
            self.replacement.keep = False  # unchanged in place: not written at all
        try:
            self.context.__exit__(None, None, None)
        except OSError as error:
            outcome.fail(not_written(error), "output")
        self.context = self.replacement = None

    def close(self) -> None:
        """Drop an assembly left unfinished (an interrupted run): its target is untouched."""
        if self.context is not None and self.replacement is not None:
            self.replacement.keep = False
            with contextlib.suppress(OSError):
                self.context.__exit__(None, None, None)
        self.context = self.replacement = None


def _copy_all(source: object, target: object) -> None:
    """Copy a file into another, in the kernel where the system can."""
    import shutil

    source_fd = source.fileno()  # type: ignore[attr-defined]
    target_fd = target.fileno()  # type: ignore[attr-defined]
    target.flush()  # type: ignore[attr-defined]
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        try:
            while copy_range(source_fd, target_fd, 1 << 30):
                pass
            return
        except OSError:
            pass  # not on this file system: the slow way
    shutil.copyfileobj(source, target, 1 << 20)  # type: ignore[arg-type]


class MirrorFolder:
    """The sink of WARCs (and ARCs) mirrored into folders: it owns the mirror's layout. Before
    the jobs, :meth:`jobs` reads the archive once here (the first pass: which record goes to
    which file, :func:`rewriter.containers.warc.plan_mirror`) and keeps that plan in the work
    folder, where each piece's job reads it and writes its records; a resumed run reads it back
    (the files the killed run wrote have taken their names since, and would push a new plan's
    aside), and removes the temporaries the killed run left beside them. After the last piece,
    :meth:`add` writes ``manifest.json`` from the plan and what each piece did."""

    @staticmethod
    def jobs(
        job: Job, settings: Settings, journal: Journal, *, piece_size: int, leftovers: Leftovers | None = None
    ) -> Iterator[Job | str]:
        """The pieces of *job* (a WARC or ARC, ``mirror``), each a job; or the problem that stops it."""
        work = str(journal.folder)
        try:
            plan = _earlier_plan(job, work, journal)
            if plan is not None and leftovers is not None:  # a killed run's temporaries beside its files
                root = Path(plan.out_dir)
                for entry in plan.entries:
                    if entry.file is not None:
                        leftovers.remove_of(root / entry.file, root)
            elif plan is None:
                plan = _save_plan(job, settings, work, piece_size)
        except (OSError, ValueError) as error:
            yield Problem(
                "mirror", f"not mirrored into {job.target}: {getattr(error, 'strerror', None) or error}", (job.shown,)
            )
            return
        for piece in plan.pieces:
            yield replace(job, piece=piece)

    @staticmethod
    def forget(job: Job, work: str) -> None:
        """What a dead worker was writing for the piece *job* (a temporary beside a file of it)."""
        from rewriter.disk.files import remove_temporaries_of

        with contextlib.suppress(OSError, ValueError):
            plan = load_mirror_plan(work, job)
            for entry in plan.entries:
                if entry.file is not None:
                    remove_temporaries_of(Path(plan.out_dir) / entry.file, Path(plan.out_dir))

    def add(self, job: Job, outcome: Outcome, journal: Journal | None) -> None:
        """A piece's outcome, in the order of the plan; after the last, the manifest."""
        assert job.piece is not None
        if not job.piece.last or journal is None:
            return
        from rewriter.containers.warc import finish_mirror

        try:
            plan = MirrorFolder.done(job, journal)
        except (OSError, ValueError) as error:
            outcome.fail(f"its manifest not written: {getattr(error, 'strerror', None) or error}", "output")
            return
        report = finish_mirror(plan)
        unwritten = report.problems[-1:] if report.manifest is None else ()  # the last: see finish_mirror
        for problem in (*plan.problems, *unwritten):
            outcome.fail(problem, "mirror")

    @staticmethod
    def done(job: Job, journal: Journal) -> MirrorPlan:
        """The plan of *job*'s mirror (a piece of it) with what each of its pieces did, as their
        jobs noted it in the work folder: what :func:`~rewriter.containers.warc.finish_mirror`
        makes the manifest and the report of. OSError or ValueError when the plan cannot be read."""
        import json

        from rewriter.disk.files import open_regular

        work = str(journal.folder)
        plan = load_mirror_plan(work, job, every=True)
        by_offset = {entry.offset: entry for entry in plan.entries}
        for piece in plan.pieces:
            path = pieces_path(work, replace(job, piece=piece))
            # The work folder is as untrusted as the tree: a line that is not what a piece writes ends its file.
            with contextlib.suppress(OSError, ValueError, TypeError), open_regular(path, journal.root) as stream:
                for line in stream:
                    offset, written, links, problems = json.loads(line)
                    entry = by_offset.get(offset)
                    if entry is not None and entry.file is not None and type(written) is bool:
                        entry.written, entry.links = written, int(links)
                        entry.problems.extend(said_from_json(item) for item in problems)
        return plan


def _earlier_plan(job: Job, work: str, journal: Journal) -> MirrorPlan | None:
    """The plan a killed run kept for this archive, when the run is resumed and the archive is
    the one it read; else None (planned anew)."""
    from rewriter.run.journal import identity_of

    if not journal.earlier or not journal.holds(mirror_plan_path(work, job)):
        return None
    plan = load_mirror_plan(work, job, every=True)
    return plan if plan.identity == identity_of(job.source) and plan.unpack == job.unpack else None


def _save_plan(job: Job, settings: Settings, work: str, piece_size: int) -> MirrorPlan:
    """The first pass (and the pieces), and its plan kept in the work folder: the records of
    each piece, then what every piece needs."""
    import json

    from rewriter.containers.warc import plan_mirror
    from rewriter.disk.files import write_atomically
    from rewriter.run.journal import identity_of

    assert job.target is not None
    identity = identity_of(job.source)
    plan = plan_mirror(
        job.source,
        job.target,
        policy=settings.policy,
        max_size=settings.max_size,
        unpack=job.unpack,
        piece_size=piece_size,
    )
    plan.identity = identity
    root = Path(work).parent

    def save(path: Path, value: object) -> None:
        data = json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        write_atomically(path, data, root=root, sync=settings.sync)

    for piece in plan.pieces:  # the head last: a plan whose head is there is whole
        save(mirror_plan_path(work, job, piece.number), plan.entries_json(piece))
    save(mirror_plan_path(work, job), plan.head_json())
    return plan
