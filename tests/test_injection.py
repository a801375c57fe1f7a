"""No markup or script in the output that the input did not hold, whatever the base.

The base is the attacker's to choose: a ``<base href>``, the retrieval URL (``--url``) or a
message's Content-Location. Every new value is escaped for the context the parse puts it in,
and both readings of a page are checked, as HTML defines them (§13.2.6.4.4, §13.2.6.4.7):

- **scripting on** (a browser's default): ``<noscript>`` is raw text up to its first
  ``</noscript``, so a new value there never holds "<";
- **scripting off**: ``<noscript>`` holds markup, escaped as anywhere else.

Conditional comments are rewritten only where the parser made a comment node: a lookalike
in an attribute value, ``<script>``, ``<style>``, ``<textarea>``, ``<title>`` or ``<xmp>``
stays as it is. The property test builds documents from every context (attribute quotings,
srcset, ping, meta refresh, CSS in ``<style>`` and ``style=""``, srcdoc, comments,
``<noscript>`` in head and body, lookalikes) and checks, with html5lib under both readings,
that the output has the same elements, attributes, text, comments and script as the input,
only URL values differing; the browser test does the same in Chromium.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Iterator
from typing import Any

import html5lib
import pytest
from conftest import css_skeleton
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewriter.html.engine import rewrite_html
from rewriter.mime.message import rewrite_message
from rewriter.policy import Policy

SCRIPT_BASE = "http://h/</noscript><img src=x onerror=alert(1)>/"
NOSCRIPT_SPELLINGS = ["</noscript>", "</NOSCRIPT>", "</NoScRiPt >", "</noscript/", "</noscript\t", "</noscript\n"]
BOTH_RULES = ["rfc3986", "whatwg"]

# Attributes whose value may change (a URL, a list of URLs, CSS or a nested document).
URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "srcset",
        "imagesrcset",
        "ping",
        "action",
        "formaction",
        "poster",
        "data",
        "cite",
        "background",
        "longdesc",
        "usemap",
        "codebase",
        "classid",
        "archive",
        "icon",
        "manifest",
        "lowsrc",
        "dynsrc",
        "profile",
        "xlink:href",
        "content",
        "style",
        "srcdoc",
    }
)


# --------------------------------------------------------------------------
# Both readings of a document, as html5lib builds them
# --------------------------------------------------------------------------

_PARSER = html5lib.HTMLParser(tree=html5lib.getTreeBuilder("etree", fullTree=True), namespaceHTMLElements=False)


def skeleton(markup: str, scripting: bool) -> list[object]:
    """Every node html5lib builds from *markup*, with URL values left out: elements and their
    attribute names (and values, but for URL attributes), text (style text as CSS outside its
    URLs), comments (a conditional comment's markup as a skeleton of its own), and the
    documents nested in srcdoc and (scripting on) in each <noscript>'s text."""
    nodes: list[object] = []
    root = _PARSER.parse(markup, scripting=scripting)
    for node in root.iter():
        if not isinstance(node.tag, str):  # a comment
            data = node.text or ""
            match = re.fullmatch(r"(\[if[^\]]*\]>)(.*)(<!\[endif\]\s*)", data, re.S | re.I)
            if match:
                nodes.append(("#conditional", match.group(1), skeleton(match.group(2), scripting)))
            else:
                nodes.append(("#comment", data))
        else:
            tag = node.tag.rpartition("}")[2]
            attributes: dict[str, object] = {}
            for name, value in sorted(node.attrib.items()):
                name = name.rpartition("}")[2]
                if name == "style":
                    attributes[name] = css_skeleton(value)
                elif name == "srcdoc":
                    attributes[name] = [skeleton(value, False), skeleton(value, True)]
                elif name in URL_ATTRIBUTES:
                    attributes[name] = None
                else:
                    attributes[name] = value
            text: object = node.text or ""
            if tag == "style":
                text = css_skeleton(node.text or "")
            elif tag == "noscript" and scripting:
                text = skeleton(node.text or "", False)  # raw text: what a non-scripting reader sees
            nodes.append((tag, attributes, text))
        if node.tail:
            nodes.append(("#tail", node.tail))
    return nodes


def assert_same_document(before: str, after: str) -> None:
    for scripting in (True, False):
        assert skeleton(after, scripting) == skeleton(before, scripting), (
            f"scripting {'on' if scripting else 'off'}: an element, attribute, text or comment changed"
        )


def rewritten(document: str, url: str | None = SCRIPT_BASE, rules: str = "rfc3986") -> str:
    result = rewrite_html(document.encode("utf-8"), url=url, policy=Policy(rules=rules))  # type: ignore[arg-type]
    return result.output.decode("utf-8")


# --------------------------------------------------------------------------
# <noscript>: both readings
# --------------------------------------------------------------------------

NOSCRIPT_PAGES = {
    "body-img": '<p>x</p><noscript><img src="a.png"></noscript><p>after</p>',
    "body-unquoted": "<noscript><img src=a.png><a href=b>b</a></noscript><p>after</p>",
    "head-link": '<head><noscript><link rel=stylesheet href="s.css"></noscript></head><body><p>x',
    "head-img": "<head><noscript><img src=a.png></noscript></head><p>x",
    "srcset-ping": '<noscript><img srcset="a 1x, b 2x"><a ping="p q" href=r>r</a></noscript>',
    "refresh": "<head><noscript><meta http-equiv=refresh content='0; url=next.html'></noscript></head>",
    "style-element": "<noscript><style>p{background:url(a.png)} q{b:url('b')}</style></noscript><p>x",
    "style-attribute": "<noscript><p style=\"background:url('a.png')\">x</p></noscript>",
    "srcdoc": "<noscript><iframe srcdoc=\"<a href=x>x</a><img src='y'>\"></iframe></noscript>",
    "nested": "<noscript><noscript><img src=a></noscript></noscript><p>x",
    "conditional": "<noscript><!--[if IE]><img src=a><![endif]--></noscript>",
    "template": "<noscript><template><img src=a></template></noscript>",
}


@pytest.mark.parametrize("rules", BOTH_RULES)
@pytest.mark.parametrize("spelling", NOSCRIPT_SPELLINGS)
@pytest.mark.parametrize("name", NOSCRIPT_PAGES)
def test_a_base_that_closes_noscript_stays_inside_it(name: str, spelling: str, rules: str) -> None:
    page = NOSCRIPT_PAGES[name]
    base = f"http://h/{spelling}<img src=x onerror=alert(1)>/"
    result = rewrite_html(page.encode(), url=base, policy=Policy(rules=rules))  # type: ignore[arg-type]
    output = result.output.decode()
    assert_same_document(page, output)
    assert any(link.status == "rewritten" for link in result.links)
    inside = re.search(r"(?is)<noscript>(.*)</noscript>", output)
    assert inside is not None and "<img src=x" not in inside.group(1).replace("<img src=a", "")


@pytest.mark.parametrize("where", ["base-element", "retrieval-url"])
def test_noscript_links_are_rewritten_and_percent_encoded(where: str) -> None:
    base = "http://h/a</noscript><b>/"
    page = '<noscript><img src="x.png"></noscript><img src="y.png">'
    if where == "base-element":
        page = f'<base href="{html.escape(base)}">' + page
    result = rewrite_html(page.encode(), url=None if where == "base-element" else base)
    inner = [link for link in result.links if link.original == "x.png"]
    outer = [link for link in result.links if link.original == "y.png"]
    assert inner[0].resolved == "http://h/a%3C/noscript>%3Cb>/x.png"  # as a browser writes "<" in a path
    assert outer[0].resolved == "http://h/a</noscript><b>/y.png"  # outside: attribute escaping alone suffices
    assert_same_document(page, result.output.decode())


def test_content_location_that_closes_noscript_stays_inside_it() -> None:
    message = (
        b"Content-Type: text/html\r\n"
        b"Content-Location: http://h/</noscript><script>alert(1)</script>/\r\n\r\n"
        b"<noscript><img src=a.png></noscript><p>x</p>\r\n"
    )
    result = rewrite_message(message)
    body = result.output.split(b"\r\n\r\n", 1)[1].decode()
    assert "a.png" in body and "%3Cscript>" in body
    assert_same_document("<noscript><img src=a.png></noscript><p>x</p>\r\n", body)


def test_a_raw_text_element_opened_in_noscript_does_not_swallow_the_page() -> None:
    # With scripting off, <style> runs to </style>; a browser ends the <noscript> first. The
    # base and the links after it are a scripting browser's; the links are found and named,
    # and left as they are, since with scripting off they are style text.
    page = '<noscript><style></noscript><a href="a.html">a</a><base href="http://other/"></style></noscript>'
    result = rewrite_html(page.encode(), url="http://h/d/")
    assert result.base == "http://other/" and result.layer == "base-element"
    link = next(link for link in result.links if link.original == "a.html")
    assert link.base == "http://other/" and link.status == "unresolvable" and "scripting off" in (link.reason or "")
    assert result.output == page.encode()


READINGS_PART = {
    "raw-text": "<noscript><style></noscript><a href=x>a</a><p style='background:url(y)'></style><a href=z>z</a>",
    "attribute": '<noscript><p title="</noscript><a href=x>a</a><img src=y>"><a href=z>z</a>',
    "comment": "<noscript><!-- </noscript><a href=x>a</a> --><img src=z>",
    "end-tag-open": "<noscript>a</</noscript><a href=x>a</a><img src=z>",
    "select": "<noscript><select></noscript><style>p{background:url(x)}</style><a href=z>z</a>",
}


@pytest.mark.parametrize("rules", BOTH_RULES)
@pytest.mark.parametrize("name", READINGS_PART)
def test_where_the_two_readings_part_nothing_is_rewritten_and_each_link_is_named(name: str, rules: str) -> None:
    # A <noscript> whose text opens what runs past its end: after it, what is a link with
    # scripting on is text (or another tag's attribute) with scripting off.
    page = READINGS_PART[name]
    result = rewrite_html(page.encode(), url="http://h/</style><img src=q>/", policy=Policy(rules=rules))  # type: ignore[arg-type]
    assert result.output == page.encode()
    assert_same_document(page, result.output.decode())
    after = [link for link in result.links if link.start > page.index("</noscript")]
    assert after and all(link.status == "unresolvable" and "scripting off" in (link.reason or "") for link in after)
    assert any("scripting off reads the page differently" in problem for problem in result.problems)


def test_a_noscript_that_ends_as_it_began_changes_nothing_after_it() -> None:
    page = "<noscript><style>p{}</style><p title='a'>x</p><!-- c --></noscript><a href=x>a</a>"
    result = rewrite_html(page.encode(), url="http://h/d/")
    assert [link.status for link in result.links] == ["rewritten"] and not result.problems


@pytest.mark.parametrize(
    "page",
    [
        '<frameset><noscript><base href="http://evil/"></noscript></frameset>',
        '<head><noscript><frameset><base href="http://evil/"></noscript><a href=q>q</a>',
        '<head><noscript><base href="http://evil/"></noscript></head><a href=q>q</a>',
        '<noscript><base href="http://evil/"></noscript><a href=q>q</a>',
    ],
)
def test_a_base_a_scripting_browser_never_sees_steers_nothing(page: str) -> None:
    result = rewrite_html(page.encode(), url="http://h/d/")
    assert result.base == "http://h/d/" and result.layer == "retrieval-url"


# --------------------------------------------------------------------------
# Conditional comments: only the parser's comment nodes
# --------------------------------------------------------------------------

LOOKALIKE = "<!--[if IE]><a href=x>x</a><![endif]-->"
LOOKALIKE_PLACES = {
    "attribute": f'<p title="{LOOKALIKE}">t</p>',
    "single-quoted": f"<p title='{LOOKALIKE}'>t</p>",
    "script": f"<script>var s = '{LOOKALIKE}';</script>",
    "style": f"<style>/* {LOOKALIKE} */</style>",
    "textarea": f"<textarea>{LOOKALIKE}</textarea>",
    "title": f"<title>{LOOKALIKE}</title>",
    "xmp": f"<xmp>{LOOKALIKE}</xmp>",
    "noembed": f"<noembed>{LOOKALIKE}</noembed>",
    "svg-cdata": f"<svg><style><![CDATA[</style>{LOOKALIKE}]]></style></svg>",
    "svg-attribute": f'<svg><style><a title="</style>{LOOKALIKE}">x</a></style></svg>',
    "end-tag-attribute": f'<p></p title="{LOOKALIKE}">',
    "plaintext": f"<plaintext>{LOOKALIKE}",
}


@pytest.mark.parametrize("rules", BOTH_RULES)
@pytest.mark.parametrize("place", LOOKALIKE_PLACES)
@pytest.mark.parametrize("with_real", [False, True])
def test_a_conditional_comment_lookalike_is_never_rewritten(place: str, rules: str, with_real: bool) -> None:
    # with_real: a real comment with the same text, before and after, as the tree holds it.
    lookalike = LOOKALIKE_PLACES[place]
    page = (LOOKALIKE if with_real else "") + lookalike + ("" if place == "plaintext" else "<p>after</p>")
    base = "http://h/\"'><script>alert(1)</script>/"
    output = rewritten(page, url=base, rules=rules)
    assert lookalike in output, "the lookalike was changed"
    if with_real:
        assert not output.startswith(LOOKALIKE), "the real comment was not rewritten"
    assert_same_document(page, output)


def test_conditional_comments_after_inline_svg_and_after_body_are_rewritten() -> None:
    page = (
        "<body><svg><title>logo</title><style>.a{}</style></svg>"
        f"</body>{LOOKALIKE}</html>{LOOKALIKE.replace('href=x', 'href=y')}"
    )
    output = rewritten(page, url="http://h/d/")
    assert output.count("http://h/d/") == 2
    assert_same_document(page, output)


# --------------------------------------------------------------------------
# The property: arbitrary bases, every context
# --------------------------------------------------------------------------

# Pieces of a page, each holding links in one context (and lookalikes of them).
PIECES = [
    '<a href="x">a</a>',
    "<a href='x y'>a</a>",
    "<a href=x title=t>a</a>",
    "<img src=x>",
    "<a href>valueless</a>",
    '<img srcset="x 1x, y (a, b) 2x,z">',
    "<img srcset=x>",
    '<a ping="x  y" href=z>p</a>',
    "<meta http-equiv=refresh content=\"0;url='x'\">",
    '<meta http-equiv=refresh content="0; URL=x">',
    "<meta http-equiv=refresh content=0;URL=x>",
    "<p style=\"background:url('x')\">s</p>",
    "<p style='background:url(\"x\")'>s</p>",
    "<p style=background:url(x)>s</p>",
    "<style>p{background:url(x)} q{b:url('y')} @import \"z\";</style>",
    "<svg><style>p{background:url(x)}</style><a href=y>s</a><image xlink:href=z /></svg>",
    "<iframe srcdoc=\"<a href=x>x</a><img src='y'><p style=&quot;b:url(z)&quot;>\"></iframe>",
    "<iframe srcdoc=<a&#32;href=x&#62;a&lt;/a&#62;></iframe>",
    "<!--[if IE]><a href=x>ie</a><img src='y'><![endif]-->",
    "<!-- a plain comment with <a href=x> -->",
    "<noscript><img src=x><a href='y'>n</a><style>p{b:url(z)}</style></noscript>",
    "<noscript><p style=background:url(x)></noscript>",
    "<noscript><style></noscript><a href=x>x</a></style>",
    "<noscript><p title='</noscript><img src=x>'>",
    f'<p title="{LOOKALIKE}">t</p>',
    f"<script>var s = '{LOOKALIKE}';</script>",
    f"<textarea>{LOOKALIKE}</textarea>",
    f"<title>{LOOKALIKE}</title>",
    f"<xmp>{LOOKALIKE}</xmp>",
    f'<svg><style><a title="</style>{LOOKALIKE}">x</a></style></svg>',
    f"<svg><style><![CDATA[</style>{LOOKALIKE}]]></style></svg>",
    "<template><a href=x>t</a></template>",
    "<object data=x codebase=y></object>",
    "<p>text &amp; more</p>",
]
HEADS = [
    "",
    "<head><noscript><link rel=stylesheet href=x></noscript></head>",
    "<head><noscript><meta http-equiv=refresh content='0; url=x'></noscript></head>",
    "<!--[if IE]><html class=ie><![endif]-->",
]

_bases = st.one_of(
    st.text(max_size=40).map(lambda tail: "http://h/" + tail),
    st.lists(
        st.sampled_from([*"<>\"'`/!-=&;()\\ \t\n\x0c\r:?#%[]{}@,.nNoOsScCrRiIpPtT", "</noscript>", "-->", "</style"]),
        max_size=30,
    ).map(lambda pieces: "http://h/" + "".join(pieces) + "/"),  # ends in "/": the path is kept whole
    st.text(max_size=30),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=_bases,
    head=st.sampled_from(HEADS),
    pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
    rules=st.sampled_from(["rfc3986", "whatwg", "rfc1808", "rfc2396"]),
    as_base_element=st.booleans(),
)
def test_any_base_changes_only_url_values(
    base: str, head: str, pieces: list[str], rules: str, as_base_element: bool
) -> None:
    body = "".join(pieces)
    page = head + (f'<base href="{html.escape(base)}">' if as_base_element else "") + body + "<p>end</p>"
    output = rewritten(page, url=None if as_base_element else base, rules=rules)
    assert_same_document(page, output)


# --------------------------------------------------------------------------
# The same property in Chromium (scripting on and off)
# --------------------------------------------------------------------------

# The DOM Chromium builds from a string, as a list of strings, URL values out (the same rule
# as skeleton()). Scripting on: a detached <div>'s innerHTML in a page with scripting on (HTML
# fragment parsing takes the flag from the page; detached, a meta refresh navigates nowhere).
# Scripting off: DOMParser, whose documents never have scripting.
_DOM_SKELETON_JS = """
([markup, scripting, urlAttributes]) => {
  let root;
  if (scripting) {
    root = document.createElement('div');
    root.innerHTML = markup;
  } else {
    root = new DOMParser().parseFromString(markup, 'text/html');
  }
  const urls = new Set(urlAttributes);
  const out = [];
  const walk = (node) => {
    for (const child of node.childNodes) {
      if (child.nodeType === 1) {
        const names = [];
        for (const a of child.attributes) names.push(urls.has(a.name) ? a.name : a.name + '=' + a.value);
        out.push('<' + child.namespaceURI + ' ' + child.localName + ' ' + names.sort().join(' '));
        if (child.localName === 'template' && child.content) walk(child.content);
        if (['script', 'textarea', 'title', 'xmp', 'noembed'].includes(child.localName)) {
          out.push('#raw ' + child.textContent);
        }
        walk(child);
        out.push('>');
      } else if (child.nodeType === 8) {
        out.push(child.data.startsWith('[if') ? '#conditional' : '#comment ' + child.data);
      } else if (child.nodeType === 3) {
        const parent = child.parentNode && child.parentNode.localName;
        if (!['style', 'noscript', 'script'].includes(parent)) out.push('#text ' + child.data);
      }
    }
  };
  walk(root);
  return out;
}
"""


def _generated_pages(count: int) -> Iterator[tuple[str, str]]:
    """(page, base) pairs from PIECES and HEADS with hostile bases, in a fixed order."""
    bases = [
        SCRIPT_BASE,
        "http://h/\"'><script>alert(1)</script>/",
        "http://h/--><img src=x onerror=alert(1)>/",
        "http://h/</style><script>alert(1)</script>/",
        "http://h/</NOSCRIPT ><svg onload=alert(1)>/",
        "http://h/)}</style><img src=x onerror=alert(1)>/",
        "http://h/ \t\n\"&quot;'`<>/",
    ]
    for index in range(count):
        head = HEADS[index % len(HEADS)]
        body = "".join(PIECES[(index * 7 + step * 3) % len(PIECES)] for step in range(1 + index % 5))
        yield head + body + "<p>end</p>", bases[index % len(bases)]


@pytest.fixture(scope="module")
def chromium(browser: Any) -> Any:
    return browser


def test_generated_pages_keep_their_dom_in_chromium(chromium: Any) -> None:
    count = int(os.environ.get("REWRITER_INJECTION_PAGES", "200"))
    context = chromium.new_context(java_script_enabled=True, offline=True)
    mismatches: list[str] = []
    checked = 0
    try:
        page = context.new_page()
        page.route("**/*", lambda route: route.abort())
        page.on("dialog", lambda dialog: dialog.dismiss())
        page.set_content("<!doctype html><title>harness</title>")
        for page_text, base in _generated_pages(count):
            for rules in ("rfc3986", "whatwg"):
                output = rewritten(page_text, url=base, rules=rules)
                for scripting in (True, False):
                    before = page.evaluate(_DOM_SKELETON_JS, [page_text, scripting, sorted(URL_ATTRIBUTES)])
                    after = page.evaluate(_DOM_SKELETON_JS, [output, scripting, sorted(URL_ATTRIBUTES)])
                    checked += 1
                    if before != after:
                        mismatches.append(f"{rules}, scripting {scripting}: {page_text!r} with base {base!r}")
    finally:
        context.close()
    assert checked == count * 4
    assert not mismatches, "\n".join(mismatches[:10])


# --------------------------------------------------------------------------
# Tree adapters: what a serialiser writes raw must not close <noscript> either
# --------------------------------------------------------------------------


@pytest.mark.parametrize("builder", ["html.parser", "lxml", "html5lib"])
def test_tree_adapters_write_no_angle_bracket_under_noscript(builder: str) -> None:
    import bs4

    from rewriter.html.bs4 import absolutize

    page = (
        "<div><noscript><img src=a.png><span style='background:url(b)'></span>"
        "<iframe srcdoc='<img src=c>'></iframe><!--[if IE]><a href=d>d</a><![endif]--></noscript>"
        "<img src=e.png></div>"
    )
    soup = bs4.BeautifulSoup(page, builder)
    result = absolutize(soup, url=SCRIPT_BASE)
    inside = soup.find("noscript")
    assert inside is not None
    # formatter=None writes attribute values and comments as they are: the strictest reading.
    written = inside.decode(formatter=None)
    assert written.count("http://h/%3C/noscript") == 4, written  # img, style, srcdoc, conditional comment
    assert "</noscript" not in written.removeprefix("<noscript>").removesuffix("</noscript>").lower()
    outside = [link for link in result.links if link.original == "e.png"]
    assert outside[0].resolved == SCRIPT_BASE + "e.png"  # outside <noscript>: escaped by the serialiser alone
