"""The standards' own examples, from ../shared/conformance (sources.md there says what each is)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import load_shared_json, shared_cases, shared_path

from rewriter import UnresolvableReference, resolve


def _require(case: Any, name: str) -> None:
    if case is None:
        shared_path("conformance", name)


def _label(case: Any) -> str:
    return repr(case["ref"]) if isinstance(case, dict) else "shared-absent"


@pytest.mark.parametrize("case", shared_cases("conformance", "rfc1808.json"), ids=_label)
def test_rfc1808_examples(case: Any) -> None:
    _require(case, "rfc1808.json")
    assert resolve(case["base"], case["ref"], rules="rfc1808") == case["expected"]


@pytest.mark.parametrize("case", shared_cases("conformance", "rfc2396.json"), ids=_label)
def test_rfc2396_examples(case: Any) -> None:
    _require(case, "rfc2396.json")
    assert resolve(case["base"], case["ref"], rules="rfc2396") == case["expected"]
    if case["ref"] == "http:g":  # Appendix C: "http://a/b/c/g" for backward compatibility
        assert resolve(case["base"], case["ref"], rules="rfc2396", strict=False) in case["alternatives"]


@pytest.mark.parametrize("case", shared_cases("conformance", "rfc3986.json"), ids=_label)
def test_rfc3986_examples(case: Any) -> None:
    _require(case, "rfc3986.json")
    assert resolve(case["base"], case["ref"]) == case["expected"]
    expected_non_strict = case.get("alternatives", [case["expected"]])
    assert resolve(case["base"], case["ref"], strict=False) in expected_non_strict


@pytest.mark.parametrize(
    "case",
    shared_cases("conformance", "whatwg_urltestdata.json"),
    ids=lambda case: f"{case['input']!r}@{case['base']!r}" if isinstance(case, dict) else "shared-absent",
)
def test_whatwg_urltestdata(case: Any) -> None:
    _require(case, "whatwg_urltestdata.json")
    base = case["base"] or ""  # null: no base (RFC 1808 §3.4), the input must be absolute
    if case.get("failure"):
        with pytest.raises(UnresolvableReference):
            resolve(base, case["input"], rules="whatwg")
        # relativeTo (WPT url/README.md): the input fails alone but parses against a
        # base without an opaque path ("non-opaque-path-base"), or against any base.
        # A same-scheme input such as "http:@/x" is relative only to a base of its scheme.
        relative_to = case.get("relativeTo")
        if relative_to:
            scheme = re.match(r"[A-Za-z][A-Za-z0-9+.\-]*(?=:)", case["input"])
            hierarchical = f"{scheme[0] if scheme else 'https'}://example.org/path"
            resolve(hierarchical, case["input"], rules="whatwg")
        if relative_to == "any-base":
            resolve("sc:opaque", case["input"], rules="whatwg")
    else:
        assert resolve(base, case["input"], rules="whatwg") == case["href"]


# ---------------------------------------------------------------------------
# CPython's urljoin cases. urljoin is not an RFC implementation; where it
# differs from RFC 3986 the row is listed here with the RFC 3986 (strict)
# result and the reason. RAISES: the RFC has no answer and we raise.
# ---------------------------------------------------------------------------

RAISES = "raises UnresolvableReference"

NON_STRICT = (
    "urljoin reads a scheme equal to the base's as relative, RFC 3986 §5.2.2's non-strict "
    "reading; strict=False gives urljoin's result"
)
BASE_FRAGMENT = (
    "RFC 3986 §5.2.2: an empty reference takes the base without its fragment; urljoin keeps "
    "the base fragment, as RFC 1808 did"
)
EMPTY_AUTHORITY = (
    "RFC 3986 §3.2: '//' starts an authority even when it is empty; urljoin takes an empty "
    "authority for an absent one and lends the base's"
)
ABSOLUTE_DOTS = "RFC 3986 §5.2.2 removes dot segments from an absolute reference too; urljoin does not"
RELATIVE_BASE = (
    "RFC 3986 §5.1: a base must be an absolute URI; urljoin joins relative bases (a CPython "
    "artefact: python/cpython#96015)"
)
OPAQUE_BASE = (
    "'http:' has no authority and an empty path, so nothing but a fragment resolves against "
    "it (docs/decisions.md); urljoin invents a '/'"
)
ABSOLUTE_KEPT = "strict RFC 3986: a reference with a scheme is absolute as it stands"

KNOWN_URLJOIN_DIFFERENCES: dict[tuple[str, str], tuple[str, str]] = {
    ("http://a/b/c/d;p?q#f", ""): ("http://a/b/c/d;p?q", BASE_FRAGMENT),
    ("http://a/b/c/d;p?q", "http:g"): ("http:g", NON_STRICT),
    ("http://a/b/c/d", "http:g"): ("http:g", NON_STRICT),
    ("http://a/b/c/d", "http:g?y"): ("http:g?y", NON_STRICT),
    ("http://a/b/c/d", "http:g?y/./x"): ("http:g?y/./x", NON_STRICT),
    ("", "http://a/./g"): ("http://a/g", ABSOLUTE_DOTS),
    ("a", "b"): (RAISES, RELATIVE_BASE),
    ("http://a/b/c/d;p?q#f", "//"): ("http://", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "//#z"): ("http://#z", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "//?y"): ("http://?y", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "///w"): ("http:///w", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "http:"): ("http:", ABSOLUTE_KEPT + "; non-strict: " + BASE_FRAGMENT),
    ("http://a/b/c/d;p?q#f", "http:#"): ("http:#", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:#z"): ("http:#z", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:?"): ("http:?", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:?#z"): ("http:?#z", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:?y"): ("http:?y", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:;"): ("http:;", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:;?y"): ("http:;?y", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:;#z"): ("http:;#z", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:;x"): ("http:;x", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http:/w"): ("http:/w", NON_STRICT),
    ("http://a/b/c/d;p?q#f", "http://"): ("http://", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "http://#z"): ("http://#z", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "http://?y"): ("http://?y", EMPTY_AUTHORITY),
    ("http://a/b/c/d;p?q#f", "http:///w"): ("http:///w", EMPTY_AUTHORITY),
    ("http://a", "//"): ("http://", EMPTY_AUTHORITY),
    ("http://a", "///w"): ("http:///w", EMPTY_AUTHORITY),
    ("http:", "http://"): ("http://", EMPTY_AUTHORITY),
    ("http:", "http:///w"): ("http:///w", EMPTY_AUTHORITY),
    ("http:", "http:w"): ("http:w", ABSOLUTE_KEPT + "; " + OPAQUE_BASE),
    ("http://", "http:"): ("http:", NON_STRICT),
    ("http://", "http:/w"): ("http:/w", NON_STRICT),
    ("http://", "http:w"): ("http:w", NON_STRICT),
    ("http://a", "http:"): ("http:", NON_STRICT),
    ("http://a", "http://"): ("http://", EMPTY_AUTHORITY),
    ("http://a", "http:/w"): ("http:/w", NON_STRICT),
    ("http://a", "http:///w"): ("http:///w", EMPTY_AUTHORITY),
    ("http://a", "http:w"): ("http:w", NON_STRICT),
    **{("http:", ref): (RAISES, OPAQUE_BASE) for ref in ("//", "//v", "//v/w", "/w", "///w", "w")},
    **{
        (base, ref): (RAISES, RELATIVE_BASE)
        for base in ("", "//", "//a", "/b/c", "///b/c")
        for ref in ("", "//", "//v", "//v/w", "/w", "///w", "w")
    },
}


@pytest.mark.parametrize(
    "case",
    shared_cases("conformance", "python_urlparse_join.json"),
    ids=lambda case: f"{case['group']}:{case['base']!r}+{case['ref']!r}" if isinstance(case, dict) else "shared-absent",
)
def test_cpython_urljoin_cases(case: Any) -> None:
    _require(case, "python_urlparse_join.json")
    key = (case["base"], case["ref"])
    if key not in KNOWN_URLJOIN_DIFFERENCES:
        assert resolve(*key) == case["expected"]
        return
    rfc_result, reason = KNOWN_URLJOIN_DIFFERENCES[key]
    assert rfc_result != case["expected"], f"listed as a difference but urljoin agrees: {reason}"
    if rfc_result == RAISES:
        with pytest.raises(UnresolvableReference):
            resolve(*key)
    else:
        assert resolve(*key) == rfc_result, reason
    if reason == NON_STRICT:
        assert resolve(*key, strict=False) == case["expected"]


def test_every_listed_urljoin_difference_is_in_the_file() -> None:
    cases = load_shared_json("conformance", "python_urlparse_join.json")
    keys = {(case["base"], case["ref"]) for case in cases}
    assert set(KNOWN_URLJOIN_DIFFERENCES) <= keys
