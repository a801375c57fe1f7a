"""A run trusts no file it did not write: a configuration file met on the walk up from the
working folder, and an --url-map file, are the attacker's.

A ``rewriter.toml`` (or ``[tool.rewriter]``) shapes how a run reads and rewrites; one that
names a path to write, an address to connect to or a file to read beyond the inputs is
refused, naming the file and the key, and nothing is done. Every run starts in a fresh
folder under ``tmp_path``, so no configuration of the repository is read.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from conftest import err_lines, run_cli

from rewriter.cli import build_parser
from rewriter.cli.config import KEYS

PAGE = b'<a href="x.html">x</a>'
URL = "http://h/docs/"


def _site(root: Path) -> Path:
    """A working folder *root*/work holding site/page.html, and what it held, to compare."""
    (root / "work" / "site").mkdir(parents=True)
    (root / "work" / "site" / "page.html").write_bytes(PAGE)
    return root / "work"


def _everything(root: Path) -> dict[str, bytes]:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# --------------------------------------------------------------------------
# Configuration files: what a file left in a folder may choose
# --------------------------------------------------------------------------


def test_a_report_named_in_a_configuration_file_above_never_overwrites_an_input(tmp_path: Path) -> None:
    """The attack: a rewriter.toml one folder up names an input as the report; a plain run
    to standard output, without --in-place, would replace the page with its links."""
    work = _site(tmp_path)
    (tmp_path / "rewriter.toml").write_text('report = "site/page.html"\n', encoding="utf-8")
    before = _everything(tmp_path)
    done = run_cli(work, "rewrite", "site/page.html", "--url", URL)
    assert (done.returncode, done.stdout) == (2, b"")
    assert err_lines(done) == [
        f"rewriter: {tmp_path / 'rewriter.toml'}: 'report' can only be given on the command line: "
        "it names a path to write"
    ]
    assert _everything(tmp_path) == before


def test_a_dask_address_in_a_configuration_file_is_never_connected_to(tmp_path: Path) -> None:
    """The attack: ``dask = "tcp://..."`` in a pyproject.toml above makes a plain run hand every
    input's path to that scheduler. A listener on loopback stands for the attacker's."""
    work = _site(tmp_path)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        (tmp_path / "pyproject.toml").write_text(
            f'[tool.rewriter]\ndask = "tcp://127.0.0.1:{port}"\n', encoding="utf-8"
        )
        done = run_cli(work, "rewrite", "site", "-o", "out", "--url", URL, timeout=60)  # one that connects hangs
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came
    assert done.returncode == 2
    assert err_lines(done) == [
        f"rewriter: {tmp_path / 'pyproject.toml'}: 'dask' can only be given on the command line: "
        "it chooses a Dask scheduler to connect to, or a cluster to start that listens on ports"
    ]
    assert not (work / "out").exists()


@pytest.mark.parametrize(
    ("setting", "key", "why"),
    [
        ('report = "site/page.html"', "report", "it names a path to write"),
        ('output = "site/page.html"', "output", "it names a path to write"),
        ('single-file = "site/page.html"', "single-file", "it names a path to write"),
        ("in-place = true", "in-place", "it makes a run modify its inputs"),
        ('backup = ".orig"', "backup", "it names the files written beside each input"),
        ('dask = "local"', "dask", "it chooses a Dask scheduler to connect to, or a cluster to start that listens"),
        ('url-map = "/etc/passwd"', "url-map", "it names a file to read beyond the inputs"),
        ('url_map = "map.csv"', "url_map", "it names a file to read beyond the inputs"),
        ('file = ["/etc/passwd"]', "file", "it names a file to read beyond the inputs"),
        ("resume = true", "resume", "it makes a run trust the journal an earlier run left in the output"),
        ('files = ["/etc"]', "files", "it names what the command works on"),
        ('references = "x"', "references", "it names what the command works on"),
        ('base = "http://evil.example/"', "base", "it names what the command works on"),
    ],
)
@pytest.mark.parametrize("where", ["rewriter.toml", "pyproject.toml"])
def test_a_key_that_writes_connects_or_reads_is_refused_from_a_file(
    tmp_path: Path, setting: str, key: str, why: str, where: str
) -> None:
    work = _site(tmp_path)
    (work / "map.csv").write_text("site/page.html,http://evil.example/\n", encoding="utf-8")
    text = setting + "\n" if where == "rewriter.toml" else f"[tool.rewriter]\n{setting}\n"
    (tmp_path / where).write_text(text, encoding="utf-8")
    before = _everything(tmp_path)
    for argv in (["rewrite", "site/page.html", "--url", URL], ["rewrite", "site", "-o", "out", "--url", URL]):
        done = run_cli(work, *argv)
        assert (done.returncode, done.stdout) == (2, b""), argv
        [line] = err_lines(done)
        assert line.startswith(f"rewriter: {tmp_path / where}: {key!r} can only be given on the command line: {why}")
        assert _everything(tmp_path) == before
    done = run_cli(work, "resolve", "http://h/", "g")
    assert done.returncode == 2 and done.stdout == b""


def test_the_same_options_on_the_command_line_are_still_taken(tmp_path: Path) -> None:
    """What a file may not choose, the person running the command still may."""
    work = _site(tmp_path)
    (work / "map.csv").write_text("page.html,http://mapped.example/a/\n", encoding="utf-8")
    (tmp_path / "rewriter.toml").write_text('rules = "whatwg"\n', encoding="utf-8")  # allowed keys stay read
    done = run_cli(work, "rewrite", "site", "-o", "out", "--url-map", "map.csv", "--report", "links.jsonl", "-q")
    assert (done.returncode, done.stderr) == (0, b"")
    assert (work / "out" / "page.html").read_bytes() == b'<a href="http://mapped.example/a/x.html">x</a>'
    assert b'"resolved": "http://mapped.example/a/x.html"' in (work / "links.jsonl").read_bytes()
    done = run_cli(work, "rewrite", "site/page.html", "--url", URL, "--in-place", "--backup", ".orig")
    assert done.returncode == 0
    assert (work / "site" / "page.html").read_bytes() == b'<a href="http://h/docs/x.html">x</a>'
    assert (work / "site" / "page.html.orig").read_bytes() == PAGE


def test_every_option_is_classified_and_nothing_else_is_a_key() -> None:
    """The table is the whole list: an option added to the parser without a line there would
    be refused from a file as unknown, and a line for an option that is gone would be dead."""
    parser = build_parser()
    options = {name for verb in parser.verbs.values() for name in verb.options} - {"help"}
    assert set(KEYS) == options
    assert {name for name, key in KEYS.items() if not key.allowed} >= {"output", "in_place", "report", "dask"}
    assert all(key.why for key in KEYS.values())


@pytest.mark.parametrize("key", ["help", "verb", "run"])
def test_argparse_internals_are_not_keys(tmp_path: Path, key: str) -> None:
    work = _site(tmp_path)
    (tmp_path / "rewriter.toml").write_text(f"{key} = true\n", encoding="utf-8")
    done = run_cli(work, "rewrite", "site/page.html", "--url", URL)
    assert done.returncode == 2
    assert err_lines(done) == [f"rewriter: {tmp_path / 'rewriter.toml'}: {key!r} is not an option of rewriter"]
