"""Where a link is, element by element: the engine's loop over the elements of a parsed
document (:func:`elements_links`), which has the plain ``<a href>`` and ``<img src>``
values done in one call (:func:`rewriter.html.plain.plain_links`, in C when the extension is
built) and hands every other element to the general path (:func:`element_links`), which
applies the link table and its conditions and hands each attribute to the writer
(:mod:`rewriter.html.attributes`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar, cast

from rewriter.document.model import Kind, Link
from rewriter.document.process import KEPT_STATUSES, Context, TextResult
from rewriter.html.attributes import attribute_links, style_element
from rewriter.html.links import applies, looks_like_url
from rewriter.html.microsyntax import decode_attribute, strip_whitespace
from rewriter.html.parsed import (
    HTML,
    NAMESPACE_NAMES,
    ParsedDocument,
    newlines_normalised,
)
from rewriter.html.plain import (
    LAZY_URL,
    OTHER,
    SRCSET,
    STYLE,
    URL,
    Codes,
    LinkSearch,
    plain_links,
)
from rewriter.html.table import (
    CACHED_NAME_LENGTH,
    CODEBASE_RELATIVE,
    CONDITIONAL,
    GENERAL_PATH_ELEMENTS,
    attributes_of,
    is_plain_url,
)
from rewriter.html.turbo import core as turbohtml
from rewriter.problems import Problem

# The link table per (namespace, tag, lazy attributes): a dict lookup per element.
_K = TypeVar("_K")
_V = TypeVar("_V")
_TABLES: dict[tuple[int, str, frozenset[str]], dict[str, Kind]] = {}
# The per-element caches keep short names only, and are emptied when full: element names
# come from the documents, and a page of many or long made-up names must not grow memory.
_CACHE_ENTRIES = 4096


def kept(cache: dict[_K, _V], key: _K, name: str, value: _V) -> _V:
    """*value*, stored in *cache* under *key* when *name* is short (see :data:`_CACHE_ENTRIES`)."""
    if len(name) <= CACHED_NAME_LENGTH:
        if len(cache) >= _CACHE_ENTRIES:
            cache.clear()
        cache[key] = value
    return value


_CONDITIONAL_TAGS = frozenset(tag for tag, _ in CONDITIONAL)


def elements_links(
    document: ParsedDocument,
    elements: Iterable[turbohtml.Element],
    base_element: turbohtml.Element | None,
    context: Context,
    result: TextResult,
) -> None:
    """The links of *elements* (each start tag once), but the base element's.

    Pages have tens of thousands of link elements, nearly all an ``<a href>`` or an
    ``<img src>`` with a plain value, so those are done in one call,
    :func:`rewriter.html.plain.plain_links` (in C when the extension is built, its Python
    twin otherwise), which hands back what it leaves: an element for
    :func:`element_links`, or one value for the writer (:func:`attribute_links`). The
    attributes are the text's, not the tree's: they differ only for a repeated <html> or
    <body> tag (those take the general path, as :func:`_codes_of` says) and for names with
    NUL or a lone surrogate (no link either way).
    """
    lazy = context.policy.lazy_attributes
    html_tables = _CODES_HTML.setdefault(lazy, {})
    foreign_tables = _CODES_FOREIGN.setdefault(lazy, {})

    def table_of(namespace: object, tag: str) -> Codes:
        codes = _codes_of(cast(turbohtml.Namespace, namespace), tag, lazy)
        if namespace is HTML:
            return kept(html_tables, tag, tag, codes)
        return kept(foreign_tables, (namespace, tag), tag, codes)

    # Positional, in LinkSearch's field order (text, elements, line_starts, skip, html, the
    # two tables, table_of, classified, classify, link, base, layer, found, edits, counts, kept,
    # inserts, insert_texts): keyword arguments cost the call twice the time.
    search = LinkSearch(
        document.text,
        elements,
        None if document.flat else document.line_starts,
        base_element,
        HTML,
        html_tables,
        foreign_tables,
        table_of,
        context.classified,
        context.classifier(),
        Link,
        context.base,
        context.layer,
        result.found,
        result.edits,
        result.counts,
        KEPT_STATUSES,
        result.inserts,
        result.insert_texts,
    )
    left = plain_links(search)
    text = document.text
    for element, tag, name, start, end, quote, code in left:
        if name is None:
            element_links(document, element, context, result)
        elif code == SRCSET:
            attribute_links(document, tag, name, "srcset", (start, end, quote), context, result)
        elif code != LAZY_URL or looks_like_url(decoded(text[start:end]), "url"):
            attribute_links(document, tag, name, "url", (start, end, quote), context, result)


# The link tables of plain_links, per set of lazy attributes, keyed by tag for HTML elements
# and by (namespace, tag) for others (turbohtml's Namespace is an Enum, whose hash is a Python call).
_CODES_HTML: dict[frozenset[str], dict[str, Codes]] = {}
_CODES_FOREIGN: dict[frozenset[str], dict[tuple[object, str], Codes]] = {}


def _codes_of(namespace: turbohtml.Namespace, tag: str, lazy: frozenset[str]) -> Codes:
    """The link table of plain_links for *tag* in *namespace* (None: the general path always)."""
    if tag in GENERAL_PATH_ELEMENTS or (namespace is HTML and tag in _MERGED_TAGS):
        # A repeated <html> or <body> tag's attributes are the tree's, not the text's.
        return None
    table = attributes_of(NAMESPACE_NAMES.get(namespace, "html"), tag, lazy)
    codes = {}
    for name, kind in table.items():
        if is_plain_url(tag, name, kind):
            codes[name] = LAZY_URL if name in lazy else URL
        elif kind == "srcset" and name not in lazy and (tag, name) not in CONDITIONAL:
            codes[name] = SRCSET
        else:
            codes[name] = STYLE if name == "style" and kind == "css" else OTHER
    return codes


# HTML §13.2.6.4.7: a repeated <html> or <body> tag adds its attributes to the first one.
_MERGED_TAGS = frozenset({"html", "body"})


def element_links(
    document: ParsedDocument,
    element: turbohtml.Element,
    context: Context,
    result: TextResult,
) -> None:
    tag = element.tag
    if tag == "style":
        style_element(document, element, context, result)
    lazy = context.policy.lazy_attributes
    key = (id(element.namespace), tag, lazy)  # by id: the Enum's hash is a Python call
    table = _TABLES.get(key)
    if table is None:
        namespace = NAMESPACE_NAMES.get(element.namespace, "html")
        table = kept(_TABLES, key, tag, attributes_of(namespace, tag, lazy))
    kinds = {name: table[name] for name in element.attrs if name in table}
    if not kinds:
        return
    if tag in _CONDITIONAL_TAGS:
        kinds = {name: kind for name, kind in kinds.items() if applies(element.attrs, tag, name)}
    spans = document.attributes(element)
    codebase_context = None
    for name, kind in kinds.items():
        if name not in spans:
            # HTML §13.2.6.4.7: a repeated <html> or <body> tag adds its attributes to
            # the first one; their text is elsewhere and is left as it is.
            result.problems.append(repeated(tag, name))
            continue
        span = spans[name]
        if name in lazy and not looks_like_url(document.value(span), kind):
            continue
        local = context
        if (tag, name) in CODEBASE_RELATIVE and "codebase" in spans:
            if codebase_context is None:
                codebase_context = _codebase(document, spans["codebase"], context)
            local = codebase_context
        attribute_links(document, tag, name, kind, span, local, result)


def repeated(tag: str, name: str) -> Problem:
    """HTML §13.2.6.4.7: a repeated <html> or <body> tag adds its attributes to the first
    one; their text is elsewhere and is left as it is."""
    return Problem("repeated-tag", f"<{tag} {name}> comes from a repeated <{tag}> tag and was left as it is")


def decoded(raw: str) -> str:
    """An attribute value's source text as the tokenizer gives it (:meth:`ParsedDocument.value`)."""
    if "&" not in raw and "\r" not in raw and "\0" not in raw:
        return raw
    return decode_attribute(newlines_normalised(raw).replace("\0", "\ufffd"))[0]


def _codebase(document: ParsedDocument, span: tuple[int, int, str], context: Context) -> Context:
    """The base for classid/data/archive/code: the codebase resolved against the document's base."""
    value, _ = decode_attribute(document.text[span[0] : span[1]])
    start, end = strip_whitespace(value, 0, len(value))
    return context.codebase(value[start:end])
