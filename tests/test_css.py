"""CSS URL finding and escaping: each form, what is not a URL, properties over arbitrary text, a reference tokenizer."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rewriter.css.syntax import CSSURL, escape_url, find_urls

FFFD = "\ufffd"


def urls(css: str) -> list[tuple[str, str, str, str]]:
    """(source text of the span, value, quote, context) for each URL found."""
    return [(css[u.start : u.end], u.value, u.quote, u.context) for u in find_urls(css)]


def values(css: str) -> list[str]:
    return [u.value for u in find_urls(css)]


# --- each form ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("css", "expected"),
    [
        ("a{background:url(a.png)}", [("a.png", "a.png", "", "url")]),
        ('a{background:url( "a b.png" )}', [("a b.png", "a b.png", '"', "url")]),
        ("a{background:url('x')}", [("x", "x", "'", "url")]),
        ("a{background:URL(x)}", [("x", "x", "", "url")]),
        ("a{background:Url( x )}", [("x", "x", "", "url")]),
        ("a{background:uRL(\n\t x \r\n)}", [("x", "x", "", "url")]),
        ('a{background:url(\r\n"x")}', [("x", "x", '"', "url")]),
        ("background:url(a.png)", [("a.png", "a.png", "", "url")]),
        # escapes
        (r"a{b:url(a\)b.png)}", [(r"a\)b.png", "a)b.png", "", "url")]),
        (r'a{b:url("a\"b")}', [(r"a\"b", 'a"b', '"', "url")]),
        (r"a{b:url('a\'b')}", [(r"a\'b", "a'b", "'", "url")]),
        (r"a{b:url(a\ b)}", [(r"a\ b", "a b", "", "url")]),
        (r"a{b:url(\41 b)}", [(r"\41 b", "Ab", "", "url")]),
        (r"a{b:url(a\41 )}", [(r"a\41", "aA", "", "url")]),
        ("a{b:url(a\\41\r\n)}", [("a\\41", "aA", "", "url")]),
        (r"a{b:url(a\ )}", [(r"a\ ", "a ", "", "url")]),
        (r"a{b:url(a\\\ )}", [(r"a\\\ ", "a\\ ", "", "url")]),
        (r"a{b:url(a\000041b)}", [(r"a\000041b", "aAb", "", "url")]),
        (r"a{b:url(caf\e9.png)}", [(r"caf\e9.png", "café.png", "", "url")]),
        (r"a{b:url(caf\E9 .png)}", [(r"caf\E9 .png", "café.png", "", "url")]),
        (r"a{b:url(\0)}", [(r"\0", FFFD, "", "url")]),
        (r"a{b:url(\d800)}", [(r"\d800", FFFD, "", "url")]),
        (r"a{b:url(\110000)}", [(r"\110000", FFFD, "", "url")]),
        ('a{b:url("a\\\nb")}', [("a\\\nb", "ab", '"', "url")]),
        ('a{b:url("a\\\r\nb")}', [("a\\\r\nb", "ab", '"', "url")]),
        ('a{b:url("\\41\nb")}', [("\\41\nb", "Ab", '"', "url")]),
        ("a{b:url(a\x00b)}", [("a\x00b", f"a{FFFD}b", "", "url")]),
        ("a{b:url(/*x*/a)}", [("/*x*/a", "/*x*/a", "", "url")]),
        # unicode
        ("a{b:url(café.png)}", [("café.png", "café.png", "", "url")]),
        ('a{b:url("日本語 画像.png")}', [("日本語 画像.png", "日本語 画像.png", '"', "url")]),
        ("a{b:url(😀.png)}", [("😀.png", "😀.png", "", "url")]),
        # empty values are reported (the caller decides)
        ("a{b:url()}", [("", "", "", "url")]),
        ("a{b:url(   )}", [("", "", "", "url")]),
        ('a{b:url("")}', [("", "", '"', "url")]),
        # EOF ends a url token and a string token without making them bad (§4.3.5, §4.3.6)
        ("a{b:url(a.png", [("a.png", "a.png", "", "url")]),
        ("a{b:url(a.png  ", [("a.png", "a.png", "", "url")]),
        ('a{b:url("a.png', [("a.png", "a.png", '"', "url")]),
        ("a{b:url(a\\", [("a\\", f"a{FFFD}", "", "url")]),
        ('@import "a\\', [("a\\", "a", '"', "import")]),
        # @import
        ('@import "x.css";', [("x.css", "x.css", '"', "import")]),
        ("@import 'x.css' screen;", [("x.css", "x.css", "'", "import")]),
        ("@import url(x.css);", [("x.css", "x.css", "", "url")]),
        ('@import url("x.css") layer(base);', [("x.css", "x.css", '"', "url")]),
        ('@IMPORT"x.css";', [("x.css", "x.css", '"', "import")]),
        ('@import /* c */ "x.css";', [("x.css", "x.css", '"', "import")]),
        ('@import\n\t"x.css";', [("x.css", "x.css", '"', "import")]),
        ('@imports "x.css";', []),
        ('@import screen "x.css";', []),
        ('@charset "utf-8"; @namespace svg "http://www.w3.org/2000/svg";', []),
        # image-set
        (
            'a{b:image-set("a.png" 1x, url(b.png) 2x)}',
            [("a.png", "a.png", '"', "image-set"), ("b.png", "b.png", "", "url")],
        ),
        (
            "a{b:-webkit-image-set('a.png' 1x, 'b.png' 2x)}",
            [("a.png", "a.png", "'", "image-set"), ("b.png", "b.png", "'", "image-set")],
        ),
        ('a{b:IMAGE-SET("a.png" 1x)}', [("a.png", "a.png", '"', "image-set")]),
        (
            'a{b:image-set("a.avif" type("image/avif"), url("a.png") type("image/png"))}',
            [("a.avif", "a.avif", '"', "image-set"), ("a.png", "a.png", '"', "url")],
        ),
        (
            'a{b:image-set(linear-gradient(red, blue) 1x, "b.png" 2x)} c{content:"no"}',
            [("b.png", "b.png", '"', "image-set")],
        ),
        ('a{b:image-set(src("a.png") 1x)}', [("a.png", "a.png", '"', "url")]),
        ('a{b:image-set(url(a b) 1x, "c.png" 2x)}', [("c.png", "c.png", '"', "image-set")]),
        ('a{b:image-set([x) "a.png"] "b.png")}', [("b.png", "b.png", '"', "image-set")]),
        # a bad-string ends at the newline; the next quote opens a string that runs to EOF, in image-set still
        ('a{b:image-set("a\n" 1x)', [(" 1x)", " 1x)", '"', "image-set")]),
        ('a{b:image-set("a.png")} "after"', [("a.png", "a.png", '"', "image-set")]),
        ('a{b:-moz-image-set("a.png")}', []),
        # src()
        ('@font-face{src:src("x.woff")}', [("x.woff", "x.woff", '"', "url")]),
        ("a{b:SRC( /* c */ 'x.png' )}", [("x.png", "x.png", "'", "url")]),
        ("a{b:src(var(--x))}", []),
        ('@font-face{src:url(a.woff2) format("woff2"), local("A")}', [("a.woff2", "a.woff2", "", "url")]),
        # nested functions
        (
            "a{background:linear-gradient(rgba(0,0,0,.5), transparent), url(x.png) no-repeat}",
            [("x.png", "x.png", "", "url")],
        ),
        ("a{b:var(--c, url(x.png))}", [("x.png", "x.png", "", "url")]),
        ("a{--c: url(x.png)}", [("x.png", "x.png", "", "url")]),
        # "<!--" is a token of its own
        ("<!--url(a.png)-->", [("a.png", "a.png", "", "url")]),
        ("<!---webkit-image-set('a.png')", [("a.png", "a.png", "'", "image-set")]),
        # function names spelt with escapes
        (r"a{b:\75 rl(a.png)}", [("a.png", "a.png", "", "url")]),
        (r'a{b:u\72l("a.png")}', [("a.png", "a.png", '"', "url")]),
        (r'a{b:\url("a.png")}', [("a.png", "a.png", '"', "url")]),
        (r"a{b:.\75 rl(a.png)}", [("a.png", "a.png", "", "url")]),
        (r'@\69mport "a.css";', [("a.css", "a.css", '"', "import")]),
        (r'@i\6dport "a.css";', [("a.css", "a.css", '"', "import")]),
        (r'a{b:image-s\65t("a.png" 1x)}', [("a.png", "a.png", '"', "image-set")]),
        (r'<!--\75 rl("a.png")', [("a.png", "a.png", '"', "url")]),
    ],
)
def test_forms(css: str, expected: list[tuple[str, str, str, str]]) -> None:
    assert urls(css) == expected


def test_result_type_and_document_order() -> None:
    css = "@import 'a.css'; b{c:url(b.png)} d{e:image-set(\"c.png\" 1x)} f{g:src('d.png')}"
    found = find_urls(css)
    assert [u.value for u in found] == ["a.css", "b.png", "c.png", "d.png"]
    assert [u.context for u in found] == ["import", "url", "image-set", "url"]
    assert all(isinstance(u, CSSURL) for u in found)
    assert [u.start for u in found] == sorted(u.start for u in found)
    with pytest.raises(AttributeError):
        found[0].value = "x"  # type: ignore[misc]


# --- what is not a URL -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "css",
    [
        # comments
        "/* url(a.png) */",
        "a{b:/* url(a.png) */c}",
        "/* unclosed url(a.png)",
        "/* @import 'a.css'; */",
        # strings that are not URLs
        'a{content:"url(x)"}',
        "a{content:'url(x)'}",
        'a{font-family:"A B", serif}',
        'a[href="url(x)"]{}',
        'a{quotes:"«" "»"}',
        "a{grid-template-areas:'a b' 'c d'}",
        # bad-url (§4.3.6)
        "a{b:url(a b)}",
        'a{b:url(a"b)}',
        "a{b:url(a'b)}",
        "a{b:url(a(b)}",
        "a{b:url(a\x01b)}",
        "a{b:url(a\x7fb)}",
        "a{b:url(a\\\nb)}",
        # bad-string (§4.3.5)
        'a{b:url("a\nb")}',
        "@import 'a\n';",
        'a{b:image-set("a\n)}',
        # names that only end in url, src, image-set
        "a{b:xurl(a.png)}",
        "a{b:my-src('a.png')}",
        "a{b:-url(a.png)}",
        "a{b:5url(a.png)}",
        "a{b:1.5url(a.png)}",
        "#url(a.png){}",
        "@url(a.png);",
        '@-webkit-image-set("a.png");',
        r"a{b:x\75 rl(a.png)}",
        r"a{b:-\75 rl(a.png)}",
        r"#\75 rl(a.png){}",
        "a{b:url\n(a.png)}",
        "a{b:url (a.png)}",
        "a{b:url-prefix(a.png)}",
        # image-set() strings nested in other functions
        'a{b:image-set(type("image/png"))}',
        'a{b:image-set(foo("x.png"))}',
        # @import not followed by a string
        "@import;",
        "@import screen;",
    ],
)
def test_not_urls(css: str) -> None:
    assert find_urls(css) == []


def test_tokenization_resumes_after_bad_tokens() -> None:
    assert values("a{b:url(a b) url(c)}") == ["c"]
    assert values("a{b:url(a b\\) url(c)) url(d)}") == ["d"]
    assert values('a{b:url(a"b) "x" url(c)}') == ["c"]
    assert values("@import 'a\n; @import 'b';") == ["b"]
    assert values("@import 'a\n'; @import 'b';") == []  # the second quote opens "; @import ", then b, then "';"
    assert values('a{b:"x\nurl(c)"}') == ["c"]
    assert values("a{b:url(a b") == []


def test_comments_strings_and_urls_hide_each_other() -> None:
    assert values('/* "a" */ url(b) "/*" url(c) "*/"') == ["b", "c"]
    assert values("a{content:'/*'} b{c:url(d)} /* */") == ["d"]
    assert values("a{b:url(/*)} c{d:url(e)} /**/") == ["/*", "e"]
    assert values('a{content:"\\"url(x)\\""} b{c:url(y)}') == ["y"]


# --- escaping ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "quote", "expected"),
    [
        ("a.png", '"', "a.png"),
        ("a.png", "", "a.png"),
        ('a"b', '"', 'a\\"b'),
        ('a"b', "'", 'a"b'),
        ("a'b", "'", "a\\'b"),
        ("a'b", '"', "a'b"),
        ("a\\b", '"', "a\\\\b"),
        ("a\\b", "", "a\\\\b"),
        ("a\nb", '"', "a\\a b"),
        ("a\n1", '"', "a\\a 1"),
        ("a\nz", '"', "a\\az"),
        ("a\n\n", '"', "a\\a\\a"),
        ("a\n ", '"', "a\\a  "),
        ("a\r\nb", '"', "a\\d\\a b"),
        ("a\tb", '"', "a\\9 b"),
        ("a b(1).png", "", "a\\20 b\\28 1\\29.png"),
        ("(x)", "", "\\28x\\29"),
        ("(a)", "", "\\28 a\\29"),
        ("a b", "", "a\\20 b"),
        ("a  ", "", "a\\20\\20"),
        ("a\"'b", "", "a\\22\\27 b"),
        ("a\x01b", "", "a\\1 b"),
        ("a\x7fz", "", "a\\7fz"),
        ("café 日本.png", "", "café\\20日本.png"),
        ("café 1.png", "", "café\\20 1.png"),
        ("a\x00b", '"', f"a{FFFD}b"),
        ("a\ud800b", "", f"a{FFFD}b"),
        ("", "", ""),
        ("", '"', ""),
    ],
)
def test_escape_url(value: str, quote: str, expected: str) -> None:
    assert escape_url(value, quote) == expected  # type: ignore[arg-type]


def test_escape_url_in_style_element() -> None:
    assert escape_url("a</style>", '"', in_style_element=True) == "a\\3c/style>"
    assert escape_url("<a", "'", in_style_element=True) == "\\3c a"
    assert escape_url("a <b", "", in_style_element=True) == "a\\20\\3c b"
    assert escape_url("a</style>", '"') == "a</style>"


def test_escape_url_rejects_other_quotes() -> None:
    with pytest.raises(ValueError, match="quote"):
        escape_url("a", "`")  # type: ignore[arg-type]


# --- properties --------------------------------------------------------------------------------------------------

FRAGMENTS = [
    "url(",
    "URL(",
    "uRl( ",
    "src(",
    "image-set(",
    "-webkit-image-set(",
    "@import",
    "@IMPORT ",
    "/*",
    "*/",
    '"',
    "'",
    "\\",
    "\\29 ",
    "\\75 rl(",
    "\\",
    "\\\n",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\r",
    "\f",
    "a",
    "b.png",
    "1x",
    "5",
    ".",
    ",",
    ";",
    ":",
    "#",
    "@",
    "-",
    "--",
    "<!--",
    "-->",
    "<",
    "e",
    "F",
    "é",
    "\x00",
    "\x01",
    "\x7f",
    "\ud800",
    "type(",
    "x",
]

css_texts = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=3), max_size=40).map("".join),
    st.text(max_size=200),
)

# Any text without NUL and surrogates, which CSS cannot hold (they read as U+FFFD).
new_values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30)


@given(st.text())
def test_never_raises_on_arbitrary_text(css: str) -> None:
    for u in find_urls(css):
        assert 0 <= u.start <= u.end <= len(css)


@given(css_texts)
@example("url(")
@example('url("')
@example("@import '\\")
@example('image-set("a" (\')\' "b") "c")')
def test_never_raises_and_spans_are_ordered(css: str) -> None:
    found = find_urls(css)
    ends = [0]
    for u in found:
        assert ends[-1] <= u.start <= u.end <= len(css)
        assert u.quote in ('"', "'", "")
        assert u.context in ("url", "import", "image-set")
        if u.quote:
            assert css[u.start - 1] == u.quote
        ends.append(u.end)


@given(css_texts)
@example("url(a\\29  )")
@example("url(\\41 ")
@example('"\\41\r\n"')
@settings(max_examples=300)
def test_round_trip(css: str) -> None:
    """Writing each URL back with escape_url changes no URL."""
    before = [(u.value, u.quote, u.context) for u in find_urls(css)]
    for u in find_urls(css):
        spliced = css[: u.start] + escape_url(u.value, u.quote) + css[u.end :]
        assert [(v.value, v.quote, v.context) for v in find_urls(spliced)] == before


TEMPLATES = [
    "a{b:url(OLD0)} c{d:url(\"OLD1\")} @import 'OLD2'; e{f:image-set(\"OLD3\" 1x, 'OLD4' 2x)}",
    "<!--url( OLD0 )--> @import\"OLD1\"; x{y:src('OLD2')} /* url(z) */ a{b:-webkit-image-set('OLD3' 1x)}",
]


@pytest.mark.parametrize("template", TEMPLATES)
@given(new=new_values, which=st.integers(0, 3), in_style_element=st.booleans())
@example(new=") url(x", which=0, in_style_element=False)
@example(new="\" 'x' \\", which=1, in_style_element=False)
@example(new="a\nb\r\nc\fd", which=2, in_style_element=True)
@example(new="</style><script>", which=3, in_style_element=True)
@example(new="\\41 \t", which=0, in_style_element=False)
def test_new_values_are_read_back(template: str, new: str, which: int, in_style_element: bool) -> None:
    """Any new value spliced in with escape_url is read back as it is, and no other URL changes."""
    original = find_urls(template)
    assert [u.value for u in original][:4] == ["OLD0", "OLD1", "OLD2", "OLD3"]
    target = original[which]
    escaped = escape_url(new, target.quote, in_style_element=in_style_element)
    if in_style_element:
        assert "<" not in escaped
    spliced = template[: target.start] + escaped + template[target.end :]
    found = find_urls(spliced)
    assert [(u.value, u.quote, u.context) for u in found] == [
        (new if i == which else u.value, u.quote, u.context) for i, u in enumerate(original)
    ]
    if escaped or target.quote:  # an empty url( ) has its (empty) span after the whitespace
        assert found[which].start == target.start
        assert found[which].end == target.start + len(escaped)


@given(new=st.text(max_size=20), quote=st.sampled_from(['"', "'", ""]))
def test_nul_and_surrogates_become_replacement_characters(new: str, quote: str) -> None:
    css = f"a{{b:url({quote}{escape_url(new, quote)}{quote})}}"  # type: ignore[arg-type]
    expected = "".join(FFFD if c == "\x00" or "\ud800" <= c <= "\udfff" else c for c in new)
    assert values(css) == [expected]


# --- a literal reading of CSS Syntax 3 §4.3, one code point at a time, to compare with ---------------------------

_WS = frozenset(" \t\n\r\f")
_NL = frozenset("\n\r\f")
_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")
_NON_PRINTABLE = frozenset([*map(chr, range(1, 9)), "\x0b", *map(chr, range(0x0E, 0x20)), "\x7f"])  # NUL is U+FFFD
_QUOTES = ('"', "'")


def _norm(c: str) -> str:
    return FFFD if c == "\x00" or "\ud800" <= c <= "\udfff" else c


def _lower(name: str) -> str:
    return name.lower() if name.isascii() else name


class _Reference:
    """CSS Syntax 3 §4.3 tokenizer over the raw text; "" stands for EOF."""

    def __init__(self, css: str) -> None:
        self.css = css
        self.n = len(css)

    def at(self, i: int) -> str:
        return self.css[i] if i < self.n else ""

    def name_start(self, c: str) -> bool:
        return c != "" and ((c.isascii() and (c.isalpha() or c == "_")) or c >= "\x80" or c == "\x00")

    def name_cp(self, c: str) -> bool:
        return self.name_start(c) or c in _DIGITS or c == "-"

    def valid_escape(self, i: int) -> bool:
        return self.at(i) == "\\" and self.at(i + 1) not in _NL

    def starts_ident(self, i: int) -> bool:
        c = self.at(i)
        if c == "-":
            return self.name_start(self.at(i + 1)) or self.at(i + 1) == "-" or self.valid_escape(i + 1)
        return self.name_start(c) or self.valid_escape(i)

    def starts_number(self, i: int) -> bool:
        c = self.at(i)
        if c in ("+", "-"):
            return self.at(i + 1) in _DIGITS or (self.at(i + 1) == "." and self.at(i + 2) in _DIGITS)
        if c == ".":
            return self.at(i + 1) in _DIGITS
        return c in _DIGITS

    def escaped(self, i: int) -> tuple[str, int]:
        c = self.at(i)
        if c == "":
            return FFFD, i
        if c in _HEX:
            j = i
            while j - i < 6 and self.at(j) in _HEX:
                j += 1
            code = int(self.css[i:j], 16)
            if self.css.startswith("\r\n", j):
                j += 2
            elif self.at(j) in _WS:
                j += 1
            return (FFFD if code == 0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF else chr(code)), j
        return _norm(c), i + 1

    def name(self, i: int) -> tuple[str, int]:
        out = []
        while True:
            c = self.at(i)
            if self.name_cp(c):
                out.append(_norm(c))
                i += 1
            elif self.valid_escape(i):
                char, i = self.escaped(i + 1)
                out.append(char)
            else:
                return "".join(out), i

    def token(self, i: int) -> tuple[tuple, int] | None:
        css = self.css
        while css.startswith("/*", i):
            end = css.find("*/", i + 2)
            i = self.n if end < 0 else end + 2
        if i >= self.n:
            return None
        c = css[i]
        if c in _WS:
            while self.at(i) in _WS:
                i += 1
            return ("ws",), i
        if c in _QUOTES:
            return self.string(i)
        if c == "#":
            if self.name_cp(self.at(i + 1)) or self.valid_escape(i + 1):
                name, j = self.name(i + 1)
                return ("hash", name), j
            return ("delim", c), i + 1
        if c in "()[]{},:;":
            return (c,), i + 1
        if c == "+" or c == ".":
            return self.numeric(i) if self.starts_number(i) else (("delim", c), i + 1)
        if c == "-":
            if self.starts_number(i):
                return self.numeric(i)
            if css.startswith("->", i + 1):
                return ("cdc",), i + 3
            if self.starts_ident(i):
                return self.ident_like(i)
            return ("delim", c), i + 1
        if c == "<":
            return (("cdo",), i + 4) if css.startswith("!--", i + 1) else (("delim", c), i + 1)
        if c == "@":
            if self.starts_ident(i + 1):
                name, j = self.name(i + 1)
                return ("at", name), j
            return ("delim", c), i + 1
        if c == "\\":
            return self.ident_like(i) if self.valid_escape(i) else (("delim", c), i + 1)
        if c in _DIGITS:
            return self.numeric(i)
        if self.name_start(c):
            return self.ident_like(i)
        return ("delim", c), i + 1

    def numeric(self, i: int) -> tuple[tuple, int]:
        if self.at(i) in ("+", "-"):
            i += 1
        while self.at(i) in _DIGITS:
            i += 1
        if self.at(i) == "." and self.at(i + 1) in _DIGITS:
            i += 1
            while self.at(i) in _DIGITS:
                i += 1
        if self.at(i) in ("e", "E"):
            if self.at(i + 1) in _DIGITS:
                i += 1
            elif self.at(i + 1) in ("+", "-") and self.at(i + 2) in _DIGITS:
                i += 2
            while self.at(i) in _DIGITS:
                i += 1
        if self.starts_ident(i):
            name, i = self.name(i)
            return ("dimension", name), i
        if self.at(i) == "%":
            return ("percentage",), i + 1
        return ("number",), i

    def ident_like(self, i: int) -> tuple[tuple, int]:
        name, j = self.name(i)
        if _lower(name) == "url" and self.at(j) == "(":
            j += 1
            while self.at(j) in _WS and self.at(j + 1) in _WS:
                j += 1
            if self.at(j) in _QUOTES or (self.at(j) in _WS and self.at(j + 1) in _QUOTES):
                return ("function", name), j
            return self.url(j)
        if self.at(j) == "(":
            return ("function", name), j + 1
        return ("ident", name), j

    def url(self, i: int) -> tuple[tuple, int]:
        while self.at(i) in _WS:
            i += 1
        start = end = i  # end: after the last code point of the URL text, a hex escape's whitespace left out
        chars = []
        while True:
            c = self.at(i)
            if c == ")" or c == "":
                return ("url", "".join(chars), start, end), i + (c == ")")
            if c in _WS:
                while self.at(i) in _WS:
                    i += 1
                if self.at(i) in (")", ""):
                    return ("url", "".join(chars), start, end), i + (self.at(i) == ")")
                return self.remnants(i)
            if c in _QUOTES or c == "(" or c in _NON_PRINTABLE:
                return self.remnants(i + 1)
            if c == "\\":
                if not self.valid_escape(i):
                    return self.remnants(i + 1)
                char, j = self.escaped(i + 1)
                end = j
                if self.at(i + 1) in _HEX:
                    while self.css[i + 1 : end] and self.css[end - 1] in _WS:
                        end -= 1
                i = j
                chars.append(char)
                continue
            chars.append(_norm(c))
            i = end = i + 1

    def remnants(self, i: int) -> tuple[tuple, int]:
        while True:
            c = self.at(i)
            if c == "":
                return ("bad-url",), i
            i += 1
            if c == ")":
                return ("bad-url",), i
            if c == "\\" and self.at(i) not in _NL:
                _, i = self.escaped(i)

    def string(self, i: int) -> tuple[tuple, int]:
        quote = self.css[i]
        start = j = i + 1
        chars = []
        while True:
            c = self.at(j)
            if c == quote or c == "":
                return ("string", "".join(chars), quote, start, j), j + (c == quote)
            if c in _NL:
                return ("bad-string",), j
            if c == "\\":
                following = self.at(j + 1)
                if following == "":
                    j += 1
                elif following in _NL:
                    j += 3 if self.css.startswith("\r\n", j + 1) else 2
                else:
                    char, j = self.escaped(j + 1)
                    chars.append(char)
                continue
            chars.append(_norm(c))
            j += 1


def reference_urls(css: str) -> list[CSSURL]:
    tokenizer = _Reference(css)
    out: list[CSSURL] = []
    stack: list[tuple[str, bool]] = []
    pending: str | None = None  # the context of a string that comes next: after url(, src( or @import
    i = 0
    while (step := tokenizer.token(i)) is not None:
        token, i = step
        kind = token[0]
        if kind == "ws":
            continue
        context, pending = pending, None
        if kind == "string":
            context = context or ("image-set" if stack and stack[-1][1] else None)
            if context:
                out.append(CSSURL(token[3], token[4], token[1], token[2], context))  # type: ignore[arg-type]
        elif kind == "url":
            out.append(CSSURL(token[2], token[3], token[1], "", "url"))
        elif kind == "function":
            name = _lower(token[1])
            stack.append((")", name in ("image-set", "-webkit-image-set")))
            if name in ("url", "src"):
                pending = "url"
        elif kind == "at" and _lower(token[1]) == "import":
            pending = "import"
        elif kind in ("(", "[", "{"):
            stack.append(({"(": ")", "[": "]", "{": "}"}[kind], False))
        elif kind in (")", "]", "}") and stack and stack[-1][0] == kind:
            stack.pop()
    return out


@given(css_texts)
@settings(max_examples=500)
@example("<!--url(a)")
@example("a\\ url(b)")
@example("\\41 url(b)")
@example("1-\\75 rl(a)")
def test_matches_the_reference_tokenizer(css: str) -> None:
    assert find_urls(css) == reference_urls(css)


@pytest.mark.parametrize("css", ["a{b:url(a.png)}", "x{y:image-set('a' 1x)}"])
def test_reference_tokenizer_agrees_on_the_forms(css: str) -> None:
    assert reference_urls(css) == find_urls(css) != []


# --- pathological inputs: no exception (and, run by hand, each finishes well within a second) --------------------

MB = 1_000_000


@pytest.mark.parametrize(
    "css",
    [
        pytest.param("url(" * 100_000, id="unclosed-url-100k"),
        pytest.param('"' + "a" * MB, id="unclosed-string-1MB"),
        pytest.param("@import '" + "a" * MB, id="unclosed-import-string-1MB"),
        pytest.param("/*" + "url(" * 100_000, id="unclosed-comment"),
        pytest.param("/*" * 100_000, id="comment-starts"),
        pytest.param("url(" + " " * MB + "x y", id="url-whitespace-bad"),
        pytest.param("url(" + " " * MB, id="url-whitespace-eof"),
        pytest.param("url(" + "\\)" * 100_000, id="url-escapes"),
        pytest.param("url(a b" + "\\)" * 100_000, id="bad-url-escapes"),
        pytest.param("image-set(" * 100_000, id="nested-image-set"),
        pytest.param("image-set(" + "(" * 100_000 + '"a"' + ")" * 100_000, id="deep-brackets"),
        pytest.param("a" * MB + "\\75 rl(x)", id="long-name-then-escape"),
        pytest.param("a\\" * 100_000, id="escapes-in-name"),
        pytest.param("-" * MB + "\\", id="dashes-then-backslash"),
        pytest.param("xurl(" * 100_000, id="rejected-keywords"),
        pytest.param("@import" * 100_000, id="imports"),
        pytest.param("\\\n" * 100_000, id="invalid-escapes"),
        pytest.param("'\n" * 100_000, id="bad-strings"),
        pytest.param('"\\' * 100_000, id="string-escapes"),
        pytest.param("src(" * 100_000, id="src"),
        pytest.param("<!--" * 100_000 + "url(x)", id="cdo"),
    ],
)
def test_pathological_inputs(css: str) -> None:
    find_urls(css)


def test_large_ordinary_css() -> None:
    css = 'a.b > c:hover { background: #fff url(img/a.png) no-repeat; font: 12px "A B", sans-serif }\n' * 20_000
    assert len(find_urls(css)) == 20_000


def test_name_code_points_are_those_of_css_syntax_4_2() -> None:
    """§4.2: a name code point is a letter, a digit, "_", "-" or U+0080 and above; NUL and
    surrogates count too (U+FFFD after §3.3). The pattern spells the set by what it excludes."""
    from rewriter.css.syntax import NAME_CHAR

    pattern = re.compile(NAME_CHAR)
    ascii_names = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-\x00")
    wrong = [
        code
        for code in range(0x110000)
        if bool(pattern.fullmatch(chr(code))) != (code >= 0x80 or chr(code) in ascii_names)
    ]
    assert wrong == []
