"""rewriter.run.batch through its Python API: planning, symbolic links, workers, atomic writes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from rewriter.cli.config import ConfigError, load
from rewriter.problems import said, said_all
from rewriter.run.batch import Job, Settings, plan, run, run_job, totals, write_atomically
from rewriter.run.plan import WHOLE_FILE

PAGE = b"<a href=x.html>x</a>"
SETTINGS = Settings(url="http://h/d/")


def _tree(root: Path) -> None:
    (root / "a" / "b").mkdir(parents=True)
    (root / "index.html").write_bytes(PAGE)
    (root / "a" / "page.htm").write_bytes(PAGE)
    (root / "a" / "b" / "style.css").write_bytes(b"p{background:url(i.png)}")
    (root / "a" / "notes.txt").write_bytes(b"<a href=x>")  # not a default include


def test_plan_mirrors_one_folder_into_the_output(tmp_path: Path) -> None:
    _tree(tmp_path / "site")
    jobs, problems = plan([str(tmp_path / "site")], str(tmp_path / "out"))
    assert problems == []
    assert [Path(job.target).relative_to(tmp_path / "out").as_posix() for job in jobs] == [  # type: ignore[arg-type]
        "index.html",
        "a/page.htm",
        "a/b/style.css",
    ]


def test_plan_puts_each_of_several_inputs_under_its_own_name(tmp_path: Path) -> None:
    _tree(tmp_path / "site")
    (tmp_path / "one.html").write_bytes(PAGE)
    jobs, _ = plan([str(tmp_path / "site"), str(tmp_path / "one.html")], str(tmp_path / "out"))
    targets = sorted(Path(job.target).relative_to(tmp_path / "out").as_posix() for job in jobs)  # type: ignore[arg-type]
    assert targets == ["one.html", "site/a/b/style.css", "site/a/page.htm", "site/index.html"]


def test_plan_globs_match_paths_and_names(tmp_path: Path) -> None:
    _tree(tmp_path)
    jobs, _ = plan([str(tmp_path)], in_place=True, include=["*.HTML", "a/*"], exclude=["a/b/*"])
    # a/notes.txt holds markup, but a .txt is plain text: never a page (rewriter.containers.formats).
    assert sorted(Path(job.source).relative_to(tmp_path).as_posix() for job in jobs) == ["a/page.htm", "index.html"]


def test_plan_names_what_cannot_be_done(tmp_path: Path) -> None:
    (tmp_path / "p.html").write_bytes(PAGE)
    jobs, problems = plan([str(tmp_path / "missing.html"), str(tmp_path / "p.html")], str(tmp_path / "out"))
    assert [job.shown for job in jobs] == [str(tmp_path / "p.html")]
    # Problem records: the input first in where, said on standard error as "rewriter: NAME: detail"
    assert [(p.code, p.where, p.detail) for p in problems] == [
        ("input", (str(tmp_path / "missing.html"),), "no such file or folder")
    ]
    assert said_all(problems) == [f"rewriter: {tmp_path / 'missing.html'}: no such file or folder"]
    _, problems = plan([str(tmp_path)])
    assert said_all(problems) == [f"rewriter: {tmp_path}: a folder needs -o DIR or --in-place"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_in_place_never_replaces_a_symbolic_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside.html"
    outside.write_bytes(PAGE)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "real.html").write_bytes(PAGE)
    (tree / "inner.html").symlink_to(tree / "real.html")
    (tree / "out.html").symlink_to(outside)
    (tree / "linked").symlink_to(tmp_path, target_is_directory=True)
    jobs, problems = plan([str(tree)], in_place=True)
    assert [Path(job.source).name for job in jobs] == ["real.html"]
    outcomes = list(run(jobs, SETTINGS))
    assert [outcome.state for outcome in outcomes] == ["rewritten"]
    assert (tree / "inner.html").is_symlink() and (tree / "out.html").is_symlink()
    assert outside.read_bytes() == PAGE  # outside the tree: untouched
    _, problems = plan([str(tree / "inner.html")], in_place=True)
    assert problems and "symbolic link" in problems[0]


def test_outcomes_come_in_plan_order_whatever_the_workers(tmp_path: Path) -> None:
    for index in range(12):
        (tmp_path / f"{index:02}.html").write_bytes(PAGE * (1 + 40 * (index % 4)))
    (tmp_path / "07.html").write_bytes(b"\x89PNG\r\n\x1a\n\x00")  # binary: copied, whatever its name
    # Over WHOLE_FILE: the planner reads its head only, and its job opens it (a small page's
    # job has its bytes from the planner, and a page gone since is rewritten as planned).
    (tmp_path / "09.html").write_bytes(PAGE * (WHOLE_FILE // len(PAGE) + 1))
    outputs = {}
    for workers in (1, 2):
        jobs, _ = plan([str(tmp_path)], str(tmp_path.parent / f"out{workers}"), include=["*.html"], copy_others=True)
        (tmp_path / "09.html").rename(tmp_path / "09.gone")  # fails: gone since it was planned
        outcomes = list(run(jobs, Settings(url="http://h/", records=True), workers))
        (tmp_path / "09.gone").rename(tmp_path / "09.html")
        assert [outcome.shown for outcome in outcomes] == [job.shown for job in jobs]
        outputs[workers] = [(o.state, o.messages, o.records, o.rewritten) for o in outcomes]
    assert outputs[1] == outputs[2]
    states = [state for state, *_ in outputs[1]]
    assert (states.count("failed"), states.count("copied"), len(states)) == (1, 1, 12)


def test_a_failure_is_an_outcome_not_an_exception(tmp_path: Path) -> None:
    outcome = run_job(Job(str(tmp_path / "gone.html"), str(tmp_path / "o.html"), "gone.html"), SETTINGS)
    assert outcome.state == "failed" and not outcome.ok
    assert said(outcome.messages[0]).startswith("rewriter: gone.html: No such file or directory")
    assert not (tmp_path / "o.html").exists()


def test_unchanged_in_place_is_not_written_and_backup_keeps_the_old_bytes(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(b"<a href=http://x/>absolute</a>")
    os.utime(page, ns=(1_000_000_000, 1_000_000_000))
    outcome = run_job(Job(str(page), str(page), "p.html", in_place=True), Settings(url="http://h/", backup=".orig"))
    assert outcome.state == "unchanged" and page.stat().st_mtime_ns == 1_000_000_000
    assert not (tmp_path / "p.html.orig").exists()
    page.write_bytes(PAGE)
    page.chmod(0o640)
    outcome = run_job(Job(str(page), str(page), "p.html", in_place=True), Settings(url="http://h/", backup=".orig"))
    assert outcome.state == "rewritten"
    assert page.read_bytes() == b"<a href=http://h/x.html>x</a>"
    assert (tmp_path / "p.html.orig").read_bytes() == PAGE
    assert stat.S_IMODE(page.stat().st_mode) == 0o640
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.html", "p.html.orig"]  # no temporary left


def test_write_atomically_leaves_nothing_behind_when_it_fails(tmp_path: Path) -> None:
    target = tmp_path / "folder-in-the-way"
    target.mkdir()
    with pytest.raises(OSError):
        write_atomically(target, b"x")
    assert list(tmp_path.iterdir()) == [target]


def test_totals_add_up(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_bytes(PAGE + b"<a href=#top>t</a>")
    (tmp_path / "b.html").write_bytes(b"<img src=y.png>")
    jobs, _ = plan([str(tmp_path)], str(tmp_path / "out"))
    figures = totals(run(jobs, SETTINGS))
    assert figures == {
        "files": 2,
        "rewritten_files": 2,
        "unchanged_files": 0,
        "failed_files": 0,
        "relative_files": 0,
        "rewritten": 2,
        "kept": 1,
        "local": 0,
        "relative": 0,
        "no_base": 0,
        "bytes": len(PAGE) + 18 + 15,
        "copied_files": 0,
    }


def test_config_file_precedence_and_refusals(tmp_path: Path) -> None:
    assert load(tmp_path) == (None, {})
    (tmp_path / "pyproject.toml").write_text('[tool.rewriter]\nrules = "rfc2396"\n')
    assert load(tmp_path)[1] == {"rules": "rfc2396"}
    (tmp_path / "rewriter.toml").write_text('rules = "whatwg"\nno-lazy = true\n')
    assert load(tmp_path)[1] == {"rules": "whatwg", "no_lazy": True}  # rewriter.toml first
    (tmp_path / "rewriter.toml").write_text("in-place = true\n")
    with pytest.raises(ConfigError, match="'in-place' can only be given on the command line"):
        load(tmp_path)
    (tmp_path / "rewriter.toml").write_text("rules = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(tmp_path)


def test_a_document_over_the_size_limit_is_copied_unchanged_and_named(tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    page.write_bytes(PAGE + b"y" * 5000)
    outcome = run_job(Job(str(page), str(tmp_path / "out.html"), "big.html"), Settings(url="http://h/", max_size=4096))
    assert outcome.state == "failed" and not outcome.ok
    assert said_all(outcome.messages) == [
        "rewriter: big.html: larger than 4,096 bytes: copied unchanged, not rewritten (see --max-size)"
    ]
    assert (tmp_path / "out.html").read_bytes() == page.read_bytes()
    outcome = run_job(Job(str(page), str(page), "big.html", in_place=True), Settings(url="http://h/", max_size=4096))
    assert outcome.state == "failed" and page.read_bytes() == PAGE + b"y" * 5000  # in place: left alone


@pytest.mark.parametrize("told", [0, 10, 70_000, 100_000, 100_001, 200_000])
@pytest.mark.parametrize("limit", [4096, 100_000, 1 << 30])
def test_a_file_is_read_whole_up_to_the_limit_whatever_size_its_status_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, told: int, limit: int
) -> None:
    # The read is sized by the status taken when the file was opened; a file that grew (or
    # shrank) since must still be read whole, and one over the limit still be named.
    page = tmp_path / "p.html"
    page.write_bytes(PAGE + b"y" * (100_000 - len(PAGE)))
    real_fstat = os.fstat

    def fstat(fd: int) -> os.stat_result:
        status = real_fstat(fd)
        return os.stat_result((*status[:6], told, *status[7:]))

    monkeypatch.setattr(os, "fstat", fstat)
    outcome = run_job(Job(str(page), str(tmp_path / "out.html"), "p.html"), Settings(url="http://h/", max_size=limit))
    if limit < 100_000:
        assert outcome.state == "failed" and "larger than" in outcome.messages[0]
        assert (tmp_path / "out.html").read_bytes() == page.read_bytes()
    else:
        assert (outcome.state, outcome.bytes_in) == ("rewritten", 100_000)
        assert (tmp_path / "out.html").read_bytes() == page.read_bytes().replace(b"x.html", b"http://h/x.html", 1)


def test_an_mbox_message_over_the_limit_streams_through_and_the_others_are_rewritten(tmp_path: Path) -> None:
    big = b"From a Sat Jan  1 00:00:00 2000\nContent-Type: text/html\n\n<a href=x>" + b"z" * 5000 + b"\n"
    small = b"From b Sat Jan  1 00:00:00 2000\nContent-Type: text/html\nContent-Location: http://h/\n\n<a href=y>\n"
    mbox = tmp_path / "a.mbox"
    mbox.write_bytes(small + big + small)
    outcome = run_job(Job(str(mbox), str(tmp_path / "out.mbox"), "a.mbox"), Settings(max_size=4096))
    assert (tmp_path / "out.mbox").read_bytes() == (small + big + small).replace(b"href=y", b"href=http://h/y")
    assert said_all(outcome.messages) == [
        "rewriter: a.mbox: message 2: larger than 4,096 bytes (5,068): copied unchanged, not rewritten"
    ]
    assert not outcome.ok and outcome.rewritten == 2


@pytest.mark.parametrize(
    "document",
    [
        b"<base href=../b/><a href=x><a href=#f><a href=http://o/y><img src=' z '><a href='&#47;q'><a href>",
        b"<a href=x><img srcset='a 1x, b 2x'><p style='background:url(c)'>",  # no base: all left relative
        b"Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/html\nContent-Base: http://h/m/\n\n"
        b"<a href=x><a href=http://o/>\n--B\nContent-Type: text/html\n\n<a href=y><a href=#t>\n--B--\n",
    ],
)
@pytest.mark.parametrize("url", [None, "http://h/d/p.html", "mailto:x@y"])  # mailto: leaves x unresolvable
@pytest.mark.parametrize("records", [False, True])
def test_tally_counts_and_names_what_every_link_says(document: bytes, url: str | None, records: bool) -> None:
    # tally counts from the engines' status counts and builds only the links left relative:
    # the same counts and messages, in the same order, as reading every link.
    from rewriter.run.batch import Outcome, located_links, process, tally

    settings = Settings(url=url, records=records)
    _, result = process(document, "doc", settings)
    outcome = Outcome("doc")
    tally(outcome, result, settings, {})
    _, fresh = process(document, "doc", settings)
    every = located_links(fresh)
    relative = [(part, link) for part, link in every if link.status in ("no-base", "unresolvable")]
    assert outcome.rewritten == sum(link.status == "rewritten" for _, link in every)
    assert outcome.relative == len(relative)
    assert outcome.kept == len(every) - outcome.rewritten - outcome.relative
    assert outcome.ok is not relative
    assert outcome.no_base == sum(link.status == "no-base" for _, link in relative)
    assert not any(" at bytes " in message for message in outcome.messages + outcome.warnings)
    named = outcome.details  # each link left relative, for -v
    assert len(named) == len(relative)
    for message, (part, link) in zip(named, relative, strict=True):
        assert f"{link.original!r} at bytes {link.start}-{link.end}: {link.status}" in message
        assert (f"part {part}: " in message) is bool(part)
    assert [(record["start"], record["status"]) for record in outcome.records] == (
        [(link.start, link.status) for _, link in every] if records else []
    )


def test_a_batch_of_pages_never_imports_the_mime_engine(tmp_path: Path) -> None:
    """Telling a file's format (rewriter.containers.formats) imports no engine: pages alone never pay
    for the MIME engine, neither in -j 1 nor before -j 2 forks; a
    message among them still gets it."""
    (tmp_path / "page.html").write_bytes(b'<a href="x.html">x</a>')
    (tmp_path / "mail.eml").write_bytes(b"MIME-Version: 1.0\nContent-Type: text/html\n\n<a href=y>y</a>\n")
    script = (
        "import sys\n"
        "from rewriter.run.batch import Settings, warm_up, plan, run\n"
        "warm_up()\n"
        "ENGINES = ('rewriter.mime.message', 'rewriter.containers.mailbox')\n"
        "def engines(): return sorted(name for name in ENGINES if name in sys.modules)\n"
        "jobs, _ = plan([sys.argv[1]], sys.argv[2], include=['*.html'])\n"
        "list(run(jobs, Settings(url='http://example.org/'), 1))\n"
        "print(engines())\n"
        "jobs, _ = plan([sys.argv[1]], sys.argv[2])\n"
        "list(run(jobs, Settings(url='http://example.org/'), 1))\n"
        "print(engines())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(tmp_path / "out")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "['rewriter.mime.message']"]
    assert b'href="http://example.org/x.html"' in (tmp_path / "out" / "page.html").read_bytes()


def test_the_mailbox_module_still_offers_format_detection() -> None:
    import rewriter.containers.formats
    import rewriter.containers.mailbox

    assert rewriter.containers.mailbox.detect_format is rewriter.containers.formats.detect_format
    assert rewriter.containers.mailbox.is_warc is rewriter.containers.formats.is_warc
