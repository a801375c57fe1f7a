"""One parsed HTML document: its text, the text as the parser reads it, its tree (turbohtml,
scripting on, as browsers run) and where each start tag is; the frameset and stray-head
fixes that make the tree the one a browser builds.
"""

from __future__ import annotations

import re
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import cast

from rewriter.document.speedups import COMPILED, str_argument, twin
from rewriter.html.links import Namespace
from rewriter.html.microsyntax import decode_attribute
from rewriter.html.plain import named_start_tags
from rewriter.html.table import selector
from rewriter.html.tags import TAG_NAME, Span, end_tag, tag_attributes, tag_end
from rewriter.html.turbo import core as turbohtml


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


@twin
def last_frameset_tag(text: str) -> int:
    """Where the last ``<frameset`` start tag of *text* begins, its name ending as a tag name
    does (HTML §13.2.5.8: white space, "/" or ">" after it), or -1. Compiled, memchr from one
    "<" to the next, without the GIL past 4 KB: the regular expression read the corpus as slowly
    as a substring search does (63 ms of its 55 M characters, 3.4 % of the engine's time).

    >>> last_frameset_tag("<FrameSet><frameset/><framesets><frameset")
    10
    """
    last = deque(_FRAMESET_TAG.finditer(str_argument(text)), maxlen=1)
    return last[0].start() if last else -1


HTML = turbohtml.Namespace.HTML
NAMESPACE_NAMES: dict[turbohtml.Namespace, Namespace] = {
    turbohtml.Namespace.HTML: "html",
    turbohtml.Namespace.SVG: "svg",
    turbohtml.Namespace.MATHML: "math",
}


def tag_name_at(text: str, offset: int) -> re.Match[str]:
    """The "<" and name of the tag that starts at *offset* (where a start tag's "<" is)."""
    match = TAG_NAME.match(text, offset)
    assert match is not None
    return match


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


def newlines_normalised(text: str) -> str:
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


# A document longer than this many characters is parsed with its lines when they are long
# (see _lines_weigh_less).
FLAT_MOST = 1 << 20
# The bytes of str a line must average for the text to be parsed with its lines: a line's start
# takes 40 bytes (its int and its slot in the table) and some CPU (found in Python, each tag's
# position read as a tuple): 10-19 % more CPU on an index page of one link a line, where the
# table weighs about what the copy does. Past 320 bytes (an eighth of the copy), the memory saved
# is worth it, and the flattening of a wide text costs more than the lines do.
_LINE_BYTES = 320


def _lines_weigh_less(text: str) -> bool:
    """Whether *text* is long (over :data:`FLAT_MOST` characters) and its lines long enough
    that their starts weigh far less than its copy with no line breaks (:data:`_LINE_BYTES`):
    that copy lives as long as the tree (the parser keeps the text it read), and takes four
    bytes a character for one emoji in the text (PEP 393). A page of short lines, or a short
    page, is read as one line: no table to build, a column for an offset."""
    if len(text) <= FLAT_MOST:
        return False
    lines = max(text.count("\n"), text.count("\r"))
    return lines * _LINE_BYTES < sys.getsizeof(text)


class ParsedDocument:
    """One parsed document or srcdoc: its text, its tree, and where each start tag is.

    The parser is given the text with each CR and LF replaced by a space: one line, so a
    start tag's position (line 1, column) is its offset in the text, with no table of
    line starts to build. The tree is the same (HTML §13.2.5 and §13.2.6 read LF, CR, FF,
    tab and space alike everywhere but in text, attribute values and a DOCTYPE's
    identifiers), so nothing is read from the tree's attribute values or text: values
    come from the text (:meth:`attribute_value`), comments are compared through
    :meth:`as_parsed`. A DOCTYPE identifier with a line break keeps the lines, as does a
    long text whose line starts weigh far less than its copy (:data:`FLAT_MOST`).
    """

    def __init__(self, text: str, readable: bool = False, *, noscript_fragment: bool = False) -> None:
        self.text = text
        parser_text = text if readable else for_parser(text)
        # A fragment has no DOCTYPE that counts (HTML §13.4 "parsing HTML fragments").
        self.flat = noscript_fragment or (
            _DOCTYPE_IDENTIFIER_BREAK(text, _before_doctype(text).end()) is None and not _lines_weigh_less(text)
        )
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
            self.tree = parse_tree(parser_text)
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
        self.tree = parse_tree(self.parser_text)

    def _frameset_ignored(self, before: str) -> bool:
        """Whether a browser ignores a ``<frameset>`` that comes after *before* (where a start
        tag may begin): a template element was made, and the insertion mode is not one that
        takes a ``<frameset>`` whatever the flag (see :meth:`_framesets_as_browsers_build`)."""
        probed = self._probe(before)
        if probed is None or _in_head(probed[1]):
            return False
        # Elsewhere (in body, in template contents), the flag decides: "not ok" once a template
        # element was made; otherwise as turbohtml keeps it.
        return any(t.namespace == HTML and t.position is not None for t in probed[0].select("template"))

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
        last = last_frameset_tag(text)  # the last: no stray tag after it matters
        if last < 0:
            return
        own = {self.offset(element) for element in self.tree.select("html, head") if element.position is not None}
        stray = [match.start() for match in _HEAD_OR_HTML_TAG.finditer(text, 0, last)]
        stray = [start for start in stray if start not in own][:_STRAY_TAGS]
        blanked = text
        for start in stray:
            probed = self._probe(blanked[:start])
            if probed is not None and _in_head(probed[1]):
                end = tag_end(blanked, start)
                blanked = blanked[:start] + re.sub(r"[^\r\n]", " ", blanked[start:end]) + blanked[end:]
        if blanked != text:
            self.parser_text = blanked
            self.tree = parse_tree(blanked)

    def _probe(self, before: str) -> tuple[turbohtml.Document, turbohtml.Element] | None:
        """The ``<meta>`` put after *before* and parsed with it: where it lands tells the
        insertion mode there (it goes to the head in "before head", "in head" and "after head")."""
        at = len(before)
        tree = parse_tree(before + "<meta>")
        for meta in tree.select("meta"):
            if meta.position is not None and self.offset(meta) == at:
                return tree, meta
        return None

    def as_parsed(self, piece: str) -> str:
        """*piece* of the text as the parser saw it, to compare with the tree's strings."""
        if self.flat:
            return piece.replace("\n", " ").replace("\r", " ")
        return newlines_normalised(piece)

    def attribute_value(self, element: turbohtml.Element, name: str) -> str | None:
        """The value of *element*'s attribute *name* (lowercase), as :meth:`value` gives
        it; None when the start tag has no such attribute."""
        spans = self.attributes(element)
        return self.value(spans[name]) if name in spans else None

    def value(self, span: tuple[int, int, str]) -> str:
        """The attribute value at *span* as the tokenizer gives it: HTML §13.2.3.5
        newlines, §13.2.5.36-38 NUL read as U+FFFD, character references decoded."""
        raw = self.text[span[0] : span[1]]
        return decode_attribute(newlines_normalised(raw).replace("\0", "\ufffd"))[0]

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
                if noscript.namespace != HTML:
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


def parse_tree(text: str) -> turbohtml.Document:
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
                if isinstance(child, turbohtml.Element) and child.tag == "frameset" and child.namespace == HTML:
                    return child if child.position is not None else None
    return None


def _in_head(element: turbohtml.Element) -> bool:
    parent = element.parent
    return getattr(parent, "tag", None) == "head" and getattr(parent, "namespace", None) == HTML


@lru_cache(maxsize=64)
def _query(lazy: frozenset[str]) -> str:
    """The query of :meth:`ParsedDocument.selected`: the link selector, and <noscript> for
    :meth:`ParsedDocument.named` when it reads the selection (with the C extension). As one
    ``:is()``: turbohtml walks the tree once for it, where it walks it once for each part of a
    list (the same elements in the same order on every page of the corpus; 0.87 of the time)."""
    return f":is({selector(lazy)},noscript)" if COMPILED else f":is({selector(lazy)})"


def is_inert(element: turbohtml.Element) -> bool:
    """In <template> content: never the source of the document's base (HTML §4.2.3).
    (A <base> in a <noscript> is text in the scripting tree, so it is no element at all.)"""
    return any(getattr(ancestor, "tag", None) == "template" for ancestor in element.ancestors)
