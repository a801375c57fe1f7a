"""Memory by the input: what a call allocates beyond its output, counted by tracemalloc
(allocations, not time: the same on every machine). The figures of whole runs are
benchmarks/bench_memory.py's."""

from __future__ import annotations

import base64
import tracemalloc
from collections.abc import Callable
from typing import TypeVar

import rewriter
from rewriter.mime.message import rewrite_message

URL = "http://example.com/mail/message.eml"
ATTACHMENT = 6 << 20  # bytes before base64
T = TypeVar("T")


def message_with_attachment() -> bytes:
    """A message whose HTML part has links to rewrite, with a large attachment after it."""
    html = "".join(f'<p><a href="page{number}.html">page {number}</a></p>\r\n' for number in range(200))
    body = base64.encodebytes(bytes(range(256)) * (ATTACHMENT // 256)).replace(b"\n", b"\r\n")
    return (
        b"From: a@example.com\r\nSubject: links\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/mixed; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + html.encode() + b"\r\n"
        b"--b\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + body
        + b"\r\n--b--\r\n"
    )


def peak_of(call: Callable[[], T]) -> tuple[int, T]:
    """The peak of what *call* allocated (its result's included), and its result."""
    tracemalloc.start()
    try:
        result = call()
        return tracemalloc.get_traced_memory()[1], result
    finally:
        tracemalloc.stop()


def test_a_messages_unchanged_stretches_are_not_copied_before_the_output_is_joined() -> None:
    data = message_with_attachment()
    peak, result = peak_of(lambda: rewrite_message(data, url=URL))
    output = result.output
    assert b'href="http://example.com/mail/page7.html"' in output
    assert output.count(b"\r\n--b") == data.count(b"\r\n--b") and len(output) > len(data)
    # The output itself, and a little besides: a copy of the attachment's stretch before
    # the join would be as large again.
    assert peak < len(output) + len(output) // 4, f"{peak} bytes allocated for a {len(output)}-byte output"


def test_the_library_holds_a_message_once_beside_its_output() -> None:
    data = message_with_attachment()
    peak, result = peak_of(lambda: rewriter.rewrite(data, url=URL, format="message"))
    assert peak < len(result.output) + len(result.output) // 4
