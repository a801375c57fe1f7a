"""Find every URL in a CSS text, with exact spans, and escape new URL values to write back.

CSS appears in ``<style>`` elements, in ``style="..."`` attributes and in text/css files. :func:`find_urls`
tokenizes the text as CSS Syntax Level 3 §4.3 does and reports each URL with the span of its source text,
so a caller can replace exactly that text and leave every other character as it was. :func:`escape_url`
gives the text to write in place of that span so that CSS reads it back as the new URL.

What counts as a URL:

* a ``url(...)`` token, unquoted (§4.3.6), anywhere: context ``"url"``;
* the string that is the first argument of a ``url(`` or ``src(`` function (CSS Values 4 §4.5): ``"url"``;
* a string right after ``@import`` (CSS Cascade 4 §2.1): ``"import"``;
* a string that is an argument of ``image-set(`` or ``-webkit-image-set(`` (CSS Images 4 §2.2):
  ``"image-set"``; a ``url()`` there is an ordinary ``"url"`` entry.

Nothing else is: not strings in ``content`` or ``font-family``, not ``url(`` inside a comment or a string,
not a bad-url or bad-string token.

>>> css = 'a { background: url( "b c.png" ) } @import "x.css";'
>>> [(u.value, u.quote, u.context) for u in find_urls(css)]
[('b c.png', '"', 'url'), ('x.css', '"', 'import')]
>>> u = find_urls(css)[0]
>>> css[: u.start] + escape_url("http://h/b c.png", u.quote) + css[u.end :]
'a { background: url( "http://h/b c.png" ) } @import "x.css";'

Empty values (``url()``, ``url("")``) are reported like any other, but CSS Values 4 §4.5 ("Empty URLs")
makes them an invalid resource, not the base URL, so a caller that resolves references should leave them
as they are, and fragment-only values such as ``url(#clip)`` too ("Fragment URLs": they name something in
the current document).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

from rewriter.document.speedups import COMPILED, str_argument, twin

__all__ = ["CSSURL", "Context", "Quote", "css_urls", "escape_url", "find_urls", "may_hold_urls", "scan_css"]

Quote = Literal['"', "'", ""]
Context = Literal["url", "import", "image-set"]


@dataclass(frozen=True, slots=True)
class CSSURL:
    """One URL in a CSS text.

    ``css[start:end]`` is the URL's source text: what is between the quotes, or the unquoted text inside
    ``url( ... )`` without the whitespace around it (nor the whitespace that ends a final hex escape, as in
    ``url(\\29 )``). ``value`` is that text as CSS reads it, escapes decoded.

    >>> find_urls("b { background: url(a\\\\)b.png) }")
    [CSSURL(start=20, end=28, value='a)b.png', quote='', context='url')]
    """

    start: int
    end: int
    value: str
    quote: Quote
    context: Context


# --- regular expressions ------------------------------------------------------------------------------------------

# §4.3.7 consume an escaped code point: up to 6 hex digits and one optional whitespace (CR LF is one newline
# after §3.3 preprocessing), or any one code point that is not a newline.
_HEX_ESCAPE = r"[0-9a-fA-F]{1,6}(?:\r\n|[ \t\n\r\f])?"
# §4.3.8 a valid escape: "\" not followed by a newline ("\" at EOF is valid and gives U+FFFD).
_ESCAPE = rf"\\(?:{_HEX_ESCAPE}|[^\n\r\f0-9a-fA-F]|\Z)"

# What the scanner stops at outside strings, comments and url tokens: a comment start, a quote, a backslash
# (it may start a name spelt with escapes), "@import", and the names of the functions that take URLs.
# ASCII-only case folding (§4.3.4 compares names ASCII case-insensitively).
# The scan stops at single characters (a character class runs ten times faster than an
# alternation of keywords in Python's re), each kept only when it can matter: "/" before
# "*" (a comment), "@" before "i" or "\\" (@import, perhaps escaped), "(" after "url",
# "src" or "set" (url, src, image-set; the name before it is read backwards), quotes and
# "\\". Half of the stops in real style sheets were other "(" and "@"; after "l", "c" or
# "t" alone, four in five were still calc(, rect(, linear-gradient( and the like.
_SCAN_PATTERN = (
    r"[/\"'\\(@](?:(?<=/)(?=\*)|(?<=@)(?=[iI\\])"
    r"|(?<=[uU][rR][lL]\()|(?<=[sS][rR][cC]\()|(?<=[sS][eE][tT]\()|(?<=[\"'\\]))"
)
# Inside image-set(), brackets too: only strings at the top level of its arguments are URLs.
_SCAN_NESTED_PATTERN = r"[/\"'\\()\[\]{}@]"

_WS_PATTERN = r"[ \t\n\r\f]*"  # §4.2 whitespace: newline (LF, CR, FF), tab, space

# §4.3.5 consume a string token: ends at the closing quote, at EOF (still a string), or at an unescaped
# newline (a bad-string); "\" + newline is a line continuation.
_STRING_BODY_PATTERNS = {q: rf"[^{q}\\\n\r\f]*(?:\\(?:{_HEX_ESCAPE}|\r\n|[\s\S]|\Z)[^{q}\\\n\r\f]*)*" for q in "\"'"}

# §4.3.6 consume a url token: anything but quotes, parentheses, whitespace, non-printable code points (§4.2;
# NUL is U+FFFD after §3.3 preprocessing, so it is allowed) and "\" that does not start a valid escape.
_URL_CHAR = r"[^\"'()\\ \t\n\r\f\x01-\x08\x0b\x0e-\x1f\x7f]"
_URL_BODY_PATTERN = rf"{_URL_CHAR}*(?:{_ESCAPE}{_URL_CHAR}*)*"

# §4.3.14 consume the remnants of a bad url: up to ")" or EOF, valid escapes consumed whole.
_BAD_URL_REMNANTS_PATTERN = r"[^)\\]*(?:\\(?:[\s\S]|\Z)[^)\\]*)*"

# §4.3.12 consume an ident sequence: name code points (§4.2: letters, digits, "_", "-", and U+0080 and above;
# NUL and surrogates count, being U+FFFD after preprocessing) and valid escapes.
# Spelt as the ASCII characters it excludes: the same set, compiled in 0.2 ms instead of 6 ms
# (re builds a bitmap for the range up to U+10FFFF), paid by every command line's start-up.
NAME_CHAR = r"[^\x01-\x2c./\x3a-\x40\x5b-\x5e\x60\x7b-\x7f]"
_NAME_PATTERN = rf"{NAME_CHAR}*(?:{_ESCAPE}{NAME_CHAR}*)*"

# Decoding: §4.3.7 escapes, §4.3.5 line continuations, §3.3 NUL and surrogates to U+FFFD.
_DECODE_PATTERN = r"\\(?:([0-9a-fA-F]{1,6})(?:\r\n|[ \t\n\r\f])?|(\r\n|[\n\r\f])|([\s\S])|\Z)|[\x00\ud800-\udfff]"

# Each pattern above matches the empty string, so its match never fails: typed so, at no cost.
_Matcher = Callable[[str, int], "re.Match[str]"]

# The Python scanner's patterns, compiled at its first use (_compile): with the C extension
# (rewriter.document._speedups), which scans without them, no start-up pays for them (a few ms).
_SCAN: re.Pattern[str]
_SCAN_NESTED: re.Pattern[str]
_DECODE: re.Pattern[str]
_NEEDS_FFFD: re.Pattern[str]
_ws: _Matcher
_string_body: dict[str, _Matcher]
_url_body: _Matcher
_bad_url_remnants: _Matcher
_name: _Matcher
_compiled = False


def _compile() -> None:
    """Compile the scanner's patterns (once: :func:`find_urls` calls this first)."""
    global _SCAN, _SCAN_NESTED, _DECODE, _NEEDS_FFFD, _ws, _string_body, _url_body, _bad_url_remnants, _name, _compiled
    _SCAN = re.compile(_SCAN_PATTERN)
    _SCAN_NESTED = re.compile(_SCAN_NESTED_PATTERN)
    _DECODE = re.compile(_DECODE_PATTERN)
    _NEEDS_FFFD = re.compile(r"[\x00\ud800-\udfff]")
    _ws = cast(_Matcher, re.compile(_WS_PATTERN).match)
    _string_body = {
        quote: cast(_Matcher, re.compile(pattern).match) for quote, pattern in _STRING_BODY_PATTERNS.items()
    }
    _url_body = cast(_Matcher, re.compile(_URL_BODY_PATTERN).match)
    _bad_url_remnants = cast(_Matcher, re.compile(_BAD_URL_REMNANTS_PATTERN).match)
    _name = cast(_Matcher, re.compile(_NAME_PATTERN).match)
    _compiled = True


_NAME_ASCII = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_NEWLINES = frozenset("\n\r\f")
_WHITESPACE = frozenset(" \t\n\r\f")
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_FUNCTIONS = frozenset({"url", "src", "image-set", "-webkit-image-set"})

# A frame of the bracket stack kept inside image-set(): the closing character, and whether it is image-set's own.
_Frame = tuple[str, bool]


# --- helpers --------------------------------------------------------------------------------------------------


def _is_name(char: str) -> bool:
    """§4.2 name code point (a single character)."""
    return char in _NAME_ASCII or char >= "\x80" or char == "\x00"


def _decode(raw: str, at_eof: str) -> str:
    """The value of string or url or name source text: escapes decoded, NUL and surrogates to U+FFFD.

    ``at_eof`` is what a "\\" at the very end gives: nothing in a string (§4.3.5), U+FFFD elsewhere (§4.3.7).
    """
    if "\\" not in raw and _NEEDS_FFFD.search(raw) is None:
        return raw

    def replace(match: re.Match[str]) -> str:
        digits, newline, char = match.groups()
        if digits is not None:
            code = int(digits, 16)
            # §4.3.7: zero, a surrogate or beyond U+10FFFF gives U+FFFD
            return "\ufffd" if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)
        if newline is not None:
            return ""  # §4.3.5 line continuation
        if char is not None:
            return "\ufffd" if char == "\x00" or "\ud800" <= char <= "\udfff" else char
        if match.group() == "\\":
            return at_eof
        return "\ufffd"  # §3.3 NUL or surrogate in the source

    return _DECODE.sub(replace, raw)


def _skip_whitespace_and_comments(css: str, i: int) -> int:
    n = len(css)
    while True:
        i = _ws(css, i).end()
        if not css.startswith("/*", i):
            return i
        end = css.find("*/", i + 2)
        if end < 0:
            return n  # §4.3.2 an unclosed comment runs to EOF
        i = end + 2


def _string(css: str, q: int, context: Context | None, out: list[CSSURL]) -> int:
    """Consume the string token whose quote is at ``q`` (§4.3.5); record it when ``context`` is given.

    Returns where the next token starts. A bad-string is never recorded.
    """
    n = len(css)
    quote = css[q]
    e = _string_body[quote](css, q + 1).end()
    if e >= n:
        end = after = n  # EOF: a string token all the same (a parse error)
    elif css[e] == quote:
        end, after = e, e + 1
    else:
        return e  # unescaped newline: bad-string; the newline is reconsumed
    if context is not None:
        out.append(CSSURL(q + 1, end, _decode(css[q + 1 : end], ""), cast(Quote, quote), context))
    return after


def _function(name: str, css: str, j: int, stack: list[_Frame], out: list[CSSURL]) -> int:
    """Handle ``name(`` (one of ``_FUNCTIONS``, lower case) whose "(" ends just before ``j``.

    Returns where scanning resumes.
    """
    n = len(css)
    if name == "url":
        # §4.3.4: "url(" then whitespace then a quote is a function token; otherwise a url token.
        i = _ws(css, j).end()
        if i < n and css[i] in "\"'":
            if stack:
                stack.append((")", False))
            return _string(css, i, "url", out)
        # §4.3.6 consume a url token
        body_end = _url_body(css, i).end()
        t = _ws(css, body_end).end()
        if t >= n or css[t] == ")":
            # The whitespace that ends a final hex escape (§4.3.7) is left out of the span, like the whitespace
            # around the URL; whitespace right after "\\" is an escaped character of the value, and stays.
            if body_end - 2 > i and css.startswith("\r\n", body_end - 2):
                body_end -= 2
            elif body_end - 1 > i and css[body_end - 1] in _WHITESPACE and css[body_end - 2] != "\\":
                body_end -= 1
            out.append(CSSURL(i, body_end, _decode(css[i:body_end], "\ufffd"), "", "url"))
            return min(t + 1, n)
        # a quote, "(", a non-printable code point, an invalid escape, or whitespace inside: bad-url
        return min(_bad_url_remnants(css, i).end() + 1, n)
    if name == "src":
        # CSS Values 4 §4.5: src() takes a string (and modifiers); comments are not tokens (§4.3.2)
        if stack:
            stack.append((")", False))
        i = _skip_whitespace_and_comments(css, j)
        if i < n and css[i] in "\"'":
            return _string(css, i, "url", out)
        return i
    stack.append((")", True))  # image-set( or -webkit-image-set(
    return j


def _import(css: str, j: int, out: list[CSSURL]) -> int:
    """After the at-keyword ``@import`` ending at ``j``: a string there is the URL (CSS Cascade 4 §2.1)."""
    i = _skip_whitespace_and_comments(css, j)
    if i < len(css) and css[i] in "\"'":
        return _string(css, i, "import", out)
    return i


def _function_name(css: str, k: int, pos: int, boundary: int) -> str | None:
    """The name of the function whose "(" is at ``k``, lower case, when it is one of ``_FUNCTIONS``
    and a function token (§4.3.4 consume an ident-like token); None otherwise.

    The name is read backwards from ``k``, within what the last search passed over (from ``pos``).
    It is a function's only when it starts a token (§4.3.1), not when it ends a longer name (xurl), a
    hash (#url), an at-keyword (@url) or a dimension (5url); "<!--" is a token of its own (§4.3.1
    CDO), so "<!--url(" is a url.
    """
    tail = css[k - 3 : k].lower()
    if tail == "url" or tail == "src":
        name = tail
    elif tail == "set" and css[k - 9 : k].lower() == "image-set":
        name = "-webkit-image-set" if css[k - 17 : k].lower() == "-webkit-image-set" else "image-set"
    else:
        return None
    start = k - len(name)
    if start < pos:
        return None
    if start > boundary:
        before = css[start - 1]
        if (_is_name(before) or before in "@#") and not (start - 4 >= boundary and css[start - 4 : start] == "<!--"):
            return None
    return name


def _import_keyword_end(css: str, k: int) -> int:
    """Where the at-keyword token at ``k`` ends when it is ``@import`` (§4.3.1 "@", §4.3.12 an ident
    sequence); -1 for any other at-keyword, a longer one such as ``@imports`` included."""
    after = k + 7
    if css[k + 1 : after].lower() != "import":
        return -1
    if after < len(css) and (
        _is_name(css[after]) or (css[after] == "\\" and css[after + 1 : after + 2] not in _NEWLINES)
    ):
        return -1  # §4.3.12 the name goes on: a name code point or a valid escape (§4.3.8)
    return after


# --- the API --------------------------------------------------------------------------------------------------


def find_urls(css: str) -> list[CSSURL]:
    """Every URL in ``css``, in document order (see the module docstring for what counts).

    Never raises, and runs in time linear in ``len(css)``.

    >>> [(u.start, u.end, u.value, u.context) for u in find_urls("p{background:URL(a.png)}/* url(no) */")]
    [(17, 22, 'a.png', 'url')]
    >>> [(u.value, u.context) for u in find_urls('i { background: image-set("a.png" 1x, url(b.png) 2x) }')]
    [('a.png', 'image-set'), ('b.png', 'url')]
    >>> find_urls('q { content: "url(x)"; font-family: "A B" }')
    []
    """
    if not _compiled:
        _compile()
    out: list[CSSURL] = []
    n = len(css)
    pos = 0
    # Every position from ``boundary`` to ``pos`` is outside comments, strings and url tokens, and a token
    # starts at ``boundary``: what lets a name be read backwards from a "\" or a keyword.
    boundary = 0
    stack: list[_Frame] = []  # brackets inside image-set(); empty elsewhere
    scan = _SCAN.search
    scan_nested = _SCAN_NESTED.search
    function_name, function, string = _function_name, _function, _string  # local names: the loop is hot
    while pos < n:  # §4.3.1 consume a token, at each code point where one may matter
        match = scan_nested(css, pos) if stack else scan(css, pos)
        if match is None:
            break
        k = match.start()
        char = css[k]
        if char == "(":  # §4.3.4 a function token, or a "(" token
            name = function_name(css, k, pos, boundary)
            if name is not None:
                pos = boundary = function(name, css, k + 1, stack, out)
            elif stack:  # a bracket inside image-set()
                stack.append((")", False))
                pos = boundary = k + 1
            else:
                pos = k + 1
        elif char == "/":
            if css.startswith("*", k + 1):  # §4.3.2 consume comments
                end = css.find("*/", k + 2)
                if end < 0:
                    break  # an unclosed comment runs to EOF
                pos = boundary = end + 2
            else:
                pos = k + 1  # a delim token
        elif char == '"' or char == "'":  # §4.3.5 consume a string token
            pos = boundary = string(css, k, "image-set" if stack and stack[-1][1] else None, out)
        elif char == "\\":  # §4.3.1 a valid escape starts an ident-like token (§4.3.4)
            pos = boundary = _backslash(css, k, boundary, stack, out)
        elif char == "@":  # §4.3.1 an at-keyword token
            after = _import_keyword_end(css, k)
            if after < 0:
                pos = k + 1
            else:
                pos = boundary = _import(css, after, out)
        elif char in _CLOSERS:  # §5.4.8 consume a simple block, §5.4.9 consume a function
            stack.append((_CLOSERS[char], False))
            pos = boundary = k + 1
        else:  # ")", "]" or "}" inside image-set()
            # §5.4.8/§5.4.9: a block or function ends at its own closing token; others inside are kept
            if stack[-1][0] == char:
                stack.pop()
            pos = boundary = k + 1
    return out


def _backslash(css: str, p: int, boundary: int, stack: list[_Frame], out: list[CSSURL]) -> int:
    """A "\\" at ``p`` outside strings, comments and url tokens; returns where scanning resumes.

    A valid escape is part of a name (§4.3.1): an identifier, function name, at-keyword, hash or dimension
    unit. Its start is found by reading name code points backwards to ``boundary``; a name spelt with escapes
    (``\\75 rl(``, ``@\\69mport``) is decoded and handled like the plain one.
    """
    n = len(css)
    if p + 1 < n and css[p + 1] in _NEWLINES:
        return p + 1  # §4.3.8 not a valid escape: a delim token
    name_end = _name(css, p).end()
    if name_end < n and css[name_end] == "(":
        bound = boundary  # perhaps a function: the whole name is needed
    elif (at := css.rfind("@", max(boundary, p - 8), p)) >= 0:
        bound = at  # perhaps @import: "@" and at most six name characters before the "\\"
    else:
        return name_end  # neither: an identifier, a hash or a dimension, with no URL
    r = p
    while r > bound and _is_name(css[r - 1]):
        r -= 1
    if css.startswith("--", r) and r - 2 >= boundary and css.startswith("<!", r - 2):
        r += 2  # §4.3.1 "<!--" is a CDO token; the name starts after it
    before = css[r - 1] if r > boundary else ""
    if before == "#":
        return name_end  # a hash token
    name = css[r:p] + _decode(css[p:name_end], "\ufffd")
    key = name.lower() if name.isascii() else ""
    if before == "@":
        return _import(css, name_end, out) if key == "import" else name_end
    if key in _FUNCTIONS and name_end < n and css[name_end] == "(":
        return _function(key, css, name_end + 1, stack, out)
    return name_end


# --- escaping -------------------------------------------------------------------------------------------------


# Quoted (§4.3.5): "\", the quote, and C0 controls and DEL (newlines would end the string; the others are
# escaped so that no control character reaches the document). NUL and surrogates cannot be written (§3.3).
@functools.cache
def _special(quote: str, style: bool) -> re.Pattern[str]:
    """What :func:`escape_url` escapes inside *quote* (``""``: unquoted), "<" too in a style
    element: compiled at its first use, not by every start-up."""
    if quote == "":  # unquoted (§4.3.6): whitespace, quotes, parentheses, "\" and non-printable code points
        return re.compile(rf"[\\\"'()\x00-\x20\x7f\ud800-\udfff{'<' if style else ''}]")
    return re.compile(rf"[\\{quote}\x00-\x1f\x7f\ud800-\udfff{'<' if style else ''}]")


def escape_url(value: str, quote: Quote, *, in_style_element: bool = False) -> str:
    """The text to write between ``quote`` characters (or, for ``""``, inside ``url( )``) that CSS reads as ``value``.

    Quoted: "\\" becomes ``\\\\``, the quote ``\\"`` (or ``\\'``), and C0 controls and DEL hex escapes such as
    ``\\a``. Unquoted: "\\" becomes ``\\\\``; whitespace, quotes, parentheses and non-printable code points
    become hex escapes (``\\20``, ``\\22``, ``\\28``, ...), so that no raw ``)`` or quote is written. With
    ``in_style_element``, ``<`` becomes ``\\3c`` too, so the text can never hold ``</style``. A hex escape gets
    its terminating space only when a hex digit or whitespace follows it. Every other character, non-ASCII
    included, is kept as it is. CSS has no way to write U+0000 or a lone surrogate: they become U+FFFD, as
    CSS would read them anyway (§3.3).

    This is CSS text: in a ``style`` attribute the caller still applies the HTML attribute escaping.

    >>> escape_url('a "b".png', '"')
    'a \\\\"b\\\\".png'
    >>> escape_url("a b(1).png", "")
    'a\\\\20 b\\\\28 1\\\\29.png'
    >>> escape_url("x</style>", "'", in_style_element=True)
    'x\\\\3c/style>'
    """
    if quote == "" or quote == '"' or quote == "'":
        special = _special(quote, in_style_element)
    else:
        raise ValueError(f"quote must be '\"', \"'\" or '', not {quote!r}")
    if special.search(value) is None:
        return value
    parts: list[str] = []
    hex_pending = False  # the last thing written is a hex escape that a hex digit or whitespace would extend
    for char in value:
        if char == "\x00" or "\ud800" <= char <= "\udfff":
            char = "\ufffd"
        if char == "\\" or char == quote:
            parts.append("\\" + char)  # §4.3.7 "\" + a non-hex, non-newline code point
            hex_pending = False
        elif special.match(char):
            parts.append(f"\\{ord(char):x}")  # §4.3.7 hex escape
            hex_pending = True
        else:
            if hex_pending and (char in _HEX_DIGITS or char in _WHITESPACE):
                parts.append(" ")  # §4.3.7 the one whitespace that ends a hex escape
            parts.append(char)
            hex_pending = False
    return "".join(parts)


def may_hold_urls(style: object) -> bool:
    """Whether a piece of CSS (a decoded ``style`` value; not a str: yes, to be safe) may
    hold a URL: url(), src(), image-set() and @import need "(" or "@", and an escape can
    spell nothing else."""
    return not isinstance(style, str) or "(" in style or "@" in style or "\\" in style


@twin
def scan_css(css: str) -> list[tuple[int, int, str, Quote, Context]]:
    """:func:`find_urls` as plain tuples, ``(start, end, value, quote, context)``: the Python
    reference of the compiled scanner, which the engines' :func:`css_urls` runs when built."""
    return [(url.start, url.end, url.value, url.quote, url.context) for url in find_urls(str_argument(css))]


def css_urls(text: str) -> list[CSSURL]:
    """The URLs of a piece of CSS (none without what :func:`may_hold_urls` looks for), as
    :func:`find_urls` gives them, found by the compiled scanner when it was built."""
    if not may_hold_urls(text):
        return []
    if COMPILED:
        return [CSSURL(*found) for found in scan_css(text)]
    return find_urls(text)
