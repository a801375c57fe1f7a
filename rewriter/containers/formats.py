"""What a file is: a page, a style sheet, a MIME message, an mbox, a web archive (WARC or
ARC), a WACZ (a ZIP of web archives) or none of them (an image, a font, a script, data).
:func:`what_file_is` decides, once per input, from its first bytes, the type declared for it
(a WARC record's or a MIME part's Content-Type) and its name; the planner records the decision
in the job, and nothing reads the head again.

Kept apart from the engines so that telling a file's format imports none of them: a batch
of pages never imports the MIME engine (and the ``email`` package), which cost every
command line 17-22 ms of start-up.

>>> what_file_is(b"<!DOCTYPE html><title>t</title>", "view.php?id=2")
Kind(format='html', reason='an HTML signature (WHATWG MIME Sniffing 7.1)')
>>> what_file_is(b"<a href='" + b"' + path_to_root + '>", "searcher.js").format
'other'
"""

from __future__ import annotations

import codecs
import io
import os
import re
import zlib
from collections.abc import Callable
from functools import cache
from typing import BinaryIO, Literal, NamedTuple

__all__ = [
    "ARC_LINE",
    "CODECS",
    "COMPRESSED_MBOXES",
    "SNIFF_SIZE",
    "Codec",
    "Container",
    "Format",
    "Kind",
    "KindOfFile",
    "codec_of",
    "container_format",
    "detect_format",
    "gzip_holds_arc",
    "gzip_holds_warc",
    "is_arc",
    "is_wacz",
    "is_warc",
    "kind_of_path",
    "sniff_container",
    "what_file_is",
]

Format = Literal["mbox", "message", "html", "css", "unknown"]
Container = Literal["warc", "arc"]  # the web archives: a file of records, told by its path

Codec = Literal["gzip", "xz", "zstd"]  # the compressions a file is read through (rewriter.containers.compressed)
# Each compression's signature, at the start of the file.
CODECS: dict[bytes, Codec] = {
    b"\x1f\x8b": "gzip",  # RFC 1952 §2.3.1: ID1 ID2
    b"\xfd7zXZ\x00": "xz",  # the .xz file format §2.1.1.1: Header Magic Bytes
    b"\x28\xb5\x2f\xfd": "zstd",  # RFC 8878 §3.1.1: Magic_Number 0xFD2FB528, little-endian
}

SNIFF_SIZE = 8192  # how much of a file's head what_file_is needs (a gzip archive's first record too)
_WARC_PEEK = 1 << 20  # how much compressed data gzip_holds_warc reads at most
_ARC_HEAD = 4096  # how much of an ARC file's first record container_format reads

# The first line of an ARC v1 record, "URL IP-address Archive-date Content-type Archive-length"
# (the Internet Archive's ARC File Format 1.0, "URL record definition"): the URL may hold spaces,
# the other four fields hold none, and warcio reads the line from its right end the same way.
ARC_LINE = re.compile(rb"[A-Za-z][A-Za-z0-9+.\-]*:[^\r\n]* [^ \r\n]+ [0-9]{12,14} [^ \r\n]+ [0-9]+\r?\n")
# An ARC v1 file opens with its version block: a filedesc:// URL record whose block's first line
# is "1 <reserved> <origin-code>" (version 1; version 2 has other URL-record fields).
_ARC_VERSION_BLOCK = re.compile(rb"filedesc://[^\r\n]*\r?\n1 ")

_UTF16_BOMS = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}


# RFC 5322 §3.6.8 field name (printable ASCII but ":"); RFC 5322 §4.5.4 obsolete syntax
# allows white space before the colon, and real mail has it ("X-Odd : v").
_FIELD = re.compile(rb"([\x21-\x39\x3b-\x7e]+)[ \t]*:")
# Fields that only MIME entities have: one of them makes a heading a message's.
_MIME_FIELDS = frozenset(
    {
        b"mime-version",
        b"content-type",
        b"content-transfer-encoding",
        b"content-location",
        b"content-base",
        b"content-id",
        b"content-disposition",
        b"content-description",
    }
)
# Mail fields (RFC 5322 §3.6, trace fields, common extensions; any X-* field counts too).
# Each also begins some text files ("Date: 2024-01-01"), so two of them are needed.
_MAIL_FIELDS = frozenset(
    {
        b"from",
        b"to",
        b"cc",
        b"bcc",
        b"subject",
        b"date",
        b"received",
        b"return-path",
        b"message-id",
        b"reply-to",
        b"sender",
        b"delivered-to",
        b"in-reply-to",
        b"references",
        b"resent-from",
        b"resent-to",
        b"resent-date",
        b"resent-message-id",
        b"dkim-signature",
        b"arc-seal",
        b"authentication-results",
        b"list-id",
        b"list-unsubscribe",
        b"user-agent",
        b"snapshot-content-location",
    }
)
# Markup: a tag, a comment, a doctype, a processing instruction or an end tag.
_MARKUP = re.compile(rb"<[A-Za-z!?/]")
_CSS_COMMENT = re.compile(rb"/\*.*?\*/", re.S)


# Only style sheets open with one of these at-rules, or with a rule whose block holds a
# declaration ("name:"), a comment or nothing. Compiled at its first use (0.6 ms): a file that
# opens with markup never asks.
@cache
def _css_start() -> Callable[[bytes], re.Match[bytes] | None]:
    return re.compile(
        rb"@(?:charset|import|namespace|media|font-face|supports|layer|page|keyframes|-webkit-keyframes"
        rb"|counter-style|property|container|font-feature-values)\b"
        rb"|[^<{}@;\"']{1,1000}\{\s*(?:-*[A-Za-z][-\w]*\s*:|\}|/\*)",
        re.I,
    ).match


_NAMES: dict[str, Format] = {
    ".mbox": "mbox",
    ".mbx": "mbox",
    ".eml": "message",
    ".mht": "message",
    ".mhtml": "message",
    ".mime": "message",
    ".mim": "message",
    ".css": "css",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".shtml": "html",
}


def _is_heading(lines: list[bytes]) -> bool:
    """Whether *lines* begin with a message heading (see :func:`detect_format`, rule 3)."""
    mime = mail = 0
    for line in lines:
        line = line.rstrip(b"\r")
        if not line:
            break  # the blank line that ends the heading
        if line[:1] in (b" ", b"\t"):
            continue  # folded; flanker-enclosed-rfc822.eml even opens with such a line
        field = _FIELD.match(line)
        if field is None:
            break  # not a heading (any more): what was read so far decides
        name = field.group(1).lower()
        if name in _MIME_FIELDS:
            mime += 1
        elif name in _MAIL_FIELDS or name.startswith(b"x-"):
            mail += 1
    return mime > 0 or mail > 1


def _gzip_head(stream: BinaryIO, position: int, size: int) -> bytes:
    """The first *size* bytes (or fewer) the gzip member at *position* decompresses to; b"" when
    none can be (reads at most 1 MiB of compressed data)."""
    stream.seek(position)
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out, read = b"", 0
    try:
        while len(out) < size and not decompressor.eof and read < _WARC_PEEK:
            data = stream.read(65536)
            if not data:
                break
            read += len(data)
            out += decompressor.decompress(decompressor.unconsumed_tail + data, size - len(out))
    except zlib.error:
        return b""
    return out


def gzip_holds_warc(stream: BinaryIO, position: int) -> bool:
    """Whether the gzip member at *position* begins with ``WARC/`` (reads at most 1 MiB)."""
    return _gzip_head(stream, position, 5).startswith(b"WARC/")


def gzip_holds_arc(stream: BinaryIO, position: int) -> bool:
    """Whether the gzip member at *position* begins with an ARC v1 record's first line (see
    :data:`ARC_LINE`; reads at most 1 MiB)."""
    return ARC_LINE.match(_gzip_head(stream, position, _ARC_HEAD)) is not None


def sniff_container(stream: BinaryIO, position: int = 0) -> Container | None:
    """The archive that begins at *position* of a seekable *stream*, plain or gzip (one member
    per record: WARC 1.1 Annex D; an ARC file's gzip form is the same): ``warc`` for a record
    whose first line is ``WARC/`` (WARC 1.1 §4), ``arc`` for an ARC v1 version block (a
    ``filedesc://`` URL record whose block opens with version ``1``), None otherwise. Reads a few
    KB; raises what the stream raises."""
    stream.seek(position)
    head = stream.read(_ARC_HEAD)
    if head.startswith(b"\x1f\x8b"):
        head = _gzip_head(stream, position, _ARC_HEAD)
    return _container_of(head)


def _container_of(record: bytes) -> Container | None:
    """The web archive whose first record opens with *record* (decompressed): ``warc`` for a
    first line ``WARC/`` (WARC 1.1 §4), ``arc`` for an ARC v1 version block, else None."""
    if record.startswith(b"WARC/"):
        return "warc"
    if _ARC_VERSION_BLOCK.match(record):
        return "arc"
    return None


def container_format(path: str | os.PathLike[str]) -> Container | None:
    """Which web archive *path* is: ``warc``, ``arc`` or None (neither, or unreadable), from its
    first record (see :func:`sniff_container`). Never raises.

    >>> import gzip, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     arc = pathlib.Path(folder) / "crawl.arc.gz"
    ...     version_block = b"filedesc://crawl.arc 0.0.0.0 20240501120000 text/plain 9\\n1 0 test\\n"
    ...     _ = arc.write_bytes(gzip.compress(version_block))
    ...     print(container_format(arc), container_format(__file__))
    arc None
    """
    try:
        with open(path, "rb") as stream:
            return sniff_container(stream)
    except (OSError, ValueError):
        return None


def is_arc(path: str | os.PathLike[str]) -> bool:
    """Whether *path* is an ARC v1 file (see :func:`container_format`). Never raises."""
    return container_format(path) == "arc"


def is_warc(path: str | os.PathLike[str]) -> bool:
    """Whether *path* is a WARC file: it begins with ``WARC/``, or is gzip whose first
    member does (WARC 1.1 §4 and Annex D). Reads a few bytes; never raises.

    >>> import gzip, pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = pathlib.Path(folder) / "crawl.warc.gz"
    ...     _ = path.write_bytes(gzip.compress(b"WARC/1.1\\r\\n"))
    ...     print(is_warc(path), is_warc(__file__))
    True False
    """
    try:
        with open(path, "rb") as stream:
            head = stream.read(5)
            if head.startswith(b"WARC/"):
                return True
            return head.startswith(b"\x1f\x8b") and gzip_holds_warc(stream, 0)
    except (OSError, ValueError):
        return False


def detect_format(head: bytes, name: str | None = None) -> Format:
    """What a file is, from its first few KB (*head*); its *name* only breaks ties.

    The rules, first match wins:

    1. A UTF-8 byte order mark is skipped (mimekit-unmunged.mbox has one). A UTF-16 one
       means text that is no mail: rules 2 and 3 are skipped.
    2. ``mbox``: the first line starts with ``From `` and the next line is a header
       field (``name:``), as after every mbox separator. A single message saved with its
       envelope line (flanker-torture.mbox, mime4j-mp-msg-rfc822.eml) is an mbox of one.
    3. ``message``: the file opens with header fields (folded lines allowed, a first line
       of white space too), and the fields before the first line that is not one include
       a MIME field (MIME-Version, Content-*) or two mail fields (From, To, Subject,
       Date, Received, Return-Path, Message-ID, X-*, ...). One is not enough: text
       pages open with "Date: ..." or "Note: ..." (never a mail field) too.
    4. ``html``: the first non-blank byte opens markup: ``<`` then a letter, ``!``,
       ``?`` or ``/`` (except ``<!--`` in a file named .css, where it is CSS's CDO).
    5. ``css``: the content is clearly CSS (starts, after comments, with an at-rule such
       as ``@import`` or with a rule ``selector { name: ...``) and has no markup.
    6. ``unknown``: binary data, none of these: a NUL byte, or the signature of an image,
       PDF, archive or compressed file.
    7. The name: .mbox/.mbx, .eml/.mht/.mhtml/.mime, .css, .html/.htm/.xhtml.
    8. ``html`` (text with no markup has no links, and comes back unchanged).

    >>> detect_format(b"From: a@example.org\\r\\nSubject: hi\\r\\n\\r\\n<p>hi</p>")
    'message'
    >>> detect_format(b"Note: this page moved.\\n\\n<p><a href=new.html>here</a></p>")
    'html'
    >>> detect_format(b"body { margin: 0 }"), detect_format(b"", "site.css")
    ('css', 'css')
    >>> detect_format(b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00\\x00\\rIHDR", "logo.html")
    'unknown'
    """
    fmt = _content(head, _suffix(name))[0]
    return "html" if fmt == "text" else fmt


def _content(head: bytes, suffix: str) -> tuple[Format | Literal["text"], str]:
    """:func:`detect_format`'s answer and why (the words :class:`Kind` carries); ``text`` for
    text that none of the rules took (rule 8). *suffix*: the name's (:func:`_suffix`)."""
    head = head[:SNIFF_SIZE]
    mail_possible = True
    if head.startswith(codecs.BOM_UTF8):
        head = head[len(codecs.BOM_UTF8) :]
    elif head[:2] in _UTF16_BOMS:
        head = head[2:].decode(_UTF16_BOMS[head[:2]], "replace").encode("utf-8", "replace")
        mail_possible = False
    if mail_possible:
        first = head.split(b"\n", 2)  # a page's head is not split into its lines: the first two tell
        if first[0].startswith(b"From ") and len(first) > 1 and _FIELD.match(first[1]):
            return "mbox", "an mbox: a From_ line, then a header field"
        opening = first[0][:1] in (b" ", b"\t") or _FIELD.match(first[0]) is not None
        if opening and _is_heading(head.split(b"\n", 64)[:64]):
            return "message", "a message: it opens with header fields (RFC 5322 3.6, RFC 2045 3)"
    text = head.lstrip(b" \t\r\n\f")
    if _MARKUP.match(text) and not (suffix == ".css" and text.startswith(b"<!--")):
        if _HTML_SIGNATURE.match(text):
            return "html", "an HTML signature (WHATWG MIME Sniffing 7.1)"
        return "html", "markup at its first byte"
    sheet = _CSS_COMMENT.sub(b" ", text).lstrip(b" \t\r\n\f")
    if _css_start()(sheet) and not _MARKUP.search(sheet):
        return "css", "a style sheet: an at-rule or a rule with declarations first"
    for signature, what in _BINARY_SIGNATURES.items():
        if head.startswith(signature):
            return "unknown", f"binary data ({what}, by its signature)"
    if _BINARY_BYTE.search(head):
        return "unknown", "binary data (a binary data byte: WHATWG MIME Sniffing 7.1)"
    if suffix in _NAMES:
        return _NAMES[suffix], f"its name ({suffix}): the content does not tell"
    return "text", "text with markup further on"


def _suffix(name: str | None) -> str:
    """The extension of *name*'s last segment, in lower case, before any "?" (wget keeps a
    URL's query in the name: ``casts.html?from=query`` is a .html)."""
    if not name:
        return ""
    return os.path.splitext(os.path.basename(name).split("?", 1)[0])[1].lower()


# WHATWG MIME Sniffing §7.1 (identifying a resource with an unknown MIME type), step "HTML":
# these, without regard to case, each followed by a tag-terminating byte (space or ">");
# and "<?xml" (text/xml). Only the reason uses it: any markup at the first byte is a page.
_HTML_SIGNATURE = re.compile(
    rb"(?:<!DOCTYPE HTML|<HTML|<HEAD|<SCRIPT|<IFRAME|<H1|<DIV|<FONT|<TABLE|<A|<STYLE|<TITLE|<B|<BODY|<BR|<P"
    rb"|<!--)[ >]|<\?xml",
    re.I,
)
# WHATWG MIME Sniffing §3 "binary data byte": 0x00-0x08, 0x0B, 0x0E-0x1A, 0x1C-0x1F.
_BINARY_BYTE = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")


# Files people keep beside pages and mail: images, fonts, PDF, archives, compressed data
# (WHATWG MIME Sniffing 6.1 and 6.3 give most of these signatures).
_BINARY_SIGNATURES = {
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"%PDF-": "a PDF document",
    b"PK\x03\x04": "a ZIP archive",
    b"\x1f\x8b": "gzip data",
    b"BZh": "bzip2 data",
    b"\xfd7zXZ": "xz data",
    b"7z\xbc\xaf": "a 7-Zip archive",
    b"RIFF": "a RIFF file (WebP, WAV, AVI)",
    b"\x00\x00\x01\x00": "an icon",
    b"wOFF": "a WOFF font",
    b"wOF2": "a WOFF2 font",
}


# mbox.gz, mbox.xz, mbox.zst: an mbox compressed with gzip, xz or Zstandard (read and written
# back through rewriter.containers.compressed); emlx: Apple Mail's message file.
KindOfFile = Literal[
    "html", "css", "message", "mbox", "mbox.gz", "mbox.xz", "mbox.zst", "emlx", "warc", "arc", "wacz", "other"
]


class Kind(NamedTuple):
    """What :func:`what_file_is` decided: the engine or container that reads the file
    (*format*; ``other``: none, the file is copied as it is) and why, in words (*reason*:
    what ``explain`` and a run's messages say). Immutable; a named tuple, not a dataclass
    (docs/decisions.md, "What every run makes at start")."""

    format: KindOfFile
    reason: str

    @property
    def document(self) -> bool:
        """Whether an engine or a container reads it (a folder walk takes it). A WACZ is read
        only when named (its WARC files taken out of it: rewriter.cli.verbs.wacz); one found
        in a folder is copied as it is."""
        return self.format not in ("other", "wacz")


# The name rules. Scripts and data are never documents, whatever they hold: mdBook's
# searcher.js holds '<a href="' + path_to_root + '">', which the HTML engine would rewrite.
_NOT_DOCUMENTS = {
    ".js": "a script",
    ".mjs": "a script",
    ".cjs": "a script",
    ".json": "JSON data",
    ".map": "a source map",
}
# Names a server serves as a type that is not HTML (text/plain, text/markdown, text/csv, XML):
# a browser never reads them as a page (WHATWG MIME Sniffing 7 sniffs only unknown types,
# and text/plain only for binary data), so neither does a walk, whatever markup they hold.
# Any other name leaves it to the content (a wget mirror's view.php?id=2 or a page saved
# with no extension is a page).
_NOT_PAGES = {
    ".txt": "plain text",
    ".md": "Markdown text",
    ".csv": "CSV data",
    ".svg": "an SVG image",
    ".xml": "XML",
    ".xsl": "an XSLT style sheet",
    ".rss": "a feed",
    ".atom": "a feed",
}
# A declared type (a WARC record's or a MIME part's Content-Type: RFC 2045 5.1, its essence
# without parameters) that says which engine reads it. Any other type is no document; these
# say nothing and leave it to the content (WHATWG MIME Sniffing 7.1 sniffs the first three;
# a server's text/plain and octet-stream are often wrong).
_DECLARED: dict[str, KindOfFile] = {
    "text/html": "html",
    "application/xhtml+xml": "html",
    "text/css": "css",
    "message/rfc822": "message",
    "multipart/related": "message",
    "application/x-mimearchive": "message",
    "application/mbox": "mbox",
}
_UNDECLARED = frozenset({"", "unknown/unknown", "application/unknown", "*/*", "text/plain", "application/octet-stream"})


def what_file_is(head: bytes, name: str | None = None, declared: str | None = None) -> Kind:
    """What a file is, from its first :data:`SNIFF_SIZE` bytes (*head*), the type declared
    for it (*declared*, a Content-Type) and its *name*. The one place this is decided.

    In order, first match wins:

    1. A web archive, plain or gzip, by its first record: ``warc`` (WARC 1.1 §4, Annex D),
       ``arc`` (an ARC v1 version block). The content alone: an archive is one whatever
       its name or type. A ZIP file (its signature) named ``.wacz``, or whose first member
       is one of a WACZ's (``archive/``, ``indexes/``, ``pages/``, ``datapackage.json``):
       ``wacz``; so is any file named ``.wacz`` (reading it says what is wrong with it).
    2. The declared type, when it names one: text/html and application/xhtml+xml,
       text/css, message/rfc822 and multipart/related, application/mbox. Any other type
       (image/png, text/javascript, application/json, ...) is ``other``. None, text/plain,
       application/octet-stream and the unknown types say nothing: on to the content.
    3. An mbox compressed with gzip, xz or Zstandard (``mbox.gz``, ``mbox.xz``, ``mbox.zst``):
       the compression's signature, and an mbox (rule 2 of :func:`detect_format`) at the start
       of what it decompresses to, or a name .mbox.gz, .mbx.xz, ... (a file that does not
       decompress is then named by the job that reads it). Other compressed data goes on to
       rule 4, and is binary data there.
    4. An Apple Mail message file (``emlx``): a name ending in .emlx (.partial.emlx too), or a
       first line that is a byte count alone (digits) followed by a message heading (rule 3
       of :func:`detect_format`). A file so named whose count is wrong is said by the job.
    5. A script or data by its name (.js, .mjs, .cjs, .json, .map): ``other``, whatever it
       holds; it is copied as it is.
    6. The content (:func:`detect_format`): an mbox, a message, markup, a style sheet,
       binary data (``other``: WHATWG MIME Sniffing 7.1's binary data bytes, or an image,
       font, PDF or archive signature), the name breaking ties. Text that is none of these
       is a page when markup follows further on in *head*, else ``other`` (text/plain).
    7. What the content calls a page, the name may veto: a .css is a style sheet (never
       HTML); a .txt, .md, .csv, .svg, .xml, .xsl, .rss or .atom file is not a page
       (``other``): its server declares another type.

    >>> what_file_is(b"<p>a", "casts.html?from=query").format, what_file_is(b"<p>a", "style.css").format
    ('html', 'css')
    >>> what_file_is(b"<p>a", "x.js", declared="text/html; charset=utf-8").format
    'html'
    >>> what_file_is(b"\\x89PNG\\r\\n\\x1a\\n\\0\\0\\0\\rIHDR", "logo.html")
    Kind(format='other', reason='binary data (a PNG image, by its signature)')
    """
    archive = _archive(head)
    if archive is not None:
        return archive
    suffix = _suffix(name)
    if is_wacz(head, name):
        return Kind("wacz", "a WACZ: a ZIP file of web archives (WACZ 1.1.1)")
    if suffix == ".wacz":  # reading it says what is wrong with it, by name
        return Kind("wacz", "named .wacz, though no ZIP file")
    if declared is not None:
        essence = declared.split(";", 1)[0].strip().lower()
        if essence in _DECLARED:
            return Kind(_DECLARED[essence], f"declared {essence}")
        if essence not in _UNDECLARED:
            return Kind("other", f"declared {essence}, not a document")
    mail = _compressed_mbox(head, name) or _emlx(head, suffix)
    if mail is not None:
        return mail
    if suffix in _NOT_DOCUMENTS:
        return Kind("other", f"{_NOT_DOCUMENTS[suffix]} by its name ({suffix}), not a document")
    fmt, reason = _content(head, suffix)
    if fmt == "unknown":
        return Kind("other", reason)
    if fmt == "text":
        if not _MARKUP.search(head):  # a script, a key, a note: a page would have a tag by now
            return Kind("other", "text with no markup (WHATWG MIME Sniffing 7.1: text/plain), no links")
        fmt = "html"
    if fmt == "html" and suffix == ".css":
        return Kind("css", "a style sheet by its name (.css), never read as HTML")
    if fmt == "html" and suffix in _NOT_PAGES:
        return Kind("other", f"{_NOT_PAGES[suffix]} by its name ({suffix}), not a page")
    return Kind(fmt, reason)


# The names of a compressed mbox: .mbox or .mbx, then the compression's own suffix.
_COMPRESSED_MBOX: dict[str, KindOfFile] = {"gzip": "mbox.gz", "xz": "mbox.xz", "zstd": "mbox.zst"}
_COMPRESSED_SUFFIXES = {".gz": "gzip", ".xz": "xz", ".zst": "zstd"}
COMPRESSED_MBOXES = frozenset(_COMPRESSED_MBOX.values())  # the kinds of a compressed mbox
_EMLX_COUNT = re.compile(rb"[ \t]*[0-9]{1,18}[ \t]*\r?\n")  # an .emlx file's first line: its message's byte count


def codec_of(head: bytes) -> Codec | None:
    """The compression whose signature (:data:`CODECS`) *head*, a file's first bytes, begins
    with; None for none.

    >>> codec_of(b"\\xfd7zXZ\\x00\\x00\\x04"), codec_of(b"From a")
    ('xz', None)
    """
    for magic, codec in CODECS.items():
        if head.startswith(magic):
            return codec
    return None


def _unpacked_head(head: bytes, codec: Codec, size: int) -> bytes:
    """The first *size* bytes (or fewer) that *head*, the start of a *codec*-compressed file,
    decompresses to; b"" when it does not decompress (or, for Zstandard, the ``zstandard``
    package is missing). Never more than *size* bytes are made, whatever *head* holds."""
    try:
        if codec == "gzip":
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, size)
        if codec == "xz":
            import lzma  # only for compressed data: telling a page's format imports no decompressor

            return lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(head, size)
        import zstandard

        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(head), read_across_frames=True)
        out = b""
        while len(out) < size:
            chunk = reader.read(size - len(out))
            if not chunk:
                break
            out += chunk
        return out
    except Exception:  # zlib.error, lzma.LZMAError, zstandard.ZstdError, ImportError, EOFError
        return b""


def _compressed_mbox(head: bytes, name: str | None) -> Kind | None:
    """The :class:`Kind` of an mbox compressed with gzip, xz or Zstandard (rule 3 of
    :func:`what_file_is`); None for any other file."""
    codec = codec_of(head)
    if codec is None:
        return None
    kind = _COMPRESSED_MBOX[codec]
    inside = _unpacked_head(head, codec, 4096)
    if inside.startswith(codecs.BOM_UTF8):
        inside = inside[len(codecs.BOM_UTF8) :]
    lines = inside.split(b"\n", 2)
    if lines[0].startswith(b"From ") and len(lines) > 1 and _FIELD.match(lines[1]):
        return Kind(kind, f"an mbox, {codec}-compressed: a From_ line, then a header field")
    stem, packed = os.path.splitext(os.path.basename(name or "").split("?", 1)[0].lower())
    if _COMPRESSED_SUFFIXES.get(packed) == codec and _suffix(stem) in (".mbox", ".mbx"):
        return Kind(kind, f"an mbox, {codec}-compressed, by its name ({_suffix(stem)}{packed})")
    return None


def _emlx(head: bytes, suffix: str) -> Kind | None:
    """The :class:`Kind` of an Apple Mail message file (rule 4 of :func:`what_file_is`); None
    for any other file."""
    if suffix == ".emlx":
        return Kind("emlx", "an Apple Mail message (.emlx) by its name")
    count = _EMLX_COUNT.match(head)
    if count is not None and _is_heading(head[count.end() :].split(b"\n", 64)[:64]):
        return Kind("emlx", "an Apple Mail message (.emlx): a byte count, then a message heading")
    return None


def _archive(head: bytes) -> Kind | None:
    """A web archive's :class:`Kind`, from the first bytes of its first record (decompressed
    from *head* when it is gzip); None for any other file."""
    gzip = head.startswith(b"\x1f\x8b")
    record = _gzip_head(io.BytesIO(head), 0, _ARC_HEAD) if gzip else head
    packed = ", gzip (WARC 1.1 Annex D)" if gzip else ""
    container = _container_of(record)
    if container is None:
        return None
    what = "a WARC record (WARC 1.1 4)" if container == "warc" else "an ARC v1 version block"
    return Kind(container, f"{what}{packed}")


_ZIP_ENTRY = b"PK\x03\x04"  # a ZIP file's local file header (APPNOTE.TXT 4.3.7), its first bytes
_WACZ_MEMBERS = (b"archive/", b"indexes/", b"pages/", b"datapackage.json", b"datapackage-digest.json")


def is_wacz(head: bytes, name: str | None = None) -> bool:
    """Whether the file opening with *head* is a WACZ (WACZ 1.1.1): a ZIP file named ``.wacz``,
    or one whose first member (the name in its first local file header) is a WACZ's. Only
    the head: :func:`rewriter.containers.wacz.read_wacz` finds out whether it holds a WARC.

    >>> first = b"PK\\x03\\x04" + bytes(22) + b"\\x10\\x00\\x00\\x00datapackage.json"
    >>> is_wacz(first), is_wacz(b"PK\\x03\\x04", "a.zip")
    (True, False)
    """
    if not head.startswith(_ZIP_ENTRY):
        return False
    if name is not None and _suffix(name) == ".wacz":
        return True
    if len(head) < 30:
        return False
    length = int.from_bytes(head[26:28], "little")
    member = head[30 : 30 + length]
    return member.startswith(_WACZ_MEMBERS)


def kind_of_path(path: str | os.PathLike[str], declared: str | None = None) -> Kind:
    """:func:`what_file_is` for the file at *path*: its head read once (a regular file: a
    named pipe would block). Raises OSError when it cannot be read."""
    with open(path, "rb") as stream:
        head = stream.read(SNIFF_SIZE)
    return what_file_is(head, os.fspath(path), declared)
