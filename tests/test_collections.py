"""Collections as users have them (issue #19), through the command line and rewriter.run.collection.

Each file's retrieval URL (--url-root, auto, --url-map), the local copies a saved page links to,
what standard error says about a folder (one line per file and a summary, -q, -v, --report), the
verbs links and explain over every container (mbox, Maildir, WARC), and the -o conventions
(copying the files not rewritten). Every run starts in a fresh working folder (``cwd=tmp_path``)
and names its inputs by relative paths, as a user would type them.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import err_lines, run_cli, shared_path
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from rewriter.run.collection import (
    CollectionError,
    LocalCopies,
    Locations,
    is_host_folder,
    load_url_map,
    path_url,
)

NO_BASE = "no base (give --url, --url-root or --canonical-base)"
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
SAVED_FROM = b"<!-- saved from url=(0023)https://o.test/x/y.html -->\n"
# The closing summary of a rewrite: its figures, and the time, which differs from run to run.
SUMMARY = re.compile(
    r"rewriter: (?P<files>[\d,]+) inputs?: (?P<rewritten_files>[\d,]+) rewritten, (?P<unchanged>[\d,]+) unchanged, "
    r"(?P<failed>[\d,]+) failed; (?:(?P<copied>[\d,]+) other files? copied; )?"
    r"links: (?P<rewritten>[\d,]+) rewritten, (?P<kept>[\d,]+) kept(?: \((?P<local>[\d,]+) local\))?, "
    r"(?P<relative>[\d,]+) left relative(?: \((?P<why>[^)]*)\))?; "
    r"[\d.,]+ MB in [\d.,]+ s"
)


def rewriter(cwd: Path, *argv: str, stdin: bytes = b"", timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    return run_cli(cwd, *argv, stdin=stdin, timeout=timeout)


def out_lines(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    return done.stdout.decode("utf-8", "replace").splitlines()


def json_lines(text: str | bytes) -> list[dict]:
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def summary(done: subprocess.CompletedProcess[bytes]) -> re.Match[str]:
    """The summary: the last line of standard error."""
    lines = err_lines(done)
    assert lines, "no summary on standard error"
    match = SUMMARY.fullmatch(lines[-1])
    assert match is not None, lines[-1]
    return match


def by_original(records: list[dict]) -> dict[str, dict]:
    return {record["original"]: record for record in records}


# --------------------------------------------------------------------------
# 1. Each file's retrieval URL
# --------------------------------------------------------------------------


@pytest.mark.parametrize("root", ["http://h/site/", "http://h/site"])
def test_url_root_joins_each_file_path_under_the_folder(tmp_path: Path, root: str) -> None:
    write(tmp_path / "SITE/docs/guide/index.html", '<img src="img/diagram.png"><a href="../intro.html">i</a>')
    write(tmp_path / "SITE/top.html", '<a href="docs/">d</a>')
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", root)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/docs/guide/index.html").read_bytes() == (
        b'<img src="http://h/site/docs/guide/img/diagram.png"><a href="http://h/site/docs/intro.html">i</a>'
    )
    assert (tmp_path / "OUT/top.html").read_bytes() == b'<a href="http://h/site/docs/">d</a>'


def test_each_file_url_is_percent_encoded_as_a_browser_writes_it(tmp_path: Path) -> None:
    write(tmp_path / "SITE/a b/café #1%.html", '<a href="x.html">x</a>')
    write(tmp_path / "SITE/docs/index.html", '<a href="x.html">x</a>')
    write(tmp_path / "SITE/q?.html", '<a href="x.html">x</a>')
    done = rewriter(tmp_path, "rewrite", "SITE", "-o", "OUT", "--url-root", "http://h/site/", "--report", "r.jsonl")
    assert done.returncode == 0, done.stderr
    bases = {
        Path(record["file"]).relative_to("SITE").as_posix(): record["base"]
        for record in json_lines((tmp_path / "r.jsonl").read_bytes())
    }
    assert bases == {
        "a b/café #1%.html": "http://h/site/a%20b/caf%C3%A9%20%231%25.html",
        "docs/index.html": "http://h/site/docs/index.html",  # index.html kept
        "q?.html": "http://h/site/q%3F.html",
    }
    assert (tmp_path / "OUT/a b/café #1%.html").read_bytes() == b'<a href="http://h/site/a%20b/x.html">x</a>'


def test_a_base_element_wins_over_the_file_url(tmp_path: Path) -> None:
    write(tmp_path / "SITE/d/based.html", '<base href="http://b.test/elsewhere/"><a href="x.html">x</a>')
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/site/")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/d/based.html").read_bytes() == (
        b'<base href="http://b.test/elsewhere/"><a href="http://b.test/elsewhere/x.html">x</a>'
    )


@pytest.mark.parametrize("verb", ["rewrite", "links"])
def test_a_saved_from_mark_wins_over_the_file_url(tmp_path: Path, verb: str) -> None:
    write(tmp_path / "SITE/d/saved.html", SAVED_FROM + b'<a href="x.html">x</a>')
    if verb == "rewrite":
        done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/site/")
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "OUT/d/saved.html").read_bytes() == SAVED_FROM + b'<a href="https://o.test/x/x.html">x</a>'
    else:
        done = rewriter(tmp_path, "links", "SITE/d/saved.html", "--url-root", "http://h/site/", "--json")
        [record] = json_lines(done.stdout)
        assert (record["base"], record["layer"]) == ("https://o.test/x/y.html", "saved-from-mark")
        assert record["resolved"] == "https://o.test/x/x.html"


def test_a_file_named_alone_has_its_folder_as_the_root(tmp_path: Path) -> None:
    write(tmp_path / "SITE/docs/page one.html", '<a href="next.html">n</a>')
    done = rewriter(tmp_path, "links", "SITE/docs/page one.html", "--url-root", "http://h/r", "--json")
    assert done.returncode == 0, done.stderr
    [record] = json_lines(done.stdout)
    assert record["base"] == "http://h/r/page%20one.html"
    assert record["resolved"] == "http://h/r/next.html"
    done = rewriter(tmp_path, "rewrite", "SITE/docs/page one.html", "-o", "out.html", "--url-root", "http://h/r/")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out.html").read_bytes() == b'<a href="http://h/r/next.html">n</a>'


def _mirrors(tmp_path: Path) -> None:
    write(tmp_path / "M/example.org/docs/index.html", '<a href="x.html">x</a>')
    write(tmp_path / "M/127.0.0.1:8080/index.html", '<a href="y.html">y</a>')
    write(tmp_path / "M/beside.html", '<a href="z.html">z</a>')


@pytest.mark.parametrize(("root", "scheme"), [("auto", "http"), ("auto:https", "https")])
def test_url_root_auto_reads_the_host_from_the_folder_names(tmp_path: Path, root: str, scheme: str) -> None:
    _mirrors(tmp_path)
    done = rewriter(tmp_path, "rewrite", "M/", "-o", "OUT/", "--url-root", root)
    assert (tmp_path / "OUT/example.org/docs/index.html").read_bytes() == (
        f'<a href="{scheme}://example.org/docs/x.html">x</a>'.encode()
    )
    assert (tmp_path / "OUT/127.0.0.1:8080/index.html").read_bytes() == (
        f'<a href="{scheme}://127.0.0.1:8080/y.html">y</a>'.encode()
    )
    # A file beside the host folders is in no host: its link stays relative, and is reported.
    assert (tmp_path / "OUT/beside.html").read_bytes() == b'<a href="z.html">z</a>'
    assert done.returncode == 1
    assert f"rewriter: M/beside.html: 1 link left relative: {NO_BASE}" in err_lines(done)
    assert summary(done)["relative"] == "1"


def test_url_root_auto_on_a_folder_named_like_a_host(tmp_path: Path) -> None:
    _mirrors(tmp_path)
    done = rewriter(tmp_path, "rewrite", "M/example.org", "-o", "OUT/", "--url-root", "auto")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/docs/index.html").read_bytes() == b'<a href="http://example.org/docs/x.html">x</a>'


URL_MAP_SITE = {
    "SITE/a.html": '<a href="x.html">x</a>',
    "SITE/sub/b c.html": '<a href="y.html">y</a>',
}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("map.csv", 'path,url\na.html,http://m.test/one/a\n"sub/b c.html",http://m.test/two/b\n'),
        ("map.csv", "a.html,http://m.test/one/a\r\nsub/b c.html,http://m.test/two/b\r\n"),
        (
            "map.jsonl",
            '{"path": "a.html", "url": "http://m.test/one/a"}\n\n{"path": "sub/b c.html", "url": "http://m.test/two/b"}\n',
        ),
        (
            "map.txt",
            '{"path": "a.html", "url": "http://m.test/one/a"}\n{"path": "sub/b c.html", "url": "http://m.test/two/b"}\n',
        ),
    ],
    ids=["csv-heading", "csv-crlf", "jsonl", "json-by-first-char"],
)
@pytest.mark.parametrize("other", [[], ["--url-root", "http://root.test/"], ["--url", "http://url.test/p.html"]])
def test_url_map_gives_each_file_its_url_and_wins_over_url_root_and_url(
    tmp_path: Path, name: str, text: str, other: list[str]
) -> None:
    for path, page in URL_MAP_SITE.items():
        write(tmp_path / path, page)
    write(tmp_path / name, text)
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-map", name, *other)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/a.html").read_bytes() == b'<a href="http://m.test/one/x.html">x</a>'
    assert (tmp_path / "OUT/sub/b c.html").read_bytes() == b'<a href="http://m.test/two/y.html">y</a>'


def test_url_map_entries_naming_no_file_are_said_once_and_are_no_failure(tmp_path: Path) -> None:
    write(tmp_path / "SITE/a.html", '<a href="x.html">x</a>')
    write(
        tmp_path / "map.csv",
        "path,url\na.html,http://m.test/a\nnope.html,http://m.test/n\ngone/z.html,http://m.test/z\n",
    )
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-map", "map.csv")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/a.html").read_bytes() == b'<a href="http://m.test/x.html">x</a>'
    said = [line for line in err_lines(done) if "--url-map" in line]
    assert said == [
        "rewriter rewrite: --url-map map.csv: 2 entries name no file of the input (the first: line 3, 'nope.html')"
    ]


def test_url_map_entry_naming_a_file_outside_the_input_is_said(tmp_path: Path) -> None:
    write(tmp_path / "SITE/a.html", '<a href="x.html">x</a>')
    write(tmp_path / "stray.html", "<p>not an input</p>")
    write(tmp_path / "map.csv", "path,url\na.html,http://m.test/a\nstray.html,http://m.test/stray\n")
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-map", "map.csv")
    assert done.returncode == 0, done.stderr
    said = [line for line in err_lines(done) if "--url-map" in line]
    assert said == [
        "rewriter rewrite: --url-map map.csv: 1 entry names no file of the input (the first: line 3, 'stray.html')"
    ]


REFUSED = "the map is not used, and nothing was done"


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("map.csv", "path,url\na.html,http://m.test/a,extra\n", "--url-map map.csv, line 2: "),
        ("map.csv", "a.html,http://m.test/a\na.html\n", "--url-map map.csv, line 2: "),
        ("map.csv", "path,url\n\na.html,page.html\n", "--url-map map.csv, line 3: "),
        ("map.csv", "a.html,mailto:someone@m.test\n", "--url-map map.csv, line 1: "),
        (
            "map.jsonl",
            '{"path": "a.html", "url": "http://m.test/a"}\n{"path": "a.html",\n',
            "--url-map map.jsonl, line 2: ",
        ),
        ("map.jsonl", '{"path": "a.html", "link": "http://m.test/a"}\n', "--url-map map.jsonl, line 1: "),
        ("missing.csv", None, "--url-map missing.csv: "),
    ],
    ids=["three-fields", "one-field", "relative-url", "opaque-url", "malformed-json", "json-no-url", "missing"],
)
def test_a_url_map_that_cannot_be_used_is_a_usage_error_and_nothing_is_written(
    tmp_path: Path, name: str, text: str | None, expected: str
) -> None:
    write(tmp_path / "SITE/a.html", '<a href="x.html">x</a>')
    if text is not None:
        write(tmp_path / name, text)
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-map", name)
    assert done.returncode == 2
    line, *summary = err_lines(done)
    assert line.startswith(f"rewriter rewrite: {expected}"), line
    # A bad line is named, then the map is refused as a whole.
    assert summary == (
        [] if text is None else [f"rewriter rewrite: --url-map {name}: 1 line cannot be used: {REFUSED}"]
    )
    assert not (tmp_path / "OUT").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["rewrite", "SITE/", "-o", "OUT/", "--url", "http://h/p.html", "--url-root", "http://h/"],
        ["rewrite", "SITE/", "-o", "OUT/", "--url-root", "page.html"],
        ["rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/?q"],
        ["rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/#f"],
        ["rewrite", "-", "-o", "OUT/", "--url-root", "http://h/"],
        ["rewrite", "-", "--url-map", "map.csv"],
        ["links", "-", "--url-root", "http://h/"],
        ["rewrite", "SITE/", "-o", "OUT/", "-q", "-v"],
    ],
    ids=[
        "url-and-root",
        "root-relative",
        "root-query",
        "root-fragment",
        "stdin-root",
        "stdin-map",
        "links-stdin",
        "q-v",
    ],
)
def test_usage_errors_exit_2_and_write_nothing(tmp_path: Path, argv: list[str]) -> None:
    write(tmp_path / "SITE/a.html", '<a href="x.html">x</a>')
    write(tmp_path / "map.csv", "a.html,http://m.test/a\n")
    done = rewriter(tmp_path, *argv, stdin=b'<a href="x.html">x</a>')
    assert done.returncode == 2, done.stderr
    assert done.stdout == b""
    assert len(err_lines(done)) == 1, done.stderr
    assert not (tmp_path / "OUT").exists()


# --------------------------------------------------------------------------
# 2. Local copies
# --------------------------------------------------------------------------

SAVED_PAGE = SAVED_FROM + (
    b'<img src="./page_files/x.png"><link rel=stylesheet href="page_files/s.css">'
    b'<a href="rel.html">r</a><a href="other.html">o</a>'
)


def _saved(tmp_path: Path) -> Path:
    folder = tmp_path / "saved"
    write(folder / "page.html", SAVED_PAGE)
    write(folder / "page_files/x.png", PNG)
    write(folder / "page_files/s.css", "b { color: red }")
    write(folder / "other.html", "<p>other</p>")
    return folder


def test_a_saved_page_keeps_its_local_copies_and_rewrites_the_rest(tmp_path: Path) -> None:
    _saved(tmp_path)
    done = rewriter(tmp_path, "links", "saved/page.html", "--json")
    assert done.returncode == 0, done.stderr
    links = by_original(json_lines(done.stdout))
    for original in ("./page_files/x.png", "page_files/s.css", "other.html"):
        assert links[original]["status"] == "local", links[original]
        assert "--absolutize-local" in links[original]["reason"]
    assert links["rel.html"]["status"] == "rewritten"
    assert links["rel.html"]["resolved"] == "https://o.test/x/rel.html"

    done = rewriter(tmp_path, "rewrite", "saved/", "-o", "OUT/")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/page.html").read_bytes() == SAVED_FROM + (
        b'<img src="./page_files/x.png"><link rel=stylesheet href="page_files/s.css">'
        b'<a href="https://o.test/x/rel.html">r</a><a href="other.html">o</a>'
    )
    figures = summary(done)
    assert (figures["rewritten"], figures["kept"], figures["local"]) == ("1", "3", "3")
    assert "1 rewritten, 3 kept (3 local), 0 left relative" in err_lines(done)[-1]


def test_absolutize_local_makes_every_link_absolute(tmp_path: Path) -> None:
    _saved(tmp_path)
    done = rewriter(tmp_path, "rewrite", "saved/", "-o", "OUT/", "--absolutize-local")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/page.html").read_bytes() == SAVED_FROM + (
        b'<img src="https://o.test/x/page_files/x.png"><link rel=stylesheet href="https://o.test/x/page_files/s.css">'
        b'<a href="https://o.test/x/rel.html">r</a><a href="https://o.test/x/other.html">o</a>'
    )
    done = rewriter(tmp_path, "links", "saved/page.html", "--json", "--absolutize-local")
    assert {record["status"] for record in json_lines(done.stdout)} == {"rewritten"}


@pytest.mark.parametrize("named", ["saved/page.html", "saved/"])
def test_a_reference_out_of_the_input_folder_is_not_local(tmp_path: Path, named: str) -> None:
    write(tmp_path / "outside.png", PNG)
    write(tmp_path / "saved/page.html", SAVED_FROM + b'<img src="../outside.png">')
    if named.endswith("/"):
        done = rewriter(tmp_path, "rewrite", named, "-o", "OUT/")
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "OUT/page.html").read_bytes() == SAVED_FROM + b'<img src="https://o.test/outside.png">'
    else:
        done = rewriter(tmp_path, "links", named, "--json")
        [record] = json_lines(done.stdout)
        assert record["status"] == "rewritten", record


def test_a_symbolic_link_out_of_the_folder_is_not_local(tmp_path: Path) -> None:
    write(tmp_path / "elsewhere/secret.png", PNG)
    write(tmp_path / "saved/page.html", SAVED_FROM + b'<img src="pic.png"><img src="real.png">')
    write(tmp_path / "saved/real.png", PNG)
    try:
        (tmp_path / "saved/pic.png").symlink_to(tmp_path / "elsewhere/secret.png")
    except (OSError, NotImplementedError) as error:
        pytest.skip(f"no symbolic links here: {error}")
    done = rewriter(tmp_path, "links", "saved/page.html", "--json")
    links = by_original(json_lines(done.stdout))
    assert links["pic.png"]["status"] == "rewritten"
    assert links["pic.png"]["resolved"] == "https://o.test/x/pic.png"
    assert links["real.png"]["status"] == "local"  # the control: a real file of the folder is


def test_root_relative_network_path_query_and_fragment_references_are_never_local(tmp_path: Path) -> None:
    # Files that a careless lookup would find: abs.png and host/x in the folder, page.html itself.
    write(tmp_path / "saved/abs.png", PNG)
    write(tmp_path / "saved/host/x", PNG)
    write(
        tmp_path / "saved/page.html",
        SAVED_FROM + b'<img src="/abs.png"><a href="//host/x">h</a><a href="?q">q</a><a href="#f">f</a>',
    )
    done = rewriter(tmp_path, "links", "saved/page.html", "--json")
    links = by_original(json_lines(done.stdout))
    assert links["/abs.png"]["status"] == "rewritten"
    assert links["/abs.png"]["resolved"] == "https://o.test/abs.png"
    assert links["//host/x"]["status"] in ("rewritten", "absolute")
    assert links["//host/x"]["resolved"] == "https://host/x"
    assert links["?q"]["status"] == "rewritten"
    assert links["#f"]["status"] == "same-document"
    assert "local" not in {record["status"] for record in links.values()}


def test_in_a_mirror_a_file_at_its_own_url_is_rewritten_but_a_saved_copy_stays_local(tmp_path: Path) -> None:
    write(
        tmp_path / "SITE/docs/page.html",
        '<a href="b.html">b</a><img src="../img/logo.png"><img src="page_files/x.png">',
    )
    write(tmp_path / "SITE/docs/b.html", "<p>b</p>")
    write(tmp_path / "SITE/img/logo.png", PNG)
    write(tmp_path / "SITE/docs/page_files/x.png", PNG)
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/site/")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/docs/page.html").read_bytes() == (
        b'<a href="http://h/site/docs/b.html">b</a><img src="http://h/site/img/logo.png"><img src="page_files/x.png">'
    )
    figures = summary(done)
    assert (figures["rewritten"], figures["kept"], figures["local"]) == ("2", "1", "1")


def test_a_saved_copy_stays_local_from_the_saved_style_sheet_too_under_url_root(tmp_path: Path) -> None:
    write(tmp_path / "SITE/page.html", '<link rel=stylesheet href="page_files/s.css">')
    write(tmp_path / "SITE/page_files/s.css", "b { background: url(x.png) }")
    write(tmp_path / "SITE/page_files/x.png", PNG)
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/site/")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT/page.html").read_bytes() == b'<link rel=stylesheet href="page_files/s.css">'
    assert (tmp_path / "OUT/page_files/s.css").read_bytes() == b"b { background: url(x.png) }"


MESSAGE = (
    b"Subject: a page\r\nContent-Type: text/html\r\nContent-Location: http://mail.test/news/\r\n\r\n"
    b'<a href="other.html">o</a>\r\n'
)


@pytest.mark.parametrize("name", ["note.eml", "note.mht"])
def test_a_message_never_gets_local(tmp_path: Path, name: str) -> None:
    write(tmp_path / f"MAIL/{name}", MESSAGE)
    write(tmp_path / "MAIL/other.html", "<p>there</p>")
    done = rewriter(tmp_path, "links", f"MAIL/{name}", "--json")
    assert done.returncode == 0, done.stderr
    [record] = json_lines(done.stdout)
    assert (record["status"], record["resolved"]) == ("rewritten", "http://mail.test/news/other.html")
    done = rewriter(tmp_path, "rewrite", "MAIL/", "-o", "OUT/")
    assert done.returncode == 0, done.stderr
    assert b'<a href="http://mail.test/news/other.html">o</a>' in (tmp_path / f"OUT/{name}").read_bytes()
    assert summary(done)["local"] is None


# --------------------------------------------------------------------------
# 3. What standard error says
# --------------------------------------------------------------------------


def _pages(tmp_path: Path, count: int = 3) -> None:
    for n in range(count):
        write(tmp_path / f"DIR/page{n}.html", f'<a href="a{n}.html">a</a><img src="b{n}.png">')
    write(tmp_path / "DIR/logo.png", PNG)


def test_a_folder_without_a_base_gets_one_line_per_file_and_a_summary(tmp_path: Path) -> None:
    _pages(tmp_path)
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/")
    assert done.returncode == 1
    lines = err_lines(done)
    assert lines[:-1] == [f"rewriter: DIR/page{n}.html: 2 links left relative: {NO_BASE}" for n in range(3)]
    figures = summary(done)
    assert figures["relative"] == "6"
    assert figures["why"] == "6 with no base, in 3 files"
    assert "6 left relative (6 with no base, in 3 files)" in lines[-1]


def test_quiet_says_nothing_but_errors_and_still_exits_1(tmp_path: Path) -> None:
    _pages(tmp_path)
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/", "-q")
    assert done.returncode == 1
    assert done.stderr == b""
    assert (tmp_path / "OUT/page0.html").exists()


def test_quiet_still_names_a_file_that_cannot_be_rewritten(tmp_path: Path) -> None:
    _pages(tmp_path, 1)
    write(tmp_path / "DIR/binary.html", PNG + bytes(range(256)))  # no page: copied, never failed
    write(tmp_path / "DIR/large.html", "<p>" + "x" * 2000)
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/", "-q", "--max-size", "1K")
    assert done.returncode == 1
    [line] = err_lines(done)
    assert line.startswith("rewriter: DIR/large.html: larger than "), line


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads a file of mode 000")
def test_quiet_still_names_an_unreadable_file(tmp_path: Path) -> None:
    _pages(tmp_path, 1)
    locked = write(tmp_path / "DIR/locked.html", "<p>")
    locked.chmod(0)
    try:
        done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/", "-q")
    finally:
        locked.chmod(0o644)
    assert done.returncode == 1
    [line] = err_lines(done)
    assert line.startswith("rewriter: DIR/locked.html: "), line


def test_quiet_still_names_a_dangling_link_and_a_missing_input(tmp_path: Path) -> None:
    _pages(tmp_path, 1)
    try:
        (tmp_path / "gone.html").symlink_to("missing.html")
    except (OSError, NotImplementedError) as error:
        pytest.skip(f"no symbolic links here: {error}")
    done = rewriter(tmp_path, "rewrite", "DIR/", "gone.html", "nothere.html", "-o", "OUT/", "-q")
    assert done.returncode == 1
    lines = err_lines(done)
    assert len(lines) == 2, lines
    assert sorted(line.split(": ", 2)[1] for line in lines) == ["gone.html", "nothere.html"]


def test_what_the_engine_left_goes_on_the_file_line(tmp_path: Path) -> None:
    write(tmp_path / "DIR/p.html", '<base href="javascript:void(0)"><a href="x.html">x</a>')
    write(tmp_path / "DIR/q.html", "<p>nothing</p>")
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/")
    assert done.returncode == 1
    lines = err_lines(done)
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"rewriter: DIR/p.html: 1 link left relative: {NO_BASE}; <base href="), lines[0]
    assert "javascript:" in lines[0]
    assert summary(done)["why"] == "1 with no base, in 1 file"


def test_verbose_names_each_link_left_relative(tmp_path: Path) -> None:
    _pages(tmp_path, 2)
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/", "-v")
    assert done.returncode == 1
    lines = err_lines(done)
    for n in range(2):
        for tag, original, span in (("<a href>", f"a{n}.html", "9-16"), ("<img src>", f"b{n}.png", "33-39")):
            prefix = f"rewriter: DIR/page{n}.html: {tag} '{original}' at bytes {span}: no-base: "
            assert sum(line.startswith(prefix) for line in lines) == 1, (prefix, lines)
    assert SUMMARY.fullmatch(lines[-1])


def test_report_has_every_link(tmp_path: Path) -> None:
    _pages(tmp_path)
    write(tmp_path / "DIR/based.html", '<base href="http://b.test/"><a href="c.html">c</a>')
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/", "--report", "r.jsonl", "-q")
    assert done.returncode == 1
    records = json_lines((tmp_path / "r.jsonl").read_bytes())
    pairs = sorted((record["file"], record["original"], record["status"]) for record in records)
    expected = [(f"DIR/page{n}.html", name, "no-base") for n in range(3) for name in (f"a{n}.html", f"b{n}.png")]
    expected += [("DIR/based.html", "http://b.test/", "absolute"), ("DIR/based.html", "c.html", "rewritten")]
    assert pairs == sorted(expected)


def test_every_link_resolved_is_exit_0_and_0_left_relative(tmp_path: Path) -> None:
    _pages(tmp_path)
    done = rewriter(tmp_path, "rewrite", "DIR/", "-o", "OUT/", "--url-root", "http://h/")
    assert done.returncode == 0, done.stderr
    assert len(err_lines(done)) == 1
    figures = summary(done)
    assert (figures["rewritten"], figures["relative"], figures["why"]) == ("6", "0", None)


@pytest.mark.corpus
def test_the_corpus_without_a_base_says_at_most_one_line_a_file(tmp_path: Path) -> None:
    corpus = shared_path("corpus", "html")  # skips, with the reason, when ../shared is absent
    done = rewriter(tmp_path, "rewrite", str(corpus), "-o", "OUT/", timeout=600)
    assert done.returncode == 1
    lines = err_lines(done)
    files = [path for path in corpus.rglob("*") if path.is_file()]
    figures = summary(done)
    assert len(lines) <= len(files) + 1
    assert len(lines) <= int(figures["files"].replace(",", "")) + 1
    assert int(figures["relative"].replace(",", "")) > 0
    assert all(line.startswith(f"rewriter: {corpus}/") for line in lines[:-1]), lines[:-1]
    named = [line.split(": ", 2)[1] for line in lines[:-1]]
    assert len(named) == len(set(named)), "a file named on more than one line"


# --------------------------------------------------------------------------
# 4. links and explain over every container
# --------------------------------------------------------------------------


def _message(n: int) -> bytes:
    return (
        f"Subject: m{n}\nContent-Type: text/html\nContent-Location: http://m{n}.test/dir/\n\n"
        f'<a href="p{n}.html">x</a>\n'
    ).encode()


def _mbox(path: Path) -> Path:
    return write(
        path, b"".join(f"From a@b Mon Jan  1 00:00:0{n} 2024\n".encode() + _message(n) + b"\n" for n in (1, 2, 3))
    )


def test_links_and_explain_read_every_message_of_an_mbox(tmp_path: Path) -> None:
    _mbox(tmp_path / "box.mbox")
    done = rewriter(tmp_path, "links", "box.mbox", "--json")
    assert done.returncode == 0, done.stderr
    records = json_lines(done.stdout)
    assert [(record["message"], record["part"], record["resolved"]) for record in records] == [
        (n, "1", f"http://m{n}.test/dir/p{n}.html") for n in (1, 2, 3)
    ]
    done = rewriter(tmp_path, "links", "box.mbox")
    assert [line.split("\t")[0] for line in out_lines(done)] == ["1", "2", "3"]
    assert [line.split("\t")[-1] for line in out_lines(done)] == [f"http://m{n}.test/dir/p{n}.html" for n in (1, 2, 3)]

    done = rewriter(tmp_path, "explain", "box.mbox")
    assert done.returncode == 0, done.stderr
    text = out_lines(done)
    assert [line.strip() for line in text if line.strip().startswith("message ")] == [f"message {n}" for n in (1, 2, 3)]
    for n in (1, 2, 3):
        assert f"      base: http://m{n}.test/dir/ (Content-Location of part 1)" in text
    done = rewriter(tmp_path, "explain", "box.mbox", "--json")
    document = json.loads(done.stdout)
    assert document["format"] == "mbox"
    assert [(row["message"], row["path"], row["base"]) for row in document["parts"]] == [
        (n, "1", f"http://m{n}.test/dir/") for n in (1, 2, 3)
    ]


def test_links_and_explain_read_every_message_of_a_maildir(tmp_path: Path) -> None:
    for sub in ("cur", "new", "tmp"):
        (tmp_path / "Mail" / sub).mkdir(parents=True)
    write(tmp_path / "Mail/cur/1700000000.1.host:2,S", _message(1))
    write(tmp_path / "Mail/new/1700000001.2.host", _message(2))
    done = rewriter(tmp_path, "links", "Mail", "--json")
    assert done.returncode == 0, done.stderr
    records = json_lines(done.stdout)
    assert sorted((record["message"], record["part"], record["resolved"]) for record in records) == [
        ("cur/1700000000.1.host:2,S", "1", "http://m1.test/dir/p1.html"),
        ("new/1700000001.2.host", "1", "http://m2.test/dir/p2.html"),
    ]
    done = rewriter(tmp_path, "explain", "Mail")
    assert done.returncode == 0, done.stderr
    headings = sorted(line.strip() for line in out_lines(done) if line.strip().startswith("message "))
    assert headings == ["message cur/1700000000.1.host:2,S", "message new/1700000001.2.host"]
    document = json.loads(rewriter(tmp_path, "explain", "Mail", "--json").stdout)
    assert sorted(row["message"] for row in document["parts"]) == [
        "cur/1700000000.1.host:2,S",
        "new/1700000001.2.host",
    ]


def _warc(path: Path) -> Path:
    def response(uri: str, body: bytes, content_type: str):
        headers = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
        return uri, body, headers

    records = [
        response(
            "http://w.test/a/one.html", b'<a href="two.html">2</a><link rel=stylesheet href="s.css">', "text/html"
        ),
        response("http://w.test/b/two.html", b'<a href="../a/one.html">1</a>', "text/html; charset=utf-8"),
        response("http://w.test/a/s.css", b"body { background: url(img/bg.png) }", "text/css"),
    ]
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        for uri, body, headers in records:
            writer.write_record(
                writer.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=headers)
            )
    return path


def test_links_and_explain_read_every_page_of_a_warc(tmp_path: Path) -> None:
    _warc(tmp_path / "crawl.warc.gz")
    done = rewriter(tmp_path, "links", "crawl.warc.gz", "--json")
    assert done.returncode == 0, done.stderr
    records = json_lines(done.stdout)
    assert [(record["record"], record["original"], record["resolved"]) for record in records] == [
        ("http://w.test/a/one.html", "two.html", "http://w.test/a/two.html"),
        ("http://w.test/a/one.html", "s.css", "http://w.test/a/s.css"),
        ("http://w.test/b/two.html", "../a/one.html", "http://w.test/a/one.html"),
        ("http://w.test/a/s.css", "img/bg.png", "http://w.test/a/img/bg.png"),
    ]
    done = rewriter(tmp_path, "links", "crawl.warc.gz")
    assert [line.split("\t")[0] for line in out_lines(done)] == [record["record"] for record in records]

    done = rewriter(tmp_path, "explain", "crawl.warc.gz")
    assert done.returncode == 0, done.stderr
    headings = [line.strip() for line in out_lines(done) if line.strip().startswith("record ")]
    assert headings == [
        "record http://w.test/a/one.html",
        "record http://w.test/b/two.html",
        "record http://w.test/a/s.css",
    ]
    document = json.loads(rewriter(tmp_path, "explain", "crawl.warc.gz", "--json").stdout)
    assert document["format"] == "warc"
    assert [(row["record"], row["type"], row["base"]) for row in document["parts"]] == [
        ("http://w.test/a/one.html", "text/html", "http://w.test/a/one.html"),
        ("http://w.test/b/two.html", "text/html", "http://w.test/b/two.html"),
        ("http://w.test/a/s.css", "text/css", "http://w.test/a/s.css"),
    ]


@pytest.mark.parametrize("verb", ["links", "explain"])
def test_a_folder_that_is_not_a_maildir_is_refused_clearly(tmp_path: Path, verb: str) -> None:
    write(tmp_path / "plain/page.html", '<a href="x.html">x</a>')
    done = rewriter(tmp_path, verb, "plain")
    assert done.returncode == 1
    assert done.stdout == b""
    [line] = err_lines(done)
    assert line.startswith("rewriter: plain: ") and "not a Maildir" in line, line


# --------------------------------------------------------------------------
# 5. Output conventions
# --------------------------------------------------------------------------


def test_output_ending_in_a_slash_with_one_file_is_a_folder(tmp_path: Path) -> None:
    write(tmp_path / "page.html", '<a href="x.html">x</a>')
    done = rewriter(tmp_path, "rewrite", "page.html", "-o", "OUT/", "--url", "http://h/p.html")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "OUT").is_dir()
    assert (tmp_path / "OUT/page.html").read_bytes() == b'<a href="http://h/x.html">x</a>'


def test_several_inputs_into_an_existing_file_is_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path / "a.html", '<a href="x.html">x</a>')
    write(tmp_path / "b.html", '<a href="y.html">y</a>')
    target = write(tmp_path / "out.html", "old")
    done = rewriter(tmp_path, "rewrite", "a.html", "b.html", "-o", "out.html", "--url", "http://h/")
    assert done.returncode == 2
    assert target.read_bytes() == b"old"


def _mixed(tmp_path: Path) -> None:
    write(tmp_path / "SITE/index.html", '<a href="x.html">x</a>')
    write(tmp_path / "SITE/img/logo.png", PNG + bytes(range(256)))
    write(tmp_path / "SITE/notes.txt", b"line\r\nno newline at the end")
    write(tmp_path / "SITE/run.sh", b"#!/bin/sh\necho hi\n").chmod(0o750)
    write(tmp_path / "SITE/drafts/old.html", '<a href="d.html">d</a>')
    write(tmp_path / "SITE/drafts/pic.png", PNG)
    write(tmp_path / "SITE/secret.key", b"key")


def test_with_an_output_folder_the_other_files_are_copied_byte_for_byte_with_their_mode(tmp_path: Path) -> None:
    _mixed(tmp_path)
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/")
    assert done.returncode == 0, done.stderr
    for name in ("img/logo.png", "notes.txt", "run.sh", "drafts/pic.png", "secret.key"):
        source, copy = tmp_path / "SITE" / name, tmp_path / "OUT" / name
        assert copy.read_bytes() == source.read_bytes(), name
        assert stat.S_IMODE(copy.stat().st_mode) == stat.S_IMODE(source.stat().st_mode), name
    assert stat.S_IMODE((tmp_path / "OUT/run.sh").stat().st_mode) == 0o750
    figures = summary(done)
    assert figures["copied"] == "5"
    assert figures["files"] == "2"  # the pages; the copies are not inputs
    assert "; 5 other files copied; " in err_lines(done)[-1]


def test_no_copy_others_leaves_them_out(tmp_path: Path) -> None:
    _mixed(tmp_path)
    done = rewriter(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://h/", "--no-copy-others")
    assert done.returncode == 0, done.stderr
    written = sorted(
        path.relative_to(tmp_path / "OUT").as_posix() for path in (tmp_path / "OUT").rglob("*") if path.is_file()
    )
    assert written == ["drafts/old.html", "index.html"]
    assert summary(done)["copied"] is None


def test_excluded_files_are_neither_rewritten_nor_copied(tmp_path: Path) -> None:
    _mixed(tmp_path)
    done = rewriter(
        tmp_path,
        "rewrite",
        "SITE/",
        "-o",
        "OUT/",
        "--url-root",
        "http://h/",
        "--exclude",
        "drafts/*",
        "--exclude",
        "*.key",
    )
    assert done.returncode == 0, done.stderr
    written = sorted(
        path.relative_to(tmp_path / "OUT").as_posix() for path in (tmp_path / "OUT").rglob("*") if path.is_file()
    )
    assert written == ["img/logo.png", "index.html", "notes.txt", "run.sh"]
    figures = summary(done)
    assert (figures["files"], figures["copied"]) == ("1", "3")


def test_in_place_nothing_is_copied(tmp_path: Path) -> None:
    _mixed(tmp_path)
    before = sorted(path for path in tmp_path.rglob("*"))
    done = rewriter(tmp_path, "rewrite", "SITE/", "-i", "--url-root", "http://h/")
    assert done.returncode == 0, done.stderr
    assert sorted(path for path in tmp_path.rglob("*")) == before
    assert (tmp_path / "SITE/index.html").read_bytes() == b'<a href="http://h/x.html">x</a>'
    assert summary(done)["copied"] is None


# --------------------------------------------------------------------------
# rewriter.run.collection's public names
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "url"),
    [
        ("docs/guide/index.html", "http://h/site/docs/guide/index.html"),
        ("a b.html", "http://h/site/a%20b.html"),
        ("c#1.html", "http://h/site/c%231.html"),
        ("100%.html", "http://h/site/100%25.html"),
        ("%41.html", "http://h/site/%2541.html"),
        ("café/ü.html", "http://h/site/caf%C3%A9/%C3%BC.html"),
        ("q?.html", "http://h/site/q%3F.html"),
        ("", "http://h/site/"),
        ('a"<>`{}.html', "http://h/site/a%22%3C%3E%60%7B%7D.html"),
        ("a\\b.html", "http://h/site/a%5Cb.html"),  # a backslash in a POSIX name is a character, not a "/"
        ("a^b.html", "http://h/site/a%5Eb.html"),
    ],
)
def test_path_url_encodes_as_a_browser_does(relative: str, url: str) -> None:
    assert path_url("http://h/site/", relative) == url


def test_locations_root_without_a_slash_is_a_folder(tmp_path: Path) -> None:
    tree = tmp_path / "SITE"
    assert Locations(root="http://h/site").url_of(tree / "a/b.html", tree) == "http://h/site/a/b.html"
    assert Locations(root="http://h/site/").url_of(tree / "a/b.html", tree) == "http://h/site/a/b.html"
    assert Locations(root="http://h/site/").url_of(tmp_path / "outside.html", tree) is None


def test_locations_auto(tmp_path: Path) -> None:
    mirrors = tmp_path / "M"
    (mirrors / "example.org").mkdir(parents=True)
    auto = Locations(root="auto")
    assert auto.url_of(mirrors / "example.org/d/i.html", mirrors) == "http://example.org/d/i.html"
    assert Locations(root="auto:https").url_of(mirrors / "Example.ORG/i.html", mirrors) == "https://example.org/i.html"
    assert auto.url_of(mirrors / "127.0.0.1:8080/i.html", mirrors) == "http://127.0.0.1:8080/i.html"
    assert auto.url_of(mirrors / "beside.html", mirrors) is None
    assert auto.url_of(mirrors / "example.org/d/i.html", mirrors / "example.org") == "http://example.org/d/i.html"


def test_locations_map_wins_over_the_root(tmp_path: Path) -> None:
    page = tmp_path / "SITE/a.html"
    locations = Locations(root="http://h/", mapped={os.path.normpath(str(page)): "http://m.test/a"})
    assert locations.url_of(page, tmp_path / "SITE") == "http://m.test/a"
    assert locations.url_of(tmp_path / "SITE/b.html", tmp_path / "SITE") == "http://h/b.html"


@pytest.mark.parametrize(
    ("name", "host"),
    [("example.org", True), ("127.0.0.1:8080", True), ("localhost", True), ("docs", False), ("page_files", False)],
)
def test_is_host_folder(name: str, host: bool) -> None:
    assert is_host_folder(name) is host


def test_load_url_map_pairs_and_unmatched_lines(tmp_path: Path) -> None:
    write(tmp_path / "SITE/a.html", "<p>")
    write(tmp_path / "SITE/sub/b.html", "<p>")
    table = write(
        tmp_path / "map.csv", "path,url\na.html,http://m.test/a\nsub/b.html,http://m.test/b\nno.html,http://m.test/n\n"
    )
    mapped, unmatched = load_url_map(table, [str(tmp_path / "SITE")])
    assert mapped == {
        os.path.normpath(str(tmp_path / "SITE/a.html")): "http://m.test/a",
        os.path.normpath(str(tmp_path / "SITE/sub/b.html")): "http://m.test/b",
    }
    assert unmatched == [(4, "no.html")]


def test_load_url_map_names_the_bad_line(tmp_path: Path) -> None:
    table = write(tmp_path / "map.csv", "path,url\na.html,http://m.test/a\nb.html,c.html,d\n")
    with pytest.raises(CollectionError, match=r"1 line cannot be used") as refused:
        load_url_map(table, [str(tmp_path)])
    assert refused.value.problems == (f"--url-map {table}, line 3: needs two fields, path,url (found 3)",)
    with pytest.raises(CollectionError, match=r"cannot be read"):
        load_url_map(tmp_path / "absent.csv", [str(tmp_path)])


def test_local_copies_keeps_a_file_of_the_folder(tmp_path: Path) -> None:
    write(tmp_path / "saved/page_files/x.png", PNG)
    write(tmp_path / "outside.png", PNG)
    keep = LocalCopies(str(tmp_path / "saved/page.html"), str(tmp_path / "saved"))
    assert keep("page_files/x.png", "https://o.test/page_files/x.png")[0] == "local"
    assert keep("page_files/missing.png", "https://o.test/page_files/missing.png") is None
    assert keep("../outside.png", "https://o.test/outside.png") is None
    assert keep("/page_files/x.png", "https://o.test/page_files/x.png") is None
    # Under a root that puts the file at that very URL: a mirror, not a copy; but NAME_files stays a copy.
    write(tmp_path / "saved/b.html", "<p>")
    mirror = LocalCopies(str(tmp_path / "saved/page.html"), str(tmp_path / "saved"), Locations(root="http://h/"))
    assert mirror("b.html", "http://h/b.html") is None
    assert mirror("b.html", "http://elsewhere/b.html")[0] == "local"
    assert mirror("page_files/x.png", "http://h/page_files/x.png")[0] == "local"


def test_url_map_entry_naming_a_folder_names_no_file(tmp_path: Path) -> None:
    # A map gives files their URLs: an entry naming a folder of the input matches no file, and is said.
    (tmp_path / "SITE" / "docs").mkdir(parents=True)
    (tmp_path / "SITE" / "a.html").write_bytes(b"<p>")
    (tmp_path / "map.csv").write_text("a.html,http://m.test/a.html\ndocs,http://m.test/docs/\n")
    mapped, unmatched = load_url_map(tmp_path / "map.csv", [str(tmp_path / "SITE")])
    assert list(mapped.values()) == ["http://m.test/a.html"]
    assert unmatched == [(2, "docs")]
