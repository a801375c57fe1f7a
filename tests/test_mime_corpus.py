"""The MIME engine on the 70 real messages of ../shared/corpus/mail (acceptance 2 of issue #4).

For every file: nothing raises; every byte outside the rewritten HTML/CSS bodies is the
input's; the email package reads the output as the same tree as the input; our part tree
agrees with the email package's; rewriting the output again changes nothing.
"""

from __future__ import annotations

import email
import email.policy
import io
import typing

import pytest
from conftest import SHARED, shared_path

from rewriter.containers.mailbox import iter_mbox
from rewriter.html.engine import Status
from rewriter.mime.message import MessageResult, Part, rewrite_message

CORPUS = SHARED / "corpus" / "mail"
STATUSES = typing.get_args(Status)
FILES = sorted(path.name for path in CORPUS.iterdir() if path.suffix != ".md") if CORPUS.is_dir() else ["absent"]


def messages(name: str) -> list[bytes]:
    """The messages of a corpus file: an mbox holds several, any other file one."""
    path = shared_path("corpus", "mail", name)
    data = path.read_bytes()
    if path.suffix == ".mbox":
        return [message for _, message in iter_mbox(io.BytesIO(data))]
    return [data]


def email_tree(data: bytes) -> list[str]:
    """Content types in walk order, as the email package reads them."""
    return [part.get_content_type() for part in email.message_from_bytes(data, policy=email.policy.compat32).walk()]


def unchanged_outside_bodies(data: bytes, result: MessageResult, again: MessageResult) -> None:
    """The output is the input with only the bodies of rewritten parts replaced.

    *again* is the output read once more: the same tree, so its parts give where each
    new body lies in the output.
    """
    assert [part.path for part in again.parts] == [part.path for part in result.parts]
    in_output = {part.path: part for part in again.parts}
    position = output_position = 0
    for part in sorted((part for part in result.parts if part.action == "rewritten"), key=lambda p: p.body_start):
        new = in_output[part.path]
        assert result.output[output_position : new.body_start] == data[position : part.body_start], part.path
        position, output_position = part.end, new.end
    assert result.output[output_position:] == data[position:]


@pytest.mark.parametrize("name", FILES)
def test_corpus_message_keeps_every_other_byte(name: str) -> None:
    for data in messages(name):
        result = rewrite_message(data)
        again = rewrite_message(result.output)
        unchanged_outside_bodies(data, result, again)
        assert email_tree(result.output) == email_tree(data)
        if not any(part.action == "rewritten" for part in result.parts):
            assert result.output == data
        assert again.output == result.output, "rewriting the output again changed it"


def _our_tree(parts: tuple[Part, ...], data: bytes) -> list[str]:
    """Our content types in tree order, leaving out empty entities (no heading, no body)."""
    return [part.content_type for part in parts if part.end > part.start or part.path == "1"]


def _email_tree_normalised(data: bytes) -> list[str]:
    """The email package's tree without what we read differently on purpose: the header
    blocks it makes children of message/delivery-status (we keep that body as one
    leaf), and empty parts between doubled delimiters (RFC 2046's grammar makes each an
    empty body part; the email package skips some of them)."""
    message = email.message_from_bytes(data, policy=email.policy.compat32)
    kinds: list[str] = []

    def visit(part: email.message.Message) -> None:
        empty = not part.keys() and not part.is_multipart() and not part.get_payload()
        if not empty:
            kinds.append(part.get_content_type())
        if part.get_content_type() == "message/delivery-status":
            return
        if part.is_multipart():
            for child in part.get_payload():
                visit(child)

    visit(message)
    return kinds


@pytest.mark.parametrize("name", FILES)
def test_part_tree_agrees_with_the_email_package(name: str) -> None:
    for data in messages(name):
        result = rewrite_message(data)
        assert _our_tree(result.parts, data) == _email_tree_normalised(data)


@pytest.mark.parametrize("name", FILES)
def test_part_counts_agree_with_the_links(name: str) -> None:
    # Part.count reads the engine's statuses without building the links; counted from the links, the same.
    for data in messages(name):
        counted = [{status: part.count(status) for status in STATUSES} for part in rewrite_message(data).parts]
        parts = rewrite_message(data).parts
        assert counted == [
            {status: sum(link.status == status for link in part.links) for status in STATUSES} for part in parts
        ]
        assert [part.count() for part in parts] == [len(part.links) for part in parts]


def test_corpus_figures() -> None:
    """Every file is read; what was rewritten is printed for the record (not asserted)."""
    shared_path("corpus", "mail")
    rewritten = links = files = 0
    for name in FILES:
        for data in messages(name):
            files += 1
            result = rewrite_message(data)
            links += len(result.links)
            rewritten += sum(1 for link in result.links if link.status == "rewritten")
    print(f"{files} messages, {links} links, {rewritten} rewritten")
    assert files >= 70


def test_message_without_html_is_returned_as_is() -> None:
    data = b"From: a@example.org\nSubject: plain\n\nsee /relative/path\n"
    assert rewrite_message(data).output is data
