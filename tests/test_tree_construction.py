"""Base selection and links over tree-construction inputs (issue 22, classes 2 and 5).

The inputs are our own, written in the spirit of html5lib's tree-construction tests (``#data``,
``#script-on``): each is a document whose tree differs with the scripting flag or with the
insertion mode (HTML §13.2.6.4.4 "in head", §13.2.6.4.5 "in head noscript", §13.2.6.4.7 "in body",
§4.2.3 "the base element", §4.12.3 template contents). For each the engine's base and links are
stated, and html5lib, building the scripting-on tree a browser builds, must agree on which
``<base href>`` counts. Class 5: an unparsable ``<base href>`` is no base under any rule set that
cannot parse it ("set the frozen base URL" falls back), RFC 1808 excepted (its net_loc syntax
takes "[").
"""

from __future__ import annotations

from dataclasses import dataclass

import html5lib
import pytest

from rewriter.html.engine import find_links, rewrite_html
from rewriter.policy import Policy
from rewriter.url.resolve import RULES, resolve

URL = "http://h.example/dir/page.html"
HTML_NS = "{http://www.w3.org/1999/xhtml}"
_PARSER = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree"))


@dataclass(frozen=True)
class Case:
    """``#data``, the base a browser with scripting on uses (None: the retrieval URL), and what
    each link but a ``<base>``'s resolves to (attribute and reference as found, in document order)."""

    name: str
    data: str
    base: str | None
    links: tuple[tuple[str, str, str | None], ...]


CASES = [
    Case(
        "base in head noscript is raw text",
        '<head><noscript><base href="http://evil.example/"></noscript></head><a href=x>x</a>',
        None,
        (("href", "x", "http://h.example/dir/x"),),
    ),
    Case(
        "base in body noscript is raw text",
        '<body><noscript><base href="http://evil.example/"><a href=y>y</a></noscript><a href=x>x</a>',
        None,
        (("href", "y", "http://h.example/dir/y"), ("href", "x", "http://h.example/dir/x")),
    ),
    Case(
        "base after a noscript counts",
        '<noscript><img src=n.png></noscript><base href="http://b.example/d/"><a href=x>x</a>',
        "http://b.example/d/",
        (("src", "n.png", "http://b.example/d/n.png"), ("href", "x", "http://b.example/d/x")),
    ),
    Case(
        "noscript end tag inside a comment ends the raw text",
        '<noscript><!--</noscript>--><base href="http://b.example/"><a href=x>x</a>',
        "http://b.example/",
        (("href", "x", None),),  # a scripting-off reader is inside the comment: left as written
    ),
    Case(
        "a style opened in head noscript does not swallow the base",
        '<head><noscript><style></noscript><base href="http://b.example/"></head><a href=x>x</a>',
        "http://b.example/",
        (("href", "x", None),),
    ),
    Case(
        "noscript fostered out of a table is raw text too",
        '<table><noscript><base href="http://evil.example/"><img src=n.png></noscript><tr><td><a href=x>x</a>',
        None,
        (("src", "n.png", "http://h.example/dir/n.png"), ("href", "x", "http://h.example/dir/x")),
    ),
    Case(
        "noscript in MathML is a MathML element, and so is its base",
        '<math><noscript><base href="http://m.example/"></noscript></math><a href=x>x</a>',
        None,
        (("href", "x", "http://h.example/dir/x"),),
    ),
    Case(
        "template contents are inert",
        '<template><base href="http://t.example/"></template><a href=x>x</a>',
        None,
        (("href", "x", "http://h.example/dir/x"),),
    ),
    Case(
        "base in svg is no HTML base",
        '<svg><base href="http://s.example/"/></svg><a href=x>x</a>',
        None,
        (("href", "x", "http://h.example/dir/x"),),
    ),
    Case(
        "the first base with an href counts",
        '<base target=_top><base href="/b1/"><base href="http://b2.example/"><a href=x>x</a>',
        "http://h.example/b1/",
        (("href", "x", "http://h.example/b1/x"),),
    ),
    Case(
        "a base in body counts too",
        '<p>text</p><base href="sub/"><a href=x>x</a>',
        "http://h.example/dir/sub/",
        (("href", "x", "http://h.example/dir/sub/x"),),
    ),
    Case(
        "a javascript: base is no base",
        '<base href="java\tscript:alert(1)"><a href=x>x</a>',
        None,
        (("href", "x", "http://h.example/dir/x"),),
    ),
    Case(
        "an empty base href is the fallback itself",
        '<base href=""><a href="?q">q</a>',
        "http://h.example/dir/page.html",
        (("href", "?q", "http://h.example/dir/page.html?q"),),
    ),
    Case(
        "noscript after head in after-head mode",
        '<head></head><noscript><base href="http://evil.example/"></noscript><a href=x>x</a>',
        None,
        (("href", "x", "http://h.example/dir/x"),),
    ),
]


def _html5lib_base(data: str) -> str | None:
    """The href of the base element a scripting browser uses, as html5lib builds its tree."""
    root = _PARSER.parse(data, scripting=True)
    inert: set[int] = set()
    for template in root.iter(HTML_NS + "template"):
        inert.update(id(node) for node in template.iter() if node is not template)
    for element in root.iter(HTML_NS + "base"):
        if id(element) not in inert and element.get("href") is not None:
            return element.get("href")
    return None


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_base_and_links(case: Case) -> None:
    policy = Policy(rules="whatwg")
    result = find_links(case.data, url=URL, policy=policy)
    assert result.base == (case.base or URL)
    assert result.layer == ("base-element" if case.base else "retrieval-url")
    links = tuple((link.attribute, link.original, link.resolved) for link in result.links if link.element != "base")
    assert links == case.links


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_html5lib_agrees_on_the_base(case: Case) -> None:
    """html5lib (scripting on) picks the same <base>: the one whose href gave our base, or none."""
    href = _html5lib_base(case.data)
    result = find_links(case.data, url=URL, policy=Policy(rules="whatwg"))
    if case.base is None:
        assert href is None or result.problems, (href, result.problems)
    else:
        assert href is not None
        assert result.base == resolve(URL, href, rules="whatwg")


def test_noscript_links_are_rewritten_for_both_readings() -> None:
    """Links in <noscript> are found as a scripting-off reader reads its text, and the rewrite keeps
    its end where a scripting reader finds it."""
    document = (
        b'<head><noscript><link rel=stylesheet href="s.css"></noscript></head><noscript><img src="i.png"></noscript>'
    )
    output = rewrite_html(document, url=URL).output
    assert output == (
        b'<head><noscript><link rel=stylesheet href="http://h.example/dir/s.css"></noscript></head>'
        b'<noscript><img src="http://h.example/dir/i.png"></noscript>'
    )
    for scripting in (True, False):
        before = _PARSER.parse(document, scripting=scripting)
        after = _PARSER.parse(output, scripting=scripting)
        assert [node.tag for node in before.iter()] == [node.tag for node in after.iter()]


# --------------------------------------------------------------------------
# Class 5: an unparsable <base href> is no base
# --------------------------------------------------------------------------

UNPARSABLE = [
    "http://[::1/",  # an unclosed IP literal (RFC 3986 §3.2.2)
    "//[::1/x",  # the same, resolved against the fallback first
    "http://[zz]/",  # no IPv6 address inside
    "http://[::1]x/",  # something after the IP literal that is no port
    "http://h:8o/",  # a port that is not digits (§3.2.3)
    "http://a]b/",
]


@pytest.mark.parametrize("href", UNPARSABLE)
@pytest.mark.parametrize("rules", RULES)
def test_an_unparsable_base_is_no_base(href: str, rules: str) -> None:
    """HTML "set the frozen base URL": parsing fails, so the fallback base (the next layer) stays;
    the <base> is left as written and named. RFC 1808's net_loc takes "[" and "]" and any port
    (§2.2, national characters), so under it only the WHATWG parser's failures would count."""
    document = f'<base href="{href}"><a href=x>x</a>'.encode()
    result = rewrite_html(document, url=URL, policy=Policy(rules=rules))
    if rules == "rfc1808":
        assert result.layer == "base-element"
        return
    assert (result.base, result.layer) == (URL, "retrieval-url")
    assert [link.resolved for link in result.links if link.original == "x"] == ["http://h.example/dir/x"]
    assert result.output.startswith(f'<base href="{href}">'.encode())
    assert any("ignored" in problem for problem in result.problems)


@pytest.mark.parametrize("href", ["http://[::1]/d/", "http://[::1]:8080/d/", "http://[v7.x]/d/", "http://u@h:80/d/"])
def test_a_parsable_base_still_counts(href: str) -> None:
    for rules in ("rfc2396", "rfc3986"):
        result = find_links(f'<base href="{href}"><a href=x>', url=URL, policy=Policy(rules=rules))
        assert (result.base, result.layer) == (href, "base-element")


# --------------------------------------------------------------------------
# Issue 9 (a): a <frameset> after a <template>
# --------------------------------------------------------------------------
#
# A start tag "template" sets the frameset-ok flag to "not ok" (HTML §13.2.6.4.4 "in head", which
# "in body" defers to), so a later <frameset> "in body" (§13.2.6.4.7), or in template contents
# (§13.2.6.4.18, which sends it to "in body"), is ignored, and the body with every link in it and
# after it stays. Only "before head", "in head" and "after head" take a <frameset> whatever the flag.
# A page that made its body vanish behind a <frameset> kept every link from being found. And a stray
# <head> (ignored) or second <html> (its attributes merged) "after head" opens no body (§13.2.6.4.6):
# the head's <base> and <link> after it stay for the frameset, which is built there whatever the flag.


@dataclass(frozen=True)
class FramesetCase:
    """``#data``, the base a browser uses (None: the retrieval URL), the links of its DOM but a
    ``<base>``'s (element, attribute, reference, resolved), and whether html5lib 1.1, which has no
    template support (a ``<template>`` is an element of the body there, with no effect on the
    flag), builds the same: it does where the outcome does not hang on the template."""

    name: str
    data: str
    base: str | None
    links: tuple[tuple[str, str, str, str], ...]
    html5lib_agrees: bool


def _at(reference: str, base: str = "http://h.example/dir/") -> str:
    return base + reference


FRAMESET_CASES = [
    FramesetCase(
        "template in body: the frameset is ignored and the body stays",
        "<a href=q></a><template></template><frameset><frame src=f></frameset><a href=after>a</a>",
        None,
        (("a", "href", "q", _at("q")), ("a", "href", "after", _at("after"))),
        False,
    ),
    FramesetCase(
        "template with content in a paragraph, frames and noframes after it",
        '<p><a href=i></a><template><b></b><a href=t></a></template><frameset cols="50%,50%"><frame src=f>'
        "<noframes><a href=n>n</a></noframes></frameset><a href=after>",
        None,
        (("a", "href", "i", _at("i")), ("a", "href", "t", _at("t")), ("a", "href", "after", _at("after"))),
        False,
    ),
    FramesetCase(
        "a frameset in open template contents in body is ignored",
        "<div><template><frameset><frame src=f></frameset><a href=in>",
        None,
        (("a", "href", "in", _at("in")),),
        False,
    ),
    FramesetCase(
        "template in head, an element between: the frameset is ignored",
        "<template></template><div></div><frameset><frame src=f></frameset><a href=after>",
        None,
        (("a", "href", "after", _at("after")),),
        False,
    ),
    FramesetCase(
        "nested templates in head, an element between: the frameset is ignored",
        "<template><template></template></template><div></div><frameset><frame src=f></frameset><a href=after>",
        None,
        (("a", "href", "after", _at("after")),),
        False,
    ),
    FramesetCase(
        "a base after an ignored frameset is the page's base",
        '<a href=q><template></template><frameset><base href="http://b.example/"><frame src=f></frameset>'
        "<a href=after>",
        "http://b.example/",
        (("a", "href", "q", "http://b.example/q"), ("a", "href", "after", "http://b.example/after")),
        False,
    ),
    FramesetCase(
        "upper case, attributes",
        "<P><TEMPLATE></TEMPLATE><FrameSet rows=*><FRAME SRC=f></FrameSet><A HREF=after>",
        None,
        (("a", "href", "after", _at("after")),),
        False,
    ),
    FramesetCase(
        "a stray head start tag after head, then an element: the frameset is ignored",
        "<template></template></head><head><div></div><frameset><frame src=f></frameset><a href=after>",
        None,
        (("a", "href", "after", _at("after")),),
        False,
    ),
    FramesetCase(
        "a stray head start tag after head is ignored: the frameset stays",
        "<template></template></head><head><frameset><frame src=f></frameset><a href=after>",
        None,
        (("frame", "src", "f", _at("f")),),
        True,
    ),
    FramesetCase(
        "a second html start tag after head merges: the frameset stays",
        "<template></template></head><html lang=x><frameset><frame src=f></frameset><a href=after>",
        None,
        (("frame", "src", "f", _at("f")),),
        True,
    ),
    FramesetCase(
        "a stray head start tag after head keeps the head's base for the frames",
        '</head><head><base href="http://b.example/"><frameset><frame src=f></frameset>',
        "http://b.example/",
        (("frame", "src", "f", "http://b.example/f"),),
        True,
    ),
    FramesetCase(
        "a stray html start tag after head keeps the head's link",
        "</head><html lang=x><link rel=stylesheet href=s.css><frameset><frame src=f></frameset><a href=after>",
        None,
        (("link", "href", "s.css", _at("s.css")), ("frame", "src", "f", _at("f"))),
        True,
    ),
    FramesetCase(
        "a template with text in head, a stray head start tag: the frameset stays",
        "<template>x</template></head><head><frameset><frame src=f></frameset><a href=after>",
        None,
        (("frame", "src", "f", _at("f")),),
        False,
    ),
    FramesetCase(
        "template in head, then the frameset: a frameset document",
        "<template><a href=t>t</a></template><frameset><frame src=f></frameset><a href=after>",
        None,
        (("a", "href", "t", _at("t")), ("frame", "src", "f", _at("f"))),
        False,  # html5lib puts the template in a body, which the frameset then replaces
    ),
    FramesetCase(
        "template in head, white space and a comment, then the frameset",
        "<head><template>x</template></head> <!--c--> <frameset><frame src=f></frameset>",
        None,
        (("frame", "src", "f", _at("f")),),
        False,  # html5lib's template is in a body, its text sets the flag: the frameset is ignored
    ),
    FramesetCase(
        "an empty template in head, then the frameset",
        "<template></template><frameset><frame src=f><noframes><a href=n></a></noframes></frameset>",
        None,
        (("frame", "src", "f", _at("f")),),
        True,
    ),
    FramesetCase(
        "a base inside a kept frameset is ignored",
        '<template></template><frameset><base href="http://evil.example/"><frame src=f></frameset>',
        None,
        (("frame", "src", "f", _at("f")),),
        True,
    ),
    FramesetCase(
        "template in head, then text: the frameset is ignored",
        "<template></template>text<frameset><frame src=f></frameset><a href=after>",
        None,
        (("a", "href", "after", _at("after")),),
        True,
    ),
    FramesetCase(
        "a body start tag before the template: ignored",
        "<body><template></template><frameset><frame src=f></frameset><a href=after>",
        None,
        (("a", "href", "after", _at("after")),),
        True,
    ),
    FramesetCase(
        "an SVG template is no template: the frameset stays",
        "<svg><template></template></svg><frameset><frame src=f></frameset><a href=after>",
        None,
        (("frame", "src", "f", _at("f")),),
        True,
    ),
    FramesetCase(
        "a frameset with no template before it stays",
        "<a href=q><frameset><frame src=f><frameset><frame src=g></frameset></frameset><a href=after>",
        None,
        (("frame", "src", "f", _at("f")), ("frame", "src", "g", _at("g"))),
        True,
    ),
    FramesetCase(
        "a template after the frameset changes nothing",
        "<frameset><frame src=f></frameset><template><a href=t></a></template><a href=after>",
        None,
        (("frame", "src", "f", _at("f")),),
        True,
    ),
]


def _links_of(data: str) -> tuple[str | None, tuple[tuple[str, str, str, str | None], ...]]:
    result = find_links(data, url=URL, policy=Policy(rules="whatwg"))
    links = tuple(
        (link.element, link.attribute, link.original, link.resolved) for link in result.links if link.element != "base"
    )
    return (None if result.layer == "retrieval-url" else result.base), links


@pytest.mark.parametrize("case", FRAMESET_CASES, ids=[case.name for case in FRAMESET_CASES])
def test_a_frameset_is_read_as_a_browser_reads_it(case: FramesetCase) -> None:
    assert _links_of(case.data) == (case.base, case.links)


@pytest.mark.parametrize("case", FRAMESET_CASES, ids=[case.name for case in FRAMESET_CASES])
def test_a_frameset_page_is_rewritten_and_nothing_else(case: FramesetCase) -> None:
    """Each link of the browser's DOM is rewritten; every other byte stays (the frame of an ignored
    frameset, the raw text of a <noframes>, the <base> a frameset ignores)."""
    result = rewrite_html(case.data.encode(), url=URL, policy=Policy(rules="whatwg"))
    expected = case.data.encode()
    for _, attribute, reference, resolved in reversed(case.links):
        # Each reference is written once in the data, after its attribute's "=".
        for spelling in (attribute, attribute.upper()):
            start = expected.find(f"{spelling}={reference}".encode())
            if start >= 0:
                break
        assert start >= 0
        value = start + len(spelling) + 1
        expected = expected[:value] + resolved.encode() + expected[value + len(reference) :]
    if case.base is not None:
        expected = expected.replace(b'<base href="http://b.example/">', b"")
        result = rewrite_html(case.data.encode(), url=URL, policy=Policy(rules="whatwg", remove_base=True))
    assert result.output == expected


def _html5lib_links(data: str) -> list[tuple[str, str, str]]:
    root = _PARSER.parse(data, scripting=True)
    return [
        (element.tag[len(HTML_NS) :], name, value)
        for element in root.iter()
        if isinstance(element.tag, str) and element.tag != HTML_NS + "base"
        for name, value in element.items()
        if name in ("href", "src")
    ]


@pytest.mark.parametrize("case", [case for case in FRAMESET_CASES if case.html5lib_agrees], ids=lambda case: case.name)
def test_html5lib_finds_the_same_link_sites_where_templates_do_not_decide(case: FramesetCase) -> None:
    assert _html5lib_links(case.data) == [
        (element, attribute, reference) for element, attribute, reference, _ in case.links
    ]
    assert _html5lib_base(case.data) is None or case.base is not None
