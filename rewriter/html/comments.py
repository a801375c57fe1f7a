"""Where the conditional comments of a parsed document are (``<!--[if IE]>...<![endif]-->``):
the heads in the text, and the comment nodes of the tree matched to their offsets in the
text (:func:`comment_offsets`), so that only markup the parser made a comment of is read
as old IE's markup.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from functools import cache

from rewriter.document.speedups import str_argument, twin
from rewriter.html.parsed import HTML, ParsedDocument
from rewriter.html.tags import tag_end
from rewriter.html.turbo import core as turbohtml

# <!--[if IE]>...<![endif]-->: the head, then the first end after it. Two patterns: one
# with a lazy ".*?" between them steps through the text one character at a time.
# A condition is short ("[if lt IE 9]", "[if (gte mso 9)|(IE)]"): bounded, so that a
# page of heads with no "]" is not read to its end once per head.
CONDITIONAL_HEAD = re.compile(r"<!--\[(?i:if)[^\]]{0,256}\]>").match
CONDITIONAL_END = re.compile(r"<!\[(?i:endif)\]\s*-->").search


@twin
def conditional_head(text: str, start: int) -> int:
    """Where the first ``<!--[`` at or after *start* is (-1: nowhere), as ``str.find`` says:
    where a conditional comment may start. Compiled, a search for the rare "[" (memchr)
    and then the four characters before it, four times the speed of ``str.find``'s here.

    >>> conditional_head("<p><!--[if IE]>", 0), conditional_head("<!--[", 1)
    (3, -1)
    """
    return str_argument(text).find("<!--[", start)


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
        head = CONDITIONAL_HEAD(text, position)
        if head is None:
            position = conditional_head(text, position + 5)
            continue
        if end is None or end.start() < head.end():
            end = CONDITIONAL_END(text, head.end())
            if end is None:
                return
        yield position, head.end(), end.start(), end.end()
        position = conditional_head(text, end.end())


# HTML elements whose content the tree builder has the tokenizer read as raw text or
# RCDATA (HTML §13.2.6.4.4, §13.2.6.4.7; <noscript> with scripting on): "<!--" there is text.
_RAW_TEXT_ELEMENTS = frozenset(
    {"script", "style", "xmp", "iframe", "noembed", "noframes", "noscript", "textarea", "title", "plaintext"}
)
_RAW_TEXT_SELECTOR = ", ".join(sorted(_RAW_TEXT_ELEMENTS))


# The data of a conditional comment: "[if ...]>" markup "<![endif]".
@cache  # compiled at its first use (0.3 ms): a page without conditional comments never asks
def _conditional_data() -> Callable[[str], re.Match[str] | None]:
    return re.compile(r"\[(?i:if)[^\]]{0,256}\]>.*<!\[(?i:endif)\]\s*\Z", re.DOTALL).match


_COMMENT_TOKEN = turbohtml.TokenType.COMMENT
START_TAG_TOKEN = turbohtml.TokenType.START_TAG
_TOKENIZER_CHUNK = 1 << 16  # text given to the tokenizer at a time: a restart wastes at most this


def comment_offsets(document: ParsedDocument, first: int) -> list[tuple[int, str]]:
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
    expected = _tree_comments(document)
    if not expected:
        return []
    # Most pages: every "<!--[if" of the text, read as a comment from there, is one of the
    # tree's. When the two agree, data for data, there is no lookalike among them: a real
    # comment missing from the text's could only lie inside a lookalike found before it,
    # which ends where it ends and so has longer data; the longest such lookalike would
    # need a real comment with its data, missing too, inside a yet longer one.
    in_text = _text_comments(document, first)
    shaped = Counter(data for data in expected.elements() if _conditional_data()(data) is not None)
    if Counter(data for _, data in in_text if _conditional_data()(data) is not None) == shaped:
        return in_text
    found = _TokenizedComments(document).found()
    counted = Counter(data for _, data in found)
    return [(offset, data) for offset, data in found if counted[data] == expected[data]]


def _tree_comments(document: ParsedDocument) -> Counter[str]:
    """The data of each conditional comment node of the tree (it starts "[if"), counted."""
    nodes = document.tree.xpath("//comment()")
    assert isinstance(nodes, list)  # a node-set
    return Counter(
        data for node in nodes if isinstance(node, turbohtml.Comment) and (data := node.data)[:3].lower() == "[if"
    )


class _TokenizedComments:
    """The conditional comments of a document as the tokenizer reads them, started again
    in the data state after each raw-text tag that opened no raw-text element of the tree
    (see :func:`comment_offsets`)."""

    def __init__(self, document: ParsedDocument) -> None:
        self.document = document
        tree = document.tree
        # The elements a raw-text tag may have opened, by offset (any namespace: SVG has a <title>).
        self.element_at: dict[int, turbohtml.Element] = {}
        for element in tree.select(_RAW_TEXT_SELECTOR):
            if element.position is not None:
                self.element_at.setdefault(document.offset(element), element)
        self.foreign = tree.select_one("svg, math") is not None
        self.raw_text = _RAW_TEXT_ELEMENTS if document.scripting else _RAW_TEXT_ELEMENTS - {"noscript"}
        self.text = document.parser_text
        self.last = self.text.rfind("<!--[")  # no conditional comment starts after it

    def found(self) -> list[tuple[int, str]]:
        """Each conditional comment token's offset and data, in order."""
        text = self.text
        found: list[tuple[int, str]] = []
        tokenizer = turbohtml.Tokenizer(capture_attributes=False)
        origin = 0  # where the tokenizer started reading (its line 1 starts there)
        fed = 0  # how much of the text it has been given
        closed = False
        while not closed:
            if fed < len(text):
                tokens: Iterable[turbohtml.Token] = tokenizer.feed(text[fed : fed + _TOKENIZER_CHUNK])
                fed += _TOKENIZER_CHUNK
            else:
                tokenizer.close()
                tokens, closed = tokenizer, True
            restart = self._read(tokens, origin, found)
            if restart is not None:
                if restart >= len(text):
                    break
                tokenizer.reset()
                origin = fed = restart
                closed = False
        return found

    def _read(self, tokens: Iterable[turbohtml.Token], origin: int, found: list[tuple[int, str]]) -> int | None:
        """The comments of *tokens* (from a tokenizer that started at *origin*) added to
        *found*; where to start again (the end of the text: nowhere), or None to read on."""
        for token in tokens:
            kind = token.type
            if kind is START_TAG_TOKEN:
                if token.tag in _RAW_TEXT_ELEMENTS:
                    restart = self._after_raw_text_tag(token, origin)
                    if restart is not None:
                        return restart
            elif kind is _COMMENT_TOKEN:
                data = token.data or ""
                if data[:7] == "[CDATA[" and self.foreign:
                    return len(self.text)
                if data[:3].lower() == "[if":
                    found.append((_offset_of(self.document, origin, token), data))
                    if found[-1][0] >= self.last:
                        return len(self.text)
        return None

    def _after_raw_text_tag(self, token: turbohtml.Token, origin: int) -> int | None:
        """For a raw-text start tag: where to start again when it opened no HTML raw-text
        element of its name (the tree builder's tokenizer stayed in the data state), the
        end of the text past the last head, None when it did (the tokenizer reads on)."""
        offset = _offset_of(self.document, origin, token)
        if offset > self.last:
            return len(self.text)
        name, opened = token.tag, self.element_at.get(offset)
        if name not in self.raw_text or opened is None or opened.namespace is not HTML or opened.tag != name:
            return tag_end(self.document.text, offset)
        return None


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
        if CONDITIONAL_HEAD(text, position) is None:
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
        found.append((position, comment_data(document, text[start:end])))
        position = conditional_head(text, end)
    return found


def comment_data(document: ParsedDocument, piece: str) -> str:
    """A comment's source text as its node holds it: NUL read as U+FFFD (§13.2.5.45-50),
    line breaks as the parser saw them."""
    return document.as_parsed(piece.replace("\0", "\ufffd"))


def _offset_of(document: ParsedDocument, origin: int, token: turbohtml.Token) -> int:
    """Where *token*, from a tokenizer that started at *origin*, begins in the text: on its
    first line, *origin* and its column; on a later one, that line's start and its column."""
    if document.flat or token.line == 1:
        return origin + token.col
    first = bisect.bisect_right(document.line_starts, origin) - 1  # the line *origin* is on
    return document.line_starts[first + token.line - 1] + token.col
