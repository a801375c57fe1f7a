"""What is inside a MIME heading field, read in time linear in its length.

The email package reads parameters and encoded words in quadratic time: ``_parseparam``
copies the rest of the field at every ``;`` and counts the quotes from the start of a
parameter again at every ``;`` inside it, and ``decode_header`` pops its words from the
front of a list, joins them by repeated concatenation and searches for an encoded word
that has no end once from every ``=?`` (a message with 1.6 MB of ``; a=b`` took 8.9 s,
400 KB of ``;`` in one quoted string 74 s, 800 KB of ``=?utf-8?q?a`` 198 s). The
functions here give the same results as the email package's functions they are named
after, which tests/test_heading_linear.py checks on generated headings and the corpus,
with three differences on input no mail holds:

- a parameter given both as ``name*`` and as ``name*0`` is read with ``name*`` first
  (the email package raises TypeError comparing None with 0);
- a continuation number of more than 4300 digits is compared as a number (``int()``
  raises ValueError);
- a charset whose decoder is not linear (punycode and idna, quadratic in their input),
  or whose name is not one of Python's own codecs, not ASCII or longer than 64
  characters, is an unknown charset (LookupError). A name is looked up only when it is
  one of Python's codecs: a codec lookup keeps every name it did not find, for good
  (``encodings._cache``), so an mbox whose messages named distinct megabyte charsets
  grew without end.
"""

from __future__ import annotations

import binascii
import codecs
import email.base64mime
import email.quoprimime
import email.utils
import encodings
import encodings.aliases
import pkgutil
import re
import urllib.parse
from collections.abc import Iterator
from email.errors import HeaderParseError
from email.message import Message
from functools import lru_cache

__all__ = [
    "collapse_rfc2231_value",
    "content_charset",
    "decode_header",
    "decode_text",
    "get_filename",
    "get_param",
    "params",
]

# A parameter's value: quoted, or an RFC 2231 (charset, language, quoted value).
Value = str | tuple[str | None, str | None, str]
# A parameter name with an RFC 2231 section number or charset mark (email.utils).
_CONTINUATION = re.compile(r"^(?P<name>\w+)\*((?P<num>[0-9]+)\*?)?$", re.ASCII)
_MISSING = object()
# A quote that opens or closes a quoted string, as _parseparam counts them: one not after a backslash.
_UNESCAPED_QUOTE = re.compile(r'(?<!\\)"')


# --------------------------------------------------------------------------
# Parameters: RFC 2045 §5.1, RFC 2231
# --------------------------------------------------------------------------


def _split_parameters(text: str) -> list[str]:
    """``email.message._parseparam(text)``: the field split at each ``;`` outside a quoted
    string, the name before the first ``=`` of each piece lower-cased, and spaces around
    it removed. A quote preceded by a backslash does not open or close a quoted string; a
    quoted string that never closes runs to the end of the field.

    The email package ends a piece at the first ``;`` with an even number of such quotes
    before it in the piece. Here each quote and each ``;`` is looked for once: the next
    quote is kept from piece to piece, and a ``;`` inside a quoted string is passed over
    by looking for the next one after the string's end.
    """
    pieces: list[str] = []
    text = ";" + text
    length = len(text)
    search = _UNESCAPED_QUOTE.search
    found = search(text)
    quote = found.start() if found else length  # the next unescaped quote (length: none)
    position = 0
    while position < length:  # text[position] is the ";" before a piece
        start = position + 1
        end = text.find(";", start)
        if end < 0:
            end = length
        while quote < end:  # a quoted string opens before that ";"
            found = search(text, quote + 1)
            if found is None:  # and never closes: the piece runs to the end
                end = quote = length
                break
            close = found.start()
            found = search(text, close + 1)
            quote = found.start() if found else length
            if end < close:
                end = text.find(";", close + 1)
                if end < 0:
                    end = length
        piece = text[start:end]
        if "=" in piece:
            name, _, value = piece.partition("=")
            piece = name.strip().lower() + "=" + value.strip()
        pieces.append(piece.strip())
        position = end
    return pieces


def _section(number: str | None) -> tuple[int, str]:
    """A sort key for a section number equal to ``int(number)``'s order, without
    ``int()`` (which refuses more than 4300 digits); no number sorts first."""
    if number is None:
        return (-1, "")
    digits = number.lstrip("0")
    return (len(digits), digits)


def _decode_params(pairs: list[tuple[str, str]]) -> list[tuple[str, Value]]:
    """``email.utils.decode_params(pairs)``: RFC 2231 sections joined in the order of
    their numbers, percent-decoded where marked, with their charset and language."""
    decoded: list[tuple[str, Value]] = [pairs[0]]
    sections: dict[str, list[tuple[tuple[int, str], str, bool]]] = {}
    for name, value in pairs[1:]:
        encoded = name.endswith("*")
        value = email.utils.unquote(value)
        match = _CONTINUATION.match(name)
        if match:
            sections.setdefault(match["name"], []).append((_section(match["num"]), value, encoded))
        else:
            decoded.append((name, f'"{email.utils.quote(value)}"'))
    for name, parts in sections.items():
        parts.sort()
        values = []
        extended = False
        for _, value, encoded in parts:
            if encoded:
                value = urllib.parse.unquote(value, encoding="latin-1")
                extended = True
            values.append(value)
        value = email.utils.quote("".join(values))
        if extended:
            charset, language, text = _decode_rfc2231(value)
            decoded.append((name, (charset, language, f'"{text}"')))
        else:
            decoded.append((name, f'"{value}"'))
    return decoded


def _decode_rfc2231(value: str) -> tuple[str | None, str | None, str]:
    parts = value.split("'", 2)
    if len(parts) <= 2:
        return None, None, value
    return parts[0], parts[1], parts[2]


def params(heading: Message, header: str = "content-type") -> list[tuple[str, Value]] | None:
    """The parameters of the first *header* field, values still quoted, as the email
    package's ``Message._get_params_preserve`` gives them; None without the field.

    >>> heading = Message()
    >>> heading["Content-Type"] = 'text/html; charset="utf-8"; title*0*=us-ascii\\'en\\'a%20; title*1=b'
    >>> params(heading)
    [('text/html', ''), ('charset', '"utf-8"'), ('title', ('us-ascii', 'en', '"a b"'))]
    """
    value = heading.get(header, _MISSING)
    if value is _MISSING:
        return None
    pairs = []
    for piece in _split_parameters(str(value)):
        name, equals, text = piece.partition("=")
        pairs.append((name.strip(), text.strip()) if equals else (piece.strip(), ""))
    return _decode_params(pairs)


def get_param(
    heading: Message, param: str, failobj: object = None, header: str = "content-type", unquote: bool = True
) -> object:
    """``heading.get_param(param, failobj, header, unquote)``, in linear time.

    >>> heading = Message()
    >>> heading["Content-Type"] = 'multipart/mixed; BOUNDARY="a;b"'
    >>> get_param(heading, "boundary"), get_param(heading, "boundary", unquote=False), get_param(heading, "x")
    ('a;b', '"a;b"', None)
    """
    found = params(heading, header)
    if found is None:
        return failobj
    wanted = param.lower()
    for name, value in found:
        if name.lower() == wanted:
            if not unquote:
                return value
            if isinstance(value, tuple):
                return value[0], value[1], email.utils.unquote(value[2])
            return email.utils.unquote(value)
    return failobj


def get_filename(heading: Message, failobj: object = None) -> object:
    """``heading.get_filename(failobj)``: the ``filename`` parameter of Content-Disposition,
    else the ``name`` parameter of Content-Type, RFC 2231 decoded."""
    filename = get_param(heading, "filename", _MISSING, "content-disposition")
    if filename is _MISSING:
        filename = get_param(heading, "name", _MISSING, "content-type")
    if filename is _MISSING:
        return failobj
    return collapse_rfc2231_value(filename).strip()  # type: ignore[arg-type]


def collapse_rfc2231_value(value: Value, errors: str = "replace", fallback_charset: str = "us-ascii") -> str:
    """``email.utils.collapse_rfc2231_value``, with the charset looked up by :func:`decode_text`."""
    if not isinstance(value, tuple) or len(value) != 3:
        return email.utils.unquote(value)
    charset, _, text = value
    raw = bytes(text, "raw-unicode-escape")
    try:
        return decode_text(raw, fallback_charset if charset is None else charset, errors)
    except LookupError:
        return email.utils.unquote(text)


# --------------------------------------------------------------------------
# Charsets
# --------------------------------------------------------------------------

# Decoders whose time grows with the square of their input (a 600 KB punycode word: 1.3 s).
_NOT_LINEAR = frozenset({"punycode", "idna"})
_LONGEST_NAME = 64  # IANA's longest charset name has 45 characters


@lru_cache(maxsize=1)
def _codec_modules() -> frozenset[str]:
    return frozenset(module.name for module in pkgutil.iter_modules(encodings.__path__))


@lru_cache(maxsize=256)
def _known(charset: str) -> bool:
    """Whether Python's codec search (``encodings.search_function``) may know *charset*
    (an ASCII name of at most 64 characters: the cache is bounded)."""
    name = encodings.normalize_encoding(charset).lower()
    aliases = encodings.aliases.aliases
    return name in aliases or name.replace(".", "_") in aliases or name in _codec_modules()


def decode_text(data: bytes, charset: str, errors: str = "replace") -> str:
    """``data.decode(charset, errors)``; LookupError for a charset with no codec, one
    whose decoder is not linear, and any name that is not one of Python's codecs.

    >>> decode_text(b"caf\\xe9", "ISO-8859-1"), decode_text(b"x", "latin_1")
    ('café', 'x')
    >>> decode_text(b"x", "punycode")
    Traceback (most recent call last):
    LookupError: not decoded as punycode: its decoder takes time quadratic in its input
    """
    # Python's codec search reads the name as encodings.normalize_encoding writes it (runs of
    # punctuation and characters that are not ASCII letters or digits dropped or made "_"):
    # "utf-8\ufffd" is UTF-8 to the email package, and so it is here.
    if len(charset) > _LONGEST_NAME or not _known(encodings.normalize_encoding(charset)):
        raise LookupError(f"unknown encoding: {charset[:_LONGEST_NAME]!r}")
    name = codecs.lookup(charset).name
    if name in _NOT_LINEAR:
        raise LookupError(f"not decoded as {name}: its decoder takes time quadratic in its input")
    return data.decode(charset, errors)


# --------------------------------------------------------------------------
# Encoded words: RFC 2047
# --------------------------------------------------------------------------

# The opening of an encoded word as email.header.ecre reads it: "=?", a charset up to the
# next "?", q or b, "?". The encoded text runs to the next "?=" on the same line.
_OPENING = re.compile(r"=\?([^?]*)\?([qQbB])\?")


def _encoded_words(text: str) -> Iterator[tuple[int, int, str, str, str]]:
    """(start, end, charset, encoding, encoded text) of each match of ``email.header.ecre``
    in *text*, as ``ecre.finditer`` finds them, in linear time.

    The regular expression looks for the end of an encoded word from every opening: an
    opening with no ``?=`` after it made it quadratic. Here the next ``?=`` and the next
    line break are each looked up once: the places asked about only move forward.
    """
    position = 0
    close = newline = -2  # the last answers: the next "?=" and the next "\n"
    while True:
        opening = _OPENING.search(text, position)
        if opening is None:
            return
        after = opening.end()
        if close != -1 and close < after:
            close = text.find("?=", after)
        if close == -1:  # no end after this opening, nor after any later one
            return
        if newline != -1 and newline < after:
            newline = text.find("\n", after)
        if newline != -1 and newline < close:  # "." does not match a line break
            position = opening.start() + 1
            continue
        yield opening.start(), close + 2, opening[1], opening[2], text[after:close]
        position = close + 2


def _header_words(header: str) -> list[tuple[str, str | None, str | None]]:
    """(text, encoding, charset) of each piece of *header*, line by line, as
    ``email.header.decode_header`` splits it: an encoded word (encoding "q" or "b", charset
    lower-cased) or the plain text between two (None, None), stripped at the start of a line."""
    words: list[tuple[str, str | None, str | None]] = []
    for line in header.splitlines():
        position = 0
        for start, end, charset, encoding, encoded in _encoded_words(line):
            plain = line[position:start]
            if not position:  # the first piece of the line
                plain = plain.lstrip()
            if plain:
                words.append((plain, None, None))
            words.append((encoded, encoding.lower(), charset.lower()))
            position = end
        plain = line[position:]
        if not position:
            plain = plain.lstrip()
        if plain:
            words.append((plain, None, None))
    return words


def _without_space_between_encoded_words(
    words: list[tuple[str, str | None, str | None]],
) -> list[tuple[str, str | None, str | None]]:
    """*words* but the whitespace between two encoded words (RFC 2047 §6.2: it is ignored)."""
    last = len(words) - 1
    return [
        word
        for index, word in enumerate(words)
        if not (1 <= index < last and words[index + 1][1] and words[index - 1][1] and word[0].isspace())
    ]


def _word_bytes(text: str, encoding: str | None) -> bytes:
    """The bytes of one piece: plain text as it is (one byte a character), an encoded word
    decoded by its encoding (RFC 2047 §4.2 "Q", §4.1 "B", missing base64 padding added)."""
    if encoding is None:
        return bytes(text, "raw-unicode-escape")
    if encoding == "q":
        return bytes(email.quoprimime.header_decode(text), "raw-unicode-escape")
    padding = len(text) % 4  # Postel's law: add missing padding
    if padding:
        text += "==="[: 4 - padding]
    try:
        return bytes(email.base64mime.decode(text))
    except binascii.Error:
        raise HeaderParseError("Base64 decoding error") from None


def decode_header(header: str) -> list[tuple[bytes | str, str | None]]:
    """``email.header.decode_header(header)`` for a string, in linear time: (bytes,
    charset) pairs, runs of one charset joined (plain text with spaces), or
    ``[(header, None)]`` when there is no encoded word. Raises HeaderParseError on a
    base64 word that cannot be decoded.

    >>> decode_header("=?utf-8?q?caf=C3=A9?= =?utf-8?b?IGF1?= lait")
    [(b'caf\\xc3\\xa9 au', 'utf-8'), (b' lait', None)]
    """
    if next(_encoded_words(header), None) is None:
        return [(header, None)]
    collapsed: list[tuple[bytes | str, str | None]] = []
    run: list[bytes] = []
    run_charset: str | None = None
    for text, encoding, charset in _without_space_between_encoded_words(_header_words(header)):
        word = _word_bytes(text, encoding)
        if run and charset != run_charset:
            collapsed.append(((b" " if run_charset is None else b"").join(run), run_charset))
            run = []
        run_charset = charset
        run.append(word)
    collapsed.append(((b" " if run_charset is None else b"").join(run), run_charset))
    return collapsed


def content_charset(heading: Message) -> str | None:
    """The Content-Type's charset parameter, RFC 2231 sections and encoding undone
    (``charset*=utf-8''x``), spaces stripped; None without one.

    >>> from email.message import Message
    >>> heading = Message(); heading["Content-Type"] = "text/html; charset*=us-ascii'en'ISO-8859-1"
    >>> content_charset(heading)
    'ISO-8859-1'
    """
    charset = get_param(heading, "charset")
    if isinstance(charset, tuple):
        charset = collapse_rfc2231_value(charset)
    return str(charset).strip() if charset else None
