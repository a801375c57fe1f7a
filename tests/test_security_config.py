"""A run trusts no file it did not write: a configuration file met on the walk up from the
working folder, and an --url-map file, are the attacker's.

A ``rewriter.toml`` (or ``[tool.rewriter]``) shapes how a run reads and rewrites; one that
names a path to write, an address to connect to or a file to read beyond the inputs is
refused, naming the file and the key, and nothing is done. Every run starts in a fresh
folder under ``tmp_path``, so no configuration of the repository is read.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
from conftest import err_lines, run_cli

from rewriter.cli import build_parser
from rewriter.cli.config import KEYS
from rewriter.run.collection import MAP_MAX_BYTES

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


@pytest.mark.parametrize(
    ("inputs", "report", "extra"),
    [
        pytest.param(["site/page.html"], "site/page.html", [], id="the-input-named"),
        pytest.param(["site/page.html"], "./site/../site/page.html", [], id="another-spelling"),
        pytest.param(["site"], "site/page.html", ["-o", "out"], id="a-file-in-an-input-folder"),
        pytest.param(["site"], "site/page.html", ["--in-place"], id="in-place-too"),
        pytest.param(["site/page.html"], "link.html", [], id="a-link-to-the-input"),
    ],
)
def test_a_report_on_the_command_line_never_overwrites_an_input(
    tmp_path: Path, inputs: list[str], report: str, extra: list[str]
) -> None:
    """The same mistake made on the command line: --report naming an input (or a file a named
    folder holds) would write the links over the page the run reads. Refused (exit 2), with the
    input named, and nothing changed."""
    work = _site(tmp_path)
    (work / "link.html").symlink_to("site/page.html")
    before = _everything(tmp_path)
    done = run_cli(work, "rewrite", *inputs, "--url", URL, "--report", report, *extra)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    [line] = err_lines(done)
    assert line.startswith(f"rewriter rewrite: --report {report} would overwrite ") and "an input of this run" in line
    assert _everything(tmp_path) == before


def test_a_report_beside_the_inputs_is_still_written(tmp_path: Path) -> None:
    work = _site(tmp_path)
    done = run_cli(work, "rewrite", "site", "-o", "out", "--url", URL, "--report", "site/links.jsonl")
    assert done.returncode == 0, done.stderr
    assert (work / "site" / "links.jsonl").stat().st_size > 0
    assert (work / "site" / "page.html").read_bytes() == PAGE


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


# --------------------------------------------------------------------------
# --url-map files: read within limits, every bad line named, the map refused as a whole
# --------------------------------------------------------------------------

GOOD_CSV = b"page.html,http://m.test/a/"
GOOD_JSON = b'{"path": "page.html", "url": "http://m.test/a/"}'
REFUSED_MAP = "the map is not used, and nothing was done"


def _map_run(tmp_path: Path, name: str, timeout: float = 60) -> list[str]:
    """``rewrite site -o out --url-map NAME`` in *tmp_path*/work: refused (exit 2, nothing
    written, no traceback); its lines on standard error."""
    work = tmp_path / "work"
    if not (work / "site").exists():
        _site(tmp_path)
    done = run_cli(work, "rewrite", "site", "-o", "out", "--url-map", name, timeout=timeout)
    assert (done.returncode, done.stdout) == (2, b""), done.stderr
    assert not (work / "out").exists()
    assert (work / "site" / "page.html").read_bytes() == PAGE
    return err_lines(done)


def test_a_csv_field_over_the_csv_module_limit_is_a_named_line_not_a_traceback(tmp_path: Path) -> None:
    """The attack: one field of 131,073 characters (the csv module's limit is 131,072)."""
    _site(tmp_path)
    (tmp_path / "work" / "map.csv").write_bytes(
        b"path,url\n" + GOOD_CSV + b"\npage.html,http://m.test/" + b"a" * 131_073
    )
    assert _map_run(tmp_path, "map.csv") == [
        "rewriter rewrite: --url-map map.csv, line 3: 131,097 bytes long, over the 65,536 a line of a map may hold",
        f"rewriter rewrite: --url-map map.csv: 1 line cannot be used: {REFUSED_MAP}",
    ]


def test_json_lines_nested_100000_deep_is_a_named_line_not_a_traceback(tmp_path: Path) -> None:
    """The attack: a line of 100,000 arrays inside each other; and, within the line limit,
    30,000 arrays and 10,000 objects."""
    _site(tmp_path)
    lines = [GOOD_JSON, b"[" * 100_000 + b"]" * 100_000, b"[" * 30_000 + b"]" * 30_000, b'{"a":' * 10_000 + b"1"]
    (tmp_path / "work" / "map.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    assert _map_run(tmp_path, "map.jsonl") == [
        "rewriter rewrite: --url-map map.jsonl, line 2: 200,000 bytes long, over the 65,536 a line of a map may hold",
        "rewriter rewrite: --url-map map.jsonl, line 3: JSON nested more than 32 deep",
        "rewriter rewrite: --url-map map.jsonl, line 4: JSON nested more than 32 deep",
        f"rewriter rewrite: --url-map map.jsonl: 3 lines cannot be used: {REFUSED_MAP}",
    ]


# Hostile lines, each between two good ones: (id, JSON Lines?, the line, why it is refused).
HOSTILE_LINES = [
    ("huge-field", False, b"page.html,http://m.test/" + b"x" * 200_000, "200,024 bytes long, over the 65,536"),
    ("huge-quoted", False, b'page.html,"http://m.test/' + b"y" * 70_000, "70,025 bytes long, over the 65,536"),
    ("unclosed-quote", False, b'page.html,"http://m.test/a/', "not CSV: unexpected end of data"),
    ("nul-csv", False, b"page.html,http://m.test/\x00/", "a NUL byte (byte 25 of the line), which no path or URL"),
    ("not-utf8", False, b"page.html,http://m.test/\xff/", "not UTF-8 (byte 25 of the line: invalid start byte)"),
    ("overlong-utf8", False, b"page.html,http://m.test/\xc0\xaf/", "not UTF-8 (byte 25 of the line: invalid start"),
    ("three-fields", False, b"page.html,http://m.test/a/,x", "needs two fields, path,url (found 3)"),
    ("relative-url", False, b"page.html,a/b", "'a/b' is not an absolute URL that can be a base"),
    ("script-url", False, b"page.html,javascript:alert(1)", "'javascript:alert(1)' is not an absolute URL"),
    ("long-bad-url", False, b"page.html," + b"z" * 5_000, "'" + "z" * 80 + "'... is not an absolute URL"),
    ("deep-array", True, b"[" * 33 + b"]" * 33, "JSON nested more than 32 deep"),
    ("deep-object", True, b'{"path": "page.html", "url": "http://m.test/", "x": ' + b"[" * 40, "JSON nested more"),
    ("nul-json", True, b'{"path": "page.html\x00", "url": "http://m.test/"}', "a NUL byte (byte 20 of the line)"),
    ("nul-escape", True, b'{"path": "page.html\\u0000", "url": "http://m.test/"}', "the path holds a NUL character"),
    ("surrogate", True, b'{"path": "page.html", "url": "http://m.test/\\ud800"}', "the url holds a lone surrogate"),
    ("not-utf8-json", True, b'{"path": "p\xe9.html", "url": "http://m.test/"}', "not UTF-8 (byte 12 of the line"),
    (
        "array",
        True,
        b'["page.html", "http://m.test/"]',
        'needs one JSON object, {"path": "...", "url": "..."} (found an',
    ),
    ("string", True, b'"page.html"', "(found a string)"),
    ("number", True, b"7", "(found a number)"),
    ("null", True, b"null", "(found null)"),
    ("no-url", True, b'{"path": "page.html"}', '(no "url")'),
    ("path-number", True, b'{"path": 7, "url": "http://m.test/"}', '"path" must be a string (found a number)'),
    ("path-object", True, b'{"path": {"a": 1}, "url": "http://m.test/"}', '"path" must be a string (found an object)'),
    ("url-true", True, b'{"path": "page.html", "url": true}', '"url" must be a string (found true)'),
    ("url-array", True, b'{"path": "page.html", "url": ["http://m.test/"]}', '"url" must be a string (found an'),
    ("huge-integer", True, b'{"path": ' + b"9" * 5_000 + b', "url": "http://m.test/"}', "not JSON: Exceeds the limit"),
    ("not-json", True, b'{"path": "page.html", "url": ', "not JSON: Expecting value"),
]


@pytest.mark.parametrize(
    ("json_lines", "line", "why"), [case[1:] for case in HOSTILE_LINES], ids=[case[0] for case in HOSTILE_LINES]
)
def test_a_hostile_line_is_named_with_its_number_and_reason(
    tmp_path: Path, json_lines: bool, line: bytes, why: str
) -> None:
    _site(tmp_path)
    good, name = (GOOD_JSON, "map.jsonl") if json_lines else (GOOD_CSV, "map.csv")
    (tmp_path / "work" / name).write_bytes(b"\n".join([good, line, good]) + b"\n")
    said = _map_run(tmp_path, name)
    prefix = f"rewriter rewrite: --url-map {name}, line 2: "
    assert said[0].startswith(prefix) and why in said[0][: len(prefix) + 300], said[0][:300]
    assert said[1:] == [f"rewriter rewrite: --url-map {name}: 1 line cannot be used: {REFUSED_MAP}"]


def test_every_hostile_line_of_one_file_is_named_and_a_flood_is_counted(tmp_path: Path) -> None:
    _site(tmp_path)
    csv_lines = [line for _, json_lines, line, _ in HOSTILE_LINES if not json_lines]
    (tmp_path / "work" / "map.csv").write_bytes(b"\r\n".join([GOOD_CSV, *csv_lines, GOOD_CSV]))
    said = _map_run(tmp_path, "map.csv")
    named = [int(line.split(", line ")[1].split(":")[0]) for line in said[:-1]]
    assert named == list(range(2, 2 + len(csv_lines)))  # CRLF line ends: each counted once
    assert said[-1] == f"rewriter rewrite: --url-map map.csv: {len(csv_lines)} lines cannot be used: {REFUSED_MAP}"
    # 5,000 bad lines: the first 100 named, the rest counted, one message each.
    (tmp_path / "work" / "map.csv").write_bytes(b"page.html,nope\n" * 5_000)
    said = _map_run(tmp_path, "map.csv")
    assert len(said) == 101 and said[99].startswith("rewriter rewrite: --url-map map.csv, line 100: 'nope'")
    assert said[100] == (
        f"rewriter rewrite: --url-map map.csv: 5,000 lines cannot be used (4,900 not named): {REFUSED_MAP}"
    )


def test_brackets_and_quotes_inside_strings_are_no_nesting(tmp_path: Path) -> None:
    """The nesting count reads strings as JSON does: brackets, escaped quotes and backslashes
    inside a path or URL are characters; other tools' fields may nest, within the limit."""
    _site(tmp_path)
    work = tmp_path / "work"
    url = "http://m.test/" + "[{" * 40 + '\\"[\\\\/'
    entry = f'{{"path": "page.html", "url": "{url}", "tool": {"[" * 31}{"]" * 31}}}'
    (work / "map.jsonl").write_text(entry + "\n", encoding="utf-8")
    done = run_cli(work, "rewrite", "site", "-o", "out", "--url-map", "map.jsonl", "-q")
    assert (done.returncode, done.stderr) == (0, b"")
    written = (work / "out" / "page.html").read_bytes()
    # The quote is written &quot; in the attribute; the brackets and the backslash as they were.
    assert written == b'<a href="http://m.test/' + b"[{" * 40 + b'&quot;[\\/x.html">x</a>', written


def _fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and symbolic links of a POSIX system")
@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_fifo, "a named pipe, not a regular file"),
        (lambda path: path.mkdir(), "a folder, not a regular file"),
        (lambda path: path.symlink_to("/dev/zero"), "a character device, not a regular file"),
        (lambda path: (_fifo(path.with_name("pipe")), path.symlink_to("pipe")), "a named pipe, not a regular file"),
        (lambda path: os.truncate(path.write_bytes(b"") or path, MAP_MAX_BYTES + 1), "268,435,457 bytes, over the"),
    ],
    ids=["fifo", "folder", "link-to-dev-zero", "link-to-fifo", "over-256M"],
)
def test_a_map_that_is_no_regular_file_or_too_large_is_refused_unread(tmp_path: Path, make: Any, why: str) -> None:
    """A named pipe with no writer would hang the run; /dev/zero would fill the memory."""
    _site(tmp_path)
    make(tmp_path / "work" / "map.csv")
    [said] = _map_run(tmp_path, "map.csv", timeout=30)
    assert said.startswith(f"rewriter rewrite: --url-map map.csv: {why}"), said


def test_a_map_named_through_a_symbolic_link_is_read(tmp_path: Path) -> None:
    """The command line named it: a link to a regular file is followed, as cat follows it."""
    _site(tmp_path)
    work = tmp_path / "work"
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "real.csv").write_bytes(GOOD_CSV + b"\n")
    (work / "map.csv").symlink_to(tmp_path / "maps" / "real.csv")
    done = run_cli(work, "rewrite", "site", "-o", "out", "--url-map", "map.csv", "-q")
    assert (done.returncode, done.stderr) == (0, b"")
    assert (work / "out" / "page.html").read_bytes() == b'<a href="http://m.test/a/x.html">x</a>'
