"""mime.read_heading against the email package it stands in for.

``read_heading`` reads a heading as ``BytesHeaderParser(policy=compat32)`` does, without
the FeedParser's stream machinery. Both are run on every heading of every message of
../shared/corpus/mail and on generated headings (odd line breaks, continuation lines
first, "From " lines, a missing field name, bytes outside ASCII); they must give the same
fields in the same order, envelope line, defects, payload and content type.
"""

from __future__ import annotations

import email.parser
import io
from email.message import Message
from email.policy import compat32

import pytest
from conftest import SHARED, shared_path
from hypothesis import given, settings
from hypothesis import strategies as st

from rewriter.containers.mailbox import iter_mbox
from rewriter.mime.message import find_message_links, heading_end, read_heading

CORPUS = SHARED / "corpus" / "mail"
FILES = sorted(path.name for path in CORPUS.iterdir() if path.suffix != ".md") if CORPUS.is_dir() else ["absent"]
STDLIB = email.parser.BytesHeaderParser(policy=compat32)


def as_read(heading: Message) -> tuple[object, ...]:
    return (
        heading.raw_items() and list(heading.raw_items()),
        heading.get_unixfrom(),
        [(type(defect).__name__, str(defect)) for defect in heading.defects],
        heading.get_payload(),
        heading.get_content_type(),
        heading.get_params(),
    )


def same_reading(data: bytes) -> None:
    end, _ = heading_end(data, 0, len(data))
    block = data[:end]
    assert as_read(read_heading(block)) == as_read(STDLIB.parsebytes(block)), block


@pytest.mark.parametrize("name", FILES)
def test_every_corpus_heading_reads_as_the_email_package_reads_it(name: str) -> None:
    path = shared_path("corpus", "mail", name)
    data = path.read_bytes()
    found = [message for _, message in iter_mbox(io.BytesIO(data))] if path.suffix == ".mbox" else [data]
    for message in found:
        for part in find_message_links(message).parts:
            same_reading(message[part.start :])


LINE_BREAKS = st.sampled_from([b"\r\n", b"\n", b"\r", b"\r\r\n"])
FIELD_LINES = st.one_of(
    st.builds(
        lambda name, value, brk: name + b":" + value + brk,
        st.sampled_from([b"Content-Type", b"content-location", b"X-\xe9", b"Subject", b"", b"Base"]),
        st.sampled_from(
            [b" text/html", b"\ttext/html; charset=utf-8", b"", b" <URL:http://h/a/>", b" \xff", b" a\x0cb\x1c"]
        ),
        LINE_BREAKS,
    ),
    st.builds(lambda value, brk: value + brk, st.sampled_from([b" folded", b"\tmore; x=1", b"  "]), LINE_BREAKS),
    st.builds(lambda brk: b"From someone Sat Jan  1 00:00:00 2000" + brk, LINE_BREAKS),
)


@given(st.lists(FIELD_LINES, max_size=8).map(b"".join), st.sampled_from([b"", b"\r\n", b"\n", b"body\r\n"]))
@settings(max_examples=1500)
def test_generated_headings_read_as_the_email_package_reads_them(heading: bytes, rest: bytes) -> None:
    same_reading(heading + rest)
