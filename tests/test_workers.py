"""rewriter.run.workers: results in list order, and one dead worker costing one job, not the run."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rewriter.problems import said_all
from rewriter.run.batch import Settings, plan, run
from rewriter.run.workers import run_ordered

FORK = "fork" in multiprocessing.get_all_start_methods()
needs_fork = pytest.mark.skipif(not FORK, reason="this system cannot fork (the workers would re-import the tests)")


def square(value: int) -> int:
    return value * value


def square_or_die(value: int) -> int:
    """Kills its own process on -1: what the OOM killer or a crash in a C library does."""
    if value == -1:
        os.kill(os.getpid(), signal.SIGKILL)
    return value * value


def square_or_raise(value: int) -> int:
    if value == -1:
        raise ValueError("minus one")
    return value * value


def lost(index: int, reason: str) -> str:
    return f"lost {index}: {reason}"


def test_results_come_in_list_order_whatever_the_order_of_work() -> None:
    items = list(range(40))
    order = sorted(range(40), key=lambda index: (index * 7) % 40)
    for workers in (1, 2, 3):
        assert list(run_ordered(square, items, order, workers, lost)) == [value * value for value in items]


def test_more_workers_than_jobs() -> None:
    assert list(run_ordered(square, [3, 4], [1, 0], 8, lost)) == [9, 16]
    assert list(run_ordered(square, [], [], 2, lost)) == []


def test_a_job_that_raises_is_lost_and_the_others_go_on() -> None:
    items = [1, -1, 2, 3]
    assert list(run_ordered(square_or_raise, items, range(4), 2, lost)) == [1, "lost 1: ValueError: minus one", 4, 9]


@needs_fork
def test_a_result_that_will_not_pickle_is_lost() -> None:
    got = list(run_ordered(lambda value: (lambda: value) if value == 2 else value, [1, 2, 3], range(3), 2, lost))
    assert got[0] == 1 and got[2] == 3
    assert got[1].startswith("lost 1: ") and "pickle" in got[1].lower()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_that_dies_costs_its_own_job_only(workers: int) -> None:
    # Two deaths among 30 jobs: each takes its job with it; the jobs its worker held but had
    # not started go to the others, and a new worker takes its place.
    items = list(range(30))
    items[5] = items[17] = -1
    got = list(run_ordered(square_or_die, items, range(30), workers, lost))
    assert got[5] == "lost 5: the worker stopped (killed by SIGKILL)"
    assert got[17] == "lost 17: the worker stopped (killed by SIGKILL)"
    assert [value for index, value in enumerate(got) if index not in (5, 17)] == [
        value * value for index, value in enumerate(items) if index not in (5, 17)
    ]
    assert multiprocessing.active_children() == []


def test_spawned_workers_give_the_same_results() -> None:
    spawn = multiprocessing.get_context("spawn")
    items = [2, -1, 5]
    assert list(run_ordered(square_or_raise, items, [2, 1, 0], 2, lost, context=spawn)) == [
        4,
        "lost 1: ValueError: minus one",
        25,
    ]


def test_with_no_worker_to_be_had_the_parent_does_the_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    context = multiprocessing.get_context()

    def refuse(self: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(type(context.Process()), "start", refuse)
    assert list(run_ordered(square_or_raise, [1, -1, 3], [2, 1, 0], 2, lost, context=context)) == [
        1,
        "lost 1: ValueError: minus one",
        9,
    ]


def test_leaving_early_stops_the_workers() -> None:
    results = run_ordered(square, list(range(100)), range(100), 2, lost)
    assert next(results) == 0
    results.close()
    assert multiprocessing.active_children() == []


@needs_fork
def test_workers_leave_when_their_parent_is_killed(tmp_path: Path) -> None:
    # A parent killed with SIGKILL runs no clean-up: its workers must see their pipe close
    # and leave by themselves (each forked worker closes the parent's ends it inherited).
    script = textwrap.dedent(
        """
        import multiprocessing, sys, time
        from rewriter.run.workers import run_ordered

        def slow(value):
            time.sleep(0.05)
            return value

        results = run_ordered(slow, list(range(10_000)), range(10_000), 2, lambda index, why: None)
        next(results)
        print(*(child.pid for child in multiprocessing.active_children()), flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, cwd=tmp_path)
    assert parent.stdout is not None
    pids = [int(pid) for pid in parent.stdout.readline().split()]
    assert len(pids) == 2
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while (alive := [pid for pid in pids if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive == [], f"workers {alive} outlived their killed parent"


def _alive(pid: int) -> bool:
    """Whether *pid* runs (a zombie, dead but not yet reaped by init, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def _before_each_job(monkeypatch: pytest.MonkeyPatch, before: Callable[[str], None]) -> None:
    """``before(job.shown)`` as each job starts, in whichever process does it (forked workers
    inherit the patch)."""
    import rewriter.run.work

    real = rewriter.run.work.run_job

    def run_job(job: rewriter.run.work.Job, settings: Settings) -> rewriter.run.work.Outcome:
        before(job.shown)
        return real(job, settings)

    monkeypatch.setattr(rewriter.run.work, "run_job", run_job)


def _worker_dies_at(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """A worker is killed (SIGKILL: what the OOM killer or a crash in a C library does) when it
    starts the job of a file whose path ends in *name*."""

    def die(shown: str) -> None:
        if shown.endswith(name):
            os.kill(os.getpid(), signal.SIGKILL)

    _before_each_job(monkeypatch, die)


@needs_fork
def test_a_page_that_kills_its_worker_fails_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The batch run through the workers: the page whose worker dies is reported by name;
    # every other page is rewritten. The pages of its batch are done again (the six pages go
    # in batches of 1, 1, 2 and 2: c.html with d.html), each named as retried.
    for name in "abcdef":
        (tmp_path / "in" / f"{name}.html").parent.mkdir(exist_ok=True)
        (tmp_path / "in" / f"{name}.html").write_bytes(b"<a href=x>")
    _worker_dies_at(monkeypatch, "c.html")
    jobs, _ = plan([str(tmp_path / "in")], str(tmp_path / "out"))
    outcomes = list(run(jobs, Settings(url="http://h/"), 2))
    states = {Path(outcome.shown).name: (outcome.state, said_all(outcome.messages)) for outcome in outcomes}
    assert states.pop("c.html") == (
        "failed",
        [
            f"rewriter: {jobs[2].shown}: not rewritten: the worker stopped (killed by SIGKILL), "
            "and again when it was tried once more"
        ],
    )
    retried = {Path(outcome.shown).name: outcome.retried for outcome in outcomes if outcome.retried}
    assert retried == dict.fromkeys(("c.html", "d.html"), "the worker stopped (killed by SIGKILL)")
    assert {state for state, _ in states.values()} == {"rewritten"}
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [f"{name}.html" for name in "abdef"]


@needs_fork
def test_a_worker_killed_mid_batch_costs_its_batch_redone_and_named_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 34: the workers take batches (1, 1, 2, 2, 4, 4, 8, 8, 16... pages with two workers), whose
    # pages are put in place together when the batch ends. A worker killed in the middle of one
    # costs that batch: its pages written so far are never put in place, every page of it is done
    # again alone and named once as retried; the page that kills its worker again fails alone.
    pages = tmp_path / "in"
    pages.mkdir()
    for number in range(40):
        (pages / f"p{number:02}.html").write_bytes(b"<a href=x%d>x</a>" % number)
    _worker_dies_at(monkeypatch, "p20.html")
    jobs, _ = plan([str(pages)], str(tmp_path / "out"))
    outcomes = list(run(jobs, Settings(url="http://h/"), 2))
    assert [outcome.shown for outcome in outcomes] == [job.shown for job in jobs]  # each once, in order
    retried = sorted(Path(outcome.shown).name for outcome in outcomes if outcome.retried)
    assert retried == [f"p{number}.html" for number in range(14, 22)]  # the batch of 8 that p20 is in
    states = {Path(outcome.shown).name: outcome.state for outcome in outcomes}
    assert states.pop("p20.html") == "failed"
    assert set(states.values()) == {"rewritten"}
    written = sorted(path.name for path in (tmp_path / "out").iterdir())
    assert written == [f"p{number:02}.html" for number in range(40) if number != 20]  # no temporary left
    for name in written:
        number = int(name[1:3])
        assert (tmp_path / "out" / name).read_bytes() == b"<a href=http://h/x%d>x</a>" % number


@needs_fork
def test_a_file_that_is_no_input_is_passed_over_even_when_its_worker_dies_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Worker processes tell a folder's small files themselves (Job.untold): a file that is no document,
    # where the run copies no others, is passed over as the planner would have omitted it, even when
    # the worker doing it died twice (the command then tells it, to say nothing of it, not "failed").
    pages = tmp_path / "in"
    pages.mkdir()
    for number in range(6):
        (pages / f"p{number}.html").write_bytes(b"<a href=x%d>x</a>" % number)
    (pages / "fake.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))  # an image under a page's name
    _worker_dies_at(monkeypatch, "fake.html")
    jobs, _ = plan([str(pages)], str(tmp_path / "out"), read_whole=False, untold=True)
    assert [job.untold for job in jobs] == ["pass"] * 7
    outcomes = list(run(jobs, Settings(url="http://h/"), 2))
    assert sorted(Path(outcome.shown).name for outcome in outcomes) == [f"p{number}.html" for number in range(6)]
    assert {outcome.state for outcome in outcomes} == {"rewritten"}
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [f"p{number}.html" for number in range(6)]


_MAPPED_BLOCKS = """
import ctypes, sys
from rewriter.run.executors import tune_allocator

FIELDS = "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost"


class Info(ctypes.Structure):  # glibc's struct mallinfo2
    _fields_ = [(name, ctypes.c_size_t) for name in FIELDS.split()]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
tuned = tune_allocator()
before = libc.mallinfo2().hblkhd
block = bytearray(4 << 20)  # over glibc's default mmap threshold (128 KiB to 32 MiB, adaptive)
print(tuned, libc.mallinfo2().hblkhd - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_the_allocator_is_tuned_for_a_run_unless_the_user_set_it() -> None:
    """tune_allocator: a page-sized block (4 MiB) then comes from the heap, not from a mapping
    of its own that the kernel faults in anew for each page; a MALLOC_ variable of the user's wins."""
    try:
        import ctypes

        ctypes.CDLL(None).mallinfo2  # noqa: B018
    except (OSError, AttributeError):
        pytest.skip("no glibc 2.33 or later here (mallinfo2)")
    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_") and key != "GLIBC_TUNABLES"}
    tuned = subprocess.run([sys.executable, "-c", _MAPPED_BLOCKS], env=env, capture_output=True, text=True, check=True)
    assert tuned.stdout.split() == ["True", "0"]
    env["MALLOC_TRIM_THRESHOLD_"] = "131072"
    mine = subprocess.run([sys.executable, "-c", _MAPPED_BLOCKS], env=env, capture_output=True, text=True, check=True)
    tuned_flag, mapped = mine.stdout.split()
    assert tuned_flag == "False" and int(mapped) >= 4 << 20


def _pids_of_jobs(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Each job appends the id of the process that does it to *log*."""

    def note(shown: str) -> None:
        with log.open("a") as stream:
            stream.write(f"{os.getpid()}\n")

    _before_each_job(monkeypatch, note)


@needs_fork
@pytest.mark.parametrize(
    ("small", "here"), [((3, 1 << 20), True), ((2, 1 << 20), False), ((3, 10), False), (None, False)]
)
def test_a_plan_too_small_to_share_is_done_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small: tuple[int, int] | None, here: bool
) -> None:
    # Three pages of 10 bytes: no larger than (3 jobs, 1 MiB), so done here; over (2 jobs) or over
    # (10 bytes), or with no bound, by the workers. The outcomes are the same either way.
    from rewriter.run.executors import Processes
    from rewriter.run.pipeline import execute

    for name in "abc":
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{name}.html").write_bytes(b"<a href=x>")
    log = tmp_path / "pids"
    _pids_of_jobs(monkeypatch, log)
    jobs, _ = plan([str(tmp_path / "in")], str(tmp_path / "out"))
    outcomes = list(execute(jobs, Settings(url="http://h/"), Processes(2, small=small)))
    assert [(outcome.shown.rsplit("/", 1)[-1], outcome.state) for outcome in outcomes] == [
        ("a.html", "rewritten"),
        ("b.html", "rewritten"),
        ("c.html", "rewritten"),
    ]
    pids = set(log.read_text().split())
    assert (pids == {str(os.getpid())}) is here
    assert (tmp_path / "out" / "c.html").read_bytes() == b"<a href=http://h/x>"


def test_the_small_plan_bound_is_the_default_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewriter.run.executors import SMALL_PLAN, Processes, small_plan

    monkeypatch.delenv("REWRITER_SMALL_PLAN")  # the test suite sets it to 0 (conftest)
    assert small_plan() == SMALL_PLAN and Processes(2).small == SMALL_PLAN
    for value, bound in [("0", None), ("10", (10, SMALL_PLAN[1])), ("10,2048", (10, 2048)), ("ten", SMALL_PLAN)]:
        monkeypatch.setenv("REWRITER_SMALL_PLAN", value)
        assert small_plan() == bound and Processes(2).small == bound
    assert Processes(2, small=None).small is None
