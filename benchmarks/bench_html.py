"""HTML engine benchmark: rewriter against lxml.html on the same pages, in the same run.

For every page of ../shared/corpus/html (or the folder given with --corpus), each round
times, on one process:

- rewriter: ``rewrite_html(bytes, url=...)`` (decode, parse, find, resolve, splice, encode);
- lxml.html: ``fromstring(bytes)``, ``make_links_absolute(url, handle_failures="ignore")``,
  ``tostring(tree)``, the pipeline the research notes measured as lxml's.

Each round runs both over every page, one after the other, and which goes first alternates
from round to round, so that the machine's changing speed falls on both alike; each runs
alone over the whole corpus, as in real use. Each run is timed in CPU time (this process's
user and system time: what other load on a shared machine changes least) and in wall time.
Prints MB/s of CPU time (the median round, and the best), the ratio of the medians, and the
median of the rounds' own ratios, for CPU time and then for wall time; and whether
rewriter ran with its C extension (REWRITER_PURE=1 runs its Python twins).
--quick rewrites a few small pages once: it only checks that the benchmark works.

    python benchmarks/bench_html.py [--corpus DIR] [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import lxml.html

from rewriter.document import speedups
from rewriter.html import rewrite_html

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
PLACEHOLDER = "http://example.invalid/page.html"
QUICK_PAGES = [
    b'<base href="/docs/"><a href="guide.html#s">x</a><img src=i.png srcset="a.png 1x, b.png 2x">',
    b"<style>p{background:url(bg.png)}</style><p style='background:url(\"c.png\")'>\xc3\xa9",
    b"<!--[if IE]><link href=ie.css rel=stylesheet><![endif]--><noscript><img src=n.png></noscript>",
]


def load(corpus: Path) -> list[tuple[bytes, str]]:
    manifest = corpus / "manifest.json"
    if manifest.exists():
        entries = json.loads(manifest.read_text(encoding="utf-8"))
        return [((corpus / e["file"]).read_bytes(), e.get("url") or PLACEHOLDER) for e in entries]
    return [(path.read_bytes(), PLACEHOLDER) for path in sorted(corpus.glob("*.htm*"))]


def run_rewriter(pages: list[tuple[bytes, str]]) -> None:
    for data, url in pages:
        rewrite_html(data, url=url)


def run_lxml(pages: list[tuple[bytes, str]]) -> None:
    for data, url in pages:
        try:
            tree = lxml.html.fromstring(data)
            tree.make_links_absolute(url, handle_failures="ignore")
            lxml.html.tostring(tree)
        except Exception:  # lxml refuses some pages; its time still counts
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a few small pages, one round: checks that it runs")
    args = parser.parse_args(argv)
    if args.quick:
        pages, args.rounds = [(page, PLACEHOLDER) for page in QUICK_PAGES], 1
    elif not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus, or --quick", file=sys.stderr)
        return 2
    else:
        pages = load(args.corpus)
    size = sum(len(data) for data, _ in pages)
    contenders: dict[str, Callable[[list[tuple[bytes, str]]], None]] = {
        "rewriter.html.rewrite_html": run_rewriter,
        "lxml.html make_links_absolute": run_lxml,
    }
    for run in contenders.values():
        run(pages[:3])  # untimed: the lazy imports (bs4's, on the first sniff), not the work
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    wall: dict[str, list[float]] = {name: [] for name in contenders}
    for number in range(args.rounds):
        for name, run in list(contenders.items())[:: 1 if number % 2 == 0 else -1]:
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            run(pages)
            cpu[name].append(max(time.process_time() - start_cpu, 1e-9))
            wall[name].append(max(time.perf_counter() - start, 1e-9))
    mode = "with its C extension" if speedups.COMPILED else "on its Python twins (no C extension)"
    print(f"{len(pages)} pages, {size / 1e6:.1f} MB, {args.rounds} rounds, Python {sys.version.split()[0]}")
    print(f"rewriter {mode}")
    median = {name: statistics.median(values) for name, values in cpu.items()}
    for name, value in median.items():
        print(f"{name:32} {size / value / 1e6:8.1f} MB/s of CPU time  (best {size / min(cpu[name]) / 1e6:.1f})")
    for label, seconds in (("CPU time", cpu), ("wall time", wall)):
        theirs, ours = seconds["lxml.html make_links_absolute"], seconds["rewriter.html.rewrite_html"]
        ratio = statistics.median(theirs) / statistics.median(ours)
        rounds = statistics.median(their / our for their, our in zip(theirs, ours, strict=True))
        print(
            f"rewriter throughput / lxml throughput, {label}: {ratio:.2f}x "
            f"(median of the rounds' own ratios: {rounds:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
