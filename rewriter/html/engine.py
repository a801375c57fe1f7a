"""The HTML engine: find every URL in a document, resolve it through the base layers,
and splice the absolute form into the original bytes, changing no other byte.

One primitive, :func:`rewrite_text`, finds every link site once (like lxml's
``iterlinks``) and the edits for it; :func:`rewrite_html` and :func:`find_links` are
thin layers on it.

The document is parsed by turbohtml (WHATWG tree construction, scripting on, as browsers
run: ``<noscript>`` is raw text; its text is read again as a browser with scripting off
reads it, see :func:`_noscript_links`). The tree
says what each tag is (its namespace, whether it is in ``<template>`` content) and
where its start tag begins; a tokenizer-exact scan of that one tag gives the byte
span of each attribute value. Nothing is re-serialised.

>>> result = rewrite_html(b'<base href="/docs/"><a href="guide.html#s">x</a><a href="#top">t</a>',
...                       url="https://example.org/index.html")
>>> result.output
b'<base href="https://example.org/docs/"><a href="https://example.org/docs/guide.html#s">x</a><a href="#top">t</a>'
>>> [(link.attribute, link.status) for link in result.links]
[('href', 'rewritten'), ('href', 'rewritten'), ('href', 'same-document')]
"""

from __future__ import annotations

import bisect
import re
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple, TypeVar, cast

import turbohtml

from rewriter.css import syntax as css
from rewriter.css.stylesheet import css_links
from rewriter.css.syntax import css_urls, may_hold_urls
from rewriter.document.encoding import decode_checked, sniff
from rewriter.document.model import DocumentResult, Kind, Link, NoBaseError, Status, new_link
from rewriter.document.process import (
    Context,
    DocumentOptions,
    TextResult,
    frozen_base,
    process,
    require_base,
    shifted,
    spliced,
)
from rewriter.document.speedups import COMPILED, str_argument, twin
from rewriter.html.links import Namespace, Site, ViewElement, applies, for_context, looks_like_url, url_spans
from rewriter.html.microsyntax import (
    ASCII_WHITESPACE,
    decode_attribute,
    strip_whitespace,
)
from rewriter.html.plain import (
    LAZY_URL,
    NEEDS_QUOTES,
    OTHER,
    SRCSET,
    STYLE,
    URL,
    Codes,
    LinkSearch,
    escape_attribute,
    named_start_tags,
    plain_links,
)
from rewriter.html.table import CACHED_NAME_LENGTH, CODEBASE_RELATIVE, CONDITIONAL, attributes_of, selector
from rewriter.html.tags import (
    TAG_NAME,
    VALUELESS,
    Span,
    ascii_lower,
    end_tag,
    tag_attributes,
    tag_end,
)
from rewriter.policy import Policy
from rewriter.problems import Problem
from rewriter.url.base import Base, Candidates, Layer, chain, from_fallback, usable_as_base
from rewriter.url.resolve import parse

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ByteView",
    "HTMLResult",
    "Layer",
    "Link",
    "NoBaseError",
    "Status",
    "conditional_spans",
    "find_links",
    "rewrite_html",
    "rewrite_text",
    "saved_from",
    "saved_from_mark",
    "start_tags",
]

# The result's older name: a style sheet gives the same type.
HTMLResult = DocumentResult

_SAVED_FROM = re.compile(r"<!--\s*saved from url=\((\d{4})\)")
# <!--[if IE]>...<![endif]-->: the head, then the first end after it. Two patterns: one
# with a lazy ".*?" between them steps through the text one character at a time.
# A condition is short ("[if lt IE 9]", "[if (gte mso 9)|(IE)]"): bounded, so that a
# page of heads with no "]" is not read to its end once per head.
_CONDITIONAL_HEAD = re.compile(r"<!--\[(?i:if)[^\]]{0,256}\]>").match
_CONDITIONAL_END = re.compile(r"<!\[(?i:endif)\]\s*-->").search


@twin
def conditional_head(text: str, start: int) -> int:
    """Where the first ``<!--[`` at or after *start* is (-1: nowhere), as ``str.find`` says:
    where a conditional comment may start. Compiled, a search for the rare "[" (memchr)
    and then the four characters before it, four times the speed of ``str.find``'s here.

    >>> conditional_head("<p><!--[if IE]>", 0), conditional_head("<!--[", 1)
    (3, -1)
    """
    return str_argument(text).find("<!--[", start)


@twin
def flattened(text: str) -> str:
    """*text* with each line feed and carriage return a space: one line, so that a start
    tag's column is its offset (see :class:`ParsedDocument`); *text* itself when it has none.
    Compiled, one copy and then memchr for each line break in it (two ``str.replace`` copy
    twice when both occur); on the corpus about the time of ``str.replace``.

    >>> flattened("<p>\\r\\n<a\\rhref=x>")
    '<p>  <a href=x>'
    """
    text = str_argument(text).replace("\n", " ")
    return text.replace("\r", " ") if "\r" in text else text


def conditional_spans(text: str) -> Iterator[tuple[int, int, int, int]]:
    """Each ``<!--[if ...]>...<![endif]-->`` of *text*, in order: where the comment
    starts, where its markup starts and ends, and where the comment ends.

    Linear in the text: the end found for one head serves every head before it, and
    when no end follows a head none follows a later one.

    >>> list(conditional_spans("<!--[if IE]><p><![endif]--> <!--[if x]>"))
    [(0, 12, 15, 27)]
    """
    end: re.Match[str] | None = None
    position = conditional_head(text, 0)
    while position >= 0:
        # A search for "<!--[", then the pattern where it could match: a case-insensitive
        # pattern searched over the whole text tries it at every offset.
        head = _CONDITIONAL_HEAD(text, position)
        if head is None:
            position = conditional_head(text, position + 5)
            continue
        if end is None or end.start() < head.end():
            end = _CONDITIONAL_END(text, head.end())
            if end is None:
                return
        yield position, head.end(), end.start(), end.end()
        position = conditional_head(text, end.end())


_HTML = turbohtml.Namespace.HTML
_NAMESPACE_NAMES: dict[turbohtml.Namespace, Namespace] = {
    turbohtml.Namespace.HTML: "html",
    turbohtml.Namespace.SVG: "svg",
    turbohtml.Namespace.MATHML: "math",
}


def _tag_name(text: str, offset: int) -> re.Match[str]:
    """The "<" and name of the tag that starts at *offset* (where a start tag's "<" is)."""
    match = TAG_NAME.match(text, offset)
    assert match is not None
    return match


# The same reading as one pattern that runs from "<" to the value of one named
# attribute, over a whole start tag in a single call. Each piece can be read one way
# only (a name or unquoted value runs as far as it can, a value is taken whenever an
# "=" follows), so the match is the sequence of ATTRIBUTE matches and never
# backtracks into another reading. ASCII case folds only, as the tokenizer lowercases.
_WHITESPACE_RUN = r"[\t\n\f\r ]*(?![\t\n\f\r ])"
_NAME_ENDED = r"(?![^\t\n\f\r /=>])"
_UNQUOTED_ENDED = r"(?![^\t\n\f\r >])"
_ANY_VALUE = (
    rf"(?:{_WHITESPACE_RUN}={_WHITESPACE_RUN}"
    rf"(?:\"[^\"]*(?:\"|\Z)|'[^']*(?:'|\Z)|(?![\"'])[^\t\n\f\r >]*{_UNQUOTED_ENDED})"
    r"|(?![\t\n\f\r ]*=))"
)
_ONE_VALUE = (
    rf"(?:{_WHITESPACE_RUN}={_WHITESPACE_RUN}"
    r"(?:\"([^\"]*)(?:\"|\Z)|'([^']*)(?:'|\Z)|(?![\"'])([^\t\n\f\r >]*))"
    r"|(?![\t\n\f\r ]*=))"
)
_ANY_NAME = rf"[^\t\n\f\r />][^\t\n\f\r /=>]*{_NAME_ENDED}"
_TAG_NAME_ENDED = r"<[^\t\n\f\r />]*(?![^\t\n\f\r />])"
_VALUE_OF: dict[str, Callable[[str, int], re.Match[str] | None]] = {}


def attribute_value_pattern(name: str) -> Callable[[str, int], re.Match[str] | None]:
    """A matcher from a start tag's "<" to its first attribute *name* (lowercase):
    groups 1, 2 and 3 hold the value, double-, single- or un-quoted; none matched: no value."""
    matcher = _VALUE_OF.get(name)
    if matcher is None:
        this = f"(?i:{re.escape(name)}){_NAME_ENDED}"
        matcher = _VALUE_OF[name] = re.compile(
            rf"{_TAG_NAME_ENDED}(?:[\t\n\f\r /]*(?!{this}){_ANY_NAME}{_ANY_VALUE})*[\t\n\f\r /]*{this}{_ONE_VALUE}",
            re.ASCII,
        ).match
    return matcher


QUOTE_OF_VALUE_GROUP = {1: '"', 2: "'", 3: ""}
_LINE_BREAK = re.compile(r"\r\n?|\n")
_LONE_CR = re.compile(r"\r(?!\n)")
_SURROGATE = re.compile("[\ud800-\udfff]")


def for_parser(text: str) -> str:
    """*text* as the parser may take it: a lone surrogate (from an undecodable byte, a
    UTF-16 code unit, or a str input) becomes U+FFFD, one code point for one, so every
    offset stays the same. Our own text keeps them, for splicing."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def starts_of_lines(text: str) -> list[int]:
    """The offset at which each line starts; CRLF, CR and LF end a line (HTML §13.2.3.5)."""
    if "\r" in text and _LONE_CR.search(text):
        return [0, *[match.end() for match in _LINE_BREAK.finditer(text)]]
    starts = [0]  # str.find is memchr: three times the speed of a regular expression here
    append, find = starts.append, text.find
    position = find("\n")
    while position >= 0:
        append(position + 1)
        position = find("\n", position + 1)
    return starts


def _newlines_normalised(text: str) -> str:
    """HTML §13.2.3.5: CR LF and a lone CR read as LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


# A DOCTYPE whose public or system identifier (a quoted string, which ">" ends) holds a
# line break: the one place outside text and attribute values where a line break and a
# space do not build the same tree (the identifiers decide quirks mode, HTML §13.2.6.4.1).
_DOCTYPE_IDENTIFIER_BREAK = re.compile(
    r"<!(?i:doctype)(?:[^\"'>]|\"[^\">]*\"|'[^'>]*')*(?:\"[^\">]*[\r\n]|'[^'>]*[\r\n])"
).match
# What may come before the DOCTYPE that counts (HTML §13.2.6.4.1 "initial" insertion mode):
# whitespace and comments (§13.2.5.43-52: "<!-->", "<!--->", or up to "-->" or "--!>"), and
# the bogus comments "<!...>", "<?...>" and "</" + not a letter (§13.2.5.6, 8, 42).
_BEFORE_DOCTYPE = re.compile(
    r"(?:[\t\n\f\r ]+|<!--(?:-?>|[^-]*(?:-(?!-!?>)[^-]*)*--!?>)|<!(?!--|(?i:doctype))[^>]*>"
    r"|<\?[^>]*>|</(?![A-Za-z])[^>]*>)*"
).match
_before_doctype = cast(Callable[[str], "re.Match[str]"], _BEFORE_DOCTYPE)  # (...)*: it matches everywhere


class ParsedDocument:
    """One parsed document or srcdoc: its text, its tree, and where each start tag is.

    The parser is given the text with each CR and LF replaced by a space: one line, so a
    start tag's position (line 1, column) is its offset in the text, with no table of
    line starts to build. The tree is the same (HTML §13.2.5 and §13.2.6 read LF, CR, FF,
    tab and space alike everywhere but in text, attribute values and a DOCTYPE's
    identifiers), so nothing is read from the tree's attribute values or text: values
    come from the text (:meth:`attribute_value`), comments are compared through
    :meth:`as_parsed`. A DOCTYPE identifier with a line break keeps the lines.
    """

    def __init__(self, text: str, readable: bool = False, *, noscript_fragment: bool = False) -> None:
        self.text = text
        parser_text = text if readable else for_parser(text)
        # A fragment has no DOCTYPE that counts (HTML §13.4 "parsing HTML fragments").
        self.flat = noscript_fragment or _DOCTYPE_IDENTIFIER_BREAK(text, _before_doctype(text).end()) is None
        if self.flat:
            parser_text = flattened(parser_text)
            self.line_starts = [0]
        else:
            # HTML §13.2.3.5: the parser sees CR and CRLF as LF; positions are lines and columns.
            self.line_starts = starts_of_lines(text)
        self.parser_text = parser_text
        # Where the scripting-on and scripting-off readings part (see _noscript_links).
        self.diverges_at: int | None = None
        self.scripting = not noscript_fragment  # how the tree was built
        self._noscript: tuple[list[int], list[int]] | None = None
        self._selected: tuple[frozenset[str], list[turbohtml.Element]] | None = None
        # The page a browser builds (scripting on, its default): <noscript> is raw text
        # (HTML §13.2.6.4.4 and §13.2.6.4.7), so neither a <base> nor a raw-text element
        # opened in it reaches past its first "</noscript". What a browser with scripting
        # off reads there is parsed apart, range by range (noscript_fragment).
        self.tree: turbohtml.Document | turbohtml.Element
        if noscript_fragment:
            # The text of one <noscript> as a browser with scripting off reads it: markup,
            # where a <noscript> inside is an element like others.
            self._noscript = ([], [])
            self.tree = turbohtml.parse_fragment(parser_text, "noscript", scripting=False)
        else:
            self.tree = _parse(parser_text)
            self._stray_heads_ignored()
            self._framesets_as_browsers_build()

    def _framesets_as_browsers_build(self) -> None:
        """Ignore each ``<frameset>`` that a browser ignores because a ``<template>`` came first.

        A start tag "template" sets the frameset-ok flag to "not ok" (HTML §13.2.6.4.4 "in
        head", which "in body" and every other mode defer to), so that a later ``<frameset>``
        "in body" is ignored (§13.2.6.4.7), and so is one in template contents (§13.2.6.4.18
        sends it to "in body"); only in "before head", "in head" and "after head" is one taken
        whatever the flag. turbohtml never sets the flag for a template: after
        ``<p><template></template>`` its ``<frameset>`` took the body's place, and every link
        before it in the body and after it was lost, where a browser keeps them all.

        So when the tree is a frameset document and a ``<template`` comes before its
        ``<frameset>``, the mode there is asked of a parse of the text before it with a
        ``<meta>`` after: in ``<head>`` means one of those three modes (the frameset stays);
        elsewhere, with a template element made before it, the browser ignores this
        ``<frameset>`` and every later one (the flag never goes back, nor the mode to "after
        head"). Each is then read as ``<frame`` and three spaces, which every mode ignores as
        it ignores a ``<frameset>`` there (§13.2.6.4.7: "frame", parse error, ignored; the
        same length, so every offset holds), and the text is parsed again.
        """
        frameset = _top_frameset(self.tree)
        if frameset is None:
            return
        at = self.offset(frameset)
        text = self.parser_text
        if _TEMPLATE_TAG.search(text, 0, at) is None or not self._frameset_ignored(text[:at]):
            return
        self.parser_text = text[:at] + _FRAMESET_TAG.sub(_as_frame, text[at:])
        self.tree = _parse(self.parser_text)

    def _frameset_ignored(self, before: str) -> bool:
        """Whether a browser ignores a ``<frameset>`` that comes after *before* (where a start
        tag may begin): a template element was made, and the insertion mode is not one that
        takes a ``<frameset>`` whatever the flag (see :meth:`_framesets_as_browsers_build`)."""
        probed = self._probe(before)
        if probed is None or _in_head(probed[1]):
            return False
        # Elsewhere (in body, in template contents), the flag decides: "not ok" once a template
        # element was made; otherwise as turbohtml keeps it.
        return any(t.namespace == _HTML and t.position is not None for t in probed[0].select("template"))

    def _stray_heads_ignored(self) -> None:
        """Read as a browser does a ``<head>`` start tag, or a second ``<html>`` one, met in
        "after head": the one is ignored and the other's attributes go to the html element,
        the mode staying "after head" (HTML §13.2.6.4.6, "in body" for ``<html>``). turbohtml
        takes either for "anything else" and opens a body there; a ``<frameset>`` after it
        then took that body's place with the head's elements after the tag in it (a
        ``<base>``, a ``<link>``), or was ignored where a browser builds it.

        Only before a ``<frameset`` (elsewhere a head element in a body is the same link
        site), for the first few such tags before it (a constant number of parses whatever the
        page): each met in the head's modes (a ``<meta>`` there goes to the head, see
        :meth:`_probe`) is read as spaces, which those modes take as nothing or as a text
        node, never a body; the same length, so every offset holds.
        """
        text = self.parser_text
        last = deque(_FRAMESET_TAG.finditer(text), maxlen=1)  # the last: no stray tag after it matters
        if not last:
            return
        own = {self.offset(element) for element in self.tree.select("html, head") if element.position is not None}
        stray = [match.start() for match in _HEAD_OR_HTML_TAG.finditer(text, 0, last[0].start())]
        stray = [start for start in stray if start not in own][:_STRAY_TAGS]
        blanked = text
        for start in stray:
            probed = self._probe(blanked[:start])
            if probed is not None and _in_head(probed[1]):
                end = tag_end(blanked, start)
                blanked = blanked[:start] + re.sub(r"[^\r\n]", " ", blanked[start:end]) + blanked[end:]
        if blanked != text:
            self.parser_text = blanked
            self.tree = _parse(blanked)

    def _probe(self, before: str) -> tuple[turbohtml.Document, turbohtml.Element] | None:
        """The ``<meta>`` put after *before* and parsed with it: where it lands tells the
        insertion mode there (it goes to the head in "before head", "in head" and "after head")."""
        at = len(before)
        tree = _parse(before + "<meta>")
        for meta in tree.select("meta"):
            if meta.position is not None and self.offset(meta) == at:
                return tree, meta
        return None

    def as_parsed(self, piece: str) -> str:
        """*piece* of the text as the parser saw it, to compare with the tree's strings."""
        if self.flat:
            return piece.replace("\n", " ").replace("\r", " ")
        return _newlines_normalised(piece)

    def attribute_value(self, element: turbohtml.Element, name: str) -> str | None:
        """The value of *element*'s attribute *name* (lowercase), as :meth:`value` gives
        it; None when the start tag has no such attribute."""
        spans = self.attributes(element)
        return self.value(spans[name]) if name in spans else None

    def value(self, span: tuple[int, int, str]) -> str:
        """The attribute value at *span* as the tokenizer gives it: HTML §13.2.3.5
        newlines, §13.2.5.36-38 NUL read as U+FFFD, character references decoded."""
        raw = self.text[span[0] : span[1]]
        return decode_attribute(_newlines_normalised(raw).replace("\0", "\ufffd"))[0]

    def selected(self, lazy: frozenset[str] | None = None) -> list[turbohtml.Element]:
        """The elements that may hold a link (:func:`~rewriter.html.table.selector` with the
        *lazy* attributes) and every <noscript>, in tree order: one query of the tree, made
        once. The <base> and <noscript> elements are read from it (:meth:`named`), never
        queried by tag: a tree's first query by tag indexes the tree, as long again as this
        query (0.028 s and 0.037 s on the corpus). *lazy* None: whichever was made."""
        if self._selected is None or (lazy is not None and self._selected[0] != lazy):
            lazy = frozenset() if lazy is None else lazy
            self._selected = (lazy, self.tree.select(_query(lazy)))
        return self._selected[1]

    def named(self, name: str) -> list[turbohtml.Element]:
        """The elements of :meth:`selected` whose start tag names *name* (``base``, ``noscript``):
        every element of the tree with that tag and a start tag. Without the C extension,
        asked of the tree by tag, which is faster there than reading each tag in Python."""
        if not COMPILED:
            return list(self.start_tags(self.tree.select(name)))
        return named_start_tags(self.text, self.selected(), None if self.flat else self.line_starts, name)

    def noscript_ranges(self) -> tuple[list[int], list[int]]:
        """Where the raw text of each <noscript> runs (from after its start tag to its end
        tag, as a scripting browser reads it), sorted and not overlapping; computed once.
        In the scripting tree every HTML <noscript> is raw text, so none holds another."""
        if self._noscript is None:
            starts: list[int] = []
            ends: list[int] = []
            for noscript in self.start_tags(self.named("noscript")):
                if noscript.namespace != _HTML:
                    continue
                start = self.start_tag_end(noscript)
                starts.append(start)
                ends.append(end_tag(self.text, "noscript", start))
            self._noscript = (starts, ends)
        return self._noscript

    def offset(self, element: turbohtml.Element) -> int:
        """Where *element*'s start tag begins in the text (it has one: a position)."""
        position = element.position
        assert position is not None
        line, column = position
        return self.line_starts[line - 1] + column

    def start_tags(self, elements: Iterable[turbohtml.Element]) -> Iterator[turbohtml.Element]:
        """*elements* that have a start tag of their own in the source, each tag once.

        An element the parser made up (html, head, body, tbody) has no position;
        reopened formatting elements (an <a> carried over a block boundary, HTML
        §13.2.4.3) are clones of one start tag and share its position.
        """
        seen: set[tuple[int, int]] = set()
        for element in elements:
            position = element.position
            if position is not None and position not in seen:
                seen.add(position)
                yield element

    def attributes(self, element: turbohtml.Element) -> dict[str, Span]:
        """The attributes of *element*'s start tag: the text span of each value and its quote
        (:func:`rewriter.html.tags.tag_attributes`)."""
        return tag_attributes(self.text, self.offset(element))[0]

    def start_tag_end(self, element: turbohtml.Element) -> int:
        """The offset just past *element*'s start tag."""
        return tag_end(self.text, self.offset(element))


def _parse(text: str) -> turbohtml.Document:
    """The tree a browser builds of a document: scripting on, no declarative shadow roots."""
    return turbohtml.parse(text, scripting=True, allow_declarative_shadow_roots=False)


# Start tags by name, where the name ends as a tag name does (HTML §13.2.5.8).
_FRAMESET_TAG = re.compile(r"<[fF][rR][aA][mM][eE][sS][eE][tT](?=[\t\n\f\r />])")
_TEMPLATE_TAG = re.compile(r"<[tT][eE][mM][pP][lL][aA][tT][eE](?=[\t\n\f\r />])")
_STRAY_TAGS = 8  # stray <head> and <html> tags read before a <frameset> (ParsedDocument._stray_heads_ignored)
_HEAD_OR_HTML_TAG = re.compile(r"<(?:[hH][eE][aA][dD]|[hH][tT][mM][lL])(?=[\t\n\f\r />])")


def _as_frame(match: re.Match[str]) -> str:
    """``<frameset`` read as ``<frame`` and three spaces (its case kept)."""
    return match.group()[:6] + "   "


def _top_frameset(tree: turbohtml.Document | turbohtml.Element) -> turbohtml.Element | None:
    """The ``<frameset>`` that took the body's place, from a start tag (a frameset document)."""
    for node in tree.children:
        if isinstance(node, turbohtml.Element) and node.tag == "html":
            for child in node.children:
                if isinstance(child, turbohtml.Element) and child.tag == "frameset" and child.namespace == _HTML:
                    return child if child.position is not None else None
    return None


def _in_head(element: turbohtml.Element) -> bool:
    parent = element.parent
    return getattr(parent, "tag", None) == "head" and getattr(parent, "namespace", None) == _HTML


@lru_cache(maxsize=64)
def _query(lazy: frozenset[str]) -> str:
    """The query of :meth:`ParsedDocument.selected`: the link selector, and <noscript> for
    :meth:`ParsedDocument.named` when it reads the selection (with the C extension)."""
    return selector(lazy) + ",noscript" if COMPILED else selector(lazy)


def _is_inert(element: turbohtml.Element) -> bool:
    """In <template> content: never the source of the document's base (HTML §4.2.3).
    (A <base> in a <noscript> is text in the scripting tree, so it is no element at all.)"""
    return any(getattr(ancestor, "tag", None) == "template" for ancestor in element.ancestors)


def rewrite_text(
    text: str,
    fallback: str | None,
    fallback_layer: Layer | None,
    policy: Policy,
    codec: str = "utf-8",
    readable: bool = False,
    *,
    base_elements: bool = True,
    context: Context | None = None,
    in_noscript: bool = False,
) -> TextResult:
    """Find and resolve every link of one document's text; the edits are text spans.

    *readable*: the text was decoded without an unreadable byte, so it holds no lone
    surrogate. Without *base_elements*, a ``<base>`` in the text is a link like others,
    never the base (conditional comments: markup only old IE read). A *context* given
    is the text's base as it is (the enclosing document's, whose references are
    classified once for all its conditional comments): no base is looked for.
    *in_noscript*: the text is itself inside a ``<noscript>`` (a srcdoc there).
    """
    document = ParsedDocument(text, readable)
    result = TextResult()
    if context is not None:
        result.base, result.layer = context.base, context.layer
        _document_links(document, None, context, result)
        _left_where_readings_differ(document, result)
        require_base(policy, result)
        return result

    candidates = _offered(document, from_fallback(fallback, fallback_layer, url_guessed=policy.url_guessed), policy)
    below = chain(candidates)  # what a <base href> is resolved against
    fallback_context = Context(below.url if below else None, below.layer if below else None, policy, codec, in_noscript)
    base_element, frozen, usable_base = None, None, False  # the first one that counts, usable or not
    if base_elements:
        base_element, frozen, usable_base = _first_base_element(document, fallback_context, result)
    chosen = chain(candidates.offering(base_element=frozen)) if frozen is not None else below
    base, layer = (chosen.url, chosen.layer) if chosen is not None else (None, None)
    context = Context(base, layer, policy, codec, in_noscript)
    result.base, result.layer = base, layer

    _document_links(document, base_element, context, result)
    if base_element is not None and usable_base:
        _base_element(document, base_element, fallback_context, result)
    _left_where_readings_differ(document, result)
    require_base(policy, result)
    return result


def _offered(document: ParsedDocument, candidates: Candidates, policy: Policy) -> Candidates:
    """*candidates* with what the document offers below its <base>: the saved-from mark and,
    with ``Policy.canonical_base``, the canonical URL; each looked for only when it could win."""
    if not candidates.outranked("saved_from") and (mark := saved_from(document.text)) is not None:
        candidates = candidates.offering(saved_from=Base(mark, "saved-from-mark"))
    if policy.canonical_base and not candidates.outranked("canonical"):
        canonical = _canonical(document)
        if canonical is not None:
            candidates = candidates.offering(canonical=Base(canonical, "canonical"))
    return candidates


def _first_base_element(
    document: ParsedDocument, fallback: Context, result: TextResult
) -> tuple[turbohtml.Element | None, Base | None, bool]:
    """RFC 1808 §3.1 / HTML "document base URL": the first base element with an href, in
    tree order, in the HTML namespace, not in template content (the tree is the scripting
    one, where a <base> in a <noscript> is text): (it, the base it gives, whether usable)."""
    document.selected(fallback.policy.lazy_attributes)  # the one query, which named() reads
    for candidate in document.named("base"):
        if candidate.namespace != _HTML or "href" not in candidate.attrs or _is_inert(candidate):
            continue  # the first <base href> of the tree (HTML §4.2.3); a named() has a position
        href = document.attribute_value(candidate, "href") or ""
        start, end = strip_whitespace(href, 0, len(href))
        frozen, problem = frozen_base(href[start:end], fallback)
        if problem is not None:
            # Left exactly as it is: rewritten, a disguised javascript: base could become
            # a usable http: one that the page never had.
            result.problems.append(Problem("base-ignored", f"<base href={href!r}> ignored: {problem}"))
        return candidate, Base(frozen, "base-element") if frozen is not None else None, problem is None
    return None, None, False


def _document_links(
    document: ParsedDocument,
    base_element: turbohtml.Element | None,
    context: Context,
    result: TextResult,
) -> None:
    """Every link of *document* but its base element's: the elements of the scripting
    tree, each <noscript>'s text as markup (:func:`_noscript_links`), and the markup of
    conditional comments."""
    lazy = context.policy.lazy_attributes
    _elements_links(document, document.selected(lazy), base_element, context, result)
    _noscript_links(document, context, result)
    if context.policy.conditional_comments:
        _conditional_comments(document, context, result)


def _noscript_links(document: ParsedDocument, context: Context, result: TextResult) -> None:
    """The links in each <noscript>, as a browser with scripting off reads its text.

    Both readings must hold (HTML §13.2.6.4.7 "noscript", scripting on and off): with
    scripting off the text is markup, so each new value is escaped for its attribute as
    anywhere; with scripting on it is raw text that ends at the first ``</noscript``, so
    no new value holds a "<" (the context percent-encodes it). Each range's edits are
    checked against that end before they are kept.
    """
    starts, ends = document.noscript_ranges()
    if not starts:
        return
    inner_context = context.inside_noscript()
    text = document.text
    for start, end in zip(starts, ends, strict=True):
        if start >= end:
            continue
        fragment = ParsedDocument(text[start:end], noscript_fragment=True)
        inner = TextResult()
        _document_links(fragment, None, inner_context, inner)
        if inner.edits:
            written = spliced(fragment.text, inner.edits)
            if end_tag(written, "noscript", 0) != len(written):
                # Never reached while no new value holds "<"; kept as the last guard.
                result.problems.append(
                    Problem("left-as-is", f"links in the <noscript> at character {start} were left as they are")
                )
                inner.edits.clear()
        result.found.extend(shifted(found, None, start) for found in inner.found)
        result.edits.extend((edit_start + start, edit_end + start, new) for edit_start, edit_end, new in inner.edits)
        result.problems.extend(problem.at("in <noscript>") for problem in inner.problems)
        if document.diverges_at is None and not _reads_on_alike(fragment):
            document.diverges_at = end


# Start tags that leave a scripting-off reader where a later <style> or <title> would not
# open raw text (in <select>, a frameset), or a CDATA section that may run on.
_DIVERGING = re.compile(r"<(?:[sS][eE][lL][eE][cC][tT]|[fF][rR][aA][mM][eE][sS][eE][tT])[\t\n\f\r />]|<!\[CDATA\[")
_SENTINEL = "<rewriter-sentinel>"


def _reads_on_alike(fragment: ParsedDocument) -> bool:
    """Whether, after this <noscript>'s text, a browser with scripting off reads on as one
    with scripting on does: from the data state, not inside a tag, a comment or raw text
    the text opened (``<noscript><style></noscript>``). Told by tokenizing the text with a
    start tag after it, which must come out as that tag, just where it was put."""
    text = fragment.parser_text
    if _DIVERGING.search(text) is not None:
        return False
    tokens = deque(turbohtml.tokenize(text + _SENTINEL, capture_attributes=False), maxlen=1)  # the last only
    last = tokens[0] if tokens else None
    return last is not None and last.type is _START_TAG_TOKEN and last.tag == _SENTINEL[1:-1] and last.col == len(text)


def _left_where_readings_differ(document: ParsedDocument, result: TextResult) -> None:
    """After a <noscript> that a browser with scripting off reads on from elsewhere than one
    with scripting on (it opened a tag, a comment or raw text that runs past its end), the
    two readings of the page differ: what is a link to one is text to the other. Nothing
    there is rewritten (a new value would change the other reading's text, or end it);
    each such link is reported, with the reason."""
    at = document.diverges_at
    if at is None:
        return
    reason = (
        f"left as it is: after the <noscript> that ends at character {at}, a browser with scripting off "
        "reads the page differently from one with scripting on"
    )
    result.edits = [edit for edit in result.edits if edit[0] < at]
    for index, found in enumerate(result.found):
        if found.start >= at and found.status in ("rewritten", "relinked"):
            result.found[index] = found._replace(resolved=None, status="unresolvable", reason=reason)
    result.problems.append(Problem("left-as-is", reason.replace("left as it is", "links were left as they are")))


def saved_from_mark(document: bytes | str) -> str | None:
    """The URL of a browser's ``<!-- saved from url=(NNNN)URL -->`` mark near the start of
    *document* (an ASCII mark, as browsers write it), when it is one a link can be resolved against.

    >>> saved_from_mark(b"<!-- saved from url=(0023)https://o.test/x/y.html -->\\n<p>")
    'https://o.test/x/y.html'
    """
    head = document[:4096]
    return saved_from(head.decode("latin-1") if isinstance(head, bytes) else head)


def saved_from(text: str) -> str | None:
    """The retrieval URL in a browser's ``<!-- saved from url=(NNNN)URL -->`` mark."""
    match = _SAVED_FROM.search(text, 0, 4096)
    if match is None:
        return None
    url = text[match.end() : match.end() + int(match.group(1))].strip()
    # Hierarchical only: Internet Explorer and Edge write "about:internet" (the Mark of the
    # Web) there, which no relative link can be resolved against.
    return url if usable_as_base(url) else None


def _canonical(document: ParsedDocument) -> str | None:
    for element in document.tree.select('link[rel~="canonical"][href], meta[property="og:url"][content]'):
        if element.position is None:
            continue
        value = document.attribute_value(element, "href" if element.tag == "link" else "content")
        if value is not None and parse(value.strip()).scheme is not None:
            return value.strip()
    return None


def _base_element(
    document: ParsedDocument,
    element: turbohtml.Element,
    fallback: Context,
    result: TextResult,
) -> None:
    """The <base> element stays with its href made absolute, or goes (``remove_base``)."""
    if fallback.policy.remove_base:
        result.edits.append((document.offset(element), document.start_tag_end(element), ""))
        return
    _element_links(document, element, fallback, result)


# The link table per (namespace, tag, lazy attributes): a dict lookup per element.
_K = TypeVar("_K")
_V = TypeVar("_V")
_TABLES: dict[tuple[int, str, frozenset[str]], dict[str, Kind]] = {}
# The per-element caches keep short names only, and are emptied when full: element names
# come from the documents, and a page of many or long made-up names must not grow memory.
_CACHE_ENTRIES = 4096


def _kept(cache: dict[_K, _V], key: _K, name: str, value: _V) -> _V:
    """*value*, stored in *cache* under *key* when *name* is short (see :data:`_CACHE_ENTRIES`)."""
    if len(name) <= CACHED_NAME_LENGTH:
        if len(cache) >= _CACHE_ENTRIES:
            cache.clear()
        cache[key] = value
    return value


_CONDITIONAL_TAGS = frozenset(tag for tag, _ in CONDITIONAL)
# Elements whose links need more than their attribute values (the general path).
_SPECIAL_TAGS = frozenset({"style", "object", "applet"})
_STYLE = frozenset({"style"})


class _Plain(NamedTuple):
    """One element kind's link attributes, split for the fast path: *fast* ones hold one
    URL and need nothing but their value (the *lazy* among them only when it looks like
    a URL); an element with any *other*, a ``style`` that may hold a URL (when the kind
    has one: *style*), or of a *special* kind (its text or other attributes matter),
    takes the general path. *watched* is all of them: an element's attributes are read
    once, for those."""

    fast: frozenset[str]
    lazy: frozenset[str]
    other: frozenset[str]
    style: bool
    special: bool
    watched: frozenset[str]


# Per set of lazy attributes, keyed by tag for HTML elements and by (namespace, tag) for
# others: turbohtml's Namespace is an Enum, whose hash is a Python call.
_PLAIN: dict[frozenset[str], dict[str, _Plain]] = {}
_PLAIN_FOREIGN: dict[frozenset[str], dict[tuple[object, str], _Plain]] = {}


def _plain_of(namespace: turbohtml.Namespace, tag: str, lazy: frozenset[str]) -> _Plain:
    table = attributes_of(_NAMESPACE_NAMES.get(namespace, "html"), tag, lazy)
    if tag in _SPECIAL_TAGS:
        return _Plain(frozenset(), frozenset(), frozenset(table), False, True, frozenset(table))
    fast = frozenset(name for name, kind in table.items() if kind == "url" and (tag, name) not in CONDITIONAL)
    style = table.get("style") == "css"
    other = frozenset(table) - fast - ({"style"} if style else set())
    return _Plain(fast, fast & lazy, other, style, False, frozenset(table))


def _elements_links(
    document: ParsedDocument,
    elements: Iterable[turbohtml.Element],
    base_element: turbohtml.Element | None,
    context: Context,
    result: TextResult,
) -> None:
    """The links of *elements* (each start tag once), but the base element's.

    Pages have tens of thousands of link elements, nearly all an ``<a href>`` or an
    ``<img src>`` with a plain value, so those are done here in one loop; any other
    element goes through :func:`_element_links`.
    """
    if COMPILED:
        _elements_links_compiled(document, elements, base_element, context, result)
        return
    text, line_starts, flat = document.text, document.line_starts, document.flat
    lazy = context.policy.lazy_attributes
    classify_new, classified, found, edits = context.classifier(), context.classified, result.found, result.edits
    base, layer = context.base, context.layer
    value_of = _VALUE_OF
    new = new_link
    plain_html = _PLAIN.setdefault(lazy, {})
    plain_foreign = _PLAIN_FOREIGN.setdefault(lazy, {})
    seen: set[tuple[int, int]] = set()
    for element in elements:
        # An element the parser made up has no position; a reopened formatting
        # element (HTML §13.2.4.3) is a clone of a start tag already seen.
        position = element.position
        if position is None or position in seen:
            continue
        seen.add(position)
        if element is base_element:
            continue
        tag = element.tag
        namespace = element.namespace
        if namespace is _HTML:
            split = plain_html.get(tag)
            if split is None:
                split = _kept(plain_html, tag, tag, _plain_of(namespace, tag, lazy))
        else:
            split = plain_foreign.get((namespace, tag))
            if split is None:
                split = _kept(plain_foreign, (namespace, tag), tag, _plain_of(namespace, tag, lazy))
        if split.special:
            _element_links(document, element, context, result)
            continue
        attrs = element.attrs
        watched = split.watched.intersection(attrs)  # the one read of the names
        if not watched:
            continue
        if not split.other.isdisjoint(watched):
            _element_links(document, element, context, result)
            continue
        if "style" in watched:
            if may_hold_urls(attrs.get("style")):
                _element_links(document, element, context, result)
                continue
            watched = watched - _STYLE
            if not watched:
                continue
        # Source order, for the problems list.
        needed: Collection[str] = watched if len(watched) == 1 else [name for name in attrs if name in watched]
        offset = position[1] if flat else line_starts[position[0] - 1] + position[1]
        for name in needed:
            # HTML §13.2.5.32-39 over this one start tag, up to the first attribute *name*
            # (the first of duplicates wins): one call.
            match = (value_of.get(name) or attribute_value_pattern(name))(text, offset)
            if match is None:
                # HTML §13.2.6.4.7: a repeated <html> or <body> tag adds its attributes to
                # the first one; their text is elsewhere and is left as it is.
                result.problems.append(_repeated(tag, name))
                continue
            last = match.lastindex
            if last is None:  # no value: the empty string (HTML §13.2.5.33), rare
                _attribute_links(document, tag, name, "url", (match.end(), match.end(), VALUELESS), context, result)
                continue
            start, end = match.span(last)
            raw = text[start:end]
            quote = QUOTE_OF_VALUE_GROUP[last]
            if name in split.lazy and not looks_like_url(_decoded(raw), "url"):
                continue
            if "&" in raw or "\0" in raw or (raw and (raw[0] in ASCII_WHITESPACE or raw[-1] in ASCII_WHITESPACE)):
                _attribute_links(document, tag, name, "url", (start, end, quote), context, result)
                continue
            known = classified.get(raw)
            if known is None:
                known = classified[raw] = classify_new(raw)
            status, resolved, reason = known
            found.append(new(Link, (tag, name, "url", raw, resolved, status, reason, base, layer, start, end)))
            if (status == "rewritten" or status == "relinked") and resolved is not None and resolved != raw:
                prefix = _prefix(resolved, raw)
                if prefix is not None and (quote or NEEDS_QUOTES.isdisjoint(prefix)):
                    edits.append((start, start, escape_attribute(prefix, quote)))
                else:
                    replacement: list[tuple[int, int, str, str | None]] = [(0, len(raw), resolved, prefix)]
                    _splice_attribute(raw, start, end, quote, raw, None, replacement, result)


def _elements_links_compiled(
    document: ParsedDocument,
    elements: Iterable[turbohtml.Element],
    base_element: turbohtml.Element | None,
    context: Context,
    result: TextResult,
) -> None:
    """:func:`_elements_links` through :func:`rewriter.html.plain.plain_links` (in C): the
    same links, edits and problems. The attributes are the text's, not the tree's: they
    differ only for a repeated <html> or <body> tag (those take the general path, as
    :func:`_codes_of` says) and for names with NUL or a lone surrogate (plain_links hands
    those back)."""
    lazy = context.policy.lazy_attributes
    html_tables = _CODES_HTML.setdefault(lazy, {})
    foreign_tables = _CODES_FOREIGN.setdefault(lazy, {})

    def table_of(namespace: object, tag: str) -> Codes:
        codes = _codes_of(cast(turbohtml.Namespace, namespace), tag, lazy)
        if namespace is _HTML:
            return _kept(html_tables, tag, tag, codes)
        return _kept(foreign_tables, (namespace, tag), tag, codes)

    search = LinkSearch(
        text=document.text,
        elements=elements,
        line_starts=None if document.flat else document.line_starts,
        skip=base_element,
        html=_HTML,
        html_tables=html_tables,
        foreign_tables=foreign_tables,
        table_of=table_of,
        classified=context.classified,
        classify=context.classifier(),
        link=Link,
        base=context.base,
        layer=context.layer,
        found=result.found,
        edits=result.edits,
    )
    left = plain_links(search)
    text = document.text
    for element, tag, name, start, end, quote, code in left:
        if name is None:
            _element_links(document, element, context, result)
        elif code == SRCSET:
            _attribute_links(document, tag, name, "srcset", (start, end, quote), context, result)
        elif code != LAZY_URL or looks_like_url(_decoded(text[start:end]), "url"):
            _attribute_links(document, tag, name, "url", (start, end, quote), context, result)


# The link tables of plain_links, per set of lazy attributes, keyed as _PLAIN's are.
_CODES_HTML: dict[frozenset[str], dict[str, Codes]] = {}
_CODES_FOREIGN: dict[frozenset[str], dict[tuple[object, str], Codes]] = {}


def _codes_of(namespace: turbohtml.Namespace, tag: str, lazy: frozenset[str]) -> Codes:
    """The link table of plain_links for *tag* in *namespace* (None: the general path always)."""
    if tag in _SPECIAL_TAGS or (namespace is _HTML and tag in _MERGED_TAGS):
        # A repeated <html> or <body> tag's attributes are the tree's, not the text's.
        return None
    table = attributes_of(_NAMESPACE_NAMES.get(namespace, "html"), tag, lazy)
    codes = {}
    for name, kind in table.items():
        if kind == "url" and (tag, name) not in CONDITIONAL:
            codes[name] = LAZY_URL if name in lazy else URL
        elif kind == "srcset" and name not in lazy and (tag, name) not in CONDITIONAL:
            codes[name] = SRCSET
        else:
            codes[name] = STYLE if name == "style" and kind == "css" else OTHER
    return codes


# HTML §13.2.6.4.7: a repeated <html> or <body> tag adds its attributes to the first one.
_MERGED_TAGS = frozenset({"html", "body"})


def _element_links(
    document: ParsedDocument,
    element: turbohtml.Element,
    context: Context,
    result: TextResult,
) -> None:
    tag = element.tag
    if tag == "style":
        _style_element(document, element, context, result)
    lazy = context.policy.lazy_attributes
    key = (id(element.namespace), tag, lazy)  # by id: the Enum's hash is a Python call
    table = _TABLES.get(key)
    if table is None:
        namespace = _NAMESPACE_NAMES.get(element.namespace, "html")
        table = _kept(_TABLES, key, tag, attributes_of(namespace, tag, lazy))
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
            result.problems.append(_repeated(tag, name))
            continue
        span = spans[name]
        if name in lazy and not looks_like_url(document.value(span), kind):
            continue
        local = context
        if (tag, name) in CODEBASE_RELATIVE and "codebase" in spans:
            if codebase_context is None:
                codebase_context = _codebase(document, spans["codebase"], context)
            local = codebase_context
        _attribute_links(document, tag, name, kind, span, local, result)


def _repeated(tag: str, name: str) -> Problem:
    """HTML §13.2.6.4.7: a repeated <html> or <body> tag adds its attributes to the first
    one; their text is elsewhere and is left as it is."""
    return Problem("repeated-tag", f"<{tag} {name}> comes from a repeated <{tag}> tag and was left as it is")


def _decoded(raw: str) -> str:
    """An attribute value's source text as the tokenizer gives it (:meth:`ParsedDocument.value`)."""
    if "&" not in raw and "\r" not in raw and "\0" not in raw:
        return raw
    return decode_attribute(_newlines_normalised(raw).replace("\0", "\ufffd"))[0]


def _codebase(document: ParsedDocument, span: tuple[int, int, str], context: Context) -> Context:
    """The base for classid/data/archive/code: the codebase resolved against the document's base."""
    value, _ = decode_attribute(document.text[span[0] : span[1]])
    start, end = strip_whitespace(value, 0, len(value))
    return context.codebase(value[start:end])


def _attribute_links(
    document: ParsedDocument,
    tag: str,
    name: str,
    kind: Kind,
    span: tuple[int, int, str],
    context: Context,
    result: TextResult,
) -> None:
    """The links of one attribute value, each by its kind's microsyntax. The common case,
    one URL with no character reference and no NUL, takes a short way."""
    raw_start, raw_end, quote = span
    raw = document.text[raw_start:raw_end]
    if kind == "url" and "&" not in raw and "\0" not in raw:
        start, end = 0, len(raw)
        if raw and (raw[0] in ASCII_WHITESPACE or raw[-1] in ASCII_WHITESPACE):
            start, end = strip_whitespace(raw, start, end)
            reference = raw[start:end]
        else:
            reference = raw
        resolved = result.record(context, tag, name, "url", reference, raw_start + start, raw_start + end)
        if resolved is not None:
            replacement = (start, end, resolved, _prefix(resolved, reference))
            _splice_attribute(raw, raw_start, raw_end, quote, raw, None, [replacement], result)
        return
    value, offsets = decode_attribute(raw)
    # HTML §13.2.5.36-38: the tokenizer reads NUL in a value as U+FFFD (one for one: the
    # offsets stay), and so does a browser resolving it.
    value = value.replace("\0", "\ufffd")

    # Each replacement: a span of the decoded value, its new text, and whether the new
    # text is the old one with a prefix (then only the prefix is written).
    replacements: list[tuple[int, int, str, str | None]] = []
    if kind == "css":
        css_context = context.for_css()
        for url in css_urls(value):
            _one_url(
                tag,
                name,
                kind,
                value,
                url.start,
                url.end,
                url.value,
                css_context,
                offsets,
                raw_start,
                result,
                replacements,
                css_quote=url.quote,
            )
    elif kind == "srcdoc":
        # A srcdoc document is a string: its encoding is UTF-8 (HTML §4.8.5 "about:srcdoc").
        nested = rewrite_text(value, context.base, context.layer, context.policy, in_noscript=context.in_noscript)
        result.found.extend(shifted(found, offsets, raw_start) for found in nested.found)
        for edit_start, edit_end, new in nested.edits:
            replacements.append((edit_start, edit_end, new, None))
        result.problems.extend(problem.at("in srcdoc") for problem in nested.problems)
    else:
        for url_start, url_end in url_spans(kind, value):
            reference = value[url_start:url_end]
            _one_url(
                tag, name, kind, value, url_start, url_end, reference, context, offsets, raw_start, result, replacements
            )
    if replacements:
        _splice_attribute(raw, raw_start, raw_end, quote, value, offsets, replacements, result)


def _one_url(
    tag: str,
    name: str,
    kind: Kind,
    value: str,
    start: int,
    end: int,
    reference: str,
    context: Context,
    offsets: list[int] | None,
    raw_start: int,
    result: TextResult,
    replacements: list[tuple[int, int, str, str | None]],
    css_quote: css.Quote | None = None,
) -> None:
    start_at, end_at = raw_start + _raw(offsets, start), raw_start + _raw(offsets, end)
    resolved = result.record(context, tag, name, kind, reference, start_at, end_at)
    if resolved is None:
        return
    if css_quote is not None:
        new = css.escape_url(resolved, css_quote)
        replacements.append((start, end, new, None))
        return
    new = for_context(kind, resolved, value, start)
    replacements.append((start, end, new, _prefix(new, reference) if value[start:end] == reference else None))


def _prefix(new: str, reference: str) -> str | None:
    """What *new* adds before *reference* when it only adds a prefix (then only that is written)."""
    return new[: len(new) - len(reference)] if reference and new.endswith(reference) else None


def _raw(offsets: list[int] | None, index: int) -> int:
    return index if offsets is None else offsets[index]


def _splice_attribute(
    raw: str,
    raw_start: int,
    raw_end: int,
    quote: str,
    value: str,
    offsets: list[int] | None,
    replacements: list[tuple[int, int, str, str | None]],
    result: TextResult,
) -> None:
    if not quote or quote == VALUELESS:
        written = "".join(new if prefix is None else prefix for _, _, new, prefix in replacements)
        if quote == VALUELESS or any(char in NEEDS_QUOTES for char in written):
            pieces: list[str] = []
            last = 0
            for start, end, new, _ in sorted(replacements):
                pieces += (value[last:start], new)
                last = end
            pieces.append(value[last:])
            equals = "=" if quote == VALUELESS else ""
            escaped = escape_attribute("".join(pieces), '"')
            result.edits.append((raw_start, raw_end, f'{equals}"{escaped}"'))
            return
    for start, end, new, prefix in replacements:
        raw_at = raw_start + _raw(offsets, start)
        if prefix is not None:
            result.edits.append((raw_at, raw_at, escape_attribute(prefix, quote)))
        else:
            result.edits.append((raw_at, raw_start + _raw(offsets, end), escape_attribute(new, quote)))


def _style_element(
    document: ParsedDocument,
    element: turbohtml.Element,
    context: Context,
    result: TextResult,
) -> None:
    """CSS in a <style> element: raw text in HTML, so its source is its text.

    The text runs to the first ``</style`` followed by whitespace, "/" or ">" (HTML
    §13.2.5.12 "appropriate end tag"), or to the end of the document.
    """
    start = document.start_tag_end(element)
    end = end_tag(document.text, "style", start)
    source = document.text[start:end]
    foreign = element.namespace != _HTML
    if foreign and ("&" in source or "<" in source):
        return  # SVG <style> is parsed as markup; only plain text is taken as is
    css_links(source, start, "style", "#style", context.for_css(), result, in_style_element=True, foreign=foreign)


# HTML elements whose content the tree builder has the tokenizer read as raw text or
# RCDATA (HTML §13.2.6.4.4, §13.2.6.4.7; <noscript> with scripting on): "<!--" there is text.
_RAW_TEXT_ELEMENTS = frozenset(
    {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title", "plaintext"}
)
_RAW_TEXT_SELECTOR = ", ".join(sorted(_RAW_TEXT_ELEMENTS))
# The data of a conditional comment: "[if ...]>" markup "<![endif]".
_CONDITIONAL_DATA = re.compile(r"\[(?i:if)[^\]]{0,256}\]>.*<!\[(?i:endif)\]\s*\Z", re.DOTALL).match
_COMMENT_TOKEN = turbohtml.TokenType.COMMENT
_START_TAG_TOKEN = turbohtml.TokenType.START_TAG
_TOKENIZER_CHUNK = 1 << 16  # text given to the tokenizer at a time: a restart wastes at most this


def _conditional_comments(document: ParsedDocument, context: Context, result: TextResult) -> None:
    """Links inside ``<!--[if IE]>...<![endif]-->``: markup that old IE rendered.

    Each is parsed as a document of its own with this document's base (a <base> inside
    one is never used). Only the comment nodes the parser made are rewritten, at their
    own offsets (:func:`_comment_offsets`): a lookalike in an attribute value, a script,
    a style sheet or any raw text is never touched, and where the offsets cannot be
    told for certain the comments are left as they are.
    """
    text = document.text
    first = conditional_head(text, 0)
    if first < 0:
        return
    offsets = _comment_offsets(document, first)
    if not offsets:
        return
    # One policy and context for all of them: a conditional comment has no base of its own.
    nested_policy = _without_conditional_comments(context.policy)
    nested_context = Context(context.base, context.layer, nested_policy, context.codec, context.in_noscript)
    nested_context.classified = context.classified  # the same base, rules and escaping: the same answers
    parsed = document.parser_text  # as text, offset for offset, with what the parser read for each character
    for start, data in offsets:
        head = _CONDITIONAL_HEAD(text, start)
        # Within the comment (its data, twice for CR LF read as one, and its end): linear.
        end = _CONDITIONAL_END(text, head.end(), start + 2 * len(data) + 12) if head is not None else None
        if head is None or end is None or _comment_data(document, parsed[start + 4 : end.end() - 3]) != data:
            continue  # not one conditional comment from "<!--[if" to "<![endif]-->"
        inner_start, inner_end = head.end(), end.start()
        if _START_TAG(text, inner_start, inner_end) is None:
            continue  # no start tag: no element, no link (most are "<![endif]-->" closers of a "<!--[if !IE]>")
        nested = rewrite_text(
            text[inner_start:inner_end],
            context.base,
            context.layer,
            nested_policy,
            context.codec,
            base_elements=False,
            context=nested_context,
        )
        result.found.extend(shifted(found, None, inner_start) for found in nested.found)
        for edit_start, edit_end, new in nested.edits:
            # The new text lands inside a comment: a ">" could end it ("-->", "--!>") and
            # turn the rest of the URL into live markup. Browsers percent-encode ">" in a
            # URL's path, query and fragment anyway.
            result.edits.append((edit_start + inner_start, edit_end + inner_start, new.replace(">", "%3E")))


# A start tag's "<" (HTML §13.2.5.6 tag open state: an ASCII alpha follows).
_START_TAG = re.compile("<[A-Za-z]").search


def _without_conditional_comments(policy: Policy) -> Policy:
    """*policy* for the markup of a conditional comment (none nested in it), made again only
    for another policy than the last one's (a run's pages share one; a policy may hold
    functions that cannot be hashed)."""
    last = _NESTED_POLICY[0]
    if last is None or last[0] is not policy:
        last = _NESTED_POLICY[0] = (policy, policy.clone(conditional_comments=False))
    return last[1]


_NESTED_POLICY: list[tuple[Policy, Policy] | None] = [None]


def _comment_offsets(document: ParsedDocument, first: int) -> list[tuple[int, str]]:
    """Where each conditional comment node of the tree starts in the text, with its data.

    The tree holds no offsets for comments, so the tokenizer gives them: its comment
    tokens are exact for as long as it reads the text as the tree builder has it read
    (HTML §13.2.5.43-52). Alone, it cannot know what the tree builder switches, so the
    tree is asked at each tag where that matters:

    - a raw-text tag (``<style>``, ``<title>``, ...) that opened no HTML raw-text
      element (SVG's ``<title>``, a tag the builder ignored): the builder's tokenizer
      stayed in the data state, so this one starts again, in that state, after the tag;
    - ``<![CDATA[`` in a document with SVG or MathML: a CDATA section in foreign
      content, a bogus comment elsewhere; which one, the tree does not say, so no
      comment after it is taken.

    The comments taken must also be, data for data, as many as the tree's.
    """
    tree = document.tree
    nodes = tree.xpath("//comment()")
    assert isinstance(nodes, list)  # a node-set
    expected = Counter(
        data for node in nodes if isinstance(node, turbohtml.Comment) and (data := node.data)[:3].lower() == "[if"
    )
    if not expected:
        return []
    # Most pages: every "<!--[if" of the text, read as a comment from there, is one of the
    # tree's. When the two agree, data for data, there is no lookalike among them: a real
    # comment missing from the text's could only lie inside a lookalike found before it,
    # which ends where it ends and so has longer data; the longest such lookalike would
    # need a real comment with its data, missing too, inside a yet longer one.
    in_text = _text_comments(document, first)
    shaped = Counter(data for data in expected.elements() if _CONDITIONAL_DATA(data) is not None)
    if Counter(data for _, data in in_text if _CONDITIONAL_DATA(data) is not None) == shaped:
        return in_text
    # The elements a raw-text tag may have opened, by offset (any namespace: SVG has a <title>).
    element_at: dict[int, turbohtml.Element] = {}
    for element in tree.select(_RAW_TEXT_SELECTOR):
        if element.position is not None:
            element_at.setdefault(document.offset(element), element)
    foreign = tree.select_one("svg, math") is not None
    raw_text = _RAW_TEXT_ELEMENTS if document.scripting else _RAW_TEXT_ELEMENTS - {"noscript"}
    text = document.parser_text
    last = text.rfind("<!--[")  # no conditional comment starts after it
    found: list[tuple[int, str]] = []
    tokenizer = turbohtml.Tokenizer(capture_attributes=False)
    origin = 0  # where the tokenizer started reading: its tokens are on one line (a flat document)
    fed = 0  # how much of the text it has been given
    closed = False
    while not closed:
        if fed < len(text):
            tokens: Iterable[turbohtml.Token] = tokenizer.feed(text[fed : fed + _TOKENIZER_CHUNK])
            fed += _TOKENIZER_CHUNK
        else:
            tokenizer.close()
            tokens, closed = tokenizer, True
        restart = None
        for token in tokens:
            kind = token.type
            if kind is _START_TAG_TOKEN:
                name = token.tag
                if name in _RAW_TEXT_ELEMENTS:
                    offset = _offset_of(document, origin, token)
                    if offset > last:
                        restart = len(text)
                        break
                    opened = element_at.get(offset)
                    if name not in raw_text or opened is None or opened.namespace is not _HTML or opened.tag != name:
                        restart = tag_end(document.text, offset)
                        break
            elif kind is _COMMENT_TOKEN:
                data = token.data or ""
                if data[:7] == "[CDATA[" and foreign:
                    restart = len(text)
                    break
                if data[:3].lower() == "[if":
                    found.append((_offset_of(document, origin, token), data))
                    if found[-1][0] >= last:
                        restart = len(text)
                        break
        if restart is not None:
            if restart >= len(text) or not document.flat:
                break  # a document that is not one line cannot be read from the middle
            tokenizer.reset()
            origin = fed = restart
            closed = False
    counted = Counter(data for _, data in found)
    return [(offset, data) for offset, data in found if counted[data] == expected[data]]


def _text_comments(document: ParsedDocument, first: int) -> list[tuple[int, str]]:
    """Each ``<!--[if`` of the text (the first ``<!--[`` at *first*) that lies in no comment
    found before it, with the data a comment starting there has: up to the first ``-->`` or
    ``--!>``, or the end (HTML §13.2.5.43-52), as the tree holds it. The comments found never
    overlap, and a ``--!>`` is looked for only before the ``-->``, so the text is read once
    and no character is copied twice."""
    text = document.parser_text
    found: list[tuple[int, str]] = []
    position = first
    while position >= 0:
        if _CONDITIONAL_HEAD(text, position) is None:
            position = conditional_head(text, position + 5)
            continue
        start = position + 4
        end = text.find("-->", start)
        # "--!>" ends it only before "-->" (the two never overlap: "--!>" ends 3 past its start).
        bang = text.find("--!>", start, len(text) if end < 0 else end + 3)
        if bang >= 0:
            end = bang
        elif end < 0:
            end = len(text)
        found.append((position, _comment_data(document, text[start:end])))
        position = conditional_head(text, end)
    return found


def _comment_data(document: ParsedDocument, piece: str) -> str:
    """A comment's source text as its node holds it: NUL read as U+FFFD (§13.2.5.45-50),
    line breaks as the parser saw them."""
    return document.as_parsed(piece.replace("\0", "\ufffd"))


def _offset_of(document: ParsedDocument, origin: int, token: turbohtml.Token) -> int:
    """Where *token*, from a tokenizer that started at *origin*, begins in the text."""
    if document.flat:
        return origin + token.col
    return document.line_starts[token.line - 1] + token.col


# --------------------------------------------------------------------------
# Bytes in, bytes out
# --------------------------------------------------------------------------


def rewrite_html(document: bytes | str, **options: Unpack[DocumentOptions]) -> DocumentResult:
    """Make every relative URL of an HTML document absolute, changing no other byte.

    *options* (:class:`~rewriter.document.process.DocumentOptions`): *url* is the retrieval
    URL (RFC 1808 §3.3); *base* a base handed down by an enclosing entity (§3.2, e.g. a MIME
    part's), which takes precedence; *charset* a transport charset (HTTP or MIME); *policy*.
    The output is bytes in the document's own encoding; a ``str`` document is taken as
    already decoded and comes back as UTF-8.
    """
    return process(document, rewrite=True, engine=rewrite_text, sniffer=sniff, **options)


def find_links(document: bytes | str, **options: Unpack[DocumentOptions]) -> DocumentResult:
    """Every link of an HTML document, resolved, without rewriting (``output`` is the input)."""
    return process(document, rewrite=False, engine=rewrite_text, sniffer=sniff, **options)


class ByteView:
    """A page's text as a view for :func:`rewriter.html.links.iter_links`: every start tag
    of the tree this engine reads (scripting on, as browsers run), in tree order, with its
    attribute values as its start tag holds them (character references decoded; the first
    of duplicate names winning) and a ``<style>``'s text. A site's span is in the decoded
    value; :meth:`span` gives its offsets in the text. What the engine reads besides the
    elements (each ``<noscript>``'s text with scripting off, conditional comments, ``srcdoc``
    documents) are documents of their own, with views of their own.
    """

    def __init__(self, document: bytes | str, *, charset: str | None = None) -> None:
        text, readable = (
            (document, False) if isinstance(document, str) else decode_checked(document, sniff(document, charset))
        )
        self.text = text
        self._document = ParsedDocument(text, readable)

    def elements(self) -> Iterator[ViewElement]:
        document = self._document
        for element in document.start_tags(document.tree.iter_elements()):
            spans = document.attributes(element)
            values = {name: decode_attribute(document.text[start:end])[0] for name, (start, end, _) in spans.items()}
            namespace = _NAMESPACE_NAMES.get(element.namespace)
            style = None
            if element.tag == "style":
                start = document.start_tag_end(element)
                style = document.text[start : end_tag(document.text, "style", start)]
                if element.namespace is not _HTML and ("&" in style or "<" in style):
                    style = None  # SVG <style> is parsed as markup; only plain text is taken as is
            yield ViewElement(element, namespace, element.tag, values, style)

    def span(self, site: Site) -> tuple[int, int]:
        """Where *site*'s URL is in the text."""
        document, element = self._document, site.element.node
        assert isinstance(element, turbohtml.Element)
        if site.attribute == "#style":
            start = document.start_tag_end(element)
            return start + site.start, start + site.end
        raw_start, raw_end, _ = document.attributes(element)[site.attribute]
        _, offsets = decode_attribute(document.text[raw_start:raw_end])
        return raw_start + _raw(offsets, site.start), raw_start + _raw(offsets, site.end)


def start_tags(document: bytes | str, *, charset: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """Every start tag the engine sees, in tree order, with its attribute values.

    Values are as the HTML tokenizer gives them (character references decoded,
    newlines normalised, NUL read as U+FFFD), the first of duplicate names winning.
    Start tags the tree builder ignores or merges into an earlier element (a second
    ``<body>``, a ``<tr>`` outside a table) are not included: no element carries them.
    The tree is a scripting browser's; the text of each ``<noscript>`` is read as a
    browser with scripting off reads it, and its start tags follow the ``<noscript>``'s.
    This is what tests compare with an independent HTML5 tokenizer.

    >>> start_tags('<A HREF="x&amp;y" href=dup>t</A><svg><image xlink:href=i /></svg>')
    [('a', {'href': 'x&y'}), ('svg', {}), ('image', {'xlink:href': 'i'})]
    >>> start_tags('<noscript><img src=a></noscript>')
    [('noscript', {}), ('img', {'src': 'a'})]
    """
    text, readable = (
        (document, False) if isinstance(document, str) else decode_checked(document, sniff(document, charset))
    )
    return _start_tags(ParsedDocument(text, readable))


def _start_tags(parsed: ParsedDocument) -> list[tuple[str, dict[str, str]]]:
    text = parsed.text
    starts, ends = parsed.noscript_ranges()
    tags: list[tuple[str, dict[str, str]]] = []
    for element in parsed.start_tags(parsed.tree.iter_elements()):
        start = parsed.offset(element)
        name = ascii_lower(_tag_name(text, start).group()[1:]).replace("\0", "\ufffd")
        values: dict[str, str] = {}
        # Spans, not element.attrs: the parser saw a space for each line break (see ParsedDocument).
        for attribute, span in parsed.attributes(element).items():
            values[attribute.replace("\0", "\ufffd")] = parsed.value(span)
        tags.append((name, values))
        if element.tag == "noscript" and element.namespace is _HTML:
            after = parsed.start_tag_end(element)
            at = bisect.bisect_left(starts, after)
            if at < len(starts) and starts[at] == after:
                inner = ParsedDocument(text[starts[at] : ends[at]], noscript_fragment=True)
                tags.extend(_start_tags(inner))
    return tags
