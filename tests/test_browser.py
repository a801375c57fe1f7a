"""Relocation invariance in Chromium: a rewritten page means the same URLs wherever it is served.

Each corpus case loads one page as served at its retrieval URL, and its rewrite (WHATWG
rules, same-document references made absolute too) as served at another URL, and checks
that every URL-bearing attribute resolves to the same absolute URL in both
(``tests/browser_relocation.py`` says how; run it as a script for the whole corpus).
A synthetic page adds the forms the corpus lacks, and checks that the harness sees an
unrewritten link at all.

Needs Debian's Chromium and the ``playwright`` package: without them the cases skip, or
fail when ``CI=true`` (CI installs both, see ``.ci/run``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from browser_relocation import (
    CORPUS,
    Browser,
    Page,
    compare,
    compare_document,
    compare_page,
    corpus_pages,
    policy_for,
    relocated_url,
    select_every,
    tooling_problem,
)
from conftest import shared_path

RULES = "whatwg"
STEP = 7  # every 7th page with an http(s) URL, in manifest order: 43 of the 299
MINIMUM_PAGES = 40
PAGE_URL = "http://example.org/dir/sub/page.html?q#frag"  # http: the relocated copy is https

# Corpus pages whose mismatch is a rewriter bug (not the harness's): strict xfail, with the reason.
KNOWN_BUGS: dict[str, str] = {}

# Every URL attribute the harness reads, and references the corpus has few or none of.
SYNTHETIC = (
    "<!doctype html>\n"
    '<html manifest="m.appcache"><head><meta charset="utf-8">\n'
    '<meta http-equiv="Refresh" content="0; URL = \'r e.html\' x">\n'
    '<link rel="preload" as="image" href="l.css" imagesrcset="p,1.png 2x, q.png 3x">\n'
    '</head><body background="bg.png">\n'
    '<a href=" a.html " ping="p1  p2">a</a> <a href="#f">f</a> <a href="">e</a> <a href="?q">q</a>\n'
    '<a href="http://[">fails in both</a> <a href="\\\\cdn.example\\x\\y.js">b</a> <a href="..\\up.html">b</a>\n'
    '<a href="\\x">b</a> <a href="http:g">same scheme</a> <a href="HTTP://EX.com/A/../b">u</a>\n'
    '<a href="a&#9;b&#10;c.html">tab</a> <a href="caf\u00e9.html?q=\u00e9#\u00e9">utf-8</a> <a href="%2e%2e/x">p</a>\n'
    '<a href="/.//x">d</a> <a href="//h/./a/../b">s</a> <a href="a b.html">s</a> <a href="a%zzb">p</a>\n'
    '<a href="g;x?y#s">g</a> <a href=".">.</a> <a href="..">..</a> <a href="../../../../g">up</a> <a href="//">s</a>\n'
    '<a href="///x">s</a> <a href="javascript:void(0)">j</a> <a href="mailto:x@y">m</a> <a href="data:,hi">d</a>\n'
    '<a href=\'q"uote\'>q</a> <a href=unq&amp;uoted>u</a> <a href="&lt;x&gt;">l</a> <a href="  &#32;sp  ">w</a>\n'
    '<a href="\u00a0nbsp">n</a> <a href="x" href="dup">dup</a> <area href="ar.html">\n'
    '<img srcset="i,1.png 1x, j.png (a, b) 2x,k.png,, l.png , m%20n.png 3x" src="x\\y.png" usemap="#m">\n'
    '<img usemap="map.html#m" longdesc="ld"> <object data="o.swf" codebase="/cb/"></object>\n'
    '<object data="o2.swf"></object> <iframe src="f.html"></iframe> <video poster="v.jpg"></video>\n'
    '<svg><use href="s.svg#i"/><a xlink:href="x.svg"/><image href="i.svg" xlink:href="j.svg"/></svg>\n'
    '<math><mi href="m.html">x</mi></math>\n'
    '<template><img src="t.png"><template><a href="tt">t</a></template></template>\n'
    '<noscript><img src="ns.png"></noscript> <blockquote cite="c"></blockquote>\n'
    '<form action=""><button formaction="fa">b</button></form> <input type=image src="in.png" formaction="ifa">\n'
    '<table background="tb.png"><tr><td background="td.png">x</td></tr></table>\n'
    '<script>document.title = "scripting is on"</script>\n'
    "</body></html>\n"
).encode()

# Synthetic documents that once showed a rewriter bug, kept as regressions.
REGRESSIONS = [
    pytest.param(
        # Was: href='https:g' on an http page kept as "absolute" (https://g/ there), though on an
        # https page it is relative: relocated it resolved to https://relocated.example.org/.../g.
        b'<!doctype html><meta charset="utf-8"><a href="https:g">x</a>',
        id="special-scheme-without-slashes",
    ),
    pytest.param(
        # Was: '?q=\u00e9' percent-encoded as UTF-8 (%C3%A9); the browser encodes the query in the
        # document's encoding (%E9), so the link fetched another URL.
        '<!doctype html><meta charset="windows-1252"><a href="caf\u00e9.html?q=\u00e9">x</a>'.encode("cp1252"),
        id="query-in-windows-1252",
    ),
    pytest.param(
        # Was: '?q=\u65e5' became '?q=%E6%97%A5'; the browser fetches '?q=%93%FA'.
        '<!doctype html><meta charset="shift_jis"><img src="\u65e5.png?q=\u65e5">'.encode("shift_jis"),
        id="query-in-shift_jis",
    ),
]


def _cases() -> list[Any]:
    if not (CORPUS / "manifest.json").exists():
        return [pytest.param(None, id="shared-absent")]
    pages = select_every(corpus_pages(CORPUS), STEP)
    return [
        pytest.param(
            page,
            id=page.file,
            marks=[pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN_BUGS[page.file])],
        )
        if page.file in KNOWN_BUGS
        else pytest.param(page, id=page.file)
        for page in pages
    ]


def _report(mismatches: list[Any]) -> str:
    return f"{len(mismatches)} URL(s) moved with the page:\n" + "\n".join(str(m) for m in mismatches[:20])


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One Chromium for every case of the module."""
    problem = tooling_problem()
    if problem is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{problem} (CI installs it: see .ci/run)")
        pytest.skip(problem)
    with Browser() as chromium:
        yield chromium


def test_selection_is_large_enough() -> None:
    shared_path("corpus", "html", "manifest.json")
    pages = [case.values[0] for case in _cases()]
    assert len(pages) >= MINIMUM_PAGES
    assert all(page.url.startswith(("http://", "https://")) for page in pages)
    assert all(relocated_url(page.url) != page.url for page in pages)


@pytest.mark.parametrize("page", _cases())
def test_relocation_invariance(page: Page | None, request: pytest.FixtureRequest) -> None:
    corpus = shared_path("corpus", "html")  # skips, or fails in CI, without ../shared
    assert page is not None
    browser: Browser = request.getfixturevalue("browser")
    report = compare_page(browser, page, policy_for(RULES), corpus)
    assert report.compared > 0, f"{page.file}: no URL found in the page"
    assert not report.mismatches, _report(report.mismatches)


def test_harness_sees_an_unrewritten_page(browser: Browser) -> None:
    """The control: the same bytes served elsewhere move every relative URL, of every kind."""
    original = browser.load(PAGE_URL, SYNTHETIC)
    moved = browser.load(relocated_url(PAGE_URL), SYNTHETIC)
    assert original.character_set == "UTF-8"
    assert original.url == PAGE_URL
    assert any(row.value == "ns.png" for row in original.rows), "<noscript> is not markup: scripting is on"
    assert any(row.value == "tt" for row in original.rows), "template contents were not read"
    assert original.aborted, "no subresource request was seen (and aborted)"
    _, mismatches = compare("synthetic", original, moved)
    moved_attributes = {m.attribute.split("[")[0] for m in mismatches}
    assert moved_attributes >= {
        "href",
        "src",
        "srcset",
        "imagesrcset",
        "ping",
        "content",
        "xlink:href",
        "data",
        "usemap",
        "manifest",
        "action",
        "formaction",
        "cite",
        "poster",
        "background",
        "longdesc",
    }
    skipped = {row.value for row in original.rows}
    assert "o.swf" not in skipped, "object data with a codebase is compared"
    assert "#m" not in skipped, "usemap='#name' is compared"


def test_relocation_invariance_synthetic(browser: Browser) -> None:
    report = compare_document(browser, "synthetic", SYNTHETIC, PAGE_URL, policy_for(RULES))
    assert report.compared > 60
    assert not report.mismatches, _report(report.mismatches)


@pytest.mark.parametrize("document", REGRESSIONS)
def test_relocation_invariance_regressions(document: bytes, browser: Browser) -> None:
    report = compare_document(browser, "synthetic", document, PAGE_URL, policy_for(RULES))
    assert report.compared > 0
    assert not report.mismatches, _report(report.mismatches)
