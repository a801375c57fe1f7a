"""rewriter.mime.heading against the email package functions it stands in for.

The readers of rewriter.mime.heading take time linear in a heading's length where the email
package's take quadratic time (tests/test_pathological.py times them). Here they must
give what the email package gives: on generated parameters (quotes, backslashes, RFC 2231
sections, charsets and languages, percent escapes), on generated encoded words (RFC 2047,
unended, across lines, whitespace between them), and on every heading field of the mail
corpus. Where the email package raises on broken input (TypeError, ValueError), the
readers give a value instead, and the message is rewritten instead of failing.
"""

from __future__ import annotations

import codecs
import email.header
import email.utils
import encodings
import io
from email.message import Message
from email.policy import compat32

import pytest
from conftest import SHARED, shared_path
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rewriter.containers.mailbox import iter_mbox
from rewriter.mime import heading
from rewriter.mime.message import find_message_links, header_url, heading_end, read_heading, rewrite_message

CORPUS = SHARED / "corpus" / "mail"
FILES = sorted(path.name for path in CORPUS.iterdir() if path.suffix != ".md") if CORPUS.is_dir() else ["absent"]


def _message(**fields: str) -> Message:
    message = Message(policy=compat32)
    for name, value in fields.items():
        message[name.replace("_", "-")] = value
    return message


def _stdlib(call: object) -> tuple[str, object]:
    """("ok", what *call* gives) or ("raises", the exception's type)."""
    try:
        return "ok", call()  # type: ignore[operator]
    except Exception as error:  # the email package's own failures are compared
        return "raises", type(error)


NAMES = ["charset", "boundary", "name", "filename", "start", "title", "Charset", "x"]


def _same_parameters(message: Message, header: str = "content-type") -> None:
    status, expected = _stdlib(lambda: message._get_params_preserve(None, header))
    found = heading.params(message, header)
    if status == "ok":
        assert found == expected, (message[header], found, expected)
    else:  # TypeError (name* beside name*0) or ValueError (a section of 4301 digits)
        assert expected in (TypeError, ValueError), expected
    for name in NAMES:
        for unquote in (True, False):
            status, value = _stdlib(lambda: message.get_param(name, "absent", header, unquote))  # noqa: B023
            if status == "ok":
                assert heading.get_param(message, name, "absent", header, unquote) == value, (name, unquote)
    status, value = _stdlib(lambda: message.get_filename("absent"))
    if status == "ok":
        assert heading.get_filename(message, "absent") == value


# --------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------

TOKENS = st.sampled_from(
    [
        "a",
        "Z",
        "utf-8",
        "us-ascii",
        "iso-8859-1",
        "en",
        "%41",
        "%e9",
        "%",
        "'",
        "''",
        "=",
        ";",
        ";;",
        '"',
        '\\"',
        "\\",
        "\\\\",
        " ",
        "\t",
        "*",
        "0",
        "1",
        "<a>",
        "\udce9",  # a byte outside ASCII, as the heading reader gives it
    ]
)
PARAMETER_NAMES = st.sampled_from(
    [
        "charset",
        "CharSet",
        "boundary",
        "name",
        "filename",
        "start",
        "title",
        "title*",
        "title*0",
        "title*0*",
        "title*1",
        "title*1*",
        "title*01",
        "title*2",
        "title*10",
        "filename*",
        "filename*0*",
        "filename*1",
        "x-y",
        "",
        " spaced ",
    ]
)
VALUES = st.one_of(
    st.lists(TOKENS, max_size=6).map("".join),
    st.lists(TOKENS, max_size=5).map(lambda tokens: '"' + "".join(tokens) + '"'),
)
PARAMETERS = st.builds(
    lambda name, equals, value: f"{name}={value}" if equals else name,
    PARAMETER_NAMES,
    st.booleans() | st.just(True),
    VALUES,
)
FIELDS = st.builds(
    lambda first, parameters, separator: separator.join([first, *parameters]),
    st.sampled_from(["text/html", "multipart/mixed", "attachment", "", " text/plain ", "inline"]),
    st.lists(PARAMETERS, max_size=6),
    st.sampled_from(["; ", ";", " ;\r\n\t", ";;"]),
)


@given(FIELDS, FIELDS)
@settings(max_examples=3000, deadline=None)
@example("text/html; title*0*=us-ascii'en'a%20; title*1=\"b;c\"", "attachment; filename=a.txt")
@example('multipart/mixed; boundary="a;b\\";c"; x=1', "attachment; filename*=utf-8''caf%C3%A9; name=\"x")
@example("text/plain; title*=a; title*0=b", "attachment; title*00=a; title*0=b; title*1*=%41")
def test_generated_parameters_read_as_the_email_package_reads_them(content_type: str, disposition: str) -> None:
    message = _message(Content_Type=content_type, Content_Disposition=disposition)
    _same_parameters(message, "content-type")
    _same_parameters(message, "content-disposition")


@given(st.binary(max_size=60).map(lambda raw: raw.decode("ascii", "surrogateescape")))
@settings(max_examples=1000, deadline=None)
def test_parameters_with_bytes_outside_ascii_read_as_the_email_package_reads_them(raw: str) -> None:
    """Raw 8-bit bytes (surrogate escapes): the email package hands the field over as a
    Header whose text has U+FFFD for each; read the same way."""
    _same_parameters(_message(Content_Type="text/html; charset=" + raw + "; name=" + raw))


def test_a_missing_field_gives_failobj() -> None:
    message = _message(Subject="x")
    assert heading.params(message) is None
    assert heading.get_param(message, "charset", "none") == message.get_param("charset", "none") == "none"
    assert heading.get_filename(message, "none") == message.get_filename("none") == "none"


def test_broken_sections_give_a_value_where_the_email_package_raises() -> None:
    """``name*`` beside ``name*0``: the email package compares None with 0 (TypeError);
    a section number of 5,000 digits: ``int()`` refuses it (ValueError)."""
    both = _message(Content_Type="text/html; charset*=utf-8''x; charset*0=y")
    with pytest.raises(TypeError):
        both.get_param("charset")
    assert heading.get_param(both, "charset") == ("utf-8", "", "xy")
    huge = _message(Content_Type=f"text/html; title*{'9' * 5000}=b; title*2=a; title*{'0' * 4400}1=c")
    with pytest.raises(ValueError, match="digits"):
        huge.get_param("title")
    assert heading.get_param(huge, "title") == "cab"


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        (b"text/html; charset*=x; charset*0=y", ()),
        (b"text/html; charset*" + b"1" * 5000 + b"=x", ()),
    ],
    ids=["name*-beside-name*0", "5000-digit-section"],
)
def test_broken_sections_do_not_stop_the_rewrite(content_type: bytes, expected: tuple[str, ...]) -> None:
    """These raised out of rewrite_message (TypeError), or skipped the part as if the
    policy refused it (the ValueError of int())."""
    result = rewrite_message(b"Content-Type: " + content_type + b"\r\n\r\n<a href=x.html>", url="http://h/")
    assert result.output.endswith(b"<a href=http://h/x.html>")
    assert result.problems == expected


def test_a_multipart_boundary_from_sections_beside_a_bare_one() -> None:
    message = b'Content-Type: multipart/mixed; boundary*=b; boundary*0="=_a"\r\n\r\n--b=_a\r\n\r\nx\r\n--b=_a--\r\n'
    result = rewrite_message(message)
    assert [part.path for part in result.parts] == ["1", "1.1"]
    assert result.problems == ()


# --------------------------------------------------------------------------
# Encoded words
# --------------------------------------------------------------------------

WORD_PIECES = st.sampled_from(
    [
        "=?",
        "?=",
        "?",
        "=",
        "utf-8",
        "ISO-8859-1",
        "us-ascii*en",
        "?q?",
        "?Q?",
        "?b?",
        "?B?",
        "?x?",
        "_",
        "=41",
        "=c3=a9",
        "=4",
        "QUJD",
        "QQ",
        "Q",
        "w6k=",
        "!",
        "a",
        "http://h/",
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\r",
        "\x0b",
        "\x85",
        "\u2028",
        "\udcff",
    ]
)
ENCODED_WORDS = st.builds(
    lambda charset, encoding, text: f"=?{charset}?{encoding}?{text}?=",
    st.sampled_from(["utf-8", "iso-8859-1", "us-ascii", "", "x-unknown", "UTF-8"]),
    st.sampled_from(["q", "Q", "b", "B"]),
    st.sampled_from(["a", "caf=C3=A9", "a_b", "QUJD", "w6k", "", " ", "YQ==", "=?"]),
)
HEADERS = st.lists(st.one_of(WORD_PIECES, ENCODED_WORDS), max_size=12).map("".join)


def _same_decoding(text: str) -> None:
    status, expected = _stdlib(lambda: email.header.decode_header(text))
    if status == "raises":
        assert expected is email.errors.HeaderParseError
        with pytest.raises(email.errors.HeaderParseError):
            heading.decode_header(text)
        return
    assert heading.decode_header(text) == expected, text


@given(HEADERS)
@settings(max_examples=4000, deadline=None)
@example("=?utf-8?q?a?= =?utf-8?q?b?= c =?iso-8859-1?q?=E9?=\r\n =?utf-8?b?YQ?=")
@example("=?utf-8?q?a\n?= =?x?q?b?=")  # no "?=" on the line of its opening
@example("=?a\nb?q?c?=")  # a charset across lines: a word to the whole field, none to its lines
@example("=?utf-8?b?a?=")  # base64 that cannot be decoded
@example("=?utf-8?q?a?= =?utf-8?q? ?= =?utf-8?q?b?=")  # an encoded word of whitespace between two
def test_generated_encoded_words_decode_as_the_email_package_decodes_them(text: str) -> None:
    _same_decoding(text)


def test_header_url_reads_rfc2047_as_before() -> None:
    message = _message(Content_Location="=?utf-8?q?http://h/caf=C3=A9/?=\r\n =?iso-8859-1?q?=E9/?=")
    assert header_url(message, "content-location") == "http://h/café/é/"
    assert header_url(_message(Content_Location="=?utf-8?b?a?="), "content-location") == "=?utf-8?b?a?="
    assert header_url(_message(Content_Location="=?x-none?q?a?="), "content-location") == "=?x-none?q?a?="


def test_a_base64_word_that_cannot_be_decoded_does_not_stop_the_rewrite() -> None:
    """It raised HeaderParseError out of rewrite_message; the field is read as it is."""
    data = b"Content-Location: =?utf-8?b?a?=\r\nContent-Type: text/html\r\n\r\n<a href=x.html>"
    result = rewrite_message(data, url="http://h/")
    assert result.output.endswith(b"<a href=http://h/x.html>")


# --------------------------------------------------------------------------
# Charsets
# --------------------------------------------------------------------------


def _codec_names() -> list[str]:
    names = set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values())
    names |= {"utf-8", "UTF8", "ISO-8859-1", "Windows-1252", "us-ascii", "KOI8-R", "shift_jis", "GB2312", "x-unknown"}
    names |= {"unknown-8bit", "latin 1", "utf.8", "UTF--8", " utf-8 ", "utf-8*en", "iso8859_15", "mac-roman"}
    return sorted(names)


@pytest.mark.parametrize("name", _codec_names())
def test_a_charset_decodes_as_python_decodes_it(name: str) -> None:
    """Every name Python's codecs know is known (but punycode and idna), in any case and spelling."""
    for spelling in (name, name.upper(), name.replace("_", "-")):
        try:
            expected: object = b"caf\xc3\xa9".decode(spelling, "replace")
        except LookupError:
            expected = LookupError
        except (UnicodeError, TypeError):
            continue  # idna and the like refuse "replace"
        if codecs.lookup(spelling).name in ("punycode", "idna") if expected is not LookupError else False:
            expected = LookupError
        try:
            found: object = heading.decode_text(b"caf\xc3\xa9", spelling)
        except LookupError:
            found = LookupError
        except (UnicodeError, TypeError):
            continue
        assert found == expected, spelling


def test_unknown_charsets_are_not_kept_by_the_codec_registry() -> None:
    """Python keeps every charset name its codec search did not find (encodings._cache):
    a mailbox naming a distinct long charset in each message would grow without end."""
    cache = getattr(encodings, "_cache", None)
    if cache is None:
        pytest.skip("this Python keeps no such cache")
    before = len(cache)
    for number in range(200):
        name = f"x-{number}-" + "a" * 10_000
        with pytest.raises(LookupError):
            heading.decode_text(b"a", name)
        message = _message(Content_Type=f"text/plain; name*=x-{number}-''a%41")
        assert heading.get_filename(message) == "aA"
        assert header_url(_message(Content_Location=f"=?{name}?q?a?="), "content-location") == f"=?{name}?q?a?="
    assert len(cache) == before


def test_decoders_that_are_not_linear_are_not_used() -> None:
    word = "".join(chr(0x4E00 + number * 7 % 20_000) for number in range(50)).encode("punycode")
    with pytest.raises(LookupError, match="quadratic"):
        heading.decode_text(word, "punycode")
    message = _message(Content_Type="text/plain; name*=punycode''" + word.decode("ascii"))
    assert heading.get_filename(message) == word.decode("ascii")


# --------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILES)
def test_every_corpus_heading_reads_as_the_email_package_reads_it(name: str) -> None:
    path = shared_path("corpus", "mail", name)
    data = path.read_bytes()
    found = [message for _, message in iter_mbox(io.BytesIO(data))] if path.suffix == ".mbox" else [data]
    fields = 0
    for message in found:
        for part in find_message_links(message).parts:
            end, _ = heading_end(message, part.start, len(message))
            read = read_heading(message[part.start : end])
            for header in ("content-type", "content-disposition"):
                _same_parameters(read, header)
            for _, value in read.raw_items():
                _same_decoding(str(value))
                fields += 1
    assert fields


def test_the_email_package_s_header_value_parser_is_never_called() -> None:
    """The package reads headings with compat32 only: email._header_value_parser (the
    parser of the default policy, with its own costs) is not called."""
    import sys

    seen: list[str] = []

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "call" and "_header_value_parser" in frame.f_code.co_filename:  # type: ignore[attr-defined]
            seen.append(frame.f_code.co_name)  # type: ignore[attr-defined]

    data = (
        b"Subject: =?utf-8?q?a?= =?utf-8?q?b?=\r\nContent-Location: =?utf-8?q?http://h/?=\r\n"
        b'Content-Type: multipart/mixed; boundary="b"; a=b\r\n\r\n--b\r\n'
        b"Content-Type: text/html; charset*0*=utf-8''utf; charset*1=-8\r\n"
        b'Content-Disposition: inline; filename="a.html"\r\n\r\n<a href=x>\r\n--b--\r\n'
    )
    sys.setprofile(profile)
    try:
        result = rewrite_message(data)
    finally:
        sys.setprofile(None)
    assert result.output.count(b"http://h/x") == 1
    assert seen == []
