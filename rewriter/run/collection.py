"""Collections as users have them: each file's retrieval URL, and the local copies it links to.

A folder of pages is rarely one document's worth of context. A wget or HTTrack mirror lays
each page out under the path it was served at; a browser's "Save Page As, complete" writes
``page.html`` beside ``page_files/``; a folder of exports may carry no URL at all. This
module holds what the command line knows about such a collection:

- :class:`Locations`: each file's retrieval URL (the RFC 1808 §3.3 layer, still below any
  ``<base>``, MIME heading or saved-from mark), from ``--url-root`` (the folder stands for a
  URL, and each file for that URL joined with its path under the folder) and ``--url-map``
  (a list of path and URL pairs);
- :class:`Layout`: how the files were named (``--layout``): ``plain``, each path its URL's
  path; ``wget``, the names GNU Wget gives a query, ``-E``'s extension, a folder's page and
  the characters it escapes, read back to their URLs; ``httrack``, a page's URL from the
  ``<!-- Mirrored from ... -->`` mark HTTrack writes into it (its name may be a hash of a query);
- :class:`LocalCopies`: a :attr:`Policy.keep <rewriter.policy.Policy.keep>` that keeps as
  written a relative reference naming a file of the collection on disk, unless that file's
  own URL is where the reference resolves (then the absolute URL is the right one); under a
  wget layout, a reference naming a file (``wget -k``'s) is written as that file's URL.

>>> root = Locations(root="http://example.org/site/")
>>> root.url_of("mirror/docs/guide/index.html", "mirror")
'http://example.org/site/docs/guide/index.html'
>>> root.url_of("mirror/a b/caf\\u00e9 #1.html", "mirror")
'http://example.org/site/a%20b/caf%C3%A9%20%231.html'
>>> Locations(root="auto").url_of("mirror/example.org:8080/docs/index.html", "mirror")
'http://example.org:8080/docs/index.html'
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, cast
from urllib.parse import quote, unquote, unquote_to_bytes, urlsplit

from rewriter.disk.files import kind_of
from rewriter.disk.listings import Listings
from rewriter.document.process import SharedClassifications
from rewriter.policy import Kept
from rewriter.url.base import usable_as_base
from rewriter.url.resolve import scheme_of

__all__ = [
    "AUTO_ROOTS",
    "LAYOUTS",
    "PLAIN_LAYOUT",
    "SCRIPT_EXTENSIONS",
    "CollectionError",
    "Layout",
    "LayoutError",
    "LocalCopies",
    "Locations",
    "is_host_folder",
    "load_url_map",
    "path_url",
    "read_url_map",
]

# --url-root values that read the host from the folder names a mirror was written with.
AUTO_ROOTS = {"auto": "http", "auto:http": "http", "auto:https": "https"}

# What a file path's characters become in a URL path, as browsers write a file: URL: the URL
# Standard's path percent-encode set (C0 controls, space, " # < > ? ^ ` { }), with "%" itself
# (a literal "%" in a file name is not an escape) and every byte of a non-ASCII name (UTF-8,
# or the name's own bytes where it is not UTF-8).
_PATH_SAFE = "/!$&'()*+,-.:;=@[]_|~"  # "^" is in the set since 2024, as ada-url writes it


# A folder named as wget -m and HTTrack name a host's: a DNS name of two labels or more, an
# IPv4 address, or localhost, with an optional :port (wget writes "host:port"). Compiled at its
# first use (0.9 ms): only a run whose --url-root names no host asks.
@cache
def _host_folder() -> Callable[[str], re.Match[str] | None]:
    return re.compile(
        r"(?:(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?"
        r"|(?:\d{1,3}\.){3}\d{1,3}|localhost)(?::\d{1,5})?",
        re.IGNORECASE,
    ).fullmatch


# --------------------------------------------------------------------------
# --layout: how a mirror tool named its files, read back to their URLs
# --------------------------------------------------------------------------
# The --layout values: a plain copy (the path is the URL's), wget's names with its
# --restrict-file-names modes after a colon (wget:windows,nocontrol), or HTTrack's pages, each
# naming its own URL in its "Mirrored from" mark.
LAYOUTS = ("plain", "wget", "httrack")
_SYSTEMS = ("unix", "windows")
_MODIFIERS = ("nocontrol", "ascii", "lowercase", "uppercase")

# Extensions of pages a server makes (PHP, ASP, JSP, CGI, ColdFusion, server-side includes...):
# a name ending in one of these and then ".html" is taken for wget's -E on such a page.
SCRIPT_EXTENSIONS = frozenset(
    {
        "php",
        "php3",
        "php4",
        "php5",
        "phtml",
        "asp",
        "aspx",
        "ashx",
        "jsp",
        "jspx",
        "do",
        "action",
        "cgi",
        "pl",
        "py",
        "cfm",
        "shtml",
        "shtm",
        "stm",
        "xhtml",
        "nsf",
        "dll",
        "exe",
    }
)

# What a URL segment keeps as it is (as path_url writes a path): "/" is escaped too, since a
# segment that holds one came from "%2F".
_SEGMENT_SAFE = _PATH_SAFE.replace("/", "")
# What a query keeps: the characters a query holds as they are, and "%" before two hex digits
# (an escape); every other byte escaped (a space, "#", a "%" alone, a byte above 127).
_QUERY_SAFE = _PATH_SAFE + "?%"
_LONE_PERCENT = re.compile(rb"%(?![0-9A-Fa-f]{2})")
# Bytes wget escapes in a query that a URL's query holds as they are ("/", "?", ":", "*"): its
# escape of another byte (a control character, '"', "<", ">") stays one in the URL.
_QUERY_RAW = frozenset(b"/?:*")
_ESCAPE = re.compile(rb"%([0-9A-F]{2})")  # wget writes upper-case hex (XNUM_TO_DIGIT)


class LayoutError(ValueError):
    """A --layout value that names no layout; the message says which are."""


@dataclass(frozen=True, slots=True)
class Layout:
    """How the files of a collection are named (``--layout``): ``plain`` (each path is its URL's
    path), ``wget`` with its ``--restrict-file-names`` modes (*system*, *control*, *ascii*,
    *case*), read back to the URLs they were fetched from, or ``httrack`` (each page names its
    URL in HTTrack's mark; any other file keeps its URL's path).

    ``--url-root`` joins a file's path under the input folder to a URL, as it is: right for a copy
    laid out by the URL's path, wrong for the names GNU Wget gives what is not a plain path. A
    :class:`Layout` reads a path as wget wrote it and gives back the URL path (percent-encoded)
    that wget was fetching. What wget writes, from its manual (GNU Wget 1.21, §2.3 Download Options,
    ``--restrict-file-names``; §2.6 HTTP Options, ``--adjust-extension`` and ``--default-page``) and
    its source (``src/url.c``: ``url_file_name``, ``append_dir_structure``, ``append_uri_pathel``,
    ``filechr_table`` and ``FILE_CHAR_TEST``, ``FN_QUERY_SEP``, ``FN_PORT_SEP``; ``src/http.c``:
    ``ensure_extension``):

    1. each folder of the URL's path is unescaped (``%20`` is a space) and written with the
       characters the file system cannot hold escaped as ``%XX``, two upper-case hex digits
       (``append_uri_pathel``); a folder named ``..`` is written ``%2E%2E``;
    2. the file: the last segment unescaped (an empty one, a URL ending in ``/``, is the
       ``--default-page``, ``index.html``), then, when the URL has a query, the query separator
       and the query, unescaped too by wget 1.21 (``a%26b`` is ``a&b``, ``%20`` a space; a wget of
       the source above keeps its escapes), the whole escaped as in 1;
    3. the query separator is ``?``; ``@`` under ``--restrict-file-names=windows`` (``FN_QUERY_SEP``),
       and a host's port follows ``+`` instead of ``:`` there (``FN_PORT_SEP``);
    4. what is escaped (``filechr_table``): ``/`` (and NUL) under ``unix``, wget's default on a POSIX
       system; ``\\ | / : ? " * < >`` under ``windows``; the control characters (0-31, 127) too unless
       ``nocontrol`` is given; every byte above 127 under ``ascii``; ``lowercase`` and ``uppercase``
       change the case of every letter written (which no reading can undo);
    5. ``-E`` (``--adjust-extension``): a page served as text/html (or XHTML) whose name, query
       included, does not end in ``.html`` or ``.htm`` (any case) gets ``.html`` appended; a style
       sheet served as text/css whose name does not end in ``.css`` gets ``.css``
       (``ensure_extension``; the ``.N.html`` form it uses when it may not overwrite a file is never
       written by ``-m``/``-r``, which may).

    The reading, step by step backwards, and where a name alone is ambiguous:

    - a ``%XX`` of the set the mode escapes (upper-case hex) is the byte it stands for; any other
      ``%`` is a literal one (wget never escapes ``%``). A name holding ``%2F`` may also be the URL
      ``%252F`` unescaped: the escape is the reading chosen;
    - in the query, which wget 1.21 unescaped, what a URL's query cannot hold as it is (a space,
      ``#``, ``"``, a ``%`` alone, a byte above 127) is escaped again; a ``%`` before two hex digits
      is kept as the escape it was (older wget kept the query's escapes), and what a query holds
      either way stays as it is: ``a&b`` cannot tell ``a%26b`` apart, it is read as ``a&b``;
    - the first query separator that does not start the name splits file and query (a name never
      starts with its query: the default page comes first). Under ``windows`` a URL whose path holds
      ``@`` (``/@user``) is read as a query after the ``@``; under ``unix``, a path holding ``%3F``;
    - the appended extension is taken off only where the name shows it was appended: it has a
      query (``casts.html?from=query.html``), or the name before it ends in an extension that names a
      server-side page (``view.php.html``, :data:`SCRIPT_EXTENSIONS`), and no file of that shorter
      name lies beside it. A name such as ``about.html`` may be wget's for the URL ``about`` served
      as HTML, or the URL ``about.html``: it is read as ``about.html`` (give ``--url-map`` for such a
      site). ``show?page=a.html`` (a query ending in ``.html`` that wget left alone) is read as
      ``show?page=a``: the rare case the rule gets wrong;
    - ``index.html`` (the file of a folder URL) is read as the folder's URL, its query kept: the
      link ``docs/`` that ``wget -k`` wrote as ``docs/index.html`` is ``docs/`` again (a site's own link
      to ``docs/index.html`` becomes ``docs/``, which a server answers with the same page);
    - the case a ``lowercase`` or ``uppercase`` mode changed is not restored.

    >>> wget = Layout.read("wget")
    >>> wget.url_path("casts.html?from=query.html"), wget.url_path("docs/index.html")
    ('casts.html?from=query', 'docs/')
    >>> Layout.read("wget:windows").url_path("caf\\u00e9 menu/view.php@id=2&x=a%3Ab.html")
    'caf%C3%A9%20menu/view.php?id=2&x=a:b'
    """

    tool: Literal["plain", "wget", "httrack"] = "plain"
    system: Literal["unix", "windows"] = "unix"
    control: bool = True  # control characters escaped (wget's default; "nocontrol" turns it off)
    ascii: bool = False  # bytes above 127 escaped ("ascii")
    case: Literal["", "lowercase", "uppercase"] = ""
    default_page: str = "index.html"

    @classmethod
    def read(cls, value: str) -> Layout:
        """The layout *value* names: ``plain``, ``wget`` or ``wget:MODES``, MODES as wget's
        ``--restrict-file-names`` takes them (``unix`` or ``windows``, ``nocontrol``, ``ascii``,
        ``lowercase`` or ``uppercase``, comma-separated). :class:`LayoutError` otherwise.

        >>> Layout.read("wget:windows,nocontrol")
        Layout(tool='wget', system='windows', control=False, ascii=False, case='', default_page='index.html')
        """
        tool, colon, modes = value.partition(":")
        if tool not in LAYOUTS or (colon and tool != "wget"):
            raise LayoutError(f"--layout {value!r}: choose plain, wget, wget:MODES (wget:windows,nocontrol) or httrack")
        system: Literal["unix", "windows"] = "unix"
        case: Literal["", "lowercase", "uppercase"] = ""
        control, ascii = True, False
        for mode in modes.split(",") if colon else ():
            if mode == "unix":
                system = "unix"
            elif mode == "windows":
                system = "windows"
            elif mode == "nocontrol":
                control = False
            elif mode == "ascii":
                ascii = True
            elif mode == "lowercase":
                case = "lowercase"
            elif mode == "uppercase":
                case = "uppercase"
            else:
                raise LayoutError(
                    f"--layout {value!r}: {mode!r} is none of wget's --restrict-file-names modes read here "
                    f"({', '.join((*_SYSTEMS, *_MODIFIERS))})"
                )
        return cls(cast(Literal["plain", "wget", "httrack"], tool), system, control, ascii, case)

    @property
    def reads_names(self) -> bool:
        """Whether names are read back as a tool wrote them (every file a copy of its URL)."""
        return self.tool != "plain"

    @property
    def query_separator(self) -> bytes:
        return b"@" if self.system == "windows" else b"?"

    def _escaped(self) -> frozenset[int]:
        """The bytes wget writes as %XX under this layout's modes (filechr_table, FILE_CHAR_TEST)."""
        escaped = {0, ord("/")}
        if self.system == "windows":
            escaped.update(b'\\|/:?"*<>')
        if self.control:
            escaped.update(range(0x20))
            escaped.add(0x7F)
        if self.ascii:
            escaped.update(range(0x80, 0x100))
        return frozenset(escaped)

    def host(self, folder: str) -> str:
        """The URL authority a host folder stands for (``host+8080`` under ``windows``)."""
        if self.system == "windows":
            return re.sub(r"\+(\d{1,5})$", r":\1", folder)
        if self.tool == "httrack":  # HTTrack writes host_port
            return re.sub(r"_(\d{1,5})$", r":\1", folder)
        return folder

    def url_path(self, relative: str, exists: Callable[[str], bool] | None = None) -> str:
        """The URL path, percent-encoded and without its leading ``/``, of the file *relative*
        (``/``-separated, under the folder that stands for the root) as this layout named it.
        *exists*: whether a file of a relative path is in the collection (the name without an
        appended extension is asked for); None: none is.

        >>> Layout.read("wget").url_path("a/%2E%2E/view.php.html")
        'a/%2E%2E/view.php'
        """
        if not relative:
            return ""
        *folders, name = relative.split("/")
        decode = _decoder(self._escaped())
        path = [_segment(folder, decode) for folder in folders]
        stem = self._without_extension(name)
        if stem != name and exists is not None and exists("/".join((*folders, stem))):
            stem = name  # the shorter name is a file of its own: nothing was appended
        raw = os.fsencode(stem)
        cut = raw.find(self.query_separator, 1)
        file, query = (raw, None) if cut < 0 else (raw[:cut], raw[cut + 1 :])
        if file == os.fsencode(self.default_page):
            path.append("")
        else:
            path.append(quote(decode(file), safe=_SEGMENT_SAFE))
        written = "/".join(path)
        if query is not None:
            query = _LONE_PERCENT.sub(b"%25", _decoder(self._escaped() & _QUERY_RAW)(query))
            written += "?" + quote(query, safe=_QUERY_SAFE)
        return written

    def _without_extension(self, name: str) -> str:
        """*name* without the extension -E appended, where the name shows it was appended."""
        for appended, own in ((".html", (".html", ".htm")), (".css", (".css",))):
            if not name.endswith(appended) or len(name) == len(appended):
                continue
            stem = name[: -len(appended)]
            last = stem.rfind(".")
            if last >= 0 and stem[last:].lower() in own:
                return name  # wget appends only to a name not ending so: this one is the URL's
            separator = os.fsdecode(self.query_separator)
            if stem.find(separator, 1) > 0:
                return stem  # a query: wget's own name
            if last > 0 and stem[last + 1 :].lower() in SCRIPT_EXTENSIONS:
                return stem
        return name


def _decoder(escaped: frozenset[int]) -> Callable[[bytes], bytes]:
    """The bytes of a name with wget's escapes of the bytes *escaped* undone."""

    def byte(match: re.Match[bytes]) -> bytes:
        value = int(match.group(1), 16)
        return bytes((value,)) if value in escaped else match.group(0)

    def decode(name: bytes) -> bytes:
        return _ESCAPE.sub(byte, name) if b"%" in name else name

    return decode


def _segment(folder: str, decode: Callable[[bytes], bytes]) -> str:
    """One folder of the path, percent-encoded (wget's ``%2E%2E`` for ``..`` kept as it is)."""
    if folder == "%2E%2E":
        return folder
    return quote(decode(os.fsencode(folder)), safe=_SEGMENT_SAFE)


PLAIN_LAYOUT = Layout()


class CollectionError(ValueError):
    """An --url-root or --url-map that cannot be used; the message names the value or the
    file, and *problems* each line of the file that cannot be used (its number, the reason)."""

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


def path_url(root: str, relative: str) -> str:
    """*root* (a folder URL) joined with the file path *relative* (``/``-separated), its
    characters percent-encoded as a browser writes them in a path; ``index.html`` is kept.

    >>> path_url("http://h/", "docs/a b/%41.html")
    'http://h/docs/a%20b/%2541.html'
    """
    encoded = quote(os.fsencode(relative), safe=_PATH_SAFE)
    return root + encoded.lstrip("/")


def is_host_folder(name: str) -> bool:
    """Whether a folder name is a host as a mirror tool writes it (``example.org``,
    ``127.0.0.1:8000``, ``localhost``), and not an ordinary folder (``docs``, ``page_files``).

    >>> [is_host_folder(name) for name in ("example.org", "127.0.0.1:8000", "docs", "page_files", "a.html")]
    [True, True, False, False, True]
    """
    return _host_folder()(name) is not None


def _below(absolute: str, top: str) -> str | None:
    """The path of *absolute* below the folder *top* (both absolute and normal), "/" between
    its names ("" for *top* itself), or None when it lies outside."""
    if _CASELESS:  # names compared as the system compares them
        try:
            relative = Path(os.path.relpath(absolute, top)).as_posix()
        except ValueError:  # another drive
            return None
        if relative == ".." or relative.startswith("../"):
            return None
        return "" if relative == "." else relative
    if absolute == top:
        return ""
    below = top if top.endswith(os.sep) else top + os.sep
    if not absolute.startswith(below):
        return None
    relative = absolute[len(below) :]
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


def _absolute(path: str | os.PathLike[str]) -> str:
    """*path* absolute and normalised, links not followed: how a file is looked up."""
    return os.path.abspath(path)  # normalised by abspath itself


@dataclass(frozen=True, slots=True)
class Locations:
    """Where the files of a collection were retrieved from.

    *root*: the URL the input folder stands for (a folder URL, ending in ``/``), or one of
    :data:`AUTO_ROOTS`: the host is the name of the input folder or of its first folder,
    as wget and HTTrack write them. *mapped*: absolute file path to URL (``--url-map``),
    asked first. *layout* (``--layout``): how a path under the root is read back to its URL
    (:class:`Layout`: ``plain``, the path as it is; ``wget``, the names wget gives a
    query, ``-E``'s extension, a folder's page and the characters it escapes).

    >>> wget = Locations(root="http://h/", layout=Layout.read("wget"))
    >>> wget.url_of("m/view.php?id=2.html", "m"), wget.url_of("m/docs/index.html", "m")
    ('http://h/view.php?id=2', 'http://h/docs/')
    """

    root: str | None = None
    mapped: Mapping[str, str] = field(default_factory=dict)
    layout: Layout = PLAIN_LAYOUT

    def __post_init__(self) -> None:
        if self.root is not None and self.root not in AUTO_ROOTS and not self.root.endswith("/"):
            object.__setattr__(self, "root", self.root + "/")  # a folder URL

    def url_of(
        self, path: str | os.PathLike[str], tree: str | os.PathLike[str] | None, places: Places | None = None
    ) -> str | None:
        """The retrieval URL of the file *path* of the input folder *tree*, or None (*places*: where
        its folder lies, when the run worked it out for the folder: :meth:`Places.of_document`)."""
        absolute = _absolute(path) if places is None else places.absolute(os.fspath(path))
        mapped = self.mapped.get(absolute)
        if mapped is not None or self.root is None or tree is None:
            return mapped
        top = _absolute(tree) if places is None else places.top
        relative = _below(absolute, top)
        if relative is None:
            return None
        scheme = AUTO_ROOTS.get(self.root)
        if scheme is None:
            return self._joined(self.root, top, relative)
        real = os.path.realpath(top)
        host = self._host(os.path.basename(real))
        if host is not None:  # the input is the host's folder itself
            return self._joined(f"{scheme}://{host}/", top, relative)
        first, _, rest = relative.partition("/")
        host = self._host(first)
        if rest and host is not None:  # the input holds one folder per host
            return self._joined(f"{scheme}://{host}/", os.path.join(top, first), rest)
        # The input lies inside a host's folder (a file named alone deep in a mirror): the nearest
        # folder above it named as a host. A file beside the host folders is in none.
        below: list[str] = []
        here = real
        while (parent := os.path.dirname(here)) != here:
            below.append(os.path.basename(here))
            here = parent
            host = self._host(os.path.basename(here))
            if host is not None:
                inner = "/".join(reversed(below))
                return self._joined(f"{scheme}://{host}/", here, f"{inner}/{relative}".rstrip("/"))
        return None

    def _host(self, folder: str) -> str | None:
        """The host (and port) a folder's name stands for, as the layout writes it, or None."""
        host = self.layout.host(folder)
        return host.lower() if is_host_folder(host) else None

    def _joined(self, root: str, folder: str, relative: str) -> str:
        """*root* joined with the path *relative* of a file under *folder* (the folder *root*
        stands for), read as the layout named it."""
        if self.layout.tool == "httrack":
            # HTTrack writes each page's own URL into it ("Mirrored from"): a page it named after a
            # query (a hash in the name) is found by that; any other file keeps its URL's path.
            marked = _mirrored_from(os.path.join(folder, relative))
            return marked if marked is not None else path_url(root, relative)
        if not self.layout.reads_names:
            return path_url(root, relative)
        return root + self.layout.url_path(relative, lambda other: os.path.isfile(os.path.join(folder, other)))


# HTTrack names the copy of NAME.EXT?QUERY as NAME + the first four hex digits of QUERY's MD5 +
# .EXT, and its links keep the query: style30f4.css?v=3 is the copy of style.css?v=3.
_HASHED = re.compile(r"([0-9a-f]{4})(\.[^./?#]*)?$")


def _httrack_query(own: str, reference: str) -> str:
    """The URL a reference written by HTTrack (``NAMExxxx.EXT?QUERY``) stands for, where *own*
    is the URL of the file it names: *own* itself when it came from a page's mark (which holds
    the query) or when the name's four hex digits are not its query's hash."""
    if "?" in own or "?" not in reference:
        return own
    query = reference.split("#", 1)[0].split("?", 1)[1]
    path = own.split("#", 1)[0]
    match = _HASHED.search(path)
    if match is None:
        return own
    import hashlib  # here: only HTTrack's names need it, and it loads OpenSSL (3-4 ms of every start-up)

    if match.group(1) != hashlib.md5(query.encode("utf-8", "surrogateescape")).hexdigest()[:4]:
        return own
    return path[: match.start()] + (match.group(2) or "") + "?" + query


def _mirrored_from(path: str) -> str | None:
    """The URL in the HTTrack (or browser) mark at the start of the page *path*, or None (no
    page, as :func:`~rewriter.containers.formats.what_file_is` tells it; no mark; or a file that
    cannot be read)."""
    from rewriter.containers.formats import SNIFF_SIZE, what_file_is
    from rewriter.html.engine import saved_from_mark  # the one reader of the marks

    try:
        with open(path, "rb") as file:
            head = file.read(SNIFF_SIZE)
    except OSError:
        return None
    return saved_from_mark(head) if what_file_is(head, path).format == "html" else None


def check_root(value: str) -> str | None:
    """Why *value* cannot be an --url-root (None when it can)."""
    if value in AUTO_ROOTS:
        return None
    if not usable_as_base(value):
        return (
            f"--url-root {value!r} is not an absolute URL that can be a base "
            "(http://example.org/site/, or auto for a mirror's host folders)"
        )
    parts = urlsplit(value)
    if parts.query or parts.fragment or "?" in value or "#" in value:
        return f"--url-root {value!r} has a query or a fragment; a folder URL has neither"
    return None


# An --url-map file is read whole, before the run, within these bounds: a map is short lines of a
# path and a URL, and a file past them is no map a tool wrote. A line: a path (PATH_MAX is 4,096
# bytes) and a URL (servers refuse request lines over about 8 KB). The whole file: a million
# entries of 250 bytes. JSON Lines: an entry is one object; nesting is allowed for fields of
# other tools' (left alone), up to a depth Python's JSON reader never nears (it stops near 1,000).
MAP_MAX_BYTES = 256 << 20
MAP_MAX_LINE = 64 << 10
MAP_MAX_NESTING = 32
# The bad lines named, at most; a count says how many more there are.
MAP_SHOWN = 100


def load_url_map(
    path: Path, trees: list[str], *, data: bytes | None = None
) -> tuple[dict[str, str], list[tuple[int, str]]]:
    """The pairs of an --url-map file: CSV lines ``path,url`` (a first line ``path,url`` is
    a heading), or JSON Lines ``{"path": ..., "url": ...}`` (told by the name ending in
    ``.jsonl`` or ``.ndjson``, or the first character being ``{``), one entry a line. A path
    is looked up under each input folder of *trees*, else as given (relative to the working
    folder). *data*: the file's bytes, when the caller has read them with
    :func:`read_url_map` (to know what it read: a journal keeps their digest).

    Returns (absolute path: URL, and the (line, path) of each pair that named no file).
    Raises :class:`CollectionError` for a file that is not a regular one, or is larger than
    :data:`MAP_MAX_BYTES`, and for a map with lines that cannot be used (longer than
    :data:`MAP_MAX_LINE` bytes, not UTF-8, a NUL, not CSV or JSON, nested deeper than
    :data:`MAP_MAX_NESTING`, wrong types, a URL that cannot be a base): each is in its
    ``problems``, with its number and the reason, and no line of the map is used.
    """
    if data is None:
        data = read_url_map(path)
    json_lines = path.suffix.lower() in (".jsonl", ".ndjson") or data.removeprefix(_BOM).lstrip()[:1] == b"{"
    pairs: list[tuple[int, str, str]] = []
    problems: list[str] = []
    for number, raw in enumerate(data.removeprefix(_BOM).split(b"\n"), 1):
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            continue
        entry = _map_entry(raw, number, json_lines)
        if isinstance(entry, str):
            problems.append(f"--url-map {path}, line {number}: {entry}")
        elif entry is not None:
            pairs.append((number, *entry))
    if problems:
        raise _unusable_map(path, problems)
    mapped: dict[str, str] = {}
    lines: dict[str, int] = {}
    unmatched: list[tuple[int, str]] = []
    for line, name, url in pairs:
        candidates = [os.path.join(tree, name) for tree in trees] + [name]
        found = next(
            (path for path in candidates if os.path.isfile(path) and any(_within(path, tree) for tree in trees)),
            None,
        )
        if found is None:
            unmatched.append((line, name))
            continue
        key = _absolute(found)
        if key in mapped and mapped[key] != url:  # which one is meant cannot be told: never one at random
            problems.append(
                f"--url-map {path}, line {line}: {_quoted(name)} is given another URL on line {lines[key]} "
                f"({_quoted(mapped[key])}, here {_quoted(url)})"
            )
            continue
        mapped[key], lines[key] = url, lines.get(key, line)
    if problems:
        raise _unusable_map(path, problems)
    return mapped, unmatched


def _unusable_map(path: object, problems: list[str]) -> CollectionError:
    """The error that refuses a whole --url-map: how many of its lines cannot be used, the first
    :data:`MAP_SHOWN` of them named."""
    count = len(problems)
    return CollectionError(
        f"--url-map {path}: {count:,} line{'s' if count > 1 else ''} cannot be used"
        + (f" ({count - MAP_SHOWN:,} not named)" if count > MAP_SHOWN else "")
        + ": the map is not used, and nothing was done",
        problems[:MAP_SHOWN],
    )


_BOM = b"\xef\xbb\xbf"


def read_url_map(path: Path) -> bytes:
    """The bytes of the map file *path*: a regular file (through a symbolic link the command
    line named), at most :data:`MAP_MAX_BYTES`. O_NONBLOCK: opening a named pipe does not
    wait for a writer, so that it can be refused."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        handle = os.open(path, flags)
    except OSError as error:
        raise CollectionError(f"--url-map {path}: cannot be read: {error.strerror or error}") from None
    try:
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            raise CollectionError(
                f"--url-map {path}: {kind_of(status.st_mode)}, not a regular file "
                "(a map is read whole before the run: save a command's output to a file first)"
            )
        if status.st_size > MAP_MAX_BYTES:
            raise CollectionError(
                f"--url-map {path}: {status.st_size:,} bytes, over the {MAP_MAX_BYTES:,} a map may hold"
            )
        stream = os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise
    with stream:
        try:
            data = stream.read(MAP_MAX_BYTES + 1)
        except OSError as error:
            raise CollectionError(f"--url-map {path}: cannot be read: {error.strerror or error}") from None
    if len(data) > MAP_MAX_BYTES:  # it grew while it was read
        raise CollectionError(f"--url-map {path}: over the {MAP_MAX_BYTES:,} bytes a map may hold")
    return data


def _map_entry(line: bytes, number: int, json_lines: bool) -> tuple[str, str] | str | None:
    """(path, URL) of one line of a map; why it cannot be used; or None for a CSV heading."""
    if len(line) > MAP_MAX_LINE:
        return f"{len(line):,} bytes long, over the {MAP_MAX_LINE:,} a line of a map may hold"
    nul = line.find(b"\0")
    if nul >= 0:
        return f"a NUL byte (byte {nul + 1} of the line), which no path or URL holds"
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 (byte {error.start + 1} of the line: {error.reason})"
    entry = _json_entry(text) if json_lines else _csv_entry(text, number)
    if entry is None or isinstance(entry, str):
        return entry
    name, url = entry
    for field_name, value in (("path", name), ("url", url)):
        if "\0" in value:
            return f"the {field_name} holds a NUL character, which no path or URL holds"
        if any("\ud800" <= character <= "\udfff" for character in value):
            return f"the {field_name} holds a lone surrogate (an escape that is no character)"
    if not usable_as_base(url):
        return f"{_quoted(url)} is not an absolute URL that can be a base"
    return name, url


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}


def _json_type(value: object) -> str:
    if value is None or isinstance(value, bool):
        return json.dumps(value)  # null, true, false
    return _JSON_TYPES.get(type(value), type(value).__name__)


# What JSON nests, and the escapes and quotes that tell a string's brackets from the structure's.
_JSON_STRUCTURE = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def _json_nesting(text: str) -> int:
    """How deep arrays and objects nest in the JSON *text* (counted as far as
    :data:`MAP_MAX_NESTING` + 1: the reader's own recursion is never reached)."""
    depth = deepest = 0
    in_string = False
    for token in _JSON_STRUCTURE.finditer(text):
        mark = token.group()
        if mark[0] == "\\":
            continue  # an escape: inside a string, never a quote or a bracket
        if mark == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif mark in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > MAP_MAX_NESTING:
                break
        else:
            depth -= 1
    return deepest


def _json_entry(text: str) -> tuple[str, str] | str:
    nesting = _json_nesting(text)
    if nesting > MAP_MAX_NESTING:
        return f"JSON nested more than {MAP_MAX_NESTING} deep"
    twice: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        names = [name for name, _ in items]  # the outermost object is the last one read: its own
        twice[:] = [name for name in ("path", "url") if names.count(name) > 1]
        return dict(items)

    try:
        entry = json.loads(text, object_pairs_hook=pairs)
    except ValueError as error:
        return f"not JSON: {error}"
    if twice:  # readers differ on which one counts (the first, the last): never one at random
        return f'"{twice[-1]}" given twice in one object: which one is meant cannot be told'
    if not isinstance(entry, dict):
        return f'needs one JSON object, {{"path": "...", "url": "..."}} (found {_json_type(entry)})'
    for key in ("path", "url"):
        if key not in entry:
            return f'needs one JSON object, {{"path": "...", "url": "..."}} (no "{key}")'
        if not isinstance(entry[key], str):
            return f'"{key}" must be a string (found {_json_type(entry[key])})'
    return entry["path"], entry["url"].strip()


def _csv_entry(text: str, number: int) -> tuple[str, str] | str | None:
    import csv  # only for an --url-map file

    try:
        row = next(csv.reader([text], strict=True), [])
    except csv.Error as error:
        return f"not CSV: {error}"
    if not row or (len(row) == 1 and not row[0].strip()):
        return None
    if len(row) != 2:
        return f"needs two fields, path,url (found {len(row)})"
    name, url = row[0], row[1].strip()
    if number == 1 and (name.strip().lower(), url.lower()) == ("path", "url"):
        return None  # a heading
    return name, url


def _quoted(text: str) -> str:
    """*text* quoted for a message, cut at 80 characters: a line of a map may be long."""
    return repr(text) if len(text) <= 80 else repr(text[:80]) + "..."


# Paths compared without regard to case (Windows): commonpath's own comparison is kept there.
_CASELESS = os.path.normcase("A") != "A"


def _within(path: str, tree: str) -> bool:
    """Whether *path* is *tree* or lies under it (lexically: links are not followed)."""
    top, here = _absolute(tree), _absolute(path)
    return os.path.commonpath([top, here]) == top


def _same_resource(first: str, second: str) -> bool:
    """Whether two absolute URLs name the same resource: scheme and host without regard to
    case, the path with its escapes decoded, query and fragment left out (a local copy of
    ``style.css`` is what ``style.css?v=3`` loads from disk)."""
    one, other = urlsplit(first), urlsplit(second)
    return (
        one.scheme.lower() == other.scheme.lower()
        and one.netloc.lower() == other.netloc.lower()
        and unquote(one.path or "/") == unquote(other.path or "/")
    )


# The pages a browser saves "complete", beside their NAME_files/ folder.
_PAGE_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml")


def _saved_copy(path: str, tree: str, document: str) -> bool:
    """Whether *path* lies in a ``NAME_files/`` folder (of *tree*) beside a page ``NAME.html``
    (or beside *document*, the page being read, named so): a browser's renamed copy, which no URL
    is the source of, whoever links to it (the page, or a style sheet saved with it)."""
    if "_files" not in path:  # no folder of that name on the way (most files of a mirror)
        return False
    own = os.path.splitext(_absolute(document))[0] + "_files"
    folder = os.path.dirname(path)
    while _within(folder, tree) and folder != _absolute(tree):
        name = os.path.basename(folder)
        if folder == own:
            return True
        if name.endswith("_files"):
            page = os.path.join(os.path.dirname(folder), name.removesuffix("_files"))
            if any(os.path.isfile(page + suffix) for suffix in _PAGE_SUFFIXES):
                return True
        folder = os.path.dirname(folder)
    return False


class Places:
    """What the run's pages of one folder of a collection share, worked out once for them (the
    run keeps one for each folder: ``_absolute`` asks the system for the working folder when a
    path is relative): the tree's absolute path (*top*), that path with the separator that
    starts a path below it (*below*), the folder's absolute path (*folder*), and the
    classifications its pages share (*shared*, :class:`SharedClassifications`; None when not
    kept for a run).

    >>> places = Places.of("/site/", "/site/docs")
    >>> places.below, places.absolute("/site/docs/a.html")
    ('/site/', '/site/docs/a.html')
    """

    # A plain class, not a dataclass: making one costs 0.7 ms of every run's start-up.
    __slots__ = ("below", "folder", "shared", "top")

    def __init__(self, top: str, below: str, folder: str, shared: SharedClassifications | None = None) -> None:
        self.top, self.below, self.folder, self.shared = top, below, folder, shared

    @classmethod
    def of(cls, tree: str, folder: str, shared: SharedClassifications | None = None) -> Places:
        top = _absolute(tree)
        return cls(top, top if top.endswith(os.sep) else top + os.sep, _absolute(folder), shared)

    @staticmethod
    def of_document(tree: str, document: str, listings: Listings | None) -> Places | None:
        """The places of *document*'s folder, kept in the run's *listings* with one memo of
        classifications for its pages; None for a path whose last name is not a file's (``.``,
        ``..``): there the folder is not its dirname."""
        folder, name = os.path.split(document)
        if name in ("", ".", "..") or listings is None:
            return None
        return listings.answer(("places", tree, folder), lambda: Places.of(tree, folder, SharedClassifications()))

    def absolute(self, document: str) -> str:
        """The absolute path of *document*, a file of this folder (as :meth:`of_document` gave it)."""
        return os.path.join(self.folder, os.path.basename(document))


@dataclass(frozen=True, slots=True)
class LocalCopies:
    """A :attr:`Policy.keep <rewriter.policy.Policy.keep>` for one document of a collection.

    A relative-path reference (not ``//host``, not ``/path``, not ``?query``) that, read
    against the document's own place on disk, names a regular file inside *tree* is a local
    copy: kept as written, status ``local``. Unless *locations* gives that file a URL and the
    reference resolves to it: the file is the copy of that very URL (a mirror), and the
    absolute URL is right. A file in a ``NAME_files/`` folder beside a page ``NAME.html`` is a
    browser's renamed copy whatever the URLs say. Under a layout that reads names (``--layout
    wget``) no file is a renamed copy: a reference naming one stands for the file's URL, which
    is written (status ``rewritten``) where the reference does not resolve to it already.

    >>> import tempfile; folder = Path(tempfile.mkdtemp())
    >>> (folder / "page_files").mkdir(); _ = (folder / "page_files" / "x.png").write_bytes(b"png")
    >>> keep = LocalCopies(str(folder / "page.html"), str(folder))
    >>> keep("page_files/x.png", "https://site/page_files/x.png")[0], keep("missing.png", None)
    ('local', None)
    """

    document: str
    tree: str
    locations: Locations | None = None
    # The run's listings of its folders (None: each reference is looked up on the file system).
    listings: Listings | None = field(default=None, repr=False, compare=False)
    # The classifications the pages of this document's folder share (the run's, for the folder):
    # what a local copy is depends on the folder, not on the page, for every reference that
    # shared_key gives a key (one naming a NAME_files folder is told page by page).
    shared: SharedClassifications | None = field(default=None, repr=False, compare=False)
    # Where the document's folder lies, when the run worked it out for the folder's pages
    # (Places.of_document); else it is worked out here.
    places: Places | None = field(default=None, repr=False, compare=False)
    # Worked out once for the document, not for each of its references (a page asks about
    # dozens): the folder references are read against, the tree's absolute path and that path
    # with the separator that starts a path below it.
    folder: str = field(init=False, repr=False, compare=False)
    top: str = field(init=False, repr=False, compare=False)
    below: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        places = self.places or Places.of(self.tree, os.path.dirname(_absolute(self.document)))
        object.__setattr__(self, "folder", places.folder)
        object.__setattr__(self, "top", places.top)
        object.__setattr__(self, "below", places.below)

    def __call__(self, reference: str, resolved: str | None) -> Kept | None:
        if reference.startswith(("/", "\\")) or scheme_of(reference) is not None:
            return None
        path = reference.split("#", 1)[0].split("?", 1)[0]
        if not path or path.endswith("/"):
            return None
        listings = self.listings
        listed = None
        if listings is not None and "/" not in path and "%" not in path and path not in (".", ".."):
            # A name in the page's own folder, which the walk reached through no link: one
            # lookup in its listing (cheaper than keeping the answer: a page's own links are
            # mostly asked once, and most name no file).
            listed = listings.is_file_in(self.folder, path)
        if listed is not None:
            candidate = os.path.join(self.folder, path) if listed else None
        elif listings is None:
            candidate = self._file_named(path)
        else:  # asked once for the run: the pages of a folder share their references
            candidate = listings.answer((self.top, self.folder, path), lambda: self._file_named(path))
        if candidate is None:
            return None
        relative = candidate[len(self.below) :].replace(os.sep, "/")
        locations = self.locations
        if locations is not None and locations.layout.reads_names:
            return self._named(candidate, reference, resolved, locations)
        if not _saved_copy(candidate, self.top, self.document) and locations is not None and resolved is not None:
            own = self._url_of(candidate, locations)
            if own is not None and _same_resource(own, resolved):
                return None
        return (
            "local",
            f"names the local file {relative} of the input folder: kept as written "
            "(--absolutize-local makes it absolute)",
        )

    def _url_of(self, candidate: str, locations: Locations) -> str | None:
        """The URL of the file *candidate* of the tree, worked out once for the run."""
        if self.listings is None:
            return locations.url_of(candidate, self.tree)
        return self.listings.answer(("url", self.tree, candidate), lambda: locations.url_of(candidate, self.tree))

    def _file_named(self, path: str) -> str | None:
        """The regular file of the tree the path of a reference names (absolute and normal),
        or None: outside the tree, missing, not a regular file, or reached through a link
        out of the tree."""
        name = os.fsdecode(unquote_to_bytes(path))
        if "\x00" in name:
            return None
        candidate = os.path.normpath(os.path.join(self.folder, name))
        # Inside the tree, lexically: what _within tells, without its normalisations on each call
        # (both paths are absolute and normal already); where case is ignored, _within itself.
        if _CASELESS:
            inside = _within(candidate, self.top)
        else:
            inside = candidate == self.top or candidate.startswith(self.below)
        if not inside or candidate == self.top:
            return None
        listed = None if self.listings is None else self.listings.is_file(self.top, candidate[len(self.below) :])
        if listed is None:  # the file system asked: a link on the way may lead out of the tree
            if not os.path.isfile(candidate):
                return None
            if not _within(os.path.realpath(candidate), os.path.realpath(self.top)):
                return None  # a link out of the collection
        elif not listed:
            return None
        return candidate

    def _named(self, candidate: str, reference: str, resolved: str | None, locations: Locations) -> Kept | None:
        """A mirror tool's layout (``--layout wget``): every file is the copy of the URL its name
        gives, and a reference naming one (as ``wget -k`` writes it) stands for that URL, its
        fragment kept; a reference that resolves to that URL already is made absolute as usual."""
        own = locations.url_of(candidate, self.tree)
        if own is not None and locations.layout.tool == "httrack":
            own = _httrack_query(own, reference)
        if own is None or (resolved is not None and _same_resource(own, resolved)):
            return None
        fragment = reference.find("#")
        return "rewritten", own + (reference[fragment:] if fragment >= 0 else "")
