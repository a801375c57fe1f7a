"""A large mbox in pieces (issue 20): plan_mbox's pieces, each rewritten on its own by
rewrite_mbox_piece and joined, are rewrite_mbox's output and reports, byte for byte."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest
from conftest import SHARED, Unseekable, shared_path
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import rewriter
from rewriter.containers import mailbox
from rewriter.containers.formats import SNIFF_SIZE, detect_format
from rewriter.containers.mailbox import MAX_MESSAGE, MboxReport, plan_mbox, rewrite_mbox, rewrite_mbox_piece
from rewriter.containers.pieces import Piece

MB = 1 << 20
BOM = b"\xef\xbb\xbf"


def whole(data: bytes, max_message: int = MAX_MESSAGE, chunk_size: int = mailbox.CHUNK_SIZE) -> tuple[bytes, list]:
    """rewrite_mbox's output and reports, read *chunk_size* bytes at a time."""
    target = io.BytesIO()
    with mock.patch.object(mailbox, "CHUNK_SIZE", chunk_size):
        reports = list(rewrite_mbox(io.BytesIO(data), target, max_message=max_message))
    return target.getvalue(), reports


def in_pieces(
    data: bytes,
    piece_size: int,
    max_message: int = MAX_MESSAGE,
    plan_chunk: int = mailbox.CHUNK_SIZE,
    piece_chunk: int = mailbox.CHUNK_SIZE,
) -> tuple[list[Piece], bytes, list[MboxReport]]:
    """The plan, and the outputs and reports of its pieces joined in order; the pieces are
    rewritten last first from one shared stream, as workers would in any order."""
    with mock.patch.object(mailbox, "CHUNK_SIZE", plan_chunk):
        pieces = list(plan_mbox(io.BytesIO(data), piece_size=piece_size, max_message=max_message))
    source = io.BytesIO(data)
    outputs: dict[int, tuple[bytes, list[MboxReport]]] = {}
    with mock.patch.object(mailbox, "CHUNK_SIZE", piece_chunk):
        for piece in reversed(pieces):
            target = io.BytesIO()
            reports = list(rewrite_mbox_piece(source, piece, target, max_message=max_message))
            outputs[piece.number] = target.getvalue(), reports
    output = b"".join(outputs[piece.number][0] for piece in pieces)
    return pieces, output, [report for piece in pieces for report in outputs[piece.number][1]]


def check_plan(pieces: list[Piece], reports: list[MboxReport], size: int, piece_size: int) -> None:
    """The pieces cover the file in order, begin where messages do, and are no larger than
    *piece_size* unless they are one message."""
    assert pieces, "a plan has at least one piece"
    assert pieces[0].start == 0 and pieces[-1].end == size
    assert [piece.number for piece in pieces] == list(range(len(pieces)))
    assert [piece.last for piece in pieces] == [False] * (len(pieces) - 1) + [True]
    for before, after in itertools.pairwise(pieces):
        assert before.end == after.start and before.size > 0
    index_at = {report.offset: report.index for report in reports}
    for piece in pieces:
        if piece.size:
            assert index_at[piece.start] == piece.first, piece
            inside = [report for report in reports if piece.start <= report.offset < piece.end]
            assert piece.size <= piece_size or len(inside) == 1, (piece, inside)
        else:
            assert pieces == [Piece(0, 0, 0, 0, last=True)]


def assert_pieces_equal_whole(
    data: bytes,
    piece_size: int,
    max_message: int = MAX_MESSAGE,
    chunks: tuple[int, int, int] = (mailbox.CHUNK_SIZE,) * 3,
    expected: tuple[bytes, list[MboxReport]] | None = None,
) -> list[Piece]:
    output, reports = expected or whole(data, max_message, chunks[0])
    pieces, joined, piece_reports = in_pieces(data, piece_size, max_message, chunks[1], chunks[2])
    check_plan(pieces, reports, len(data), piece_size)
    assert joined == output
    assert piece_reports == reports  # index, offset, sizes, changed, counts, quoted, problems, relative
    return pieces


# --------------------------------------------------------------------------
# Adversarial mboxes
# --------------------------------------------------------------------------

EOLS = st.sampled_from([b"\n", b"\r\n"])
FROM_LINES = st.sampled_from([b"From a@example.org Sat Jan  1 00:00:00 2000", b"From x", b"From "])
BODY_LINES = st.sampled_from(
    [
        b"From here",  # an unquoted From line: a separator, unless a Content-Length covers it
        b">From quoted",
        b">>From twice",
        b"<img src=logo.png>",
        b"<a href=next.html>next</a>",
        b"x",
        b"",
        b"Fromage",
        b"From",
        b"Content-Length: 7",
        BOM + b"From bom",
    ]
)
# How a message's Content-Length is written: none, right, wrong, huge,
# a little short, or covering the next messages too (an mboxcl2 body with their From lines unquoted).
LENGTHS = st.one_of(
    st.sampled_from(["none", "right", "huge"]),
    st.tuples(st.just("short"), st.integers(1, 6)),
    st.tuples(st.just("wrong"), st.integers(0, 400)),
    st.tuples(st.just("span"), st.integers(1, 3)),
)


@st.composite
def messages(draw: st.DrawFn) -> tuple[bytes, list[bytes], bytes, object, bytes]:
    """(From_ line and its break, heading lines, body, length rule, what ends the message)."""
    eol = draw(EOLS)
    heading = []
    if draw(st.booleans()):
        heading += [b"Content-Type: text/html" + eol, b"Content-Location: http://example.org/d/" + eol]
    heading.append(b"Subject: s" + draw(EOLS))
    lines = draw(st.lists(st.tuples(BODY_LINES, EOLS), max_size=8))
    body = b"".join(line + end for line, end in lines)
    if draw(st.booleans()):
        body += b"y" * draw(st.integers(0, 400))  # a long line, for small max_message values
    ending = draw(st.sampled_from([b"", b"\n", b"\r\n", b"\n\n", b"\r\n\r\n"]))
    return draw(FROM_LINES) + eol, heading, body, draw(LENGTHS), ending


def assemble(prefix: bytes, specs: list[tuple[bytes, list[bytes], bytes, object, bytes]]) -> bytes:
    """The mbox of *specs* after *prefix*, built from the last message back (a span's
    length counts the bytes of the messages after it)."""
    built: list[bytes] = []
    for separator, heading, body, rule, ending in reversed(specs):
        content = body + ending
        if rule == "none":
            length = None
        elif rule == "right":
            length = len(body)
        elif rule == "huge":
            length = 10**15
        elif rule[0] == "short":  # type: ignore[index]
            length = len(body) - rule[1]  # type: ignore[index]
        elif rule[0] == "wrong":  # type: ignore[index]
            length = rule[1]  # type: ignore[index]
        else:
            length = len(content) + sum(len(message) for message in built[-rule[1] :])  # type: ignore[index]
        field = [] if length is None or length < 0 else [b"Content-Length: %d\n" % length]
        built.append(separator + b"".join(heading + field) + b"\n" + content)
    return prefix + b"".join(reversed(built))


PREFIXES = st.sampled_from(
    [b"", BOM, b"junk\n", BOM + b"junk\n\n", b"Content-Length: 5\n\nabcde\n", b"\n", b"\r\n", b"From"]
)
RAW = st.lists(
    st.sampled_from([b"From ", b"From x\n", b"\n", b"\r\n", b"x", b">From ", BOM, b"Content-Length: 3\n", b"\n\n"]),
    max_size=40,
).map(b"".join)
MBOXES = st.one_of(st.builds(assemble, PREFIXES, st.lists(messages(), max_size=8)), RAW)
CHUNKS = st.one_of(st.integers(1, 64), st.just(mailbox.CHUNK_SIZE))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    MBOXES,
    st.one_of(st.integers(1, 40), st.integers(1, 200), st.integers(200, 5000)),
    st.one_of(st.integers(1, 400), st.just(MAX_MESSAGE)),
    st.tuples(CHUNKS, CHUNKS, CHUNKS),
)
@example(b"", 1, MAX_MESSAGE, (1, 1, 1))
@example(BOM + b"From a\nA: b\n\nFrom b\n\n", 1, MAX_MESSAGE, (1, 2, 3))
def test_any_mbox_in_any_pieces_is_the_whole_file(
    data: bytes, piece_size: int, max_message: int, chunks: tuple[int, int, int]
) -> None:
    """The contract: whatever the bytes, the piece size, the message limit and where the
    reads of the whole file, of the plan and of each piece end."""
    pieces = assert_pieces_equal_whole(data, piece_size, max_message, chunks)
    event("one piece" if len(pieces) == 1 else "several pieces")
    problems = " ".join(problem for report in whole(data, max_message)[1] for problem in report.problems)
    event("an oversize message" if "larger than" in problems else "no oversize message")


@settings(max_examples=200, deadline=None)
@given(MBOXES, st.one_of(st.integers(1, 400), st.none()), CHUNKS, st.booleans())
def test_the_split_does_not_depend_on_where_reads_end(
    data: bytes, limit: int | None, chunk_size: int, seekable: bool
) -> None:
    """What makes a piece cut as the whole file is: no decision of the splitter depends on
    where its reads end (before, a message near the limit was oversize or not, and a
    Content-Length followed or not, as the reads fell; on a stream that cannot seek,
    bytes of the next messages could be spilled with an oversize one). A stream that
    cannot seek follows a Content-Length no further than the limit: compared with itself."""

    def split(size: int) -> list[tuple[bytes, bytes | None, int]]:
        stream = io.BytesIO(data) if seekable else Unseekable(data)
        spilled: list[bytes] = []
        pieces: list[bytes] = []
        items = []
        for separator, message, length in mailbox._split(stream, size, limit, spilled.append if limit else None):  # type: ignore[arg-type]
            items.append((separator, message, length))
            if message is None:
                assert len(b"".join(spilled)) == length > limit  # type: ignore[operator]
                pieces += spilled
            else:
                assert not spilled and len(separator + message) == length
                pieces += (separator, message)
            spilled.clear()
        assert b"".join(pieces) == data
        return items

    assert split(chunk_size) == split(mailbox.CHUNK_SIZE)


# --------------------------------------------------------------------------
# Crafted cases
# --------------------------------------------------------------------------


def mboxcl(body: bytes, length: int | None = None) -> bytes:
    length = len(body) if length is None else length
    return b"Subject: s\nContent-Length: %d\n\n" % length + body


HTML = b"Content-Type: text/html\nContent-Location: http://example.org/d/\n\n<img src=logo.png>\n"


def test_an_empty_file_is_one_empty_last_piece() -> None:
    (piece,) = plan_mbox(io.BytesIO(b""))
    assert piece == Piece(0, 0, 0, 0, last=True)
    target = io.BytesIO()
    assert list(rewrite_mbox_piece(io.BytesIO(b""), piece, target)) == []
    assert target.getvalue() == b""


def test_pieces_close_before_the_message_that_does_not_fit() -> None:
    messages = [b"From %d\n" % n + HTML for n in range(10)]
    data = b"".join(messages)
    size = len(messages[0])
    pieces = assert_pieces_equal_whole(data, 3 * size + 5)
    assert [(piece.start // size, piece.end // size, piece.first) for piece in pieces] == [
        (0, 3, 0),
        (3, 6, 3),
        (6, 9, 6),
        (9, 10, 9),
    ]
    assert assert_pieces_equal_whole(data, 1)[-1].number == 9  # one message each
    assert len(assert_pieces_equal_whole(data, len(data))) == 1


def test_what_comes_before_the_first_from_line_is_the_first_pieces() -> None:
    """A byte order mark belongs to the first From_ line; text before it is a message of
    its own (index 0, reported as not behind a From_ line), as rewrite_mbox reads them."""
    for prefix, first_piece in ((BOM, b"From b"), (b"junk\n", b"From a"), (BOM + b"junk\n\n", b"From a")):
        data = prefix + b"From a\n" + HTML + b"From b\n" + HTML
        pieces = assert_pieces_equal_whole(data, 1)
        _, reports = whole(data)
        unseparated = [report.index for report in reports if "does not start like an mbox" in " ".join(report.problems)]
        assert unseparated == ([] if prefix == BOM else [0])
        assert pieces[1].start == data.index(first_piece)


def test_a_content_length_skipping_from_lines_keeps_the_message_in_one_piece() -> None:
    first = b"From a\n" + mboxcl(b"<img src=logo.png>\nFrom inside the body\nmore\n") + b"\n"
    data = first + b"From b\n" + HTML
    pieces = assert_pieces_equal_whole(data, 1)
    assert [piece.start for piece in pieces] == [0, len(first)]


def test_a_content_length_pointing_at_or_past_the_end_of_a_piece() -> None:
    # The message's Content-Length ends its body at the next piece's From_ line (whole file:
    # a From_ line there; in the piece: the end of the stream), or just past it, or at a
    # From_ line two messages on: the cut is the whole file's each time.
    second = b"From b\n" + HTML
    third = b"From c\nSubject: t\n\nFrom d\n\n"
    for extra in (0, 1, 3, len(second), len(second) + 1, len(second) + 7, len(second) + len(third), 10**6):
        body = b"one\nFrom inside\ntwo\n"
        first = b"From a\n" + mboxcl(body, len(body) + extra)
        data = first + second + third
        for piece_size in (1, len(first), len(first) + 1, len(first) + len(second), 10**6):
            assert_pieces_equal_whole(data, piece_size)


def test_oversize_messages_are_copied_through_in_their_pieces() -> None:
    big = b"From big\n" + HTML + b"<img src=logo.png>\n" * 50
    small = b"From s\n" + HTML
    data = small + big + small + big + big + small
    for piece_size in (1, len(small), len(big), 2 * len(big), 10**6):
        pieces = assert_pieces_equal_whole(data, piece_size, max_message=len(big) - 1)
    _, reports = whole(data, len(big) - 1)
    assert [report.changed for report in reports] == [True, False, True, False, False, True]
    assert all("copied unchanged" in report.problems[0] for report in reports if not report.changed)
    assert len(pieces) == 1
    # Exactly at the limit is not oversize, however the reads fall.
    for chunk in (1, 5, 7, 64):
        _, reports = whole(data, len(big), chunk)
        assert all(report.changed for report in reports)


def test_an_oversize_message_with_a_content_length_spanning_from_lines() -> None:
    body = b"From x\n" + b"y" * 300 + b"\nFrom z\n"
    data = b"From a\n" + mboxcl(body) + b"\nFrom b\n" + HTML
    for max_message in (50, 400, 1000):
        for piece_size in (1, 100, 400):
            assert_pieces_equal_whole(data, piece_size, max_message, (1, 7, 3))


def test_a_real_file_is_planned_and_read_by_seeking(tmp_path: Path) -> None:
    data = b"".join(b"From %d\n" % n + HTML for n in range(20))
    path = tmp_path / "a.mbox"
    path.write_bytes(data)
    output, reports = whole(data)
    with path.open("rb") as stream:
        stream.seek(100)  # the plan reads the whole stream, whatever its position
        pieces = list(plan_mbox(stream, piece_size=500))
        joined = io.BytesIO()
        piece_reports = [report for piece in pieces for report in rewrite_mbox_piece(stream, piece, joined)]
    assert joined.getvalue() == output and piece_reports == reports and len(pieces) > 3


def test_wrong_arguments_are_refused() -> None:
    data = b"From a\n" + HTML + b"From b\n" + HTML
    with pytest.raises(ValueError, match="seekable"):
        plan_mbox(Unseekable(data))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="piece_size"):
        plan_mbox(io.BytesIO(data), piece_size=0)
    with pytest.raises(ValueError, match="does not begin with a From_ line"):
        list(rewrite_mbox_piece(io.BytesIO(data), Piece(3, len(data), 0, 1, last=True), io.BytesIO()))


def test_reports_carry_results_with_links_in_pieces() -> None:
    data = b"From a\n" + HTML + b"From b\n" + HTML
    (piece,) = plan_mbox(io.BytesIO(data))
    reports = list(rewrite_mbox_piece(io.BytesIO(data), piece, io.BytesIO(), with_links=True))
    assert [report.result is not None for report in reports] == [True, True]


def test_the_plan_is_streamed() -> None:
    class Counting(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            self.read_bytes += len(data)
            return data

    data = b"".join(b"From %d\n" % n + HTML for n in range(2000))
    stream = Counting(data)
    stream.read_bytes = 0
    with mock.patch.object(mailbox, "CHUNK_SIZE", 4096):
        plan = plan_mbox(stream, piece_size=1000)
        first = next(plan)
    assert first.start == 0 and not first.last
    assert stream.read_bytes < len(data) // 4  # yielded long before the end of the file
    assert list(plan)[-1].last


# --------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------


def corpus_mboxes() -> list[str]:
    base = SHARED / "corpus" / "mail"
    if not base.is_dir():
        return ["absent"]
    return sorted(
        path.name
        for path in base.iterdir()
        if path.is_file() and (path.suffix == ".mbox" or detect_format(path.read_bytes()[:SNIFF_SIZE]) == "mbox")
    )


@pytest.mark.parametrize("name", corpus_mboxes())
@pytest.mark.parametrize("max_message", [MAX_MESSAGE, 3000])
def test_every_corpus_mbox_in_pieces_is_the_whole_file(name: str, max_message: int) -> None:
    data = shared_path("corpus", "mail", name).read_bytes()
    expected = whole(data, max_message)
    for piece_size in (1, 2000, 50_000, 300_000, len(data)):
        assert_pieces_equal_whole(data, piece_size, max_message, (mailbox.CHUNK_SIZE, 4096, 7), expected)


# --------------------------------------------------------------------------
# Memory: the plan of a 200 MB mbox
# --------------------------------------------------------------------------

PLAN_BUDGET = 32 * MB  # the scan's peak resident size may rise by this much over the interpreter's


def _large_mbox(path: Path, size: int) -> Iterator[int]:
    """Write an mbox of about *size* bytes to *path*; yields where each message starts.

    Small messages (some with a right Content-Length over an unquoted From line), 1 MB
    ones, and every 50 MB a 20 MB message and a 10 MB line without a line break."""
    small = [
        b"From a@example.org Sat Jan  1 00:00:00 2000\n" + HTML + b"x" * 2000 + b"\n>From quoted\n\n",
        b"From b\r\n" + mboxcl(b"<p>\nFrom unquoted\n" + b"y" * 1000 + b"\n") + b"\n",
    ]
    middle = b"From m\nSubject: s\n\n" + (b"z" * 1023 + b"\n") * 1024
    huge = b"From h\nSubject: s\n\n" + (b"w" * 1023 + b"\n") * 20 * 1024
    line = b"From l\nSubject: s\n\n" + b"v" * 10 * MB + b"\n"
    written = 0
    with path.open("wb") as stream:
        while written < size:
            block = []
            if written % (50 * MB) < 4 * MB:
                block += [huge, line]
            block += small * 500 + [middle]
            for message in block:
                yield written
                stream.write(message)
                written += len(message)


_PLAN_CHILD = """
import json, sys, time
sys.path.insert(0, {root!r})
from rewriter.containers.mailbox import plan_mbox

def high_water():
    status = open("/proc/self/status").read()
    return int(status.split("VmHWM:")[1].split()[0]) * 1024

before = high_water()
started = time.perf_counter()
with open({path!r}, "rb") as stream:
    plan = plan_mbox(stream, piece_size={piece_size}, max_message={limit})
    pieces = [(p.start, p.end, p.first, p.last) for p in plan]
seconds = time.perf_counter() - started
print(json.dumps({{"before": before, "peak": high_water(), "seconds": seconds, "pieces": pieces}}))
"""


def test_the_plan_of_a_large_mbox_keeps_memory_flat(tmp_path: Path) -> None:
    """About 200 MB, with 20 MB messages and a 10 MB line over a 4 MiB max_message: the
    scan's peak resident size rises by less than PLAN_BUDGET (it holds one message of at
    most the limit, and forgets the oversize ones as it reads them)."""
    if not Path("/proc/self/status").exists():
        pytest.skip("the peak resident size is read from /proc/self/status (Linux)")
    path = tmp_path / "large.mbox"
    starts = list(_large_mbox(path, 200 * MB))
    size = path.stat().st_size
    root = str(Path(rewriter.__file__).resolve().parents[1])
    code = _PLAN_CHILD.format(root=root, path=str(path), piece_size=16 * MB, limit=4 * MB)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    growth = outcome["peak"] - outcome["before"]
    print(
        f"plan of {size / MB:.0f} MB: {outcome['seconds']:.2f} s ({size / MB / outcome['seconds']:.0f} MB/s), "
        f"peak resident size {outcome['peak'] / MB:.0f} MB (+{growth / MB:.1f} MB), {len(outcome['pieces'])} pieces"
    )
    assert growth < PLAN_BUDGET, outcome | {"pieces": len(outcome["pieces"])}
    pieces = outcome["pieces"]
    assert pieces[0][0] == 0 and pieces[-1][1] == size and pieces[-1][3]
    index = {start: number for number, start in enumerate(starts)}
    for (start, end, first, _), following in zip(pieces, [*pieces[1:], [size]], strict=True):
        assert end == following[0] and index[start] == first
    assert 12 <= len(pieces) <= 20  # 16 MiB each, but for the 20 MB messages
