"""Standard error on a terminal against standard error sent to a file, for one batch run.

``rewriter rewrite FOLDER -o OUT/`` (no base: every page has links left relative, the case that
once wrote a line per link) runs with its standard error on a pseudo-terminal (the progress bar
drawn, as a user sees it) and with it sent to a file, alternately, in this one run. Printed: the
CPU time of each (the child's user + system time, the fairer figure on a shared machine), wall
time, the lines standard error got, and the ratio terminal / file (the issue's target: no more
than 1.1, as near 1.0 as the noise allows).

    python3 benchmarks/bench_terminal.py                       # ../shared/corpus/html
    python3 benchmarks/bench_terminal.py --folder pages/ --rounds 5

POSIX only (``pty``).
"""

from __future__ import annotations

import argparse
import os
import pty
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _command(folder: Path, out: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "rewriter", "rewrite", str(folder), "-o", f"{out}/", "-j", str(jobs)]


def on_terminal(command: list[str]) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, bytes read) of *command* with its stderr on a pseudo-terminal,
    read as a terminal emulator would, as fast as it comes."""
    leader, follower = pty.openpty()
    cpu, wall = _children_cpu(), time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=follower, stdin=subprocess.DEVNULL)
    os.close(follower)
    received = 0
    while True:
        ready, _, _ = select.select([leader], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            received += len(chunk)
        elif child.poll() is not None:
            break
    child.wait()
    os.close(leader)
    return _children_cpu() - cpu, time.perf_counter() - wall, received


def to_file(command: list[str], sink: Path) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, bytes written) of *command* with its stderr sent to *sink*."""
    cpu, wall = _children_cpu(), time.perf_counter()
    with open(sink, "wb") as stream:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=stream, stdin=subprocess.DEVNULL, check=False)
    return _children_cpu() - cpu, time.perf_counter() - wall, sink.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, default=CORPUS, help="a folder of pages (default: the shared corpus)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, alternating (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of each run (default 1)")
    args = parser.parse_args()
    if not args.folder.is_dir():
        print(f"bench_terminal: {args.folder} is not a folder (give --folder)", file=sys.stderr)
        return 2
    scratch = Path(tempfile.mkdtemp(prefix="bench-terminal-"))
    try:
        figures: dict[str, list[tuple[float, float, int]]] = {"terminal": [], "file": []}
        for _ in range(args.rounds):
            for kind in ("terminal", "file"):
                out = scratch / "out"
                shutil.rmtree(out, ignore_errors=True)
                command = _command(args.folder, out, args.jobs)
                figures[kind].append(on_terminal(command) if kind == "terminal" else to_file(command, scratch / "err"))
        lines = (scratch / "err").read_bytes().count(b"\n")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"rewriter rewrite {args.folder} -o OUT/ -j {args.jobs}, {args.rounds} rounds each; stderr: {lines} lines")
    for kind, runs in figures.items():
        cpu = min(run[0] for run in runs)
        wall = min(run[1] for run in runs)
        print(f"  stderr to a {kind:<8}  cpu {cpu:7.2f} s   wall {wall:7.2f} s   {runs[0][2]:>9,} bytes of stderr")
    best = {kind: min(run[0] for run in runs) for kind, runs in figures.items()}
    ratio = best["terminal"] / best["file"] if best["file"] else float("nan")
    print(f"terminal / file CPU time: {ratio:.2f}x (target <= 1.1x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
