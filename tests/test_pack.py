"""rewriter.bundle.pack: a saved page and its folder as one MHTML file (RFC 2557) or one HTML file (RFC 2397)."""

from __future__ import annotations

import base64
import binascii
import email
import email.policy
import os
import quopri
import stat
import struct
import zlib
from email.message import EmailMessage
from pathlib import Path

import pytest

from rewriter.bundle import pack as pack_module
from rewriter.bundle.pack import PackError, PackResult, pack_mhtml, pack_single_file
from rewriter.css.stylesheet import find_css_links, rewrite_css
from rewriter.html.engine import Link, find_links, rewrite_html
from rewriter.mime.message import find_message_links
from rewriter.mime.transfer import decode
from rewriter.policy import Policy

URL = "http://example.org/a/b.html"
FILES = "http://example.org/a/page_files/"


def png(red: int, green: int, blue: int, width: int = 2) -> bytes:
    """A small valid PNG (PNG §5: signature, IHDR, IDAT, IEND), one colour."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + bytes((red, green, blue)) * width for _ in range(width))
    header = struct.pack(">IIBBBBB", width, width, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PAGE = (
    b"<!DOCTYPE html>\r\n"
    b"<!-- saved from url=(0027)http://example.org/a/b.html -->\r\n"
    b'<html><head><meta charset="utf-8"><title>Caf\xc3\xa9 &amp; co</title>\n'
    b'<link rel="stylesheet" href="page_files/style.css">\n'
    b'<link rel="icon" href="page_files/icon.png">\n'
    b'<link rel="canonical" href="other.html">\n'
    b"<style>h1 { background: url('page_files/h1.png') }</style>\n"
    b"</head><body>   \r\n"
    b'<h1 title="a=b c">T\xc3\xaftle =3D</h1>\t\n'
    b'<img src="page_files/logo.png" srcset="page_files/logo.png 1x, page_files/logo@2x.png 2x" alt="logo">\n'
    b'<div style="background-image: url(page_files/hero.png)">x</div>\n'
    b'<a href="http://example.com/elsewhere">abs</a> <a href="#top">top</a> <a href="other.html">other</a>\n'
    b'<img src="../outside.png"> <img src="page_files/evil.png"> <img src="../../../../../../../etc/passwd">\n'
    b"<p>" + b"a long line, " * 20 + b"</p>\r\n"
    b"</body></html>\n"
)
STYLE = (
    b"@import url(print.css);\n"
    b'@font-face { font-family: F; src: url("fonts/f.woff2") format("woff2") }\r\n'
    b"body { background: url(bg.png) }\n"
)
PRINT = b"@media print { body { background: url(bg.png) } }\n"
FONT = bytes(range(256)) + b"\r\n\n\r=\x00 \t"
OUTSIDE = png(1, 2, 3, width=5)
RESOURCES = {
    "page_files/icon.png": png(255, 255, 0),
    "page_files/h1.png": png(0, 0, 255),
    "page_files/logo.png": png(255, 0, 0),
    "page_files/logo@2x.png": png(0, 255, 0, width=4),
    "page_files/hero.png": png(9, 9, 9),
    "page_files/fonts/f.woff2": FONT,
    "page_files/bg.png": png(7, 7, 7, width=3),
}
STYLE_SHEETS = {"page_files/style.css": STYLE, "page_files/print.css": PRINT}


def write_site(tmp_path: Path) -> Path:
    """tmp_path/site/page.html and its page_files/, with a file and a symlink target outside."""
    (tmp_path / "outside.png").write_bytes(OUTSIDE)
    site = tmp_path / "site"
    for name, data in {**RESOURCES, **STYLE_SHEETS, "page.html": PAGE, "other.html": b"<p>other</p>"}.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(data)
    (site / "page_files" / "evil.png").symlink_to(tmp_path / "outside.png")
    return site / "page.html"


def parsed(output: bytes) -> EmailMessage:
    message = email.message_from_bytes(output, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    assert not message.defects
    return message


def by_location(message: EmailMessage) -> dict[str, EmailMessage]:
    return {str(part["Content-Location"]): part for part in message.iter_parts()}  # type: ignore[misc]


def spliced(original: bytes, links: list[Link], new: list[str]) -> bytes:
    """*original* with each link's span replaced by its new text: the bytes outside are the input's."""
    pieces, last = [], 0
    for link, text in zip(links, new, strict=True):
        pieces += [original[last : link.start], text.encode("utf-8")]
        last = link.end
    pieces.append(original[last:])
    return b"".join(pieces)


def data_url_bytes(url: str) -> tuple[str, bytes]:
    """The media type and the bytes of a base64 ``data:`` URL (RFC 2397 §3)."""
    assert url.startswith("data:"), url
    header, payload = url[5:].split(",", 1)
    assert header.endswith(";base64"), header
    return header[: -len(";base64")], base64.b64decode(payload, validate=True)


# --------------------------------------------------------------------------
# MHTML
# --------------------------------------------------------------------------


def test_mhtml_parses_to_the_expected_tree(tmp_path: Path) -> None:
    page = write_site(tmp_path)
    result = pack_mhtml(page)
    assert isinstance(result, PackResult)
    assert (result.url, result.url_source) == (URL, "saved-from-mark")
    message = parsed(result.output)
    assert message.get_content_type() == "multipart/related"
    assert message.get_param("type") == "text/html"
    assert message["Snapshot-Content-Location"] == URL
    assert message["Subject"] == "Café & co"
    assert result.output.startswith(b"From: <Saved by rewriter>\r\nSnapshot-Content-Location: " + URL.encode())
    assert message["MIME-Version"] == "1.0"
    assert message["Date"].datetime is not None
    parts = list(message.iter_parts())
    assert [str(part["Content-Location"]) for part in parts] == [part.content_location for part in result.parts]
    root = parts[0]
    assert (root.get_content_type(), root.get_content_charset(), str(root["Content-Location"])) == (
        "text/html",
        "utf-8",
        URL,
    )
    assert root["Content-Transfer-Encoding"] == "quoted-printable"
    expected = {FILES + name.removeprefix("page_files/") for name in [*RESOURCES, *STYLE_SHEETS]}
    assert {part.content_location for part in result.parts[1:]} == expected
    assert len(result.parts) == len(expected) + 1  # each file once (bg.png is loaded by both style sheets)
    assert result.parts[0].path == "page.html"
    # CRLF line breaks only, and no line longer than 78 characters (RFC 5322 §2.1.1).
    heading = result.output.split(b"\r\n\r\n", 1)[0]
    assert b"\n" not in heading.replace(b"\r\n", b"")
    assert all(len(line) <= 78 for line in result.output.split(b"\r\n"))


def test_mhtml_parts_decode_to_the_exact_bytes(tmp_path: Path) -> None:
    page = write_site(tmp_path)
    result = pack_mhtml(page)
    parts = by_location(parsed(result.output))
    html_part = parts[URL]
    assert html_part.get_payload(decode=True) == rewrite_html(PAGE, url=URL).output
    assert decode(html_part.get_payload().encode("ascii"), "quoted-printable") == rewrite_html(PAGE, url=URL).output
    for name, data in RESOURCES.items():
        part = parts[FILES + name.removeprefix("page_files/")]
        assert part["Content-Transfer-Encoding"] == "base64"
        assert part.get_payload(decode=True) == data
        assert all(len(line) <= 76 for line in part.get_payload().splitlines())
    assert parts[FILES + "logo.png"].get_content_type() == "image/png"
    assert parts[FILES + "fonts/f.woff2"].get_content_type() == "font/woff2"
    for name, data in STYLE_SHEETS.items():
        location = FILES + name.removeprefix("page_files/")
        part = parts[location]
        assert (part.get_content_type(), part.get_content_charset()) == ("text/css", "utf-8")
        assert part["Content-Transfer-Encoding"] == "quoted-printable"
        assert part.get_payload(decode=True) == rewrite_css(data, url=location).output
    assert {part.path: part.size for part in result.parts} == {
        "page.html": len(PAGE),
        **{name: len(data) for name, data in {**RESOURCES, **STYLE_SHEETS}.items()},
    }


def test_mhtml_html_part_changes_only_link_values(tmp_path: Path) -> None:
    page = write_site(tmp_path)
    html_part = by_location(parsed(pack_mhtml(page).output))[URL].get_payload(decode=True)
    changed = [link for link in find_links(PAGE, url=URL).links if link.status == "rewritten"]
    assert len(changed) >= 10
    assert all(link.resolved is not None and link.resolved.startswith("http://example.org/") for link in changed)
    assert html_part == spliced(PAGE, changed, [link.resolved or "" for link in changed])


def test_mhtml_reads_nothing_outside_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = write_site(tmp_path)
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to name what a descriptor is")
    site = str(page.parent.resolve())
    opened: list[str] = []
    real_open = os.open

    def recording_open(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        where = os.readlink(f"/proc/self/fd/{dir_fd}") if dir_fd is not None else os.getcwd()
        opened.append(os.path.normpath(os.path.join(where, os.fsdecode(path))))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(pack_module.os, "open", recording_open)
    result = pack_mhtml(page)
    monkeypatch.undo()
    assert opened and all(path == site or path.startswith(site + os.sep) for path in opened), opened
    assert not any(path.endswith("evil.png") for path in opened)
    assert "page_files/evil.png" not in [part.path for part in result.parts]
    problems = "\n".join(result.problems)
    assert "../outside.png: is outside the page's folder" in problems
    assert "page_files/evil.png: leads by a symbolic link to" in problems and str(tmp_path / "outside.png") in problems
    assert "etc/passwd: is outside the page's folder" in problems
    assert len(result.problems) == 3, result.problems
    assert base64.b64encode(OUTSIDE)[:40] not in result.output.replace(b"\r\n", b"")
    assert "other.html" not in [part.path for part in result.parts]  # a navigation link, made absolute


def test_mhtml_links_match_content_locations(tmp_path: Path) -> None:
    """RFC 2557 §8: each local reference, resolved by the MIME engine, equals a Content-Location octet for octet."""
    page = write_site(tmp_path)
    result = pack_mhtml(page)
    locations = {part.content_location for part in result.parts}
    found = find_message_links(result.output)
    html_part = next(part for part in found.parts if part.content_type == "text/html")
    assert (html_part.base, html_part.layer) == (URL, "Content-Location")
    matched = 0
    for before, after in zip(find_links(PAGE, url=URL).links, html_part.links, strict=True):
        if before.resolved is not None and before.resolved.split("#")[0] in locations:
            assert (after.resolved or after.original).split("#")[0] == before.resolved.split("#")[0]
            assert (after.resolved or after.original) in locations
            matched += 1
    assert matched == 7  # the two style sheets and five images of the page itself
    for part in found.parts:
        if part.content_type != "text/css":
            continue
        assert part.base in locations
        for link in part.links:
            assert (link.resolved or link.original) in locations
            matched += 1
    assert matched == 7 + 4


def test_mhtml_boundary_is_in_no_body(tmp_path: Path) -> None:
    page = write_site(tmp_path)
    output = pack_mhtml(page).output
    message = parsed(output)
    boundary = message.get_boundary()
    assert boundary is not None and "=_" in boundary
    assert output.count(b"--" + boundary.encode()) == len(list(message.iter_parts())) + 1


# --------------------------------------------------------------------------
# One HTML file with data: URLs
# --------------------------------------------------------------------------


def test_single_file_inlines_every_local_file(tmp_path: Path) -> None:
    page = write_site(tmp_path)
    result = pack_single_file(page)
    assert (result.url, result.url_source) == (URL, "saved-from-mark")
    before = find_links(PAGE, url=URL).links
    after = find_links(result.output).links
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a.status == "rewritten"]
    # Every byte outside the rewritten link values is the page's.
    assert result.output == spliced(PAGE, [a for a, _ in changed], [b.original for _, b in changed])
    inlined = 0
    for a, b in changed:
        assert a.resolved is not None
        name = a.resolved.removeprefix(FILES)
        if name in {key.removeprefix("page_files/") for key in RESOURCES}:
            media_type, data = data_url_bytes(b.original)
            assert data == RESOURCES["page_files/" + name]
            assert media_type == "image/png"
            inlined += 1
        elif name == "style.css":
            media_type, data = data_url_bytes(b.original)
            assert media_type == "text/css;charset=UTF-8"
            inlined += 1
            check_inlined_style(data)
        else:
            assert b.original == a.resolved  # absolute, not inlined
    assert inlined == 7  # six images (logo.png twice) and the style sheet
    assert "data:" not in str(result.problems)
    assert len(result.problems) == 3


def check_inlined_style(sheet: bytes) -> None:
    """style.css inlined: its own files are data: URLs, every other byte as it was."""
    links = find_css_links(sheet).links
    prefixes = ["data:text/css;charset=", "data:font/woff2;base64", "data:image/png;base64,"]
    assert [link.original[:22] for link in links] == prefixes
    assert spliced(STYLE, list(find_css_links(STYLE).links), [link.original for link in links]) == sheet
    imported = data_url_bytes(links[0].original)[1]
    assert data_url_bytes(links[1].original)[1] == FONT
    assert data_url_bytes(links[2].original)[1] == RESOURCES["page_files/bg.png"]
    (inner,) = find_css_links(imported).links
    assert data_url_bytes(inner.original)[1] == RESOURCES["page_files/bg.png"]


def test_single_file_breaks_cycles_by_leaving_the_url_absolute(tmp_path: Path) -> None:
    (tmp_path / "page_files").mkdir()
    (tmp_path / "page.html").write_bytes(b'<link rel=stylesheet href="page_files/a.css">')
    (tmp_path / "page_files" / "a.css").write_bytes(b'@import "b.css"; p { background: url(x.png) }')
    (tmp_path / "page_files" / "b.css").write_bytes(b'@import "a.css"; @import "b.css";')
    (tmp_path / "page_files" / "x.png").write_bytes(png(1, 1, 1))
    result = pack_single_file(tmp_path / "page.html", url="https://h/p.html")
    (link,) = find_links(result.output).links
    a_css = data_url_bytes(link.original)[1]
    b_link, x_link = find_css_links(a_css).links
    assert data_url_bytes(x_link.original)[1] == png(1, 1, 1)
    b_css = data_url_bytes(b_link.original)[1]
    assert b_css == b'@import "https://h/page_files/a.css"; @import "https://h/page_files/b.css";'
    assert any("which loads it in turn" in note for note in result.notes)
    mhtml = pack_mhtml(tmp_path / "page.html", url="https://h/p.html")
    assert [part.path for part in mhtml.parts] == [
        "page.html",
        "page_files/a.css",
        "page_files/b.css",
        "page_files/x.png",
    ]


def test_frames_are_packed_with_their_own_files(tmp_path: Path) -> None:
    (tmp_path / "page_files").mkdir()
    (tmp_path / "page.html").write_bytes(b'<iframe src="page_files/frame.html"></iframe>')
    (tmp_path / "page_files" / "frame.html").write_bytes(b'<img src="dot.png"><a href="../page.html">up</a>')
    (tmp_path / "page_files" / "dot.png").write_bytes(png(3, 3, 3))
    result = pack_mhtml(tmp_path / "page.html", url="https://h/p.html")
    parts = by_location(parsed(result.output))
    frame = parts["https://h/page_files/frame.html"]
    assert frame.get_content_type() == "text/html"
    assert (
        frame.get_payload(decode=True)
        == b'<img src="https://h/page_files/dot.png"><a href="https://h/page.html">up</a>'
    )
    assert parts["https://h/page_files/dot.png"].get_payload(decode=True) == png(3, 3, 3)
    single = pack_single_file(tmp_path / "page.html", url="https://h/p.html")
    (link,) = find_links(single.output).links
    media_type, frame_bytes = data_url_bytes(link.original)
    assert media_type == "text/html;charset=UTF-8"
    image, anchor = find_links(frame_bytes).links
    assert data_url_bytes(image.original)[1] == png(3, 3, 3)
    assert anchor.original == "https://h/page.html"


# --------------------------------------------------------------------------
# The page's URL
# --------------------------------------------------------------------------


def test_a_page_with_no_url_gets_file_urls(tmp_path: Path) -> None:
    site = tmp_path / "my site"
    (site / "page_files").mkdir(parents=True)
    (site / "page.html").write_bytes(b'<title>t</title><img src="page_files/a.png"><a href="x.html">x</a>')
    (site / "page_files" / "a.png").write_bytes(png(5, 5, 5))
    page_url = (site / "page.html").resolve().as_uri()
    result = pack_mhtml(site / "page.html")
    assert (result.url, result.url_source) == (page_url, "file")
    assert page_url.startswith("file:///") and "my%20site" in page_url
    assert any(page_url in note for note in result.notes)
    file_url = (site / "page_files" / "a.png").resolve().as_uri()
    assert [part.content_location for part in result.parts] == [page_url, file_url]
    found = find_message_links(result.output)
    html_part = found.parts[1]
    assert html_part.base == page_url
    assert [link.original for link in html_part.links] == [file_url, page_url.rsplit("/", 1)[0] + "/x.html"]
    assert by_location(parsed(result.output))[file_url].get_payload(decode=True) == png(5, 5, 5)
    single = pack_single_file(site / "page.html")
    assert data_url_bytes(find_links(single.output).links[0].original)[1] == png(5, 5, 5)


def test_the_url_argument_beats_the_mark_and_the_mark_beats_base(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(b'<!-- saved from url=(0016)http://mark/x/y --><base href="http://base/z/"><img src="i.png">')
    (tmp_path / "i.png").write_bytes(b"I")
    assert (pack_mhtml(page, url="https://given/q").url_source, pack_mhtml(page).url) == ("argument", "http://mark/x/y")
    result = pack_mhtml(page)
    # Links resolve against the <base>: the part is named as the page's link names it.
    assert [part.content_location for part in result.parts] == ["http://mark/x/y", "http://base/z/i.png"]
    page.write_bytes(b'<base href="http://base/z/"><img src="i.png">')
    assert (pack_mhtml(page).url, pack_mhtml(page).url_source) == ("http://base/z/", "base-element")


def test_an_opaque_saved_from_mark_is_not_the_page_url(tmp_path: Path) -> None:
    """``about:internet`` is the Mark of the Web that Internet Explorer and Edge write, not a URL the page had."""
    page = tmp_path / "p.html"
    page.write_bytes(b'<!-- saved from url=(0014)about:internet -->\r\n<img src="i.png">')
    (tmp_path / "i.png").write_bytes(b"I")
    result = pack_mhtml(page)
    assert result.url_source == "file"
    assert [part.path for part in result.parts] == ["p.html", "i.png"]


def test_html_engine_ignores_an_opaque_saved_from_mark() -> None:
    result = find_links(b"<!-- saved from url=(0014)about:internet --><img src=a.png>")
    assert (result.base, [link.status for link in result.links]) == (None, ["no-base"])


def test_a_url_that_is_no_base_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.html").write_bytes(b"<p>")
    with pytest.raises(PackError, match="not an absolute, hierarchical URL"):
        pack_mhtml(tmp_path / "p.html", url="mailto:x@example.org")


# --------------------------------------------------------------------------
# File names: spaces, non-ASCII, queries
# --------------------------------------------------------------------------


def test_a_name_with_spaces_and_non_ascii_is_one_part(tmp_path: Path) -> None:
    (tmp_path / "page_files").mkdir()
    photo = png(10, 20, 30)
    (tmp_path / "page_files" / "mi foto é.png").write_bytes(photo)
    page = (
        '<meta charset="utf-8"><img src="page_files/mi%20foto%20%C3%A9.png"> <img src="page_files/mi foto é.png">'
        " <div style=\"background: url('page_files/mi foto é.png#x')\"></div>"
    ).encode()
    (tmp_path / "page.html").write_bytes(page)
    location = FILES + "mi%20foto%20%C3%A9.png"
    result = pack_mhtml(tmp_path / "page.html", url=URL)
    assert [(part.path, part.content_location) for part in result.parts[1:]] == [("page_files/mi foto é.png", location)]
    message = parsed(result.output)
    assert by_location(message)[location].get_payload(decode=True) == photo
    html_part = by_location(message)[URL].get_payload(decode=True)
    assert html_part.count(location.encode()) == 3 and html_part.count((location + "#x").encode()) == 1
    found = find_message_links(result.output)
    assert [(link.resolved or link.original) for link in found.parts[1].links] == [location, location, location + "#x"]
    single = pack_single_file(tmp_path / "page.html", url=URL)
    links = find_links(single.output).links
    assert [data_url_bytes(link.original.split("#")[0])[1] for link in links] == [photo] * 3
    assert links[2].original.endswith("#x")


def test_references_with_a_query_name_the_same_file(tmp_path: Path) -> None:
    (tmp_path / "page_files").mkdir()
    (tmp_path / "page_files" / "a.png").write_bytes(b"A")
    (tmp_path / "page.html").write_bytes(b'<img src="page_files/a.png?v=2"><img src="page_files/a.png">')
    result = pack_mhtml(tmp_path / "page.html", url=URL)
    assert [part.content_location for part in result.parts] == [URL, FILES + "a.png?v=2"]
    found = find_message_links(result.output)
    assert [link.original for link in found.parts[1].links] == [FILES + "a.png?v=2"] * 2


def test_a_url_longer_than_a_heading_line_is_folded(tmp_path: Path) -> None:
    """RFC 5322 §2.1.1: 998 characters a line at most; RFC 2557 §4.4.2 folds a long URL."""
    folder = tmp_path.joinpath(*["d" * 200] * 5)
    folder.mkdir(parents=True)
    (folder / "a.png").write_bytes(b"A")
    reference = "/".join(["d" * 200] * 5) + "/a.png"
    (tmp_path / "p.html").write_bytes(f'<img src="{reference}">'.encode())
    result = pack_mhtml(tmp_path / "p.html", url=URL)
    location = "http://example.org/a/" + reference
    assert result.parts[1].content_location == location
    assert max(len(line) for line in result.output.split(b"\r\n")) <= 998
    (_, part) = parsed(result.output).iter_parts()
    assert "".join(str(part["Content-Location"]).split()) == location
    assert part.get_payload(decode=True) == b"A"


# --------------------------------------------------------------------------
# Quoted-printable
# --------------------------------------------------------------------------

AWKWARD = (
    b"CR\rLF\nCRLF\r\ntrailing spaces   \r\ntrailing tab\t\nequals = =3D ==\r\n"
    + b"x" * 200
    + b"\r\n"
    + b"y " * 100
    + b"\nFrom the start\r\n.\r\n--boundary-like\r\n\xc3\xa9\xff\x00 end with space "
)


@pytest.mark.parametrize("body", [AWKWARD, AWKWARD + b"\r\n", AWKWARD + b"\r", AWKWARD + b"\n", b"", b"=", b" "])
def test_quoted_printable_round_trip(body: bytes) -> None:
    encoded = pack_module._quoted_printable(body)
    assert encoded is not None
    assert all(len(line) <= 76 for line in encoded.split(b"\r\n"))
    assert b"\n" not in encoded.replace(b"\r\n", b"") and b"\r" not in encoded.replace(b"\r\n", b"")
    assert all(not line.endswith((b" ", b"\t")) for line in encoded.split(b"\r\n"))
    assert decode(encoded, "quoted-printable") == body
    assert binascii.a2b_qp(encoded) == body
    assert quopri.decodestring(encoded) == body
    message = EmailMessage()
    message["Content-Transfer-Encoding"] = "quoted-printable"
    message.set_payload(encoded.decode("ascii"))
    assert message.get_payload(decode=True) == body


def test_quoted_printable_page_round_trips_through_the_email_package(tmp_path: Path) -> None:
    (tmp_path / "p.html").write_bytes(AWKWARD)
    result = pack_mhtml(tmp_path / "p.html", url=URL)
    (part,) = parsed(result.output).iter_parts()
    assert part.get_payload(decode=True) == AWKWARD
    assert part.get_content_charset() == "windows-1252"  # not UTF-8: the engine's label


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------


def test_a_missing_page_or_a_folder_raises(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="no such file"):
        pack_mhtml(tmp_path / "nope.html")
    with pytest.raises(PackError, match="is a folder"):
        pack_single_file(tmp_path)
    assert issubclass(PackError, ValueError)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs file permissions that bind (not root)")
def test_unreadable_page_raises_and_unreadable_resource_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(b'<img src="a.png"><img src="b.png">')
    (tmp_path / "a.png").write_bytes(b"A")
    (tmp_path / "b.png").write_bytes(b"B")
    (tmp_path / "a.png").chmod(0)
    try:
        result = pack_mhtml(page, url=URL)
        assert [part.path for part in result.parts] == ["p.html", "b.png"]
        assert result.problems == (
            "a.png: cannot be read: Permission denied (referenced as 'a.png' in p.html); not packed",
        )
        page.chmod(0)
        with pytest.raises(PackError, match="cannot be read"):
            pack_mhtml(page)
    finally:
        page.chmod(stat.S_IRUSR | stat.S_IWUSR)
        (tmp_path / "a.png").chmod(stat.S_IRUSR | stat.S_IWUSR)


def test_unreadable_files_without_permissions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same as above where permissions do not bind (root): the open fails as it would."""
    page = tmp_path / "p.html"
    page.write_bytes(b'<img src="a.png"><img src="b.png">')
    (tmp_path / "a.png").write_bytes(b"A")
    (tmp_path / "b.png").write_bytes(b"B")
    real_open = os.open
    refused: set[str] = {"a.png"}

    def refusing_open(path: str, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        if os.path.basename(os.fsdecode(path)) in refused:
            raise PermissionError(13, "Permission denied", os.fsdecode(path))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    monkeypatch.setattr(pack_module.os, "open", refusing_open)
    result = pack_single_file(page, url=URL)
    assert [part.path for part in result.parts] == ["p.html", "b.png"]
    assert result.problems == (
        "a.png: cannot be read: Permission denied (referenced as 'a.png' in p.html); not packed",
    )
    assert result.output == b'<img src="http://example.org/a/a.png"><img src="data:image/png;base64,Qg==">'
    refused.add("p.html")
    with pytest.raises(PackError, match=r"p\.html: cannot be read: Permission denied"):
        pack_mhtml(page)


def test_a_link_inside_the_folder_is_followed_and_its_file_packed_once(tmp_path: Path) -> None:
    (tmp_path / "page_files").mkdir()
    (tmp_path / "page_files" / "a.png").write_bytes(b"A")
    (tmp_path / "page_files" / "alias.png").symlink_to("a.png")
    (tmp_path / "p.html").write_bytes(b'<img src="page_files/a.png"><img src="page_files/alias.png">')
    result = pack_mhtml(tmp_path / "p.html", url=URL)
    assert [(part.path, part.content_location) for part in result.parts] == [
        ("p.html", URL),
        ("page_files/a.png", FILES + "a.png"),
    ]
    assert by_location(parsed(result.output))[URL].get_payload(decode=True) == (
        b'<img src="http://example.org/a/page_files/a.png"><img src="http://example.org/a/page_files/a.png">'
    )


def test_problems_name_the_file_and_the_reason_and_the_rest_is_packed(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * 1000)
    (tmp_path / "ok.png").write_bytes(b"ok")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe.png")
    (tmp_path / "p.html").write_bytes(
        b'<embed src="big.bin"><img src="missing.png"><img src="folder"><img src="pipe.png">'
        b'<img src="ok.png"><img src="p.html"><img src="/rooted.png">'
    )
    result = pack_mhtml(tmp_path / "p.html", url=URL, max_size=500)
    assert [part.path for part in result.parts] == ["p.html", "ok.png"]
    assert result.problems == (
        "big.bin: is larger than the limit (1000 > 500 bytes) (referenced as 'big.bin' in p.html); not packed",
        "missing.png: does not exist (referenced as 'missing.png' in p.html); not packed",
        "folder: is a folder, not a file (referenced as 'folder' in p.html); not packed",
        "pipe.png: is not a regular file (referenced as 'pipe.png' in p.html); not packed",
    )
    assert any("'/rooted.png'" in note for note in result.notes)
    # A link to the page itself is the page's part: written as its Content-Location.
    html_part = by_location(parsed(result.output))[URL].get_payload(decode=True)
    assert b'<img src="http://example.org/a/b.html">' in html_part
    with pytest.raises(PackError, match="larger than the limit"):
        pack_mhtml(tmp_path / "p.html", max_size=10)


def test_a_policy_that_requires_a_base_still_packs_a_page_with_none(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"A")
    (tmp_path / "p.html").write_bytes(b'<img src="a.png">')
    result = pack_mhtml(tmp_path / "p.html", policy=Policy(require_base=True, rules="whatwg"))
    assert result.url_source == "file"
    assert [part.path for part in result.parts] == ["p.html", "a.png"]


def test_the_callers_relink_still_applies_to_other_links(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"A")
    (tmp_path / "p.html").write_bytes(b'<img src="a.png"><img src="remote.png">')
    policy = Policy(relink=lambda url: "cached/remote.png" if url.endswith("remote.png") else None)
    result = pack_single_file(tmp_path / "p.html", url=URL, policy=policy)
    assert result.output == b'<img src="data:image/png;base64,QQ=="><img src="cached/remote.png">'


# --------------------------------------------------------------------------
# In a browser
# --------------------------------------------------------------------------


def test_chromium_renders_both_packs_offline(tmp_path: Path) -> None:
    """Headless Chromium, network off, opens the MHTML file and the single file and finds every
    image (srcset, a name with a space and an é, raw and escaped), the style sheet and its
    @import, and a frame with its own image, each from the pack. Skips without Chromium and
    playwright (fails in CI, which installs both)."""
    from browser_relocation import CHROMIUM, LAUNCH_ARGS, tooling_problem

    problem = tooling_problem()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{problem} (CI installs it: see .ci/run)")
        pytest.skip(problem)
    from playwright.sync_api import sync_playwright

    site = tmp_path / "site"
    (site / "page_files").mkdir(parents=True)
    files = {
        "style.css": b"@import url(print.css);\nbody { color: rgb(1, 2, 3) }\n",
        "print.css": b"p { color: rgb(4, 5, 6) }\n",
        "logo.png": png(255, 0, 0, width=2),
        "logo@2x.png": png(0, 255, 0, width=4),
        "mi foto é.png": png(10, 20, 30, width=3),
        "frame.html": b'<img id=f src="dot.png">',
        "dot.png": png(1, 1, 1, width=7),
    }
    for name, data in files.items():
        (site / "page_files" / name).write_bytes(data)
    (site / "page.html").write_bytes(
        b"<!-- saved from url=(0027)http://example.org/a/b.html -->\n<meta charset=utf-8>"
        b'<link rel=stylesheet href="page_files/style.css"><p>para</p>'
        b'<img id=a src="page_files/logo.png"><img id=b srcset="page_files/logo@2x.png 2x">'
        b'<img id=c src="page_files/mi foto \xc3\xa9.png"><img id=d src="page_files/mi%20foto%20%C3%A9.png">'
        b'<iframe src="page_files/frame.html"></iframe>'
    )
    (tmp_path / "page.mhtml").write_bytes(pack_mhtml(site / "page.html").output)
    (tmp_path / "page.html").write_bytes(pack_single_file(site / "page.html").output)
    (site / "page_files" / "logo.png").unlink()  # nothing may come from the folder itself
    seen: dict[str, object] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            for name in ("page.mhtml", "page.html"):
                context = browser.new_context(offline=True)
                page = context.new_page()
                page.route(
                    "**/*", lambda route: route.abort() if route.request.url.startswith("http") else route.continue_()
                )
                page.goto((tmp_path / name).as_uri())
                page.wait_for_load_state("load")
                seen[name] = (
                    page.evaluate("[...document.images].map(i => [i.id, i.naturalWidth])"),
                    page.evaluate("[document.body, document.querySelector('p')].map(e => getComputedStyle(e).color)"),
                    [frame.evaluate("[...document.images].map(i => i.naturalWidth)") for frame in page.frames[1:]],
                )
                context.close()
        finally:
            browser.close()
    expected = ([["a", 2], ["b", 2], ["c", 3], ["d", 3]], ["rgb(1, 2, 3)", "rgb(4, 5, 6)"], [[7]])
    assert seen == {"page.mhtml": expected, "page.html": expected}
