"""pack, then unpack: the page comes back equal outside link values, and loads offline.

The site is ``tests/test_pack.py``'s: a saved page with its ``page_files/`` (images, a
srcset, style sheets that import one another, a font, a background), a link out of the
folder and a symbolic link leading out of it. The browser half needs Debian's Chromium
and the ``playwright`` package (skips without them, fails in CI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from browser_bundle import check_bundle
from test_pack import PAGE, RESOURCES, STYLE_SHEETS, write_site

from rewriter.bundle.pack import pack_mhtml
from rewriter.bundle.unpack import unpack_message
from rewriter.html.engine import find_links

URL = "https://example.org/articles/page.html"


def outside_links(document: bytes, url: str | None) -> list[bytes]:
    """The pieces of *document* between its link values, in order."""
    pieces, last = [], 0
    for link in sorted(find_links(document, url=url).links, key=lambda link: link.start):
        pieces.append(document[last : link.start])
        last = link.end
    pieces.append(document[last:])
    return pieces


@pytest.fixture
def unpacked(tmp_path: Path) -> Path:
    page = write_site(tmp_path)
    packed = pack_mhtml(page, url=URL)
    result = unpack_message(packed.output, tmp_path / "unpacked")
    assert result.root == "index.html"
    assert not [part for part in result.parts if part.action == "failed"]
    return tmp_path / "unpacked"


def test_the_page_is_the_original_outside_link_values(unpacked: Path) -> None:
    back = (unpacked / "index.html").read_bytes()
    original = outside_links(PAGE, URL)
    returned = outside_links(back, None)
    # The <base> element, if the page had one, is the only other change unpack makes.
    assert b"<base" not in PAGE
    assert returned == original


def test_every_local_file_comes_back_byte_for_byte(unpacked: Path) -> None:
    written = {path.read_bytes() for path in unpacked.iterdir() if path.name not in ("index.html", "manifest.json")}
    for name, data in RESOURCES.items():
        if name.endswith("evil.png"):
            continue
        assert data in written, name
    # Style sheets come back with their links pointing at the bundle's files.
    assert len([path for path in unpacked.iterdir() if path.suffix == ".css"]) == len(STYLE_SHEETS)


def test_the_unpacked_page_loads_every_resource_offline(browser: Any, unpacked: Path) -> None:
    report = check_bundle(browser, unpacked)
    assert report.failed == []
    # pack took every local file the page loads but those outside its folder, which it refused.
    assert sorted(report.missing) == [
        "https://example.org/articles/page_files/evil.png",
        "https://example.org/etc/passwd",
        "https://example.org/outside.png",
    ]
    loaded = {Path(url).name for url in report.loaded}
    assert {"logo.png", "style.css", "print.css", "bg.png"} <= loaded, loaded
