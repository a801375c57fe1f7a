"""Hostile content and data safety.

- A base with an opaque scheme (javascript:, data:, vbscript:, mailto:, about:, blob:, cid:),
  however it is disguised, is never used; nor is a MIME heading's.
- A ``<base>`` where the HTML parser makes no base element of it is never used (and one the
  spec does use, in places that look inert, is).
- A resolved URL full of quotes, angle brackets, whitespace, parentheses, backslashes and
  ampersands is escaped for every place it can land: read back with html5lib (and
  :func:`rewriter.css.syntax.find_urls` for CSS), it is the intended URL, and nothing was injected.
- No test and no engine opens a network connection (the guard is in ``conftest.py``), the
  command line included; XHTML is read as HTML text: no entity is expanded, no file read.
- The command line never modifies its inputs without ``--in-place``, and ``--in-place``
  never follows a symbolic link out of the tree it was given.

Extends the trap tests of ``test_html.py`` (a ``<base>`` in a comment, script, template,
noscript, svg, textarea, style or math; a javascript:/data:/vbscript:/mailto: base; a URL with
quotes) without repeating them. Which placements count was checked against the HTML spec's
tree construction rules and Chromium 156 (``document.baseURI``, with tests/browser_relocation.py).
"""

from __future__ import annotations

import email
import email.policy
import email.quoprimime
import os
import re
import shutil
import socket
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import ada_url
import html5lib
import pytest
from conftest import NetworkAccessError, NetworkGuard, css_skeleton

from rewriter.css.stylesheet import rewrite_css
from rewriter.css.syntax import find_urls
from rewriter.html.engine import find_links, rewrite_html
from rewriter.mime.message import rewrite_message
from rewriter.policy import Policy

URL = "http://h/dir/page.html"
TESTS = Path(__file__).resolve().parent
ASCII_WHITESPACE = "\t\n\f\r "
BOTH_RULES = ["rfc3986", "whatwg"]


def rewrite(document: str, url: str | None = URL, rules: str = "rfc3986") -> tuple[str, tuple[str, ...], str | None]:
    """(output, problems, base) of the HTML engine on *document*."""
    result = rewrite_html(document.encode("utf-8"), url=url, policy=Policy(rules=rules))  # type: ignore[arg-type]
    return result.output.decode("utf-8"), result.problems, result.base


# --- opaque bases: never used ---------------------------------------------------------------

# Each is made visible: with a hierarchical-looking path ("/x/") a base that slipped through
# would change where "x" points. (Where a browser does take an opaque base, about:blank or
# mailto:, no relative URL resolves against it at all; the retrieval URL and a report are the
# project's answer.)
OPAQUE_BASES = [
    "javascript:alert(1)",
    "JAVASCRIPT:alert(1)",
    "javascript:/x/",
    "javascript://h/x/",
    " javascript:/x/",
    "\t\n\f\r javascript:/x/",
    "&#32;&#9;javascript:/x/",
    "data:text/html,x",
    "DaTa:/x/",
    "vbscript:/x/",
    "mailto:a@b",
    "about:blank",
    "blob:http://h/x/",
    "cid:part1@example.org",
]
# Browsers remove every tab and newline from a URL and strip leading C0 controls (URL
# Standard, basic URL parser), so these are javascript:, data: and vbscript: URLs to them;
# Chromium 156 ignores each javascript: and data: one (document.baseURI stays the document's URL).
DISGUISED = [
    "java\tscript:/x/",
    "java\nscript:/x/",
    "java\r\nscript:/x/",
    "jav&#x09;ascript:/x/",
    "\x01javascript:/x/",
    "da\nta:/x/",
    "vb\tscript:/x/",
]
# Disguised schemes: a browser's URL parser strips C0 controls and removes tabs and newlines
# before it reads the scheme, so each of these is the javascript:/data:/vbscript: it hides.


def _opaque_cases() -> list[object]:
    cases: list[object] = [
        pytest.param(href, rules, id=f"{rules}-{href!r}") for rules in BOTH_RULES for href in OPAQUE_BASES
    ]
    cases += [pytest.param(href, rules, id=f"{rules}-{href!r}") for rules in BOTH_RULES for href in DISGUISED]
    return cases


@pytest.mark.parametrize(("href", "rules"), _opaque_cases())
def test_opaque_base_is_never_used(href: str, rules: str) -> None:
    page = f'<base href="{href}"><a href=x>a</a><img src="y.png">'
    out, problems, base = rewrite(page, rules=rules)
    # The base element is left byte for byte; the links resolve against the retrieval URL.
    assert out == f'<base href="{href}"><a href=http://h/dir/x>a</a><img src="http://h/dir/y.png">'
    assert base == URL
    assert any("ignored" in problem for problem in problems), problems


@pytest.mark.parametrize("rules", BOTH_RULES)
def test_unusable_first_base_is_not_replaced_by_a_later_one(rules: str) -> None:
    # HTML "set the frozen base URL": only the first base with an href counts, usable or not.
    out, problems, base = rewrite('<base href="javascript:/x/"><base href="http://evil/"><a href=x>', rules=rules)
    assert out.endswith("<a href=http://h/dir/x>") and base == URL and problems


def test_opaque_base_inside_srcdoc_is_ignored_and_reported() -> None:
    out, problems, _ = rewrite('<iframe srcdoc="<base href=data:/x/><a href=y>"></iframe><a href=x>')
    assert out == '<iframe srcdoc="<base href=data:/x/><a href=http://h/dir/y>"></iframe><a href=http://h/dir/x>'
    assert any(problem.startswith("in srcdoc:") for problem in problems)


def _message(root_heading: str, part_heading: str) -> bytes:
    return (
        "MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=b\r\n"
        f"{root_heading}\r\n--b\r\nContent-Type: text/html\r\n{part_heading}\r\n"
        "<a href=x>l</a>\r\n--b--\r\n"
    ).encode()


OPAQUE_LOCATIONS = [
    "javascript:/x/",
    "JavaScript:alert(1)",
    "data:text/html,/x/",
    "vbscript:/x/",
    "mailto:a@b",
    "about:blank",
    "blob:http://h/x/",
    "cid:part1@example.org",
    "java\tscript:/x/",
    "java\r\n script:/x/",  # folded: RFC 2557 §4.4.3 removes the whitespace folding put inside
    "=?utf-8?q?javascript:/x/?=",
]


@pytest.mark.parametrize("where", ["root", "part"])
@pytest.mark.parametrize("field", ["Content-Location", "Content-Base", "Base"])
@pytest.mark.parametrize("value", OPAQUE_LOCATIONS)
@pytest.mark.parametrize("url", [None, "http://r/d/p.html"])
def test_opaque_mime_heading_gives_no_base(value: str, field: str, where: str, url: str | None) -> None:
    line = f"{field}: {f'<URL:{value}>' if field == 'Base' else value}\r\n"
    data = _message(line if where == "root" else "", line if where == "part" else "")
    result = rewrite_message(data, url=url)
    html = result.parts[-1]
    assert html.layer in (None, "retrieval-url"), html
    expected = b"<a href=http://r/d/x>l</a>" if url else b"<a href=x>l</a>"
    assert result.output == data.replace(b"<a href=x>l</a>", expected)


def test_encoded_word_in_a_base_heading_is_read_whole() -> None:
    data = b"Content-Type: text/html\r\nBase: <URL:=?utf-8?q?http://a/b/?=>\r\n\r\n<a href=x>l</a>"
    result = rewrite_message(data, url="http://r/d/")
    assert result.parts[0].base == "http://a/b/" and result.output.endswith(b"<a href=http://a/b/x>l</a>")


@pytest.mark.parametrize(
    "where",
    [
        "root",
        "part",
    ],
)
def test_unusable_content_base_is_reported(where: str) -> None:
    line = "Content-Base: javascript:/x/\r\n"
    result = rewrite_message(_message(line if where == "root" else "", line if where == "part" else ""), url=URL)
    assert any("Content-Base" in problem and "gives no base" in problem for problem in result.problems)


@pytest.mark.parametrize("url", [None, "http://r/d/p.html"])
@pytest.mark.parametrize("location", ["thismessage:/", "thismessage:/dir/page.html", "THISMESSAGE:/"])
def test_thismessage_location_is_never_written(location: str, url: str | None) -> None:
    data = _message(f"Content-Location: {location}\r\n", "")
    body = rewrite_message(data, url=url).output.split(b"Content-Type: text/html\r\n\r\n")[1]
    assert body in (b"<a href=x>l</a>\r\n--b--\r\n", b"<a href=http://r/d/x>l</a>\r\n--b--\r\n")


# --- where a <base> counts ---------------------------------------------------------------------

EVIL = '<base href="http://evil/">'
# Places where the parser makes no HTML base element of it: raw text, RCDATA, foreign
# content, comments and comment lookalikes, template contents (test_html.py has the others).
INERT = {
    "title": f"<title>{EVIL}</title>",
    "xmp": f"<xmp>{EVIL}</xmp>",
    "iframe-text": f"<iframe>{EVIL}</iframe>",
    "noembed": f"<noembed>{EVIL}</noembed>",
    "noframes": f"<noframes>{EVIL}</noframes>",
    "noscript-in-head": f"<head><noscript>{EVIL}</noscript></head>",  # scripting on: raw text
    "script-double-escaped": f"<script><!--<script>{EVIL}</script>--></script>",
    "svg-script": f"<svg><script>{EVIL}</script></svg>",
    "svg-style": f"<svg><style>{EVIL}</style></svg>",
    "svg-nested": f"<svg><g><a>{EVIL}</a></g></svg>",
    "svg-cdata": f"<svg><![CDATA[{EVIL}]]></svg>",
    "html-cdata": f"<![CDATA[{EVIL}]]>",
    "processing-instruction": f"<?xml-stylesheet {EVIL}?>",
    "doctype": f"<!DOCTYPE html {EVIL}>",
    "declarative-shadow-root": f"<div><template shadowrootmode=open>{EVIL}</template></div>",
    "nested-template": f"<template><div><template>{EVIL}</template></div></template>",
}


@pytest.mark.parametrize("decoy", INERT.values(), ids=INERT.keys())
def test_base_where_the_parser_makes_none_is_never_used(decoy: str) -> None:
    out, _, base = rewrite(f"{decoy}<a href=x></a>")
    assert base == URL
    assert out == f"{decoy}<a href=http://h/dir/x></a>"  # the decoy itself is never touched


def test_base_in_frameset_is_never_used() -> None:
    # "in frameset" insertion mode: a base start tag is a parse error, ignored.
    out, _, base = rewrite(f"<frameset>{EVIL}<frame src=f></frameset>")
    assert out == f"<frameset>{EVIL}<frame src=http://h/dir/f></frameset>" and base == URL


def test_base_in_plaintext_is_never_used() -> None:
    out, _, base = rewrite(f"<a href=x></a><plaintext>{EVIL}<a href=y>")
    assert out == f"<a href=http://h/dir/x></a><plaintext>{EVIL}<a href=y>" and base == URL


# Places that look inert but where the tree builder inserts an HTML base element, which the
# spec's "first base element with an href, in tree order" then takes; Chromium 156 agrees.
USED = {
    "svg-foreignObject": f"<svg><foreignObject>{EVIL}</foreignObject></svg>",  # HTML integration point
    "svg-desc": f"<svg><desc>{EVIL}</desc></svg>",
    "svg-title": f"<svg><title>{EVIL}</title></svg>",
    "math-mi": f"<math><mi>{EVIL}</mi></math>",  # MathML text integration point
    "math-mtext": f"<math><mtext>{EVIL}</mtext></math>",
    "annotation-xml-html": f"<math><annotation-xml encoding='text/html'>{EVIL}</annotation-xml></math>",
    "table-foster-parented": f"<table>{EVIL}</table>",
    "after-html-end": f"<p></p></body></html>{EVIL}",
    "downlevel-revealed-comment": f"<!--[if !IE]><!-->{EVIL}<!--<![endif]-->",
    "abrupt-empty-comment": f"<!-->{EVIL}",  # "<!-->" is a whole comment
    "comment-ended-by-bang": f"<!-- x --!>{EVIL}",
}


@pytest.mark.parametrize("decoy", USED.values(), ids=USED.keys())
def test_base_the_spec_inserts_is_used(decoy: str) -> None:
    out, _, base = rewrite(f"{decoy}<a href=x></a>")
    assert base == "http://evil/" and out.endswith("<a href=http://evil/x></a>")


def test_first_base_counts_for_links_before_it_and_a_second_never() -> None:
    # The document base URL is the first base element's, for every URL of the document.
    page = '<a href=x></a><template><base href="/t/"></template><base href="/b/"><base href="/c/"><a href=y>'
    out, _, base = rewrite(page)
    assert base == "http://h/b/"
    # Later base elements are plain links then: made absolute against the document's base.
    assert out.startswith("<a href=http://h/b/x></a>")
    assert out.endswith('<base href="http://h/b/"><base href="http://h/c/"><a href=http://h/b/y>')


def test_base_in_srcdoc_affects_only_the_srcdoc_document() -> None:
    page = '<base href="/outer/"><iframe srcdoc="<base href=inner/><a href=y>"></iframe><a href=x>'
    out, _, base = rewrite(page)
    # The srcdoc's fallback base is the parent's base (HTML "fallback base URL" for about:srcdoc).
    assert out == (
        '<base href="http://h/outer/"><iframe srcdoc="<base href=http://h/outer/inner/>'
        '<a href=http://h/outer/inner/y>"></iframe><a href=http://h/outer/x>'
    )
    assert base == "http://h/outer/"


def test_base_in_a_conditional_comment_is_never_used() -> None:
    out, _, base = rewrite('<!--[if IE]><base href="/evil/"><a href=y><![endif]--><a href=x>')
    assert base == URL and out.endswith("<a href=http://h/dir/x>")
    assert "<a href=http://h/dir/y>" in out


# --- escaping: a hostile resolved URL, wherever it lands ------------------------------------

# Every character that can end or break a value somewhere: quotes, angle brackets, ASCII
# whitespace, parentheses, a backslash, a character reference, a comment end, an end tag.
HOSTILE_BASE = "http://h/a\"b'c<d>e f)g(\\h&lt;i\tj\nk-->l</style><script>m/"


def _intended(rules: str) -> str:
    """What "x" resolves to against HOSTILE_BASE, worked out without the engine."""
    return HOSTILE_BASE + "x" if rules != "whatwg" else ada_url.join_url(HOSTILE_BASE, "x")


Node = tuple[str, dict[str, str], str]


# The whole tree: a comment before <html> (a conditional comment, often) is a child of the document.
_PARSER = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree", fullTree=True), namespaceHTMLElements=False)


def _tree(markup: str) -> list[Node]:
    """Every element and comment html5lib builds: (local name or "#comment", attributes, text)."""
    nodes: list[Node] = []
    for node in _PARSER.parse(markup).iter():
        if not isinstance(node.tag, str):  # ElementTree's Comment factory
            nodes.append(("#comment", {}, node.text or ""))
            continue
        attributes = {name.rpartition("}")[2]: value for name, value in node.attrib.items()}
        nodes.append((node.tag.rpartition("}")[2], attributes, node.text or ""))
    return nodes


def _shape(nodes: list[Node]) -> list[tuple[str, list[str]]]:
    return [(name, sorted(attributes)) for name, attributes, _ in nodes]


def _srcset(value: str) -> list[str]:
    """The URLs of a srcset (HTML "parse a srcset attribute", descriptors skipped)."""
    urls: list[str] = []
    position, end = 0, len(value)
    while True:
        while position < end and (value[position] in ASCII_WHITESPACE or value[position] == ","):
            position += 1
        if position >= end:
            return urls
        start = position
        while position < end and value[position] not in ASCII_WHITESPACE:
            position += 1
        url = value[start:position]
        if url.endswith(","):
            urls.append(url.rstrip(","))
            continue
        urls.append(url)
        in_parens = False
        while position < end and (in_parens or value[position] != ","):
            in_parens = (in_parens or value[position] == "(") and value[position] != ")"
            position += 1
        position += 1


def _refresh(content: str) -> str | None:
    """The URL of a meta refresh (HTML "shared declarative refresh steps")."""
    match = re.match(r"[\t\n\f\r ]*[0-9]*(?:(?<=[0-9])|(?=\.))[0-9.]*", content)
    if match is None:
        return None
    position = match.end()
    rest = content[position:]
    if rest and rest[0] not in ASCII_WHITESPACE + ";,":
        return None
    rest = re.sub(r"^[\t\n\f\r ]*[;,]?[\t\n\f\r ]*", "", rest)
    if not rest:
        return None
    labelled = re.match(r"[Uu][Rr][Ll][\t\n\f\r ]*=[\t\n\f\r ]*", rest)
    if labelled is None and rest[:1] in ("u", "U"):
        return rest  # "u" not followed by "rl=": the URL is all of it
    if labelled is not None:
        rest = rest[labelled.end() :]
    if rest[:1] in ("'", '"'):
        rest = rest[1:].split(rest[0], 1)[0]
    return rest


def _css_values(text: str) -> list[str]:
    return [url.value for url in find_urls(text)]


def _attribute(tag: str, name: str) -> Callable[[list[Node]], list[str]]:
    return lambda nodes: [attributes[name] for node, attributes, _ in nodes if node == tag and name in attributes]


def _tokens(value: str) -> list[str]:
    """The tokens of a space-separated list: split on ASCII whitespace only."""
    return [token for token in re.split(r"[\t\n\f\r ]+", value) if token]


def _hrefs(nodes: list[Node]) -> list[str]:
    return _attribute("a", "href")(nodes)


def _srcset_urls(nodes: list[Node]) -> list[str]:
    return [url for value in _attribute("img", "srcset")(nodes) for url in _srcset(value)]


def _ping_urls(nodes: list[Node]) -> list[str]:
    return [url for value in _attribute("a", "ping")(nodes) for url in _tokens(value)]


def _refresh_urls(nodes: list[Node]) -> list[str]:
    return [_refresh(value) or "" for value in _attribute("meta", "content")(nodes)]


def _styles(nodes: list[Node]) -> list[str]:
    return [text for node, _, text in nodes if node == "style"]


def _style_attributes(nodes: list[Node]) -> list[str]:
    return [attributes["style"] for _, attributes, _ in nodes if "style" in attributes]


def _style_attribute_urls(nodes: list[Node]) -> list[str]:
    return [url for text in _style_attributes(nodes) for url in _css_values(text)]


def _style_element_urls(nodes: list[Node]) -> list[str]:
    return [url for text in _styles(nodes) for url in _css_values(text)]


def _srcdoc_urls(nodes: list[Node]) -> list[str]:
    """The URLs of the documents in srcdoc attributes, read back twice (two escapings)."""
    inner = [_tree(document) for document in _attribute("iframe", "srcdoc")(nodes)]
    return [url for tree in inner for url in _hrefs(tree) + _style_attribute_urls(tree) + _style_element_urls(tree)]


def _conditional_documents(nodes: list[Node]) -> list[list[Node]]:
    return [
        _tree(text.removeprefix("[if IE]>").removesuffix("<![endif]"))
        for node, _, text in nodes
        if node == "#comment" and text.startswith("[if IE]>")
    ]


def _conditional_urls(nodes: list[Node]) -> list[str]:
    return [url for tree in _conditional_documents(nodes) for url in _hrefs(tree)]


def _deep_shape(nodes: list[Node]) -> list[object]:
    """The shape of a tree and of the documents nested in it (srcdoc, conditional comments)."""
    nested = [_tree(document) for document in _attribute("iframe", "srcdoc")(nodes)]
    return [_shape(nodes), *[_shape(tree) for tree in nested + _conditional_documents(nodes)]]


def _percent(characters: str) -> Callable[[str], str]:
    return lambda url: re.sub(f"[{re.escape(characters)}]", lambda m: f"%{ord(m.group()):02X}", url)


def _same(url: str) -> str:
    return url


TOKEN = _percent(ASCII_WHITESPACE)  # a srcset or ping token holds no whitespace: the browser's %20
Reader = Callable[[list[Node]], list[str]]

# name: (document, where its URLs are read back, its CSS texts (compared outside the URLs),
# the form the URL must take there: the URL itself but where the microsyntax cannot hold a
# character: whitespace in a token, a quoted refresh URL's own quote).
ESCAPING: dict[str, tuple[str, Reader, Reader | None, Callable[[str], str]]] = {
    "double-quoted": ('<a href="x">', _hrefs, None, _same),
    "single-quoted": ("<a href='x'>", _hrefs, None, _same),
    "unquoted": ("<a href=x title=t>", _hrefs, None, _same),
    "unquoted-last": ("<img src=x>", _attribute("img", "src"), None, _same),
    "srcset": ('<img srcset="x 1x, x (a, b) 2x,x">', _srcset_urls, None, TOKEN),
    "srcset-unquoted": ("<img srcset=x>", _srcset_urls, None, TOKEN),
    "ping": ('<a ping="x  x">', _ping_urls, None, TOKEN),
    "ping-unquoted": ("<a ping=x>", _ping_urls, None, TOKEN),
    "refresh": ('<meta http-equiv=refresh content="0; url=x">', _refresh_urls, None, _same),
    "refresh-unquoted": ("<meta http-equiv=refresh content=0;URL=x>", _refresh_urls, None, _same),
    "refresh-no-label": ('<meta http-equiv=refresh content="5, x">', _refresh_urls, None, _same),
    "refresh-quoted-url": ("<meta http-equiv=refresh content=\"0;url='x'\">", _refresh_urls, None, _percent("'")),
    "refresh-double-quoted-url": (
        "<meta http-equiv=refresh content='0; URL = \"x\"'>",
        _refresh_urls,
        None,
        _percent('"'),
    ),
    "style-url-unquoted": ('<p style="background:url(x)">', _style_attribute_urls, _style_attributes, _same),
    "style-url-single": ("<p style=\"background:url('x')\">", _style_attribute_urls, _style_attributes, _same),
    "style-url-double": ("<p style='background:url(\"x\")'>", _style_attribute_urls, _style_attributes, _same),
    "style-attribute-unquoted": ("<p style=background:url(x)>", _style_attribute_urls, _style_attributes, _same),
    "style-element": (
        "<style>p{background:url(x)} q{b:url('x')} r{b:url(\"x\")} @import 'x'; @import \"x\" screen;</style><p>after",
        _style_element_urls,
        _styles,
        _same,
    ),
    "svg-style": (
        "<svg><style>p{background:url(x)} q{b:url('x')} @import \"x\";</style></svg><p>after",
        _style_element_urls,
        _styles,
        _same,
    ),
    "srcdoc": (
        "<iframe srcdoc=\"<a href=x></a><a href=&quot;x&quot;></a><a href='x'></a>\"></iframe>",
        _srcdoc_urls,
        None,
        _same,
    ),
    "srcdoc-single-quoted": (
        "<iframe srcdoc='<a href=x></a><a href=\"x\"></a><a href=&#39;x&#39;></a>'></iframe>",
        _srcdoc_urls,
        None,
        _same,
    ),
    "srcdoc-unquoted": ("<iframe srcdoc=<a&#32;href=x&#62;a&lt;/a&#62;></iframe>", _srcdoc_urls, None, _same),
    "srcdoc-css": (
        "<iframe srcdoc=\"<style>p{b:url(x)}</style><p style=&quot;b:url('x')&quot;>\"></iframe>",
        _srcdoc_urls,
        None,
        _same,
    ),
    "conditional-comment": (
        '<!--[if IE]><a href="x">ie</a><a href=x>ie</a><![endif]--><p>after',
        _conditional_urls,
        None,
        # Inside a comment a ">" could end it: it is percent-encoded, as browsers do in a URL's path.
        lambda url: url.replace(">", "%3E"),
    ),
}


def _escaping_cases() -> list[object]:
    cases: list[object] = []
    for rules in BOTH_RULES:
        for name in ESCAPING:
            cases.append(pytest.param(rules, name, id=f"{rules}-{name}"))
    return cases


@pytest.mark.parametrize(("rules", "name"), _escaping_cases())
def test_hostile_resolved_url_is_escaped_for_where_it_lands(rules: str, name: str) -> None:
    document, read_back, css_texts, form = ESCAPING[name]
    result = rewrite_html(document.encode("utf-8"), url=HOSTILE_BASE, policy=Policy(rules=rules))  # type: ignore[arg-type]
    intended = _intended(rules)
    assert {link.resolved for link in result.links} == {intended}
    output = result.output.decode("utf-8")
    before, after = _tree(document), _tree(output)
    assert _deep_shape(after) == _deep_shape(before), "an element, attribute or comment was added or lost"
    urls = read_back(after)
    assert urls and urls == [form(intended)] * len(read_back(before))
    if css_texts is not None:
        assert [css_skeleton(text) for text in css_texts(after)] == [css_skeleton(text) for text in css_texts(before)]


# A hostile reference: (document, the references as the document means them, reader, form).
HOSTILE_REFERENCES = {
    "character-references": (
        '<a href="a&quot;b\'c&lt;d&gt;e&#9;f&#10;g)h\\i&amp;lt;-->j">',
        ["a\"b'c<d>e\tf\ng)h\\i&lt;-->j"],
        _hrefs,
        _same,
    ),
    "single-quoted": ("<a href='a&#39;b\"c'>", ["a'b\"c"], _hrefs, _same),
    "unquoted": ("<a href=a&#32;b&#34;c>", ['a b"c'], _hrefs, _same),
    "css-escapes": (
        "<p style=\"background:url('a\\'b&quot;c)d')\">",
        ["a'b\"c)d"],
        _style_attribute_urls,
        _same,
    ),
    "css-unquoted-escapes": (
        '<p style="background:url(a\\)b\\20 c\\3c/style\\3e)">',
        ["a)b c</style>"],
        _style_attribute_urls,
        _same,
    ),
    "style-end-tag": (
        '<style>p{background:url("a\\"b<\\/style>c")} q{b:url(a\\3c/style\\3e)}</style><p>after',
        ['a"b</style>c', "a</style>"],
        _style_element_urls,
        _same,
    ),
    "refresh": ("<meta http-equiv=refresh content=\"0;url='a&quot;b'\">", ['a"b'], _refresh_urls, _percent("'")),
    "conditional-comment": ('<!--[if IE]><a href="a&#45;->b"><![endif]-->', ["a-->b"], _conditional_urls, _same),
    "srcdoc": (
        '<iframe srcdoc="<a href=&quot;a&amp;quot;b&amp;lt;/iframe&amp;gt;&quot;>"></iframe>',
        ['a"b</iframe>'],
        _srcdoc_urls,
        _same,
    ),
}


@pytest.mark.parametrize("rules", BOTH_RULES)
@pytest.mark.parametrize("name", HOSTILE_REFERENCES)
def test_hostile_reference_is_escaped_for_where_it_lands(name: str, rules: str) -> None:
    document, references, read_back, form = HOSTILE_REFERENCES[name]
    result = rewrite_html(document.encode("utf-8"), url=URL, policy=Policy(rules=rules))  # type: ignore[arg-type]
    join: Callable[[str], str] = (lambda r: ada_url.join_url(URL, r)) if rules == "whatwg" else "http://h/dir/".__add__
    assert read_back(_tree(document)) == [form(reference) for reference in references]  # the case reads as meant
    output = result.output.decode("utf-8")
    assert _deep_shape(_tree(output)) == _deep_shape(_tree(document))
    assert read_back(_tree(output)) == [form(join(reference)) for reference in references]


@pytest.mark.parametrize("quote", ["", "'", '"'])
def test_end_tag_in_a_url_never_closes_the_style_element(quote: str) -> None:
    base = "http://h/</style><script>alert(1)</script><style>/"
    string = quote or "'"
    page = "<style>p{background:url(" + quote + "x" + quote + ")} @import " + string + "y" + string + ";</style><p>a"
    for rules in BOTH_RULES:
        output = rewrite_html(page.encode(), url=base, policy=Policy(rules=rules)).output.decode()  # type: ignore[arg-type]
        assert "</style" not in output.split("<style>", 1)[1].rsplit("</style>", 1)[0]
        styles = _styles(_tree(output))
        intended = (
            [ada_url.join_url(base, "x"), ada_url.join_url(base, "y")]
            if rules == "whatwg"
            else [base + "x", base + "y"]
        )
        assert len(styles) == 1 and _css_values(styles[0]) == intended
        assert "script" not in [node for node, _, _ in _tree(output)]


def test_quoted_printable_part_decodes_to_the_intended_url() -> None:
    body = (
        "<p>long enough to be soft-wrapped: " + "w " * 40 + '</p><a href="x">a</a><img srcset="x 1x">'
        '<p style="background:url(x)">\r\n'
    )
    encoded = email.quoprimime.body_encode(body, maxlinelen=76, eol="\r\n").encode()
    data = (
        b"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b\r\n\r\n"
        b"--b\r\nContent-Type: text/plain\r\n\r\nplain\r\n"
        b"--b\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
        + encoded
        + b"--b--\r\n"
    )
    base = HOSTILE_BASE + "=3D=\u00e9/"  # "=", a line break and non-ASCII: QP escapes them
    result = rewrite_message(data, url=base)
    message = email.message_from_bytes(result.output, policy=email.policy.compat32)
    parts = message.get_payload()
    assert [part.get_content_type() for part in parts] == ["text/plain", "text/html"]  # type: ignore[union-attr]
    html_part = parts[1]  # type: ignore[index]
    start = result.output.index(b"quoted-printable\r\n\r\n") + 20
    assert all(len(line) <= 76 for line in result.output[start:].split(b"\r\n")), "RFC 2045 §6.7: 76 at most"
    nodes = _tree(html_part.get_payload(decode=True).decode("utf-8"))
    intended = base + "x"
    assert (_hrefs(nodes), _srcset_urls(nodes), _style_attribute_urls(nodes)) == (
        [intended],
        [TOKEN(intended)],
        [intended],
    )


@pytest.mark.parametrize("encoding", ["8bit", "quoted-printable"])
def test_url_that_would_forge_a_delimiter_line_is_not_written(encoding: str) -> None:
    data = (
        b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/html\r\n"
        b"Content-Transfer-Encoding: " + encoding.encode() + b"\r\n\r\n<a href=x>x</a>\r\n--b--\r\n"
    )
    result = rewrite_message(data, url="http://h/a\r\n--b--\r\n/")
    assert result.output == data and result.problems
    assert len(email.message_from_bytes(result.output).get_payload()) == 1  # type: ignore[arg-type]


# --- no network --------------------------------------------------------------------------------


def test_guard_refuses_a_connection_at_once(network_guard: NetworkGuard) -> None:
    before = len(network_guard.attempts)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        with pytest.raises(NetworkAccessError):
            sock.connect(("203.0.113.1", 80))
        with pytest.raises(NetworkAccessError):
            sock.connect_ex(("203.0.113.1", 80))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, pytest.raises(NetworkAccessError):
        udp.sendto(b"x", ("203.0.113.1", 53))
    with pytest.raises(NetworkAccessError):
        socket.create_connection(("203.0.113.1", 80), timeout=5)
    with pytest.raises(NetworkAccessError):
        socket.getaddrinfo("example.org", 80)
    with pytest.raises(NetworkAccessError):
        socket.gethostbyname("example.org")
    assert len(network_guard.attempts) - before == 6  # each refused by the guard, before the real call
    del network_guard.attempts[before:]  # refused on purpose: not this test's failure


def test_guard_refuses_loopback_too_and_leaves_unix_sockets_alone(network_guard: NetworkGuard) -> None:
    before = len(network_guard.attempts)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with pytest.raises(NetworkAccessError):
            socket.create_connection(server.getsockname(), timeout=5)
    assert len(network_guard.attempts) == before + 1
    del network_guard.attempts[before:]
    # AF_UNIX is local IPC, not the network: asyncio's self-pipe (Playwright's loop) is one.
    left, right = socket.socketpair()
    with left, right:
        left.sendall(b"x")
        assert right.recv(1) == b"x"


def test_guard_option_for_loopback_lets_only_this_machine_through() -> None:
    # For a harness that may need a loopback WebSocket one day; check() alone, nothing installed.
    guard = NetworkGuard(allow_loopback=True)
    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1", "localhost", "a.localhost", b"::1"):
        guard.check("connect", host, host)
    for host in ("203.0.113.1", "0.0.0.0", "::", "example.org", "localhost.example.org", "", None):
        with pytest.raises(NetworkAccessError):
            guard.check("connect", host, host)
    assert len(guard.loopback) == 8 and len(guard.attempts) == 7


RICH_PAGE = (
    "<!-- saved from url=(0023)https://example.org/a/ -->\n"
    '<html manifest="m.appcache"><head><base href="https://203.0.113.1/docs/">'
    '<link rel=stylesheet href="http://203.0.113.2/abs.css"><link rel=stylesheet href="rel.css">'
    "<style>@import url(http://203.0.113.3/i.css); @import 'j.css'; p{background:url(//203.0.113.4/b.png)}</style>"
    '<meta http-equiv=refresh content="5; url=http://203.0.113.5/next"></head><body>'
    '<a href="http://203.0.113.6/">a</a><a href="/x">x</a><a href="https://[::1]:9/">v6</a><a href="http://localhost/">l</a>'
    '<img src="//203.0.113.7/i.png" srcset="a.png 1x, http://203.0.113.8/b.png 2x">'
    '<iframe src="http://203.0.113.9/f" srcdoc="<img src=http://203.0.113.10/s.png>"></iframe>'
    '<object data="http://203.0.113.11/o.swf" codebase="http://203.0.113.12/"></object>'
    '<svg><image xlink:href="http://203.0.113.13/s.svg"/></svg><form action="ftp://203.0.113.14/f"></form>'
    "</body></html>"
)
RICH_MESSAGE = (
    b"MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=b\r\n"
    b"Content-Location: http://203.0.113.15/m/\r\n\r\n"
    b"--b\r\nContent-Type: text/html\r\n\r\n" + RICH_PAGE.encode() + b"\r\n"
    b"--b\r\nContent-Type: text/css\r\nContent-Location: https://203.0.113.16/s.css\r\n\r\n"
    b"@import 'http://203.0.113.17/x.css'; a{b:url(c.png)}\r\n--b--\r\n"
)


def test_engines_open_no_connection(network_guard: NetworkGuard) -> None:
    attempts = len(network_guard.attempts)
    for rules in ("rfc1808", "rfc2396", "rfc3986", "whatwg"):
        policy = Policy(rules=rules, canonical_base=True)  # type: ignore[arg-type]
        assert rewrite_html(RICH_PAGE.encode(), url="http://203.0.113.20/p", policy=policy).output != RICH_PAGE.encode()
        assert find_links(RICH_PAGE.encode(), policy=policy).links  # built lazily: ask for them
        rewrite_css(b"@import 'http://203.0.113.18/a.css'; a{b:url(//203.0.113.19/c)}", url="https://h/", policy=policy)
        assert rewrite_message(RICH_MESSAGE, policy=policy).output != RICH_MESSAGE
    assert network_guard.attempts[attempts:] == []


SITECUSTOMIZE = '''\
"""Written by tests/test_hostile.py: the test suite's network guard, in a child process."""

import os
import sys

sys.path.insert(0, {tests!r})
try:
    from conftest import NetworkGuard
finally:
    sys.path.remove({tests!r})
NetworkGuard(allow_loopback=False, log=os.environ["HOSTILE_NETWORK_LOG"]).install()

_WATCHED = tuple(os.environ.get("HOSTILE_WATCHED_FILES", "").split(os.pathsep))
_OPENS = os.environ["HOSTILE_OPEN_LOG"]


def _audit(event, args):
    # Every open of a watched file, as Python sees it (open(), io, os.open).
    path = args[0] if event in ("open", "os.open") and args else None
    if _WATCHED[0] and isinstance(path, str) and path.endswith(_WATCHED):
        with os.fdopen(os.open(_OPENS, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a") as stream:
            stream.write(path + "\\n")


sys.addaudithook(_audit)
'''


class Guarded:
    """Runs Python in a child process with the network guard installed by ``sitecustomize``."""

    def __init__(self, folder: Path, watched: tuple[str, ...] = ()) -> None:
        site = folder / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(tests=str(TESTS)))
        self.network_log = folder / "network.log"
        self.open_log = folder / "open.log"
        self.env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])),
            "PYTHONDONTWRITEBYTECODE": "1",  # importing conftest must leave tests/ as it is
            "HOSTILE_NETWORK_LOG": str(self.network_log),
            "HOSTILE_OPEN_LOG": str(self.open_log),
            "HOSTILE_WATCHED_FILES": os.pathsep.join(watched),
        }

    def run(self, *argv: str, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, *argv], cwd=cwd, env=self.env, input=stdin, capture_output=True, timeout=60
        )

    def attempts(self) -> list[str]:
        return self.network_log.read_text().splitlines() if self.network_log.exists() else []

    def opens(self) -> list[str]:
        return self.open_log.read_text().splitlines() if self.open_log.exists() else []


def _corpus(folder: Path) -> Path:
    """A small tree of every input kind, full of links to other machines."""
    tree = folder / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "page.html").write_text(RICH_PAGE)
    (tree / "sub" / "other.htm").write_text('<a href="../page.html">up</a><img src="http://203.0.113.30/x.png">')
    (tree / "style.css").write_text("@import 'http://203.0.113.31/a.css'; a{b:url(c.png)}")
    (tree / "mail.eml").write_bytes(RICH_MESSAGE)
    (tree / "box.mbox").write_bytes(b"From a@b Thu Jan  1 00:00:00 1970\r\n" + RICH_MESSAGE + b"\r\n")
    return tree


def test_command_line_opens_no_connection(tmp_path: Path) -> None:
    guarded = Guarded(tmp_path)
    # The guard is live in the child: a connection there is refused and recorded.
    probe = guarded.run("-c", "import socket; socket.create_connection(('203.0.113.1', 80), timeout=5)", cwd=tmp_path)
    assert probe.returncode != 0 and b"NetworkAccessError" in probe.stderr
    assert guarded.attempts() == ["create_connection(('203.0.113.1', 80))"]
    guarded.network_log.unlink()

    tree = _corpus(tmp_path)
    runs = [
        ("rewrite", str(tree), "-o", str(tmp_path / "out1"), "-q", "-j", "1"),
        ("rewrite", str(tree), "-o", str(tmp_path / "out2"), "-q", "-j", "2", "--rules", "whatwg"),  # forked workers
        ("rewrite", str(tree / "page.html"), "--url", "http://203.0.113.40/p"),
        ("rewrite", "-", "--url", "https://203.0.113.41/"),
        ("links", str(tree / "mail.eml"), "--json"),
        ("explain", str(tree / "mail.eml"), "--url", "http://203.0.113.42/"),
        ("resolve", "http://203.0.113.43/a/b", "../c", "--rules", "whatwg"),
    ]
    for argv in runs:
        done = guarded.run("-m", "rewriter", *argv, cwd=tmp_path, stdin=RICH_PAGE.encode())
        assert b"NetworkAccessError" not in done.stderr, (argv, done.stderr)
        assert done.returncode in (0, 1), (argv, done.stderr)
    assert guarded.attempts() == []


def test_command_line_system_calls_show_no_connection(tmp_path: Path) -> None:
    """What the Python-level guard cannot see (a C library's own sockets), the kernel can."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed")
    trace = tmp_path / "trace.log"
    tree = _corpus(tmp_path)
    command = [strace, "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-e", "signal=none"]
    rewriter = [sys.executable, "-m", "rewriter", "rewrite", str(tree), "-o", str(tmp_path / "o"), "-q", "-j", "2"]
    done = subprocess.run(
        [*command, "-o", str(trace), *rewriter, "--url", "http://203.0.113.50/"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    if done.returncode != 0 and b"ptrace" in done.stderr.lower():
        pytest.skip(f"strace cannot trace here: {done.stderr.decode(errors='replace').strip()}")
    assert done.returncode == 0, done.stderr
    calls = trace.read_text().splitlines()
    assert [call for call in calls if "AF_INET" in call] == []  # AF_INET and AF_INET6


# --- XHTML and XML: read as HTML text -------------------------------------------------------------


def test_rewriter_parses_no_xml() -> None:
    """The premise of the next tests. Should XML parsing ever come in, it must have entity
    expansion, DTD loading and network access off (lxml: resolve_entities=False, load_dtd=False,
    no_network=True; or defusedxml)."""
    pattern = re.compile(r"^\s*(?:import|from)\s+(?:lxml|xml|defusedxml)\b|XMLParser|ParserCreate|parse_xml", re.M)
    package = Path(__file__).resolve().parents[1] / "rewriter"
    found = {path.name: pattern.findall(path.read_text()) for path in package.glob("*.py")}
    assert {name: hits for name, hits in found.items() if hits} == {}


def _xhtml(secret: Path) -> str:
    """XHTML with a DOCTYPE that declares external entities (a file, the network, a remote DTD)
    and a billion laughs (lol9: 10**9 "lol"), and uses them in text and in a link."""
    laughs = "".join(f'  <!ENTITY lol{n} "{f"&lol{n - 1};" * 10}">\n' for n in range(1, 10))
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://203.0.113.60/xhtml1-strict.dtd" [\n'
        '  <!ENTITY xxe SYSTEM "file:///etc/passwd">\n'
        f'  <!ENTITY secret SYSTEM "file://{secret}">\n'
        '  <!ENTITY net SYSTEM "http://203.0.113.61/entity">\n'
        '  <!ENTITY % remote SYSTEM "http://203.0.113.62/evil.dtd">\n'
        "  %remote;\n"
        '  <!ENTITY lol0 "lol">\n' + laughs + "]>\n"
        '<html xmlns="http://www.w3.org/1999/xhtml"><head><base href="sub/"/><title>&lol9;</title>\n'
        '<link rel="stylesheet" href="s.css"/><style>@import "i.css";</style></head>\n'
        "<body><p>&xxe; &secret; &net; &lol9;</p><a href=\"&secret;x\">x</a><a href='p.html'>p</a>\n"
        '<img src="http://203.0.113.63/abs.png"/></body></html>\n'
    )


def _expected_xhtml(document: str, url_folder: str) -> str:
    """*document* with only its link values made absolute: entities stay as written, the
    internal subset is text, the DOCTYPE's system identifier is no link."""
    base = url_folder + "sub/"
    for old, new in [
        ('href="sub/"', f'href="{base}"'),
        ('href="s.css"', f'href="{base}s.css"'),
        ('@import "i.css"', f'@import "{base}i.css"'),
        ('href="&secret;x"', f'href="{base}&secret;x"'),
        ("href='p.html'", f"href='{base}p.html'"),
    ]:
        assert document.count(old) == 1
        document = document.replace(old, new)
    return document


def test_xhtml_entities_are_never_expanded_nor_fetched(tmp_path: Path, network_guard: NetworkGuard) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    document = _xhtml(secret)
    attempts = len(network_guard.attempts)
    tracemalloc.start()
    try:
        result = rewrite_html(document.encode(), url="http://h/d/page.xhtml")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # A billion laughs must cost nothing: nothing is expanded (one level alone is 3 GB of "lol").
    assert peak < 100 * len(document), f"{peak} bytes allocated for a {len(document)}-byte page"
    output = result.output.decode()
    assert output == _expected_xhtml(document, "http://h/d/")
    assert "TOP-SECRET" not in output and "root:" not in output
    assert network_guard.attempts[attempts:] == []
    # The entity reference in the attribute is HTML text: an unknown named reference, kept.
    assert "http://h/d/sub/&secret;x" in [link.original for link in find_links(result.output).links]


def test_xhtml_through_the_command_line_reads_no_entity(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    page = tmp_path / "page.xhtml"
    page.write_text(_xhtml(secret))
    guarded = Guarded(tmp_path, watched=(str(secret), "/etc/passwd"))
    done = guarded.run("-m", "rewriter", "rewrite", str(page), "--url", "http://h/d/page.xhtml", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == _expected_xhtml(page.read_text(), "http://h/d/")
    assert guarded.attempts() == [] and guarded.opens() == []
    # The audit hook does see an open of a watched file (so silence above means something).
    probe = guarded.run("-c", f"open({str(secret)!r}).close()", cwd=tmp_path)
    assert probe.returncode == 0 and guarded.opens() == [str(secret)]


# --- data safety -------------------------------------------------------------------------------

PAST = 1_000_000_000_000_000_000  # 2001-09-09 in ns: a rewrite would show as a newer time


def _snapshot(*roots: Path) -> dict[str, tuple[object, ...]]:
    """Every entry under *roots*, not following links: kind, bytes or target, times, inode."""
    entries: dict[str, tuple[object, ...]] = {}
    for root in roots:
        for path in sorted([root, *root.rglob("*")]):
            status = path.lstat()
            if path.is_symlink():
                entries[str(path)] = ("link", os.readlink(path), status.st_mtime_ns, status.st_ino)
            elif path.is_dir():
                entries[str(path)] = ("dir", status.st_mtime_ns, status.st_ino)
            else:
                entries[str(path)] = ("file", path.read_bytes(), status.st_mtime_ns, status.st_ino, status.st_mode)
    return entries


def _age(*roots: Path) -> None:
    for root in roots:
        for path in [root, *root.rglob("*")]:
            os.utime(path, ns=(PAST, PAST), follow_symlinks=False)


def _cli(tmp_path: Path, *argv: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "rewriter", *argv], cwd=tmp_path, input=stdin, capture_output=True, timeout=60
    )


def test_inputs_are_never_modified_without_in_place(tmp_path: Path) -> None:
    tree = _corpus(tmp_path)
    (tree / "alias.html").symlink_to("page.html")
    _age(tree)
    before = _snapshot(tree)
    runs = [
        ("rewrite", str(tree), "-o", str(tmp_path / "out"), "--url", "http://h/", "-q"),
        ("rewrite", str(tree), "-o", str(tmp_path / "out-j"), "--url", "http://h/", "-q", "-j", "2"),
        ("rewrite", str(tree / "page.html"), "--url", "http://h/"),  # to standard output
        ("rewrite", str(tree / "page.html"), "-o", "-", "--url", "http://h/"),
        ("rewrite", str(tree / "box.mbox"), "--url", "http://h/"),  # streamed to standard output
        ("rewrite", str(tree / "page.html"), "-o", str(tmp_path / "one.html"), "--url", "http://h/"),
        ("rewrite", str(tree / "mail.eml"), str(tree / "style.css"), "-o", str(tmp_path / "two"), "--url", "http://h/"),
        ("links", str(tree / "page.html"), "--url", "http://h/"),
        ("explain", str(tree / "mail.eml")),
    ]
    for argv in runs:
        done = _cli(tmp_path, *argv)
        assert done.returncode in (0, 1), (argv, done.stderr)
        assert _snapshot(tree) == before, argv
    assert b"https://203.0.113.1/docs/rel.css" in (tmp_path / "out" / "page.html").read_bytes()  # written elsewhere


@pytest.mark.parametrize("same", ["file", "folder"])
def test_output_that_is_the_input_is_not_written_without_in_place(tmp_path: Path, same: str) -> None:
    tree = _corpus(tmp_path)
    before = _snapshot(tree)
    target = tree / "page.html" if same == "file" else tree
    _cli(tmp_path, "rewrite", str(target), "-o", str(target), "--url", "http://h/", "-q")
    assert _snapshot(tree) == before


def _tree_with_links(tmp_path: Path) -> tuple[Path, Path]:
    """A tree with links to a file and a folder outside it, one inside, and a hard link out."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "sub").mkdir(parents=True)
    (outside / "dir").mkdir(parents=True)
    (outside / "victim.html").write_text("<a href=v>outside</a>")
    (outside / "dir" / "inner.html").write_text("<a href=i>outside</a>")
    (outside / "hard.html").write_text("<a href=h>outside</a>")
    (tree / "page.html").write_text("<a href=p>in</a>")
    (tree / "sub" / "deep.html").write_text("<a href=d>in</a>")
    (tree / "out-file.html").symlink_to(outside / "victim.html")
    (tree / "out-dir").symlink_to(outside / "dir", target_is_directory=True)
    (tree / "rel-out.html").symlink_to(Path("..") / "outside" / "victim.html")
    (tree / "through-dir.html").symlink_to(Path("out-dir") / "inner.html")
    (tree / "in-link.html").symlink_to("page.html")
    (tree / "sub" / "up-link.html").symlink_to(Path("..") / "page.html")
    os.link(outside / "hard.html", tree / "hard.html")
    _age(tree, outside)
    return tree, outside


@pytest.mark.parametrize("backup", [None, ".orig"])
def test_in_place_never_follows_a_link_out_of_the_tree(tmp_path: Path, backup: str | None) -> None:
    tree, outside = _tree_with_links(tmp_path)
    outside_before = _snapshot(outside)
    links_before = {str(path): os.readlink(path) for path in tree.rglob("*") if path.is_symlink()}
    argv = ["rewrite", str(tree), "--in-place", "--url", "http://h/d/", "-q"] + (["--backup", backup] if backup else [])
    done = _cli(tmp_path, *argv)
    assert done.returncode == 0, done.stderr
    assert _snapshot(outside) == outside_before  # a hard link out is replaced by rename, never written through
    assert {str(path): os.readlink(path) for path in tree.rglob("*") if path.is_symlink()} == links_before
    assert (tree / "page.html").read_text() == "<a href=http://h/d/p>in</a>"  # once, through no link
    assert (tree / "sub" / "deep.html").read_text() == "<a href=http://h/d/d>in</a>"
    assert (tree / "hard.html").read_text() == "<a href=http://h/d/h>outside</a>"
    assert (outside / "hard.html").read_text() == "<a href=h>outside</a>"


def test_in_place_refuses_a_link_named_on_the_command_line(tmp_path: Path) -> None:
    tree, outside = _tree_with_links(tmp_path)
    outside_before = _snapshot(outside)
    done = _cli(tmp_path, "rewrite", str(tree / "out-file.html"), "--in-place", "--url", "http://h/d/")
    assert done.returncode == 1 and b"symbolic link" in done.stderr
    assert _snapshot(outside) == outside_before and (tree / "out-file.html").is_symlink()


def test_output_folder_link_is_replaced_not_written_through(tmp_path: Path) -> None:
    tree, outside = _tree_with_links(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "page.html").symlink_to(outside / "victim.html")
    outside_before = _snapshot(outside)
    done = _cli(tmp_path, "rewrite", str(tree), "-o", str(out), "--url", "http://h/d/", "-q")
    assert done.returncode == 0, done.stderr
    assert _snapshot(outside) == outside_before
    assert not (out / "page.html").is_symlink() and (out / "page.html").read_text() == "<a href=http://h/d/p>in</a>"
