"""Parsing tables written from the standards (issue 22, class 6): srcset, meta refresh, CSS URLs.

- srcset: HTML §4.8.4.3.10 "parse a srcset attribute" (a URL runs to whitespace, trailing commas
  end it, descriptors run to a comma outside parentheses). Candidates a browser would reject for
  their descriptors keep their URLs: the rewrite must still make them absolute.
- meta refresh: HTML §7.11.1 "shared declarative refresh steps".
- CSS: CSS Syntax §4.3.4 "consume an ident-like token", §4.3.6 "consume a url token", §4.3.7
  "consume an escaped code point", §4.3.14 "consume the remnants of a bad url"; a bad-url token is
  no URL and is left as written.

Each row is checked on the parser and through the engine (the rewritten value resolves to the
same URL). Chromium's reading of the refresh and srcset rows is in tests/test_browser.py.
"""

from __future__ import annotations

import pytest

from rewriter.css.stylesheet import rewrite_css
from rewriter.css.syntax import find_urls
from rewriter.html.engine import find_links, rewrite_html
from rewriter.html.microsyntax import refresh_url, srcset_urls

URL = "http://h.example/dir/page.html"

SRCSET = [
    ("a.png", ["a.png"]),
    ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
    (" a.png  1x ,b.png 2x", ["a.png", "b.png"]),
    ("a.png,b.png", ["a.png,b.png"]),  # a comma inside a URL is the URL's
    ("a.png, b.png", ["a.png", "b.png"]),  # trailing commas end it
    ("a.png,, b.png", ["a.png", "b.png"]),
    (",,,a.png,,,", ["a.png"]),
    ("data:image/png;base64,AAA= 1x, b.png 2x", ["data:image/png;base64,AAA=", "b.png"]),
    ("a.png (x, y) 1x, b.png", ["a.png", "b.png"]),  # no candidate ends inside parentheses
    ("a.png (, b.png", ["a.png"]),  # an unclosed parenthesis runs to the end
    ("a.png 1x b.png 2x", ["a.png"]),  # "b.png" is a descriptor of the first
    ("a.png\t2x,\nb.png\f100w", ["a.png", "b.png"]),
    ("a(.png 1x, b.png", ["a(.png", "b.png"]),
    ("a.png 100w, b.png 50w", ["a.png", "b.png"]),
    ("", []),
    ("   ,  ", []),
]


@pytest.mark.parametrize(("value", "urls"), SRCSET)
def test_srcset(value: str, urls: list[str]) -> None:
    assert [value[start:end] for start, end in srcset_urls(value)] == urls
    found = find_links(f'<img srcset="{value}">', url=URL).links
    assert [link.original for link in found] == urls


REFRESH = [
    ("5", None),  # a time alone: the document itself
    ("5; url=a.html", "a.html"),
    ("5;URL='a b.html'", "a b.html"),  # the quote ends the URL
    ('5; url = "a.html" x', "a.html"),
    ("0,a.html", "a.html"),
    ("0 a.html", "a.html"),
    ("  3.5; url=a", "a"),
    (".5;url=a", "a"),
    ("0.5.6;url=a", "a"),  # digits and dots after the time are skipped
    ("0 ; url=a", "a"),
    ("0;'a.html'", "a.html"),  # quotes are skipped without "url=" too
    ('0;url="a.html', "a.html"),
    ("5;ur=a.html", "ur=a.html"),  # not "url": the URL is all that follows the separator
    ("0; url 'a.html'", "url 'a.html'"),  # no "=": the same
    ("0\tu\tr\tl\t=\ta", "u\tr\tl\t=\ta"),
    ("0;", None),
    ("x; url=a", None),  # no time
    ("-1; url=a", None),
    ("1a;url=b", None),  # the time is followed by neither ";", "," nor whitespace
]


@pytest.mark.parametrize(("content", "url"), REFRESH)
def test_meta_refresh(content: str, url: str | None) -> None:
    span = refresh_url(content)
    assert (None if span is None else content[span[0] : span[1]]) == url
    document = f'<meta http-equiv="Refresh" content="{content.replace(chr(34), "&quot;")}">'
    found = find_links(document, url=URL).links
    assert [link.original for link in found] == ([] if url is None else [url.strip()])


CSS = [
    ("url(a.png)", ["a.png"]),
    ("url(  a.png  )", ["a.png"]),
    ('url("a b.png")', ["a b.png"]),
    ("url('a\\'b.png')", ["a'b.png"]),
    ("url(a\\)b.png)", ["a)b.png"]),  # an escaped ")" is part of the URL
    ("url(a\\20 b.png)", ["a b.png"]),  # a hex escape eats one whitespace after it
    ("url(\\61 .png)", ["a.png"]),
    ("url(a\\1F4A9 b)", ["a\U0001f4a9b"]),
    ("url(a\\\\)", ["a\\"]),
    ("url(\\0)", ["\ufffd"]),  # zero, a surrogate or past U+10FFFF: U+FFFD
    ("url(\\D800)", ["\ufffd"]),
    ("URL(a.png)", ["a.png"]),  # "url" matched ASCII case-insensitively
    ("u\\72l(a.png)", ["a.png"]),  # an ident-like token spelled with an escape
    ("url(a.png", ["a.png"]),  # the end of the input ends the token
    ('url("a.png', ["a.png"]),
    ('url("a\\\nb")', ["ab"]),  # an escaped newline in a string is nothing
    ('url( "a" x)', ["a"]),  # a url() function: a string, then a modifier
    ("@import 'a.css'; @import url(b.css);", ["a.css", "b.css"]),
    ('image-set("a.png" 1x, url(b.png) 2x)', ["a.png", "b.png"]),
    ('src("a.png")', ["a.png"]),
    # bad-url tokens: no URL
    ("url(a b.png)", []),  # whitespace, then more than ")"
    ('url(a"b)', []),
    ("url(a(b)", []),
    ("url(a\\\nb)", []),  # an escape that is not valid
    ("url(a\x01b)", []),  # a non-printable code point
    # no URL at all
    ("/* url(c.png) */", []),
    ('"url(s.png)"', []),
    ("src(a.png)", []),  # src() takes a string
]


@pytest.mark.parametrize(("css", "urls"), CSS)
def test_css_url_tokens(css: str, urls: list[str]) -> None:
    assert [url.value for url in find_urls(css)] == urls
    sheet = css  # a style sheet of one declaration's value, or of rules
    result = rewrite_css(sheet.encode(), url=URL)
    assert [link.original for link in result.links] == urls
    if not urls:
        assert result.output == sheet.encode()  # a bad URL is left as written
    for url in find_urls(result.output.decode()):
        assert url.value.startswith("http://h.example/dir/")


def test_a_bad_url_in_an_attribute_is_left() -> None:
    """In a style attribute too: the whole bad url, up to its ")", stays as written."""
    document = b'<p style="background:url(a b.png); color:red"><i style="background:url(c.png)">'
    assert rewrite_html(document, url=URL).output == (
        b'<p style="background:url(a b.png); color:red"><i style="background:url(http://h.example/dir/c.png)">'
    )
