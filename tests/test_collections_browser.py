"""Issue 19, points 1 and 2, in Chromium: a wget mirror rewritten with --url-root or --url-map, and
a saved-complete page rewritten with its NAME_files/ copies kept.

The mirror tests serve a small site of their own (``browser_collections.site_files``: nested folders,
CSS with ``url()``, ``@import`` and ``@media``, ``<style>`` and ``style=``, images, a srcset, a folder
named ``café menu``, links to pages the site does not have) with ``python -m http.server`` on
127.0.0.1 in a child process, and take a mirror of it two ways:

- ``wget``: ``wget -m -k -p -nv`` into the test's folder (skipped, with the reason, when
  /usr/bin/wget is absent). wget's ``-k`` has made every link to a file it saved relative (a folder
  link names its ``index.html``), and every link to a file it did not save absolute;
- ``layout``: the site's files copied as ``wget -m`` lays them out (``127.0.0.1:PORT/path``) and as
  the server sent them, no link converted: the links as the site wrote them (``docs/``, ``../../``,
  ``caf%C3%A9%20menu/``, ``../../café menu/plat du jour.html``).

Each rewritten mirror is then compared in Chromium, page by page and style sheet by style sheet, with
the site as the server serves it: every page loaded from the server at its own URL, and its rewrite
served at another URL (``https://elsewhere.test/x/PATH``); for every URL-bearing attribute, and every
``url()`` and ``@import`` of its CSS, ``new URL(value, base).href`` must be the same, element by element
(``browser_collections``; the one equivalence granted is the server's: a folder URL is its
``index.html``). No socket is opened by the test process: the server, wget and the command line run in
child processes, Chromium loads the rewritten pages from memory.

The saved-complete tests write ``page.html`` as Chromium's "Save Page As, Webpage, Complete" writes
it (the ``saved from url=`` mark, resources at ``./page_files/NAME``, other links as the site wrote
them) with ``page_files/`` beside it, rewrite it, and open the output from disk in an offline Chromium.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from browser_collections import (
    SITE_LINKS,
    WGET,
    Originals,
    Server,
    compare_mirror,
    file_url,
    lay_out,
    load_offline,
    mirror_files,
    png,
    site_files,
    site_pages,
    site_stylesheets,
    wget_mirror,
)

pytestmark = pytest.mark.browser  # headless Chromium: seconds a page

CLI_SECONDS = 300


def rewriter(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    """The command line, in a child process (this tree's package)."""
    return subprocess.run(
        [sys.executable, "-m", "rewriter", *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=CLI_SECONDS,
        check=False,
    )


# --------------------------------------------------------------------------
# Points 1 and 2: a mirror rewritten with --url-root, with --url-map
# --------------------------------------------------------------------------


@dataclass
class Mirror:
    kind: str  # "wget" or "layout"
    root: str  # the server's URL, http://127.0.0.1:PORT/
    top: Path  # the folder holding the host folder
    host: Path  # top / "127.0.0.1:PORT"
    _originals: Originals | None = None

    def originals(self, browser: Any) -> Originals:
        """The site as served, loaded in *browser* once for the module."""
        if self._originals is None:
            self._originals = Originals(browser, self.root)
        return self._originals


@pytest.fixture(scope="module", params=["wget", "layout"])
def mirror(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    """The site served on 127.0.0.1 for the whole module, and a mirror of it (see the module's docstring)."""
    if request.param == "wget" and not WGET.exists():
        pytest.skip(f"{WGET} is absent: the mirror made by wget -m -k -p is not tested (the laid-out copy is)")
    site = tmp_path_factory.mktemp("site")
    files = site_files()
    for path, data in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(data)
    with Server(site) as server:
        top = tmp_path_factory.mktemp(f"mirror-{request.param}")
        if request.param == "wget":
            host, log = wget_mirror(server.root, top)
            assert mirror_files(host) == sorted(files), f"wget did not mirror the whole site:\n{log}"
            # What -k did, so that the comparison is not with the site's own links.
            guide = (host / "docs/guide/index.html").read_text(encoding="utf-8")
            assert 'href="../../index.html"' in guide and f'href="{server.root}docs/nope.html"' in guide, guide
        else:
            host = lay_out(files, server.root, top)
        assert host.name == f"127.0.0.1:{server.port}"
        yield Mirror(request.param, server.root, top, host)


def assert_same_links(browser: Any, mirror: Mirror, output: Path) -> None:
    """Every page and style sheet of *output* (the folder standing for the server's root), at
    another URL, points where the page served at its own URL pointed."""
    report = compare_mirror(mirror.originals(browser), output)
    assert report.documents == [*site_pages(), *site_stylesheets()]
    assert not report.mismatches, f"{len(report.mismatches)} links moved:\n{report.summary()}"
    # Every link of the site was compared (a collection that found nothing would pass the above).
    assert report.links == SITE_LINKS
    assert report.compared == SITE_LINKS


def rewrite_ok(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    done = rewriter("rewrite", *arguments, "-q")
    assert done.returncode == 0, (
        f"rewriter rewrite {' '.join(map(str, arguments))}: exit {done.returncode}\n{done.stderr}"
    )
    return done


@pytest.mark.parametrize("how", ["url", "url, --layout wget", "auto on the mirror", "auto on the host folder"])
def test_mirror_rewritten_with_url_root(browser: Any, mirror: Mirror, tmp_path: Path, how: str) -> None:
    """``--url-root http://127.0.0.1:PORT/`` on the host folder (with ``--layout wget`` too: a link to
    a folder's ``index.html`` is the folder's URL), ``--url-root auto`` on the folder wget wrote into
    (its host folders inside) or on the host folder itself: every link of every page, loaded from the
    output at another URL, points where the page served at its own URL pointed. (The mirrors of a
    site with queries, with -E and --restrict-file-names=windows: tests/test_wget_mirrors.py.)
    """
    output = tmp_path / "out"
    if how.startswith("url"):
        layout = ["--layout", "wget"] if "layout" in how else []
        rewrite_ok(mirror.host, "-o", f"{output}/", "--url-root", mirror.root, *layout)
        served = output
    elif how == "auto on the mirror":
        rewrite_ok(mirror.top, "-o", f"{output}/", "--url-root", "auto")
        served = output / mirror.host.name
    else:
        rewrite_ok(mirror.host, "-o", f"{output}/", "--url-root", "auto")
        served = output
    assert mirror_files(served) == mirror_files(mirror.host)  # the output is a whole mirror
    assert_same_links(browser, mirror, served)


def test_mirror_url_root_auto_https(mirror: Mirror, tmp_path: Path) -> None:
    """``--url-root auto:https``: each file's URL is https://HOST/path, the base of its links."""
    output, report = tmp_path / "out", tmp_path / "links.jsonl"
    rewrite_ok(mirror.top, "-o", f"{output}/", "--url-root", "auto:https", "--report", report)
    records = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    https_root = "https" + mirror.root.removeprefix("http")
    prefix = str(mirror.top / mirror.host.name) + "/"
    bases = {record["file"].removeprefix(prefix): record["base"] for record in records}
    assert bases["docs/guide/index.html"] == https_root + "docs/guide/index.html", bases
    assert bases["café menu/plat du jour.html"] == https_root + "caf%C3%A9%20menu/plat%20du%20jour.html", bases
    relative = [record for record in records if not urlsplit(record["original"]).scheme]
    relative = [record for record in relative if not record["original"].startswith("//")]
    assert relative
    wrong = [record for record in relative if not (record["resolved"] or "").startswith(https_root)]
    assert not wrong, wrong


def _url_map_rows(mirror: Mirror, prefix: str) -> list[tuple[str, str]]:
    """(path under the input folder, URL) for every file of the mirror: the URL the file was
    fetched from, named as the file is (a folder's page by its ``index.html``)."""
    return [(prefix + path, file_url(mirror.root, path)) for path in mirror_files(mirror.host)]


@pytest.mark.parametrize("form", ["csv", "jsonl"])
def test_mirror_rewritten_with_url_map(browser: Any, mirror: Mirror, tmp_path: Path, form: str) -> None:
    """``--url-map``, written from the mirror's file list: CSV lines ``path,url`` with the host folder
    as the input, JSON Lines ``{"path", "url"}`` with the folder above it (paths beginning
    ``127.0.0.1:PORT/``). Same expectation as with --url-root."""
    output = tmp_path / "out"
    if form == "csv":
        mapping = tmp_path / "urls.csv"
        with mapping.open("w", encoding="utf-8", newline="") as stream:
            csv.writer(stream, lineterminator="\n").writerows(_url_map_rows(mirror, ""))
        rewrite_ok(mirror.host, "-o", f"{output}/", "--url-map", mapping)
        served = output
    else:
        mapping = tmp_path / "urls.jsonl"
        rows = _url_map_rows(mirror, mirror.host.name + "/")
        mapping.write_text(
            "".join(json.dumps({"path": path, "url": url}, ensure_ascii=False) + "\n" for path, url in rows),
            encoding="utf-8",
        )
        rewrite_ok(mirror.top, "-o", f"{output}/", "--url-map", mapping)
        served = output / mirror.host.name
    assert_same_links(browser, mirror, served)


# --------------------------------------------------------------------------
# A saved-complete page: NAME_files/ references kept, every other link absolute
# --------------------------------------------------------------------------

SAVED_URL = "https://example.org/dir/sub/page.html"
FILES = "./page_files/"
SAVED_PAGE = f"""<!DOCTYPE html>
<!-- saved from url=({len(SAVED_URL):04d}){SAVED_URL} -->
<html lang="en"><head><meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<title>A saved page</title>
<link rel="stylesheet" href="./page_files/style.css">
<link rel="canonical" href="../canonical.html">
<link rel="alternate" hreflang="fr" href="fr/page.html">
</head>
<body>
<h1 style="background-image: url(&quot;./page_files/tile.png&quot;);">A saved page</h1>
<img src="./page_files/logo.png" srcset="./page_files/logo.png 1x, ./page_files/logo-2x.png 2x" alt="logo">
<p><a href="../other/page2.html">Another section</a>
<a href="/about/">About</a>
<a href="next.html?page=2&amp;sort=asc">Next</a>
<a href="//cdn.example.net/asset.js">Scheme-relative</a>
<a href="https://elsewhere.example/absolute.html">Absolute</a>
<a href="mailto:me@example.org">Mail</a></p>
<img src="images/not-saved.png" alt="an image the save did not keep">
<form action="search"><input type="image" src="./page_files/go.png" alt="go"></form>
</body></html>
"""
PAGE_FILES = {
    "style.css": b'@import url("extra.css");\nbody { background: #fff url(bg.png) repeat-x; }\n',
    "extra.css": b'p { background-image: url("dot.png"); }\n',
    **{
        name: png(rgb=(30 * number, 120, 60))
        for number, name in enumerate(("logo.png", "logo-2x.png", "tile.png", "bg.png", "dot.png", "go.png"))
    },
}
# Requested when the page is shown at a device pixel ratio of 1 (not logo-2x.png, the srcset's 2x).
LOADED = {"style.css", "extra.css", "logo.png", "tile.png", "bg.png", "dot.png", "go.png"}
URL_ATTRIBUTES = {"href", "src", "srcset", "action", "poster"}


class _Links(HTMLParser):
    """(element, attribute, URL) of every URL in the attributes, srcset candidates and style url()s
    one by one, in document order: parsed by Python's html.parser, independently of rewriter."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "srcset":
                self.links += [(tag, name, candidate.split()[0]) for candidate in value.split(",") if candidate.strip()]
            elif name == "style":
                self.links += [(tag, name, url) for _, url in re.findall(r"""url\(\s*(["']?)(.*?)\1\s*\)""", value)]
            elif name in URL_ATTRIBUTES:
                self.links.append((tag, name, value))


def links_of(html: str) -> list[tuple[str, str, str]]:
    parser = _Links()
    parser.feed(html)
    parser.close()
    return parser.links


def expected_links(local: str) -> list[tuple[str, str, str]]:
    """The links the output must hold: each ``./page_files/`` one as written (*local* ``keep``) or
    resolved against the saved-from URL (``absolute``); every other relative one resolved against it
    (urljoin, RFC 3986); absolute ones as written."""
    wanted = []
    for element, attribute, value in links_of(SAVED_PAGE):
        if value.startswith(FILES) and local == "keep":
            wanted.append((element, attribute, value))
        else:
            wanted.append((element, attribute, urljoin(SAVED_URL, value)))
    return wanted


def save_page(folder: Path) -> Path:
    """page.html and page_files/ as Chromium saves a page complete; the page's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "page_files").mkdir()
    for name, data in PAGE_FILES.items():
        (folder / "page_files" / name).write_bytes(data)
    page = folder / "page.html"
    page.write_bytes(SAVED_PAGE.encode("utf-8"))
    return page


def rewrite_saved(tmp_path: Path, how: str, *options: str) -> Path:
    """Rewrite the saved page (the file alone, page_files/ copied by the test; or its folder, which
    the command copies); the output page's path, page_files/ beside it."""
    page = save_page(tmp_path / "saved")
    output = tmp_path / "out"
    if how == "file":
        output.mkdir()
        rewrite_ok(page, "-o", output / "page.html", *options)
        shutil.copytree(page.parent / "page_files", output / "page_files")
    else:
        rewrite_ok(page.parent, "-o", f"{output}/", *options)
    return output / "page.html"


@pytest.mark.parametrize("how", ["file", "folder"])
def test_saved_complete_page_keeps_its_files(browser: Any, tmp_path: Path, how: str) -> None:
    """The rewritten saved page, opened from file: with the network off: every ``page_files/``
    image and style sheet it asks for (the style sheets' own url() and @import included) loads, none
    fails; the only request that fails is the image the save did not keep, now at its absolute URL;
    every other relative link is absolute and right; ``rewriter links --json`` calls the page_files
    ones ``local``."""
    output = rewrite_saved(tmp_path, how)
    text = output.read_text(encoding="utf-8")
    assert links_of(text) == expected_links("keep")
    assert text.count("./page_files/") == SAVED_PAGE.count("./page_files/")
    # The folder's own files are copied as they are (the style sheets' links name files beside them).
    for name, data in PAGE_FILES.items():
        assert (output.parent / "page_files" / name).read_bytes() == data, name

    load = load_offline(browser, output)
    files = (output.parent / "page_files").resolve().as_uri() + "/"
    assert sorted(url.removeprefix(files) for url in load.finished) == sorted(LOADED), load
    assert load.failed == [urljoin(SAVED_URL, "images/not-saved.png")], load

    listed = rewriter("links", output, "--json")
    assert listed.returncode == 0, listed.stderr
    records = [json.loads(line) for line in listed.stdout.splitlines()]
    local = [record for record in records if record["original"].startswith(FILES)]
    assert len(local) == sum(1 for _, _, url in links_of(SAVED_PAGE) if url.startswith(FILES))
    assert {record["status"] for record in local} == {"local"}, local
    others = [record for record in records if not record["original"].startswith(FILES)]
    assert others and all(record["status"] in ("absolute", "same-document") for record in others), others


def test_saved_complete_page_in_a_url_root_folder(tmp_path: Path) -> None:
    """A saved page in a folder rewritten with ``--url-root``: its saved-from mark, not the URL the
    root gives the file, is the base of its links (the mark is the base when there is no <base>,
    inside any --url or --url-root), and its ``page_files/`` references are kept as written."""
    page = save_page(tmp_path / "saved")
    output = tmp_path / "out"
    rewrite_ok(page.parent, "-o", f"{output}/", "--url-root", "https://mirror.example/saved/")
    assert links_of((output / "page.html").read_text(encoding="utf-8")) == expected_links("keep")


def test_saved_complete_page_absolutize_local(tmp_path: Path) -> None:
    """With --absolutize-local the ``page_files/`` references too are made absolute, against the
    saved-from URL (https://example.org/dir/sub/page_files/NAME). The page alone: its folder's style
    sheets have no URL to make theirs absolute against."""
    output = rewrite_saved(tmp_path, "file", "--absolutize-local")
    text = output.read_text(encoding="utf-8")
    assert links_of(text) == expected_links("absolute")
    assert "./page_files/" not in text
    assert text.count("https://example.org/dir/sub/page_files/") == SAVED_PAGE.count("./page_files/")
