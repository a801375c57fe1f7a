"""Undo a MIME part's Content-Transfer-Encoding, and redo it changing as few bytes as possible.

The MIME engine rewrites URLs in a part's decoded body, then splices the re-encoded body
back into the message. :func:`encode` keeps every encoded byte whose decoded content did
not change: for quoted-printable, the unchanged lines and even the unchanged soft-wrapped
pieces of a changed line keep their original bytes.

>>> body = b'<a href=3D"a.html">A</a>\\r\\n<p>long line, soft=\\r\\n-wrapped</p>'
>>> decode(body, "quoted-printable")
b'<a href="a.html">A</a>\\r\\n<p>long line, soft-wrapped</p>'
>>> encode(body, "Quoted-Printable", b'<a href="http://x/a.html">A</a>\\r\\n<p>long line, soft-wrapped</p>')
b'<a href=3D"http://x/a.html">A</a>\\r\\n<p>long line, soft=\\r\\n-wrapped</p>'
>>> encode(b"PGI+\\r\\n", "base64", b"<i>")
b'PGk+\\r\\n'
"""

from __future__ import annotations

import base64
import binascii
import re
from itertools import accumulate, compress, count, repeat
from operator import ne, not_
from typing import NamedTuple

from rewriter.document.speedups import twin

__all__ = ["IDENTITY", "TransferError", "decode", "encode", "mechanism"]

# RFC 2045 §6.2: these mechanisms leave the body as it is.
IDENTITY = frozenset({"7bit", "8bit", "binary"})

_CRLF = b"\r\n"
_LF = b"\n"
_MAX_LINE = 76  # RFC 2045 §6.7 rule 5 and §6.8: encoded lines are at most 76 characters


class TransferError(ValueError):
    """The body cannot be decoded or re-encoded in this transfer encoding; .reason says why."""

    def __init__(self, reason: str, encoding: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.encoding = encoding


def mechanism(encoding: str | None) -> str:
    """The Content-Transfer-Encoding as a lower-case name this module handles (RFC 2045 §6.1).

    >>> mechanism(" Quoted-Printable "), mechanism(None)
    ('quoted-printable', '7bit')
    """
    name = (encoding or "").strip().lower()
    if not name:
        return "7bit"  # RFC 2045 §6.1: no header means 7bit
    if name in IDENTITY or name in ("quoted-printable", "base64"):
        return name
    raise TransferError(f"unsupported Content-Transfer-Encoding {encoding!r}", encoding)


def decode(body: bytes, encoding: str | None) -> bytes:
    """The decoded bytes of *body*, leniently as mail readers do."""
    name = mechanism(encoding)
    if name == "quoted-printable":
        return decode_qp(body if type(body) is bytes else bytes(body))
    if name == "base64":
        return _decode_base64(body, encoding)
    return body


def encode(
    original: bytes, encoding: str | None, new: bytes, *, eol: bytes = _CRLF, decoded: bytes | None = None
) -> bytes:
    """The body to splice in place of *original* so that ``decode(result, encoding) == new``.

    *eol* is the line break for new quoted-printable lines when *original* has none to copy;
    *decoded* is ``decode(original, encoding)`` when the caller has it already.
    """
    name = mechanism(encoding)
    if name == "quoted-printable":
        return _encode_qp(original, new, eol, decoded)
    if name == "base64":
        old = decoded if decoded is not None else _decode_base64(original, encoding)
        return original if old == new else _encode_base64(original, new)
    return new


# --- quoted-printable ----------------------------------------------------------------------------------------------

# RFC 2045 §6.7 rule 1; lower-case digits are accepted as the RFC's note on robust readers suggests.
_ESCAPE = re.compile(rb"=[0-9A-Fa-f]{2}")
_HEX = b"0123456789ABCDEFabcdef"
_UNESCAPE = {bytes((61, hi, lo)): bytes((int(bytes((hi, lo)), 16),)) for hi in _HEX for lo in _HEX}

# RFC 2045 §6.7 rule 2: printable ASCII but "=" stands for itself; rule 3: so do space and tab, except at a line end.
_TOKENS = tuple(bytes([b]) if (33 <= b <= 126 and b != ord("=")) or b in (9, 32) else b"=%02X" % b for b in range(256))
_WHITE = (9, 32)


class _Part(NamedTuple):
    """One physical line of a logical line: its encoded range (soft break included) and decoded bytes."""

    start: int
    end: int
    decoded: bytes


class _Line(NamedTuple):
    """A logical line: the physical lines joined by soft breaks, then its hard break (b"" for the last line)."""

    parts: tuple[_Part, ...]
    brk: bytes

    @property
    def start(self) -> int:
        return self.parts[0].start

    @property
    def end(self) -> int:
        return self.parts[-1].end

    @property
    def decoded(self) -> bytes:
        return b"".join(part.decoded for part in self.parts)


def unescape_qp(text: bytes) -> bytes:
    """The escapes of one line's content (no LF, no trailing white space) decoded.

    RFC 2045 §6.7 note (2): an "=" not followed by two hex digits is kept as it is.
    binascii's C decoder reads the escapes alike, but for a final "=" or "=\\r" (a soft
    break to it) and "==" (one "=" to it): without those, it does the work.
    """
    if b"=" not in text:
        return text
    if text.endswith(b"=") or b"==" in text or b"=\r" in text:
        return _ESCAPE.sub(lambda m: _UNESCAPE[m[0]], text)
    return binascii.a2b_qp(text)


def _physical_line(content: bytes) -> tuple[bytes, bool]:
    """One physical line's content (its line break taken off) decoded, and whether it ends
    in a soft break: RFC 2045 §6.7 rule 3, trailing white space is transport padding; rule
    5, a final "=" is a soft break (at the very end of the body too)."""
    content = content.rstrip(b" \t")
    if content.endswith(b"="):
        return unescape_qp(content[:-1]), True
    return unescape_qp(content), False


def whole_body_safe(body: bytes) -> bool:
    """Whether binascii reads the whole body as the line parser does: no white space
    before a line break or at the end (rule 3 drops it; binascii keeps it), no "==" and
    no "=" before a CR that ends no line (binascii reads both its own way).

    A two-byte search or count runs at about 1 GB/s (a one-byte one a little faster):
    counts of the line breaks tell which searches can find anything, as mail is nearly
    all CR LF, and a body with one kind of break needs the searches for that kind only.
    """
    if body.endswith((b" ", b"\t")) or b"==" in body:
        return False
    cr = body.count(b"\r") if b"\r" in body else 0
    crlf = body.count(b"\r\n") if cr else 0
    if cr != crlf and body.count(b"=\r") != body.count(b"=\r\n"):
        return False  # some CR ends no line, and an "=" comes before one
    tab = b"\t" in body
    if crlf < body.count(b"\n") and (b" \n" in body or (tab and b"\t\n" in body)):
        return False  # some LF has no CR before it, and white space before one
    return not (crlf and (b" \r\n" in body or (tab and b"\t\r\n" in body)))


@twin
def decode_qp(body: bytes) -> bytes:
    """What :func:`parse_qp`'s lines decode to, without building them: the hot path.

    binascii's C decoder over the whole body when it reads it as the line parser does
    (:func:`whole_body_safe`), else the same reading line by line. Compiled, one pass with
    memchr from one line break and one "=" to the next, without the GIL past 4 KB: the
    checks that binascii may read the body took half of this function's time.

    >>> decode_qp(b"caf=C3=a9 au=\\r\\n lait  \\r\\n=3D=4 =\\r")
    b'caf\\xc3\\xa9 au lait\\r\\n==4 =\\r'
    """
    if not isinstance(body, bytes):
        raise TypeError(f"decode_qp: body is bytes, not {type(body).__name__}")
    if type(body) is not bytes:
        body = b"" + body  # a subclass's bytes, as the C reads them
    if whole_body_safe(body):
        return binascii.a2b_qp(body)
    pieces = body.split(_LF)
    last = len(pieces) - 1
    decoded: list[bytes] = []
    append = decoded.append
    for index, line in enumerate(pieces):
        if index == last:
            brk = b""
        elif line.endswith(b"\r"):
            line, brk = line[:-1], _CRLF
        else:
            brk = _LF
        content, soft = _physical_line(line)
        append(content)
        if not soft:
            append(brk)
    return b"".join(decoded)


def parse_qp(body: bytes) -> list[_Line]:
    """The logical lines of *body*; the last one has no hard break (it may be empty)."""
    lines: list[_Line] = []
    parts: list[_Part] = []
    pos = 0
    while True:
        lf = body.find(_LF, pos)
        if lf < 0:
            content_end = next_pos = len(body)
        else:
            content_end = lf - 1 if lf > pos and body[lf - 1] == 13 else lf
            next_pos = lf + 1
        content, soft = _physical_line(body[pos:content_end])
        if soft:
            parts.append(_Part(pos, next_pos, content))
            if lf < 0:
                lines.append(_Line(tuple(parts), b""))
                return lines
        else:
            parts.append(_Part(pos, content_end, content))
            lines.append(_Line(tuple(parts), body[content_end:next_pos]))
            if lf < 0:
                return lines
            parts = []
        pos = next_pos


def wrap_qp(text: bytes, eol: bytes, soft_end: bool) -> bytes:
    """*text* (no hard breaks: CR and LF are escaped) as physical lines of at most 76 characters.

    With *soft_end* the result ends with a soft break, for encoded bytes that follow on the same logical line.
    The text is encoded whole, then cut: every "=" in it starts a three-character escape, which a cut never splits.
    """
    encoded = b"".join(map(_TOKENS.__getitem__, text))
    if not soft_end and text and text[-1] in _WHITE:
        # RFC 2045 §6.7 rule 3: no trailing white space before a line end
        encoded = encoded[:-1] + b"=%02X" % text[-1]
    out: list[bytes] = []
    start, size = 0, len(encoded)
    # rule 5: a line that goes on after a soft break keeps one column for the "="; the last may use all 76
    while size - start > (_MAX_LINE - 1 if soft_end else _MAX_LINE):
        cut = start + _MAX_LINE - 1
        if encoded[cut - 1] == 61:  # "=": the escape would straddle the cut
            cut -= 1
        elif encoded[cut - 2] == 61:
            cut -= 2
        out += (encoded[start:cut], b"=", eol)
        start = cut
    if start < size:
        out.append(encoded[start:])
        if soft_end:
            out += (b"=", eol)
    return b"".join(out)


def _encode_text(text: bytes, eol: bytes) -> bytes:
    """*text* quoted-printable, each *eol* in it a hard break (RFC 2045 §6.7 rule 4)."""
    return eol.join(wrap_qp(line, eol, soft_end=False) for line in text.split(eol))


def _align(lines: list[_Line], new: bytes) -> list[bytes] | None:
    """*new* cut into as many lines as *lines*, at the same hard breaks, or None if it cannot be.

    The n-th LF of *new* is matched with the n-th LF of the old decoded body: an LF that came from
    "=0A" inside a line stays inside the line, so an escaped CR LF never shifts the alignment.
    """
    cut: list[bytes] = []
    pos = 0
    for line in lines[:-1]:
        stop = pos
        for _ in range(line.decoded.count(_LF) + 1):
            stop = new.find(_LF, stop) + 1
            if not stop:
                return None
        end = stop - len(line.brk)
        if end < pos or new[end:stop] != line.brk:
            return None
        cut.append(new[pos:end])
        pos = stop
    if new.count(_LF, pos) != lines[-1].decoded.count(_LF):
        return None
    cut.append(new[pos:])
    return cut


def splice_logical_line(encoded: bytes, new: bytes, eol: bytes) -> bytes:
    """One *encoded* logical line (no hard break; every physical line but the last ends in
    a soft break) with decoded content *new*, keeping the unchanged physical lines at each
    end: the most at its start whose decoded bytes begin *new*, then the most at its end
    whose decoded bytes end what is left of it.

    A run of physical lines decodes to what its lines decode to one after the other, so the
    most that begin *new* are found by halving, each guess one :func:`decode_qp` of a run
    (and likewise at the end): an HTML mail's logical line can run to thousands of physical
    lines, most change in the middle, and a Python call for each line read took half the
    time of re-encoding an mbox's changed bodies.
    """
    physical = encoded.split(_LF)
    count = len(physical)
    starts = [0, *accumulate(map((1).__add__, map(len, physical)))]  # starts[count]: past the end

    def begins_new(kept: int) -> bool:  # the first *kept* lines decode to a prefix of new
        return new.startswith(decode_qp(encoded[: starts[kept]]))

    first, last = 0, count - 1  # the last physical line is never kept at the start
    while first < last:
        middle = (first + last + 1) // 2
        if begins_new(middle):
            first = middle
        else:
            last = middle - 1
    head_end = starts[first]
    head = len(decode_qp(encoded[:head_end]))

    def ends_new(start: int) -> bool:  # the lines from *start* on decode to a suffix of new[head:]
        ending = decode_qp(encoded[starts[start] :]) if start < count else b""
        return len(ending) <= len(new) - head and new.endswith(ending)

    low, high = first, count  # the first physical line kept at the end (count: none)
    while low < high:
        middle = (low + high) // 2
        if ends_new(middle):
            high = middle
        else:
            low = middle + 1
    kept_tail = encoded[starts[low] :] if low < count else b""
    tail = len(new) - len(decode_qp(kept_tail))
    return encoded[:head_end] + wrap_qp(new[head:tail], eol, soft_end=bool(kept_tail)) + kept_tail


def _common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix: a binary search over slice comparisons, each at C speed."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes) -> int:
    """The length of the longest common suffix, as :func:`_common_prefix`."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


_SOFT_ENDS = (b"=", b"=\r")


def encode_qp_by_lines(original: bytes, new: bytes, default_eol: bytes, old: bytes | None = None) -> bytes | None:
    """The common case, without parsing every line: None when it does not apply.

    When no escaped LF (``=0A``) can put a line break inside a logical line, the n-th LF
    of the decoded text is the n-th hard break, so old and new decoded text split on LF
    line up. Only the lines that differ are parsed and encoded again, as
    :func:`_encode_qp` would encode them.
    """
    if b"=0" in original and (b"=0A" in original or b"=0a" in original):  # most bodies: one search
        return None
    old_lines = (old if old is not None else decode_qp(original)).split(_LF)
    new_lines = new.split(_LF)
    if len(old_lines) != len(new_lines):
        return None
    changed = list(compress(count(), map(ne, old_lines, new_lines)))  # C loops: bodies have thousands of lines
    if not changed:
        return original
    # Where each logical line starts in the encoded body: after each hard break. Taking
    # only "=" right before LF or CR LF as a soft break, and not "=" then white space
    # (RFC 2045 §6.7 rule 3), can only find more hard breaks than there are: as many as
    # the decoded lines, and they are the same ones.
    physical = original.split(_LF)[:-1]
    ends = accumulate(map((1).__add__, map(len, physical)))
    starts = [0, *compress(ends, map(not_, map(bytes.endswith, physical, repeat(_SOFT_ENDS))))]
    if len(starts) != len(old_lines):
        return None
    last = len(old_lines) - 1
    pieces: list[bytes] = []
    kept = 0
    for index in changed:
        start = starts[index]
        stop = starts[index + 1] if index < last else len(original)
        brk = original[stop - 2 : stop] if index < last and original[stop - 2 : stop] == _CRLF else b""
        brk = brk or (_LF if index < last else b"")
        old_text, new_text = old_lines[index], new_lines[index]
        if brk == _CRLF:
            if not (old_text.endswith(b"\r") and new_text.endswith(b"\r")):
                return None
            old_text, new_text = old_text[:-1], new_text[:-1]
        eol = brk or _dominant_break(original, starts, default_eol)
        pieces.append(original[kept:start])
        pieces.append(splice_logical_line(original[start : stop - len(brk)], new_text, eol))
        kept = stop - len(brk)
    pieces.append(original[kept:])
    return b"".join(pieces)


def _dominant_break(original: bytes, starts: list[int], default_eol: bytes) -> bytes:
    """The body's more common hard break (CRLF on a tie), as :func:`_encode_qp` picks it."""
    crlf = sum(original[start - 2 : start] == _CRLF for start in starts[1:])
    lf = len(starts) - 1 - crlf
    return default_eol if crlf == lf == 0 else _CRLF if crlf >= lf else _LF


def _encode_qp(original: bytes, new: bytes, default_eol: bytes, old: bytes | None = None) -> bytes:
    fast = encode_qp_by_lines(original, new, default_eol, old)
    return fast if fast is not None else encode_qp_aligned(original, new, default_eol)


def encode_qp_aligned(original: bytes, new: bytes, default_eol: bytes) -> bytes:
    """Every logical line parsed, and *new* aligned on them (or on what stays at each end)."""
    lines = parse_qp(original)
    old = b"".join(line.decoded + line.brk for line in lines)
    if new == old:
        return original
    crlf = sum(line.brk == _CRLF for line in lines)
    lf = len(lines) - 1 - crlf
    dominant = default_eol if crlf == lf == 0 else _CRLF if crlf >= lf else _LF

    cut = _align(lines, new)
    if cut is not None:  # same hard breaks: re-encode only the lines that changed
        out: list[bytes] = []
        for line, content in zip(lines, cut, strict=True):
            if content == line.decoded:
                out.append(original[line.start : line.end])
            else:
                out.append(splice_logical_line(original[line.start : line.end], content, line.brk or dominant))
            out.append(line.brk)
        return b"".join(out)

    # The line structure changed: keep the unchanged whole lines at each end, re-encode the lines between.
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.decoded) + len(line.brk))
    last = len(lines) - 1  # the last line has no hard break, so it never ends a kept head
    head = _common_prefix(old, new)
    first = max(k for k in range(last + 1) if offsets[k] <= head)
    tail = _common_suffix(old, new)
    start = offsets[first]
    stop = len(lines)  # index of the first kept tail line; len(lines) keeps none
    for k in range(max(first, 1), len(lines)):
        kept = len(old) - offsets[k]
        if kept <= tail and start + kept <= len(new):
            middle = new[start : len(new) - kept]
            if not middle or middle.endswith(lines[k - 1].brk):  # the new lines end where the kept ones start
                stop = k
                break
    if stop == len(lines):
        encoded = _encode_text(new[start:], dominant)
        return original[: lines[first].start] + encoded
    brk = lines[stop - 1].brk
    middle = new[start : len(new) - (len(old) - offsets[stop])]
    encoded = _encode_text(middle[: -len(brk)], brk) + brk if middle else b""
    return original[: lines[first].start] + encoded + original[lines[stop].start :]


# --- base64 --------------------------------------------------------------------------------------------------------

_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/=]+")


def _decode_base64(body: bytes, encoding: str | None) -> bytes:
    # RFC 2045 §6.8: characters outside the base64 alphabet are ignored.
    text = _NOT_BASE64.sub(b"", body)
    data = text.rstrip(b"=")
    if b"=" in data:
        # §6.8: "=" marks the end of the data; readers disagree on what follows it, so it is not rewritten.
        raise TransferError("base64 body has data after its '=' padding", encoding)
    if len(data) % 4 == 1:
        raise TransferError(
            f"base64 body has {len(data)} characters: the last one holds 6 bits, not a whole byte", encoding
        )
    # A final quantum without its padding is decoded as if padded (§6.8): each byte it holds is whole.
    return binascii.a2b_base64(data + b"=" * (-len(data) % 4))


def _encode_base64(original: bytes, new: bytes) -> bytes:
    """*new* in base64, wrapped like *original*: its first line's length, line break and final line break."""
    encoded = base64.b64encode(new)
    lf = original.find(_LF)
    if lf < 0:
        return encoded
    eol = _CRLF if lf > 0 and original[lf - 1] == 13 else _LF
    rows = [row for row in original.split(_LF) if row.strip()]
    # One line then a break says nothing of the width, beyond being at least that line's length.
    width = len(rows[0].strip()) if len(rows) > 1 else max(_MAX_LINE, len(rows[0].strip()) if rows else 0)
    lines = [encoded[i : i + width] for i in range(0, len(encoded), width)]
    return eol.join(lines) + (eol if original.endswith(_LF) else b"")
