"""The small things of issue 32 a user meets at once: ``rewrite --help`` names web archives and
``--format`` takes ``warc`` and ``arc``; ``unpack`` never writes a record that is no web page (wget's
``metadata://`` records, ``dns:``, ``warcinfo``, ``request``) as a page, and says it instead; every run
of ``rewrite`` prints its summary line, one input or many; the progress bar counts what the summary
counts."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pytest
from conftest import err_lines, on_a_terminal, run_cli
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

PAGE = b'<a href="guide.html">guide</a>'


def wget_like(path: Path) -> Path:
    """A WARC as wget writes one: warcinfo, request and response, then its metadata:// resource
    records (the manifest, the arguments, the log), a dns: record and a metadata record."""
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "Wget/1.21.3"}))
        request = StatusAndHeaders("GET /docs/ HTTP/1.1", [("Host", "example.org")], is_http_request=True)
        writer.write_record(
            writer.create_warc_record(
                "http://example.org/docs/", "request", payload=io.BytesIO(b""), http_headers=request
            )
        )
        heading = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(
            writer.create_warc_record(
                "http://example.org/docs/", "response", payload=io.BytesIO(PAGE), http_headers=heading
            )
        )
        for name, data in (
            ("MANIFEST.txt", b"crawl.warc.gz\n"),
            ("wget_arguments.txt", b'"-m"\n'),
            ("wget.log", b"log\n"),
        ):
            uri = f"metadata://gnu.org/software/wget/warc/{name}"
            writer.write_record(
                writer.create_warc_record(uri, "resource", payload=io.BytesIO(data), warc_content_type="text/plain")
            )
        writer.write_record(
            writer.create_warc_record(
                "dns:example.org",
                "resource",
                payload=io.BytesIO(b"example.org 1.2.3.4\n"),
                warc_content_type="text/dns",
            )
        )
        writer.write_record(
            writer.create_warc_record(
                "http://example.org/docs/",
                "metadata",
                payload=io.BytesIO(b"outlink: http://example.org/docs/guide.html\r\n"),
                warc_content_type="application/warc-fields",
            )
        )
    return path


# --- --help and --format ---------------------------------------------------------------------------------


def test_rewrite_help_names_web_archives_and_format_takes_warc_and_arc(tmp_path: Path) -> None:
    said = run_cli(tmp_path, "rewrite", "--help").stdout.decode()
    flat = " ".join(said.split())
    assert "web archive (WARC or ARC" in flat and "conversion record" in flat and ".warc.gz" in flat
    assert "{auto,html,css,message,mbox,emlx,warc,arc}" in flat
    top = " ".join(run_cli(tmp_path, "--help").stdout.decode().split())
    assert "web archives (WARC, ARC)" in top and "style sheets, mail and web archives absolute" in top


def test_format_warc_reads_a_web_archive_and_names_what_is_not_one(tmp_path: Path) -> None:
    wget_like(tmp_path / "crawl.warc.gz")
    (tmp_path / "page.html").write_bytes(PAGE)
    done = run_cli(tmp_path, "rewrite", "crawl.warc.gz", "--format", "warc", "-o", "out.warc.gz")
    assert done.returncode == 0, done.stderr
    assert b"http://example.org/docs/guide.html" in __import__("gzip").decompress(
        (tmp_path / "out.warc.gz").read_bytes()
    )
    for verb in (["rewrite"], ["links"]):
        done = run_cli(tmp_path, *verb, "page.html", "--format", "arc", "--url", "http://h/")
        assert done.returncode == 1 and not done.stdout
        assert any("--format arc, but this is no web archive: an HTML signature" in line for line in err_lines(done))
    done = run_cli(tmp_path, "unpack", "page.html", "--format", "warc", "-o", "unpacked")
    assert done.returncode == 1 and "page.html is no web archive (--format warc)" in done.stderr.decode()


# --- unpack: records that are no web page ------------------------------------------------------------------


def test_unpack_never_writes_a_record_that_is_no_web_page_and_says_it(tmp_path: Path) -> None:
    wget_like(tmp_path / "crawl.warc.gz")
    done = run_cli(tmp_path, "unpack", "crawl.warc.gz", "-o", "out", "--report", "report.jsonl")
    assert done.returncode == 0, done.stderr  # said, not failed
    files = sorted(
        path.relative_to(tmp_path / "out").as_posix() for path in (tmp_path / "out").rglob("*") if path.is_file()
    )
    assert files == ["example.org/docs/index.html", "manifest.json"]  # no gnu.org/ folder, no dns file
    said = [json.loads(line) for line in (tmp_path / "report.jsonl").read_text().splitlines()]
    problems = [record for record in said if "problem" in record]
    assert {record["code"] for record in problems} == {"not-a-document"}
    details = sorted(record["detail"] for record in problems)
    assert details == sorted(
        [
            "3 records (1 metadata, 1 request, 1 warcinfo): no web page, not written",
            "dns:example.org, a resource record: no web page, not written",
            *(
                f"metadata://gnu.org/software/wget/warc/{name}, a resource record: no web page, not written"
                for name in ("MANIFEST.txt", "wget_arguments.txt", "wget.log")
            ),
        ]
    )
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    listed = {entry["url"]: entry for entry in manifest}
    assert listed["metadata://gnu.org/software/wget/warc/wget.log"]["file"] is None
    assert listed[None]["problems"][0].endswith(
        "3 records (1 metadata, 1 request, 1 warcinfo): no web page, not written"
    )
    assert any(line.startswith("rewriter: crawl.warc.gz: offset 0: 3 records") for line in err_lines(done))
    quiet = run_cli(tmp_path, "unpack", "crawl.warc.gz", "-o", "quiet", "-q")
    assert quiet.returncode == 0 and quiet.stderr == b""


def test_rewrite_into_a_folder_writes_no_page_of_a_metadata_uri(tmp_path: Path) -> None:
    # A metadata: record of an HTML type is no page of the site either.
    path = tmp_path / "crawl.warc.gz"
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        writer.write_record(
            writer.create_warc_record(
                "metadata://gnu.org/notes.html", "resource", payload=io.BytesIO(PAGE), warc_content_type="text/html"
            )
        )
    done = run_cli(tmp_path, "rewrite", "crawl.warc.gz", "-o", "out/")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "out" / "gnu.org").exists()
    assert "metadata://gnu.org/notes.html, a resource record: no web page, not written" in done.stderr.decode()


# --- the summary line, and the progress bar's total -------------------------------------------------------

SUMMARY = re.compile(r"^rewriter: 1 input: 1 rewritten, 0 unchanged, 0 failed; links: \d+ rewritten, .* s$")


@pytest.mark.parametrize("output", [["-o", "out.warc.gz"], ["-o", "-"]], ids=["file", "stdout"])
def test_one_web_archive_prints_the_summary_line(tmp_path: Path, output: list[str]) -> None:
    wget_like(tmp_path / "crawl.warc.gz")
    done = run_cli(tmp_path, "rewrite", "crawl.warc.gz", *output)
    assert done.returncode == 0, done.stderr
    assert SUMMARY.match(err_lines(done)[-1]), done.stderr
    assert run_cli(tmp_path, "rewrite", "crawl.warc.gz", *output, "-q").stderr == b""


def test_one_message_and_one_page_print_the_summary_line(tmp_path: Path) -> None:
    message = (
        b"MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=b\r\n"
        b"Content-Location: http://example.org/docs/\r\n\r\n--b\r\nContent-Type: text/html\r\n"
        b"Content-Location: http://example.org/docs/\r\n\r\n" + PAGE + b"\r\n--b--\r\n"
    )
    (tmp_path / "saved.mhtml").write_bytes(message)
    (tmp_path / "page.html").write_bytes(PAGE)
    for argv in (["saved.mhtml", "-o", "out.mhtml"], ["page.html", "--url", "http://example.org/docs/"]):
        done = run_cli(tmp_path, "rewrite", *argv)
        assert done.returncode == 0, done.stderr
        assert [line for line in err_lines(done) if SUMMARY.match(line)], (argv, done.stderr)


@pytest.mark.skipif(
    os.name != "posix", reason="the progress bar is drawn on a terminal: needs a pseudo-terminal (POSIX)"
)
def test_the_progress_bar_counts_the_inputs_the_summary_counts(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for index in range(3):
        (folder / f"p{index}.html").write_bytes(PAGE)
    for index in range(4):  # copied beside the outputs: said apart, in the summary and out of the bar
        (folder / f"i{index}.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    code, drawn = on_a_terminal(["rewrite", "in", "-o", "out", "-j", "1", "--url-root", "http://h/"], tmp_path, 120)
    assert code == 0
    screen = drawn.decode("utf-8", "replace")
    fractions = {(int(done), int(total)) for done, total in re.findall(r"(\d+)/(\d+) \[", screen)}
    assert fractions and {total for _, total in fractions} == {3}, screen
    assert "rewriter: 3 inputs: 3 rewritten, 0 unchanged, 0 failed; 4 other files copied;" in screen
