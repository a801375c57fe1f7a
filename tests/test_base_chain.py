"""Which base wins (RFC 1808 §3): one ordered chain, read by every engine, and each frame's own.

The order is :data:`rewriter.url.base.PRECEDENCE`; these tests hold the engines to it and pin
the two bugs of five copies of it: a Chromium MHTML frame's inline style resolved against the
top page, and ``pack`` ignoring a frame document's own saved-from mark.
"""

from __future__ import annotations

import email
import subprocess
import sys
from email.message import Message
from pathlib import Path

import lxml.html
import pytest
from conftest import run_cli

from rewriter.bundle.pack import pack_mhtml, pack_single_file
from rewriter.bundle.unpack import unpack_message
from rewriter.html.engine import find_links, rewrite_html
from rewriter.html.lxml import absolutize
from rewriter.mime.message import entities, find_message_links, rewrite_message
from rewriter.policy import Policy
from rewriter.url.base import PRECEDENCE, Base, Candidates, chain, document_url

MARK = b"<!-- saved from url=(0026)http://saved.test/a/p.html -->\n"


# --- the order, declared once -----------------------------------------------------------------


def test_every_place_has_one_rank_and_the_innermost_wins() -> None:
    everything = Candidates(**{place: Base(f"http://{place}.test/", "enclosing") for place in PRECEDENCE})
    winners = []
    for place in PRECEDENCE:
        found = chain(everything)
        assert found is not None
        winners.append(found.url)
        everything = everything.offering(**{place: None})
    assert winners == [f"http://{place}.test/" for place in PRECEDENCE]
    assert chain(everything) is None  # §3.4: no base


def test_a_document_url_is_where_it_came_from_never_its_base_element() -> None:
    offered = Candidates(
        base_element=Base("http://b.test/", "base-element"),
        guessed=Base("http://guess.test/f.html", "retrieval-url"),
        saved_from=Base("http://saved.test/a/p.html", "saved-from-mark"),
    )
    assert document_url(offered) == Base("http://saved.test/a/p.html", "saved-from-mark")
    assert chain(offered) == Base("http://b.test/", "base-element")


# --- the engines read it ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Policy(), ("http://given.test/x/y.html", "retrieval-url")),  # --url for this page wins over the mark
        (Policy(url_guessed=True), ("http://saved.test/a/p.html", "saved-from-mark")),  # a collection's yields
    ],
)
def test_a_guessed_url_yields_to_the_mark_and_a_given_one_does_not(policy: Policy, expected: tuple[str, str]) -> None:
    page = MARK + b'<a href="n.html">n</a>'
    found = find_links(page, url="http://given.test/x/y.html", policy=policy)
    assert (found.base, found.layer) == expected
    tree = lxml.html.document_fromstring(page.decode())
    adapted = absolutize(tree, url="http://given.test/x/y.html", policy=policy)
    assert (adapted.base, adapted.layer) == expected  # the tree adapters read the same chain


def test_a_base_element_is_resolved_against_what_wins_below_it() -> None:
    page = MARK + b'<base href="../d/"><img src="i.png">'
    result = rewrite_html(page, url="http://guess.test/f.html", policy=Policy(url_guessed=True))
    assert (result.base, result.layer) == ("http://saved.test/d/", "base-element")
    assert b'src="http://saved.test/d/i.png"' in result.output


# --- a Chromium MHTML: each part its own chain ------------------------------------------------

_BOUNDARY = "----MultipartBoundary--Hm3bRx1oF8Yq2fWc0kTzJ7LdN4vSg6Pe9aXu5iQ----"


def _part(heading: str, body: str) -> str:
    return f"--{_BOUNDARY}\r\n{heading}\r\n\r\n{body}\r\n"


def _chromium_mhtml() -> bytes:
    """A page with an iframe, as Chrome ("Save as... Webpage, Single File") writes it: every part
    at the top of one multipart/related, each document's inline <style> a text/css part labelled
    ``cid:css-...`` and linked from that document's part, the frame a part of its own."""
    top = (
        '<!DOCTYPE html><html><head><meta http-equiv=3D"Content-Type" content=3D"text/html; charset=3DUTF-8">'
        '<link rel=3D"stylesheet" type=3D"text/css" href=3D"cid:css-top-1@mhtml.blink" /></head>'
        '<body><iframe src=3D"cid:frame-0B9A5C3E@mhtml.blink"></iframe></body></html>'
    )
    frame = (
        '<!DOCTYPE html><html><head><meta http-equiv=3D"Content-Type" content=3D"text/html; charset=3DUTF-8">'
        '<link rel=3D"stylesheet" type=3D"text/css" href=3D"cid:css-frame-1@mhtml.blink" /></head>'
        '<body><img src=3D"../assets/logo.png"></body></html>'
    )
    parts = [
        _part(
            "Content-Type: text/html\r\nContent-ID: <frame-A1F0C2D4@mhtml.blink>\r\n"
            "Content-Transfer-Encoding: quoted-printable\r\nContent-Location: http://host/demo/index.html",
            top,
        ),
        _part(
            "Content-Type: text/css\r\nContent-Transfer-Encoding: quoted-printable\r\n"
            "Content-Location: cid:css-top-1@mhtml.blink",
            "body { background: url(../assets/top.png); }",
        ),
        _part(
            "Content-Type: text/html\r\nContent-ID: <frame-0B9A5C3E@mhtml.blink>\r\n"
            "Content-Transfer-Encoding: quoted-printable\r\n"
            "Content-Location: http://host/embedded-book/guide/index.html",
            frame,
        ),
        _part(
            "Content-Type: text/css\r\nContent-Transfer-Encoding: quoted-printable\r\n"
            "Content-Location: cid:css-frame-1@mhtml.blink",
            ".crate { background: url(../assets/crates.png); }",
        ),
    ]
    heading = (
        "From: <Saved by Blink>\r\nSnapshot-Content-Location: http://host/demo/index.html\r\n"
        "Subject: Demo\r\nDate: Sat, 1 Jun 2024 10:00:00 -0000\r\nMIME-Version: 1.0\r\n"
        f'Content-Type: multipart/related;\r\n\ttype="text/html";\r\n\tboundary="{_BOUNDARY}"\r\n\r\n\r\n'
    )
    return (heading + "".join(parts) + f"--{_BOUNDARY}--\r\n").encode("ascii")


def test_a_frames_inline_style_is_resolved_against_the_frame_not_the_top_page() -> None:
    result = rewrite_message(_chromium_mhtml())
    parts = {part.path: part for part in result.parts}
    frame_style = parts["1.4"]
    assert (frame_style.base, frame_style.layer, frame_style.origin) == (
        "http://host/embedded-book/guide/index.html",
        "Content-Location",
        "1.3",  # the frame's part, which links it by cid:
    )
    assert [link.resolved for link in frame_style.links] == ["http://host/embedded-book/assets/crates.png"]
    # The top page's own style keeps the top page's base, as before.
    assert [link.resolved for link in parts["1.2"].links] == ["http://host/assets/top.png"]
    assert parts["1.2"].layer == "Snapshot-Content-Location"
    message: Message = email.message_from_bytes(result.output)
    bodies = [part.get_payload(decode=True) for part in message.walk() if not part.is_multipart()]
    assert b"url(http://host/embedded-book/assets/crates.png)" in bodies[3]


def test_every_walker_of_a_message_gives_a_part_the_same_base() -> None:
    data = _chromium_mhtml()
    from_walk = {part.path: part.base for part in find_message_links(data).parts}
    from_entities = {entity.path: entity.base for entity in entities(data)}
    assert from_walk == from_entities


# --- pack: every frame of a saved page its own chain ------------------------------------------


def _mark(url: str) -> bytes:
    return f"<!-- saved from url=({len(url):04d}){url} -->\r\n".encode("ascii")


def _saved_frames(folder: Path) -> Path:
    """A page with frames as a browser saves it complete: each frame document in NAME_files/,
    each with the mark of where it came from, which its place in the folder does not say."""
    files = folder / "book_files"
    files.mkdir()
    page = folder / "book.html"
    page.write_bytes(
        _mark("http://host/book.html") + b"<html><head><title>Book</title></head>"
        b'<frameset cols="20%,80%"><frame src="book_files/toc.html"><frame src="book_files/frame.html">'
        b"</frameset></html>\r\n"
    )
    (files / "toc.html").write_bytes(
        _mark("http://host/book/toc.html") + b'<html><body><a href="ch1/frame.html" target=main>1</a></body></html>'
    )
    (files / "frame.html").write_bytes(
        _mark("http://host/book/ch1/frame.html") + b'<html><head><link rel=stylesheet href="style.css"></head>'
        b'<body><img src="pic.png"><a href="../toc.html">contents</a><iframe src="../toc.html"></iframe></body></html>'
    )
    (files / "style.css").write_bytes(b"body { background: url(pic.png) }")
    (files / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    return page


def test_pack_honours_each_frames_own_mark_and_labels_it_with_its_real_url(tmp_path: Path) -> None:
    result = pack_mhtml(_saved_frames(tmp_path))
    assert result.problems == ()  # ../toc.html is the toc frame's real URL: packed, not missing
    assert [(part.path, part.content_location) for part in result.parts] == [
        ("book.html", "http://host/book.html"),
        ("book_files/toc.html", "http://host/book/toc.html"),
        ("book_files/frame.html", "http://host/book/ch1/frame.html"),
        ("book_files/style.css", "http://host/book/ch1/style.css"),
        ("book_files/pic.png", "http://host/book/ch1/pic.png"),
    ]
    message: Message = email.message_from_bytes(result.output)
    frame = next(part for part in message.walk() if part["Content-Location"] == "http://host/book/ch1/frame.html")
    body = frame.get_payload(decode=True)
    assert b'<a href="http://host/book/toc.html">' in body
    assert b'<iframe src="http://host/book/toc.html">' in body


def test_pack_single_file_inlines_the_frame_its_mark_names(tmp_path: Path) -> None:
    result = pack_single_file(_saved_frames(tmp_path))
    assert result.problems == ()
    assert result.output.count(b"data:text/html") == 2


def test_pack_of_a_saved_page_with_frames_exits_0(tmp_path: Path) -> None:
    page = _saved_frames(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "pack", str(page), "-o", str(tmp_path / "book.mhtml")],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"book_files/" not in (tmp_path / "book.mhtml").read_bytes().split(b"Content-Location")[-1]


def test_unpack_writes_the_frames_style_with_the_frames_base(tmp_path: Path) -> None:
    result = unpack_message(_chromium_mhtml(), tmp_path / "out")
    style = next(part for part in result.parts if part.path == "1.4")
    assert style.file is not None
    assert b"url(http://host/embedded-book/assets/crates.png)" in (tmp_path / "out" / style.file).read_bytes()


# --- a collection's URL is a guess: what the saved file says outranks it ----------------------

_SNAPSHOT = (
    b"From: <Saved by Blink>\r\nSnapshot-Content-Location: http://host/demo/index.html\r\n"
    b'MIME-Version: 1.0\r\nContent-Type: multipart/related; type="text/html"; boundary="b"\r\n\r\n'
    b'--b\r\nContent-Type: text/html\r\n\r\n<img src="a.png">\r\n--b--\r\n'
)


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        (Policy(), ("http://mirror.test/site/a.png", "retrieval-url")),
        (Policy(url_guessed=True), ("http://host/demo/a.png", "Snapshot-Content-Location")),
    ],
)
def test_a_guessed_url_yields_to_the_snapshot_location(policy: Policy, expected: tuple[str, str]) -> None:
    part = find_message_links(_SNAPSHOT, url="http://mirror.test/site/page.mhtml", policy=policy).parts[1]
    assert (part.links[0].resolved, part.layer) == expected


def test_rewrite_with_url_root_keeps_the_saved_urls(tmp_path: Path) -> None:
    site = tmp_path / "SITE"
    site.mkdir()
    (site / "page.html").write_bytes(MARK + b'<a href="n.html">n</a>')
    (site / "page.mhtml").write_bytes(_SNAPSHOT)
    done = run_cli(tmp_path, "rewrite", "SITE/", "-o", "OUT/", "--url-root", "http://mirror.test/site/")
    assert done.returncode == 0, done.stderr
    assert b'href="http://saved.test/a/n.html"' in (tmp_path / "OUT" / "page.html").read_bytes()
    assert b'src="http://host/demo/a.png"' in (tmp_path / "OUT" / "page.mhtml").read_bytes()
