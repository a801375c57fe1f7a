"""The documents under docs/ name only what exists, and docs/decisions.md is by topic, not a journal.

A path in the docs that no longer exists sends a reader to nothing (the package moved once, and
decisions.md kept eleven old paths); an issue number or a date in decisions.md ties a decision to
when it was made rather than to what it is (dated figures belong in docs/performance.md).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
DECISIONS = ROOT / "docs" / "decisions.md"

# A path into the package or the benchmarks, as the docs write one: not part of a longer path
# or URL, ending on a name character (so a sentence's full stop is not taken).
_PATH = re.compile(r"(?<![\w./-])((?:rewriter|benchmarks)/[\w./-]*\w)")
# "#31", "issue #5", "(issue 21)": a reference to the tracker. A character reference (&#39;) and
# a URL's fragment (#frag) are not.
_ISSUE = re.compile(r"(?<![\w&/])#\d+\b|\bissues? #?\d+\b", re.IGNORECASE)
_DATE = re.compile(r"\b(?:19|20)\d\d-[01]\d-[0-3]\d\b")


def paths_named(text: str) -> list[str]:
    """The package and benchmark paths *text* names, in order.

    >>> paths_named("see `rewriter/url/base.py`, and benchmarks/bench_cli.py.")
    ['rewriter/url/base.py', 'benchmarks/bench_cli.py']
    >>> paths_named("http://host/rewriter/x.html ../shared/benchmarks/y")
    []
    """
    return _PATH.findall(text)


@pytest.mark.parametrize("document", DOCS, ids=lambda path: path.name)
def test_every_path_named_in_the_docs_exists(document: Path) -> None:
    missing = [path for path in paths_named(document.read_text(encoding="utf-8")) if not (ROOT / path).exists()]
    assert not missing, f"{document.name} names paths that do not exist: {missing}"


def test_decisions_has_no_issue_numbers() -> None:
    text = DECISIONS.read_text(encoding="utf-8")
    found = [(text.count("\n", 0, match.start()) + 1, match.group()) for match in _ISSUE.finditer(text)]
    assert not found, f"issue references in docs/decisions.md (line, text): {found}"


def test_decisions_has_no_dates() -> None:
    text = DECISIONS.read_text(encoding="utf-8")
    found = [(text.count("\n", 0, match.start()) + 1, match.group()) for match in _DATE.finditer(text)]
    assert not found, f"dates in docs/decisions.md (line, text; dated figures go to docs/performance.md): {found}"


def test_the_checks_catch_what_they_look_for() -> None:
    """The patterns find the journal's old forms, so a passing run means they are absent."""
    assert paths_named("All of it is `rewriter/files.py` (issue 20)") == ["rewriter/files.py"]
    assert not (ROOT / "rewriter/files.py").exists()
    assert [m.group() for m in _ISSUE.finditer("## Resolver (issue #2) and (issue 21), #20; &#39; #frag")] == [
        "issue #2",
        "issue 21",
        "#20",
    ]
    assert _DATE.findall("on 2026-11-22, with Chromium 156.0.8078.79") == ["2026-11-22"]
