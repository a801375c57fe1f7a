"""Per-file cost: ``rewriter rewrite`` against the lxml script on mirrors of small pages, in one run.

Real mirrors are mostly small pages (documentation sites, blogs, forums: 2-30 KB), where what a
file costs besides its links (starting, opening, reading, writing, syncing, bookkeeping) decides
the figure. Three collections, each rewritten by both in the same round, the order alternating
from round to round:

- ``small``: 5,000 generated pages of about 1.6 KB, 4 relative links each, 50 folders;
- ``medium``: 2,000 generated pages of about 15.6 KB, 62 relative links each, 20 folders;
- ``corpus``: the pages of ../shared/corpus/html (or --corpus DIR), skipped where absent.

Each side runs as a child process, interpreter start-up included, timed by its CPU time (user
and system, from getrusage): ``rewriter rewrite DIR -o OUT -j 1 -q --include '*.html'
--no-copy-others --url-root URL`` (every output written whole and renamed, synced as the command
always syncs) and bench_cli.py's lxml script (``fromstring``, ``make_links_absolute``,
``tostring``, one ``open``/``write`` a page). It prints the median CPU seconds of each, the median
of the rounds' ratios (lxml CPU / rewriter CPU; the target is 3x or more), and the CPU a file.

The floor: ``floor`` is a script that does only what the kernel must for each page with the
command line's durability (read it; write it whole under a temporary name, O_EXCL; rename it;
one syncfs before and one after the renames of each 32 pages), with no parsing: lxml / floor is
the most any tool that keeps every output old-or-new after a crash could reach on this machine.

The command line's own cost a file: ``empty`` is 5,000 empty pages (the engine has nothing to do),
rewritten by the command line, started alone (``python -c 'import rewriter.cli'``) and copied by
the floor script, in the same round: (run - start-up) / files is what a file costs the command
line, the kernel's writes included (the target is under 100 us); (run - floor) / files is what it
costs beyond what the kernel must do for it (each one's start-up taken off).

--baseline TREE (a source tree of rewriter, its C extension built in place) runs that tree's
command line as a fourth side in the same rounds ("before"), and prints lxml / it beside.

    python benchmarks/bench_small.py [--rounds 3] [--only small,medium,corpus,empty] [--pure] [--quick]
                                     [--baseline TREE]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from bench_cli import DEFAULT_CORPUS, URL_ROOT, _compiled, child_setting, run

SIZES = {"small": (5000, 50, 4, 1600), "medium": (2000, 20, 62, 15600)}
QUICK_SIZES = {"small": (40, 4, 4, 1600), "medium": (10, 2, 62, 15600)}
FLOOR_SCRIPT = """
import ctypes, os, sys

source, out = sys.argv[1:3]
syncfs = ctypes.CDLL(None, use_errno=True).syncfs
pending = []


def commit():
    fd = os.open(out, os.O_RDONLY)
    syncfs(fd)
    for folder, temporary, name in pending:
        os.replace(os.path.join(folder, temporary), os.path.join(folder, name))
    syncfs(fd)
    os.close(fd)
    pending.clear()


for folder, folders, names in os.walk(source):
    folders.sort()
    for name in sorted(names):
        path = os.path.join(folder, name)
        handle = os.open(path, os.O_RDONLY)
        data = os.read(handle, os.fstat(handle).st_size)
        os.close(handle)
        target = os.path.join(out, os.path.relpath(folder, source))
        os.makedirs(target, exist_ok=True)
        temporary = "." + name + ".tmp"
        handle = os.open(os.path.join(target, temporary), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(handle, data)
        os.close(handle)
        pending.append((target, temporary, name))
        if len(pending) == 32:
            commit()
commit()
"""
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "a",
    "lazy",
    "dog",
    "while",
    "packets",
    "of",
    "data",
    "cross",
    "the",
    "wide",
    "network",
]


def page(number: int, links: int, size: int) -> bytes:
    """A page of about *size* bytes with *links* relative links (anchors, an image, a stylesheet)."""
    head = (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Page {number}</title>\n'
        f'<link rel="stylesheet" href="../style/site.css"></head>\n<body>\n<h1>Page {number}</h1>\n'
    )
    parts = [head]
    made = 1
    paragraph = 0
    while made < links:
        target = (number * 7 + made) % 997
        if made % 10 == 3:
            parts.append(f'<p><img src="img/pic-{target}.png" alt="picture {target}"></p>\n')
        else:
            parts.append(f'<li><a href="page-{target}.html#s{made}">Link to page {target}</a></li>\n')
        made += 1
    body_so_far = sum(map(len, parts)) + 16
    while body_so_far < size:
        sentence = " ".join(WORDS[(paragraph + i) % len(WORDS)] for i in range(12))
        parts.append(f"<p>{sentence.capitalize()}.</p>\n")
        body_so_far += len(parts[-1])
        paragraph += 1
    parts.append("</body></html>\n")
    return "".join(parts).encode()


def make_mirror(root: Path, count: int, folders: int, links: int, size: int) -> None:
    for number in range(count):
        folder = root / f"section-{number % folders:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"page-{number}.html").write_bytes(page(number, links, size) if size else b"")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", default="small,medium,corpus,empty")
    parser.add_argument("--pure", action="store_true", help="rewriter without its C extension (REWRITER_PURE=1)")
    parser.add_argument("--quick", action="store_true", help="tiny mirrors, one round: checks that it runs")
    parser.add_argument("--baseline", type=Path, default=None, metavar="TREE", help="also time TREE's rewriter")
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    wanted = args.only.split(",")
    sizes = QUICK_SIZES if args.quick else SIZES
    mode = "REWRITER_PURE=1" if args.pure else "C extension" if _compiled() else "no C extension (not built)"
    print(f"{rounds} rounds, Python {sys.version.split()[0]}, rewriter: {mode}, -j 1, CPU = user + system")
    with tempfile.TemporaryDirectory(prefix="bench-small-") as scratch_name:
        scratch = Path(scratch_name)
        env, script, work = child_setting(scratch, pure=args.pure)
        floor_script = scratch / "floor.py"
        floor_script.write_text(FLOOR_SCRIPT, encoding="utf-8")

        def rewrite(source: Path, out: Path) -> list[str]:
            command = [sys.executable, "-m", "rewriter", "rewrite", str(source), "-o", str(out), "-j", "1", "-q"]
            return [*command, "--include", "*.html", "--no-copy-others", "--url-root", URL_ROOT]

        def lxml(source: Path, out: Path) -> list[str]:
            return [sys.executable, str(script), str(source), str(out), URL_ROOT]

        def floor(source: Path, out: Path) -> list[str]:
            return [sys.executable, str(floor_script), str(source), str(out)]

        def before(source: Path, out: Path) -> list[str]:  # the baseline tree's, first on the path
            assert args.baseline is not None
            tree = str(args.baseline.resolve())
            entry = (
                f"import sys; sys.path.insert(0, {tree!r}); from rewriter.cli.entry import entry_point; entry_point()"
            )
            return [sys.executable, "-c", entry, *rewrite(source, out)[3:]]

        sides = {"rewriter": rewrite, "lxml": lxml, "floor": floor}
        if args.baseline is not None:
            sides["before"] = before

        collections: list[tuple[str, Path]] = []
        for name in ("small", "medium"):
            if name in wanted:
                make_mirror(scratch / name, *sizes[name])
                collections.append((name, scratch / name))
        if "corpus" in wanted:
            if args.corpus.is_dir() and not args.quick:
                collections.append(("corpus", args.corpus))
            else:
                print(f"corpus: skipped ({'--quick' if args.quick else f'no corpus at {args.corpus}'})")
        for name, source in collections:
            compare(name, source, sides, rounds, env, work, scratch)
        if "empty" in wanted:
            count, folders = (40, 4) if args.quick else (5000, 50)
            make_mirror(scratch / "empty", count, folders, 0, 0)
            own_cost(scratch / "empty", count, rewrite, floor, rounds, env, work, scratch)
    return 0


def compare(name: str, source: Path, commands: dict, rounds: int, env: dict, work: Path, scratch: Path) -> None:
    pages = sorted(source.rglob("*.html"))
    size = sum(path.stat().st_size for path in pages)
    for side, command in commands.items():  # untimed: fills the bytecode cache and the page cache
        out = scratch / f"warm-{side}"
        run(command(source, out), env, work)
        shutil.rmtree(out, ignore_errors=True)
    cpu: dict[str, list[float]] = {side: [] for side in commands}
    wall: dict[str, list[float]] = {side: [] for side in commands}
    user: dict[str, list[float]] = {side: [] for side in commands}
    sides = list(commands)
    for number in range(rounds):
        for side in sides if number % 2 == 0 else sides[::-1]:
            out = scratch / f"out-{side}-{number}"
            seconds, elapsed, in_user = run(commands[side](source, out), env, work)
            written = sum(1 for _ in out.rglob("*.html"))
            if written != len(pages):
                raise SystemExit(f"{name}: {side} wrote {written} of {len(pages)} pages")
            cpu[side].append(seconds)
            wall[side].append(elapsed)
            user[side].append(in_user)
            shutil.rmtree(out)
    ratios = [theirs / max(ours, 1e-9) for theirs, ours in zip(cpu["lxml"], cpu["rewriter"], strict=True)]
    print(f"{name}: {len(pages)} pages, {size / len(pages) / 1e3:.1f} KB a page")
    for side in sides:
        median = statistics.median(cpu[side])
        in_user = statistics.median(user[side])
        print(
            f"  {side:9} CPU {median:7.3f} s (user {in_user:6.3f}, system {median - in_user:6.3f})  "
            f"wall {statistics.median(wall[side]):7.3f} s  {median / len(pages) * 1e6:6.0f} us a page  "
            "(rounds: " + ", ".join(f"{seconds:.2f}" for seconds in cpu[side]) + ")"
        )
    print(
        f"  lxml script CPU / rewriter CPU: {statistics.median(ratios):.2f}x "
        f"(rounds: {', '.join(f'{ratio:.2f}' for ratio in ratios)}; target >= 3x)"
    )
    if "before" in cpu:
        befores = [theirs / max(ours, 1e-9) for theirs, ours in zip(cpu["lxml"], cpu["before"], strict=True)]
        print(f"  lxml script CPU / baseline tree's CPU: {statistics.median(befores):.2f}x (before)")
    if "floor" in cpu:
        floors = [theirs / max(ours, 1e-9) for theirs, ours in zip(cpu["lxml"], cpu["floor"], strict=True)]
        print(
            f"  lxml script CPU / floor CPU: {statistics.median(floors):.2f}x "
            "(the most any tool writing each page atomically and durably could reach here)"
        )


def own_cost(source: Path, count: int, rewrite, floor, rounds: int, env: dict, work: Path, scratch: Path) -> None:
    start_up = [sys.executable, "-c", "import rewriter.cli"]
    for command in (rewrite, floor):
        run(command(source, scratch / "warm-empty"), env, work)
        shutil.rmtree(scratch / "warm-empty", ignore_errors=True)
    costs: list[float] = []
    beyond: list[float] = []
    for number in range(rounds):
        out, copied = scratch / f"out-empty-{number}", scratch / f"floor-empty-{number}"
        runs = {
            "whole": rewrite(source, out),
            "alone": start_up,
            "floor": floor(source, copied),
            "bare": [sys.executable, "-c", "pass"],
        }
        order = list(runs) if number % 2 == 0 else list(runs)[::-1]
        seconds = {name: run(runs[name], env, work)[0] for name in order}
        costs.append((seconds["whole"] - seconds["alone"]) / count)
        beyond.append((seconds["whole"] - seconds["alone"] - seconds["floor"] + seconds["bare"]) / count)
        shutil.rmtree(out)
        shutil.rmtree(copied)
    print(
        f"empty: {count} empty pages: the command line's own cost a file {statistics.median(costs) * 1e6:.0f} us CPU "
        f"(rounds: {', '.join(f'{cost * 1e6:.0f}' for cost in costs)}; start-up taken off; target < 100 us); "
        f"beyond the floor's: {statistics.median(beyond) * 1e6:.0f} us"
    )


if __name__ == "__main__":
    sys.exit(main())
