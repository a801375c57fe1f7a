"""rewriter finds at least every relative URL that lxml.html finds, on every corpus page with a URL.

For each page, ``lxml.html`` ``iterlinks()`` is run on the text as rewriter decodes it (a
string: given bytes, lxml reads UTF-8 pages without an early ``<meta charset>`` as Latin-1),
and every relative value it gives (no scheme, not empty; "#frag" counts) must be among
``find_links(data, url=url).links`` as a link of the same attribute whose ``original`` is that
value ("#style", rewriter's name for a <style> element's CSS, for lxml's None).

Matching is a multiset, per page: a value lxml gives twice must be found twice. (A set would
hide a second occurrence rewriter misses; the corpus needs nothing looser.) An lxml value
rewriter does not have must be an lxml over-report on the commented allow-list in
``corpus_figures.py`` (``LXML_OVER_REPORTS``: values that are no URL a browser would use),
or hold the URL in another form (``LXML_NORMALISED``: looked up again, unquoted or split).
Anything else fails the test with the page and the value.

``python3 tests/corpus_figures.py --coverage`` prints the figures, with what rewriter finds
that lxml does not.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import shared_cases, shared_path
from corpus_figures import LXML_NORMALISED, LXML_OVER_REPORTS, cached_coverage, coverage


def _pages() -> list[Any]:
    cases = shared_cases("corpus", "html", "manifest.json")
    if not isinstance(cases[0], dict):
        return cases  # the "shared-absent" case: the test skips (or fails in CI)
    return [pytest.param(case, id=case["file"]) for case in cases if case.get("url")]


@pytest.mark.parametrize("record", _pages())
def test_rewriter_finds_every_relative_url_lxml_finds(record: dict[str, Any] | None) -> None:
    corpus = shared_path("corpus", "html", "manifest.json").parent
    assert record is not None
    result = cached_coverage(corpus, record["file"], record["url"])
    problems = result.problems()
    assert not problems, "\n".join(problems[:20]) + (f"\n... {len(problems)} in all" if len(problems) > 20 else "")
    allowed = set(LXML_OVER_REPORTS) | set(LXML_NORMALISED)
    assert set(result.over_reports) | set(result.normalised) <= allowed
    assert result.matched + sum(result.over_reports.values()) + sum(result.normalised.values()) == result.lxml


def test_rewriter_finds_more_relative_urls_than_lxml() -> None:
    """Over the corpus, rewriter finds strictly more relative URL values than lxml."""
    manifest = shared_path("corpus", "html", "manifest.json")
    records = [record for record in shared_cases("corpus", "html", "manifest.json") if record.get("url")]
    pages = [cached_coverage(manifest.parent, record["file"], record["url"]) for record in records]
    ours = sum(page.rewriter for page in pages)
    theirs = sum(page.lxml for page in pages)
    assert ours > theirs, f"rewriter {ours} relative values, lxml {theirs}"
    # Everything lxml found that is a URL is among rewriter's; the surplus is what lxml lacks.
    assert sum(sum(page.extras.values()) for page in pages) > 0


# --- the classification itself, on small documents ---------------------------------------


@pytest.mark.parametrize(
    ("document", "category"),
    [
        (b'<a href="x" data="Topics">t</a>', "data on an element other than <object>"),
        (b'<img src="i.png" usemap="#Map"><map name="Map"></map>', 'usemap="#name"'),
        (b'<meta http-equiv="refresh" content="2700">', "refresh without a URL"),
        (b"<style>@font-face{src:url( 'https://h/f.woff' )}</style>", "CSS url( 'x' ) quotes kept, absolute inside"),
    ],
)
def test_lxml_over_reports(document: bytes, category: str) -> None:
    result = coverage("example", document, "https://example.org/dir/page.html")
    assert dict(result.over_reports) == {category: 1}
    assert result.missed == []


def test_lxml_values_in_another_form_are_looked_up_again() -> None:
    document = b"<style>@import url( \"a.css\" ); b { background: url( 'b.png' ) }</style>"
    result = coverage("example", document, "https://example.org/")
    assert dict(result.normalised) == {"CSS url( 'x' ) quotes kept, matched unquoted": 2}
    assert result.missed == []


def test_a_url_rewriter_missed_would_fail() -> None:
    """The comparison has teeth: an lxml URL that is not among rewriter's links is reported."""
    result = coverage("example", b'<a href="a.html">a</a>', "https://example.org/")
    assert result.matched == 1 and result.problems() == []
    # lxml reads <object data> as a URL (HTML §4.8.7), and so does rewriter.
    result = coverage("example", b'<object data="movie.swf"></object>', "https://example.org/")
    assert result.matched == 1 and result.missed == []


def test_what_rewriter_finds_that_lxml_does_not() -> None:
    document = (
        b'<img src="a.png" srcset="a2.png 2x" data-src="lazy.png">'
        b'<!--[if IE]><link rel=stylesheet href="ie.css"><![endif]-->'
        b"<style>@import 'single.css';</style>"
    )
    result = coverage("example", document, "https://example.org/")
    assert result.missed == []
    assert dict(result.extras) == {
        "srcset (srcset)": 1,
        "lazy-loading data-src": 1,
        "inside an <!--[if IE]> conditional comment (lxml: a comment)": 1,
        'CSS @import string (lxml reads only @import "...")': 1,
    }
