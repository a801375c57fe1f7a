"""Issue 18, point 10: ``unpack`` names each file with an extension its declared type allows.

A browser or a file manager opening an unpacked file goes by its extension alone: a part
declared ``image/png`` written as ``evil.html``, ``a.svg``, ``a.js`` or ``a.exe`` would be
run as a page, a script or a program. The extension follows the declared Content-Type;
links into the bundle follow the new names.
"""

from __future__ import annotations

import base64
import json
import mimetypes
import os
import unicodedata
from pathlib import Path

import pytest
from test_cli_batch import rewriter
from test_unpack import html, message, resource
from test_warc import PNG, response, warc

import rewriter.disk.names as names
from rewriter.bundle.unpack import unpack_message
from rewriter.containers.warc import unpack_warc
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


# --- Issue 9 (b): no name holds a control or an invisible format character ---------------------------------

# What must never reach a written name: each reorders, hides or breaks what a listing shows.
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
INVISIBLE = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e\U000e0001\U000e0041"
CONTROLS = "\x01\x07\x08\x09\x0a\x0d\x1b\x7f\x80\x85\x9b\x9f"
SEPARATORS = "\u2028\u2029"


def _shows_only_what_it_is(name: str) -> bool:
    """No control (Cc), format character (Cf), line or paragraph separator, or lone surrogate."""
    return not any(unicodedata.category(character) in ("Cc", "Cf", "Zl", "Zp", "Cs") for character in name)


@pytest.mark.parametrize("character", list(BIDI + INVISIBLE), ids=lambda c: f"U+{ord(c):04X}")
def test_an_invisible_format_character_is_dropped_from_a_name(character: str) -> None:
    # "invoice<U+202E>fdp.exe" is shown as "invoiceexe.pdf": without it the name reads as it is.
    assert safe_name(f"invoice{character}fdp.exe", "image/png") == "invoicefdp.exe.png"
    assert safe_name(f"http://x/a{character}b.png") == "ab.png"
    encoded = "".join(f"%{byte:02X}" for byte in character.encode("utf-8"))
    assert safe_name(f"http://x/a{encoded}b.png", "image/png") == "ab.png"


@pytest.mark.parametrize("character", list(CONTROLS + SEPARATORS), ids=lambda c: f"U+{ord(c):04X}")
def test_a_control_or_a_line_separator_in_a_name_becomes_an_underscore(character: str) -> None:
    assert safe_name(f"a{character}b.png", "image/png") == "a_b.png"
    encoded = "".join(f"%{byte:02X}" for byte in character.encode("utf-8"))
    assert safe_name(f"http://x/a{encoded}b.png", "image/png") == "a_b.png"


def test_no_code_point_that_hides_or_breaks_a_name_survives() -> None:
    # Every control, format character and separator Unicode has (as this Python knows it),
    # raw and percent-encoded, in the middle, at the start (a BOM) and at the end of a name.
    hiding = [chr(code) for code in range(0x110000) if unicodedata.category(chr(code)) in ("Cc", "Cf", "Zl", "Zp")]
    assert len(hiding) > 190 and "\u202e" in hiding and "\U000e007f" in hiding
    for character in hiding:
        encoded = "".join(f"%{byte:02X}" for byte in character.encode("utf-8", "surrogatepass"))
        for raw in (f"a{character}b.png", f"{character}x", f"x.png{character}", f"http://x/{encoded}y{encoded}.png"):
            name = safe_name(raw, "image/png")
            assert _shows_only_what_it_is(name), (raw, name)
            assert name and name not in (".", "..") and not name.startswith(".")


@pytest.mark.parametrize(
    ("raw", "name"),
    [
        ("con\u200b.html", "_con.html"),  # a device name stays disguised no more
        ("c\u202eon.html", "_con.html"),
        ("lpt1\ufeff", "_lpt1"),
        (".\u200b.", "file"),  # no "..", no hidden file
        ("\u200b.hidden", "hidden"),
        ("\u202e", "file"),
        ("a\u2028\u2029", "a__"),
        ("trailing\u200b. \u200b", "trailing"),
    ],
)
def test_the_other_rules_hold_once_the_invisible_characters_are_gone(raw: str, name: str) -> None:
    assert safe_name(raw) == name


def test_a_name_stays_readable() -> None:
    # Letters of every script, combining marks, emoji and their variation selectors stay.
    for readable in ("caf\u00e9.png", "\u05e9\u05dc\u05d5\u05dd.png", "\u0645\u0631\u062d\u0628\u0627.png"):
        assert safe_name(readable) == readable
    assert safe_name("\u2764\ufe0f.png") == "\u2764\ufe0f.png"
    assert safe_name("e\u0301.png") == "\u00e9.png"  # NFC, as before


def _rfc2047(text: str) -> str:
    return "=?UTF-8?B?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


def test_unpacked_names_from_every_source_hold_no_bidi_or_invisible_character(tmp_path: Path) -> None:
    evil = "evil\u202egnp.exe"  # shown as "evilexe.png"
    encoded = "evil%E2%80%AEgnp.exe"
    word = _rfc2047(evil)
    parts = [
        resource(f"http://x/{evil}", b"LOCATION", "image/png"),
        resource(f"http://x/{encoded}", b"ENCODED", "image/png"),
        resource(None, b"RFC2231", "image/png", **{"Content-Disposition": f"attachment; filename*=UTF-8''{encoded}"}),
        resource(None, b"RAW", "image/png", **{"Content-Disposition": f'attachment; filename="{evil}"'}),
        resource(None, b"RFC2047", "image/png", **{"Content-Disposition": f'attachment; filename="{word}"'}),
        resource(None, b"NAME", "image/png", **{"Content-Type": "image/png; name*=UTF-8''zw%E2%80%8Bsp%EF%BB%BF.png"}),
        resource(None, b"CID", "image/png", **{"Content-ID": f"<{encoded}@x>"}),
        resource(None, b"CID-ISOLATES", "image/png", **{"Content-ID": "<bom%EF%BB%BF%E2%81%A6x%E2%81%A9@x>"}),
        resource(None, b"CID-LINE", "image/png", **{"Content-ID": "<a%E2%80%A8b%C2%85c@x>"}),
    ]
    page = (
        f'<img src="{evil}"><img src="{encoded}"><img src="cid:{encoded}@x">'
        '<img src="cid:bom%EF%BB%BF%E2%81%A6x%E2%81%A9@x"><img src="cid:a%E2%80%A8b%C2%85c@x">'
    )
    out, manifest = _unpacked(tmp_path, html("http://x/", page.encode("utf-8")), *parts)
    written = [part["file"] for part in manifest["parts"]]
    assert written == [
        "index.html",
        "evilgnp.exe.png",
        "evilgnp.exe-2.png",
        "evilgnp.exe-3.png",
        "evil\ufffd\ufffd\ufffdgnp.exe.png",  # raw UTF-8 in a heading is read as replacement characters
        # An encoded word inside a quoted parameter is not decoded (RFC 2047 §5 allows none there):
        # the name is the word itself, made safe.
        word.replace("?", "_") + ".png",
        "zwsp.png",
        "evilgnp.exe-4.png",
        "bomx.png",
        "a_b_c.png",
    ]
    on_disk = sorted(os.listdir(out))
    assert on_disk == sorted([*written, "manifest.json"])
    assert all(_shows_only_what_it_is(name) for name in on_disk)
    bodies = [b"LOCATION", b"ENCODED", b"RFC2231", b"RAW", b"RFC2047", b"NAME", b"CID", b"CID-ISOLATES", b"CID-LINE"]
    for name, body in zip(written[1:], bodies, strict=True):
        assert (out / name).read_bytes() == body
    # The links into the bundle follow the names written.
    assert (out / "index.html").read_bytes() == (
        b'<img src="evilgnp.exe.png"><img src="evilgnp.exe-2.png"><img src="evilgnp.exe-4.png">'
        b'<img src="bomx.png"><img src="a_b_c.png">'
    )


def test_a_name_that_differs_only_by_an_invisible_character_never_overwrites(tmp_path: Path) -> None:
    parts = [resource(f"http://x/{raw}", raw.encode("utf-8"), "image/png") for raw in ("ab.png", "a\u200bb.png")]
    parts.append(resource("http://x/A%E2%80%8Db.PNG", b"third", "image/png"))
    out, manifest = _unpacked(tmp_path, html("http://x/", b"<p>x"), *parts)
    assert [part["file"] for part in manifest["parts"][1:]] == ["ab.png", "ab-2.png", "Ab-3.PNG"]
    assert (out / "ab.png").read_bytes() == b"ab.png"
    assert (out / "ab-2.png").read_bytes() == "a\u200bb.png".encode()
    assert (out / "Ab-3.PNG").read_bytes() == b"third"


def test_unpacked_warc_names_hold_no_bidi_or_invisible_character(tmp_path: Path) -> None:
    records = [
        response("http://h/d%E2%80%AEir/evil%E2%80%AEgnp.html", b"<p>1</p>"),
        response("http://h/d\u2067ir/z\u200bw.png", PNG, "image/png"),
        response("http://h/line%E2%80%A8break%C2%9B.css", b"p{}", "text/css"),
        response("http://h/%EF%BB%BFbom?q=%E2%80%8F", b"<p>2</p>"),
    ]
    out = tmp_path / "out"
    report = unpack_warc(warc(tmp_path / "a.warc.gz", records), out)
    assert not report.problems
    files = sorted(entry.file for entry in report.entries if entry.file)
    # Two folders whose URLs differ by their invisible characters are two folders.
    assert files == ["h/bom_q=.html", "h/dir-2/zw.png", "h/dir/evilgnp.html", "h/line_break_.css"]
    for path in out.rglob("*"):
        assert _shows_only_what_it_is(path.name), path
    assert (out / "h/dir-2/zw.png").read_bytes() == PNG


def test_a_lone_surrogate_in_a_name_becomes_an_underscore() -> None:
    # A byte that was not UTF-8, kept as a lone surrogate: no file name can hold it as such
    # (the name is written as UTF-8); this once raised UnicodeEncodeError.
    assert safe_name("a\udcffb.png", "image/png") == "a_b.png"
    assert safe_name("\ud800") == "_"
