"""Files and processes (issue 18, points 6, 7, 9, 11 and 12): what the command does to the
files around it, and what reaches the terminal.

- In place, a file another process changed (or replaced, or removed) during the run is left
  as it is, and named; the others are still rewritten.
- Under ``-o DIR``, no symbolic link inside DIR is followed: a planted link to a folder is
  refused, by name, and nothing is written where it points.
- A file whose name has 255 bytes (NAME_MAX) can be rewritten: the temporary name is short.
- Bytes of the documents (file names, links, MIME headings) never reach standard error, or
  the listings of ``links`` and ``explain``, as raw control characters; JSON stays valid.
- A named pipe is never replaced in place; a deleted working folder and a configuration file
  that is not UTF-8 give a clear message, never a traceback.

Tests go through the command line in subprocesses (``cwd=tmp_path``, as tests/test_cli_batch.py),
or through the public functions of rewriter.run.batch when another process has to act at an
exact moment of a run (it is stood in for by the engine call of that run).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import on_a_terminal, without_summary

import rewriter.run.batch as batch
import rewriter.run.work as work
from rewriter.cli.commands import escape_controls, main
from rewriter.problems import said, said_all
from rewriter.run.batch import Job, Settings, plan, run_job, write_atomically

URL = "http://h/base/"
PAGE = b"<a href=x.html>x</a>"
REWRITTEN = b"<a href=http://h/base/x.html>x</a>"
CHANGED = "changed by another process during the run; left as it is"
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file system semantics")


def rewriter(cwd: Path, *argv: str, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run the tool as a user would; never a traceback, whatever the case."""
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", *argv], cwd=cwd, input=stdin, capture_output=True, timeout=timeout
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def temporaries(root: Path) -> list[Path]:
    """Our temporary files anywhere under *root* (.NAME.rewriter-RANDOM.tmp)."""
    return [path for path in root.rglob(".*") if ".rewriter-" in path.name and path.name.endswith(".tmp")]


# --------------------------------------------------------------------------
# 6. In place: a file changed by another process during the run is left as it is
# --------------------------------------------------------------------------


@contextlib.contextmanager
def another_process(monkeypatch: pytest.MonkeyPatch, path: Path, act: str) -> Iterator[None]:
    """While the engine works on *path* (after it was read, before the rename), something
    else acts on it: 'append' to it, 'replace' it by a file of the same size (a new inode),
    'touch' it (a new mtime only) or 'remove' it."""
    engine = work.process

    def process(data: bytes, name: str, settings: Settings, **options: bool) -> object:
        if Path(name).name == path.name:
            if act == "append":
                with path.open("ab") as stream:
                    stream.write(b"<!-- their edit -->")
            elif act == "replace":
                other = path.with_name("other.tmp-of-theirs")
                other.write_bytes(data.upper())
                os.replace(other, path)
            elif act == "touch":
                status = path.stat()
                os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns - 1_000_000_000))
            else:
                path.unlink()
        return engine(data, name, settings, **options)

    monkeypatch.setattr(work, "process", process)  # what run_job calls
    yield


@pytest.mark.parametrize("act", ["append", "replace", "touch"])
def test_in_place_a_file_changed_during_the_run_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, act: str
) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(PAGE)
    with another_process(monkeypatch, page, act):
        outcome = run_job(Job(str(page), str(page), "p.html", in_place=True), Settings(url=URL))
    assert (outcome.state, outcome.ok) == ("failed", False)
    assert said_all(outcome.messages) == [f"rewriter: p.html: {CHANGED}"]
    expected = {"append": PAGE + b"<!-- their edit -->", "replace": PAGE.upper(), "touch": PAGE}[act]
    assert page.read_bytes() == expected  # their change, not our rewrite
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.html"]  # no temporary left


def test_in_place_a_file_removed_during_the_run_is_not_written_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(PAGE)
    with another_process(monkeypatch, page, "remove"):
        outcome = run_job(Job(str(page), str(page), "p.html", in_place=True), Settings(url=URL))
    assert outcome.state == "failed"
    assert said_all(outcome.messages) == ["rewriter: p.html: removed by another process during the run; not written"]
    assert list(tmp_path.iterdir()) == []


def test_in_place_a_changed_file_keeps_its_old_backup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page, backup = tmp_path / "p.html", tmp_path / "p.html.orig"
    page.write_bytes(PAGE)
    backup.write_bytes(b"an earlier backup")
    with another_process(monkeypatch, page, "append"):
        outcome = run_job(Job(str(page), str(page), "p.html", in_place=True), Settings(url=URL, backup=".orig"))
    assert said_all(outcome.messages) == [f"rewriter: p.html: {CHANGED}"]
    assert page.read_bytes() == PAGE + b"<!-- their edit -->"
    assert backup.read_bytes() == b"an earlier backup"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.html", "p.html.orig"]


def test_in_place_an_mbox_changed_while_it_streams_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rewriter.containers.mailbox

    mbox = tmp_path / "a.mbox"
    original = (
        b"From a@example.org Mon Jan  1 00:00:00 2024\nContent-Type: text/html\n"
        b"Content-Location: http://h/\n\n<a href=x>x</a>\n"
    )
    mbox.write_bytes(original)
    streamed = rewriter.containers.mailbox.rewrite_mbox

    def rewrite_mbox(*args: object, **options: object) -> Iterator[object]:
        for report in streamed(*args, **options):  # type: ignore[arg-type]
            with mbox.open("ab") as stream:  # a mail program delivers meanwhile
                stream.write(b"From b Tue\n\nnew mail\n")
            yield report

    monkeypatch.setattr(rewriter.containers.mailbox, "rewrite_mbox", rewrite_mbox)
    outcome = run_job(Job(str(mbox), str(mbox), "a.mbox", in_place=True), Settings())
    assert said(outcome.messages[-1]) == f"rewriter: a.mbox: {CHANGED}"
    assert mbox.read_bytes() == original + b"From b Tue\n\nnew mail\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.mbox"]


def test_the_command_names_the_changed_file_and_rewrites_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.html", "b.html", "c.html"):
        (tmp_path / name).write_bytes(PAGE)
    monkeypatch.chdir(tmp_path)
    with another_process(monkeypatch, tmp_path / "b.html", "append"):
        code = main(["rewrite", "--in-place", "a.html", "b.html", "c.html", "--url", URL, "-j", "1", "-q"])
    assert code == 1
    assert capsys.readouterr().err == f"rewriter: b.html: {CHANGED}\n"
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "c.html").read_bytes() == REWRITTEN
    assert (tmp_path / "b.html").read_bytes() == PAGE + b"<!-- their edit -->"
    assert temporaries(tmp_path) == []


def test_write_atomically_refuses_a_file_that_is_not_the_one_read(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(PAGE)
    read = page.stat()
    page.write_bytes(PAGE + b"!")
    with pytest.raises(OSError, match="changed by another process"):
        write_atomically(page, REWRITTEN, expect=read)
    assert page.read_bytes() == PAGE + b"!"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["p.html"]
    write_atomically(page, REWRITTEN, expect=page.stat())  # the file as it is now: written
    assert page.read_bytes() == REWRITTEN


# --------------------------------------------------------------------------
# 7. -o DIR: no symbolic link inside DIR is followed
# --------------------------------------------------------------------------


def _tree(root: Path) -> None:
    (root / "in" / "sub" / "deep").mkdir(parents=True)
    (root / "in" / "top.html").write_bytes(PAGE)
    (root / "in" / "sub" / "page.html").write_bytes(PAGE)
    (root / "in" / "sub" / "deep" / "page.html").write_bytes(PAGE)
    (root / "elsewhere").mkdir()


@posix_only
def test_a_link_to_a_folder_inside_the_output_is_not_followed(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "sub").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out", "--url", URL, "-q", "-j", "1")
    assert done.returncode == 1
    lines = done.stderr.decode().splitlines()
    assert sorted(lines) == [
        f"rewriter: {Path('in/sub/deep/page.html')}: not written: {Path('out/sub')} is a symbolic link; "
        "no link inside the folder written is followed",
        f"rewriter: {Path('in/sub/page.html')}: not written: {Path('out/sub')} is a symbolic link; "
        "no link inside the folder written is followed",
    ]
    assert list((tmp_path / "elsewhere").iterdir()) == []  # nothing went through the link
    assert (tmp_path / "out" / "top.html").read_bytes() == REWRITTEN  # the others are written
    assert (tmp_path / "out" / "sub").is_symlink()
    assert temporaries(tmp_path) == []


@posix_only
def test_a_link_deeper_in_the_output_and_a_link_for_a_whole_tree(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "out" / "sub").mkdir(parents=True)
    (tmp_path / "out" / "sub" / "deep").symlink_to("../../elsewhere")
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out", "--url", URL, "-q")
    assert done.returncode == 1
    assert done.stderr.decode().count(f"{Path('out/sub/deep')} is a symbolic link") == 1
    assert (tmp_path / "out" / "sub" / "page.html").read_bytes() == REWRITTEN
    # Several trees: each goes to DIR/NAME, and DIR/NAME may not be a link either.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "o.html").write_bytes(PAGE)
    (tmp_path / "out2").mkdir()
    (tmp_path / "out2" / "other").symlink_to(tmp_path / "elsewhere")
    done = rewriter(tmp_path, "rewrite", "in", "other", "-o", "out2", "--url", URL, "-q")
    assert done.returncode == 1
    assert f"rewriter: {Path('other/o.html')}: not written: {Path('out2/other')} is a symbolic link" in (
        done.stderr.decode()
    )
    assert (tmp_path / "out2" / "in" / "sub" / "deep" / "page.html").read_bytes() == REWRITTEN
    assert list((tmp_path / "elsewhere").iterdir()) == []
    assert temporaries(tmp_path) == []


@posix_only
def test_a_link_in_place_of_an_output_file_is_replaced_not_followed(tmp_path: Path) -> None:
    _tree(tmp_path)
    victim = tmp_path / "elsewhere" / "victim.html"
    victim.write_bytes(b"theirs")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "top.html").symlink_to(victim)
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out", "--url", URL, "-q")
    assert done.returncode == 0, done.stderr
    assert victim.read_bytes() == b"theirs"
    assert not (tmp_path / "out" / "top.html").is_symlink()
    assert (tmp_path / "out" / "top.html").read_bytes() == REWRITTEN


@posix_only
def test_the_output_folder_itself_may_be_a_link(tmp_path: Path) -> None:
    """The folder named with -o is the user's choice: a link to it is followed, as always."""
    _tree(tmp_path)
    (tmp_path / "to-elsewhere").symlink_to(tmp_path / "elsewhere")
    done = rewriter(tmp_path, "rewrite", "in", "-o", "to-elsewhere", "--url", URL, "-q")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "elsewhere" / "sub" / "deep" / "page.html").read_bytes() == REWRITTEN


@posix_only
def test_a_link_inside_a_maildir_output_is_not_followed(tmp_path: Path) -> None:
    maildir = tmp_path / "Mail"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    (maildir / "new" / "1.host").write_bytes(b"Content-Type: text/html\nContent-Location: http://h/\n\n<a href=x>x</a>")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "new").symlink_to(tmp_path / "elsewhere")
    done = rewriter(tmp_path, "rewrite", "Mail", "-o", "out")
    assert done.returncode == 1
    assert f"rewriter: Mail: not written: {Path('out/new')} is a symbolic link" in done.stderr.decode()
    assert list((tmp_path / "elsewhere").iterdir()) == []


@posix_only
def test_a_link_inside_a_folder_rewritten_in_place_is_not_followed(tmp_path: Path) -> None:
    """The tree is walked without following links; a folder swapped for one after the walk
    is not written through either (stood in for here by a plan made before the swap)."""
    _tree(tmp_path)
    jobs, problems = plan([str(tmp_path / "in")], in_place=True)
    assert problems == []
    (tmp_path / "in" / "sub").rename(tmp_path / "moved")
    (tmp_path / "in" / "sub").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "page.html").write_bytes(PAGE)
    outcomes = {outcome.shown: outcome for outcome in batch.run(jobs, Settings(url=URL))}
    outcome = outcomes[str(tmp_path / "in" / "sub" / "page.html")]
    assert outcome.state == "failed"
    assert said_all(outcome.messages) == [
        f"rewriter: {tmp_path / 'in' / 'sub' / 'page.html'}: not written: {tmp_path / 'in' / 'sub'} is a symbolic "
        "link; no link inside the folder written is followed"
    ]
    assert (tmp_path / "elsewhere" / "page.html").read_bytes() == PAGE
    assert (tmp_path / "in" / "top.html").read_bytes() == REWRITTEN
    assert temporaries(tmp_path) == []


# --------------------------------------------------------------------------
# 9. Names of 255 bytes
# --------------------------------------------------------------------------


def _longest_name(folder: Path, suffix: str, filler: str = "a") -> str:
    """A file name of exactly 255 bytes (NAME_MAX here), ending with *suffix*."""
    if os.pathconf(folder, "PC_NAME_MAX") < 255:
        pytest.skip("this file system takes names shorter than 255 bytes")
    room = 255 - len(suffix.encode())
    width = len(filler.encode())
    name = filler * (room // width) + "b" * (room % width) + suffix
    assert len(name.encode()) == 255
    return name


@posix_only
@pytest.mark.parametrize("filler", ["a", "é", "日"])
def test_a_255_byte_name_is_rewritten_in_place(tmp_path: Path, filler: str) -> None:
    name = _longest_name(tmp_path, ".html", filler)
    (tmp_path / name).write_bytes(PAGE)
    done = rewriter(tmp_path, "rewrite", "--in-place", name, "--url", URL, "--backup", "~")
    # NAME~ is 256 bytes: the backup cannot be made, and the file is left as it was.
    assert done.returncode == 1
    said = without_summary(done.stderr.decode())
    assert said == f"rewriter: {name}: the backup cannot be made: File name too long: {name}~\n"
    assert (tmp_path / name).read_bytes() == PAGE
    done = rewriter(tmp_path, "rewrite", "--in-place", name, "--url", URL)
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    assert (tmp_path / name).read_bytes() == REWRITTEN
    assert [path.name for path in tmp_path.iterdir()] == [name]


@posix_only
def test_a_255_byte_name_is_written_under_an_output_folder(tmp_path: Path) -> None:
    name = _longest_name(tmp_path, ".html")
    (tmp_path / "in" / "deep").mkdir(parents=True)
    (tmp_path / "in" / "deep" / name).write_bytes(PAGE)
    (tmp_path / "in" / name).write_bytes(PAGE)
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out", "--url", URL, "-q")
    assert (done.returncode, done.stderr) == (0, b"")
    assert (tmp_path / "out" / name).read_bytes() == REWRITTEN
    assert (tmp_path / "out" / "deep" / name).read_bytes() == REWRITTEN
    done = rewriter(tmp_path, "rewrite", str(Path("in") / name), "-o", "one.html", "--url", URL)
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    done = rewriter(tmp_path, "rewrite", str(Path("in") / name), "-o", name, "--url", URL)  # to a 255-byte name
    assert (done.returncode, (tmp_path / name).read_bytes()) == (0, REWRITTEN)
    assert temporaries(tmp_path) == []


@posix_only
def test_a_temporary_left_by_a_killed_run_of_a_long_name_is_not_an_input(tmp_path: Path) -> None:
    name = _longest_name(tmp_path, ".html")
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes(PAGE)
    left = tmp_path / "in" / f".{name[:64]}.rewriter-0123456789abcdef.tmp"
    left.write_bytes(b"<a href=half>")
    done = rewriter(tmp_path, "rewrite", "in", "--in-place", "--url", URL, "--include", "*")
    assert (done.returncode, done.stderr.decode().split(": ")[1]) == (0, "1 input"), done.stderr
    assert left.read_bytes() == b"<a href=half>"


# --------------------------------------------------------------------------
# 11. Nothing from a document reaches the terminal raw
# --------------------------------------------------------------------------

# What must never be written raw: ESC (with the sequences it starts), BEL, CR, a line feed
# inside a message, DEL, C1 CSI (U+009B), RIGHT-TO-LEFT OVERRIDE (U+202E).
RAW = [b"\x1b", b"\x07", b"\r", b"\x7f", "\x9b".encode(), "\u202e".encode()]
HOSTILE_NAME = "a\x1b[2Jb\x07c\rd\x7f\u202eexe.html"
HOSTILE_LINK = "x\x1b]0;owned\x07\x9by"


def _hostile_tree(root: Path) -> Path:
    tree = root / "in"
    tree.mkdir()
    (tree / HOSTILE_NAME).write_bytes(f'<a href="{HOSTILE_LINK}">x</a>'.encode())
    (tree / "mail.eml").write_bytes(
        b"Content-Type: multipart/related; boundary=b\n\n--b\nContent-Type: text/html\n"
        b"Content-Location: http://h/\x1b[31m/\n\n<a href=y>y</a>\n--b\nContent-Type: text/css\n"
        b"Content-Transfer-Encoding: \x1b[5m\x07x\n\na{b:url(z)}\n--b--\n"
    )
    return tree


def _assert_clean(text: bytes, *, line_ends: bool = False) -> None:
    for raw in RAW:
        if raw == b"\r" and line_ends:
            continue
        assert raw not in text, (raw, text)


@posix_only
def test_messages_escape_names_links_and_headings(tmp_path: Path) -> None:
    _hostile_tree(tmp_path)
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out", "-v")  # no base for the page: -v names its link
    assert done.returncode == 1
    _assert_clean(done.stderr)
    text = done.stderr.decode()
    assert "a\\x1b[2Jb\\x07c\\x0dd\\x7f\\u202eexe.html" in text  # the name, escaped
    assert "x\\x1b]0;owned\\x07\\x9by" in text  # the link (as Python writes it)
    assert "Content-Transfer-Encoding '\\x1b[5m\\x07x'" in text  # the heading
    assert all(line.startswith("rewriter: ") for line in text.splitlines())  # one message, one line
    # The output files are the documents, byte for byte: nothing is escaped there.
    assert (tmp_path / "out" / HOSTILE_NAME).read_bytes() == f'<a href="{HOSTILE_LINK}">x</a>'.encode()


@posix_only
def test_a_name_that_is_not_utf8_is_shown_by_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in").joinpath(os.fsdecode(b"caf\xe9\x1b.html")).write_bytes(b"<a href=x>")
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out")
    assert done.returncode == 1
    assert b"caf\\xe9\\x1b.html" in done.stderr and b"\xe9" not in done.stderr and b"\x1b" not in done.stderr


@posix_only
def test_listings_escape_and_json_stays_json(tmp_path: Path) -> None:
    tree = _hostile_tree(tmp_path)
    page = str(tree / HOSTILE_NAME)
    done = rewriter(tmp_path, "links", page)
    _assert_clean(done.stdout)
    _assert_clean(done.stderr)
    assert done.stdout.decode().split("\t")[3] == "x\\x1b]0;owned\\x07\\u009by"
    done = rewriter(tmp_path, "links", page, "--json")
    _assert_clean(done.stdout)
    assert json.loads(done.stdout)["original"] == HOSTILE_LINK  # the same value, read back
    for argv in (("explain", str(tree / "mail.eml")), ("explain", str(tree / "mail.eml"), "--json")):
        done = rewriter(tmp_path, *argv)
        assert done.returncode == 0
        _assert_clean(done.stdout)
    assert "\x1b[31m" in json.loads(done.stdout)["parts"][1]["base"]
    assert r"Content-Transfer-Encoding '\x1b[5m\x07x'" in json.loads(done.stdout)["problems"][0]  # as repr() wrote it


@posix_only
@pytest.mark.parametrize("report", ["links.jsonl", "links.json"])
def test_the_report_is_valid_json_and_holds_the_values(tmp_path: Path, report: str) -> None:
    tree = _hostile_tree(tmp_path)
    (tree / os.fsdecode(b"\xff.html")).write_bytes(b"<a href=z>")
    done = rewriter(tmp_path, "rewrite", "in", "-o", "out", "--url", URL, "--report", report, "-q")
    assert done.returncode == 0, done.stderr
    data = (tmp_path / report).read_bytes()
    _assert_clean(data)
    text = data.decode("utf-8")  # UTF-8 throughout, a name that is not UTF-8 too
    records = json.loads(text) if report.endswith(".json") else [json.loads(line) for line in text.splitlines()]
    links = [record for record in records if "code" not in record]  # a problem's line has its code
    assert {record["original"] for record in links} >= {HOSTILE_LINK, "z"}
    assert {Path(record["file"]).name for record in records} >= {HOSTILE_NAME, os.fsdecode(b"\xff.html")}


def test_escape_controls_covers_every_class() -> None:
    unsafe = [chr(code) for code in (*range(0x20), *range(0x7F, 0xA0))]
    unsafe += ["\u061c", "\u200e", "\u200f", "\u2028", "\u2029", *map(chr, range(0x202A, 0x202F))]
    unsafe += [*map(chr, range(0x2066, 0x206A)), "\ud800", "\udc80", "\udcff", "\udfff"]
    for char in unsafe:
        escaped = escape_controls(char)
        assert escaped.startswith("\\") and escaped.isascii() and escaped.isprintable(), (char, escaped)
    assert escape_controls("\udcff") == "\\xff"  # a byte that is not UTF-8: shown as the byte
    kept = "plain ASCII ~!@#$%^&*()_+{}|:<>?`-=[]\\;',./ café 日本 ½ € \u200b 😀"
    assert escape_controls(kept) == kept


@posix_only
def test_messages_above_the_progress_bar_are_escaped(tmp_path: Path) -> None:
    """On a terminal the bar draws itself with control characters; the messages are escaped."""
    _hostile_tree(tmp_path)
    for index in range(3):
        (tmp_path / "in" / f"p{index}.html").write_bytes(PAGE)
    code, screen = on_a_terminal(["rewrite", "in", "-o", "out", "-j", "1"], tmp_path)
    assert code == 1
    assert b"Traceback" not in screen
    assert b"a\\x1b[2Jb\\x07c\\x0dd\\x7f\\u202eexe.html" in screen
    assert b"\x1b[2J" not in screen and b"\x07" not in screen and b"\x1b]0;" not in screen
    assert "\u202e".encode() not in screen and "\x9b".encode() not in screen


# --------------------------------------------------------------------------
# 12. Named pipes, a deleted working folder, a configuration file that is not UTF-8
# --------------------------------------------------------------------------


@posix_only
def test_a_named_pipe_is_never_replaced_in_place(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.html")
    (tmp_path / "a.html").write_bytes(PAGE)
    done = rewriter(tmp_path, "rewrite", "--in-place", "pipe.html", "a.html", "--url", URL, timeout=30)
    assert done.returncode == 1
    assert "rewriter: pipe.html: a named pipe, not a regular file: not rewritten in place" in done.stderr.decode()
    assert stat.S_ISFIFO((tmp_path / "pipe.html").lstat().st_mode)
    assert (tmp_path / "a.html").read_bytes() == REWRITTEN
    assert temporaries(tmp_path) == []


@posix_only
def test_a_named_pipe_met_by_a_job_in_place_is_refused_without_waiting(tmp_path: Path) -> None:
    """A pipe put where a planned file was: opened without waiting for a writer, refused."""
    pipe = tmp_path / "p.html"
    os.mkfifo(pipe)
    outcome = run_job(Job(str(pipe), str(pipe), "p.html", in_place=True), Settings(url=URL))
    assert said_all(outcome.messages) == ["rewriter: p.html: a named pipe, not a regular file: not rewritten in place"]
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    # A link put there instead is refused too, and its target left alone.
    link = tmp_path / "l.html"
    (tmp_path / "target.html").write_bytes(PAGE)
    link.symlink_to("target.html")
    outcome = run_job(Job(str(link), str(link), "l.html", in_place=True), Settings(url=URL))
    assert outcome.state == "failed" and "symbolic link" in outcome.messages[0]
    assert link.is_symlink() and (tmp_path / "target.html").read_bytes() == PAGE


@posix_only
def test_a_named_pipe_is_still_read_when_not_in_place(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.html")
    writer = subprocess.Popen(["sh", "-c", "printf '<a href=x>' > pipe.html"], cwd=tmp_path)
    done = rewriter(tmp_path, "rewrite", "pipe.html", "--url", URL, timeout=30)
    writer.wait(timeout=30)
    assert (done.returncode, done.stdout) == (0, b"<a href=http://h/base/x>")


@posix_only
@pytest.mark.parametrize("argv", [["rewrite", "{page}", "--url", URL], ["resolve", "http://a/", "b"], ["links", "x"]])
def test_a_deleted_working_folder_is_said_plainly(tmp_path: Path, argv: list[str]) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    doomed = tmp_path / "doomed"
    doomed.mkdir()
    script = 'rmdir "$PWD" && exec "$0" -m rewriter "$@"'
    arguments = [argument.format(page=page) for argument in argv]
    done = subprocess.run(["sh", "-c", script, sys.executable, *arguments], cwd=doomed, capture_output=True, timeout=60)
    assert not doomed.exists()
    assert b"Traceback" not in done.stderr
    assert done.returncode == 2
    assert done.stderr.decode().startswith("rewriter: the working folder cannot be found (No such file or directory)")
    doomed.mkdir()
    done = subprocess.run(
        ["sh", "-c", script, sys.executable, "--version"], cwd=doomed, capture_output=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, b"")  # --version needs no working folder
    assert done.stdout.startswith(b"rewriter ")


@pytest.mark.parametrize("name", ["rewriter.toml", "pyproject.toml"])
def test_a_configuration_file_that_is_not_utf8_is_named(tmp_path: Path, name: str) -> None:
    table = "[tool.rewriter]\n" if name == "pyproject.toml" else ""
    (tmp_path / name).write_bytes(f'{table}rules = "whatwg"\n# caf'.encode() + b"\xe9\n")
    done = rewriter(tmp_path, "resolve", "http://a/", "b")
    assert done.returncode == 2
    expected = f"rewriter: {tmp_path / name}: not UTF-8, as a TOML file must be: byte "
    assert done.stderr.decode().startswith(expected), done.stderr
    assert f"(line {2 + bool(table)}): invalid continuation byte" in done.stderr.decode()


@posix_only
def test_a_configuration_path_with_controls_is_escaped(tmp_path: Path) -> None:
    folder = tmp_path / "odd\x1b[2Jfolder"
    folder.mkdir()
    (folder / "rewriter.toml").write_bytes(b"rules = 1\n")
    done = rewriter(folder, "resolve", "http://a/", "b")
    assert done.returncode == 2
    assert b"\x1b" not in done.stderr and b"odd\\x1b[2Jfolder" in done.stderr
