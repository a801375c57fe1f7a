"""The engine's loop over plain link values, in one call per document: :func:`plain_links`.

Pages have tens of thousands of link elements, nearly all an ``<a href>`` or an
``<img src>`` whose value is one URL, so the engine hands every element its selector found
to one call, with everything it needs in one :class:`LinkSearch` (the compiled twin reads its
fields once per call, and makes each :class:`Link` by its field names, mapped once), which
reads each start tag from the text (as :func:`~rewriter.html.tags.tag_attributes` does),
classifies each plain value through the document's cache, records its :class:`Link` and
writes the edit that puts the new URL's prefix before it. Whatever needs more is handed back, in document
order, for the engine's general path: an element with a link attribute of another kind, a
``style`` that may hold a URL, or no table of its own; and a value with a character
reference other than ``&amp;``, a NUL, no value at all, or a new URL that is not the old one
with a prefix (or whose prefix an unquoted value cannot take).

This is the Python twin (:func:`~rewriter.document.speedups.twin`) of the compiled
``plain_links``, which runs in its place when the extension was built; without it, this is
what the engine runs. The C reads each start tag whole (cheap in C); the twin reads an
element of the tree by the attribute names the tree gives it, one pattern per name that its
table holds (:func:`~rewriter.html.tags.attribute_value_pattern`), which in Python costs a
fraction of reading every attribute, and yields the same (a property test holds the two
readings and the C together on generated trees).
"""

from __future__ import annotations

import functools
import operator
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, cast

from rewriter.document.model import Status
from rewriter.document.process import kept_answer
from rewriter.document.speedups import str_argument, twin
from rewriter.html.links import for_context
from rewriter.html.microsyntax import ASCII_WHITESPACE, decode_attribute, srcset_urls, strip_whitespace
from rewriter.html.tags import (
    ATTRIBUTE,
    QUOTE_OF_GROUP,
    QUOTE_OF_VALUE_GROUP,
    TAG_NAME,
    VALUE_OF,
    VALUELESS,
    ascii_lower,
    attribute_value_pattern,
)

__all__ = [
    "CODES",
    "LAZY_URL",
    "LINK_FIELDS",
    "OTHER",
    "SRCSET",
    "STYLE",
    "URL",
    "Codes",
    "Left",
    "LinkSearch",
    "escape_attribute",
    "named_start_tags",
    "plain_links",
]

# The codes of a link table: what an attribute name of a tag is.
URL = 1  # holds one URL, and needs nothing but its value
LAZY_URL = 2  # the same, for a lazy-loading attribute (taken only when it looks like a URL)
OTHER = 3  # a link attribute that needs more (a microsyntax, a condition, a codebase)
STYLE = 4  # a style attribute: CSS, which may hold URLs
SRCSET = 5  # image candidate strings (HTML §4.8.4.3.10), not lazy
CODES = frozenset({URL, LAZY_URL, OTHER, STYLE, SRCSET})

# An element kind's link table: attribute name -> code; None: the general path always.
Codes = dict[str, int] | None
# What is handed back: (element, tag, None, 0, 0, "", 0) for the general path, or
# (element, tag, name, start, end, quote, code) for one value (its span and quote in the text).
Left = tuple[Any, str, str | None, int, int, str, int]

# Characters of a style value after which it may hold a URL once decoded: url(), src(),
# image-set() and @import need "(" or "@", an escape can spell them, and a character
# reference can stand for any of these.
_STYLE_MAY_HOLD_URLS = re.compile(r"[(@\\&]").search
# A name the tree reads otherwise (NUL and lone surrogates as U+FFFD).
_IRREGULAR_NAME = re.compile("[\x00\ud800-\udfff]").search
# Characters that end or break an unquoted attribute value (HTML §13.2.5.40); "=" is only
# a parse error there and is common in URLs, so it stays unquoted.
NEEDS_QUOTES = frozenset("\t\n\f\r \"'<>`")
_MISSING = object()
_HAS_WHITESPACE = re.compile(f"[{ASCII_WHITESPACE}]").search
_MERGED_TAGS = frozenset({"html", "body"})
# ATTRIBUTE with its name required: None, rather than an empty match, where a tag's
# attributes end (groups: the name, 1, and the value, as QUOTE_OF_GROUP says).
_ATTRIBUTE_AT = re.compile(ATTRIBUTE.pattern.removesuffix("?")).match
# The tags of HTML start tag names as the text spells them (short ones, emptied when full).
_TAGS: dict[str, str] = {}
_CACHED_TAGS = 4096
_CACHED_TAG_LENGTH = 32


def escape_attribute(text: str, quote: str) -> str:
    """*text* for an attribute value between *quote* characters (``""`` for none)."""
    if "&" not in text and (not quote or quote not in text):
        return text  # most URLs: nothing to escape
    text = text.replace("&", "&amp;")
    if quote == '"':
        return text.replace('"', "&quot;")
    if quote == "'":
        return text.replace("'", "&#39;")
    return text


def _name_end(text: str, offset: int) -> int:
    """Past the "<" and name of the start tag at *offset*; ValueError when no "<" is there."""
    match = TAG_NAME.match(text, offset)
    if match is None:
        raise ValueError(f"no start tag at {offset}: a tag starts with '<'")
    return match.end()


def _taken(text: str, position: int, codes: dict[Any, Any]) -> list[tuple[str, int, int, str, int]] | None:
    """The URL, LAZY_URL and SRCSET attributes of the start tag whose name ends at *position*,
    in source order (name, value span, quote, code, as :func:`~rewriter.html.tags.tag_attributes`
    gives them); None when the element takes the general path."""
    general = False
    taken: list[tuple[str, int, int, str, int]] = []
    names: list[str] = []
    attribute_at = _ATTRIBUTE_AT
    while (attribute := attribute_at(text, position)) is not None:
        position = attribute.end()
        name = attribute.group(1)
        if not name.islower():  # else it has no ASCII capital
            name = ascii_lower(name)
        if ("\0" in name or not name.isascii()) and _IRREGULAR_NAME(name) is not None:
            continue  # the tree reads it otherwise (U+FFFD): no link
        code = codes.get(name)
        if code is None or name in names:  # the first of duplicate names wins
            continue
        names.append(name)
        if type(code) is not int or code not in CODES:
            raise ValueError(f"{code!r} is no code of a link table")
        last = attribute.lastindex or 1  # never None: a name is there
        if last == 1:  # no value (HTML §13.2.5.33): the empty span just after the name
            start = end = attribute.end(1)
            quote = VALUELESS
        else:
            start, end = attribute.span(last)
            quote = QUOTE_OF_GROUP[last]
        if code == OTHER or (code == STYLE and _STYLE_MAY_HOLD_URLS(text, start, end) is not None):
            general = True
        elif code != STYLE:
            taken.append((name, start, end, quote, code))
    return None if general else taken


def _new_tag(spelled: str, element: Any) -> str:
    """The tag of the HTML element whose start tag begins with *spelled* ("<" and its name), as
    the tree holds it: the name ASCII-lowercased, "image" read as "img" (HTML §13.2.6.4.7),
    kept in :data:`_TAGS`; a name with NUL or a character outside ASCII is the element's own
    ``tag`` (the tree reads NUL and lone surrogates otherwise)."""
    name = spelled[1:]
    if not name.isascii() or "\0" in name:
        return str(element.tag)
    tag = name.lower()
    tag = "img" if tag == "image" else tag
    if len(name) <= _CACHED_TAG_LENGTH:
        if len(_TAGS) >= _CACHED_TAGS:
            _TAGS.clear()
        _TAGS[spelled] = tag
    return tag


def _checked(offset: Any, size: int) -> int:
    """*offset*, a start tag's, as an int in a text of *size*: TypeError when it is no integer
    (an ``__index__`` will do), ValueError when it is outside the text."""
    offset = operator.index(offset)
    if not 0 <= offset < size:
        raise ValueError(f"no start tag at {offset}: a tag starts with '<'")
    return offset


def _srcset(
    tag: str,
    name: str,
    raw: str,
    start: int,
    quote: str,
    classified: dict[str, tuple[Status, str | None, str | None]],
    classify: Callable[[str], tuple[Status, str | None, str | None]],
    make_link: Callable[[tuple[Any, ...]], tuple[Any, ...]],
    base: str | None,
    layer: str | None,
    found: list[Any],
    edits: list[tuple[int, int, str]],
    counts: dict[Any, int] | None,
    kept: frozenset[Any],
) -> None:
    """The links of one quoted srcset value *raw* at *start*, with no "&" and no NUL: each
    candidate's URL (:func:`~rewriter.html.microsyntax.srcset_urls`) recorded, and where it
    is rewritten, the edit that puts the new URL's prefix before it, or the new URL in its
    place (:func:`~rewriter.html.links.for_context` percent-encodes what a srcset cannot hold)."""
    for first, last in srcset_urls(raw):
        reference = raw[first:last]
        status, resolved, reason = _classified(reference, classified, classify)
        at, until = start + first, start + last
        if counts is None or _counted(counts, kept, status):
            found.append(make_link((tag, name, "srcset", reference, resolved, status, reason, base, layer, at, until)))
        if (status == "rewritten" or status == "relinked") and resolved is not None and resolved != reference:
            new = for_context("srcset", resolved, raw, first)
            if reference and new.endswith(reference):
                edits.append((at, at, escape_attribute(new[: len(new) - len(reference)], quote)))
            else:
                edits.append((at, until, escape_attribute(new, quote)))


def _counted(counts: dict[Any, int], kept: frozenset[Any], status: object) -> bool:
    """A lean search's link of *status*: counted in *counts*; whether it is kept as a record."""
    counts[status] = counts.get(status, 0) + 1
    return status in kept


def _classified(
    reference: str,
    classified: dict[str, tuple[Status, str | None, str | None]],
    classify: Callable[[str], tuple[Status, str | None, str | None]],
) -> tuple[Status, str | None, str | None]:
    """The classification of *reference*: from the cache (whatever it holds there), or made
    and cached; TypeError when it is no (status, resolved, reason) whose resolved URL is a
    str or None."""
    known: Any = classified.get(reference, _MISSING)
    if known is _MISSING:
        known = kept_answer(classified, reference, classify(reference))
    if not (isinstance(known, tuple) and len(known) == 3 and (known[1] is None or isinstance(known[1], str))):
        raise TypeError("a classification is (status, resolved, reason)")
    return cast(tuple[Status, str | None, str | None], known)


def _offset(element: Any, line_starts: Sequence[int] | None, length: int) -> int | None:
    """Where *element*'s start tag is in a text of *length* (see :func:`plain_links`), or None;
    TypeError when that is no integer (an ``__index__`` will do)."""
    if line_starts is None:  # one line: the column is the offset
        offset = element.source_col
        if offset is None:
            return None
    else:
        position = element.position
        if position is None:
            return None
        line, column = position
        offset = line_starts[line - 1] + column
    offset = operator.index(offset)
    if not 0 <= offset < length:
        raise ValueError(f"no start tag at {offset}: a tag starts with '<'")
    return offset


@twin
def named_start_tags(text: str, elements: Iterable[Any], line_starts: Sequence[int] | None, name: str) -> list[Any]:
    """The elements of *elements*, in order, whose start tag in *text* (found as
    :func:`plain_links` finds it) has the tag name *name* (lowercase ASCII letters), as the
    tokenizer reads a name (HTML §13.2.5.8: ASCII letters lowercased, up to whitespace, "/"
    or ">"). Asked of the elements the selector found, it spares a query by tag, whose first
    use on a tree indexes it (0.028 s over the corpus's trees queried apart; 0.007 s of the
    engine's run, where each tree is queried just after it is built).

    >>> class Element:
    ...     def __init__(self, column): self.source_col = column
    >>> text = "<p><BASE href=x><basefont><base"
    >>> [element.source_col for element in named_start_tags(text, map(Element, [0, 3, 16, 26]), None, "base")]
    [3, 26]
    """
    text, name = str_argument(text), str_argument(name)
    found = []
    size = len(name)
    for element in elements:
        offset = _offset(element, line_starts, len(text))
        if offset is None:
            continue
        end = offset + 1 + size
        candidate = text[offset + 1 : end]
        named = len(candidate) == size and candidate.isascii() and candidate.lower() == name
        if named and (end == len(text) or text[end] in "\t\n\f\r />"):
            found.append(element)
    return found


class LinkSearch(NamedTuple):
    """What :func:`plain_links` is given: one object, which the compiled twin reads once per
    call. *text* and its *elements* (see :func:`plain_links`), *line_starts* (None: the
    parser read one line), the element to *skip*, the *html* namespace; the link tables
    (*html_tables*, *foreign_tables*, and *table_of* for a miss); the cache of
    classifications (*classified*, filled by *classify*); what each :class:`Link` is made as
    (*link*, a named tuple type with Link's fields in any order, filled by name) and with
    (*base*, *layer*); and the lists filled (*found*, *edits*). With *counts* a dict (not
    None), the search is lean: each link is counted in it by status, and only one whose
    status is in *kept* (a set or a frozenset) is made and appended to *found*. With *inserts*
    a bytearray and *insert_texts* a list (not None), an edit that puts a prefix before a URL,
    (at, at, text), is kept compactly: *at* appended to *inserts* as 8 bytes (a signed
    integer in the machine's byte order, an array's "q"), *text* to *insert_texts*.

    A named tuple, not a dataclass (see docs/decisions.md, "What every run makes at start"):
    made for each document, read by name, never changed. Its fields are in the order both
    twins read them (the C's enum has it too)."""

    text: str
    elements: Iterable[Any]
    line_starts: Sequence[int] | None
    skip: object
    html: object
    html_tables: dict[str, Codes]
    foreign_tables: dict[tuple[object, str], Codes]
    table_of: Callable[[object, str], Codes]
    classified: dict[str, tuple[Status, str | None, str | None]]
    classify: Callable[[str], tuple[Status, str | None, str | None]]
    link: type[tuple[Any, ...]]
    base: str | None
    layer: str | None
    found: list[Any]
    edits: list[tuple[int, int, str]]
    counts: dict[Any, int] | None = None
    kept: frozenset[Any] = frozenset()
    inserts: bytearray | None = None
    insert_texts: list[str] | None = None


# The fields of LinkSearch in the order both twins read them (once per call), and the fields
# of a Link the search fills, in the order _make_link takes them.
_SEARCH_FIELDS = LinkSearch._fields
LINK_FIELDS = (
    "element",
    "attribute",
    "kind",
    "original",
    "resolved",
    "status",
    "reason",
    "base",
    "layer",
    "start",
    "end",
)


def _link_maker(link_type: type[tuple[Any, ...]]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """What makes a *link_type* of the values of :data:`LINK_FIELDS`, each put in its place
    by name (its ``_fields``); TypeError unless those are exactly LINK_FIELDS's names, or
    tuple.__new__ refuses the type (a struct sequence, whose fields go past a tuple's)."""
    names: Any = link_type._fields  # type: ignore[attr-defined]
    if (
        type(names) is not tuple
        or len(names) != len(LINK_FIELDS)
        or not all(type(name) is str for name in names)
        or sorted(names) != sorted(LINK_FIELDS)
    ):
        raise TypeError("plain_links: a link type is a named tuple with Link's fields")
    new = tuple.__new__
    new(link_type)  # TypeError unless tuple.__new__ makes this type
    slots = [names.index(name) for name in LINK_FIELDS]
    if slots == list(range(len(LINK_FIELDS))):
        return functools.partial(new, link_type)

    def make(values: tuple[Any, ...]) -> tuple[Any, ...]:
        ordered: list[Any] = [None] * len(values)
        for slot, value in zip(slots, values, strict=True):
            ordered[slot] = value
        return new(link_type, ordered)

    return make


@twin
def plain_links(search: LinkSearch) -> list[Left]:
    """The plain links of *search*'s *elements* (each start tag once, *skip* left out) of its *text*
    (:class:`LinkSearch`: the names below are its fields).

    Each element has ``position`` (``(line, column)`` or None: no start tag in the text),
    ``source_col`` (its column, or None), ``namespace`` and ``tag``. Its start tag is at
    ``source_col`` when *line_starts* is None (the parser read one line), else at
    ``line_starts[line - 1] + column``; a start tag seen before (a reopened formatting
    element) is not read again. In the namespace *html* its tag is read from the text, as
    the tree reads it (:func:`_new_tag`); its link table is ``html_tables[tag]`` there,
    ``foreign_tables[(namespace, tag)]`` in others, or what ``table_of(namespace, tag)``
    gives when that has none (it may add it).

    An element takes the general path when its table is None; or its start tag (read as
    :func:`~rewriter.html.tags.tag_attributes` reads it) has an attribute its table calls
    OTHER, or a STYLE one whose value holds "(", "@", "\\" or "&". Otherwise each attribute
    its table calls URL, LAZY_URL or SRCSET, in source order, is one value. An attribute
    whose name holds NUL or a lone surrogate is no link (the tree reads those as U+FFFD, so
    no element's attribute has that name).

    An element in *html* that has ``attrs`` is taken as turbohtml made it from that start
    tag: its ``tag`` and the names of ``attrs`` (in source order, the first of duplicates)
    are the start tag's as the tokenizer reads them, but for a repeated <html> or <body>
    tag (HTML §13.2.6.4.7). The twin reads such an element by those names; the C reads
    every element from the text: the same results on every tree.

    A URL or LAZY_URL value is handed back with no value, a NUL, or an "&" that is not
    "&amp;"; skipped when LAZY_URL and, "&amp;" read as "&", it holds "<", ">" or ASCII
    whitespace between its ends; else its reference (the value, "&amp;" read as "&", without
    leading and trailing ASCII whitespace) is classified (``classified``, filled by
    ``classify`` on a miss) as (status, resolved, reason). When the status is "rewritten" or
    "relinked" and the resolved URL is another that ends with the reference, the part before
    it is the prefix; with no prefix, or one holding a character :data:`NEEDS_QUOTES` names
    in an unquoted value, the value is handed back. Otherwise a *link* of (tag, name, "url",
    reference, resolved, status, reason, *base*, *layer*, start, end), put in its fields by
    name (:data:`LINK_FIELDS`), is appended to *found*, the span being the reference's in the
    text, and with a prefix the edit (start, start, the prefix escaped for its quote) to *edits*.
    A lean search (*counts* a dict) first counts the link's status in *counts*
    (``counts[status] = counts.get(status, 0) + 1``) and makes and appends the link only when
    its status is in *kept*; the edit is made all the same.

    A SRCSET value is handed back unless it is quoted and holds no "&" and no NUL; then each
    of its candidates' URLs is classified and recorded alike (kind "srcset"), with the edit
    the engine's general path makes (:func:`_srcset`).

    Returns what is handed back, in order: ``(element, tag, None, 0, 0, "", 0)`` for the
    general path, ``(element, tag, name, start, end, quote, code)`` for a value (its span
    and quote as :func:`~rewriter.html.tags.tag_attributes` gives them). ValueError for a
    code outside :data:`CODES` (an int) or a start tag that is not there. TypeError for a
    *text* that is no str, tables and a cache that are not dicts, *found* and *edits* that
    are not lists, *counts* that is neither None nor a dict, *kept* that is no set or
    frozenset (exactly: a subclass's methods would be called here and not in C),  a
    *link* that is no named tuple type with Link's fields that ``tuple.__new__`` makes, a link table
    that is no dict or None, or a classification that is no (status, resolved, reason)
    with a str or None resolved.

    *elements* is iterated as it is when each element is reached: should a callback (an
    element's attribute, ``table_of`` or ``classify``) empty the list, the loop ends after
    the element under way.
    """
    return _links(_Search(search))


def _links(run: _Search) -> list[Left]:
    """:func:`plain_links` over one search's fields. An element of the tree (an HTML one with
    ``attrs``) is read by the names it has, the common value (one plain URL) done here;
    any other element by :func:`_by_text`."""
    text, line_starts, skip, seen, left, size = run.text, run.line_starts, run.skip, run.seen, run.left, len(run.text)
    html, html_tables, table_of = run.html, run.html_tables, run.table_of
    classified, classify, found, make_link = run.classified, run.classify, run.found, run.make_link
    counts, kept = run.counts, run.kept
    base, layer, value_of = run.base, run.layer, VALUE_OF
    for element in run.elements:
        if line_starts is None:
            offset = element.source_col
            if offset is None:
                continue
        elif (position := element.position) is not None:
            line, column = position
            offset = line_starts[line - 1] + column
        else:
            continue
        if type(offset) is not int or not 0 <= offset < size:
            offset = _checked(offset, size)
        if offset in seen:
            continue
        seen.add(offset)
        if element is skip:
            continue
        try:
            attrs = element.attrs if element.namespace is html else None
        except AttributeError:  # not turbohtml's
            attrs = None
        if attrs is None:
            _by_text(run, element, offset)
            continue
        # An element of the tree: its tag and attribute names (in source order) are its
        # start tag's as the tokenizer reads them (see _new_tag), so its link attributes are
        # found by name; but a repeated <html> or <body> tag adds its attributes to the first
        # (HTML §13.2.6.4.7), which the text has elsewhere.
        tag = element.tag
        codes = html_tables[tag] if tag in html_tables else table_of(html, tag)
        if type(codes) is not dict or tag in _MERGED_TAGS or text[offset] != "<":
            _by_text(run, element, offset, (tag, codes))
            continue
        names: Any = codes.keys() & attrs
        if not names:
            continue
        if len(names) == 1:
            (name,) = names
            code = codes[name]
            if type(code) is int and code == URL:
                match = (value_of.get(name) or attribute_value_pattern(name))(text, offset)
                if match is not None and (last := match.lastindex) is not None:
                    start, end = match.span(last)
                    raw = text[start:end]
                    if "&" not in raw and "\0" not in raw and raw.strip(ASCII_WHITESPACE) == raw:
                        # _value's common case, inline.
                        known: Any = classified.get(raw, _MISSING)
                        if known is _MISSING:
                            known = kept_answer(classified, raw, classify(raw))
                        if type(known) is not tuple or len(known) != 3:
                            known = _classified(raw, classified, classify)  # its check, and its TypeError
                        status, resolved, reason = known
                        if resolved is not None and type(resolved) is not str:
                            _classified(raw, classified, classify)  # its TypeError
                        quote = QUOTE_OF_VALUE_GROUP[last]
                        prefix = None
                        if (status == "rewritten" or status == "relinked") and resolved is not None and resolved != raw:
                            prefix = resolved[: len(resolved) - len(raw)] if raw and resolved.endswith(raw) else None
                            if prefix is None or (not quote and not NEEDS_QUOTES.isdisjoint(prefix)):
                                left.append((element, tag, name, start, end, quote, code))
                                continue
                        if counts is None or _counted(counts, kept, status):
                            found.append(
                                make_link((tag, name, "url", raw, resolved, status, reason, base, layer, start, end))
                            )
                        if prefix is not None:
                            run.insert(start, escape_attribute(prefix, quote))
                        continue
        if not _by_names(run, element, tag, offset, attrs, codes, names):
            _by_text(run, element, offset, (tag, codes))
    return left


def _by_names(run: _Search, element: Any, tag: str, offset: int, attrs: Any, codes: dict[Any, Any], names: Any) -> bool:
    """The values of the HTML start tag of *element* at *offset* that its table *codes*
    names, found by the names *attrs* (the tree's, in source order) says it has: *names*,
    the table's among them. One pattern per name
    (:func:`~rewriter.html.tags.attribute_value_pattern`), not a match per attribute. False,
    with nothing done, when the text lacks one of those names."""
    if len(names) > 1:
        names = [name for name in attrs if name in names]  # source order
    text = run.text
    general = False
    taken: list[tuple[str, int, int, str, int]] = []
    for name in names:
        code = codes[name]
        if type(code) is not int or code not in CODES:
            raise ValueError(f"{code!r} is no code of a link table")
        if code == OTHER or general:
            general = True
            continue
        match = (VALUE_OF.get(name) or attribute_value_pattern(name))(text, offset)
        if match is None:
            return False
        last = match.lastindex
        if last is None:  # no value (HTML §13.2.5.33): the empty span just after the name
            start = end = match.end()
            quote = VALUELESS
        else:
            start, end = match.span(last)
            quote = QUOTE_OF_VALUE_GROUP[last]
        if code != STYLE:
            taken.append((name, start, end, quote, code))
        elif _STYLE_MAY_HOLD_URLS(text, start, end) is not None:
            general = True
    if general:
        run.left.append((element, tag, None, 0, 0, "", 0))
    else:
        for name, start, end, quote, code in taken:
            _value(run, element, tag, name, start, end, quote, code)
    return True


def _by_text(run: _Search, element: Any, offset: int, known: tuple[str, Any] | None = None) -> None:
    """The values of *element*'s start tag at *offset*, each attribute read from the text
    (:func:`_taken`); *known*: its tag and table, when looked up already."""
    text = run.text
    if known is None:
        tag, name_end, codes = _table(run, element, offset)
    else:
        (tag, codes), name_end = known, 0
    if codes is not None and type(codes) is not dict:
        raise TypeError(f"a link table is a dict or None, not {type(codes).__name__}")
    taken = None if codes is None else _taken(text, name_end or _name_end(text, offset), codes)
    if taken is None:
        run.left.append((element, tag, None, 0, 0, "", 0))
        return
    for name, start, end, quote, code in taken:
        _value(run, element, tag, name, start, end, quote, code)


def _table(run: _Search, element: Any, offset: int) -> tuple[str, int, Codes]:
    """The tag of *element*, whose start tag is at *offset* (an HTML one as the text spells
    it, :func:`_new_tag`), where its name ends (0: not read yet), and its link table."""
    namespace = element.namespace
    if namespace is run.html:
        text = run.text
        if (match := TAG_NAME.match(text, offset)) is None:
            raise ValueError(f"no start tag at {offset}: a tag starts with '<'")
        tag = _TAGS.get(spelled := match.group()) or _new_tag(spelled, element)
        tables = run.html_tables
        codes = tables[tag] if tag in tables else run.table_of(namespace, tag)
        name_end = match.end()
    else:
        tag, name_end = element.tag, 0
        key = (namespace, tag)
        codes = run.foreign_tables[key] if key in run.foreign_tables else run.table_of(namespace, tag)
    return tag, name_end, codes


def _value(run: _Search, element: Any, tag: str, name: str, start: int, end: int, quote: str, code: int) -> None:
    """One value of *element* (its span, quote and code): the common one (a URL with no "&",
    NUL or whitespace at its ends) done here, any other by :meth:`_Search.value`."""
    raw = run.text[start:end]
    if code != URL or quote == VALUELESS or "&" in raw or "\0" in raw or raw.strip(ASCII_WHITESPACE) != raw:
        run.value(element, tag, name, start, end, quote, code)
        return
    known: Any = run.classified.get(raw, _MISSING)
    if known is _MISSING:
        known = kept_answer(run.classified, raw, run.classify(raw))
    if not (type(known) is tuple and len(known) == 3 and (known[1] is None or type(known[1]) is str)):
        known = _classified(raw, run.classified, run.classify)  # its check, and its TypeError
    status, resolved, reason = known
    prefix = None
    if (status == "rewritten" or status == "relinked") and resolved is not None and resolved != raw:
        prefix = resolved[: len(resolved) - len(raw)] if raw and resolved.endswith(raw) else None
        if prefix is None or (not quote and not NEEDS_QUOTES.isdisjoint(prefix)):
            run.left.append((element, tag, name, start, end, quote, code))
            return
    if run.counts is None or _counted(run.counts, run.kept, status):
        run.found.append(
            run.make_link((tag, name, "url", raw, resolved, status, reason, run.base, run.layer, start, end))
        )
    if prefix is not None:
        run.insert(start, escape_attribute(prefix, quote))


class _Search:
    """One call of :func:`plain_links`: its search's fields, read once, checked as the C
    checks them, and what is handed back."""

    def __init__(self, search: LinkSearch) -> None:
        # Each field read once, in the order the C reads them (a caller's search may compute one).
        (
            text, elements, line_starts, skip, html, html_tables, foreign_tables, table_of, classified, classify,
            link_type, base, layer, found, edits, counts, kept, inserts, insert_texts,
        ) = (getattr(search, name) for name in _SEARCH_FIELDS)  # fmt: skip
        self.text = str_argument(text)
        if (
            not (type(html_tables) is type(foreign_tables) is type(classified) is dict)
            or not (type(found) is type(edits) is list)
            or not (counts is None or type(counts) is dict)
            or type(kept) not in (set, frozenset)
            or not (inserts is insert_texts is None or (type(inserts) is bytearray and type(insert_texts) is list))
        ):
            raise TypeError(
                "plain_links: the tables and the cache are dicts, found and edits lists, counts None or a dict, "
                "kept a set, inserts and insert_texts None or a bytearray and a list"
            )
        self.make_link: Callable[[tuple[Any, ...]], tuple[Any, ...]] = _link_maker(link_type)
        self.elements: Iterable[Any] = elements
        self.line_starts: Sequence[int] | None = line_starts
        self.skip: object = skip
        self.html: object = html
        self.html_tables: dict[str, Codes] = html_tables
        self.foreign_tables: dict[tuple[object, str], Codes] = foreign_tables
        self.table_of: Callable[[object, str], Codes] = table_of
        self.classified: dict[str, tuple[Status, str | None, str | None]] = classified
        self.classify: Callable[[str], tuple[Status, str | None, str | None]] = classify
        self.base: str | None = base
        self.layer: str | None = layer
        self.found: list[Any] = found
        self.edits: list[tuple[int, int, str]] = edits
        self.counts: dict[Any, int] | None = counts
        self.kept: frozenset[Any] = kept
        self.inserts: bytearray | None = inserts
        self.insert_texts: list[str] | None = insert_texts
        self.seen: set[int] = set()
        # Each edit's text once (the C's too): a page's prefixes repeat, one str a link held
        # about 80 bytes for each.
        self.prefixes: dict[str, str] = {}
        self.left: list[Left] = []

    def insert(self, at: int, text: str) -> None:
        """The edit (at, at, text), *text* the equal str this call wrote before where there is
        one (:attr:`prefixes`): in *edits*, or kept compactly (see :class:`LinkSearch`)."""
        text = self.prefixes.setdefault(text, text)
        if self.inserts is None or self.insert_texts is None:
            self.edits.append((at, at, text))
        else:
            self.inserts += at.to_bytes(8, sys.byteorder, signed=True)
            self.insert_texts.append(text)

    def value(self, element: Any, tag: str, name: str, start: int, end: int, quote: str, code: int) -> None:
        """One URL, LAZY_URL or SRCSET value of *element* at *start*: recorded (its edits
        made), skipped, or handed back."""
        raw = self.text[start:end]
        if code == SRCSET:
            if quote not in ('"', "'") or "\0" in raw or "&" in raw:
                self.left.append((element, tag, name, start, end, quote, code))
            else:
                _srcset(
                    tag, name, raw, start, quote, self.classified, self.classify, self.make_link, self.base,
                    self.layer, self.found, self.edits, self.counts, self.kept,
                )  # fmt: skip
        elif not self.url(tag, name, raw, start, quote, code):
            self.left.append((element, tag, name, start, end, quote, code))

    def url(self, tag: str, name: str, raw: str, start: int, quote: str, code: int) -> bool:
        """One URL or LAZY_URL value *raw* at *start*: recorded (its edit made) or skipped,
        True; False when it is to be handed back."""
        if quote == VALUELESS or "\0" in raw or raw.count("&") != raw.count("&amp;"):
            return False
        value, offsets = decode_attribute(raw)  # "&amp;" only, or nothing
        first, last = strip_whitespace(value, 0, len(value))
        reference = value[first:last]
        if code == LAZY_URL and ("<" in value or ">" in value or _HAS_WHITESPACE(reference) is not None):
            return True
        status, resolved, reason = _classified(reference, self.classified, self.classify)
        prefix = None
        if (status == "rewritten" or status == "relinked") and resolved is not None and resolved != reference:
            if not reference or not resolved.endswith(reference):
                return False
            prefix = resolved[: len(resolved) - len(reference)]
            if not quote and not NEEDS_QUOTES.isdisjoint(prefix):
                return False
        at = start + (first if offsets is None else offsets[first])
        until = start + (last if offsets is None else offsets[last])
        if self.counts is None or _counted(self.counts, self.kept, status):
            self.found.append(
                self.make_link(
                    (tag, name, "url", reference, resolved, status, reason, self.base, self.layer, at, until)
                )
            )
        if prefix is not None:
            self.insert(at, escape_attribute(prefix, quote))
        return True
