"""Dask benchmark: the HTML corpus through ``rewriter.run.dask`` on one worker against two, in the same run.

Every ``*.html`` page of ../shared/corpus/html (or --corpus; --limit K takes the first K) is
rewritten into a fresh output folder three ways, each round in a rotating order:

- serial, in this process: ``plan`` + ``rewriter.run.batch.run(jobs, Settings())`` (the named
  peer baseline: what ``rewriter rewrite -j 1`` does after start-up);
- ``rewriter.run.dask.rewrite_files`` on a ``distributed.LocalCluster(n_workers=1,
  threads_per_worker=1, processes=True)`` listening on 127.0.0.1;
- the same on ``n_workers=2``.

The clusters are started once, before the clock (their start-up is printed apart), and
each timed run is plan + tasks + gathering the records. Prints the median and best wall
time and MB/s of each, the 2-worker / 1-worker speed-up and each against serial, and checks
that every output tree is byte-identical to an untimed serial run's. For context it prints how 2 processes of pure CPU
work scale on this machine (bench_batch.cpu_scaling): the ceiling for 2 workers.

    python benchmarks/bench_dask.py [--corpus DIR] [--rounds 3] [--limit K]
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench_batch import cpu_scaling  # this folder is on sys.path when run as a script
from bench_cli import set_aside
from distributed import Client, LocalCluster

from rewriter.run.batch import Settings, plan, run, warm_up
from rewriter.run.dask import rewrite_files

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
INCLUDE = "*.html"


def tree(folder: Path) -> dict[str, bytes]:
    found = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            path = Path(parent) / name
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


def serial(corpus: Path, out: Path) -> None:
    out.mkdir(parents=True)
    jobs, _ = plan([str(corpus)], str(out), include=[INCLUDE])
    list(run(jobs, Settings()))


def on(client: Client) -> Callable[[Path, Path], None]:
    def runner(corpus: Path, out: Path) -> None:
        rewrite_files([str(corpus)], out, client=client, include=[INCLUDE])

    return runner


def stage(corpus: Path, count: int, scratch: Path) -> Path:
    """A folder holding only the first *count* pages (hard links, else copies)."""
    jobs, _ = plan([str(corpus)], str(scratch / "unused"), include=[INCLUDE])
    folder = scratch / "input"
    for job in jobs[:count]:
        target = folder / Path(job.source).relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(job.source, target)
        except OSError:
            shutil.copy2(job.source, target)
    return folder


def cluster(workers: int) -> tuple[LocalCluster, Client, float]:
    start = time.perf_counter()
    local = LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
        silence_logs=40,
    )
    client = Client(local)
    client.run(warm_up)  # the engines imported in each worker, as batch.run does before it forks
    return local, client, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, metavar="K", help="only the first K pages")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus", file=sys.stderr)
        return 2
    logging.getLogger("distributed").setLevel(logging.ERROR)  # its INFO lines on closing clusters
    warm_up()
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as name:
        scratch = Path(name)
        corpus = args.corpus if args.limit is None else stage(args.corpus, args.limit, scratch)
        jobs, _ = plan([str(corpus)], str(scratch / "unused"), include=[INCLUDE])
        size = sum(os.stat(job.source).st_size for job in jobs)
        print(f"{len(jobs)} pages ({INCLUDE} of {args.corpus}), {size / 1e6:.1f} MB, {args.rounds} rounds")
        print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {platform.platform()}")
        # The ceiling for 2 workers here: 2 processes of pure CPU work against the same work serially.
        print(f"machine: 2 processes of pure CPU work scale {cpu_scaling(2, args.rounds):.2f}x (ideal 2.00)")
        one, client_one, start_one = cluster(1)
        two, client_two, start_two = cluster(2)
        print(f"cluster start-up (untimed below): 1 worker {start_one:.2f} s, 2 workers {start_two:.2f} s")
        runners = {"serial (batch.run, in process)": serial, "dask, 1 worker": on(client_one)}
        runners["dask, 2 workers"] = on(client_two)
        seconds: dict[str, list[float]] = {label: [] for label in runners}
        reference_out = scratch / "reference"
        serial(corpus, reference_out)  # untimed: the tree every timed run must reproduce
        reference = tree(reference_out)
        set_aside(reference_out, scratch)
        differences: list[str] = []
        try:
            for number in range(args.rounds):
                labels = list(runners)
                labels = labels[number % 3 :] + labels[: number % 3]
                for label in labels:
                    out = Path(tempfile.mkdtemp(dir=scratch)) / "out"
                    gc.collect()
                    start = time.perf_counter()
                    runners[label](corpus, out)
                    seconds[label].append(time.perf_counter() - start)
                    if tree(out) != reference:
                        differences.append(f"{label}, round {number + 1}")
                    set_aside(out.parent, scratch)
        finally:
            for client, local in ((client_one, one), (client_two, two)):
                client.close()
                local.close()
        median = {label: statistics.median(values) for label, values in seconds.items()}
        best = {label: min(values) for label, values in seconds.items()}
        print()
        for label in runners:
            print(
                f"  {label:<32} median {median[label]:6.2f} s {size / median[label] / 1e6:6.1f} MB/s"
                f"   best {best[label]:6.2f} s {size / best[label] / 1e6:6.1f} MB/s"
            )
        base, one_label, two_label = list(runners)
        print(
            f"  2 workers / 1 worker speed-up: {median[one_label] / median[two_label]:.2f}x (medians), "
            f"{best[one_label] / best[two_label]:.2f}x (bests)"
        )
        for label in (one_label, two_label):
            print(f"  {label} / serial: {median[base] / median[label]:.2f}x (medians)")
        if differences:
            print(f"outputs identical: no ({', '.join(differences)})")
            return 1
        print(f"outputs identical: yes ({len(seconds) * args.rounds} trees of {len(reference)} files, against serial)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
