"""The benchmarks run end to end on a small input (timings are printed, never asserted)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_resolver_benchmark_runs_and_prints_ratios(tmp_path: Path) -> None:
    pairs = [["http://a/b/c/d;p?q", ref] for ref in ("g", "../g", "/g", "//g", "#s", "?y", "http://x/")] * 20
    pairs.append(["mailto:x", "g"])  # an unresolvable pair must not stop the run
    path = tmp_path / "pairs.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as stream:
        json.dump(pairs, stream)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_resolve.py"), "--pairs", str(path), "--rounds", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "urllib.parse.urljoin" in done.stdout and "ada_url.join_url" in done.stdout
    for rules in ("rfc1808", "rfc2396", "rfc3986", "whatwg"):
        assert f"rewriter {rules} per-base" in done.stdout
