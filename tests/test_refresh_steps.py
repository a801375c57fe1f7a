"""refresh_url held to HTML §7.11.1 "shared declarative refresh steps" written out step by step.

The oracle below walks the steps one code point at a time, as the standard writes them;
:func:`rewriter.html.microsyntax.refresh_url` reads them with one pattern. Both then strip the
URL string as the URL parser does and give no URL for an empty one (the engine's convention).
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rewriter.html.microsyntax import refresh_url

_WHITESPACE = " \t\n\f\r"  # Infra "ASCII whitespace"
_DIGITS = "0123456789"


def _steps(content: str) -> tuple[int, int] | None:
    """The span of the URL string the steps give, stripped of ASCII whitespace, or None."""
    length = len(content)
    position = 0  # 2.

    def at() -> str:
        return content[position] if position < length else ""

    def skip(chars: str) -> None:
        nonlocal position
        while position < length and content[position] in chars:
            position += 1

    skip(_WHITESPACE)  # 3.
    time_start = position
    skip(_DIGITS)  # 5. timeString
    if position == time_start and at() != ".":  # 6.
        return None
    skip(_DIGITS + ".")  # 8.
    if position < length:  # 10.
        if at() not in ";," + _WHITESPACE:  # 10.1
            return None
        skip(_WHITESPACE)  # 10.2
        if at() in (";", ","):  # 10.3
            position += 1
        skip(_WHITESPACE)  # 10.4
    if position >= length:  # 11. (no URL: the document itself)
        return None
    url_start = position  # 11.1
    url_end = length
    quote = ""
    parse = False
    for letter in "uUrRlL"[::2]:  # 11.2-11.4
        if at().lower() != letter:
            parse = letter != "u"  # "u" missing: skip quotes; "r" or "l" missing: parse
            break
        position += 1
    else:
        skip(_WHITESPACE)  # 11.5
        if at() == "=":  # 11.6
            position += 1
            skip(_WHITESPACE)  # 11.7
        else:
            parse = True
    if parse:
        position = url_start
    else:
        if at() in ("'", '"'):  # 11.8 skip quotes
            quote = at()
            position += 1
        url_start = position  # 11.9
        if quote and content.find(quote, position) >= 0:  # 11.10
            url_end = content.find(quote, position)
    while url_start < url_end and content[url_start] in _WHITESPACE:
        url_start += 1
    while url_end > url_start and content[url_end - 1] in _WHITESPACE:
        url_end -= 1
    return (url_start, url_end) if url_end > url_start else None


_PIECES = st.sampled_from(
    [" ", "\t", "\n", "\f", "\r", "\v", "\xa0", "0", "5", "12", ".", ";", ",", "=", "u", "U", "r", "R", "l", "L",
     "url", "URL", "uRl", "'", '"', "a", "a.html", "x y", "-", "\u0130", "\u212a", "\u0661"]
)  # fmt: skip


@given(st.one_of(st.lists(_PIECES, max_size=14).map("".join), st.text(max_size=20)))
@settings(max_examples=3000, deadline=None)
@example("0;url")
@example("0; url =")
@example("0;u")
@example("0;ur'a'")
@example(".;url='")
@example("1" * 50 + "a")
def test_refresh_url_follows_the_steps(content: str) -> None:
    assert refresh_url(content) == _steps(content)
