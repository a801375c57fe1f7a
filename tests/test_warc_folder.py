"""A WARC rewritten into a folder (``rewriter rewrite crawl.warc.gz -o DIR``) is a run like any
other, through the pipeline: ``--report`` has one record per link, ``-j 2`` writes the bytes
``-j 1`` writes, and ``--resume`` after a run stopped part way finishes the mirror as a run never
stopped would have, no file lost or written twice."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from io import BytesIO
from pathlib import Path

from conftest import run_cli
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rewriter.containers.warc import plan_mirror, plan_warc, rewrite_warc
from rewriter.document.engines import engine_for_type

PAGES = 24
PIECE = "4K"  # a few records a piece: the archive is done in several pieces


def page(number: int) -> bytes:
    return (
        f'<link rel=stylesheet href="../css/s.css"><a href="p{number + 1}.html">next</a>'
        f'<img src="i{number}.png"><a href="/">home</a><p>{"words " * 200}</p>'
    ).encode()


def crawl(path: Path) -> Path:
    """Pages, their images, a style sheet and a redirect, one gzip member per record."""
    records = [("http://e.org/old", "301 Moved", [("Location", "/d/p0.html")], b"")]
    records.append(("http://e.org/css/s.css", "200 OK", [("Content-Type", "text/css")], b"p{background:url(bg.png)}"))
    for number in range(PAGES):
        records.append((f"http://e.org/d/p{number}.html", "200 OK", [("Content-Type", "text/html")], page(number)))
        records.append((f"http://e.org/d/i{number}.png", "200 OK", [("Content-Type", "image/png")], b"\x89PNG" * 40))
    with path.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for url, status, headers, body in records:
            http = StatusAndHeaders(status, [*headers, ("Content-Length", str(len(body)))], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=BytesIO(body), http_headers=http))
    return path


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under *folder* by its path there (temporaries and work folders included)."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def report(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_report_has_one_record_per_link_as_the_pages_themselves_give(tmp_path: Path) -> None:
    warc = crawl(tmp_path / "crawl.warc.gz")
    done = run_cli(tmp_path, "rewrite", "crawl.warc.gz", "-o", "site", "--report", "links.jsonl")
    assert done.returncode == 0, done.stderr
    records = report(tmp_path / "links.jsonl")
    # The pages' own links, each rewritten against the page's URL, in file order.
    expected = []
    for number in range(PAGES):
        url = f"http://e.org/d/p{number}.html"
        result = engine_for_type("text/html").rewrite(page(number), url=url)  # type: ignore[union-attr]
        expected += [{"file": "crawl.warc.gz", "record": url, **link._asdict()} for link in result.links]
        written = (tmp_path / "site" / "e.org" / "d" / f"p{number}.html").read_bytes()
        assert written == result.output
    css = [record for record in records if record["record"] == "http://e.org/css/s.css"]
    assert [record["resolved"] for record in css] == ["http://e.org/css/bg.png"]
    assert [record for record in records if record not in css] == expected
    # The same records as WARC out of the same archive gives.
    out = run_cli(tmp_path, "rewrite", "crawl.warc.gz", "-o", "out.warc.gz", "--report", "out.jsonl")
    assert out.returncode == 0, out.stderr
    assert report(tmp_path / "out.jsonl") == records
    # And the mirror is the library's.
    rewrite_warc(warc, tmp_path / "library")
    assert tree(tmp_path / "site") == tree(tmp_path / "library")


def one_and_two_workers(tmp_path: Path, verb: str) -> tuple[dict[str, bytes], bytes]:
    """``rewriter VERB crawl.warc.gz -o jN --report jN.jsonl`` with -j 1 and -j 2, in pieces: the
    folder and the report, the same for both."""
    runs = {}
    for jobs in ("1", "2"):
        command = [verb, "crawl.warc.gz", "-o", f"j{jobs}", "--piece-size", PIECE, "-j", jobs]
        done = run_cli(tmp_path, *command, "--report", f"j{jobs}.jsonl")
        assert done.returncode == 0, done.stderr
        runs[jobs] = (tree(tmp_path / f"j{jobs}"), (tmp_path / f"j{jobs}.jsonl").read_bytes())
    assert runs["1"] == runs["2"]
    return runs["1"]


def test_two_workers_write_the_bytes_one_writes(tmp_path: Path) -> None:
    crawl(tmp_path / "crawl.warc.gz")
    files, lines = one_and_two_workers(tmp_path, "rewrite")
    assert len(files) == PAGES + 2 and "manifest.json" in files  # the pages, the sheet, the manifest
    assert lines.count(b"\n") == PAGES * 4 + 1


def _journal_of(out: Path) -> Path:
    found = list(out.glob(".*rewriter-run/journal.jsonl")) + list(out.parent.glob(f".{out.name}.rewriter-run/*.jsonl"))
    return found[0]


def test_resume_after_a_run_stopped_part_way_finishes_the_mirror(tmp_path: Path) -> None:
    crawl(tmp_path / "crawl.warc.gz")
    (tmp_path / "page.html").write_bytes(b'<a href="x">x</a>')
    options = ["--piece-size", PIECE, "-j", "1", "--url", "http://h/", "--report", "r.jsonl"]
    whole = run_cli(tmp_path, "rewrite", "crawl.warc.gz", "page.html", "-o", "whole", *options)
    assert whole.returncode == 0, whole.stderr
    reference = tree(tmp_path / "whole")
    reference_report = (tmp_path / "r.jsonl").read_bytes()
    # The run to stop: the archive's pieces first, then an input that is a named pipe nothing
    # writes to, where it waits for ever: killed there, every piece done, its journal left.
    os.mkfifo(tmp_path / "page.html.fifo")
    os.rename(tmp_path / "page.html", tmp_path / "page.html.keep")
    os.rename(tmp_path / "page.html.fifo", tmp_path / "page.html")
    command = [sys.executable, "-m", "rewriter", "rewrite", "crawl.warc.gz", "page.html", "-o", "out", *options]
    runner = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "out" / "crawl" / "manifest.json").exists():
            assert time.monotonic() < deadline and runner.poll() is None, runner.stderr.read()  # type: ignore[union-attr]
            time.sleep(0.05)
        time.sleep(0.2)  # it waits at the pipe: nothing else can happen
        os.kill(runner.pid, signal.SIGKILL)
    finally:
        runner.kill()
        runner.wait()
    os.unlink(tmp_path / "page.html")
    os.rename(tmp_path / "page.html.keep", tmp_path / "page.html")
    # As a run killed in its third piece leaves it: two pieces in the journal, the third's first
    # file written and its second being written (a temporary), the rest and the manifest not yet.
    journal = _journal_of(tmp_path / "out")
    lines = journal.read_bytes().splitlines(keepends=True)
    pieces = [json.loads(line)["outcome"] for line in lines[1:]]
    assert len(pieces) > 4 and all(piece["shown"] == "crawl.warc.gz" for piece in pieces)
    journal.write_bytes(b"".join(lines[:3]))
    mirror = tmp_path / "out" / "crawl"
    (mirror / "manifest.json").unlink()
    manifest = json.loads(reference["crawl/manifest.json"])
    later = [entry["file"] for entry in manifest if entry["file"] and entry["offset"] >= pieces[2]["piece"][0]]
    kept = {name: (mirror / name).stat() for name in tree(mirror)}
    for name in later[2:]:
        (mirror / name).unlink()
    being_written = mirror / later[1]
    being_written.rename(being_written.with_name(f".{being_written.name}.rewriter-0123456789abcdef.tmp"))
    resumed = run_cli(tmp_path, "rewrite", "crawl.warc.gz", "page.html", "-o", "out", *options, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "done by the run that was stopped" in resumed.stderr.decode()
    assert tree(tmp_path / "out") == reference  # nothing lost, nothing twice, no temporary left
    assert (tmp_path / "r.jsonl").read_bytes() == reference_report
    first_pieces = [name for name in kept if name not in later and name != "manifest.json"]
    assert first_pieces and all(
        (mirror / name).stat().st_ino == kept[name].st_ino for name in first_pieces
    )  # what the journal said was done is not done again


def test_the_mirrors_first_pass_cuts_the_pieces_plan_warc_cuts(tmp_path: Path) -> None:
    warc = crawl(tmp_path / "crawl.warc.gz")
    plain = tmp_path / "crawl.warc"
    plain.write_bytes(gzip.decompress(warc.read_bytes()))  # one gzip stream: no cut past its start
    (tmp_path / "one.warc.gz").write_bytes(gzip.compress(plain.read_bytes()))
    for path in (warc, plain, tmp_path / "one.warc.gz"):
        for size in (1, 4096, 1 << 30):
            planned = plan_mirror(path, tmp_path / f"m{size}{path.name}", piece_size=size).pieces
            assert planned == list(plan_warc(path, piece_size=size))
