"""WARC input: read the pages of a web archive, and mirror them into a folder.

A WARC file (ISO 28500:2017, WARC 1.1) holds what a crawler fetched: each ``response``
record an HTTP response (RFC 9112 §4-§6: status line, header fields, body as sent),
each ``resource`` record a resource without HTTP around it. :func:`iter_documents`
reads both with :mod:`warcio`, plain or gzip (one gzip member per record, WARC 1.1
Annex D), and gives each body with the chunked transfer coding (RFC 9112 §7.1) and the
content coding (RFC 9110 §8.4) undone. Damage never raises: a record that is cut short
or cannot be parsed is named by its offset, and reading goes on at the next record.

:func:`rewrite_warc` writes every HTML and CSS page of the archive with its relative
links made absolute against the page's own URL (its ``WARC-Target-URI``: a redirect's
target is a record of its own, RFC 9110 §15.4). :func:`unpack_warc` writes every
resource, and points each link the archive can answer (directly or through its
recorded redirects) at the file that answers it, by a relative path.

The mirror is ``OUT/<host>[_<port>]/<path segments>``: a path ending in ``/`` gets an
``index`` file, a query is folded into the last name (``search?q=1`` is
``search_q=1.html``), and every name is made by :class:`rewriter.names.Folder`, so that
nothing is written outside OUT, nothing is overwritten, and each file appears whole or
not at all. ``OUT/manifest.json`` lists what each record became.

>>> import io, tempfile, pathlib
>>> from warcio.warcwriter import WARCWriter
>>> from warcio.statusandheaders import StatusAndHeaders
>>> buffer = io.BytesIO()
>>> writer = WARCWriter(buffer, gzip=True)
>>> http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
>>> writer.write_record(writer.create_warc_record("http://example.org/docs/", "response",
...     payload=io.BytesIO(b'<a href="guide.html">guide</a>'), http_headers=http))
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "site.warc.gz").write_bytes(buffer.getvalue())
>>> report = rewrite_warc(folder / "site.warc.gz", folder / "out")
>>> report.documents, report.links, report.problems
(('example.org/docs/index.html',), 1, ())
>>> (folder / "out" / "example.org" / "docs" / "index.html").read_bytes()
b'<a href="http://example.org/docs/guide.html">guide</a>'
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import json
import mimetypes
import os
import re
import zlib
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Union, cast
from urllib.parse import quote, urlsplit

from warcio.archiveiterator import WARCIterator
from warcio.bufferedreaders import BufferedReader
from warcio.statusandheaders import StatusAndHeadersParser

from rewriter.engines import CSS_TYPES, DOCUMENT_TYPES, HTML_TYPES, engine_for_type
from rewriter.formats import gzip_holds_warc, is_warc
from rewriter.names import Folder
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.resolve import Rules, UnresolvableReference, remove_dot_segments, resolve, url_key
from rewriter.unpack import declare_charset

if TYPE_CHECKING:
    from rewriter.html import HTMLResult

__all__ = [
    "CSS_TYPES",
    "DOCUMENT_TYPES",
    "HTML_TYPES",
    "WarcDamage",
    "WarcDocument",
    "WarcEntry",
    "WarcReport",
    "follow_redirects",
    "is_warc",
    "iter_documents",
    "redirect_map",
    "rewrite_warc",
    "unpack_warc",
    "url_key",
]

MANIFEST = "manifest.json"
MAX_DEPTH = 20  # folders below the host; deeper segments are folded into the file's name
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}
# JavaScript MIME type essences (MIME Sniffing §4.6), named by their common one for the extension.
_JAVASCRIPT = frozenset(
    {"application/javascript", "application/ecmascript", "application/x-javascript", "application/x-ecmascript"}
    | {"text/ecmascript", "text/jscript", "text/livescript", "text/x-javascript", "text/x-ecmascript"}
)
_CHUNK_LINE = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n")  # RFC 9112 §7.1 chunk-size [chunk-ext] CRLF
_PARAMETER = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')
_BLOCK = 1 << 20
_WARC_LINE = re.compile(rb"WARC/(?:1\.[01]|0\.1[78])\r?\n")  # a record's first line (WARC 1.1 §4, and before)
_HTTP_PARSER = StatusAndHeadersParser(["HTTP/1.0", "HTTP/1.1"], verify=False)


# --------------------------------------------------------------------------
# Reading records
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WarcDocument:
    """One ``response`` or ``resource`` record.

    ``status`` is the HTTP status (None for a resource record, or when unreadable);
    ``content_type`` the bare type, lower-cased, and ``charset`` its parameter, from the
    HTTP ``Content-Type`` (a resource record's own ``Content-Type``); ``body`` the
    payload with chunking and content coding undone, None when it cannot be (see
    ``problems``); ``location`` the ``Location`` field of a 3xx response, as sent;
    ``offset`` where the record begins in the file.
    """

    uri: str
    status: int | None
    content_type: str | None
    charset: str | None
    body: bytes | None = field(repr=False)
    location: str | None
    offset: int
    record_type: str = "response"
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WarcDamage:
    """Part of the file that could not be read as records, from *offset* on."""

    offset: int
    problem: str


Source = Union[str, "os.PathLike[str]", IO[bytes]]
Wanted = Callable[[int, str, str, "int | None", "str | None"], bool]  # offset, record type, uri, status, content type


def iter_documents(stream_or_path: Source) -> Iterator[WarcDocument | WarcDamage]:
    """Every ``response`` and ``resource`` record of a WARC (plain or gzip), in file order.

    *stream_or_path* is a path or a binary stream (read from where it stands; only a
    seekable one can go on past damage). The file is only read. A part that cannot be
    read comes as a :class:`WarcDamage` naming its offset, and reading goes on at the
    next record that can be found; nothing is raised. Revisit, request, metadata and
    warcinfo records are passed over.
    """
    yield from _read_source(stream_or_path, None)


def _read_source(source: Source, wanted: Wanted | None) -> Iterator[WarcDocument | WarcDamage]:
    if isinstance(source, (str, os.PathLike)):
        try:
            stream = open(source, "rb")  # noqa: SIM115 - the with below closes it
        except OSError as error:
            yield WarcDamage(0, f"cannot read {os.fspath(source)}: {error.strerror or error}")
            return
        with stream:
            yield from _records(stream, wanted)
    else:
        yield from _records(source, wanted)


@dataclass(slots=True)
class _Stop:
    """Why one run of the warcio iterator ended."""

    damage: int | None = None  # where the damage is, None: the end was reached
    problem: str = ""
    count: int = 0  # records the run read
    last: int | None = None  # where the last of them begins
    one_gzip_stream: bool = False
    end: int = 0


@contextlib.contextmanager
def _captured() -> Iterator[io.StringIO]:
    """warcio reports some damage only on standard error; catch it, to report it as a problem."""
    text = io.StringIO()
    with contextlib.redirect_stderr(text):
        yield text


def _said(text: io.StringIO) -> str:
    return _clean(text.getvalue(), 300)


def _seekable(stream: IO[bytes]) -> bool:
    try:
        return bool(stream.seekable())
    except (AttributeError, OSError, ValueError):
        return False


def _records(stream: IO[bytes], wanted: Wanted | None) -> Iterator[WarcDocument | WarcDamage]:
    """Run warcio's iterator; on damage, look for the next record and run it again from there."""
    seekable = _seekable(stream)
    reader: IO[bytes] = stream
    position = stream.tell() if seekable else 0
    gzipped = False
    whole: _GzipStream | None = None
    size = 0
    if seekable:
        gzipped = stream.read(2) == b"\x1f\x8b"
        size = stream.seek(0, os.SEEK_END)
    skip = 0
    while True:
        if seekable:
            try:
                reader.seek(position)
            except (OSError, EOFError, ValueError, zlib.error) as error:
                yield WarcDamage(position, f"offset {position}: cannot read on from here: {_clean(str(error))}")
                return
        stop = yield from _run(reader, wanted, skip)
        skip = 0
        if stop.one_gzip_stream and seekable and whole is None:
            yield WarcDamage(
                position,
                f"offset {position}: the file is one gzip stream, not one gzip member per record (WARC 1.1 "
                "Annex D); it is read as a whole, and offsets from here count bytes of the decompressed data",
            )
            stream.seek(position)
            reader = whole = _GzipStream(stream)
            gzipped, skip, position = False, stop.count, 0
            continue
        # warcio's offsets can step back on a damaged file; from here they only go forward.
        floor = position if stop.last is None else max(position, stop.last)
        end = max(stop.end, floor)
        if stop.damage is None:
            if whole is not None and whole.error is not None:
                problem = f"the gzip stream is cut short or damaged: {whole.error}"
                yield WarcDamage(end, f"decompressed offset {end}: {problem}")
                return
            if whole is not None or not seekable or end >= size or not _unread(stream, end, size):
                return
            stop.damage, stop.problem = end, f"{size - end} bytes that are no WARC record"
        damage = max(stop.damage, floor)
        where = f"offset {damage}" if stop.damage >= floor else f"after the record at offset {floor}"
        if not seekable:
            yield WarcDamage(damage, f"{where}: {stop.problem}; the stream cannot seek, so reading stops here")
            return
        # A gzip member ends where it ends; in a plain file, a wrong Content-Length before the damage
        # may have swallowed the start of the next record, so the search begins after the last one read.
        after = damage if gzipped or stop.last is None else floor
        following = _next_start(reader, after + 1, gzipped)
        then = "no record can be found after it" if following is None else f"reading goes on at offset {following}"
        if stop.problem:
            yield WarcDamage(damage, f"{where}: {stop.problem}; {then}")
        if following is None:
            return
        position = following  # always beyond the last start: every round moves on


class _GzipStream(io.RawIOBase):
    """A file that is one gzip stream, read as its decompressed bytes. warcio takes an EOFError
    for the end of the file; here a cut or damaged stream ends the data, and ``error`` says why."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__()
        self.inner = gzip.GzipFile(fileobj=stream, mode="rb")
        self.error: str | None = None

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        if self.error is not None:
            return b""
        try:
            # read1: one decompression step, so that what comes before a cut is returned before the error.
            return self.inner.read1(size if size > 0 else io.DEFAULT_BUFFER_SIZE)
        except (EOFError, OSError, zlib.error) as error:
            self.error = _clean(str(error)) or type(error).__name__
            return b""

    def readinto(self, buffer: bytearray) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self.inner.tell()

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.error = None
        return self.inner.seek(offset, whence)


def _clean(text: str, limit: int = 200) -> str:
    """*text* on one line, bytes that are not printable ASCII escaped, cut to *limit*.

    >>> _clean("first line: \\x8b\\x08\\x00 x\\n y")
    'first line: \\\\x8b\\\\x08\\\\x00 x y'
    """
    text = " ".join(text.split())
    escaped = "".join(
        char if " " <= char <= "~" else f"\\x{ord(char):02x}" if ord(char) < 256 else char for char in text
    )
    return escaped if len(escaped) <= limit else escaped[: limit - 1] + "\u2026"


def _unread(stream: IO[bytes], start: int, size: int) -> bool:
    """Whether the bytes from *start* on hold more than line breaks."""
    stream.seek(start)
    while start < size:
        data = stream.read(_BLOCK)
        if not data:
            return False
        if data.strip(b"\r\n"):
            return True
        start += len(data)
    return False


def _run(reader: IO[bytes], wanted: Wanted | None, skip: int) -> Generator[WarcDocument | WarcDamage, None, _Stop]:
    iterator = WARCIterator(reader, check_digests=True)
    stop = _Stop()
    while True:
        try:
            with _captured() as noise:
                record = next(iterator)
        except StopIteration:
            if _said(noise):
                yield WarcDamage(iterator.offset, f"offset {iterator.offset}: {_said(noise)}")
            stop.end = iterator.offset
            return stop
        except Exception as error:  # warcio raises many kinds on a damaged file; none may escape
            stop.damage = iterator.offset
            message = _clean(str(error), 120)
            if type(error).__module__.split(".")[0] != "warcio":
                message = f"{type(error).__name__}: {message}"
            stop.one_gzip_stream = "non-chunked gzip" in message
            stop.problem = f"unreadable record: {message}"
            return stop
        offset = iterator.offset
        if _said(noise):
            yield WarcDamage(offset, f"before offset {offset}: {_said(noise)}")
        stop.count += 1
        stop.last = offset
        if stop.count <= skip:
            continue
        item, damaged = _read(record, offset, wanted)
        if not damaged and not _member_ends(iterator):
            problem = f"offset {offset}: the gzip member of this record is cut short (its end and checksum are missing)"
            item = WarcDamage(offset, problem) if item is None else _with_problem(item, problem)
            damaged = True
        if item is not None:
            yield item
        if damaged:  # the container is damaged here: warcio cannot be trusted to find the next record
            stop.damage = offset
            return stop


def _member_ends(iterator: WARCIterator) -> bool:
    """Whether the record just read ends its gzip member whole (true of a plain file)."""
    try:
        with _captured():
            iterator.read_to_end()  # what warcio does before the next record: the blank lines, the member's end
    except Exception:  # damage after the record's block: reported as the member cut short
        return False
    decompressor = getattr(iterator.reader, "decompressor", None)
    # A member that holds the next record's first line too is no cut: warcio names that case itself.
    return decompressor is None or bool(getattr(decompressor, "eof", True)) or bool(iterator.next_line)


def _with_problem(item: WarcDocument | WarcDamage, problem: str) -> WarcDocument | WarcDamage:
    if isinstance(item, WarcDamage):
        return WarcDamage(item.offset, f"{item.problem}; {problem}")
    return dataclasses.replace(item, problems=(*item.problems, problem))


def _next_start(reader: IO[bytes], after: int, gzipped: bool) -> int | None:
    """The offset of the first record (gzip member) that begins at or after *after*."""
    position = after
    try:
        while True:
            reader.seek(position)
            data = reader.read(_BLOCK + 16)
            if not data:
                return None
            window = data[:_BLOCK]
            if gzipped:
                index = window.find(b"\x1f\x8b\x08")
                while index >= 0:
                    if gzip_holds_warc(reader, position + index):
                        return position + index
                    index = window.find(b"\x1f\x8b\x08", index + 1)
            else:
                match = _WARC_LINE.search(data)
                if match is not None and match.start() < len(window):
                    return position + match.start()
            position += len(window)
    except (OSError, EOFError, ValueError, zlib.error):
        return None


def _read(record: object, offset: int, wanted: Wanted | None) -> tuple[WarcDocument | WarcDamage | None, bool]:
    """The document (or damage) of one record, and whether the file is damaged within it."""
    kind = getattr(record, "rec_type", None)
    rec_headers = record.rec_headers  # type: ignore[attr-defined]
    length = rec_headers.get_header("Content-Length")
    if length is None or not length.strip().isdigit():
        # WARC 1.1 §5.3: every record has one; without it the heading was cut short or damaged.
        problem = (
            f"a record without a valid Content-Length ({_clean(str(length), 40)}): its heading is cut short or damaged"
        )
        return WarcDamage(offset, f"offset {offset}: {problem}"), True
    if not kind:
        return WarcDamage(offset, f"offset {offset}: a record without WARC-Type (WARC 1.1 §5.5): not read"), False
    http = record.http_headers  # type: ignore[attr-defined]
    uri = rec_headers.get_header("WARC-Target-URI") or ""
    relevant = kind in ("response", "resource")
    status: int | None = None
    problems: list[str] = []
    if relevant and not uri:
        problems.append(f"offset {offset}: a {kind} record without WARC-Target-URI (WARC 1.1 §5.7)")
    own_parse = kind == "response" and http is None and uri[:6].lower().startswith(("http:", "https:"))
    if own_parse and record.length:  # type: ignore[attr-defined]
        # warcio reads the HTTP heading only after a lower-case "http:" or "https:" (RFC 3986 §3.1: any case).
        try:
            with _captured():
                http = record.http_headers = _HTTP_PARSER.parse(record.raw_stream)  # type: ignore[attr-defined]
        except Exception as error:  # an unreadable heading: the body is not taken
            problems.append(f"offset {offset}: unreadable HTTP heading: {_clean(str(error), 80)}")
            relevant = False
    if relevant and http is not None:
        try:
            status = int(http.get_statuscode())
        except (TypeError, ValueError):
            problems.append(f"offset {offset}: unreadable HTTP status line {_clean(http.statusline, 80)!r}")
    type_field = http.get_header("Content-Type") if http is not None else record.content_type  # type: ignore[attr-defined]
    if kind == "response" and http is None:
        type_field = None  # a non-HTTP response (dns:, whois:): its body is no resource of the site
    content_type, charset = _content_type(type_field)
    keep = relevant and (wanted is None or wanted(offset, kind, uri, status, content_type))
    with _captured() as noise:
        raw, error = _raw(record.raw_stream, keep)  # type: ignore[attr-defined]
    missing = getattr(record.raw_stream, "limit", 0)  # type: ignore[attr-defined]
    damaged = error is not None or (isinstance(missing, int) and missing > 0)
    if damaged:
        how = f"{missing} of its bytes are missing" if missing else error
        problem = (
            f"offset {offset}: the {kind} record for {_clean(uri, 120) or '(no URI)'} is cut short ({how}): "
            "truncated or damaged"
        )
        if not relevant:
            return WarcDamage(offset, problem), True
        problems.append(problem)
    elif _said(noise):
        problems.append(f"offset {offset}: {_said(noise)}")
    checker = getattr(record, "digest_checker", None)
    for problem in getattr(checker, "problems", None) or ():
        if not (own_parse and problem.startswith("payload digest")):  # warcio took the heading for payload
            problems.append(f"offset {offset}: {problem}")
    if not relevant:
        return None, False
    body: bytes | None = None
    if keep and not damaged:
        body, decoding = _decode(record, raw, offset)
        problems.extend(decoding)
    location = None
    if status is not None and 300 <= status < 400 and http is not None:
        location = http.get_header("Location")
    return WarcDocument(uri, status, content_type, charset, body, location, offset, kind, tuple(problems)), damaged


def _raw(stream: IO[bytes], keep: bool) -> tuple[bytes, str | None]:
    """The rest of a record's block (or b"" when not *keep*: drained in blocks), and an error."""
    pieces: list[bytes] = []
    try:
        while True:
            data = stream.read(_BLOCK)
            if not data:
                break
            if keep:
                pieces.append(data)
    except Exception as error:  # a damaged gzip member, a short read: reported, never raised
        return b"".join(pieces), _clean(str(error)) or type(error).__name__
    return b"".join(pieces), None


def _last_chunk(raw: bytes) -> int | None:
    """Where the last-chunk line of a chunked body (RFC 9112 §7.1) ends; None if the framing breaks first.

    >>> _last_chunk(b"3\\r\\nabc\\r\\n0\\r\\nTrailer: x\\r\\n\\r\\n"), _last_chunk(b"3\\r\\nabc\\r\\n")
    (11, None)
    """
    position = 0
    while True:
        line = _CHUNK_LINE.match(raw, position)
        if line is None:
            return None
        size = int(line.group(1), 16)
        if size == 0:
            return line.end()
        position = line.end() + size
        if raw[position : position + 2] != b"\r\n":
            return None
        position += 2


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


def _decode(record: object, raw: bytes, offset: int) -> tuple[bytes | None, list[str]]:
    """Undo chunking and content coding with warcio's ``content_stream()``; None when it cannot."""
    http = record.http_headers  # type: ignore[attr-defined]
    if http is None or not raw:
        return raw, []
    where = f"offset {offset}"
    transfer = [token.strip().lower() for token in (http.get_header("Transfer-Encoding") or "").split(",")]
    transfer = [token for token in transfer if token and token != "identity"]
    if transfer not in ([], ["chunked"]):
        return None, [f"{where}: Transfer-Encoding {http.get_header('Transfer-Encoding')!r} cannot be undone"]
    coding = [token.strip().lower() for token in (http.get_header("Content-Encoding") or "").split(",")]
    coding = [token for token in coding if token and token != "identity"]
    if len(coding) > 1 or (coding and coding[0] not in BufferedReader.get_supported_decompressors()):
        return None, [f"{where}: Content-Encoding {http.get_header('Content-Encoding')!r} cannot be decoded here"]
    problems: list[str] = []
    # warcio compares the field values exactly; the in-memory headers are made to say what they mean.
    if transfer:
        http.replace_header("Transfer-Encoding", "chunked")
        if not _CHUNK_LINE.match(raw):
            problems.append(f"{where}: Transfer-Encoding is chunked, but the body is not: taken as recorded")
        else:
            end = _last_chunk(raw)
            if end is None:
                return None, [f"{where}: the chunked body is cut short or malformed"]
            raw = raw[:end] + b"\r\n"  # warcio reads no trailer section (RFC 9112 §7.1.2); none is content
    if coding:
        http.replace_header("Content-Encoding", coding[0])
    live = record.raw_stream  # type: ignore[attr-defined]
    record.raw_stream = io.BytesIO(raw)  # type: ignore[attr-defined]
    try:
        with _captured() as noise:
            stream = record.content_stream()  # type: ignore[attr-defined]
            body = stream.read()
    except Exception as error:  # a decoder's own error
        return None, [f"{where}: the body cannot be decoded: {_clean(str(error)) or type(error).__name__}"]
    finally:
        record.raw_stream = live  # type: ignore[attr-defined]
    if _said(noise):
        return None, [f"{where}: the body cannot be decoded: {_said(noise)}"]
    if coding:
        decompressor = getattr(stream, "decompressor", None)
        if decompressor is None:
            problems.append(f"{where}: Content-Encoding is {coding[0]}, but the body is not: taken as recorded")
        elif not getattr(decompressor, "eof", True):
            return None, [f"{where}: the {coding[0]} body is cut short"]
        elif getattr(decompressor, "unused_data", b""):
            return None, [f"{where}: data after the end of the {coding[0]} body (a second member?)"]
    return body, problems


# --------------------------------------------------------------------------
# URLs and redirects
# --------------------------------------------------------------------------


def redirect_map(documents: Iterable[WarcDocument], *, rules: Rules = "rfc3986", strict: bool = True) -> dict[str, str]:
    """From each 3xx response with a ``Location``: its URL (:func:`url_key`) → the Location
    resolved against its target URI (RFC 9110 §10.2.2). The first record of a URL wins; a
    Location that cannot be resolved is left out.

    >>> page = WarcDocument("http://h/old", 301, None, None, b"", "new/", 0)
    >>> redirect_map([page])
    {'http://h/old': 'http://h/new/'}
    """
    redirects: dict[str, str] = {}
    for document in documents:
        status, location = document.status, document.location
        if status is None or not 300 <= status < 400 or not location or not location.strip():
            continue
        key = url_key(document.uri)
        if key in redirects:
            continue
        try:
            redirects[key] = resolve(document.uri, location.strip(), rules=rules, strict=strict)
        except UnresolvableReference:
            continue
    return redirects


def follow_redirects(
    url: str, redirects: Mapping[str, str], *, stop: Callable[[str], bool] | None = None
) -> str | None:
    """The URL a chain of *redirects* (from :func:`redirect_map`) leads *url* to: the first that
    does not redirect, or the first for which *stop* is true. None when the chain loops.

    >>> chain = {"http://h/a": "http://h/b", "http://h/b": "http://h/c", "http://h/x": "http://h/x"}
    >>> follow_redirects("http://h/a", chain), follow_redirects("http://h/x", chain)
    ('http://h/c', None)
    """
    seen: set[str] = set()
    current = url
    while True:
        if stop is not None and stop(current):
            return current
        key = url_key(current)
        if key in seen:
            return None
        seen.add(key)
        following = redirects.get(key)
        if following is None:
            return current
        current = following


# --------------------------------------------------------------------------
# The mirror
# --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WarcEntry:
    """What one record became: ``file`` is its path under the output folder (POSIX
    separators), None when it was not written; ``location`` the resolved Location of a
    redirect. A damaged part of the file is an entry with no ``url``."""

    url: str | None
    file: str | None
    status: int | None
    content_type: str | None
    offset: int
    problems: tuple[str, ...] = ()
    location: str | None = None
    links: int = 0  # links rewritten (or relinked) in it


@dataclass(frozen=True, slots=True)
class WarcReport:
    """The outcome of :func:`rewrite_warc` or :func:`unpack_warc`."""

    warc: Path
    out_dir: Path
    manifest: str | None  # its name under out_dir, None when it could not be written
    entries: tuple[WarcEntry, ...]  # in file order
    documents: tuple[str, ...]  # the files written, in file order
    links: int  # links rewritten or relinked
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def files(self) -> dict[str, str]:
        """Each URL written → its file under out_dir (what ``manifest.json`` records)."""
        return {entry.url: entry.file for entry in self.entries if entry.url is not None and entry.file is not None}

    def summary(self) -> str:
        """One line: what was written.

        >>> WarcReport(Path("a.warc"), Path("out"), MANIFEST, (), ("h/index.html",), 3, ()).summary()
        '1 file written (3 links rewritten or relinked), no problem'
        """
        files = len(self.documents)
        problems = len(self.problems)
        return (
            f"{files} file{'s' if files != 1 else ''} written ({self.links} link{'s' if self.links != 1 else ''} "
            f"rewritten or relinked), {problems or 'no'} problem{'s' if problems > 1 else ''}"
        )


@dataclass(slots=True)
class _Planned:
    offset: int
    url: str
    key: str
    status: int | None
    content_type: str | None
    folders: tuple[str, ...]
    leaf: str
    naming_type: str | None
    file: str | None = None
    problems: list[str] = field(default_factory=list)
    location: str | None = None  # a redirect's, resolved
    sent: str | None = None  # a redirect's Location field, as sent
    links: int = 0
    written: bool = False


def _success(kind: str, status: int | None) -> bool:
    """A resource record, or a 2xx response other than 206: a whole representation (RFC 9110 §15.3)."""
    return kind == "resource" if status is None else 200 <= status < 300 and status != 206


def _has_host(url: str) -> bool:
    try:
        return bool(urlsplit(url).netloc)
    except ValueError:
        return False


def _fits(extension: str, content_type: str | None) -> bool:
    """Whether a file name's *extension* says *content_type* (an .htm page, a .css sheet)."""
    if not extension or content_type is None:
        return False
    guessed = mimetypes.guess_type("x" + extension.lower(), strict=False)[0]
    return guessed == content_type or (guessed in HTML_TYPES and content_type in HTML_TYPES)


def _layout(url: str, content_type: str | None) -> tuple[tuple[str, ...], str]:
    """The raw folder names (host first) and file name of *url* in the mirror.

    >>> _layout("http://Example.org:8080/a/b/", "text/html")
    (('example.org_8080', 'a', 'b'), 'index')
    >>> _layout("https://h/search.html?q=a/b", "text/html")
    (('h',), 'search_q=a%2Fb.html')
    """
    bare = url.partition("#")[0]
    try:
        parts = urlsplit(bare)
        scheme, netloc, path, query = parts.scheme.lower(), parts.netloc, parts.path, parts.query
    except ValueError:
        scheme, _, rest = bare.partition("://")
        netloc, slash, rest = rest.partition("/")
        path, _, query = (slash + rest).partition("?")
    host = netloc.rpartition("@")[2].lower()
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit() and not name.endswith("]" if "[" in name else ":"):
        host = name if port == _DEFAULT_PORTS.get(scheme) else f"{name}_{port}"
    segments = remove_dot_segments(path).split("/")[1:] if path.startswith("/") else path.split("/")
    segments = segments or [""]
    folders, leaf = segments[:-1], segments[-1]
    if len(folders) > MAX_DEPTH:
        leaf = "_".join([*folders[MAX_DEPTH:], leaf])
        folders = folders[:MAX_DEPTH]
    leaf = leaf or "index"
    if "?" in bare:
        stem, extension = os.path.splitext(leaf)
        if not _fits(extension, content_type):
            stem, extension = leaf, ""
        leaf = f"{stem}_{query}{extension}"
    escape = str.maketrans({"/": "%2F", "\\": "%5C"})
    return tuple(raw.translate(escape) for raw in [host or scheme or "file", *folders]), leaf.translate(escape)


def _relative(path: str, folder: str) -> str:
    """*path* (under the output folder) as seen from *folder*, POSIX separators.

    >>> _relative("h/a/b.html", "h/c/d"), _relative("h/x.png", "h")
    ('../../a/b.html', 'x.png')
    """
    target, start = path.split("/"), folder.split("/") if folder else []
    common = 0
    while common < len(start) and common < len(target) - 1 and start[common] == target[common]:
        common += 1
    return "/".join([".."] * (len(start) - common) + target[common:])


class _Folders:
    """Open subfolders of the output folder by their names, the last few kept open."""

    def __init__(self, root: Folder, size: int = 32) -> None:
        self.root = root
        self.size = size
        self.open: OrderedDict[tuple[str, ...], Folder] = OrderedDict()

    def get(self, names: tuple[str, ...]) -> Folder:
        depth = len(names)
        while depth and names[:depth] not in self.open:
            depth -= 1
        folder = self.open[names[:depth]] if depth else self.root
        if depth:
            self.open.move_to_end(names[:depth])
        for index in range(depth, len(names)):
            folder = folder.folder(names[index])
            self.open[names[: index + 1]] = folder
            while len(self.open) > self.size:
                self.open.popitem(last=False)[1].close()
        return folder

    def close(self) -> None:
        for folder in self.open.values():
            folder.close()
        self.open.clear()


def _plan_names(root: Folder, planned: list[_Planned]) -> None:
    """Give each planned record its file: folders depth-first in URL order, so that a folder's
    names are all picked while it is open, and no two records share a name."""
    stack: list[tuple[str, Folder]] = []
    names: list[str] = []
    try:
        for item in sorted(planned, key=lambda item: (item.folders, item.leaf, item.key, item.offset)):
            common = 0
            while common < len(stack) and common < len(item.folders) and stack[common][0] == item.folders[common]:
                common += 1
            while len(stack) > common:
                stack.pop()[1].close()
                names.pop()
            try:
                for raw in item.folders[common:]:
                    parent = stack[-1][1] if stack else root
                    name = parent.pick(raw)
                    stack.append((raw, parent.folder(name)))
                    names.append(name)
            except OSError as error:
                item.problems.append(f"offset {item.offset}: no folder for it: {error.strerror or error}")
                continue
            parent = stack[-1][1] if stack else root
            item.file = "/".join([*names, parent.pick(item.leaf, item.naming_type)])
    finally:
        for _, folder in stack:
            folder.close()


def _naming_type(content_type: str | None) -> str | None:
    return "text/javascript" if content_type in _JAVASCRIPT else content_type


def rewrite_warc(
    path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, policy: Policy = DEFAULT_POLICY
) -> WarcReport:
    """Write each HTML and CSS page of the WARC at *path* (2xx responses and resource records)
    under *out_dir*, its relative links made absolute against its own ``WARC-Target-URI``.

    Each output is ``rewrite_html(body, url=target_uri, charset=charset, policy=policy)``
    (``rewrite_css`` for a style sheet) of the decoded body; see the module docstring for
    the layout. The WARC is only read; nothing is raised for what it holds.
    """
    return _mirror(Path(path), Path(out_dir), policy, unpack=False)


def unpack_warc(
    path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, policy: Policy = DEFAULT_POLICY
) -> WarcReport:
    """Write every resource of the WARC at *path* (2xx responses and resource records) under
    *out_dir*, as a mirror a browser can read offline.

    HTML and CSS are rewritten with ``policy.clone(remove_base=True, relink=...)``: a link
    whose absolute URL the WARC holds, directly or through its recorded redirects, becomes
    the relative path from the document's folder to that file (percent-encoded, fragment
    kept); every other link is made absolute. An HTML page whose charset only HTTP gave,
    and which a browser reading the file would guess otherwise, gets a ``<meta charset>``
    first.
    """
    return _mirror(Path(path), Path(out_dir), policy, unpack=True)


def _mirror(warc: Path, out_dir: Path, policy: Policy, *, unpack: bool) -> WarcReport:
    opened = _open(warc, out_dir, policy, unpack=unpack)
    if isinstance(opened, WarcReport):
        return opened
    root, manifest, entries, planned, problems = opened
    with root:
        files = {item.key: item.file for item in planned if item.file is not None}
        redirects = redirect_map(
            (WarcDocument(e.url, e.status, None, None, None, e.sent, e.offset) for e in entries if e.location),
            rules=policy.rules,
            strict=policy.strict,
        )
        by_offset = {item.offset: item for item in planned if item.file is not None}
        folders = _Folders(root)
        try:
            for item in _read_source(warc, lambda offset, *_: offset in by_offset):
                if isinstance(item, WarcDocument) and item.offset in by_offset:
                    _write(folders, by_offset[item.offset], item, policy, files, redirects, unpack)
        finally:
            folders.close()
        return _finish(warc, out_dir, root, manifest, entries, problems)


def _open(
    warc: Path, out_dir: Path, policy: Policy, *, unpack: bool
) -> tuple[Folder, str, list[_Planned], list[_Planned], list[str]] | WarcReport:
    """The first step of a mirror: the output folder, the manifest's name, every record's
    entry and the named plan of those to write (a report alone when the folder cannot be)."""

    def candidate(offset: int, kind: str, uri: str, status: int | None, content_type: str | None) -> bool:
        if not _success(kind, status) or not _has_host(uri):
            return False
        return unpack or content_type in DOCUMENT_TYPES

    try:
        root = Folder(out_dir)
    except OSError as error:
        problem = f"cannot write into {out_dir}: {error.strerror or error}"
        return WarcReport(warc, out_dir, None, (), (), 0, (problem,))
    problems: list[str] = []
    try:
        manifest = root.pick(MANIFEST)
        if manifest != MANIFEST:
            problems.append(f"{out_dir} already holds {MANIFEST}: the manifest is {manifest}")
        entries, planned = _plan(warc, candidate, unpack, policy)
        _plan_names(root, planned)
    except BaseException:
        root.close()
        raise
    return root, manifest, entries, planned, problems


def _finish(
    warc: Path, out_dir: Path, root: Folder, manifest: str, entries: list[_Planned], problems: list[str]
) -> WarcReport:
    """The last step of a mirror: each record's entry, ``manifest.json``, and the report."""
    frozen = tuple(
        WarcEntry(
            e.url or None,
            e.file if e.written else None,
            e.status,
            e.content_type,
            e.offset,
            tuple(e.problems),
            e.location,
            e.links,
        )
        for e in sorted(entries, key=lambda e: e.offset)
    )
    problems.extend(problem for entry in frozen for problem in entry.problems)
    listing = [
        {
            "url": entry.url,
            "file": entry.file,
            "status": entry.status,
            "content_type": entry.content_type,
            "offset": entry.offset,
            "problems": list(entry.problems),
            **({"location": entry.location} if entry.location else {}),
        }
        for entry in frozen
    ]
    written: str | None = manifest
    try:
        root.write(manifest, json.dumps(listing, indent=1, ensure_ascii=False).encode("utf-8") + b"\n")
    except OSError as error:
        problems.append(f"{MANIFEST} not written: {error.strerror or error}")
        written = None
    documents = tuple(entry.file for entry in frozen if entry.file is not None)
    return WarcReport(warc, out_dir, written, frozen, documents, sum(e.links for e in frozen), tuple(problems))


def _plan(warc: Path, candidate: Wanted, unpack: bool, policy: Policy) -> tuple[list[_Planned], list[_Planned]]:
    """The first pass: every record worth an entry, and those to write (first 2xx of each URL)."""
    entries: list[_Planned] = []
    planned: list[_Planned] = []
    first: dict[str, int] = {}
    for item in _read_source(warc, candidate):
        if isinstance(item, WarcDamage):
            entries.append(_Planned(item.offset, "", "", None, None, (), "", None, problems=[item.problem]))
            continue
        entry = _Planned(item.offset, item.uri, url_key(item.uri), item.status, item.content_type, (), "", None)
        entry.problems.extend(item.problems)
        if item.status is not None and 300 <= item.status < 400:
            if not item.location:
                continue
            entry.sent = item.location
            entry.location = _resolved_location(item, policy)
            if entry.location is None:
                entry.problems.append(f"offset {item.offset}: Location {item.location!r} cannot be resolved")
        elif candidate(item.offset, item.record_type, item.uri, item.status, item.content_type):
            if item.body is None:
                entry.problems.append(f"offset {item.offset}: not written")
            elif entry.key in first:
                entry.problems.append(
                    f"offset {item.offset}: {_clean(item.uri, 120)} is also the record at offset "
                    f"{first[entry.key]}, which is the one written"
                )
            else:
                first[entry.key] = item.offset
                entry.naming_type = _naming_type(item.content_type)
                entry.folders, entry.leaf = _layout(entry.key, entry.naming_type)
                planned.append(entry)
        elif item.status == 206 and _has_host(item.uri) and (unpack or item.content_type in DOCUMENT_TYPES):
            entry.problems.append(
                f"offset {item.offset}: 206 Partial Content holds only part of {_clean(item.uri, 120)}: not written"
            )
        elif not item.problems:
            continue
        entries.append(entry)
    return entries, planned


def _resolved_location(document: WarcDocument, policy: Policy) -> str | None:
    try:
        return resolve(document.uri, (document.location or "").strip(), rules=policy.rules, strict=policy.strict)
    except UnresolvableReference:
        return None


def _write(
    folders: _Folders,
    item: _Planned,
    document: WarcDocument,
    policy: Policy,
    files: Mapping[str, str],
    redirects: Mapping[str, str],
    unpack: bool,
) -> None:
    """The second pass, for one record: rewrite its body if it is HTML or CSS, and write it."""
    output = _rendered(item, document, policy, files, redirects, unpack)
    if output is not None:
        _store(folders, item, output)


def _store(folders: _Folders, item: _Planned, output: bytes) -> None:
    """Write one record's *output* to its planned file; a failure is the record's problem."""
    assert item.file is not None
    folder_path, _, name = item.file.rpartition("/")
    try:
        folders.get(tuple(folder_path.split("/")) if folder_path else ()).write(name, output)
    except (OSError, ValueError) as error:
        item.problems.append(f"offset {item.offset}: not written: {getattr(error, 'strerror', None) or error}")
        return
    item.written = True


def _rendered(
    item: _Planned,
    document: WarcDocument,
    policy: Policy,
    files: Mapping[str, str],
    redirects: Mapping[str, str],
    unpack: bool,
) -> bytes | None:
    """What one record's file holds: its body, HTML and CSS rewritten (relinked to the
    mirror when unpacking); None, with the record's problem noted, when it is not written."""
    if document.body is None or url_key(document.uri) != item.key:
        item.problems.append(f"offset {item.offset}: the record read differently the second time: not written")
        return None
    assert item.file is not None
    content_type = document.content_type
    engine = engine_for_type(content_type)
    if engine is None:
        return document.body
    folder_path = item.file.rpartition("/")[0]
    used = policy.clone(remove_base=True, relink=_relinker(files, redirects, folder_path)) if unpack else policy
    try:
        rewritten = engine.rewrite(document.body, url=document.uri, charset=document.charset, policy=used)
        result = cast("HTMLResult", rewritten)  # the engine of an HTML or CSS type
    except Exception as error:  # the engines never raise by contract; should one, the record is reported
        item.problems.append(f"offset {item.offset}: not rewritten: {_clean(str(error)) or type(error).__name__}")
        return None
    item.links = _tally(result, item)
    if unpack and content_type == "text/html":
        return declare_charset(document.body, result.output, document.charset, result.encoding)
    return result.output


def _tally(result: HTMLResult, item: _Planned) -> int:
    """Links rewritten or relinked; the document's own problems and links left relative go to *item*."""
    count = left = 0
    for link in result.links:
        if link.status == "rewritten" or link.status == "relinked":
            count += 1
        elif link.status == "no-base" or link.status == "unresolvable":
            left += 1
    item.problems.extend(f"offset {item.offset}: {problem}" for problem in result.problems)
    if left:
        item.problems.append(f"offset {item.offset}: {left} link{'s' if left > 1 else ''} left relative (unresolvable)")
    return count


def _relinker(files: Mapping[str, str], redirects: Mapping[str, str], folder: str) -> Callable[[str], str | None]:
    """The ``Policy.relink`` of one document in *folder*: a URL the mirror holds → its relative path."""

    def relink(url: str) -> str | None:
        target, mark, fragment = url.partition("#")
        final = follow_redirects(target, redirects, stop=lambda current: url_key(current) in files)
        path = files.get(url_key(final)) if final is not None else None
        if path is None:
            return None
        return quote(_relative(path, folder)) + mark + fragment

    return relink
