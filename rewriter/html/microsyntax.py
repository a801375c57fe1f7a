"""HTML's small syntaxes inside attribute values: character references, srcset, meta refresh.

Each parser reports where each URL sits in the value, so that only the URL is replaced.

>>> srcset_urls("a,b.png 1x, c.png 2x")
[(0, 7), (12, 17)]
>>> refresh_url("5; url='next.html'")
(8, 17)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from html.entities import html5 as _NAMED
from typing import cast

__all__ = ["decode_attribute", "refresh_url", "space_separated", "srcset_urls", "strip_whitespace"]

ASCII_WHITESPACE = " \t\n\f\r"

# HTML §13.2.5.72-80: "&" then a numeric reference or the longest name.
_REFERENCE = re.compile(r"&(?:#[xX]([0-9A-Fa-f]+);?|#([0-9]+);?|([A-Za-z][A-Za-z0-9]*)(;?))")

# §13.2.5.80 numeric character reference end state: C1 controls read as windows-1252.
_C1 = {n: bytes([n]).decode("cp1252") for n in range(0x80, 0xA0) if n not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)}


def _numeric(number: int) -> str:
    if number == 0 or number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
        return "\ufffd"
    return _C1.get(number, chr(number))


def _named(name: str, semicolon: bool, following: str) -> str | None:
    """The text a named reference stands for in an attribute value, or None to keep it.

    §13.2.5.73: the longest known name wins. Only the legacy names are known without
    ";"; in an attribute, one followed by an alphanumeric or "=" is kept as written
    (``&copy=2``, ``&notit``).
    """
    if semicolon and name + ";" in _NAMED:
        return _NAMED[name + ";"]
    for end in range(len(name), 1, -1):
        if name[:end] in _NAMED:
            if end < len(name) or following == "=":
                return None
            return _NAMED[name]
    return None


def decode_attribute(raw: str) -> tuple[str, list[int] | None]:
    """An attribute value with its character references decoded, and where each character came from.

    The list gives, for each character of the result and one past its end, the offset
    in *raw* it came from; it is None when nothing was decoded (offsets are the same).

    >>> decode_attribute("a&amp;b&copy=1")
    ('a&b&copy=1', [0, 1, 6, 7, 8, 9, 10, 11, 12, 13, 14])
    >>> decode_attribute("plain")
    ('plain', None)
    """
    if "&" not in raw:
        return raw, None
    if raw.count("&") == raw.count("&amp;"):
        # Only "&amp;" (most URLs with a query): each is one "&" that came from its "&".
        offsets_of_amp: list[int] = []
        position = 0
        for part in raw.split("&amp;"):
            offsets_of_amp.extend(range(position, position + len(part)))
            position += len(part)
            offsets_of_amp.append(position)  # the "&" (after the last part: the end)
            position += 5
        return raw.replace("&amp;", "&"), offsets_of_amp
    return decode_references(raw)


def decode_references(raw: str) -> tuple[str, list[int]]:
    """:func:`decode_attribute` for any *raw* with an "&": each reference read as the
    tokenizer reads it in an attribute value (HTML §13.2.5.72-80)."""
    pieces: list[str] = []
    offsets: list[int] = []
    last = 0
    for match in _REFERENCE.finditer(raw):
        hex_digits, decimal, name, semicolon = match.groups()
        if name is not None:
            following = raw[match.end() : match.end() + 1]
            text = _named(name, bool(semicolon), following)
            if text is None:
                continue
        else:
            text = _numeric(int(hex_digits, 16) if hex_digits is not None else int(decimal))
        start = match.start()
        pieces.append(raw[last:start])
        offsets.extend(range(last, start))
        pieces.append(text)
        offsets.extend([start] * len(text))
        last = match.end()
    pieces.append(raw[last:])
    offsets.extend(range(last, len(raw) + 1))
    return "".join(pieces), offsets


def strip_whitespace(value: str, start: int, end: int) -> tuple[int, int]:
    """The span [start, end) of *value* without leading and trailing ASCII whitespace."""
    while start < end and value[start] in ASCII_WHITESPACE:
        start += 1
    while end > start and value[end - 1] in ASCII_WHITESPACE:
        end -= 1
    return start, end


def space_separated(value: str) -> list[tuple[int, int]]:
    """The spans of the tokens of a set of space-separated tokens (``ping``, ``archive``)."""
    return [match.span() for match in re.finditer(r"[^ \t\n\f\r]+", value)]


def srcset_urls(value: str) -> list[tuple[int, int]]:
    """The spans of the image-candidate URLs of a ``srcset`` value.

    HTML §4.8.4.3.10 "parse a srcset attribute": a URL runs to the next whitespace and
    may contain commas; trailing commas end the candidate; descriptors run to a comma
    outside parentheses. Separators and descriptors are left as they are.

    >>> srcset_urls("img,2x.png 2x,x.png, y.png (a,b) 3x ,z.png")
    [(0, 10), (14, 19), (21, 26), (37, 42)]
    """
    spans: list[tuple[int, int]] = []
    position, length = 0, len(value)
    while True:
        position = _separators(value, position).end()
        if position >= length:
            return spans
        start = position
        position = end = _url(value, position).end()
        if value[end - 1] == ",":  # trailing commas: no descriptors
            spans.append((start, start + len(value[start:end].rstrip(","))))
            continue
        spans.append((start, end))
        position = _descriptors(value, position).end()


# HTML §4.8.4.3.10 "parse a srcset attribute", its three loops as patterns: the splitting
# loop skips whitespace and commas; a URL runs to whitespace; the descriptor tokenizer
# runs to a comma outside parentheses (a "(" opens them, the next ")" closes them).
_SRCSET_SEPARATORS = re.compile(r"[ \t\n\f\r,]*")
_SRCSET_URL = re.compile(r"[^ \t\n\f\r]*")
_SRCSET_DESCRIPTORS = re.compile(r"(?:[^(,]+|\([^)]*\)?)*,?")
# Each of the three matches the empty string: its match never fails (typed so, at no cost).
_separators = cast(Callable[[str, int], "re.Match[str]"], _SRCSET_SEPARATORS.match)
_url = cast(Callable[[str, int], "re.Match[str]"], _SRCSET_URL.match)
_descriptors = cast(Callable[[str, int], "re.Match[str]"], _SRCSET_DESCRIPTORS.match)


# HTML §7.11.1 "shared declarative refresh steps" (which the refresh pragma of §4.2.5.3
# runs on a ``<meta http-equiv=refresh>``), steps 2 to 11.8 as one pattern, each step beside
# its rule; a time with no URL (position past the end at step 10 or 11) does not match.
# Compiled at its first use (0.4 ms): most pages have no refresh.
_REFRESH_UP_TO_URL = (
    # No possessive quantifier or atomic group (Debian 12's CPython 3.11.2 matches some wrongly): each run is
    # made the longest by what must follow it, so the match is the steps' one and stays linear.
    r"""
    [ \t\n\f\r]*                          # 3. skip ASCII whitespace
    (?= [0-9.] ) [0-9.]*                  # 5-8. timeString of ASCII digits, or else a "." must follow;
                                          #   collect ASCII digits and "." (ignored)
    (?= [;,\ \t\n\f\r] )                 # 10.1 then ";", "," or ASCII whitespace, else return
    [ \t\n\f\r]* (?! [ \t\n\f\r] )        # 10.2 skip ASCII whitespace
    (?: [;,] | (?! [;,] ) )               # 10.3 skip one ";" or ","
    [ \t\n\f\r]* (?= [^ \t\n\f\r] )       # 10.4 skip ASCII whitespace; 11. position not past the end
    (?: [uU][rR][lL] [ \t\n\f\r]* = [ \t\n\f\r]* )?
                                          # 11.2-11.7 "url", whitespace, "=", whitespace; when one
                                          #   is missing, jump to "parse": urlString starts here
    (["']?)                               # 11.8 skip quotes: the quote, if there is one
    """
)


@cache
def _refresh_up_to_url() -> Callable[[str], re.Match[str] | None]:
    return re.compile(_REFRESH_UP_TO_URL, re.VERBOSE | re.DOTALL).match


def refresh_url(content: str) -> tuple[int, int] | None:
    """The span of the URL in a ``<meta http-equiv=refresh content>`` value, or None.

    HTML §7.11.1 "shared declarative refresh steps": a time, then ``;`` or ``,`` or
    whitespace, then optionally ``url=`` (case-insensitive), then optionally a quote,
    which ends the URL where it appears again. ``5`` alone has no URL.

    >>> content = "0, URL = \\"a b.html\\" trailing"
    >>> start, end = refresh_url(content)
    >>> content[start:end]
    'a b.html'
    >>> refresh_url("5") is None
    True
    """
    match = _refresh_up_to_url()(content)
    if match is None:
        return None
    url_start = match.end()  # 11.9 urlString: from position to the end
    quote = match[1]
    url_end = content.find(quote, url_start) if quote else -1  # 11.10 truncated at the quote
    if url_end < 0:
        url_end = len(content)
    # 11.11 parse: the URL parser strips leading and trailing whitespace; nothing left, no URL
    start, end = strip_whitespace(content, url_start, url_end)
    return (start, end) if end > start else None
