"""Resolve a URL reference against a base URL under one of four rule sets.

The rule sets are the published algorithms, each followed to the letter:

``rfc1808``
    RFC 1808 §2.4 parsing and §4 steps 1-7: ``;params`` are a component of their
    own, a same-scheme reference such as ``http:g`` is absolute, surplus ``..``
    segments stay (``../../../g`` gives ``http://a/../g``).
``rfc2396``
    RFC 2396 §5.2 as published (its Appendix C answer for ``?y`` included).
``rfc3986`` (the default)
    RFC 3986 §5.2-5.3, strict; ``strict=False`` gives the same-scheme reading of
    §5.2.2 that RFC 2396 also allowed for backward compatibility.
``whatwg``
    The WHATWG URL Standard (what browsers do), through the ``ada-url`` package.

The ``rfc*`` rule sets never percent-encode or change case: their output is byte
for byte what the RFC algorithm gives, spaces and non-ASCII included.

>>> resolve("http://a/b/c/d;p?q", "../g")
'http://a/b/g'
>>> resolve("http://a/b/c/d;p?q#f", "../../../g", rules="rfc1808")
'http://a/../g'
>>> resolve("git+ssh://host/repo/a/b", "../c")
'git+ssh://host/repo/c'
>>> resolve("http://a/b/c/d;p?q", "http:g", strict=False)
'http://a/b/c/g'
"""

from __future__ import annotations

import ipaddress
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import update_wrapper
from typing import Any, Generic, Literal, TypeVar, cast

__all__ = [
    "RFC1808URL",
    "RULES",
    "Resolver",
    "Rules",
    "URIReference",
    "UnresolvableReference",
    "authority_problem",
    "directory_of",
    "is_hierarchical",
    "parse",
    "remove_dot_segments",
    "resolve",
    "scheme_of",
    "scheme_prefix",
    "url_key",
]

Rules = Literal["rfc1808", "rfc2396", "rfc3986", "whatwg"]
RULES: tuple[str, ...] = ("rfc1808", "rfc2396", "rfc3986", "whatwg")


class UnresolvableReference(ValueError):
    """A reference that cannot be made absolute, and why.

    >>> try:
    ...     resolve("mailto:someone@example.org", "g")
    ... except UnresolvableReference as error:
    ...     print(error.reason)
    the base has an opaque path, so only a fragment can be resolved against it
    """

    def __init__(self, reason: str, *, base: str, reference: str) -> None:
        super().__init__(f"cannot resolve {reference!r} against {base!r}: {reason}")
        self.reason = reason
        self.base = base
        self.reference = reference


# --------------------------------------------------------------------------
# Components
# --------------------------------------------------------------------------

# RFC 3986 Appendix B, with the scheme held to its §3.1 syntax: a colon after
# something that is not a valid scheme (``10:30``, ``a b:c``) leaves no scheme,
# so the text reads as a path, as browsers and urljoin read it.
_RFC3986_REFERENCE = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?"  # §3.1 scheme
    r"(?://([^/?#]*))?"  # §3.2 authority
    r"([^?#]*)"  # §3.3 path
    r"(?:\?([^#]*))?"  # §3.4 query
    r"(?:#(.*))?",  # §3.5 fragment
    re.DOTALL,
)

# RFC 1808 §2.4, in its order: fragment (2.4.1) first, then scheme (2.4.2,
# "alphanumeric, plus '+', period '.', or hyphen '-'"), net_loc (2.4.3, up to
# the next slash), query (2.4.4, from the first "?"), params (2.4.5, from the
# first ";"), and what is left is the path with its leading slash (2.4.6).
_RFC1808_URL = re.compile(
    r"(?:([A-Za-z0-9+.\-]+):)?"  # §2.4.2 scheme
    r"(?://([^/#]*))?"  # §2.4.3 net_loc
    r"([^;?#]*)"  # §2.4.6 path
    r"(?:;([^?#]*))?"  # §2.4.5 params
    r"(?:\?([^#]*))?"  # §2.4.4 query
    r"(?:#(.*))?",  # §2.4.1 fragment
    re.DOTALL,
)

# Every part of both expressions is optional: each matches every string (typed so, at no cost).
_Matcher = Callable[[str], "re.Match[str]"]
_split_3986 = cast(_Matcher, _RFC3986_REFERENCE.match)
_split_1808 = cast(_Matcher, _RFC1808_URL.match)


@dataclass(frozen=True, slots=True)
class URIReference:
    """The five components of RFC 3986 §3; ``None`` means absent.

    An absent component differs from an empty one (``g?`` has an empty query),
    so ``str()`` recomposes the original text exactly (RFC 3986 §5.3).

    >>> ref = parse("http://a/b/c/d;p?q")
    >>> ref.authority, ref.path, ref.query
    ('a', '/b/c/d;p', 'q')
    >>> str(parse("g?#")) == "g?#"
    True
    """

    scheme: str | None
    authority: str | None
    path: str
    query: str | None
    fragment: str | None

    def __str__(self) -> str:
        return _recompose(self.scheme, self.authority, self.path, self.query, self.fragment)


@dataclass(frozen=True, slots=True)
class RFC1808URL:
    """The six components of RFC 1808 §2.1/§2.4; ``None`` means absent.

    The path keeps its leading slash, as §2.4.6 suggests, and ``str()`` gives
    the original text back exactly.

    >>> url = parse("http://a/b/c/d;p?q#f", rules="rfc1808")
    >>> url.net_loc, url.path, url.params, url.query, url.fragment
    ('a', '/b/c/d', 'p', 'q', 'f')
    >>> str(url)
    'http://a/b/c/d;p?q#f'
    """

    scheme: str | None
    net_loc: str | None
    path: str
    params: str | None
    query: str | None
    fragment: str | None

    def __str__(self) -> str:
        return _recompose_1808(self.scheme, self.net_loc, self.path, self.params, self.query, self.fragment)


def parse(url: str, *, rules: Rules = "rfc3986") -> URIReference | RFC1808URL:
    """Split *url* into components without changing a character.

    ``rfc1808`` gives :class:`RFC1808URL`; the other rule sets give the RFC 3986
    :class:`URIReference` (the WHATWG standard has no component syntax of its own
    for an unparsed string).

    >>> parse("s3://bucket/key?versionId=3")
    URIReference(scheme='s3', authority='bucket', path='/key', query='versionId=3', fragment=None)
    """
    _check_rules(rules)
    if rules == "rfc1808":
        return RFC1808URL(*_split_1808(url).groups())
    return URIReference(*_split_3986(url).groups())


_IPV_FUTURE = re.compile(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+")


def authority_problem(url: str, *, rules: Rules = "rfc3986") -> str | None:
    """Why the authority of the absolute *url* is not one of *rules*' syntax, or None.

    ``rfc3986`` §3.2 (authority = [ userinfo "@" ] host [ ":" port ]): "[" and "]" only
    around an IP-literal that is the whole host (§3.2.2: IPv6address, RFC 6874's zone, or
    IPvFuture), and a port of digits (§3.2.3). ``rfc2396`` §3.2.2 with RFC 2732's IPv6
    references reads the same. ``rfc1808`` §2.2 puts "[" and "]" among the "national"
    characters of a net_loc (``*( pchar | ";" | "?" )``): every net_loc parses. Other
    rules: None (the WHATWG parser decides for itself).

    >>> authority_problem("http://[::1/x"), authority_problem("http://[::1/x", rules="rfc1808")
    ('its authority has an unclosed IP literal (RFC 3986 §3.2.2)', None)
    >>> authority_problem("http://u@[v1.x]:8080/"), authority_problem("http://h:8o/")
    (None, 'its port is not digits (RFC 3986 §3.2.3)')
    """
    if rules not in ("rfc2396", "rfc3986"):
        return None
    authority = _split_3986(url).group(2)
    if authority is None:
        return None
    userinfo, _, host_port = authority.rpartition("@")
    if "[" in userinfo or "]" in userinfo:
        return 'its userinfo holds "[" or "]" (RFC 3986 §3.2.1)'
    if host_port.startswith("["):
        close = host_port.find("]")
        if close < 0:
            return "its authority has an unclosed IP literal (RFC 3986 §3.2.2)"
        literal, port = host_port[1:close], host_port[close + 1 :]
        if port and not port.startswith(":"):
            return "something follows its IP literal other than a port (RFC 3986 §3.2.2)"
        port = port[1:]
        if _IPV_FUTURE.fullmatch(literal) is None:
            address, separator, zone = literal.partition("%25")  # RFC 6874 §2: a zone after "%25"
            try:
                ipaddress.IPv6Address(address)
                valid = "%" not in address and not (separator and not zone)  # Python takes "%zone" too
            except ValueError:
                valid = False
            if not valid:
                return f"its IP literal [{literal}] is no IPv6 address (RFC 3986 §3.2.2)"
    else:
        if "[" in host_port or "]" in host_port:
            return 'its host holds "[" or "]" outside an IP literal (RFC 3986 §3.2.2)'
        port = host_port.partition(":")[2]
    if port and not (port.isascii() and port.isdigit()):
        return "its port is not digits (RFC 3986 §3.2.3)"
    return None


def _recompose(scheme: str | None, authority: str | None, path: str, query: str | None, fragment: str | None) -> str:
    """RFC 3986 §5.3 Component Recomposition."""
    result = path
    if authority is not None:
        result = "//" + authority + result
    if scheme is not None:
        result = scheme + ":" + result
    if query is not None:
        result += "?" + query
    if fragment is not None:
        result += "#" + fragment
    return result


def _recompose_1808(
    scheme: str | None,
    net_loc: str | None,
    path: str,
    params: str | None,
    query: str | None,
    fragment: str | None,
) -> str:
    """RFC 1808 §4 step 7: recombine the components (params follow the path)."""
    return _recompose(scheme, net_loc, path if params is None else f"{path};{params}", query, fragment)


# --------------------------------------------------------------------------
# Dot segments
# --------------------------------------------------------------------------


def _has_dot_segment(path: str) -> bool:
    """Whether *path* has a complete segment "." or ".." (cheap test first)."""
    if "." not in path:
        return False
    return (
        path in (".", "..")
        or path.startswith(("./", "../"))
        or "/./" in path
        or "/../" in path
        or path.endswith(("/.", "/.."))
    )


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 Remove Dot Segments.

    >>> remove_dot_segments("/a/b/c/./../../g")
    '/a/g'
    >>> remove_dot_segments("mid/content=5/../6")
    'mid/6'
    """
    if not _has_dot_segment(path):
        return path
    if path[0] != "/":
        return remove_dot_segments_by_rule(path)
    # For a rooted path the buffer rules of §5.2.4 reduce to a stack of
    # segments; tests/test_resolve.py checks that the two agree.
    output: list[str] = []
    segments = path.split("/")
    for segment in segments[1:]:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if output and segments[-1] in (".", ".."):
        output.append("")  # "/a/b/.." is "/a/": the last step leaves a slash
    return "/" + "/".join(output)


def remove_dot_segments_by_rule(path: str) -> str:
    """RFC 3986 §5.2.4 rules A-E, applied to the input buffer one at a time.

    The buffer is ``path[i:]``; a rule that replaces its start with "/" moves ``i`` to a
    "/" already there, so nothing is copied but the output (linear in the path).
    """
    output: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path.startswith("../", i):  # A
            i += 3
        elif path.startswith("./", i) or path.startswith("/./", i):  # A; B: "/./" becomes "/"
            i += 2
        elif path.startswith("/.", i) and i + 2 == n:  # B: "/." becomes "/"
            output.append("/")
            break
        elif path.startswith("/../", i):  # C: "/../" becomes "/", and the last output segment goes
            i += 3
            if output:
                output.pop()
        elif path.startswith("/..", i) and i + 3 == n:  # C
            if output:
                output.pop()
            output.append("/")
            break
        elif n - i <= 2 and path[i:] in (".", ".."):  # D (the length first: no copy of a long rest)
            break
        else:  # E: the first segment, with its leading "/" if any
            end = path.find("/", i + 1)
            if end < 0:
                end = n
            output.append(path[i:end])
            i = end
    return "".join(output)


def remove_dot_segments_1808(path: str) -> str:
    """RFC 1808 §4 step 6 a-d, which RFC 2396 §5.2 step 6 c-f repeats.

    The leading slash is not part of the path (RFC 1808 §2.4.6), so it is not a
    segment; surplus ".." segments stay where they are.
    """
    if not _has_dot_segment(path):
        return path
    rooted = path[0] == "/"
    segments = (path[1:] if rooted else path).split("/")
    last = len(segments) - 1
    # a) every "./" where "." is a complete segment (every "." but the last)
    segments = [s for i, s in enumerate(segments) if s != "." or i == last]
    # b) a final "." goes, leaving the slash before it
    if segments[-1] == ".":
        segments[-1] = ""
    # c) "<segment>/../" with <segment> not "..", leftmost first, until none is left. Each
    # removal can only join the pair around it, so one pass with a stack gives the same
    # result; the last segment is never followed by "/", so it never pairs here.
    stack: list[str] = []
    for segment in segments[:-1]:
        if segment == ".." and stack and stack[-1] != "..":
            stack.pop()
        else:
            stack.append(segment)
    segments = [*stack, segments[-1]]
    # d) a final "<segment>/.."
    if len(segments) >= 2 and segments[-1] == ".." and segments[-2] != "..":
        segments[-2:] = [""]
    return ("/" if rooted else "") + "/".join(segments)


# --------------------------------------------------------------------------
# The rule sets: each turns a base into a function of one reference
# --------------------------------------------------------------------------

_NO_BASE = "there is no base URL (RFC 1808 §3.4) and the reference is relative"
_NOT_ABSOLUTE = "the base is not an absolute URL: it has no scheme"
_OPAQUE = "the base has an opaque path, so only a fragment can be resolved against it"

ResolveOne = Callable[[str], str]


def _base_problem(base: str, scheme: str | None, authority: str | None, path: str) -> str | None:
    """Why *base* cannot serve relative references, or None when it can."""
    if not base:
        return _NO_BASE
    if scheme is None:
        return _NOT_ABSOLUTE
    if authority is None and not path.startswith("/"):
        return _OPAQUE
    return None


def _same_document(authority: str | None, path: str, query: str | None) -> bool:
    """An empty or fragment-only reference once any scheme is set aside (RFC 3986 §4.4)."""
    return authority is None and not path and query is None


def _rfc3986(base: str, strict: bool, shortcuts: bool = True) -> ResolveOne:
    """RFC 3986 §5.2.2 Transform References, with the base parsed once."""
    match = _split_3986
    b_scheme, b_authority, b_path, b_query, _ = match(base).groups()
    problem = _base_problem(base, b_scheme, b_authority, b_path)
    # §5.1: the base is used in absolute form, which is the base resolved as a
    # reference (§5.2.2 removes its dot segments too); the fragment is dropped.
    b_path = remove_dot_segments(b_path)
    opaque_ok = problem == _OPAQUE
    b_scheme_folded = (b_scheme or "").lower()
    prefix = _recompose(b_scheme, b_authority, "", None, None)  # "scheme:" or "scheme://authority"
    # §5.2.3 Merge Paths: the base path up to its last slash, "/" for an
    # authority with an empty path.
    directory = "/" if b_authority is not None and not b_path else b_path[: b_path.rfind("/") + 1]
    b_path_query = b_path if b_query is None else f"{b_path}?{b_query}"

    def resolve_3986(reference: str) -> str:
        scheme, authority, path, query, fragment = match(reference).groups()
        if scheme is not None:
            if strict or problem is not None or scheme.lower() != b_scheme_folded:
                if _has_dot_segment(path):
                    return _recompose(scheme, authority, remove_dot_segments(path), query, fragment)
                return reference
            if authority is not None:  # non-strict same scheme: read on as relative
                return _recompose(b_scheme, authority, remove_dot_segments(path), query, fragment)
        if problem is not None and not (opaque_ok and _same_document(authority, path, query)):
            raise UnresolvableReference(problem, base=base, reference=reference)
        if authority is not None:
            return _recompose(b_scheme, authority, remove_dot_segments(path), query, fragment)
        if not path:
            head = prefix + (b_path_query if query is None else f"{b_path}?{query}")
            return head if fragment is None else f"{head}#{fragment}"
        if path[0] != "/":
            path = directory + path
        if _has_dot_segment(path):
            path = remove_dot_segments(path)
        result = prefix + path
        if query is not None:
            result = f"{result}?{query}"
        return result if fragment is None else f"{result}#{fragment}"

    if not shortcuts or problem is not None:
        return resolve_3986
    return _with_shortcuts(
        base,
        resolve_3986,
        scheme_prefix=_SCHEME_3986,
        same_scheme=None if strict else b_scheme_folded,
        dots_everywhere=True,
        network_head=f"{b_scheme}:",
        path_head=prefix,
        relative_head=prefix + directory,
        query_head=prefix + b_path,
        fragment_head=prefix + b_path_query,
        net_loc_may_be_empty=True,
    )


def _rfc2396(base: str, strict: bool, shortcuts: bool = True) -> ResolveOne:
    """RFC 2396 §5.2 Resolving Relative References to Absolute Form."""
    match = _split_3986  # RFC 2396 Appendix B is the same expression
    b_scheme, b_authority, b_path, b_query, _ = match(base).groups()
    problem = _base_problem(base, b_scheme, b_authority, b_path)
    opaque_ok = problem == _OPAQUE
    b_scheme_folded = (b_scheme or "").lower()
    directory = "/" if b_authority is not None and not b_path else b_path[: b_path.rfind("/") + 1]

    def resolve_2396(reference: str) -> str:
        scheme, authority, path, query, fragment = match(reference).groups()
        # Step 3: a scheme makes the reference absolute, "and we are done";
        # the backward-compatible reading drops a scheme equal to the base's
        # (when the base is hierarchical: an opaque one has nothing to lend).
        if scheme is not None and (strict or problem is not None or scheme.lower() != b_scheme_folded):
            return reference
        if problem is not None and not (opaque_ok and _same_document(authority, path, query)):
            raise UnresolvableReference(problem, base=base, reference=reference)
        # Step 2: empty path, no scheme, authority or query: the current document.
        if not path and authority is None and query is None:
            return _recompose(b_scheme, b_authority, b_path, b_query, fragment)
        if authority is not None or path.startswith("/"):  # steps 4 and 5
            if authority is None:
                authority = b_authority
            return _recompose(b_scheme, authority, path, query, fragment)
        # Step 6 a-b: all but the last segment of the base path, then the
        # reference path (empty for "?y", giving Appendix C's http://a/b/c/?y);
        # c-f remove dot segments; g keeps surplus "..".
        path = remove_dot_segments_1808(directory + path)
        return _recompose(b_scheme, b_authority, path, query, fragment)

    if not shortcuts or problem is not None:
        return resolve_2396
    prefix = _recompose(b_scheme, b_authority, "", None, None)
    plain_directory = not _has_dot_segment(directory)
    return _with_shortcuts(
        base,
        resolve_2396,
        scheme_prefix=_SCHEME_3986,
        same_scheme=None if strict else b_scheme_folded,
        dots_everywhere=False,
        network_head=f"{b_scheme}:",
        path_head=prefix,
        relative_head=prefix + directory if plain_directory else None,
        query_head=prefix + directory if plain_directory else None,
        fragment_head=_recompose(b_scheme, b_authority, b_path, b_query, None),
        net_loc_may_be_empty=True,
    )


def _rfc1808(base: str, strict: bool, shortcuts: bool = True) -> ResolveOne:
    """RFC 1808 §4 Resolving Relative URLs, steps 1-7."""
    del strict  # RFC 1808 has one reading: a scheme makes a URL absolute
    match = _split_1808
    b_scheme, b_net_loc, b_path, b_params, b_query, _ = match(base).groups()
    # §2.4.6: the slash before the path is kept with it.
    problem = _base_problem(base, b_scheme, b_net_loc, b_path)
    opaque_ok = problem == _OPAQUE
    # Step 6: "the last segment of the base URL's path ... is removed". With a
    # net_loc and no path the §2.1 syntax puts a "/" before the new path.
    directory = "/" if b_net_loc is not None and not b_path else b_path[: b_path.rfind("/") + 1]

    def resolve_1808(reference: str) -> str:
        scheme, net_loc, path, params, query, fragment = match(reference).groups()
        # Step 1: with no base the embedded URL is taken as absolute.
        if scheme is not None:  # Step 2b
            return reference
        if problem is not None and not (opaque_ok and _same_document(net_loc, path, query) and params is None):
            raise UnresolvableReference(problem, base=base, reference=reference)
        if not reference:  # Step 2a: the entire base, fragment included
            return base
        # Step 2c: the scheme is inherited.  Step 3: a non-empty net_loc skips
        # to step 7; otherwise the base's is inherited.
        if net_loc:
            return _recompose_1808(b_scheme, net_loc, path, params, query, fragment)
        if not path.startswith("/"):  # Step 4 skips absolute paths
            if not path:  # Step 5
                path = b_path
                if not params:
                    params = b_params
                    if not query:
                        query = b_query
            else:  # Step 6
                path = remove_dot_segments_1808(directory + path)
        return _recompose_1808(b_scheme, b_net_loc, path, params, query, fragment)

    if not shortcuts or problem is not None:
        return resolve_1808
    prefix = _recompose_1808(b_scheme, b_net_loc, "", None, None, None)
    return _with_shortcuts(
        base,
        resolve_1808,
        scheme_prefix=_SCHEME_1808,
        same_scheme=None,
        dots_everywhere=False,
        network_head=f"{b_scheme}:",
        path_head=prefix,
        relative_head=prefix + directory if not _has_dot_segment(directory) else None,
        query_head=None,  # step 5 lends params too: left to the full algorithm
        fragment_head=_recompose_1808(b_scheme, b_net_loc, b_path, b_params, b_query, None),
        net_loc_may_be_empty=False,
    )


def _whatwg(base: str, strict: bool, shortcuts: bool = True) -> ResolveOne:
    """The WHATWG URL parser with *base* as the base URL, through ada-url."""
    import ada_url  # here, not at the top: only WHATWG rules need it (2 ms of every start-up)

    del strict, shortcuts  # the standard has one reading; ada is the fast path
    join = ada_url.join_url
    given = base
    base = _scalar_values(base)
    opaque = False
    if not base:
        problem: str | None = "there is no base URL"
    elif not ada_url.check_url(base):
        problem = "the base is not a valid URL (WHATWG URL Standard)"
    else:
        problem = None
        href = ada_url.normalize_url(base)
        after_scheme = href[href.index(":") + 1 :]
        opaque = not after_scheme.startswith("/")

    def resolve_whatwg(reference: str) -> str:
        try:
            if problem is None:
                return join(base, reference)
            return ada_url.normalize_url(reference)
        except ValueError:
            pass
        cleaned = _scalar_values(reference)
        if cleaned is not reference:  # lone surrogates, as a browser's USVString
            try:
                return join(base, cleaned) if problem is None else ada_url.normalize_url(cleaned)
            except ValueError:
                pass
        if problem is not None:
            reason = f"{problem}, and the reference is not an absolute URL by itself"
        elif opaque:
            reason = "the WHATWG URL parser rejects it: the base has an opaque path"
        else:
            reason = "the WHATWG URL parser rejects it"
        raise UnresolvableReference(reason, base=given, reference=reference)

    return resolve_whatwg


def _scalar_values(text: str) -> str:
    """Lone surrogates become U+FFFD, as in the IDL USVString conversion."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


# A scheme at the start of a reference, by RFC 3986 §3.1 and RFC 1808 §2.4.2 syntax.
_SCHEME_3986 = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):").match
_SCHEME_1808 = re.compile(r"([A-Za-z0-9+.\-]+):").match


def is_hierarchical(url: str) -> bool:
    """Whether *url* can be a base: a scheme, then a path that starts with "/" (RFC 3986 §4.2).

    >>> is_hierarchical("http://a/b"), is_hierarchical("file:///x"), is_hierarchical("about:internet")
    (True, True, False)
    """
    scheme = parse(url).scheme
    return scheme is not None and url[len(scheme) + 1 :].startswith("/")


_T = TypeVar("_T")


class _SizedCache(Generic[_T]):
    """A least-recently-used cache of *function*'s results, bounded by the characters of
    the arguments (and string results) it keeps (*budget*) as well as by their count
    (*entries*).

    ``functools.lru_cache`` bounds the count only, and what it keeps grows with its
    arguments: a resolver holds copies of its base (four or five, before equal heads
    were shared), so 512 resolvers of 4 MB bases (an mbox whose messages each have a
    Content-Location of that size) held 2 GB. Room for a large new entry (over a sixteenth
    of the budget) is made before it is computed, for a small one after (one lock, not two:
    a page's own base is new to the cache on every page of a run); the newest entry is
    kept whatever its size, so that a long base read
    many times in a row (a page's nested documents) is still parsed once; it goes as
    soon as another entry comes. As with ``lru_cache``, an exception is not cached.
    """

    def __init__(self, function: Callable[..., _T], *, budget: int, entries: int) -> None:
        self._function = function
        self._budget = budget
        self._entries = entries
        self._cache: OrderedDict[tuple[Hashable, ...], tuple[_T, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a lock held by another thread at a fork stays held in the child
            os.register_at_fork(after_in_child=self._after_fork)
        update_wrapper(self, function)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, *key: Any) -> _T:
        # A hit takes no lock: each OrderedDict call is atomic (the keys are strings and flags).
        found = self._cache.get(key)
        if found is not None:
            try:
                self._cache.move_to_end(key)
            except KeyError:  # another thread made room meanwhile
                return found[0]
            return found[0]
        cost = 100
        for part in key:
            if isinstance(part, str):
                cost += len(part)
        if cost > self._budget >> 4:  # a large entry: room made first, the old need not outlive its making
            with self._lock:
                while self._cache and (self._size + cost > self._budget or len(self._cache) >= self._entries):
                    self._size -= self._cache.popitem(last=False)[1][1]
        value = self._function(*key)
        with self._lock:
            if key not in self._cache:
                cost += len(value) if isinstance(value, str) else 0  # url_key's answers
                self._cache[key] = (value, cost)
                self._size += cost
                while len(self._cache) > 1 and (self._size > self._budget or len(self._cache) > self._entries):
                    self._size -= self._cache.popitem(last=False)[1][1]
        return value

    def cache_clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._size = 0

    def cache_size(self) -> tuple[int, int]:
        """(entries, characters of their arguments and string results) kept now."""
        with self._lock:
            return len(self._cache), self._size


def _url_key_of(url: str) -> str:
    bare = url.partition("#")[0]
    try:
        return resolve("", bare, rules="whatwg").partition("#")[0]
    except UnresolvableReference:
        return bare


# One URL of a page or an archive may be a megabyte: the count alone bounds nothing.
url_keys = _SizedCache(_url_key_of, budget=1 << 22, entries=1 << 16)


def url_key(url: str) -> str:
    """What two URLs that mean one resource share: the URL Standard's serialisation, fragment aside
    (``HTTP://H:80/a b#x`` and ``http://h/a%20b`` are one), else the URL as written.

    >>> url_key("HTTP://Example.org:80/a/../b c#top")
    'http://example.org/b%20c'
    """
    return url_keys(url)


def scheme_prefix(rules: Rules = "rfc3986") -> Callable[[str], re.Match[str] | None]:
    """The match of a scheme and its ":" at the start of a reference, by the syntax of
    *rules* (what :func:`scheme_of` reads; group 1 is the scheme): one call per reference.

    >>> scheme_prefix()("mailto:a@b")[1], scheme_prefix()("a/b:c")
    ('mailto', None)
    """
    return _SCHEME_1808 if rules == "rfc1808" else _SCHEME_3986


# A base with a scheme, "//", an authority that is not empty (the URL Standard reads a special
# URL's host past empty ones) and a path (group 1 up to its last "/", group 2 the
# last segment), whose text before any query or fragment has no "\\" (a "/" for the URL
# Standard's special schemes) and no control character or space (which it strips or removes).
_DIRECTORY = re.compile(
    r"([A-Za-z][A-Za-z0-9+.\-]*://[^/?#\\\x00-\x20]+/(?:[^?#\\\x00-\x20]*/)?)([^/?#\\\x00-\x20]*)(?=[?#]|\Z)"
).match


def directory_of(base: str) -> str | None:
    """What resolving a reference with a path and no scheme reads of *base*: the base up to
    the last "/" of its path; None when its text does not tell that (an empty authority or no path,
    a last segment that is a dot segment, a ``file:`` base, a backslash or a control character).

    RFC 3986 §5.2.2-5.2.3 (and RFC 2396 §5.2, RFC 1808 §4 steps 6-7, the URL Standard's
    "path state", which shortens a copy of the base's path): such a reference keeps the base's
    scheme and authority and merges its path with the base's, all but the last segment; the
    base's query and fragment are dropped. So two bases with one directory resolve it alike.
    A ``file:`` base is left out: the URL Standard keeps a Windows drive letter ("C:") that is
    the last segment.

    >>> directory_of("http://a/b/c/d;p?q"), directory_of("http://a/b/.."), directory_of("http://a")
    ('http://a/b/c/', None, None)
    """
    match = _DIRECTORY(base)
    if match is None:
        return None
    directory, last = match.groups()
    if last and last.lower().replace("%2e", ".") in (".", ".."):
        return None
    if directory[:5].lower() == "file:":
        return None
    return directory


def scheme_of(reference: str, *, rules: Rules = "rfc3986") -> str | None:
    """The scheme *reference* starts with by the syntax of *rules*, or None when it is relative.

    >>> scheme_of("git+ssh://host/repo"), scheme_of("10:30"), scheme_of("10:30", rules="rfc1808")
    ('git+ssh', None, '10')
    """
    if ":" not in reference:  # a scheme ends at a colon: most references have none, and need no match
        return None
    match = (_SCHEME_1808 if rules == "rfc1808" else _SCHEME_3986)(reference)
    return match[1] if match else None


def _with_shortcuts(
    base: str,
    full: ResolveOne,
    *,
    scheme_prefix: Callable[[str], re.Match[str] | None],
    same_scheme: str | None,
    dots_everywhere: bool,
    network_head: str,
    path_head: str,
    relative_head: str | None,
    query_head: str | None,
    fragment_head: str,
    net_loc_may_be_empty: bool,
) -> ResolveOne:
    """Answer the common references by concatenation, the rest by *full*.

    Every rule set recomposes unchanged components in their original order, so
    when no dot segment can be removed the result is a fixed head (worked out
    from the base once) followed by the reference itself. A dot segment needs
    "/." in the text or a path that starts with "."; when either is present, or
    the reference is of a rarer kind, *full* decides. ``dots_everywhere`` says
    that dot segments are removed from absolute URLs and absolute paths too
    (RFC 3986); RFC 1808 and 2396 remove them from merged relative paths only.
    tests/test_resolve.py checks that both routes agree.
    """
    # Equal heads are kept once, and a head equal to the base is the base (a base path
    # that ends in "/" and no query make three heads the base): a resolver of a megabyte
    # base then holds three copies of it fewer.
    kept = {base: base}
    network_head = kept.setdefault(network_head, network_head)
    path_head = kept.setdefault(path_head, path_head)
    fragment_head = kept.setdefault(fragment_head, fragment_head)
    if relative_head is not None:
        relative_head = kept.setdefault(relative_head, relative_head)
    if query_head is not None:
        query_head = kept.setdefault(query_head, query_head)
    del kept

    def resolve_common(reference: str) -> str:
        first = reference[:1]
        if first == "/":
            if dots_everywhere and "/." in reference:
                return full(reference)
            if reference[1:2] == "/":  # network-path reference
                if net_loc_may_be_empty or reference[2:3] not in ("", "/", "#"):
                    return network_head + reference
                return full(reference)
            return path_head + reference  # absolute-path reference
        if first == "#":
            return fragment_head + reference
        if first == "?":
            return full(reference) if query_head is None else query_head + reference
        if not first:
            return full(reference)
        scheme = scheme_prefix(reference) if ":" in reference else None  # a scheme ends at a colon
        if scheme is not None:
            if same_scheme is not None and scheme[1].lower() == same_scheme:
                return full(reference)
            if dots_everywhere and ("/." in reference or reference[scheme.end() : scheme.end() + 1] == "."):
                return full(reference)
            return reference
        if relative_head is None or first in ".;" or "/." in reference:
            return full(reference)
        return relative_head + reference  # relative-path reference

    return resolve_common


RULE_SETS: dict[str, Callable[..., ResolveOne]] = {
    "rfc1808": _rfc1808,
    "rfc2396": _rfc2396,
    "rfc3986": _rfc3986,
    "whatwg": _whatwg,
}


def _check_rules(rules: str) -> None:
    if rules not in RULE_SETS:
        raise ValueError(f"unknown rules {rules!r}: choose one of {', '.join(RULES)}")


def _new_resolver(base: str, rules: str, strict: bool) -> ResolveOne:
    _check_rules(rules)
    return RULE_SETS[rules](base, strict)


# A resolver keeps four or five copies of its base: 1 M characters of bases is 4-5 MB
# (20 MB for bases outside Latin-1), plus the newest one whatever its size.
resolver_for = _SizedCache(_new_resolver, budget=1 << 20, entries=512)


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


class Resolver:
    """A base URL parsed once, to resolve many references against it.

    >>> page = Resolver("https://example.org/docs/guide/index.html")
    >>> page.resolve("../img/a.png")
    'https://example.org/docs/img/a.png'
    >>> page.resolve("?page=2")
    'https://example.org/docs/guide/index.html?page=2'

    A base that cannot serve relative references still resolves absolute ones;
    the relative ones raise :class:`UnresolvableReference`.
    """

    __slots__ = ("_resolve", "base", "rules", "strict")

    def __init__(self, base: str, *, rules: Rules = "rfc3986", strict: bool = True) -> None:
        _check_rules(rules)
        self.base = base
        self.rules = rules
        self.strict = strict
        # The base is parsed at the first reference: a page whose links are all answered
        # by its folder's shared answers never parses its own URL (about 10 us a page).
        self._resolve: ResolveOne | None = None

    def resolve(self, reference: str) -> str:
        """The absolute form of *reference*; raises :class:`UnresolvableReference`."""
        resolve = self._resolve
        if resolve is None:
            resolve = self._resolve = resolver_for(self.base, self.rules, self.strict)
        return resolve(reference)

    def __repr__(self) -> str:
        return f"Resolver({self.base!r}, rules={self.rules!r}, strict={self.strict!r})"


def resolve(base: str, reference: str, *, rules: Rules = "rfc3986", strict: bool = True) -> str:
    """Make *reference* absolute against *base* under *rules*.

    An empty *base* means no base is known (RFC 1808 §3.4): an absolute reference
    is still returned, a relative one raises :class:`UnresolvableReference`, as
    does a relative reference against a base that cannot serve one. ``strict``
    matters to ``rfc2396`` and ``rfc3986`` only.

    >>> resolve("thismessage:/", "images/logo.png")
    'thismessage:/images/logo.png'
    >>> resolve("http://a/b/c/d;p?q", "g?")
    'http://a/b/c/g?'
    >>> resolve("http://a/b/c/d;p?q", "https://example.org/a/./b/../c", rules="whatwg")
    'https://example.org/a/c'
    """
    return resolver_for(base, rules, strict)(reference)
