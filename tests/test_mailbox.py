"""Mailboxes: format detection, the mbox split (always byte-exact), mbox and Maildir rewriting."""

from __future__ import annotations

import io
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import SHARED, Unseekable, shared_path
from hypothesis import given, settings
from hypothesis import strategies as st

from rewriter.containers import mailbox
from rewriter.containers.formats import SNIFF_SIZE, detect_format
from rewriter.containers.mailbox import (
    is_maildir,
    iter_maildir,
    iter_mbox,
    rewrite_maildir,
    rewrite_mbox,
)
from rewriter.mime.message import Part

CORPUS_MBOXES = {
    "flanker-torture.mbox": 1,
    "mimekit-content-length.mbox": 29,
    "mimekit-issue1189.mbox": 4,
    "mimekit-simple.mbox": 3,
    "mimekit-unmunged.mbox": 4,  # MimeKit's own test expects 4: its "From Russia" lines split
}
CHUNK_SIZES = (1, 2, 5, 6, 7, 64, 4096, 1 << 20)


def split(data: bytes, chunk_size: int = 1 << 20) -> list[tuple[bytes, bytes]]:
    pairs = list(iter_mbox(io.BytesIO(data), chunk_size))
    assert b"".join(separator + message for separator, message in pairs) == data
    return pairs


# A stand-in for rewriter.mime.message.rewrite_message: rewrites "src=logo.png" only.
def fake_rewrite(data: bytes, *, url: str | None, policy: object) -> SimpleNamespace:
    count = data.count(b"src=logo.png")
    links = tuple(SimpleNamespace(status="rewritten") for _ in range(count))
    action = "rewritten" if count else "unchanged"
    part = Part("1", "text/html", 0, 0, len(data), None, None, None, links, action)  # type: ignore[arg-type]
    output = data.replace(b"src=logo.png", b"src=http://example.org/logo.png")
    return SimpleNamespace(output=output, problems=("part 1: a note",) if count else (), parts=(part,))


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mailbox, "rewrite_message", fake_rewrite)


# --------------------------------------------------------------------------
# iter_mbox
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CORPUS_MBOXES))
def test_corpus_mboxes_split_byte_for_byte(name: str) -> None:
    data = shared_path("corpus", "mail", name).read_bytes()
    for chunk_size in CHUNK_SIZES if len(data) < 100_000 else CHUNK_SIZES[-3:]:
        pairs = split(data, chunk_size)
        assert len(pairs) == CORPUS_MBOXES[name]
        assert all(separator.lstrip(b"\xef\xbb\xbf").startswith(b"From ") for separator, _ in pairs)
    with shared_path("corpus", "mail", name).open("rb") as stream:
        assert list(iter_mbox(stream)) == pairs  # a real file (seekable) splits the same


def test_corpus_separators_need_no_blank_line_before_them() -> None:
    pairs = split(shared_path("corpus", "mail", "mimekit-simple.mbox").read_bytes())
    assert [message.endswith(b"\n\n") for _, message in pairs[:-1]] == [False, False]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", []),
        (b"no From_ line at all\n", [(b"", b"no From_ line at all\n")]),
        (b"junk\n\nFrom a\nA: b\n", [(b"", b"junk\n\n"), (b"From a\n", b"A: b\n")]),
        (
            b"From a\r\nA: b\r\n\r\nbody\r\n\r\nFrom b\r\nA: c\r\n\r\n",
            [(b"From a\r\n", b"A: b\r\n\r\nbody\r\n\r\n"), (b"From b\r\n", b"A: c\r\n\r\n")],
        ),
        (b"From a\nA: b\n\nno final line break", [(b"From a\n", b"A: b\n\nno final line break")]),
        (b"From a", [(b"From a", b"")]),
        (b"From a\nFrom b\n", [(b"From a\n", b""), (b"From b\n", b"")]),
        (b"\xef\xbb\xbfFrom a\nA: b\n", [(b"\xef\xbb\xbfFrom a\n", b"A: b\n")]),
        (
            b"From a\nA: b\n\n>From quoted\n>>From quoted twice\n",
            [(b"From a\n", b"A: b\n\n>From quoted\n>>From quoted twice\n")],
        ),
        (b"From a\nA: b\n\nx From y\nFrom z\n", [(b"From a\n", b"A: b\n\nx From y\n"), (b"From z\n", b"")]),
        (b"From a\nA: b\n\nFromage\nFrom\n", [(b"From a\n", b"A: b\n\nFromage\nFrom\n")]),
    ],
)
def test_crafted_splits(data: bytes, expected: list[tuple[bytes, bytes]]) -> None:
    for chunk_size in CHUNK_SIZES:
        assert split(data, chunk_size) == expected
    assert list(iter_mbox(Unseekable(data))) == expected  # type: ignore[arg-type]


def mboxcl(body: bytes, length: int | None = None, eol: bytes = b"\n") -> bytes:
    length = len(body) if length is None else length
    return b"Subject: s" + eol + b"Content-Length: " + str(length).encode() + eol + eol + body


@pytest.mark.parametrize("seekable", [True, False])
def test_content_length_keeps_unquoted_from_lines_in_the_body(seekable: bool) -> None:
    first = mboxcl(b"Dear all,\nFrom now on\nbye")
    data = b"From a\n" + first + b"\nFrom b\nSubject: t\n\nx\n"
    for chunk_size in CHUNK_SIZES:
        stream = io.BytesIO(data) if seekable else Unseekable(data)
        assert list(iter_mbox(stream, chunk_size)) == [
            (b"From a\n", first + b"\n"),  # type: ignore[arg-type]
            (b"From b\n", b"Subject: t\n\nx\n"),
        ]


class ReadOnly:
    """A stream with read() alone, as rewriter.run.batch hands an mbox over (_Replayed)."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(size)


def test_a_stream_with_read_alone_is_read_as_a_pipe() -> None:
    # Before, a Content-Length pointing past what was read asked it for seekable(), and
    # `rewriter rewrite` failed the whole mbox with an AttributeError.
    first = mboxcl(b"Dear all,\nFrom now on\nbye")
    data = b"From a\n" + first + b"\nFrom b\nSubject: t\n\nx\n"
    expected = [(b"From a\n", first + b"\n"), (b"From b\n", b"Subject: t\n\nx\n")]
    assert list(iter_mbox(ReadOnly(data), 4)) == expected  # type: ignore[arg-type]


def test_content_length_to_the_end_of_the_file_and_crlf() -> None:
    message = mboxcl(b"a\r\nFrom here\r\n", eol=b"\r\n")
    assert split(b"From a\r\n" + message, 3) == [(b"From a\r\n", message)]
    assert split(b"From a\r\n" + message + b"\r\n", 3) == [(b"From a\r\n", message + b"\r\n")]


def test_content_length_that_leads_nowhere_is_ignored() -> None:
    for length in (5, 17, 10**15):
        message = mboxcl(b"one\nFrom two\nthree\n", length)
        assert split(b"From a\n" + message, 4)[1][0] == b"From two\n"


def test_seekable_stream_that_does_not_start_at_zero() -> None:
    message = mboxcl(b"x\nFrom y\n")
    stream = io.BytesIO(b"ignored" + b"From a\n" + message + b"From b\n\n")
    stream.seek(7)
    assert [separator for separator, _ in iter_mbox(stream, 2)] == [b"From a\n", b"From b\n"]


def test_corpus_content_lengths_right_and_wrong() -> None:
    # 25 lengths lead to the next From_ line (one line break later, as mutt expects), 4 do not.
    tails = []
    for _, message in split(shared_path("corpus", "mail", "mimekit-content-length.mbox").read_bytes()):
        value, _, _, body = mailbox._content_length(message, 0, len(message)) or (0, 0, 0, 0)
        tails.append(message[body + value :])
    assert [tail for tail in tails if tail not in (b"", b"\n")] == [tails[0], tails[1], tails[2], b"--\n\n"]
    assert len(tails) == 29 and len(tails[0]) == 19 and len(tails[2]) == 2045


fragments = st.sampled_from(
    [
        b"From ",
        b"From x\n",
        b"\n",
        b"\r\n",
        b"\r",
        b"x",
        b">From ",
        b"\xef\xbb\xbf",
        b"Content-Length: 3\n",
        b"A: b\n",
        b"Content-Length: 0\n",
        b"\n\n",
        b"From",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(fragments, max_size=40).map(b"".join), st.integers(min_value=1, max_value=12), st.booleans())
def test_any_input_splits_byte_for_byte(data: bytes, chunk_size: int, seekable: bool) -> None:
    stream = io.BytesIO(data) if seekable else Unseekable(data)
    pairs = list(iter_mbox(stream, chunk_size))  # type: ignore[arg-type]
    assert b"".join(separator + message for separator, message in pairs) == data
    assert pairs == split(data)  # the chunk size and seeking never change the split
    assert all(separator.lstrip(b"\xef\xbb\xbf").startswith(b"From ") for separator, _ in pairs[1:])


@pytest.mark.parametrize(
    ("data", "limit", "expected"),
    [
        # Reads of 3 bytes or fewer made this one oversize message of 8 bytes, longer reads
        # a line break and an oversize From_ line.
        (b"\nFrom a\n", 3, [(b"", b"\n", 1), (b"", None, 7)]),
        # On a pipe read a byte at a time, the Content-Length's look ahead spilled the next
        # message's From_ line with a 19-byte "oversize" one, and the output lost bytes.
        (b"Content-Length: 9\n\nFrom b\n", 25, [(b"", b"Content-Length: 9\n\n", 19), (b"From b\n", b"", 7)]),
        # Exactly at the limit is not over it, whatever the reads.
        (b"From a\nA: b\n\nFrom b\n", 13, [(b"From a\n", b"A: b\n\n", 13), (b"From b\n", b"", 7)]),
    ],
)
def test_oversize_is_told_by_the_message_not_by_the_reads(
    data: bytes, limit: int, expected: list[tuple[bytes, bytes | None, int]]
) -> None:
    for chunk_size in CHUNK_SIZES:
        for stream in (io.BytesIO(data), Unseekable(data)):
            spilled: list[bytes] = []
            assert list(mailbox._split(stream, chunk_size, limit, spilled.append)) == expected  # type: ignore[arg-type]
            sizes = [size for _, message, size in expected if message is None]
            assert len(b"".join(spilled)) == sum(sizes)


def test_chunk_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        list(iter_mbox(io.BytesIO(b"From a\n"), 0))


# --------------------------------------------------------------------------
# detect_format
# --------------------------------------------------------------------------


def corpus_files(folder: str, suffixes: tuple[str, ...]) -> list[Path]:
    base = SHARED / "corpus" / folder
    if not base.is_dir():
        return [Path("absent")]
    return sorted(path for path in base.iterdir() if path.suffix in suffixes)


@pytest.mark.parametrize("path", corpus_files("mail", (".eml", ".mht", ".mhtml", ".mbox")), ids=lambda p: p.name)
def test_detect_format_on_every_corpus_mail_file(path: Path) -> None:
    head = shared_path("corpus", "mail", path.name).read_bytes()[:SNIFF_SIZE]
    # A message saved with its envelope line is an mbox of one (mime4j-mp-msg-rfc822.eml).
    expected = "mbox" if path.suffix == ".mbox" or head.startswith(b"From ") else "message"
    assert detect_format(head, path.name) == detect_format(head) == expected
    assert detect_format(head, "renamed.html") == detect_format(head, "renamed.css") == expected


def test_detect_format_on_corpus_html_pages() -> None:
    pages = corpus_files("html", (".html",))
    shared_path("corpus", "html", pages[0].name)
    assert len(pages) > 100
    for page in pages:
        head = page.read_bytes()[:SNIFF_SIZE]
        assert detect_format(head, page.name) == detect_format(head) == "html", page.name


@pytest.mark.parametrize(
    ("head", "name", "expected"),
    [
        (b"From a@example.org Sat Jan  1 00:00:00 2000\nReturn-Path: <a@example.org>\n", None, "mbox"),
        (b"\xef\xbb\xbfFrom -\nFrom: a\n", None, "mbox"),
        (b"From here to eternity\n<p>a film</p>", None, "html"),
        (b"MIME-Version: 1.0\r\nContent-Type: text/html\r\n\r\n<p>", None, "message"),
        (b"\xef\xbb\xbfContent-Type: text/html\n\n<p>", None, "message"),
        (b"Subject: hi\nDate: Sat, 1 Jan 2000 00:00:00 +0000\n\nhi", None, "message"),
        (b"X-Mailer: a\nX-Spam: b\n\nhi", None, "message"),
        (b"   \nReceived: by x\n  folded\nFrom: a\n\n", None, "message"),
        (b"Content-Type: text/html\nsome text that is not a field\n", None, "message"),
        (b"Note: this page has moved.\n\n<p><a href=new.html>here</a>", None, "html"),
        (b"Note: one\nWarning: two\n\n<p>", None, "html"),
        (b"Note: one\nWarning: two\n\n<p>", "page.eml", "message"),  # no evidence either way: the name
        (b"Date: 2024-01-01\n\nthe minutes", None, "html"),
        (b"Date: 2024-01-01\n\nthe minutes", "minutes.eml", "message"),
        (b"  <!DOCTYPE html><title>x</title>", "x.eml", "html"),
        (b"<?xml version='1.0'?><html/>", None, "html"),
        ("<p>UTF-16</p>".encode("utf-16"), None, "html"),
        ("body { color: red }".encode("utf-16"), None, "css"),
        ("From: a\nTo: b\n\n".encode("utf-16"), "a.css", "css"),
        (b'@charset "utf-8";\nbody{}', None, "css"),
        (b"/* site */\n@import url(a.css);", None, "css"),
        (b"body, p > a:hover {\n  color: red;\n}", None, "css"),
        (b":root{--x:1}", None, "css"),
        (b"a { } <script>", None, "html"),
        (b"<!-- body { color: red } -->", "old.css", "css"),
        (b"<!-- comment --><p>", None, "html"),
        (b"", None, "html"),
        (b"", "a.css", "css"),
        (b"", "a.mbox", "mbox"),
        (b"", "a.MHTML", "message"),
        (b"plain text", "notes.txt", "html"),
    ],
)
def test_detect_format_crafted(head: bytes, name: str | None, expected: str) -> None:
    assert detect_format(head, name) == expected


# --------------------------------------------------------------------------
# rewrite_mbox
# --------------------------------------------------------------------------


def rewrite(data: bytes) -> tuple[bytes, list[mailbox.MboxReport]]:
    target = io.BytesIO()
    reports = list(rewrite_mbox(io.BytesIO(data), target))
    return target.getvalue(), reports


def test_rewrite_mbox_says_it_takes_streams_when_given_paths(tmp_path: Path) -> None:
    source = tmp_path / "in.mbox"
    source.write_bytes(b"From a Sat Jan  1 00:00:00 2000\n\nhi\n")
    with pytest.raises(TypeError, match=r"binary streams \(open\(path, 'rb'\)\), not \w*Path as its source"):
        list(rewrite_mbox(source, io.BytesIO()))  # type: ignore[arg-type]
    with source.open("rb") as stream, pytest.raises(TypeError, match=r"open\(path, 'wb'\)\), not str as its target"):
        list(rewrite_mbox(stream, str(tmp_path / "out.mbox")))  # type: ignore[arg-type]
    assert not (tmp_path / "out.mbox").exists()
    piece = next(mailbox.plan_mbox(io.BytesIO(source.read_bytes())))
    with pytest.raises(TypeError, match=r"rewrite_mbox_piece\(\) takes binary streams .* not \w*Path as its source"):
        list(mailbox.rewrite_mbox_piece(source, piece, io.BytesIO()))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(CORPUS_MBOXES))
def test_rewrite_mbox_writes_identical_bytes_when_nothing_changes(name: str, engine: None) -> None:
    data = shared_path("corpus", "mail", name).read_bytes()
    output, reports = rewrite(data)
    assert output == data
    assert [r.index for r in reports] == list(range(CORPUS_MBOXES[name]))
    assert not any(r.changed for r in reports)
    offsets = [0]
    for separator, message in split(data)[:-1]:
        offsets.append(offsets[-1] + len(separator) + len(message))
    assert [r.offset for r in reports] == offsets


@pytest.mark.parametrize("name", sorted(CORPUS_MBOXES))
def test_rewrite_mbox_with_the_mime_engine_keeps_every_separator(name: str) -> None:
    data = shared_path("corpus", "mail", name).read_bytes()
    output, reports = rewrite(data)
    before, after = split(data), split(output)
    assert [s for s, _ in after] == [s for s, _ in before]
    for report, (_, old), (_, new) in zip(reports, before, after, strict=True):
        assert (old == new) is not report.changed
    if not any(report.changed for report in reports):
        assert output == data


def test_rewrite_mbox_rewrites_and_reports(engine: None) -> None:
    first = b"From a\r\nContent-Type: text/html\r\n\r\n<img src=logo.png><img src=logo.png>\r\n\r\n"
    second = b"From b\r\nSubject: none\r\n\r\n>From quoted\r\n"
    output, reports = rewrite(first + second)
    assert output == first.replace(b"src=logo.png", b"src=http://example.org/logo.png") + second
    one, two = reports
    assert (one.index, one.offset, one.changed, one.parts, one.rewritten_parts, one.links, one.rewritten_links) == (
        0,
        0,
        True,
        1,
        1,
        2,
        2,
    )
    assert one.output_size - one.size == 2 * len(b"http://example.org/") and one.problems == ("part 1: a note",)
    assert (two.index, two.offset, two.changed, two.problems) == (1, len(first), False, ())


def test_a_file_not_starting_with_a_from_line_is_reported(engine: None) -> None:
    output, reports = rewrite(b"Subject: x\n\n<img src=logo.png>\n")
    assert output == b"Subject: x\n\n<img src=http://example.org/logo.png>\n"
    assert "does not start like an mbox" in reports[0].problems[0]


def test_new_from_lines_are_quoted_and_old_ones_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    def wrap(data: bytes, *, url: str | None, policy: object) -> SimpleNamespace:
        return SimpleNamespace(output=data.replace(b"wrap", b"=\nFrom here"), problems=(), parts=())

    monkeypatch.setattr(mailbox, "rewrite_message", wrap)
    message = mboxcl(b"From kept\nwrap\n")
    output, (report,) = rewrite(b"From a\n" + message)
    assert output.endswith(b"\nFrom kept\n=\n>From here\n")  # the mboxcl2 body line stays, the new one is quoted
    assert report.quoted == 1 and "quoted" in report.problems[-1]
    assert [separator for separator, _ in split(output)] == [b"From a\n"]


def test_content_length_follows_the_change(engine: None) -> None:
    body = b"<img src=logo.png>\nFrom unquoted\n"
    data = b"From a\n" + mboxcl(body) + b"\nFrom b\nSubject: t\n\n"
    output, (report, _) = rewrite(data)
    new_body = body.replace(b"src=logo.png", b"src=http://example.org/logo.png")
    assert output == b"From a\n" + mboxcl(new_body) + b"\nFrom b\nSubject: t\n\n"
    assert len(split(output)) == 2 and report.changed


def test_a_wrong_content_length_is_left_alone(engine: None) -> None:
    data = b"From a\n" + mboxcl(b"<img src=logo.png>\n", 3) + b"From b\n\n"
    output, _ = rewrite(data)
    assert b"Content-Length: 3\n" in output


def test_an_engine_failure_keeps_the_message_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail_on_second(data: bytes, *, url: str | None, policy: object) -> SimpleNamespace:
        if b"boom" in data:
            raise RuntimeError("boom")
        return fake_rewrite(data, url=url, policy=policy)

    monkeypatch.setattr(mailbox, "rewrite_message", fail_on_second)
    data = b"From a\n\n<img src=logo.png>\nFrom b\n\nboom src=logo.png\nFrom c\n\n<img src=logo.png>\n"
    output, reports = rewrite(data)
    assert output.count(b"http://example.org/logo.png") == 2 and b"boom src=logo.png" in output
    assert [r.changed for r in reports] == [True, False, True]
    assert "internal error: RuntimeError: boom" in reports[1].problems[0]


def test_reports_keep_no_message_results(engine: None) -> None:
    _, (report,) = rewrite(b"From a\n\n<img src=logo.png>\n")
    assert not any(isinstance(getattr(report, name), SimpleNamespace) for name in report.__slots__)


# --------------------------------------------------------------------------
# Maildir
# --------------------------------------------------------------------------


def make_maildir(root: Path) -> Path:
    for name in ("cur", "new", "tmp"):
        (root / name).mkdir(parents=True)
    (root / "cur" / "1000.M1P1.host:2,S").write_bytes(b"Subject: a\n\n<img src=logo.png>\n")
    (root / "cur" / "1001.M2P2.host:2,").write_bytes(b"Subject: b\n\nno links\n")
    (root / "new" / "1002.M3P3.host").write_bytes(b"Subject: c\r\n\r\n<img src=logo.png>\r\n")
    (root / "new" / ".hidden").write_bytes(b"not a message")
    (root / "tmp" / "1003.M4P4.host").write_bytes(b"<img src=logo.png> still being delivered")
    (root / "cur" / "sub").mkdir()
    os.utime(root / "cur" / "1000.M1P1.host:2,S", (1_000_000_000, 1_000_000_000))
    return root


def test_is_maildir_and_its_messages(tmp_path: Path) -> None:
    folder = make_maildir(tmp_path / "Mail")
    assert is_maildir(folder) and not is_maildir(tmp_path) and not is_maildir(folder / "cur")
    assert [p.relative_to(folder).as_posix() for p in iter_maildir(folder)] == [
        "cur/1000.M1P1.host:2,S",
        "cur/1001.M2P2.host:2,",
        "new/1002.M3P3.host",
    ]


def test_rewrite_maildir_in_place(tmp_path: Path, engine: None) -> None:
    folder = make_maildir(tmp_path / "Mail")
    untouched = (folder / "cur" / "1001.M2P2.host:2,").stat()
    reports = list(rewrite_maildir(folder))
    assert [(r.path.name, r.changed, r.rewritten_links) for r in reports] == [
        ("1000.M1P1.host:2,S", True, 1),
        ("1001.M2P2.host:2,", False, 0),
        ("1002.M3P3.host", True, 1),
    ]
    assert reports[0].target == folder / "cur" / "1000.M1P1.host:2,S" and reports[1].target is None
    assert (
        folder / "cur" / "1000.M1P1.host:2,S"
    ).read_bytes() == b"Subject: a\n\n<img src=http://example.org/logo.png>\n"
    assert (folder / "cur" / "1000.M1P1.host:2,S").stat().st_mtime == 1_000_000_000
    assert (folder / "new" / "1002.M3P3.host").read_bytes().endswith(b"http://example.org/logo.png>\r\n")
    assert (folder / "cur" / "1001.M2P2.host:2,").stat().st_ino == untouched.st_ino
    assert (folder / "tmp" / "1003.M4P4.host").read_bytes().startswith(b"<img src=logo.png>")
    assert sorted(p.name for p in (folder / "tmp").iterdir()) == ["1003.M4P4.host"]  # no temporary file left
    assert next(rewrite_maildir(folder, folder)).changed is False  # the target may be the folder itself


def test_rewrite_maildir_to_a_target(tmp_path: Path, engine: None) -> None:
    folder = make_maildir(tmp_path / "Mail")
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    target = tmp_path / "Out" / "Mail"
    reports = list(rewrite_maildir(folder, target))
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert is_maildir(target)
    written = sorted(p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file())
    assert written == ["cur/1000.M1P1.host:2,S", "cur/1001.M2P2.host:2,", "new/1002.M3P3.host"]
    assert [r.target for r in reports] == [target / p for p in written]
    assert (target / "cur" / "1001.M2P2.host:2,").read_bytes() == b"Subject: b\n\nno links\n"
    assert b"http://example.org/logo.png" in (target / "new" / "1002.M3P3.host").read_bytes()


def test_an_unreadable_message_is_reported_and_the_others_go_on(
    tmp_path: Path, engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = make_maildir(tmp_path / "Mail")
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name.startswith("1000"):
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    reports = list(rewrite_maildir(folder))
    assert "cannot be read: Permission denied" in reports[0].problems[0] and reports[0].target is None
    assert reports[2].changed and b"http://example.org" in real(folder / "new" / "1002.M3P3.host")


def test_a_message_changed_meanwhile_is_not_overwritten(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = make_maildir(tmp_path / "Mail")
    path = folder / "new" / "1002.M3P3.host"

    def meddle(data: bytes, *, url: str | None, policy: object) -> SimpleNamespace:
        if b"Subject: c" in data:
            path.write_bytes(b"Subject: c\r\n\r\nflagged by a mail client meanwhile\r\n")
        return fake_rewrite(data, url=url, policy=policy)

    monkeypatch.setattr(mailbox, "rewrite_message", meddle)
    report = list(rewrite_maildir(folder))[2]
    assert report.target is None and "changed while it was being rewritten" in report.problems[-1]
    assert path.read_bytes().endswith(b"meanwhile\r\n")


def test_a_size_in_the_file_name_is_reported(tmp_path: Path, engine: None) -> None:
    folder = make_maildir(tmp_path / "Mail")
    (folder / "cur" / "1000.M1P1.host:2,S").rename(folder / "cur" / "1000.M1P1.host,S=31:2,S")
    report = next(rewrite_maildir(folder))
    assert report.changed and "no longer matches" in report.problems[-1]


def test_rewrite_maildir_needs_a_maildir(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        list(rewrite_maildir(tmp_path))
