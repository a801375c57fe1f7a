"""Pathological input runs in time linear in its size, and in flat memory when streamed.

Each case counts the operations of the engine on a pathological input P, never its time:
the calls of Python functions and of C functions (builtins, methods, the C extension's entry
points) that one rewrite makes, seen by ``sys.setprofile``. A count does not depend on the
machine's load, so the bound can be tight where a time's could not:

* growth: P at n and at n / f (f = 4, or 8 where a larger step separates linear from
  quadratic more cheaply) may make at most f**1.5 times as many calls: the geometric mean
  of linear (f) and quadratic (f**2), so 8x for f = 4.

What a count cannot see is the work inside one C call: the HTML tokenizer and tree builder,
the C extension's loops, ``bytes.find`` or a regular expression scanning to the end of the
page once per head. For most HTML and CSS cases that is all the work (their count does not
change with the input), so the count guards against a loop in Python that grows faster than
the input (as the MIME readers' and the inert ``<base>`` cases' do), and the time is
measured by ``benchmarks/bench_pathological.py``: it runs these cases with
``REWRITER_PATHOLOGICAL_TIMES=1``, which times each one too (CPU time, best of several rounds,
P small, P large and a benign input B of P's size in turns) and prints the growth in time and
the ratio to B beside the counts; nothing asserts a time. Every case runs in a forked child
with a time limit, so a regression that hangs fails the test instead of hanging the suite (the
limit is minutes: a guard, not a measure), and each case also runs once at the issue's size
and checks the output.

The MIME heading cases (parameters, RFC 2231 sections, RFC 2047 words) time four sizes,
1x, 2x, 4x and 8x, and report each doubling; the growth asserted is from 1x to 8x.

The mbox streaming cases run in a fresh interpreter, so that its peak resident size
measures the stream alone. ``REWRITER_SLOW_TESTS=1`` adds the full 2 GB stream. The mbox
of 100 messages with distinct 4 MB bases runs in a fresh interpreter too, which imports
the rewriter only: its whole peak resident size must stay under 150 MB.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import multiprocessing
import os
import re
import subprocess
import sys
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import rewriter
from rewriter.containers.mailbox import rewrite_mbox
from rewriter.css.stylesheet import rewrite_css
from rewriter.html.engine import rewrite_html
from rewriter.mime.message import rewrite_message
from rewriter.policy import Policy
from rewriter.run.executors import tune_allocator

pytestmark = pytest.mark.slow  # inputs of megabytes, each in a forked child: over a minute of CPU

T = TypeVar("T")

KB = 1 << 10
MB = 1 << 20
GB = 1 << 30
URL = "http://example.org/d/p.html"
BASE = b"http://example.org/d/"
SLOW = os.environ.get("REWRITER_SLOW_TESTS") == "1"
TIMES = os.environ.get("REWRITER_PATHOLOGICAL_TIMES") == "1"  # set by benchmarks/bench_pathological.py
TIME_LIMIT = 180.0  # seconds a forked case may run before it counts as hung (not a timing assertion)
FLAT_BUDGET = 300 * MB  # how far a 2 GB stream may raise the peak resident size (the issue: far below its size)

# --------------------------------------------------------------------------
# Running and counting
# --------------------------------------------------------------------------


def _guarded(work: Callable[[], T], limit: float = TIME_LIMIT) -> T:
    """*work*'s result, computed in a forked child that is killed after *limit* seconds.

    An assertion that fails in the child (or any exception, or the child's death) is
    raised here as an AssertionError with the child's traceback.
    """
    if "fork" not in multiprocessing.get_all_start_methods():
        return work()  # no fork (Windows, some macOS setups): no hang guard
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)

    def child() -> None:
        gc.freeze()  # the parent's objects: no collection walks them during the timings
        # The allocator as the command line sets it for its runs: without it, glibc gives a
        # buffer of a few megabytes back to the system when it is freed and the next call
        # faults its pages in again, so a large input's time counted page faults a small
        # one's did not (the <style> case: 4x the input at 3.2 MB took 8x the time; 4.3x set).
        tune_allocator()
        try:
            outcome: tuple[str, Any] = ("ok", work())
        except BaseException as error:
            outcome = ("error", "".join(traceback.format_exception(type(error), error, error.__traceback__)))
        sender.send(outcome)

    process = context.Process(target=child, daemon=True)
    process.start()
    sender.close()
    try:
        if not receiver.poll(limit):
            raise AssertionError(f"did not finish within {limit:.0f} s: more than linear time, or a hang")
        try:
            status, value = receiver.recv()
        except EOFError:
            process.join(5)
            raise AssertionError(
                f"the child died (exit code {process.exitcode}): a crash, such as a stack overflow"
            ) from None
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        receiver.close()
    if status == "error":
        raise AssertionError(f"in the forked child:\n{value}")
    return value


def _operations(run: Callable[[], object]) -> int:
    """How many Python and C functions one call of *run* calls (``sys.setprofile``'s "call"
    and "c_call" events), after a first call that fills the caches."""
    run()
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return count


def _measured(runs: list[Callable[[], object]], figures: dict[str, Any]) -> dict[str, Any]:
    """*figures* with the operations of each of *runs* (the last: the benign input), and, for the
    benchmark, their CPU times; the growth is from the first run to the second-to-last."""
    counts = [_operations(run) for run in runs]
    figures["growth"] = round(counts[-2] / max(counts[0], 1), 2)
    figures["operations"] = counts
    figures["vs_baseline"] = round(counts[-2] / max(counts[-1], 1), 3)
    if TIMES:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        from bench_pathological import best_of  # the timing lives with the benchmark

        times = best_of(*runs)
        figures["time_growth"] = round(times[-2] / max(times[0], 1e-6), 2)
        figures["time_vs_baseline"] = round(times[-2] / max(times[-1], 1e-6), 3)
        figures["seconds"] = [round(t, 4) for t in times]
    return figures


def _scaling(
    label: str,
    run: Callable[[bytes], object],
    make: Callable[[int], bytes],
    n: int,
    baseline: Callable[[int], bytes],
    *,
    factor: int = 4,
) -> dict[str, Any]:
    """Count the operations of *run* on ``make(n // factor)``, ``make(n)`` and a benign input of
    the size of ``make(n)``; assert linear growth."""
    small, large = make(n // factor), make(n)
    benign = baseline(len(large))
    step = len(large) / len(small)
    figures = {"case": label, "bytes": len(large), "step": round(step, 2)}
    _measured([lambda: run(small), lambda: run(large), lambda: run(benign)], figures)
    return _assert_linear(label, step, figures)


def _assert_linear(label: str, step: float, figures: dict[str, Any]) -> dict[str, Any]:
    """*figures*, once their growth for *step* times the input is below the geometric mean
    of linear and quadratic."""
    assert figures["growth"] <= step**1.5, (
        f"{label}: {step:.1f}x the input made {figures['growth']}x the calls "
        f"(linear: {step:.1f}x, quadratic: {step**2:.0f}x); {figures}"
    )
    return figures


def test_the_count_tells_linear_from_quadratic() -> None:
    """The measure itself: a loop that walks the rest of its input at each step fails it."""

    def linear(data: bytes) -> int:
        return sum(len(chunk) for chunk in data.split(b" "))

    def quadratic(data: bytes) -> int:
        words = data.split(b" ")
        return sum(len(later) for index in range(len(words)) for later in words[index:])

    assert _scaling("linear", linear, lambda n: b"w " * (n // 2), 800, lambda n: b" " * n)["growth"] <= 4.1
    with pytest.raises(AssertionError, match="quadratic"):
        _scaling("quadratic", quadratic, lambda n: b"w " * (n // 2), 800, lambda n: b" " * n)


def _report(figures: dict[str, Any]) -> None:
    print(json.dumps(figures))  # shown with -rP: the measured ratios


def _fill(unit: bytes, n: int) -> bytes:
    """*unit* repeated to exactly *n* bytes."""
    return (unit * (n // len(unit) + 1))[:n]


# --------------------------------------------------------------------------
# Benign baselines
# --------------------------------------------------------------------------

_PAGE_HEAD = b"<!DOCTYPE html>\n<html><head><title>A page</title></head><body>\n"
_PAGE_UNIT = b'<p>Some ordinary text with <a href="x.html">a link</a> in it.</p>\n'
_LIST_UNIT = b'<li><a href="x.html">Page</a></li>\n'  # a directory listing: a link every 36 bytes
_PAGE_TAIL = b"</body></html>\n"


def _page(n: int, unit: bytes = _PAGE_UNIT) -> bytes:
    """A page of *n* bytes: paragraphs with a relative link each, padded with spaces."""
    room = n - len(_PAGE_HEAD) - len(_PAGE_TAIL)
    count = room // len(unit)
    return _PAGE_HEAD + unit * count + b" " * (room - count * len(unit)) + _PAGE_TAIL


def _link_list(n: int) -> bytes:
    return _page(n, _LIST_UNIT)


_SHEET_UNIT = b".c { background: url(x.png) no-repeat; color: red }\n"


def _stylesheet(n: int) -> bytes:
    count = n // len(_SHEET_UNIT)
    return _SHEET_UNIT * count + b" " * (n - count * len(_SHEET_UNIT))


_LOCATION = b"Content-Location: http://example.org/d/\r\n"
_MIME_BOUNDARY = b"=_boundary_42"
_MULTIPART_HEAD = (
    b"MIME-Version: 1.0\r\n" + _LOCATION + b'Content-Type: multipart/mixed; boundary="' + _MIME_BOUNDARY + b'"\r\n\r\n'
)
_PART_HTML = (
    b"<html><head><title>A part</title></head><body><p>Dear reader, this is an ordinary message "
    b'with <a href="x.html">a link</a> and a picture <img src="i.png" alt="a picture"> in it, '
    b"and some more text so that the part has the length of a short real message. Nothing in it "
    b"is unusual: a paragraph, a link, an image, and a signature.</p><p>Regards</p></body></html>"
)
_PART = b"--" + _MIME_BOUNDARY + b"\r\nContent-Type: text/html; charset=utf-8\r\n\r\n" + _PART_HTML + b"\r\n"
_PART_REWRITTEN = _PART.replace(b'"x.html"', b'"' + BASE + b'x.html"').replace(b'"i.png"', b'"' + BASE + b'i.png"')
_CLOSE = b"--" + _MIME_BOUNDARY + b"--\r\n"


def _flat_multipart(n: int) -> bytes:
    """A multipart/mixed of *n* bytes: HTML parts with two links each, closed; the
    preamble (which no reader shows) pads it."""
    count = max(1, (n - len(_MULTIPART_HEAD) - len(_CLOSE)) // len(_PART))
    padding = max(0, n - len(_MULTIPART_HEAD) - len(_CLOSE) - count * len(_PART))
    preamble = b"x" * padding + b"\r\n" if padding else b""
    return _MULTIPART_HEAD + preamble + _PART * count + _CLOSE


def _html(data: bytes) -> object:
    return rewrite_html(data, url=URL)


def _css(data: bytes) -> object:
    return rewrite_css(data, url=URL)


# --------------------------------------------------------------------------
# HTML: 10 MB of "<a href=" with no closing quote
# --------------------------------------------------------------------------

_LINK_FIRST = b"<p><a href=x.html>ok</a></p>"
_LINK_FIRST_REWRITTEN = b"<p><a href=" + BASE + b"x.html>ok</a></p>"


@pytest.mark.parametrize("unit", [b'<a href="', b"<a href='", b"<a href="], ids=["double", "single", "unquoted"])
def test_attribute_without_closing_quote(unit: bytes) -> None:
    """10 MB of ``<a href="`` (or ``'``, or unquoted with no ``>``): one start tag that
    the end of the file cuts off, so the tokenizer drops it; the link before it stays."""

    def make(n: int) -> bytes:
        return _LINK_FIRST + _fill(unit, n - len(_LINK_FIRST))

    def check() -> dict[str, Any]:
        figures = _scaling(f"unclosed {unit!r}", _html, make, 2 * MB, _page)
        data = make(10 * MB)
        result = rewrite_html(data, url=URL)
        assert result.output == _LINK_FIRST_REWRITTEN + data[len(_LINK_FIRST) :]
        assert [(link.original, link.status) for link in result.links] == [("x.html", "rewritten")]
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# HTML: 100,000 nested <svg>
# --------------------------------------------------------------------------


def _nested_svg(depth: int) -> bytes:
    return b"<p><a href=x.html>a</a>" + b"<svg>" * depth + b"<image href=i.png /><a href=y.html>y</a>"


def test_nested_svg() -> None:
    """100,000 nested ``<svg>``: no RecursionError, no crash, and the links inside found."""

    def check() -> dict[str, Any]:
        figures = _scaling("nested <svg>", _html, _nested_svg, 100_000, _page)
        result = rewrite_html(_nested_svg(100_000), url=URL)
        expected = (
            b"<p><a href=" + BASE + b"x.html>a</a>" + b"<svg>" * 100_000 + b"<image href=" + BASE + b"i.png />"
            b"<a href=" + BASE + b"y.html>y</a>"
        )
        assert result.output == expected
        assert [(link.element, link.original, link.status) for link in result.links] == [
            ("a", "x.html", "rewritten"),
            ("image", "i.png", "rewritten"),
            ("a", "y.html", "rewritten"),
        ]
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# HTML: 1 MB attribute values
# --------------------------------------------------------------------------


def _long_href(n: int) -> bytes:
    return b'<a href="' + _fill(b"seg/", n) + b'">x</a>'


def _dot_segments(n: int) -> bytes:
    return b'<a href="' + b"x/../" * (n // 5) + b'g">x</a>'


def _srcset(n: int) -> bytes:
    return b'<img srcset="' + b"i.png 1x, " * (n // 10) + b'">'


def _style(n: int) -> bytes:
    return b'<div style="' + b"background:url(i.png);" * (n // 22) + b'">x</div>'


def _references(n: int) -> bytes:
    return b'<a href="' + b"a&amp;" * (n // 6) + b'">x</a>'


_BACKTICK_BASE = b"<base href='/x`y/'>"


def _style_needing_quotes(n: int) -> bytes:
    """An unquoted style attribute whose rewritten URLs need quotes (the base holds a
    backtick, which ends an unquoted attribute value): the whole value is rewritten."""
    return _BACKTICK_BASE + b"<div style=" + b"b:url(i.png);" * (n // 13) + b">x</div>"


def _expected_attribute(case: str, data: bytes) -> bytes:
    if case in ("href", "references"):
        return data.replace(b'href="', b'href="' + BASE, 1)
    if case.startswith("dot-segments"):
        return b'<a href="' + BASE + b'g">x</a>'
    if case in ("srcset", "style"):
        return data.replace(b"i.png", BASE + b"i.png")
    assert case == "style-needing-quotes"
    body = data[len(_BACKTICK_BASE) + len(b"<div style=") : -len(b">x</div>")]
    new_base = b"http://example.org/x`y/"
    return b"<base href='" + new_base + b"'><div style=\"" + body.replace(b"i.png", new_base + b"i.png") + b'">x</div>'


@pytest.mark.parametrize(
    ("case", "make", "n", "factor", "policy"),
    [
        pytest.param("href", _long_href, MB, 4, Policy(), id="href"),
        pytest.param("dot-segments", _dot_segments, MB, 4, Policy(), id="dot-segments-rfc3986"),
        pytest.param("dot-segments", _dot_segments, MB, 4, Policy(rules="whatwg"), id="dot-segments-whatwg"),
        pytest.param(
            "dot-segments",
            _dot_segments,
            320 * KB,
            8,
            Policy(rules="rfc2396"),
            id="dot-segments-rfc2396",
        ),
        pytest.param(
            "dot-segments",
            _dot_segments,
            320 * KB,
            8,
            Policy(rules="rfc1808"),
            id="dot-segments-rfc1808",
        ),
        pytest.param("srcset", _srcset, MB, 4, Policy(), id="srcset"),
        pytest.param("style", _style, MB, 4, Policy(), id="style"),
        pytest.param("references", _references, MB, 4, Policy(), id="character-references"),
        pytest.param(
            "style-needing-quotes",
            _style_needing_quotes,
            256 * KB,
            8,
            Policy(),
            id="unquoted-style-needing-quotes",
        ),
    ],
)
def test_megabyte_attribute_value(case: str, make: Callable[[int], bytes], n: int, factor: int, policy: Policy) -> None:
    """1 MB attribute values: a long path, dot segments under each rule set, a srcset of
    100,000 candidates, a style attribute of 45,000 url()s, character references."""

    def run(data: bytes) -> object:
        return rewrite_html(data, url=URL, policy=policy)

    def check() -> dict[str, Any]:
        figures = _scaling(f"{case} ({policy.rules})", run, make, n, _page, factor=factor)
        data = make(MB)
        result = run(data)
        assert result.output == _expected_attribute(case, data)  # type: ignore[attr-defined]
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# HTML: a million <base> elements
# --------------------------------------------------------------------------


def _bases(count: int) -> bytes:
    return b"<base href=/b/>" + b"<base href=a>" * count + b"<a href=x.html>x</a>"


def test_million_base_elements() -> None:
    """A million ``<base>`` elements: only the first counts; each other one is an
    ordinary link, resolved against it."""

    def check() -> dict[str, Any]:
        figures = _scaling("<base> elements", _html, _bases, 50_000, _link_list)
        result = rewrite_html(_bases(1_000_000), url=URL)
        assert (result.base, result.layer, result.problems) == ("http://example.org/b/", "base-element", ())
        assert result.output == (
            b"<base href=http://example.org/b/>"
            + b"<base href=http://example.org/b/a>" * 1_000_000
            + b"<a href=http://example.org/b/x.html>x</a>"
        )
        return figures

    _report(_guarded(check))


def _inert_bases(wrapper: str) -> Callable[[int], bytes]:
    def make(count: int) -> bytes:
        return f"<{wrapper}><base href=/n/></{wrapper}>".encode() * count + b"<base href=/b/><a href=x.html>x</a>"

    return make


# Each <noscript> is read apart, as a browser with scripting off reads it: one fragment parse
# per element, a fixed cost whatever its length, so a page made of nothing but <noscript>s
# costs more than a link list of its size, linearly in their number.
@pytest.mark.parametrize(
    ("wrapper", "count"),
    [pytest.param("template", 25_000, id="template"), pytest.param("noscript", 600, id="noscript")],
)
def test_many_inert_base_elements(wrapper: str, count: int) -> None:
    """Many ``<base>`` elements that cannot be the document's base (in ``<template>``
    content, or in ``<noscript>``) before the one that is."""
    make = _inert_bases(wrapper)

    def check() -> dict[str, Any]:
        figures = _scaling(f"<base> in <{wrapper}>", _html, make, count, _link_list)
        result = rewrite_html(make(count), url=URL)
        assert (result.base, result.layer) == ("http://example.org/b/", "base-element")
        assert result.output.endswith(b"<a href=http://example.org/b/x.html>x</a>")
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# CSS: 100,000 unclosed url(
# --------------------------------------------------------------------------

_SHEET_FIRST = b"p { background: url(ok.png) }\n"
_SHEET_FIRST_REWRITTEN = b"p { background: url(" + BASE + b"ok.png) }\n"


@pytest.mark.parametrize(
    ("unit", "in_html"),
    [
        pytest.param(b"a{b:url(", False, id="url("),
        pytest.param(b"a{b:url(x y ", False, id="bad-url"),
        pytest.param(b"a{b:image-set(", False, id="image-set("),
        pytest.param(b"a{b:src(", False, id="src("),
        pytest.param(b"a{b:url(", True, id="style-element"),
    ],
)
def test_unclosed_css_urls(unit: bytes, in_html: bool) -> None:
    """100,000 unclosed ``url(`` (a bad-url token to the end of the sheet), and the same
    with ``image-set(`` and ``src(``, in a style sheet and in an HTML ``<style>``."""
    prefix = (b"<style>" if in_html else b"") + _SHEET_FIRST
    run, baseline = (_html, _page) if in_html else (_css, _stylesheet)

    def make(count: int) -> bytes:
        return prefix + unit * count

    # In a <style>, 4x the input from 200 KB to 800 KB measured 3.7-5.5x the time even with the
    # allocator set (see _guarded): the text still fits the processor's caches at 200 KB. From
    # 800 KB to 3.2 MB it is 4.1x.
    n = 400_000 if in_html else 100_000

    def check() -> dict[str, Any]:
        figures = _scaling(f"unclosed {unit!r}", run, make, n, baseline)
        data = make(100_000)
        result = run(data)
        expected = data.replace(_SHEET_FIRST, _SHEET_FIRST_REWRITTEN, 1)
        assert result.output == expected  # type: ignore[attr-defined]
        assert [(link.original, link.status) for link in result.links] == [("ok.png", "rewritten")]  # type: ignore[attr-defined]
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# HTML: 100,000 conditional-comment heads that never end
# --------------------------------------------------------------------------


def test_conditional_comment_heads_without_end() -> None:
    """100,000 ``<!--[if IE]>`` and no ``<![endif]-->``: each head's end is looked for
    once, not once per head (the whole rest is one comment, with no links)."""

    def make(count: int) -> bytes:
        return _LINK_FIRST + b"<!--[if IE]>" * count

    def check() -> dict[str, Any]:
        figures = _scaling("conditional heads", _html, make, 100_000, _page)
        data = make(100_000)
        result = rewrite_html(data, url=URL)
        assert result.output == _LINK_FIRST_REWRITTEN + data[len(_LINK_FIRST) :]
        assert [(link.original, link.status) for link in result.links] == [("x.html", "rewritten")]
        return figures

    _report(_guarded(check))


@pytest.mark.parametrize("head", [b"<!--[if IE", b"<!--[if IE]><a href=y>", b"<p title='<!--[if IE]><a href=y>'>"])
def test_conditional_comment_heads_without_bracket_or_end(head: bytes) -> None:
    """Heads with no "]>" (each was read to the end of the page, once per head: 100,000
    of them took 27 s), heads with markup and no end (each comment's data was copied to
    the end of the page), and lookalikes in attribute values: linear."""

    def make(count: int) -> bytes:
        return _LINK_FIRST + head * count

    def check() -> dict[str, Any]:
        figures = _scaling(f"conditional {head[:16]!r}", _html, make, 100_000, _page)
        data = make(20_000)
        result = rewrite_html(data, url=URL)
        assert result.output.startswith(_LINK_FIRST_REWRITTEN)
        assert result.output[len(_LINK_FIRST_REWRITTEN) :] == data[len(_LINK_FIRST) :]
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# MIME: nesting 10,000 deep
# --------------------------------------------------------------------------


def _nested_multipart(depth: int, rewritten: int = 0) -> bytes:
    """*depth* nested multipart/mixed, each level an HTML part and the next level; the
    HTML of the first *rewritten* levels with its link made absolute."""
    heads: list[bytes] = []
    tails: list[bytes] = []
    for level in range(depth):
        href = BASE + b"x.html" if level < rewritten else b"x.html"
        heads.append(
            b'Content-Type: multipart/mixed; boundary="=_%d"\r\n\r\n--=_%d\r\n'
            b'Content-Type: text/html\r\n\r\n<a href="%s">%d</a>\r\n--=_%d\r\n' % (level, level, href, level, level)
        )
        tails.append(b"\r\n--=_%d--\r\n" % level)
    inner = b'Content-Type: text/html\r\n\r\n<a href="x.html">deepest</a>'
    return _LOCATION + b"".join(heads) + inner + b"".join(reversed(tails))


def _nested_messages(depth: int) -> bytes:
    """*depth* nested message/rfc822, an HTML part innermost."""
    inner = b'Content-Type: text/html\r\n\r\n<a href="x.html">deepest</a>'
    return _LOCATION + b"Content-Type: message/rfc822\r\n\r\n" * depth + inner


def _message(data: bytes) -> object:
    return rewrite_message(data)


@pytest.mark.parametrize("kind", ["multipart", "message-rfc822"])
def test_mime_nested_10000_deep(kind: str) -> None:
    """10,000 levels: no RecursionError; the depth limit is reported, the levels within
    it are rewritten, and every byte beyond it is kept."""
    make = _nested_multipart if kind == "multipart" else _nested_messages

    def check() -> dict[str, Any]:
        figures = _scaling(f"nested {kind}", _message, make, 10_000, _flat_multipart)
        data = make(10_000)
        result = rewrite_message(data)
        deep = [problem for problem in result.problems if re.search(r"nested more than \d+ levels deep", problem)]
        assert deep, result.problems  # on the entities at the limit: a part, and the level it stops
        assert len(result.parts) < 1_000  # the levels beyond the limit are not read
        rewritten = sum(1 for part in result.parts if part.action == "rewritten")
        if kind == "multipart":
            assert 50 <= rewritten < 1_000
            assert result.output == _nested_multipart(10_000, rewritten)
        else:
            assert rewritten == 0
            assert result.output == data
        figures["levels_rewritten"] = rewritten
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# MIME: a boundary that never closes
# --------------------------------------------------------------------------


def _unclosed_parts(n: int) -> bytes:
    """Many HTML parts of about 600 bytes, and no closing delimiter."""
    return _MULTIPART_HEAD + _PART * max(1, (n - len(_MULTIPART_HEAD)) // len(_PART))


_LOOKALIKE = b"--" + _MIME_BOUNDARY + b"x: a line that starts like a delimiter and is not one\r\n"


def _lookalikes(n: int) -> bytes:
    """One text part of lines that start like delimiter lines, and no closing delimiter."""
    head = _MULTIPART_HEAD + b"--" + _MIME_BOUNDARY + b"\r\nContent-Type: text/plain\r\n\r\n"
    return head + _LOOKALIKE * max(1, (n - len(head)) // len(_LOOKALIKE))


def _no_delimiter(n: int) -> bytes:
    """A multipart whose boundary never occurs at all."""
    return _MULTIPART_HEAD + _fill(b"Just text, with no delimiter line in it.\r\n", n - len(_MULTIPART_HEAD))


@pytest.mark.parametrize("kind", ["parts", "lookalikes", "no-delimiter"])
def test_mime_boundary_never_closes(kind: str) -> None:
    """5 MB of multipart whose closing delimiter never comes: the parts that are there
    are found and rewritten, the rest is kept byte for byte, and the problem reported."""
    make = {"parts": _unclosed_parts, "lookalikes": _lookalikes, "no-delimiter": _no_delimiter}[kind]

    def check() -> dict[str, Any]:
        figures = _scaling(f"unclosed boundary: {kind}", _message, make, MB, _flat_multipart)
        data = make(5 * MB)
        result = rewrite_message(data)
        actions = [part.action for part in result.parts]
        if kind == "parts":
            count = data.count(b"--" + _MIME_BOUNDARY + b"\r\n")
            assert actions == ["container"] + ["rewritten"] * count
            assert result.output == _MULTIPART_HEAD + _PART_REWRITTEN * count
            assert result.problems == (f"part 1: the closing delimiter --{_MIME_BOUNDARY.decode()}-- is missing",)
        elif kind == "lookalikes":
            assert actions == ["container", "other"]
            assert result.output == data
            assert result.problems == (f"part 1: the closing delimiter --{_MIME_BOUNDARY.decode()}-- is missing",)
        else:
            assert actions == ["container"]
            assert result.output == data
            assert len(result.problems) == 1
            assert "no part delimited by the boundary" in result.problems[0]
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# MIME: a 1 MB Content-Location
# --------------------------------------------------------------------------


def _located(value: bytes) -> bytes:
    return (
        _LOCATION + b'Content-Type: multipart/related; boundary="=_b"\r\n\r\n--=_b\r\nContent-Type: text/html\r\n'
        b"Content-Location: " + value + b'\r\n\r\n<a href="x.html">x</a>\r\n--=_b--\r\n'
    )


def _long_location(n: int) -> bytes:
    return _located(_fill(b"seg/", n) + b"/")


def _opaque_dotted_location(n: int) -> bytes:
    """An absolute, opaque Content-Location full of dot segments (no base: it is opaque)."""
    return _located(b"foo:a" + b"/x/.." * (n // 5))


@pytest.mark.parametrize(
    ("kind", "n"),
    [
        pytest.param("hierarchical", MB, id="hierarchical"),
        pytest.param(
            "opaque-dot-segments",
            320 * KB,
            id="opaque-dot-segments",
        ),
    ],
)
def test_mime_megabyte_content_location(kind: str, n: int) -> None:
    """A 1 MB Content-Location heading field, resolved against the enclosing base."""
    make = _long_location if kind == "hierarchical" else _opaque_dotted_location

    def check() -> dict[str, Any]:
        figures = _scaling(f"Content-Location: {kind}", _message, make, n, _flat_multipart, factor=8)
        data = make(MB)
        result = rewrite_message(data)
        if kind == "hierarchical":
            location = data.split(b"Content-Location: ")[2].split(b"\r\n")[0]
            new = b'<a href="' + BASE + location + b'x.html">'
        else:
            new = b'<a href="' + BASE + b'x.html">'  # an opaque URL is no base
        assert result.output == data.replace(b'<a href="x.html">', new)
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# MIME: headings of a megabyte (parameters, RFC 2231 sections, RFC 2047 words)
# --------------------------------------------------------------------------


def _scaling_steps(
    label: str, run: Callable[[bytes], object], make: Callable[[int], bytes], n: int, baseline: Callable[[int], bytes]
) -> dict[str, Any]:
    """:func:`_scaling` at four sizes: the operations of *run* on ``make(n // 8)``,
    ``make(n // 4)``, ``make(n // 2)`` and ``make(n)`` (1x, 2x, 4x, 8x) and on a benign input
    of the size of ``make(n)``. The 8x step must stay below the geometric mean of linear and
    quadratic growth (8**1.5, 23x; quadratic: 64x); every doubling is reported."""
    inputs = [make(n // factor) for factor in (8, 4, 2, 1)]
    benign = baseline(len(inputs[-1]))
    runs = [lambda data=data: run(data) for data in [*inputs, benign]]
    step = len(inputs[-1]) / len(inputs[0])
    figures: dict[str, Any] = {"case": label, "bytes": [len(data) for data in inputs], "step": round(step, 2)}
    _measured(runs, figures)
    counts = figures["operations"][:-1]
    figures["doublings"] = [round(later / max(earlier, 1), 2) for earlier, later in itertools.pairwise(counts)]
    return _assert_linear(label, step, figures)


_HTML_BODY = b'\r\n\r\n<a href="x.html">x</a>'
_HTML_BODY_REWRITTEN = b'\r\n\r\n<a href="' + BASE + b'x.html">x</a>'


def _html_part(fields: bytes) -> bytes:
    """A text/html message with the base of _LOCATION, after its heading *fields*."""
    return _LOCATION + fields + _HTML_BODY


def _many_parameters(n: int) -> bytes:
    """The issue's case: a Content-Type of n bytes of ``; a=b``."""
    return _html_part(b"Content-Type: text/html; charset=utf-8" + b"; a=b" * (n // 5))


def _boundary_after_parameters(n: int) -> bytes:
    """A multipart whose boundary comes after n bytes of ``; a=b``."""
    return (
        _LOCATION + b"Content-Type: multipart/mixed" + b"; a=b" * (n // 5) + b'; boundary="=_b"\r\n\r\n'
        b"--=_b\r\nContent-Type: text/html" + _HTML_BODY + b"\r\n--=_b--\r\n"
    )


def _boundary_sections(n: int) -> bytes:
    """A boundary given in n / 16 RFC 2231 sections (``boundary*1*=%62``, ...): the body's
    delimiter lines hold the whole boundary."""
    count = n // 16
    boundary = b"=_" + b"b" * count
    sections = b"".join(b"; boundary*%d*=%%62" % number for number in range(1, count + 1))
    return (
        _LOCATION + b"Content-Type: multipart/mixed; boundary*0*=''=_" + sections + b"\r\n\r\n"
        b"--" + boundary + b"\r\nContent-Type: text/html" + _HTML_BODY + b"\r\n--" + boundary + b"--\r\n"
    )


def _quoted_semicolons(n: int) -> bytes:
    """One quoted parameter of n ``;``: the email package counted the quotes from the
    start of the parameter again at each of them."""
    return _html_part(b'Content-Type: text/html; charset=utf-8; x="' + b";" * n + b'"')


def _unclosed_quote(n: int) -> bytes:
    """A quoted string that never closes: the rest of the field is one parameter."""
    return _html_part(b'Content-Type: text/html; charset=utf-8; x="' + b"a;" * (n // 2))


_WORDS_LOCATION = b"Content-Type: text/html\r\nContent-Location: =?utf-8?q?http://example.org/d/?="


def _encoded_location(n: int) -> bytes:
    """A Content-Location of n bytes of RFC 2047 words (decoded: http://example.org/d/aaa...)."""
    return _WORDS_LOCATION + b"=?utf-8?q?a?=" * (n // 13) + _HTML_BODY


def _unended_words(n: int) -> bytes:
    """A Content-Location of n bytes of encoded-word openings with no ``?=`` after them:
    the email package's expression looked for the end from each of them."""
    return _WORDS_LOCATION + b"=?utf-8?q?a" * (n // 11) + _HTML_BODY


def _encoded_subject(n: int) -> bytes:
    return _html_part(b"Content-Type: text/html\r\nSubject: " + b"=?utf-8?q?a?= " * (n // 14))


def _many_fields(n: int) -> bytes:
    return _html_part(b"Content-Type: text/html\r\n" + b"X-A: b\r\n" * (n // 8))


def _folded_field(n: int) -> bytes:
    return _html_part(b"Content-Type: text/html\r\nX-A: b" + b"\r\n b" * (n // 4))


_HEADING_CASES = {
    "parameters": (_many_parameters, 1600 * KB),
    "boundary-after-parameters": (_boundary_after_parameters, 800 * KB),
    "boundary-sections": (_boundary_sections, 800 * KB),
    "quoted-semicolons": (_quoted_semicolons, 800 * KB),
    "unclosed-quote": (_unclosed_quote, 800 * KB),
    "rfc2047-location": (_encoded_location, 800 * KB),
    "rfc2047-unended": (_unended_words, 800 * KB),
    "rfc2047-subject": (_encoded_subject, 800 * KB),
    "many-fields": (_many_fields, 800 * KB),
    "folded-field": (_folded_field, 800 * KB),
}


@pytest.mark.parametrize("case", list(_HEADING_CASES))
def test_mime_megabyte_heading(case: str) -> None:
    """A heading of a megabyte or more read in linear time (issue 18, point 4): a message
    with 1.6 MB of ``; a=b`` took 8.9 s (77x the time of its 1x, 45x a flat multipart);
    parameters, RFC 2231 sections and RFC 2047 words each at 1x, 2x, 4x and 8x. The part
    is rewritten against the base its heading gives."""
    make, n = _HEADING_CASES[case]

    def check() -> dict[str, Any]:
        figures = _scaling_steps(f"heading: {case}", _message, make, n, _flat_multipart)
        data = make(n)
        result = rewrite_message(data)
        assert result.problems == (), result.problems
        expected_types = ["multipart/mixed", "text/html"] if case.startswith("boundary") else ["text/html"]
        assert [part.content_type for part in result.parts] == expected_types
        assert [part.action for part in result.parts][-1] == "rewritten"
        assert result.parts[-1].base is not None and result.parts[-1].base.startswith("http://example.org/d/")
        assert result.output == data.replace(_HTML_BODY, _HTML_BODY_REWRITTEN)
        return figures

    _report(_guarded(check))


def _unpack_case(n: int) -> bytes:
    """A multipart/related whose start parameter comes after n / 3 bytes of ``; a=b``, an
    image named by n / 3 bytes of RFC 2231 sections and by n / 3 bytes of RFC 2047 words
    (Content-Disposition's filename wins), linked to by its Content-ID."""
    third = n // 3
    sections = b"".join(b"; filename*%d*=%%61" % number for number in range(1, third // 19 + 1))
    words = b"=?utf-8?q?a?= " * (third // 14)
    return (
        _LOCATION
        + b"Content-Type: multipart/related"
        + b"; a=b" * (third // 5)
        + b'; start="<root>"; boundary=b\r\n\r\n'
        b"--b\r\nContent-Type: text/html\r\nContent-ID: <root>\r\n\r\n<img src=cid:image>\r\n"
        b'--b\r\nContent-ID: <image>\r\nContent-Type: image/png; name="' + words + b'"\r\n'
        b"Content-Disposition: attachment; filename*0*=utf-8''i" + sections + b"\r\n\r\nPNG\r\n--b--\r\n"
    )


def test_unpack_megabyte_heading_parameters(tmp_path: Path) -> None:
    """unpack reads start, name and filename with the same linear reader."""
    from rewriter.bundle.unpack import unpack_message

    folders = iter(range(1_000_000))

    def run(data: bytes) -> object:
        return unpack_message(data, tmp_path / f"out-{next(folders)}")

    def check() -> dict[str, Any]:
        figures = _scaling_steps("unpack heading", run, _unpack_case, 800 * KB, _flat_multipart)
        result = run(_unpack_case(800 * KB))
        assert result.root == "index.html", result
        image = result.parts[1]
        assert image.filename == "i" + "a" * (800 * KB // 3 // 19)
        assert (result.folder / "index.html").read_bytes() == b"<img src=" + image.file.encode() + b">"
        return figures

    _report(_guarded(check))


# --------------------------------------------------------------------------
# mbox: a 2 GB file without newlines, streamed
# --------------------------------------------------------------------------

_FROM = b"From someone@example.org Sat Jan  1 00:00:00 2000\n"
_GIANT_HEAD = (
    _FROM + b"Content-Type: text/html\nContent-Location: http://example.org/d/\n\n<!DOCTYPE html><html><body><p>"
)


class _Synthetic:
    """A read-only byte stream of *size* bytes made up as it is read: *head*, then *unit*
    repeated. It allocates one read's worth at a time, and one only for a one-byte unit,
    so that the peak resident size is the reader's."""

    def __init__(self, head: bytes, size: int, unit: bytes = b"x") -> None:
        self.head, self.size, self.unit = head, size, unit
        self.position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = self.size - self.position
        n = min(n, self.size - self.position)
        if n <= 0:
            return b""
        start = self.position
        self.position += n
        piece = self.head[start : start + n] if start < len(self.head) else b""
        rest = n - len(piece)
        if not rest:
            return piece
        if len(self.unit) == 1:
            tail = self.unit * rest
        else:
            phase = (start + len(piece) - len(self.head)) % len(self.unit)
            tail = (self.unit * ((phase + rest) // len(self.unit) + 1))[phase : phase + rest]
        return piece + tail if piece else tail


class _Comparing:
    """A write-only sink that keeps nothing: it compares what it is given with *expected*
    (a stream), a megabyte at a time, and counts the bytes."""

    def __init__(self, expected: _Synthetic) -> None:
        self.expected = expected
        self.written = 0
        self.mismatch: int | None = None  # the offset of the first differing byte

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        for offset in range(0, len(data), MB):
            window = view[offset : offset + MB]
            if self.mismatch is None and window != self.expected.read(len(window)):
                self.mismatch = self.written + offset
        self.written += len(data)
        return len(data)


class _Hashing:
    """A write-only sink that keeps nothing but a digest and a count."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.written += len(data)
        return len(data)


def _peak_resident() -> int:
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB on Linux


def _cap_address_space(headroom: int) -> None:
    """Let this process map at most *headroom* more bytes: a runaway fails with a
    MemoryError at once instead of taking the machine's memory (Linux only)."""
    import resource

    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return
    size = re.search(r"VmSize:\s+(\d+) kB", status)
    if size is not None:
        limit = int(size.group(1)) * 1024 + headroom
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _stream_child(shape: str, size: int, max_message: int | None = None) -> dict[str, Any]:
    """Run in a fresh interpreter: stream a synthetic mbox through rewrite_mbox and say
    how far the peak resident size rose. *shape*: "giant-message" (a From_ line, a
    heading, then *size* bytes of HTML without a newline), "no-newline" (``From `` and
    *size* bytes with no newline at all) or "many-messages" (1 MB messages, *size* bytes)."""
    _cap_address_space(8 * FLAT_BUDGET)
    before = _peak_resident()
    error = None
    reports: list[tuple[int, bool, int, tuple[str, ...]]] = []
    count = 1  # messages in the stream
    if shape == "many-messages":
        body = b"<p><a href=x.html>x</a>" + b"y" * (MB - 200) + b"</p>\n"
        message = _FROM + b"Content-Type: text/html\nContent-Location: http://example.org/d/\n\n" + body
        count = size // len(message)
        source = _Synthetic(b"", count * len(message), message)
        sink: _Comparing | _Hashing = _Hashing()
        expected = hashlib.sha256()
        rewritten = message.replace(b"href=x.html", b"href=" + BASE + b"x.html")
        for _ in range(count):
            expected.update(rewritten)
    else:
        head = _GIANT_HEAD if shape == "giant-message" else b"From "
        source = _Synthetic(head, len(head) + size)
        sink = _Comparing(_Synthetic(head, len(head) + size))
    try:
        limits = {} if max_message is None else {"max_message": max_message}
        for report in rewrite_mbox(source, sink, **limits):  # type: ignore[arg-type]
            reports.append((report.size, report.changed, report.rewritten_links, report.problems))
    except MemoryError:
        error = "MemoryError"
    outcome: dict[str, Any] = {
        "growth": _peak_resident() - before,
        "error": error,
        "read": source.position,
        "written": sink.written,
        "reports": len(reports),
        "changed": sum(1 for report in reports if report[1]),
        "rewritten_links": sum(report[2] for report in reports),
        "problems": [list(report[3]) for report in reports if report[3]][:5],
        "expected_messages": count,
    }
    if isinstance(sink, _Comparing):
        outcome["mismatch"] = sink.mismatch
    else:
        outcome["digest_ok"] = sink.digest.digest() == expected.digest()
    return outcome


def _stream(shape: str, size: int, limit: float, max_message: int | None = None) -> dict[str, Any]:
    """:func:`_stream_child` in a fresh interpreter, with the rewriter this test imports."""
    pytest.importorskip("resource")
    paths = [str(Path(rewriter.__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]
    code = textwrap.dedent(
        f"""
        import json, sys
        sys.path[:0] = {paths!r}
        import test_pathological
        print(json.dumps(test_pathological._stream_child({shape!r}, {size}, {max_message!r})))
        """
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"streaming {size / MB:.0f} MB did not finish within {limit:.0f} s") from None
    assert done.returncode == 0, done.stderr[-3000:]
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    outcome["case"], outcome["bytes"], outcome["max_message"] = shape, size, max_message
    return outcome


def _check_passed_through(outcome: dict[str, Any]) -> None:
    """The one giant message went through byte for byte, and was reported."""
    size = outcome["bytes"]
    assert outcome["error"] is None, (
        f"{size / MB:.0f} MB streamed: ran out of the {8 * FLAT_BUDGET / MB:.0f} MB address-space cap "
        f"(peak resident size +{outcome['growth'] / MB:.0f} MB): the stream is held in memory; {outcome}"
    )
    head = len(_GIANT_HEAD if outcome["case"] == "giant-message" else b"From ")
    assert outcome["read"] == outcome["written"] == head + size, outcome
    assert outcome["mismatch"] is None, outcome  # passed through byte for byte
    assert outcome["reports"] == 1 and outcome["changed"] == 0, outcome
    assert outcome["problems"], f"the message was not rewritten: that must be reported; {outcome}"


def _check_giant(shape: str, size: int, limit: float) -> None:
    outcome = _stream(shape, size, limit)
    _report(outcome)
    _check_passed_through(outcome)
    assert outcome["growth"] < FLAT_BUDGET, (
        f"{size / MB:.0f} MB streamed raised the peak resident size by {outcome['growth'] / MB:.0f} MB "
        f"(at most {FLAT_BUDGET / MB:.0f} MB whatever the size); {outcome}"
    )


@pytest.mark.parametrize("shape", ["giant-message", "no-newline"])
def test_mbox_line_without_newline_streams_in_flat_memory(shape: str) -> None:
    """200 MB with no newline (after a heading, or at all) goes through rewrite_mbox
    byte for byte, reported as not rewritten, with the peak resident size raised by
    less than 300 MB (the issue's 2 GB case, scaled down; the limits are the same)."""
    _check_giant(shape, 200 * MB, limit=120)


@pytest.mark.skipif(not SLOW, reason="2 GB through the stream (~15 s, nothing on disk): set REWRITER_SLOW_TESTS=1")
def test_mbox_two_gigabytes_without_newlines() -> None:
    """The issue's size: a From_ line, a heading, and 2 GB of HTML without a newline."""
    _check_giant("giant-message", 2 * GB, limit=900)


@pytest.mark.parametrize("shape", ["giant-message", "no-newline"])
def test_mbox_oversize_message_memory_does_not_grow_with_it(shape: str) -> None:
    """Flat as a ratio: with a 4 MiB message limit, 4x the giant line (16 MB, 64 MB)
    raises the peak resident size by no more (within 25 % and 8 MB of noise)."""
    small, large = (_stream(shape, size, limit=120, max_message=4 * MB) for size in (16 * MB, 64 * MB))
    _report({"case": shape, "growth_mb": [round(small["growth"] / MB, 1), round(large["growth"] / MB, 1)]})
    for outcome in (small, large):
        _check_passed_through(outcome)
    assert large["growth"] <= 1.25 * small["growth"] + 8 * MB, (small, large)


def test_mbox_many_messages_stream_in_flat_memory() -> None:
    """The ordinary case: 32 MB of 1 MB messages, each rewritten, in memory that does
    not grow with the mbox (iter_mbox documents about twice the largest message)."""
    outcome = _stream("many-messages", 32 * MB, limit=300)
    _report(outcome)
    assert outcome["error"] is None, outcome
    assert outcome["growth"] < 32 * MB, outcome
    expected = outcome["expected_messages"]
    assert outcome["reports"] == outcome["changed"] == outcome["rewritten_links"] == expected, outcome
    assert outcome["digest_ok"], outcome
    assert outcome["problems"] == [], outcome


# --------------------------------------------------------------------------
# mbox: 100 messages with distinct 4 MB Content-Locations
# --------------------------------------------------------------------------

BASES_BUDGET = 150 * MB  # the bound on the peak resident size, the interpreter included

# Run with ``python -c``: only the rewriter is imported (not pytest), so that the peak
# resident size is the interpreter's and the mbox run's. The mbox is made as it is read,
# one message at a time; the sink keeps a digest.
_DISTINCT_BASES_CHILD = """
import hashlib, json, resource, sys
sys.path.insert(0, {root!r})
from rewriter.containers.mailbox import rewrite_mbox
from rewriter.url.resolve import resolver_for

COUNT, SIZE = {count}, {size}
FROM = b"From someone@example.org Sat Jan  1 00:00:00 2000\\n"

def message(number, rewritten=False):
    location = b"http://example.org/%d/" % number + b"a/" * (SIZE // 2)
    link = location + b"x.html" if rewritten else b"x.html"
    return FROM + b"Content-Type: text/html\\nContent-Location: " + location + b"\\n\\n<a href=" + link + b">x</a>\\n"

class Source:
    def __init__(self):
        self.number, self.data, self.position = 0, b"", 0
    def readable(self):
        return True
    def seekable(self):
        return False
    def read(self, n=-1):
        if self.position >= len(self.data):
            if self.number >= COUNT:
                return b""
            self.data, self.position = message(self.number), 0
            self.number += 1
        n = len(self.data) - self.position if n is None or n < 0 else n
        piece = self.data[self.position : self.position + n]
        self.position += len(piece)
        return piece

class Sink:
    def __init__(self):
        self.digest = hashlib.sha256()
    def writable(self):
        return True
    def write(self, data):
        self.digest.update(data)
        return len(data)

sink = Sink()
reports = [(report.rewritten_links, report.changed) for report in rewrite_mbox(Source(), sink)]
try:
    # This process's own peak: Linux carries the parent's peak into ru_maxrss across the
    # (v)fork and exec that started it, so a large test runner would be counted.
    status = open("/proc/self/status").read()
    peak = int(status.split("VmHWM:")[1].split()[0]) * 1024
except (OSError, IndexError, ValueError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
expected = hashlib.sha256()
for number in range(COUNT):
    expected.update(message(number, rewritten=True))
print(json.dumps({{
    "peak": peak,
    "messages": len(reports),
    "rewritten_links": sum(links for links, _ in reports),
    "changed": sum(1 for _, changed in reports if changed),
    "digest_ok": sink.digest.digest() == expected.digest(),
    "cached": resolver_for.cache_size(),
}}))
"""


def _distinct_bases(count: int, size: int) -> dict[str, Any]:
    pytest.importorskip("resource")
    root = str(Path(rewriter.__file__).resolve().parents[1])
    code = _DISTINCT_BASES_CHILD.format(root=root, count=count, size=size)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{count} messages with {size / MB:.0f} MB bases did not finish within 300 s") from None
    assert done.returncode == 0, done.stderr[-3000:]
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    outcome["case"] = f"{count} messages, distinct {size / MB:.0f} MB Content-Locations"
    return outcome


def test_mbox_of_distinct_megabyte_bases_stays_flat() -> None:
    """Issue 18, point 5: an mbox of 100 messages, each with a distinct 4 MB
    Content-Location, rewritten under 150 MB of peak resident size (the resolvers of
    512 bases were cached, four or five copies of each: 2 GB). Each link is made
    absolute against its message's base."""
    outcome = _distinct_bases(100, 4 * MB)
    _report({**outcome, "peak_mb": round(outcome["peak"] / MB, 1)})
    assert outcome["messages"] == outcome["changed"] == outcome["rewritten_links"] == 100, outcome
    assert outcome["digest_ok"], outcome
    assert outcome["cached"][0] <= 1, outcome  # a 4 MB base is over the budget: only the newest is kept
    assert outcome["peak"] < BASES_BUDGET, (
        f"peak resident size {outcome['peak'] / MB:.0f} MB (at most {BASES_BUDGET / MB:.0f} MB); {outcome}"
    )


def test_resolver_cache_is_bounded_by_the_size_of_its_bases() -> None:
    """Many distinct bases of 100 KB: the resolver cache keeps about a megabyte of them,
    however many came; many short ones: at most 512, as before; the newest is kept
    whatever its size, so a long base used over and over is parsed once."""
    from rewriter.url.resolve import Resolver, resolver_for

    resolver_for.cache_clear()
    for number in range(200):
        assert Resolver(f"http://example.org/{number}/" + "a/" * 50_000).resolve("x").endswith("/a/x")
    entries, size = resolver_for.cache_size()
    assert entries <= 11 and size <= 1 << 20, (entries, size)
    for number in range(2000):
        Resolver(f"http://example.org/{number}/").resolve("x")
    assert resolver_for.cache_size()[0] == 512
    unused = Resolver("http://example.org/never-used/")
    assert resolver_for.cache_size()[0] == 512 and unused.base.endswith("never-used/")  # parsed at its first use
    long_base = "http://example.org/" + "b/" * (1 << 20)
    first = Resolver(long_base)
    first.resolve("x")
    assert resolver_for.cache_size()[0] == 1
    second = Resolver(long_base)
    second.resolve("y")
    assert second._resolve is first._resolve  # parsed once


def test_url_key_cache_is_bounded_by_the_size_of_its_urls() -> None:
    """unpack and WARC keep url_key's answers: 65,536 of them, whatever their length, were kept."""
    from rewriter.url.resolve import url_key, url_keys

    for number in range(100):
        assert url_key(f"HTTP://Example.org/{number}/" + "a" * 100_000).startswith(f"http://example.org/{number}/a")
    assert url_keys.cache_size()[1] <= 1 << 22, url_keys.cache_size()


def test_element_name_caches_keep_no_long_or_endless_names() -> None:
    """The link tables are cached per element name, and element names come from the
    documents: 200 pages of distinct 100 KB names, and 10,000 distinct short ones with a
    link each, leave the caches holding no long name and at most a few thousand short ones;
    every link is still found."""
    from rewriter.html import elements as html
    from rewriter.html import plain
    from rewriter.html.table import cached_attributes_of

    cached_attributes_of.cache_clear()
    for number in range(200):
        name = f"x{number}-" + "y" * 100_000
        page = f'<{name} style="background:url(a.png)" href=b></{name}>'.encode()
        result = rewrite_html(page, url="http://h/")
        assert sorted(link.resolved for link in result.links) == ["http://h/a.png", "http://h/b"]
    assert cached_attributes_of.cache_info().currsize <= 2  # none of the long names

    def names() -> list[str]:
        caches = [
            *html._CODES_HTML.values(), *html._CODES_FOREIGN.values(), html._TABLES, plain._TAGS,
        ]  # fmt: skip
        return [key if isinstance(key, str) else key[1] for cache in caches for key in cache]

    assert max(map(len, names()), default=0) <= 64
    page = "".join(f'<e{number} style="background:url(a)">' for number in range(10_000)).encode()
    assert len(rewrite_html(page, url="http://h/").links) == 10_000
    assert len(names()) <= 3 * 4096 and max(map(len, names())) <= 64
    assert cached_attributes_of.cache_info().currsize <= 4096
