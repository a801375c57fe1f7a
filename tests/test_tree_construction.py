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
