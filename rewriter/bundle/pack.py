"""Pack a saved page and the local files it uses into one MHTML file (RFC 2557) or one HTML file.

A browser saves a page as ``page.html`` and a ``page_files/`` folder. :func:`pack_mhtml`
makes one ``multipart/related`` message of them, each file a part named by its absolute
URL in ``Content-Location`` (RFC 2557 §4.2); :func:`pack_single_file` makes one HTML
file in which every local file is an RFC 2397 ``data:`` URL. Links to anything else
are made absolute. Nothing is fetched, and nothing outside the page's folder is read.

Which references are local files: every relative reference (no scheme, not ``//host``,
not ``#fragment``, not ``/path``) that loads a resource (``src``, ``srcset``, CSS
``url()`` and ``@import``, a ``<link>`` with a stylesheet, icon or preload ``rel``,
SVG ``href``...), with its query and fragment set aside and its path percent-decoded,
read from the folder of the document that holds it. Navigation links (``<a href>``,
``<form action>``, a ``<link rel=canonical>``) are made absolute, never packed. Local
CSS and HTML files (frames) are packed the same way, each file once.

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as folder:
...     page = Path(folder, "page.html")
...     _ = page.write_bytes(b'<p><img src="dot.gif" alt=x> <a href="next.html">next</a>')
...     _ = Path(folder, "dot.gif").write_bytes(b"GIF89a")
...     result = pack_single_file(page, url="https://example.org/p/page.html")
>>> result.output
b'<p><img src="data:image/gif;base64,R0lGODlh" alt=x> <a href="https://example.org/p/next.html">next</a>'
>>> [(part.path, part.content_location) for part in result.parts]
[('page.html', 'https://example.org/p/page.html'), ('dot.gif', 'https://example.org/p/dot.gif')]
"""

from __future__ import annotations

import base64
import email.header
import email.utils
import html
import io
import mimetypes
import os
import re
import secrets
import stat
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple, cast
from urllib.parse import quote, unquote_to_bytes

from rewriter.css.stylesheet import find_css_links
from rewriter.document.encoding import sniff
from rewriter.document.engines import engine, engine_for_type
from rewriter.document.model import DocumentResult, Link
from rewriter.html.engine import find_links, saved_from_mark, start_tags
from rewriter.mime.transfer import decode, encode
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem, as_problem
from rewriter.url.base import Base, Candidates, document_url, usable_as_base
from rewriter.url.resolve import parse

__all__ = ["MAX_SIZE", "PackError", "PackResult", "PackedPart", "pack_mhtml", "pack_single_file", "pack_warc"]

MAX_SIZE = 256 * 2**20  # bytes per file, the page included
UrlSource = Literal["argument", "saved-from-mark", "base-element", "file"]
_Kind = Literal["html", "css", "other"]

# The stdlib's own table only (the system's mime.types differs from one machine to the
# next), with the web types it lacks.
_TYPES = mimetypes.MimeTypes()
for _type, _extension in (
    ("font/woff", ".woff"),
    ("font/woff2", ".woff2"),
    ("font/ttf", ".ttf"),
    ("font/otf", ".otf"),
    ("application/vnd.ms-fontobject", ".eot"),
    ("image/webp", ".webp"),
    ("application/xhtml+xml", ".xhtml"),
    ("text/html", ".shtml"),
):
    _TYPES.add_type(_type, _extension)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Attributes that name a place to go or a description, not something the page loads.
_NOT_LOADED = frozenset(
    {"action", "formaction", "cite", "longdesc", "ping", "itemid", "profile", "usemap", "codebase", "manifest"}
)
_NAVIGATION_ELEMENTS = frozenset({"a", "area", "base"})
# <link rel> keywords whose target the page loads (HTML §4.6.7, and the icons browsers use).
_LOADED_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "apple-touch-startup-image",
        "mask-icon",
        "fluid-icon",
        "preload",
        "modulepreload",
    }
)
# RFC 3986 §2: the characters a URI may hold as they are; "%" stays, as escapes are kept.
_URI_CHARACTERS = "!#$%&'()*+,-./:;=?@[]_~"
_ESCAPED_BYTE = re.compile("[\udc00-\udcff]")  # a byte the page's encoding could not read (rewriter-escape)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_CONTROLS = re.compile(r"[\x00-\x1f\x7f]+")
_O_FLAGS = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
_WALK_BY_DESCRIPTOR = os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY") and hasattr(os, "O_NOFOLLOW")
_CRLF = b"\r\n"


class PackError(ValueError):
    """The page cannot be packed: it is missing, a folder, unreadable or too large."""


@dataclass(frozen=True, slots=True)
class PackedPart:
    """One file in the pack: its path under the page's folder, the URL that names it
    (``Content-Location``, RFC 2557 §4.2), its content type and its size in bytes."""

    path: str
    content_location: str
    content_type: str
    size: int


@dataclass(frozen=True, slots=True)
class PackResult:
    """The packed bytes and what went into them.

    ``url`` is the page's retrieval URL and ``url_source`` where it came from: the
    ``url`` argument, the browser's ``saved from url=`` mark, a ``<base href>``, or the
    page's own ``file:`` URL. ``parts`` come in output order, the page first.
    ``problems`` name each file that was not packed and why; ``notes`` say what else
    is worth knowing (the engines' own problems, cycles left absolute).
    """

    output: bytes
    url: str
    url_source: UrlSource
    parts: tuple[PackedPart, ...]
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    title: str | None = None  # the page's <title>, when it has one


@dataclass(slots=True, eq=False)
class _File:
    real: str  # the resolved path, inside the root
    name: str  # the path under the root, with "/", for messages and reports
    data: bytes
    location: str  # the absolute URL, as a URI (percent-encoded), fragment set aside
    content_type: str
    kind: _Kind
    children: list[_File] = field(default_factory=list)


def _as_uri(url: str) -> str:
    """*url* with every character a URI cannot hold percent-encoded as UTF-8 (RFC 3986 §2.1,
    RFC 3987 §3.1), so that it can go in a heading; escapes already there are kept.

    RFC 2557 §4.4.1 would also allow RFC 2047 encoded words in the heading; the
    percent-encoded form is what a browser resolves the page's links to, and it can be
    written in the page's links too, so that both match octet for octet (§8).

    >>> _as_uri("http://h/a/mi foto é.png?q=1#f")
    'http://h/a/mi%20foto%20%C3%A9.png?q=1#f'
    """
    url = _ESCAPED_BYTE.sub(lambda match: f"%{ord(match[0]) - 0xDC00:02X}", url)
    return quote(url, safe=_URI_CHARACTERS, errors="surrogatepass")


def _defragment(url: str) -> tuple[str, str]:
    """*url* without its fragment, and the fragment with its "#" ("" for none)."""
    hash_mark = url.find("#")
    return (url, "") if hash_mark < 0 else (url[:hash_mark], url[hash_mark:])


def _content_type(name: str) -> str:
    kind, encoding = _TYPES.guess_type(name, strict=False)
    return kind if kind is not None and encoding is None else "application/octet-stream"


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _local_path(reference: str) -> str | None:
    """The file path a relative reference names, percent-decoded (None: not a file reference).

    Query and fragment are set aside (RFC 3986 §3.4-3.5); the bytes the escapes give are
    the file name's bytes (``os.fsdecode``), raw characters are read as UTF-8.
    """
    if not reference or reference[0] in "#?" or reference.startswith("//"):
        return None
    if parse(reference).scheme is not None:
        return None
    path = reference.split("#", 1)[0].split("?", 1)[0]
    return os.fsdecode(unquote_to_bytes(path)) if path else None


def _link_rels(document: bytes) -> dict[str, set[str]]:
    """For each ``<link href>`` value, the ``rel`` keywords of the elements that have it."""
    rels: dict[str, set[str]] = {}
    for tag, attributes in start_tags(document):
        if tag == "link" and "href" in attributes:
            keywords = attributes.get("rel", "").lower().split()
            rels.setdefault(attributes["href"].strip("\t\n\f\r "), set()).update(keywords)
    return rels


def _loaded(link: Link, rels: Callable[[], dict[str, set[str]]]) -> bool:
    """Whether the page loads what *link* names (an image, a style sheet, a frame), as
    opposed to a place the reader may go."""
    if link.attribute in _NOT_LOADED or link.element == "meta":
        return False
    if link.attribute in ("href", "xlink:href"):
        if link.element in _NAVIGATION_ELEMENTS:
            return False
        if link.element == "link":
            keywords = rels().get(link.original)
            return keywords is None or not keywords.isdisjoint(_LOADED_RELS)  # None: in a conditional comment
    return True


def _stylesheet_link(link: Link, rels: Callable[[], dict[str, set[str]]]) -> bool:
    return link.element == "link" and "stylesheet" in rels().get(link.original, ())


def _title(page: bytes) -> str | None:
    """The text of the page's first ``<title>``, if a plain search finds one."""
    text = page[: 2**20].decode(sniff(page).codec, "replace")
    match = _TITLE.search(text)
    if match is None:
        return None
    title = " ".join(_CONTROLS.sub(" ", html.unescape(match.group(1))).split())
    return title[:500] or None


def _subject(title: str) -> str:
    """``Subject:`` with *title*, in RFC 2047 encoded words when it is not plain ASCII."""
    plain = title.isascii() and "=?" not in title
    header = email.header.Header(title, "us-ascii" if plain else "utf-8", header_name="Subject")
    return "Subject: " + header.encode(linesep="\r\n")


def _fold(name: str, url: str) -> str:
    """A URL heading within RFC 5322's 998 characters a line; a longer URL is folded
    anywhere, as RFC 2557 §4.4.2 allows (readers remove the white space)."""
    line = f"{name}: {url}"
    if len(line) <= 998:
        return line
    return "\r\n ".join(line[start : start + 900] for start in range(0, len(line), 900))


def _quoted_printable(data: bytes) -> bytes | None:
    """*data* quoted-printable (RFC 2045 §6.7), CRLF the hard line break: a lone CR or LF
    is escaped, so that decoding gives back exactly *data*. None if it would not."""
    encoded = encode(b"", "quoted-printable", data)
    return encoded if decode(encoded, "quoted-printable") == data else None


def _base64_lines(data: bytes) -> bytes:
    """*data* in base64, lines of 76 characters (RFC 2045 §6.8)."""
    encoded = base64.b64encode(data)
    return _CRLF.join(encoded[start : start + 76] for start in range(0, len(encoded), 76))


class _Packer:
    """The page, its local files and the URL of each: found once, written either way."""

    def __init__(self, page: Path, url: str | None, policy: Policy, max_size: int) -> None:
        self.policy = policy
        self.find_policy = policy.clone(relink=None, require_base=False)  # finding, never writing
        self.max_size = max_size
        self.problems: list[Problem] = []
        self.notes: list[Problem] = []
        page_path = Path(page)
        try:
            real = os.path.realpath(page_path)
        except (OSError, ValueError) as error:
            raise PackError(f"{page}: cannot be read: {error}") from error
        self.root = os.path.dirname(real)
        data = self._read_page(page_path, real)
        self.url, self.url_source = self._retrieval_url(data, url, Path(real))
        name = os.path.basename(real)
        self.page = _File(real, name, data, self.url, "text/html", "html")
        self.files: dict[str, _File] = {real: self.page}  # by real path: each file once
        self.by_url: dict[str, _File] = {self.url: self.page}  # every URL that names a file

    # -- reading -------------------------------------------------------------------------------------------------

    def _read_page(self, page: Path, real: str) -> bytes:
        try:
            fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError as error:
            raise PackError(f"{page}: no such file") from error
        except OSError as error:
            raise PackError(f"{page}: cannot be read: {error.strerror or error}") from error
        data = _read(fd, self.max_size)
        if isinstance(data, _Unread):
            raise PackError(f"{page}: {'is a folder, not a page' if data.folder else data.reason}")
        return data

    def _retrieval_url(self, data: bytes, url: str | None, real: Path) -> tuple[str, UrlSource]:
        """RFC 1808 §3.3 as :func:`~rewriter.url.base.document_url` orders it: the URL given,
        the ``saved from url=`` mark; else a ``<base href>``; else the page's own ``file:``
        URL (RFC 8089)."""
        if url is not None and not usable_as_base(url):
            raise PackError(f"url {url!r} cannot be the page's URL: it is not an absolute, hierarchical URL")
        chosen = document_url(_offered_by(data, retrieval=Base(url, "retrieval-url") if url is not None else None))
        if chosen is not None:
            return _as_uri(chosen.url), "argument" if chosen.layer == "retrieval-url" else "saved-from-mark"
        found = find_links(data, policy=self.find_policy)
        if found.layer == "base-element" and found.base is not None and usable_as_base(found.base):
            return _as_uri(found.base), "base-element"
        uri = real.as_uri()
        self.notes.append(
            Problem("no-url", f"the page has no URL (no url given, no saved-from mark, no <base href>): it is {uri}")
        )
        return uri, "file"

    def _refuse(self, shown: str, reason: str, reference: str, holder: _File) -> None:
        self.problems.append(
            Problem("not-packed", f"{reason} (referenced as {reference!r} in {holder.name}); not packed", (shown,))
        )

    def _open(self, real: str) -> int:
        """A descriptor of the file at *real* (inside the root), opened one folder at a time
        from the root, never through a symbolic link: one that appears after the checks
        fails the open."""
        if not _WALK_BY_DESCRIPTOR:
            return os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _O_FLAGS)
        names = os.path.relpath(real, self.root).split(os.sep)
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            for name in names[:-1]:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _O_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = inner
            return os.open(names[-1], os.O_RDONLY | os.O_NONBLOCK | _O_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)

    def _local(self, holder: _File, reference: str, path: str, link_is_stylesheet: bool, url: str) -> _File | None:
        """The file *path* (from *reference* in *holder*) names, read if it is new; None, with
        the problem noted, when it is outside the root, not a regular file, or unreadable.

        Nothing outside the root is opened: the path must be inside it as written (``..``
        taken lexically) and once every symbolic link is resolved, and it is then opened
        from the root one folder at a time, following no link.
        """
        if "\0" in path:
            self._refuse(path, "a file name cannot hold NUL", reference, holder)
            return None
        joined = os.path.join(os.path.dirname(holder.real), path)
        lexical = os.path.normpath(joined)
        if not _inside(lexical, self.root):
            self._refuse(path, f"is outside the page's folder {self.root}", reference, holder)
            return None
        shown = os.path.relpath(lexical, self.root).replace(os.sep, "/")
        real = os.path.realpath(joined)
        if not _inside(real, self.root):
            self._refuse(shown, f"leads by a symbolic link to {real}, outside the page's folder", reference, holder)
            return None
        known = self.files.get(real)
        if known is not None:
            return known
        if real == self.root:
            self._refuse(shown, "is a folder, not a file", reference, holder)
            return None
        try:
            fd = self._open(real)
        except FileNotFoundError:
            self._refuse(shown, "does not exist", reference, holder)
            return None
        except OSError as error:
            self._refuse(shown, f"cannot be read: {error.strerror or error}", reference, holder)
            return None
        data = _read(fd, self.max_size)
        if isinstance(data, _Unread):
            self._refuse(shown, data.reason, reference, holder)
            return None
        content_type = "text/css" if link_is_stylesheet else _content_type(real)
        found_engine = engine_for_type(content_type)
        kind: _Kind = found_engine.format if found_engine is not None else "other"  # type: ignore[assignment]
        if kind == "html":
            # A frame has its own chain: the URL its link gives is only guessed from where the
            # browser saved it (NAME_files/); its own saved-from mark says where it came from.
            chosen = document_url(_offered_by(data, guessed=Base(url, "retrieval-url")))
            url = chosen.url if chosen is not None else url
        found = _File(
            real, os.path.relpath(real, self.root).replace(os.sep, "/"), data, _as_uri(url), content_type, kind
        )
        self.files[real] = found
        return found

    # -- finding -------------------------------------------------------------------------------------------------

    def _links(self, document: _File) -> Iterator[tuple[Link, bool]]:
        """The links of *document* that load something, and whether each is a ``<link rel=stylesheet>``."""
        if document.kind == "css":
            for link in find_css_links(document.data, url=document.location, policy=self.find_policy).links:
                yield link, False
            return
        cache: list[dict[str, set[str]]] = []

        def rels() -> dict[str, set[str]]:
            if not cache:
                cache.append(_link_rels(document.data))
            return cache[0]

        for link in find_links(document.data, url=document.location, policy=self.find_policy).links:
            if _local_path(link.original) is not None and _loaded(link, rels):
                yield link, _stylesheet_link(link, rels)

    def find(self) -> None:
        """Every local file the page loads, breadth first: style sheets' and frames' own too."""
        queue: deque[_File] = deque([self.page])
        while queue:
            document = queue.popleft()
            for link, stylesheet in self._links(document):
                path = _local_path(link.original)
                if path is None:
                    continue
                if path.startswith("/"):
                    self.notes.append(
                        Problem(
                            "not-packed",
                            f"{link.original!r} in {document.name} names the root of the site, not a file beside "
                            "the page: it is made absolute, not packed",
                        )
                    )
                    continue
                if link.resolved is None or link.status != "rewritten":
                    self.notes.append(
                        Problem(
                            "not-packed",
                            f"{link.original!r} in {document.name}: {link.reason or link.status}; not packed",
                        )
                    )
                    continue
                url = _defragment(link.resolved)[0]
                target = self.by_url.get(url)
                if target is None:
                    before = len(self.files)
                    target = self._local(document, link.original, path, stylesheet, url)
                    if target is None:
                        continue
                    self.by_url[url] = target
                    self.by_url.setdefault(target.location, target)
                    if len(self.files) > before and target.kind != "other":
                        queue.append(target)
                if target not in document.children:
                    document.children.append(target)

    # -- writing -------------------------------------------------------------------------------------------------

    def _relinker(self, written: Callable[[_File], str | None]) -> Callable[[str], str | None]:
        """A ``Policy.relink``: a URL that names a packed file becomes *written* (file) with the
        URL's fragment; other URLs go to the caller's own relink, if any."""
        by_url, own = self.by_url, self.policy.relink

        def relink(url: str) -> str | None:
            bare, fragment = _defragment(url)
            target = by_url.get(bare)
            if target is None:
                return own(url) if own is not None else None
            new = written(target)
            return None if new is None or new == bare else new + fragment  # None: the usual absolute URL

        return relink

    def _rewrite(self, document: _File, relink: Callable[[str], str | None]) -> DocumentResult:
        kind = cast(Literal["html", "css"], document.kind)  # only pages and style sheets are rewritten
        result = engine(kind).rewrite(document.data, url=document.location, policy=self.policy.clone(relink=relink))
        self.notes.extend(as_problem(problem, "left-as-is").at(document.name) for problem in result.problems)
        return result

    def parts(self) -> tuple[PackedPart, ...]:
        return tuple(
            PackedPart(file.name, file.location, file.content_type, len(file.data)) for file in self.files.values()
        )

    def result(self, output: bytes) -> PackResult:
        return PackResult(
            output,
            self.url,
            self.url_source,
            self.parts(),
            tuple(dict.fromkeys(self.problems)),
            tuple(dict.fromkeys(self.notes)),
            _title(self.page.data),
        )

    def mhtml(self) -> bytes:
        """RFC 2557: a multipart/related message, the page first, then every file it loads."""

        def location(file: _File) -> str | None:
            return file.location  # a URL that is not the part's own is written as it (RFC 2557 §8)

        relink = self._relinker(location)
        bodies: list[tuple[list[str], bytes]] = []
        for file in self.files.values():
            content_type, body, transfer = file.content_type, b"", "base64"
            if file.kind != "other":
                result = self._rewrite(file, relink)
                content_type = f"{file.content_type}; charset={result.encoding}"
                encoded = _quoted_printable(result.output)
                if encoded is None:
                    self.notes.append(
                        Problem(
                            "encoding", "in base64, as quoted-printable would not give back its bytes", (file.name,)
                        )
                    )
                    body = _base64_lines(result.output)
                else:
                    body, transfer = encoded, "quoted-printable"
            else:
                body = _base64_lines(file.data)
            heading = [
                f"Content-Type: {content_type}",
                f"Content-Transfer-Encoding: {transfer}",
                _fold("Content-Location", file.location),
            ]
            bodies.append((heading, body))
        boundary = _boundary([body for _, body in bodies])
        title = _title(self.page.data) or self.page.name
        lines = [
            "From: <Saved by rewriter>",
            _fold("Snapshot-Content-Location", self.url),
            _subject(title),
            f"Date: {email.utils.formatdate()}",
            "MIME-Version: 1.0",
            "Content-Type: multipart/related;",
            '\ttype="text/html";',
            f'\tboundary="{boundary}"',
            "",
            "",
        ]
        out = [("\r\n".join(lines)).encode("ascii")]
        delimiter = b"--" + boundary.encode("ascii")
        for heading, body in bodies:
            out += (delimiter, _CRLF, "\r\n".join(heading).encode("ascii"), _CRLF, _CRLF, body, _CRLF)
        out += (delimiter, b"--", _CRLF)
        return b"".join(out)

    def warc(self, date: str) -> bytes:
        """A WARC file (WARC 1.1, gzip: a member per record, Annex D): a ``warcinfo`` record, then
        a ``resource`` record (§6.5: a file with no HTTP around it) for each file, the page first,
        named by its URL (``WARC-Target-URI``) and captured at *date* (``WARC-Date``). A page and
        a style sheet are written as MHTML's parts are: links to packed files as those files' URLs,
        every other link absolute; the other files as they are. Written by warcio."""
        from warcio.warcwriter import WARCWriter

        def location(file: _File) -> str | None:
            return file.location

        relink = self._relinker(location)
        buffer = io.BytesIO()
        writer = WARCWriter(buffer, gzip=True, warc_version="WARC/1.1")
        writer.write_record(
            writer.create_warcinfo_record(
                "page.warc.gz", {"software": "rewriter pack", "format": "WARC File Format 1.1", "isPartOf": self.url}
            )
        )
        for file in self.files.values():
            content_type, body = file.content_type, file.data
            if file.kind != "other":
                result = self._rewrite(file, relink)
                content_type, body = f"{file.content_type}; charset={result.encoding}", result.output
            record = writer.create_warc_record(
                file.location,
                "resource",
                payload=io.BytesIO(body),
                length=len(body),
                warc_content_type=content_type,
                warc_headers_dict={"WARC-Date": date},
            )
            writer.write_record(record)
        return buffer.getvalue()

    def single_file(self) -> bytes:
        """RFC 2397: the page with every local file a ``data:`` URL, style sheets and frames
        first given their own files the same way (depth first, so each is whole when used)."""
        done: dict[str, str] = {}  # real path: data: URL
        open_: set[str] = set()

        def written(file: _File) -> str | None:
            return done.get(file.real)  # None while it is being made: a cycle, left absolute

        relink = self._relinker(written)
        for file in self.files.values():
            if file.kind == "other":
                done[file.real] = f"data:{file.content_type};base64,{base64.b64encode(file.data).decode('ascii')}"
        output = self.page.data
        stack: list[tuple[_File, Iterator[_File]]] = [(self.page, iter(self.page.children))]
        open_.add(self.page.real)
        while stack:
            document, children = stack[-1]
            child = next(
                (c for c in children if c.kind != "other" and c.real not in done and c.real not in open_), None
            )
            if child is not None:
                open_.add(child.real)
                stack.append((child, iter(child.children)))
                continue
            stack.pop()
            for inner in document.children:
                if inner.real in open_ and inner.real not in done:
                    self.notes.append(
                        Problem(
                            "not-packed",
                            f"{document.name} loads {inner.name}, which loads it in turn: that link is left as "
                            f"{inner.location}",
                        )
                    )
            result = self._rewrite(document, relink)
            if document is self.page:
                output = result.output
            else:
                payload = base64.b64encode(result.output).decode("ascii")
                done[document.real] = f"data:{document.content_type};charset={result.encoding};base64,{payload}"
            open_.discard(document.real)
        return output


def _offered_by(page: bytes, **handed: Base | None) -> Candidates:
    """The candidates for a page's URL: what the caller hands (*handed*) and its saved-from mark."""
    mark = saved_from_mark(page)
    return Candidates(saved_from=Base(mark, "saved-from-mark") if mark is not None else None, **handed)


class _Unread(NamedTuple):
    """Why a file's bytes cannot be had: the reason, and whether it is a folder."""

    reason: str
    folder: bool = False


def _read(fd: int, limit: int) -> bytes | _Unread:
    """The bytes of the regular file open as *fd* (closed here), or why they cannot be had:
    a folder, a pipe or a device is not read at all, a file over *limit* bytes neither."""
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            return _Unread("is a folder, not a file", folder=True)
        if not stat.S_ISREG(info.st_mode):
            return _Unread("is not a regular file")
        if info.st_size > limit:
            return _Unread(f"is larger than the limit ({info.st_size} > {limit} bytes)")
        with os.fdopen(fd, "rb", closefd=False) as stream:
            data = stream.read(limit + 1)
    except OSError as error:
        return _Unread(f"cannot be read: {error.strerror or error}")
    finally:
        os.close(fd)
    if len(data) > limit:
        return _Unread(f"is larger than the limit ({limit} bytes)")  # it grew while being read
    return data


def _boundary(bodies: list[bytes]) -> str:
    """A random boundary (RFC 2046 §5.1.1) found in no body. "=_" cannot occur in
    quoted-printable or base64 text, so the first one drawn always serves."""
    while True:
        boundary = f"----=_rewriter_{secrets.token_hex(16)}"
        delimiter = b"--" + boundary.encode("ascii")
        if not any(delimiter in body for body in bodies):
            return boundary


def _packer(page: Path, url: str | None, policy: Policy, max_size: int) -> _Packer:
    packer = _Packer(page, url, policy, max_size)
    packer.find()
    return packer


def pack_mhtml(
    page: Path, *, url: str | None = None, policy: Policy = DEFAULT_POLICY, max_size: int = MAX_SIZE
) -> PackResult:
    """One MHTML file (RFC 2557 ``multipart/related``) of *page* and the local files it loads.

    The page's retrieval URL is *url*, else the ``saved from url=`` mark, else a ``<base
    href>``, else its ``file:`` URL (a note says so). Each part's ``Content-Location`` is
    its file's absolute URL, as a URI; the page part is ``rewrite_html(page, url=...)``
    and a style sheet part ``rewrite_css(sheet, url=its URL)``, in quoted-printable
    (RFC 2045 §6.7), every other part base64. A file named by several URLs (a query,
    another spelling, a character a heading cannot carry) is one part, and each link to
    it is written as that part's Content-Location, so that RFC 2557 §8 matches it octet
    for octet. Files outside the page's folder, links that lead out of it, files that
    cannot be read or are over *max_size* are named in ``problems`` and left out; only
    a page that cannot be read raises :class:`PackError`.
    """
    packer = _packer(page, url, policy, max_size)
    return packer.result(packer.mhtml())


def pack_warc(
    page: Path,
    *,
    url: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_SIZE,
    date: str | None = None,
) -> PackResult:
    """One WARC file (WARC 1.1, gzip) of *page* and the local files it loads, each a ``resource``
    record named by its URL and dated *date* (ISO 8601; default: now), the page and its style
    sheets written as :func:`pack_mhtml` writes its parts: what
    :func:`rewriter.containers.wacz.pack_wacz` makes a WACZ of. The same files as
    :func:`pack_mhtml`."""
    import datetime

    packer = _packer(page, url, policy, max_size)
    if packer.url_source == "file":
        packer.notes.append(
            Problem(
                "no-url",
                f"its records are named by its file: URL ({packer.url}), which replay tools may not open: "
                "give --url with the address it was saved from",
                (packer.page.name,),
            )
        )
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return packer.result(packer.warc(date))


def pack_single_file(
    page: Path, *, url: str | None = None, policy: Policy = DEFAULT_POLICY, max_size: int = MAX_SIZE
) -> PackResult:
    """One HTML file: *page* with each local file it loads an RFC 2397 ``data:`` URL.

    The same files as :func:`pack_mhtml`; a style sheet or frame is itself packed this
    way before it is inlined, and a link that would inline a file in itself (a cycle)
    is left absolute. Every other link is made absolute, and every other byte of the
    page is as it was.
    """
    packer = _packer(page, url, policy, max_size)
    return packer.result(packer.single_file())
