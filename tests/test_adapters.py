"""The tree adapters (rewriter.html.bs4, rewriter.html.lxml) against the bytes engine.

Each trap of tests/test_html.py, and 50 corpus pages, go through the bytes engine
(:func:`rewriter.html.engine.find_links`/``rewrite_html``) and through both adapters: a
BeautifulSoup tree built by html5lib (the WHATWG tree) and an lxml.html tree (libxml2's
parser). Where the parsers build the same tree the reports must be the same link for
link; where they do not, the difference is listed here with its reason and the test
asserts the difference itself, so that a change in either parser shows.
"""

from __future__ import annotations

import doctest
import html
import json
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lxml.html
import pytest
from bs4 import BeautifulSoup, XMLParsedAsHTMLWarning
from conftest import SHARED, shared_path
from lxml import etree
from lxml.html import html5parser

from rewriter.document.encoding import decode, sniff
from rewriter.html import bs4 as soup_adapter
from rewriter.html import lxml as lxml_adapter
from rewriter.html.engine import HTMLResult, Link, NoBaseError, find_links, rewrite_html, start_tags
from rewriter.html.tree import NO_SPAN, TreeResult
from rewriter.policy import Policy

URL = "http://h/dir/page.html"


def _bs4_tree(text: str) -> Any:
    return BeautifulSoup(text, "html5lib")


def _lxml_tree(text: str) -> Any:
    # Bytes with the encoding given: lxml refuses a str that declares an encoding (<?xml ...?>).
    parser = lxml.html.HTMLParser(encoding="utf-8")
    return lxml.html.document_fromstring(text.encode("utf-8", "surrogatepass"), parser=parser)


def _bs4_values(tree: Any, attribute: str) -> list[str]:
    return [
        value if isinstance(value, str) else " ".join(value)
        for tag in tree.find_all(True)
        if (value := tag.attrs.get(attribute)) is not None
    ]


def _lxml_values(tree: Any, attribute: str) -> list[str]:
    return [
        value
        for element in tree.iter()
        if isinstance(element.tag, str) and (value := element.get(attribute)) is not None
    ]


# name: (build a tree from text, the adapter, the values of one attribute over the tree)
ADAPTERS: dict[str, tuple[Callable[[str], Any], Callable[..., TreeResult], Callable[[Any, str], list[str]]]] = {
    "bs4-html5lib": (_bs4_tree, soup_adapter.absolutize, _bs4_values),
    "lxml.html": (_lxml_tree, lxml_adapter.absolutize, _lxml_values),
}


def _key(link: Link) -> tuple[object, ...]:
    """Everything a link report says, but the byte span (a tree has none)."""
    return (link.element.lower(), link.attribute, link.kind, link.original, link.status, link.resolved, link.reason)


def _ignored_bases(problems: tuple[str, ...]) -> list[str]:
    return [problem.split(" ignored:")[0] for problem in problems if " ignored:" in problem]


def _report(links: tuple[Link, ...]) -> Counter[tuple[object, ...]]:
    return Counter(_key(link) for link in links)


# --------------------------------------------------------------------------
# The trap suite: the documents of tests/test_html.py
# --------------------------------------------------------------------------

_DECOYS = {
    "comment": '<!-- <base href="http://evil/"> -->',
    "script": "<script>document.write('<base href=\"http://evil/\">')</script>",
    "template": '<template><base href="http://evil/"></template>',
    "noscript": '<noscript><base href="http://evil/"></noscript>',
    "svg": '<svg><base href="http://evil/"></base></svg>',
    "textarea": '<textarea><base href="http://evil/"></textarea>',
    "style": '<style>/* <base href="http://evil/"> */</style>',
    "math": '<math><base href="http://evil/"></base></math>',
}
_REFRESH = ["5", "0;url=x.html", "0; URL='x y.html'", '0, url = "x.html" ', "0, x.html", "3 ur=x.html"]
_REFRESH += ["1.5;url=http://abs/", "x;url=y"]

# id: (document, url, policy options)
TRAPS: dict[str, tuple[str, str | None, dict[str, Any]]] = {
    **{f"base-in-{name}": (f"{decoy}<a href=x>", URL, {}) for name, decoy in _DECOYS.items()},
    "first-base-wins": ('<base target=_top><base href="../b/"><base href="http://second/"><a href=x>', URL, {}),
    **{
        f"unusable-base-{href.split(':')[0]}": (f'<base href="{html.escape(href)}"><a href=x>', URL, {})
        for href in ["javascript:alert(1)", "data:text/html,x", "vbscript:x", "mailto:a@b"]
    },
    "javascript-base-with-tab": ('<base href="java&#9;script:alert(1)"><a href=x>', URL, {}),
    "saved-from-mark": ("<!-- saved from url=(0023)https://example.org/a/ -->\n<a href=b>", None, {}),
    "canonical": ('<link rel=canonical href="https://example.org/c/p"><a href=x>', None, {"canonical_base": True}),
    "no-base": ("<a href=x><a href=http://y/>", None, {}),
    "srcset-commas": ('<img srcset="a,1.png 1x,b.png 2x , c.png (w,h) 3w,d.png">', URL, {}),
    **{
        f"refresh-{index}": (f'<meta http-equiv="refresh" content="{html.escape(content)}">', URL, {})
        for index, content in enumerate(_REFRESH)
    },
    "meta-not-refresh": ('<meta name="description" content="a/b"><meta property="og:image" content="i.png">', URL, {}),
    "css-forms-and-escapes": (
        "<style>@import 'a.css'; @import \"b.css\"; @import url(c.css);"
        "x{background:url( d\\ e.png ) ; content:'url(no.png)'} /* url(no2.png) */"
        "y{background-image:image-set('f.png' 1x, url(g.png) 2x)}</style>",
        URL,
        {},
    ),
    "style-attribute-references": ('<p style="background:url(&quot;a b.png&quot;)">', URL, {}),
    "srcdoc": ('<base href="/b/"><iframe srcdoc="&lt;img src=&quot;i.png&quot;&gt;"></iframe>', URL, {}),
    "svg-and-mathml": ('<svg><a xlink:href="a"><image href="b"/></a></svg><math href="c"></math>', URL, {}),
    "codebase-and-archives": (
        '<object codebase="/cb/" data="m.swf" archive="a.jar b.jar"></object><applet archive="x.jar,y.jar">',
        URL,
        {},
    ),
    "usemap-and-param": (
        '<img usemap="#m"><img usemap="maps.html#m"><param name=a value=v.html><param valuetype=ref value=r.html>',
        URL,
        {},
    ),
    "lazy-attributes": ('<img data-src="l.png" data-srcset="a.png 1x">', URL, {}),
    "conditional-comments": (
        '<!--[if IE]><link href="ie.css"><![endif]-->'
        '<script>"<!--[if IE]><link href=\\"no.css\\"><![endif]-->"</script>',
        URL,
        {},
    ),
    "same-document": ('<a href="#top"></a><a href=""></a><a href="?q"></a>', URL, {}),
    "absolute-of-any-scheme": (
        '<a href="HTTP://X/./a"><a href="javascript:go(\'../x\')"><a href="data:,a/../b"><a href="tel:+1">',
        URL,
        {},
    ),
    "quotes-in-resolved-url": ('<a href=\'x"y\'><a href="z"><a href=q>', "http://h/it's/", {}),
    "character-references": ('<a href="a?x=1&amp;y=&#50;">', URL, {}),
    "whitespace-around": ('<a href="  x \n">', URL, {}),
    "duplicate-attributes": ("<a href=x href=y>", URL, {}),
    "reopened-formatting-element": ('<p><a href="x.html">1<p>2', URL, {}),
    "lazy-attribute-holding-markup": (
        "<a data-original='<i class=\"x\">s</i>' data-src='a b'><img data-src=' l.png '>",
        URL,
        {},
    ),
    "repeated-body-attributes": ('<body><p>x<body background="bg.png">', URL, {}),
    "attribute-without-value": ("<form action><a href>x</a>", URL, {"same_document": True}),
    "rules-rfc1808": ("<a href='../../../g'>", "http://a/b/c/d", {"rules": "rfc1808"}),
    "rules-whatwg-special-scheme": ("<a href='http:g'>", "http://a/b/c/d", {"rules": "whatwg"}),
}

# (trap, adapter): why that parser's tree is not the bytes engine's, and what the tree gives instead.
KNOWN_DIFFERENCES: dict[tuple[str, str], tuple[str, Callable[[TreeResult], bool]]] = {
    ("base-in-noscript", "bs4-html5lib"): (
        "html5lib parses with scripting off: in <head>, a <base> ends the <noscript> and lands in <head> "
        "(HTML §13.2.6.4.5), so the tree no longer says it was in one; the bytes engine reads the text "
        "as a scripting browser does, where it is inert. A tree cannot tell.",
        lambda result: result.base == "http://evil/" and result.layer == "base-element",
    ),
    ("reopened-formatting-element", "bs4-html5lib"): (
        "HTML §13.2.4.3: the tree holds two <a> elements (the second a clone made by the parser); "
        "the bytes engine has one start tag to rewrite, the tree two elements, both rewritten.",
        lambda result: [link.resolved for link in result.links] == ["http://h/dir/x.html"] * 2,
    ),
    ("repeated-body-attributes", "bs4-html5lib"): (
        "HTML §13.2.6.4.7: a second <body> tag's attributes are added to the first body; the tree holds "
        "background there and rewrites it, the bytes engine has no text of its own to edit and reports a problem.",
        lambda result: [link.resolved for link in result.links] == ["http://h/dir/bg.png"] and not result.problems,
    ),
}


@pytest.mark.parametrize("adapter", list(ADAPTERS))
@pytest.mark.parametrize("trap", list(TRAPS))
def test_trap_gives_what_the_bytes_engine_gives(trap: str, adapter: str) -> None:
    document, url, options = TRAPS[trap]
    policy = Policy(**options)
    expected = find_links(document.encode(), url=url, policy=policy)
    build, absolutize, values_of = ADAPTERS[adapter]
    tree = build(document)
    result = absolutize(tree, url=url, policy=policy)
    assert all(link.start == link.end == NO_SPAN for link in result.links)
    known = KNOWN_DIFFERENCES.get((trap, adapter))
    if known is not None:
        reason, check = known
        assert _report(result.links) != _report(expected.links) or result.base != expected.base, reason
        assert check(result), reason
        return
    assert (result.base, result.layer) == (expected.base, expected.layer)
    assert _report(result.links) == _report(expected.links)
    # The same <base> ignored (the wording of the reason aside); other problems are about bytes.
    assert _ignored_bases(result.problems) == _ignored_bases(expected.problems)
    # The tree now holds what the bytes engine wrote, value for value.
    written = rewrite_html(document.encode(), url=url, policy=policy).output
    for attribute in {link.attribute for link in expected.links if not link.attribute.startswith("#")}:
        by_bytes = [attrs[attribute] for _, attrs in start_tags(written) if attribute in attrs]
        assert sorted(values_of(tree, attribute)) == sorted(by_bytes), attribute


def test_bytes_engine_valueless_attribute_is_the_empty_string() -> None:
    # HTML §13.2.5.32-33: <a href> is <a href="">, a reference to the document itself.
    policy = Policy(same_document=True)
    empty = rewrite_html(b'<a href="">x</a>', url=URL, policy=policy)
    valueless = rewrite_html(b"<a href>x</a>", url=URL, policy=policy)
    assert [(link.attribute, link.status) for link in valueless.links] == [
        (link.attribute, link.status) for link in empty.links
    ]


def test_every_known_difference_names_a_trap() -> None:
    assert {trap for trap, _ in KNOWN_DIFFERENCES} <= set(TRAPS)


# --------------------------------------------------------------------------
# What the bytes engine cannot see in a tree, and back
# --------------------------------------------------------------------------


def test_style_text_and_conditional_comments_are_rewritten_in_the_tree() -> None:
    page = '<!--[if IE]><link href="ie.css"><![endif]--><style>a{background:url("x y.png")}</style>'
    soup = BeautifulSoup(page, "html5lib")
    soup_adapter.absolutize(soup, url=URL)
    assert soup.style.string == 'a{background:url("http://h/dir/x y.png")}'
    assert '<!--[if IE]><link href="http://h/dir/ie.css"><![endif]-->' in str(soup)
    root = lxml.html.document_fromstring(page)
    lxml_adapter.absolutize(root, url=URL)
    assert root.find(".//style").text == 'a{background:url("http://h/dir/x y.png")}'
    assert root.getprevious().text == '[if IE]><link href="http://h/dir/ie.css"><![endif]'


def test_srcdoc_is_rewritten_as_text() -> None:
    page = '<iframe srcdoc="&lt;a href=x&gt;&lt;img srcset=&quot;a.png 1x&quot;&gt;"></iframe>'
    soup = BeautifulSoup(page, "html5lib")
    soup_adapter.absolutize(soup, url=URL)
    assert soup.iframe["srcdoc"] == '<a href=http://h/dir/x><img srcset="http://h/dir/a.png 1x">'


def test_a_subtree_changes_alone_with_the_documents_base() -> None:
    page = '<head><base href="/b/"></head><body><p id=one><a href=x></p><p id=two><a href=y></p>'
    soup = BeautifulSoup(page, "html5lib")
    result = soup_adapter.absolutize(soup.find(id="one"), url=URL)
    assert result.base == "http://h/b/" and [link.original for link in result.links] == ["x"]
    assert soup.find(id="one").a["href"] == "http://h/b/x" and soup.find(id="two").a["href"] == "y"
    assert soup.base["href"] == "/b/"  # outside the subtree: found, not changed
    root = lxml.html.document_fromstring(page)
    result = lxml_adapter.absolutize(root.get_element_by_id("one"), url=URL)
    assert result.base == "http://h/b/" and root.get_element_by_id("two")[0].get("href") == "y"
    assert root.get_element_by_id("one")[0].get("href") == "http://h/b/x"


def test_an_element_tree_is_taken_whole_with_its_top_level_comments() -> None:
    tree = lxml.html.document_fromstring("<!-- saved from url=(0023)https://example.org/a/ --><a href=b>")
    result = lxml_adapter.absolutize(tree.getroottree())
    assert result.layer == "saved-from-mark" and tree.find(".//a").get("href") == "https://example.org/a/b"


@pytest.mark.parametrize("builder", ["html.parser", "lxml", "html5lib"])
def test_svg_namespace_and_xlink_with_every_soup_builder(builder: str) -> None:
    # html.parser and lxml record no namespaces: <svg> is recognised by its name.
    page = '<svg><base href="http://evil/"><a xlink:href="a" src="no">'
    page += "<foreignObject><img src=i></foreignObject></a></svg>"
    soup = BeautifulSoup(page, builder)
    result = soup_adapter.absolutize(soup, url=URL)
    assert result.base == URL
    assert sorted((link.element.lower(), link.attribute) for link in result.links) == [
        ("a", "xlink:href"),
        ("base", "href"),
        ("img", "src"),
    ]
    assert soup.find("img")["src"] == "http://h/dir/i"


def test_xml_trees_with_clark_names() -> None:
    page = (
        b'<html xmlns="http://www.w3.org/1999/xhtml" xmlns:xlink="http://www.w3.org/1999/xlink">'
        b'<head><base href="/b/"/></head><body><a href="x"/><svg xmlns="http://www.w3.org/2000/svg">'
        b'<use xlink:href="s.svg#i" src="no"/></svg><x:a xmlns:x="urn:other" href="no"/></body></html>'
    )
    root = etree.fromstring(page)
    result = lxml_adapter.absolutize(root, url=URL)
    assert [(link.element, link.attribute, link.resolved) for link in result.links] == [
        ("base", "href", "http://h/b/"),
        ("a", "href", "http://h/b/x"),
        ("use", "xlink:href", "http://h/b/s.svg#i"),
    ]
    assert root.find(".//{http://www.w3.org/2000/svg}use").get("{http://www.w3.org/1999/xlink}href") == (
        "http://h/b/s.svg#i"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(page, "xml")
    assert [link.resolved for link in soup_adapter.absolutize(soup, url=URL).links] == [
        "http://h/b/",
        "http://h/b/x",
        "http://h/b/s.svg#i",
    ]


def test_html5lib_tree_in_lxml() -> None:
    root = html5parser.document_fromstring('<base href="/b/"><svg><image xlink:href="i.png"/></svg><a href=x>')
    result = lxml_adapter.absolutize(root, url=URL)
    assert [link.resolved for link in result.links] == ["http://h/b/", "http://h/b/i.png", "http://h/b/x"]


def test_a_multi_valued_attribute_stays_a_list_in_a_soup() -> None:
    soup = BeautifulSoup('<object archive="a.jar b.jar"></object>', "html.parser")
    soup_adapter.absolutize(soup, url=URL)
    assert soup.object["archive"] == ["http://h/dir/a.jar", "http://h/dir/b.jar"]


def test_a_value_lxml_refuses_is_reported_and_left() -> None:
    root = lxml.html.fromstring('<a href="x\x1by">t</a>')
    result = lxml_adapter.absolutize(root, url=URL)
    assert root.get("href") == "x\x1by"
    assert result.problems and "<a href> could not be written" in result.problems[0]


def test_an_unusable_base_is_left_even_when_bases_are_removed() -> None:
    soup = BeautifulSoup('<base href="javascript:x"><a href=y>', "html5lib")
    result = soup_adapter.absolutize(soup, url=URL, policy=Policy(remove_base=True))
    assert soup.base["href"] == "javascript:x" and "ignored" in result.problems[0]
    assert [link.attribute for link in result.links] == ["href"] and soup.a["href"] == "http://h/dir/y"


# --------------------------------------------------------------------------
# Policy options, on both adapters
# --------------------------------------------------------------------------


def _run(adapter: str, page: str, url: str | None = URL, **options: Any) -> tuple[Any, TreeResult]:
    build, absolutize, _ = ADAPTERS[adapter]
    tree = build(page)
    return tree, absolutize(tree, url=url, policy=Policy(**options))


def _href(tree: Any, index: int = 0) -> str:
    if isinstance(tree, BeautifulSoup):
        return tree.find_all("a")[index]["href"]
    return tree.findall(".//a")[index].get("href")


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_rules_and_strict(adapter: str) -> None:
    tree, _ = _run(adapter, "<a href='../../../g'>", url="http://a/b/c/d", rules="rfc1808")
    assert _href(tree) == "http://a/../g"
    tree, _ = _run(adapter, "<a href='http:g'>", url="http://a/b/c/d", strict=False)
    assert _href(tree) == "http://a/b/c/g"
    tree, result = _run(adapter, "<a href='http:g'>", url="http://a/b/c/d")
    assert _href(tree) == "http:g" and result.links[0].status == "absolute"


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_same_document(adapter: str) -> None:
    tree, result = _run(adapter, '<a href="#top"></a>')
    assert _href(tree) == "#top" and result.links[0].status == "same-document"
    tree, _ = _run(adapter, '<a href="#top"></a>', same_document=True)
    assert _href(tree) == "http://h/dir/page.html#top"


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_lazy_attributes(adapter: str) -> None:
    _, result = _run(adapter, '<img data-src="l.png">')
    assert result.links[0].resolved == "http://h/dir/l.png"
    _, result = _run(adapter, '<img data-src="l.png">', lazy_attributes=frozenset())
    assert result.links == ()
    _, result = _run(adapter, '<img data-x="l.png" data-src="k.png">', lazy_attributes=frozenset({"data-x"}))
    assert [link.original for link in result.links] == ["l.png"]


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_remove_base(adapter: str) -> None:
    tree, result = _run(adapter, '<base href="/b/">tail<a href=x>', remove_base=True)
    assert _href(tree) == "http://h/b/x" and [link.original for link in result.links] == ["x"]
    text = str(tree) if isinstance(tree, BeautifulSoup) else lxml.html.tostring(tree, encoding="unicode")
    assert "<base" not in text and "tail" in text


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_require_base_raises_before_changing_anything(adapter: str) -> None:
    page = "<a href=http://y/x><a href=x>"
    build, absolutize, _ = ADAPTERS[adapter]
    tree = build(page)
    before = str(tree) if isinstance(tree, BeautifulSoup) else lxml.html.tostring(tree)
    with pytest.raises(NoBaseError):
        absolutize(tree, policy=Policy(require_base=True))
    assert (str(tree) if isinstance(tree, BeautifulSoup) else lxml.html.tostring(tree)) == before
    _, result = _run(adapter, page, url=None)
    assert [link.status for link in result.links] == ["absolute", "no-base"]


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_relink(adapter: str) -> None:
    local = {"http://h/dir/a.png": "files/a.png", "http://abs/b.png": "files/b.png"}
    page = '<a href="a.png"></a><a href="http://abs/b.png"></a><a href="c.png"></a>'
    tree, result = _run(adapter, page, relink=local.get)
    assert [_href(tree, index) for index in range(3)] == ["files/a.png", "files/b.png", "http://h/dir/c.png"]
    assert [link.status for link in result.links] == ["relinked", "relinked", "rewritten"]


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_canonical_base(adapter: str) -> None:
    page = '<link rel=canonical href="https://example.org/c/p"><a href=x>'
    tree, result = _run(adapter, page, url=None)
    assert _href(tree) == "x" and result.base is None
    tree, result = _run(adapter, page, url=None, canonical_base=True)
    assert _href(tree) == "https://example.org/c/x" and result.layer == "canonical"


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_policy_conditional_comments(adapter: str) -> None:
    page = '<!--[if IE]><link href="ie.css"><![endif]--><a href=x>'
    _, result = _run(adapter, page)
    assert [link.original for link in result.links] == ["ie.css", "x"]
    _, result = _run(adapter, page, conditional_comments=False)
    assert [link.original for link in result.links] == ["x"]


@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_enclosing_base_beats_retrieval_url(adapter: str) -> None:
    build, absolutize, _ = ADAPTERS[adapter]
    tree = build("<a href=x>")
    result = absolutize(tree, url="http://retrieval/", base="http://enclosing/d/")
    assert _href(tree) == "http://enclosing/d/x" and result.layer == "enclosing"


# --------------------------------------------------------------------------
# The corpus: 50 pages, bytes engine against each adapter
# --------------------------------------------------------------------------

CORPUS = SHARED / "corpus" / "html"
# Pages per manifest group, in manifest order, under 1 MB (html5lib is slow on the huge ones).
_QUOTA = {
    "base-href": 10,
    "random": 8,
    "non-utf8": 8,
    "meta-refresh": 6,
    "aeb-all": 4,
    "srcset/style-url": 5,
    "many-parse-errors": 3,
    "no-declared-charset": 3,
    "declared-nonutf8-but-ascii/utf8": 2,
}
# The one page of the corpus where libxml2's tree differs from HTML's on a link element.
_LIBXML2_IMAGE_PAGE = "traf--dtb.de-kulturwandel.html"


def _corpus_pages() -> list[Any]:
    manifest = CORPUS / "manifest.json"
    if not manifest.exists():
        return [pytest.param(None, id="shared-absent")]
    entries = json.loads(manifest.read_text(encoding="utf-8"))
    quota = dict(_QUOTA)
    chosen = [entry for entry in entries if entry["file"] == _LIBXML2_IMAGE_PAGE]
    for entry in entries:
        group = entry.get("selected_for", "")
        if quota.get(group, 0) > 0 and entry["bytes"] < 1_000_000 and entry not in chosen:
            chosen.append(entry)
            quota[group] -= 1
    return [pytest.param(entry, id=entry["file"]) for entry in chosen]


def test_the_corpus_sample_is_fifty_pages() -> None:
    pages = _corpus_pages()
    if pages[0].values[0] is None:
        shared_path("corpus", "html", "manifest.json")
    assert len(pages) == 50


def _tolerant(links: tuple[Link, ...]) -> dict[str, list[tuple[str, str | None]]]:
    """Per attribute name, the sorted (status, resolved) of its link sites: what must agree
    whatever element name or tree position each parser gives a site."""
    sites: dict[str, list[tuple[str, str | None]]] = {}
    for link in links:
        sites.setdefault(link.attribute, []).append((link.status, link.resolved))
    return {attribute: sorted(found, key=repr) for attribute, found in sites.items()}


def _libxml2_normalised(key: tuple[object, ...]) -> tuple[object, ...]:
    """libxml2 keeps <image> as written; HTML tree construction renames it <img> (§13.2.6.4.7)."""
    return ("img", *key[1:]) if key[0] == "image" and key[1] == "src" else key


@pytest.mark.parametrize("entry", _corpus_pages())
@pytest.mark.parametrize("adapter", list(ADAPTERS))
def test_corpus_page_agrees_with_the_bytes_engine(adapter: str, entry: dict[str, Any] | None) -> None:
    if entry is None:
        shared_path("corpus", "html", "manifest.json")
    assert entry is not None
    data = (CORPUS / entry["file"]).read_bytes()
    url = entry["url"] or entry.get("canonical_or_og_url")
    expected: HTMLResult = find_links(data, url=url)
    build, absolutize, _ = ADAPTERS[adapter]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # html5lib's DataLossWarning on names XML cannot hold
        tree = build(decode(data, sniff(data)))
    result = absolutize(tree, url=url)
    assert (result.base, result.layer) == (expected.base, expected.layer)
    # Tolerant: per attribute name, the same (status, resolved) sites.
    assert _tolerant(result.links) == _tolerant(expected.links)
    # Strict: every field but the span, link for link, after the documented normalisation.
    ours, theirs = _report(result.links), _report(expected.links)
    if adapter == "lxml.html":
        renamed = sum(count for key, count in ours.items() if key[0] == "image" and key[1] == "src")
        assert (renamed > 0) == (entry["file"] == _LIBXML2_IMAGE_PAGE)
        ours = Counter({_libxml2_normalised(key): count for key, count in ours.items()})
    assert ours == theirs
    # Everything the tree had to rewrite is now absolute: a second run rewrites nothing.
    again = absolutize(tree, url=url)
    assert not [link for link in again.links if link.status == "rewritten"]


def test_shared_corpus_directory_is_where_conftest_says() -> None:
    assert Path(__file__).resolve().parents[1].parent / "shared" == SHARED


def test_the_examples_of_docs_adapters_md_run() -> None:
    path = Path(__file__).resolve().parents[1] / "docs" / "adapters.md"
    failures, tried = doctest.testfile(str(path), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
