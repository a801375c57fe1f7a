"""Batch benchmark: ``rewriter rewrite`` on the HTML corpus with -j 1 against -j 2, in the same run.

Every ``*.html`` page of ../shared/corpus/html (or the folder given with --corpus; --limit K
takes only the first K, linked into a scratch folder) is rewritten into a fresh temporary
output folder, two ways:

- command line, interpreter start-up included: ``python -m rewriter rewrite CORPUS -o OUT
  -j N -q --include '*.html' --no-copy-others`` as a child process, timed from launch to exit; its standard
  error (the links left relative, expected) is captured and dropped. It runs in an empty
  scratch folder so that no rewriter.toml or pyproject.toml changes its defaults;
- batch phase in one process: ``plan([CORPUS], OUT, include=["*.html"])`` and
  ``list(run(jobs, Settings(), N))`` in this process, after ``rewriter.run.batch.warm_up()``
  (the engines imported once, untimed), with ``gc.collect()`` before each run.

Each round runs every N of --jobs-list (default 1,2), the order reversed every other round
so that drift falls on all of them alike. Prints, per N, the median and best wall time
and MB/s, and the speed-up against -j 1 from the medians and from the bests. After the
runs, every output tree must be byte-identical to the first -j 1 tree (same relative paths,
same bytes): prints "outputs identical: yes", or exits 1 naming the first differing file.

Every child interpreter reads its modules from compiled bytecode, as an installed package
does: the children write and read it in a scratch cache (PYTHONPYCACHEPREFIX), filled by
one untimed launch, even where PYTHONDONTWRITEBYTECODE is set (it is, in some sandboxes;
compiling the package's sources on every launch added 0.05-0.1 s to each command line).

For context it also prints the machine's cores, the Python version, the start-up every
command line pays whatever N (interpreter and imports), and how 2 processes of pure-Python
CPU work scale against the same work done serially: the ceiling for -j 2 on this machine.
On a shared virtual machine that ceiling drifts (1.3x to 2.1x within an hour on the 2-vCPU
machine this was written on), so each round measures it again after its runs, and the
report gives each round's own speed-up beside it and the share of it reached.

With --mirror COUNT it times a mirror of many small pages instead (issue #34): COUNT pages of
about 1.6 KB with 4 relative links each (:func:`small_mirror`, 100 to a folder), rewritten by the
command line with ``--url-root`` three ways in each round, the order reversed every other round:
``-j 1``, ``-j 2`` and ``--dask local -j 2``. Prints, for each, the median wall time and the median
CPU time of every process, each against ``-j 1``, and the share of the ceiling reached: the ceiling
for N workers is the ``-j 1`` run's CPU divided by N (the same round's), the share that ceiling
over the run's wall time; and the speed-up over the same round's ceiling of 2 processes of pure CPU
work (:class:`Ceiling`); and the most that share could be with no core ever idle, given the run's
CPU and the start-up S that one process pays while the other cores wait: C1 / (CPU + (N - 1) S),
C1 being ``-j 1``'s CPU (so a run that costs more CPU than ``-j 1`` bounds its own share).
--no-fsync runs every one with it (the CPU without the disk's syncs, which on a shared disk wait
for other programs' writes too); --no-dask leaves Dask out. Every output
tree must be byte-identical to the first ``-j 1`` tree. --baseline TREE (a source tree of rewriter,
``git archive REV rewriter | tar -x -C TREE``) times each executor again with that tree's package,
in the same rounds: before and after a change, on a machine whose speed drifts.

    python benchmarks/bench_batch.py [--corpus DIR] [--rounds 5] [--jobs-list 1,2] [--limit K]
    python benchmarks/bench_batch.py --mirror 5000 [--rounds 3] [--no-fsync] [--no-dask] [--baseline TREE]
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_cli import set_aside  # this folder is on sys.path when run as a script

from rewriter.run.batch import Settings, plan, run, warm_up

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
INCLUDE = "*.html"
TARGET_SPEED_UP = 1.8  # the acceptance point for -j 2
CPU_LOOP_SECONDS = 0.3  # one pure-CPU work unit of the machine reference
# The command line's fixed cost: the interpreter and the imports; it leaves with os._exit, as the tool does.
START_UP = "import os, rewriter.cli.commands, rewriter.run.batch; rewriter.run.batch.warm_up(); os._exit(0)"

# One timed run: (input folder, output folder, N) -> (wall seconds, CPU seconds).
Runner = Callable[[Path, Path, int], tuple[float, float]]


def pages(corpus: Path) -> list[Path]:
    """The inputs the command line takes from *corpus*, in plan order."""
    jobs, _ = plan([str(corpus)], str(corpus.parent / "unused-output"), include=[INCLUDE])
    return [Path(job.source) for job in jobs]


def stage(corpus: Path, chosen: list[Path], scratch: Path) -> Path:
    """A folder holding only *chosen* (hard links, else copies), for --limit."""
    folder = scratch / "input"
    for path in chosen:
        target = folder / path.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:  # another file system, or no hard links
            shutil.copy2(path, target)
    return folder


def cpu_seconds() -> float:
    """User and system time of this process and of its reaped children (workers included)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def child_environment(scratch: Path) -> dict[str, str]:
    """The environment of every child interpreter: bytecode cached under *scratch*."""
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
    return environment


def run_command(corpus: Path, out: Path, workers: int) -> tuple[float, float]:
    scratch = out.parents[1]  # measure() puts every output at SCRATCH/jN-.../out
    command = [sys.executable, "-m", "rewriter", "rewrite", str(corpus), "-o", str(out)]
    command += ["-j", str(workers), "-q", "--include", INCLUDE, "--no-copy-others"]  # the pages only, as plan()
    cpu = cpu_seconds()
    start = time.perf_counter()
    # An empty working folder: no configuration file there to change the defaults.
    done = subprocess.run(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out.parent, env=child_environment(scratch)
    )
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    if done.returncode not in (0, 1):  # 1: some links stay relative, expected in this corpus
        tail = done.stderr.decode("utf-8", "replace").splitlines()[-5:]
        raise SystemExit(f"rewriter -j {workers} exited {done.returncode}:\n" + "\n".join(tail))
    return seconds, cpu


def run_in_process(corpus: Path, out: Path, workers: int) -> tuple[float, float]:
    gc.collect()  # the previous run's garbage is not collected on this run's clock
    cpu = cpu_seconds()
    start = time.perf_counter()
    jobs, _ = plan([str(corpus)], str(out), include=[INCLUDE])
    outcomes = list(run(jobs, Settings(), workers))
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    failed = [outcome for outcome in outcomes if outcome.state == "failed"]
    if failed:
        raise SystemExit(f"-j {workers}: {failed[0].shown} failed: {failed[0].messages[:1]}")
    return seconds, cpu


def tree(folder: Path) -> dict[str, Path]:
    """Every file under *folder* by its relative path (hidden ones too: a left temporary counts)."""
    found = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            path = Path(parent) / name
            found[path.relative_to(folder).as_posix()] = path
    return found


def first_difference(reference: Path, other: Path) -> str | None:
    """The first relative path (sorted) whose presence or bytes differ, with how; None when identical."""
    want, got = tree(reference), tree(other)
    for relative in sorted(want.keys() | got.keys()):
        if relative not in got:
            return f"{relative}: missing"
        if relative not in want:
            return f"{relative}: not in the -j 1 output"
        if want[relative].read_bytes() != got[relative].read_bytes():
            return f"{relative}: different bytes"
    return None


def measure(
    label: str,
    runner: Runner,
    corpus: Path,
    workers_list: list[int],
    rounds: int,
    scratch: Path,
    reference: Path,
    differences: list[str],
    ceiling: Ceiling,
) -> tuple[dict[int, list[tuple[float, float]]], dict[int, list[float]]]:
    """(wall, CPU) seconds of *rounds* rounds of every N, and the machine's ceiling for every
    N > 1 measured in each round after its runs; each output tree is compared with
    *reference* (the first -j 1 tree, made here when absent) outside the clock, then set aside."""
    seconds: dict[int, list[tuple[float, float]]] = {workers: [] for workers in workers_list}
    ceilings: dict[int, list[float]] = {workers: [] for workers in workers_list if workers > 1}
    for number in range(rounds):
        order = workers_list if number % 2 == 0 else workers_list[::-1]
        for workers in order:
            home = Path(tempfile.mkdtemp(prefix=f"j{workers}-", dir=scratch))
            out = home / "out"
            seconds[workers].append(runner(corpus, out, workers))
            if not reference.exists() and workers == 1:
                out.rename(reference)
            else:
                difference = first_difference(reference, out)
                if difference is not None:
                    differences.append(f"{label}, -j {workers}, round {number + 1}: {difference}")
            set_aside(home, scratch)
        for workers in ceilings:
            ceilings[workers].append(ceiling.once(workers))
    return seconds, ceilings


def report(
    title: str, seconds: dict[int, list[tuple[float, float]]], ceilings: dict[int, list[float]], size: int
) -> None:
    print(f"\n{title}:")
    median = {workers: statistics.median(wall for wall, _ in values) for workers, values in seconds.items()}
    best = {workers: min(wall for wall, _ in values) for workers, values in seconds.items()}
    for workers, values in seconds.items():
        # CPU time summed over every process: the work -j N spreads, and what it adds (forks, pickling).
        cpu = statistics.median(used for _, used in values)
        print(
            f"  -j {workers:<3} median {median[workers]:6.2f} s {size / median[workers] / 1e6:7.1f} MB/s"
            f"   best {best[workers]:6.2f} s {size / best[workers] / 1e6:7.1f} MB/s   CPU (all processes) {cpu:6.2f} s"
        )
    for workers in ceilings:
        print(
            f"  -j {workers} / -j 1 speed-up: {median[1] / median[workers]:.2f}x (medians), "
            f"{best[1] / best[workers]:.2f}x (bests)   (target for -j 2: >= {TARGET_SPEED_UP}x)"
        )
        # Each round's own ratio, and the machine's ceiling measured in the same round: the
        # share of the ceiling reached does not drift with the machine as the ratio does.
        ratios = [one[0] / many[0] for one, many in zip(seconds[1], seconds[workers], strict=True)]
        shares = [ratio / limit for ratio, limit in zip(ratios, ceilings[workers], strict=True)]
        print(
            f"  per round: speed-up median {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}), "
            f"machine ceiling in the same rounds median {statistics.median(ceilings[workers]):.2f}x "
            f"({min(ceilings[workers]):.2f}-{max(ceilings[workers]):.2f}), "
            f"speed-up / ceiling median {statistics.median(shares):.2f}"
        )


def _spin(count: int) -> int:
    """Pure-Python CPU work: no I/O, no allocation worth speaking of."""
    total = 0
    for value in range(count):
        total += value * value % 7
    return total


def _in_processes(count: int, processes: int) -> None:
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)
    children = [context.Process(target=_spin, args=(count,)) for _ in range(processes)]
    for child in children:
        child.start()
    for child in children:
        child.join()


class Ceiling:
    """How P processes of pure-Python CPU work scale on this machine, now: (P work units one
    after the other) / (P units in P processes at once), P when each process has a core of
    its own. On a shared virtual machine it drifts from run to run, so every round measures
    it again beside its own runs."""

    def __init__(self) -> None:
        start = time.perf_counter()
        _spin(200_000)
        self.count = int(200_000 * CPU_LOOP_SECONDS / (time.perf_counter() - start))
        self.turn = 0

    def once(self, processes: int) -> float:
        self.turn += 1
        steps = ("serial", "parallel") if self.turn % 2 else ("parallel", "serial")
        seconds = {}
        for step in steps:
            start = time.perf_counter()
            if step == "serial":
                for _ in range(processes):
                    _spin(self.count)
            else:
                _in_processes(self.count, processes)
            seconds[step] = time.perf_counter() - start
        return seconds["serial"] / seconds["parallel"]


def cpu_scaling(processes: int, rounds: int) -> float:
    """The median, over *rounds*, of how *processes* processes of pure CPU work scale here
    (:class:`Ceiling`): what other benchmarks print beside their own speed-ups."""
    ceiling = Ceiling()
    return statistics.median(ceiling.once(processes) for _ in range(max(1, rounds)))


def start_up(rounds: int, folder: Path) -> float:
    """The median seconds of an interpreter importing what every command line imports
    (after one untimed launch of the tool, which fills the bytecode cache)."""
    environment = child_environment(folder)
    for launch in (["-c", START_UP], ["-m", "rewriter", "--help"]):
        subprocess.run([sys.executable, *launch], check=True, cwd=folder, env=environment, stdout=subprocess.DEVNULL)
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", START_UP], check=True, cwd=folder, env=environment)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


# The small-page mirror (--mirror): ~1.6 KB a page, 4 relative links (a style sheet, two pages, an image).
MIRROR_ROOT = "http://example.org/mirror/"
MIRROR_PER_FOLDER = 100
MIRROR_FILLER = "Small pages of a mirrored site, each with a few links and a paragraph of text. "
MIRROR_EXECUTORS = {"-j 1": ["-j", "1"], "-j 2": ["-j", "2"], "dask -j 2": ["--dask", "local", "-j", "2"]}


def small_page(number: int, count: int) -> bytes:
    """Page *number* of a mirror of *count*: about 1.6 KB, 4 relative links."""
    after, other = (number + 1) % count, (number * 7 + 3) % count
    return (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Page {number}</title>\n'
        f'<link rel="stylesheet" href="../style.css"></head>\n<body><h1>Page {number}</h1>\n'
        f"<p>{MIRROR_FILLER * 17}</p>\n"
        f'<p><a href="p{after:05}.html">next</a> <a href="../d{other // MIRROR_PER_FOLDER:03}/p{other:05}.html">'
        f'see also</a> <img src="img/{number}.png" alt=""></p>\n</body></html>\n'
    ).encode()


def small_mirror(folder: Path, count: int) -> Path:
    """*count* pages of :func:`small_page` under *folder*, 100 to a sub-folder."""
    for number in range(count):
        path = folder / f"d{number // MIRROR_PER_FOLDER:03}" / f"p{number:05}.html"
        if number % MIRROR_PER_FOLDER == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(small_page(number, count))
    return folder


def run_mirror(mirror: Path, out: Path, options: list[str], tree: Path | None = None) -> tuple[float, float]:
    """The command line on the mirror (the package in the source tree *tree*, else this one's):
    (wall, CPU of every process) seconds."""
    scratch = out.parents[1]
    command = [sys.executable, "-m", "rewriter", "rewrite", str(mirror), "-o", str(out), "-q"]
    command += ["--url-root", MIRROR_ROOT, *options]
    environment = child_environment(scratch)
    if tree is not None:
        environment["PYTHONPATH"] = str(tree)
    cpu = cpu_seconds()
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out.parent, env=environment)
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").splitlines()[-5:]
        raise SystemExit(f"rewriter {' '.join(options)} exited {done.returncode}:\n" + "\n".join(tail))
    return seconds, cpu


def mirror_main(
    count: int, rounds: int, executors: dict[str, list[str]], sync: bool = True, baseline: Path | None = None
) -> int:
    """The small-page mirror: every executor of *executors* in each round, alternating; with
    *baseline* (a source tree of the package), each again with that tree's package."""
    runs = {label: (options, None) for label, options in executors.items()}
    if baseline is not None:
        runs.update({f"{label} (baseline)": (options, baseline) for label, options in executors.items()})
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as name:
        scratch = Path(name)
        mirror = small_mirror(scratch / "mirror", count)
        size = sum(path.stat().st_size for path in mirror.rglob("*.html"))
        synced = "" if sync else ", --no-fsync"
        print(f"{count} pages of a mirror, {size / count / 1e3:.2f} KB a page, {rounds} rounds{synced}, in {scratch}")
        print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {platform.platform()}")
        ceiling = Ceiling()
        started = start_up(3, scratch)
        print(f"start-up paid by every command line: {started:.2f} s")
        reference = scratch / "reference"
        seconds: dict[str, list[tuple[float, float]]] = {label: [] for label in runs}
        machine: list[float] = []  # each round's ceiling for 2 processes of pure CPU work
        differences = []
        for number in range(rounds):
            order = list(runs) if number % 2 == 0 else list(runs)[::-1]
            for label in order:
                home = Path(tempfile.mkdtemp(prefix="run-", dir=scratch))
                options, tree_of = runs[label]
                options = options + ([] if sync else ["--no-fsync"])
                seconds[label].append(run_mirror(mirror, home / "out", options, tree_of))
                if not reference.exists() and label == "-j 1":
                    (home / "out").rename(reference)
                else:
                    difference = first_difference(reference, home / "out") if reference.exists() else None
                    if difference is not None:
                        differences.append(f"{label}, round {number + 1}: {difference}")
                set_aside(home, scratch)
            machine.append(ceiling.once(2))
        scale = statistics.median(machine)
        # The bare loops' own share of the ceiling the issue names (serial CPU / N): less than 1 where
        # two busy cores slow each other (a shared virtual machine's), which no program can make up.
        print(
            f"machine: 2 processes of pure CPU work scale {scale:.2f}x in the same rounds"
            f" ({min(machine):.2f}-{max(machine):.2f}): they reach {scale / 2:.2f} of their own CPU / 2"
        )
        print("\nsmall-page mirror, command line (medians):")
        for label, values in seconds.items():
            serial = seconds["-j 1 (baseline)" if label.endswith("(baseline)") else "-j 1"]
            wall = statistics.median(one for one, _ in values)
            cpu = statistics.median(used for _, used in values)
            workers = 1 if label.startswith("-j 1") else 2
            # each round against the same round's -j 1: its CPU / N is the ceiling for N workers
            shares = [(base[1] / workers) / own[0] for base, own in zip(serial, values, strict=True)]
            walls = [base[0] / own[0] for base, own in zip(serial, values, strict=True)]
            cpus = [own[1] / base[1] for base, own in zip(serial, values, strict=True)]
            line = (
                f"  {label:<20} wall {wall:6.2f} s  CPU {cpu:6.2f} s   speed-up {statistics.median(walls):.2f}x"
                f"  CPU / -j 1 {statistics.median(cpus):.2f}   -j 1 CPU / {workers} / wall"
                f" {statistics.median(shares):.2f} ({min(shares):.2f}-{max(shares):.2f})"
            )
            if workers > 1:  # the same round's speed-up over the same round's ceiling of pure CPU work
                reached = [ratio / limit for ratio, limit in zip(walls, machine, strict=True)]
                line += f"   speed-up / machine ceiling {statistics.median(reached):.2f}"
                # The most the share could be with no core ever idle: the start-up S is one process's
                # while the other cores wait, so wall >= S + (CPU - S) / N, and the share C1 / N / wall
                # is at most C1 / (CPU + (N - 1) S).
                bounds = [
                    base[1] / (own[1] + (workers - 1) * started) for base, own in zip(serial, values, strict=True)
                ]
                line += f"   share with no core idle at most {statistics.median(bounds):.2f}"
            print(line)
        print()
        if differences:
            print(f"outputs identical: no; first difference: {differences[0]}")
            return 1
        print(f"outputs identical: yes ({len(tree(reference))} files, each tree against the first -j 1)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs-list", default="1,2", help="the values of -j to time, comma-separated (1 is added)")
    parser.add_argument("--limit", type=int, default=None, metavar="K", help="only the first K pages (smoke tests)")
    parser.add_argument("--mirror", type=int, default=None, metavar="COUNT", help="a mirror of COUNT small pages")
    parser.add_argument("--no-dask", action="store_true", help="--mirror: without the Dask run")
    parser.add_argument("--no-fsync", action="store_true", help="--mirror: every run with --no-fsync")
    parser.add_argument(
        "--baseline", type=Path, default=None, metavar="TREE", help="--mirror: each run again with TREE's rewriter"
    )
    args = parser.parse_args(argv)
    if args.mirror is not None:
        executors = dict(MIRROR_EXECUTORS)
        if args.no_dask:
            del executors["dask -j 2"]
        return mirror_main(args.mirror, args.rounds, executors, sync=not args.no_fsync, baseline=args.baseline)
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus", file=sys.stderr)
        return 2
    workers_list = sorted({1, *(int(value) for value in args.jobs_list.split(",") if value.strip())})
    if workers_list[0] < 1 or args.rounds < 1:
        parser.error("--jobs-list values and --rounds must be at least 1")
    chosen = pages(args.corpus)[: args.limit]
    size = sum(path.stat().st_size for path in chosen)
    warm_up()  # the engines imported before any in-process run, as the -j 2 path does before it forks
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as name:
        scratch = Path(name)
        corpus = args.corpus if args.limit is None else stage(args.corpus, chosen, scratch)
        print(
            f"{len(chosen)} pages ({INCLUDE} of {args.corpus}), {size / 1e6:.1f} MB, {args.rounds} rounds, "
            f"outputs under {tempfile.gettempdir()}"
        )
        print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {platform.platform()}")
        ceiling = Ceiling()
        for processes in workers_list[1:]:
            scaling = statistics.median(ceiling.once(processes) for _ in range(args.rounds))
            print(f"machine: {processes} processes of pure CPU work scale {scaling:.2f}x (ideal {processes}.00)")
        cost = start_up(args.rounds, scratch)
        print(f"start-up paid by every command line whatever -j (interpreter, imports): {cost:.2f} s")
        reference = scratch / "reference"
        differences: list[str] = []
        tables = {
            "command line, interpreter start-up included": run_command,
            "batch phase in one process": run_in_process,
        }
        for title, runner in tables.items():
            seconds, ceilings = measure(
                title, runner, corpus, workers_list, args.rounds, scratch, reference, differences, ceiling
            )
            report(title, seconds, ceilings, size)
        compared = 2 * args.rounds * len(workers_list) - 1
        print()
        if differences:
            print(f"outputs identical: no ({len(differences)} of {compared} trees differ from the first -j 1 tree)")
            print(f"first difference: {differences[0]}")
            return 1
        print(f"outputs identical: yes ({compared} trees of {len(tree(reference))} files, each against the first -j 1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
