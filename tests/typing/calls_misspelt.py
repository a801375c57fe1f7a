"""A misspelt keyword and a misspelt name: ``mypy --strict`` must refuse both
(tests/test_api_packaging.py). Nothing here runs on import."""

from __future__ import annotations

import rewriter


def misspelt(body: bytes) -> bytes:
    return rewriter.rewrite(body, base_url="https://example.org/").output


def rules_as_a_keyword(body: bytes) -> bytes:
    return rewriter.rewrite(body, url="https://example.org/", rules="whatwg").output


def a_misspelt_function(body: bytes) -> object:
    return rewriter.rewirte(body)
