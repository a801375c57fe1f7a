"""The compiled inner loops (rewriter.document._speedups) give what their Python twins give.

Each compiled function runs in C and in Python on the same input, arbitrary
text (lone surrogates, NUL, odd quotes, unterminated tags, huge attributes, text of every
str kind) and the whole corpus: the results, or the exception's type, must be the same.
Without the extension (no compiler at install), these tests skip, but in CI, where it is
always built, they fail instead.
"""

from __future__ import annotations

import bisect
import doctest
import json
import os
import random
import re
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar, NamedTuple

import pytest
import turbohtml
from conftest import shared_path
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rewriter.css.syntax
import rewriter.document.encoding
import rewriter.document.process
import rewriter.html.comments
import rewriter.html.engine
import rewriter.html.parsed
import rewriter.html.plain
import rewriter.html.tags
import rewriter.mime.transfer
from rewriter.document import speedups
from rewriter.document.encoding import ESCAPE, decode_checked, encode_url_text, sniff
from rewriter.document.model import Link
from rewriter.document.process import (
    CLASSIFIED_MOST,
    KEPT_STATUSES,
    SharedClassifications,
    shared_key,
    with_fragment,
)
from rewriter.html.engine import ParsedDocument
from rewriter.html.plain import LAZY_URL, OTHER, SRCSET, STYLE, URL, LinkSearch
from rewriter.html.table import attributes_of, selector

pytestmark = pytest.mark.slow  # the C extension against its Python twins on thousands of generated inputs a function

ROOT = Path(__file__).resolve().parents[1]
compiled = speedups.compiled
reference = speedups.reference  # every twin's module is imported above
# Where each function is used, by the name both implementations have.
HOMES = {
    "tag_attributes": rewriter.html.tags,
    "tag_end": rewriter.html.tags,
    "end_tag": rewriter.html.tags,
    "plain_links": rewriter.html.plain,
    "named_start_tags": rewriter.html.plain,
    "scan_css": rewriter.css.syntax,
    "utf8_offsets": rewriter.document.encoding,
    "utf8_splice": rewriter.document.encoding,
    "conditional_head": rewriter.html.comments,
    "flattened": rewriter.html.parsed,
    "last_frameset_tag": rewriter.html.parsed,
    "classified_quickly": rewriter.document.process,
    "decode_qp": rewriter.mime.transfer,
}


def _needs_extension() -> None:
    if compiled is None:
        reason = "rewriter.document._speedups is not built (no C compiler at install?)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def _kind(error: Exception) -> type[Exception]:
    """What the two must agree on when they fail: ValueError or TypeError (a subclass may
    differ: UnicodeEncodeError is a ValueError), or else the exception's own type."""
    return next((kind for kind in (ValueError, TypeError) if isinstance(error, kind)), type(error))


def _same(name: str, *args: Any) -> Any:
    """Call *name* in C and in Python; the same result, or the same exception type."""
    _needs_extension()
    outcomes = []
    for function in (getattr(compiled, name), reference[name]):
        try:
            outcomes.append(("value", function(*args)))
        except Exception as error:
            outcomes.append(("error", _kind(error)))
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
    st.none(),
    st.dictionaries(st.sampled_from(_NAMES), st.sampled_from([URL, LAZY_URL, OTHER, STYLE, SRCSET]), max_size=5),
)


# --- tag_attributes, tag_end and plain_links --------------------------------------------------------------------------


@given(_tags_text, st.integers(-3, 80))
@settings(max_examples=3000, deadline=None)
def test_tag_attributes_at_every_offset(text: str, offset: int) -> None:
    _same("tag_attributes", text, offset)
    _same("tag_end", text, offset)
    for match in re.finditer("<", text):
        _same("tag_attributes", text, match.start())
        _same("tag_end", text, match.start())


class _Element:
    """An element as plain_links reads one: its position, tag and namespace."""

    def __init__(self, position: tuple[int, int] | None, tag: str, namespace: str) -> None:
        self.position, self.tag, self.namespace = position, tag, namespace
        self.source_col = None if position is None else position[1]

    def __repr__(self) -> str:
        return f"<{self.namespace}:{self.tag} at {self.position}>"


_REFERENCES = ["", "x", "a b", "#f", "&", "q\"'&", "http://h/", "é"]


def _classify(reference: str) -> tuple[str, str | None, str | None]:
    """A classification that depends on the reference only, with every shape plain_links meets."""
    choice = sum(map(ord, reference)) % 8
    if choice == 0:
        return "absolute", None, None
    if choice == 1:
        return "no-base", None, "no base"
    if choice == 2:
        return "relinked", f"local/{reference}", None
    if choice == 3:
        return "rewritten", reference, None  # the same: no edit
    if choice == 4:
        return "rewritten", "http://other/", None  # not a prefix: handed back
    if choice == 5:
        return "rewritten", "http://h/a b\t,", None  # what a srcset cannot hold
    prefix = _REFERENCES[len(reference) % len(_REFERENCES)]
    return "rewritten", prefix + "http://h/" + reference, None


def _classify_shared(key: str) -> tuple[str, str | None, str | None]:
    """Another classification of a shared key than _classify's, so that a twin calling the
    wrong one is caught."""
    return "rewritten", "http://folder/" + key, None


def _plain_links(implementation: Any, text: str, elements: list[Any], tables: tuple[Any, ...], **options: Any) -> Any:
    """One run of *implementation*'s plain_links on fresh tables, cache and lists: what it
    returns or raises, and every container after it."""
    html_tables, foreign_tables, missing = (dict(table) for table in tables)
    classified: dict[str, Any] = {}
    found: list[Any] = []
    edits: list[Any] = []

    def table_of(namespace: object, tag: str) -> Any:
        codes = missing.get(tag)
        (html_tables if namespace == "html" else foreign_tables)[tag if namespace == "html" else (namespace, tag)] = (
            codes
        )
        return codes

    lean = options.get("lean")
    counts: dict[Any, int] | None = {} if lean else None
    inserts, insert_texts = (bytearray(), []) if lean else (None, None)
    arguments = (
        text, elements, options.get("line_starts"), options.get("skip"), "html", html_tables, foreign_tables,
        table_of, classified, options.get("classify", _classify), Link, "http://b/", "base-element", found, edits,
        counts, KEPT_STATUSES, inserts, insert_texts,
    )  # fmt: skip
    try:
        outcome: Any = ("value", implementation.plain_links(LinkSearch(*arguments)))
    except Exception as error:
        outcome = ("error", _kind(error))
    return outcome, html_tables, foreign_tables, classified, found, edits, counts, inserts, insert_texts


def _same_plain_links(text: str, elements: list[Any], tables: tuple[Any, ...], **options: Any) -> None:
    """The same in C and in Python, in a full search and in a lean one; and the lean one's
    counts, records and edits are what the full one's links give."""
    _needs_extension()
    python = SimpleNamespace(plain_links=reference["plain_links"])
    full = _plain_links(compiled, text, elements, tables, **options)
    assert full == _plain_links(python, text, elements, tables, **options), (text, elements, tables)
    lean = _plain_links(compiled, text, elements, tables, lean=True, **options)
    assert lean == _plain_links(python, text, elements, tables, lean=True, **options), (text, elements, tables)
    if full[0][0] == "value":
        _lean_as_full(lean, full)


def _lean_as_full(lean: Any, full: Any) -> None:
    """A lean search's outcome against a full one's (each (outcome, ..., found, edits, counts,
    inserts, insert_texts)): the same hand-backs and cache; the same edits, the prefixes'
    kept compactly; each status counted; the kept links alone recorded."""
    assert lean[:4] == full[:4]
    found, edits = full[-5:-3]
    lean_found, lean_edits, counts, inserts, insert_texts = lean[-5:]
    starts = memoryview(inserts).cast("q").tolist()
    assert len(starts) == len(insert_texts)
    assert sorted([*lean_edits, *zip(starts, starts, insert_texts, strict=True)]) == sorted(edits)
    assert counts == Counter(link.status for link in found)
    assert lean_found == [link for link in found if link.status in KEPT_STATUSES]


_tag_names = st.sampled_from(["a", "img", "svg", "div", "x"])
_VALUE_PIECES = [
    "x", " ", "\t", "\n", "&amp;", "&", "&lt;", "amp;", "<", ">", "\0", '"', "'", "é", "\ud800", "#", ",", "(", ")",
    " 1x", " 2x, ", ",,", "a.png,", "%2C",
]  # fmt: skip
_VALUES = st.lists(st.sampled_from(_VALUE_PIECES), max_size=8).map("".join)
_ATTRIBUTE_NAMES = st.sampled_from(["href", "src", "data-src", "style", "HREF", "title", "x\0", "srcset", "=", "/"])


def _attribute(name: str, value: str, quote: str) -> str:
    """One attribute of a start tag, after a space: valueless ("="), quoted with *quote*, or
    unquoted ("")."""
    if quote == "=":
        return f" {name}"
    if quote:
        return f" {name}={quote}{value.replace(quote, '')}{quote}"
    return f" {name}={value.replace(' ', '').replace('>', '') or 'v'}"


@st.composite
def _start_tag(draw: st.DrawFn) -> str:
    """A start tag of attributes of every shape, then some text or nothing."""
    tag = "<" + draw(
        st.sampled_from(["a", "A", "img", "svg", "x", "", "IMAGE", "imagE", "images", "a\0", "é", "\ud800"])
    )
    for name in draw(st.lists(_ATTRIBUTE_NAMES, max_size=5)):
        quote = draw(st.sampled_from(['"', "'", "", "=", "-"]))
        value = draw(_VALUES)
        tag += f"/{name}  =  '{value}'" if quote == "-" else _attribute(name, value, quote)
    return tag + draw(st.sampled_from([">", "/>", "", ">text", "\n"]))


_pages = st.lists(_start_tag(), max_size=8).map("".join)


@given(_pages, st.data())
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_plain_links(text: str, data: st.DataObject) -> None:
    starts = [match.start() for match in re.finditer("<", text)]
    elements = [
        _Element(
            data.draw(st.sampled_from([None, (1, start), (1, start), (1, start)])),
            data.draw(st.sampled_from(["a", "a", "a", "img", "svg", "x"])),
            data.draw(st.sampled_from(["html", "html", "svg"])),
        )
        for start in starts
    ]
    elements += data.draw(st.lists(st.sampled_from(elements), max_size=3)) if elements else []  # seen again
    html_tables, foreign_tables, missing = (data.draw(st.dictionaries(_tag_names, _tables, max_size=4)) for _ in "abc")
    html_tables.setdefault("a", {"href": URL, "src": LAZY_URL, "data-src": LAZY_URL, "style": STYLE, "srcset": SRCSET})
    tables = (html_tables, {("svg", tag): codes for tag, codes in foreign_tables.items()}, missing)
    skip = data.draw(st.sampled_from(elements)) if elements else None
    _same_plain_links(text, elements, tables, skip=skip)


_NAMED_PIECES = [
    "<base",
    "<BASE",
    "<bAsE",
    "<basefont",
    "<base\0",
    "<noscript",
    "<NOSCRIPT",
    "<noscrİpt",
    "<",
    " ",
    "/",
    ">",
]


@given(
    st.lists(
        st.one_of(st.sampled_from(_NAMED_PIECES), st.sampled_from(["\t", "\n", "\f", "\r", "é", "\ud800"]), _any_text)
    ).map("".join),
    st.sampled_from(["base", "noscript", "b", ""]),
    st.data(),
)
@settings(max_examples=3000, deadline=None)
def test_named_start_tags(text: str, name: str, data: st.DataObject) -> None:
    starts = [match.start() for match in re.finditer("<", text)]
    positions = [None, *((1, start) for start in starts)]
    elements = [_Element(data.draw(st.sampled_from(positions)), "x", "html") for _ in range(len(starts) + 1)]
    if starts:  # each line of the text, and one position past its end: ValueError, from both
        elements.append(_Element((1, len(text)), "x", "html") if data.draw(st.booleans()) else elements[0])
    named = _same("named_start_tags", text, elements, None, name)
    assert not isinstance(named, list) or all(
        text[element.position[1] + 1 :].lower().startswith(name) for element in named
    )
    lines = [0, *(match.end() for match in re.finditer("\n", text))]
    by_line = [
        _Element(None if e.position is None else _line_and_column(lines, e.position[1]), "x", "html") for e in elements
    ]
    _same("named_start_tags", text, by_line, lines, name)


def _line_and_column(lines: list[int], offset: int) -> tuple[int, int]:
    line = bisect.bisect_right(lines, offset)
    return line, offset - lines[line - 1]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["href", "src", "data-src", "style", "HREF", "srcset"]),
            _VALUES,
            st.sampled_from(['"', "'", "", "="]),
        ),
        max_size=5,
    ),
    st.booleans(),
)
@settings(max_examples=3000, deadline=None)
def test_plain_links_on_values(attributes: list[tuple[str, str, str]], lines: bool) -> None:
    """Values of every shape (references, whitespace, quotes, NUL, angles) in one or two tags."""
    tag = "<a"
    for name, value, quote in attributes:
        tag += _attribute(name, value, quote)
    text = tag + ">\n" + tag + ">"
    second = len(tag) + 2
    table = {"href": URL, "src": URL, "data-src": LAZY_URL, "style": STYLE, "srcset": SRCSET}
    if lines:
        elements = [_Element((1, 0), "a", "html"), _Element((2, 0), "a", "html")]
        _same_plain_links(text, elements, ({"a": table}, {}, {}), line_starts=[0, second])
    else:
        elements = [_Element((1, 0), "a", "html"), _Element((1, second), "a", "html")]
        _same_plain_links(text, elements, ({"a": table}, {}, {}))


def test_plain_links_refuses_what_its_contract_excludes() -> None:
    one = [_Element((1, 0), "a", "html")]
    _same_plain_links("<a href=x>", one, ({"a": {"href": 9}}, {}, {}))  # no such code
    _same_plain_links("<a href=x>", one, ({"a": {"href": "1"}}, {}, {}))
    _same_plain_links("<a href=x>", one, ({"a": {"src": 9}}, {}, {}))  # an absent name's code is never read
    _same_plain_links("<a href=x>", [_Element((1, 3), "a", "html")], ({"a": {}}, {}, {}))  # no "<" there
    _same_plain_links("<a href=x>", [_Element((1, 30), "a", "html")], ({"a": {}}, {}, {}))  # past the end
    _same_plain_links("<a href=x>", [_Element((3, 0), "a", "html")], ({"a": {}}, {}, {}), line_starts=[0, 5])
    _same_plain_links("<a href=x>", [_Element((0, 0), "a", "html")], ({"a": {}}, {}, {}), line_starts=[0, 5])
    _same_plain_links("<a href=x>", one, ({"a": {"href": URL}}, {}, {}), classify=lambda reference: None)
    _same_plain_links("<a href=x>", one, ({"a": {"href": URL}}, {}, {}), classify=lambda reference: 1 / 0 and None)
    _same_plain_links("<a href=x>", one, ({"a": []}, {}, {}))  # a table that is no dict


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
        _same_plain_links(text, [_Element((1, 0), "a", "html")], ({"a": table}, {}, {}))


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


# --- conditional_head -----------------------------------------------------------------------------------------------


@given(
    st.lists(
        st.one_of(st.sampled_from(["<!--[", "<!--", "[", "<", "!", "-", "--[", "x", "é", "😀", "\ud800"]), _any_text)
    ).map("".join),
    st.integers(-8, 40),
)
@settings(max_examples=3000, deadline=None)
def test_conditional_head(text: str, start: int) -> None:
    _same("conditional_head", text, start)
    for at in range(len(text) + 1):
        _same("conditional_head", text, at)


# --- classified_quickly ---------------------------------------------------------------------------------------------

_REFERENCE_PIECES = ["", "#", "a", "Z", "0", "+", "-", ".", ":", "/", "é", "\u212a", " ", "http:", "1:", "a1+-.:"]


_SHARED_PIECES = [*_REFERENCE_PIECES, "?", ";", "\\", "%", "_files", "_file", "x_files/", "\x00", "\t", "s"]
_SHARED_PIECES += ["#s", "#", "<", "`"]


@given(
    st.lists(st.one_of(st.sampled_from(_SHARED_PIECES), _any_text), max_size=4).map("".join),
    st.sampled_from([("same-document", None, None), None]),
    st.sampled_from([("absolute", None, None), None]),
    st.booleans(),
    st.sampled_from(["none", "empty", "held", "odd"]),
)
@settings(max_examples=3000, deadline=None)
def test_classified_quickly(reference: str, same: Any, absolute: Any, rfc1808: bool, shared_kind: str) -> None:
    """Both twins give the same answer; a shared dict answers exactly for the references
    shared_key gives a key (the rule the C spells out again), their fragment added."""
    key = shared_key(reference)
    held = ("rewritten", "http://shared/", None)
    odd = ["not", "a", "classification"]  # given back as it is, fragment or none
    shared = {
        "none": None,
        "empty": {},
        "held": {reference if key is None else key: held},
        "odd": {reference if key is None else key: odd},
    }[shared_kind]
    answer = _same("classified_quickly", same, absolute, rfc1808, shared, _classify, _classify_shared, reference)
    if same is None and absolute is None:
        fragment = "" if key is None else reference[len(key) :]
        if key is None or shared_kind == "none":
            expected = _classify(reference)
        elif shared_kind == "empty":
            expected = with_fragment(_classify_shared(key), fragment) if fragment else _classify_shared(key)
        else:
            expected = with_fragment(held, fragment) if shared_kind == "held" else odd
        assert answer == expected
        if shared_kind == "empty":  # a miss is made and kept, in each twin's own dict
            for twin in (speedups.reference["classified_quickly"], speedups.compiled.classified_quickly):
                kept: dict[str, Any] = {}
                twin(same, absolute, rfc1808, kept, _classify, _classify_shared, reference)
                assert kept == ({} if key is None else {key: _classify_shared(key)})


def test_a_full_shared_dict_is_emptied_before_an_answer_is_kept() -> None:
    """Both twins bound the folder's memo alike: at SharedClassifications.MOST answers (the C's
    SHARED_MOST) it is emptied, then the new answer kept; one fewer, and it is only added to."""
    _needs_extension()
    most = SharedClassifications.MOST
    for twin in (speedups.reference["classified_quickly"], speedups.compiled.classified_quickly):
        full = {f"k{number}": ("absolute", None, None) for number in range(most)}
        twin(None, None, False, full, _classify, _classify, "page.html#s")
        assert full == {"page.html": _classify("page.html")}
        almost = {f"k{number}": ("absolute", None, None) for number in range(most - 1)}
        twin(None, None, False, almost, _classify, _classify, "page.html")
        assert len(almost) == most and almost["page.html"] == _classify("page.html")


def test_a_document_cache_is_emptied_when_full_in_both_twins() -> None:
    """A page of more distinct links than CLASSIFIED_MOST: both twins empty the document's cache
    when it is full and go on (the same hand-backs, cache, records and edits), so that a page of a
    million links holds no million answers."""
    _needs_extension()
    count = CLASSIFIED_MOST + 5
    text = "".join(f"<a href=p{number}>" for number in range(count))
    elements = _html_elements(text)
    tables = ({"a": {"href": URL}}, {}, {})
    python = SimpleNamespace(plain_links=reference["plain_links"])
    full = _plain_links(compiled, text, elements, tables)
    assert full == _plain_links(python, text, elements, tables)
    classified = full[3]
    assert len(classified) == count - CLASSIFIED_MOST  # emptied once, at the limit
    assert len(full[4]) + len(full[0][1]) == count  # every link found or handed back all the same


# --- flattened ------------------------------------------------------------------------------------------------------


_LINES_PIECES = ["\n", "\r", "\r\n", " ", "<a>", "é", "€", "😀", "\ud800"]


@given(st.lists(st.one_of(st.sampled_from(_LINES_PIECES), _any_text)).map("".join))
@settings(max_examples=3000, deadline=None)
def test_flattened(text: str) -> None:
    assert _same("flattened", text) == text.replace("\n", " ").replace("\r", " ")


# --- last_frameset_tag ----------------------------------------------------------------------------------------------


_FRAMESET_PIECES = [
    "<frameset",
    "<frame\u017fet",
    "<FrameSet",
    "<frameseT",
    "<framesets",
    "<frameset>",
    "<frameset/",
    "<",
    "frameset",
]
_FRAMESET_PIECES += [" ", "\t", "\n", "\f", "\r", "\x0b", "/", ">", "=", "é", "😀", "\ud800", "\u212a", "\u017f"]


@given(st.lists(st.one_of(st.sampled_from(_FRAMESET_PIECES), _any_text)).map("".join))
@settings(max_examples=3000, deadline=None)
def test_last_frameset_tag(text: str) -> None:
    found = _same("last_frameset_tag", text)
    assert found == max((m.start() for m in re.finditer(r"(?ai:<frameset)(?=[\t\n\f\r />])", text)), default=-1)


# --- decode_qp -------------------------------------------------------------------------------------------------------


# What a quoted-printable line can hold: escapes of either case and broken ones, soft breaks,
# white space at a line's end (transport padding), lone CRs and LFs, and any other byte.
_QP_PIECES = [b"=", b"=3D", b"=3d", b"=C3=A9", b"=c3", b"=4", b"=4g", b"==", b"=\r\n", b"=\n", b"=\r", b"= \r\n"]
_QP_PIECES += [b"\r\n", b"\n", b"\r", b" ", b"\t", b" \t\r\n", b"\t\n", b"a", b"Z", b"\x00", b"\xff", b"_"]


def _qp_oracle(body: bytes) -> bytes:
    """RFC 2045 §6.7 as written, line by line: the break taken off (CR LF or LF), trailing
    white space dropped (rule 3), a final "=" a soft break (rule 5), "=XX" one byte
    (rule 1, either case), any other "=" kept (note 2); the last line has no break."""
    lines = body.split(b"\n")
    out = []
    for index, line in enumerate(lines):
        last = index == len(lines) - 1
        brk = b"" if last else b"\r\n" if line.endswith(b"\r") else b"\n"
        content = (line[:-1] if brk == b"\r\n" else line).rstrip(b" \t")
        soft = content.endswith(b"=")
        content = re.sub(rb"=([0-9A-Fa-f]{2})", lambda m: bytes([int(m[1], 16)]), content[:-1] if soft else content)
        out.append(content if soft else content + brk)
    return b"".join(out)


@given(st.lists(st.one_of(st.sampled_from(_QP_PIECES), st.binary(max_size=20))).map(b"".join))
@settings(max_examples=5000, deadline=None)
@example(b"caf=C3=a9 au=\r\n lait  \r\n=3D=4 =\r")
def test_decode_qp(body: bytes) -> None:
    assert _same("decode_qp", body) == _qp_oracle(body)


def test_decode_qp_takes_bytes_and_reads_a_subclass_as_its_bytes() -> None:
    class Loud(bytes):
        def split(self, *args: Any) -> Any:
            raise AssertionError("read as bytes, not through its methods")

    assert _same("decode_qp", Loud(b"a=3Db=\r\nc")) == b"a=bc"
    for wrong in ("a=3D", bytearray(b"a"), memoryview(b"a"), None):
        with pytest.raises(TypeError):
            reference["decode_qp"](wrong)
        _same("decode_qp", wrong)
    # The module's decode takes any bytes-like body, as before the twin.
    assert rewriter.mime.transfer.decode(bytearray(b"a=3D"), "quoted-printable") == b"a="
    assert rewriter.mime.transfer.decode(memoryview(b"a=3D"), "quoted-printable") == b"a="


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


@given(
    st.tuples(_any_text, st.sampled_from(["", "\udc80", "é", "😀", "€"])).map("".join),
    st.data(),
    st.booleans(),
)
@settings(max_examples=3000, deadline=None)
def test_utf8_splice(text: str, data: st.DataObject, escaped: bool) -> None:
    errors = ESCAPE if escaped else "surrogatepass"
    try:
        body = text.encode("utf-8", errors)
    except UnicodeEncodeError:
        body = b""  # a text the errors cannot write: the offsets fail alike
    offsets = st.integers(-1, len(text) + 1) if data.draw(st.booleans()) else st.integers(0, len(text))
    news = st.sampled_from(["", "http://h/", "é", "&amp;", "\udc80", "😀"])
    edits = data.draw(st.lists(st.tuples(offsets, offsets, news), max_size=6))
    edits = [(min(start, end), max(start, end), new) if data.draw(st.booleans()) else (start, end, new)
             for start, end, new in edits]  # fmt: skip
    _same("utf8_splice", text, body, edits, escaped, partial(encode_url_text, codec="utf-8", errors=errors))


# --- long texts: the scans past the first 4096 bytes run without the GIL ---------------------------------------------

_WINDOW = 4096  # RELEASE_AT in _speedups.c, in bytes of the text's data


def _long_texts(found: str, filler: str = "x") -> list[str]:
    """Texts of each str kind, long enough to be scanned without the GIL, with *found* before,
    at and after the edge of the first window (in characters: 4096 / kind), and nowhere."""
    texts = []
    for wide in ("", "é", "€", "😀"):
        kind = {"": 1, "é": 1, "€": 2, "😀": 4}[wide]
        window = _WINDOW // kind
        for at in (0, window - 3, window - 1, window, window + 1, 3 * window, 10 * window):
            text = wide + filler * (12 * window)
            texts.append(text[:at] + found + text[at:])
        texts.append(wide + filler * (12 * window))
    return texts


def test_long_texts_scanned_without_the_gil_give_the_twins_results() -> None:
    for text in _long_texts("</style >"):
        _same("end_tag", text, "style", 0)
        _same("end_tag", text, "style", 5000)
    for text in _long_texts("<!--[if IE]>"):
        _same("conditional_head", text, 0)
    for text in _long_texts("\n\r\n", filler="ab"):
        assert _same("flattened", text) == text.replace("\n", " ").replace("\r", " ")
    for text in _long_texts("<FRAMESET/>", filler="<p>"):
        _same("last_frameset_tag", text)
    for text in _long_texts("=C3=A9 =\r\n", filler="ab=3D \r\n"):
        body = text.encode("utf-8", "surrogatepass")
        assert _same("decode_qp", body) == _qp_oracle(body)
    for text in _long_texts("url(a.png) /* c */", filler="b "):
        _same("scan_css", text)
        _same("scan_css", "/*" + text + "*/ url(x)")
    for text in _long_texts("\udc80"):
        for escaped in (False, True):
            body = text.encode("utf-8", ESCAPE if escaped else "surrogatepass")
            length = len(text)
            for edits in ([(3, 5, "http://h/é")], [(length - 2, length, "😀"), (1, 2, "")], [(0, length + 1, "x")]):
                _same("utf8_splice", text, body, edits, escaped, str.encode)
    text = "x" * 20_000 + "\ud800" + "y" * 20_000  # a surrogate no handler writes, past the window
    _same("utf8_splice", text, b"", [(30_000, 30_001, "z")], True, str.encode)


def test_long_scans_from_many_threads_give_the_serial_results() -> None:
    _needs_extension()
    import threading

    css = "p{background:url(a.png)}" + " " * 50_000 + "q{b:url('b.png')}"
    text = "<p>" + "é" * 30_000 + "\n</style>" + "x" * 30_000
    body = text.encode()
    calls = [
        (compiled.scan_css, (css,)),
        (compiled.end_tag, (text, "style", 0)),
        (compiled.flattened, (text,)),
        (compiled.utf8_splice, (text, body, [(1, 2, "http://h/"), (len(text) - 1, len(text), "é")], False, str.encode)),
    ]
    expected = [function(*arguments) for function, arguments in calls]
    failures: list[object] = []

    def work() -> None:
        for _ in range(200):
            for (function, arguments), answer in zip(calls, expected, strict=True):
                if function(*arguments) != answer:
                    failures.append(function)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_utf8_splice_refuses_what_its_contract_excludes() -> None:
    encode = str.encode
    _same("utf8_splice", "abc", b"abc", [(0, 1)], False, encode)
    _same("utf8_splice", "abc", b"abc", [(0, 1, b"x")], False, encode)
    _same("utf8_splice", "abc", b"abc", [[0, 1, "x"]], False, encode)
    _same("utf8_splice", "abc", b"abc", [(0, "1", "x")], False, encode)
    _same("utf8_splice", "abc", b"abc", [(0, 1, "é")], False, lambda new: new)  # encode must give bytes
    _same("utf8_splice", "abc", "abc", [(0, 1, "x")], False, encode)


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


def _same_on_the_tree(text: str, table: dict[str, int], rng: random.Random) -> None:
    """plain_links over the elements the engine selects in *text*'s tree, in C and in Python."""
    document = ParsedDocument(text)
    elements = document.tree.select(selector(frozenset({"data-src"})))
    html = turbohtml.Namespace.HTML
    codes = {tag: None if rng.random() < 0.05 else table for tag in {element.tag for element in elements}}
    outcomes = []
    runs = [(function, lean) for lean in (False, True) for function in (compiled.plain_links, reference["plain_links"])]
    for function, lean in runs:
        html_tables: dict[Any, Any] = {}
        foreign_tables: dict[Any, Any] = {}

        def table_of(namespace: object, tag: str, html_tables: Any = html_tables, foreign: Any = foreign_tables) -> Any:
            (html_tables if namespace is html else foreign)[tag if namespace is html else (namespace, tag)] = codes[tag]
            return codes[tag]

        found: list[Any] = []
        edits: list[Any] = []
        classified: dict[str, Any] = {}
        line_starts = None if document.flat else document.line_starts
        skip = elements[len(elements) // 2] if elements else None
        counts: dict[Any, int] | None = {} if lean else None
        inserts, insert_texts = (bytearray(), []) if lean else (None, None)
        search = LinkSearch(
            text, elements, line_starts, skip, html, html_tables, foreign_tables, table_of, classified, _classify,
            Link, "http://b/", "retrieval-url", found, edits, counts, KEPT_STATUSES, inserts, insert_texts,
        )  # fmt: skip
        left = function(search)
        outcomes.append((left, classified, html_tables, foreign_tables, found, edits, counts, inserts, insert_texts))
    assert outcomes[0] == outcomes[1]
    assert outcomes[2] == outcomes[3]
    _lean_as_full(outcomes[2], outcomes[0])
    for name in ("base", "noscript", "a"):
        assert compiled.named_start_tags(text, elements, line_starts, name) == reference["named_start_tags"](
            text, elements, line_starts, name
        )
    assert [element.tag for element in compiled.named_start_tags(text, elements, line_starts, "a")] == [
        element.tag for element in elements if element.tag == "a" and element.position is not None
    ]


class _TextOnly:
    """A tree's element as plain_links reads any element (no ``attrs``): its start tag is
    read from the text, attribute by attribute."""

    def __init__(self, element: Any) -> None:
        self.position, self.source_col = element.position, element.source_col
        self.namespace, self.tag = element.namespace, element.tag


def _twin_on_the_tree(text: str, elements: list[Any], table: dict[str, int], textual: bool) -> Any:
    """The twin's plain_links over *elements* of *text*'s tree (each taken as :class:`_TextOnly`
    when *textual*), with what it hands back told by the element's index."""
    html = turbohtml.Namespace.HTML
    given_elements = [_TextOnly(element) for element in elements] if textual else elements
    index = {id(element): number for number, element in enumerate(given_elements)}
    html_tables: dict[Any, Any] = {}
    foreign_tables: dict[Any, Any] = {}

    def table_of(namespace: object, tag: str) -> Any:
        codes = None if tag == "object" else table
        (html_tables if namespace is html else foreign_tables)[tag if namespace is html else (namespace, tag)] = codes
        return codes

    found: list[Any] = []
    edits: list[Any] = []
    classified: dict[str, Any] = {}
    document = ParsedDocument(text)
    line_starts = None if document.flat else document.line_starts
    search = LinkSearch(
        text, given_elements, line_starts, None, html, html_tables, foreign_tables, table_of, classified, _classify,
        Link, "http://b/", "retrieval-url", found, edits,
    )  # fmt: skip
    left = [(index[id(element)], *rest) for element, *rest in reference["plain_links"](search)]
    return left, found, edits, classified


_TREE_PIECES = [
    "<svg>", "</svg>", "<math>", "</math>", "<b>", "</b>", "<p>", "<table>", "<td>", "<template>", "</template>",
    "<html lang=x href=y>", "<body href=z style='a:url(b)'>", "<html ping=p>", "<body ping=q>", "<a href=h>",
    "<foreignObject>", "<select>", "<image src=i>", "<!-- <a href=c> -->", "<noscript>",
    "<img src=x alt=a srcset='y 2x'>", "<a\0b href=n>", "<a x\0=1 href=o>",
]  # fmt: skip
_tree_pages = st.lists(st.one_of(_start_tag(), st.sampled_from(_TREE_PIECES)), max_size=10).map("".join)


@given(_tree_pages, st.sampled_from([None, URL, LAZY_URL, OTHER, STYLE, SRCSET]))
@example("<html lang=x href=y><html ping=p>", None)  # a repeated tag's attributes are not the text's
@example("<p><body href=z><body ping=q style='a:url(b)'>", STYLE)
@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_plain_links_reads_a_tree_by_its_names_as_by_the_text(text: str, style: int | None) -> None:
    """The twin reads an element of the tree by the attribute names the tree gives it (one
    pattern per name): the same links, edits and hand-backs as reading its start tag from the
    text attribute by attribute; and the same as the C, which always reads the text."""
    document = ParsedDocument(text)
    elements = document.tree.select(selector(frozenset({"data-src"})))
    table = {"href": URL, "src": LAZY_URL, "data-src": LAZY_URL, "srcset": SRCSET, "ping": OTHER}
    if style is not None:
        table["style"] = style
    assert _twin_on_the_tree(text, elements, table, False) == _twin_on_the_tree(text, elements, table, True)
    if compiled is not None:
        _same_on_the_tree(text, table, random.Random(len(text)))


@pytest.mark.corpus
def test_the_corpus() -> None:
    _needs_extension()
    table = {name: URL for name in attributes_of("html", "a")} | {"style": STYLE, "srcset": OTHER, "data-src": LAZY_URL}
    rng = random.Random(23)
    for text in _corpus_texts():
        offsets = [match.start() for match in re.finditer("<[A-Za-z]", text)]
        _same_on_the_tree(text, table, rng)
        for offset in offsets[:: max(1, len(offsets) // 200)]:
            assert compiled.tag_attributes(text, offset) == reference["tag_attributes"](text, offset)
            assert compiled.tag_end(text, offset) == reference["tag_end"](text, offset)
        for start in range(0, len(text), max(1, len(text) // 50)):
            assert compiled.conditional_head(text, start) == reference["conditional_head"](text, start)
        assert compiled.flattened(text) == reference["flattened"](text)
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
        functions = {name for name in dir(compiled) if not name.startswith("_")} - {"SOURCE"}  # SOURCE: its digest
        assert functions == set(HOMES)


@pytest.mark.parametrize("name", sorted(reference))
def test_each_twins_docstring_examples_hold(name: str) -> None:
    """A twin's examples: pytest's doctest run reads a module's names, which are the compiled
    functions where the extension is built, so the twins' own docstrings are run here."""
    function = reference[name]
    module = sys.modules[function.__module__]
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(function, name, module=module, globs=dict(vars(module))):
        runner.run(test)
    assert runner.failures == 0, f"{name}: {runner.failures} of {runner.tries} examples failed (printed above)"


# --- hostile callers -------------------------------------------------------------------------------------------------
# The compiled functions are safe against any caller: callbacks that empty, mutate or replace
# what they were handed, raise or return the wrong type; offsets at and past every edge;
# arguments of every wrong type. Each gives what its twin gives (a result, or the same kind
# of exception), and never reads memory it does not own (.ci/sanitize runs these under
# AddressSanitizer and UndefinedBehaviorSanitizer).


class _Index:
    """An integer by ``__index__`` alone, as numpy's are; *hook* runs on each conversion."""

    def __init__(self, value: int, hook: Any = None) -> None:
        self.value, self.hook = value, hook

    def __index__(self) -> int:
        if self.hook is not None:
            self.hook()
        return self.value

    def __repr__(self) -> str:
        return f"_Index({self.value})"


class _Loud:
    """An object whose every comparison and conversion raises."""

    def __eq__(self, other: object) -> bool:
        raise ZeroDivisionError("compared")

    __ne__ = __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise ZeroDivisionError("truth")

    def __index__(self) -> int:
        raise ZeroDivisionError("index")


_OBJECT = object()
_LOUD = _Loud()
_EDGES = [-(2**64), -(2**63), -(2**63) + 1, -(2**31), -2, -1, 0, 1, 2**31, 2**63 - 1, 2**63, 2**64]
# Every argument position of every function is given each of these in turn.
_HOSTILE = [
    None, True, False, *_EDGES, 1.5, 1e30, -1e30, float("nan"), "", "x", "<a href=x>", "\ud800", "é😀",
    b"", b"<a href=x>", bytearray(b"<a>"), memoryview(b"<a>"), [], [0], [(0, 0, "x")], (), (0,), {}, {"a": {}},
    _OBJECT, _LOUD, _Index(0), _Index(1), _Index(2**70), _Index(-1), str, tuple, Link, os.stat_result, len,
]  # fmt: skip


def _fresh(value: Any) -> Any:
    """*value*, or a copy of it when it is a container a call could change."""
    return type(value)(value) if type(value) in (list, dict, bytearray) else value


def _outcome(function: Any, arguments: tuple[Any, ...]) -> tuple[Any, ...]:
    """What *function* returns or the kind of what it raises, and its arguments after it
    (the containers it fills, or a callback changed; each callback, made afresh for each
    run, only as one)."""
    if function in (compiled.plain_links, reference["plain_links"]):
        function = _one_search(function)  # its arguments are the fields of its one LinkSearch
    try:
        result: tuple[str, Any] = ("value", function(*arguments))
    except Exception as error:
        result = ("error", _kind(error))
    after = tuple("callback" if callable(value) and not isinstance(value, type) else value for value in arguments)
    return (*result, after)


def _one_search(function: Any) -> Any:
    """plain_links taking the fields of its LinkSearch as arguments."""
    return lambda *fields: function(LinkSearch(*fields))


def _same_outcome(name: str, make: Any) -> Any:
    """*name* in C and in Python, each on the arguments *make* gives afresh: the same result
    or exception kind, and the same arguments after."""
    _needs_extension()
    compiled_outcome = _outcome(getattr(compiled, name), make())
    python_outcome = _outcome(reference[name], make())
    assert compiled_outcome == python_outcome, (name, compiled_outcome, python_outcome)
    return python_outcome[1]


def _html_elements(text: str) -> list[_Element]:
    return [_Element((1, match.start()), "a", "html") for match in re.finditer("<", text)]


_PAGE = "<a href=x><img srcset='a 1x, b 2x' src=y><svg><a href=z></svg><BASE href=q>"
_PAGE_ELEMENTS = _html_elements(_PAGE)
_PAGE_ELEMENTS[2].namespace = "svg"


_PAGE_TABLE = {"href": URL, "src": URL, "srcset": SRCSET}


def _page_table_of(namespace: object, tag: str) -> Any:
    return _PAGE_TABLE


def _page_arguments() -> list[Any]:
    """The fields of plain_links's LinkSearch on _PAGE, in order: fresh tables, cache and lists."""
    return [
        _PAGE, list(_PAGE_ELEMENTS), None, None, "html", {"a": _PAGE_TABLE, "img": _PAGE_TABLE}, {}, _page_table_of,
        {}, _classify, Link, "http://b/", "base-element", [], [],
    ]  # fmt: skip


# A valid call of each function: its arguments, made afresh.
_VALID: dict[str, Any] = {
    "tag_attributes": lambda: ["<a href=x title>", 0],
    "tag_end": lambda: ["<a href=x title>", 0],
    "end_tag": lambda: ["<style>x</style >", "style", 0],
    "conditional_head": lambda: ["<p><!--[if IE]>", 0],
    "flattened": lambda: ["a\nb\r"],
    "last_frameset_tag": lambda: ["<frameset>\n<FRAMESET/>"],
    "decode_qp": lambda: [b"a=3D b =\r\nc"],
    "scan_css": lambda: ["a{background:url(x)}@import 'y';"],
    "classified_quickly": lambda: [
        ("same-document", None, None),
        ("absolute", None, None),
        False,
        {},
        _classify,
        _classify_shared,
        "x",
    ],
    "utf8_offsets": lambda: ["aé😀", [0, 1, 2, 3], False],
    "utf8_splice": lambda: ["aé😀", "aé😀".encode(), [(0, 0, "é"), (2, 3, "x")], False, str.encode],
    "named_start_tags": lambda: [_PAGE, list(_PAGE_ELEMENTS), None, "base"],
    "plain_links": _page_arguments,
}


@pytest.mark.parametrize("name", sorted(_VALID))
def test_every_argument_of_every_wrong_type(name: str) -> None:
    """Each argument in turn replaced by a value of another type, or an integer past any
    edge: the twins agree (a result, or the same kind of exception)."""
    assert set(_VALID) == set(HOMES)
    _same_outcome(name, _VALID[name])
    for position in range(len(_VALID[name]())):
        for value in _HOSTILE:

            def make(position: int = position, value: Any = value) -> tuple[Any, ...]:
                arguments = _VALID[name]()
                arguments[position] = _fresh(value)
                return tuple(arguments)

            _same_outcome(name, make)


def _lean_page_arguments() -> list[Any]:
    """_page_arguments for a lean search: counts, kept, inserts and insert_texts after them."""
    return [*_page_arguments(), {}, KEPT_STATUSES, bytearray(), []]


@pytest.mark.parametrize("position", range(len(_lean_page_arguments())))
def test_a_lean_plain_links_meets_hostile_arguments(position: int) -> None:
    """A lean search (counts and kept given) against every hostile value in each field: the
    same result or exception kind in C and in Python, and the same fields after."""
    _same_outcome("plain_links", _lean_page_arguments)
    extra = [{"rewritten": 1.5}, {"rewritten": "x"}, set(), frozenset({"absolute"}), {"no-base"}, bytearray(b"x")]
    for value in [*_HOSTILE, *extra]:

        def make(value: Any = value) -> tuple[Any, ...]:
            arguments = _lean_page_arguments()
            arguments[position] = type(value)(value) if type(value) in (list, dict, set, bytearray) else value
            return tuple(arguments)

        _same_outcome("plain_links", make)


# Texts of each str kind, the empty one, and huge ones (a mebibyte of each kind).
_KIND_TEXTS = [
    "", "<", "<a href=x>", "<a href=é></a><!--[if]>", "<a href=€></a><!--[", "<a href=😀></a><!--[</x>",
    "<!--[\n" * (1 << 18), "<a href=é>" * (1 << 17), "€<!--[" * (1 << 18), "😀\ud800</x>" * (1 << 18),
]  # fmt: skip


@pytest.mark.parametrize(
    "text", _KIND_TEXTS, ids=lambda text: f"{len(text)}-{max(text, default='').encode('unicode-escape')[:10]!r}"
)
def test_offsets_at_and_past_every_edge(text: str) -> None:
    """Offsets -2**64 ... 2**64, around 0 and len(text), plain and by __index__, in empty,
    small and huge texts of each str kind."""
    n = len(text)
    offsets = [*_EDGES, -n - 1, -n, n - 1, n, n + 1]
    for offset in [*offsets, *map(_Index, offsets)]:
        _same("tag_attributes", text, offset)
        _same("tag_end", text, offset)
        _same("end_tag", text, "x", offset)
        _same("conditional_head", text, offset)
        _same("utf8_offsets", text, [offset], False)
        _same("utf8_offsets", text, [0, offset], True)
        for edit in ((offset, offset, "é"), (0, offset, "x"), (offset, n, "")):
            _same("utf8_splice", text, text.encode("utf-8", "surrogatepass"), [edit], False, str.encode)
        _same("named_start_tags", text, [_Element((1, offset), "a", "html")], None, "a")
        _same("named_start_tags", text, [_Element((1, offset), "a", "html")], [0], "a")
        _same("named_start_tags", text, [_Element((offset, 0), "a", "html")], [0, 1], "a")
        _same_plain_links(text, [_Element((1, offset), "a", "html")], ({"a": {"href": URL}}, {}, {}))
        _same_plain_links(
            text, [_Element((offset, 0), "a", "html")], ({"a": {"href": URL}}, {}, {}), line_starts=[0, n]
        )
    _same("flattened", text)
    _same("scan_css", text)


def test_conditional_head_past_the_end_finds_nothing() -> None:
    """The start at the largest index: no head (the C added 4 to it, overflowed, and found one
    at 0)."""
    _needs_extension()
    for start in (2**63 - 1, 2**63 - 4, 2**64):
        assert compiled.conditional_head("<!--[", start) == -1
        assert compiled.end_tag("</x>", "x", start) == 4


class _Hostile:
    """An element whose attributes run *hook* when read (properties, as a hostile tree's)."""

    def __init__(self, position: tuple[int, int], hook: Any, tag: str = "a", namespace: str = "html") -> None:
        self._position, self._tag, self._namespace, self.hook = position, tag, namespace, hook

    def _run(self) -> None:
        if self.hook is not None:
            self.hook(self)

    @property
    def position(self) -> Any:
        self._run()
        return self._position

    @property
    def source_col(self) -> Any:
        self._run()
        return self._position[1]

    @property
    def namespace(self) -> Any:
        self._run()
        return self._namespace

    @property
    def tag(self) -> Any:
        self._run()
        return self._tag


def _emptied(elements: list[Any]) -> Any:
    """A hook that empties *elements*, and then fills the memory it freed with other objects."""
    junk: list[Any] = []

    def hook(*_: Any) -> None:
        elements.clear()
        junk.extend(_Element((9, 9), "junk", "junk") for _ in range(64))

    return hook


def _plain_links_with(make: Any) -> None:
    """plain_links in C and in Python on the arguments *make* gives afresh (each call of
    make builds its own elements, so that each run's hooks empty their own list)."""
    _needs_extension()
    outcomes = [_outcome(function, make()) for function in (compiled.plain_links, reference["plain_links"])]
    assert _comparable(outcomes[0]) == _comparable(outcomes[1])


def _comparable(outcome: tuple[Any, ...]) -> Any:
    """An outcome of plain_links with each element as its position, so that two runs over
    elements of their own compare."""

    def plain(value: Any) -> Any:
        if isinstance(value, (_Element, _Hostile)):
            return ("element", value._position if isinstance(value, _Hostile) else value.position)
        if isinstance(value, (list, tuple)) and not isinstance(value, Link):
            return type(value)(map(plain, value))
        return value

    kind, result, arguments = outcome
    return (
        kind,
        plain(result),
        [plain(argument) for index, argument in enumerate(arguments) if index in (5, 6, 8, 13, 14)],
    )


@pytest.mark.parametrize("where", ["position", "namespace", "tag", "classify", "table_of"])
@pytest.mark.parametrize("lines", [False, True])
def test_plain_links_when_a_callback_empties_the_elements(where: str, lines: bool) -> None:
    """A callback (an element's attribute, classify, table_of) empties the list of elements
    plain_links was handed: the C read the freed list (a segfault); now it holds its own
    references, and stops where Python's loop stops."""
    text = "<a href=x><a href=y><b href=z><a href=w>"

    def make() -> tuple[Any, ...]:
        elements: list[Any] = []
        hook = _emptied(elements)
        for n, match in enumerate(re.finditer("<", text)):
            trigger = where in ("position", "namespace", "tag") and n == 1
            tag = "b" if text[match.start() + 1] == "b" else "a"
            elements.append(
                _Hostile((1, match.start()), hook if trigger else None, tag, "svg" if tag == "b" else "html")
            )
        if where == "tag":
            elements[1]._namespace = "svg"

        def classify(reference: str) -> Any:
            if where == "classify" and reference == "y":
                hook()
            return _classify(reference)

        def table_of(namespace: object, tag: str) -> Any:
            if where == "table_of":
                hook()
            return {"href": URL}

        line_starts = [0] if lines else None
        return (
            text, elements, line_starts, None, "html", {"a": {"href": URL}}, {}, table_of, {}, classify,
            Link, None, None, [], [],
        )  # fmt: skip

    _plain_links_with(make)


def test_named_start_tags_when_an_element_empties_the_list() -> None:
    text = "<base><base><p><base>"

    def make() -> tuple[Any, ...]:
        elements: list[Any] = []
        hook = _emptied(elements)
        elements += [
            _Hostile((1, match.start()), hook if n == 1 else None) for n, match in enumerate(re.finditer("<", text))
        ]
        return text, elements, None, "base"

    _needs_extension()
    outcomes = [_outcome(function, make()) for function in (compiled.named_start_tags, reference["named_start_tags"])]
    assert _comparable(outcomes[0])[:2] == _comparable(outcomes[1])[:2]


def test_utf8_splice_when_encode_empties_the_edits() -> None:
    """encode empties the list of edits (and fills the memory freed with other strings): the
    C read the freed edits; now it holds its own, as Python's sorted copy does."""
    text = "é" * 40

    def make() -> tuple[Any, ...]:
        edits = [(n, n + 1, "".join(["ü", str(n)] * 20)) for n in range(0, 40, 2)]
        junk: list[str] = []

        def encode(new: str) -> bytes:
            edits.clear()
            junk.extend("".join(["ä", str(n)] * 20) for n in range(200))
            return new.encode()

        return text, text.encode(), edits, False, encode

    _same_outcome("utf8_splice", make)


def test_utf8_splice_when_encode_returns_another_type() -> None:
    """encode gives what is no bytes (a bytearray or a memoryview the twin's join took)."""
    for returned in (None, "x", bytearray(b"x"), memoryview(b"x"), 5, b"\xff" * 3):
        _same("utf8_splice", "aé", "aé".encode(), [(1, 2, "é")], False, lambda new, returned=returned: returned)


def test_utf8_offsets_and_splice_when_an_offset_changes_the_list() -> None:
    """An offset whose __index__ empties the list it is in."""

    def offsets() -> tuple[Any, ...]:
        values: list[Any] = []
        values += [0, _Index(1, values.clear), 2, 3]
        return "abcd", values, False

    _same_outcome("utf8_offsets", offsets)

    def splice() -> tuple[Any, ...]:
        edits: list[Any] = []
        edits += [(0, _Index(1, edits.clear), "é"), (2, 3, "x")]
        return "abcd", b"abcd", edits, False, str.encode

    _same_outcome("utf8_splice", splice)


def _classifier(answer: Any) -> Any:
    return lambda reference: answer() if callable(answer) else answer


_ANSWERS = [
    None, [], ["rewritten", "http://h/x", None], ("rewritten", "http://h/x"), ("rewritten", "http://h/x", None, 1),
    ("rewritten", b"http://h/x", None), ("rewritten", 5, None), ("rewritten", None, None), ("relinked", None, None),
    (_LOUD, "http://h/x", None), ("rewritten", _LOUD, None), ("rewritten", "", None), (b"rewritten", "y", None),
    lambda: 1 / 0,
]  # fmt: skip


def test_plain_links_when_classify_misbehaves() -> None:
    """classify raises or answers what is no (status, resolved, reason) with a str or None
    resolved, or a status whose comparison raises."""
    table = {"href": URL, "srcset": SRCSET}
    for text in ("<a href=x>", "<a href='&amp;x'>", "<img srcset='x 1x, y'>", "<a href=''>"):
        elements = [_Element((1, 0), "img" if "img" in text else "a", "html")]
        for answer in _ANSWERS:
            _same_plain_links(text, elements, ({"a": table, "img": table}, {}, {}), classify=_classifier(answer))


def test_plain_links_when_a_link_table_is_wrong() -> None:
    """A link table (from the tables or table_of) that is no dict, or holds what is no code."""
    elements = [_Element((1, 0), "a", "html"), _Element((1, 10), "b", "svg")]
    for codes in (
        [], (), {"href": 1.0}, {"href": True}, {"href": "1"}, {"href": None}, {"href": _LOUD}, {"href": 2**70},
        {"href": _Index(1)}, {"href": -1}, {"href": 0},
    ):  # fmt: skip
        _same_plain_links("<a href=x><b href=y>", elements, ({"a": codes}, {}, {"b": codes}))


def test_plain_links_makes_only_tuples_tuple_new_would() -> None:
    """The link type is made as tuple.__new__ makes it, which refuses a struct sequence: the
    C made os.stat_result's with eleven items, and its deallocation read the fields past
    them (a crash). And it is made by field names: a type without Link's (a plain tuple has
    none) is refused alike."""
    for link_type in (os.stat_result, time.struct_time, tuple, Link, *_LINK_TYPES):
        _same_outcome(
            "plain_links", lambda link_type=link_type: (*_page_arguments()[:10], link_type, None, None, [], [])
        )


# Named tuples with Link's fields in another order (filled by name), and ones with a field
# missing, one more, a repeated name or a name that is no str (refused).
_REVERSED = NamedTuple("_Reversed", [(name, object) for name in reversed(Link._fields)])  # type: ignore[misc]
_SHORT = NamedTuple("_Short", [(name, object) for name in Link._fields[:-1]])  # type: ignore[misc]
_LONG = NamedTuple("_Long", [(name, object) for name in (*Link._fields, "extra")])  # type: ignore[misc]


class _Repeated(tuple):  # type: ignore[type-arg]
    _fields = (*Link._fields[:-1], "start")


class _NotText(tuple):  # type: ignore[type-arg]
    _fields = (*Link._fields[:-1], b"end")


class _NotATuple(tuple):  # type: ignore[type-arg]
    _fields: ClassVar[list[str]] = list(Link._fields)


_LINK_TYPES = (_REVERSED, _SHORT, _LONG, _Repeated, _NotText, _NotATuple)


def test_plain_links_makes_links_by_field_name() -> None:
    """A link type whose fields are Link's in another order gets each value in its field."""
    _needs_extension()
    for function in (compiled.plain_links, reference["plain_links"]):
        found: list[Any] = []
        fields = _page_arguments()
        fields[10], fields[13] = _REVERSED, found
        function(LinkSearch(*fields))
        expected: list[Any] = []
        fields = _page_arguments()
        fields[13] = expected
        function(LinkSearch(*fields))
        assert found and all(type(link) is _REVERSED for link in found)
        assert [Link(**link._asdict()) for link in found] == expected


def test_plain_links_when_callbacks_change_the_tables_and_lists() -> None:
    """classify and table_of clear the cache, the tables and the lists being filled, replace
    a table's codes and plant a classification (None) in the cache: both twins see the same
    changes at the same moments (the Python twin classified a cached None again; the C
    refused it)."""

    def make() -> tuple[Any, ...]:
        html_tables: dict[str, Any] = {"a": {"href": URL, "src": URL}}
        classified: dict[str, Any] = {}
        found: list[Any] = []
        edits: list[Any] = []

        def classify(reference: str) -> Any:
            classified.clear()
            classified["y"] = None  # what the cache holds is the classification, whatever it is
            html_tables.clear()
            found.clear()
            edits.clear()
            html_tables["a"] = {"href": OTHER}
            return _classify(reference)

        def table_of(namespace: object, tag: str) -> Any:
            html_tables.clear()
            return {"src": URL}

        return (
            "<a href=x src=y><a href=qq><img src=z>", _html_elements("<a href=x src=y><a href=qq><img src=z>"),
            None, None, "html", html_tables, {}, table_of, classified, classify, Link, None, None, found, edits,
        )  # fmt: skip

    _plain_links_with(make)
