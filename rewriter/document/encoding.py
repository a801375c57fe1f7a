"""Find a document's encoding as browsers do, and move between its bytes and its text.

The engines work on text but write bytes: every edit is made to the original bytes,
at the byte offsets of the text it replaces, so no byte outside an edit changes.

>>> sniff(b'<meta charset="shift_jis"><p>x')
Sniffed(codec='cp932', label='shift_jis', bom=b'', source='meta')
>>> sniff(b'\\xef\\xbb\\xbf<p>x').source
'bom'
"""

from __future__ import annotations

import codecs
import operator
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

import webencodings

from rewriter.document.speedups import str_argument, twin

__all__ = [
    "ESCAPE",
    "ByteMap",
    "Sniffed",
    "by_default",
    "declared_encoding",
    "decode",
    "encode_url_text",
    "encoding_named",
    "errors_for",
    "sniff",
    "split",
    "utf8_offsets",
    "utf8_splice",
]

ESCAPE = "rewriter-escape"


def _escape(error: UnicodeError) -> tuple[str, int]:
    """Bytes a codec cannot read become U+DC00 + byte, one code point each, and back.

    Like ``surrogateescape``, but for every byte value: an unreadable run can hold
    bytes below 0x80 (a broken ISO-2022-JP sequence such as ``1B 24 42 78``), which
    ``surrogateescape`` refuses, and the document must still come back byte for byte.
    UTF-16 uses ``surrogatepass`` instead (:func:`errors_for`).
    """
    if isinstance(error, UnicodeDecodeError):
        bad = error.object[error.start : error.end]
        return "".join(chr(0xDC00 + byte) for byte in bad), error.end
    if isinstance(error, UnicodeEncodeError):
        chars = error.object[error.start : error.end]
        if all("\udc00" <= char <= "\udcff" for char in chars):
            return bytes(ord(char) - 0xDC00 for char in chars), error.end  # type: ignore[return-value]
    raise error


codecs.register_error(ESCAPE, _escape)


def errors_for(codec: str) -> str:
    """The error handler that keeps *codec*'s text mapped to the exact bytes.

    UTF-16 encoders take no one-byte replacement, but ``surrogatepass`` round-trips
    a lone surrogate code unit there; an odd last byte is set aside (:func:`split`).
    """
    return "surrogatepass" if codec.startswith("utf-16") else ESCAPE


def split(data: bytes, sniffed: Sniffed) -> tuple[bytes, bytes]:
    """The bytes after the BOM that hold text, and a trailing odd byte of UTF-16, if any."""
    body = data[len(sniffed.bom) :]
    if sniffed.codec.startswith("utf-16") and len(body) % 2:
        return body[:-1], body[-1:]
    return body, b""


# WHATWG Encoding: the BOM wins over every label (§4 "decode").
BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16le"), (codecs.BOM_UTF16_BE, "utf-16be"))

# The Python codecs of the Encoding Standard's single-byte encodings (§9): each byte one character.
_SINGLE_BYTE = frozenset(
    {
        "cp866", "cp874", "cp1250", "cp1251", "cp1252", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258",
        "iso8859-2", "iso8859-3", "iso8859-4", "iso8859-5", "iso8859-6", "iso8859-7", "iso8859-8", "iso8859-10",
        "iso8859-13", "iso8859-14", "iso8859-15", "iso8859-16", "koi8-r", "koi8-u", "mac-cyrillic", "mac-roman",
    }
)  # fmt: skip

# Python codecs whose encoding of a string is the concatenation of the encodings of
# its pieces, so that text offsets can be turned into byte offsets piece by piece.
_STATELESS_MULTIBYTE = {
    "utf-8",
    "utf-16-le",
    "utf-16-be",
    "shift_jis",
    "cp932",
    "euc_jp",
    "euc_kr",
    "gbk",
    "gb18030",
    "big5",
    "big5hkscs",
}


class Sniffed(NamedTuple):
    """The encoding chosen for a document and what chose it."""

    codec: str  # a Python codec name
    label: str  # the WHATWG encoding name
    bom: bytes  # the byte order mark the document starts with, if any
    source: str  # "bom", "transport", "meta" (a declaration in the document), "utf-8" (valid), "default"


def lookup(label: str) -> webencodings.Encoding | None:
    """WHATWG "get an encoding" (Encoding §4.2), for Python: x-user-defined has no Python
    codec, so it reads as windows-1252, which reads ASCII alike; the escape handler keeps
    every other byte as it is."""
    encoding = webencodings.lookup(label.strip())
    if encoding is not None and encoding.name == "x-user-defined":
        return webencodings.lookup("windows-1252")
    return encoding


def python_codec(label: str | None) -> str:
    """The Python codec of the encoding *label* names (a tree's declared encoding), UTF-8 when
    there is none or Python knows no such codec.

    >>> python_codec("Shift_JIS"), python_codec(None), python_codec("no-such")
    ('shift_jis', 'utf-8', 'utf-8')
    """
    if not label:
        return "utf-8"
    try:
        return codecs.lookup(label).name
    except LookupError:
        return "utf-8"


def encoding_named(name: str) -> webencodings.Encoding:
    """The Encoding Standard's encoding called *name* (one of its own names: always found)."""
    encoding = webencodings.lookup(name)
    assert encoding is not None, name
    return encoding


def sniffed(encoding: webencodings.Encoding, bom: bytes, source: str) -> Sniffed:
    """The :class:`Sniffed` record of *encoding*, found by *source*."""
    return Sniffed(encoding.codec_info.name, encoding.name, bom, source)


def _whatwg(label: str | None) -> webencodings.Encoding | None:
    encoding = lookup(label) if label else None
    # HTML §13.2.3.3: a declared UTF-16 is read as UTF-8.
    if encoding is not None and encoding.name.lower() in ("utf-16le", "utf-16be"):
        return webencodings.lookup("utf-8")
    return encoding


# bs4's patterns (bs4.dammit, 4.12-4.15): an XML declaration's encoding at the very start,
# else the first <meta ... charset=...>, which also finds http-equiv's content="...; charset=...".
_XML_DECLARATION = re.compile(rb"^\s*<\?.*encoding=['\"](.*?)['\"].*\?>", re.IGNORECASE)
_META_CHARSET = re.compile(rb"<\s*meta[^>]+charset\s*=\s*[\"']?([^>]*?)[ /;'\">]", re.IGNORECASE)


def declared_encoding(data: bytes) -> str | None:
    """The encoding *data* declares, lowercased, as bs4's
    ``EncodingDetector.find_declared_encoding(data, is_html=True, search_entire_document=True)``
    finds it (tests hold the two equal), without bs4's package import (0.1 s with its tree
    builders and soupsieve, 12 ms without them).

    >>> declared_encoding(b'<html><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">')
    'shift_jis'
    """
    match = _XML_DECLARATION.search(data) or _META_CHARSET.search(data)
    if match is None or not match.group(1):
        return None
    return match.group(1).decode("ascii", "replace").lower()


def sniff(data: bytes, transport: str | None = None) -> Sniffed:
    """The encoding a browser would use for *data*, given a transport charset.

    Order (HTML §13.2.3): the byte order mark, the transport charset (an HTTP or MIME
    ``charset``), then a ``<meta charset>`` / ``http-equiv`` declaration. Browsers look
    only in the first 1024 bytes; saved pages often declare later, so the whole
    document is searched (:func:`declared_encoding`), the first 1024 bytes winning.
    Without any of these: UTF-8 when the bytes are valid UTF-8, else windows-1252,
    the usual browser default.
    """
    for bom, name in BOMS:
        if data.startswith(bom):
            return sniffed(encoding_named(name), bom, "bom")
    if transport and (transport_encoding := lookup(transport)) is not None:
        return sniffed(transport_encoding, b"", "transport")
    encoding = _whatwg(declared_encoding(data[:1024]) or declared_encoding(data))
    if encoding is not None:
        return sniffed(encoding, b"", "meta")
    return by_default(data)


def by_default(data: bytes) -> Sniffed:
    """With nothing declared (HTML and CSS alike): UTF-8 if the bytes are valid UTF-8, else
    windows-1252, the browsers' default."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return sniffed(encoding_named("windows-1252"), b"", "default")
    _DECODED[0] = (data, text)  # decode_checked takes it: the document is not decoded twice
    return Sniffed("utf-8", "UTF-8", b"", "utf-8")


# The last document by_default found valid UTF-8, with its text (one slot: a run reads its
# documents one by one; a bytes object never changes, so its identity says it is the same).
_DECODED: list[tuple[bytes, str] | None] = [None]


def decode_checked(data: bytes, sniffed: Sniffed) -> tuple[str, bool]:
    """:func:`decode`, and whether every byte was readable: then the text holds no lone
    surrogate made from an unreadable byte (a strict decode fails at the first one)."""
    body = split(data, sniffed)[0]
    decoded = _DECODED[0]
    if decoded is not None:
        _DECODED[0] = None
        if decoded[0] is body and sniffed.codec == "utf-8":
            return decoded[1], True
    try:
        return body.decode(sniffed.codec), True
    except UnicodeDecodeError:
        return body.decode(sniffed.codec, errors_for(sniffed.codec)), False


def decode(data: bytes, sniffed: Sniffed) -> str:
    """The text of *data* after its BOM; bytes the codec cannot read become lone surrogates.

    Every unreadable byte becomes one code point (see :data:`ESCAPE`), so the text
    maps back to the exact bytes.
    """
    return split(data, sniffed)[0].decode(sniffed.codec, errors_for(sniffed.codec))


class ByteMap:
    """Text offsets to byte offsets for one decoded document.

    >>> text = "aé<b>"
    >>> ByteMap(text, text.encode("utf-8"), "utf-8").byte_offsets([0, 2, 5])
    [0, 3, 6]
    """

    __slots__ = ("_codec", "_data", "_errors", "_exact", "_identity", "_text", "_utf8")

    def __init__(self, text: str, data: bytes, codec: str, errors: str | None = None) -> None:
        self._text = text
        self._data = data
        self._codec = codec
        self._errors = errors or errors_for(codec)
        # A single-byte encoding reads each byte as one character (an unreadable one too, with
        # ESCAPE): offsets are the same, with nothing to check. Otherwise piecewise encoding
        # is exact when the whole text encodes back to the bytes and the codec carries no
        # state from one piece to the next; with as many characters as bytes, offsets are the
        # same. UTF-8 read with ESCAPE always encodes back to the same bytes.
        name = codecs.lookup(codec).name
        if name in _SINGLE_BYTE and self._errors == ESCAPE and len(text) == len(data):
            self._identity = self._exact = True
        else:
            try:
                roundtrip = (codec == "utf-8" and self._errors == ESCAPE) or text.encode(codec, self._errors) == data
            except UnicodeError:  # a stateful codec (ISO-2022-JP) can decode what it cannot encode back
                roundtrip = False
            self._identity = roundtrip and len(text) == len(data)
            self._exact = roundtrip and (self._identity or name in _STATELESS_MULTIBYTE)
        self._utf8 = name == "utf-8" and self._errors in (ESCAPE, "surrogatepass")

    @property
    def utf8(self) -> bool:
        """Whether the bytes are UTF-8 read with :data:`ESCAPE` or ``surrogatepass``:
        :func:`utf8_offsets` and :func:`utf8_splice` can map them."""
        return self._utf8

    def byte_offsets(self, offsets: list[int]) -> list[int]:
        """The byte offset of each text offset (*offsets* in ascending order)."""
        if not self._exact:
            return self._by_decoding(offsets)
        if self._identity:
            return list(offsets)
        if self._utf8:
            return utf8_offsets(self._text, offsets, self._errors == ESCAPE)
        return _encoded_offsets(self._text, offsets, self._codec, self._errors)

    def _by_decoding(self, offsets: list[int]) -> list[int]:
        """Slow and always exact: decode byte by byte, noting where each character starts."""
        decoder = codecs.getincrementaldecoder(self._codec)(self._errors)
        data = self._data
        starts: list[int] = []  # the byte offset at which each character starts
        pending = 0  # the first byte not yet part of a character
        for index in range(len(data)):
            produced = len(decoder.decode(data[index : index + 1]))
            if produced:
                starts.append(pending)
                starts.extend([index] * (produced - 1))  # a stateful codec may emit several at once
                pending = index + 1
        starts.extend([pending] * len(decoder.decode(b"", final=True)))
        starts.append(len(data))
        return [starts[min(offset, len(starts) - 1)] for offset in offsets]


def _encoded_offsets(text: str, offsets: Sequence[int], codec: str, errors: str) -> list[int]:
    """The length of ``text[:offset].encode(codec, errors)`` for each of *offsets*, encoding
    each piece once; ValueError for offsets that descend or pass the end of the text,
    TypeError for one that is no integer (an ``__index__`` will do)."""
    result: list[int] = []
    previous_text = previous_byte = 0
    for offset in offsets:
        offset = operator.index(offset)
        if offset < previous_text or offset > len(text):
            raise ValueError("offsets must be ascending and within the text")
        previous_byte += len(text[previous_text:offset].encode(codec, errors))
        previous_text = offset
        result.append(previous_byte)
    return result


@twin
def utf8_offsets(text: str, offsets: Sequence[int], escaped: bool) -> list[int]:
    """The UTF-8 byte offset of each of *offsets* (ascending character offsets of *text*):
    ``len(text[:offset].encode("utf-8", errors))``, errors being :data:`ESCAPE` when *escaped*
    (a lone surrogate U+DC00-U+DCFF is one byte; any other raises UnicodeEncodeError) and
    ``surrogatepass`` otherwise (three bytes). ValueError for offsets that descend or pass
    the end of the text.

    >>> utf8_offsets("aé€😀", [0, 1, 2, 3, 4], False)
    [0, 1, 3, 6, 10]
    """
    return _encoded_offsets(str_argument(text), offsets, "utf-8", ESCAPE if escaped else "surrogatepass")


@twin
def utf8_splice(
    text: str, body: bytes, edits: Sequence[tuple[int, int, str]], escaped: bool, encode: Callable[[str], bytes]
) -> bytes:
    """*body*, the UTF-8 bytes *text* was decoded from (with :data:`ESCAPE` when *escaped*, else
    ``surrogatepass``), with *edits* made: each ``(start, end, new text)`` a span of *text*,
    taken in order of (start, end), as given among equals; an edit that starts before the
    last one kept ends is left out. Each new text is written as ``encode`` gives it, an ASCII
    one as itself. ValueError for an offset outside the text (or a surrogate the errors
    cannot write: UnicodeEncodeError); TypeError for an edit that is not (int, int, str), a
    *text* that is no str, a *body* or an encoded text that is no bytes. *edits* is read once,
    into a list of its own, before ``encode`` is first called: what ``encode`` does to it
    changes nothing.

    >>> utf8_splice("é<a href=x>", "é<a href=x>".encode(), [(9, 9, "http://h/")], False, str.encode)
    b'\\xc3\\xa9<a href=http://h/x>'
    """
    text = str_argument(text)
    if not isinstance(body, bytes):
        raise TypeError(f"utf8_splice: body is bytes, not {type(body).__name__}")
    escaped = bool(escaped)
    checked: list[tuple[int, int, str]] = []
    for edit in tuple(edits):
        if not (isinstance(edit, tuple) and len(edit) == 3 and isinstance(edit[2], str)):
            raise TypeError("an edit is (start, end, new text)")
        checked.append((operator.index(edit[0]), operator.index(edit[1]), edit[2]))
    ordered = sorted(checked, key=lambda edit: (edit[0], edit[1]))
    positions = sorted({position for edit in ordered for position in edit[:2]})
    mapped = dict(zip(positions, utf8_offsets(text, positions, escaped), strict=True))
    pieces: list[bytes] = []
    last = 0
    for start, end, new in ordered:
        byte_start, byte_end = mapped[start], mapped[end]
        if byte_start < last:
            continue  # edits never overlap; should one, the first stands
        encoded = new.encode("ascii") if new.isascii() else encode(new)
        if not isinstance(encoded, bytes):
            raise TypeError(f"utf8_splice: encode gives bytes, not {type(encoded).__name__}")
        pieces += (body[last:byte_start], encoded)
        last = byte_end
    pieces.append(body[last:])
    return b"".join(pieces)


def encode_url_text(text: str, codec: str, errors: str | None = None) -> bytes:
    """*text* in the document's encoding; what it cannot represent is percent-encoded as UTF-8.

    >>> encode_url_text("http://h/é€", "iso-8859-1")
    b'http://h/\\xe9%E2%82%AC'
    """
    errors = errors or errors_for(codec)
    try:
        return text.encode(codec, errors)
    except UnicodeEncodeError:
        pass
    out = bytearray()
    for char in text:
        try:
            out += char.encode(codec, errors)
        except UnicodeEncodeError:
            out += "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass")).encode(codec)
    return bytes(out)
