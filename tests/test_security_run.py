"""A run touches nothing outside its tree and trusts no file it did not write (the work
folder, the journal, the temporaries of a killed run).

- The work folder ``.rewriter-run/`` lies in the tree rewritten in place (untrusted) or in the
  output folder: a symbolic link planted there (the folder itself, its journal, its
  ``pieces/``) is named and refused, exit 2; nothing is written, replaced or removed where it
  points.
- The journal is untrusted input: an entry is checked field by field; one that names a file
  that is not the run's own (a report file anywhere) is refused; forged journals of every
  shape (wrong types, missing fields, huge values, ``..``, absolute paths, NUL bytes, lines
  that are not JSON, deep nesting) are refused with exit 2 and the line, never a traceback;
  only an unfinished last line (a run killed while writing it) is passed over.
- The journal's fingerprint holds the digest of the ``--url-map`` file and of the
  configuration file the run read: ``--resume`` after either changed is refused.
- The temporary files a killed run left where a run writes are removed by the next run,
  resumed or not, and counted on standard error; a link, or a file not named by our pattern,
  is left alone.

Genuine journals come from a run stopped before its end: the command line in a subprocess
whose ``Journal.close`` keeps the work folder (what a ``kill -9`` after the last job leaves).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rewriter.disk.files import Refused, temporary_name
from rewriter.run.batch import outcome_from_json
from rewriter.run.journal import Journal, JournalError

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symbolic links")
URL = "http://h/base/"


def rewriter(cwd: Path, *argv: str, stopped: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """Run the tool as a user would, never a traceback; *stopped*: the run keeps its work
    folder, as one killed after its last job would."""
    code = "from rewriter.cli.commands import entry_point; entry_point()"
    if stopped:
        code = (
            textwrap.dedent(
                """
            from rewriter.run.journal import Journal
            Journal.close = lambda self, finished: self.stream.close()
            """
            )
            + code
        )
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def site_of(folder: Path, pages: int = 4) -> Path:
    site = folder / "site"
    for number in range(pages):
        path = site / f"d{number % 2}" / f"p{number}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f'<a href="x{number}.html">x</a>'.encode())
    return site


def contents(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


# --------------------------------------------------------------------------
# The work folder follows no symbolic link
# --------------------------------------------------------------------------


@posix_only
def test_a_journal_planted_as_a_link_out_of_the_tree_is_refused(tmp_path: Path) -> None:
    site = site_of(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_bytes(b"precious")
    (site / ".rewriter-run").mkdir()
    (site / ".rewriter-run" / "journal.jsonl").symlink_to("../../outside/x")
    before = contents(site)
    done = rewriter(tmp_path, "rewrite", "site", "--in-place", "-j", "2", "--url", URL)
    assert done.returncode == 2, done.stderr
    assert "site/.rewriter-run/journal.jsonl is a symbolic link" in done.stderr.decode()
    assert (outside / "x").read_bytes() == b"precious"
    assert contents(site) == before, "nothing is done when the run cannot keep its journal"


@posix_only
@pytest.mark.parametrize("where", ["in-place", "output"])
def test_a_work_folder_planted_as_a_link_is_refused_and_nothing_is_removed_through_it(
    tmp_path: Path, where: str
) -> None:
    site = site_of(tmp_path)
    elsewhere = tmp_path / "dir"
    (elsewhere / "pieces").mkdir(parents=True)
    (elsewhere / "pieces" / "important").write_bytes(b"keep")
    (elsewhere / "journal.jsonl").write_bytes(b"mine")
    tree = site if where == "in-place" else tmp_path / "out"
    tree.mkdir(exist_ok=True)
    (tree / ".rewriter-run").symlink_to(elsewhere)
    options = ["--in-place"] if where == "in-place" else ["-o", "out"]
    done = rewriter(tmp_path, "rewrite", "site", *options, "-j", "2", "--url", URL)
    assert done.returncode == 2, done.stderr
    assert ".rewriter-run is a symbolic link" in done.stderr.decode()
    assert contents(elsewhere) == {"journal.jsonl": b"mine", "pieces/important": b"keep"}
    assert (tree / ".rewriter-run").is_symlink()


@posix_only
@pytest.mark.parametrize("resume", [False, True])
def test_a_pieces_folder_planted_as_a_link_is_refused(tmp_path: Path, resume: bool) -> None:
    site = site_of(tmp_path)
    elsewhere = tmp_path / "dir"
    elsewhere.mkdir()
    (elsewhere / "important").write_bytes(b"keep")
    work = site / ".rewriter-run"
    work.mkdir()
    (work / "pieces").symlink_to(elsewhere)
    done = rewriter(tmp_path, "rewrite", "site", "--in-place", "-j", "2", "--url", URL, *["--resume"] * resume)
    assert done.returncode == 2, done.stderr
    assert "site/.rewriter-run/pieces is a symbolic link" in done.stderr.decode()
    assert contents(elsewhere) == {"important": b"keep"}


@posix_only
def test_a_journal_with_another_name_outside_the_tree_is_not_appended_to(tmp_path: Path) -> None:
    # A hard link: the same file under a name outside the tree; appending would write there.
    site = site_of(tmp_path)
    rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL, stopped=True)
    journal = tmp_path / "out" / ".rewriter-run" / "journal.jsonl"
    os.link(journal, tmp_path / "outside")
    before = journal.read_bytes()
    (site / "d0" / "p0.html").write_bytes(b"<a href=changed>")  # a job to do again, and record
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL, "--resume")
    assert done.returncode == 2, done.stderr
    assert "has 2 names (hard links)" in done.stderr.decode()
    assert (tmp_path / "outside").read_bytes() == before


# --------------------------------------------------------------------------
# The journal is untrusted input
# --------------------------------------------------------------------------


def stopped_run(tmp_path: Path, *options: str) -> tuple[Path, list[dict[str, object]]]:
    """A run over the site that stopped after its last job: its journal, and its entries."""
    site_of(tmp_path)
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL, *options, stopped=True)
    assert done.returncode == 0, done.stderr
    journal = tmp_path / "out" / ".rewriter-run" / "journal.jsonl"
    lines = journal.read_bytes().splitlines()
    assert len(lines) == 5, lines  # the header and the four pages
    return journal, [json.loads(line) for line in lines[1:]]


def resume(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[bytes]:
    return rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL, *options, "--resume")


def test_a_journal_entry_naming_any_file_is_refused_and_never_copied_into_the_report(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b'{"secret": "the contents of a file outside the run"}\n')
    journal, entries = stopped_run(tmp_path, "--report", "first.jsonl")
    for planted in (
        str(secret),
        "../../secret.txt",
        str(journal.parent / "reports" / ".." / ".." / ".." / "secret.txt"),
    ):
        entries[0]["outcome"]["report_file"] = planted  # type: ignore[index]
        lines = [journal.read_bytes().splitlines()[0], *(json.dumps(entry).encode() for entry in entries)]
        journal.write_bytes(b"\n".join(lines) + b"\n")
        done = resume(tmp_path, "--report", "first.jsonl")
        assert done.returncode == 2, done.stderr
        said = done.stderr.decode()
        assert "journal.jsonl, line 2: its outcome names a file that is not this run's report of the job" in said
        assert b"secret" not in (tmp_path / "first.jsonl").read_bytes()


def test_a_resumed_journal_gives_the_report_of_a_run_never_stopped(tmp_path: Path) -> None:
    journal, _ = stopped_run(tmp_path, "--report", "links.jsonl")
    (tmp_path / "site" / "d1" / "p1.html").write_bytes(b'<a href="y1.html">y</a>')  # to do again
    done = resume(tmp_path, "--report", "links.jsonl")
    assert done.returncode == 0, done.stderr
    assert "3 done by the run that was stopped" in done.stderr.decode()
    whole = rewriter(tmp_path, "rewrite", "site", "-o", "again", "-j", "1", "--url", URL, "--report", "whole.jsonl")
    assert whole.returncode == 0
    assert (tmp_path / "links.jsonl").read_bytes() == (tmp_path / "whole.jsonl").read_bytes()
    assert not journal.parent.exists()


def _set(path: tuple[str, ...], value: object) -> object:
    """A change to the first entry: *value* at *path* (None as a value removes the field)."""

    def change(entry: dict[str, object]) -> dict[str, object]:
        here: dict[str, object] = entry
        for name in path[:-1]:
            here = here[name]  # type: ignore[assignment]
        if value is None:
            del here[path[-1]]
        else:
            here[path[-1]] = value
        return entry

    return change


# (what the forgery is, how the first entry is changed or what line replaces it)
FORGED: list[tuple[str, object]] = [
    ("identity of strings", _set(("identity",), ["a", "b"])),
    ("identity of one number", _set(("identity",), [1])),
    ("identity of floats", _set(("identity",), [1.5, 2.5])),
    ("identity a boolean pair", _set(("identity",), [True, False])),
    ("key a number", _set(("key",), 5)),
    ("key without its fields", _set(("key",), "page.html")),
    ("key with a NUL too many", _set(("key",), "a\0b\0write\0x\0y")),
    ("key of 100,000 characters", _set(("key",), "a" * 100_000 + "\0b\0write")),
    ("outcome a list", _set(("outcome",), [1, 2])),
    ("outcome missing", _set(("outcome",), None)),
    ("identity missing", _set(("identity",), None)),
    ("an added field", _set(("extra",), 1)),
    ("a count as text", _set(("outcome", "rewritten"), "3")),
    ("a negative count", _set(("outcome", "kept"), -1)),
    ("a count of 10**30", _set(("outcome", "bytes_in"), 10**30)),
    ("a count as a float", _set(("outcome", "bytes_out"), 1e308)),
    ("a state no run gives", _set(("outcome", "state"), "pwned")),
    ("ok as a number", _set(("outcome", "ok"), 1)),
    ("messages of numbers", _set(("outcome", "messages"), [1, 2])),
    ("messages as text", _set(("outcome", "messages"), "rewriter: x")),
    ("records of lists", _set(("outcome", "records"), [[1]])),
    ("shown missing", _set(("outcome", "shown"), None)),
    ("shown a list", _set(("outcome", "shown"), ["x"])),
    ("an unknown outcome field", _set(("outcome", "output"), "bytes")),
    ("a piece of the wrong shape", _set(("outcome", "piece"), [1, 2, 3])),
    ("an absolute report file", _set(("outcome", "report_file"), "/etc/passwd")),
    ("a report file with ..", _set(("outcome", "report_file"), "out/.rewriter-run/reports/../../../secret")),
    ("a report file with a NUL", _set(("outcome", "report_file"), "out/.rewriter-run/reports/a\0.jsonl")),
    ("a report file a number", _set(("outcome", "report_file"), 7)),
    ("not JSON", b"{this is not json}"),
    ("bytes that are not UTF-8", b'{"key": "\xff\xfe"}'),
    ("a number of 5,000 digits", b'{"key": ' + b"9" * 5000 + b"}"),
    ("nesting 100,000 deep", b"[" * 100_000 + b"]" * 100_000),
    ("an empty line", b""),
    ("JSON null", b"null"),
]


@pytest.mark.parametrize(("what", "forgery"), FORGED, ids=[what for what, _ in FORGED])
def test_a_forged_journal_is_refused_with_its_line_and_never_a_traceback(
    tmp_path: Path, what: str, forgery: object
) -> None:
    journal, entries = stopped_run(tmp_path)
    header, *lines = journal.read_bytes().splitlines()
    if isinstance(forgery, bytes):
        lines[0] = forgery
    else:
        lines[0] = json.dumps(forgery(entries[0])).encode()  # type: ignore[operator]
    journal.write_bytes(b"\n".join([header, *lines]) + b"\n")
    before = contents(tmp_path / "out")
    done = resume(tmp_path)
    assert done.returncode == 2, (what, done.stderr)
    said = done.stderr.decode()
    assert "cannot resume" in said and "journal.jsonl, line 2: " in said and "rerun without --resume" in said, said
    assert contents(tmp_path / "out") == before, "a refused journal writes nothing"


@pytest.mark.parametrize(
    "header", [b"[1]", b"{}", b'{"rewriter-journal": 1}', b'{"rewriter-journal": 1, "options": 5}']
)
def test_a_forged_header_is_refused(tmp_path: Path, header: bytes) -> None:
    journal, _ = stopped_run(tmp_path)
    journal.write_bytes(header + b"\n" + b"\n".join(journal.read_bytes().splitlines()[1:]) + b"\n")
    done = resume(tmp_path)
    assert done.returncode == 2, done.stderr
    assert "cannot resume" in done.stderr.decode()


def test_an_unfinished_last_line_is_done_again_and_cut_off(tmp_path: Path) -> None:
    # What a run killed while writing its last line leaves: that job is done again, and the
    # next line is not glued to the cut one.
    journal, _ = stopped_run(tmp_path)
    data = journal.read_bytes()
    journal.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 1] + data.rsplit(b"\n", 2)[1][:30])
    (tmp_path / "site" / "d0" / "p0.html").write_bytes(b'<a href="again.html">')
    stopped = rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL, "--resume", stopped=True)
    assert stopped.returncode == 0, stopped.stderr
    lines = journal.read_bytes().splitlines()
    assert all(json.loads(line) for line in lines), "every line whole JSON"
    assert len(lines) == 1 + 3 + 2  # the header, 3 whole lines kept, the two jobs done again
    assert (tmp_path / "out" / "d0" / "p0.html").read_bytes() == b'<a href="http://h/base/again.html">'


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
FIELDS = st.sampled_from(
    ["shown", "state", "ok", "messages", "rewritten", "bytes_in", "report", "report_file", "identity", "piece", "x"]
)
OUTCOMES = st.dictionaries(FIELDS, JSON | st.sampled_from(["rewritten", "failed", True]), max_size=6)
ENTRIES = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["a\0b\0write", "a\0b\0dry\0120", "a\0b\0x"]) | st.text(max_size=10),
        "identity": st.lists(st.integers(), min_size=2, max_size=2) | JSON,
        "outcome": OUTCOMES | JSON,
    },
    optional={"extra": JSON},
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.lists(ENTRIES | JSON, max_size=4), tail=st.binary(max_size=12))
@example(entries=[{"key": "a\0b\0write", "identity": [1, 2], "outcome": [1]}], tail=b"")
@example(
    entries=[{"key": "a\0b\0write", "identity": [1, 2], "outcome": {"shown": "x", "report_file": "/etc/passwd"}}],
    tail=b"{",
)
def test_any_journal_is_read_or_refused_never_a_crash(
    tmp_path_factory: object, entries: list[object], tail: bytes
) -> None:
    folder = tmp_path_factory.mktemp("run") / ".rewriter-run"  # type: ignore[attr-defined]
    Journal.open(folder, {"rules": "rfc3986"}, resume=False).close(finished=False)
    with open(folder / "journal.jsonl", "ab") as stream:
        for entry in entries:
            stream.write(json.dumps(entry).encode() + b"\n")
        stream.write(tail.replace(b"\n", b""))  # an unfinished last line
    try:
        journal = Journal.open(folder, {"rules": "rfc3986"}, resume=True)
    except (JournalError, Refused):
        return
    try:
        for _, offset in journal.earlier.values():
            outcome = outcome_from_json(journal.read(offset)["outcome"])
            assert isinstance(outcome.shown, str) and isinstance(outcome.messages, list)
            assert outcome.report_file in (None, str(folder / "reports" / Path(outcome.report_file or "x").name))
    finally:
        journal.close(finished=True)
    assert not folder.exists()


# --------------------------------------------------------------------------
# The files that decide the outputs are in the fingerprint
# --------------------------------------------------------------------------


def test_resume_after_the_url_map_changed_is_refused(tmp_path: Path) -> None:
    (tmp_path / "map.csv").write_text("site/d0/p0.html,http://old.example/a/\nsite/d1/p1.html,http://old.example/b/\n")
    stopped_run(tmp_path, "--url-map", "map.csv")
    (tmp_path / "map.csv").write_text("site/d0/p0.html,http://new.example/a/\nsite/d1/p1.html,http://new.example/b/\n")
    (tmp_path / "site" / "d0" / "p2.html").write_bytes(b'<a href="z.html">')  # a job to do again
    done = resume(tmp_path, "--url-map", "map.csv")
    assert done.returncode == 2, done.stderr
    assert "written by a run with other options (url_map_sha256)" in done.stderr.decode()
    assert (tmp_path / "out" / "d0" / "p2.html").read_bytes() == b'<a href="http://h/base/x2.html">x</a>'


def test_resume_with_the_same_url_map_goes_on(tmp_path: Path) -> None:
    (tmp_path / "map.csv").write_text("site/d0/p0.html,http://old.example/a/\n")
    stopped_run(tmp_path, "--url-map", "map.csv")
    done = resume(tmp_path, "--url-map", "map.csv")
    assert done.returncode == 0, done.stderr
    assert "4 done by the run that was stopped" in done.stderr.decode()


@pytest.mark.parametrize("name", ["rewriter.toml", "pyproject.toml"])
def test_resume_after_the_configuration_file_changed_is_refused(tmp_path: Path, name: str) -> None:
    table = "" if name == "rewriter.toml" else "[tool.rewriter]\n"
    (tmp_path / name).write_text(table + 'rules = "rfc3986"\n')
    stopped_run(tmp_path)
    (tmp_path / name).write_text(table + 'rules = "rfc3986"\nno-lazy = true\n')
    done = resume(tmp_path)
    assert done.returncode == 2, done.stderr
    assert "written by a run with other options" in done.stderr.decode()
    assert "configuration" in done.stderr.decode()
    digest = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
    assert digest not in (tmp_path / "out" / ".rewriter-run" / "journal.jsonl").read_text()


# --------------------------------------------------------------------------
# The temporaries of a killed run
# --------------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("how", ["output", "in-place", "resumed"])
def test_a_run_removes_the_temporaries_a_killed_run_left_and_says_so(tmp_path: Path, how: str) -> None:
    site = site_of(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    precious = elsewhere / temporary_name("p0.html")
    precious.write_bytes(b"not ours to remove")
    if how == "resumed":
        stopped_run(tmp_path)  # the site again: same pages
    tree = site if how == "in-place" else tmp_path / "out"
    (tree / "d0").mkdir(parents=True, exist_ok=True)
    left = [tree / "d0" / temporary_name("p0.html"), tree / "d1" / temporary_name("p1.html")]
    left.append(tree / "d0" / temporary_name("p2.html"))
    for path in left:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"half a page")
    link = tree / "d1" / temporary_name("p3.html")
    link.symlink_to(precious)  # named as ours, but a link: left as it is
    other = tree / "d1" / ".p3.html.rewriter-notours.tmp"  # not our pattern
    other.write_bytes(b"someone's")
    options = {"output": ["-o", "out"], "in-place": ["--in-place"], "resumed": ["-o", "out", "--resume"]}[how]
    done = rewriter(tmp_path, "rewrite", "site", "-j", "2", "--url", URL, *options)
    assert done.returncode == 0, done.stderr
    assert "rewriter: removed 3 temporary files a killed run left" in done.stderr.decode().splitlines()
    assert not any(path.exists() for path in left)
    assert link.is_symlink() and precious.read_bytes() == b"not ours to remove"
    assert other.read_bytes() == b"someone's"


@posix_only
def test_temporaries_behind_a_link_in_the_output_are_not_removed(tmp_path: Path) -> None:
    site_of(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = elsewhere / temporary_name("p0.html")
    theirs.write_bytes(b"not ours")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "d0").symlink_to(elsewhere)
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL)
    assert done.returncode == 1  # d0's pages refused, by name
    assert "out/d0 is a symbolic link" in done.stderr.decode()
    assert theirs.read_bytes() == b"not ours"
    assert "temporary" not in done.stderr.decode()


def test_the_report_files_temporaries_are_removed(tmp_path: Path) -> None:
    site_of(tmp_path)
    left = tmp_path / temporary_name("links.jsonl")
    left.write_bytes(b"{half")
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "-j", "2", "--url", URL, "--report", "links.jsonl")
    assert done.returncode == 0, done.stderr
    assert not left.exists()
    assert "rewriter: removed 1 temporary file a killed run left" in done.stderr.decode()


@posix_only
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_in_place_with_backup_removes_the_temporaries_of_the_backups_too(tmp_path: Path, jobs: str) -> None:
    """A run killed while it kept NAME.orig leaves a temporary of that name: the re-run's."""
    site = site_of(tmp_path)
    left = [site / "d0" / temporary_name("p0.html.orig"), site / "d1" / temporary_name("p1.html.orig")]
    for path in left:
        path.write_bytes(b"half an old page")
    done = rewriter(tmp_path, "rewrite", "site", "-j", jobs, "--url", URL, "--in-place", "--backup", ".orig")
    assert done.returncode == 0, done.stderr
    assert "rewriter: removed 2 temporary files a killed run left" in done.stderr.decode().splitlines()
    assert not any(path.exists() for path in left)
