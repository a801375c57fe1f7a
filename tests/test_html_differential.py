"""rewriter's scanner against an independent HTML5 tokenizer, on every corpus page.

``rewriter.html.engine.start_tags`` (turbohtml's tree construction plus rewriter's own reading of
each start tag's attribute spans) is compared with the start tags html5lib's tokenizer emits
while html5lib's own tree builder drives it, so that both switch to RCDATA/RAWTEXT/script
data at the same places. Both read the text rewriter decodes (same sniffing), with scripting
off. The machinery and its allow-list are in ``corpus_figures.py`` (run it for the figures).

Every tag rewriter lists must be one html5lib emits, in order (foster parenting excepted),
with exactly the same attribute values; every html5lib tag rewriter does not list must be one
the tree builder drops or merges (``DROPPED_BY_TREE_BUILDER``, with the spec's reason).
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import shared_cases, shared_path
from corpus_figures import DROPPED_BY_TREE_BUILDER, compare_start_tags, html5lib_start_tags

from rewriter.html.engine import start_tags

# Pages on which rewriter's start_tags disagrees with html5lib for a reason that is a
# rewriter (turbohtml) bug, not the tokenizer spec. Strict: the test fails once it is fixed.
_CLONES = (
    "rewriter bug: turbohtml gives the elements that 'reconstruct the active formatting elements' "
    "(HTML §13.2.4.3) and the adoption agency algorithm (§13.2.6.4.7) clone from a formatting start tag "
    "the position of the original tag, so start_tags lists that one source tag once per clone "
    "(here <{tag}> at {where}: listed {count} times); find_links and rewrite_html likewise visit its "
    "attributes once per clone"
)
# The two pages this once listed (traf--diaadia.com.pa-ulpiano.html: <a> at line 1287,
# column 203 listed 24 times; traf--bummfilm.de.uber.html: <b> twice) now pass: the
# engine visits each source position once.
KNOWN_DISAGREEMENTS: dict[str, str] = {}


class KnownDisagreement(AssertionError):
    """The page differs only as a KNOWN_DISAGREEMENTS entry says (any other difference still fails)."""


def _pages() -> list[Any]:
    cases = shared_cases("corpus", "html", "manifest.json")
    params = []
    for case in cases:
        if not isinstance(case, dict):
            params.append(case)  # the "shared-absent" case: the test skips (or fails in CI)
            continue
        reason = KNOWN_DISAGREEMENTS.get(case["file"])
        marks = [pytest.mark.xfail(strict=True, raises=KnownDisagreement, reason=reason)] if reason else []
        params.append(pytest.param(case, id=case["file"], marks=marks))
    return params


@pytest.mark.parametrize("record", _pages())
def test_start_tags_agree_with_html5lib(record: dict[str, Any] | None) -> None:
    corpus = shared_path("corpus", "html", "manifest.json").parent
    assert record is not None
    comparison = compare_start_tags(record["file"], (corpus / record["file"]).read_bytes())
    problems = comparison.problems()
    known = record["file"] in KNOWN_DISAGREEMENTS
    if known and problems and not comparison.missing and comparison.extra == comparison.extra_clones:
        raise KnownDisagreement("\n".join(problems[:5]))
    assert not problems, "\n".join(problems[:20]) + (f"\n... {len(problems)} in all" if len(problems) > 20 else "")
    assert not comparison.missing and not comparison.extra
    assert comparison.aligned + len(comparison.reordered) == comparison.rewriter


def test_known_disagreement_pages_are_in_the_corpus() -> None:
    """A renamed or removed page must not leave a stale entry behind."""
    records = shared_cases("corpus", "html", "manifest.json")
    if not isinstance(records[0], dict):
        shared_path("corpus", "html", "manifest.json")
    files = {record["file"] for record in records}
    assert set(KNOWN_DISAGREEMENTS) <= files


# --- the recorder and the comparison themselves, on small documents ---------------------


def test_html5lib_tokenizer_is_driven_by_its_tree_builder() -> None:
    """RAWTEXT/RCDATA/script data hold no tags; <noscript> (scripting off) and foreign content do."""
    document = (
        "<title><b></title><style><i></style><script><u></script><textarea><s></textarea>"
        "<noscript><img src=n></noscript><svg><image xlink:href='x&amp;y'/></svg>"
    )
    tags = html5lib_start_tags(document)
    assert tags == [
        ("title", {}),
        ("style", {}),
        ("script", {}),
        ("textarea", {}),
        ("noscript", {}),
        ("img", {"src": "n"}),
        ("svg", {}),
        ("image", {"xlink:href": "x&y"}),
    ]
    assert start_tags(document) == tags


def test_recorder_restores_the_tokenizer() -> None:
    from html5lib import _tokenizer

    before = _tokenizer.HTMLTokenizer.__iter__
    html5lib_start_tags("<p>x")
    assert _tokenizer.HTMLTokenizer.__iter__ is before


@pytest.mark.parametrize(
    ("document", "dropped"),
    [
        (b"<p>x<body class=b>", ["body"]),
        (b"<html><head></head><head><html lang=x>", ["head", "html"]),
        (b"<p><tr><td>1</td><frame src=f>", ["tr", "td", "frame"]),
        (b"<form action=a><form action=b></form>", ["form"]),
    ],
)
def test_dropped_tags_are_allowed(document: bytes, dropped: list[str]) -> None:
    comparison = compare_start_tags("example", document)
    assert [name for name, _ in comparison.dropped] == dropped
    assert all(name in DROPPED_BY_TREE_BUILDER for name in dropped)
    assert comparison.problems() == []


def test_foster_parented_tags_are_reordered_not_missing() -> None:
    comparison = compare_start_tags("example", b"<table><a href=x>1</a><tr><td>2</table>")
    assert [name for name, _ in comparison.reordered] == ["a"]
    assert comparison.problems() == []


def test_a_clone_is_not_an_extra_tag() -> None:
    comparison = compare_start_tags("example", b'<p><a href="x.html">1<p>2')
    assert comparison.extra == comparison.extra_clones == []
    assert comparison.problems() == []


def test_cloned_formatting_elements_are_listed_once() -> None:
    # Regression: clones of a reopened <a> share its position (was listed, and rewritten, twice).
    document = b'<p><a href="x.html">1<p>2'
    assert start_tags(document) == html5lib_start_tags(document.decode())
