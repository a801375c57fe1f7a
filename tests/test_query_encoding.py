"""Query encoding in a document that is not UTF-8 (issue 22, class 1), cases written from the standards.

URL Standard §4.4 "query state" and §1.3 "percent-encode after encoding"; Encoding Standard §5
(indexes), §9-§14 (encoders), "encode or fail". Each expected value below is worked out by hand
from those algorithms (the pointer arithmetic is in the comment); Chromium's agreement, code point
by code point, is in tests/test_browser.py.
"""

from __future__ import annotations

import codecs

import pytest
import turbohtml.detect  # noqa: F401  (the standard's decoders, for the round trips)

from rewriter.html.engine import find_links, rewrite_html
from rewriter.policy import Policy
from rewriter.url.query_encoding import (
    QUERY_SET,
    SPECIAL_QUERY_SET,
    encode_or_fail,
    encode_query,
    has_encoder,
    percent_encode_after_encoding,
    python_misreadings,
    standard_reading,
    whatwg_name,
)

WHATWG = Policy(rules="whatwg")
PAGE = "http://h.example/dir/page.html"
ESC = b"\x1b"


# --------------------------------------------------------------------------
# The encoders, one code point or a few at a time
# --------------------------------------------------------------------------

ENCODER_CASES = [
    # Shift_JIS (§12.3.2): 表 U+8868 is 0x95 0x5C, whose trail byte is "\"; ¥ and ‾ are the
    # JIS X 0201 Roman bytes; halfwidth katakana one byte; U+2212 reads as U+FF0D (0x81 0x7C).
    ("shift_jis", "\u8868", [b"\x95\x5c"]),
    ("shift_jis", "\u00a5\u203e\uff71\u0080", [b"\x5c", b"\x7e", b"\xb1", b"\x80"]),
    ("shift_jis", "\u2212\uff0d", [b"\x81\x7c", b"\x81\x7c"]),
    # U+2170 SMALL ROMAN NUMERAL ONE is at pointer 8634 (0xEE 0xEF, NEC's selection of IBM extensions) and 10716 (0xFA
    # 0x40): "index Shift_JIS pointer" leaves 8272-8835 out, so 0xFA 0x40.
    ("shift_jis", "\u2170", [b"\xfa\x40"]),
    # ¢ U+00A2 is in no index jis0208 entry (cp932 writes 0x81 0x91): an error.
    ("shift_jis", "\u00a2", [0xA2]),
    # EUC-JP (§12.1.2): the *first* pointer, 8634 for U+2170: lead 8634 / 94 + 0xA1 = 0xFC, trail
    # 8634 % 94 + 0xA1 = 0xF1. ① U+2460, NEC row 13, pointer 1128: 0xAD 0xA1.
    ("euc-jp", "\u2170\u2460", [b"\xfc\xf1", b"\xad\xa1"]),
    # 丂 U+4E02 is JIS X 0212 only, which the encoder does not use: an error.
    ("euc-jp", "\u4e02", [0x4E02]),
    ("euc-jp", "\uff71\u00a5\u203e", [b"\x8e\xb1", b"\x5c", b"\x7e"]),
    # gb18030 (§10.2.2): € is two bytes (0xA2 0xE3); U+E5E5 an error; U+E78D from the side table and
    # U+FE10 from the index are both 0xA6 0xD9; U+E7C7 is pointer 7457 (0x81 0x35 0xF4 0x37); U+0080
    # is the first four-byte pointer; U+10000 is pointer 189000 (0x90 0x30 0x81 0x30).
    ("gb18030", "\u20ac", [b"\xa2\xe3"]),
    ("gb18030", "\ue5e5", [0xE5E5]),
    ("gb18030", "\ue78d\ufe10", [b"\xa6\xd9", b"\xa6\xd9"]),
    ("gb18030", "\ue7c7\u0080\U00010000", [b"\x81\x35\xf4\x37", b"\x81\x30\x81\x30", b"\x90\x30\x81\x30"]),
    # GBK (§10.1.2): € is 0x80; nothing is four bytes.
    ("gbk", "\u20ac\u0080\U00010000", [b"\x80", 0x80, 0x10000]),
    # Big5 (§11.1.2): no HKSCS pointer (below (0xA1 - 0x81) x 157), so 䏰 U+43F0 is an error; ═
    # U+2550 takes its *last* pointer (0xF9 0xF9), 一 U+4E00 its first (0xA4 0x40).
    ("big5", "\u4e00\u2550", [b"\xa4\x40", b"\xf9\xf9"]),
    ("big5", "\u43f0", [0x43F0]),
    # EUC-KR (§13.1.2): 가 U+AC00 is 0xB0 0xA1; 갂 U+AC02, Unified Hangul Code, 0x81 0x41.
    ("euc-kr", "\uac00\uac02", [b"\xb0\xa1", b"\x81\x41"]),
    # Single-byte (§9): windows-1252 gives 0x81 for U+0081 (Python's cp1252 has no 0x81); KOI8-U is
    # KOI8-RU, ў U+045E at 0xAE.
    ("windows-1252", "\u0081\u20ac\u65e5", [b"\x81", b"\x80", 0x65E5]),
    ("koi8-u", "\u045e", [b"\xae"]),
    ("x-user-defined", "\uf780\u00e9", [b"\x80", 0xE9]),
]


@pytest.mark.parametrize(("encoding", "text", "expected"), ENCODER_CASES)
def test_encoder(encoding: str, text: str, expected: list[bytes | int]) -> None:
    assert encode_or_fail(encoding, text) == expected


def test_iso_2022_jp_carries_its_state() -> None:
    """§12.2.2: the encoder's state runs over the whole query, and ends in ASCII."""
    # 日 U+65E5 is pointer 3*94... row 0x46, cell 0x7C: "F|".
    assert b"".join(encode_or_fail("iso-2022-jp", "\u65e5\u65e5a")) == ESC + b"$BF|F|" + ESC + b"(Ba"  # type: ignore[arg-type]
    # ¥ switches to Roman; "a" stays there; "\" cannot (it is ¥ in Roman): back to ASCII first.
    assert b"".join(encode_or_fail("iso-2022-jp", "\u00a5a\\")) == ESC + b"(J\\a" + ESC + b"(B\\"  # type: ignore[arg-type]
    # Halfwidth katakana go through index ISO-2022-JP katakana to the fullwidth ones: ｱ is ア.
    assert encode_or_fail("iso-2022-jp", "\uff71") == [ESC + b"$B", b"\x25\x22", ESC + b"(B"]
    # Step 11.1: an error in the jis0208 state returns to ASCII first, so that it is written in ASCII.
    assert encode_or_fail("iso-2022-jp", "\u65e5\u20ac") == [ESC + b"$B", b"F|", ESC + b"(B", 0x20AC]
    # Step 3: SO, SI and ESC are errors reported as U+FFFD.
    assert encode_or_fail("iso-2022-jp", "\x1b\x0e") == [0xFFFD, 0xFFFD]


def test_percent_encode_after_encoding() -> None:
    """URL §1.3: ASCII bytes outside the set stay, others are percent-encoded, errors are %26%23N%3B."""
    assert percent_encode_after_encoding("shift_jis", "\u8868", SPECIAL_QUERY_SET) == "%95\\"
    assert percent_encode_after_encoding("windows-1252", "\u00e9\u65e5", SPECIAL_QUERY_SET) == "%E9%26%2326085%3B"
    # ISO-2022-JP's bytes are ASCII: '"' (0x22) is in the query set, "%" is not; "'" only in the special one.
    assert percent_encode_after_encoding("iso-2022-jp", "\uff71", SPECIAL_QUERY_SET) == "%1B$B%%22%1B(B"
    assert percent_encode_after_encoding("iso-2022-jp", "\u30fb", QUERY_SET) == "%1B$B!&%1B(B"
    # Every byte an encoder gives for one of "<>#'" and space is in the special-query set.
    assert percent_encode_after_encoding("euc-kr", " #<>'\"\x7f", SPECIAL_QUERY_SET) == "%20%23%3C%3E%27%22%7F"


def test_whatwg_names() -> None:
    assert whatwg_name("cp932") == "shift_jis"
    assert whatwg_name("big5hkscs") == "big5"
    assert whatwg_name("euc_jp") == "euc-jp"
    assert whatwg_name("iso8859-8") == "iso-8859-8"
    assert whatwg_name("utf-8") == "utf-8" and not has_encoder("utf-8")
    assert not has_encoder("utf-16le") and not has_encoder("replacement")  # §4.3 output encoding: UTF-8


# --------------------------------------------------------------------------
# The encoders against the indexes they are read from: every pointer
# --------------------------------------------------------------------------

TWO_BYTE = {
    "shift_jis": ([*range(0x81, 0xA0), *range(0xE0, 0xFD)], [*range(0x40, 0x7F), *range(0x80, 0xFD)]),
    "euc-jp": (list(range(0xA1, 0xFF)), list(range(0xA1, 0xFF))),
    "gb18030": (list(range(0x81, 0xFF)), [*range(0x40, 0x7F), *range(0x80, 0xFF)]),
    "big5": (list(range(0x81, 0xFF)), [*range(0x40, 0x7F), *range(0xA1, 0xFF)]),
    "euc-kr": (list(range(0x81, 0xFF)), list(range(0x41, 0xFF))),
}


@pytest.mark.parametrize("encoding", sorted(TWO_BYTE))
def test_every_index_entry_round_trips(encoding: str) -> None:
    """For every two-byte sequence the standard's decoder reads as one code point, the encoder gives
    bytes the decoder reads as that code point again, unless the standard leaves it out (Big5's HKSCS
    pointers, §5 "index Big5 pointer"; Shift_JIS's EUDC range, no index entry). Where a code point has
    one pointer only, the bytes are the same."""
    decode = codecs.lookup("whatwg-" + encoding).decode
    leads, trails = TWO_BYTE[encoding]
    seen: dict[str, list[bytes]] = {}
    for lead in leads:
        for trail in trails:
            data = bytes((lead, trail))
            char = decode(data)[0]
            if encoding == "shift_jis" and 0xF0 <= lead <= 0xF9:
                continue  # pointers 8836-10715: EUDC, read as Private Use, no index entry
            if len(char) == 1 and char != "\ufffd":
                seen.setdefault(char, []).append(data)
    errors = 0
    for char, sequences in seen.items():
        pieces = encode_or_fail(encoding, char)
        if isinstance(pieces[0], int):
            # Only Big5 leaves pointers out: those below (0xA1 - 0x81) x 157, lead bytes 0x81-0xA0.
            errors += 1
            assert encoding == "big5" and all(data[0] < 0xA1 for data in sequences), (hex(ord(char)), sequences)
            continue
        encoded = b"".join(pieces)  # type: ignore[arg-type]
        assert decode(encoded)[0] == char, (hex(ord(char)), encoded)
        if len(sequences) == 1 and encoding != "big5":
            assert encoded == sequences[0]
    assert (errors > 0) == (encoding == "big5")


def test_index_sizes() -> None:
    """The sizes of the standard's index files: jis0208 has 7724 entries, gb18030 ranges 207."""
    from rewriter.url import query_encoding

    assert len(query_encoding._jis0208()) == 7724
    starts, _ = query_encoding._gb18030_ranges()
    assert len(starts) == 207 + 1  # and the one after pointer 7457 (U+E7C7), read apart
    assert len(query_encoding._katakana()) == 63


# --------------------------------------------------------------------------
# Which references, and which part of them
# --------------------------------------------------------------------------


def test_only_special_schemes_but_ws() -> None:
    """§4.4 query state step 1: a non-special URL, ws: and wss: encode their query as UTF-8."""
    assert encode_query("?\u00e9", "windows-1252", "https://h/") == "?%E9"
    assert encode_query("file:///x?\u00e9", "windows-1252", None) == "file:///x?%E9"
    for reference in ("ws://h/?\u00e9", "wss://h/?\u00e9", "mailto:a?subject=\u00e9", "x:y?\u00e9"):
        assert encode_query(reference, "windows-1252", "http://h/") == reference
    assert encode_query("?\u00e9", "windows-1252", "wss://h/") == "?\u00e9"


def test_query_bounds() -> None:
    """The query runs from the first "?" to the first "#" after it; tabs and newlines are removed
    first (§4.4 basic URL parser step 3), leading and trailing C0 controls and spaces too."""
    assert encode_query("a#?\u00e9", "windows-1252", "http://h/") == "a#?\u00e9"
    assert encode_query("a?\u00e9#\u00e9?", "windows-1252", "http://h/") == "a?%E9#\u00e9?"
    # ISO-2022-JP: the newline between the two 日 is no character of the query, so no ESC ( B there.
    assert encode_query("?\u65e5\n\u65e5\x01", "iso-2022-jp", "http://h/") == "?%1B$BF|F|%1B(B"
    assert encode_query("?abc", "shift_jis", "http://h/") == "?abc"
    assert encode_query("?a\x1bb", "iso-2022-jp", "http://h/") == "?a%26%2365533%3Bb"


def test_standard_reading() -> None:
    """What Python's codec read from the document's bytes, read as the standard's decoder reads them."""
    # EUC-JP 0xA1 0xC1: Python's euc_jp reads U+301C, the standard U+FF5E.
    assert python_misreadings("euc-jp", "euc_jp")[0x301C] == "\uff5e"
    # gb18030 0xA6 0xD9: Python U+E78D, the standard U+FE10 (GB18030-2022).
    assert python_misreadings("gb18030", "gb18030")[0xE78D] == "\ufe10"
    # Shift_JIS 0xA0: cp932 reads U+F8F0, the standard an error; the two-byte ones agree.
    assert python_misreadings("shift_jis", "cp932") == {code_point: "\ufffd" for code_point in range(0xF8F0, 0xF8F4)}
    assert python_misreadings("euc-kr", "cp949") == {}
    # 0xAD 0xA1 (NEC row 13) is not in Python's euc_jp: kept as U+DCAD U+DCA1, read as ①.
    assert standard_reading("\udcad\udca1", "euc-jp") == "\u2460"
    assert standard_reading("\ud800", "windows-1252") == "\ufffd"


# --------------------------------------------------------------------------
# In documents: every URL attribute, CSS apart
# --------------------------------------------------------------------------

# One character of each encoding's own (and what its bytes are) for the five legacy encodings.
LEGACY = [
    ("shift_jis", "\u8868", "%95\\"),
    ("euc-jp", "\u8868", "%C9%BD"),
    ("iso-2022-jp", "\u8868", "%1B$BI=%1B(B"),
    ("gb18030", "\u8868", "%B1%ED"),
    ("big5", "\u8868", "%AA%ED"),
]


def _resolved(document: bytes, policy: Policy = WHATWG) -> dict[str, str | None]:
    return {
        f"{link.element} {link.attribute}": link.resolved
        for link in find_links(document, url=PAGE, policy=policy).links
    }


@pytest.mark.parametrize(("encoding", "char", "query"), LEGACY)
def test_every_url_attribute(encoding: str, char: str, query: str) -> None:
    """Every URL attribute's query is encoded in the document's encoding."""
    document = (
        f'<!doctype html><meta charset="{encoding}"><a href="a?q={char}">a</a> <img src="i?{char}" '
        f'srcset="s?{char} 2x"> <form action="f?{char}"></form> <a ping="p?{char}">p</a>'
        f'<meta http-equiv=refresh content="0; url=r?{char}"> <blockquote cite="c?{char}"></blockquote>'
        f'<svg><image href="v?{char}"/></svg>'
    ).encode(encoding)
    found = _resolved(document)
    expected = {
        "a href": f"http://h.example/dir/a?q={query}",
        "img src": f"http://h.example/dir/i?{query}",
        "img srcset": f"http://h.example/dir/s?{query}",
        "form action": f"http://h.example/dir/f?{query}",
        "a ping": f"http://h.example/dir/p?{query}",
        "meta content": f"http://h.example/dir/r?{query}",
        "blockquote cite": f"http://h.example/dir/c?{query}",
        "image href": f"http://h.example/dir/v?{query}",
    }
    for key, url in expected.items():
        assert found[key] == url, key
    output = rewrite_html(document, url=PAGE, policy=WHATWG).output
    assert output.count(f"http://h.example/dir/i?{query}".encode()) == 1
    assert f"?{char}".encode(encoding) not in output


@pytest.mark.parametrize(("encoding", "char", "query"), LEGACY)
def test_css_urls_are_utf8(encoding: str, char: str, query: str) -> None:
    """CSS reads every URL as UTF-8 (CSSWG, w3c/csswg-drafts#9301), in a style attribute or element too."""
    del query
    utf8 = "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))
    document = (
        f'<meta charset="{encoding}"><p style="background:url(b?{char})">'
        f"<style>p{{background:url(s?{char})}}</style><a href='a?{char}'>"
    ).encode(encoding)
    links = find_links(document, url=PAGE, policy=WHATWG).links
    by_attribute = {link.attribute: link.resolved for link in links}
    assert by_attribute["style"] == f"http://h.example/dir/b?{utf8}"
    assert by_attribute["#style"] == f"http://h.example/dir/s?{utf8}"
    assert by_attribute["href"] != f"http://h.example/dir/a?{utf8}"


def test_rfc_rules_keep_the_query_as_written() -> None:
    """The RFC rule sets never percent-encode: the query stays as written, in the document's encoding."""
    document = '<meta charset="shift_jis"><a href="a?\u8868">'.encode("shift_jis")
    for rules in ("rfc1808", "rfc2396", "rfc3986"):
        assert _resolved(document, Policy(rules=rules))["a href"] == "http://h.example/dir/a?\u8868"


def test_the_document_bytes_as_the_browser_reads_them() -> None:
    """EUC-JP: 〜 written as 0xA1 0xC1 and ① as 0xAD 0xA1 are the bytes a browser fetches again."""
    document = b'<meta charset="euc-jp"><a href="a?\xa1\xc1&amp;\xad\xa1">'
    assert _resolved(document)["a href"] == "http://h.example/dir/a?%A1%C1&%AD%A1"
    output = rewrite_html(document, url=PAGE, policy=WHATWG).output
    assert output == b'<meta charset="euc-jp"><a href="http://h.example/dir/a?%A1%C1&amp;%AD%A1">'


def test_a_character_reference_the_encoding_cannot_hold() -> None:
    """&#x65E5; in a windows-1252 page: 日 is no windows-1252 byte, so &#26085; percent-encoded."""
    document = b'<meta charset="windows-1252"><a href="a?x=&#x65E5;&#x20AC;">'
    assert _resolved(document)["a href"] == "http://h.example/dir/a?x=%26%2326085%3B%80"


def test_characters_python_reads_otherwise() -> None:
    """gb18030: the bytes 0xA6 0xD9 are U+FE10 to the standard (U+E78D to Python), and come back
    as they were; the references &#xE78D; &#xE5E5; &#xE7C7; are those code points as written: the
    side table's 0xA6 0xD9, an error, and pointer 7457."""
    document = b'<meta charset="gb18030"><a href="a?\xa6\xd9">x</a><a href="b?&#xE78D;&#xE5E5;&#xE7C7;">'
    links = find_links(document, url=PAGE, policy=WHATWG).links
    assert [link.original for link in links] == ["a?\ufe10", "b?\ue78d\ue5e5\ue7c7"]
    assert [link.resolved for link in links] == [
        "http://h.example/dir/a?%A6%D9",
        "http://h.example/dir/b?%A6%D9%26%2358853%3B%815%F47",
    ]
    # The RFC rules keep Python's reading: it is what they write back.
    assert find_links(document, url=PAGE).links[0].original == "a?\ue78d"
