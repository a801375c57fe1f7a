"""Content-Transfer-Encoding: lenient decoding, byte-minimal re-encoding, real-world shapes, properties."""

from __future__ import annotations

import base64
import binascii
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rewriter.mime.transfer import TransferError, decode, encode, mechanism

QP = "quoted-printable"
B64 = "base64"


def physical_lines(body: bytes) -> list[bytes]:
    """The physical lines of *body*, without their line breaks."""
    return re.split(rb"\r?\n", body)


def assert_lines_fit(body: bytes) -> None:
    """RFC 2045 §6.7 rule 5: no encoded line is longer than 76 characters."""
    for line in physical_lines(body):
        assert len(line) <= 76, line


# --- mechanisms ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", [None, "", "7bit", "8bit", "binary", " 8BIT ", "Binary\t"])
def test_identity_mechanisms(encoding: str | None) -> None:
    body = b"<a href=3D'x'>\r\n\xff\x00=\n"
    assert decode(body, encoding) == body
    assert encode(body, encoding, body) is body
    assert encode(body, encoding, b"new") == b"new"


@pytest.mark.parametrize(
    ("encoding", "name"),
    [(None, "7bit"), ("", "7bit"), ("  ", "7bit"), (" Quoted-Printable\r\n", QP), ("BASE64", B64), ("8Bit", "8bit")],
)
def test_mechanism_names(encoding: str | None, name: str) -> None:
    assert mechanism(encoding) == name


@pytest.mark.parametrize("encoding", ["x-uuencode", "garbage", "quoted printable", "base-64", "x-token"])
def test_unknown_encoding_is_named(encoding: str) -> None:
    with pytest.raises(TransferError, match=re.escape(repr(encoding))) as raised:
        decode(b"body", encoding)
    assert raised.value.encoding == encoding
    assert encoding in raised.value.reason
    assert isinstance(raised.value, ValueError)
    with pytest.raises(TransferError, match=re.escape(encoding)):
        encode(b"body", encoding, b"other")


# --- quoted-printable decoding (RFC 2045 §6.7) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "decoded"),
    [
        # rule 1: "=" and two hex digits; lower-case digits accepted, as a robust reader should
        (b"a=3Db", b"a=b"),
        (b"=3d=c3=A9", b"=\xc3\xa9"),
        (b"=00=FF=0D=0A", b"\x00\xff\r\n"),
        # note (2): an "=" not followed by two hex digits stays as it is
        (b"a=b", b"a=b"),
        (b"=G1 =4", b"=G1 =4"),
        (b"x==41", b"x=A"),
        # rule 3: trailing white space before a line break, or at the end of the body, is dropped
        (b"a \t \r\nb  \nc \t", b"a\r\nb\nc"),
        (b"a =20\r\n", b"a  \r\n"),
        # rule 5: soft line breaks, CRLF or LF, "=" then padding, and "=" at the very end of the body
        (b"ab=\r\ncd=\nef", b"abcdef"),
        (b"ab= \t\r\ncd", b"abcd"),
        (b"ab =\r\ncd", b"ab cd"),
        (b"abc=", b"abc"),
        (b"abc=\r\n", b"abc"),
        # hard line breaks come out as they are in the source
        (b"a\r\nb\nc\r\n", b"a\r\nb\nc\r\n"),
        (b"\r\n\r\n", b"\r\n\r\n"),
        # a bare CR is not a line break
        (b"a\rb", b"a\rb"),
        (b"", b""),
    ],
)
def test_qp_decode(body: bytes, decoded: bytes) -> None:
    assert decode(body, QP) == decoded


def test_qp_decode_rfc_2045_example() -> None:
    # RFC 2045 §6.7 rule 5's example of soft line breaks.
    body = b"Now's the time =\r\nfor all folk to come=\r\n to the aid of their country."
    assert decode(body, QP) == b"Now's the time for all folk to come to the aid of their country."


def test_qp_decode_agrees_with_binascii_on_plain_shapes() -> None:
    raw = '<p class="x">Caf\u00e9 \u2014 ' + "long text " * 30 + "</p>\n<p>=</p>\n"
    encoded = binascii.b2a_qp(raw.encode())
    assert decode(encoded, QP) == raw.encode() == binascii.a2b_qp(encoded)


# --- quoted-printable encoding rules ------------------------------------------------------------------------------


def test_qp_encode_equals_and_non_ascii() -> None:
    out = encode(b"", QP, "a=b \u00e9\x7f\x00".encode())
    assert out == b"a=3Db =C3=A9=7F=00"


def test_qp_encode_trailing_white_space() -> None:
    # Rule 3: white space before a line break, or at the end of the body, must be encoded.
    assert encode(b"x\r\ny", QP, b"a \r\nb\t") == b"a=20\r\nb=09"
    assert encode(b"x\ny", QP, b"a b \nc") == b"a b=20\nc"


def test_qp_encode_cr_lf_that_are_not_line_breaks() -> None:
    # In a CRLF body a bare LF or CR is text, not a line break.
    assert encode(b"x\r\ny", QP, b"a\nb\rc\r\nd") == b"a=0Ab=0Dc\r\nd"
    # In an LF body the LF is the line break and a CR before it is text.
    assert encode(b"x\ny", QP, b"a\r\nb\rc\nd") == b"a=0D\nb=0Dc\nd"


def test_qp_encode_long_lines_are_soft_broken() -> None:
    new = ("word=" * 60 + " end \u00e9" * 20).encode()
    out = encode(b"x\r\n", QP, new + b"\r\n")
    assert_lines_fit(out)
    assert b"=\r\n" in out
    assert decode(out, QP) == new + b"\r\n"
    # Every "=" but a soft break's starts a whole escape: none is split by a soft break.
    for line in physical_lines(out):
        assert re.fullmatch(rb"(?:[^=]|=[0-9A-F]{2})*=?", line), line


@pytest.mark.parametrize("length", range(70, 82))
def test_qp_encode_wraps_at_exactly_76(length: int) -> None:
    new = b"a" * length
    out = encode(b"x", QP, new)
    if length <= 76:
        assert out == new  # a last line may use all 76 columns
    else:
        assert out == b"a" * 75 + b"=\r\n" + b"a" * (length - 75)


def test_qp_encode_uses_the_body_line_break_style() -> None:
    out = encode(b"one\ntwo\n", QP, b"x" * 100 + b"\ntwo\n")
    assert out == b"x" * 75 + b"=\n" + b"x" * 25 + b"\ntwo\n"
    out = encode(b"one\r\ntwo\r\n", QP, b"x" * 100 + b"\r\ntwo\r\n")
    assert out == b"x" * 75 + b"=\r\n" + b"x" * 25 + b"\r\ntwo\r\n"
    # With no line break to copy, new lines get the caller's.
    assert encode(b"one", QP, b"x" * 80, eol=b"\n") == b"x" * 75 + b"=\n" + b"x" * 5


# --- identity -----------------------------------------------------------------------------------------------------

IDENTITY_BODIES = [
    (QP, b""),
    (QP, b"plain\r\n"),
    (QP, b'<a href=3D"x">caf=c3=a9</a>  \r\n=\r\n==\r\nodd =G1 trailing\t\r\nend='),
    (QP, b"lf body=\nwith soft =\nbreaks \n=3d\n"),
    (QP, b"mixed\r\nbreaks\nand =0D=0A escapes\r\n"),
    (QP, b"pad after soft=   \r\nbreak"),
    (B64, b""),
    (B64, base64.encodebytes(bytes(range(256)) * 3).replace(b"\n", b"\r\n")),
    (B64, base64.b64encode(b"no line breaks at all")),
    (B64, b"PGh0\r\nbWw+\r\n"),
    (B64, b"PGh0bWw\n"),  # unpadded
    (B64, b" PGh0 bWw+ *garbage* \n"),
    ("7bit", b"a\r\nb"),
    ("8bit", b"\xff\n"),
]


@pytest.mark.parametrize(("encoding", "body"), IDENTITY_BODIES)
def test_identity_when_unchanged(encoding: str, body: bytes) -> None:
    assert encode(body, encoding, decode(body, encoding)) == body


# --- minimality ---------------------------------------------------------------------------------------------------


def fifty_line_body(eol: bytes) -> list[bytes]:
    """Fifty encoded lines, some with soft breaks, escapes and transport padding."""
    lines = []
    for n in range(50):
        if n % 7 == 3:
            lines.append(b'<p class=3D"c%d">a long paragraph that goes on and on and on and on and=' % n)
            lines.append(b" on until it is soft-wrapped</p>  ")
        else:
            lines.append(b'<li><a href=3D"page-%d.html">Caf=C3=A9 %d</a></li>' % (n, n))
    return [line + eol for line in lines]


@pytest.mark.parametrize("eol", [b"\r\n", b"\n"])
def test_minimal_one_url_changes_one_line(eol: bytes) -> None:
    encoded_lines = fifty_line_body(eol)
    original = b"".join(encoded_lines)
    old = decode(original, QP)
    new = old.replace(b'"page-20.html"', b'"https://example.com/docs/page-20.html"')
    assert new != old
    out = encode(original, QP, new)
    assert decode(out, QP) == new
    changed = [i for i, line in enumerate(encoded_lines) if b'"page-20.html"' in line]
    assert len(changed) == 1
    before = b"".join(encoded_lines[: changed[0]])
    after = b"".join(encoded_lines[changed[0] + 1 :])
    assert out.startswith(before)
    assert out.endswith(after)
    middle = out[len(before) : len(out) - len(after)]
    assert middle == b'<li><a href=3D"https://example.com/docs/page-20.html">Caf=C3=A9 20</a></li>' + eol


def test_minimal_two_distant_changes_keep_the_lines_between() -> None:
    encoded_lines = fifty_line_body(b"\r\n")
    original = b"".join(encoded_lines)
    new = decode(original, QP).replace(b"page-1.html", b"/p1").replace(b"page-48.html", b"/p48")
    out = encode(original, QP, new)
    assert decode(out, QP) == new
    out_lines = out.split(b"\r\n")
    old_lines = original.split(b"\r\n")
    assert len(out_lines) == len(old_lines)
    differing = [i for i, (a, b) in enumerate(zip(old_lines, out_lines, strict=True)) if a != b]
    assert [old_lines[i] for i in differing] == [
        b'<li><a href=3D"page-1.html">Caf=C3=A9 1</a></li>',
        b'<li><a href=3D"page-48.html">Caf=C3=A9 48</a></li>',
    ]


def test_minimal_inside_a_soft_wrapped_line() -> None:
    # One logical line of 40 soft-wrapped physical lines: only the physical line with the change is rewritten.
    pieces = [b"<span>%02d: some text that fills the physical line up</span>=\r\n" % n for n in range(40)]
    original = b"".join(pieces) + b"<a href=3D'x.html'>x</a>\r\n"
    new = decode(original, QP).replace(b"17: some", b"17: SOME")
    out = encode(original, QP, new)
    assert decode(out, QP) == new
    assert out == original.replace(b"17: some", b"17: SOME")


def test_minimal_line_with_escaped_crlf_inside() -> None:
    # "=0D=0A" decodes to CR LF inside a line: the lines still line up, and that line is kept.
    original = b"first=0D=0Aline\r\nsecond\r\nthird=0D=0A\r\n"
    new = decode(original, QP).replace(b"second", b"2nd")
    assert new == b"first\r\nline\r\n2nd\r\nthird\r\n\r\n"
    assert encode(original, QP, new) == b"first=0D=0Aline\r\n2nd\r\nthird=0D=0A\r\n"


def test_changed_line_structure_keeps_the_unchanged_ends() -> None:
    encoded_lines = fifty_line_body(b"\r\n")
    original = b"".join(encoded_lines)
    old = decode(original, QP)
    new = old.replace(b"Caf\xc3\xa9 25", b"two\r\nlines")
    out = encode(original, QP, new)
    assert decode(out, QP) == new
    assert_lines_fit(out)
    index = next(i for i, line in enumerate(encoded_lines) if b"Caf=C3=A9 25<" in line)
    assert out.startswith(b"".join(encoded_lines[:index]))
    assert out.endswith(b"".join(encoded_lines[index + 1 :]))


# --- real-world shapes --------------------------------------------------------------------------------------------

# Chrome "Save as MHTML": CRLF, 76-column lines, soft breaks in the middle of attributes and URLs.
CHROME_MHTML = (
    b'<!DOCTYPE html><html lang=3D"en"><head><meta http-equiv=3D"Content-Type" co=\r\n'
    b'ntent=3D"text/html; charset=3DUTF-8"><link rel=3D"stylesheet" type=3D"text/=\r\n'
    b'css" href=3D"cid:css-4f1c2a9e-77b3-4c1e-9d1e-0a5e3b2f6c11@mhtml.blink" /><t=\r\n'
    b'itle>Caf=C3=A9 =E2=80=94 Docs</title></head><body><nav><a href=3D"https://d=\r\n'
    b'ocs.example.com/guide/getting-started/installation.html">Install</a> <a hre=\r\n'
    b'f=3D"../reference/api/index.html#section-2">API</a></nav><img src=3D"images=\r\n'
    b'/logo-header@2x.png" alt=3D"logo">\r\n'
    b"<p>Unchanged paragraph with =3D signs and a trailing space=20\r\n"
    b"</body></html>\r\n"
)


def test_chrome_mhtml() -> None:
    old = decode(CHROME_MHTML, QP)
    assert b'<a href="../reference/api/index.html#section-2">' in old
    assert b'<img src="images/logo-header@2x.png"' in old
    assert b"<title>Caf\xc3\xa9 \xe2\x80\x94 Docs</title>" in old
    new = old.replace(b'"../reference/api/', b'"https://docs.example.com/reference/api/').replace(
        b'"images/logo', b'"https://docs.example.com/guide/images/logo'
    )
    out = encode(CHROME_MHTML, QP, new)
    assert decode(out, QP) == new
    assert_lines_fit(out)
    old_lines = CHROME_MHTML.split(b"\r\n")
    # The first four physical lines come before any change and the last lines after: all kept.
    # Physical lines before the first change and from the end of the last change are kept, soft breaks included.
    assert out.startswith(b"\r\n".join(old_lines[:5]) + b"\r\n")
    assert out.endswith(b"\r\n".join(old_lines[6:]))
    assert b'href=3D"https://docs.example.com/reference/api/index.html#section-2"' in out.replace(b"=\r\n", b"")
    assert b"\n" not in out.replace(b"\r\n", b"")  # CRLF throughout


# Outlook's HTML body, stored with LF line breaks: unquoted attributes, soft breaks, transport padding.
OUTLOOK_LF = (
    b'<html xmlns:v=3D"urn:schemas-microsoft-com:vml" xmlns:o=3D"urn:schemas-micr=\n'
    b'osoft-com:office:office">\n'
    b'<body lang=3DEN-US link=3D"#0563C1" vlink=3D"#954F72">\n'
    b'<div class=3DWordSection1><p class=3DMsoNormal>See <a href=3D"report.htm">t=\n'
    b'he report</a> and <img width=3D32 height=3D32 src=3D"image001.png">  \n'
    b"<o:p>&nbsp;</o:p></p></div>\n"
    b"</body>\n"
    b"</html>\n"
)


def test_outlook_lf() -> None:
    old = decode(OUTLOOK_LF, QP)
    assert b'<a href="report.htm">the report</a>' in old
    assert b'src="image001.png">\n' in old  # padding before the line break dropped
    new = old.replace(b'"report.htm"', b'"http://intranet.example/reports/report.htm"')
    out = encode(OUTLOOK_LF, QP, new)
    assert decode(out, QP) == new
    assert_lines_fit(out)
    assert b"\r" not in out
    old_lines = OUTLOOK_LF.split(b"\n")
    new_lines = out.split(b"\n")
    assert new_lines[:3] == old_lines[:3]
    assert new_lines[-5:] == old_lines[-5:]  # the soft-wrapped rest of the line kept, transport padding too


# --- base64 (RFC 2045 §6.8) ---------------------------------------------------------------------------------------

HTML = b'<html><body><a href="a.html">A</a><img src="i.png">' + b"<p>text</p>" * 40 + b"</body></html>"


def test_base64_76_column_crlf() -> None:
    original = base64.encodebytes(HTML).replace(b"\n", b"\r\n")
    assert len(original.split(b"\r\n")[0]) == 76
    assert decode(original, B64) == HTML
    new = HTML.replace(b'"a.html"', b'"https://example.com/a.html"')
    out = encode(original, B64, new)
    assert decode(out, B64) == new
    assert out.endswith(b"\r\n")
    rows = out.split(b"\r\n")
    assert rows[-1] == b""
    assert all(len(row) == 76 for row in rows[:-2])
    assert 0 < len(rows[-2]) <= 76
    assert b"\n" not in out.replace(b"\r\n", b"")


def test_base64_keeps_line_length_and_lf_style() -> None:
    encoded = base64.b64encode(HTML)
    original = b"\n".join(encoded[i : i + 64] for i in range(0, len(encoded), 64))  # no final line break
    assert decode(original, B64) == HTML
    new = HTML.replace(b"i.png", b"/img/i.png")
    out = encode(original, B64, new)
    assert decode(out, B64) == new
    assert not out.endswith(b"\n")
    assert b"\r" not in out
    assert {len(row) for row in out.split(b"\n")[:-1]} == {64}


def test_base64_without_line_breaks() -> None:
    original = base64.b64encode(HTML)
    out = encode(original, B64, HTML + b"<!-- more -->")
    assert out == base64.b64encode(HTML + b"<!-- more -->")


def test_base64_one_short_line_does_not_set_the_width() -> None:
    assert encode(b"PGI+\r\n", B64, b"x" * 100) == base64.encodebytes(b"x" * 100).replace(b"\n", b"\r\n")


@pytest.mark.parametrize(
    ("body", "decoded"),
    [
        (b"PGh0bWw+", b"<html>"),
        (b"PGh0\r\n bWw+ \r\n", b"<html>"),
        (b"PG!h0-bW*w+", b"<html>"),  # characters outside the alphabet are ignored
        (b"PGh0bWw", b"<html"),  # missing padding: the whole bytes of the last quantum
        (b"PGh0bQ", b"<htm"),
        (b"PGh0bQ=", b"<htm"),
        (b"PGh0bQ===", b"<htm"),
        (b"", b""),
        (b"\r\n", b""),
    ],
)
def test_base64_decode_lenient(body: bytes, decoded: bytes) -> None:
    assert decode(body, B64) == decoded


@pytest.mark.parametrize(
    ("body", "reason"),
    [(b"PGh0b", "6 bits"), (b"P", "6 bits"), (b"PGI+PA==PGI+", "after its '=' padding")],
)
def test_base64_undecodable(body: bytes, reason: str) -> None:
    with pytest.raises(TransferError, match=re.escape(reason)):
        decode(body, B64)
    with pytest.raises(TransferError):
        encode(body, B64, b"x")


# --- properties ---------------------------------------------------------------------------------------------------

QP_ALPHABET = st.sampled_from([b"a", b"=", b" ", b"\t", b"\r", b"\n", b"\r\n", b"3D", b"0A", b"\xff", b"x" * 40])
qp_ish = st.lists(QP_ALPHABET, max_size=40).map(b"".join)
any_bytes = st.one_of(st.binary(max_size=300), qp_ish)


@settings(max_examples=500)
@given(any_bytes)
@example(b"=\r\n=0D=0A\r")
def test_qp_identity_property(body: bytes) -> None:
    assert encode(body, QP, decode(body, QP)) == body


@settings(max_examples=500)
@given(any_bytes, any_bytes)
@example(b"a=0Ab\nc", b"a\nb\nc")
@example(b"a\r\nb", b"a\nb")
@example(b"x=\r\n", b"x \r\n")
def test_qp_round_trip_property(original: bytes, new: bytes) -> None:
    out = encode(original, QP, new)
    assert decode(out, QP) == new


@st.composite
def qp_edit(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A QP body of short lines and a small edit of its decoded bytes."""
    text = draw(st.lists(QP_ALPHABET, max_size=60).map(b"".join))
    original = binascii.b2a_qp(text, istext=draw(st.booleans()))
    if draw(st.booleans()):
        original = original.replace(b"\n", b"\r\n")
    old = decode(original, QP)
    start = draw(st.integers(0, len(old)))
    stop = draw(st.integers(start, min(len(old), start + 10)))
    new = old[:start] + draw(qp_ish) + old[stop:]
    return original, new


@settings(max_examples=500)
@given(qp_edit())
def test_qp_edit_round_trip_and_line_length(case: tuple[bytes, bytes]) -> None:
    original, new = case
    out = encode(original, QP, new)
    assert decode(out, QP) == new
    if all(len(line) <= 76 for line in physical_lines(original)):  # a raw CR can make binascii's longer
        assert_lines_fit(out)


@settings(max_examples=300)
@given(st.binary(max_size=400), st.sampled_from([0, 4, 60, 76]), st.sampled_from([b"\n", b"\r\n"]), st.booleans())
def test_base64_identity_property(data: bytes, width: int, eol: bytes, final: bool) -> None:
    encoded = base64.b64encode(data)
    if width:
        encoded = eol.join(encoded[i : i + width] for i in range(0, len(encoded), width)) + (eol if final else b"")
    assert decode(encoded, B64) == data
    assert encode(encoded, B64, data) == encoded


@settings(max_examples=300)
@given(st.binary(max_size=400), st.binary(max_size=400), st.sampled_from([0, 4, 60, 76]), st.booleans())
def test_base64_round_trip_property(data: bytes, new: bytes, width: int, final: bool) -> None:
    encoded = base64.b64encode(data)
    if width:
        encoded = b"\r\n".join(encoded[i : i + width] for i in range(0, len(encoded), width)) + (
            b"\r\n" if final else b""
        )
    out = encode(encoded, B64, new)
    assert decode(out, B64) == new
    if new == data:
        assert out == encoded
    elif b"\n" in encoded:
        assert out.endswith(b"\r\n") == encoded.endswith(b"\r\n")
        rows = out.split(b"\r\n")
        if encoded.count(b"\n") > 1 or (encoded.count(b"\n") == 1 and not final):
            assert {len(row) for row in rows[:-2]} <= {width}
    else:
        assert b"\n" not in out


@given(st.binary(max_size=300).map(lambda raw: raw.replace(b"\x00", b"=")))
@settings(max_examples=500)
def test_fast_decoder_reads_as_the_line_parser(body: bytes) -> None:
    # decode() takes a fast path; encode() aligns on parse_qp's lines: they must agree.
    from rewriter.mime.transfer import decode_qp, parse_qp

    assert decode_qp(body) == b"".join(line.decoded + line.brk for line in parse_qp(body))


@pytest.mark.parametrize(
    "body", [b"a==\r\nb", b"=\r", b"x=\r=\n", b"=3d=3D \r\n", b"a=3=\nD", b"a=\n", b"=", b" \t=\r\n", b"=\r\r\n"]
)
def test_fast_decoder_edges(body: bytes) -> None:
    from rewriter.mime.transfer import decode_qp, parse_qp

    assert decode_qp(body) == b"".join(line.decoded + line.brk for line in parse_qp(body))


@given(
    st.lists(
        st.sampled_from([b"a", b"=", b"=3D", b" ", b"\t", b"\r", b"\n", b"\r\n", b"=\r\n", b"=\n", b"x" * 40]),
        max_size=40,
    ).map(b"".join),
    st.lists(st.sampled_from([b"a", b"=", b" ", b"\r", b"\n", b"\r\n", b"y" * 50, b"\xe9"]), max_size=40).map(b"".join),
)
@settings(max_examples=600)
def test_line_by_line_encoder_agrees_with_the_full_one(original: bytes, edit: bytes) -> None:
    # The fast path must give exactly what the full alignment gives, wherever it applies.
    from rewriter.mime.transfer import decode_qp, encode_qp_aligned, encode_qp_by_lines

    old = decode_qp(original)
    new = old[: len(old) // 2] + edit + old[len(old) // 2 :]
    fast = encode_qp_by_lines(original, new, b"\r\n")
    if fast is not None:
        assert decode(fast, QP) == new
        assert fast == encode_qp_aligned(original, new, b"\r\n")


@given(
    st.lists(
        st.sampled_from(
            [b"=", b"A", b"a", b"F", b"0", b"3D", b" ", b"\t", b"\r", b"\n", b"\r\n", b"=\r\n", b"=0A", b"\xe9"]
        ),
        max_size=30,
    ).map(b"".join)
)
@settings(max_examples=1000)
def test_whole_body_decoder_agrees_with_the_line_parser(body: bytes) -> None:
    from rewriter.mime.transfer import parse_qp, whole_body_safe

    if whole_body_safe(body):
        assert binascii.a2b_qp(body) == b"".join(line.decoded + line.brk for line in parse_qp(body))


@given(
    st.lists(
        st.sampled_from([b"=", b"A", b"f", b"0", b"3D", b"=3d", b"=4", b"==", b" ", b"\t", b"\r", b"_", b"\xe9", b"x"]),
        max_size=30,
    ).map(b"".join)
)
@settings(max_examples=1000)
def test_escapes_read_as_rfc_2045_note_2(content: bytes) -> None:
    # unescape_qp lets binascii decode where it reads as the RFC 2045 §6.7 note (2) reading.
    import re

    from rewriter.mime.transfer import unescape_qp

    content = content.rstrip(b" \t")
    expected = re.sub(rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m[1], 16)]), content)
    assert unescape_qp(content) == expected


def _wrap_token_by_token(text: bytes, eol: bytes, soft_end: bool) -> bytes:
    """RFC 2045 §6.7 rules 1-3 and 5 applied one character at a time: the oracle for wrap_qp."""
    tokens = [bytes([b]) if (33 <= b <= 126 and b != 61) or b in (9, 32) else b"=%02X" % b for b in text]
    if tokens and not soft_end and text[-1] in (9, 32):
        tokens[-1] = b"=%02X" % text[-1]
    lines: list[bytes] = [b""]
    for index, token in enumerate(tokens):
        remaining = len(lines[-1]) + sum(map(len, tokens[index:]))
        if len(lines[-1]) + len(token) > 75 and (soft_end or remaining > 76):
            lines.append(b"")
        lines[-1] += token
    out = (b"=" + eol).join(lines)
    return out + b"=" + eol if soft_end and out else out


@given(
    st.lists(st.sampled_from([b"a", b"=", b" ", b"\t", b"\xe9", b"\r", b"\n", b"x" * 7]), max_size=80).map(b"".join),
    st.sampled_from([b"\r\n", b"\n"]),
    st.booleans(),
)
@example(b"a" * 76, b"\r\n", False)
@example(b"a" * 151, b"\r\n", False)
@example(b"a" * 73 + b"=", b"\n", False)
@example(b"a" * 75, b"\n", True)
@settings(max_examples=2000)
def test_wrap_cuts_where_the_rules_cut_one_character_at_a_time(text: bytes, eol: bytes, soft_end: bool) -> None:
    from rewriter.mime.transfer import wrap_qp

    assert wrap_qp(text, eol, soft_end) == _wrap_token_by_token(text, eol, soft_end)


@given(
    st.lists(
        st.sampled_from([b"", b"a", b"ab", b"=3D", b"xyz" * 5, b"b", b"c  ", b"=4", b"x\r", b"\t", b"=C3=a9"]),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([b"=\r\n", b"=\n", b"= \r\n"]),
    st.integers(0, 60),
    st.integers(0, 60),
    st.sampled_from([b"", b"a", b"Q", b"ab", b"=", b"b" * 30]),
)
@settings(max_examples=1500)
def test_splice_keeps_every_unchanged_physical_line_at_each_end(
    pieces: list[bytes], soft: bytes, cut: int, length: int, insert: bytes
) -> None:
    # The oracle: the whole line parsed, then kept physical lines counted from each end, one at a time.
    from rewriter.mime.transfer import parse_qp, splice_logical_line, wrap_qp

    encoded = soft.join(pieces)  # one logical line of soft-broken physical lines
    (line,) = parse_qp(encoded)
    parts = line.parts
    old = line.decoded
    new = old[:cut] + insert + old[cut + length :]
    first, head = 0, 0
    while first < len(parts) - 1 and new.startswith(parts[first].decoded, head):
        head += len(parts[first].decoded)
        first += 1
    last, tail = len(parts), len(new)
    while last > first and new.endswith(parts[last - 1].decoded, head, tail):
        tail -= len(parts[last - 1].decoded)
        last -= 1
    kept_tail = encoded[parts[last].start :] if last < len(parts) else b""
    expected = encoded[: parts[first].start] + wrap_qp(new[head:tail], b"\r\n", soft_end=bool(kept_tail)) + kept_tail
    assert splice_logical_line(encoded, new, b"\r\n") == expected
    assert decode(expected, QP) == new
