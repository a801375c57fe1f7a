"""The pipeline (issue 20) through the command line: one plan, three executors, the same bytes.

- The serial run (``-j 1``), the worker processes (``-j 2``) and Dask (``--dask local``, a
  ``LocalCluster`` on 127.0.0.1) write the same outputs, the same ``--report`` and the same
  standard error, on a collection of pages, style sheets, messages, a Maildir and an mbox done in
  pieces (and a WARC, when warc support is there).
- A worker killed in the middle of a run (``-j 2``, Dask): every output holds nothing or its new
  content, never a part; the job it was doing is done again, and the summary names it.
- A run killed in the middle (SIGKILL) and started again with ``--resume``: every output is
  finished, and what the journal says was done is not touched (same inode, same time).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import err_lines, run_cli
from test_warc_out import COLLECTION, EXPECTED, read_back, warcio_check, write_collection

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SEPARATOR = b"From someone@example.org Sat Jan  1 00:00:00 2000\n"
HAS_DASK = all(__import__("importlib").util.find_spec(name) for name in ("dask", "distributed"))
needs_dask = pytest.mark.skipif(not HAS_DASK, reason="the dask extra is not installed: pip install 'rewriter[dask]'")


def page(number: int, size: int = 1) -> bytes:
    """A page with relative links of every kind (resolved against its saved-from mark), padded."""
    body = (
        f"<!-- saved from url=(0033)http://example.org/site/{number:04}.html -->"
        f'<link rel=stylesheet href="css/s{number}.css"><a href="../up/{number}">up</a>'
        f'<img srcset="i{number}.png 1x, j.png 2x" src=x.png><style>p {{ background: url("bg/{number}.png") }}</style>'
    ).encode()
    return body + b"<p>" + b"filler " * (size * 150) + b"</p>\n"


def mbox_of(messages: list[bytes]) -> bytes:
    parts = []
    for message in messages:
        parts += [SEPARATOR, message if message.endswith(b"\n") else message + b"\n", b"\n"]
    return b"".join(parts)


def collection(folder: Path, pages: int = 40) -> Path:
    """Pages and style sheets in nested folders, the fixture messages, a Maildir and an mbox
    larger than the piece size the tests give (so that it is done in pieces)."""
    site = folder / "site"
    for number in range(pages):
        path = site / f"d{number % 4}" / f"{number:04}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(page(number))
    (site / "d0" / "s.css").write_bytes(b"@import 'a.css'; p { background: url(img/p.png) }")
    messages = [path.read_bytes() for path in sorted((FIXTURES / "mime").glob("*.eml"))]
    for path in sorted((FIXTURES / "mime").glob("*.eml")):
        shutil.copy(path, site / path.name)
    (site / "mail.mbox").write_bytes(mbox_of(messages * 6))
    maildir = site / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    for number, message in enumerate(messages[:5]):
        (maildir / "cur" / f"{number}.host:2,S").write_bytes(message)
    (site / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    # A crawl: gzip, a chunked and gzip-coded page, a revisit, a 301, a 206, non-HTML records,
    # a resource; over and over, so that it too goes in pieces.
    (site / "crawl").mkdir()
    write_collection(site / "crawl" / "crawl.warc.gz", compress=True, records=COLLECTION * 12)
    return site


def tree(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }


def normalised(stderr: bytes) -> list[str]:
    """Standard error less the summary's time (the one thing a run may say differently)."""
    return [re.sub(r"[\d.,]+ MB in [\d.]+ s", "MB in s", line) for line in stderr.decode().splitlines()]


EXECUTORS = {"serial": ["-j", "1"], "processes": ["-j", "2"], "dask": ["--dask", "local", "-j", "2"]}


@pytest.mark.parametrize("executor", ["processes", pytest.param("dask", marks=needs_dask)])
def test_every_executor_writes_the_serial_runs_bytes_report_and_messages(tmp_path: Path, executor: str) -> None:
    site = collection(tmp_path)
    runs = {}
    for name in ("serial", executor):
        out = tmp_path / f"out-{name}"
        report = tmp_path / f"report-{name}.jsonl"
        done = run_cli(
            tmp_path, "rewrite", str(site), "-o", str(out), "--report", str(report), "--piece-size", "20K",
            *EXECUTORS[name], timeout=300,
        )  # fmt: skip
        runs[name] = (done.returncode, normalised(done.stderr), tree(out), report.read_bytes())
    serial, other = runs["serial"], runs[executor]
    assert other[0] == serial[0]
    assert other[1] == serial[1]
    assert other[2] == serial[2]
    assert other[3] == serial[3]
    # The mbox went in pieces, and came out as the one-pass rewrite of it.
    assert serial[2]["mail.mbox"] != (site / "mail.mbox").read_bytes()
    assert "mail.mbox" in {Path(json.loads(line)["file"]).name for line in serial[3].splitlines()}
    assert not (tmp_path / f"out-{executor}" / ".rewriter-run").exists(), "a finished run leaves no work folder"
    # The crawl came out as a WARC of its records and their conversions, in pieces or not.
    assert len(read_back(serial[2]["crawl/crawl.warc.gz"])) == len(COLLECTION) * 12 + len(EXPECTED) * 12


def test_an_mbox_in_pieces_is_the_one_pass_rewrite(tmp_path: Path) -> None:
    site = collection(tmp_path, pages=1)
    mbox = site / "mail.mbox"
    whole = run_cli(tmp_path, "rewrite", str(mbox), "-o", str(tmp_path / "whole.mbox"), "--report", "w.jsonl")
    for size in ("1", "7K", "50K"):
        target = tmp_path / f"pieces-{size}.mbox"
        done = run_cli(
            tmp_path, "rewrite", str(mbox), "-o", str(target), "--piece-size", size, "-j", "2", "--report", "p.jsonl"
        )
        assert done.returncode == whole.returncode
        assert target.read_bytes() == (tmp_path / "whole.mbox").read_bytes()
        assert (tmp_path / "p.jsonl").read_bytes() == (tmp_path / "w.jsonl").read_bytes()
        timed = [re.sub(r"in [\d.]+ s$", "in s", line) for line in err_lines(whole)]  # the summary's time
        assert [re.sub(r"in [\d.]+ s$", "in s", line) for line in err_lines(done)] == timed  # one line, not one a piece


def test_a_warc_written_to_a_warc_in_pieces_is_the_one_pass_output_and_passes_warcio_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crawl = write_collection(tmp_path / "crawl.warc.gz", compress=True, records=COLLECTION * 6)
    whole = run_cli(tmp_path, "rewrite", str(crawl), "-o", "whole.warc.gz", "--report", "w.jsonl")
    assert whole.returncode == 0, whole.stderr
    warcio_check(tmp_path / "whole.warc.gz", capsys)
    records = read_back((tmp_path / "whole.warc.gz").read_bytes())
    conversions = [record for record in records if record.kind == "conversion"]
    assert all(record.digests is not False for record in records)
    expected = [EXPECTED[record.fields["WARC-Target-URI"]] for record in conversions]
    assert [record.block for record in conversions] == expected
    assert len(conversions) == len(EXPECTED) * 6
    for size, executor in (("3K", "-j1"), ("1", "-j2"), ("40K", "-j2")):
        done = run_cli(
            tmp_path,
            "rewrite",
            str(crawl),
            "-o",
            "pieces.warc.gz",
            "--piece-size",
            size,
            executor,
            "--report",
            "p.jsonl",
        )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "pieces.warc.gz").read_bytes() == (tmp_path / "whole.warc.gz").read_bytes()
        assert (tmp_path / "p.jsonl").read_bytes() == (tmp_path / "w.jsonl").read_bytes()
    plain = run_cli(tmp_path, "rewrite", str(crawl), "-o", "plain.warc", "--piece-size", "5K", "-j2")
    assert plain.returncode == 0, plain.stderr
    warcio_check(tmp_path / "plain.warc", capsys)
    assert (crawl.read_bytes()) == write_collection(
        tmp_path / "again.warc.gz", compress=True, records=COLLECTION * 6
    ).read_bytes()


def test_a_warc_is_never_rewritten_in_place_and_a_folder_walk_takes_archives(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    write_collection(site / "a.warc.gz", compress=True)
    write_collection(site / "b.warc", compress=False)
    (site / "page.html").write_bytes(page(1))
    before = tree(site)
    done = run_cli(tmp_path, "rewrite", str(site / "a.warc.gz"), "--in-place")
    assert done.returncode == 2 and b"never changed in place" in done.stderr
    done = run_cli(tmp_path, "rewrite", str(site), "--in-place", "-q")
    assert done.returncode == 0, done.stderr
    assert tree(site)["a.warc.gz"] == before["a.warc.gz"] and tree(site)["b.warc"] == before["b.warc"]
    done = run_cli(tmp_path, "rewrite", str(site), "-o", "out")
    assert done.returncode == 0, done.stderr
    assert sorted(tree(tmp_path / "out")) == ["a.warc.gz", "b.warc", "page.html"]
    assert (tmp_path / "out" / "b.warc").read_bytes().startswith(b"WARC/1.")


# --------------------------------------------------------------------------
# Killing
# --------------------------------------------------------------------------


def many_pages(folder: Path, count: int, size: int) -> dict[str, bytes]:
    for number in range(count):
        path = folder / f"p{number // 100}" / f"{number:05}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(page(number, size))
    return tree(folder)


def expected_outputs(tmp_path: Path, site: Path) -> dict[str, bytes]:
    """What a serial run writes (exit 0: every link has a base)."""
    out = tmp_path / "expected"
    done = run_cli(tmp_path, "rewrite", str(site), "-o", str(out), "-j", "1", "-q", timeout=300)
    assert done.returncode == 0, done.stderr
    return tree(out)


def children(pid: int) -> list[int]:
    """The processes *pid* started (Linux's /proc)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "children") as listing:
            found += [int(child) for child in listing.read().split()]
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def wait_for(condition: object, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def outputs_are_absent_or_new(out: Path, expected: dict[str, bytes]) -> int:
    """Every output file holds its new content exactly (or is not there yet); how many are there."""
    found = 0
    for relative, data in tree(out).items():
        if relative.startswith(".rewriter-run/"):
            continue
        if Path(relative).name.startswith(".") and relative.endswith(".tmp"):
            continue  # a killed writer's temporary: never under the output's name
        assert data == expected[relative], f"{relative} holds a part of its output"
        found += 1
    return found


linux_only = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the workers through Linux's /proc")


def command(site: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "rewriter", "rewrite", str(site), "-o", str(out), *extra]


@linux_only
@pytest.mark.parametrize("executor", ["processes", pytest.param("dask", marks=needs_dask)])
def test_a_worker_killed_mid_run_costs_a_retry_named_in_the_summary(tmp_path: Path, executor: str) -> None:
    site = tmp_path / "site"
    many_pages(site, 400, 40)
    expected = expected_outputs(tmp_path, site)
    # A kill that lands between two of a worker's batches costs nothing and proves nothing: the run
    # is made again (each time whole and right); one of three kills must land inside a batch.
    retried = []
    for attempt in range(3):
        said, returncode, out = _kill_a_worker(site, tmp_path / f"out{attempt}", executor)
        assert "Traceback" not in said
        assert outputs_are_absent_or_new(out, expected) == len(expected)
        assert tree(out) == expected
        assert returncode == 0, said
        retried = re.findall(r"^rewriter: retried after their worker stopped: \S+\.html", said, re.M)
        if retried:
            break
    assert retried, said


def _kill_a_worker(site: Path, out: Path, executor: str) -> tuple[str, int, Path]:
    """Run the command on *site*, kill one of its workers while batches of full size are under
    way: (its standard error, its exit status, its output folder)."""
    runner = subprocess.Popen(command(site, out, *EXECUTORS[executor]), stderr=subprocess.PIPE)
    try:
        workers: list[int] = []

        def working() -> bool:
            workers[:] = [child for child in children(runner.pid) if "resource_tracker" not in cmdline(child)]
            if executor == "dask":  # Dask's worker processes, started by their nannies in this process
                workers[:] = [child for child in workers if "multiprocessing" in cmdline(child)]
            # The first batches hold 1, 1, 2, 2, 4... pages (pipeline.Batching), over in a moment:
            # the kill waits for full ones, past 100 pages, where a worker is inside a batch but for
            # the moment between two (a batch's pages are written and put in place at its end).
            if not workers or not out.exists():
                return False
            return sum(1 for path in out.rglob("*.html")) >= 100

        wait_for(working)
        os.kill(workers[0], signal.SIGKILL)
        _, stderr = runner.communicate(timeout=300)
    finally:
        if runner.poll() is None:
            runner.kill()
    return stderr.decode(), runner.returncode, out


@linux_only
@pytest.mark.parametrize("executor", ["serial", "processes", pytest.param("dask", marks=needs_dask)])
def test_a_killed_run_resumed_finishes_without_touching_what_was_done(tmp_path: Path, executor: str) -> None:
    site = tmp_path / "site"
    many_pages(site, 300, 40)
    mbox = site / "mail.mbox"
    messages = [path.read_bytes() for path in sorted((FIXTURES / "mime").glob("*.eml"))]
    base = b"Content-Base: http://example.org/mail/\n"  # every message has a base: exit 0
    mbox.write_bytes(mbox_of([base + message for message in messages] * 8))
    expected = expected_outputs(tmp_path, site)
    out = tmp_path / "out"
    options = ["--report", str(tmp_path / "links.jsonl"), "--piece-size", "30K"]
    runner = subprocess.Popen(command(site, out, *EXECUTORS[executor], *options), start_new_session=True)
    try:
        journal = out / ".rewriter-run" / "journal.jsonl"
        wait_for(lambda: journal.exists() and journal.read_bytes().count(b"\n") > 40)
        os.killpg(runner.pid, signal.SIGKILL)  # the command and every process it started
        runner.wait(timeout=60)
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
    assert outputs_are_absent_or_new(out, expected) < len(expected), "the run was killed too late to test resuming"
    assert not (tmp_path / "links.jsonl").exists(), "a report is whole or not there"
    done_before = {}
    for line in journal.read_bytes().splitlines(keepends=True)[1:]:
        if not line.endswith(b"\n"):
            # The line the kill cut (a write(2) crossing a page can stop there on SIGKILL; a batch's
            # lines are written in a burst, just as this test looks): --resume drops it.
            continue
        entry = json.loads(line)
        target = entry["key"].split("\0")[1]
        if Path(target).exists() and entry["outcome"].get("piece") is None:
            status = os.stat(target)
            done_before[target] = (status.st_ino, status.st_mtime_ns)
    assert done_before
    resumed = run_cli(tmp_path, *command(site, out, *EXECUTORS[executor], *options, "--resume")[3:], timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert tree(out) == expected
    for target, identity in done_before.items():
        status = os.stat(target)
        assert (status.st_ino, status.st_mtime_ns) == identity, f"{target} was done by the killed run, and again"
    said = resumed.stderr.decode()
    assert re.search(rf"^rewriter: {len(done_before):,} done by the run that was stopped", said, re.M) or (
        "done by the run that was stopped" in said
    ), said
    assert not (out / ".rewriter-run").exists()
    # The report of the resumed run is the report of a run never stopped.
    whole = tmp_path / "whole.jsonl"
    run_cli(tmp_path, "rewrite", str(site), "-o", str(tmp_path / "again"), "-j", "1", "--report", str(whole))
    assert (tmp_path / "links.jsonl").read_bytes() == whole.read_bytes()


def test_resume_refuses_a_journal_of_other_options(tmp_path: Path) -> None:
    site = tmp_path / "site"
    many_pages(site, 3, 1)
    work = tmp_path / "out" / ".rewriter-run"
    work.mkdir(parents=True)
    header = {"rewriter-journal": 1, "options": {"rules": "whatever"}}
    (work / "journal.jsonl").write_text(json.dumps(header) + "\n")
    done = run_cli(tmp_path, "rewrite", str(site), "-o", str(tmp_path / "out"), "--resume")
    assert done.returncode == 2
    assert "written by a run with other options" in done.stderr.decode()
    assert not any((tmp_path / "out").rglob("*.html"))


def test_a_journal_that_is_not_ours_is_never_run(tmp_path: Path) -> None:
    # Only JSON is read back: a planted file can make a resumed run skip nothing it should do.
    site = tmp_path / "site"
    many_pages(site, 3, 1)
    work = tmp_path / "out" / ".rewriter-run"
    work.mkdir(parents=True)
    (work / "journal.jsonl").write_bytes(b"\x80\x04\x95cos\nsystem\n")
    done = run_cli(tmp_path, "rewrite", str(site), "-o", str(tmp_path / "out"), "--resume")
    assert done.returncode == 2
    assert "not a journal of rewriter" in done.stderr.decode()


def test_resume_with_no_journal_says_so_and_does_everything(tmp_path: Path) -> None:
    site = tmp_path / "site"
    many_pages(site, 3, 1)
    done = run_cli(tmp_path, "rewrite", str(site), "-o", str(tmp_path / "out"), "--resume")
    assert done.returncode == 0
    assert "nothing to resume" in done.stderr.decode()
    assert len(tree(tmp_path / "out")) == 3


def test_resume_needs_an_output(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_bytes(page(1))
    done = run_cli(tmp_path, "rewrite", "a.html", "--resume")
    assert done.returncode == 2 and b"--resume needs -o or --in-place" in done.stderr


def test_the_work_folder_is_never_an_input(tmp_path: Path) -> None:
    site = tmp_path / "site"
    many_pages(site, 2, 1)
    (site / ".rewriter-run").mkdir()
    (site / ".rewriter-run" / "journal.html").write_bytes(page(9))
    done = run_cli(tmp_path, "rewrite", str(site), "-o", str(tmp_path / "out"), "--include", "*")
    assert done.returncode == 0
    assert sorted(tree(tmp_path / "out")) == ["p0/00000.html", "p0/00001.html"]


class _Recording:
    """A serial executor that keeps the jobs of each batch it is given (their file names)."""

    def __init__(self, workers: int) -> None:
        from rewriter.run.executors import Serial

        self.workers = workers
        self.batch = Serial.batch
        self.batches: list[list[str]] = []

    def map(self, function, items, *shared):  # type: ignore[no-untyped-def]
        from rewriter.run.executors import Serial

        def kept(items):  # type: ignore[no-untyped-def]
            for jobs in items:
                self.batches.append([Path(job.source).name for job in jobs])
                yield jobs

        return Serial().map(function, kept(items), *shared)


def test_batches_are_sized_in_one_place_by_count_and_bytes_for_every_executor(tmp_path: Path) -> None:
    # Issue 34: one worker takes up to 128 small pages a batch (8 MiB at most); several take their
    # first batches smaller (1, 1, 2, 2, 4, 4... over the workers) and 256 KiB at most, so that
    # a large page goes nearly alone and the workers end together.
    from rewriter.run.executors import DaskExecutor, Processes, Serial
    from rewriter.run.jobs import Settings
    from rewriter.run.pipeline import BATCH_BYTES, BATCH_JOBS, SHARED_BATCH_BYTES, Batching, execute
    from rewriter.run.plan import iter_plan

    assert BATCH_JOBS == 128
    assert Batching.of(Serial()) == Batching(BATCH_JOBS, BATCH_BYTES, 1)
    assert Batching.of(Processes(2)) == Batching(BATCH_JOBS, SHARED_BATCH_BYTES, 2)
    if HAS_DASK:
        assert Batching.of(DaskExecutor(scheduler="synchronous", workers=3)) == Batching(128, SHARED_BATCH_BYTES, 3)
    site = tmp_path / "site"
    site.mkdir()
    for number in range(300):
        size = 300 << 10 if number == 70 else 100  # one page larger than a shared batch
        (site / f"p{number:03}.html").write_bytes(b"<a href=x>" + b" " * size)
    settings = Settings(url="http://h/")
    one = _Recording(workers=1)
    list(execute(iter_plan([str(site)], str(tmp_path / "one")), settings, one))  # type: ignore[arg-type]
    assert [len(batch) for batch in one.batches] == [128, 128, 44]
    two = _Recording(workers=2)
    list(execute(iter_plan([str(site)], str(tmp_path / "two")), settings, two))  # type: ignore[arg-type]
    assert [len(batch) for batch in two.batches] == [1, 1, 2, 2, 4, 4, 8, 8, 16, 16, 8, 1, 64, 64, 101]
    assert two.batches[11] == ["p070.html"]  # alone: the pages before it went without it
    assert [name for batch in two.batches for name in batch] == [f"p{number:03}.html" for number in range(300)]
    assert tree(tmp_path / "one") == tree(tmp_path / "two")
