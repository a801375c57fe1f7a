"""What a file is: one decision (:func:`rewriter.containers.formats.what_file_is`), made once per
input from its content, its declared type and its name, and what a run does with it.

The command line runs as a user types it (``python -m rewriter`` in a fresh working folder):
a wget mirror of a dynamic site keeps its pages under their URL names (``view.php?id=2``,
``casts.html?from=query``, no extension at all), and beside them images, fonts, scripts and
data that are no documents and are copied byte for byte, never failed.
"""

from __future__ import annotations

import codecs
import gzip
import re
from pathlib import Path

import pytest
from conftest import err_lines, run_cli, shared_path, without_summary

from rewriter.containers.formats import Kind, what_file_is
from rewriter.run.batch import plan

URL = "http://host/"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
WOFF2 = b"wOF2\x00\x01\x00\x00\x00\x00\x04\x00\x00\x0a\x00\x00"
# mdBook's searcher.js builds its results' links from strings: read as HTML, the '<a href="'
# below would become '<a href="http://host/book/' and break the search on nested pages.
SEARCHER = b"""'use strict';
window.search = window.search || {};
(function search(search) {
    function formatSearchResult(result, searchterms) {
        return '<a href="' + path_to_root + result.ref + '" aria-details="teaser_' + teaser_count + '">'
            + result.doc.breadcrumbs + '</a>' + '<span class="teaser">' + teaser + '</span>';
    }
})(window.search);
"""
PAGES = {
    "index.php": b'<!DOCTYPE html>\n<a href="view.php?id=2">two</a><link rel=stylesheet href="missing.css">',
    "view.php?id=2": b'<html><body><a href="../up/">up</a><img src="pics/none.jpg"></body></html>',
    "casts.html?from=query": b"\n<p><a href=episodes/>episodes</a></p>",
    "about": b"  <title>About</title><a href='team'>team</a>",
    "shop/default.aspx": b'<form action="cart.aspx"><input type=image src="go.gif"></form>',
}
EXPECTED = {
    "index.php": b'<!DOCTYPE html>\n<a href="http://host/view.php?id=2">two</a>'
    b'<link rel=stylesheet href="http://host/missing.css">',
    "view.php?id=2": b'<html><body><a href="http://host/up/">up</a><img src="http://host/pics/none.jpg"></body></html>',
    "casts.html?from=query": b"\n<p><a href=http://host/episodes/>episodes</a></p>",
    "about": b"  <title>About</title><a href='http://host/team'>team</a>",
    "shop/default.aspx": b'<form action="http://host/cart.aspx"><input type=image src="http://host/go.gif"></form>',
    "site.css": b"body { background: url(http://host/img/bg.png) }\n",
}
OTHERS = {
    "logo.png": PNG,
    "fonts/sans.woff2": WOFF2,
    "searcher.js": SEARCHER,
    "search.mjs": b"export const a = '<a href=\"x\">';\n",
    "searchindex.json": b'{"doc": "<a href=\\"x.html\\">x</a>"}',
}
SUMMARY = re.compile(
    r"rewriter: (?P<files>\d+) inputs?: (?P<rewritten>\d+) rewritten, (?P<unchanged>\d+) unchanged, "
    r"(?P<failed>\d+) failed; (?:(?P<copied>\d+) other files? copied; )?links: .*"
)


def dynamic_mirror(root: Path) -> None:
    """A wget mirror of a dynamic site: pages under their URL names, and what they use."""
    files = {**PAGES, "site.css": b"body { background: url(img/bg.png) }\n", **OTHERS}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def files_under(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# --------------------------------------------------------------------------
# A folder: every document whatever its name; everything else copied
# --------------------------------------------------------------------------


@pytest.mark.parametrize("include", [(), ("--include", "*")], ids=["default", "include-all"])
def test_a_dynamic_site_mirror_is_rewritten_and_the_rest_copied(tmp_path: Path, include: tuple[str, ...]) -> None:
    dynamic_mirror(tmp_path / "mirror")
    done = run_cli(tmp_path, "rewrite", "mirror", "-o", "out", "--url", URL, *include)
    assert done.returncode == 0, done.stderr
    assert files_under(tmp_path / "out") == {**EXPECTED, **OTHERS}
    lines = err_lines(done)
    assert len(lines) == 1, lines  # the summary alone: no file failed, none is named
    figures = SUMMARY.fullmatch(lines[0])
    assert figures is not None
    assert figures.group("files", "rewritten", "unchanged", "failed", "copied") == ("6", "6", "0", "0", "5")


def test_the_planner_records_what_each_file_is_in_its_job(tmp_path: Path) -> None:
    dynamic_mirror(tmp_path / "mirror")
    jobs, problems = plan([str(tmp_path / "mirror")], str(tmp_path / "out"), copy_others=True)
    assert problems == []
    told = {Path(job.source).relative_to(tmp_path / "mirror").as_posix(): (job.format, job.copy) for job in jobs}
    assert told == {
        **dict.fromkeys(PAGES, ("html", False)),
        "site.css": ("css", False),
        **dict.fromkeys(OTHERS, ("other", True)),
    }
    assert all(job.why for job in jobs)  # and why, in words


def test_in_place_a_folder_s_documents_are_rewritten_and_the_rest_left_alone(tmp_path: Path) -> None:
    dynamic_mirror(tmp_path / "mirror")
    warc = gzip.compress(b"WARC/1.1\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n", mtime=0)
    (tmp_path / "mirror" / "crawl.bin").write_bytes(warc)  # a web archive, whatever its name: never in place
    done = run_cli(tmp_path, "rewrite", "mirror", "--in-place", "--url", URL)
    assert done.returncode == 0, done.stderr
    assert files_under(tmp_path / "mirror") == {**EXPECTED, **OTHERS, "crawl.bin": warc}


def test_include_and_exclude_filter_the_documents(tmp_path: Path) -> None:
    dynamic_mirror(tmp_path / "mirror")
    done = run_cli(
        tmp_path, "rewrite", "mirror", "-o", "out", "--url", URL, "--include", "*.php*", "--exclude", "index.*"
    )
    assert done.returncode == 0, done.stderr
    out = files_under(tmp_path / "out")
    assert "index.php" not in out  # excluded: not even copied
    assert out["view.php?id=2"] == EXPECTED["view.php?id=2"]
    assert out["about"] == PAGES["about"]  # not included: copied as it is
    assert out["searcher.js"] == SEARCHER


def test_the_corpus_page_with_no_extension_is_a_page(tmp_path: Path) -> None:
    # The HTML corpus keeps one page under a name with no extension (its golden digests changed
    # with this: rewrite-html-urls-whatwg rewrites it now, and both runs' reports list its links).
    name = "traf--Ziemniaki_na_szostej_surowka_na_dziesiatej_._Jak_pomagac_zeby_nie_zaszkodzic__PORADNIK_W_P"
    page = shared_path("corpus", "html", name)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / name).write_bytes(page.read_bytes())
    (tmp_path / "site" / "SOURCES.md").write_bytes(b"<a href=x>the sources</a>\n")  # Markdown: copied
    done = run_cli(tmp_path, "rewrite", "site", "-o", "out", "--url", "http://wiadomosci.gazeta.pl/")
    assert done.returncode in (0, 1), done.stderr  # 1: some of its links are unresolvable
    figures = SUMMARY.fullmatch(err_lines(done)[-1])
    assert figures is not None and figures.group("files", "rewritten", "copied") == ("1", "1", "1")
    assert (tmp_path / "out" / name).read_bytes() != page.read_bytes()
    assert (tmp_path / "out" / "SOURCES.md").read_bytes() == b"<a href=x>the sources</a>\n"


# --------------------------------------------------------------------------
# A file named on the command line
# --------------------------------------------------------------------------


def test_a_script_named_alone_is_left_byte_for_byte_and_said_so(tmp_path: Path) -> None:
    (tmp_path / "searcher.js").write_bytes(SEARCHER)
    said = "rewriter: searcher.js: a script by its name (.js), not a document: copied as it is"
    done = run_cli(tmp_path, "rewrite", "searcher.js", "--url", "http://host/book/")
    assert (done.returncode, done.stdout, without_summary(done.stderr).decode().splitlines()) == (0, SEARCHER, [said])
    done = run_cli(tmp_path, "rewrite", "searcher.js", "--url", "http://host/book/", "-o", "out.js")
    assert (done.returncode, without_summary(done.stderr).decode().splitlines()) == (0, [said])
    assert (tmp_path / "out.js").read_bytes() == SEARCHER
    done = run_cli(tmp_path, "rewrite", "searcher.js", "--url", "http://host/book/", "--in-place")
    assert (done.returncode, without_summary(done.stderr).decode().splitlines()) == (
        0,
        [said.replace("copied", "left")],
    )
    assert (tmp_path / "searcher.js").read_bytes() == SEARCHER
    # --format names the engine: the user's choice, not the name's.
    done = run_cli(tmp_path, "rewrite", "searcher.js", "--url", "http://host/book/", "--format", "html")
    assert b"<a href=\"http://host/book/' + path_to_root" in done.stdout


def test_a_page_named_alone_whatever_its_name_is_a_page(tmp_path: Path) -> None:
    (tmp_path / "view.php?id=2").write_bytes(PAGES["view.php?id=2"])
    done = run_cli(tmp_path, "rewrite", "view.php?id=2", "--url", URL)
    assert (done.returncode, done.stdout) == (0, EXPECTED["view.php?id=2"])


# --------------------------------------------------------------------------
# The decision itself
# --------------------------------------------------------------------------

WARC = b"WARC/1.1\r\nWARC-Type: warcinfo\r\nContent-Type: application/warc-fields\r\nContent-Length: 0\r\n\r\n"
ARC = b"filedesc://crawl.arc 0.0.0.0 20240501120000 text/plain 9\n1 0 test\n"
BOM = codecs.BOM_UTF8


@pytest.mark.parametrize(
    ("head", "name", "declared", "expected"),
    [
        # Pages whatever their names: wget's, a server's, none.
        (b"<!DOCTYPE html><title>t</title>", "view.php?id=2", None, "html"),
        (b"<p><a href=x>x</a>", "casts.html?from=query", None, "html"),
        (b"\n\n<html><body>", "about", None, "html"),
        (b"<html>", "page.asp", None, "html"),
        (b"<html>", "page.jsp", None, "html"),
        (b"<html>", "search.cgi", None, "html"),
        (b"Note: moved\n\n<p><a href=new>here</a>", None, None, "html"),
        (b"", "index.html", None, "html"),  # nothing to tell by but the name
        # Text with no markup is no page (a script, a key, a note): copied.
        (b"#!/bin/sh\necho hi\n", "run.sh", None, "other"),
        (b"key", "secret.key", None, "other"),
        (b"", "empty.php", None, "other"),
        # Scripts and data are never pages, whatever they hold; a .css is a style sheet.
        (b"var a = '<a href=\"' + root + '\">';", "searcher.js", None, "other"),
        (b"<a href=x>", "module.mjs", None, "other"),
        (b"<a href=x>", "searcher.js?v=3", None, "other"),
        (b'{"html": "<a href=x>"}', "index.json", None, "other"),
        (b"<!-- a { color: red } -->", "old.css", None, "css"),
        (b"<p>not really</p>", "site.css", None, "css"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'><a href='x'/></svg>", "logo.svg", None, "other"),
        (b"<a href=x>", "notes.txt", None, "other"),
        # The declared type beats the name; a type that says nothing leaves it to the content.
        (b"<p>x", "x.js", "text/html; charset=utf-8", "html"),
        (b"<p>x", "page.html", "text/javascript", "other"),
        (b"<p>x", "page.html", "application/json", "other"),
        (b"body { margin: 0 }", "x.bin", "TEXT/CSS", "css"),
        (b"MIME-Version: 1.0\r\n\r\n", "a.html", "message/rfc822", "message"),
        (b"<p>x", "page", "application/octet-stream", "html"),
        (b"<p>x", "page", "text/plain", "html"),
        # Text behind a byte order mark.
        (BOM + b"<p>x", None, None, "html"),
        (BOM + b"body { color: red }", None, None, "css"),
        (BOM + b"From: a@example.org\nSubject: hi\n\nhi", None, None, "message"),
        ("<p>UTF-16</p>".encode("utf-16"), None, None, "html"),
        # Binary data: a signature or a binary data byte (WHATWG MIME Sniffing 7.1), whatever the name.
        (PNG, "logo.html", None, "other"),
        (WOFF2, "sans.woff2", None, "other"),
        (b"GIF89a\x01\x00", None, None, "other"),
        (b"text\x00with a NUL", "page.php", None, "other"),
        (b"\x01\x02\x03 control bytes", None, None, "other"),
        (gzip.compress(b"<a href=x>", mtime=0), "page.html.gz", None, "other"),
        # Mail and web archives, by their content.
        (b"From a@example.org Sat Jan  1 00:00:00 2000\nSubject: x\n\n", "x.html", None, "mbox"),
        (WARC, "crawl.bin", None, "warc"),
        (gzip.compress(WARC, mtime=0), "crawl.warc.gz", "text/html", "warc"),
        (ARC, None, None, "arc"),
        (gzip.compress(ARC, mtime=0), "crawl.arc.gz", None, "arc"),
    ],
)
def test_what_file_is(head: bytes, name: str | None, declared: str | None, expected: str) -> None:
    kind = what_file_is(head, name, declared)
    assert kind.format == expected
    assert kind.document == (expected != "other")
    assert kind.reason  # why, in words (explain, a run's messages)


def test_the_decision_is_one_immutable_value_with_its_reason() -> None:
    kind = what_file_is(PNG, "logo.html")
    assert kind == Kind("other", "binary data (a PNG image, by its signature)")
    with pytest.raises(AttributeError):
        kind.format = "html"  # type: ignore[misc]
    assert what_file_is(b"<p>", "x.js", "text/html").reason == "declared text/html"
    assert "(.js)" in what_file_is(b"<p>", "x.js").reason
