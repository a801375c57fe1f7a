"""--layout wget: wget's file names read back to the URLs they were fetched from (rewriter.run.collection.Layout),
each file's URL under --url-root and auto, and a link that ``wget -k`` wrote as a local name written
as the URL it stands for. The names here are the ones wget 1.21 writes (tests/test_wget_mirrors.py
makes them with wget itself); the ambiguous ones are read as the module's docstring says."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewriter.run.collection import PLAIN_LAYOUT as PLAIN
from rewriter.run.collection import Layout, LayoutError, LocalCopies, Locations

WGET = Layout.read("wget")
WINDOWS = Layout.read("wget:windows")


@pytest.mark.parametrize(
    ("name", "url"),
    [
        # the query after "?", -E's ".html" after it
        ("casts.html?from=query", "casts.html?from=query"),
        ("casts.html?from=query.html", "casts.html?from=query"),
        ("view.php?id=2.html", "view.php?id=2"),
        ("style.css?v=3.css", "style.css?v=3"),
        # a server-side page's name with -E's extension
        ("view.php.html", "view.php"),
        ("feed.asp.css", "feed.asp"),
        # a folder's page
        ("index.html", ""),
        ("docs/index.html", "docs/"),
        ("docs/index.html?q=1.html", "docs/?q=1"),
        # the query, unescaped by wget 1.21 (and its "/" escaped): escaped again where a query must be
        ("view.php?id=3&q=a%2Fb.html", "view.php?id=3&q=a/b"),
        (
            'q?x=a&b&y==&z= sp&u=%&t=?&s=#&o="<>&c=caf\u00e9',
            "q?x=a&b&y==&z=%20sp&u=%25&t=?&s=%23&o=%22%3C%3E&c=caf%C3%A9",
        ),
        ("ctl?y=%01", "ctl?y=%01"),  # a control character wget escaped stays escaped
        # an older wget's query, its escapes kept: kept
        ("s?q=caf%C3%A9%20x", "s?q=caf%C3%A9%20x"),
        # the path unescaped by wget, escaped again as a URL path is
        ("a b/caf\u00e9.html", "a%20b/caf%C3%A9.html"),
        ("a%2Fb.png", "a%2Fb.png"),  # "/" in a segment came from "%2F"
        ("100%.png", "100%25.png"),  # "%" is never escaped by wget: a literal one
        ("a%2fb.png", "a%252fb.png"),  # wget writes upper-case hex: not its escape
        ("%2E%2E/x.png", "%2E%2E/x.png"),  # a ".." folder, defanged
        ("tab%09.png", "tab%09.png"),  # a control character
        # not undone: no sign that -E appended it
        ("about.html", "about.html"),
        ("page.en.html", "page.en.html"),
        ("a.html.html", "a.html.html"),
        ("x.css", "x.css"),
        ("?odd.html", "%3Fodd.html"),  # a name never starts with its query
    ],
)
def test_wget_unix_names(name: str, url: str) -> None:
    assert WGET.url_path(name) == url


@pytest.mark.parametrize(
    ("name", "url"),
    [
        ("casts.html@from=query.html", "casts.html?from=query"),
        ("x%3Ay.html", "x:y.html"),
        ("a%5Cb%7Cc%22d%2A%3C%3E.png", "a%5Cb|c%22d*%3C%3E.png"),  # "|" as browsers write a path
        ("q@a=1%3F2%3A3.html", "q?a=1?2:3"),
        ("@user.html", "@user.html"),  # "@" first: no query
        ("casts.html?from=query.html", "casts.html%3Ffrom=query.html"),  # "?" is no separator there
    ],
)
def test_wget_windows_names(name: str, url: str) -> None:
    assert WINDOWS.url_path(name) == url


def test_the_modifiers() -> None:
    assert Layout.read("wget:unix,ascii").url_path("caf%C3%A9.html") == "caf%C3%A9.html"
    assert WGET.url_path("caf%C3%A9.html") == "caf%25C3%25A9.html"  # not escaped under unix: literal
    assert Layout.read("wget:nocontrol").url_path("tab%09.png") == "tab%2509.png"
    assert Layout.read("wget:windows,lowercase").url_path("casts.html@x=1") == "casts.html?x=1"


def test_an_extension_is_kept_when_the_shorter_name_is_a_file() -> None:
    assert WGET.url_path("d/view.php.html", exists=lambda path: path == "d/view.php") == "d/view.php.html"
    assert WGET.url_path("d/view.php.html", exists=lambda path: False) == "d/view.php"


@pytest.mark.parametrize("value", ["wget:vms", "wget:windows,fast", "httrack:windows", "plain:windows", ""])
def test_a_layout_that_is_none_is_refused(value: str) -> None:
    with pytest.raises(LayoutError):
        Layout.read(value)


def test_plain_reads_nothing() -> None:
    assert Layout.read("plain") == PLAIN and not PLAIN.reads_names
    root = Locations(root="http://h/")
    assert root.url_of("m/casts.html?from=query.html", "m") == "http://h/casts.html%3Ffrom=query.html"


def test_locations_under_a_root_and_auto(tmp_path: Path) -> None:
    unix = tmp_path / "127.0.0.1:8000"
    windows = tmp_path / "127.0.0.1+8000"
    for host in (unix, windows):
        (host / "docs").mkdir(parents=True)
    assert Locations(root="http://h/site/", layout=WGET).url_of(unix / "docs/index.html", unix) == "http://h/site/docs/"
    auto = Locations(root="auto", layout=WGET)
    assert auto.url_of(unix / "view.php?id=2.html", tmp_path) == "http://127.0.0.1:8000/view.php?id=2"
    assert auto.url_of(unix / "docs/index.html", unix) == "http://127.0.0.1:8000/docs/"
    auto_windows = Locations(root="auto:https", layout=WINDOWS)
    assert auto_windows.url_of(windows / "a@b=1.html", tmp_path) == "https://127.0.0.1:8000/a?b=1"
    assert auto_windows.url_of(windows / "docs/x.css", windows) == "https://127.0.0.1:8000/docs/x.css"
    # Under unix, "+8000" is no port: the folder is no host's.
    assert Locations(root="auto", layout=WGET).url_of(windows / "x.html", tmp_path) is None


def test_an_extension_is_kept_when_the_shorter_name_is_a_file_of_the_mirror(tmp_path: Path) -> None:
    (tmp_path / "view.php").write_bytes(b"data")
    (tmp_path / "view.php.html").write_bytes(b"<p>")
    root = Locations(root="http://h/", layout=WGET)
    assert root.url_of(tmp_path / "view.php.html", tmp_path) == "http://h/view.php.html"
    (tmp_path / "view.php").unlink()
    assert root.url_of(tmp_path / "view.php.html", tmp_path) == "http://h/view.php"


def test_a_local_name_stands_for_its_url(tmp_path: Path) -> None:
    for name in ("index.html", "casts.html?from=query.html", "docs/index.html", "img/logo.png"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    locations = Locations(root="http://h/", layout=WGET)
    keep = LocalCopies(str(tmp_path / "index.html"), str(tmp_path), locations)
    # wget -k's names: the URL they stand for, the fragment kept
    assert keep("casts.html%3Ffrom=query.html#s", "http://h/casts.html%3Ffrom=query.html#s") == (
        "rewritten",
        "http://h/casts.html?from=query#s",
    )
    assert keep("docs/index.html", "http://h/docs/index.html") == ("rewritten", "http://h/docs/")
    # a name that is its URL's path, or a link as the site wrote it: resolved as usual
    assert keep("img/logo.png", "http://h/img/logo.png") is None
    assert keep("docs/", "http://h/docs/") is None
    assert keep("missing.png", "http://h/missing.png") is None
    # with no base at all, the file's URL still
    assert keep("docs/index.html", None) == ("rewritten", "http://h/docs/")


def rewriter(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rewriter", *map(str, arguments)], capture_output=True, text=True, timeout=120
    )


def _mirror(folder: Path) -> Path:
    files = {
        "index.html": '<a href="casts.html%3Ffrom=query.html#s">c</a><a href="docs/index.html">d</a>'
        '<img src="img/logo.png"><a href="?page=2">p</a>',
        "casts.html?from=query.html": '<a href="index.html">home</a><a href="#s">here</a>',
        "docs/index.html": '<a href="../view.php%3Fid=2.html">v</a>',
        "view.php?id=2.html": "<p>v</p>",
        "img/logo.png": "png",
    }
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("absolutize_local", [False, True])
def test_rewrite_with_layout_wget(tmp_path: Path, absolutize_local: bool) -> None:
    mirror = _mirror(tmp_path / "m")
    extra = ["--absolutize-local"] if absolutize_local else []
    report = tmp_path / "links.jsonl"
    done = rewriter(
        "rewrite", mirror, "-o", f"{tmp_path / 'out'}/", "--url-root", "http://h/", "--layout", "wget",
        "--report", report, "-q", *extra,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    assert (out / "index.html").read_text(encoding="utf-8") == (
        '<a href="http://h/casts.html?from=query#s">c</a><a href="http://h/docs/">d</a>'
        '<img src="http://h/img/logo.png"><a href="http://h/?page=2">p</a>'
    )
    assert (out / "casts.html?from=query.html").read_text(encoding="utf-8") == (
        '<a href="http://h/">home</a><a href="#s">here</a>'
    )
    assert (out / "docs/index.html").read_text(encoding="utf-8") == '<a href="http://h/view.php?id=2">v</a>'
    records = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    bases = {Path(record["file"]).relative_to(mirror).as_posix(): record["base"] for record in records}
    assert bases["casts.html?from=query.html"] == "http://h/casts.html?from=query"
    assert bases["docs/index.html"] == "http://h/docs/"
    assert {record["status"] for record in records if record["original"] != "#s"} == {"rewritten"}


def test_without_layout_the_names_are_paths(tmp_path: Path) -> None:
    """The default (plain): as before, each name is its URL's path."""
    mirror = _mirror(tmp_path / "m")
    done = rewriter("rewrite", mirror, "-o", f"{tmp_path / 'out'}/", "--url-root", "http://h/", "-q")
    assert done.returncode == 0, done.stderr
    assert 'href="http://h/casts.html%3Ffrom=query.html#s"' in (tmp_path / "out/index.html").read_text("utf-8")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--layout", "wget"], "give it with --url-root or --url-map"),
        (["--layout", "wget:vms", "--url-root", "http://h/"], "'vms' is none of wget's --restrict-file-names modes"),
        (
            ["--layout", "mirror", "--url-root", "http://h/"],
            "choose plain, wget, wget:MODES (wget:windows,nocontrol) or httrack",
        ),
    ],
)
def test_a_layout_that_cannot_be_used_is_a_usage_error(tmp_path: Path, argv: list[str], says: str) -> None:
    mirror = _mirror(tmp_path / "m")
    done = rewriter("rewrite", mirror, "-o", f"{tmp_path / 'out'}/", *argv)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr
    assert not (tmp_path / "out").exists()


def test_httrack_layout_reads_host_port_folders_and_hashed_query_names(tmp_path: Path) -> None:
    """HTTrack writes host_port folders and NAME + the first four hex digits of the query's MD5 +
    .EXT, its links keeping the query: read back to the URL the reference stood for."""
    from rewriter.run.collection import LocalCopies, Locations

    host = tmp_path / "o.test_8080"
    host.mkdir()
    (host / "style30f4.css").write_text("p{}")  # md5("v=3") begins 30f4
    (host / "index.html").write_text("<!-- Mirrored from o.test:8080/ by HTTrack Website Copier/3.x -->")
    locations = Locations(root="auto", layout=Layout.read("httrack"))
    assert locations.url_of(host / "style30f4.css", tmp_path) == "http://o.test:8080/style30f4.css"
    keep = LocalCopies(str(host / "index.html"), str(tmp_path), locations)
    assert keep("style30f4.css?v=3", None) == ("rewritten", "http://o.test:8080/style.css?v=3")
    assert keep("style30f4.css?v=4", None) == ("rewritten", "http://o.test:8080/style30f4.css")  # not its hash
    assert keep("index.html#top", None) == ("rewritten", "http://o.test:8080/#top")  # the page's mark
