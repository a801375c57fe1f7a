"""Mirrors made by wget itself, rewritten with ``--url-root`` and ``--layout wget``, compared link by
link with the site that was mirrored.

The test serves a small site that looks dynamic (``casts.html?from=query``, ``view.php?id=2``, a query
holding ``/``, one holding escapes, ``q=caf%C3%A9%20au%20lait``, which wget 1.21 unescapes in the
name, a folder URL and a file in it whose name holds ``:``, style sheets with ``url()`` and
``@import``, images, a fragment, a page the site does not have, an absolute link) from
``http.server`` in a thread on 127.0.0.1, and mirrors it with ``/usr/bin/wget`` three ways: ``-m -p``
(names as wget writes a query, links as the site wrote them), ``-m -k -E`` (``.html`` and ``.css``
appended, links converted to the local names, ``%3F`` for the query) and ``-m -k -E
--restrict-file-names=windows`` (``@`` for the query, ``%3A`` for ``:``, ``+`` before the port). Each
mirror is rewritten with ``--url-root http://127.0.0.1:PORT/`` on its host folder and with
``--url-root auto`` on the folder above it. Then, for every page and style sheet of the output (which
page it is is read from its own text: each names its URL in its title or first comment), each file's
URL in the report is the one it was served at, and every link, parsed by lxml (``iterlinks``: every
URL attribute and ``url()`` of a style attribute) or, in a style sheet, by a regular expression, is the
served page's link resolved against the page's URL (urljoin), in the same order: 0 mismatches.
With the browser suite, the same comparison in Chromium (``browser_relocation.compare``): each page
as served at its own URL against its rewrite loaded at another URL, style sheets through a probe page.

wget is not installed everywhere: without /usr/bin/wget these tests skip, saying so (CI's .ci/run
installs it). The server's socket is a listening one: the network guard (conftest) stays as it is.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

import pytest

WGET = Path("/usr/bin/wget")
pytestmark = pytest.mark.skipif(
    not WGET.exists(), reason=f"{WGET} is absent: the mirrors these tests rewrite are made by wget itself"
)

PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"
    b"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82"
)


def _page(url: str, body: str) -> tuple[str, bytes]:
    return "text/html; charset=utf-8", (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{url}</title>\n{body}\n</body></html>\n'
    ).encode()


# Path and query as wget requests them: (Content-Type, body). Each page names its own URL in its
# title, each style sheet in its first comment.
SITE: dict[str, tuple[str, bytes]] = {
    "/": _page(
        "/",
        '<link rel="stylesheet" href="style.css?v=3"></head><body>\n'
        '<a href="casts.html?from=query">casts</a>\n'
        '<a href="view.php?id=2">two</a>\n'
        '<a href="search.php?q=caf%C3%A9%20au%20lait">search</a>\n'
        '<a href="docs/">docs</a> <a href="docs/#part">a part of docs</a>\n'
        '<a href="docs/x:y.html">colon</a>\n'
        '<img src="img/logo.png" alt="logo">\n'
        '<p style="background: url(img/tile.png)">tiled</p>\n'
        '<a href="missing.html">not there</a>\n'
        '<a href="http://elsewhere.example/abs">elsewhere</a>',
    ),
    "/casts.html?from=query": _page(
        "/casts.html?from=query",
        '</head><body>\n<a href="./">home</a> <a href="casts.html?from=query#s">here</a>\n'
        '<a href="view.php?id=2">two</a> <img src="img/logo.png" alt="">',
    ),
    "/view.php?id=2": _page(
        "/view.php?id=2",
        '<link rel="stylesheet" href="print.css"></head><body>\n'
        '<a href="view.php?id=3&amp;q=a/b">three</a> <a href="docs/">docs</a>',
    ),
    "/view.php?id=3&q=a/b": _page(
        "/view.php?id=3&q=a/b",
        '</head><body>\n<a href="./">home</a> <a href="casts.html?from=query">casts</a>',
    ),
    "/search.php?q=caf%C3%A9%20au%20lait": _page(
        "/search.php?q=caf%C3%A9%20au%20lait", '</head><body>\n<a href="./">home</a>'
    ),
    "/docs/": _page(
        "/docs/",
        '</head><body>\n<a href="../">up</a> <a href="../view.php?id=2">two</a>\n'
        '<img src="../img/logo.png" alt=""> <a href="./x:y.html">colon</a>',
    ),
    "/docs/x:y.html": _page("/docs/x:y.html", '</head><body>\n<a href="../">up</a> <a href="./">docs</a>'),
    "/style.css?v=3": (
        "text/css",
        b'/* /style.css?v=3 */\n@import "print.css";\nbody { background: url(img/tile.png) }\n',
    ),
    "/print.css": ("text/css", b'/* /print.css */\nh1 { background: url("img/logo.png") }\n'),
    "/img/logo.png": ("image/png", PNG),
    "/img/tile.png": ("image/png", PNG),
}
PAGES = sorted(path for path, (kind, _) in SITE.items() if kind.startswith("text/html"))
STYLESHEETS = sorted(path for path, (kind, _) in SITE.items() if kind == "text/css")

KINDS = {
    "-m -p": (["-m", "-p"], "wget"),
    "-m -k -E": (["-m", "-k", "-E"], "wget"),
    "-m -k -E --restrict-file-names=windows": (["-m", "-k", "-E", "--restrict-file-names=windows"], "wget:windows"),
}
# Names wget gave, and a link -k wrote in index.html: the mirror is the one the test means to read.
MARKS = {
    "-m -p": ("view.php?id=3&q=a%2Fb", 'href="casts.html?from=query"'),
    "-m -k -E": ("view.php?id=3&q=a%2Fb.html", 'href="casts.html%3Ffrom=query.html"'),
    "-m -k -E --restrict-file-names=windows": ("docs/x%3Ay.html", 'href="casts.html@from=query.html"'),
}


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = SITE.get(self.path)
        if found is None:
            self.send_error(404)
            return
        kind, body = found
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The site on 127.0.0.1, in a thread: its root URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


@pytest.fixture(scope="module", params=list(KINDS))
def mirror(request: pytest.FixtureRequest, server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    """(top folder, host folder, layout, root URL) of the site mirrored by wget as the param says."""
    flags, layout = KINDS[request.param]
    top = tmp_path_factory.mktemp("wget")
    environment = {"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": str(top)}
    done = subprocess.run(
        [str(WGET), *flags, "-nv", "--no-proxy", "--no-config", "-e", "robots=off", server],
        cwd=top,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 8), done.stderr  # 8: a link the site does not have (404)
    hosts = [path for path in top.iterdir() if path.is_dir()]
    assert len(hosts) == 1, hosts
    files = sorted(path.relative_to(hosts[0]).as_posix() for path in hosts[0].rglob("*") if path.is_file())
    assert len(files) == len(SITE), f"wget did not mirror the whole site: {files}\n{done.stderr}"
    name, link = MARKS[request.param]
    assert name in files, files
    assert link in (hosts[0] / "index.html").read_text(encoding="utf-8")
    assert hosts[0].name.endswith(("+" if layout == "wget:windows" else ":") + server.rsplit(":", 1)[1].strip("/"))
    yield top, hosts[0], layout, server
    shutil.rmtree(top, ignore_errors=True)


def rewrite(*arguments: str | Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "rewrite", *map(str, arguments), "-q"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr


# A URL as a browser serialises it: unsafe characters escaped, escapes and reserved characters kept.
def normal(url: str) -> str:
    return quote(url, safe="%/:?#[]@!$&'()*+,;=~")


def html_links(text: str) -> list[str]:
    import lxml.html

    document = lxml.html.document_fromstring(text)
    return [link for _, _, link, _ in document.iterlinks()]


_CSS_URL = re.compile(r"""url\(\s*["']?([^"')]*)["']?\s*\)|@import\s+["']([^"']*)["']""")


def css_links(text: str) -> list[str]:
    return [first or second for first, second in _CSS_URL.findall(text)]


def _served_as(path: Path) -> tuple[str, str] | None:
    """("html" or "css", the path and query it was served at), read from the file's own text."""
    data = path.read_bytes()
    title = re.search(rb"<title>([^<]*)</title>", data)
    if title:
        return "html", title.group(1).decode()
    comment = re.match(rb"/\* (\S+) \*/", data)
    return ("css", comment.group(1).decode()) if comment else None


def compare_link_by_link(served: Path, input_host: Path, root: str, report: Path, bases_of: str = "all") -> None:
    """Every page and style sheet of the rewritten host folder *served* (of the input host folder
    *input_host*, of the site at *root*): each link, in order, is the served file's link resolved
    against its URL; and the URL in the run's *report* of each file (``bases_of`` "all") or of each
    page ("html") is the one it was served at."""
    bases = {}
    for line in report.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "file" in record and "base" in record:
            bases[Path(record["file"]).resolve().relative_to(input_host.resolve()).as_posix()] = record["base"]
    seen: dict[str, list[tuple[str, str]]] = {}
    mismatches = []
    for path in sorted(served.rglob("*")):
        found = _served_as(path) if path.is_file() else None
        if found is None or found[1] not in SITE:  # a mirror tool may keep the 404 page too
            continue
        kind, at = found
        url = urljoin(root, at.lstrip("/"))
        name = path.relative_to(served).as_posix()
        if bases_of == "all" or kind == bases_of:  # the file's URL as the tool named it: its links' base
            assert bases.get(name) == url, (name, bases.get(name), url)
        parse = html_links if kind == "html" else css_links
        original = parse(SITE[at][1].decode())
        written = parse(path.read_text(encoding="utf-8"))
        assert len(written) == len(original), (name, written, original)
        pairs = [(normal(urljoin(url, link)), normal(new)) for link, new in zip(original, written, strict=True)]
        mismatches += [(name, want, got) for want, got in pairs if want != got]
        seen[at] = pairs
    assert sorted(seen) == sorted([*PAGES, *STYLESHEETS])  # every page and style sheet was compared
    assert sum(map(len, seen.values())) == 30  # every link of the site
    assert not mismatches, "\n".join(f"{name}: {got} should be {want}" for name, want, got in mismatches)


@pytest.mark.parametrize("how", ["url", "auto"])
def test_wget_mirror_rewritten_link_by_link(mirror: tuple, tmp_path: Path, how: str) -> None:
    top, host, layout, root = mirror
    output, report = tmp_path / "out", tmp_path / "links.jsonl"
    if how == "url":
        rewrite(host, "-o", f"{output}/", "--url-root", root, "--layout", layout, "--report", report)
        served, input_host = output, host
    else:
        rewrite(top, "-o", f"{output}/", "--url-root", "auto", "--layout", layout, "--report", report)
        served, input_host = output / host.name, host
    compare_link_by_link(served, input_host, root, report)


def test_without_layout_wget_names_are_wrong(mirror: tuple, tmp_path: Path) -> None:
    """What the layout mends: with --url-root alone, a -k -E mirror's converted links name wget's
    files (``casts.html%3Ffrom=query.html``), URLs the origin does not have."""
    _, host, layout, root = mirror
    if layout != "wget" or not (host / "casts.html?from=query.html").exists():
        pytest.skip("the -m -k -E mirror shows it")
    rewrite(host, "-o", f"{tmp_path}/out/", "--url-root", root)
    index = (tmp_path / "out/index.html").read_text(encoding="utf-8")
    assert f'href="{root}casts.html%3Ffrom=query.html"' in index


# --------------------------------------------------------------------------
# The same mirrors in Chromium
# --------------------------------------------------------------------------

_ORIGINALS: dict[str, Any] = {}


@pytest.mark.browser
def test_wget_mirror_rewritten_in_chromium(browser: Any, mirror: tuple, tmp_path: Path) -> None:
    """Each page and style sheet of the rewritten mirror, loaded in Chromium at another URL, against the
    site as served at its own URL: every URL-bearing attribute, ``url()`` and ``@import`` resolves to the
    same URL (``browser_relocation.compare``), element by element. Run with the browser suite."""
    from browser_collections import ELSEWHERE, PROBE, load_original, load_relocated
    from browser_relocation import compare

    _, host, layout, root = mirror
    output = tmp_path / "out"
    rewrite(host, "-o", f"{output}/", "--url-root", root, "--layout", layout)
    compared, mismatches, documents = 0, [], []
    for path in sorted(output.rglob("*")):
        found = _served_as(path) if path.is_file() else None
        if found is None:
            continue
        kind, at = found
        url = urljoin(root, at.lstrip("/"))
        body = path.read_bytes()
        if kind == "html":
            if url not in _ORIGINALS:
                _ORIGINALS[url] = load_original(browser, url)
            relocated = load_relocated(browser, f"{ELSEWHERE}{len(documents)}.html", body)
        else:
            if url not in _ORIGINALS:
                _ORIGINALS[url] = load_original(browser, url, stylesheet=url)
            sheet = f"{ELSEWHERE}{len(documents)}.css"
            relocated = load_relocated(browser, ELSEWHERE + PROBE, body, stylesheet=sheet)
        count, wrong = compare(at, _ORIGINALS[url], relocated)
        compared += count
        mismatches += wrong
        documents.append(at)
    assert sorted(documents) == sorted([*PAGES, *STYLESHEETS])
    assert compared == 30, compared  # every link of the site
    print(f"compared {compared} URLs in {len(documents)} documents")
    assert not mismatches, "\n".join(map(str, mismatches))
