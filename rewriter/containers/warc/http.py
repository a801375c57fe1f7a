"""HTTP bodies as recorded in a WARC: the Content-Type's essence and charset (RFC 9110 §8.3), and a
payload undone as it is read (chunked transfer coding, RFC 9112 §7.1; gzip or deflate content coding,
RFC 9110 §8.4.1), its decoded bytes counted against a bound."""

from __future__ import annotations

import re
import zlib
from typing import TYPE_CHECKING

from warcio.statusandheaders import StatusAndHeaders

from rewriter.containers.warc.model import _BLOCK, _clean
from rewriter.problems import Problem

if TYPE_CHECKING:
    pass


_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n")  # RFC 9112 §7.1 chunk-size [chunk-ext] CRLF


_PARAMETER = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


_LINE = 1 << 16  # a chunk-size line at most this long; coded bytes that inflate to nothing, as long: not coded


_CODINGS = frozenset({"gzip", "deflate"})  # content codings undone (RFC 9110 §8.4.1), each inflated in steps


def _content_type(value: str | None) -> tuple[str | None, str | None]:
    """The bare type, lower-cased, and the charset parameter of a Content-Type (RFC 9110 §8.3).

    >>> _content_type('Text/HTML; Charset="Shift_JIS"')
    ('text/html', 'Shift_JIS')
    """
    if not value:
        return None, None
    essence = value.split(";", 1)[0].strip().lower()
    charset = None
    for name, raw in _PARAMETER.findall(value):
        if name.lower() == "charset":
            raw = raw.strip()
            if len(raw) >= 2 and raw[0] == raw[-1] == '"':
                raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
            charset = raw.strip() or None
            break
    return (essence if "/" in essence else None), charset


class _Body:
    """A record's payload undone as it is read, block by block: the chunked transfer coding (RFC
    9112 §7.1), then the content coding (RFC 9110 §8.4.1: gzip or deflate), inflated in steps of
    at most 1 MiB. The decoded bytes are counted as they come: past *limit* (``--max-size``) none
    is kept and decoding stops, so that a small body that inflates to gigabytes is never held.
    Nothing is raised; :meth:`finish` gives the body (None when it cannot be) and the problems."""

    def __init__(self, http: StatusAndHeaders | None, where: str, name: str, limit: int) -> None:
        self.where = where
        self.name = name  # the record's URI, for the problem of a body over the limit
        self.limit = limit
        # The codings to undo; refused: one not undone here, so the body is not given (when there is one).
        self.chunked, self.coding, self.refused = _codings(http)
        self.pieces: list[bytes] = []
        self.size = 0  # decoded bytes, kept or not
        self.fed = False
        self.problems: list[str] = []
        self.failure: str | None = None  # why the body cannot be given; decoding stops
        self.over = False
        # The chunked framing: "start" (not known to be chunked yet), "size", "data", "end" (its CRLF),
        # "done" (the last chunk read: trailer fields are no content), "plain" (not chunked after all).
        self.state = "start" if self.chunked else "plain"
        self.framing = b""  # a chunk-size line (or a data's CRLF) read in part
        self.left = 0  # bytes of the current chunk's data still to come
        # The content coding: None when there is none, or the body turned out not to be coded.
        self.inflater = _inflater(self.coding) if self.coding else None
        self.raw_deflate = False  # "deflate" read as a bare deflate stream (RFC 1951), as senders do
        self.head: list[bytes] | None = [] if self.coding else None  # coded bytes read while none inflated yet
        self.headed = 0  # their length

    def feed(self, data: bytes) -> None:
        """The next bytes of the payload, as recorded."""
        if not data:
            return
        self.fed = True
        if self.refused or self.failure or self.over:
            return
        if self.state != "plain":
            self._dechunk(data)
        else:
            self._decode(data)

    def finish(self) -> tuple[bytes | None, list[str]]:
        """The body and the problems met (the body None when it cannot be given)."""
        if not self.fed:
            return b"", []
        if self.refused:
            return None, [f"{self.where}: {self.refused}"]
        if not self.failure and not self.over:
            if self.state == "start":  # no chunk-size line before the end: not chunked
                self._not_chunked()
            elif self.state not in ("plain", "done"):
                self.failure = "the chunked body is cut short or malformed"
        if not self.failure and not self.over and self.inflater is not None and not self.inflater.eof:
            self.failure = f"the {self.coding} body is cut short"
        if self.over:
            return None, [*self.problems, f"{self.where}: {self.over_problem}"]
        if self.failure:  # nothing is taken: what was to be taken as recorded is not said
            return None, [f"{self.where}: {self.failure}"]
        body = b"".join(self.pieces)
        self.pieces = []
        return body, self.problems

    @property
    def over_problem(self) -> str:
        decoded = " decoded" if self.chunked or self.coding else ""
        size = f"larger than {self.limit:,} bytes (--max-size)"
        return f"the{decoded} body of {self.name} is {size}: not read, its record kept as recorded"

    def _dechunk(self, data: bytes) -> None:
        position = 0
        while position < len(data) and self.state not in ("done", "plain") and not (self.failure or self.over):
            if self.state == "data":
                take = min(self.left, len(data) - position)
                self._decode(data[position : position + take])
                self.left -= take
                position += take
                if not self.left:
                    self.state = "end"
                continue
            # A chunk-size line (RFC 9112 §7.1: chunk-size [chunk-ext] CRLF), or the CRLF after a chunk's data.
            end = data.find(b"\n", position)
            self.framing += data[position : len(data) if end < 0 else end + 1]
            position = len(data) if end < 0 else end + 1
            if end < 0 and len(self.framing) <= _LINE:
                continue
            if self.state == "end":
                if self.framing != b"\r\n":
                    self.failure = "the chunked body is cut short or malformed"
                self.framing, self.state = b"", "size"
                continue
            line = _CHUNK_LINE.fullmatch(self.framing)
            if line is None:
                if self.state == "start":
                    self._not_chunked(data[position:])
                    return
                self.failure = "the chunked body is cut short or malformed"
                return
            self.framing, self.left = b"", int(line.group(1), 16)
            self.state = "data" if self.left else "done"
        if self.state == "plain" and position < len(data):
            self._decode(data[position:])

    def _not_chunked(self, rest: bytes = b"") -> None:
        """Transfer-Encoding says chunked, but the body does not begin as one: it is taken as recorded."""
        self.problems.append(
            Problem("record", "Transfer-Encoding is chunked, but the body is not: taken as recorded", (self.where,))
        )
        held, self.framing, self.state = self.framing, b"", "plain"
        self._decode(held + rest)

    def _decode(self, data: bytes) -> None:
        if self.inflater is None:
            self._keep(data)
        else:
            self._inflate(data)

    def _inflate(self, data: bytes) -> None:
        inflater = self.inflater
        assert inflater is not None
        if self.head is not None:
            self.head.append(data)
            self.headed += len(data)
            if self.headed > _LINE:  # long enough to be sure of the coding: no falling back from here
                self.head = None
        try:
            while True:
                if inflater.eof:
                    if data or inflater.unused_data:
                        self.failure = f"data after the end of the {self.coding} body (a second member?)"
                    return
                out = inflater.decompress(data, _BLOCK)
                if out:
                    self.head = None  # it is coded: from here on an error is damage
                    self._keep(out)
                    if self.over:
                        return
                data = inflater.unconsumed_tail
                if not data and len(out) < _BLOCK:  # a full step may leave output within zlib: one more
                    if inflater.eof and inflater.unused_data:
                        self.failure = f"data after the end of the {self.coding} body (a second member?)"
                    return
        except zlib.error as error:
            if self.head is None:
                self.failure = f"the body cannot be decoded: {_clean(str(error))}"
                return
        # Nothing inflated yet: a bare deflate stream for "deflate", else the body is not coded.
        held, self.head, self.headed = b"".join(self.head), [], 0
        if self.coding == "deflate" and not self.raw_deflate:
            self.raw_deflate, self.inflater = True, zlib.decompressobj(-zlib.MAX_WBITS)
            self._inflate(held)
            return
        self.problems.append(
            Problem(
                "record", f"Content-Encoding is {self.coding}, but the body is not: taken as recorded", (self.where,)
            )
        )
        self.inflater = self.head = None
        self._keep(held)

    def _keep(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.limit:
            self.over, self.pieces = True, []
        elif data:
            self.pieces.append(data)


def _tokens(value: str | None) -> list[str]:
    """The codings a Transfer-Encoding or Content-Encoding field names, lower-cased, ``identity``
    left out, ``x-gzip`` read as ``gzip`` (RFC 9110 §8.4.1.3 and RFC 9112 §7.2: a recipient
    SHOULD; old servers still send it).

    >>> _tokens("X-GZIP, identity")
    ['gzip']
    """
    tokens = [token.strip().lower() for token in (value or "").split(",")]
    return [_ALIASES.get(token, token) for token in tokens if token and token != "identity"]


_ALIASES = {"x-gzip": "gzip"}


def _codings(http: StatusAndHeaders | None) -> tuple[bool, str | None, str | None]:
    """Whether a body is chunked (RFC 9112 §7.1), its content coding (RFC 9110 §8.4.1: None when
    there is none), and why it cannot be undone here (None when it can: chunked at most, then one
    coding of gzip or deflate).

    >>> from warcio.statusandheaders import StatusAndHeaders
    >>> _codings(StatusAndHeaders("200 OK", [("Transfer-Encoding", "chunked"), ("Content-Encoding", "GZIP")]))
    (True, 'gzip', None)
    >>> _codings(StatusAndHeaders("200 OK", [("Content-Encoding", "br")]))
    (False, None, "Content-Encoding 'br' cannot be decoded here")
    """
    if http is None:
        return False, None, None
    transfer = _tokens(http.get_header("Transfer-Encoding"))
    coding = _tokens(http.get_header("Content-Encoding"))
    if transfer not in ([], ["chunked"]):
        return False, None, f"Transfer-Encoding {http.get_header('Transfer-Encoding')!r} cannot be undone"
    if len(coding) > 1 or (coding and coding[0] not in _CODINGS):
        return False, None, f"Content-Encoding {http.get_header('Content-Encoding')!r} cannot be decoded here"
    return bool(transfer), (coding[0] if coding else None), None


def _inflater(coding: str) -> zlib._Decompress:
    """A decompressor for a content coding: gzip (RFC 1952), or deflate in its zlib wrapping (RFC 1950)."""
    return zlib.decompressobj(16 + zlib.MAX_WBITS if coding == "gzip" else zlib.MAX_WBITS)
