"""A query in a document's legacy encoding, as the URL Standard encodes it.

URL Standard §4.4 "query state": a special URL's query (not ``ws:`` or ``wss:``) is encoded
with the document's encoding (HTML "encoding-parse a URL"), by *percent-encode after
encoding* (URL §1.3): the Encoding Standard's encoder for that encoding runs over the whole
query at once (ISO-2022-JP's carries state from one character to the next); each byte it
gives that is outside the percent-encode set stays as it is, every other byte is
percent-encoded, and a character the encoder cannot hold becomes ``%26%23`` + its code
point in decimal + ``%3B``.

The encoders are written here from the Encoding Standard's algorithms (§9-§14); the indexes
they read come from the standard's decoders that turbohtml ships (its ``whatwg-*`` codecs,
decoding only): each pointer's code point is what the decoder gives for its bytes. Python's
own codecs are not the standard's (they hold JIS X 0212 in EUC-JP, no IBM extensions,
another Big5 and gb18030), see docs/decisions.md.

>>> percent_encode_after_encoding("shift_jis", "\\u8868=\\u00a5", SPECIAL_QUERY_SET)
'%95\\\\=\\\\'
>>> percent_encode_after_encoding("iso-2022-jp", "\\u65e5a", SPECIAL_QUERY_SET)
'%1B$BF|%1B(Ba'
>>> percent_encode_after_encoding("windows-1252", "\\u20ac\\u65e5", SPECIAL_QUERY_SET)
'%80%26%2326085%3B'
"""

from __future__ import annotations

import bisect
import codecs
import re
import unicodedata
from collections.abc import Callable
from functools import cache, lru_cache

import webencodings
import webencodings.labels

__all__ = [
    "QUERY_SET",
    "SPECIAL_QUERY_SET",
    "encode_or_fail",
    "encode_query",
    "has_encoder",
    "percent_encode_after_encoding",
    "python_misreadings",
    "standard_reading",
    "whatwg_name",
]

# URL Standard §1.3: the ASCII bytes of each percent-encode set (every non-ASCII byte is in
# both). C0 control percent-encode set: C0 controls and above U+007E; the query set adds
# space, '"', "#", "<" and ">"; the special-query set adds "'".
QUERY_SET: frozenset[int] = frozenset([*range(0x20), 0x7F, 0x20, 0x22, 0x23, 0x3C, 0x3E])
SPECIAL_QUERY_SET: frozenset[int] = QUERY_SET | {0x27}

# Encoding Standard §9: the single-byte encodings, each with its index.
_SINGLE_BYTE = frozenset(
    {
        "ibm866",
        "iso-8859-2",
        "iso-8859-3",
        "iso-8859-4",
        "iso-8859-5",
        "iso-8859-6",
        "iso-8859-7",
        "iso-8859-8",
        "iso-8859-8-i",
        "iso-8859-10",
        "iso-8859-13",
        "iso-8859-14",
        "iso-8859-15",
        "iso-8859-16",
        "koi8-r",
        "koi8-u",
        "macintosh",
        "windows-874",
        "windows-1250",
        "windows-1251",
        "windows-1252",
        "windows-1253",
        "windows-1254",
        "windows-1255",
        "windows-1256",
        "windows-1257",
        "windows-1258",
        "x-mac-cyrillic",
    }
)
_MULTI_BYTE = frozenset({"gbk", "gb18030", "big5", "euc-jp", "iso-2022-jp", "shift_jis", "euc-kr", "x-user-defined"})
# Encoding Standard §4.3 "get an output encoding": these have no encoder, UTF-8 stands in.
_UTF_8 = frozenset({"utf-8", "utf-16be", "utf-16le", "replacement"})


@cache
def _by_codec() -> dict[str, str]:
    """Python codec name -> WHATWG encoding name, for the engines that carry a Python codec.
    Made at the first need, not on import: it looks up (and so imports) every codec, 5 ms
    that a run under the RFC rules never needs."""
    found: dict[str, str] = {}
    for name in sorted(set(webencodings.labels.LABELS.values())):
        encoding = webencodings.lookup(name)
        if encoding is not None:  # every name of the table is one
            found.setdefault(encoding.codec_info.name, encoding.name)
    return found


@lru_cache(maxsize=256)
def whatwg_name(codec: str) -> str | None:
    """The WHATWG encoding a Python *codec* (or a WHATWG label) stands for, lowercase.

    >>> whatwg_name("cp932"), whatwg_name("shift_jis"), whatwg_name("latin-1"), whatwg_name("x-unknown")
    ('shift_jis', 'shift_jis', 'windows-1252', None)
    """
    try:
        python = codecs.lookup(codec).name
    except LookupError:
        python = None
    by_codec = _by_codec()
    if python is not None and python in by_codec:
        return by_codec[python]
    for label in (codec, python):
        if label is not None:
            found = webencodings.lookup(label) or webencodings.lookup(label.replace("_", "-"))
            if found is not None:
                return found.name.lower()
    return None


def has_encoder(encoding: str) -> bool:
    """Whether *encoding* (a WHATWG name) has a legacy encoder here: not UTF-8, and not one
    whose output encoding is UTF-8."""
    return encoding in _SINGLE_BYTE or encoding in _MULTI_BYTE


# --------------------------------------------------------------------------
# Indexes (Encoding Standard §5), read from the standard's decoders
# --------------------------------------------------------------------------


def _decoder(encoding: str) -> Callable[[bytes], str]:
    """The Encoding Standard's decoder for *encoding*, as turbohtml ships it (replacement mode)."""
    import turbohtml.detect  # noqa: F401  (registers the whatwg-* codecs; needed only here)

    decode = codecs.lookup("whatwg-" + encoding).decode
    return lambda data: decode(data)[0]


def _one(text: str) -> int | None:
    """The code point of a decoder's output for one pointer, None for an error."""
    return ord(text) if len(text) == 1 and text != "\ufffd" else None


@cache
def _single_byte(encoding: str) -> dict[int, int]:
    """Index single-byte (§9) as an encoder reads it: code point -> its first pointer + 0x80."""
    decode = _decoder(encoding)
    table: dict[int, int] = {}
    for byte in range(0x80, 0x100):
        code_point = _one(decode(bytes((byte,))))
        if code_point is not None:
            table.setdefault(code_point, byte)
    return table


def _first_pointers(index: dict[int, int], skip: Callable[[int], bool] = lambda pointer: False) -> dict[int, int]:
    """Code point -> its *first* pointer (§5 "index pointer"), leaving out the pointers *skip* names."""
    first: dict[int, int] = {}
    for pointer in sorted(index):
        if not skip(pointer):
            first.setdefault(index[pointer], pointer)
    return first


@cache
def _jis0208() -> dict[int, int]:
    """Index jis0208: pointer -> code point, through the Shift_JIS decoder (§12.3.1), which
    reads every pointer but 8836-10715 (EUDC, no index entries) from the index."""
    decode = _decoder("shift_jis")
    index: dict[int, int] = {}
    for lead in (*range(0x81, 0xA0), *range(0xE0, 0xFD)):
        lead_offset = 0x81 if lead < 0xA0 else 0xC1
        for trail in (*range(0x40, 0x7F), *range(0x80, 0xFD)):
            pointer = (lead - lead_offset) * 188 + trail - (0x40 if trail < 0x7F else 0x41)
            if not 8836 <= pointer <= 10715 and (code_point := _one(decode(bytes((lead, trail))))) is not None:
                index[pointer] = code_point
    return index


@cache
def _jis0208_pointers() -> dict[int, int]:
    """§5 "index pointer" in index jis0208 (EUC-JP and ISO-2022-JP encoders)."""
    return _first_pointers(_jis0208())


@cache
def _shift_jis_pointers() -> dict[int, int]:
    """§5 "index Shift_JIS pointer": index jis0208 without pointers 8272-8835 (NEC's
    selection of IBM extensions: the IBM ones later in the index are used)."""
    return _first_pointers(_jis0208(), lambda pointer: 8272 <= pointer <= 8835)


def _two_byte_index(encoding: str, trails: tuple[range, ...], per_lead: int) -> dict[int, int]:
    """Pointer -> code point of a lead 0x81-0xFE encoding (gb18030, Big5, EUC-KR), through its decoder."""
    decode = _decoder(encoding)
    index: dict[int, int] = {}
    for lead in range(0x81, 0xFF):
        column = 0
        for span in trails:
            for trail in span:
                code_point = _one(decode(bytes((lead, trail))))
                if code_point is not None:
                    index[(lead - 0x81) * per_lead + column] = code_point
                column += 1
    return index


@cache
def _gb18030_pointers() -> dict[int, int]:
    """§5 "index pointer" in index gb18030 (trail bytes 0x40-0x7E and 0x80-0xFE, §10.2.1)."""
    return _first_pointers(_two_byte_index("gb18030", (range(0x40, 0x7F), range(0x80, 0xFF)), 190))


@cache
def _gb18030_ranges() -> tuple[list[int], list[int]]:
    """Index gb18030 ranges (§5), as the decoder's four-byte sequences give them: the code
    points and the pointers where a range starts, each list ascending."""
    decode = _decoder("gb18030")
    code_points: list[int] = []
    pointers: list[int] = []
    previous = -2
    for pointer in (*range(39420), 189000):
        text = decode(_four_bytes(pointer))  # one code point each (U+FFFD at 39417 included)
        if pointer == 7457:  # U+E7C7, §5's exception, read apart
            previous = -2
            continue
        code_point = ord(text)
        if code_point != previous + 1 or pointer == 189000:
            code_points.append(code_point)
            pointers.append(pointer)
        previous = code_point
    return code_points, pointers


@cache
def _big5_pointers() -> dict[int, int]:
    """§5 "index Big5 pointer": index Big5 from pointer (0xA1 - 0x81) x 157 on (no HKSCS
    extensions), the *last* pointer for six code points and the first for the others."""
    index = _two_byte_index("big5", (range(0x40, 0x7F), range(0xA1, 0xFF)), 157)
    first = _first_pointers(index, lambda pointer: pointer < (0xA1 - 0x81) * 157)
    for pointer in sorted(index):
        if pointer >= (0xA1 - 0x81) * 157 and index[pointer] in _BIG5_LAST:
            first[index[pointer]] = pointer
    return first


_BIG5_LAST = frozenset({0x2550, 0x255E, 0x2561, 0x256A, 0x5341, 0x5345})


@cache
def _euc_kr_pointers() -> dict[int, int]:
    """§5 "index pointer" in index EUC-KR (trail bytes 0x41-0xFE, §13.1.1)."""
    return _first_pointers(_two_byte_index("euc-kr", (range(0x41, 0xFF),), 190))


@cache
def _katakana() -> dict[int, int]:
    """Index ISO-2022-JP katakana (§5): halfwidth to fullwidth katakana as Unicode NFKC maps
    them, but U+FF9E and U+FF9F to U+309B and U+309C."""
    table = {code_point: ord(unicodedata.normalize("NFKC", chr(code_point))) for code_point in range(0xFF61, 0xFF9E)}
    table.update({0xFF9E: 0x309B, 0xFF9F: 0x309C})
    return table


# gb18030 encoder step 5 (§10.2.2): Private Use code points GB18030-2005 gave these bytes.
_GB18030_PUA = {
    0xE78D: b"\xa6\xd9",
    0xE78E: b"\xa6\xda",
    0xE78F: b"\xa6\xdb",
    0xE790: b"\xa6\xdc",
    0xE791: b"\xa6\xdd",
    0xE792: b"\xa6\xde",
    0xE793: b"\xa6\xdf",
    0xE794: b"\xa6\xec",
    0xE795: b"\xa6\xed",
    0xE796: b"\xa6\xf3",
    0xE81E: b"\xfe\x59",
    0xE826: b"\xfe\x61",
    0xE82B: b"\xfe\x66",
    0xE82C: b"\xfe\x67",
    0xE832: b"\xfe\x6d",
    0xE843: b"\xfe\x7e",
    0xE854: b"\xfe\x90",
    0xE864: b"\xfe\xa0",
}


# --------------------------------------------------------------------------
# Encoders: one handler per code point (bytes, or the int of an error)
# --------------------------------------------------------------------------


def _gb18030(code_point: int, is_gbk: bool) -> bytes | int:
    """gb18030 encoder (§10.2.2); with *is_gbk*, GBK's (§10.1.2)."""
    if code_point == 0xE5E5:
        return code_point
    if is_gbk and code_point == 0x20AC:
        return b"\x80"
    if code_point in _GB18030_PUA:
        return _GB18030_PUA[code_point]
    pointer = _gb18030_pointers().get(code_point)
    if pointer is not None:
        lead, trail = divmod(pointer, 190)
        return bytes((lead + 0x81, trail + (0x40 if trail < 0x3F else 0x41)))
    if is_gbk:
        return code_point
    # §5 "index gb18030 ranges pointer"
    if code_point == 0xE7C7:
        pointer = 7457
    else:
        starts, pointers = _gb18030_ranges()
        at = bisect.bisect_right(starts, code_point) - 1
        pointer = pointers[at] + code_point - starts[at]
    return _four_bytes(pointer)


def _four_bytes(pointer: int) -> bytes:
    """gb18030 encoder steps 10-16 (§10.2.2): a four-byte pointer's bytes."""
    rest, fourth = divmod(pointer, 10)
    rest, third = divmod(rest, 126)
    first, second = divmod(rest, 10)
    return bytes((first + 0x81, second + 0x30, third + 0x81, fourth + 0x30))


def _big5(code_point: int) -> bytes | int:
    """Big5 encoder (§11.1.2)."""
    pointer = _big5_pointers().get(code_point)
    if pointer is None:
        return code_point
    lead, trail = divmod(pointer, 157)
    return bytes((lead + 0x81, trail + (0x40 if trail < 0x3F else 0x62)))


def _euc_jp(code_point: int) -> bytes | int:
    """EUC-JP encoder (§12.1.2): JIS X 0208 only (index jis0212 is the decoder's alone)."""
    if code_point == 0xA5:
        return b"\x5c"
    if code_point == 0x203E:
        return b"\x7e"
    if 0xFF61 <= code_point <= 0xFF9F:
        return bytes((0x8E, code_point - 0xFF61 + 0xA1))
    if code_point == 0x2212:
        code_point = 0xFF0D
    pointer = _jis0208_pointers().get(code_point)
    if pointer is None:
        return code_point
    lead, trail = divmod(pointer, 94)
    return bytes((lead + 0xA1, trail + 0xA1))


def _shift_jis(code_point: int) -> bytes | int:
    """Shift_JIS encoder (§12.3.2)."""
    if code_point == 0x80:
        return b"\x80"
    if code_point == 0xA5:
        return b"\x5c"
    if code_point == 0x203E:
        return b"\x7e"
    if 0xFF61 <= code_point <= 0xFF9F:
        return bytes((code_point - 0xFF61 + 0xA1,))
    if code_point == 0x2212:
        code_point = 0xFF0D
    pointer = _shift_jis_pointers().get(code_point)
    if pointer is None:
        return code_point
    lead, trail = divmod(pointer, 188)
    return bytes((lead + (0x81 if lead < 0x1F else 0xC1), trail + (0x40 if trail < 0x3F else 0x41)))


def _euc_kr(code_point: int) -> bytes | int:
    """EUC-KR encoder (§13.1.2)."""
    pointer = _euc_kr_pointers().get(code_point)
    if pointer is None:
        return code_point
    lead, trail = divmod(pointer, 190)
    return bytes((lead + 0x81, trail + 0x41))


def _x_user_defined(code_point: int) -> bytes | int:
    """x-user-defined encoder (§14.5.2)."""
    return bytes((code_point - 0xF780 + 0x80,)) if 0xF780 <= code_point <= 0xF7FF else code_point


_STATELESS: dict[str, Callable[[int], bytes | int]] = {
    "gb18030": lambda code_point: _gb18030(code_point, False),
    "gbk": lambda code_point: _gb18030(code_point, True),
    "big5": _big5,
    "euc-jp": _euc_jp,
    "shift_jis": _shift_jis,
    "euc-kr": _euc_kr,
    "x-user-defined": _x_user_defined,
}

_ASCII, _ROMAN, _JIS0208 = 0, 1, 2
_TO_ASCII, _TO_ROMAN, _TO_JIS0208 = b"\x1b(B", b"\x1b(J", b"\x1b$B"


def _iso_2022_jp(text: str) -> list[bytes | int]:
    """ISO-2022-JP encoder (§12.2.2) over all of *text*, its state carried from one code
    point to the next and back to ASCII at the end (end-of-queue)."""
    out: list[bytes | int] = []
    state = _ASCII
    for char in text:
        code_point = ord(char)
        if state != _JIS0208 and code_point in (0x0E, 0x0F, 0x1B):
            out.append(0xFFFD)  # step 3: U+FFFD rather than the code point, against attacks
            continue
        if code_point < 0x80 and (state == _ASCII or (state == _ROMAN and code_point not in (0x5C, 0x7E))):
            out.append(bytes((code_point,)))
            continue
        if state == _ROMAN and code_point in (0xA5, 0x203E):
            out.append(b"\x5c" if code_point == 0xA5 else b"\x7e")
            continue
        if code_point < 0x80:
            out += (_TO_ASCII, bytes((code_point,)))
            state = _ASCII
            continue
        if code_point in (0xA5, 0x203E):
            out += (_TO_ROMAN, b"\x5c" if code_point == 0xA5 else b"\x7e")
            state = _ROMAN
            continue
        if code_point == 0x2212:
            code_point = 0xFF0D
        if 0xFF61 <= code_point <= 0xFF9F:
            code_point = _katakana()[code_point]
        pointer = _jis0208_pointers().get(code_point)
        if pointer is None:
            if state == _JIS0208:  # step 11.1: back to ASCII, so that the error is written in ASCII
                out.append(_TO_ASCII)
                state = _ASCII
            out.append(code_point)
            continue
        if state != _JIS0208:
            out.append(_TO_JIS0208)
            state = _JIS0208
        lead, trail = divmod(pointer, 94)
        out.append(bytes((lead + 0x21, trail + 0x21)))
    if state != _ASCII:
        out.append(_TO_ASCII)
    return out


def encode_or_fail(encoding: str, text: str) -> list[bytes | int]:
    """The bytes *encoding*'s encoder gives for *text* (scalar values), and the code point of
    each error in its place (Encoding Standard "encode or fail", run until the end, one
    encoder instance throughout).

    >>> encode_or_fail("euc-jp", "\\u2460\\u4e02")  # NEC row 13 yes, JIS X 0212 no
    [b'\\xad\\xa1', 19970]
    """
    if encoding == "iso-2022-jp":
        return _iso_2022_jp(text)
    handler = _STATELESS.get(encoding)
    if handler is None:
        if encoding not in _SINGLE_BYTE:
            raise LookupError(f"no legacy encoder for {encoding!r}")
        table = _single_byte(encoding)
        return [
            bytes((ord(char),)) if char < "\x80" else (bytes((table[ord(char)],)) if ord(char) in table else ord(char))
            for char in text
        ]
    return [bytes((ord(char),)) if char < "\x80" else handler(ord(char)) for char in text]


def percent_encode_after_encoding(encoding: str, text: str, percent_encode_set: frozenset[int]) -> str:
    """URL Standard §1.3 "percent-encode after encoding": each byte of the encoder's output
    that is ASCII and outside *percent_encode_set* as it is, other bytes percent-encoded,
    and ``%26%23`` N ``%3B`` for each code point N the encoder cannot hold."""
    out: list[str] = []
    for piece in encode_or_fail(encoding, text):
        if isinstance(piece, int):
            out.append(f"%26%23{piece}%3B")
            continue
        for byte in piece:
            out.append(chr(byte) if byte < 0x80 and byte not in percent_encode_set else f"%{byte:02X}")
    return "".join(out)


# --------------------------------------------------------------------------
# The characters a browser read, where Python's codec read others
# --------------------------------------------------------------------------

_ESCAPED_RUN = re.compile("[\udc00-\udcff]+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _every_character_sequence(encoding: str) -> list[bytes]:
    """Every byte sequence that may be one character in *encoding*: each byte from 0x80 in a
    single-byte encoding; each JIS X 0208 pair after its escape in ISO-2022-JP; otherwise each
    byte from 0x80 and each pair with a lead from 0x81, and the three-byte JIS X 0212
    sequences of EUC-JP and the four-byte sequences of gb18030 up to the end of the BMP."""
    if encoding in _SINGLE_BYTE or encoding == "x-user-defined":
        return [bytes((byte,)) for byte in range(0x80, 0x100)]
    if encoding == "iso-2022-jp":
        return [b"\x1b$B" + bytes((lead, trail)) for lead in range(0x21, 0x7F) for trail in range(0x21, 0x7F)]
    sequences = [bytes((byte,)) for byte in range(0x80, 0x100)]
    sequences += [bytes((lead, trail)) for lead in range(0x81, 0x100) for trail in range(0x40, 0x100)]
    if encoding == "euc-jp":  # JIS X 0212, three bytes
        sequences += [bytes((0x8F, lead, trail)) for lead in range(0xA1, 0xFF) for trail in range(0xA1, 0xFF)]
    if encoding == "gb18030":  # four bytes, up to the end of the BMP
        sequences += [_four_bytes(pointer) for pointer in range(39420)]
    return sequences


@lru_cache(maxsize=64)
def python_misreadings(encoding: str, codec: str) -> dict[int, str]:
    """Character -> character: where *codec* (Python's) reads the bytes it writes for a
    character as that character, and the standard's decoder as another one (U+FFFD where
    the standard reads an error). For ``str.translate`` over text decoded by *codec*: one
    character for one, so every offset holds.

    >>> hex(ord(python_misreadings("euc-jp", "euc_jp")[0x301C]))  # 0xA1 0xC1: WAVE DASH to Python
    '0xff5e'
    """
    decode = _decoder(encoding)
    seen: set[str] = set()
    table: dict[int, str] = {}
    for data in _every_character_sequence(encoding):
        try:
            char = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if len(char) != 1 or char in seen or char < "\x80":
            continue
        seen.add(char)
        read = decode(char.encode(codec))
        if len(read) == 1 and read != char:  # U+FFFD included: the browser read an error there
            table[ord(char)] = read
    return table


def standard_reading(text: str, encoding: str) -> str:
    """*text*, decoded from a document in *encoding* by Python's codec, with each run of bytes
    that codec could not read (kept as U+DC00 + the byte) read by the standard's decoder, as a
    browser reads them; any other lone surrogate is U+FFFD (a browser's strings hold scalar
    values). Characters Python reads otherwise than the standard are the document's business
    (:func:`python_misreadings`, applied where the text is decoded).

    >>> standard_reading("\\u2460\\udcad\\udca1", "euc-jp")
    '①①'
    """
    if _ESCAPED_RUN.search(text) is not None:
        decode = _decoder(encoding)
        text = _ESCAPED_RUN.sub(lambda run: decode(bytes(ord(char) - 0xDC00 for char in run.group())), text)
    return _LONE_SURROGATE.sub("\ufffd", text)


# --------------------------------------------------------------------------
# The query of a reference
# --------------------------------------------------------------------------

_SPECIAL_WITH_DOCUMENT_ENCODING = frozenset({"http", "https", "ftp", "file"})
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):").match


def encode_query(reference: str, encoding: str, base: str | None) -> str:
    """*reference* with its query encoded as the URL Standard's parser encodes it in a
    document in *encoding*, when that differs from UTF-8: only
    for a URL that is special and not ``ws:``/``wss:`` (§4.4 "query state" step 1). The
    rest is left to the parser, which gives the same URL for what is returned.

    >>> encode_query("a?q=\\u00e9#\\u00e9", "windows-1252", "http://h/")
    'a?q=%E9#é'
    >>> encode_query("ws://h/?\\u00e9", "windows-1252", None)
    'ws://h/?é'
    """
    if "?" not in reference or not has_encoder(encoding):
        return reference
    # §4.4 basic URL parser, steps 1-3: leading and trailing C0 controls and spaces, and every
    # tab and newline, are removed before anything is read.
    stripped = _TAB_OR_NEWLINE.sub("", reference.strip(_C0_OR_SPACE))
    question = stripped.find("?")
    hash_mark = stripped.find("#")
    if question < 0 or 0 <= hash_mark < question:
        return reference
    end = len(stripped) if hash_mark < 0 else hash_mark
    query = stripped[question + 1 : end]
    if query.isascii() and not (encoding == "iso-2022-jp" and ("\x0e" in query or "\x0f" in query or "\x1b" in query)):
        return reference  # the encoder gives every ASCII byte as it is
    scheme = _SCHEME(stripped) or (_SCHEME(base) if base else None)
    if scheme is None or scheme.group(1).lower() not in _SPECIAL_WITH_DOCUMENT_ENCODING:
        return reference
    query = standard_reading(query, encoding)
    return stripped[: question + 1] + percent_encode_after_encoding(encoding, query, SPECIAL_QUERY_SET) + stripped[end:]
