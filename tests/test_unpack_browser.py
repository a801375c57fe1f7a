"""Unpacked bundles in headless Chromium, network off: every image and stylesheet the
archive holds loads from the bundle (``tests/browser_bundle.py`` says how it is counted).

Needs Debian's Chromium and the ``playwright`` package: without them the cases skip, or
fail when ``CI=true`` (CI installs both, see ``.ci/run``).
"""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from browser_bundle import MAIL_CORPUS, archives, check_bundle
from conftest import shared_path

from rewriter.bundle.unpack import unpack_message

pytestmark = pytest.mark.browser  # headless Chromium: seconds a page


def _png() -> bytes:
    """A valid 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\0\xff\0\0")
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def _archive() -> bytes:
    png = base64.encodebytes(_png()).replace(b"\n", b"\r\n")
    return (
        b'Content-Type: multipart/related; type="text/html"; boundary="B"\r\n'
        b"Snapshot-Content-Location: https://example.org/d/page.html\r\n\r\n"
        b"--B\r\nContent-Type: text/html\r\nContent-Location: https://example.org/d/page.html\r\n\r\n"
        b'<!doctype html><link rel=stylesheet href="../s/site.css"><img src="i/a b.png">'
        b'<img src="cid:pic@x"><img src="https://elsewhere.example/never-saved.png">\r\n'
        b"--B\r\nContent-Type: text/css\r\nContent-Location: https://example.org/s/site.css\r\n\r\n"
        b"body{background:url(/d/i/a%20b.png)}\r\n"
        b"--B\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n"
        b"Content-Location: https://example.org/d/i/a%20b.png\r\n\r\n" + png + b"--B\r\nContent-Type: image/png\r\n"
        b"Content-Transfer-Encoding: base64\r\nContent-ID: <pic@x>\r\n\r\n" + png + b"--B--\r\n"
    )


def test_a_synthetic_archive_loads_offline(browser: Any, tmp_path: Path) -> None:
    result = unpack_message(_archive(), tmp_path / "out")
    assert result.root == "index.html"
    report = check_bundle(browser, tmp_path / "out")
    assert sorted(Path(url).name for url in report.loaded) == ["a%20b.png", "pic.png", "site.css"]
    assert report.missing == ["https://elsewhere.example/never-saved.png"]
    assert report.failed == []


@pytest.mark.parametrize("name", [path.name for path in archives()] if MAIL_CORPUS.is_dir() else ["(no corpus)"])
def test_every_corpus_archive_loads_what_it_holds(browser: Any, tmp_path: Path, name: str) -> None:
    archive = shared_path("corpus", "mail", name)  # skips, or fails in CI, without ../shared
    result = unpack_message(archive.read_bytes(), tmp_path / "out")
    if result.root is None:
        # Nothing a browser could open: the archive's HTML part could not be found (reported).
        assert result.problems
        return
    report = check_bundle(browser, tmp_path / "out", name)
    print(f"{name}: loaded {len(report.loaded)}, missing from the file {len(report.missing)}, failed 0")
    assert report.failed == [], report.failed
