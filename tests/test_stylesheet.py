"""Style sheets as documents of their own: the CSS rules of <style>, CSS Syntax 3 §3.2 encodings, exact bytes."""

from __future__ import annotations

import codecs
import json
from typing import Any

import pytest
import turbohtml
from conftest import SHARED, shared_path

from rewriter.css import syntax as css
from rewriter.css.stylesheet import find_css_links, rewrite_css, sniff_stylesheet
from rewriter.document.encoding import ByteMap, decode, errors_for, sniff, split
from rewriter.html.engine import HTMLResult, NoBaseError, ParsedDocument, find_links
from rewriter.html.tags import end_tag
from rewriter.policy import Policy

URL = "http://h/css/site.css"


def rewritten(sheet: str, **options: Any) -> str:
    return rewrite_css(sheet.encode("utf-8"), url=URL, **options).output.decode("utf-8")


def assert_only_urls_changed(data: bytes, result: HTMLResult, codec: str) -> None:
    """Rebuild the output from the input and the links alone: every byte outside a rewritten
    link's span is the input's, and each span holds the resolved URL escaped for its quote."""
    pieces, last = [], 0
    rewritten_links = [link for link in result.links if link.status == "rewritten" and link.resolved != link.original]
    for link in rewritten_links:
        before = data[link.start - 1 : link.start]
        quote = before.decode("ascii") if before in (b'"', b"'") else ""
        assert link.resolved is not None
        pieces += [data[last : link.start], css.escape_url(link.resolved, quote).encode(codec)]  # type: ignore[arg-type]
        last = link.end
    pieces.append(data[last:])
    assert result.output == b"".join(pieces)


def assert_idempotent(result: HTMLResult, **arguments: Any) -> None:
    again = rewrite_css(result.output, **arguments)
    assert again.output == result.output
    assert not [link for link in again.links if link.status == "rewritten"]


# --- each construct ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sheet", "expected"),
    [
        ("a{background:url(img/a.png)}", "a{background:url(http://h/css/img/a.png)}"),
        ("a{background:URL( img/a.png )}", "a{background:URL( http://h/css/img/a.png )}"),
        ('a{background:url("../a b.png")}', 'a{background:url("http://h/a b.png")}'),
        ("a{background:url( 'a.png' )}", "a{background:url( 'http://h/css/a.png' )}"),
        ('a{background:src("a.png")}', 'a{background:src("http://h/css/a.png")}'),
        ('@import "print.css" print;', '@import "http://h/css/print.css" print;'),
        ("@import url(print.css) screen;", "@import url(http://h/css/print.css) screen;"),
        ("@import /* c */ 'x.css';", "@import /* c */ 'http://h/css/x.css';"),
        (
            'i{b:image-set("a.png" 1x, url(b.png) 2x)}',
            'i{b:image-set("http://h/css/a.png" 1x, url(http://h/css/b.png) 2x)}',
        ),
        ("i{b:-webkit-image-set('a.png' 1x)}", "i{b:-webkit-image-set('http://h/css/a.png' 1x)}"),
        ("@font-face{src:url(f.woff2) format('woff2')}", "@font-face{src:url(http://h/css/f.woff2) format('woff2')}"),
    ],
)
def test_each_construct_is_rewritten_in_place(sheet: str, expected: str) -> None:
    assert rewritten(sheet) == expected


def test_links_are_reported_with_their_element_attribute_kind_and_layer() -> None:
    result = find_css_links(b'@import "a.css"; p { b: url(i.png) }', url=URL)
    assert result.output == b'@import "a.css"; p { b: url(i.png) }'  # find only
    assert [(link.element, link.attribute, link.kind, link.original, link.resolved) for link in result.links] == [
        ("", "#stylesheet", "css", "a.css", "http://h/css/a.css"),
        ("", "#stylesheet", "css", "i.png", "http://h/css/i.png"),
    ]
    assert [(link.start, link.end) for link in result.links] == [(9, 14), (28, 33)]
    assert {(link.base, link.layer) for link in result.links} == {(URL, "retrieval-url")}
    assert (result.base, result.layer, result.encoding) == (URL, "retrieval-url", "UTF-8")


def test_a_base_handed_down_beats_the_retrieval_url() -> None:
    result = rewrite_css(b"p{b:url(i.png)}", url=URL, base="http://mime/part/")
    assert result.output == b"p{b:url(http://mime/part/i.png)}"
    assert (result.base, result.layer, result.links[0].layer) == ("http://mime/part/", "enclosing", "enclosing")


@pytest.mark.parametrize(
    ("sheet", "expected"),
    [
        # Escapes are read: the value is a)b.png, and written back escaped for an unquoted url().
        (r"p{b:url(a\)b.png)}", r"p{b:url(http://h/css/a\29 b.png)}"),
        (r"p{b:url(\61 .png)}", "p{b:url(http://h/css/a.png)}"),
        (r'p{b:url("a\"b.png")}', r'p{b:url("http://h/css/a\"b.png")}'),
        (r"p{b:\75rl(a.png)}", r"p{b:\75rl(http://h/css/a.png)}"),
        ("@\\69mport 'a.css';", "@\\69mport 'http://h/css/a.css';"),
    ],
)
def test_escapes_in_urls_are_decoded_and_the_new_url_is_escaped(sheet: str, expected: str) -> None:
    assert rewritten(sheet) == expected
    assert_idempotent(rewrite_css(sheet.encode(), url=URL), url=URL)


def test_a_new_url_that_needs_escaping_is_escaped_for_its_quote() -> None:
    result = rewrite_css(b"p{b:url(x)}", base="http://h/a b(1)/")
    assert result.output == rb"p{b:url(http://h/a\20 b\28 1\29/x)}"
    assert css.find_urls(result.output.decode())[0].value == "http://h/a b(1)/x"


@pytest.mark.parametrize(
    "sheet",
    [
        "/* url(a.png) @import 'b.css'; */ p{color:red}",
        'q{content:"url(a.png)"; font-family:"@import"}',
        "p{b:xurl(a.png)} p{b:#url(a.png)} @imports 'a.css';",
        "p{b:url(a b.png)}",  # whitespace inside: a bad-url token
        'p{content:"url(\n a.png)"}',  # a bad string
        "<!-- p{color:red} -->",
        "",
    ],
)
def test_lookalikes_are_not_urls(sheet: str) -> None:
    result = rewrite_css(sheet.encode(), url=URL)
    assert result.links == ()
    assert result.output == sheet.encode()


def test_same_document_and_absolute_urls_are_kept() -> None:
    sheet = b"a{clip-path:url(#c)} b{b:url(https://x/y.png)} c{b:url(data:image/png;base64,AA==)} d{b:url()}"
    result = rewrite_css(sheet, url=URL)
    assert result.output == sheet
    assert [link.status for link in result.links] == ["same-document", "absolute", "absolute", "same-document"]
    everything = rewrite_css(b"a{clip-path:url(#c)}", url=URL, policy=Policy(same_document=True))
    assert everything.output == b"a{clip-path:url(http://h/css/site.css#c)}"


def test_no_base_leaves_relative_urls_and_reports_them() -> None:
    sheet = b'@import "a.css"; p{b:url(../i.png)} q{b:url(http://x/)}'
    result = rewrite_css(sheet)
    assert result.output == sheet
    assert [(link.original, link.status) for link in result.links] == [
        ("a.css", "no-base"),
        ("../i.png", "no-base"),
        ("http://x/", "absolute"),
    ]
    assert all(link.reason for link in result.links if link.status == "no-base")
    assert (result.base, result.layer) == (None, None)
    with pytest.raises(NoBaseError):
        rewrite_css(sheet, policy=Policy(require_base=True))
    assert rewrite_css(b"q{b:url(http://x/)}", policy=Policy(require_base=True)).links[0].status == "absolute"


def test_rules_come_from_the_policy() -> None:
    # WHATWG: a special scheme without "//" leans on the base; RFC 3986 (strict): it is absolute.
    sheet = b"p{b:url(http:x.png)}"
    assert rewrite_css(sheet, url=URL).output == sheet
    assert rewrite_css(sheet, url=URL, policy=Policy(rules="whatwg")).output == b"p{b:url(http://h/css/x.png)}"


# --- encodings and bytes -----------------------------------------------------------------------


def test_windows_1252_sheet_keeps_every_other_byte() -> None:
    data = "/* Café € ½ */\np{content:\"é\"; background:url(café/x.png)}\r\n@import 'ü.css';\n".encode("cp1252")
    result = rewrite_css(data, url=URL, charset="windows-1252")
    assert result.encoding == "windows-1252"
    assert result.output == (
        '/* Café € ½ */\np{content:"é"; background:url(http://h/css/café/x.png)}\r\n'
        "@import 'http://h/css/ü.css';\n".encode("cp1252")
    )
    assert [data[link.start : link.end].decode("cp1252") for link in result.links] == ["café/x.png", "ü.css"]
    assert_only_urls_changed(data, result, "cp1252")
    assert_idempotent(result, url=URL, charset="windows-1252")


def test_a_sheet_that_is_not_utf8_and_declares_nothing_is_read_as_windows_1252() -> None:
    data = "p{b:url(café.png)} /* ° */".encode("cp1252")
    assert sniff_stylesheet(data).source == "default"
    result = rewrite_css(data, url=URL)
    assert result.encoding == "windows-1252"
    assert result.output == "p{b:url(http://h/css/café.png)} /* ° */".encode("cp1252")


def test_utf8_sheet_with_non_ascii_has_byte_offsets() -> None:
    data = "/* 日本語 */ p{b:url(画像/ü.png)} q{content:'→'} r{b:url(\"ñ.png\")}".encode()
    result = rewrite_css(data, url=URL)
    assert result.encoding == "UTF-8"
    assert [data[link.start : link.end].decode() for link in result.links] == ["画像/ü.png", "ñ.png"]
    assert result.links[0].start == len("/* 日本語 */ p{b:url(".encode())
    assert (
        result.output
        == "/* 日本語 */ p{b:url(http://h/css/画像/ü.png)} q{content:'→'} r{b:url(\"http://h/css/ñ.png\")}".encode()
    )
    assert_only_urls_changed(data, result, "utf-8")
    assert_idempotent(result, url=URL)


def test_bytes_the_codec_cannot_read_survive() -> None:
    data = b"/* \xff\xfe\x81 */ p{b:url(a.png)} /* \xc3 */"
    result = rewrite_css(data, url=URL, charset="utf-8")
    assert result.output == b"/* \xff\xfe\x81 */ p{b:url(http://h/css/a.png)} /* \xc3 */"
    assert data[result.links[0].start : result.links[0].end] == b"a.png"
    shift_jis = "/* 表示 */ p{b:url(a.png)}".encode("shift_jis") + b"\x81"  # a lone lead byte
    assert rewrite_css(shift_jis, url=URL, charset="shift_jis").output.endswith(b"url(http://h/css/a.png)}\x81")


def test_a_utf8_bom_is_kept_and_counted_in_offsets() -> None:
    data = codecs.BOM_UTF8 + "/* é */ p{b:url(a.png)}".encode()
    result = rewrite_css(data, url=URL, charset="windows-1252")  # the BOM beats the transport charset
    assert result.encoding.lower() == "utf-8"
    assert result.output == codecs.BOM_UTF8 + "/* é */ p{b:url(http://h/css/a.png)}".encode()
    assert data[result.links[0].start : result.links[0].end] == b"a.png"


def test_a_utf16_sheet_comes_back_in_utf16() -> None:
    data = codecs.BOM_UTF16_LE + '@charset "utf-8"; p{b:url(ä.png)}'.encode("utf-16-le")
    result = rewrite_css(data, url=URL)
    assert result.encoding == "utf-16le"
    assert result.output == codecs.BOM_UTF16_LE + '@charset "utf-8"; p{b:url(http://h/css/ä.png)}'.encode("utf-16-le")
    assert data[result.links[0].start : result.links[0].end].decode("utf-16-le") == "ä.png"


def test_charset_rule_chooses_the_encoding() -> None:
    data = '@charset "iso-8859-5";\np{b:url(Ж.png)}'.encode("iso-8859-5")
    result = rewrite_css(data, url=URL)
    assert result.encoding == "iso-8859-5"
    assert result.output == '@charset "iso-8859-5";\np{b:url(http://h/css/Ж.png)}'.encode("iso-8859-5")
    assert result.links[0].original == "Ж.png"


@pytest.mark.parametrize(
    ("data", "label", "source"),
    [
        (b'@charset "utf-16le"; p{}', "UTF-8", "meta"),  # §3.2: a UTF-16 label reads as UTF-8
        (b'@charset "UTF-16BE"; p{}', "UTF-8", "meta"),
        (b'@charset " windows-1251 "; p{}', "windows-1251", "meta"),  # the label is trimmed
        (b'@charset "x-user-defined"; p{}', "windows-1252", "meta"),
        (b"@charset 'windows-1251'; p{}", "UTF-8", "utf-8"),  # only the exact byte pattern counts
        (b'@CHARSET "windows-1251"; p{}', "UTF-8", "utf-8"),
        (b'@charset  "windows-1251"; p{}', "UTF-8", "utf-8"),
        (b' @charset "windows-1251"; p{}', "UTF-8", "utf-8"),
        (b'@charset "windows-1251" ; p{}', "UTF-8", "utf-8"),
        (b'@charset "no-such-thing"; p{}', "UTF-8", "utf-8"),
        (b'@charset "' + b"x" * 1020 + b'";', "UTF-8", "utf-8"),  # not within the first 1024 bytes
        (b"p{}", "UTF-8", "utf-8"),
    ],
)
def test_charset_rule_byte_pattern(data: bytes, label: str, source: str) -> None:
    sniffed = sniff_stylesheet(data)
    assert (sniffed.label.lower(), sniffed.source) == (label.lower(), source)  # webencodings' names are lower case


def test_a_transport_charset_beats_the_charset_rule() -> None:
    data = '@charset "utf-8"; p{b:url(é.png)}'.encode("cp1252")
    result = rewrite_css(data, url=URL, charset="windows-1252")
    assert result.encoding == "windows-1252"
    assert result.links[0].original == "é.png"
    assert result.output == '@charset "utf-8"; p{b:url(http://h/css/é.png)}'.encode("cp1252")
    assert sniff_stylesheet(data, "no-such-label").source == "meta"  # an unknown label is no charset


def test_str_input_is_taken_as_decoded_and_comes_back_as_utf8() -> None:
    sheet = '@charset "windows-1252"; /* é */ p{b:url(ü.png)}'
    result = rewrite_css(sheet, url=URL)
    assert result.encoding == "utf-8"
    assert result.output == '@charset "windows-1252"; /* é */ p{b:url(http://h/css/ü.png)}'.encode()
    assert sheet.encode()[result.links[0].start : result.links[0].end] == "ü.png".encode()
    assert find_css_links(sheet, url=URL).output == sheet.encode()


def test_idempotent_on_a_sheet_with_every_construct() -> None:
    sheet = (
        b"@import 'a.css'; @import url(b.css);\n"
        b"p{b:url(c.png), image-set('d.png' 1x, url(\"e.png\") 2x); c:src('f.svg')}\n"
        rb"q{b:url(g\(1\).png)} r{b:url(#h)} s{b:url(//cdn/i.png)}"
    )
    result = rewrite_css(sheet, url=URL)
    assert len([link for link in result.links if link.status == "rewritten"]) == 8
    assert_only_urls_changed(sheet, result, "utf-8")
    assert_idempotent(result, url=URL)


# --- the same rules as <style> -------------------------------------------------------------------


def test_same_links_as_a_style_element() -> None:
    sheet = "@import 'a.css'; p{b:url(b.png)} q{b:image-set('c.png' 1x)} r{b:url(#d)} s{b:src('e')}"
    html = find_links(f"<style>{sheet}</style>".encode(), url=URL)
    stylesheet = find_css_links(sheet.encode(), url=URL)
    assert [(link.original, link.resolved, link.status) for link in html.links] == [
        (link.original, link.resolved, link.status) for link in stylesheet.links
    ]
    assert [link.start - len("<style>") for link in html.links] == [link.start for link in stylesheet.links]


NO_CONDITIONAL = Policy(conditional_comments=False)


def _pages() -> list[Any]:
    manifest = SHARED / "corpus" / "html" / "manifest.json"
    if not manifest.exists():
        return [pytest.param(None, id="shared-absent")]
    return [pytest.param(entry, id=entry["file"]) for entry in json.loads(manifest.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("entry", _pages())
def test_corpus_style_elements_as_style_sheets(entry: dict[str, Any] | None) -> None:
    """Each <style> element's text, rewritten as a style sheet, gives what the HTML engine gives."""
    if entry is None:
        shared_path("corpus", "html", "manifest.json")
    assert entry is not None
    data = (SHARED / "corpus" / "html" / entry["file"]).read_bytes()
    # <style> in conditional comments is markup of a nested document, not an element of this tree.
    page = find_links(data, url=entry["url"] or entry.get("canonical_or_og_url"), policy=NO_CONDITIONAL)
    sniffed = sniff(data)
    text = decode(data, sniffed)
    document = ParsedDocument(text)
    spans = []
    for element in document.start_tags(document.tree.select("style")):
        start = document.start_tag_end(element)
        end = end_tag(text, "style", start)
        # An SVG <style> is markup: the HTML engine takes it only when it is plain text.
        if element.namespace == turbohtml.Namespace.HTML or not ("&" in text[start:end] or "<" in text[start:end]):
            spans.append((start, end))
    body = split(data, sniffed)[0]
    offsets = ByteMap(text, body, sniffed.codec, errors_for(sniffed.codec)).byte_offsets(
        [offset for span in spans for offset in span]
    )
    shift = len(sniffed.bom)
    compared = 0
    for index, (start, end) in enumerate(spans):
        byte_start, byte_end = offsets[2 * index] + shift, offsets[2 * index + 1] + shift
        expected = [
            (link.original, link.resolved, link.status)
            for link in page.links
            if link.attribute == "#style" and byte_start <= link.start < byte_end
        ]
        stylesheet = find_css_links(text[start:end], base=page.base)
        assert [(link.original, link.resolved, link.status) for link in stylesheet.links] == expected
        compared += len(expected)
    # Every <style> link of the page was in one of those elements (none in srcdoc in the corpus).
    assert compared == sum(link.attribute == "#style" for link in page.links)
