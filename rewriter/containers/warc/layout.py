"""Where each URL goes in a mirror folder: ``OUT/<host>[_<port>]/<path segments>``, an ``index``
for a path ending in ``/``, a query folded into the last name, every name picked by
:class:`rewriter.disk.names.Folder`; and the relative path from one file of it to another."""

from __future__ import annotations

import mimetypes
import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from rewriter.disk.names import Folder
from rewriter.document.engines import HTML_TYPES
from rewriter.problems import Problem
from rewriter.url.resolve import remove_dot_segments

if TYPE_CHECKING:
    pass


MAX_DEPTH = 20  # folders below the host; deeper segments are folded into the file's name


_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"}


# JavaScript MIME type essences (MIME Sniffing §4.6), named by their common one for the extension.
_JAVASCRIPT = frozenset(
    {"application/javascript", "application/ecmascript", "application/x-javascript", "application/x-ecmascript"}
    | {"text/ecmascript", "text/jscript", "text/livescript", "text/x-javascript", "text/x-ecmascript"}
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
    whole: bool = False  # read after the point where the file is one gzip stream (MirrorPlan.holds)


def _has_host(url: str) -> bool:
    try:
        return bool(urlsplit(url).netloc)
    except ValueError:
        return False


WEB_SCHEMES = ("http", "https", "ftp")  # what a web page's URI names; wget's metadata://, dns: are none


def _is_web(url: str) -> bool:
    """Whether *url* names a web page: an http, https or ftp URL with a host.

    >>> _is_web("https://example.org/a"), _is_web("metadata://gnu.org/software/wget/warc/wget.log")
    (True, False)
    >>> _is_web("dns:example.org"), _is_web("urn:x")
    (False, False)
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    return parts.scheme.lower() in WEB_SCHEMES and bool(parts.netloc)


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
                item.problems.append(
                    Problem("mirror", f"no folder for it: {error.strerror or error}", (f"offset {item.offset}",))
                )
                continue
            parent = stack[-1][1] if stack else root
            item.file = "/".join([*names, parent.pick(item.leaf, item.naming_type)])
    finally:
        for _, folder in stack:
            folder.close()


def _naming_type(content_type: str | None) -> str | None:
    return "text/javascript" if content_type in _JAVASCRIPT else content_type
