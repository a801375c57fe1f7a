"""The compiled inner loops (rewriter.document._speedups) give what their Python twins give.

Each compiled function runs in C and in Python on the same input, arbitrary
text (lone surrogates, NUL, odd quotes, unterminated tags, huge attributes, text of every
str kind) and the whole corpus: the results, or the exception's type, must be the same.
Without the extension (no compiler at install), these tests skip, but in CI, where it is
always built, they fail instead.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import shared_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rewriter.css.syntax
import rewriter.document.encoding
import rewriter.html.tags
from rewriter.document import speedups
from rewriter.document.encoding import decode_checked, sniff
from rewriter.html.table import attributes_of
from rewriter.html.tags import LAZY_URL, OTHER, STYLE, URL

ROOT = Path(__file__).resolve().parents[1]
compiled = speedups.compiled
reference = speedups.reference  # every twin's module is imported above
# Where each function is used, by the name both implementations have.
HOMES = {
    "tag_attributes": rewriter.html.tags,
    "tag_end": rewriter.html.tags,
    "end_tag": rewriter.html.tags,
    "link_attributes": rewriter.html.tags,
    "scan_css": rewriter.css.syntax,
    "utf8_offsets": rewriter.document.encoding,
}


def _needs_extension() -> None:
    if compiled is None:
        reason = "rewriter.document._speedups is not built (no C compiler at install?)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _same(name: str, *args: Any) -> Any:
    """Call *name* in C and in Python; the same result, or the same exception type."""
    _needs_extension()
    outcomes = []
    for function in (getattr(compiled, name), reference[name]):
        try:
            outcomes.append(("value", function(*args)))
        except (ValueError, TypeError) as error:
            outcomes.append(("error", ValueError if isinstance(error, ValueError) else TypeError))
    assert outcomes[0] == outcomes[1], (name, args)
    return outcomes[1][1]


# Characters of every str kind, and those the functions treat specially.
_SPECIAL = "\x00\ud800\udc80\udfff\u212a\u0130é€😀\ufffd\x7f\x0b\x01"
_any_text = st.text(st.characters(exclude_categories=()), max_size=60)

_TAG_PIECES = [
    "<", "<a", "<A", "<img", "<svg", ">", "/>", "/", " ", "\t", "\n", "\r", "\f", "=", "==", '"', "'", "`",
    "href", "HREF", "hReF", "src", "style", "srcset", "data-src", "title", "x", "\u212aey", "\u0130d", "a\x00b",
    "url(", "(", "@", "\\", "&amp;", "&", "#", "http://h/", "é", "€", "😀", "\ud800", "\x00",
]  # fmt: skip
_tags_text = st.lists(st.one_of(st.sampled_from(_TAG_PIECES), _any_text), max_size=40).map("".join)

_CSS_PIECES = [
    "url(", "URL(", "u\\rl(", "\\75 rl(", "\\55 RL(", "src(", "SRC(", "image-set(", "-webkit-image-set(",
    "-web\u212ait-image-set(", "\u0130mage-set(", "@import", "@IMPORT", "@\\69mport", "@imports", "@import\\", "@",
    "'", '"', "(", ")", "[", "]", "{", "}", "/*", "*/", "/", "\\", "\\\n", "\\\r\n", "\\29 ", "\\0", "\\110000",
    "\\d800", "\r\n", "\n", "\f", " ", "\t", ";", ",", "#", "x", "a.png", "<!--", "-->", "--", "5", "\x00",
    "\ud800", "é", "😀", "\x01", "\x7f", "1x",
]  # fmt: skip
_css_text = st.lists(st.one_of(st.sampled_from(_CSS_PIECES), _any_text), max_size=40).map("".join)

_NAMES = ["href", "src", "style", "srcset", "data-src", "title", "x", "a\x00b", "\u212aey", "=", "/"]
_tables = st.one_of(
    st.none(), st.dictionaries(st.sampled_from(_NAMES), st.sampled_from([URL, LAZY_URL, OTHER, STYLE]), max_size=5)
)


# --- tag_attributes and link_attributes --------------------------------------------------------------------------


@given(_tags_text, st.integers(-3, 80))
@settings(max_examples=3000, deadline=None)
def test_tag_attributes_at_every_offset(text: str, offset: int) -> None:
    _same("tag_attributes", text, offset)
    _same("tag_end", text, offset)
    for match in re.finditer("<", text):
        _same("tag_attributes", text, match.start())
        _same("tag_end", text, match.start())


@given(_tags_text, st.data())
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_link_attributes(text: str, data: st.DataObject) -> None:
    offsets = [match.start() for match in re.finditer("<", text)]
    tables = [data.draw(_tables) for _ in offsets]
    _same("link_attributes", text, offsets, tables)
    if offsets:  # an offset that is no tag fails the whole call
        _same("link_attributes", text, [*offsets, data.draw(st.integers(-2, len(text) + 2))], [*tables, {}])


def test_link_attributes_refuses_what_its_contract_excludes() -> None:
    _same("link_attributes", "<a href=x>", [0], [{"href": 9}])  # no such code
    _same("link_attributes", "<a href=x>", [0], [{"href": "1"}])
    _same("link_attributes", "<a href=x>", [0, 0], [{}])  # lengths differ
    _same("link_attributes", "<a href=x>", [0], [{"src": 9}])  # an absent name's code is never read
    _same("tag_attributes", "<a", 5)
    _same("tag_attributes", "a<", 0)


@pytest.mark.parametrize("size", [1, 100_000])
def test_huge_and_unterminated_tags(size: int) -> None:
    table = {"href": URL, "style": STYLE, "src": LAZY_URL, "title": OTHER}
    for text in (
        "<a " + "x=1 " * size + "href=y>",
        "<a " + " ".join(f"a{n}" for n in range(size)) + " href='" + "z" * size,
        "<a href=" + "\ud800é" * size,
        '<a style="' + "color:red;" * size + '" href=q>',
        "<a" + "=" * size,
        "<a " + "href=x " * size,
    ):
        _same("tag_attributes", text, 0)
        _same("tag_end", text, 0)
        _same("link_attributes", text, [0], [table])


# --- end_tag ---------------------------------------------------------------------------------------------------------

_END_PIECES = [
    "</", "</style", "</STYLE", "</st\u212aYLE", "</noscript", "</NOSCR\u0130PT", "</k", "</\u212a", ">", " ", "/",
    "\t", "x", "é", "\ud800", "<", "style", "<!--",
]  # fmt: skip


@given(
    st.lists(st.one_of(st.sampled_from(_END_PIECES), _any_text), max_size=20).map("".join),
    st.sampled_from(["style", "noscript", "k", "", "x\u212a", "\u0131", "\u0130", "STYLE"]),
    st.integers(-5, 60),
)
@settings(max_examples=3000, deadline=None)
def test_end_tag(text: str, name: str, start: int) -> None:
    _same("end_tag", text, name, start)


# --- scan_css --------------------------------------------------------------------------------------------------------


@given(_css_text)
@settings(max_examples=5000, deadline=None)
def test_scan_css(css: str) -> None:
    _same("scan_css", css)


def test_scan_css_on_deep_and_long_input() -> None:
    for css in (
        "image-set(" * 50_000 + "'a'" + ")" * 50_000,
        "a{b:url(" + "x" * 100_000,
        "\\" * 100_001,
        "@import '" + "\\" * 10_001,
        "/*" + "url(a)" * 10_000,
        "x\\75 rl(" * 10_000 + "q)",
    ):
        _same("scan_css", css)


# --- utf8_offsets ----------------------------------------------------------------------------------------------------


@given(st.tuples(_any_text, st.sampled_from(["", "\udc80", "é", "😀", "€", "\ud800"])).map("".join), st.data())
@settings(max_examples=3000, deadline=None)
def test_utf8_offsets(text: str, data: st.DataObject) -> None:
    offsets = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    for escaped in (False, True):
        _same("utf8_offsets", text, offsets, escaped)
    _same("utf8_offsets", text, [*offsets, -1], False)  # descending: refused
    _same("utf8_offsets", text, [len(text) + 1], False)  # past the end: refused


# --- the corpus ------------------------------------------------------------------------------------------------------


def _corpus_texts() -> list[str]:
    corpus = shared_path("corpus", "html")
    entries = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    texts = []
    for entry in entries:
        data = (corpus / entry["file"]).read_bytes()
        texts.append(decode_checked(data, sniff(data))[0])
    return texts


_STYLE_TEXT = re.compile(r"<style[^>]*>(.*?)</style", re.S | re.I)
_STYLE_VALUE = re.compile(r"""style\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)


@pytest.mark.corpus
def test_the_corpus() -> None:
    _needs_extension()
    table = {name: URL for name in attributes_of("html", "a")} | {"style": STYLE, "srcset": OTHER}
    rng = random.Random(23)
    for text in _corpus_texts():
        offsets = [match.start() for match in re.finditer("<[A-Za-z]", text)]
        tables: list[dict[str, int] | None] = [table if rng.random() > 0.05 else None for _ in offsets]
        assert compiled.link_attributes(text, offsets, tables) == reference["link_attributes"](text, offsets, tables)
        for offset in offsets[:: max(1, len(offsets) // 200)]:
            assert compiled.tag_attributes(text, offset) == reference["tag_attributes"](text, offset)
            assert compiled.tag_end(text, offset) == reference["tag_end"](text, offset)
        for name in ("style", "noscript", "script"):
            start = 0
            while start < len(text):
                end = compiled.end_tag(text, name, start)
                assert end == reference["end_tag"](text, name, start)
                start = end + 2
        sheets = [match.group(1) for match in _STYLE_TEXT.finditer(text)]
        values = _STYLE_VALUE.finditer(text)
        sheets += [match.group(2) if match.group(1) is None else match.group(1) for match in values]
        for sheet in sheets:
            assert compiled.scan_css(sheet) == reference["scan_css"](sheet)
        positions = sorted(rng.randrange(len(text) + 1) for _ in range(200))
        escaped = not text.isascii() and any("\udc00" <= char <= "\udcff" for char in text)
        assert compiled.utf8_offsets(text, positions, escaped) == reference["utf8_offsets"](text, positions, escaped)


# --- the choice ------------------------------------------------------------------------------------------------------


def _in_child(code: str, **environment: str) -> str:
    env = {key: value for key, value in os.environ.items() if key != "REWRITER_PURE"} | environment
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


_CHOICE = (
    "from rewriter.document import speedups as s; from rewriter.css import syntax\n"
    "print(s.COMPILED, syntax.scan_css is s.reference['scan_css'])"
)


def test_rewriter_pure_forces_the_reference() -> None:
    assert _in_child(_CHOICE, REWRITER_PURE="1") == "False True"
    if compiled is not None:
        assert _in_child(_CHOICE) == "True False"
        assert _in_child(_CHOICE, REWRITER_PURE="0") == "True False"
        assert _in_child(_CHOICE, REWRITER_PURE="") == "True False"


def test_the_extension_is_built_in_ci() -> None:
    if os.environ.get("CI") == "true":
        assert compiled is not None, "CI installs with a C compiler: rewriter.document._speedups must be there"


def test_every_function_has_both_implementations() -> None:
    assert set(reference) == set(HOMES)
    for name, home in HOMES.items():
        assert reference[name].__module__ == home.__name__
        if compiled is not None:
            assert callable(getattr(compiled, name))
        assert getattr(home, name) is (getattr(compiled, name) if speedups.COMPILED else reference[name])
    if compiled is not None:  # nothing compiled without a twin
        assert {name for name in dir(compiled) if not name.startswith("_")} == set(HOMES)
