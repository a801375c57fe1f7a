"""HTTrack's "Mirrored from" mark says where a mirrored page came from, as a browser's saved-from
mark does (RFC 1808 §3.3: the retrieval URL): the bytes engine, the tree adapters and a
collection run read it alike, and it outranks a URL guessed from the file's place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

import rewriter

MARK = "<!-- Mirrored from {} by HTTrack Website Copier/3.x [XR&CO'2014], Sun, 29 Nov 2026 04:00:00 GMT -->"


def _page(where: str) -> bytes:
    return (
        "<!DOCTYPE html>\n<html lang=en>\n" + MARK.format(where) + "\n<head><!-- Added by HTTrack -->"
        '<meta http-equiv="content-type" content="text/html;charset=UTF-8" /><!-- /Added by HTTrack -->\n'
        '<link rel=stylesheet href="../css/site.css"></head>\n<body><a href="next.html">n</a>'
        '<img src="/img/logo.png"></body></html>\n'
    ).encode()


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("o.test/docs/page.html", "http://o.test/docs/"),  # HTTrack writes an http URL without its scheme
        ("https://o.test/docs/page.html", "https://o.test/docs/"),
    ],
)
def test_the_mark_is_the_pages_url(where: str, expected: str) -> None:
    result = rewriter.rewrite(_page(where))
    assert {link.original: link.resolved for link in result.links} == {
        "../css/site.css": expected.removesuffix("docs/") + "css/site.css",
        "next.html": expected + "next.html",
        "/img/logo.png": expected.removesuffix("docs/") + "img/logo.png",
    }
    assert {link.layer for link in result.links} == {"saved-from-mark"}
    assert result.output == _page(where).replace(b'"next.html"', f'"{expected}next.html"'.encode()).replace(
        b'"../css/site.css"', f'"{expected.removesuffix("docs/")}css/site.css"'.encode()
    ).replace(b'"/img/logo.png"', f'"{expected.removesuffix("docs/")}img/logo.png"'.encode())


def test_the_tree_adapter_reads_the_mark_too() -> None:
    soup = BeautifulSoup(_page("o.test/docs/page.html"), "html.parser")
    rewriter.rewrite_tree(soup)
    assert soup.a is not None and soup.a["href"] == "http://o.test/docs/next.html"


def test_a_mark_naming_no_usable_url_is_no_base() -> None:
    assert {link.status for link in rewriter.rewrite(_page("about:blank")).links} == {"no-base"}


def test_a_mark_with_a_port() -> None:
    resolved = {link.resolved for link in rewriter.rewrite(_page("o.test:8080/docs/page.html")).links}
    assert "http://o.test:8080/docs/next.html" in resolved


def test_a_collection_run_takes_the_mark_over_the_guessed_url(tmp_path: Path) -> None:
    page = tmp_path / "mirror" / "o.test" / "docs" / "page.html"
    page.parent.mkdir(parents=True)
    page.write_bytes(_page("o.test/docs/page.html"))
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "rewrite", str(tmp_path / "mirror"), "-o", str(tmp_path / "out") + "/",
         "--url-root", "https://elsewhere.test/"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "out" / "o.test" / "docs" / "page.html").read_text()
    assert 'href="http://o.test/docs/next.html"' in written and 'src="http://o.test/img/logo.png"' in written
