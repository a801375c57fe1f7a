"""Scale: a collection 20 times the HTML corpus and a 1 GB mbox, ``-j 2`` against Dask with 2 workers.

The collection is built in a scratch folder: ``--copies`` copies of every page of
../shared/corpus/html as hard links (no disk space; 20 copies of 321 pages, 6,420 files and
1.1 GB, by default), and an mbox of ``--mbox-mb`` MB (1,000 by default) made of the mail
corpus's messages over and over, each under a From_ line. Each round runs, in alternating
order, on the same inputs:

- ``rewriter rewrite SCRATCH -o OUT --report links.jsonl -j 2`` (the worker processes);
- the same with ``--dask local -j 2`` (a LocalCluster of 2 worker processes on 127.0.0.1).

For each run it prints the wall time, the CPU time of the command and all its processes, MB/s,
and the peak RSS of the calling process alone (its ``VmHWM``, read from /proc while it runs: the
workers' memory is theirs); then the Dask / processes ratio of the medians (the issue's target:
within 10 %) and each run's peak RSS against the target (under 200 MB, whatever the number of
files, links and messages). Every run's output tree and report must be byte-identical to the
first one's (checked, not timed). Linux only (/proc).

    python benchmarks/bench_scale.py                         # 20 x corpus, 1 GB mbox, 3 rounds
    python benchmarks/bench_scale.py --copies 2 --mbox-mb 5 --rounds 1 --quick   # a check that it works
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SEPARATOR = b"From benchmark@example.org Sat Jan  1 00:00:00 2000\n"
TARGET_RSS_MB = 200
TARGET_RATIO = 1.10


def build(scratch: Path, corpus: Path, mail: Path, copies: int, mbox_mb: float) -> tuple[int, int]:
    """The collection in *scratch*: (files, bytes)."""
    pages = sorted(path for path in corpus.iterdir() if path.suffix in (".html", ".htm"))
    files = size = 0
    for copy in range(copies):
        folder = scratch / "site" / f"copy{copy:02}"
        folder.mkdir(parents=True)
        for path in pages:
            try:
                os.link(path, folder / path.name)
            except OSError:  # another file system: a copy
                shutil.copyfile(path, folder / path.name)
            files += 1
            size += path.stat().st_size
    messages = [p.read_bytes() for p in sorted(mail.iterdir()) if p.suffix in (".eml", ".mht", ".mhtml")]
    messages = [m if m.endswith(b"\n") else m + b"\n" for m in messages]
    goal = int(mbox_mb * 1e6)
    written = 0
    with open(scratch / "site" / "mail.mbox", "wb") as stream:
        while written < goal:
            for message in messages:
                stream.write(SEPARATOR + message + b"\n")
                written += len(SEPARATOR) + len(message) + 1
                if written >= goal:
                    break
    return files + 1, size + written


def digest(folder: Path) -> str:
    """One hash of every file under *folder* and its path."""
    total = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            total.update(path.relative_to(folder).as_posix().encode() + b"\0")
            with open(path, "rb") as stream:
                while chunk := stream.read(1 << 20):
                    total.update(chunk)
    return total.hexdigest()


def peak_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def run(scratch: Path, name: str, extra: list[str]) -> tuple[float, float, float, str, str]:
    """One run: (wall s, CPU s of the command and its processes, the caller's peak RSS in MB, tree
    digest, report digest)."""
    out = scratch / f"out-{name}"
    report = scratch / f"links-{name}.jsonl"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "rewriter", "rewrite", str(scratch / "site"), "-o", str(out)]
    command += ["--report", str(report), "-q", *extra]
    before = os.times()
    start = time.perf_counter()
    process = subprocess.Popen(command, stderr=subprocess.PIPE)
    peak = 0
    while process.poll() is None:
        peak = max(peak, peak_kb(process.pid) or 0)  # VmHWM only grows: the last reading is the peak
        time.sleep(0.05)
    wall = time.perf_counter() - start
    after = os.times()
    stderr = process.stderr.read() if process.stderr else b""
    if process.returncode not in (0, 1):
        raise SystemExit(f"{name}: exit {process.returncode}: {stderr.decode(errors='replace')}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    with open(report, "rb") as stream:
        report_digest = hashlib.file_digest(stream, "sha256").hexdigest()
    tree_digest = digest(out)
    shutil.rmtree(out)
    report.unlink()
    return wall, cpu, peak / 1024, tree_digest, report_digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=SHARED / "corpus" / "html")
    parser.add_argument("--mail", type=Path, default=SHARED / "corpus" / "mail")
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--mbox-mb", type=float, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="only check that it works: no targets said")
    parser.add_argument("--scratch", type=Path, default=None, help="where to build (default: a temporary folder)")
    options = parser.parse_args()
    if not Path("/proc/self/status").exists():
        raise SystemExit("bench_scale reads the caller's peak RSS from /proc: Linux only")
    executors = {"processes (-j 2)": ["-j", "2"]}
    if importlib.util.find_spec("distributed") is not None:
        executors["Dask (--dask local -j 2)"] = ["--dask", "local", "-j", "2"]
    else:
        print("Dask is not installed (pip install 'rewriter[dask]'): the processes alone are measured")
    scratch = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=options.scratch))
    try:
        files, size = build(scratch, options.corpus, options.mail, options.copies, options.mbox_mb)
        print(f"collection: {files:,} files, {size / 1e6:,.0f} MB ({options.copies} x the HTML corpus as hard links,")
        print(f"  and an mbox of {options.mbox_mb:,.0f} MB); {os.cpu_count()} cores; --report on every run")
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in executors}
        reference: tuple[str, str] | None = None
        for number in range(options.rounds):
            names = list(executors) if number % 2 == 0 else list(reversed(executors))
            for name in names:
                wall, cpu, rss, tree_digest, report_digest = run(scratch, str(len(results[name])), executors[name])
                if reference is None:
                    reference = (tree_digest, report_digest)
                elif (tree_digest, report_digest) != reference:
                    raise SystemExit(f"{name}: its outputs or report differ from the first run's")
                results[name].append((wall, cpu, rss))
                print(
                    f"round {number + 1}  {name:28} wall {wall:7.2f} s  cpu {cpu:7.2f} s  "
                    f"{size / 1e6 / wall:7.1f} MB/s  caller peak RSS {rss:6.1f} MB"
                )
        print("\nmedians (outputs and reports byte-identical across every run):")
        medians = {}
        for name, rows in results.items():
            wall = statistics.median(row[0] for row in rows)
            cpu = statistics.median(row[1] for row in rows)
            rss = max(row[2] for row in rows)
            medians[name] = wall
            verdict = (
                ""
                if options.quick
                else f"  (target < {TARGET_RSS_MB} MB: {'met' if rss < TARGET_RSS_MB else 'MISSED'})"
            )
            print(f"  {name:28} wall {wall:7.2f} s  cpu {cpu:7.2f} s  caller peak RSS {rss:6.1f} MB{verdict}")
        if len(medians) == 2:
            processes, dask = medians.values()
            ratio = dask / processes
            verdict = (
                ""
                if options.quick
                else f" (target <= {TARGET_RATIO:.2f}: {'met' if ratio <= TARGET_RATIO else 'MISSED'})"
            )
            print(f"Dask / processes wall time: {ratio:.2f}x{verdict}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
