"""A WARC unpacked into a folder (``rewriter unpack crawl.warc.gz -o DIR``) is a run of the
pipeline, as one rewritten into a folder is (tests/test_warc_folder.py): it writes the folder
the library's ``unpack_warc`` writes, ``--report`` has one record per link, ``-j 2`` writes the
bytes ``-j 1`` writes, and ``--resume`` after a run killed part way finishes it as a run never
stopped would have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_cli
from test_warc_folder import PAGES, PIECE, crawl, one_and_two_workers, report, tree

from rewriter.containers.warc import unpack_warc

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "warc" / "crawl.warc.gz"


def test_unpack_is_a_run_whose_folder_is_the_librarys_and_whose_report_has_every_link(tmp_path: Path) -> None:
    (tmp_path / "crawl.warc.gz").write_bytes(FIXTURE.read_bytes())
    done = run_cli(tmp_path, "unpack", "crawl.warc.gz", "-o", "out/", "--report", "links.jsonl", "-j", "2")
    assert done.returncode == 0, done.stderr
    assert "1 input: 1 rewritten" in done.stderr.decode()  # the run's summary
    unpack_warc(FIXTURE, tmp_path / "library")
    assert tree(tmp_path / "out") == tree(tmp_path / "library")  # no journal or temporary left either
    said = report(tmp_path / "links.jsonl")
    assert said and all(record["file"] == "crawl.warc.gz" for record in said)
    # The records that are no web page (issue 32) are said once, as a problem that fails nothing; the rest are links.
    (others,) = [record for record in said if "problem" in record]
    assert others["code"] == "not-a-document" and others["detail"].endswith("no web page, not written")
    records = [record for record in said if "problem" not in record]
    relinked = {record["original"] for record in records if record["status"] == "relinked"}
    assert relinked and all(
        not str(record["resolved"]).startswith("http") for record in records if record["status"] == "relinked"
    )


def test_two_workers_unpack_the_bytes_one_unpacks(tmp_path: Path) -> None:
    warc = crawl(tmp_path / "crawl.warc.gz")
    files, _ = one_and_two_workers(tmp_path, "unpack")
    assert len(files) == 2 * PAGES + 2 and "manifest.json" in files  # the pages, their images, the sheet
    unpack_warc(warc, tmp_path / "library")
    assert files == tree(tmp_path / "library")
    page = files["e.org/d/p3.html"].decode()
    assert 'href="p4.html"' in page and 'src="i3.png"' in page and 'href="../css/s.css"' in page  # relinked


# Run as `python -c`: the run is killed (SIGKILL, as kill -9) in the third piece, after one file of it.
_KILLED = """
import os, signal, sys
import rewriter.containers.warc as warc
from rewriter.cli.entry import main

write = warc.write_mirror_piece

def killed(plan, piece, **options):
    for count, record in enumerate(write(plan, piece, **options)):
        if piece is not None and piece.number == 2 and count == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        yield record

warc.write_mirror_piece = killed
sys.exit(main(sys.argv[1:]))
"""


def test_resume_after_a_run_killed_part_way_finishes_the_unpacking(tmp_path: Path) -> None:
    crawl(tmp_path / "crawl.warc.gz")
    options = ["--piece-size", PIECE, "--report", "r.jsonl"]
    whole = run_cli(tmp_path, "unpack", "crawl.warc.gz", "-o", "whole", "-j", "1", *options)
    assert whole.returncode == 0, whole.stderr
    reference, reference_report = tree(tmp_path / "whole"), (tmp_path / "r.jsonl").read_bytes()
    (tmp_path / "r.jsonl").unlink()
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED, "unpack", "crawl.warc.gz", "-o", "out", "-j", "1", *options],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    # Killed: the journal kept, beside the folder; the manifest not written; some pages not yet.
    journal = tmp_path / "out" / ".rewriter-run" / "journal.jsonl"  # in the folder, made or not yet
    done = [json.loads(line)["outcome"] for line in journal.read_bytes().splitlines()[1:]]
    assert [outcome["piece"][3] for outcome in done] == [0, 1]
    assert not (tmp_path / "r.jsonl").exists() and not (tmp_path / "out" / "manifest.json").exists()
    resumed = run_cli(tmp_path, "unpack", "crawl.warc.gz", "-o", "out", "-j", "2", *options, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "done by the run that was stopped" in resumed.stderr.decode()
    assert tree(tmp_path / "out") == reference  # nothing lost, nothing twice, no temporary left
    assert (tmp_path / "r.jsonl").read_bytes() == reference_report


def test_a_message_unpacked_says_the_run_options_it_does_not_use(tmp_path: Path) -> None:
    (tmp_path / "page.mhtml").write_bytes((FIXTURE.parents[1] / "mail" / "page.mhtml").read_bytes())
    done = run_cli(tmp_path, "unpack", "page.mhtml", "-o", "out", "-j", "2", "--report", "r.jsonl")
    assert done.returncode == 0, done.stderr
    assert "rewriter unpack: -j, --report: for a web archive; page.mhtml is not one, so ignored" in done.stderr.decode()
    assert (tmp_path / "out" / "index.html").exists() and not (tmp_path / "r.jsonl").exists()
