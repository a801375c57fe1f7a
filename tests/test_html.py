"""The HTML engine on small documents: every trap named in the issue, encodings, escaping, options."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewriter.document.encoding import declared_encoding
from rewriter.html.engine import NoBaseError, find_links, rewrite_html, start_tags
from rewriter.policy import Policy

URL = "http://h/dir/page.html"


def rewrite(document: str | bytes, url: str | None = URL, **options: object) -> str:
    data = document.encode("utf-8") if isinstance(document, str) else document
    return rewrite_html(data, url=url, policy=Policy(**options)).output.decode("utf-8")  # type: ignore[arg-type]


# --- the base: which <base> counts ---------------------------------------------------


@pytest.mark.parametrize(
    "decoy",
    [
        '<!-- <base href="http://evil/"> -->',
        "<script>document.write('<base href=\"http://evil/\">')</script>",
        '<template><base href="http://evil/"></template>',
        '<noscript><base href="http://evil/"></noscript>',
        '<svg><base href="http://evil/"></base></svg>',
        '<textarea><base href="http://evil/"></textarea>',
        '<style>/* <base href="http://evil/"> */</style>',
        '<math><base href="http://evil/"></base></math>',
    ],
)
def test_base_in_inert_places_is_never_used(decoy: str) -> None:
    result = find_links(f"{decoy}<a href=x>".encode())
    assert result.base is None or "evil" not in result.base
    out = rewrite(f"{decoy}<a href=x>", url=URL)
    assert "<a href=http://h/dir/x>" in out


def test_first_base_with_href_wins_and_is_resolved_against_the_retrieval_url() -> None:
    out = rewrite('<base target=_top><base href="../b/"><base href="http://second/"><a href=x>')
    assert '<base href="http://h/b/">' in out  # made absolute, stays
    assert "<a href=http://h/b/x>" in out
    assert '<base href="http://second/">' in out  # untouched: it is absolute already


@pytest.mark.parametrize("href", ["javascript:alert(1)", "data:text/html,x", "vbscript:x", "mailto:a@b"])
def test_unusable_base_is_ignored_and_reported(href: str) -> None:
    result = rewrite_html(f'<base href="{href}"><a href=x>'.encode(), url=URL)
    assert result.output.endswith(b"<a href=http://h/dir/x>")
    assert result.base == URL and result.layer == "retrieval-url"
    assert any("ignored" in problem for problem in result.problems)


def test_remove_base_option() -> None:
    assert rewrite('<base href="/b/"><a href=x>', remove_base=True) == "<a href=http://h/b/x>"


def test_saved_from_mark_is_the_retrieval_url() -> None:
    page = "<!-- saved from url=(0023)https://example.org/a/ -->\n<a href=b>"
    result = rewrite_html(page.encode())
    assert result.layer == "saved-from-mark"
    assert result.output.endswith(b"<a href=https://example.org/a/b>")


def test_canonical_only_when_asked() -> None:
    page = b'<link rel=canonical href="https://example.org/c/p"><a href=x>'
    assert rewrite_html(page).output == page
    assert b"<a href=https://example.org/c/x>" in rewrite_html(page, policy=Policy(canonical_base=True)).output


def test_no_base_keeps_relative_links_and_reports_them() -> None:
    result = rewrite_html(b"<a href=x><a href=http://y/>")
    assert result.output == b"<a href=x><a href=http://y/>"
    assert [link.status for link in result.links] == ["no-base", "absolute"]
    with pytest.raises(NoBaseError):
        rewrite_html(b"<a href=x>", policy=Policy(require_base=True))


def test_enclosing_base_beats_retrieval_url() -> None:
    result = rewrite_html(b"<a href=x>", url="http://retrieval/", base="http://enclosing/d/")
    assert result.output == b"<a href=http://enclosing/d/x>" and result.layer == "enclosing"


# --- what is a link ------------------------------------------------------------------


def test_srcset_with_commas_in_urls() -> None:
    out = rewrite('<img srcset="a,1.png 1x,b.png 2x , c.png (w,h) 3w,d.png">')
    assert out == (
        '<img srcset="http://h/dir/a,1.png 1x,http://h/dir/b.png 2x , http://h/dir/c.png (w,h) 3w,http://h/dir/d.png">'
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("5", "5"),
        ("0;url=x.html", "0;url=http://h/dir/x.html"),
        ("0; URL='x y.html'", "0; URL='http://h/dir/x y.html'"),
        ('0, url = "x.html" ', '0, url = "http://h/dir/x.html" '),
        ("0, x.html", "0, http://h/dir/x.html"),
        ("3 ur=x.html", "3 http://h/dir/ur=x.html"),
        ("1.5;url=http://abs/", "1.5;url=http://abs/"),
        ("x;url=y", "x;url=y"),
    ],
)
def test_meta_refresh_forms(content: str, expected: str) -> None:
    page = f'<meta http-equiv="refresh" content="{html.escape(content)}">'
    assert html.unescape(rewrite(page)) == f'<meta http-equiv="refresh" content="{expected}">'


def test_meta_content_of_other_metas_is_not_a_url() -> None:
    page = '<meta name="description" content="a/b"><meta property="og:image" content="i.png">'
    assert rewrite(page) == page


def test_css_forms_and_escapes() -> None:
    page = (
        "<style>@import 'a.css'; @import \"b.css\"; @import url(c.css);"
        "x{background:url( d\\ e.png ) ; content:'url(no.png)'} /* url(no2.png) */"
        "y{background-image:image-set('f.png' 1x, url(g.png) 2x)}</style>"
    )
    out = rewrite(page)
    for name in ("a.css", "b.css", "c.css", "f.png", "g.png"):
        assert f"http://h/dir/{name}" in out
    assert "url( http://h/dir/d\\20 e.png )" in out  # CSS Syntax §4.3.7: a hex escape for the space
    assert "url(no.png)" in out and "url(no2.png)" in out


def test_style_attribute_with_character_references() -> None:
    out = rewrite('<p style="background:url(&quot;a b.png&quot;)">')
    assert out == '<p style="background:url(&quot;http://h/dir/a b.png&quot;)">'


def test_iframe_srcdoc_is_a_nested_document_with_the_parents_base() -> None:
    out = rewrite('<base href="/b/"><iframe srcdoc="&lt;img src=&quot;i.png&quot;&gt;"></iframe>')
    assert out.endswith('<iframe srcdoc="&lt;img src=&quot;http://h/b/i.png&quot;&gt;"></iframe>')


def test_svg_and_mathml_links() -> None:
    out = rewrite('<svg><a xlink:href="a"><image href="b"/></a></svg><math href="c"></math>')
    assert out == (
        '<svg><a xlink:href="http://h/dir/a"><image href="http://h/dir/b"/></a></svg>'
        '<math href="http://h/dir/c"></math>'
    )


def test_object_codebase_and_archive_lists() -> None:
    out = rewrite('<object codebase="/cb/" data="m.swf" archive="a.jar b.jar"></object><applet archive="x.jar,y.jar">')
    assert 'codebase="http://h/cb/"' in out
    assert 'data="http://h/cb/m.swf"' in out and 'archive="http://h/cb/a.jar http://h/cb/b.jar"' in out
    assert 'archive="http://h/dir/x.jar,http://h/dir/y.jar"' in out


def test_usemap_only_when_it_is_a_url_and_param_only_by_ref() -> None:
    page = '<img usemap="#m"><img usemap="maps.html#m"><param name=a value=v.html><param valuetype=ref value=r.html>'
    assert rewrite(page) == (
        '<img usemap="#m"><img usemap="http://h/dir/maps.html#m"><param name=a value=v.html>'
        "<param valuetype=ref value=http://h/dir/r.html>"
    )


def test_lazy_attributes_by_default_and_not_when_switched_off() -> None:
    page = '<img data-src="l.png" data-srcset="a.png 1x">'
    assert rewrite(page) == '<img data-src="http://h/dir/l.png" data-srcset="http://h/dir/a.png 1x">'
    assert rewrite(page, lazy_attributes=frozenset()) == page


def test_conditional_comments() -> None:
    page = (
        '<!--[if IE]><link href="ie.css"><![endif]-->'
        '<script>"<!--[if IE]><link href=\\"no.css\\"><![endif]-->"</script>'
    )
    out = rewrite(page)
    assert '<link href="http://h/dir/ie.css">' in out and 'href=\\"no.css\\"' in out
    assert rewrite(page, conditional_comments=False) == page


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_breaks_the_parser_reads_as_spaces_change_no_value(newline: str) -> None:
    """The parser is given one line (see rewriter.html.engine.ParsedDocument): values still come from
    the text, so a line break in a <base href> is the tokenizer's LF (HTML §13.2.3.5),
    which RFC 3986 keeps and the URL parser removes, and never a space."""
    page = (
        f'<base href="http://h/a{newline}b/">{newline}<a{newline}href=x>t</a>'
        f"<!--[if IE]>{newline}<img src=y><![endif]-->"
    )
    for rules, base in (("rfc3986", "http://h/a\nb/"), ("whatwg", "http://h/ab/")):
        links = find_links(page.encode(), policy=Policy(rules=rules)).links
        assert [(link.element, link.resolved) for link in links] == [
            ("base", None),
            ("a", base + "x"),
            ("img", base + "y"),
        ]


@pytest.mark.parametrize("newline", ["\n", "\r"])
def test_doctype_identifier_with_a_line_break_is_parsed_by_lines(newline: str) -> None:
    """A line break in a DOCTYPE's public identifier decides quirks mode (it spells no
    known identifier), so such a document is parsed as it is, and its links still found."""
    page = (
        f'<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 4.01 Transitional//EN{newline}">{newline}<p><table><tr><td><a href=x>'
    )
    assert rewrite(page) == page.replace("href=x", "href=http://h/dir/x")


@pytest.mark.parametrize(
    ("page", "flat"),
    [
        ('<!DOCTYPE html PUBLIC "a\nb"><p>', False),
        ("<!-- x --> <!---> <?php x?><!x></ x>\n<!doctype html public 'a\rb'>", False),
        ('<!-- x -- > <!doctype html public "a\nb"> -->', True),  # inside a comment
        ('<p><!doctype html public "a\nb">', True),  # after a start tag: ignored (§13.2.6.4.7)
        ('<!doctype html public\n"a">\n<p>', True),  # a break between the parts, not in one
    ],
)
def test_which_doctype_keeps_the_lines(page: str, flat: bool) -> None:
    from rewriter.html.engine import ParsedDocument

    assert ParsedDocument(page).flat is flat


@pytest.mark.parametrize("doctype", ["<!doctype html>", '<!DOCTYPE html PUBLIC "a\nb">'])
def test_a_conditional_comment_after_a_foreign_raw_text_name_is_found_on_any_line(doctype: str) -> None:
    """A lookalike in a style sheet sends the engine to the tokenizer for the comments, and
    an SVG <title> opens no RCDATA, so the tokenizer reads on from after its tag (HTML
    §13.2.6.5): in a document parsed by lines as in one read as one line."""
    page = (
        f"{doctype}\n<style>/* <!--[if x]> */</style>\n<svg><title>t</title></svg>\n"
        "<p>x\n<!--[if IE]><a href=x>x</a><![endif]-->\n"
    )
    assert rewrite(page) == page.replace("href=x", "href=http://h/dir/x")


def _long_lines_page(sample: str) -> str:
    """A page past FLAT_MOST characters of lines of about 8 KB, with links, and a conditional
    comment that the tokenizer finds (a lookalike comes first) after a foreign raw-text tag."""
    line = "<p>" + sample * (8000 // len(sample)) + '<a href="a/b.html">b</a> <img src=../i.png></p>\n'
    middle = (
        "<style>/* <!--[if x]> */</style>\n<svg><title>t</title></svg>\n<!--[if IE]><a href=ie.html>x</a><![endif]-->\n"
    )
    return "<!doctype html><title>t</title>\n" + line * 70 + middle + line * 70


@pytest.mark.parametrize("sample", ["text and more text ", "text \N{GRINNING FACE} "])
def test_a_long_page_of_long_lines_is_parsed_by_lines_as_it_would_be_as_one(
    sample: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past FLAT_MOST characters, a text of long lines is given to the parser as it is (its
    flattened copy would live as long as the tree, at four bytes a character for one emoji);
    what it gives is what the one-line reading gives."""
    from rewriter.html import parsed
    from rewriter.html.engine import ParsedDocument

    page = _long_lines_page(sample)
    assert len(page) > parsed.FLAT_MOST
    assert not ParsedDocument(page).flat
    assert ParsedDocument(page.replace("\n", "")).flat is False  # one line: no table to speak of
    by_lines = rewrite_html(page.encode(), url=URL)
    monkeypatch.setattr(parsed, "FLAT_MOST", len(page))
    assert ParsedDocument(page).flat
    as_one = rewrite_html(page.encode(), url=URL)
    assert by_lines.output == as_one.output
    assert [(link.start, link.status, link.resolved) for link in by_lines.links] == [
        (link.start, link.status, link.resolved) for link in as_one.links
    ]
    assert by_lines.output.count(b"http://h/dir/a/b.html") == 140 and b"href=http://h/dir/ie.html" in by_lines.output


def test_a_long_page_of_short_lines_is_read_as_one_line() -> None:
    """Short lines (an index of one link a line): the table of their starts would weigh about
    what the copy does, and cost more CPU, so the page is read as one line."""
    from rewriter.html import parsed
    from rewriter.html.engine import ParsedDocument

    page = "<!doctype html><ul>\n" + "".join(f'<li><a href="p/{n:07}.html">{n}</a>\n' for n in range(40_000))
    assert len(page) > parsed.FLAT_MOST and ParsedDocument(page).flat


def test_same_document_references() -> None:
    page = '<a href="#top"></a><a href=""></a><a href="?q"></a>'
    assert rewrite(page) == '<a href="#top"></a><a href=""></a><a href="http://h/dir/page.html?q"></a>'
    assert rewrite(page, same_document=True) == (
        '<a href="http://h/dir/page.html#top"></a><a href="http://h/dir/page.html"></a>'
        '<a href="http://h/dir/page.html?q"></a>'
    )


@pytest.mark.parametrize(
    ("page", "absolutized"),
    [
        ("<a href>x</a>", '<a href="http://h/dir/page.html">x</a>'),
        ("<a href >x</a>", '<a href="http://h/dir/page.html" >x</a>'),
        ("<a href/>", '<a href="http://h/dir/page.html"/>'),
        ("<a HREF\nclass=c>", '<a HREF="http://h/dir/page.html"\nclass=c>'),
        ("<img src srcset>", '<img src="http://h/dir/page.html" srcset>'),  # an empty srcset holds no URL
        ("<a class href>", '<a class href="http://h/dir/page.html">'),  # the general path too
        ("<a href href=x>", '<a href="http://h/dir/page.html" href=x>'),  # the first of duplicates wins
    ],
)
def test_an_attribute_without_a_value_is_the_empty_string(page: str, absolutized: str) -> None:
    # HTML §13.2.5.32-33: <a href> is <a href="">, a reference to the document itself, kept by
    # default; absolutized, the value comes with its "=" and quotes.
    result = rewrite_html(page.encode(), url=URL)
    assert result.output == page.encode()
    assert [(link.original, link.status) for link in result.links][:1] == [("", "same-document")]
    name_end = page.lower().index(result.links[0].attribute) + len(result.links[0].attribute)
    assert (result.links[0].start, result.links[0].end) == (name_end, name_end)
    assert rewrite(page, same_document=True) == absolutized
    again = rewrite(absolutized, same_document=True)
    assert again == absolutized


def test_a_valueless_attribute_takes_quotes_that_need_escaping() -> None:
    out = rewrite("<a href>", url='http://h/"q"/page.html', same_document=True)
    assert out == '<a href="http://h/&quot;q&quot;/page.html">'
    out = rewrite("<a href>", url="http://h/a&b/page.html", same_document=True)
    assert out == '<a href="http://h/a&amp;b/page.html">'


def test_absolute_references_of_any_scheme_are_never_touched() -> None:
    page = '<a href="HTTP://X/./a"><a href="javascript:go(\'../x\')"><a href="data:,a/../b"><a href="tel:+1">'
    assert rewrite(page) == page


# --- escaping ---------------------------------------------------------------------------


def test_resolved_url_with_quotes_is_escaped_for_its_place() -> None:
    out = rewrite('<a href=\'x"y\'><a href="z"><a href=q>', url="http://h/it's/")
    assert "<a href='http://h/it&#39;s/x\"y'>" in out
    assert '<a href="http://h/it\'s/z">' in out
    assert '<a href="http://h/it\'s/q">' in out  # an unquoted value that needs quotes gets them
    assert find_links(out.encode(), url="http://other/").links[0].original == "http://h/it's/x\"y"


def test_character_references_are_decoded_before_resolving_and_kept_after() -> None:
    out = rewrite('<a href="a?x=1&amp;y=&#50;">')
    assert out == '<a href="http://h/dir/a?x=1&amp;y=&#50;">'
    assert find_links(out.encode()).links[0].original == "http://h/dir/a?x=1&y=2"


def test_whitespace_around_values_is_kept() -> None:
    assert rewrite('<a href="  x \n">') == '<a href="  http://h/dir/x \n">'


def test_no_other_byte_changes() -> None:
    page = "<!DOCTYPE html>\r\n<P CLASS = 'a'   Href= x >&nbsp;<br/><IMG SRC=y.png Alt=''>\r\n</P>"
    expected = page.replace("Href= x", "Href= http://h/dir/x").replace("SRC=y", "SRC=http://h/dir/y")
    assert rewrite(page) == expected


def test_duplicate_attributes_first_wins() -> None:
    assert rewrite("<a href=x href=y>") == "<a href=http://h/dir/x href=y>"


# --- encodings ----------------------------------------------------------------------------


def test_windows_1252_page_keeps_its_bytes() -> None:
    page = '<meta charset="windows-1252"><p>caf\xe9</p><a href="caf\xe9.html">'.encode("cp1252")
    out = rewrite_html(page, url="http://h/d/").output
    assert out == page.replace(b'href="caf', b'href="http://h/d/caf')


def test_new_text_the_encoding_cannot_hold_is_percent_encoded() -> None:
    page = b'<meta charset="iso-8859-1"><a href="x">'  # WHATWG: iso-8859-1 means windows-1252
    result = rewrite_html(page, url="http://h/\u20ac\u4e2d/")
    assert result.output.endswith(b'<a href="http://h/\x80%E4%B8%AD/x">')


def test_utf16_document() -> None:
    page = '\ufeff<p>\u4e2d<a href="x">'.encode("utf-16-le")
    out = rewrite_html(page, url="http://h/").output
    assert out.decode("utf-16") == '<p>\u4e2d<a href="http://h/x">'


def test_shift_jis_page_declared_late() -> None:
    page = (
        "<html><head>" + " " * 2000 + '<meta charset="shift_jis"></head><p>\u65e5\u672c<a href="\u65e5.html">'
    ).encode("shift_jis")
    result = rewrite_html(page, url="http://h/")
    assert result.encoding.lower() == "shift_jis"
    assert result.output == page.replace(b'href="', b'href="http://h/')


def test_transport_charset_wins_over_meta() -> None:
    page = '<meta charset="utf-8"><a href="\xe9">'.encode("cp1252")
    result = rewrite_html(page, url="http://h/", charset="windows-1252")
    assert result.links[0].original == "\xe9"


def test_invalid_utf8_bytes_survive() -> None:
    page = b'<meta charset="utf-8"><p>\xff\xfe</p><a href="a\xffb">'
    out = rewrite_html(page, url="http://h/").output
    assert out == b'<meta charset="utf-8"><p>\xff\xfe</p><a href="http://h/a\xffb">'


def test_link_spans_are_byte_offsets_into_the_input() -> None:
    page = '<p>\u00e9\u00e9</p>\r\n<a href=" x ">'.encode()
    link = find_links(page, url=URL).links[0]
    assert page[link.start : link.end] == b"x"


def test_rules_choice_reaches_the_resolver() -> None:
    page = "<a href='../../../g'>"
    assert rewrite(page, url="http://a/b/c/d", rules="rfc1808") == "<a href='http://a/../g'>"
    assert rewrite(page, url="http://a/b/c/d", rules="whatwg") == "<a href='http://a/g'>"


def test_whatwg_special_scheme_reference_is_relative() -> None:
    assert rewrite("<a href='http:g'>", url="http://a/b/c/d", rules="whatwg") == "<a href='http://a/b/c/g'>"
    assert rewrite("<a href='http:g'>", url="http://a/b/c/d") == "<a href='http:g'>"


def test_start_tags_lists_what_the_tokenizer_gives() -> None:
    tags = start_tags("<a title='&copy=1&amp;' href=x\r\ny\x00>")
    assert tags == [("a", {"title": "&copy=1&", "href": "x", "y\ufffd": ""})]


def test_a_reopened_formatting_element_is_rewritten_once() -> None:
    # HTML §13.2.4.3: the <a> is cloned into the second <p>; the clone shares its position.
    assert rewrite('<p><a href="x.html">1<p>2') == '<p><a href="http://h/dir/x.html">1<p>2'
    assert len(find_links(b'<p><a href="x.html">1<p>2<p>3', url=URL).links) == 1


def test_lazy_attribute_holding_markup_is_not_a_url() -> None:
    page = "<a data-original='<i class=\"x\">s</i>' data-src='a b'><img data-src=' l.png '>"
    assert (
        rewrite(page) == "<a data-original='<i class=\"x\">s</i>' data-src='a b'><img data-src=' http://h/dir/l.png '>"
    )


def test_transport_charset_x_user_defined_is_read_not_refused() -> None:
    # A MIME part or HTTP response may name x-user-defined, which Python has no codec for.
    result = rewrite_html(b"<a href=x\xf0>", url="http://h/", charset="x-user-defined")
    assert result.output == b"<a href=http://h/x\xf0>"


@pytest.mark.parametrize("rules", ["rfc1808", "rfc2396", "rfc3986", "whatwg"])
def test_with_no_base_a_relative_reference_is_no_base_under_every_rule_set(rules: str) -> None:
    # Under whatwg a reference is absolute only if the URL parser takes it alone: "x", "//h/p" and
    # "https:z" need a base, and with none they are left relative and reported, not called absolute.
    page = b'<a href=x><a href="//h/p"><a href="../q?r"><a href=http://h/y><a href=mailto:a@b>'
    statuses = [(link.original, link.status) for link in rewrite_html(page, policy=Policy(rules=rules)).links]
    assert statuses == [
        ("x", "no-base"),
        ("//h/p", "no-base"),
        ("../q?r", "no-base"),
        ("http://h/y", "absolute"),
        ("mailto:a@b", "absolute"),
    ]


# --- the declared encoding: read as bs4 read it ----------------------------------------

_DECLARATION_PIECES = [
    b"<meta", b"<META", b"< meta", b" charset", b"CHARSET", b"=", b" = ", b'"', b"'", b"utf-8", b"Shift_JIS",
    b"koi8-r", b">", b"/", b";", b" ", b"\n", b"\t", b"<?xml", b" encoding=", b"?>", b"x", b"\xe9", b"\x00",
    b'http-equiv="Content-Type" content="text/html; ', b"<p>",
]  # fmt: skip


@given(st.lists(st.one_of(st.sampled_from(_DECLARATION_PIECES), st.binary(max_size=4)), max_size=30).map(b"".join))
@settings(max_examples=3000, deadline=None)
def test_the_declared_encoding_is_read_as_bs4_reads_it(data: bytes) -> None:
    from bs4.dammit import EncodingDetector

    for part in (data[:1024], data, data[:7]):
        bs4_reads = EncodingDetector.find_declared_encoding(part, is_html=True, search_entire_document=True)
        assert declared_encoding(part) == bs4_reads
