"""The command line: verbs, exit codes, messages that name the failing item."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import without_summary

from rewriter import __version__
from rewriter.cli.commands import main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_resolve_prints_one_url_per_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "resolve", "http://a/b/c/d;p?q", "g", "../g", "g?", "#s")
    assert code == 0 and err == ""
    assert out.splitlines() == ["http://a/b/c/g", "http://a/b/g", "http://a/b/c/g?", "http://a/b/c/d;p?q#s"]


@pytest.mark.parametrize(
    ("rules", "expected"),
    [("rfc1808", "http://a/../g"), ("rfc2396", "http://a/../g"), ("rfc3986", "http://a/g"), ("whatwg", "http://a/g")],
)
def test_resolve_rules(capsys: pytest.CaptureFixture[str], rules: str, expected: str) -> None:
    code, out, _ = run(capsys, "resolve", "--rules", rules, "http://a/b/c/d;p?q", "../../../g")
    assert (code, out) == (0, expected + "\n")


def test_resolve_non_strict(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "resolve", "http://a/b/c/d", "http:g")[1] == "http:g\n"
    assert run(capsys, "resolve", "--non-strict", "http://a/b/c/d", "http:g")[1] == "http://a/b/c/g\n"


def test_unresolvable_reference_is_named_and_the_others_still_print(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "resolve", "mailto:x@example.org", "g", "#f", "https://example.org/")
    assert code == 1
    assert out.splitlines() == ["mailto:x@example.org#f", "https://example.org/"]
    assert "'g'" in err and "opaque" in err
    assert "Traceback" not in err


def test_references_from_a_file_keep_empty_and_odd_lines(tmp_path: Path) -> None:
    listing = tmp_path / "refs.txt"
    listing.write_bytes(b"a b\r\n\n\xff\xfe/x\nmailto:m\n")
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "resolve", "http://h/d/e", "--file", str(listing)], capture_output=True
    )
    assert done.returncode == 0, done.stderr
    # Bytes that are not UTF-8 come back out as they went in.
    assert done.stdout.splitlines() == [b"http://h/d/a b", b"http://h/d/e", b"http://h/d/\xff\xfe/x", b"mailto:m"]


def test_failures_in_a_file_name_the_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    listing = tmp_path / "refs.txt"
    listing.write_text("http://x/\nrelative\n")
    code, out, err = run(capsys, "resolve", "", "-f", str(listing))
    assert code == 1
    assert out == "http://x/\n"
    assert f"{listing}:2: 'relative'" in err and "no base" in err


def test_unreadable_file_is_named_and_the_rest_done(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "resolve", "http://a/", "g", "-f", str(tmp_path / "missing.txt"))
    assert code == 1 and out == "http://a/g\n"
    assert "missing.txt" in err and "No such file" in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "resolve", "http://a/")[0] == 2
    assert run(capsys)[0] == 2
    with pytest.raises(SystemExit) as caught:
        main(["resolve", "--rules", "rfc9999", "http://a/", "g"])
    assert caught.value.code == 2


def test_version_and_help_through_python_dash_m() -> None:
    version = subprocess.run([sys.executable, "-m", "rewriter", "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.strip() == f"rewriter {__version__}"
    help_text = subprocess.run([sys.executable, "-m", "rewriter", "--help"], capture_output=True, text=True)
    assert help_text.returncode == 0 and "resolve" in help_text.stdout


def test_fixture_reference_list_resolves(capsys: pytest.CaptureFixture[str]) -> None:
    # The README's first command.
    code, out, err = run(
        capsys, "resolve", "https://example.org/docs/guide/index.html", "--file", str(FIXTURES / "references.txt")
    )
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == len((FIXTURES / "references.txt").read_text(encoding="utf-8").splitlines())
    assert lines[0] == "https://example.org/docs/img/logo.png"
    assert "https://example.org/docs/guide/fontello.eot?#iefix" in lines


# --- rewrite and links ----------------------------------------------------------------


def test_rewrite_fixture_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    # The README's first command: the page carries its retrieval URL in a saved-from mark.
    code, out, err = run(capsys, "rewrite", str(FIXTURES / "saved-page.html"))
    assert code == 0, err
    assert 'href="https://example.org/docs/css/site.css"' in out
    assert '<a href="#main">' in out  # same-document reference kept


def test_rewrite_to_a_file_and_several_to_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "one.html"
    one.write_bytes(b"<a href=x>")
    two = tmp_path / "two.html"
    two.write_bytes(b"<img src=y>")
    out_file = tmp_path / "out.html"
    assert run(capsys, "rewrite", str(one), "--url", "http://h/d/", "-o", str(out_file))[0] == 0
    assert out_file.read_bytes() == b"<a href=http://h/d/x>"
    folder = tmp_path / "outs"
    assert run(capsys, "rewrite", str(one), str(two), "--url", "http://h/", "-o", str(folder))[0] == 0
    assert (folder / "two.html").read_bytes() == b"<img src=http://h/y>"
    assert sorted(p.name for p in folder.iterdir()) == ["one.html", "two.html"]  # no temporary file left
    assert run(capsys, "rewrite", str(one), str(two))[0] == 2  # several inputs need -o DIR


def test_rewrite_goes_on_after_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.html"
    good.write_bytes(b"<a href=x>")
    code, _, err = run(
        capsys, "rewrite", str(tmp_path / "missing.html"), str(good), "--url", "http://h/", "-o", str(tmp_path / "o")
    )
    assert code == 1
    assert "missing.html" in err and "Traceback" not in err
    assert (tmp_path / "o" / "good.html").read_bytes() == b"<a href=http://h/x>"


def test_rewrite_reports_links_left_relative(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(b"<a href=x>")
    code, out, err = run(capsys, "rewrite", str(page))
    assert code == 1 and out == "<a href=x>"
    # One line for the file, saying why and what to give; each link only with -v.
    assert without_summary(err) == (
        f"rewriter: {page}: 1 link left relative: no base (give --url, --url-root or --canonical-base)\n"
    )
    code, out, err = run(capsys, "rewrite", str(page), "-v")
    assert code == 1 and out == "<a href=x>"
    assert "'x'" in err and "no-base" in err and "bytes 8-9" in err
    code, out, err = run(capsys, "rewrite", str(page), "-q")
    assert (code, out, err) == (1, "<a href=x>", "")  # -q: nothing but errors, and no link is an error
    assert run(capsys, "rewrite", str(page), "--require-base")[0] == 1


def test_rewrite_stdin_to_stdout_bytes_exact() -> None:
    page = b'<meta charset="windows-1252"><p>\xe9</p><a href="\xe9.html">'
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "rewrite", "-", "--url", "http://h/"], input=page, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == page.replace(b'href="', b'href="http://h/')


def test_rewrite_options_reach_the_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "p.html"
    page.write_bytes(b'<base href="/b/"><a href="#t"><img data-src=l.png>')
    out = run(
        capsys, "rewrite", str(page), "--url", "http://h/", "--remove-base", "--absolutize-fragments", "--no-lazy"
    )[1]
    assert out == '<a href="http://h/b/#t"><img data-src=l.png>'


def test_links_plain_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "links", str(FIXTURES / "saved-page.html"))
    assert code == 0
    assert "link\thref\trewritten\t../css/site.css\thttps://example.org/docs/css/site.css" in out.splitlines()
    code, out, _ = run(capsys, "links", str(FIXTURES / "saved-page.html"), "--json", "--rules", "whatwg")
    records = [json.loads(line) for line in out.splitlines()]
    assert {"element", "attribute", "status", "original", "resolved", "layer", "start", "end"} <= set(records[0])
    assert any(r["attribute"] == "srcset" and r["original"] == "img/diagram,wide.webp" for r in records)


def test_links_on_an_unreadable_file_is_an_item_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "links", str(tmp_path / "missing.html"))
    assert (code, out) == (1, "")
    assert "missing.html" in err and "Traceback" not in err


# --- messages, mbox, Maildir, explain (issue #4) -------------------------------------------------------------

MIME = FIXTURES / "mime"


def test_rewrite_detects_a_message_by_its_content(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "no-extension"
    source.write_bytes((MIME / "rfc2557-9.3.eml").read_bytes())
    code, out, err = run(capsys, "rewrite", str(source), "-o", str(tmp_path / "out.eml"))
    assert (code, out, without_summary(err)) == (0, "", "")
    written = (tmp_path / "out.eml").read_bytes()
    assert b"http://www.ietf.cnri.reston.va.us/images/ietflogo1.gif" in written.replace(b"=\r\n", b"")
    # The heading and every other part are as they were.
    assert written.split(b"\r\n\r\n")[0] == source.read_bytes().split(b"\r\n\r\n")[0]


def test_rewrite_message_with_no_base_reports_by_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # RFC 2557 §9.4: no base, and the image part's Content-Location is the reference itself: a link
    # to that part (issue 19, point 6), kept. Named otherwise, the reference is left relative.
    code, _, err = run(capsys, "rewrite", str(MIME / "rfc2557-9.4.eml"), "-v")
    assert (code, without_summary(err)) == (0, "")
    other = tmp_path / "other.eml"
    other.write_bytes((MIME / "rfc2557-9.4.eml").read_bytes().replace(b"Location: ietflogo.gif", b"Location: x.gif"))
    code, _, err = run(capsys, "rewrite", str(other), "-v")
    assert code == 1
    assert "part 1.1: <img src> 'ietflogo.gif'" in err and "no-base" in err


def test_rewrite_an_mbox_streams_every_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = (MIME / "rfc2557-9.3.eml").read_bytes().replace(b"\r\n", b"\n")
    mbox = tmp_path / "archive"
    mbox.write_bytes(b"From a@example.org Mon Jan  1 00:00:00 2024\n" + one + b"\n" + b"From b Tue\n" + one)
    code, out, err = run(capsys, "rewrite", str(mbox), "-o", str(tmp_path / "out.mbox"))
    assert (code, out) == (0, ""), err
    written = (tmp_path / "out.mbox").read_bytes()
    assert written.count(b"\nFrom b Tue\n") == 1 and written.startswith(b"From a@example.org Mon")
    # In each message: once in the image part's Content-Location, and now once in the HTML.
    absolute = b"http://www.ietf.cnri.reston.va.us/images/ietflogo1.gif"
    assert mbox.read_bytes().count(absolute) == 2
    assert written.replace(b"=\n", b"").count(absolute) == 4


def test_rewrite_a_maildir_into_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    maildir = tmp_path / "Mail"
    for sub in ("cur", "new", "tmp"):
        (maildir / sub).mkdir(parents=True)
    (maildir / "cur" / "1700000000.1.host:2,S").write_bytes((MIME / "rfc2557-9.3.eml").read_bytes())
    (maildir / "new" / "1700000001.2.host").write_bytes(b"Subject: plain\n\nno links\n")
    code, _, err = run(capsys, "rewrite", str(maildir), "-o", str(tmp_path / "copy"))
    assert code == 0, err
    assert (tmp_path / "copy" / "new" / "1700000001.2.host").read_bytes() == b"Subject: plain\n\nno links\n"
    assert b"ietflogo1.gif" in (tmp_path / "copy" / "cur" / "1700000000.1.host:2,S").read_bytes()
    code, _, err = run(capsys, "rewrite", str(maildir))
    assert code == 1 and "needs -o DIR" in err


def test_a_folder_is_walked_and_mirrored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "index.html").write_bytes(b"<a href=docs/a.html>a</a>")
    (site / "docs" / "a.html").write_bytes(b"<img src=../logo.png>")
    (site / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    # Each file its own URL: the folder stands for http://h/.
    code, _, err = run(capsys, "rewrite", str(site), "-o", str(tmp_path / "out"), "--url-root", "http://h/", "-j", "1")
    assert code == 0, err
    assert (tmp_path / "out" / "index.html").read_bytes() == b"<a href=http://h/docs/a.html>a</a>"
    assert (tmp_path / "out" / "docs" / "a.html").read_bytes() == b"<img src=http://h/logo.png>"
    assert (tmp_path / "out" / "logo.png").read_bytes() == b"\x89PNG\r\n\x1a\n"  # not rewritten: copied
    assert "2 inputs: 2 rewritten, 0 unchanged, 0 failed; 1 other file copied;" in err
    # One --url for every file: a link to a file of the folder cannot be told from its path, and is
    # kept as written (a local copy) rather than pointed at a URL that may never have existed.
    code, _, err = run(capsys, "rewrite", str(site), "-o", str(tmp_path / "one"), "--url", "http://h/", "-j", "1")
    assert code == 0, err
    assert (tmp_path / "one" / "index.html").read_bytes() == b"<a href=docs/a.html>a</a>"
    assert (tmp_path / "one" / "docs" / "a.html").read_bytes() == b"<img src=../logo.png>"
    assert (
        "2 inputs: 0 rewritten, 2 unchanged, 0 failed; 1 other file copied; links: 0 rewritten, 2 kept (2 local)" in err
    )


def test_links_of_a_message_name_the_part(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "links", str(MIME / "precedence-rfc822.eml"), "--json")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert {record["part"] for record in records} >= {"1.1", "1.2.1.1"}
    assert all(record["status"] == "rewritten" for record in records)


def test_explain_shows_each_part_base_and_where_it_came_from(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", str(MIME / "precedence-content-base.eml"))
    assert code == 0
    assert "(message: a message: it opens with header fields" in out.splitlines()[0]  # what it is, and why
    assert "text/html" in out and "Content-Base of part" in out
    code, out, _ = run(capsys, "explain", str(MIME / "precedence-content-base.eml"), "--json")
    tree = json.loads(out)
    html = next(row for row in tree["parts"] if row["type"] == "text/html")
    assert html["layer"] == "Content-Base" and html["rewritten"] >= 1


def test_explain_a_plain_html_document(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "explain", str(FIXTURES / "saved-page.html"), "--url", "https://example.org/a/")
    assert code == 0 and "(html: " in out and "retrieval-url" in out
    code, out, _ = run(capsys, "explain", str(FIXTURES / "saved-page.html"), "--format", "css", "--json")
    assert json.loads(out)["why"] == "as --format css says"


def test_format_can_be_forced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "page"  # no name to tell by (a .txt is plain text: rewriter.containers.formats)
    page.write_bytes(b"Note: a page\n<a href=x>x</a>")  # one field-like line: read as HTML
    code, out, _ = run(capsys, "rewrite", str(page), "--url", "http://h/")
    assert code == 0 and "href=http://h/x" in out
    code, out, _ = run(capsys, "rewrite", str(page), "--url", "http://h/", "--format", "message")
    assert code == 0 and "href=x" in out  # as a message it is text/plain: nothing to rewrite


# --------------------------------------------------------------------------
# Leaving: all of standard output is out before the process ends (rewriter.cli.entry._exit_now)
# --------------------------------------------------------------------------


def _tool(*argv: str, **options: object) -> subprocess.CompletedProcess[bytes]:
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **options}
    return subprocess.run([sys.executable, "-m", "rewriter", *argv], timeout=60, **streams)  # type: ignore[call-overload]


def test_every_byte_of_a_large_output_reaches_the_pipe() -> None:
    page = b"<!doctype html>" + b"".join(b"<a href=p%d.html>%d</a>\n" % (i, i) for i in range(60_000))
    done = _tool("rewrite", "-", "--url", "http://h/d/", input=page)
    assert (done.returncode, without_summary(done.stderr)) == (0, b"")
    assert done.stdout == page.replace(b"<a href=p", b"<a href=http://h/d/p")
    listed = _tool("links", "-", "--url", "http://h/d/", "--json", input=page)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 60_000


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_full_disk_on_standard_output_is_said_and_fails() -> None:
    with open("/dev/full", "wb") as full:
        done = _tool("links", str(FIXTURES / "saved-page.html"), stdout=full)
    assert done.returncode == 1
    assert b"rewriter: cannot write to standard output: No space left on device" in done.stderr
    assert b"Traceback" not in done.stderr


def test_a_file_the_run_cannot_go_on_without_is_named_not_taken_for_standard_output(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import rewriter.cli.entry as entry

    def lost(*arguments: object) -> int:
        raise FileNotFoundError(2, "No such file or directory", "/out/crawl")

    monkeypatch.setattr(entry, "run_verb", lost)
    assert main(["rewrite", str(FIXTURES / "saved-page.html")]) == 1
    said = capsys.readouterr().err
    assert "rewriter: /out/crawl: No such file or directory" in said
    assert "standard output" not in said


def test_a_reader_that_leaves_early_is_no_error() -> None:
    page = b"".join(b"<a href=p%d>x</a>" % i for i in range(100_000))
    tool = subprocess.Popen(
        [sys.executable, "-m", "rewriter", "links", "-", "--url", "http://h/"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tool.stdin is not None and tool.stdout is not None and tool.stderr is not None
    tool.stdin.write(page)
    tool.stdin.close()
    assert tool.stdout.readline().startswith(b"a\thref\t")
    tool.stdout.close()  # like `| head -1`
    assert tool.wait(timeout=60) == 0
    assert tool.stderr.read() == b""


_SNIFF_SAMPLES = """
import json, sys
from rewriter.document.encoding import sniff
samples = [b"<meta charset=koi8-r>", b"<p>" + b"x" * 2000 + b"<meta charset='iso-8859-2'>",
           b'<?xml version="1.0" encoding="windows-1251"?><html>', b"<p>\\xe9", "<p>é".encode(),
           b'<meta http-equiv="Content-Type" content="text/html; charset=shift_jis">']
print(json.dumps([sniff(sample).label for sample in samples]))
"""


def test_the_command_line_imports_no_bs4_and_sniffs_as_bs4_does() -> None:
    # rewriter.document.encoding.declared_encoding reads a declaration as bs4's EncodingDetector did,
    # without bs4's package import (0.1 s, 12 ms without its extras).
    light = subprocess.run(
        [sys.executable, "-c", _SNIFF_SAMPLES + "assert 'bs4' not in sys.modules, 'bs4 is imported'\n"],
        capture_output=True,
        timeout=60,
    )
    assert light.returncode == 0, light.stderr.decode()
    assert json.loads(light.stdout) == ["koi8-r", "iso-8859-2", "windows-1251", "windows-1252", "UTF-8", "shift_jis"]


def test_a_page_is_rewritten_without_loading_what_only_other_inputs_need(tmp_path: Path) -> None:
    # Start-up is most of a one-page run: WARC support (warcio, fsspec) and bs4 are not imported
    # for a page, and a WARC input still is one.
    script = (
        "import sys; from rewriter.cli import commands as cli; code = cli.main(sys.argv[1:])\n"
        "print(sorted(name for name in ('warcio', 'fsspec', 'bs4', 'soupsieve', 'html5lib') if name in sys.modules))"
    )
    page = tmp_path / "page.html"
    page.write_bytes(b"<a href=x>")
    done = subprocess.run(
        [sys.executable, "-c", script, "rewrite", str(page), "--url", "http://h/", "-o", str(tmp_path / "out.html")],
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, b"[]"), done.stderr
    warc = tmp_path / "crawl.warc"
    warc.write_bytes(b"WARC/1.1\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
    command = [sys.executable, "-c", script, "rewrite", str(warc), "-o", str(tmp_path / "site")]
    done = subprocess.run(command, capture_output=True, timeout=60)
    assert b"'warcio'" in done.stdout, done.stderr


@pytest.mark.parametrize("verb", ["rewrite", "links", "explain", "unpack"])
@pytest.mark.parametrize("url", ["page.html", "//example.org/x", "mailto:someone@example.org", "about:blank", ""])
def test_a_url_that_cannot_be_a_base_is_a_usage_error(tmp_path: Path, verb: str, url: str) -> None:
    """--url names the retrieval URL, the base of RFC 1808 §3.3: a relative or opaque value
    would leave every relative link as it is, or worse; the value is named, exit 2."""
    page = tmp_path / "page.html"
    page.write_bytes(b'<a href="x">x</a>')
    extra = ["-o", str(tmp_path / "out")] if verb == "unpack" else []
    done = _tool(verb, str(page), "--url", url, *extra)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        f"rewriter {verb}: --url {url!r} is not an absolute URL that can be a base "
        "(a scheme, then a path from '/': http://example.org/page.html, file:///home/me/page.html)\n"
    )
    assert done.stdout == b"" and not (tmp_path / "out").exists()


@pytest.mark.parametrize("url", ["http://example.org/dir/", "file:///home/me/page.html", "s3://bucket/key/"])
def test_a_hierarchical_url_of_any_scheme_is_a_base(tmp_path: Path, url: str) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(b'<a href="x">x</a>')
    done = _tool("rewrite", str(page), "--url", url)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b'<a href="' + url.rsplit("/", 1)[0].encode() + b'/x">x</a>'


def test_include_and_exclude_globs_take_extensions_in_any_case(tmp_path: Path) -> None:
    """The default globs (*.html, *.htm, *.css, ...) take INDEX.HTM and Style.CSS as a file
    manager would; an --exclude glob too; folder names keep their case."""
    tree = tmp_path / "site"
    (tree / "Docs").mkdir(parents=True)
    for name in ("INDEX.HTM", "Page.Html", "Docs/Guide.XHTML", "notes.TXT", "skip.HTML"):
        (tree / name).write_bytes(b'<a href="x">x</a>')
    (tree / "Style.CSS").write_bytes(b"p { background: url(x) }")
    out = ("-o", str(tmp_path / "out"), "--no-copy-others")
    done = _tool("rewrite", str(tree), *out, "--url", "http://h/", "--exclude", "*.html", "-q")
    assert done.returncode == 0, done.stderr
    written = sorted(path.relative_to(tmp_path / "out").as_posix() for path in (tmp_path / "out").rglob("*.*"))
    assert written == ["Docs/Guide.XHTML", "INDEX.HTM", "Style.CSS"]
    assert (tmp_path / "out" / "INDEX.HTM").read_bytes() == b'<a href="http://h/x">x</a>'
    assert (tmp_path / "out" / "Style.CSS").read_bytes() == b"p { background: url(http://h/x) }"


@pytest.mark.parametrize("label", ["nonsense", "utf-9", "", "x-mac-klingon"])
def test_a_charset_no_encoding_has_is_a_usage_error(tmp_path: Path, label: str) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(b'<a href="x">x</a>')
    done = _tool("rewrite", str(page), "--charset", label, "--url", "http://h/")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == (
        f"rewriter rewrite: --charset {label!r} is no encoding label of the Encoding Standard "
        "(utf-8, windows-1252, shift_jis, gb18030, ...)\n"
    )


@pytest.mark.parametrize("label", ["Shift_JIS", " latin1 ", "UTF-8", "x-user-defined"])
def test_every_label_of_the_encoding_standard_is_a_charset(tmp_path: Path, label: str) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(b'<a href="x">x</a>')
    done = _tool("rewrite", str(page), "--charset", label, "--url", "http://h/")
    assert (done.returncode, done.stdout) == (0, b'<a href="http://h/x">x</a>'), done.stderr


def test_an_output_ending_in_a_slash_is_a_folder(tmp_path: Path) -> None:
    """-o is a folder when it ends in "/", exists as one, or takes several inputs; else a file."""
    page = tmp_path / "page.html"
    page.write_bytes(b'<a href="x">x</a>')
    done = _tool("rewrite", str(page), "-o", f"{tmp_path / 'new'}/", "--url", "http://h/")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new" / "page.html").read_bytes() == b'<a href="http://h/x">x</a>'
    done = _tool("rewrite", str(page), "-o", str(tmp_path / "file.html"), "--url", "http://h/")
    assert (tmp_path / "file.html").read_bytes() == b'<a href="http://h/x">x</a>'
    (tmp_path / "existing").mkdir()
    done = _tool("rewrite", str(page), "-o", str(tmp_path / "existing"), "--url", "http://h/")
    assert (tmp_path / "existing" / "page.html").is_file()
    done = _tool("rewrite", str(page), str(page), "-o", str(tmp_path / "file.html"), "--url", "http://h/")
    assert done.returncode == 2 and b"is a file" in done.stderr


@pytest.mark.parametrize("verb", ["rewrite", "resolve"])
@pytest.mark.parametrize("rules", ["whatwg", "rfc1808"])
def test_non_strict_under_rules_it_does_not_change_is_a_usage_error(tmp_path: Path, verb: str, rules: str) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(b'<a href="http:g">x</a>')
    argv = [str(page), "--url", "http://h/d/"] if verb == "rewrite" else ["http://h/d/", "http:g"]
    done = _tool(verb, *argv, "--rules", rules, "--non-strict")
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode().startswith(f"rewriter {verb}: --non-strict does nothing under --rules {rules} ")
    done = _tool(verb, *argv, "--rules", "rfc2396", "--non-strict")
    assert done.returncode == 0, done.stderr
