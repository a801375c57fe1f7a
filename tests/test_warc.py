"""``rewriter.containers.warc``: reading WARC records, redirects, the mirror layout, damage, and hostile URLs.

Every WARC here is written in tmp_path with warcio's own writer (plain and gzip), from
small pages written inline and, where ../shared is beside the clone, from the HTML
corpus. The acceptance check: each page's file in the output folder is byte for byte
``rewrite_html(page, url=target_uri).output``.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import uuid
import zlib
from pathlib import Path

import pytest
from conftest import SHARED, shared_path
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rewriter.containers.warc import (
    WarcDamage,
    WarcDocument,
    follow_redirects,
    is_warc,
    iter_documents,
    redirect_map,
    rewrite_warc,
    unpack_warc,
    url_key,
)
from rewriter.css.stylesheet import rewrite_css
from rewriter.html.engine import rewrite_html

CORPUS = SHARED / "corpus" / "html"

PAGE = b'<!doctype html><link rel=stylesheet href="s/site.css"><a href="next.html#n">n</a> <img src="/img/logo.png">'
CSS = b"body { background: url(../img/bg.png) }"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def response(uri: str, body: bytes, content_type: str | None = "text/html", status: str = "200 OK", **fields: str):
    """One record to write: a response with these HTTP fields (``Content_Encoding`` → ``Content-Encoding``)."""
    headers = [("Content-Type", content_type)] if content_type else []
    headers += [(name.replace("_", "-"), value) for name, value in fields.items()]
    return ("response", uri, body, StatusAndHeaders(status, headers, protocol="HTTP/1.1"), None)


def resource(uri: str, body: bytes, content_type: str = "text/html"):
    return ("resource", uri, body, None, content_type)


def warc(path: Path, records: list, *, compress: bool = True) -> Path:
    """Write *records* as a WARC at *path* with warcio's writer: the same bytes on every run (each
    record's ID and date are fixed), so that a test that damages them byte by byte is repeatable."""
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=compress)
        for number, (kind, uri, body, http, content_type) in enumerate(records):
            options = {"warc_content_type": content_type} if content_type else {"http_headers": http}
            fixed = {
                "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{number} {uri}')}>",
                "WARC-Date": "2024-05-01T12:00:00Z",
            }
            record = writer.create_warc_record(uri, kind, payload=io.BytesIO(body), warc_headers_dict=fixed, **options)
            writer.write_record(record)
    return path


def chunked(data: bytes, size: int = 7) -> bytes:
    """*data* in the chunked transfer coding (RFC 9112 §7.1), with a chunk extension for good measure."""
    pieces = [b"%x;x=y\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return b"".join(pieces) + b"0\r\n\r\n"


def manifest(out: Path, name: str = "manifest.json") -> list[dict]:
    return json.loads((out / name).read_text(encoding="utf-8"))


def files_under(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file() or path.is_symlink())


def inside(folder: Path, path: Path) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


COMPRESSIONS = [pytest.param(True, id="warc.gz"), pytest.param(False, id="warc")]


# --- reading records -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_iter_documents_reads_each_response_and_resource_record(tmp_path: Path, compress: bool) -> None:
    path = warc(
        tmp_path / "a.warc",
        [
            response("http://h/a", PAGE, 'Text/HTML; Charset="ISO-8859-1"'),
            ("request", "http://h/a", b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n", None, "application/http;msgtype=request"),
            response("http://h/old", b"", None, "301 Moved Permanently", Location="/a"),
            resource("http://h/r.css", CSS, "text/css"),
        ],
        compress=compress,
    )
    found = list(iter_documents(path))
    assert [type(item) for item in found] == [WarcDocument] * 3
    page, moved, sheet = found
    assert (page.uri, page.status, page.content_type, page.charset, page.body, page.location, page.problems) == (
        "http://h/a",
        200,
        "text/html",
        "ISO-8859-1",
        PAGE,
        None,
        (),
    )
    assert (moved.status, moved.location, moved.body) == (301, "/a", b"")
    assert (sheet.record_type, sheet.status, sheet.content_type, sheet.body) == ("resource", None, "text/css", CSS)
    assert page.offset == 0 < moved.offset < sheet.offset
    with open(path, "rb") as stream:  # a stream reads as the path does
        assert list(iter_documents(stream)) == found


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_chunked_and_gzip_body_is_decoded_and_rewritten_as_the_page_itself(tmp_path: Path, compress: bool) -> None:
    sent = chunked(gzip.compress(PAGE))
    path = warc(
        tmp_path / "a.warc",
        [response("http://h/d/p.html", sent, Transfer_Encoding="chunked", Content_Encoding="gzip")],
        compress=compress,
    )
    (document,) = iter_documents(path)
    assert isinstance(document, WarcDocument)
    assert document.body == PAGE and document.problems == ()
    report = rewrite_warc(path, tmp_path / "out")
    assert report.problems == () and report.documents == ("h/d/p.html",)
    assert (tmp_path / "out/h/d/p.html").read_bytes() == rewrite_html(PAGE, url="http://h/d/p.html").output
    assert report.links == 3


def test_deflate_and_identity_codings_are_undone(tmp_path: Path) -> None:
    deflated = zlib.compress(PAGE)
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/1", deflated, Content_Encoding="deflate"),
            response("http://h/2", chunked(PAGE), Transfer_Encoding="Chunked", Content_Encoding="identity"),
        ],
    )
    assert [(item.body, item.problems) for item in iter_documents(path)] == [(PAGE, ()), (PAGE, ())]  # type: ignore[union-attr]


def test_x_gzip_is_gzip_as_recipients_should_read_it(tmp_path: Path) -> None:
    # RFC 9110 §8.4.1.3: "A recipient SHOULD consider 'x-gzip' to be equivalent to 'gzip'."
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/1", gzip.compress(PAGE), Content_Encoding="x-gzip"),
            response(
                "http://h/2", chunked(gzip.compress(PAGE)), Transfer_Encoding="chunked", Content_Encoding="X-Gzip"
            ),
        ],
    )
    assert [(item.body, item.problems) for item in iter_documents(path)] == [(PAGE, ()), (PAGE, ())]  # type: ignore[union-attr]


def test_a_body_that_cannot_be_decoded_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    cut = gzip.compress(PAGE * 50)[:-40]
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/br", PAGE, Content_Encoding="br, gzip"),
            response("http://h/cut", cut, Content_Encoding="gzip"),
            response("http://h/chunks", chunked(PAGE)[:-9], Transfer_Encoding="chunked"),
            response("http://h/plain", PAGE, Content_Encoding="gzip"),  # says gzip, is not: warcio takes it as sent
            response("http://h/ok", PAGE),
        ],
    )
    found = {item.uri: item for item in iter_documents(path)}  # type: ignore[union-attr]
    assert found["http://h/br"].body is None and "cannot be decoded" in found["http://h/br"].problems[0]
    assert found["http://h/cut"].body is None and "cut short" in found["http://h/cut"].problems[0]
    assert found["http://h/chunks"].body is None and "chunked" in found["http://h/chunks"].problems[0]
    assert found["http://h/plain"].body == PAGE and "taken as recorded" in found["http://h/plain"].problems[0]
    assert found["http://h/ok"].body == PAGE and found["http://h/ok"].problems == ()
    report = rewrite_warc(path, tmp_path / "out")
    assert sorted(report.documents) == ["h/ok.html", "h/plain.html"]
    assert all(problem.startswith("offset ") for problem in report.problems)
    assert {entry.url for entry in report.entries if entry.file is None} == {
        "http://h/br",
        "http://h/cut",
        "http://h/chunks",
    }


# --- the acceptance check: each page's file is a direct rewrite of the page ----------------------------------

INLINE_PAGES = {
    "http://example.org/": b"<a href=a/b.html>x</a>",
    "http://example.org/a/b.html": b"<base href=../c/><img srcset='i.png 1x, j.png 2x'><a href=#top>t</a>",
    "https://example.org:8443/q?x=1&y=2": b'<p style="background:url(bg.png)">x</p><a href="?z=3">q</a>',
    "http://example.org/caf%C3%A9/men%C3%BC.htm": "<a href='pl\u00e2t.html'>\u00e9</a>".encode(),
    "http://example.org/sjis": "<meta charset=shift_jis><a href='\u8868.html'>\u8868</a>".encode("shift_jis"),
    "http://example.org/x.php?id=2.5": b"<!-- <a href=x> --><a href='y'>y</a>",
}


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_each_html_file_is_a_direct_rewrite_of_its_page(tmp_path: Path, compress: bool) -> None:
    path = warc(tmp_path / "a.warc", [response(url, page) for url, page in INLINE_PAGES.items()], compress=compress)
    report = rewrite_warc(path, tmp_path / "out")
    assert report.problems == ()
    written = {entry.url: entry.file for entry in report.entries}
    assert set(written) == set(INLINE_PAGES) and None not in written.values()
    for url, page in INLINE_PAGES.items():
        assert (tmp_path / "out" / written[url]).read_bytes() == rewrite_html(page, url=url).output, url  # type: ignore[operator]
    assert written["https://example.org:8443/q?x=1&y=2"] == "example.org_8443/q_x=1&y=2.html"
    assert written["http://example.org/"] == "example.org/index.html"
    assert written["http://example.org/caf%C3%A9/men%C3%BC.htm"] == "example.org/caf\u00e9/men\u00fc.htm"
    assert written["http://example.org/x.php?id=2.5"] == "example.org/x.php_id=2.5.html"
    assert [row["file"] for row in manifest(tmp_path / "out")] == [entry.file for entry in report.entries]
    assert files_under(tmp_path / "out") == sorted(
        [tmp_path / "out" / "manifest.json", *(tmp_path / "out" / file for file in report.documents)]
    )


def test_the_http_charset_and_css_records_are_used(tmp_path: Path) -> None:
    page = "<a href='\u00e9t\u00e9.html'>x</a>".encode("iso-8859-1")
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/latin", page, "text/html; charset=iso-8859-1"),
            response("http://h/css/site.css", CSS, "text/css"),
            response("http://h/logo.png", PNG, "image/png"),
        ],
    )
    report = rewrite_warc(path, tmp_path / "out")
    assert report.documents == ("h/latin.html", "h/css/site.css")  # the image is not rewrite_warc's business
    expected = rewrite_html(page, url="http://h/latin", charset="iso-8859-1").output
    assert (tmp_path / "out/h/latin.html").read_bytes() == expected
    assert (tmp_path / "out/h/css/site.css").read_bytes() == rewrite_css(CSS, url="http://h/css/site.css").output


def _corpus() -> list[dict]:
    shared_path("corpus", "html", "manifest.json")  # skips with the reason, or fails in CI, without ../shared
    entries = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    return [entry for entry in entries if (entry["url"] or "").startswith(("http://", "https://"))]


def test_the_corpus_mirror_matches_a_direct_rewrite_of_each_page(tmp_path: Path) -> None:
    entries = _corpus()
    pages = {entry["url"]: (CORPUS / entry["file"]).read_bytes() for entry in entries}
    path = warc(tmp_path / "corpus.warc.gz", [response(url, page) for url, page in pages.items()])
    before = path.read_bytes(), path.stat().st_mtime_ns
    report = rewrite_warc(path, tmp_path / "out")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    assert len(report.documents) == len(pages) > 200
    for entry in report.entries:
        assert entry.file is not None, entry
        output = (tmp_path / "out" / entry.file).read_bytes()
        assert output == rewrite_html(pages[entry.url], url=entry.url).output, entry.url  # type: ignore[index]
    assert len(set(report.documents)) == len(report.documents)
    report = unpack_warc(path, tmp_path / "unpacked")  # the same pages, each link to another page relinked
    assert len(report.documents) == len(pages)
    assert all(inside(tmp_path / "unpacked", file) for file in files_under(tmp_path / "unpacked"))
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


# --- redirects -----------------------------------------------------------------------------------------------


def test_redirect_map_and_follow_redirects() -> None:
    moved = [
        WarcDocument("http://h/a", 301, None, None, b"", "b", 0),
        WarcDocument("http://h/b", 302, None, None, b"", "/c#x", 1),
        WarcDocument("http://h/a", 301, None, None, b"", "elsewhere", 2),  # the first record of a URL wins
        WarcDocument("http://h/loop1", 307, None, None, b"", "loop2", 3),
        WarcDocument("http://h/loop2", 308, None, None, b"", "LOOP1", 4),
        WarcDocument("http://h/loop3", 308, None, None, b"", "http://H:80/loop3", 5),
        WarcDocument("http://h/ok", 200, None, None, b"", "ignored", 6),
        WarcDocument("mailto:x@h", 301, None, None, b"", "g", 7),  # unresolvable: left out
    ]
    redirects = redirect_map(moved)
    assert redirects == {
        "http://h/a": "http://h/b",
        "http://h/b": "http://h/c#x",
        "http://h/loop1": "http://h/loop2",
        "http://h/loop2": "http://h/LOOP1",
        "http://h/loop3": "http://H:80/loop3",
    }
    assert follow_redirects("http://h/a", redirects) == "http://h/c#x"
    assert follow_redirects("http://h/a", redirects, stop=lambda url: url.endswith("/b")) == "http://h/b"
    assert follow_redirects("http://h/loop3", redirects) is None
    assert follow_redirects("http://h/LOOP1", redirects) == "http://h/LOOP1"  # paths are case-sensitive
    assert follow_redirects("http://h/elsewhere", redirects) == "http://h/elsewhere"
    assert url_key("HTTP://H:80/a b#f") == "http://h/a%20b"


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_a_redirect_leads_to_the_page_record_and_unpacked_links_follow_it(tmp_path: Path, compress: bool) -> None:
    final = b'<a href="../other">o</a><img src="logo.png">'
    linking = b'<a href="http://h/old#part">old</a> <a href="/loop">loop</a> <a href="/gone">gone</a>'
    path = warc(
        tmp_path / "a.warc",
        [
            response("http://h/old", b"moved", "text/html", "301 Moved Permanently", Location="/new/"),
            response("http://h/loop", b"", None, "302 Found", Location="/loop"),
            response("http://h/new/", final),
            response("http://h/new/logo.png", PNG, "image/png"),
            response("http://h/start/page.html", linking),
        ],
        compress=compress,
    )
    report = rewrite_warc(path, tmp_path / "rewritten")
    assert report.problems == ()
    assert (tmp_path / "rewritten/h/new/index.html").read_bytes() == rewrite_html(final, url="http://h/new/").output
    moved = next(entry for entry in report.entries if entry.url == "http://h/old")
    assert (moved.file, moved.status, moved.location) == (None, 301, "http://h/new/")

    report = unpack_warc(path, tmp_path / "unpacked")
    assert report.problems == ()
    assert sorted(report.documents) == ["h/new/index.html", "h/new/logo.png", "h/start/page.html"]
    assert (tmp_path / "unpacked/h/start/page.html").read_bytes() == (
        b'<a href="../new/index.html#part">old</a> <a href="http://h/loop">loop</a> <a href="http://h/gone">gone</a>'
    )
    assert (
        tmp_path / "unpacked/h/new/index.html"
    ).read_bytes() == b'<a href="http://h/other">o</a><img src="logo.png">'
    assert (tmp_path / "unpacked/h/new/logo.png").read_bytes() == PNG
    assert {row["url"]: row.get("location") for row in manifest(tmp_path / "unpacked")}[
        "http://h/old"
    ] == "http://h/new/"


def test_unpack_relinks_through_the_base_and_css_and_keeps_the_rest_absolute(tmp_path: Path) -> None:
    page = (
        b'<base href="http://h/assets/"><link rel=stylesheet href="site.css">'
        b'<img srcset="a%20b.png 1x, http://elsewhere/x.png 2x"><a href="mailto:x@h">m</a><a href="#top">t</a>'
    )
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/index.html", page),
            response(
                "http://h/assets/site.css",
                b"p { background: url(a%20b.png) } @import 'http://h/index.html';",
                "text/css",
            ),
            response("http://h/assets/a%20b.png", PNG, "image/png"),
        ],
    )
    report = unpack_warc(path, tmp_path / "out")
    assert report.problems == () and report.links == 4
    assert (tmp_path / "out/h/index.html").read_bytes() == (
        b'<link rel=stylesheet href="assets/site.css">'
        b'<img srcset="assets/a%20b.png 1x, http://elsewhere/x.png 2x"><a href="mailto:x@h">m</a><a href="#top">t</a>'
    )
    assert (tmp_path / "out/h/assets/site.css").read_bytes() == (
        b"p { background: url(a%20b.png) } @import '../index.html';"
    )
    assert (tmp_path / "out/h/assets/a b.png").read_bytes() == PNG


def test_unpack_states_a_charset_only_http_gave(tmp_path: Path) -> None:
    page = "<p>\u043c\u0438\u0440</p><a href=x>x</a>".encode("koi8-r")
    latin = "<p>\u00e9t\u00e9</p><a href=x>x</a>".encode("iso-8859-1")  # what a browser guesses anyway
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/p", page, "text/html; charset=koi8-r"),
            response("http://h/l", latin, "text/html; charset=latin1"),
        ],
    )
    unpack_warc(path, tmp_path / "out")
    assert (tmp_path / "out/h/p.html").read_bytes() == b'<meta charset="koi8-r">\n' + page.replace(
        b"href=x", b"href=http://h/x"
    )
    assert (tmp_path / "out/h/l.html").read_bytes() == latin.replace(b"href=x", b"href=http://h/x")


# --- duplicates and statuses ---------------------------------------------------------------------------------


def test_the_first_2xx_record_of_a_url_wins(tmp_path: Path) -> None:
    path = warc(
        tmp_path / "a.warc.gz",
        [
            response("http://h/p", b"<p>not found</p>", status="404 Not Found"),
            response("http://h/p", b"<p>first</p>"),
            response("HTTP://H:80/p", b"<p>second</p>"),
            response("http://h/part", b"<p>par", status="206 Partial Content"),
        ],
    )
    report = unpack_warc(path, tmp_path / "out")
    assert report.documents == ("h/p.html",)
    assert (tmp_path / "out/h/p.html").read_bytes() == b"<p>first</p>"
    later = [entry for entry in report.entries if entry.file is None]
    assert [entry.url for entry in later] == ["HTTP://H:80/p", "http://h/part"]
    assert "the one written" in later[0].problems[0] and "206" in later[1].problems[0]


# --- the WARC is only read -----------------------------------------------------------------------------------


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_the_warc_file_is_left_as_it_was(tmp_path: Path, compress: bool) -> None:
    path = warc(tmp_path / "a.warc", [response(url, page) for url, page in INLINE_PAGES.items()], compress=compress)
    os.utime(path, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_mode
    rewrite_warc(path, tmp_path / "one")
    unpack_warc(path, tmp_path / "two")
    list(iter_documents(path))
    assert (path.read_bytes(), path.stat().st_mtime_ns, path.stat().st_mode) == before


# --- hostile target URIs -------------------------------------------------------------------------------------

HOSTILE = [
    "http://h/../../x",
    "http://h/%2e%2e/%2e%2e/y",
    "http://h/con.html",
    "http://h/" + "z" * 5000,
    "http://h/" + "d/" * 2500 + "deep",
    "http://h/Case",
    "http://h/case",
    "http://h/a",
    "http://h/a/b",
    "http://h/a%2F..%2F..%2Fescape",
    "http://h/..%5C..%5Cwin",
    "http://h/.hidden",
    "http://h/nul/x",
    "http://..",
    "http://h/q?/../../../etc/passwd",
    "http://h/manifest.json",
    "http://manifest.json/",
]


@pytest.mark.parametrize("verb", [rewrite_warc, unpack_warc])
def test_hostile_target_uris_stay_inside_and_never_overwrite(tmp_path: Path, verb) -> None:
    records = [response(url, b"<p>%d</p>" % index, "application/octet-stream") for index, url in enumerate(HOSTILE)]
    records += [response(url + "/page", b"<p>h%d</p>" % index) for index, url in enumerate(HOSTILE)]
    path = warc(tmp_path / "a.warc.gz", records)
    out = tmp_path / "sub" / "out"
    report = verb(path, out)
    assert not report.problems
    assert all(inside(out, file) for file in files_under(tmp_path / "sub"))
    assert files_under(tmp_path) == sorted([path, *files_under(out)])
    written = {entry.url: entry.file for entry in report.entries if entry.file}
    assert len(set(written.values())) == len(written)
    for index, url in enumerate(HOSTILE):  # each file holds its own record: nothing overwrote anything
        page = written.get(url + "/page")
        assert page is not None and (out / page).read_bytes() == b"<p>h%d</p>" % index, url
        if verb is unpack_warc:
            assert (out / written[url]).read_bytes() == b"<p>%d</p>" % index, url
    assert manifest(out)[0]["url"] == (HOSTILE[0] if verb is unpack_warc else HOSTILE[0] + "/page")
    assert (
        max(len(part.encode()) for file in written.values() for part in file.split("/")) <= 124
    )  # names.LIMIT, and "-999"


@pytest.mark.parametrize(
    "pair",
    [
        ("http://h/../../x", "http://h/%2e%2e/%2e%2e/x"),
        ("http://..", "http://%2e%2e/"),
        ("http://h/x", "HTTP://H:80/./x"),
    ],
)
def test_spellings_of_one_url_are_one_file(tmp_path: Path, pair: tuple[str, str]) -> None:
    path = warc(tmp_path / "a.warc.gz", [response(pair[0], b"first"), response(pair[1], b"second")])
    report = unpack_warc(path, tmp_path / "out")
    (file,) = report.documents
    assert (tmp_path / "out" / file).read_bytes() == b"first"
    assert [entry.file for entry in report.entries] == [file, None]
    assert len(report.problems) == 1 and "the one written" in report.problems[0]
    assert files_under(tmp_path / "out") == sorted([tmp_path / "out" / file, tmp_path / "out/manifest.json"])


def test_the_mirror_is_the_same_whatever_the_order_of_the_records(tmp_path: Path) -> None:
    records = [response(url, b"<p>%d</p>" % index, "text/html") for index, url in enumerate(HOSTILE)]
    records += [response(url, page) for url, page in INLINE_PAGES.items()]
    one = unpack_warc(warc(tmp_path / "one.warc", records), tmp_path / "one")
    again = unpack_warc(tmp_path / "one.warc", tmp_path / "again")
    reversed_ = unpack_warc(warc(tmp_path / "two.warc", records[::-1]), tmp_path / "two")
    assert one.files == again.files == reversed_.files
    assert manifest(tmp_path / "one") == manifest(tmp_path / "again")
    for url, file in one.files.items():
        assert (tmp_path / "one" / file).read_bytes() == (tmp_path / "two" / file).read_bytes(), url


def test_a_file_and_a_folder_of_one_name_both_survive(tmp_path: Path) -> None:
    path = warc(
        tmp_path / "a.warc.gz",
        [response("http://h/a", b"file a", "application/octet-stream"), response("http://h/a/b", b"b", None)],
    )
    report = unpack_warc(path, tmp_path / "out")
    assert sorted(report.documents) == ["h/a", "h/a-2/b"]
    assert (tmp_path / "out/h/a").read_bytes() == b"file a" and (tmp_path / "out/h/a-2/b").read_bytes() == b"b"


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_symbolic_link_already_in_the_output_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "index.html").write_bytes(b"mine")
    out = tmp_path / "out"
    out.mkdir()
    (out / "h").symlink_to(outside, target_is_directory=True)
    (out / "manifest.json").symlink_to(outside / "index.html")
    path = warc(tmp_path / "a.warc.gz", [response("http://h/", PAGE), response("http://h/x.html", PAGE)])
    report = unpack_warc(path, out)
    assert sorted(report.documents) == ["h-2/index.html", "h-2/x.html"]
    assert report.manifest == "manifest-2.json" and "already holds manifest.json" in report.problems[0]
    assert sorted(path.name for path in outside.iterdir()) == ["index.html"]
    assert (outside / "index.html").read_bytes() == b"mine"
    assert (out / "h").is_symlink() and (out / "manifest.json").is_symlink()
    assert manifest(out, "manifest-2.json")[0]["file"] == "h-2/index.html"


# --- damage --------------------------------------------------------------------------------------------------

THREE = [response(f"http://h/{n}", b"<a href=x>%d</a>" % n * 40) for n in range(3)]


def test_a_truncated_warc_gz_is_a_problem_and_the_records_before_are_written(tmp_path: Path) -> None:
    whole = warc(tmp_path / "whole.warc.gz", THREE).read_bytes()
    offsets = [item.offset for item in iter_documents(tmp_path / "whole.warc.gz")]
    path = tmp_path / "cut.warc.gz"
    for cut in range(offsets[2] + 1, len(whole)):  # wherever the last member is cut
        path.write_bytes(whole[:cut])
        found = list(iter_documents(path))
        assert [item.uri for item in found[:2]] == ["http://h/0", "http://h/1"]  # type: ignore[union-attr]
        assert all(isinstance(item, WarcDocument) and item.body is not None and not item.problems for item in found[:2])
        (last,) = found[2:]
        problems = [last.problem] if isinstance(last, WarcDamage) else list(last.problems)
        assert problems and all(f"offset {offsets[2]}" in problem for problem in problems), (cut, problems)
    for cut in (len(whole) - 30, offsets[2] + 25, offsets[2] + 5):
        path.write_bytes(whole[:cut])
        report = rewrite_warc(path, tmp_path / f"out{cut}")
        assert report.documents == ("h/0.html", "h/1.html"), cut
        assert report.problems and all(f"offset {offsets[2]}" in problem for problem in report.problems)


def test_a_truncated_plain_warc_is_a_problem_too(tmp_path: Path) -> None:
    whole = warc(tmp_path / "whole.warc", THREE, compress=False).read_bytes()
    (tmp_path / "cut.warc").write_bytes(whole[:-100])
    found = list(iter_documents(tmp_path / "cut.warc"))
    assert [item.body is not None for item in found] == [True, True, False]  # type: ignore[union-attr]
    assert "cut short" in found[2].problems[0]  # type: ignore[union-attr]


def test_a_damaged_member_is_named_and_the_records_after_it_are_still_read(tmp_path: Path) -> None:
    whole = bytearray(warc(tmp_path / "whole.warc.gz", THREE).read_bytes())
    offsets = [item.offset for item in iter_documents(tmp_path / "whole.warc.gz")]
    for start in (offsets[1] + 12, offsets[1] + 200):  # in the deflate data's first block, and further on
        damaged = bytearray(whole)
        damaged[start : start + 16] = b"\x00" * 16
        path = tmp_path / f"damaged{start}.warc.gz"
        path.write_bytes(bytes(damaged))
        found = list(iter_documents(path))
        readable = [item.uri for item in found if isinstance(item, WarcDocument) and item.body is not None]
        assert readable == ["http://h/0", "http://h/2"], start
        problems = [item.problem for item in found if isinstance(item, WarcDamage)]
        problems += [p for item in found if isinstance(item, WarcDocument) for p in item.problems]
        assert any(f"offset {offsets[1]}" in problem for problem in problems), problems
        report = rewrite_warc(path, tmp_path / f"out{start}")
        assert report.documents == ("h/0.html", "h/2.html")


@pytest.mark.parametrize("compress", COMPRESSIONS)
def test_any_byte_of_a_record_damaged_costs_that_record_at_most(tmp_path: Path, compress: bool) -> None:
    path = warc(tmp_path / "whole.warc", THREE, compress=compress)
    whole = path.read_bytes()
    offsets = [item.offset for item in iter_documents(path)]
    second = whole[offsets[1] : offsets[2]]
    # Without a digest over the WARC heading, a changed WARC-Type or target URI cannot be told from a real one.
    unseen = set()
    for name in (b"WARC-Type: ", b"WARC-Target-URI: "):
        start = second.find(name) if not compress else -1
        if start >= 0:
            unseen.update(range(start, second.index(b"\r\n", start) + 2))
    damaged_path = tmp_path / "damaged.warc"
    for position in range(len(second)):
        if position in unseen:
            continue
        damaged = bytearray(whole)
        damaged[offsets[1] + position] ^= 0xFF
        damaged_path.write_bytes(bytes(damaged))
        found = list(iter_documents(damaged_path))
        documents = {item.uri: item for item in found if isinstance(item, WarcDocument)}
        for uri, (_, _, body, _, _) in ((THREE[0][1], THREE[0]), (THREE[2][1], THREE[2])):
            assert documents[uri].body == body and not documents[uri].problems, (position, found)
        problems = [item.problem for item in found if isinstance(item, WarcDamage)]
        problems += [problem for item in documents.values() for problem in item.problems]
        second_read = documents.get("http://h/1")
        clean = second_read is not None and second_read.body == THREE[1][2] and not second_read.problems
        assert clean or any(str(offsets[1]) in problem for problem in problems), (position, found)


def test_a_response_without_a_target_uri_is_named_for_what_it_lacks(tmp_path: Path) -> None:
    http = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<a href=x>x</a>"
    record = (
        b"WARC/1.1\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-000000000001>\r\n"
        b"Content-Type: application/http;msgtype=response\r\nContent-Length: %d\r\n\r\n" % len(http)
    )
    path = tmp_path / "a.warc"
    path.write_bytes(record + http + b"\r\n\r\n")
    (damage,) = iter_documents(path)
    assert isinstance(damage, WarcDamage)
    assert "offset 0" in damage.problem and "no WARC-Target-URI" in damage.problem, damage.problem
    assert "AttributeError" not in damage.problem


def test_random_damage_never_raises_and_always_ends(tmp_path: Path) -> None:
    rng = random.Random(2557)
    records = [
        *THREE,
        response("http://h/old", b"", None, "301 Moved", Location="/0"),
        response("http://h/i", PNG, None),
    ]
    originals = [warc(tmp_path / "a", records, compress=True).read_bytes()]
    originals.append(warc(tmp_path / "b", records, compress=False).read_bytes())
    path = tmp_path / "damaged.warc"
    for round_ in range(400):
        data = bytearray(rng.choice(originals))
        for _ in range(rng.randint(1, 4)):
            where = rng.randrange(len(data) or 1)
            choice = rng.random()
            if choice < 0.4 and data:
                data[where] ^= rng.randrange(1, 256)
            elif choice < 0.6:
                del data[where : where + rng.randint(1, 60)]
            elif choice < 0.8:
                data[where:where] = rng.randbytes(rng.randint(1, 60))
            else:
                del data[where:]
        path.write_bytes(bytes(data))
        found = list(iter_documents(path))
        assert len(found) < 50, round_
        offsets = [item.offset for item in found if isinstance(item, WarcDocument)]
        assert offsets == sorted(set(offsets)), round_  # no record read twice
        if round_ % 20 == 0:
            report = unpack_warc(path, tmp_path / f"out{round_}")
            assert all(inside(tmp_path / f"out{round_}", file) for file in files_under(tmp_path / f"out{round_}"))
            assert report.manifest is not None


def test_garbage_between_plain_records_is_skipped_with_a_problem(tmp_path: Path) -> None:
    one = warc(tmp_path / "1.warc", THREE[:1], compress=False).read_bytes()
    two = warc(tmp_path / "2.warc", THREE[1:], compress=False).read_bytes()
    path = tmp_path / "a.warc"
    path.write_bytes(one + b"this is no record\r\n" * 3 + two + b"trailing junk")
    found = list(iter_documents(path))
    assert [item.uri for item in found if isinstance(item, WarcDocument)] == ["http://h/0", "http://h/1", "http://h/2"]
    damage = [item for item in found if isinstance(item, WarcDamage)]
    assert [item.offset for item in damage] == [len(one), len(path.read_bytes()) - len(b"trailing junk")]


def test_a_file_that_is_one_gzip_stream_is_still_read(tmp_path: Path) -> None:
    plain = warc(tmp_path / "a.warc", THREE, compress=False).read_bytes()
    path = tmp_path / "a.warc.gz"
    path.write_bytes(gzip.compress(plain))
    found = list(iter_documents(path))
    assert isinstance(found[1], WarcDamage) and "one gzip stream" in found[1].problem
    assert [item.uri for item in found if isinstance(item, WarcDocument)] == ["http://h/0", "http://h/1", "http://h/2"]
    path.write_bytes(gzip.compress(plain)[:-50])  # cut short: what comes before the cut is still read
    found = list(iter_documents(path))
    assert [item.uri for item in found if isinstance(item, WarcDocument)] == ["http://h/0", "http://h/1"]
    assert "cut short" in found[-1].problem and str(found[-1].offset) in found[-1].problem  # type: ignore[union-attr]


def test_nothing_that_is_not_a_warc_raises(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_bytes(PAGE)
    (tmp_path / "random.gz").write_bytes(gzip.compress(b"not a warc") + b"\x1f\x8b\x08garbage")
    for name in ("page.html", "random.gz", "missing.warc"):
        found = list(iter_documents(tmp_path / name))
        assert found and all(isinstance(item, WarcDamage) for item in found), name
        report = rewrite_warc(tmp_path / name, tmp_path / f"out-{name}")
        assert report.documents == () and report.problems
    assert list(iter_documents(io.BytesIO(b""))) == []


def test_a_digest_that_does_not_match_is_reported(tmp_path: Path) -> None:
    data = warc(tmp_path / "a.warc", THREE[:1], compress=False).read_bytes()
    (tmp_path / "a.warc").write_bytes(data.replace(b">0</a>", b">1</a>", 1))
    (document,) = iter_documents(tmp_path / "a.warc")
    assert any("digest" in problem for problem in document.problems)  # type: ignore[union-attr]


# --- is_warc -------------------------------------------------------------------------------------------------


def test_is_warc_sniffs_the_content(tmp_path: Path) -> None:
    warc(tmp_path / "a.bin", THREE[:1], compress=False)
    warc(tmp_path / "b.bin", THREE[:1], compress=True)
    (tmp_path / "c.gz").write_bytes(gzip.compress(b"<html>"))
    (tmp_path / "d.html").write_bytes(PAGE)
    (tmp_path / "e.gz").write_bytes(b"\x1f\x8b\x08\x00junk")
    assert [is_warc(tmp_path / name) for name in ("a.bin", "b.bin", "c.gz", "d.html", "e.gz")] == [
        True,
        True,
        False,
        False,
        False,
    ]
    assert not is_warc(tmp_path / "missing") and not is_warc(tmp_path)


# --- names ----------------------------------------------------------------------------------------------------


def test_a_script_served_as_application_javascript_keeps_its_name(tmp_path: Path) -> None:
    path = warc(tmp_path / "a.warc.gz", [response("http://h/app.js", b"1", "application/javascript")])
    assert unpack_warc(path, tmp_path / "out").documents == ("h/app.js",)
