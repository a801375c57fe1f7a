"""The resolver: behaviour the RFC tables do not show, and properties over arbitrary strings."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rewriter import RFC1808URL, RULES, Resolver, UnresolvableReference, URIReference, parse, resolve
from rewriter.url.resolve import (
    RULE_SETS,
    remove_dot_segments,
    remove_dot_segments_1808,
    remove_dot_segments_by_rule,
)

RFC_RULES = ("rfc1808", "rfc2396", "rfc3986")


# --- every scheme resolves ---------------------------------------------------


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize(
    ("base", "reference", "expected"),
    [
        ("git+ssh://git@host/org/repo/a/b", "../c", "git+ssh://git@host/org/repo/c"),
        ("s3://bucket/dir/key.json", "other.json", "s3://bucket/dir/other.json"),
        ("thismessage:/", "images/logo.png", "thismessage:/images/logo.png"),
        ("thismessage:/index.html", "#top", "thismessage:/index.html#top"),
        (
            "file:///C:/B133AD19/Hey.htm",
            "Hey.files/image001.jpg",
            "file:///C:/B133AD19/Hey.files/image001.jpg",
        ),
        ("ftp://ftp.example.org/pub/", "file.txt", "ftp://ftp.example.org/pub/file.txt"),
    ],
)
def test_every_scheme_resolves(rules: str, base: str, reference: str, expected: str) -> None:
    assert resolve(base, reference, rules=rules) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("rules", RFC_RULES)
@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("g?", "http://a/b/c/g?"),
        ("g#", "http://a/b/c/g#"),
        ("g?#", "http://a/b/c/g?#"),
        ("fontello.eot?#iefix", "http://a/b/c/fontello.eot?#iefix"),
        ("café menu.html", "http://a/b/c/café menu.html"),
        ("%7Euser/%41", "http://a/b/c/%7Euser/%41"),
        ("G/Ünïcode?Q=Ä#F", "http://a/b/c/G/Ünïcode?Q=Ä#F"),
        ("/a b/./c", None),
    ],
)
def test_no_encoding_or_case_change(rules: str, reference: str, expected: str | None) -> None:
    result = resolve("http://a/b/c/d", reference, rules=rules)  # type: ignore[arg-type]
    if expected is None:  # dot segments in an absolute path: only RFC 3986 removes them
        expected = "http://a/a b/c" if rules == "rfc3986" else "http://a/a b/./c"
    assert result == expected


def test_whatwg_encodes_as_browsers_do() -> None:
    assert resolve("http://a/b/c/d", "café menu.html", rules="whatwg") == "http://a/b/c/caf%C3%A9%20menu.html"
    assert resolve("HTTP://A/b/c/d", "g?#", rules="whatwg") == "http://a/b/c/g?#"


def test_absolute_references_of_any_scheme_are_kept() -> None:
    for rules in RULES:
        for reference in ("mailto:x@example.org", "javascript:void(0)", "urn:isbn:0451450523"):
            assert resolve("http://a/b/c/d", reference, rules=rules) == reference  # type: ignore[arg-type]


def test_rfc3986_removes_dot_segments_from_every_absolute_path_even_opaque_ones() -> None:
    # §5.2.2 applies remove_dot_segments to any reference with a scheme. The
    # document engines never pass absolute references (docs/decisions.md).
    assert resolve("http://a/b", "data:,a/../b") == "data:/b"
    for rules in ("rfc1808", "rfc2396", "whatwg"):
        assert resolve("http://a/b", "data:,a/../b", rules=rules) == "data:,a/../b"  # type: ignore[arg-type]


def test_rfc3986_removes_dot_segments_from_absolute_references() -> None:
    assert resolve("http://a/b", "https://x/p/./q/../r") == "https://x/p/r"
    assert resolve("http://a/b", "https://x/p/./q/../r", rules="rfc2396") == "https://x/p/./q/../r"


def test_rfc1808_params_are_their_own_component() -> None:
    assert resolve("ftp://h/dir/file;type=a", "other", rules="rfc1808") == "ftp://h/dir/other"
    assert resolve("ftp://h/dir/file;type=a", "?x", rules="rfc1808") == "ftp://h/dir/file;type=a?x"
    assert resolve("ftp://h/dir/file;type=a", ";type=d", rules="rfc1808") == "ftp://h/dir/file;type=d"


def test_authority_with_empty_path_gets_a_slash() -> None:
    # RFC 3986 §5.2.3; RFC 1808 and 2396 by their §2.1/§3 syntax (docs/decisions.md).
    for rules in RULES:
        assert resolve("http://a", "g", rules=rules) == "http://a/g"  # type: ignore[arg-type]
    for rules in ("rfc2396", "rfc3986", "whatwg"):
        assert resolve("http://a?q", "g", rules=rules) == "http://a/g"  # type: ignore[arg-type]
    # RFC 1808 §2.4.3: the net_loc runs to the next "/", so here it is "a?q".
    assert resolve("http://a?q", "g", rules="rfc1808") == "http://a?q/g"


def test_base_with_dot_segments_is_used_in_absolute_form() -> None:
    assert resolve("http://a/b/./c/../d", "") == "http://a/b/d"
    assert resolve("http://a/b/./c/../d", "?x") == "http://a/b/d?x"
    assert resolve("http://a/b/./c/../d", "g") == "http://a/b/g"


def test_non_strict_reading() -> None:
    assert resolve("http://a/b/c/d", "HTTP:g", strict=False) == "http://a/b/c/g"
    assert resolve("http://a/b/c/d", "https:g", strict=False) == "https:g"
    assert resolve("http://a/b/c/d", "http:g", rules="rfc1808", strict=False) == "http:g"


# --- what cannot be resolved ---------------------------------------------------


@pytest.mark.parametrize("rules", RULES)
@pytest.mark.parametrize(
    ("base", "reason_part"),
    [
        ("mailto:someone@example.org", "opaque"),
        ("javascript:void(0)", "opaque"),
        ("data:text/html,<p>x</p>", "opaque"),
        ("cid:part1@example.org", "opaque"),
        ("urn:isbn:0451450523", "opaque"),
        ("relative/path", "not"),
        ("/absolute/path", "not"),
        ("", "no base"),
    ],
)
def test_unusable_bases_raise_with_reason(rules: str, base: str, reason_part: str) -> None:
    with pytest.raises(UnresolvableReference) as caught:
        resolve(base, "g", rules=rules)  # type: ignore[arg-type]
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.base == base
    assert error.reference == "g"
    assert error.reason
    if rules != "whatwg":
        assert reason_part in error.reason
    assert repr("g") in str(error)


@pytest.mark.parametrize("rules", RULES)
def test_fragment_resolves_against_opaque_base(rules: str) -> None:
    assert resolve("mailto:x@example.org", "#s", rules=rules) == "mailto:x@example.org#s"  # type: ignore[arg-type]


@pytest.mark.parametrize("rules", RULES)
def test_absolute_reference_needs_no_base(rules: str) -> None:
    for base in ("", "not a base", "mailto:x"):
        assert resolve(base, "https://example.org/x", rules=rules) == "https://example.org/x"  # type: ignore[arg-type]


def test_whatwg_failure_reason() -> None:
    with pytest.raises(UnresolvableReference, match="WHATWG URL parser rejects it"):
        resolve("http://a/", "http://[::1", rules="whatwg")


def test_unknown_rules_is_a_plain_value_error() -> None:
    with pytest.raises(ValueError, match="unknown rules") as caught:
        resolve("http://a/", "g", rules="rfc9999")  # type: ignore[arg-type]
    assert not isinstance(caught.value, UnresolvableReference)


# --- components --------------------------------------------------------------


def test_parse_rfc3986_components() -> None:
    assert parse("http://a/b/c/d;p?q#f") == URIReference("http", "a", "/b/c/d;p", "q", "f")
    assert parse("g?#") == URIReference(None, None, "g", "", "")
    assert parse("//") == URIReference(None, "", "", None, None)
    assert parse("10:30") == URIReference(None, None, "10:30", None, None)


def test_parse_rfc1808_components() -> None:
    url = parse("http://a/b/c/d;p?q#f", rules="rfc1808")
    assert url == RFC1808URL("http", "a", "/b/c/d", "p", "q", "f")
    # §2.4 order: the query is found before the params, so ";" after "?" is query.
    assert parse("g?y;x", rules="rfc1808") == RFC1808URL(None, None, "g", None, "y;x", None)


def test_components_are_immutable() -> None:
    url = parse("http://a/b")
    with pytest.raises(AttributeError):
        url.path = "/c"  # type: ignore[misc]


# --- the reusable form ---------------------------------------------------------


def test_resolver_parses_once_and_resolves_many() -> None:
    page = Resolver("https://example.org/docs/guide/index.html")
    assert [page.resolve(r) for r in ("a", "../b", "/c", "#d")] == [
        "https://example.org/docs/guide/a",
        "https://example.org/docs/b",
        "https://example.org/c",
        "https://example.org/docs/guide/index.html#d",
    ]
    assert "rfc3986" in repr(page)


def test_resolver_with_unusable_base_still_resolves_absolute_references() -> None:
    page = Resolver("")
    assert page.resolve("http://x/y") == "http://x/y"
    with pytest.raises(UnresolvableReference):
        page.resolve("y")


# --- the two routes through each algorithm agree ---------------------------------

_pieces = st.lists(
    st.sampled_from([*"ab:/?#.;@%\\ \n\t\x00é1", "http:", "HTTP:", "s3:", "mailto:", "//", "../", "./", "/.", ".."]),
    max_size=12,
).map("".join)
_any = st.one_of(st.text(), _pieces)
_bases = st.one_of(
    _any,
    st.sampled_from(
        [
            "http://a/b/c/d;p?q#f",
            "http://a",
            "http://a/b/./c/",
            "git+ssh://h/r/x",
            "thismessage:/",
            "file:///C:/x/y",
            "mailto:x",
            "http:/x",
        ]
    ),
    _pieces.map(lambda tail: "http://h/" + tail),
)


def _outcome(resolve_one, reference: str) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    try:
        return ("ok", resolve_one(reference))
    except UnresolvableReference as error:
        return ("raises", error.reason)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("rules", RFC_RULES)
@settings(max_examples=1500, suppress_health_check=list(HealthCheck), deadline=None)
@given(base=_bases, reference=_any)
@example(base="http://a/b/c/d;p?q", reference="?y")
@example(base="http://a", reference="//")
def test_shortcuts_agree_with_the_full_algorithm(rules: str, strict: bool, base: str, reference: str) -> None:
    shortcut = RULE_SETS[rules](base, strict)
    full = RULE_SETS[rules](base, strict, shortcuts=False)
    assert _outcome(shortcut, reference) == _outcome(full, reference)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="/.a", max_size=14))
def test_remove_dot_segments_matches_the_rfc_rules(path: str) -> None:
    assert remove_dot_segments(path) == remove_dot_segments_by_rule(path)


def _rfc1808_step_6_as_written(path: str) -> str:
    """RFC 1808 §4 step 6 a-d literally: step c deletes the leftmost "<segment>/../" again
    and again. The oracle for the one-pass version."""
    if "." not in path:
        return path
    rooted = path[:1] == "/"
    segments = (path[1:] if rooted else path).split("/")
    last = len(segments) - 1
    segments = [s for i, s in enumerate(segments) if s != "." or i == last]
    if segments[-1] == ".":
        segments[-1] = ""
    i = 0
    while i < len(segments) - 2:
        if segments[i + 1] == ".." and segments[i] != "..":
            del segments[i : i + 2]
            i = max(i - 1, 0)
        else:
            i += 1
    if len(segments) >= 2 and segments[-1] == ".." and segments[-2] != "..":
        segments[-2:] = [""]
    return ("/" if rooted else "") + "/".join(segments)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet="/.a", max_size=16))
def test_rfc1808_dot_segments_match_the_steps_as_written(path: str) -> None:
    assert remove_dot_segments_1808(path) == _rfc1808_step_6_as_written(path)


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/a/b/c/./../../g", "/a/g"), ("mid/content=5/../6", "mid/6"), ("a/../b", "/b"), ("/..", "/"), ("", "")],
)
def test_remove_dot_segments_examples(path: str, expected: str) -> None:
    # The first two are RFC 3986 §5.2.4's own; "a/../b" shows rule C at the start.
    assert remove_dot_segments(path) == expected


# --- properties on arbitrary strings ----------------------------------------------


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("rules", RULES)
@settings(max_examples=1000, suppress_health_check=list(HealthCheck), deadline=None)
@given(base=_bases, reference=_any)
@example(base="http:.", reference="")
@example(base="mailto:x", reference="")
@example(base="0", reference="")
def test_properties(rules: str, strict: bool, base: str, reference: str) -> None:
    try:
        result = resolve(base, reference, rules=rules, strict=strict)  # type: ignore[arg-type]
    except UnresolvableReference:
        return  # the only exception allowed
    assert isinstance(result, str)
    # The result is absolute: it has a scheme by the rules' own syntax.
    model = "rfc1808" if rules == "rfc1808" else "rfc3986"
    assert parse(result, rules=model).scheme is not None  # type: ignore[arg-type]
    # Resolving the result again changes nothing.
    assert resolve(base, result, rules=rules, strict=strict) == result  # type: ignore[arg-type]


@pytest.mark.parametrize("rules", RULES)
@settings(max_examples=500, deadline=None)
@given(url=_any)
def test_parse_recomposes_exactly(rules: str, url: str) -> None:
    model = "rfc1808" if rules == "rfc1808" else "rfc3986"
    assert str(parse(url, rules=model)) == url  # type: ignore[arg-type]
