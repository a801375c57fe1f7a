"""Issue 18, point 10: ``unpack`` names each file with an extension its declared type allows.

A browser or a file manager opening an unpacked file goes by its extension alone: a part
declared ``image/png`` written as ``evil.html``, ``a.svg``, ``a.js`` or ``a.exe`` would be
run as a page, a script or a program. The extension follows the declared Content-Type;
links into the bundle follow the new names.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import Path

import pytest
from test_cli_batch import rewriter
from test_unpack import html, message, resource

import rewriter.disk.names as names
from rewriter.bundle.unpack import unpack_message
from rewriter.disk.names import allowed_extensions, safe_name

ACTIVE = (".html", ".htm", ".svg", ".js", ".exe", ".xhtml", ".mjs", ".bat", ".hta")


def _unpacked(tmp_path: Path, *parts: tuple[dict[str, str], bytes]) -> tuple[Path, dict]:
    out = tmp_path / "out"
    unpack_message(message(*parts), out)
    return out, json.loads((out / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("raw", ["evil.html", "a.svg", "a.exe", "a.js", "a.HTM", "a.png.html", "a.xhtml"])
@pytest.mark.parametrize("content_type", ["image/png", "image/gif", "image/jpeg", "image/webp"])
def test_an_image_named_as_something_active_is_written_as_an_image(tmp_path: Path, raw: str, content_type: str) -> None:
    page = b'<img src="%s"><img src="cid:by-name@x">' % raw.encode()
    out, manifest = _unpacked(
        tmp_path,
        html("http://x/", page),
        resource(f"http://x/{raw}", b"PIXELS", content_type),  # named by its Content-Location
        resource(  # named by its file name alone
            None,
            b"MORE PIXELS",
            content_type,
            **{"Content-ID": "<by-name@x>", "Content-Disposition": f'attachment; filename="{raw}"'},
        ),
    )
    by_location, by_name = (part["file"] for part in manifest["parts"][1:])
    usual = allowed_extensions(content_type)[0]
    assert by_location == raw + usual
    assert by_name == raw + "-2" + usual  # the same name twice: numbered before the extension
    for name in (by_location, by_name):
        assert Path(name).suffix.lower() in allowed_extensions(content_type)
    assert (out / by_location).read_bytes() == b"PIXELS"
    assert (out / by_name).read_bytes() == b"MORE PIXELS"
    # The links into the bundle follow the new names.
    assert (out / "index.html").read_bytes() == f'<img src="{by_location}"><img src="{by_name}">'.encode()
    # Nothing in the folder but the root page has an extension that runs.
    active = [path.name for path in out.iterdir() if path.suffix.lower() in ACTIVE]
    assert active == ["index.html"]


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        ("photo.jpg", "image/jpeg"),
        ("photo.jpeg", "image/jpeg"),
        ("photo.JPG", "image/jpeg"),
        ("logo.png", "image/png"),
        ("logo.png", "IMAGE/PNG"),
        ("anim.gif", "image/gif"),
        ("icon.svg", "image/svg+xml"),  # declared SVG: what a browser would run, it was told
        ("font.woff2", "font/woff2"),
        ("app.js", "application/javascript"),
        ("notes.txt", "text/plain"),
        ("style.css", "text/css"),
    ],
)
def test_an_extension_that_fits_the_declared_type_is_kept(tmp_path: Path, raw: str, content_type: str) -> None:
    out, manifest = _unpacked(
        tmp_path, html("http://x/", b'<img src="%s">' % raw.encode()), resource(f"http://x/{raw}", b"B", content_type)
    )
    assert manifest["parts"][1]["file"] == raw
    assert (out / "index.html").read_bytes() == b'<img src="%s">' % raw.encode()


def test_html_parts_keep_html_and_other_types_get_theirs(tmp_path: Path) -> None:
    out, manifest = _unpacked(
        tmp_path,
        html("http://x/", b'<a href="other.html">o</a><a href="old.htm">h</a><a href="page.php">p</a>'),
        html("http://x/other.html", b"o"),
        html("http://x/old.htm", b"h"),
        html("http://x/page.php", b"p"),
        resource("http://x/pixel", b"P", "image/png"),  # no extension: the type's is added
    )
    assert [part["file"] for part in manifest["parts"]] == [
        "index.html",
        "other.html",
        "old.htm",
        "page.php.html",
        "pixel.png",
    ]
    assert (out / "index.html").read_bytes() == (
        b'<a href="other.html">o</a><a href="old.htm">h</a><a href="page.php.html">p</a>'
    )


@pytest.mark.parametrize(
    ("raw", "content_type", "name"),
    [
        ("evil.html", "application/x-rewriter-unknown", "evil.html.bin"),
        ("a.png", "image/x-rewriter-unknown", "a.png.bin"),
        ("a.exe", "application/octet-stream", "a.exe.bin"),  # Python's table lists .exe for it
        ("a.dll", "application/octet-stream", "a.dll.bin"),
        ("a.html", "application/octet-stream", "a.html.bin"),
        ("a.bin", "application/octet-stream", "a.bin"),
        ("run.bat", "text/plain", "run.bat.txt"),  # Python's table lists .bat for text/plain
        ("data", "application/x-rewriter-unknown", "data"),  # no extension, no claim to undo
        ("data", "application/octet-stream", "data"),
    ],
)
def test_a_type_without_an_extension_of_its_own_gets_a_neutral_one(
    tmp_path: Path, raw: str, content_type: str, name: str
) -> None:
    out, manifest = _unpacked(
        tmp_path,
        html("http://x/", b'<a href="%s">x</a>' % raw.encode()),
        resource(f"http://x/{raw}", b"B", content_type),
    )
    assert manifest["parts"][1]["file"] == name
    assert (out / name).read_bytes() == b"B"
    assert (out / "index.html").read_bytes() == b'<a href="%s">x</a>' % name.encode()


def test_the_unpack_command_names_an_image_as_an_image(tmp_path: Path) -> None:
    (tmp_path / "saved.mhtml").write_bytes(
        message(
            html("https://x/page.html", b'<img src="logo.svg"><iframe src="cid:e@x"></iframe>'),
            resource("https://x/logo.svg", b"<svg onload=alert(1) xmlns='http://www.w3.org/2000/svg'/>"),
            resource(None, b"MZ", "image/gif", **{"Content-ID": "<e@x>", "Content-Type": "image/gif; name=e.exe"}),
        )
    )
    done = rewriter(tmp_path, "unpack", "saved.mhtml", "-o", "out")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert sorted(path.name for path in out.iterdir()) == ["e.exe.gif", "index.html", "logo.svg.png", "manifest.json"]
    assert (out / "index.html").read_bytes() == b'<img src="logo.svg.png"><iframe src="e.exe.gif"></iframe>'


def test_the_names_do_not_depend_on_the_systems_type_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    # /etc/mime.types, the Windows registry or mimetypes.add_type could make .html an image's
    # extension, or give a type an extension Python's own table does not: neither counts.
    hostile = mimetypes.MimeTypes()
    hostile.add_type("image/png", ".html")
    hostile.add_type("application/x-rewriter-unknown", ".exe")
    monkeypatch.setattr(mimetypes, "_db", hostile)
    monkeypatch.setattr(mimetypes, "types_map", hostile.types_map[True])
    for cached in (names._builtin_table, allowed_extensions):
        monkeypatch.setattr(names, cached.__name__, cached.__wrapped__)  # computed afresh, under the hostile tables
    assert names.allowed_extensions("image/png") == (".png",)
    assert names.safe_name("evil.html", "image/png") == "evil.html.png"
    assert names.safe_name("a.exe", "application/x-rewriter-unknown") == "a.exe.bin"


def test_safe_name_without_a_type_keeps_the_names_own_extension() -> None:
    # Folder names and the bundle's own files come with no type: nothing is added or undone.
    assert safe_name("manifest.json") == "manifest.json"
    assert safe_name("a.html") == "a.html"
    assert safe_name("a.html", "") == "a.html"
