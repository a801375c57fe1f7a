"""Start tags read from the text, as the HTML tokenizer reads them (HTML §13.2.5.6-40): each
attribute's name and the span of its value (all of them, or one by name in one call), where a
tag ends, and where raw text ends.

The engine finds its elements in turbohtml's tree, which says where each start tag begins;
these read that one tag again, for the byte span of each value. Each function marked
:func:`~rewriter.document.speedups.twin` is the Python reference of a compiled function of
the same name (``rewriter.document._speedups``), which runs in its place when the extension
was built: the same results for every input.

>>> tag_attributes('<a HREF="x" href=y title>', 0)
({'href': (9, 10, '"'), 'title': (24, 24, '=')}, 25)
>>> tag_end("<p class=a>b</p>", 0), end_tag("<style>p{}</STYLE >", "style", 7)
(11, 10)
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from typing import cast

from rewriter.document.speedups import str_argument, twin

__all__ = [
    "ATTRIBUTE",
    "QUOTE_OF_GROUP",
    "QUOTE_OF_VALUE_GROUP",
    "TAG_NAME",
    "VALUELESS",
    "VALUE_OF",
    "Span",
    "ascii_lower",
    "attribute_value_pattern",
    "end_tag",
    "tag_attributes",
    "tag_end",
]

# One attribute of a start tag, as the tokenizer reads it (HTML §13.2.5.32-39): the
# name runs to whitespace, "/", ">" or "=" (a leading "=" belongs to it); the value is
# double-quoted, single-quoted, or runs to whitespace or ">".
ATTRIBUTE = re.compile(
    r"[\t\n\f\r /]*(?:([^\t\n\f\r />][^\t\n\f\r /=>]*)"
    r"(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:\"([^\"]*)\"?|'([^']*)'?|([^\t\n\f\r >]*)))?)?"
)
TAG_NAME = re.compile(r"<[^\t\n\f\r />]*")
# Every part of ATTRIBUTE is optional: it matches everywhere (typed so, at no cost).
_match_attribute = cast(Callable[[str, int], "re.Match[str]"], ATTRIBUTE.match)
QUOTE_OF_GROUP = {2: '"', 3: "'", 4: ""}
# The "quote" of an attribute written without a value (HTML §13.2.5.33): its value is the
# empty string, at an empty span just after the name; a new value comes with its "=".
VALUELESS = "="

# One attribute value: (start, end, quote), the quote '"', "'", "" (unquoted) or VALUELESS.
Span = tuple[int, int, str]


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
VALUE_OF: dict[str, Callable[[str, int], re.Match[str] | None]] = {}


def attribute_value_pattern(name: str) -> Callable[[str, int], re.Match[str] | None]:
    """A matcher from a start tag's "<" to its first attribute *name* (lowercase):
    groups 1, 2 and 3 hold the value, double-, single- or un-quoted; none matched: no value."""
    matcher = VALUE_OF.get(name)
    if matcher is None:
        this = f"(?i:{re.escape(name)}){_NAME_ENDED}"
        matcher = VALUE_OF[name] = re.compile(
            rf"{_TAG_NAME_ENDED}(?:[\t\n\f\r /]*(?!{this}){_ANY_NAME}{_ANY_VALUE})*[\t\n\f\r /]*{this}{_ONE_VALUE}",
            re.ASCII,
        ).match
    return matcher


QUOTE_OF_VALUE_GROUP = {1: '"', 2: "'", 3: ""}


def ascii_lower(name: str) -> str:
    """HTML §13.2.5.33: the tokenizer lowercases ASCII upper alphas only."""
    if name.isascii():
        return name.lower()
    return "".join(char.lower() if char.isascii() else char for char in name)


def _name_end(text: str, offset: int) -> int:
    """Past the "<" and name of the tag at *offset*; ValueError when no "<" is there,
    TypeError when *text* is no str or *offset* no integer (an ``__index__`` will do)."""
    text = str_argument(text)
    offset = operator.index(offset)
    match = TAG_NAME.match(text, offset) if 0 <= offset < len(text) else None
    if match is None:
        raise ValueError(f"no start tag at {offset}: a tag starts with '<'")
    return match.end()


@twin
def tag_attributes(text: str, offset: int) -> tuple[dict[str, Span], int]:
    """The attributes of the start tag at *offset* of *text* (its "<"), and the offset
    just past its ">" (the end of the text when it has none).

    Each name ASCII-lowercased, the first of duplicate names winning, in source order; each
    value as its span in *text* and its quote: '"', "'", "" (unquoted) or :data:`VALUELESS`
    (no value: the empty span just after the name). ValueError when *text* has no "<" at
    *offset*.
    """
    text = str_argument(text)
    position = _name_end(text, offset)
    spans: dict[str, Span] = {}
    match_attribute = _match_attribute
    while True:
        match = match_attribute(text, position)
        last = match.lastindex
        if last is None:
            close = text.find(">", position)
            return spans, len(text) if close < 0 else close + 1
        name = match.group(1)
        position = match.end()
        name = name.lower() if name.isascii() else ascii_lower(name)
        if name in spans:
            continue
        # Group 2, 3 or 4 is the value, double-quoted, single-quoted or unquoted.
        if last == 1:
            spans[name] = (match.end(1), match.end(1), VALUELESS)
        else:
            spans[name] = (*match.span(last), QUOTE_OF_GROUP[last])


@twin
def tag_end(text: str, offset: int) -> int:
    """The offset just past the tag at *offset* (its "<"): past its ">", or the end of the
    text. ValueError when *text* has no "<" at *offset*."""
    text = str_argument(text)
    position = _name_end(text, offset)
    while (match := _match_attribute(text, position)).lastindex is not None:
        position = match.end()
    close = text.find(">", position)
    return len(text) if close < 0 else close + 1


@twin
def end_tag(text: str, name: str, start: int) -> int:
    """Where the raw text that starts at *start* ends: the first ``</`` + *name* (lowercase,
    compared as ``str.lower`` compares) followed by whitespace, "/" or ">" (HTML §13.2.5.12
    "appropriate end tag"), or ``len(text)``; *start* read as ``str.find`` reads it."""
    text, name = str_argument(text), str_argument(name)
    length = len(name) + 2
    position = text.find("</", start)
    while position >= 0:
        if text[position + 2 : position + length].lower() == name and text[
            position + length : position + length + 1
        ] in ("\t", "\n", "\f", "\r", " ", "/", ">"):
            return position
        position = text.find("</", position + 2)
    return len(text)
