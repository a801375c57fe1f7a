"""WARC out read by the tools people use (issue 32): warcio's ``check``, warcat's ``verify`` and pywb's
indexer and replay, each run on ``rewriter rewrite crawl.warc.gz -o out.warc.gz``.

What each must see: every record checks (warcio, warcat: no payload digest on a conversion record,
whose block has no HTTP payload, WARC 1.1 §5.9); pywb replays the ORIGINAL capture of each page, at
its own timestamp and as the latest, status line and headers included; the rewritten page is the
block of a ``conversion`` record whose ``WARC-Refers-To`` names the page's record and whose
``WARC-Target-URI`` is the page's. With ``typed_conversions`` (the page's Content-Type on the
conversion), pywb replays the conversion instead: why the default writes an empty Content-Type.

pywb is run in a process of its own (its replay app patches the standard library through gevent
when imported) and through its WSGI app, with no server; warcat through ``python -m warcat``. A
tool that is not installed skips its test, named (they are in the ``test`` extra).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib.util
import io
import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_cli
from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rewriter.containers.warc import rewrite_warc_piece

DATE = "2024-05-01T12:00:00Z"
TIMESTAMP = "20240501120000"
PAGE = b'<!doctype html><link rel=stylesheet href="site.css"><a href="guide.html">guide</a><img src="/logo.png">'
GUIDE = b'<!doctype html><a href="../docs/">up</a>'
CSS = b"body { background: url(bg.png) }"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
NOTES = b"<a href=notes/2.html>2</a>"

# kind, URI, payload, HTTP Content-Type (None: a resource record, its WARC Content-Type)
CRAWL = [
    ("response", "http://example.org/docs/", PAGE, "text/html; charset=utf-8"),
    ("response", "http://example.org/docs/guide.html", GUIDE, "text/html"),
    ("response", "http://example.org/docs/site.css", CSS, "text/css"),
    ("response", "http://example.org/logo.png", PNG, "image/png"),
    ("resource", "http://example.org/notes.html", NOTES, None),
]
PAGES = [uri for _, uri, _, content_type in CRAWL if content_type != "image/png"]


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


needs_pywb = pytest.mark.skipif(not _has("pywb"), reason="pywb is not installed (pip install 'pywb>=2.10')")
needs_warcat = pytest.mark.skipif(not _has("warcat"), reason="warcat is not installed (pip install warcat)")


def write_crawl(path: Path) -> Path:
    """The crawl as warcio writes it: a warcinfo, then each record of CRAWL."""
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True, warc_version="WARC/1.1")
        info = {"software": "rewriter tests", "format": "WARC File Format 1.1"}
        warcinfo = writer.create_warcinfo_record("crawl.warc.gz", info)
        warcinfo.rec_headers.replace_header("WARC-Record-ID", f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, 'info')}>")
        warcinfo.rec_headers.replace_header("WARC-Date", DATE)
        writer.write_record(warcinfo)
        for number, (kind, uri, payload, content_type) in enumerate(CRAWL):
            fixed = {"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, f'{number} {uri}')}>"}
            fixed["WARC-Date"] = DATE
            if content_type is None:
                # Written by hand, as wget writes one: warcio adds a payload digest to a block with no HTTP
                # payload, at which warcat's verify stops (WARC 1.1 §5.9; webrecorder/warcio#93).
                raw = (
                    f"WARC/1.1\r\nWARC-Type: {kind}\r\nWARC-Record-ID: {fixed['WARC-Record-ID']}\r\n"
                    f"WARC-Date: {DATE}\r\nWARC-Target-URI: {uri}\r\nContent-Type: text/html\r\n"
                    f"WARC-Block-Digest: sha1:{base64.b32encode(hashlib.sha1(payload).digest()).decode()}\r\n"
                    f"Content-Length: {len(payload)}\r\n\r\n"
                )
                stream.write(gzip.compress(raw.encode() + payload + b"\r\n\r\n", mtime=0))
                continue
            heading = StatusAndHeaders(
                "200 OK", [("Content-Type", content_type), ("X-Original", "yes")], protocol="HTTP/1.1"
            )
            record = writer.create_warc_record(
                uri, kind, payload=io.BytesIO(payload), http_headers=heading, warc_headers_dict=fixed
            )
            writer.write_record(record)
    return path


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The crawl, and ``rewriter rewrite`` of it to a WARC."""
    folder = tmp_path_factory.mktemp("replay")
    crawl = write_crawl(folder / "crawl.warc.gz")
    done = run_cli(folder, "rewrite", "crawl.warc.gz", "-o", "out.warc.gz")
    assert done.returncode == 0, done.stderr
    return crawl, folder / "out.warc.gz"


def records(path: Path) -> list[tuple[str, dict[str, str], bytes]]:
    with open(path, "rb") as stream:
        return [
            (record.rec_type, dict(record.rec_headers.headers), record.content_stream().read())
            for record in ArchiveIterator(stream)
        ]


def test_each_page_has_a_conversion_reached_from_it_by_refers_to(rewritten: tuple[Path, Path]) -> None:
    crawl, out = rewritten
    before, after = records(crawl), records(out)
    assert [record for record in after if record[0] != "conversion"] == before  # every record kept
    conversions = [(fields, block) for kind, fields, block in after if kind == "conversion"]
    by_id = {fields["WARC-Record-ID"]: (kind, fields, block) for kind, fields, block in before}
    assert sorted(fields["WARC-Target-URI"] for fields, _ in conversions) == sorted(PAGES)
    for fields, block in conversions:
        kind, original, payload = by_id[fields["WARC-Refers-To"]]
        assert kind in ("response", "resource")
        assert fields["WARC-Target-URI"] == original["WARC-Target-URI"] and fields["WARC-Date"] == DATE
        assert b"http://example.org/" in block and block != payload
        assert "WARC-Payload-Digest" not in fields and fields["Content-Type"] == ""


def test_warcio_check_passes_every_record(rewritten: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, out = rewritten
    capsys.readouterr()
    status = Checker(SimpleNamespace(inputs=[str(out)], verbose=True)).process_all()
    said = capsys.readouterr().out
    assert status == 0 and "fail" not in said and "exception" not in said, said
    assert said.count("conversion") == len(PAGES) and said.count("digest pass") >= 2 * len(PAGES)


def warcat_verify(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warcat", "verify", str(path)], capture_output=True, text=True, timeout=120
    )


@needs_warcat
def test_warcat_verify_passes_the_input_and_the_output(rewritten: tuple[Path, Path]) -> None:
    crawl, out = rewritten
    for path in (crawl, out):
        done = warcat_verify(path)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


@needs_warcat
def test_warcat_stops_on_a_payload_digest_of_a_conversion(rewritten: tuple[Path, Path], tmp_path: Path) -> None:
    # The form before issue 32 (a WARC-Payload-Digest on the conversion's block): what warcat said.
    _, out = rewritten
    with open(out, "rb") as stream, open(tmp_path / "old.warc.gz", "wb") as target:
        writer = WARCWriter(target, gzip=True)
        for record in ArchiveIterator(stream):
            if record.rec_type == "conversion":
                block = record.content_stream().read()
                record.rec_headers.add_header("WARC-Payload-Digest", record.rec_headers["WARC-Block-Digest"])
                record.rec_headers.replace_header("Content-Type", "text/html")
                record = writer.create_warc_record(
                    "", "conversion", payload=io.BytesIO(block), warc_headers=record.rec_headers, length=len(block)
                )
            writer.write_record(record)
    done = warcat_verify(tmp_path / "old.warc.gz")
    assert done.returncode != 0 and "payload" in done.stderr


PYWB = textwrap.dedent(
    """
    import json, os, sys
    from wsgiref.util import setup_testing_defaults
    warc, folder, *paths = sys.argv[1:]
    os.chdir(folder)
    from pywb.manager.manager import CollectionsManager
    CollectionsManager("crawl", must_exist=False).add_collection()
    CollectionsManager("crawl").add_archives([warc])
    from pywb.apps.frontendapp import FrontEndApp
    app = FrontEndApp()
    said = {"index": open("collections/crawl/indexes/index.cdxj").read().splitlines(), "replay": {}}
    for path in paths:
        environ = {"PATH_INFO": path, "REQUEST_METHOD": "GET"}
        setup_testing_defaults(environ)
        answer = {}
        def start(status, headers, exc_info=None):
            answer["status"], answer["headers"] = status, dict(headers)
        body = b"".join(app(environ, start))
        said["replay"][path] = {**answer, "body": body.decode("latin-1")}
    print(json.dumps(said))
    """
)


def pywb(warc: Path, folder: Path, *paths: str) -> dict:
    """pywb's index of *warc* (its own ``wb-manager add``) and its answers to *paths*, from its WSGI app."""
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PYWB, str(warc), str(folder), *paths], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    said: dict = json.loads(done.stdout.splitlines()[-1])
    return said


def replays(uri: str) -> list[str]:
    """The paths that replay *uri* as recorded (``id_``): at the capture's timestamp, and the latest."""
    return [f"/crawl/{TIMESTAMP}id_/{uri}", f"/crawl/id_/{uri}"]


@needs_pywb
def test_pywb_replays_the_original_capture_by_default(rewritten: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = rewritten
    said = pywb(out, tmp_path / "pywb", *(path for uri in PAGES for path in replays(uri)))
    # pywb indexes the conversions too (as captures of the same URL and second, with no type)...
    index = [json.loads(line.split(" ", 2)[2]) for line in said["index"]]
    assert sorted(entry["url"] for entry in index if entry["mime"] == "unk") == sorted(PAGES)
    # ...and replays the recorded page: its status line, its headers, its bytes.
    recorded = {uri: (payload, content_type) for _, uri, payload, content_type in CRAWL}
    for uri in PAGES:
        payload, content_type = recorded[uri]
        for path in replays(uri):
            answer = said["replay"][path]
            assert answer["status"] == "200 OK", (path, answer)
            assert answer["body"].encode("latin-1") == payload, path
            if content_type is not None:  # a response: its own headers
                assert answer["headers"].get("X-Original") == "yes", path


@needs_pywb
def test_pywb_replays_a_typed_conversion_instead(rewritten: tuple[Path, Path], tmp_path: Path) -> None:
    # Why the conversion's Content-Type is empty: given the page's, pywb prefers the conversion.
    crawl, _ = rewritten
    typed = tmp_path / "typed.warc.gz"
    with open(typed, "wb") as target:
        list(rewrite_warc_piece(crawl, None, target, gzip=True, typed_conversions=True))
    uri = "http://example.org/docs/guide.html"
    said = pywb(typed, tmp_path / "pywb", *replays(uri))
    for path in replays(uri):
        assert (
            said["replay"][path]["body"].encode("latin-1")
            == b'<!doctype html><a href="http://example.org/docs/">up</a>'
        )
