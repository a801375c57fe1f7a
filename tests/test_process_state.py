"""The library changes no process-wide state: the cyclic garbage collector stays as the
caller has it while a document is searched."""

from __future__ import annotations

import gc

import pytest

from rewriter.html import rewrite_html


def test_the_garbage_collector_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> None:
        raise AssertionError("the library paused the garbage collector")

    monkeypatch.setattr(gc, "disable", refused)
    monkeypatch.setattr(gc, "enable", refused)
    result = rewrite_html(b'<a href="x.html">x</a><img srcset="a.png 1x">', url="https://example.org/")
    assert result.output == b'<a href="https://example.org/x.html">x</a><img srcset="https://example.org/a.png 1x">'
    assert gc.isenabled()
