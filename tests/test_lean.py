"""The lean path (issue #36): ``rewrite(..., links=False)`` and the command line's rewrite keep
no record for each link, only each status's count and the links left relative. Every output,
count and link must be what the full path gives: on the corpus, on pages whose readings differ
after a ``<noscript>`` (the engine reads those again, each link a record), in conditional
comments, ``srcdoc`` documents and style sheets. Run with and without the extension
(``REWRITER_PURE=1``)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import shared_path

import rewriter
from rewriter.css.stylesheet import rewrite_css
from rewriter.document.model import DocumentResult
from rewriter.document.process import KEPT_STATUSES
from rewriter.html.engine import rewrite_html
from rewriter.policy import Policy

URL = "https://example.org/d/page.html"

PAGES = [
    b'<base href="/docs/"><a href="guide.html#s">x</a><a href="#top">t</a><img src=i.png srcset="a 1x, b 2x">',
    b"<a href=x><a href=http://other/y><a href=' z '><a href='a&amp;b'><p style='background:url(q.png)'>",
    b"<noscript><a href=n1><style></noscript><a href=after><img src=late.png>",  # the readings differ
    b"<a href=before><!--[if IE]><a href=ie><img src=ie.png><![endif]--><a href=later>",
    b'<iframe srcdoc="&lt;a href=s1&gt;&lt;noscript&gt;&lt;a href=s2&gt;&lt;/noscript&gt;"></iframe><a href=x>',
    b'<iframe srcdoc="&lt;noscript&gt;&lt;style&gt;&lt;/noscript&gt;&lt;a href=s3&gt;"></iframe><a href=x>',
    b"<a href=http://[bad/><a href=javascript:x><a href=mailto:m><a href=''><a>",
    "<meta charset=utf-8><a href=é>é</a><img src='\ud800'>".encode("utf-8", "surrogatepass"),
    b"<svg><a xlink:href=s.svg /><image href=i.svg /></svg><object data=o codebase=/c/></object>",
]


def _same(lean: DocumentResult, full: DocumentResult) -> None:
    """Two results of one document, one lean, one full: the same in everything they give."""
    assert lean.output == full.output
    assert lean.status_counts == full.status_counts
    assert lean.status_counts == dict(Counter(link.status for link in full.links))
    assert lean.problems == full.problems and lean.base == full.base and lean.layer == full.layer
    for statuses in (("no-base",), ("unresolvable",), tuple(KEPT_STATUSES), ("rewritten",), ("absolute", "part")):
        assert lean.links_with(*statuses) == full.links_with(*statuses)
    assert lean.links == full.links
    assert lean == full


@pytest.mark.parametrize("page", PAGES)
@pytest.mark.parametrize("url", [URL, None])
def test_a_lean_page_gives_what_a_full_one_gives(page: bytes, url: str | None) -> None:
    _same(rewrite_html(page, url=url, links=False), rewrite_html(page, url=url))


@pytest.mark.parametrize("page", PAGES)
def test_the_kept_links_need_no_second_reading(page: bytes) -> None:
    """links_with the statuses a lean result keeps comes from its records (the engine is not run again)."""
    lean = rewrite_html(page, links=False)
    full = rewrite_html(page)
    assert lean.links_with(*KEPT_STATUSES) == full.links_with(*KEPT_STATUSES)
    assert lean.status_counts == full.status_counts


def test_a_lean_style_sheet() -> None:
    sheet = b"@import 'a.css'; p { background: url(b.png) } q { x: url(http://h/c) } r { y: url(#f) }"
    for url in (URL, None):
        _same(rewrite_css(sheet, url=url, links=False), rewrite_css(sheet, url=url))


def test_the_library_takes_links_false() -> None:
    page = PAGES[0]
    lean = rewriter.rewrite(page, url=URL, links=False)
    assert isinstance(lean, DocumentResult)
    _same(lean, rewriter.rewrite(page, url=URL))
    message = b"Content-Type: text/html\n\n<a href=x>"
    assert rewriter.rewrite(message, url=URL, links=False) == rewriter.rewrite(message, url=URL)
    with pytest.raises(TypeError, match="links="):
        rewriter.rewrite(page, url=URL, links="no")  # type: ignore[call-overload]


def test_require_base_holds_on_the_lean_path() -> None:
    policy = Policy(require_base=True)
    with pytest.raises(rewriter.NoBaseError):
        rewrite_html(b"<a href=x>", links=False, policy=policy)


@pytest.mark.corpus
def test_the_corpus_lean_and_full() -> None:
    corpus = shared_path("corpus", "html")
    for entry in json.loads((corpus / "manifest.json").read_text(encoding="utf-8")):
        data = (corpus / entry["file"]).read_bytes()
        url = entry.get("url") or URL
        _same(rewrite_html(data, url=url, links=False), rewrite_html(data, url=url))
