"""Collections in Chromium: a wget mirror and a saved-complete page, before and after ``rewriter rewrite``.

The harness of ``tests/test_collections_browser.py`` (issue 19, points 1 and 2):

- :func:`site_files` is a small site with nested folders, CSS (``url()``, ``@import``, ``@media``,
  ``<style>`` elements, ``style`` attributes), images, a srcset, a folder whose name has a space and a
  non-ASCII letter, and links to pages the site does not have;
- :class:`Server` serves a folder with ``python -m http.server --bind 127.0.0.1 0`` in a child process
  (the port read from its first line), so that no socket is ever opened by the test process and the
  network guard of ``tests/conftest.py`` need not be loosened;
- :func:`wget_mirror` mirrors it with ``wget -m -k -p``, and :func:`lay_out` lays a copy out as wget
  names its files (``127.0.0.1:PORT/path``) without converting a link, for when wget is absent;
- :func:`load_original` has Chromium load a page (or a style sheet, through a probe document) from the
  server at its own URL; :func:`load_relocated` serves bytes of the rewritten mirror at another URL
  (:data:`ELSEWHERE`); each lists, element by element, the absolute URL every URL-bearing attribute
  resolves to (``COLLECT_JS`` of ``browser_relocation``), then every ``url()`` and ``@import`` of the
  page's ``style`` attributes and ``<style>`` elements, or of the style sheet, resolved against the
  base the browser uses for it (the document's base URL, or the sheet's URL);
- :func:`compare_mirror` compares the two for every page and style sheet of a rewritten mirror;
- :func:`load_offline` opens a file from disk in an offline context and sorts its image and style
  sheet requests into finished and failed (as ``browser_bundle.check_bundle`` does).

One equivalence is granted, the server's own: a folder URL and its ``index.html``
(``http://127.0.0.1:PORT/docs/`` and ``http://127.0.0.1:PORT/docs/index.html``) are the same resource,
since ``http.server`` serves a folder's ``index.html``. ``wget -k`` writes a link to a folder it
saved as a link to that ``index.html`` (``../../`` becomes ``../../index.html``): the mirror no longer
knows the link named the folder, and a rewrite can only point at the file.
"""

from __future__ import annotations

import dataclasses
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from browser_relocation import COLLECT_JS, NAVIGATION_TIMEOUT_MS, Collected, Mismatch, Row, compare

__all__ = [
    "ELSEWHERE",
    "SITE_LINKS",
    "WGET",
    "MirrorReport",
    "OfflineLoad",
    "Originals",
    "Server",
    "compare_mirror",
    "file_url",
    "folder_equivalent",
    "lay_out",
    "load_offline",
    "load_original",
    "load_relocated",
    "mirror_files",
    "png",
    "site_files",
    "site_pages",
    "site_stylesheets",
    "wget_mirror",
]

WGET = Path("/usr/bin/wget")
# Where the rewritten mirror is served: another scheme, host and path, so that a link left relative
# (or scheme-relative) resolves differently there than at the page's own URL.
ELSEWHERE = "https://elsewhere.test/x/"
PROBE = "__probe__.html"  # the document that loads a style sheet; no file of the site has this name
SERVER_START_SECONDS = 30
WGET_SECONDS = 120


def png(width: int = 2, height: int = 2, rgb: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A real PNG (8-bit RGB, one colour) that any browser decodes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\0" + bytes(rgb) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


# --------------------------------------------------------------------------
# The site
# --------------------------------------------------------------------------

MENU = "café menu"  # a folder with a space and a non-ASCII letter (é: UTF-8 C3 A9, which wget keeps)

_PAGES = {
    "index.html": """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Home</title>
<link rel="stylesheet" href="style.css">
<link rel="icon" href="img/logo.png">
<style>.hero { background-image: url("img/x.png") }</style>
</head><body>
<h1 class="hero">Home</h1>
<img src="img/logo.png" srcset="img/logo.png 1x, img/logo-2x.png 2x" alt="logo">
<ul>
<li><a href="docs/">Docs</a>
<li><a href="docs/guide/">Guide</a>
<li><a href="docs/guide/install.html#linux">Install on Linux</a>
<li><a href="caf%C3%A9%20menu/">Menu</a>
<li><a href="missing.html">A page the site does not have</a>
<li><a href="https://example.org/elsewhere/">Another site</a>
<li><a href="mailto:someone@example.org">Mail</a>
</ul>
</body></html>
""",
    "docs/index.html": """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Docs</title>
<link rel="stylesheet" href="style.css">
</head><body>
<div style="background-image: url(../img/x.png)">Docs</div>
<p><a href="guide/">Guide</a> <a href="../">Home</a> <a href="../index.html">Home page</a>
<a href="../missing/">A folder the site does not have</a></p>
<img src="guide/img/diagram.png" alt="diagram">
</body></html>
""",
    "docs/guide/index.html": """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Guide</title>
<link rel="stylesheet" href="../style.css">
</head><body>
<img src="img/diagram.png" srcset="img/diagram.png 1x, img/diagram-2x.png 2x, ../../img/logo-2x.png 3x" alt="">
<p><a href="../../">Home</a> <a href="../">Docs</a> <a href="install.html#linux">Install</a>
<a href="../../café menu/plat du jour.html">Today's dish</a>
<a href="../nope.html">No such page</a>
<a href="//cdn.example.net/lib/x.js">A scheme-relative link</a></p>
<form action="../../search"><input name="q"></form>
</body></html>
""",
    "docs/guide/install.html": """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Install</title>
<link rel="stylesheet" href="../theme.css">
</head><body>
<h2 id="linux">Linux</h2>
<p><a href="./">Guide</a> <a href="index.html">Guide (index.html)</a> <a href="../../caf%C3%A9%20menu/">Menu</a></p>
<img src="img/note.png" alt="note">
</body></html>
""",
    f"{MENU}/index.html": """<!DOCTYPE html>
<html lang="fr"><head><meta charset="utf-8"><title>Menu</title></head><body>
<p><a href="../">Home</a> <a href="plat%20du%20jour.html">Plat du jour</a></p>
<img src="../img/logo.png" alt="logo">
</body></html>
""",
    f"{MENU}/plat du jour.html": """<!DOCTYPE html>
<html lang="fr"><head><meta charset="utf-8"><title>Plat du jour</title></head><body>
<p><a href="./">Menu</a> <a href="../docs/guide/install.html">Install</a></p>
</body></html>
""",
}

_STYLESHEETS = {
    "style.css": '@import url("docs/theme.css") screen;\nbody { background: url(img/x.png) }\n',
    "docs/style.css": (
        '@import url("theme.css");\n@import "print.css" print;\n'
        "body { background: url(../img/x.png) }\n.note { background-image: url('guide/img/note.png') }\n"
    ),
    "docs/theme.css": 'h2 { background-image: url("guide/img/diagram.png") }\n',
    "docs/print.css": "@media print { a { background: url(../img/print.png) } }\n",
}

_IMAGES = (
    "img/logo.png",
    "img/logo-2x.png",
    "img/x.png",
    "img/print.png",
    "docs/guide/img/diagram.png",
    "docs/guide/img/diagram-2x.png",
    "docs/guide/img/note.png",
)


# The URLs of the site, counted by hand: in the pages (attributes, each srcset candidate, url() of
# <style> and style=) 13 + 7 + 12 + 5 + 3 + 2, in the style sheets (url() and @import) 2 + 4 + 1 + 1.
SITE_LINKS = 50


def site_files() -> dict[str, bytes]:
    """Every file of the site: path under the site's folder (``/``) to bytes."""
    files = {path: text.encode("utf-8") for path, text in {**_PAGES, **_STYLESHEETS}.items()}
    files.update({path: png(rgb=(40 * number, 90, 160)) for number, path in enumerate(_IMAGES)})
    return files


def site_pages() -> dict[str, str]:
    """Each page's path and the URL path the server serves it at, as the site links it
    (a folder's ``index.html`` at the folder's URL)."""
    return {path: "/" + quote(path.removesuffix("index.html")) for path in _PAGES}


def site_stylesheets() -> list[str]:
    """The path of each style sheet."""
    return list(_STYLESHEETS)


def file_url(root: str, path: str) -> str:
    """The URL of the file at *path* (``/``-separated) under a folder served at *root*, as a browser
    writes it (percent-encoded UTF-8)."""
    return root + quote(path)


# --------------------------------------------------------------------------
# Serving and mirroring, in child processes
# --------------------------------------------------------------------------


class Server:
    """``python -m http.server --bind 127.0.0.1 0`` on *folder*, in a child process.

    The port is the one the child prints ("Serving HTTP on 127.0.0.1 port N ..."): the test process
    opens no socket, so the network guard stays as it is.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def __enter__(self) -> Server:
        self.process = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(self.folder), "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once the socket listens
        words = line.split()
        if "port" not in words:
            self.__exit__(None, None, None)
            raise RuntimeError(f"http.server did not start: {line!r}")
        self.port = int(words[words.index("port") + 1])
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None


def wget_mirror(root: str, destination: Path) -> tuple[Path, str]:
    """``wget -m -k -p -nv`` of *root* into *destination*: (the host folder wget made, its log).

    wget exits 8 when a page linked a URL the server answered 404 (the site links pages it does not
    have, on purpose); any other failure is raised.
    """
    destination.mkdir(parents=True, exist_ok=True)
    environment = {key: value for key, value in os.environ.items() if not key.lower().endswith("_proxy")}
    environment["LC_ALL"] = "C.UTF-8"
    command = [str(WGET), "-m", "-k", "-p", "-nv", "--no-proxy", "-e", "robots=off", "--no-config", root]
    done = subprocess.run(
        command, cwd=destination, env=environment, capture_output=True, text=True, timeout=WGET_SECONDS
    )
    if done.returncode not in (0, 8):
        raise RuntimeError(f"wget exited {done.returncode}: {done.stderr[-2000:]}")
    host = urlsplit(root).netloc
    return destination / host, done.stderr


def lay_out(files: dict[str, bytes], root: str, destination: Path) -> Path:
    """A copy of the site laid out as ``wget -m`` names its files (``HOST:PORT/path``), each file
    as the server sends it (no link converted, unlike ``wget -k``): the host folder."""
    host = destination / urlsplit(root).netloc
    for path, data in files.items():
        target = host / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return host


def mirror_files(folder: Path) -> list[str]:
    """Every file under *folder*, as ``/``-separated paths, sorted."""
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


# --------------------------------------------------------------------------
# Loading in Chromium
# --------------------------------------------------------------------------

# Runs through page.evaluate (page scripting is off). With no argument: every url() and @import of
# the document's style attributes and <style> elements, against document.baseURI. With a style
# sheet's URL: those of that sheet, against its URL. Rows as COLLECT_JS's:
# [index, where, property, token, value, resolved, null]. Chromium serialises a specified url() as
# written, url("..."), so the value is the reference and the browser's base is applied here.
CSS_JS = r"""
(href) => {
  const rows = [];
  let index = 0;
  const resolve = (value, base) => {
    try {
      return new URL(value, base).href;
    } catch (error) {
      return null;
    }
  };
  const urls = (text) => {
    const found = [];
    const pattern = /url\(\s*"((?:[^"\\]|\\.)*)"\s*\)/g;
    let match;
    while ((match = pattern.exec(text)) !== null) found.push(match[1].replace(/\\(.)/g, "$1"));
    return found;
  };
  const declarations = (style, where, base) => {
    for (let i = 0; i < style.length; i++) {
      const name = style[i];
      urls(style.getPropertyValue(name)).forEach((value, token) =>
        rows.push([index, where, name, token, value, resolve(value, base), null]));
    }
  };
  const walk = (rules, base, where) => {
    for (const rule of rules) {
      index++;
      if (rule instanceof CSSImportRule) {
        rows.push([index, `${where} @import`, "href", 0, rule.href, resolve(rule.href, base), null]);
      }
      if (rule.style) declarations(rule.style, `${where} ${rule.selectorText || rule.constructor.name}`, base);
      if (rule.cssRules) walk(rule.cssRules, base, where);
    }
  };
  if (href) {
    const sheet = [...document.styleSheets].find((candidate) => candidate.href === href);
    if (!sheet) return null;
    walk(sheet.cssRules, sheet.href, "sheet");
    return rows;
  }
  const base = document.baseURI;
  for (const element of document.querySelectorAll("[style], style")) {
    index++;
    if (element.localName === "style" && element.sheet) walk(element.sheet.cssRules, base, "style");
    if (element.hasAttribute("style")) declarations(element.style, `${element.localName}[style]`, base);
  }
  return rows;
}
"""


def _css_rows(found: list[list[Any]]) -> list[Row]:
    # After COLLECT_JS's rows; "css" in the element's name keeps the keys apart.
    return [Row(100_000 + row[0], f"css {row[1]}", row[2], row[3], row[4], row[5], row[6]) for row in found]


def _load(browser: Any, url: str, respond: Any, stylesheet: str | None = None) -> Collected:
    """Load *url* with *respond(route)* answering every request, and collect its URLs."""
    context = browser.new_context(java_script_enabled=False, service_workers="block")
    aborted: list[str] = []

    def route(route: Any) -> None:
        if not respond(route):
            aborted.append(route.request.url)
            route.abort("aborted")

    try:
        context.route("**/*", route)
        page = context.new_page()
        page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)
        if stylesheet is None:
            found = page.evaluate(COLLECT_JS)
            rows = [Row(*row) for row in found["rows"]] + _css_rows(page.evaluate(CSS_JS, None))
        else:
            found = page.evaluate(
                "() => ({url: document.URL, baseURI: document.baseURI, characterSet: document.characterSet})"
            )
            sheet = page.evaluate(CSS_JS, stylesheet)
            if sheet is None:
                raise RuntimeError(f"{stylesheet} did not load in {url}")
            rows = _css_rows(sheet)
    finally:
        context.close()
    if found["url"] != url:
        raise RuntimeError(f"the document is at {found['url']!r}, not {url!r}")
    return Collected(found["url"], found["baseURI"], found["characterSet"], tuple(rows), tuple(aborted))


def _probe(stylesheet: str) -> bytes:
    return f'<!DOCTYPE html><meta charset="utf-8"><link rel="stylesheet" href="{stylesheet}">'.encode()


def load_original(browser: Any, url: str, stylesheet: str | None = None) -> Collected:
    """The page at *url* as the server serves it (nothing else loaded); or, with *stylesheet* (an
    absolute URL on the server; *url* is then unused), that style sheet from the server, through a
    probe document served from memory at the server's root (same origin, so that its rules can be
    read)."""

    target = url if stylesheet is None else urlunsplit(urlsplit(stylesheet)._replace(path="/" + PROBE, query=""))

    def respond(route: Any) -> bool:
        request = route.request
        if request.url == target and request.is_navigation_request():
            if stylesheet is None:
                route.continue_()
            else:
                route.fulfill(status=200, headers={"Content-Type": "text/html"}, body=_probe(stylesheet))
            return True
        if stylesheet is not None and request.url == stylesheet:
            route.continue_()
            return True
        return False

    return _load(browser, target, respond, stylesheet)


def load_relocated(browser: Any, url: str, body: bytes, stylesheet: str | None = None) -> Collected:
    """*body* served as the document at *url*; or, with *stylesheet* (an absolute URL), *body* served
    as that style sheet, loaded by a probe document at *url*."""

    def respond(route: Any) -> bool:
        request = route.request
        if request.url == url and request.is_navigation_request():
            document = body if stylesheet is None else _probe(stylesheet)
            route.fulfill(status=200, headers={"Content-Type": "text/html"}, body=document)
            return True
        if stylesheet is not None and request.url == stylesheet:
            route.fulfill(status=200, headers={"Content-Type": "text/css"}, body=body)
            return True
        return False

    return _load(browser, url, respond, stylesheet)


def folder_equivalent(origin: str) -> Any:
    """The server's one equivalence, for URLs of *origin*: a folder URL is its ``index.html``."""

    def normal(url: str | None) -> str | None:
        if url is None:
            return None
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" == origin and parts.path.endswith("/"):
            return urlunsplit(parts._replace(path=parts.path + "index.html"))
        return url

    return normal


def _normalised(collected: Collected, normal: Any) -> Collected:
    rows = tuple(
        dataclasses.replace(row, resolved=normal(row.resolved), fetched=normal(row.fetched)) for row in collected.rows
    )
    return dataclasses.replace(collected, rows=rows)


@dataclass
class MirrorReport:
    """The comparison of a rewritten mirror with the site as served."""

    documents: list[str] = dataclasses.field(default_factory=list)  # pages and style sheets compared
    compared: int = 0
    links: int = 0  # URLs the pages and style sheets as served hold (that the browser can resolve)
    mismatches: list[Mismatch] = dataclasses.field(default_factory=list)

    def summary(self, limit: int = 40) -> str:
        lines = [str(mismatch) for mismatch in self.mismatches[:limit]]
        more = len(self.mismatches) - limit
        return "\n".join(lines + ([f"... and {more} more"] if more > 0 else []))


class Originals:
    """The site as the server serves it, each document loaded once in Chromium."""

    def __init__(self, browser: Any, root: str) -> None:
        self.browser = browser
        self.root = root
        self._seen: dict[str, Collected] = {}

    def page(self, path: str) -> Collected:
        url = self.root.rstrip("/") + site_pages()[path]
        if url not in self._seen:
            self._seen[url] = load_original(self.browser, url)
        return self._seen[url]

    def stylesheet(self, path: str) -> Collected:
        url = file_url(self.root, path)
        if url not in self._seen:
            self._seen[url] = load_original(self.browser, url, stylesheet=url)
        return self._seen[url]


def compare_mirror(originals: Originals, output: Path, paths: Iterable[str] | None = None) -> MirrorReport:
    """Every page and style sheet of the site, as served, against its rewrite in *output* (the
    output folder standing for the server's root) loaded at :data:`ELSEWHERE`."""
    report = MirrorReport()
    normal = folder_equivalent(originals.root.rstrip("/"))
    wanted = set(paths) if paths is not None else None
    documents: tuple[tuple[str, bool], ...] = (
        *((path, False) for path in site_pages()),
        *((path, True) for path in site_stylesheets()),
    )
    for path, is_sheet in documents:
        if wanted is not None and path not in wanted:
            continue
        body = (output / path).read_bytes()
        if is_sheet:
            original = originals.stylesheet(path)
            sheet = file_url(ELSEWHERE, path)
            relocated = load_relocated(originals.browser, ELSEWHERE + PROBE, body, stylesheet=sheet)
        else:
            original = originals.page(path)
            relocated = load_relocated(originals.browser, file_url(ELSEWHERE, path), body)
        compared, mismatches = compare(path, _normalised(original, normal), _normalised(relocated, normal))
        report.documents.append(path)
        report.links += sum(1 for row in original.rows if row.resolved is not None)
        report.compared += compared
        report.mismatches += mismatches
    return report


# --------------------------------------------------------------------------
# A page opened from disk, offline
# --------------------------------------------------------------------------


@dataclass
class OfflineLoad:
    """The image and style sheet requests of a page opened from disk with the network off."""

    finished: list[str] = dataclasses.field(default_factory=list)
    failed: list[str] = dataclasses.field(default_factory=list)


def load_offline(browser: Any, page: Path) -> OfflineLoad:
    """Open *page* from ``file:`` in an offline context (every other request aborted too) and sort
    each image and style sheet request, frames included, into finished and failed."""
    from browser_bundle import open_offline

    load = OfflineLoad()
    for url, finished in open_offline(browser, page, NAVIGATION_TIMEOUT_MS).items():
        (load.finished if finished else load.failed).append(url)
    return load
