"""HTML engine benchmark: rewriter against lxml.html on the same pages, in the same run.

For every page of ../shared/corpus/html (or the folder given with --corpus), each round
times, on one process:

- rewriter: ``rewrite_html(bytes, url=...)`` (decode, parse, find, resolve, splice, encode);
- lxml.html: ``fromstring(bytes)``, ``make_links_absolute(url, handle_failures="ignore")``,
  ``tostring(tree)``, the pipeline the research notes measured as lxml's.

Each round runs both over every page, one after the other, and which goes first alternates
from round to round, so that the machine's changing speed falls on both alike; each runs
alone over the whole corpus, as in real use. Prints MB/s (the median round, and the best),
the ratio of the medians, and the median of the rounds' own ratios.

    python benchmarks/bench_html.py [--corpus DIR] [--rounds 5]
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

from rewriter.html import rewrite_html

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
PLACEHOLDER = "http://example.invalid/page.html"


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
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus", file=sys.stderr)
        return 2
    pages = load(args.corpus)
    size = sum(len(data) for data, _ in pages)
    contenders: dict[str, Callable[[list[tuple[bytes, str]]], None]] = {
        "rewriter.html.rewrite_html": run_rewriter,
        "lxml.html make_links_absolute": run_lxml,
    }
    seconds: dict[str, list[float]] = {name: [] for name in contenders}
    for number in range(args.rounds):
        for name, run in list(contenders.items())[:: 1 if number % 2 == 0 else -1]:
            gc.collect()
            start = time.perf_counter()
            run(pages)
            seconds[name].append(time.perf_counter() - start)
    print(f"{len(pages)} pages, {size / 1e6:.1f} MB, {args.rounds} rounds, Python {sys.version.split()[0]}")
    median = {name: statistics.median(values) for name, values in seconds.items()}
    for name, value in median.items():
        print(f"{name:32} {size / value / 1e6:8.1f} MB/s   (best {size / min(seconds[name]) / 1e6:.1f})")
    ratio = median["lxml.html make_links_absolute"] / median["rewriter.html.rewrite_html"]
    theirs, ours = seconds["lxml.html make_links_absolute"], seconds["rewriter.html.rewrite_html"]
    rounds = statistics.median(their / our for their, our in zip(theirs, ours, strict=True))
    print(f"rewriter throughput / lxml throughput: {ratio:.2f}x (median of the rounds' own ratios: {rounds:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
