"""The batch command line as a user drives it: ``python -m rewriter rewrite`` in a subprocess.

Every run starts in a fresh working folder (``cwd=tmp_path``), so no rewriter.toml or
pyproject.toml of the repository is read, and names the inputs by relative paths, as a
user would type them. Outputs are compared byte for byte with the library's own calls.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest
from conftest import err_lines, run_cli, without_summary

from rewriter.cli.commands import main
from rewriter.containers.mailbox import iter_mbox
from rewriter.css.stylesheet import rewrite_css
from rewriter.disk.files import CommitGroup
from rewriter.html.engine import Link, rewrite_html
from rewriter.mime.message import rewrite_message

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MIME = FIXTURES / "mime"
URL = "http://h/base/"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
# The closing summary: its figures, and the time, which differs from run to run.
SUMMARY = re.compile(
    r"rewriter: (?P<files>\d+) inputs?: (?P<rewritten>\d+) rewritten, (?P<unchanged>\d+) unchanged, "
    r"(?P<failed>\d+) failed; (?:(?P<copied>\d+) other files? copied; )?"
    r"links: (?P<links>\d+ rewritten, \d+ kept(?: \(\d+ local\))?, \d+ left relative)(?: \((?P<why>[^)]*)\))?; "
    r"[\d.,]+ MB in [\d.,]+ s"
)


def rewriter(cwd: Path, *argv: str, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return run_cli(cwd, *argv, stdin=stdin, timeout=timeout)


def files_under(root: Path) -> dict[str, bytes]:
    """Every file under *root* by its path relative to it (folders alone are not listed)."""
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def mbox_of(*messages: bytes) -> bytes:
    """An mbox of *messages* (LF line ends, as mail programs store them)."""
    return b"".join(
        f"From sender{n}@example.org Mon Jan  1 00:00:0{n} 2024\n".encode() + message.replace(b"\r\n", b"\n") + b"\n"
        for n, message in enumerate(messages)
    )


# --------------------------------------------------------------------------
# The mixed folder: pages, a style sheet, messages, an MHTML, an mbox, a Maildir, and others
# --------------------------------------------------------------------------

MAILDIR_CHANGED = "Maildir/cur/1700000000.1.host:2,S"
MAILDIR_PLAIN = "Maildir/new/1700000001.2.host"


def mixed_tree(root: Path) -> None:
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "mail").mkdir()
    for sub in ("cur", "new", "tmp"):
        (root / "Maildir" / sub).mkdir(parents=True)
    (root / "index.html").write_bytes((FIXTURES / "saved-page.html").read_bytes())
    (root / "docs" / "page.html").write_bytes(b'<a href=a.html>a</a><img src="../img/x.png">')
    (root / "docs" / "deep" / "abs.html").write_bytes(b'<p><a href="http://e.example/x">x</a></p>')  # unchanged
    (root / "docs" / "style.css").write_bytes(b"body { background: url(img/bg.png) }\n")
    (root / "mail" / "a.eml").write_bytes((MIME / "rfc2557-9.3.eml").read_bytes())
    (root / "mail" / "b.eml").write_bytes((MIME / "precedence-content-base.eml").read_bytes())
    (root / "mail" / "saved.mhtml").write_bytes((MIME / "chrome-cid-css.eml").read_bytes())
    (root / "mail" / "archive.mbox").write_bytes(
        mbox_of((MIME / "rfc2557-9.3.eml").read_bytes(), (MIME / "precedence-content-base.eml").read_bytes())
    )
    (root / MAILDIR_CHANGED).write_bytes((MIME / "rfc2557-9.3.eml").read_bytes())
    (root / MAILDIR_PLAIN).write_bytes(b"From: a@example.org\nSubject: plain\n\nno links\n")
    # Not matched by the default --include: never copied.
    (root / "docs" / "logo.png").write_bytes(PNG)
    (root / "notes.txt").write_bytes(b"<a href=notes>")


def library_outputs(root: Path, url: str | None) -> tuple[dict[str, bytes], dict[str, int]]:
    """What the library makes of each input of :func:`mixed_tree`, and its link counts."""
    expected: dict[str, bytes] = {}
    counts = {"rewritten": 0, "kept": 0, "relative": 0}

    def count(links: Iterable[Link]) -> None:
        for link in links:
            if link.status == "rewritten":
                counts["rewritten"] += 1
            elif link.status in ("no-base", "unresolvable"):
                counts["relative"] += 1
            else:
                counts["kept"] += 1

    def message(data: bytes) -> bytes:
        result = rewrite_message(data, url=url)
        count(link for part in result.parts for link in part.links)
        return result.output

    for name in ("index.html", "docs/page.html", "docs/deep/abs.html"):
        result = rewrite_html((root / name).read_bytes(), url=url)
        count(result.links)
        expected[name] = result.output
    sheet = rewrite_css((root / "docs/style.css").read_bytes(), url=url)
    count(sheet.links)
    expected["docs/style.css"] = sheet.output
    for name in ("mail/a.eml", "mail/b.eml", "mail/saved.mhtml", MAILDIR_CHANGED, MAILDIR_PLAIN):
        expected[name] = message((root / name).read_bytes())
    # An mbox: each separator as it was, each message as the message engine writes it.
    expected["mail/archive.mbox"] = b"".join(
        separator + message(body)
        for separator, body in iter_mbox(io.BytesIO((root / "mail/archive.mbox").read_bytes()))
    )
    return expected, counts


def test_a_mixed_folder_is_mirrored_and_each_output_is_the_librarys(tmp_path: Path) -> None:
    mixed_tree(tmp_path / "site")
    expected, counts = library_outputs(tmp_path / "site", URL)
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url", URL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    # Paths kept, the Maildir rewritten at its own place, the .png and .txt copied as they are.
    others = {name: (tmp_path / "site" / name).read_bytes() for name in ("docs/logo.png", "notes.txt")}
    assert files_under(tmp_path / "out") == expected | others
    assert all((tmp_path / "out" / "Maildir" / sub).is_dir() for sub in ("cur", "new", "tmp"))
    # The sources are untouched.
    assert (tmp_path / "site" / "docs" / "page.html").read_bytes() == b'<a href=a.html>a</a><img src="../img/x.png">'
    # Nothing went wrong, so the summary is the only line; stderr is no terminal: no bar.
    [summary] = err_lines(done)
    figures = SUMMARY.fullmatch(summary)
    assert figures is not None, summary
    # 8 files change (the Maildir as one: one of its messages does); what "unchanged" and the total count
    # for a Maildir is test_the_summary_file_counts_add_up's business.
    assert (figures["rewritten"], figures["failed"], figures["copied"]) == ("8", "0", "2")
    assert figures["links"] == f"{counts['rewritten']} rewritten, {counts['kept']} kept, 0 left relative"
    assert counts["rewritten"] > 40 and counts["kept"] > 0  # the tree does exercise every engine
    assert b"\r" not in done.stderr and b"%|" not in done.stderr and b"file/s" not in done.stderr


@pytest.mark.parametrize("case", ["maildir", "missing"])
def test_the_summary_file_counts_add_up(tmp_path: Path, case: str) -> None:
    if case == "maildir":
        # 9 inputs: 8 files and the Maildir, which counts once (rewritten: one of its messages changes);
        # abs.html stays as it was.
        mixed_tree(tmp_path / "site")
        done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url", URL)
        files, rewritten, unchanged, failed = 9, 8, 1, 0
    else:
        (tmp_path / "a.html").write_bytes(b"<a href=x>")
        (tmp_path / "b.html").write_bytes(b"<a href=y>")
        done = rewriter(tmp_path, "rewrite", "a.html", "nope.html", "b.html", "-o", "out", "--url", URL)
        # The missing input counts as an input that failed.
        files, rewritten, unchanged, failed = 3, 2, 0, 1
    figures = SUMMARY.fullmatch(err_lines(done)[-1])
    assert figures is not None
    assert int(figures["rewritten"]) + int(figures["unchanged"]) + int(figures["failed"]) == int(figures["files"])
    assert [int(figures[key]) for key in ("files", "rewritten", "unchanged", "failed")] == [
        files,
        rewritten,
        unchanged,
        failed,
    ]


def test_one_and_two_workers_give_the_same_outputs_reports_and_messages(tmp_path: Path) -> None:
    mixed_tree(tmp_path / "site")
    # Things to say on stderr: a binary file under a page's name, and (no --url) links left relative.
    (tmp_path / "site" / "docs" / "broken.html").write_bytes(PNG)
    runs = {}
    for jobs in ("1", "2"):
        done = rewriter(tmp_path, "rewrite", "site", "-o", f"out{jobs}", "-j", jobs, "--report", f"r{jobs}.jsonl")
        assert done.returncode == 1
        runs[jobs] = done
    assert files_under(tmp_path / "out1") == files_under(tmp_path / "out2")
    assert files_under(tmp_path / "out1")["docs/broken.html"] == PNG  # binary whatever its name: copied
    assert (tmp_path / "r1.jsonl").read_bytes() == (tmp_path / "r2.jsonl").read_bytes()
    assert len((tmp_path / "r1.jsonl").read_bytes().splitlines()) > 40
    one, two = (err_lines(runs[jobs]) for jobs in ("1", "2"))
    # Identical but for the time the summary gives.
    untimed = (
        [re.sub(r" in [\d.,]+ s$", "", line) for line in one],
        [re.sub(r" in [\d.,]+ s$", "", line) for line in two],
    )
    assert untimed[0] == untimed[1]
    assert (
        "rewriter: site/docs/page.html: 2 links left relative: no base (give --url, --url-root or --canonical-base)"
        in one
    )
    assert not any(" at bytes " in line for line in one)  # each link: -v or --report
    figures = SUMMARY.fullmatch(one[-1])
    assert figures is not None and figures["failed"] == "0"


# --------------------------------------------------------------------------
# Standard input and output
# --------------------------------------------------------------------------


def test_stdin_to_stdout_and_to_a_file_byte_for_byte(tmp_path: Path) -> None:
    # windows-1252, CRLF, a character reference, unquoted and quoted values: only the URLs change.
    page = b'<meta charset="windows-1252">\r\n<p>caf\xe9 &amp;</p><a href=\xe9.html>\r\n<img src="../i.png">\r\n'
    done = rewriter(tmp_path, "rewrite", "-", "--url", "http://h/d/", stdin=page)
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    assert done.stdout == (
        b'<meta charset="windows-1252">\r\n<p>caf\xe9 &amp;</p><a href=http://h/d/\xe9.html>\r\n'
        b'<img src="http://h/i.png">\r\n'
    )
    assert done.stdout == rewrite_html(page, url="http://h/d/").output
    done = rewriter(tmp_path, "rewrite", "-", "--url", "http://h/d/", "-o", "sub/page.html", stdin=page)
    assert (done.returncode, done.stdout, without_summary(done.stderr)) == (0, b"", b"")
    assert (tmp_path / "sub" / "page.html").read_bytes() == rewrite_html(page, url="http://h/d/").output
    # A message on stdin is told by its content.
    message = (MIME / "rfc2557-9.3.eml").read_bytes()
    done = rewriter(tmp_path, "rewrite", "-", stdin=message)
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    assert done.stdout == rewrite_message(message).output != message


def test_an_mbox_file_to_stdout_rewrites_every_message(tmp_path: Path) -> None:
    second = (MIME / "precedence-content-base.eml").read_bytes()
    (tmp_path / "archive.mbox").write_bytes(mbox_of((MIME / "rfc2557-9.3.eml").read_bytes(), second))
    done = rewriter(tmp_path, "rewrite", "archive.mbox")
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    assert b'<a href="http://b.example/long/z5">' in done.stdout  # in the second message
    written = rewriter(tmp_path, "rewrite", "archive.mbox", "-o", "out.mbox")
    assert written.returncode == 0
    assert (tmp_path / "out.mbox").read_bytes() == done.stdout


def test_an_mbox_on_stdin_rewrites_every_message(tmp_path: Path) -> None:
    archive = mbox_of((MIME / "rfc2557-9.3.eml").read_bytes(), (MIME / "precedence-content-base.eml").read_bytes())
    (tmp_path / "archive.mbox").write_bytes(archive)
    from_file = rewriter(tmp_path, "rewrite", "archive.mbox")
    assert from_file.returncode == 0
    done = rewriter(tmp_path, "rewrite", "-", stdin=archive)
    assert done.returncode == 0
    assert b'<a href="http://b.example/long/z5">' in done.stdout
    assert done.stdout == from_file.stdout


@pytest.mark.skipif(not Path("/dev/stdin").exists(), reason="no /dev/stdin here")
def test_a_pipe_named_on_the_command_line_is_rewritten(tmp_path: Path) -> None:
    page = b"<a href=x>"
    # subprocess gives the page on a pipe, so /dev/stdin is one.
    done = rewriter(tmp_path, "rewrite", "/dev/stdin", "--url", URL, stdin=page)
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    assert done.stdout == b"<a href=http://h/base/x>"


def _closed(cwd: Path, fd: int) -> subprocess.CompletedProcess[bytes]:
    """The tool run with file descriptor *fd* (0 or 1) closed, as by the shell's 0<&- or 1>&-."""
    page = FIXTURES / "saved-page.html"
    argv = ["-"] if fd == 0 else [str(page)]
    return subprocess.run(
        [sys.executable, "-m", "rewriter", "rewrite", *argv, "--url", URL],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: os.close(fd),  # after the redirections: the child starts with fd closed
        timeout=60,
    )


def test_a_closed_stdout_is_named_not_a_traceback(tmp_path: Path) -> None:
    done = _closed(tmp_path, 1)
    assert b"Traceback" not in done.stderr
    assert done.returncode == 1
    assert b"saved-page.html: cannot write to standard output" in done.stderr


def test_a_closed_stdin_is_named_plainly(tmp_path: Path) -> None:
    done = _closed(tmp_path, 0)
    assert b"Traceback" not in done.stderr
    assert done.returncode == 1
    assert done.stderr.startswith(b"rewriter: <stdin>: ")
    assert b"internal error" not in done.stderr and b"AttributeError" not in done.stderr


# --------------------------------------------------------------------------
# Inputs that cannot be done: the others still are
# --------------------------------------------------------------------------


def _two_pages(root: Path) -> None:
    (root / "sub").mkdir(exist_ok=True)
    (root / "a.html").write_bytes(b"<a href=x>")
    (root / "sub" / "b.html").write_bytes(b"<img src=y>")


def _assert_two_pages_written(out: Path, *, plus: dict[str, bytes] | None = None) -> None:
    # Several inputs to -o DIR: each goes under its own name.
    assert files_under(out) == {"a.html": b"<a href=http://h/base/x>", "b.html": b"<img src=http://h/base/y>"} | (
        plus or {}
    )


def test_a_missing_path_is_named_and_the_others_written(tmp_path: Path) -> None:
    _two_pages(tmp_path)
    done = rewriter(tmp_path, "rewrite", "a.html", "nope.html", "sub/b.html", "no-folder/", "-o", "out", "--url", URL)
    assert done.returncode == 1
    lines = err_lines(done)
    assert lines[:2] == ["rewriter: nope.html: no such file or folder", "rewriter: no-folder/: no such file or folder"]
    assert SUMMARY.fullmatch(lines[2]) is not None and len(lines) == 3
    _assert_two_pages_written(tmp_path / "out")
    # One missing file to standard output: nothing printed, exit 1; named, and counted as failed.
    done = rewriter(tmp_path, "rewrite", "nope.html")
    assert (done.returncode, done.stdout, err_lines(done)[:1]) == (
        1,
        b"",
        ["rewriter: nope.html: no such file or folder"],
    )
    assert without_summary(done.stderr) == b"rewriter: nope.html: no such file or folder\n"
    assert " 1 input: 0 rewritten, 0 unchanged, 1 failed;" in done.stderr.decode()


def _unreadable_even_for_root(path: Path) -> bool:
    """Whether reading *path* fails (open works, read gives EIO: /proc/self/mem at offset 0)."""
    try:
        path.read_bytes()
    except OSError:
        return True
    return False


def test_an_unreadable_file_is_named_and_the_others_written(tmp_path: Path) -> None:
    mem = Path("/proc/self/mem")
    if not mem.exists() or not _unreadable_even_for_root(mem):
        pytest.skip("no /proc/self/mem that fails on read here")
    _two_pages(tmp_path)
    (tmp_path / "bad.html").symlink_to(mem)
    done = rewriter(tmp_path, "rewrite", "a.html", "bad.html", "sub/b.html", "-o", "out", "--url", URL)
    assert done.returncode == 1
    lines = err_lines(done)
    assert lines[0] == "rewriter: bad.html: Input/output error"
    figures = SUMMARY.fullmatch(lines[1])
    assert figures is not None and (figures["rewritten"], figures["failed"]) == ("2", "1")
    _assert_two_pages_written(tmp_path / "out")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads a chmod 000 file anyway")
def test_a_file_without_read_permission_is_named_and_the_others_written(tmp_path: Path) -> None:
    _two_pages(tmp_path)
    locked = tmp_path / "locked.html"
    locked.write_bytes(b"<a href=z>")
    locked.chmod(0)
    try:
        done = rewriter(tmp_path, "rewrite", "a.html", "locked.html", "sub/b.html", "-o", "out", "--url", URL)
    finally:
        locked.chmod(0o644)
    assert done.returncode == 1
    assert err_lines(done)[0].startswith("rewriter: locked.html: Permission denied")
    _assert_two_pages_written(tmp_path / "out")


def test_a_file_neither_html_nor_mime_is_copied_as_it_is_and_said_so(tmp_path: Path) -> None:
    _two_pages(tmp_path)
    (tmp_path / "logo.png").write_bytes(PNG)
    (tmp_path / "page.html.gz").write_bytes(gzip.compress(b"<a href=x>", mtime=0))
    (tmp_path / "message.eml").write_bytes((MIME / "rfc2557-9.3.eml").read_bytes())
    done = rewriter(
        tmp_path,
        "rewrite",
        "a.html",
        "logo.png",
        "page.html.gz",
        "sub/b.html",
        "message.eml",
        "-o",
        "out",
        "--url",
        URL,
    )
    assert done.returncode == 0, done.stderr
    lines = err_lines(done)
    assert lines[:2] == [
        "rewriter: logo.png: binary data (a PNG image, by its signature): copied as it is",
        "rewriter: page.html.gz: binary data (gzip data, by its signature): copied as it is",
    ]
    figures = SUMMARY.fullmatch(lines[2])
    assert figures is not None and (figures["files"], figures["rewritten"], figures["failed"]) == ("3", "3", "0")
    # Never read by an engine, never failed: written out byte for byte beside the others.
    message = rewrite_message((MIME / "rfc2557-9.3.eml").read_bytes(), url=URL).output
    copies = {name: (tmp_path / name).read_bytes() for name in ("logo.png", "page.html.gz")}
    _assert_two_pages_written(tmp_path / "out", plus={"message.eml": message, **copies})
    # Alone, to standard output: its bytes, exit 0.
    done = rewriter(tmp_path, "rewrite", "logo.png")
    assert (done.returncode, done.stdout) == (0, PNG)
    assert without_summary(done.stderr).decode().splitlines() == [
        "rewriter: logo.png: binary data (a PNG image, by its signature): copied as it is"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_in_a_folder_does_not_hang_the_run(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "a.html").write_bytes(b"<a href=x>")
    os.mkfifo(tmp_path / "site" / "pipe.html")
    try:
        # -j 1: one process, which the timeout kills; no worker left blocked on the pipe.
        done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url", URL, "-j", "1", timeout=5)
    except subprocess.TimeoutExpired:
        pytest.fail("the run hung on site/pipe.html")
    # Skipped, or named as not a regular file: either way the others are done.
    assert done.returncode in (0, 1)
    assert files_under(tmp_path / "out") == {"a.html": b"<a href=http://h/base/x>"}


# --------------------------------------------------------------------------
# In place
# --------------------------------------------------------------------------


def test_in_place_replaces_what_changes_keeps_modes_times_and_backups(tmp_path: Path) -> None:
    root = tmp_path / "ip"
    (root / "sub").mkdir(parents=True)
    old = {
        "changed.html": b"<a href=x>",
        "same.html": b'<a href="http://e.example/">',
        "sub/style.css": b"a { background: url(i.png) }",
        "box.mbox": mbox_of((MIME / "rfc2557-9.3.eml").read_bytes(), b"Subject: plain\nFrom: a\n\nno links\n"),
    }
    for name, data in old.items():
        (root / name).write_bytes(data)
    (root / "changed.html").chmod(0o640)
    (root / "sub" / "style.css").chmod(0o600)
    for name in old:
        os.utime(root / name, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = {name: (root / name).stat() for name in old}
    done = rewriter(tmp_path, "rewrite", "ip", "--in-place", "--backup", ".orig", "--url", "http://h/")
    assert done.returncode == 0, done.stderr
    figures = SUMMARY.fullmatch(err_lines(done)[-1])
    assert figures is not None
    assert (figures["files"], figures["rewritten"], figures["unchanged"], figures["failed"]) == ("4", "3", "1", "0")
    assert files_under(root) == {
        "changed.html": b"<a href=http://h/x>",
        "changed.html.orig": old["changed.html"],
        "same.html": old["same.html"],  # no backup: it was not rewritten
        "sub/style.css": b"a { background: url(http://h/i.png) }",
        "sub/style.css.orig": old["sub/style.css"],
        "box.mbox": b"".join(
            sep + rewrite_message(m, url="http://h/").output for sep, m in iter_mbox(io.BytesIO(old["box.mbox"]))
        ),
        "box.mbox.orig": old["box.mbox"],
    }
    assert files_under(root)["box.mbox"] != old["box.mbox"]
    # Permissions kept; the unchanged file was not touched at all.
    assert stat.S_IMODE((root / "changed.html").stat().st_mode) == 0o640
    assert stat.S_IMODE((root / "sub" / "style.css").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "box.mbox").stat().st_mode) == stat.S_IMODE(before["box.mbox"].st_mode)
    # Replaced by a rename, not rewritten where it lay.
    assert (root / "changed.html").stat().st_ino != before["changed.html"].st_ino
    same = (root / "same.html").stat()
    assert (same.st_mtime_ns, same.st_ino) == (before["same.html"].st_mtime_ns, before["same.html"].st_ino)
    # A second run changes nothing: every file is unchanged, and the backups keep the first old bytes.
    done = rewriter(tmp_path, "rewrite", "ip", "--in-place", "--backup", ".orig", "--url", "http://h/", "-q")
    assert (done.returncode, done.stderr) == (0, b"")
    assert (root / "changed.html.orig").read_bytes() == old["changed.html"]
    assert (root / "box.mbox.orig").read_bytes() == old["box.mbox"]


def test_in_place_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "a.html").write_bytes(b"<a href=x>")
    done = rewriter(tmp_path, "rewrite", "a.html", "--backup", ".orig", "-o", "out.html")
    assert (done.returncode, err_lines(done)) == (2, ["rewriter rewrite: --backup goes with --in-place"])
    done = rewriter(tmp_path, "rewrite", "a.html", "--in-place", "-o", "out.html")
    assert done.returncode == 2
    assert (
        err_lines(done)[-1] == "rewriter rewrite: error: argument -o/--output: not allowed with argument -i/--in-place"
    )
    # Neither ran: nothing written, nothing changed.
    assert files_under(tmp_path) == {"a.html": b"<a href=x>"}


# --------------------------------------------------------------------------
# Walking folders: --include and --exclude
# --------------------------------------------------------------------------


def test_include_and_exclude_globs_by_name_and_by_path(tmp_path: Path) -> None:
    site = tmp_path / "site"
    for name in ("a.html", "b.htm", "docs/c.html", "drafts/d.html", "drafts/old/e.html", "x.min.css", "y.css"):
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_bytes(b"<a href=x>" if name.endswith(("html", "htm")) else b"p { background: url(x) }")
    (site / "n.txt").write_bytes(b"<a href=x>")
    (site / "docs" / "notes.txt").write_bytes(b"<a href=x>")
    # A path glob (drafts/* matches at any depth below drafts) and a name glob.
    done = rewriter(
        tmp_path, "rewrite", "site", "-o", "o1", "--url", URL, "--exclude", "drafts/*", "--exclude", "*.min.css"
    )
    assert done.returncode == 0, done.stderr
    # The .txt files are not rewritten but copied (a complete mirror); what --exclude names is left out.
    assert sorted(files_under(tmp_path / "o1")) == [
        "a.html",
        "b.htm",
        "docs/c.html",
        "docs/notes.txt",
        "n.txt",
        "y.css",
    ]
    assert files_under(tmp_path / "o1")["y.css"] == b"p { background: url(http://h/base/x) }"
    assert files_under(tmp_path / "o1")["n.txt"] == b"<a href=x>"
    # --include filters the documents: only the .htm files and what is under docs/ (a .txt is
    # plain text, never a page, whatever --include says).
    done = rewriter(
        tmp_path,
        *("rewrite", "site", "-o", "o2", "--url", URL, "--include", "*.HTM", "--include", "docs/*", "--no-copy-others"),
    )
    assert done.returncode == 0, done.stderr
    assert files_under(tmp_path / "o2") == {
        "b.htm": b"<a href=http://h/base/x>",
        "docs/c.html": b"<a href=http://h/base/x>",
    }
    # A folder's name prunes it; a file named on the command line is taken even if excluded.
    done = rewriter(
        tmp_path,
        "rewrite",
        "site",
        "site/x.min.css",
        "-o",
        "o3",
        "--url",
        URL,
        "--exclude",
        "drafts",
        "--exclude",
        "*.css",
        "--no-copy-others",
    )
    assert done.returncode == 0, done.stderr
    assert sorted(files_under(tmp_path / "o3")) == ["site/a.html", "site/b.htm", "site/docs/c.html", "x.min.css"]


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


def test_reports_as_json_lines_and_as_one_array(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_bytes(b'<a href=a.html>a</a><img src="../img/x.png">')
    (site / "style.css").write_bytes(b"body { background: url(img/bg.png) }\n")
    (site / "one.eml").write_bytes((MIME / "rfc2557-9.3.eml").read_bytes())
    (site / "archive.mbox").write_bytes(
        mbox_of((MIME / "rfc2557-9.3.eml").read_bytes(), (MIME / "precedence-content-base.eml").read_bytes())
    )
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url", URL, "--report", "r.jsonl", "-q")
    assert (done.returncode, done.stderr) == (0, b"")
    lines = (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]  # one object per line
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url", URL, "--report", "r.json", "-q")
    assert done.returncode == 0
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8")) == records  # the same, as one array
    # The walk's order (sorted names); every link of every file and message.
    assert [(r["file"], r.get("message"), r.get("part"), r["original"]) for r in records] == [
        ("site/archive.mbox", 1, "1.1", "images/ietflogo1.gif"),
        ("site/archive.mbox", 1, "1.1", "images/ietflogo2.gif"),
        ("site/archive.mbox", 1, "1.1", "images/ietflogo3.gif"),
        ("site/archive.mbox", 2, "1.1", "z1"),
        ("site/archive.mbox", 2, "1.2", "z2"),
        ("site/archive.mbox", 2, "1.3.1", "z3"),
        ("site/archive.mbox", 2, "1.3.2", "z4"),
        ("site/archive.mbox", 2, "1.3.2", "?p=4"),
        ("site/archive.mbox", 2, "1.4", "z5"),
        ("site/one.eml", None, "1.1", "images/ietflogo1.gif"),
        ("site/one.eml", None, "1.1", "images/ietflogo2.gif"),
        ("site/one.eml", None, "1.1", "images/ietflogo3.gif"),
        ("site/page.html", None, None, "a.html"),
        ("site/page.html", None, None, "../img/x.png"),
        ("site/style.css", None, None, "img/bg.png"),
    ]
    assert records[12] == {
        "file": "site/page.html",
        "element": "a",
        "attribute": "href",
        "kind": "url",
        "original": "a.html",
        "resolved": "http://h/base/a.html",
        "status": "rewritten",
        "reason": None,
        "base": URL,
        "layer": "retrieval-url",
        "start": 8,
        "end": 14,
    }
    assert records[14] == {
        "file": "site/style.css",
        "element": "",
        "attribute": "#stylesheet",
        "kind": "css",
        "original": "img/bg.png",
        "resolved": "http://h/base/img/bg.png",
        "status": "rewritten",
        "reason": None,
        "base": URL,
        "layer": "retrieval-url",
        "start": 23,
        "end": 33,
    }
    # In an mbox: which message, which part; the span is in the part's decoded body.
    assert records[8] == {
        "file": "site/archive.mbox",
        "message": 2,
        "part": "1.4",
        "element": "a",
        "attribute": "href",
        "kind": "url",
        "original": "z5",
        "resolved": "http://b.example/long/z5",
        "status": "rewritten",
        "reason": None,
        "base": "http://b.example/long/",
        "layer": "enclosing",  # handed down by the part's Content-Base heading
        "start": 9,
        "end": 11,
    }
    # Spans of a page are its bytes.
    page = (site / "page.html").read_bytes()
    assert [page[r["start"] : r["end"]] for r in records[12:14]] == [b"a.html", b"../img/x.png"]


def test_no_fsync_writes_the_same_files_and_report_without_a_single_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fsync_calls: list[int]
) -> None:
    mixed_tree(tmp_path / "in")
    monkeypatch.chdir(tmp_path)
    synced = fsync_calls  # and each sync of a batch's pages (CommitGroup), as the fd of a folder synced

    def group_sync(fd: int) -> None:
        synced.append(fd)
        os.fsync(fd)  # a folder's: its file system's syncfs, for the test

    monkeypatch.setattr(CommitGroup, "create", classmethod(lambda group: group(group_sync)))

    def run(out: str, *options: str) -> tuple[int, int]:
        synced.clear()
        code = main(["rewrite", "in", "-o", out, "--url", URL, "-j", "1", "-q", "--report", f"{out}.jsonl", *options])
        return code, len(synced)

    code, default = run("synced")
    assert default >= 10  # the pages' syncs, and each other output file (messages, the mbox, the Maildir's, copies)
    assert run("unsynced", "--no-fsync") == (code, 0)
    (tmp_path / "rewriter.toml").write_text("no-fsync = true\n", encoding="utf-8")
    assert run("configured") == (code, 0)
    assert run("overruled", "--fsync") == (code, default)
    capsys.readouterr()
    outputs = files_under(tmp_path / "synced")
    assert outputs and all(files_under(tmp_path / out) == outputs for out in ("unsynced", "configured", "overruled"))
    report = (tmp_path / "synced.jsonl").read_bytes().replace(b"synced/", b"")
    for out in ("unsynced", "configured", "overruled"):
        assert (tmp_path / f"{out}.jsonl").read_bytes().replace(f"{out}/".encode(), b"") == report


def test_a_serial_run_puts_each_batch_of_pages_in_place_after_one_sync_of_their_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fsync_calls: list[int]
) -> None:
    from rewriter.run.executors import BATCH_JOBS

    for number in range(BATCH_JOBS + 8):  # two batches of the serial executor (BATCH_JOBS jobs at most)
        folder = tmp_path / "in" / ("a" if number % 2 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"p{number:03}.html").write_bytes(b'<a href="x.html">')
    synced: list[int] = []  # at each sync of a batch, how many pages were in place

    def group_sync(fd: int) -> None:
        synced.append(len(list((tmp_path / "out").rglob("p*.html"))))
        os.fsync(fd)

    monkeypatch.setattr(CommitGroup, "create", classmethod(lambda group: group(group_sync)))
    monkeypatch.chdir(tmp_path)
    assert main(["rewrite", "in", "-o", "out", "--url", "http://h/", "-j", "1", "-q"]) == 0
    capsys.readouterr()
    # Each batch: its content synced with none of its pages in place, then renamed in, then synced
    # again (one file system); no page synced on its own.
    assert synced == [0, BATCH_JOBS, BATCH_JOBS, BATCH_JOBS + 8]
    assert len(fsync_calls) == len(synced)  # the batches' syncs (made with fsync here) and no other
    assert not [path for path in (tmp_path / "out").rglob("*") if path.name.startswith(".")]  # no temporary left
    for path in (tmp_path / "in").rglob("*.html"):
        assert (tmp_path / "out" / path.relative_to(tmp_path / "in")).read_bytes() == b'<a href="http://h/x.html">'


def test_a_page_its_batch_cannot_put_in_place_fails_alone_and_stays_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / f"{name}.html").write_bytes(b'<a href="x.html">')
    (tmp_path / "out" / "b.html").mkdir(parents=True)  # a folder where b.html's output goes: no rename over it
    (tmp_path / "out" / "b.html" / "kept").write_bytes(b"")
    monkeypatch.setattr(CommitGroup, "create", classmethod(lambda group: group(os.fsync)))
    monkeypatch.chdir(tmp_path)
    assert main(["rewrite", "in", "-o", "out", "--url", "http://h/", "-j", "1", "-q"]) == 1
    said = capsys.readouterr().err
    assert "b.html" in said and "not written" in said and "a.html" not in said and "c.html" not in said
    assert (tmp_path / "out" / "a.html").read_bytes() == (tmp_path / "out" / "c.html").read_bytes()
    assert (tmp_path / "out" / "b.html" / "kept").exists()
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == ["a.html", "b.html", "c.html"]


# --------------------------------------------------------------------------
# Configuration files
# --------------------------------------------------------------------------

# Against this base, rfc1808 keeps the dot segments above the root; whatwg drops them.
CONFIG_PAGE = b'<a href="../../../g">'


def _config_site(root: Path) -> None:
    (root / "site").mkdir(parents=True)
    (root / "site" / "p.html").write_bytes(CONFIG_PAGE)
    (root / "site" / "x.skip.html").write_bytes(b"<a href=z>")


def test_rewriter_toml_gives_defaults_and_the_command_line_wins(tmp_path: Path) -> None:
    _config_site(tmp_path)
    (tmp_path / "rewriter.toml").write_text(
        'rules = "whatwg"\nurl = "http://h/b/c/d;p?q"\nexclude = ["*.skip.html"]\n', encoding="utf-8"
    )
    # rewriter.toml is read, and a pyproject.toml beside it is not.
    (tmp_path / "pyproject.toml").write_text('[tool.rewriter]\nurl = "http://ignored.example/"\n', encoding="utf-8")
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out")
    assert done.returncode == 0, done.stderr
    assert files_under(tmp_path / "out") == {"p.html": b'<a href="http://h/g">'}
    done = rewriter(tmp_path, "rewrite", "site/p.html", "--rules", "rfc1808", "--url", "http://k/b/c/d;p?q")
    assert (done.returncode, done.stdout) == (0, b'<a href="http://k/../g">')


def test_pyproject_tool_table_applies_without_rewriter_toml(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.rewriter]\nurl = "http://p.example/b/c/d;p?q"\nrules = "rfc1808"\n',
        encoding="utf-8",
    )
    done = rewriter(tmp_path, "rewrite", "-", stdin=CONFIG_PAGE)
    assert (done.returncode, done.stdout, without_summary(done.stderr)) == (0, b'<a href="http://p.example/../g">', b"")


def test_the_nearest_configuration_above_the_working_folder_is_read(tmp_path: Path) -> None:
    """As ruff and black find theirs: the working folder's, else the closest folder's above
    it; a pyproject.toml without [tool.rewriter] on the way is passed over."""
    (tmp_path / "rewriter.toml").write_text('url = "http://far.example/b/c/d;p?q"\n', encoding="utf-8")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "pyproject.toml").write_text(
        '[tool.rewriter]\nurl = "http://near.example/b/c/d;p?q"\n', encoding="utf-8"
    )
    (tmp_path / "project" / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "project" / "docs" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 99\n", encoding="utf-8")
    done = rewriter(tmp_path / "project" / "docs" / "deep", "rewrite", "-", stdin=CONFIG_PAGE)
    assert (done.returncode, done.stdout, without_summary(done.stderr)) == (0, b'<a href="http://near.example/g">', b"")
    (tmp_path / "other").mkdir()
    done = rewriter(tmp_path / "other", "rewrite", "-", stdin=CONFIG_PAGE)
    assert (done.returncode, done.stdout) == (0, b'<a href="http://far.example/g">')


@pytest.mark.parametrize("broken", ["rules = [\n", "no-such-option = 1\n", "rules = 7\n"])
def test_a_broken_configuration_never_breaks_help_or_version(tmp_path: Path, broken: str) -> None:
    (tmp_path / "rewriter.toml").write_text(broken, encoding="utf-8")
    for argv in (["--help"], ["--version"], ["rewrite", "--help"], ["-h"]):
        done = rewriter(tmp_path, *argv)
        assert done.returncode == 0 and done.stdout, (argv, done.stderr)
    done = rewriter(tmp_path, "rewrite", "-", stdin=CONFIG_PAGE)
    assert done.returncode == 2 and str(tmp_path / "rewriter.toml") in done.stderr.decode()


@pytest.mark.parametrize(
    ("setting", "override", "page", "by_the_file", "by_the_command_line"),
    [
        # Each on/off option a file turns on, the command line turns off again.
        ("no-lazy = true", "--lazy", b"<img data-src=i>", b"<img data-src=i>", b"<img data-src=http://h/d/i>"),
        (
            "no-conditional-comments = true",
            "--conditional-comments",
            b"<!--[if IE]><a href=c><![endif]-->",
            b"<!--[if IE]><a href=c><![endif]-->",
            b"<!--[if IE]><a href=http://h/d/c><![endif]-->",
        ),
        (
            "absolutize-fragments = true",
            "--no-absolutize-fragments",
            b"<a href=#f>",
            b"<a href=http://h/d/p#f>",
            b"<a href=#f>",
        ),
        (
            "remove-base = true",
            "--no-remove-base",
            b"<base href=/b/><a href=x>",
            b"<a href=http://h/b/x>",
            b"<base href=http://h/b/><a href=http://h/b/x>",
        ),
        ("non-strict = true", "--no-non-strict", b"<a href=http:g>", b"<a href=http://h/d/g>", b"<a href=http:g>"),
    ],
)
def test_the_command_line_turns_off_what_a_configuration_file_turned_on(
    tmp_path: Path, setting: str, override: str, page: bytes, by_the_file: bytes, by_the_command_line: bytes
) -> None:
    (tmp_path / "rewriter.toml").write_text(f'url = "http://h/d/p"\n{setting}\n', encoding="utf-8")
    done = rewriter(tmp_path, "rewrite", "-", stdin=page)
    assert (done.returncode, done.stdout) == (0, by_the_file)
    done = rewriter(tmp_path, "rewrite", "-", override, stdin=page)
    assert (done.returncode, done.stdout) == (0, by_the_command_line)


def test_require_base_and_quiet_from_a_file_are_undone_on_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "rewriter.toml").write_text("require-base = true\nquiet = true\n", encoding="utf-8")
    (tmp_path / "a.html").write_bytes(b"<a href=x>")
    assert rewriter(tmp_path, "rewrite", "a.html").returncode == 1  # no base: required, so it fails
    done = rewriter(tmp_path, "rewrite", "a.html", "--no-require-base")
    assert (done.returncode, done.stdout) == (1, b"<a href=x>")  # kept relative, and named
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.html").write_bytes(b"<a href=x>")
    assert rewriter(tmp_path, "rewrite", "d", "-o", "o1", "--url", URL, "--no-require-base").stderr == b""
    summary = rewriter(tmp_path, "rewrite", "d", "-o", "o2", "--url", URL, "--no-quiet").stderr
    assert SUMMARY.fullmatch(summary.decode().strip()) is not None


@pytest.mark.parametrize(
    ("file", "text", "key", "reason"),
    [
        ("rewriter.toml", "bogus = 1\n", "'bogus'", "is not an option of rewriter"),
        ("rewriter.toml", 'jobs = "2"\n', "'jobs'", "must be an integer"),
        ("rewriter.toml", "quiet = 1\n", "'quiet'", "must be true or false"),
        ("rewriter.toml", 'rules = "rfc9999"\n', "'rules'", "must be one of rfc1808, rfc2396, rfc3986, whatwg"),
        (
            "rewriter.toml",
            "in-place = true\n",
            "'in-place'",
            "can only be given on the command line: it makes a run modify its inputs",
        ),
        (
            "rewriter.toml",
            'output = "out"\n',
            "'output'",
            "can only be given on the command line: it names a path to write",
        ),
        (
            "pyproject.toml",
            "[tool.rewriter]\nin_place = true\n",
            "'in_place'",
            "can only be given on the command line: it makes a run modify its inputs",
        ),
        ("pyproject.toml", "[tool.rewriter]\nfoo-bar = 1\n", "'foo-bar'", "is not an option of rewriter"),
    ],
)
def test_a_bad_configuration_is_a_usage_error_naming_the_file_and_key(
    tmp_path: Path, file: str, text: str, key: str, reason: str
) -> None:
    _config_site(tmp_path)
    (tmp_path / file).write_text(text, encoding="utf-8")
    done = rewriter(tmp_path, "rewrite", "site/p.html", "--in-place")
    assert done.returncode == 2
    assert err_lines(done) == [f"rewriter: {tmp_path / file}: {key} {reason}"]
    assert (tmp_path / "site" / "p.html").read_bytes() == CONFIG_PAGE  # nothing was done


# --------------------------------------------------------------------------
# What is said on stderr, help, and usage errors
# --------------------------------------------------------------------------


def test_quiet_and_summary(tmp_path: Path) -> None:
    _two_pages(tmp_path)
    done = rewriter(tmp_path, "rewrite", "a.html", "sub", "-o", "out", "--url", URL, "-q")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    # Failures are still named with -q; only the summary goes.
    done = rewriter(tmp_path, "rewrite", "a.html", "nope.html", "-o", "out2", "--url", URL, "-q")
    assert (done.returncode, err_lines(done)) == (1, ["rewriter: nope.html: no such file or folder"])
    # Without -q, a folder prints the summary, even for one file in it; no bar on a pipe.
    done = rewriter(tmp_path, "rewrite", "sub", "-o", "out3", "--url", URL)
    assert done.returncode == 0
    [summary] = err_lines(done)
    figures = SUMMARY.fullmatch(summary)
    assert figures is not None and figures["files"] == "1"
    assert summary.startswith("rewriter: 1 input: 1 rewritten, 0 unchanged, 0 failed; links: 1 rewritten, 0 kept")
    assert b"\r" not in done.stderr and b"\x1b[" not in done.stderr
    # One file to one output: the summary too (issue 32: every run says what it did).
    done = rewriter(tmp_path, "rewrite", "a.html", "-o", "one.html", "--url", URL)
    [summary] = err_lines(done)
    figures = SUMMARY.fullmatch(summary)
    assert done.returncode == 0 and figures is not None and figures["files"] == "1"


def test_help_shows_examples_and_exit_codes(tmp_path: Path) -> None:
    done = rewriter(tmp_path, "rewrite", "--help")
    assert (done.returncode, done.stderr) == (0, b"")
    text = done.stdout.decode()
    assert "examples:\n  rewriter rewrite saved.html --url https://example.org/docs/page.html -o page.html\n" in text
    assert "  rewriter rewrite - --url https://example.org/ < page.html > absolute.html\n" in text
    assert "exit codes: 0 all done; 1 some file, part or link failed (each named on stderr); 2 usage error" in text
    for option in ("--in-place", "--backup SUFFIX", "--include GLOB", "--exclude GLOB", "-j N", "--report FILE", "-q"):
        assert option in text


def test_output_usage_errors(tmp_path: Path) -> None:
    _two_pages(tmp_path)
    # Several inputs and no -o: a usage error, nothing on stdout.
    done = rewriter(tmp_path, "rewrite", "a.html", "sub/b.html", "--url", URL)
    assert (done.returncode, done.stdout) == (2, b"")
    assert err_lines(done) == ["rewriter: several inputs need -o DIR (a folder for the outputs) or --in-place"]
    # Several inputs and -o naming a file: a usage error, the file untouched.
    done = rewriter(tmp_path, "rewrite", "a.html", "sub/b.html", "-o", "a.html")
    assert (done.returncode, err_lines(done)) == (
        2,
        ["rewriter rewrite: several inputs need -o DIR, and a.html is a file"],
    )
    assert (tmp_path / "a.html").read_bytes() == b"<a href=x>"
    # A folder and no -o or --in-place: named, exit 1.
    done = rewriter(tmp_path, "rewrite", "sub")
    assert (done.returncode, done.stdout) == (1, b"")
    assert err_lines(done)[0] == "rewriter: sub: a folder needs -o DIR or --in-place"
    # -j 0 is a usage error.
    done = rewriter(tmp_path, "rewrite", "sub", "-o", "out", "-j", "0")
    assert (done.returncode, err_lines(done)) == (2, ["rewriter rewrite: -j needs at least 1"])
    assert not (tmp_path / "out").exists()
