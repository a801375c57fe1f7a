"""Resolver benchmark: every rule set against urllib.parse.urljoin and ada_url.join_url.

Runs over the 89,678 real (base, reference) pairs of ../shared/bench/resolve-pairs.json.gz
(or a file named with --pairs), all resolvers on the same pairs in the same run, in
interleaved rounds so that machine noise hits every one alike. Prints the median ns per
call and the ratio to urljoin.

Two ways of calling rewriter are timed:
- one-shot: ``rewriter.resolve(base, ref, rules=...)`` per pair, as a caller with no
  state would;
- per-base: ``Resolver(base).resolve`` with the base parsed once per distinct base, as
  the document engines call it (the page's base is fixed, its links are many).

    python benchmarks/bench_resolve.py [--pairs FILE] [--rounds 7] [--limit N]
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urljoin

import ada_url

from rewriter import RULES, Resolver, UnresolvableReference, resolve

DEFAULT_PAIRS = Path(__file__).resolve().parents[1].parent / "shared" / "bench" / "resolve-pairs.json.gz"

Run = Callable[[list[tuple[str, str]]], None]


def one_shot(rules: str) -> Run:
    def run(pairs: list[tuple[str, str]]) -> None:
        for base, ref in pairs:
            try:  # noqa: SIM105 -- contextlib.suppress would add its cost to every timed call
                resolve(base, ref, rules=rules)  # type: ignore[arg-type]
            except UnresolvableReference:
                pass

    return run


def per_base(rules: str) -> Run:
    def run(pairs: list[tuple[str, str]]) -> None:
        resolver = None
        current = None
        for base, ref in pairs:
            if base is not current:
                resolver = Resolver(base, rules=rules).resolve  # type: ignore[arg-type]
                current = base
            try:  # noqa: SIM105 -- contextlib.suppress would add its cost to every timed call
                resolver(ref)  # type: ignore[misc]
            except UnresolvableReference:
                pass

    return run


def peer(join: Callable[[str, str], str]) -> Run:
    def run(pairs: list[tuple[str, str]]) -> None:
        for base, ref in pairs:
            try:  # noqa: SIM105 -- contextlib.suppress would add its cost to every timed call
                join(base, ref)
            except ValueError:
                pass

    return run


def empty_loop(pairs: list[tuple[str, str]]) -> None:
    for _base, _ref in pairs:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=Path, default=DEFAULT_PAIRS)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--limit", type=int, default=0, help="use only the first N pairs")
    args = parser.parse_args(argv)
    if not args.pairs.exists():
        print(f"no pairs file at {args.pairs}: pass --pairs", file=sys.stderr)
        return 2
    with gzip.open(args.pairs, "rt", encoding="utf-8") as stream:
        raw = json.load(stream)
    if args.limit:
        raw = raw[: args.limit]
    # Same base object for consecutive pairs of one page, as a document engine holds it.
    interned: dict[str, str] = {}
    pairs = [(interned.setdefault(base, base), ref) for base, ref in raw]
    bases = len(interned)

    contenders: dict[str, Run] = {"(empty loop)": empty_loop}
    contenders["urllib.parse.urljoin"] = peer(urljoin)
    contenders["ada_url.join_url"] = peer(ada_url.join_url)
    for rules in RULES:
        contenders[f"rewriter {rules} one-shot"] = one_shot(rules)
        contenders[f"rewriter {rules} per-base"] = per_base(rules)

    timings: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, run in contenders.items():
            gc.collect()
            gc.disable()
            start = time.perf_counter_ns()
            run(pairs)
            elapsed = time.perf_counter_ns() - start
            gc.enable()
            timings[name].append(elapsed / len(pairs))

    median = {name: statistics.median(values) for name, values in timings.items()}
    urljoin_ns = median["urllib.parse.urljoin"]
    ada_ns = median["ada_url.join_url"]
    python = sys.version.split()[0]
    print(f"{len(pairs):,} pairs, {bases} distinct bases, {args.rounds} rounds, Python {python}")
    print(f"{'resolver':34} {'ns/call':>9} {'min':>9} {'x urljoin':>10} {'x ada':>7}")
    for name, value in median.items():
        print(f"{name:34} {value:9,.0f} {min(timings[name]):9,.0f} {value / urljoin_ns:10.3f} {value / ada_ns:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
