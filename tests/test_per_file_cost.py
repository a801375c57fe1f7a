"""What a file costs a run besides its links (issue 33): a small page is opened and read once,
by the planner, and its job takes its bytes; whether a reference names a local copy is
answered from one listing of each folder; what a page changed since its plan is in place."""

from __future__ import annotations

import builtins
import io
import os
import re
from pathlib import Path

import pytest
from conftest import run_cli

import rewriter
from rewriter.disk import listings as listings_module
from rewriter.run.batch import Settings, plan, run
from rewriter.run.jobs import Outcome, outcome_json, outcome_problem
from rewriter.run.plan import WHOLE_FILE, read_ahead, told

URL = "http://example.org/site/"
PAGE = (
    b'<!doctype html><link rel=stylesheet href="style.css"><a href="b.html#x">b</a><img src="img/i.png">'
    b'<a href="gone/missing.html">not kept</a>'
)


def _site(root: Path) -> None:
    (root / "img").mkdir(parents=True)
    (root / "a.html").write_bytes(PAGE)
    (root / "b.html").write_bytes(PAGE.replace(b"b.html", b"a.html"))
    (root / "style.css").write_bytes(b"p{background:url(img/i.png)}")
    (root / "img" / "i.png").write_bytes(b"\x89PNG\r\n\x1a\n")


def test_a_small_page_is_opened_once_by_the_planner_and_its_job_takes_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _site(tmp_path / "site")
    page = str(tmp_path / "site" / "a.html")
    opened: list[str] = []
    real_os_open, real_open, real_io_open = os.open, builtins.open, io.open

    def counted(opener):  # every way a file is opened, by its path
        def open_counted(file, *args, **kwargs):
            if isinstance(file, (str, os.PathLike)):
                opened.append(os.fspath(file))
            return opener(file, *args, **kwargs)

        return open_counted

    monkeypatch.setattr(os, "open", counted(real_os_open))
    monkeypatch.setattr(builtins, "open", counted(real_open))
    monkeypatch.setattr(io, "open", counted(real_io_open))
    jobs, problems = plan([str(tmp_path / "site")], str(tmp_path / "out"), include=["*.html"])
    outcomes = list(run(jobs, Settings(url=URL)))
    monkeypatch.undo()
    assert not problems and [outcome.state for outcome in outcomes] == ["rewritten", "rewritten"]
    assert opened.count(page) == 1
    assert b'href="http://example.org/site/gone/missing.html"' in (tmp_path / "out" / "a.html").read_bytes()
    job = next(job for job in jobs if job.source == page)
    assert job.data == PAGE and job.status is not None and job.status.st_size == len(PAGE)


def test_the_bytes_stay_with_the_plan_in_this_process_and_workers_read_their_files(tmp_path: Path) -> None:
    _site(tmp_path / "site")
    jobs, _ = plan([str(tmp_path / "site")], str(tmp_path / "out"), include=["*.html"])
    (tmp_path / "site" / "a.html").unlink()  # gone after its plan: a job that opens it fails
    serial = {Path(outcome.shown).name: outcome for outcome in run(jobs, Settings(url=URL))}
    assert serial["a.html"].state == "rewritten"  # its bytes came with the plan
    workers = {Path(outcome.shown).name: outcome for outcome in run(jobs, Settings(url=URL), 2)}
    assert workers["a.html"].state == "failed"  # not carried to another process: it read its file
    assert workers["b.html"].state == "rewritten"


def test_a_page_over_the_whole_file_size_is_read_by_its_job(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    large = PAGE + b"<p>" + b"x" * WHOLE_FILE
    (tmp_path / "site" / "large.html").write_bytes(large)
    (tmp_path / "site" / "small.html").write_bytes(PAGE)
    jobs, _ = plan([str(tmp_path / "site")], str(tmp_path / "out"))
    data = {Path(job.source).name: job.data for job in jobs}
    assert data == {"large.html": None, "small.html": PAGE}
    assert [outcome.state for outcome in run(jobs, Settings(url=URL))] == ["rewritten", "rewritten"]
    assert (tmp_path / "out" / "large.html").read_bytes() == rewriter.rewrite(large, url=URL + "large.html").output


def test_in_place_a_page_changed_since_its_plan_is_left_as_it_is(tmp_path: Path) -> None:
    _site(tmp_path / "site")
    jobs, _ = plan([str(tmp_path / "site")], in_place=True, include=["*.html"])
    changed = b"<a href=changed.html>written by another program</a>"
    (tmp_path / "site" / "a.html").write_bytes(changed)
    outcomes = {Path(outcome.shown).name: outcome for outcome in run(jobs, Settings(url=URL))}
    assert outcomes["a.html"].state == "failed"
    assert "changed by another process" in outcomes["a.html"].messages[0]
    assert (tmp_path / "site" / "a.html").read_bytes() == changed
    assert outcomes["b.html"].state == "rewritten"


def test_each_folder_is_listed_once_for_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _site(tmp_path / "site")
    for number in range(5):
        (tmp_path / "site" / f"p{number}.html").write_bytes(PAGE)
    listed: list[str] = []
    real = os.scandir

    def scandir(path):
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(listings_module.os, "scandir", scandir)
    jobs, _ = plan([str(tmp_path / "site")], str(tmp_path / "out"), include=["*.html"])
    monkeypatch.setattr(listings_module.os, "scandir", scandir)  # the planner's walk is not counted
    listed.clear()
    outcomes = list(run(jobs, Settings(url=URL)))
    assert all(outcome.local == 3 for outcome in outcomes)  # style.css, b.html, img/i.png: the site's own
    assert sorted(Path(path).name for path in listed) == ["img", "site"]


def test_a_link_inside_the_tree_is_followed_and_one_out_of_it_is_not(tmp_path: Path) -> None:
    _site(tmp_path / "site")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "site" / "pictures").symlink_to(tmp_path / "site" / "img")  # inside the tree
    (tmp_path / "site" / "outside").symlink_to(tmp_path / "elsewhere")  # out of it
    page = b'<img src="pictures/i.png"><img src="outside/secret.png"><img src="img/i.png">'
    (tmp_path / "site" / "c.html").write_bytes(page)
    jobs, _ = plan([str(tmp_path / "site" / "c.html")], str(tmp_path / "out" / "c.html"))
    [outcome] = run(jobs, Settings(url=URL, records=True))
    statuses = {record["original"]: record["status"] for record in outcome.records}
    assert statuses == {"pictures/i.png": "local", "outside/secret.png": "rewritten", "img/i.png": "local"}


def test_a_plan_for_other_processes_reads_only_heads(tmp_path: Path) -> None:
    _site(tmp_path / "site")
    for read_whole, expected in ((True, PAGE), (False, None)):
        jobs, _ = plan([str(tmp_path / "site")], str(tmp_path / "out"), include=["*.html"], read_whole=read_whole)
        assert {Path(job.source).name: job.data for job in jobs}["a.html"] == expected
        assert all(job.format == "html" for job in jobs)  # told what it is either way


def test_a_worker_reads_its_batch_ahead_as_the_planner_would_have(tmp_path: Path) -> None:
    """read_ahead gives each small document of a heads-only plan its bytes and its descriptor's
    status, as a plan that reads whole would; a file no longer what the planner told, a link in
    place of a file rewritten in place, and a large file are left to their jobs; and a batch run
    from those jobs writes what the serial run writes."""
    _site(tmp_path / "site")
    (tmp_path / "site" / "big.html").write_bytes(b"<p>" + b" " * WHOLE_FILE)
    (tmp_path / "site" / "changed.html").write_bytes(PAGE)
    jobs, _ = plan([str(tmp_path / "site")], str(tmp_path / "out"), include=["*.html"], read_whole=False)
    whole, _ = plan([str(tmp_path / "site")], str(tmp_path / "whole"), include=["*.html"])
    (tmp_path / "site" / "changed.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))  # an image since
    ahead = {Path(job.source).name: job for job in read_ahead(jobs)}
    read = {Path(job.source).name: job for job in whole}
    assert ahead["a.html"].data == read["a.html"].data == PAGE
    status = ahead["a.html"].status
    assert status is not None and status.st_ino == os.stat(ahead["a.html"].source).st_ino
    assert ahead["big.html"].data is None and ahead["changed.html"].data is None
    (tmp_path / "site" / "changed.html").write_bytes(PAGE)
    in_place, _ = plan([str(tmp_path / "site")], in_place=True, include=["a.html"], read_whole=False)
    assert [job.data for job in read_ahead(in_place)] == [PAGE]
    os.replace(tmp_path / "site" / "a.html", tmp_path / "a.html")
    (tmp_path / "site" / "a.html").symlink_to(tmp_path / "a.html")
    assert [job.data for job in read_ahead(in_place)] == [None]  # in place, never through a link
    os.replace(tmp_path / "a.html", tmp_path / "site" / "a.html")
    jobs, _ = plan([str(tmp_path / "site")], str(tmp_path / "out"), include=["*.html"], read_whole=False)
    run(jobs, Settings(url=URL))
    run(whole, Settings(url=URL))
    for path in (tmp_path / "whole").rglob("*.html"):
        assert (tmp_path / "out" / path.relative_to(tmp_path / "whole")).read_bytes() == path.read_bytes()


def test_a_plan_for_other_processes_leaves_small_files_to_their_jobs(tmp_path: Path) -> None:
    """With ``untold`` the planner reads no small file: each job tells what its file is where it
    runs (``told``), as the planner would have: a document with its bytes, a file that is none
    copied with the others or passed over; a large file, and every file in place, the planner
    still tells."""
    _site(tmp_path / "site")
    fake = b"\x89PNG\r\n\x1a\n" + bytes(64)  # an image under a page's name
    (tmp_path / "site" / "fake.html").write_bytes(fake)
    (tmp_path / "site" / "big.html").write_bytes(b"<p>" + b" " * WHOLE_FILE)
    site, out = str(tmp_path / "site"), str(tmp_path / "out")
    jobs, _ = plan([site], out, include=["*.html"], read_whole=False, untold=True)
    by_name = {Path(job.source).name: job for job in jobs}
    assert sorted(by_name) == ["a.html", "b.html", "big.html", "fake.html"]
    assert {name: (job.format, job.untold) for name, job in by_name.items()} == {
        "a.html": (None, "pass"),
        "b.html": (None, "pass"),
        "big.html": ("html", None),
        "fake.html": (None, "pass"),
    }
    assert by_name["fake.html"].size == len(fake)  # what sizes its batch, from the walk
    page = told(by_name["a.html"])
    assert (page.format, page.untold, page.data, page.copy) == ("html", None, PAGE, False)
    assert told(page) is page  # told once
    image = told(by_name["fake.html"])
    assert (image.format, image.untold, image.copy) == ("other", "passed", False)
    assert list(run([by_name["fake.html"]], Settings(url=URL))) == []  # passed over: no outcome, as if never planned
    assert not (tmp_path / "out" / "fake.html").exists()
    passed = outcome_json(Outcome("fake.html", state="passed"))  # a killed run's journal holds it: resumed
    assert outcome_problem(passed, tmp_path / "report", piece=False) is None
    copying, _ = plan([site], out, include=["*.html"], copy_others=True, read_whole=False, untold=True)
    image = told(next(job for job in copying if job.source.endswith("fake.html")))
    assert (image.format, image.untold, image.copy) == ("other", None, True)
    in_place, _ = plan([site], in_place=True, include=["*.html"], read_whole=False, untold=True)
    assert all(job.untold is None and job.format is not None for job in in_place)
    (tmp_path / "site" / "b.html").unlink()  # gone since the plan: its job says why
    [outcome] = run([by_name["b.html"]], Settings(url=URL))
    assert outcome.state == "failed" and "No such file" in " ".join(outcome.messages)


@pytest.mark.parametrize("others", [[], ["--no-copy-others"]])
def test_worker_processes_tell_small_files_as_the_serial_run_does(tmp_path: Path, others: list[str]) -> None:
    """-j 2 leaves the small files to the workers (``Job.untold``): the output tree, the links
    said and the summary's counts are the serial run's, a file that is no document copied or
    passed over alike."""
    _site(tmp_path / "site")
    (tmp_path / "site" / "fake.html").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    for number in range(30):
        (tmp_path / "site" / f"p{number}.html").write_bytes(PAGE)
    said = {}
    for jobs in ("1", "2"):
        done = run_cli(
            tmp_path, "rewrite", "site", "-o", f"out{jobs}", "-j", jobs, "--url", URL, "--include", "*.html", *others
        )
        assert done.returncode == 0, done.stderr
        said[jobs] = re.sub(rb" in [\d.]+ s\n", b"\n", done.stderr).replace(b"out2", b"out1")
        files = sorted(path.relative_to(tmp_path / f"out{jobs}") for path in (tmp_path / f"out{jobs}").rglob("*"))
        assert (Path("fake.html") in files) == (not others)
        assert Path("img/i.png") in files or others
    assert said["2"] == said["1"]
    for path in (tmp_path / "out1").rglob("*"):
        if path.is_file():
            assert (tmp_path / "out2" / path.relative_to(tmp_path / "out1")).read_bytes() == path.read_bytes()
