"""``rewriter.bundle.unpack``: RFC 2557 §8 matching, the root, byte fidelity, and hostile names."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from rewriter.bundle.unpack import UnpackError, unpack_message
from rewriter.disk.names import Folder, safe_name
from rewriter.html.engine import find_links


def message(*parts: tuple[dict[str, str], bytes], heading: dict[str, str] | None = None) -> bytes:
    """A multipart/related message of *parts* (heading fields, body), CRLF throughout."""
    fields = {"Content-Type": 'multipart/related; boundary="=b="'} | (heading or {})
    out = [f"{name}: {value}\r\n".encode() for name, value in fields.items()] + [b"\r\n"]
    for part_fields, body in parts:
        out.append(b"--=b=\r\n")
        out += [f"{name}: {value}\r\n".encode() for name, value in part_fields.items()]
        out += [b"\r\n", body, b"\r\n"]
    out.append(b"--=b=--\r\n")
    return b"".join(out)


def html(location: str, body: bytes, **more: str) -> tuple[dict[str, str], bytes]:
    return {"Content-Type": "text/html", "Content-Location": location, **more}, body


def resource(location: str | None, body: bytes, content_type: str = "image/png", **more: str):
    fields = {"Content-Type": content_type, "Content-Transfer-Encoding": "base64", **more}
    if location is not None:
        fields["Content-Location"] = location
    return fields, base64.encodebytes(body).replace(b"\n", b"\r\n").rstrip(b"\r\n")


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text(encoding="utf-8"))


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file() or path.is_symlink())


# --- RFC 2557 §8 matching ------------------------------------------------------------------------------------


def test_absolute_relative_and_cid_references_reach_their_parts(tmp_path: Path) -> None:
    page = (
        b'<link rel=stylesheet href="s.css"><img src="img/a.png"><img src="cid:logo%40x">'
        b'<img srcset="img/a.png 1x, http://example.org/d/img/a.png#frag 2x"><a href="other.html">out</a>'
    )
    data = message(
        html("http://example.org/d/page.html", page),
        resource("http://example.org/d/s.css", b"p{background:url(img/a.png)}", "text/css"),
        resource("http://example.org/d/img/a.png", b"A-PNG"),
        resource(None, b"LOGO", "image/gif", **{"Content-ID": "<logo@x>"}),
    )
    result = unpack_message(data, tmp_path / "out")
    out = tmp_path / "out"
    assert result.root == "index.html"
    assert (out / "index.html").read_bytes() == (
        b'<link rel=stylesheet href="s.css"><img src="a.png"><img src="logo.gif">'
        b'<img srcset="a.png 1x, a.png#frag 2x"><a href="http://example.org/d/other.html">out</a>'
    )
    assert (out / "s.css").read_bytes() == b"p{background:url(a.png)}"
    assert (out / "a.png").read_bytes() == b"A-PNG"
    assert (out / "logo.gif").read_bytes() == b"LOGO"
    assert [(part.file, part.relinked, part.absolute) for part in result.parts] == [
        ("index.html", 5, 1),
        ("s.css", 1, 0),
        ("a.png", 0, 0),
        ("logo.gif", 0, 0),
    ]


def test_a_relative_content_location_is_resolved_against_the_enclosing_base(tmp_path: Path) -> None:
    # RFC 2557 §8.2: the multipart's Content-Base is the base of a part's relative Content-Location.
    data = message(
        html("page.html", b'<img src="pics/x.png">'),
        resource("pics/x.png", b"X"),
        heading={"Content-Base": "http://example.org/base/"},
    )
    result = unpack_message(data, tmp_path / "out")
    assert (tmp_path / "out" / "index.html").read_bytes() == b'<img src="x.png">'
    assert result.parts[1].urls == ("http://example.org/base/pics/x.png",)


def test_with_no_base_at_all_references_match_as_written(tmp_path: Path) -> None:
    # RFC 2557 §4.2's example: relative Content-Locations and no base anywhere.
    data = message(html("fiction1/fiction2", b'<img src="fiction3/fiction4">'), resource("fiction3/fiction4", b"F"))
    unpack_message(data, tmp_path / "out")
    assert (tmp_path / "out" / "index.html").read_bytes() == b'<img src="fiction4.png">'


def test_a_content_location_that_only_looks_alike_does_not_match(tmp_path: Path) -> None:
    # Octet for octet: another case in the path is another file. A space and %20, or an
    # upper-case host, are the same URL to a browser (the URL Standard serialises both
    # alike), and match.
    data = message(
        html("http://example.org/p.html", b'<img src="A.png"><img src="d e.png">'),
        resource("http://example.org/a.png", b"a"),
        resource("http://EXAMPLE.org/d%20e.png", b"d"),
    )
    unpack_message(data, tmp_path / "out")
    assert (
        tmp_path / "out" / "index.html"
    ).read_bytes() == b'<img src="http://example.org/A.png"><img src="d%20e.png">'


def test_the_start_parameter_names_the_root(tmp_path: Path) -> None:
    data = message(
        html("http://example.org/frame.html", b"frame", **{"Content-ID": "<f@x>"}),
        html("http://example.org/main.html", b'<iframe src="frame.html"></iframe>', **{"Content-ID": "<m@x>"}),
        heading={"Content-Type": 'multipart/related; boundary="=b="; start="<m@x>"'},
    )
    result = unpack_message(data, tmp_path / "out")
    assert (tmp_path / "out" / "index.html").read_bytes() == b'<iframe src="frame.html"></iframe>'
    assert [part.file for part in result.parts] == ["frame.html", "index.html"]


def test_the_base_element_goes_and_the_rest_of_the_page_is_byte_for_byte(tmp_path: Path) -> None:
    page = b'<!doctype html>\r\n<base href="http://example.org/x/">\r\n<p class=a>\xc1\xc2 <img  src = logo.png alt="">'
    data = message(html("http://example.org/x/p.html", page, **{"Content-Transfer-Encoding": "8bit"}))
    data = data.replace(b"Content-Type: text/html\r\n", b"Content-Type: text/html; charset=koi8-r\r\n")
    unpack_message(data, tmp_path / "out")  # the logo is not in the archive: it stays absolute
    written = (tmp_path / "out" / "index.html").read_bytes()
    # The charset was only in the MIME heading, and a browser would guess another: it is declared.
    assert written == (
        b'<meta charset="koi8-r">\n<!doctype html>\r\n\r\n<p class=a>\xc1\xc2 '
        b'<img  src = http://example.org/x/logo.png alt="">'
    )


def test_no_declaration_is_added_where_the_browser_reads_the_same(tmp_path: Path) -> None:
    data = message(html("http://example.org/", "<p>\u00e9t\u00e9".encode(), **{"Content-Transfer-Encoding": "8bit"}))
    data = data.replace(b"Content-Type: text/html\r\n", b"Content-Type: text/html; charset=utf-8\r\n")
    unpack_message(data, tmp_path / "out")
    assert (tmp_path / "out" / "index.html").read_bytes() == "<p>\u00e9t\u00e9".encode()


def test_only_link_values_change_in_a_corpus_style_page(tmp_path: Path) -> None:
    page = b"<html><head><title>t</title><link href=s.css rel=stylesheet></head><body><img src=i.png> text</body>"
    data = message(html("http://e.org/p/", page), resource("http://e.org/p/s.css", b"", "text/css"))
    unpack_message(data, tmp_path / "out")
    written = (tmp_path / "out" / "index.html").read_bytes()
    links = find_links(page, url="http://e.org/p/").links
    # Splice the link values back: what is left is the original.
    pieces, last = [], 0
    for link in links:
        pieces += [page[last : link.start], b"@"]
        last = link.end
    pieces.append(page[last:])
    restored = b"".join(pieces)
    assert restored.replace(b"@", b"") != page  # the links were there
    assert written.replace(b"s.css", b"@", 1).replace(b"http://e.org/p/i.png", b"@") == restored


def test_a_part_that_cannot_be_decoded_is_written_as_it_is_and_reported(tmp_path: Path) -> None:
    broken = ({"Content-Type": "text/html", "Content-Transfer-Encoding": "x-unknown"}, b"<img src=a.png>")
    data = message(html("http://e.org/", b"<p>ok"), broken)
    result = unpack_message(data, tmp_path / "out")
    assert result.parts[1].action == "written"
    assert any("still encoded" in problem for problem in result.parts[1].problems)
    assert (tmp_path / "out" / result.parts[1].file).read_bytes() == b"<img src=a.png>"


def test_a_message_without_html_has_no_index_but_every_part(tmp_path: Path) -> None:
    data = b"Content-Type: text/plain\r\n\r\nhello\r\n"
    result = unpack_message(data, tmp_path / "out")
    assert result.root is None and not (tmp_path / "out" / "index.html").exists()
    assert (tmp_path / "out" / result.parts[0].file).read_bytes() == b"hello\r\n"
    assert manifest(tmp_path / "out")["root"] is None


def test_a_folder_that_holds_an_index_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_bytes(b"mine")
    with pytest.raises(UnpackError, match=r"already holds index\.html"):
        unpack_message(message(html("http://e.org/", b"x"), resource("http://e.org/a.png", b"a")), out)
    assert sorted(os.listdir(out)) == ["index.html"] and (out / "index.html").read_bytes() == b"mine"


# --- Hostile names: nothing escapes the folder, nothing overwrites anything ---------------------------------

HOSTILE = [
    pytest.param("http://e.org/../../x.png", id="dot-dot-url"),
    pytest.param("../../x.png", id="dot-dot-relative"),
    pytest.param("/abs/x.png", id="absolute-path"),
    pytest.param("/etc/passwd", id="etc-passwd"),
    pytest.param("C:\\x.png", id="drive-letter"),
    pytest.param("C:x.png", id="drive-relative"),
    pytest.param("\\\\server\\share\\x.png", id="unc"),
    pytest.param("file:///C:/Windows/x.png", id="file-url"),
    pytest.param("con.html", id="device-con"),
    pytest.param("http://e.org/AUX.tar.gz", id="device-aux"),
    pytest.param("lpt1", id="device-lpt1"),
    pytest.param("http://e.org/" + "n" * 5000 + ".png", id="5000-characters"),
    pytest.param("http://e.org/" + "\u00e9" * 3000, id="5000-bytes-non-ascii"),
    pytest.param("http://e.org/%2e%2e/%2e%2e/x.png", id="encoded-dot-dot"),
    pytest.param("http://e.org/a%2F..%2F..%2Fx.png", id="encoded-slash"),
    pytest.param("http://e.org/x%00.png", id="nul"),
    pytest.param("http://e.org/.hidden", id="hidden"),
    pytest.param("http://e.org/trailing. . .", id="trailing-dots"),
    pytest.param("http://e.org/index.html", id="index-html"),
    pytest.param("http://e.org/manifest.json", id="manifest-json"),
    pytest.param('http://e.org/a:b|c?d*e<f>g"h', id="reserved-characters"),
]


def _check_contained(out: Path, expected: dict[str, bytes]) -> None:
    """Every file lies in *out* itself, with a name of one segment, holding its part's bytes."""
    real = out.resolve()
    for path in files_under(out):
        assert path.parent.resolve() == real, path
        assert len(path.name.encode()) <= 255
    for name, body in expected.items():
        assert (out / name).read_bytes() == body


@pytest.mark.parametrize("location", HOSTILE)
def test_a_hostile_content_location_stays_in_the_folder(tmp_path: Path, location: str) -> None:
    out = tmp_path / "deep" / "out"
    data = message(html("http://e.org/page", b"<p>page"), resource(location, b"PAYLOAD"))
    result = unpack_message(data, out)
    written = result.parts[1].file
    assert written is not None and "/" not in written and "\\" not in written
    assert written not in ("index.html", "manifest.json", ".", "..")
    _check_contained(out, {"index.html": b"<p>page", written: b"PAYLOAD"})
    assert len(files_under(out)) == 3
    assert manifest(out)["parts"][1]["content_location"] == location.replace(" ", "")
    assert not (tmp_path / "x.png").exists() and not (tmp_path / "deep" / "x.png").exists()


@pytest.mark.parametrize("filename", ["../../evil.sh", "/etc/cron.d/x", "C:\\Windows\\x.dll", "nul.txt", "a" * 5000])
def test_a_hostile_attachment_file_name_stays_in_the_folder(tmp_path: Path, filename: str) -> None:
    disposition = {"Content-Disposition": f'attachment; filename="{filename}"'}
    attachment = resource(None, b"ATTACHED", "application/octet-stream", **disposition)
    data = message(html("http://e.org/", b"<p>x"), attachment)
    result = unpack_message(data, tmp_path / "out")
    _check_contained(tmp_path / "out", {result.parts[1].file: b"ATTACHED"})  # type: ignore[dict-item]
    assert manifest(tmp_path / "out")["parts"][1]["filename"] == filename


def test_duplicate_names_never_overwrite_each_other(tmp_path: Path) -> None:
    # The same name five ways: equal, another case, another Unicode normalisation, another folder.
    names = ["http://e.org/a/x.png", "http://e.org/b/x.png", "http://e.org/X.PNG", "http://e.org/c/x.png"]
    names.append("http://e.org/%78.png")
    parts = [resource(location, f"body {n}".encode()) for n, location in enumerate(names)]
    parts.append(resource("http://e.org/caf\u00e9.png", b"nfc"))
    parts.append(resource("http://e.org/cafe\u0301.png", b"nfd"))
    result = unpack_message(message(html("http://e.org/", b"<p>x"), *parts), tmp_path / "out")
    files = [part.file for part in result.parts]
    assert len({name.casefold() for name in files}) == len(files)  # type: ignore[union-attr]
    for n, part in enumerate(result.parts[1:6]):
        assert (tmp_path / "out" / part.file).read_bytes() == f"body {n}".encode()  # type: ignore[operator]
    assert (tmp_path / "out" / result.parts[6].file).read_bytes() == b"nfc"  # type: ignore[operator]
    assert (tmp_path / "out" / result.parts[7].file).read_bytes() == b"nfd"  # type: ignore[operator]


def test_a_symlink_in_the_folder_is_never_followed_or_replaced(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "x.png"
    target.write_bytes(b"precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / "x.png").symlink_to(target)
    (out / "dir").symlink_to(outside, target_is_directory=True)
    data = message(html("http://e.org/", b'<img src="x.png">'), resource("http://e.org/x.png", b"NEW"))
    result = unpack_message(data, out)
    assert target.read_bytes() == b"precious" and sorted(os.listdir(outside)) == ["x.png"]
    assert (out / "x.png").is_symlink() and os.readlink(out / "x.png") == str(target)
    assert result.parts[1].file == "x-2.png"
    assert (out / "x-2.png").read_bytes() == b"NEW"
    assert (out / "index.html").read_bytes() == b'<img src="x-2.png">'


def test_a_symlinked_subfolder_is_refused_by_folder(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sub").symlink_to(tmp_path / "outside", target_is_directory=True)
    with Folder(tmp_path / "out") as out, pytest.raises(OSError):
        out.folder("sub")
    with Folder(tmp_path / "out") as out, pytest.raises(ValueError):
        out.write("../escape", b"x")


def test_folder_writes_are_exclusive_and_whole(tmp_path: Path) -> None:
    with Folder(tmp_path) as out:
        out.write("a.txt", b"first")
        with pytest.raises(FileExistsError):
            out.write("a.txt", b"second")
    assert (tmp_path / "a.txt").read_bytes() == b"first"
    assert sorted(os.listdir(tmp_path)) == ["a.txt"]  # no temporary file is left behind


@pytest.mark.parametrize(
    ("raw", "content_type", "name"),
    [
        ("../../x", None, "x"),
        ("/abs", None, "abs"),
        ("C:\\x", None, "x"),
        ("con.html", None, "_con.html"),
        ("page.php", "text/html", "page.php.html"),
        ("style", "text/css", "style.css"),
        ("", None, "file"),
        ("..", None, "file"),
    ],
)
def test_safe_name(raw: str, content_type: str | None, name: str) -> None:
    assert safe_name(raw, content_type) == name


def test_safe_name_keeps_a_long_name_under_the_limit_on_a_character_boundary() -> None:
    name = safe_name("\u00e9" * 5000 + ".png", "image/png")
    assert name.endswith(".png") and len(name.encode("utf-8")) <= 120
    name.encode("utf-8").decode("utf-8")  # whole characters only


def test_a_numbered_name_stays_under_the_limit(tmp_path: Path) -> None:
    long = "http://e.org/" + "\u00e9" * 300 + ".png"
    result = unpack_message(
        message(html("http://e.org/", b"x"), *[resource(long, b"%d" % n) for n in range(12)]), tmp_path
    )
    names = [part.file for part in result.parts[1:]]
    assert len(set(names)) == 12 and all(len(name.encode()) <= 120 for name in names)  # type: ignore[union-attr]
    assert names[11].endswith("-12.png")  # type: ignore[union-attr]


def test_no_declaration_is_put_before_utf_16(tmp_path: Path) -> None:
    body = "<p>\u00e9".encode("utf-16-le")
    part = ({"Content-Type": "text/html; charset=utf-16le", "Content-Location": "http://e.org/"}, body)
    unpack_message(message(part), tmp_path / "out")
    assert (tmp_path / "out" / "index.html").read_bytes() == body
