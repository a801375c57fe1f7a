"""The run request: every usage error of the command line said once, before anything is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.cli import build_parser
from rewriter.cli.request import RunRequest, UsageError


def _request(*argv: str) -> RunRequest:
    return RunRequest.read(build_parser().parse_args(list(argv)), None)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["rewrite", "a.html", "--backup", ".orig"], "rewriter rewrite: --backup goes with --in-place"),
        (["rewrite", "-", "--in-place"], "rewriter rewrite: standard input cannot be rewritten in place"),
        (["rewrite", "a.html", "-j", "0", "-o", "out"], "rewriter rewrite: -j needs at least 1"),
        (
            ["rewrite", "a.html", "b.html"],
            "rewriter: several inputs need -o DIR (a folder for the outputs) or --in-place",
        ),
        (
            ["rewrite", "a.html", "--resume"],
            "rewriter rewrite: --resume needs -o or --in-place: a run to standard output keeps no journal",
        ),
        (["rewrite", "a.html", "-q", "-v"], "rewriter rewrite: -q and -v say opposite things: give one"),
        (["resolve", "http://a/"], "rewriter resolve: give at least one REF or --file"),
        (["links", "a.html", "--url", "page.html"], "rewriter links: --url 'page.html' is not an absolute URL"),
    ],
)
def test_a_usage_error_is_said_by_the_request(argv: list[str], said: str) -> None:
    with pytest.raises(UsageError) as raised:
        _request(*argv)
    assert str(raised.value).startswith(said)


def test_a_web_archive_is_never_rewritten_in_place(tmp_path: Path) -> None:
    archive = tmp_path / "crawl.warc"
    archive.write_bytes(b"WARC/1.0\r\nWARC-Type: warcinfo\r\nContent-Length: 0\r\n\r\n\r\n\r\n")
    with pytest.raises(UsageError, match="is a web archive: it is never changed in place"):
        _request("rewrite", str(archive), "--in-place")


def test_the_request_holds_what_each_named_file_is(tmp_path: Path) -> None:
    page = tmp_path / "view.php"
    page.write_bytes(b"<!doctype html><a href=x>")
    request = _request("rewrite", str(page), "--url", "http://h/view.php")
    kind = request.kinds[str(page)]
    assert kind is not None and kind.format == "html"
    assert request.files == (str(page),)
    assert request.settings().url == "http://h/view.php"


def test_the_journal_fingerprint_changes_with_an_option_that_changes_outputs() -> None:
    one = _request("rewrite", "a.html", "-o", "out/").fingerprint()
    other = _request("rewrite", "a.html", "-o", "out/", "--rules", "whatwg").fingerprint()
    assert one != other and one["rules"] == "rfc3986" and other["rules"] == "whatwg"
