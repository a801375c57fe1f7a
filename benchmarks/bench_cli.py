"""Command-line benchmark: ``rewriter rewrite`` against a script around lxml, in the same run.

Both rewrite every ``*.html`` page of ../shared/corpus/html (or --corpus DIR) into a fresh
output folder, each as a child process timed from launch to exit, interpreter start-up
included:

- rewriter: ``python -m rewriter rewrite CORPUS -o OUT -j 1 -q --include '*.html'
  --no-copy-others --url-root URL`` (each page's retrieval URL is URL joined with its path;
  each file written atomically, as the command always writes);
- lxml: a script that walks CORPUS in the same order and, for each page, does
  ``lxml.html.fromstring``, ``make_links_absolute(URL + path, handle_failures="ignore")`` and
  ``lxml.html.tostring``, and writes the result to OUT (a page lxml refuses is written as it is).

Each round runs both, the order alternating from round to round so that the machine's
changing speed falls on both alike. The figure is CPU time (user and system, from getrusage)
of the child process, what the machine's other load changes least; wall time is printed beside
it. It prints each one's median CPU seconds, wall seconds and MB/s, and the median of the
rounds' own ratios (lxml CPU / rewriter CPU), then the user CPU alone and its ratio: the rest
is system time, where the syncs are. Children read their modules from compiled bytecode,
as an installed package does (a scratch PYTHONPYCACHEPREFIX, filled by an untimed run).
--pure runs rewriter with REWRITER_PURE=1 (its Python twins, not its C extension).
--no-fsync also times ``rewriter rewrite ... --no-fsync`` in each round and prints it as a third,
labelled figure; the ratio against the target stays the default command line's.
--quick rewrites three small pages once: it only checks that the benchmark works.

    python benchmarks/bench_cli.py [--corpus DIR] [--rounds 5] [--pure] [--no-fsync] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
URL_ROOT = "http://example.invalid/"
LABELS = {"rewriter": "rewriter rewrite -j 1", "lxml": "lxml script", "no-fsync": "  ... with --no-fsync"}
LXML_SCRIPT = """
import os, sys
import lxml.html

source, out, root = sys.argv[1:4]
for folder, folders, names in os.walk(source):
    folders.sort()
    for name in sorted(names):
        if not name.endswith(".html"):
            continue
        path = os.path.join(folder, name)
        relative = os.path.relpath(path, source)
        with open(path, "rb") as stream:
            data = stream.read()
        try:
            tree = lxml.html.fromstring(data)
            tree.make_links_absolute(root + relative.replace(os.sep, "/"), handle_failures="ignore")
            data = lxml.html.tostring(tree)
        except Exception:  # lxml refuses some pages: written as they are
            pass
        target = os.path.join(out, relative)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as stream:
            stream.write(data)
"""
QUICK_PAGES = {
    "a.html": b'<base href="/docs/"><a href="guide.html#s">x</a><img src=i.png srcset="a.png 1x, b.png 2x">',
    "sub/b.html": b"<style>p{background:url(bg.png)}</style><p style='background:url(\"c.png\")'>\xc3\xa9",
    "sub/c.html": b"<!--[if IE]><link href=ie.css rel=stylesheet><![endif]--><noscript><img src=n.png></noscript>",
}


def child_seconds() -> tuple[float, float]:
    """(user, system) CPU time of this process's reaped children: from getrusage, in
    microseconds, where there is one (os.times counts clock ticks, 10 ms on Linux)."""
    try:
        import resource
    except ImportError:  # Windows
        times = os.times()
        return times.children_user, times.children_system
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def set_aside(tree: Path, scratch: Path) -> None:
    """Move a spent output *tree* under *scratch*'s ``spent`` folder, removed with *scratch* at the end.

    Deleting thousands of files between timed runs makes the next run's file creations slower: on an
    ext4 file system without a journal (this machine's), the inode allocator passes over each inode
    freed in the last minutes (``recently_deleted``, 6 % of the lxml script's samples in ``perf`` after
    a deletion, and the buffer lookups it makes 15 %), so whichever side ran after a deletion paid for
    it in system time, up to 5x its own. A rename frees nothing."""
    if not tree.exists():
        return
    spent = scratch / "spent"
    spent.mkdir(exist_ok=True)
    tree.rename(spent / f"{len(list(spent.iterdir()))}-{tree.name}")


def child_setting(scratch: Path, *, pure: bool) -> tuple[dict[str, str], Path, Path]:
    """What each timed child runs with: its environment (modules from compiled bytecode in a
    scratch cache, as an installed package has them; REWRITER_PURE=1 with *pure*), the lxml
    script written out, and an empty working folder (no configuration file there)."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "REWRITER_PURE")}
    env["PYTHONPYCACHEPREFIX"] = str(scratch / "bytecode")
    if pure:
        env["REWRITER_PURE"] = "1"
    script = scratch / "lxml_rewrite.py"
    script.write_text(LXML_SCRIPT, encoding="utf-8")
    work = scratch / "work"
    work.mkdir()
    return env, script, work


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, user CPU seconds) of one child run of *command*."""
    user, system = child_seconds()
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    user_after, system_after = child_seconds()
    if done.returncode not in (0, 1):  # rewriter: 1 when some links stay relative or fail
        tail = done.stderr.decode("utf-8", "replace").splitlines()[-5:]
        raise SystemExit(f"{command[:4]} exited {done.returncode}:\n" + "\n".join(tail))
    return user_after - user + system_after - system, wall, user_after - user


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pure", action="store_true", help="rewriter without its C extension (REWRITER_PURE=1)")
    parser.add_argument("--no-fsync", action="store_true", help="also time rewriter with --no-fsync (a third figure)")
    parser.add_argument("--quick", action="store_true", help="three small pages, one round: checks that it runs")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch_name:
        scratch = Path(scratch_name)
        corpus = args.corpus
        if args.quick:
            corpus = scratch / "pages"
            for name, data in QUICK_PAGES.items():
                (corpus / name).parent.mkdir(parents=True, exist_ok=True)
                (corpus / name).write_bytes(data)
        elif not corpus.is_dir():
            print(f"no corpus at {corpus}: pass --corpus, or --quick", file=sys.stderr)
            return 2
        pages = sorted(corpus.rglob("*.html"))
        size = sum(path.stat().st_size for path in pages)
        env, script, work = child_setting(scratch, pure=args.pure)

        def command(name: str, out: Path) -> list[str]:
            if name == "lxml":
                return [sys.executable, str(script), str(corpus), str(out), URL_ROOT]
            rewrite = [sys.executable, "-m", "rewriter", "rewrite", str(corpus), "-o", str(out), "-j", "1", "-q"]
            rewrite += ["--include", "*.html", "--no-copy-others", "--url-root", URL_ROOT]
            return [*rewrite, "--no-fsync"] if name == "no-fsync" else rewrite

        names = ["rewriter", "lxml", *(["no-fsync"] if args.no_fsync else [])]
        for name in names:  # untimed: fills the bytecode cache
            run(command(name, scratch / f"warm-{name}"), env, work)
            set_aside(scratch / f"warm-{name}", scratch)
        cpu: dict[str, list[float]] = {name: [] for name in names}
        wall: dict[str, list[float]] = {name: [] for name in names}
        user: dict[str, list[float]] = {name: [] for name in names}
        for number in range(rounds):
            for name in names if number % 2 == 0 else names[::-1]:
                out = scratch / f"out-{name}-{number}"
                seconds, elapsed, in_user = run(command(name, out), env, work)
                written = sorted(path.relative_to(out) for path in out.rglob("*.html"))
                if written != [path.relative_to(corpus) for path in pages]:
                    raise SystemExit(f"{name} did not write every page ({len(written)} of {len(pages)})")
                cpu[name].append(seconds)
                wall[name].append(elapsed)
                user[name].append(in_user)
                set_aside(out, scratch)
    mode = "REWRITER_PURE=1" if args.pure else "C extension" if _compiled() else "no C extension (not built)"
    print(
        f"{len(pages)} pages, {size / 1e6:.1f} MB, {rounds} rounds, Python {sys.version.split()[0]}, rewriter: {mode}"
    )
    for name in names:
        median_cpu, median_wall = statistics.median(cpu[name]), statistics.median(wall[name])
        label = LABELS[name]
        print(
            f"{label:22} CPU {median_cpu:7.3f} s  wall {median_wall:7.3f} s  "
            f"{size / max(median_cpu, 1e-9) / 1e6:7.1f} MB/s of CPU  (best CPU {min(cpu[name]):.3f} s)"
        )
    ratios = [theirs / max(ours, 1e-9) for theirs, ours in zip(cpu["lxml"], cpu["rewriter"], strict=True)]
    walls = [theirs / max(ours, 1e-9) for theirs, ours in zip(wall["lxml"], wall["rewriter"], strict=True)]
    print(
        f"lxml script CPU / rewriter CPU: median of the rounds' ratios {statistics.median(ratios):.2f}x "
        f"(wall: {statistics.median(walls):.2f}x; target >= 4x)"
    )
    users = [theirs / max(ours, 1e-9) for theirs, ours in zip(user["lxml"], user["rewriter"], strict=True)]
    print(
        f"of which user CPU: rewriter {statistics.median(user['rewriter']):.3f} s, lxml script "
        f"{statistics.median(user['lxml']):.3f} s, {statistics.median(users):.2f}x (the rest is system time: "
        "reading, creating and writing the files, and rewriter's syncs)"
    )
    if args.no_fsync:
        spared = [theirs / max(ours, 1e-9) for theirs, ours in zip(cpu["lxml"], cpu["no-fsync"], strict=True)]
        print(f"lxml script CPU / rewriter --no-fsync CPU (not the target's figure): {statistics.median(spared):.2f}x")
    return 0


def _compiled() -> bool:
    """Whether the rewriter a child imports has its C extension (asked in a child, as it runs)."""
    done = subprocess.run(
        [sys.executable, "-c", "from rewriter.document import speedups; print(speedups.COMPILED)"],
        capture_output=True,
        text=True,
        env={key: value for key, value in os.environ.items() if key != "REWRITER_PURE"},
    )
    return done.stdout.strip() == "True"


if __name__ == "__main__":
    sys.exit(main())
