"""How a mirror tool named its files, read back to the URLs they were fetched from (``--layout``).

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
   and the query *as the URL spells it* (its escapes kept), the whole escaped as in 1;
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

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

__all__ = ["LAYOUTS", "PLAIN", "SCRIPT_EXTENSIONS", "Layout", "LayoutError"]

# The --layout values: a plain copy (the path is the URL's), or wget's names with its
# --restrict-file-names modes after a colon (wget:windows,nocontrol).
LAYOUTS = ("plain", "wget")
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

# The path percent-encode set of a URL segment (as collection.path_url writes a path): "/" is
# escaped too, since a segment that holds one came from "%2F".
_SEGMENT_SAFE = "!$&'()*+,-.:;=@[]_|~"
# What a query keeps: the characters a query holds as they are; every other byte escaped.
_QUERY_SAFE = _SEGMENT_SAFE + "/?"
# Bytes wget escapes in a query that a URL's query holds as they are ("/", "?", ":", "*"): an
# escape of another byte in a query was in the URL already (wget re-escapes a URL's unsafe bytes
# before it names a file), and stays one.
_QUERY_RAW = frozenset(b"/?:*")
_ESCAPE = re.compile(rb"%([0-9A-F]{2})")  # wget writes upper-case hex (XNUM_TO_DIGIT)


class LayoutError(ValueError):
    """A --layout value that names no layout; the message says which are."""


@dataclass(frozen=True, slots=True)
class Layout:
    """How the files of a collection are named: ``plain`` (each path is its URL's path) or
    ``wget`` with its ``--restrict-file-names`` modes (*system*, *control*, *ascii*, *case*)."""

    tool: Literal["plain", "wget"] = "plain"
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
            raise LayoutError(f"--layout {value!r}: choose plain, wget or wget:MODES (wget:windows,nocontrol)")
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
        return cls("wget" if tool == "wget" else "plain", system, control, ascii, case)

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
            written += "?" + quote(_decoder(self._escaped() & _QUERY_RAW)(query), safe=_QUERY_SAFE + "%")
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


PLAIN = Layout()
