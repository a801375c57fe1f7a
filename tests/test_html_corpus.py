"""The HTML engine on the whole corpus: no exception, byte fidelity, idempotence.

The fidelity check does not trust the engine's own edit list: it walks the input and
the output side by side, requiring every input byte outside the rewritten links'
spans to appear in the output in the same order, and each replaced piece to decode
to the link's resolved URL.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED, shared_path

from rewriter.document.encoding import sniff
from rewriter.html.engine import HTMLResult, Link, rewrite_html
from rewriter.html.microsyntax import decode_attribute

CORPUS = SHARED / "corpus" / "html"


def _pages() -> list[Any]:
    manifest = CORPUS / "manifest.json"
    if not manifest.exists():
        return [pytest.param(None, id="shared-absent")]
    return [pytest.param(entry, id=entry["file"]) for entry in json.loads(manifest.read_text(encoding="utf-8"))]


def _load(entry: dict[str, Any] | None) -> tuple[bytes, str | None]:
    if entry is None:
        shared_path("corpus", "html", "manifest.json")
    assert entry is not None
    return (CORPUS / entry["file"]).read_bytes(), entry["url"] or entry.get("canonical_or_og_url")


def _outermost(links: tuple[Link, ...]) -> list[Link]:
    """The rewritten links, without those nested inside another (srcdoc content)."""
    rewritten = sorted((link for link in links if link.status == "rewritten"), key=lambda link: link.start)
    outer: list[Link] = []
    for link in rewritten:
        if outer and link.start < outer[-1].end:
            continue
        outer.append(link)
    return outer


def assert_only_links_changed(data: bytes, result: HTMLResult) -> None:
    codec = sniff(data).codec
    output = result.output
    position_out = 0
    position_in = 0
    links = _outermost(result.links)
    for index, link in enumerate(links):
        kept = data[position_in : link.start]
        # A value that needed quotes gets them: its opening quote comes first.
        if not output.startswith(kept, position_out):
            raise AssertionError(f"bytes before {link.original!r} at {link.start} changed")
        position_out += len(kept)
        following_end = links[index + 1].start if index + 1 < len(links) else len(data)
        anchor = data[link.end : min(following_end, link.end + 200)]
        found = output.find(anchor, position_out) if anchor else len(output)
        assert found >= 0, f"bytes after {link.original!r} at {link.end} are gone"
        replaced = output[position_out:found].decode(codec, "surrogateescape")
        text = decode_attribute(replaced)[0]  # attribute rules: "&sectionId" stays as written
        readings = [text]
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            readings.append(text[1:-1])  # the quotes added around a value that needed them
        if link.kind == "url" and "%" not in text:
            assert any(r == link.resolved or r.endswith(link.original) for r in readings), (link, replaced)
        assert ":" in text, (link, replaced)
        position_out = found
        position_in = link.end
    assert output[position_out:] == data[position_in:], "bytes after the last link changed"


@pytest.mark.parametrize("entry", _pages())
def test_every_page_rewrites_faithfully_and_idempotently(entry: dict[str, Any] | None) -> None:
    data, url = _load(entry)
    result = rewrite_html(data, url=url)
    assert isinstance(result.output, bytes)
    # Some links, their byte spans alone worked out (before the whole tuple is built), are those of the whole.
    subsets = [("no-base", "unresolvable"), ("rewritten",), ("same-document", "absolute", "relinked")]
    chosen = [result.links_with(*statuses) for statuses in subsets]
    assert chosen == [tuple(link for link in result.links if link.status in statuses) for statuses in subsets]
    assert result.status_counts == dict(Counter(link.status for link in result.links))
    if entry is not None and entry["file"].startswith("traf--"):
        assert_only_links_changed(data, result)
    again = rewrite_html(result.output, url=url)
    assert again.output == result.output
    assert not [link for link in again.links if link.status == "rewritten"]


def test_a_page_with_nothing_to_rewrite_comes_back_identical() -> None:
    page = b"<!doctype html><p>nothing <a href='https://x/'>here</a>\r\n"
    assert rewrite_html(page, url="http://h/").output == page


def test_the_fidelity_check_catches_a_changed_byte() -> None:
    page = b'<p class="a"><a href="x">t</a></p>'
    result = rewrite_html(page, url="http://h/")
    tampered = HTMLResult(
        result.output.replace(b'class="a"', b'class="b"'), result.links, result.encoding, result.base, result.layer
    )
    with pytest.raises(AssertionError):
        assert_only_links_changed(page, tampered)
    assert_only_links_changed(page, result)


def test_corpus_is_where_the_tests_expect_it() -> None:
    assert Path(shared_path("corpus", "html", "manifest.json")).is_file()


def _elements(tree: Any, line_starts: list[int]) -> list[tuple[str, object, int | None]]:
    return [
        (
            element.tag,
            element.namespace,
            None if element.position is None else line_starts[element.position[0] - 1] + element.position[1],
        )
        for element in tree.iter_elements()
    ]


@pytest.mark.parametrize("entry", _pages())
def test_one_line_parser_input_builds_the_same_tree(entry: dict[str, Any] | None) -> None:
    """The engine parses each page (but a long one of long lines) with its line breaks read as
    spaces (rewriter.html.engine.ParsedDocument): every element, its namespace and the offset
    of its start tag are those of the page parsed as it is."""
    import turbohtml

    from rewriter.document.encoding import decode_checked
    from rewriter.html.engine import ParsedDocument, for_parser, starts_of_lines
    from rewriter.html.parsed import FLAT_MOST

    data, _ = _load(entry)
    text, readable = decode_checked(data, sniff(data))
    document = ParsedDocument(text, readable)
    # No corpus page has a DOCTYPE identifier with a line break; some are long, of long lines.
    assert document.flat or len(text) > FLAT_MOST
    as_is = turbohtml.parse(
        text if readable else for_parser(text), scripting=True, allow_declarative_shadow_roots=False
    )
    assert _elements(document.tree, document.line_starts) == _elements(as_is, starts_of_lines(text))


@pytest.mark.parametrize("entry", _pages())
def test_each_page_read_by_its_lines_gives_what_its_one_line_reading_gives(
    entry: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long page of long lines is parsed with its lines kept (docs/decisions.md, "turbohtml's
    tree"); any page read that way must give the output and links its one-line reading gives."""
    from rewriter.html import parsed

    data, url = _load(entry)
    monkeypatch.setattr(parsed, "FLAT_MOST", 1 << 62)
    as_one = rewrite_html(data, url=url)
    monkeypatch.setattr(parsed, "FLAT_MOST", 0)
    monkeypatch.setattr(parsed, "_LINE_BYTES", 0)
    by_lines = rewrite_html(data, url=url)
    assert by_lines.output == as_one.output
    assert by_lines.links == as_one.links
    assert by_lines.problems == as_one.problems
