"""The base of a document (RFC 1808 §3): its layers, what can be one, and the chain.

A relative reference is resolved against the first base found, innermost first:

1. embedded in the content (§3.1): the first ``<base href>`` (``base-element``), or a MIME
   part's own ``Base``, ``Content-Base`` or ``Content-Location`` field;
2. the base of the encapsulating entity (§3.2): the headings of the enclosing MIME
   entities, or a base a caller hands down (``enclosing``);
3. the URL the document was retrieved from (§3.3): ``retrieval-url``; Chrome's
   ``Snapshot-Content-Location``; a browser's ``<!-- saved from url= -->`` mark; with
   ``Policy.canonical_base``, the page's canonical URL;
4. none (§3.4): relative references stay as they are and are reported.

``codebase`` is HTML 4.01 §13.3's base for an ``<object>``'s or ``<applet>``'s resources.
The HTML engine, the MIME engine, the tree adapters, ``pack`` and the command line all
ask this module; :class:`Layer` is the one vocabulary that every result names its layer in.

>>> chain(Base("http://h/a/", "Content-Location", "1.2"), None, Base("http://r/", "retrieval-url"))
Base(url='http://h/a/', layer='Content-Location', origin='1.2')
>>> handed_down(url="http://r/x.html", base=None)
('http://r/x.html', 'retrieval-url')
>>> usable_as_base("http://h/p"), usable_as_base("mailto:a@b"), usable_as_heading_base("data:/x")
(True, False, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rewriter.url.resolve import is_hierarchical, parse

__all__ = [
    "NEVER_BASE_SCHEMES",
    "Base",
    "Layer",
    "base_element_problem",
    "chain",
    "handed_down",
    "usable_as_base",
    "usable_as_heading_base",
]

Layer = Literal[
    "base-element",  # §3.1: the document's first <base href>
    "Base",  # §3.1: a MIME heading's Base: <URL:...> (the part's own or an enclosing one)
    "Content-Base",  # RFC 2110
    "Content-Location",  # RFC 2557 §5(b), §5(c)
    "enclosing",  # §3.2: handed down by the caller (base=), e.g. a MIME part's
    "retrieval-url",  # §3.3 (url=)
    "Snapshot-Content-Location",  # Chrome's MHTML: the page's own URL
    "saved-from-mark",  # <!-- saved from url=(NNNN)... -->: where a saved page came from
    "canonical",  # <link rel=canonical>, <meta property=og:url> (Policy.canonical_base)
    "codebase",  # HTML 4.01 §13.3: an <object>'s or <applet>'s codebase
]

# Schemes whose URLs are never a base, hierarchical or not: HTML "set the frozen base URL"
# refuses javascript: and data: (and old IE's vbscript:); RFC 2557 §5(e)'s thismessage: names
# the message itself, for matching its parts, and is never written into a link.
NEVER_BASE_SCHEMES = frozenset({"javascript", "data", "vbscript", "thismessage"})
_SCRIPT_SCHEMES = ("javascript", "data", "vbscript")

_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_URL_TAB_OR_NEWLINE = re.compile("[\t\n\r]")


@dataclass(frozen=True, slots=True)
class Base:
    """One layer's base: its URL, the layer, and the MIME entity whose heading gave it
    (its path, ``"1.2"``; None where no heading did)."""

    url: str
    layer: Layer
    origin: str | None = None


def chain(*layers: Base | None) -> Base | None:
    """The base a document has: the first of *layers*, innermost first, that there is."""
    return next((layer for layer in layers if layer is not None), None)


def handed_down(*, url: str | None, base: str | None) -> tuple[str | None, Layer | None]:
    """The base an engine starts from before it looks in the document: a base handed down
    by an enclosing entity (§3.2, ``base=``), else the retrieval URL (§3.3, ``url=``)."""
    if base is not None:
        return base, "enclosing"
    if url is not None:
        return url, "retrieval-url"
    return None, None


def usable_as_base(url: str) -> bool:
    """Whether *url* can be a base at all: absolute and hierarchical, a scheme, then a path
    from "/" (RFC 3986 §4.2), as the resolver reads it. What a retrieval URL must be
    (``--url``, ``--url-root``, ``pack --url``, the saved-from mark).

    >>> [usable_as_base(url) for url in ("http://h/p", "file:///x", "page.html", "mailto:a@b", "//h/x")]
    [True, True, False, False, False]
    """
    return is_hierarchical(url)


def usable_as_heading_base(url: str) -> bool:
    """Whether *url*, declared in a MIME heading (``Base``, ``Content-Base``,
    ``Content-Location``, ``Snapshot-Content-Location``), can be a part's base:
    :func:`usable_as_base`, and none of :data:`NEVER_BASE_SCHEMES`.

    >>> usable_as_heading_base("http://h/a/"), usable_as_heading_base("thismessage:/x")
    (True, False)
    """
    if not is_hierarchical(url):
        return False
    scheme = parse(url).scheme
    return scheme is not None and scheme.lower() not in NEVER_BASE_SCHEMES


def base_element_problem(reference: str, *, has_fallback: bool) -> str | None:
    """Why a ``<base href>`` (whitespace stripped) cannot be the document's base, or None
    (HTML "set the frozen base URL"); *has_fallback*: there is a base to resolve it against.

    The scheme is read as a browser's URL parser reads it: leading and trailing C0 controls
    and spaces stripped, tabs and newlines removed anywhere (URL Standard §4.4), so that
    ``java\\tscript:`` is the javascript: it is to a browser.

    >>> base_element_problem("java\\tscript:/x", has_fallback=True)
    'a javascript: URL cannot be a base'
    >>> base_element_problem("mailto:x", has_fallback=True), base_element_problem("/d/", has_fallback=True)
    ('an opaque URL cannot be a base', None)
    """
    reference = _URL_TAB_OR_NEWLINE.sub("", reference.strip(_C0_AND_SPACE))
    scheme = parse(reference).scheme
    if scheme is not None and scheme.lower() in _SCRIPT_SCHEMES:
        return f"a {scheme.lower()}: URL cannot be a base"
    if scheme is not None:
        rest = reference[len(scheme) + 1 :]
        if not rest.startswith("/") and not rest.startswith("#"):
            return "an opaque URL cannot be a base"
    if not reference and not has_fallback:
        return "it is empty and there is no base to resolve it against"
    return None
