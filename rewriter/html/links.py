"""One link primitive, as lxml's ``iterlinks``: :func:`iter_links` over a view of a page.

A *view* gives a page's elements in document order, each as a :class:`ViewElement`: its
namespace, its tag, its attributes as the tokenizer gives them (character references
decoded, the first of duplicate names winning) and, for a ``<style>``, its text. Two views
exist: :class:`rewriter.html.engine.ByteView` over a page's bytes (each URL's span is an
offset in the text) and :class:`rewriter.html.tree.TreeView` over a BeautifulSoup or lxml
tree (the adapters of :mod:`rewriter.html.bs4` and :mod:`rewriter.html.lxml`). For each
element, :func:`element_links` applies the rules once: the link table
(:func:`rewriter.html.table.attributes_of`), its conditions (:func:`applies`), lazy
attributes only where they look like a URL (:func:`looks_like_url`), the microsyntaxes of
each kind (:func:`url_spans`), CSS in ``style`` and ``<style>``, and ``codebase``.

The bytes engine's loop over plain ``<a href>`` and ``<img src>`` values
(:mod:`rewriter.html.elements`), which carries most pages, is a faster spelling of the same
rules: tests/test_html_properties.py holds it equal to ``iter_links(ByteView(...))`` on
generated pages.

>>> from rewriter.html.engine import ByteView
>>> view = ByteView('<a href=" a.html ">x</a><img srcset="b.png 1x, c.png 2x" style="background: url(d.png)">')
>>> [(site.element.tag, site.attribute, site.url, view.span(site)) for site in iter_links(view)]
[('a', 'href', 'a.html', (10, 16)), ('img', 'srcset', 'b.png', (37, 42)), ('img', 'srcset', 'c.png', (47, 52)), \
('img', 'style', 'd.png', (80, 85))]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Literal, NamedTuple, Protocol

from rewriter.css.syntax import Quote, css_urls
from rewriter.document.model import Kind
from rewriter.html.microsyntax import ASCII_WHITESPACE, refresh_url, space_separated, srcset_urls, strip_whitespace
from rewriter.html.table import CODEBASE_RELATIVE, CONDITIONAL, attributes_of

__all__ = [
    "Namespace",
    "Site",
    "View",
    "ViewElement",
    "applies",
    "element_links",
    "for_context",
    "iter_links",
    "looks_like_url",
    "url_spans",
]

Namespace = Literal["html", "svg", "math"]

_ASCII_WHITESPACE_IN = re.compile("[\t\n\f\r ]").search
_CONDITIONAL_TAGS = frozenset(tag for tag, _ in CONDITIONAL)


class ViewElement(NamedTuple):
    """One element as a view gives it. *node* is the view's own handle on it (a parsed
    element, a tree node); *attributes* are in source order; *style_text* is the text of a
    ``<style>`` (None elsewhere, or where it holds more than text)."""

    node: object
    namespace: Namespace | None  # None: a namespace the link table does not know
    tag: str  # lowercase for HTML, as the tree spells it for SVG and MathML
    attributes: Mapping[str, str]
    style_text: str | None = None


class Site(NamedTuple):
    """One place a URL stands: the element and attribute (``#style`` for a ``<style>``'s
    text), the kind of value, the URL as the document means it (*url*, whitespace around it
    left out) and its span in *value*, the decoded attribute value or the style text it
    was found in. *codebase* is the ``codebase`` the URL is relative to (HTML 4.01 §13.3),
    None where it is the document's base; *quote* is a CSS URL's quote. A ``srcdoc`` is one
    site, its whole value: a document of its own, whose links a view of it gives."""

    element: ViewElement
    attribute: str
    kind: Kind
    url: str
    start: int
    end: int
    value: str
    codebase: str | None = None
    quote: Quote | None = None


class View(Protocol):
    """What :func:`iter_links` walks: a page's elements in document order."""

    def elements(self) -> Iterable[ViewElement]: ...


def iter_links(view: View, *, lazy: frozenset[str] = frozenset()) -> Iterator[Site]:
    """Every link site of the page *view* shows, in document order, element by element.
    *lazy* is ``Policy.lazy_attributes``: the ``data-*`` attributes read as URLs."""
    for element in view.elements():
        yield from element_links(element, lazy)


def element_links(element: ViewElement, lazy: frozenset[str] = frozenset()) -> Iterator[Site]:
    """The link sites of one element, by the rules of the module's docstring."""
    if element.namespace is None:
        return  # a namespace the table does not cover (only XML parsers make them)
    tag, attributes = element.tag, element.attributes
    table = attributes_of(element.namespace, tag, lazy)
    kinds = {name: table[name] for name in attributes if name in table}
    if tag in _CONDITIONAL_TAGS:
        kinds = {name: kind for name, kind in kinds.items() if applies(attributes, tag, name)}
    codebase = None
    if "codebase" in attributes and tag in ("object", "applet"):
        value = attributes["codebase"]
        start, end = strip_whitespace(value, 0, len(value))
        codebase = value[start:end]
    for name, kind in kinds.items():
        value = attributes[name]
        if name in lazy and not looks_like_url(value, kind):
            continue
        # HTML §13.2.5.36-38: the tokenizer reads NUL in a value as U+FFFD (one for one).
        value = value.replace("\0", "\ufffd")
        relative_to = codebase if (tag, name) in CODEBASE_RELATIVE else None
        if kind == "css":
            for url in css_urls(value):
                yield Site(element, name, kind, url.value, url.start, url.end, value, relative_to, url.quote)
        elif kind == "srcdoc":
            yield Site(element, name, kind, value, 0, len(value), value, relative_to)
        else:
            for start, end in url_spans(kind, value):
                yield Site(element, name, kind, value[start:end], start, end, value, relative_to)
    if tag == "style" and element.style_text:
        text = element.style_text
        for url in css_urls(text):
            yield Site(element, "#style", "css", url.value, url.start, url.end, text, None, url.quote)


def looks_like_url(value: str, kind: Kind) -> bool:
    """Lazy-loading attributes are a convention, not a standard: some sites keep markup
    or text in them (``data-original='<i>…'``). Take one only when it could be a URL
    (or a srcset): no "<" or ">", and, for a single URL, no whitespace inside. *value* is
    the attribute's value as the tokenizer gives it (``&#x20;`` is a space, ``&lt;`` a "<")."""
    if "<" in value or ">" in value:
        return False
    if kind == "srcset":
        return True
    return _ASCII_WHITESPACE_IN(value.strip(ASCII_WHITESPACE)) is None


def applies(attributes: Mapping[str, object], tag: str, name: str) -> bool:
    """The table's conditions: refresh only for http-equiv=refresh, usemap not "#name", param ref.
    *attributes* are the element's (a parser that saw a space for each line break reads
    alike: only ``strip()`` and comparisons are made)."""
    if tag == "meta" and name == "content":
        equiv = attributes.get("http-equiv")
        return isinstance(equiv, str) and equiv.strip().lower() == "refresh"
    if name == "usemap":
        value = attributes.get("usemap")
        return isinstance(value, str) and not value.strip().startswith("#")
    if tag == "param" and name == "value":
        valuetype = attributes.get("valuetype")
        return isinstance(valuetype, str) and valuetype.strip().lower() == "ref"
    return True


def url_spans(kind: Kind, value: str) -> list[tuple[int, int]]:
    """Where each URL of an attribute *value* of *kind* is (not ``css`` or ``srcdoc``)."""
    if kind == "srcset":
        return srcset_urls(value)
    if kind == "urls":
        return space_separated(value)
    if kind == "comma-urls":
        return [strip_whitespace(value, m.start(), m.end()) for m in re.finditer(r"[^,]+", value)]
    if kind == "refresh":
        span = refresh_url(value)
        return [span] if span is not None else []
    return [strip_whitespace(value, 0, len(value))]


def for_context(kind: Kind, url: str, value: str, start: int) -> str:
    """*url* made safe for its place in a microsyntax (before attribute escaping)."""
    if kind in ("srcset", "urls"):
        url = _percent_encode(url, ASCII_WHITESPACE)
        if kind == "srcset" and url.endswith(","):
            url = url[:-1] + "%2C"
    elif kind == "comma-urls":
        url = _percent_encode(url, ASCII_WHITESPACE + ",")
    elif kind == "refresh":
        quote = value[start - 1 : start] if start > 0 else ""
        if quote in ('"', "'"):
            url = url.replace(quote, f"%{ord(quote):02X}")
        elif url[:1] in ('"', "'"):
            url = f"%{ord(url[0]):02X}" + url[1:]
    return url


def _percent_encode(text: str, characters: str) -> str:
    for char in characters:
        if char in text:
            text = text.replace(char, f"%{ord(char):02X}")
    return text
