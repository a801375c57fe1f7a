"""Pathological inputs: how the time grows with the input, and what it costs against a benign one.

tests/test_pathological.py asserts that each pathological input's operations (calls) grow
linearly; what a count cannot see, the work inside one C call, only a clock can. This runs
those cases (the tests themselves, so that each input is written once) with
``REWRITER_PATHOLOGICAL_TIMES=1``, which times each one too, and prints a table:

* time growth: the CPU time of the input P at n over P at n / f (linear: f; quadratic: f**2);
* vs benign: P's time over that of a benign input of P's size (a page of links, a style sheet,
  a flat multipart) doing the engine's ordinary work;
* the same two figures in operations, which the tests assert.

Times are CPU seconds of the process (not the wall clock, which counts waiting for a core),
the best of at least three rounds taken in turns (P small, P large, benign), each round over
at least MIN_INTERVAL (a short call is timed in a group of calls, as timeit does). Nothing is
asserted on a time: read the figures.

    python benchmarks/bench_pathological.py [-k PYTEST_EXPRESSION]
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MIN_INTERVAL = 0.04  # CPU seconds: the shortest interval a time is taken from (see repeats)
MAX_REPEATS = 1000

# CPU time of this process: unlike the wall clock, it does not count waiting for a core.
clock = time.process_time


def timed(run: Callable[[], object], repeats: int) -> float:
    """CPU seconds of one call of *run*, averaged over *repeats* calls timed together."""
    gc.collect()
    start = clock()
    for _ in range(repeats):
        run()
    return (clock() - start) / repeats


def repeats(run: Callable[[], object]) -> int:
    """How many calls of *run* span at least MIN_INTERVAL of CPU time (as timeit's autorange)."""
    once = min(timed(run, 1) for _ in range(2))
    return max(1, min(MAX_REPEATS, math.ceil(MIN_INTERVAL / max(once, 1e-7))))


def best_of(*runs: Callable[[], object], reps: int = 3, budget: float = 0.25) -> list[float]:
    """The best CPU time of a call of each run, taken in turns: *reps* rounds, more (up to 10)
    while they take less than *budget* seconds in all."""
    counts = [repeats(run) for run in runs]
    best = [math.inf] * len(runs)
    started, rounds = clock(), 0
    while rounds < reps or (rounds < 10 and clock() - started < budget):
        for index, run in enumerate(runs):
            best[index] = min(best[index], timed(run, counts[index]))
        rounds += 1
    return best


def figures_of(output: str) -> list[dict[str, object]]:
    """The figures each case printed (one JSON object a line, from its case on: pytest's progress
    dot for the case before may precede it)."""
    marker = '{"case"'
    return [json.loads(line[line.index(marker) :]) for line in output.splitlines() if marker in line]


def table(rows: list[dict[str, object]]) -> str:
    lines = [f"{'case':48} {'step':>5} {'time growth':>11} {'vs benign':>9} {'ops growth':>10} {'ops vs benign':>13}"]
    for row in rows:
        lines.append(
            f"{str(row['case'])[:48]:48} {row['step']:>5} {row.get('time_growth', '-'):>11} "
            f"{row.get('time_vs_baseline', '-'):>9} {row['growth']:>10} {row['vs_baseline']:>13}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-k", dest="expression", help="only the cases pytest -k selects (e.g. nested_svg)")
    options = parser.parse_args(argv)
    command = [sys.executable, "-m", "pytest", "tests/test_pathological.py", "-q", "-s", "-p", "no:cacheprovider"]
    if options.expression:
        command += ["-k", options.expression]
    environment = {**os.environ, "REWRITER_PATHOLOGICAL_TIMES": "1"}
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, check=False)
    rows = figures_of(done.stdout)
    print(table(rows))
    if done.returncode != 0 or not rows:
        print(done.stdout[-4000:], done.stderr[-4000:], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
