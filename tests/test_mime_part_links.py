"""Relative references that name a part of their own message (issue #19, point 6; RFC 2557 §8).

With no base anywhere, a reference and each part's Content-Location are resolved against
``thismessage:/`` (RFC 2557 §5(e)); a reference whose URL, fragment aside, is identical to a
part's, in the same or a surrounding multipart/related structure of its message, is a link to
that part: kept as written, with status "part", and not reported as left relative.
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import without_summary

from rewriter.containers.mailbox import rewrite_mbox
from rewriter.html.engine import Link
from rewriter.mime.message import MessageResult, Part, find_message_links, rewrite_message
from rewriter.policy import Policy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mime"


def entity(heading: str, body: str) -> str:
    return f"{heading}\r\n\r\n{body}"


def multipart(subtype: str, boundary: str, *parts: str, heading: str = "") -> str:
    """A multipart entity; *heading*: more fields, each ending in CRLF."""
    inside = "".join(f"--{boundary}\r\n{part}\r\n" for part in parts)
    return f"Content-Type: multipart/{subtype}; boundary={boundary}\r\n{heading}\r\n{inside}--{boundary}--\r\n"


def html(body: str, heading: str = "") -> str:
    return entity(f"Content-Type: text/html{heading}", body)


def image(location: str, heading: str = "") -> str:
    return entity(f"Content-Type: image/png\r\nContent-Location: {location}{heading}", "PNG")


def issue_example(reference: str = "image1", location: str = "image1", heading: str = "") -> bytes:
    """The issue's message: multipart/related, an HTML part with an <img>, an image part."""
    return multipart("related", "b", html(f'<img src="{reference}">'), image(location), heading=heading).encode()


def part(result: MessageResult, path: str) -> Part:
    (found,) = [part for part in result.parts if part.path == path]
    return found


def link(result: MessageResult, path: str, original: str) -> Link:
    (found,) = [link for link in part(result, path).links if link.original == original]
    return found


def rewrite_cli(tmp_path: Path, data: bytes, *options: str) -> tuple[int, bytes, str]:
    """``rewriter rewrite`` on *data* as a file: exit code, the file written, stderr."""
    source, target = tmp_path / "in.eml", tmp_path / "out.eml"
    source.write_bytes(data)
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "rewrite", str(source), "-o", str(target), *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, target.read_bytes(), done.stderr


# --------------------------------------------------------------------------
# The issue's example
# --------------------------------------------------------------------------


def test_the_issue_example_is_a_link_to_the_image_part() -> None:
    data = issue_example()
    result = rewrite_message(data)
    assert result.output == data
    found = link(result, "1.1", "image1")
    assert (found.status, found.resolved, found.base) == ("part", None, None)
    assert found.reason == "names part 1.2 (Content-Location: 'image1') of this message, RFC 2557 §8"
    assert part(result, "1.1").status_counts == {"part": 1}
    assert part(result, "1.1").count("no-base", "unresolvable") == 0
    assert [link.original for link in part(result, "1.1").links_with("part")] == ["image1"]
    assert result.problems == ()


def test_find_message_links_gives_the_same_status() -> None:
    result = find_message_links(issue_example())
    assert [(link.original, link.status) for link in result.links] == [("image1", "part")]


def test_the_command_line_keeps_it_and_succeeds(tmp_path: Path) -> None:
    data = issue_example()
    code, written, err = rewrite_cli(tmp_path, data)
    assert (code, written) == (0, data), err
    err = without_summary(err)  # whose figures name links "left relative"
    assert "left relative" not in err and "no-base" not in err


def test_the_rfc_example_without_a_base_is_kept_too(tmp_path: Path) -> None:
    """RFC 2557 §9.4: ``<IMG SRC="ietflogo.gif">`` and ``Content-Location: ietflogo.gif``, quoted-printable."""
    data = (FIXTURES / "rfc2557-9.4.eml").read_bytes()
    result = rewrite_message(data)
    assert result.output == data
    assert link(result, "1.1", "ietflogo.gif").status == "part"
    code, written, err = rewrite_cli(tmp_path, data, "-v")
    assert (code, written) == (0, data), err


# --------------------------------------------------------------------------
# What is not a link to a part
# --------------------------------------------------------------------------


def test_a_reference_that_names_no_part_stays_without_a_base(tmp_path: Path) -> None:
    data = issue_example(reference="image2")
    result = rewrite_message(data)
    assert result.output == data
    assert link(result, "1.1", "image2").status == "no-base"
    code, written, err = rewrite_cli(tmp_path, data)
    assert (code, written) == (1, data)
    assert "left relative" in err


@pytest.mark.parametrize(
    ("reference", "location"),
    [
        ("Image1", "image1"),  # RFC 3986 §6.2.1: the path is compared case-sensitively
        ("image1?x", "image1"),  # a query is part of the URL
        ("image1", "dir/image1"),  # resolved against thismessage:/, not matched by its last segment
        ("a%20b.png", "=?utf-8?q?a_b.png?="),  # no percent-encoding normalisation (RFC 2557 §8.2(b))
        ("a.b", "a%2eb"),  # RFC 2557 §8.2(b)'s own example: "a%2eb" is not "a.b"
    ],
)
def test_a_reference_must_be_identical_to_the_content_location(reference: str, location: str) -> None:
    result = rewrite_message(issue_example(reference, location))
    assert link(result, "1.1", reference).status == "no-base"


def test_an_encoded_content_location_matches_what_it_decodes_to() -> None:
    """RFC 2557 §4.4.1: the heading's RFC 2047 encoding is removed before comparing."""
    result = rewrite_message(issue_example("a b.png", "=?utf-8?q?a_b.png?="))
    assert link(result, "1.1", "a b.png").status == "part"


def test_a_cid_reference_is_absolute_and_left_alone() -> None:
    data = multipart("related", "b", html('<img src="cid:image1">'), image("cid:image1")).encode()
    result = rewrite_message(data)
    assert result.output == data
    assert link(result, "1.1", "cid:image1").status == "absolute"


def test_a_part_named_against_a_real_base_is_not_named_by_thismessage() -> None:
    """The image's Content-Base makes its relative Content-Location http://x/image1: not thismessage:/image1."""
    image_part = image("image1", "\r\nContent-Base: http://x.example/")
    data = multipart("related", "b", html('<img src="image1">'), image_part).encode()
    assert link(rewrite_message(data), "1.1", "image1").status == "no-base"


# --------------------------------------------------------------------------
# With a real base, the reference is rewritten as before
# --------------------------------------------------------------------------


def test_with_a_content_base_the_reference_is_rewritten() -> None:
    data = issue_example(heading="Content-Base: http://example.org/news/\r\n")
    result = rewrite_message(data)
    found = link(result, "1.1", "image1")
    assert (found.status, found.resolved) == ("rewritten", "http://example.org/news/image1")
    assert b'<img src="http://example.org/news/image1">' in result.output


def test_with_a_retrieval_url_the_reference_is_rewritten(tmp_path: Path) -> None:
    data = issue_example()
    found = link(rewrite_message(data, url="http://example.org/saved/msg.eml"), "1.1", "image1")
    assert (found.status, found.resolved) == ("rewritten", "http://example.org/saved/image1")
    code, written, err = rewrite_cli(tmp_path, data, "--url", "http://example.org/saved/msg.eml")
    assert code == 0, err
    assert written == data.replace(b'src="image1"', b'src="http://example.org/saved/image1"')


def test_with_a_base_element_the_reference_is_rewritten() -> None:
    data = multipart("related", "b", html('<base href="http://h.example/d/"><img src="image1">'), image("image1"))
    found = link(rewrite_message(data.encode()), "1.1", "image1")
    assert (found.status, found.resolved) == ("rewritten", "http://h.example/d/image1")


def test_unresolvable_against_a_base_element_is_not_a_part() -> None:
    """Under the URL Standard, ``//a%/x`` is no URL against an http: base (a special host cannot
    hold "%"), but is one against ``thismessage:/``, where it equals the image's Content-Location:
    the engine had a base, so the reference stays unresolvable and names no part."""
    data = multipart("related", "b", html('<base href="http://h.example/"><img src="//a%/x">'), image("//a%/x"))
    found = link(rewrite_message(data.encode(), policy=Policy(rules="whatwg")), "1.1", "//a%/x")
    assert found.status == "unresolvable"


def test_a_relative_base_element_that_was_ignored_stops_the_matching() -> None:
    """RFC 2557 §5(a) would resolve ``<base href="sub/">`` against thismessage:/ and the reference
    against that; the engine ignores such a <base>, so nothing is claimed to name a part."""
    data = multipart("related", "b", html('<base href="sub/"><img src="image1">'), image("image1"))
    result = rewrite_message(data.encode())
    assert link(result, "1.1", "image1").status == "no-base"


# --------------------------------------------------------------------------
# How the reference is written
# --------------------------------------------------------------------------


@pytest.mark.parametrize("reference", ["image1#x", "./image1", "/image1", "dir/../image1", "image1#"])
def test_written_otherwise_it_names_the_same_part(reference: str) -> None:
    data = issue_example(reference=reference)
    result = rewrite_message(data)
    assert result.output == data
    assert link(result, "1.1", reference).status == "part"


def test_a_content_location_with_a_folder_is_matched_from_the_root_part() -> None:
    data = multipart("related", "b", html('<img src="dir/image1">'), image("dir/image1")).encode()
    result = rewrite_message(data)
    assert result.output == data
    found = link(result, "1.1", "dir/image1")
    assert found.status == "part"
    assert found.reason == "names part 1.2 (Content-Location: 'dir/image1') of this message, RFC 2557 §8"


def test_a_css_part_links_to_parts_too(tmp_path: Path) -> None:
    sheet = entity("Content-Type: text/css\r\nContent-Location: style.css", "p { background: url(image1) }")
    data = multipart("related", "b", html('<link rel=stylesheet href="style.css">'), sheet, image("image1")).encode()
    result = rewrite_message(data)
    assert result.output == data
    assert link(result, "1.2", "image1").status == "part"
    assert "names part 1.3 " in (link(result, "1.2", "image1").reason or "")
    assert link(result, "1.1", "style.css").status == "part"  # the HTML's link to the style sheet part
    code, written, err = rewrite_cli(tmp_path, data)
    assert (code, written) == (0, data), err


def test_a_quoted_printable_body_comes_back_byte_for_byte() -> None:
    body = entity(
        "Content-Type: text/html\r\nContent-Transfer-Encoding: quoted-printable",
        '<p>caf=C3=A9</p><img src=3D"image1" alt=3D"x">',
    )
    data = multipart("related", "b", body, image("image1")).encode()
    result = rewrite_message(data)
    assert result.output == data
    assert link(result, "1.1", "image1").status == "part"


# --------------------------------------------------------------------------
# Scope: the same or a surrounding multipart/related of the same message
# --------------------------------------------------------------------------


def test_a_part_of_a_surrounding_multipart_related_is_named() -> None:
    """RFC 2557 §7: an inner multipart/related may refer to parts of the one around it."""
    inner = multipart("related", "in", html('<img src="image1">'))
    data = multipart("related", "out", inner, image("image1")).encode()
    assert link(rewrite_message(data), "1.1.1", "image1").status == "part"


def test_a_multipart_alternative_inside_the_related_is_no_boundary_of_the_scope() -> None:
    """Outlook's layout: related > [alternative > [plain, html], image]."""
    alternative = multipart("alternative", "alt", entity("Content-Type: text/plain", "hi"), html('<img src="image1">'))
    data = multipart("related", "b", alternative, image("image1")).encode()
    assert link(rewrite_message(data), "1.1.2", "image1").status == "part"


def test_a_part_outside_any_multipart_related_is_not_named() -> None:
    """thismessage:/ is defined for matching inside a multipart/related alone (RFC 2557 §5(e))."""
    data = multipart("mixed", "b", html('<img src="image1">'), image("image1")).encode()
    assert link(rewrite_message(data), "1.1", "image1").status == "no-base"


def test_a_part_of_a_parallel_or_inner_multipart_related_is_not_named() -> None:
    """RFC 2557 §7: neither references between parallel structures nor outer-to-inner ones."""
    parallel = multipart("related", "p1", html('<img src="image1">'))
    holder = multipart("related", "p2", entity("Content-Type: text/plain", "x"), image("image1"))
    data = multipart("related", "out", parallel, holder, html('<img src="image1">')).encode()
    result = rewrite_message(data)
    assert link(result, "1.1.1", "image1").status == "no-base"
    assert link(result, "1.3", "image1").status == "no-base"


def test_a_nested_multipart_related_is_named_by_its_own_content_location() -> None:
    """RFC 2557 §9.6: a reference names a nested multipart/related itself (not what is inside it)."""
    nested = multipart("related", "in", html("inner"), heading="Content-Location: more-info\r\n")
    data = multipart("related", "out", html('<a href="more-info">more</a>'), nested).encode()
    found = link(rewrite_message(data), "1.1", "more-info")
    assert (found.status, found.reason) == (
        "part",
        "names part 1.2 (Content-Location: 'more-info') of this message, RFC 2557 §8",
    )


def test_a_message_inside_a_message_is_a_scope_of_its_own() -> None:
    """message/rfc822: thismessage:/ of the enclosed message is that message (RFC 2557 §7)."""
    inner = multipart("related", "in", html('<img src="image1"><img src="outer1">'), image("image1"))
    wrapped = entity("Content-Type: message/rfc822", inner)
    data = multipart("related", "out", html('<img src="image1"><img src="outer1">'), wrapped, image("outer1"))
    result = rewrite_message(data.encode())
    assert result.output == data.encode()
    # Inside the enclosed message: its own image part, and not the outer message's.
    assert link(result, "1.2.1.1", "image1").status == "part"
    assert "names part 1.2.1.2 " in (link(result, "1.2.1.1", "image1").reason or "")
    assert link(result, "1.2.1.1", "outer1").status == "no-base"
    # In the outer message: its own image part, and not the one inside the enclosed message.
    assert link(result, "1.1", "outer1").status == "part"
    assert link(result, "1.1", "image1").status == "no-base"


def test_the_first_part_with_the_url_is_named() -> None:
    data = multipart("related", "b", html('<img src="image1">'), image("image1"), image("./image1")).encode()
    assert "names part 1.2 " in (link(rewrite_message(data), "1.1", "image1").reason or "")


def test_an_inner_structure_is_looked_in_before_the_surrounding_one() -> None:
    inner = multipart("related", "in", html('<img src="image1">'), image("image1"))
    data = multipart("related", "out", image("image1"), inner).encode()
    assert "names part 1.2.2 " in (link(rewrite_message(data), "1.2.1", "image1").reason or "")


# --------------------------------------------------------------------------
# The policy: a caller's keep first; require_base
# --------------------------------------------------------------------------


def test_the_callers_keep_is_asked_first_and_wins() -> None:
    asked: list[tuple[str, str | None]] = []

    def keep(reference: str, resolved: str | None) -> tuple[str, str] | None:
        asked.append((reference, resolved))
        return ("local", "a copy on disk") if reference == "image1" else None

    data = multipart("related", "b", html('<img src="image1"><img src="image2">'), image("image1"), image("image2"))
    result = rewrite_message(data.encode(), policy=Policy(keep=keep))  # type: ignore[arg-type]
    assert asked == [("image1", None), ("image2", None)]
    assert (link(result, "1.1", "image1").status, link(result, "1.1", "image1").reason) == ("local", "a copy on disk")
    assert link(result, "1.1", "image2").status == "part"


def test_require_base_does_not_refuse_a_part_whose_links_all_name_parts() -> None:
    result = rewrite_message(issue_example(), policy=Policy(require_base=True))
    assert (part(result, "1.1").action, link(result, "1.1", "image1").status) == ("unchanged", "part")
    refused = rewrite_message(issue_example(reference="image2"), policy=Policy(require_base=True))
    assert part(refused, "1.1").action == "skipped"


# --------------------------------------------------------------------------
# Mailboxes and the explain verb count it as kept
# --------------------------------------------------------------------------


def test_an_mbox_counts_a_link_to_a_part_as_kept() -> None:
    one = issue_example().replace(b"\r\n", b"\n")
    two = issue_example(reference="image2").replace(b"\r\n", b"\n")
    mbox = b"From a Sat Jan  1 00:00:00 2000\n" + one + b"\nFrom b Sat Jan  1 00:00:00 2000\n" + two
    target = io.BytesIO()
    reports = list(rewrite_mbox(io.BytesIO(mbox), target))
    assert target.getvalue() == mbox
    assert [(report.links, report.relative) for report in reports] == [(1, 0), (1, 1)]


def test_the_command_line_rewrites_an_mbox_with_links_to_parts(tmp_path: Path) -> None:
    one = issue_example().replace(b"\r\n", b"\n")
    mbox = b"From a Sat Jan  1 00:00:00 2000\n" + one + b"\nFrom b Sat Jan  1 00:00:00 2000\n" + one
    code, written, err = rewrite_cli(tmp_path, mbox, "--format", "mbox")
    assert (code, written) == (0, mbox), err


def test_explain_counts_a_link_to_a_part_as_kept(tmp_path: Path) -> None:
    source = tmp_path / "in.eml"
    source.write_bytes(issue_example())
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", "explain", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "1.1 text/html: 1 link, 0 to rewrite, 1 kept, 0 left relative" in done.stdout, done.stdout + done.stderr
