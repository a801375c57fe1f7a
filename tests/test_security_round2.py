"""Issue 30, second round: attacks on the run's own files that the first round's tests did not make.

- A symbolic link (or a second name, a pipe, a folder) planted as one file of the work folder's
  ``pieces/`` or ``reports/``: before, a run passed over it in silence (a fresh run removed it, a
  resumed one did the piece again); now it is named and refused, exit 2, as a link at the folder is.
- A journal line far longer than any run writes: before, read whole into memory (``readline()``
  without a bound), however large; now refused unread past 64 MiB, with its line number.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from test_security_run import URL, contents, resume, rewriter, stopped_run

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX symbolic links, pipes, hard links")


def mbox(messages: int = 30) -> bytes:
    return b"".join(
        b"From a@b Mon Jan  1 00:00:00 2024\nContent-Type: text/html\nContent-Location: http://h/%d/\n\n"
        b"<a href=x%d>x</a>\n%s\n\n" % (number, number, b"pad" * 3000)
        for number in range(messages)
    )


def stopped_mbox(tmp_path: Path, jobs: str) -> tuple[list[str], Path]:
    """An mbox rewritten in pieces by a run stopped after its last job: the command, and its
    ``pieces/`` (several piece files waiting to be joined)."""
    (tmp_path / "in.mbox").write_bytes(mbox())
    command = ["rewrite", "in.mbox", "-o", "out.mbox", "--piece-size", "64K", "-j", jobs]
    done = rewriter(tmp_path, *command, stopped=True)
    assert done.returncode == 0, done.stderr
    pieces = tmp_path / ".out.mbox.rewriter-run" / "pieces"
    assert len(list(pieces.iterdir())) > 2
    return command, pieces


@posix_only
@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("resumed", [False, True])
@pytest.mark.parametrize("planted", ["link to a secret", "hard link", "named pipe", "folder"])
def test_a_piece_file_planted_in_the_work_folder_is_named_and_refused(
    tmp_path: Path, planted: str, resumed: bool, jobs: str
) -> None:
    command, pieces = stopped_mbox(tmp_path, jobs)
    secret = tmp_path / "secret"
    secret.write_bytes(b"From x\n\nSECRET of another user\n")
    piece = sorted(pieces.iterdir())[1]
    piece.unlink()
    if planted == "link to a secret":
        piece.symlink_to(secret)
    elif planted == "hard link":
        os.link(secret, piece)
    elif planted == "named pipe":
        os.mkfifo(piece)
    else:
        piece.mkdir()
        (piece / "inside").write_bytes(b"x")
    before = (tmp_path / "out.mbox").read_bytes() if (tmp_path / "out.mbox").exists() else None
    done = rewriter(tmp_path, *command, *["--resume"] * resumed, timeout=60)
    said = done.stderr.decode()
    assert done.returncode == 2, said
    assert f"pieces/{piece.name} " in said and "cannot keep the journal" in said, said
    assert secret.read_bytes() == b"From x\n\nSECRET of another user\n"
    after = (tmp_path / "out.mbox").read_bytes() if (tmp_path / "out.mbox").exists() else None
    assert after == before and (after is None or b"SECRET" not in after)


@posix_only
def test_a_report_file_planted_as_a_link_is_named_and_refused(tmp_path: Path) -> None:
    journal, _ = stopped_run(tmp_path, "--report", "first.jsonl")
    reports = journal.parent / "reports"
    reports.mkdir(exist_ok=True)
    (tmp_path / "secret").write_bytes(b'{"secret": 1}\n')
    (reports / ("0" * 32 + ".jsonl")).symlink_to(tmp_path / "secret")
    before = contents(tmp_path / "out")
    done = resume(tmp_path, "--report", "first.jsonl")
    assert done.returncode == 2, done.stderr
    assert "reports/" + "0" * 32 + ".jsonl is a symbolic link" in done.stderr.decode()
    assert contents(tmp_path / "out") == before


@pytest.mark.parametrize("where", ["header", "entry", "last line"])
def test_a_journal_line_longer_than_any_run_writes_is_refused_unread(tmp_path: Path, where: str) -> None:
    journal, _ = stopped_run(tmp_path)
    header, *lines = journal.read_bytes().splitlines(keepends=True)
    long = b'{"key": "' + b"a" * (65 << 20) + b'"}'
    if where == "header":
        data = long + b"\n" + b"".join(lines)
    elif where == "entry":
        data = header + long + b"\n" + b"".join(lines)
    else:  # no line break after it: not a line a killed run left unfinished either
        data = header + b"".join(lines) + long
    journal.write_bytes(data)
    done = resume(tmp_path)
    said = done.stderr.decode()
    assert done.returncode == 2, said
    assert "cannot resume" in said and "longer than 67,108,864 bytes" in said, said
    if where != "header":
        assert f"line {2 if where == 'entry' else 6}: " in said, said


@pytest.mark.parametrize("planted", ["folder", "named pipe"])
def test_a_journal_that_is_no_regular_file_is_refused(tmp_path: Path, planted: str) -> None:
    site_of_tmp = tmp_path / "site"
    site_of_tmp.mkdir()
    (site_of_tmp / "a.html").write_bytes(b'<a href="b.html">b</a>')
    work = tmp_path / "out" / ".rewriter-run"
    work.mkdir(parents=True)
    if planted == "folder":
        (work / "journal.jsonl").mkdir()
    else:
        os.mkfifo(work / "journal.jsonl")
    for extra in ([], ["--resume"]):
        done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url", URL, *extra, timeout=60)
        assert done.returncode == 2, done.stderr
        assert "journal.jsonl is a" in done.stderr.decode()


# --------------------------------------------------------------------------
# A configuration file met on the walk up
# --------------------------------------------------------------------------


def _configured(tmp_path: Path, text: str, name: str = "rewriter.toml") -> Path:
    """A page in a folder below a configuration file *text*: the run is made in the folder."""
    (tmp_path / name).write_text(text)
    folder = tmp_path / "deep" / "er"
    folder.mkdir(parents=True)
    (folder / "a.html").write_bytes(b'<a href="b.html">b</a>')
    return folder


DEEP_TOML = [
    ("an array nested 100,000 deep", "rules = " + "[" * 100_000 + "]" * 100_000 + "\n"),
    ("inline tables nested 3,000 deep", "rules = " + "{a = " * 3_000 + "1" + "}" * 3_000 + "\n"),
]


@pytest.mark.parametrize("name", ["rewriter.toml", "pyproject.toml"])
@pytest.mark.parametrize(("what", "text"), DEEP_TOML, ids=[what for what, _ in DEEP_TOML])
@pytest.mark.parametrize("verb", [["rewrite", "a.html", "-o", "out.html"], ["links", "a.html"], ["pack", "a.html"]])
def test_a_configuration_nested_too_deeply_is_named_never_a_traceback(
    tmp_path: Path, name: str, what: str, text: str, verb: list[str]
) -> None:
    """Before: tomllib's RecursionError as a traceback, from any folder below the file."""
    if name == "pyproject.toml":
        text = "[tool.rewriter]\n" + text
    folder = _configured(tmp_path, text, name)
    done = rewriter(folder, *verb, "--url", URL)
    assert done.returncode == 2, done.stderr
    assert f"{tmp_path / name}: its values are nested too deeply to read" in done.stderr.decode()


def test_a_configuration_file_too_large_to_be_one_is_refused_unread(tmp_path: Path) -> None:
    """Before: read whole, however large (a sparse file of 4 GiB planted above the tree)."""
    folder = _configured(tmp_path, "")
    os.truncate(tmp_path / "rewriter.toml", 4 << 30)
    done = rewriter(folder, "links", "a.html", "--url", URL)
    assert done.returncode == 2, done.stderr
    assert "rewriter.toml: cannot be read: larger than 4,194,304 bytes" in done.stderr.decode()


@pytest.mark.parametrize(("key", "value"), [("jobs", "100000"), ("jobs", "-3"), ("max-size", '"100G"')])
def test_a_configuration_file_cannot_lift_the_bounds_of_a_run(tmp_path: Path, key: str, value: str) -> None:
    """Before: ``jobs = 100000`` in a file above the tree started that many worker processes (one
    fork each, until the system refused), and ``max-size = "100G"`` let one WARC body inflate to
    100 GiB in memory. From a file, jobs are at most four per core and --max-size at most its
    default; the command line may still ask for more."""
    folder = _configured(tmp_path, f"{key} = {value}\n")
    done = rewriter(folder, "rewrite", "a.html", "-o", "out.html", "--url", URL)
    assert done.returncode == 2, done.stderr
    said = done.stderr.decode()
    assert f"rewriter.toml: '{key}' " in said and "command line" in said, said
    assert not (folder / "out.html").exists()
    allowed = {"jobs": "2", "max-size": '"10M"'}[key]
    (tmp_path / "rewriter.toml").write_text(f"{key} = {allowed}\n")
    assert rewriter(folder, "rewrite", "a.html", "-o", "out.html", "--url", URL).returncode == 0
    given = {"jobs": ["-j", "40"], "max-size": ["--max-size", "2G"]}[key]
    (folder / "out.html").unlink()
    done = rewriter(folder, "rewrite", "a.html", "-o", "out.html", "--url", URL, *given)
    assert done.returncode == 0, done.stderr


# --------------------------------------------------------------------------
# --url-map: a line that contradicts another is named, never one taken at random
# --------------------------------------------------------------------------

AMBIGUOUS_MAPS = [
    ("a path given two URLs", "map.csv", "a.html,http://h/one.html\na.html,http://h/two.html\n", "line 2: 'a.html'"),
    ("the same file by two spellings", "map.csv", "a.html,http://h/one.html\n./a.html,http://h/two.html\n", "line 2"),
    ("JSON path twice", "map.jsonl", '{"path": "a.html", "url": "http://h/a.html", "path": "b.html"}\n', "line 1"),
    ("JSON url twice", "map.jsonl", '{"url": "http://h/x", "path": "a.html", "url": "http://h/y"}\n', "line 1"),
]


@pytest.mark.parametrize(("what", "name", "text", "where"), AMBIGUOUS_MAPS, ids=[row[0] for row in AMBIGUOUS_MAPS])
def test_an_ambiguous_url_map_is_named_and_refused(tmp_path: Path, what: str, name: str, text: str, where: str) -> None:
    """Before: one of the two URLs was taken (the last), in silence: a map made from two tools'
    outputs could rewrite a page against the wrong site with no word said."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_bytes(b'<a href="b.html">b</a>')
    (site / "b.html").write_bytes(b"b")
    (tmp_path / name).write_text(text)
    done = rewriter(tmp_path, "rewrite", "site", "-o", "out", "--url-map", name)
    said = done.stderr.decode()
    assert done.returncode == 2, said
    assert f"--url-map {name}, {where}" in said and "the map is not used, and nothing was done" in said, said
    assert not (tmp_path / "out").exists()


def test_the_same_url_given_twice_and_duplicates_of_other_tools_fields_are_fine(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_bytes(b'<a href="b.html">b</a>')
    (tmp_path / "map.csv").write_text("a.html,http://h/d/a.html\n./a.html,http://h/d/a.html\n")
    (tmp_path / "map.jsonl").write_text('{"path": "a.html", "url": "http://h/d/a.html", "x": {"path": 1, "path": 2}}\n')
    for name in ("map.csv", "map.jsonl"):
        done = rewriter(tmp_path, "rewrite", "site", "-o", f"out-{name}", "--url-map", name)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / f"out-{name}" / "a.html").read_bytes() == b'<a href="http://h/d/b.html">b</a>'


# --------------------------------------------------------------------------
# The C extension and its Python twins agree on a str subclass that lies
# --------------------------------------------------------------------------


class _LyingText(str):
    """A str whose length and items say something else than the characters it holds."""

    def __len__(self) -> int:
        return 10**9

    def __getitem__(self, index: object) -> str:
        return "x"

    def find(self, *arguments: object) -> int:  # type: ignore[override]
        return 1


_TEXT_CALLS = [
    ("tag_attributes", lambda t: (t("<a href=x title>"), 0)),
    ("tag_end", lambda t: (t("<a href=x>"), 0)),
    ("end_tag", lambda t: (t("<p></style></x>"), t("style"), 0)),
    ("end_tag", lambda t: (t("abc"), "x", 0)),
    ("scan_css", lambda t: (t("a{b:url(x)}"),)),
    ("flattened", lambda t: (t("a\nb"),)),
    ("conditional_head", lambda t: (t("<!--[if IE]>"), 0)),
    ("utf8_offsets", lambda t: (t("aé😀"), [0, 1, 2, 3], False)),
    ("utf8_splice", lambda t: (t("aé"), "aé".encode(), [(0, 1, "x")], False, str.encode)),
    ("named_start_tags", lambda t: (t("<p><base href=x>"), [_Col(0), _Col(3)], None, t("base"))),
]


class _Col:
    def __init__(self, column: int) -> None:
        self.source_col = column

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Col) and other.source_col == self.source_col

    __hash__ = object.__hash__


@pytest.mark.parametrize(("name", "call"), _TEXT_CALLS, ids=[name for name, _ in _TEXT_CALLS])
def test_the_twins_read_a_str_subclass_by_its_characters_as_the_c_does(name: str, call: object) -> None:
    """Before: the Python twins of end_tag, named_start_tags, tag_attributes and tag_end read a str
    subclass through its own __len__, __getitem__ and find, where the C reads its characters:
    end_tag gave 1,000,000,000 against 0, named_start_tags found nothing against two tags."""
    from rewriter.document.speedups import compiled, reference

    if compiled is None:
        pytest.skip("the C extension is not built")
    plain = getattr(compiled, name)(*call(str))  # type: ignore[operator]
    for function in (getattr(compiled, name), reference[name]):
        assert function(*call(_LyingText)) == plain, function  # type: ignore[operator]


# --------------------------------------------------------------------------
# The temporaries a killed run left beside a WACZ or an MHTML it writes
# --------------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("verb", ["rewrite x.wacz -o y.wacz", "pack -o page.mhtml"])
def test_the_temporaries_a_killed_run_left_beside_a_wacz_or_a_pack_are_removed_and_counted(
    tmp_path: Path, verb: str
) -> None:
    """Before: ``rewrite x.wacz -o y.wacz`` and ``pack`` never looked for them, so each killed run
    left one more ``.NAME.rewriter-....tmp`` beside the output for good. Only regular files of the
    project's pattern for that name are removed; a link of that pattern is left alone."""
    if verb.startswith("rewrite"):
        pytest.importorskip("wacz.main")
        import zipfile

        with zipfile.ZipFile(tmp_path / "x.wacz", "w") as archive:
            archive.write(Path(__file__).resolve().parent.parent / "fixtures/warc/crawl.warc.gz", "archive/a.warc.gz")
        target, command = "y.wacz", ["rewrite", "x.wacz", "-o", "y.wacz"]
    else:
        (tmp_path / "page.html").write_bytes(b'<a href="b.html">b</a>')
        target, command = "page.mhtml", ["pack", "page.html", "-o", "page.mhtml", "--url", URL]
    left = [tmp_path / f".{target}.rewriter-{number:016x}.tmp" for number in range(2)]
    for path in left:
        path.write_bytes(b"half a file")
    link = tmp_path / f".{target}.rewriter-{'a' * 16}.tmp"
    link.symlink_to(tmp_path / "precious")
    (tmp_path / "precious").write_bytes(b"keep")
    other = tmp_path / f".other.html.rewriter-{'b' * 16}.tmp"
    other.write_bytes(b"another file's")
    done = rewriter(tmp_path, *command)
    assert done.returncode == 0, done.stderr
    assert "removed 2 temporary files a killed run left" in done.stderr.decode()
    assert not any(path.exists() for path in left)
    assert link.is_symlink() and (tmp_path / "precious").read_bytes() == b"keep" and other.exists()
