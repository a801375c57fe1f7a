"""One page of a WARC rewritten for WARC out: the engine run on its decoded body, and the
``conversion`` record (WARC 1.1 §6.7) that holds it, its block digest written as the page's is.

The conversion record is written so that every tool reads the output as it should (issue 32):

- no ``WARC-Payload-Digest``: a conversion's block is the rewritten document, with no HTTP
  message around it, so it has no well-defined payload (§5.9: the field "shall not be used"
  then); warcat's ``verify`` reads a payload digest on such a block as an error and stops;
- ``Content-Type`` present and empty: the rewritten document's media type is its original's,
  found by ``WARC-Refers-To``. pywb 2.10 indexes every record with a URI as a capture (a
  conversion too, as a ``200``) and, of two captures of a URL in the same second, replays the
  one whose index line sorts first; a conversion's line holds no ``status`` and so sorts
  before the capture's when both name the same media type. Given none, pywb files it as
  ``unk``, after every real type: the original capture is what it replays, at its timestamp
  and as the latest. warcat stops on a record with no Content-Type field at all, hence the
  empty one. ``typed=True`` writes the page's media type instead (pywb then replays the
  rewritten page);
- ``WARC-Date`` the page's: the same bytes on every run, and the capture it derives from.
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from warcio.statusandheaders import StatusAndHeaders

from rewriter.containers.formats import Container
from rewriter.containers.warc.model import WarcDocument, _clean, _success
from rewriter.containers.warc.read import _Record
from rewriter.document.engines import EngineFormat, engine_for_type
from rewriter.document.model import Unit, placed
from rewriter.policy import Policy
from rewriter.problems import Problem

if TYPE_CHECKING:
    from rewriter.document.model import DocumentResult


@dataclass(frozen=True, slots=True)
class WarcPage:
    """One page of a WARC as :func:`rewrite_warc_piece` read it: a whole 2xx ``response``
    (not 206) or a ``resource`` record of an HTML or CSS type.

    ``format`` is the engine's (``html`` or ``css``); ``record`` the index of its record in
    the file (from 0) and ``offset`` where it begins; ``size`` the length of its decoded
    body; ``result`` what the engine returned (the rewritten page, or with ``rewrite=False``
    the links found), None when the body could not be decoded or the engine failed (see
    ``problems``, which hold the record's own; the page's are the result's). ``converted``:
    its rewritten page differs from the recorded one, so a conversion record follows it in
    the output (would follow it, with no target).
    """

    uri: str
    format: EngineFormat
    offset: int
    record: int
    status: int | None
    content_type: str
    charset: str | None
    size: int
    result: DocumentResult | None = field(repr=False)
    converted: bool
    problems: tuple[str, ...] = ()

    def unit(self) -> Unit:
        """This page as the run's tally takes it, named by its record's URI: its warnings are
        its record's, then the engine's; one whose body could not be read or rewritten fails."""
        where = {"record": self.uri}
        if self.result is None:
            errors = placed(self.problems, "record", f"record {self.uri}")
            return Unit(where, errors=errors, failed=True, bytes_in=self.size)
        problems = (*self.problems, *self.result.problems)
        return Unit(where, self.result, self.format, problems, bytes_in=self.size, changed=self.converted)


def _page(
    record: _Record,
    index: int,
    policy: Policy,
    rewrite: bool,
    container: Container,
    *,
    write: bool,
    typed: bool = False,
) -> tuple[WarcPage | None, bytes | None]:
    """The page a record is (None when it is none), and its conversion record (None when not
    to be written)."""
    document = record.item
    if not isinstance(document, WarcDocument) or not _success(document.record_type, document.status):
        return None, None
    engine = engine_for_type(document.content_type)
    if engine is None or engine.format == "message" or document.content_type is None:
        return None, None
    problems = list(document.problems)
    result: DocumentResult | None = None
    if document.body is not None:
        run = engine.rewrite if rewrite else engine.find
        try:
            result = run(document.body, url=document.uri or None, charset=document.charset, policy=policy)
        except Exception as error:  # the engines never raise by contract; should one, the page is reported
            problems.append(
                Problem(
                    "record",
                    f"not rewritten: {_clean(str(error)) or type(error).__name__}",
                    (f"offset {record.offset}",),
                )
            )
    changed, conversion = False, None
    if rewrite and result is not None and result.output != document.body:
        changed, conversion = _converted(record, document, result.output, container, problems, write=write, typed=typed)
    page = WarcPage(
        document.uri,
        engine.format,
        record.offset,
        index,
        document.status,
        document.content_type,
        document.charset,
        len(document.body or b""),
        result,
        changed,
        tuple(problems),
    )
    return page, conversion


def _converted(
    record: _Record,
    document: WarcDocument,
    output: bytes,
    container: Container,
    problems: list[str],
    *,
    write: bool,
    typed: bool = False,
) -> tuple[bool, bytes | None]:
    """Whether a page rewritten to *output* (which differs from its body) gets a conversion
    record, and that record (None when there is none, or it is not to be written). Why it
    gets none goes to *problems*."""
    if record.block_failed:  # its bytes are not those recorded: it is left out of the output
        problems.append(
            Problem("record", "its block digest fails (WARC 1.1 §5.8): no conversion", (f"offset {record.offset}",))
        )
        return False, None
    original = _arc_id(record) if container == "arc" else _header(record.headers, "WARC-Record-ID")
    if original is None:
        problems.append(
            Problem(
                "record", "a record without WARC-Record-ID (WARC 1.1 §5.2): no conversion", (f"offset {record.offset}",)
            )
        )
        return False, None
    return True, (_conversion(record, document, output, original, typed=typed) if write else None)


def _header(headers: StatusAndHeaders | None, name: str) -> str | None:
    """A field of a heading, on one line (a value with a line break would break the record)."""
    value = headers.get_header(name) if headers is not None else None
    return None if value is None else " ".join(str(value).split()) or None


def _conversion(record: _Record, document: WarcDocument, output: bytes, original: str, *, typed: bool = False) -> bytes:
    """The conversion record (WARC 1.1 §6.7) of a page rewritten to *output*, unframed: no
    payload digest, and an empty Content-Type unless *typed* (see the module's text)."""
    headers = record.headers
    version = getattr(headers, "protocol", None)  # the page's record's (WARC 1.0 for an older one)
    version = version if version in ("WARC/1.0", "WARC/1.1") else "WARC/1.0"
    block = _Digest.like(_header(headers, "WARC-Block-Digest")) or _Digest.like(_header(headers, "WARC-Payload-Digest"))
    content_type = ""
    if typed:
        http = record.http if document.record_type == "response" else None
        content_type = (_header(http, "Content-Type") if http is not None else _header(headers, "Content-Type")) or ""
    fields = [
        ("WARC-Type", "conversion"),  # §5.5, §6.7
        ("WARC-Record-ID", f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, original)}>"),  # §5.2
        ("WARC-Target-URI", " ".join(document.uri.split()) or None),  # §5.7
        ("WARC-Date", _header(headers, "WARC-Date")),  # §5.4: the page's, as the record it converts
        ("WARC-Refers-To", original),  # §5.11
        ("Content-Type", content_type),  # §5.6: empty, unless typed
        ("WARC-Block-Digest", (block or _SHA1).of(output)),  # §5.8
        ("Content-Length", str(len(output))),  # §5.3
    ]
    heading = "".join(
        f"{name}: {value}\r\n" if value else f"{name}:\r\n" for name, value in fields if value is not None
    )
    return f"{version}\r\n{heading}\r\n".encode() + output + b"\r\n\r\n"  # §4: the record's end


def _arc_id(record: _Record) -> str:
    """The record ID of the WARC record an ARC record is written as: uuid5 of its offset and its
    fields (not warcio's, which is random), so that every run writes the same ID."""
    fields = [] if record.headers is None else record.headers.headers
    name = " ".join(f"{key}: {value}" for key, value in fields if key != "WARC-Record-ID")
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'arc record at {record.offset}: {name}')}>"


_HASHES = {"sha1": "sha1", "sha-1": "sha1", "sha256": "sha256", "sha-256": "sha256", "sha512": "sha512"}


_HASHES |= {"sha-512": "sha512", "sha384": "sha384", "sha-384": "sha384", "md5": "md5"}


@dataclass(frozen=True, slots=True)
class _Digest:
    """How a record writes a digest, ``labelled-digest = algorithm ":" digest-value`` (WARC
    1.1 §5.8): the algorithm's name as written, and the encoding of its value (base 32 as
    WARC 1.1 suggests, base 16 or base 64 as some tools write)."""

    label: str
    algorithm: str  # hashlib's name
    encoding: str  # "base32", "base16" or "base64"
    lower: bool = False
    padded: bool = True

    @classmethod
    def like(cls, value: str | None) -> _Digest | None:
        """The way *value* is written; None when it names no algorithm known here.

        >>> _Digest.like("sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ")
        _Digest(label='sha1', algorithm='sha1', encoding='base32', lower=False, padded=True)
        >>> _Digest.like("sha256:" + "ab" * 32).encoding, _Digest.like("crc32:x")
        ('base16', None)
        """
        label, colon, text = (value or "").strip().partition(":")
        algorithm = _HASHES.get(label.lower())
        if not colon or algorithm is None:
            return None
        size = hashlib.new(algorithm).digest_size
        bare = text.rstrip("=")
        if len(text) == 2 * size and re.fullmatch(r"[0-9A-Fa-f]+", text):
            return cls(label, algorithm, "base16", text != text.upper())
        if len(bare) == -(-8 * size // 5) and re.fullmatch(r"[A-Za-z2-7]+", bare):
            return cls(label, algorithm, "base32", bare != bare.upper(), bare != text or len(bare) % 8 == 0)
        if len(bare) == -(-4 * size // 3) and re.fullmatch(r"[A-Za-z0-9+/]+", bare):
            return cls(label, algorithm, "base64", False, bare != text or len(bare) % 4 == 0)
        return cls(label, algorithm, "base32")

    def of(self, data: bytes) -> str:
        digest = hashlib.new(self.algorithm, data).digest()
        if self.encoding == "base16":
            text = digest.hex()
            return f"{self.label}:{text if self.lower else text.upper()}"
        text = (base64.b32encode(digest) if self.encoding == "base32" else base64.b64encode(digest)).decode("ascii")
        text = text if self.padded else text.rstrip("=")
        return f"{self.label}:{text.lower() if self.lower else text}"


_SHA1 = _Digest("sha1", "sha1", "base32")
