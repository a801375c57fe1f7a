"""The classifications the pages of one folder share (rewriter.document.process.SharedClassifications).

A reference's :func:`shared_key` is classified once for every page of a folder whose base has the
same directory (:func:`directory_of`). That is sound only if such a key resolves alike against every
such base, under each rule set, a plain fragment being added to the key's resolved URL as it is, and
if the command line's answers are the same with the memo as without it: both are checked here, the
first on generated bases and references (the RFC 3986 §5.4 base among them), the second on a folder
built to catch what a page's own name or base could change.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from rewriter.document.process import SharedClassifications, shared_key
from rewriter.url.resolve import RULES, UnresolvableReference, directory_of, resolve

_SCHEMES = ["http", "https", "HTTP", "ftp", "foo", "ws", "file", "mailto"]
_AUTHORITIES = ["a", "user@h:8", "[::1]", "", "A", "h?x", "h#y"]
_SEGMENTS = ["b", "c", "..", ".", "%2e", "%2E%2e", "d;p", "", "e f", "x\\y", "C:", "C|", "é", "\t", "g=h", "_files"]
_TAILS = ["", "?q", "#f", "?q#f", "?a/b", "#c/d"]
_REFERENCE_PIECES = [
    *["g", "/", "//", "..", ".", "?", "#", ";", "%2e", "\\", ":", "C:", "C|", "_files", " ", "\t", "é", "x"],
    *["#s", "#a?b/c", "#%41", "<", "`", '"', "#\\"],
]


@st.composite
def _bases_of_one_directory(draw: st.DrawFn) -> tuple[str, str]:
    scheme, authority = draw(st.sampled_from(_SCHEMES)), draw(st.sampled_from(_AUTHORITIES))
    middle = draw(st.lists(st.sampled_from(_SEGMENTS), max_size=3))
    head = f"{scheme}://{authority}/" + "".join(f"{segment}/" for segment in middle)
    last = st.lists(st.sampled_from(_SEGMENTS), max_size=2).map("".join)
    tail = st.sampled_from(_TAILS)
    return head + draw(last) + draw(tail), head + draw(last) + draw(tail)


def _answer(base: str, reference: str, rules: str) -> str:
    try:
        return resolve(base, reference, rules=rules, strict=True)  # type: ignore[arg-type]
    except UnresolvableReference as error:
        return f"unresolvable: {error.reason}"


@given(
    _bases_of_one_directory(),
    st.lists(st.sampled_from(_REFERENCE_PIECES), min_size=1, max_size=4).map("".join),
)
@settings(max_examples=3000, deadline=None)
def test_a_shared_key_resolves_alike_against_every_base_of_one_directory(
    bases: tuple[str, str], reference: str
) -> None:
    first, second = bases
    directory = directory_of(first)
    key = shared_key(reference)
    if directory is None or directory != directory_of(second) or key is None:
        return
    fragment = reference[len(key) :]
    for rules in RULES:
        assert _answer(first, key, rules) == _answer(second, key, rules), (rules, first, second, key)
        # The directory's own URL is one of its bases: a page's Context resolves its shared keys there.
        assert _answer(directory, key, rules) == _answer(first, key, rules), (rules, directory, first, key)
        if fragment:  # the reference's own resolution: the key's, its fragment added as it is
            for base in bases:
                whole, alone = _answer(base, reference, rules), _answer(base, key, rules)
                expected = alone if alone.startswith("unresolvable: ") else alone + fragment
                assert whole == expected, (rules, base, reference)


@pytest.mark.parametrize(
    ("base", "directory"),
    [
        ("http://a/b/c/d;p?q", "http://a/b/c/"),  # RFC 3986 §5.4's base
        ("http://a/", "http://a/"),
        ("http://a/b?x/y#z/w", "http://a/"),
        ("http://a", None),  # no path: an empty one takes "/" only in some rules
        ("http://a/b/..", None),  # a dot segment last: the URL Standard shortens the path first
        ("http://a/b/%2E", None),
        ("http://a/b\\c", None),  # "\\" is "/" for a special scheme (URL Standard)
        ("file:///C:", None),  # the URL Standard keeps a drive letter that is the last segment
        ("mailto:a@b", None),
        ("http://a/b c/d", None),
    ],
)
def test_the_directory_of_a_base(base: str, directory: str | None) -> None:
    assert directory_of(base) == directory


@pytest.mark.parametrize(
    ("reference", "key"),
    [
        ("g", "g"),
        ("../g/h?q", "../g/h?q"),
        ("../g/h?q#f", "../g/h?q"),  # a plain fragment: the key goes without it
        ("g#a b", "g#a b"),  # the URL Standard percent-encodes a space: the whole reference
        ("g#<x>", "g#<x>"),
        ("g#é", "g#é"),
        ("/g", "/g"),
        ("//h/g", "//h/g"),
        ("", None),  # the base's own path and query
        ("#f", None),
        ("?q", None),
        (";p", None),  # RFC 1808 §4 step 5: inherits the base's path
        ("//", None),  # RFC 1808 §4 step 5 too: no authority, no path
        ("g:h", None),  # a scheme
        ("a%5Ffiles/x", None),  # could spell NAME_files once decoded
        ("page_files/x.png", None),  # a saved page's own copies, told by the page's name
        ("\\\\h\\g", None),
        ("\x01#f", None),  # the URL Standard strips C0 controls first
    ],
)
def test_the_key_of_a_reference(reference: str, key: str | None) -> None:
    assert shared_key(reference) == key


def test_the_scopes_keep_apart_what_classifies_otherwise() -> None:
    from rewriter.policy import Policy

    shared = SharedClassifications()
    page = shared.scope(Policy(), "http://a/b/1.html", None, False)
    assert page is shared.scope(Policy(), "http://a/b/2.html#x", None, False)
    others = [
        shared.scope(Policy(), "http://a/c/1.html", None, False),  # another directory
        shared.scope(Policy(rules="whatwg"), "http://a/b/1.html", None, False),
        shared.scope(Policy(strict=False), "http://a/b/1.html", None, False),
        shared.scope(Policy(), "http://a/b/1.html", "shift_jis", False),  # the query's encoding
        shared.scope(Policy(), "http://a/b/1.html", None, True),  # in a <noscript>
    ]
    assert all(other is not None and other is not page for other in others)
    assert len({id(other) for other in others}) == len(others)
    assert shared.scope(Policy(), None, None, False) is None
    assert shared.scope(Policy(relink=lambda url: None), "http://a/b/1.html", None, False) is None  # sees fragments


# A folder built to catch what the memo could get wrong: pages whose <base> differ, a page whose
# own NAME_files folder holds copies that another page of the folder does not own, a page named
# other than .html, a <noscript>, a style sheet of the folder, and references that repeat.
_PAGES = {
    "docs/a.html": '<a href="b.html">b</a><img src="img/x.png"><a href="../top.html#t">t</a><a href="?q">q</a>'
    '<a href="b.html#one">1</a><a href="b.html#a b">2</a><a href="b.html#é">3</a>',
    "docs/b.html": '<base href="http://other.test/z/"><a href="b.html">b</a><img src="img/x.png">',
    "docs/c.asp": '<img src="c_files/y.png"><img src="img/x.png"><a href="b.html#s">b</a>',
    "docs/d.html": '<img src="c_files/y.png"><noscript><a href="b.html?a<b">n</a></noscript><a href="b.html">b</a>',
    "docs/e.html": '<base href="../"><a href="b.html">b</a><img src="img/x.png"><a href="docs/b.html">d</a>',
    "docs/s.css": "a { background: url(img/x.png) } b { background: url(b.html) }",
    "docs/img/x.png": "png",
    "docs/c_files/y.png": "png",
    "top.html": '<a href="docs/b.html">b</a><a href="docs/img/x.png">x</a><a href="docs/b.html#one">',
}


def _run(tmp_path: Path, name: str, *options: str) -> dict[str, bytes]:
    source = tmp_path / "SITE"
    if not source.exists():
        for path, text in _PAGES.items():
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            (source / path).write_text(text, encoding="utf-8")
    out = tmp_path / name
    done = run_cli(tmp_path, "rewrite", "SITE", "-o", name, "-j", "1", "--report", f"{name}.jsonl", *options)
    assert done.returncode in (0, 1), done.stderr
    files = {str(path.relative_to(out)): path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()}
    files["report"] = (tmp_path / f"{name}.jsonl").read_bytes()
    shutil.rmtree(out)
    return files


@pytest.mark.parametrize("rules", ["rfc3986", "whatwg", "rfc1808"])
def test_a_folder_is_rewritten_alike_with_the_memo_and_without_it(tmp_path: Path, rules: str) -> None:
    """The command line with the memo, and with SharedClassifications answering no scope at
    all (a sitecustomize in the run's path), gives the same files and the same report."""
    options = ("--url-root", "http://site.test/", "--rules", rules)
    shared = _run(tmp_path, "shared", *options)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "from rewriter.document.process import SharedClassifications\n"
        "SharedClassifications.scope = lambda *arguments: None\n",
        encoding="utf-8",
    )
    alone = _run_with_path(tmp_path, hook, "alone", *options)
    assert shared == alone
    assert b"http://site.test/docs/b.html" in shared["docs/a.html"]  # rewritten at all
    assert b'src="c_files/y.png"' in shared["docs/c.asp"]  # its own saved copy, kept


def _run_with_path(tmp_path: Path, hook: Path, name: str, *options: str) -> dict[str, bytes]:
    import os

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(hook) + (os.pathsep + old if old else "")
    try:
        return _run(tmp_path, name, *options)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old


def test_the_pages_of_a_folder_fill_and_read_one_memo(tmp_path: Path) -> None:
    """Through the library, as the command line does it: each page's LocalCopies carries the
    folder's memo; the first page fills it, the second reads the same answers."""
    import rewriter
    from rewriter.disk.listings import Listings
    from rewriter.policy import Policy
    from rewriter.run.collection import LocalCopies

    (tmp_path / "img").mkdir()
    (tmp_path / "img/x.png").write_bytes(b"png")
    shared, listings = SharedClassifications(), Listings()
    page = b'<img src="img/x.png"><a href="other.html">o</a><a href="#top">t</a>'
    answers = []
    for name in ("a.html", "b.html"):
        (tmp_path / name).write_bytes(page)
        keep = LocalCopies(str(tmp_path / name), str(tmp_path), None, listings, shared)
        result = rewriter.rewrite(page, url=f"http://site.test/d/{name}", policy=Policy(keep=keep))
        answers.append([(link.original, link.status, link.resolved) for link in result.links])
    memo = shared.scope(Policy(), "http://site.test/d/any.html", None, False)
    assert memo is not None and set(memo) == {"img/x.png", "other.html"}  # "#top" is the page's own
    assert answers[0] == answers[1]
    assert answers[0][0][1] == "local" and answers[0][1] == ("other.html", "rewritten", "http://site.test/d/other.html")
