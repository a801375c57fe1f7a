"""The HTML engine on arbitrary input: it never raises, and its output is stable."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewriter.html.engine import ByteView, find_links, rewrite_html, start_tags
from rewriter.html.links import iter_links
from rewriter.html.microsyntax import srcset_urls
from rewriter.policy import Policy

pytestmark = pytest.mark.slow  # property suites: thousands of generated pages, each read twice

_PIECES = [
    "<a href=",
    "<img srcset='",
    "<base href=",
    "<meta http-equiv=refresh content='0;url=",
    "<style>",
    "</style>",
    "url(",
    "@import '",
    "<svg>",
    "</svg>",
    "<template>",
    "<noscript>",
    "<!--",
    "-->",
    "<!--[if IE]>",
    "<![endif]-->",
    "<script>",
    "</script>",
    "<iframe srcdoc='",
    "&amp;",
    "&#x",
    '"',
    "'",
    ">",
    " ",
    "\r\n",
    "\r",
    "\x00",
    "x",
    "../",
    "#",
    "?",
    ",",
    "é",
    "\ud800",
    "<p>",
    "<b>",
    "http://",
    "javascript:",
    "<meta charset=utf-16>",
    "<meta charset=shift_jis>",
]
_markup = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)
_documents = st.one_of(
    st.binary(max_size=300),
    _markup.map(lambda text: text.encode("utf-8", "surrogatepass")),
    _markup.map(lambda text: text.encode("utf-16", "surrogatepass")),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(document=_documents, rules=st.sampled_from(["rfc3986", "whatwg", "rfc1808"]))
def test_never_raises_and_is_idempotent(document: bytes, rules: str) -> None:
    policy = Policy(rules=rules)  # type: ignore[arg-type]
    result = rewrite_html(document, url="http://h/dir/page.html", policy=policy)
    assert isinstance(result.output, bytes)
    for link in result.links:
        assert 0 <= link.start <= link.end <= len(document)
    again = rewrite_html(result.output, url="http://h/dir/page.html", policy=policy)
    assert again.output == result.output
    find_links(document)
    start_tags(document)


def _srcset_urls_as_the_spec_reads(value: str) -> list[tuple[int, int]]:
    """HTML §4.8.4.3.10 "parse a srcset attribute", one code point at a time: the oracle
    for the pattern-based ``srcset_urls``."""
    spans: list[tuple[int, int]] = []
    position, length = 0, len(value)
    while True:
        while position < length and value[position] in " \t\n\f\r,":  # splitting loop
            position += 1
        if position >= length:
            return spans
        start = position
        while position < length and value[position] not in " \t\n\f\r":  # collect the URL
            position += 1
        end = position
        if value[end - 1] == ",":  # trailing commas: the candidate has no descriptors
            while value[end - 1] == ",":
                end -= 1
            spans.append((start, end))
            continue
        spans.append((start, end))
        in_parens = False  # descriptor tokenizer: to a comma outside parentheses
        while position < length:
            char = value[position]
            position += 1
            if in_parens:
                in_parens = char != ")"
            elif char == "(":
                in_parens = True
            elif char == ",":
                break


@given(st.text(alphabet=" \t\n\f\r,()x1w", max_size=40))
@settings(max_examples=2000)
def test_srcset_parsing_matches_the_specs_state_machine(value: str) -> None:
    assert srcset_urls(value) == _srcset_urls_as_the_spec_reads(value)


def _first_value_by_steps(tag: str, name: str) -> tuple[int, int, str] | str | None:
    """The first attribute *name* of *tag* read one attribute at a time, as the
    tokenizer does (HTML §13.2.5.32-39): its value span and quote, None for no value,
    "absent" when the tag does not have it."""
    from rewriter.html.tags import ATTRIBUTE, QUOTE_OF_GROUP, TAG_NAME, ascii_lower

    at = TAG_NAME.match(tag, 0).end()  # type: ignore[union-attr]
    while True:
        match = ATTRIBUTE.match(tag, at)
        assert match is not None
        if match.lastindex is None:
            return "absent"
        at = match.end()
        if ascii_lower(match.group(1)) == name:
            last = match.lastindex
            return None if last == 1 else (*match.span(last), QUOTE_OF_GROUP[last])


@given(
    st.text(alphabet="<>=\"' \t\n/aHhREFrefx\u212a\u0130", max_size=50).map(lambda body: "<a" + body),
    st.sampled_from(["href", "src", "a", "e"]),
)
@settings(max_examples=3000, deadline=None)
def test_one_attribute_pattern_reads_a_tag_as_the_steps_do(tag: str, name: str) -> None:
    # The fast path reads a start tag up to one attribute in a single pattern; it must
    # give what reading attribute after attribute gives (K and İ fold only outside ASCII).
    from rewriter.html.engine import QUOTE_OF_VALUE_GROUP, attribute_value_pattern

    match = attribute_value_pattern(name)(tag, 0)
    if match is None:
        found: tuple[int, int, str] | str | None = "absent"
    elif match.lastindex is None:
        found = None
    else:
        found = (*match.span(match.lastindex), QUOTE_OF_VALUE_GROUP[match.lastindex])
    assert found == _first_value_by_steps(tag, name)


@given(st.lists(st.sampled_from(["&amp;", "&", "amp;", "a", ";", "&amp", "&AMP;", "é"]), max_size=12).map("".join))
@settings(max_examples=400)
def test_amp_only_shortcut_decodes_as_the_reference_reader(raw: str) -> None:
    """decode_attribute's shortcut for values whose only references are "&amp;" gives the
    value and offsets that reading every reference gives."""
    from rewriter.html.microsyntax import decode_attribute, decode_references

    if "&" in raw:
        assert decode_attribute(raw) == decode_references(raw)


# Pages for the link primitive: every element kind of the link table's fast and general
# paths (noscript, conditional comments and srcdoc are documents of their own, and <base>
# the engine's own step, so they are left out).
_LINK_PIECES = [
    "<a href=",
    "<a href='",
    '<a href="',
    "<img src=",
    "<img srcset='",
    "<img data-src=",
    "<img data-srcset='",
    "<link rel=stylesheet href=",
    "<meta http-equiv=Refresh content=",
    "<object codebase=x/ data=",
    "<applet codebase='c/' archive='",
    "<a ping='",
    "<img usemap=",
    "<param valuetype=ref value=",
    "<body background=",
    "<html manifest=",
    "<div style='background:url(",
    "<svg><image xlink:href=",
    "<svg><style>",
    "<math><a href=",
    "</math>",
    "</template>",
    "<table><tr><td>",
    "&#x41;",
    "&quot;",
    "&lt;",
    "\t",
    " 1x",
    "=",
    "http://h/",
    # _PIECES but what is a document of its own (noscript, conditional comments, srcdoc), the
    # base, charsets, and text that is not ASCII (the engine's spans are UTF-8 bytes here)
    *(
        piece
        for piece in _PIECES
        if piece.isascii() and not piece.startswith(("<base", "<!--[", "<![", "<nos", "<if", "<meta"))
    ),
]
_VALUE_PIECES = [
    "x",
    "a.png",
    "../",
    "#f",
    "?q=1",
    " ",
    ",",
    " 2x",
    "&amp;",
    "&#x20;",
    "\r\n",
    "url(b)",
    "http://h/",
    "<",
]
_link_tags = st.tuples(
    st.sampled_from([piece for piece in _LINK_PIECES if piece.startswith("<") and piece[-1] in "='\""]),
    st.lists(st.sampled_from(_VALUE_PIECES), max_size=6).map("".join),
    st.sampled_from(["'>", '">', ">", " id=y>", "'/>", "' href=dup>", ")'>"]),
).map("".join)
_link_pages = st.lists(st.one_of(_link_tags, st.sampled_from(_LINK_PIECES)), max_size=20).map("".join)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_link_pages)
def test_the_engines_fast_loop_finds_what_iter_links_finds(page: str) -> None:
    """The one link primitive (issue 21): the bytes engine, whose loop over plain values
    carries most pages, finds exactly the sites ``iter_links`` gives over a byte view."""
    lazy = Policy().lazy_attributes
    found = [
        (link.element, link.attribute, link.kind, link.original, link.start, link.end)
        for link in find_links(page).links
    ]
    view = ByteView(page)
    sites = [
        (site.element.tag, site.attribute, site.kind, site.url, *view.span(site))
        for site in iter_links(view, lazy=lazy)
        if site.kind != "srcdoc"
    ]
    assert sorted(found, key=lambda link: link[4:]) == sorted(sites, key=lambda site: site[4:])
