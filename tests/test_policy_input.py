"""Policy input never crashes an engine (issue 22, classes 3 and 4).

Every value of a :class:`~rewriter.policy.Policy` is checked when the policy is made: a bad one
is a ValueError there, never an exception inside an engine later. An attribute name is bad only
when no start tag can have it (HTML §13.2.5.32-34): any other, ``"q`` or ``a{`` or ``=`` or a
control character included, is a name like others, and the engines find it. The lazy-attribute
gate reads the value as the tokenizer gives it, character references decoded.
"""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewriter.css.stylesheet import rewrite_css
from rewriter.html import bs4 as bs4_adapter
from rewriter.html import lxml as lxml_adapter
from rewriter.html.engine import find_links, rewrite_html
from rewriter.policy import Policy, attribute_name_problem
from rewriter.url.resolve import RULES

URL = "http://h.example/dir/page.html"


@pytest.mark.parametrize(
    "changes",
    [
        {"lazy_attributes": "data-src"},  # one string, not a collection of names
        {"lazy_attributes": b"data-src"},
        {"lazy_attributes": 3},
        {"lazy_attributes": [None]},
        {"lazy_attributes": [""]},
        {"lazy_attributes": ["a b"]},  # whitespace ends a name
        {"lazy_attributes": ["a\tb"]},
        {"lazy_attributes": ["a/b"]},
        {"lazy_attributes": ["a>b"]},
        {"lazy_attributes": ["a=b"]},  # "=" after the first character starts the value
        {"lazy_attributes": ["a\0b"]},  # read as U+FFFD by the tokenizer
        {"lazy_attributes": ["a\ud800"]},
        {"rules": "rfc9999"},
        {"rules": ["whatwg"]},
        {"strict": "yes"},
        {"same_document": 1},
        {"remove_base": None},
        {"relink": "x"},
        {"keep": 3},
    ],
)
def test_bad_values_are_refused_when_the_policy_is_made(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Policy(**changes)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Policy().clone(**changes)


# Names the tokenizer gives (HTML §13.2.5.33), each a CSS selector's syntax if not escaped.
UNUSUAL_NAMES = [
    '"q',
    "a{",
    "=",
    "==x"[:1] + "x",
    "x\x01y",
    "1a",
    "-1",
    "-",
    "--",
    "a\\b",
    ":c",
    "é",
    "a'b",
    "a<b",
    "[x]",
]


@pytest.mark.parametrize("name", UNUSUAL_NAMES)
def test_unusual_names_are_names(name: str) -> None:
    """Any name a start tag can have is found, by the engine and by both tree adapters."""
    assert attribute_name_problem(name) is None
    policy = Policy(lazy_attributes={name, "data-src"})
    document = f'<p><img {name}="pic.png" data-src="d.png"></p>'
    found = find_links(document, url=URL, policy=policy).links
    assert [(link.attribute, link.resolved) for link in found] == [
        (name, "http://h.example/dir/pic.png"),
        ("data-src", "http://h.example/dir/d.png"),
    ]
    soup = BeautifulSoup(document, "html.parser")
    assert [link.attribute for link in bs4_adapter.absolutize(soup, url=URL, policy=policy).links] == [name, "data-src"]


def test_names_are_lowercased_as_the_tokenizer_does() -> None:
    """HTML §13.2.5.33: ASCII upper alphas only."""
    assert Policy(lazy_attributes={"Data-SRC", "data-É"}).lazy_attributes == {"data-src", "data-É"}
    found = find_links('<img DATA-É="a.png">', url=URL, policy=Policy(lazy_attributes={"data-É"})).links
    assert [link.resolved for link in found] == ["http://h.example/dir/a.png"]


def test_the_lazy_gate_reads_the_decoded_value() -> None:
    """``&#x20;`` is a space, ``&lt;`` a "<": what the tokenizer gives decides, not the source text."""
    links = find_links(
        '<img data-src="a&#x20;b.png"><img data-src="&lt;i&gt;x"><img data-src="&#x20;c.png&#x9;">'
        '<img data-src="d&amp;e.png"><img data-srcset="s.png&#x20;2x"><div data-bg="f&#10;g" style="">',
        url=URL,
    ).links
    assert [(link.attribute, link.resolved) for link in links] == [
        ("data-src", "http://h.example/dir/c.png"),
        ("data-src", "http://h.example/dir/d&e.png"),
        ("data-srcset", "http://h.example/dir/s.png"),
    ]


# --------------------------------------------------------------------------
# Property: arbitrary names and values through Policy and every engine
# --------------------------------------------------------------------------

_name_pieces = st.sampled_from(['"', "'", "{", "}", "=", ":", "[", "]", "\\", "<", "-", "1", "a", "é", " ", "/", ">"])
_names = st.one_of(st.text(max_size=12), st.lists(_name_pieces, min_size=0, max_size=6).map("".join))
_values = st.text(max_size=30)


def _attribute(name: str, value: str, quoting: int) -> str:
    if quoting == 0:
        return f'{name}="{value.replace("&", "&amp;").replace(chr(34), "&quot;")}"'
    if quoting == 1:
        return f"{name}='{value}'"
    return f"{name}={value}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    names=st.lists(_names, min_size=1, max_size=3),
    value=_values,
    quoting=st.integers(0, 2),
    element=st.sampled_from(["img", "a", "div", "svg", "style"]),
)
def test_arbitrary_names_and_values(names: list[str], value: str, quoting: int, element: str) -> None:
    """Only a ValueError when the policy is made; nothing raised by an engine afterwards."""
    try:
        policy = Policy(lazy_attributes=names)
    except ValueError:
        assert any(attribute_name_problem(name) is not None for name in names if isinstance(name, str))
        return
    attributes = " ".join(_attribute(name, value, quoting) for name in names)
    document = f"<p><{element} {attributes}>x</{element}><img {attributes}></p>"
    for rules in RULES:
        chosen = policy.clone(rules=rules)
        for data in (document, document.encode("utf-8", "surrogatepass")):
            rewrite_html(data, url=URL, policy=chosen).links  # noqa: B018  (the links are built)
            find_links(data, policy=chosen).links  # noqa: B018
        rewrite_css(f"a{{b:url({value})}}", url=URL, policy=chosen)
    soup = BeautifulSoup(document, "html.parser")
    bs4_adapter.absolutize(soup, url=URL, policy=policy)
    import lxml.html

    try:
        tree = lxml.html.fromstring(document)
    except ValueError:  # lxml refuses some strings (control characters) before we see them
        return
    lxml_adapter.absolutize(tree, url=URL, policy=policy)
