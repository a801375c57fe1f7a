"""``rewriter unpack`` and ``rewriter pack`` as a user drives them (subprocess)."""

from __future__ import annotations

import email
import json
from pathlib import Path

from test_cli_batch import err_lines, rewriter

MHTML = (
    b"From: <Saved by Blink>\r\nSnapshot-Content-Location: https://example.org/d/page.html\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/related; type="text/html"; boundary="B"\r\n\r\n'
    b"--B\r\nContent-Type: text/html\r\nContent-Location: https://example.org/d/page.html\r\n\r\n"
    b'<!doctype html><link rel=stylesheet href="s.css"><img src="cid:i@x"><a href="next.html">n</a>\r\n'
    b"--B\r\nContent-Type: text/css\r\nContent-Location: https://example.org/d/s.css\r\n\r\n"
    b"p{color:red}\r\n"
    b"--B\r\nContent-Type: image/gif\r\nContent-ID: <i@x>\r\nContent-Location: ../../../x.gif\r\n\r\n"
    b"GIF89a\r\n--B--\r\n"
)


def test_unpack_writes_a_folder_and_says_what_it_did(tmp_path: Path) -> None:
    (tmp_path / "saved.mhtml").write_bytes(MHTML)
    done = rewriter(tmp_path, "unpack", "saved.mhtml", "-o", "out")
    assert done.returncode == 0, done.stderr
    assert err_lines(done) == [
        "saved.mhtml: 3 of 3 parts into out (index.html): 2 links to the bundle, 1 made absolute"
    ]
    out = tmp_path / "out"
    assert sorted(path.name for path in out.iterdir()) == ["index.html", "manifest.json", "s.css", "x.gif"]
    assert (out / "index.html").read_bytes() == (
        b'<!doctype html><link rel=stylesheet href="s.css"><img src="x.gif">'
        b'<a href="https://example.org/d/next.html">n</a>'
    )
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [part["content_location"] for part in manifest["parts"]] == [
        "https://example.org/d/page.html",
        "https://example.org/d/s.css",
        "../../../x.gif",
    ]


def test_unpack_refuses_a_folder_with_an_index_and_names_it(tmp_path: Path) -> None:
    (tmp_path / "saved.mhtml").write_bytes(MHTML)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "index.html").write_bytes(b"mine")
    done = rewriter(tmp_path, "unpack", "saved.mhtml", "-o", "out")
    assert done.returncode == 1
    assert err_lines(done) == ["rewriter unpack: out already holds index.html: unpack into an empty or new folder"]
    assert (tmp_path / "out" / "index.html").read_bytes() == b"mine"


def test_unpack_names_what_it_cannot_take(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_bytes(b"<!doctype html><p>x")
    (tmp_path / "mail.mbox").write_bytes(b"From a@b Mon Jan  1 00:00:00 2024\nFrom: a@b\nSubject: s\n\nhi\n")
    done = rewriter(tmp_path, "unpack", "page.html", "-o", "out")
    assert (done.returncode, err_lines(done)) == (
        1,
        ["rewriter unpack: page.html is an HTML page (bundle it with rewriter pack)"],
    )
    done = rewriter(tmp_path, "unpack", "mail.mbox", "-o", "out")
    assert (done.returncode, err_lines(done)) == (
        1,
        ["rewriter unpack: mail.mbox is an mbox (unpack one message of it)"],
    )
    done = rewriter(tmp_path, "unpack", "missing.mhtml", "-o", "out")
    assert done.returncode == 1 and "cannot read missing.mhtml" in err_lines(done)[0]
    done = rewriter(tmp_path, "unpack", "page.html")
    assert done.returncode == 2 and b"-o" in done.stderr
    assert not (tmp_path / "out").exists()


def test_unpack_reads_standard_input(tmp_path: Path) -> None:
    done = rewriter(tmp_path, "unpack", "-", "-o", "out", stdin=MHTML)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "x.gif").read_bytes() == b"GIF89a"


def test_pack_then_unpack_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "page_files").mkdir()
    (tmp_path / "page_files" / "a.css").write_bytes(b"body{background:url(b.png)}")
    (tmp_path / "page_files" / "b.png").write_bytes(b"\x89PNG\r\n\x1a\nB")
    page = b'<!-- saved from url=(0024)https://example.org/a/b -->\n<link rel=stylesheet href="page_files/a.css">'
    (tmp_path / "page.html").write_bytes(page)
    done = rewriter(tmp_path, "pack", "page.html", "-o", "page.mhtml")
    assert done.returncode == 0, done.stderr
    assert err_lines(done) == ["page.html: 3 files packed into page.mhtml"]
    message = email.message_from_bytes((tmp_path / "page.mhtml").read_bytes())
    assert [part["Content-Location"] for part in message.get_payload()] == [  # type: ignore[union-attr]
        "https://example.org/a/b",
        "https://example.org/a/page_files/a.css",
        "https://example.org/a/page_files/b.png",
    ]
    done = rewriter(tmp_path, "unpack", "page.mhtml", "-o", "back")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "back" / "a.css").read_bytes() == b"body{background:url(b.png)}"
    assert (tmp_path / "back" / "index.html").read_bytes() == page.replace(b"page_files/a.css", b"a.css")


def test_pack_single_file_and_its_errors(tmp_path: Path) -> None:
    (tmp_path / "i.png").write_bytes(b"PNG")
    (tmp_path / "page.html").write_bytes(b'<img src="i.png"><img src="../../etc/passwd">')
    done = rewriter(tmp_path, "pack", "page.html", "--url", "https://e.org/p", "--single-file", "one.html")
    assert done.returncode == 1  # the file outside the folder is named, the rest is packed
    assert any("etc/passwd" in line and "not packed" in line for line in err_lines(done))
    assert (tmp_path / "one.html").read_bytes().startswith(b'<img src="data:image/png;base64,UE5H">')
    done = rewriter(tmp_path, "pack", "nowhere.html", "-o", "x.mhtml")
    assert done.returncode == 1 and err_lines(done)[0].startswith("rewriter pack: ")
    assert not (tmp_path / "x.mhtml").exists()
    done = rewriter(tmp_path, "pack", "page.html", "-o", "page.html")
    assert done.returncode == 2 and err_lines(done) == ["rewriter pack: the output page.html is the page itself"]
    done = rewriter(tmp_path, "pack", "page.html")
    assert done.returncode == 2


def _warc(path: Path) -> None:
    """A WARC of one page, its image and a redirect to the page, written with warcio."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        records = [
            ("http://e.org/old", "301 Moved", [("Location", "/d/")], b""),
            ("http://e.org/d/", "200 OK", [("Content-Type", "text/html")], b'<img src="i.png"><a href="/old">a</a>'),
            ("http://e.org/d/i.png", "200 OK", [("Content-Type", "image/png")], b"\x89PNG\r\n\x1a\nI"),
        ]
        for url, status, headers, body in records:
            http = StatusAndHeaders(status, [*headers, ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=http))


def test_rewrite_and_unpack_read_a_warc_and_never_change_it(tmp_path: Path) -> None:
    _warc(tmp_path / "crawl.warc.gz")
    before = (tmp_path / "crawl.warc.gz").read_bytes()
    done = rewriter(tmp_path, "rewrite", "crawl.warc.gz", "-o", "pages")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pages" / "e.org" / "d" / "index.html").read_bytes() == (
        b'<img src="http://e.org/d/i.png"><a href="http://e.org/old">a</a>'
    )
    done = rewriter(tmp_path, "unpack", "crawl.warc.gz", "-o", "mirror")
    assert done.returncode == 0, done.stderr
    # The redirect is followed: the link to /old reaches the page it led to.
    assert (tmp_path / "mirror" / "e.org" / "d" / "index.html").read_bytes() == (
        b'<img src="i.png"><a href="index.html">a</a>'
    )
    assert (tmp_path / "mirror" / "e.org" / "d" / "i.png").read_bytes() == b"\x89PNG\r\n\x1a\nI"
    done = rewriter(tmp_path, "rewrite", "crawl.warc.gz", "--in-place")
    assert done.returncode == 2 and "never changed" in err_lines(done)[0]
    assert (tmp_path / "crawl.warc.gz").read_bytes() == before
