"""Typical calls of the public API, checked with ``mypy --strict`` against the installed wheel
(tests/test_api_packaging.py). Nothing here runs on import: the calls are in functions."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING, Any

from bs4 import BeautifulSoup

import rewriter
from rewriter import DocumentResult, Link, MessageResult, Policy, find_links, rewrite, rewrite_tree

if TYPE_CHECKING:
    from typing_extensions import assert_type


def a_crawler(body: bytes, url: str, charset: str | None) -> bytes:
    result = rewrite(body, url=url, charset=charset, format="html")
    assert_type(result, DocumentResult)
    assert_type(result.text, str)
    return result.output


def a_message(path: pathlib.Path) -> list[str]:
    result = rewrite(path, url="https://example.org/", format="message")
    assert_type(result, MessageResult)
    return [part.content_type for part in result.parts]


def told_from_the_content(document: bytes | str) -> bytes:
    result = rewrite(document, url="https://example.org/", policy=Policy(rules="whatwg"))
    assert_type(result, DocumentResult | MessageResult)
    if isinstance(result, DocumentResult):
        return result.text.encode("utf-8")
    return result.output


def a_link_graph(page: bytes) -> list[str]:
    links = find_links(page, url="https://example.org/", format="css")
    assert_type(links, tuple[Link, ...])
    return [link.resolved for link in links if link.resolved is not None and link.status == "rewritten"]


def trees(text: str, lxml_tree: Any) -> tuple[str | None, str | None]:
    soup = BeautifulSoup(text, "html.parser")
    return (
        rewrite_tree(soup, url="https://example.org/").base,
        rewrite_tree(lxml_tree, base="https://example.org/", policy=rewriter.DEFAULT_POLICY).base,
    )


def urls() -> str:
    return rewriter.resolve("http://a/b/c/d;p?q", "../g", rules="rfc1808") + str(rewriter.parse("s3://b/k").path)
