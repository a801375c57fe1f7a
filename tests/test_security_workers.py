"""Issue 18, point 8: a ``kill -9`` of the command stops its workers, always.

A parent killed with SIGKILL runs no clean-up. Its workers must not go on rewriting files:
on Linux the kernel kills them with it (``PR_SET_PDEATHSIG``); elsewhere, and as a second
line on Linux, each worker watches a pipe whose only writer is the parent and leaves the
moment it reads end-of-file. Each mechanism is tested alone as well as both together.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

FORK = "fork" in multiprocessing.get_all_start_methods()
needs_fork = pytest.mark.skipif(not FORK, reason="this system cannot fork (the workers would re-import the tests)")
needs_posix = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="no SIGKILL here")

DEADLINE = 60.0  # seconds: generous, for a shared and slow machine; nothing here is a timing


def _wait_for(condition: object, what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():  # type: ignore[operator]
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.01)


def _alive(pid: int) -> bool:
    """Whether *pid* runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under *folder* that is not one of our temporary files: its size and mtime.

    A temporary file left by a killed process is not a file of the output (the next run's
    walk skips it); what must not change is what a reader sees under the real names.
    """
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.name.endswith(".tmp"):
            stat = path.stat()
            found[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return found


def _pages(folder: Path, count: int, links: int) -> None:
    """*count* pages slow enough to rewrite (about a second each) that a kill lands mid-job."""
    folder.mkdir()
    body = b"<!doctype html><title>t</title>" + b"<a href=p/q.html>x</a>\n" * links
    for number in range(count):
        (folder / f"page{number:02}.html").write_bytes(body + b"<p>%d" % number)


def _kill_mid_run(argv: list[str], cwd: Path, watched: Path, count: int) -> tuple[list[int], int]:
    """Start ``rewriter *argv`` with two workers, SIGKILL it once both are busy and a first
    file is done; then check that nothing under *watched* changes after its death.

    Returns the workers' ids and how many files were done when it died.
    """
    before = _snapshot(watched)
    parent = subprocess.Popen(
        [sys.executable, "-m", "rewriter", "rewrite", *argv, "-j", "2", "-q", "--url", "http://h/"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        command = psutil.Process(parent.pid)
        _wait_for(lambda: len(command.children()) >= 2 or parent.poll() is not None, "two workers")
        workers = [child.pid for child in command.children()]
        assert parent.poll() is None and len(workers) == 2, parent.stderr.read()  # type: ignore[union-attr]
        # Both are at work once a first file is done (each holds two jobs from the start).
        _wait_for(lambda: _snapshot(watched) != before or parent.poll() is not None, "a first file")
        parent.send_signal(signal.SIGKILL)
    finally:
        parent.kill()
        parent.wait()
        parent.stderr.close()  # type: ignore[union-attr]
    assert parent.returncode == -signal.SIGKILL, "the run ended before it was killed: make the pages slower"
    at_death = _snapshot(watched)
    done = sum(1 for name, state in at_death.items() if before.get(name) != state)
    assert 0 < done < count, "the kill did not land mid-run"
    _wait_for(lambda: not any(_alive(pid) for pid in workers), "the workers to stop")
    assert _snapshot(watched) == at_death, "a worker went on writing after its parent was killed"
    return workers, done


@needs_fork
@needs_posix
def test_killing_the_command_stops_its_workers_writing_to_a_folder(tmp_path: Path) -> None:
    _pages(tmp_path / "in", 16, 150_000)
    (tmp_path / "out").mkdir()
    _kill_mid_run(["in", "-o", "out"], tmp_path, tmp_path / "out", 16)


@needs_fork
@needs_posix
def test_killing_the_command_stops_its_workers_rewriting_in_place(tmp_path: Path) -> None:
    _pages(tmp_path / "in", 16, 150_000)
    _kill_mid_run(["in", "--in-place"], tmp_path, tmp_path / "in", 16)


# The workers' side alone, through run_ordered: jobs that would write a file after a long
# wait. The parent is killed while every worker is inside a job; none may write.
_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    import rewriter.run.workers as workers

    if sys.argv[2] == "watchdog only":
        workers._die_with_parent = lambda: None  # what a system without prctl gets
    elif sys.argv[2] == "prctl only":
        workers._watch_parent = lambda lifeline: None
    folder = Path(sys.argv[1])

    def slow(value):
        (folder / f"started-{os.getpid()}-{value}").touch()
        time.sleep(0.2 if value == 0 else 3600)  # a job in C, or a long one: either way the parent goes first
        (folder / f"written-{value}").touch()
        return value

    results = workers.run_ordered(slow, list(range(50)), range(50), 2, lambda index, why: None)
    print(next(results), flush=True)
    time.sleep(3600)
    """
)


@needs_fork
@needs_posix
@pytest.mark.parametrize("mechanism", ["both", "watchdog only", "prctl only"])
def test_a_worker_in_the_middle_of_a_job_stops_with_its_parent(tmp_path: Path, mechanism: str) -> None:
    if mechanism == "prctl only" and not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    parent = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT, str(tmp_path), mechanism], stdout=subprocess.PIPE, cwd=tmp_path
    )
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline() == b"0\n"  # job 0 is done: both workers are in long jobs
        workers = [child.pid for child in psutil.Process(parent.pid).children()]
        assert len(workers) == 2
        _wait_for(lambda: len(list(tmp_path.glob("started-*"))) >= 3, "both workers in a job")
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    _wait_for(lambda: not any(_alive(pid) for pid in workers), "the workers to stop")
    assert sorted(path.name for path in tmp_path.glob("written-*")) == ["written-0"]


@needs_fork
@needs_posix
def test_a_worker_whose_parent_died_before_it_could_watch_leaves_at_once(tmp_path: Path) -> None:
    # The race prctl leaves open: the parent dies between the fork and the prctl call. The
    # worker then has another parent already, and must see it before doing anything.
    script = textwrap.dedent(
        """
        import os, sys
        import rewriter.run.workers as workers

        reader, writer = os.pipe()
        if os.fork() == 0:  # the worker-to-be, whose expected parent is long gone
            os.close(reader)
            workers._guard(expected_parent=1 if os.getppid() != 1 else -1, lifeline=None)
            os.write(writer, b"went on")
            os._exit(0)
        os.close(writer)
        sys.stdout.buffer.write(os.read(reader, 100) or b"left")
        os.waitpid(-1, 0)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, cwd=tmp_path, timeout=DEADLINE)
    assert done.stdout == b"left", done.stderr


def test_a_worker_leaves_when_its_lifeline_closes() -> None:
    # The portable watchdog alone, in this process's terms: a thread reads the parent's pipe
    # and ends the process at end-of-file. Here it is asked what it would do.
    from rewriter.run.workers import parent_gone

    reader, writer = multiprocessing.Pipe(duplex=False)
    assert not parent_gone(os.getppid(), reader)
    writer.close()
    assert parent_gone(os.getppid(), reader)
    reader.close()
    assert parent_gone(os.getpid(), None)  # not our parent: another process adopted us
