"""The base of a document (RFC 1808 §3): its layers, what can be one, and the one chain.

Which base wins is decided here and nowhere else. An engine reports what the content
offers (:class:`Candidates`: the ``<base href>``, a MIME heading's fields, the part that
links this one, the saved-from mark, the canonical URL) beside what the caller hands down
(the enclosing entity's base, the retrieval URL); :func:`chain` takes the first there is in
the order :data:`PRECEDENCE` declares, innermost first:

1. embedded in the content (§3.1): the first ``<base href>`` (``base-element``), or a MIME
   part's own ``Base``, ``Content-Base`` or ``Content-Location`` field;
2. the base of the encapsulating entity (§3.2): the document that links this part
   (``referrer``), the headings of the enclosing MIME entities, or a base a caller hands
   down (``enclosing``);
3. the URL the document was retrieved from (§3.3): ``retrieval-url``; Chrome's
   ``Snapshot-Content-Location``; a browser's ``<!-- saved from url= -->`` mark (or
   HTTrack's ``<!-- Mirrored from ... -->``); a URL
   guessed from the file's place in a collection (``--url-root``, ``--url-map``); with
   ``Policy.canonical_base``, the page's canonical URL;
4. none (§3.4): relative references stay as they are and are reported.

``codebase`` is HTML 4.01 §13.3's base for an ``<object>``'s or ``<applet>``'s resources.
The HTML engine, the MIME engine, the tree adapters, ``pack`` and the command line all
ask this module; :class:`Layer` is the one vocabulary that every result names its layer in.

>>> chain(Candidates(content_location=Base("http://h/a/", "Content-Location", "1.2"),
...                  retrieval=Base("http://r/", "retrieval-url")))
Base(url='http://h/a/', layer='Content-Location', origin='1.2')
>>> mark = Base("http://h/saved/", "saved-from-mark")
>>> chain(Candidates(saved_from=mark, guessed=Base("http://r/x", "retrieval-url"))).layer
'saved-from-mark'
>>> handed_down(url="http://r/x.html", base=None)
('http://r/x.html', 'retrieval-url')
>>> usable_as_base("http://h/p"), usable_as_base("mailto:a@b"), usable_as_heading_base("data:/x")
(True, False, False)
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from rewriter.url.resolve import is_hierarchical, parse

__all__ = [
    "NEVER_BASE_SCHEMES",
    "NO_CANDIDATES",
    "PRECEDENCE",
    "Base",
    "Candidates",
    "Layer",
    "base_element_problem",
    "chain",
    "document_url",
    "from_fallback",
    "handed_down",
    "handed_down_candidates",
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
    "saved-from-mark",  # <!-- saved from url=(NNNN)... --> (or HTTrack's "Mirrored from"): where a saved page came from
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


class Base(NamedTuple):
    """One layer's base: its URL, the layer, and the MIME entity whose heading gave it
    (its path, ``"1.2"``; None where no heading did). Immutable; made for every document."""

    url: str
    layer: Layer
    origin: str | None = None


class Candidates(NamedTuple):
    """What each place offers as one document's base, before any is chosen: each a
    :class:`Base` (its URL already absolute) or None. Engines fill in what the content
    and the caller give; :func:`chain` decides. One value per document: every frame of a
    saved page and every part of a message has its own.

    Which base wins is the order of these fields, declared here once (:data:`PRECEDENCE`):
    the first place that offers one, innermost first (RFC 1808 §3). The engines, the tree
    adapters, pack and the MIME walkers all read it.
    """

    # §3.1 / HTML §4.2.3: the document names its own base; it outranks everything below.
    base_element: Base | None = None
    # §3.1: a MIME heading's "Base: <URL:...>" is embedded in the entity itself.
    base_field: Base | None = None
    # RFC 2110 §5, RFC 2068 §14.11: Content-Base outranks Content-Location in one heading.
    content_base: Base | None = None
    # RFC 2557 §5(b): the part's own URL is its base.
    content_location: Base | None = None
    # §3.2: a part named only by cid: (Chrome's inline style) is content of the document
    # that links it, which encloses it more closely than the multipart does.
    referrer: Base | None = None
    # §3.2: the encapsulating entity's base (RFC 2557 §5(c)), or one a caller hands down.
    enclosing: Base | None = None
    # §3.3: the URL the caller says this very document was retrieved from (--url).
    retrieval: Base | None = None
    # §3.3: Chrome's Snapshot-Content-Location, the page's URL when it was saved.
    snapshot: Base | None = None
    # §3.3: where a saved copy came from, as the browser wrote it (<!-- saved from url= -->).
    saved_from: Base | None = None
    # §3.3 by inference: --url-root/--url-map, or the URL a link to a frame gives it; it only
    # says where the file sits now, the mark says where it was retrieved from.
    guessed: Base | None = None
    # Not §3: where the page says it lives (Policy.canonical_base, opt-in); the last resort.
    canonical: Base | None = None

    def offering(self, **found: Base | None) -> Candidates:
        """These candidates with *found* added (a place that offers nothing keeps None)."""
        return self._replace(**found)

    def outranked(self, place: str) -> bool:
        """Whether a place ranked above *place* offers a base already: then what *place*
        offers cannot win, and an engine need not look for it (a mark, a canonical URL).

        >>> Candidates(retrieval=Base("http://r/", "retrieval-url")).outranked("saved_from")
        True
        >>> Candidates(guessed=Base("http://r/", "retrieval-url")).outranked("saved_from")
        False
        """
        rank = _RANK[place]
        return self[:rank].count(None) < rank  # some place above offers one


# Which base wins: the places in the order the fields of Candidates declare them.
PRECEDENCE: tuple[str, ...] = Candidates._fields
_RANK = {place: rank for rank, place in enumerate(PRECEDENCE)}
NO_CANDIDATES = Candidates()


def chain(candidates: Candidates) -> Base | None:
    """The base a document has: the first place in :data:`PRECEDENCE` that offers one
    (§3.4: None, and relative references stay as they are)."""
    for found in candidates:
        if found is not None:
            return found
    return None


def from_fallback(url: str | None, layer: Layer | None, *, url_guessed: bool = False) -> Candidates:
    """The candidates of a base handed to an engine as (*url*, *layer*): a retrieval URL is
    §3.3's (``guessed`` with *url_guessed*, ``Policy.url_guessed``); any other, an enclosing
    document's base (§3.2: a MIME part's, or a srcdoc's or conditional comment's parent's),
    keeps the layer it has there.

    >>> from_fallback("http://r/", "retrieval-url", url_guessed=True).guessed
    Base(url='http://r/', layer='retrieval-url', origin=None)
    """
    if url is None:
        return NO_CANDIDATES
    found = Base(url, layer or "enclosing")
    if layer == "retrieval-url":
        return Candidates(guessed=found) if url_guessed else Candidates(retrieval=found)
    return Candidates(enclosing=found)


# §3.3's places: where the document itself was retrieved from, the URL that names it (what
# pack labels a file with), as opposed to a base for its references (a <base>, a heading's).
_RETRIEVAL_PLACES = ("retrieval", "snapshot", "saved_from", "guessed")


def document_url(candidates: Candidates) -> Base | None:
    """The URL the document was retrieved from (RFC 1808 §3.3), in the order of
    :data:`PRECEDENCE`: what names the document, whatever base its content declares.

    >>> document_url(Candidates(base_element=Base("http://b/", "base-element"),
    ...                         saved_from=Base("http://h/p.html", "saved-from-mark")))
    Base(url='http://h/p.html', layer='saved-from-mark', origin=None)
    """
    return chain(Candidates(**{place: getattr(candidates, place) for place in _RETRIEVAL_PLACES}))


def handed_down_candidates(*, url: str | None, base: str | None, url_guessed: bool = False) -> Candidates:
    """The candidates a caller hands an engine: *base* from an enclosing entity (§3.2) and
    *url*, the retrieval URL (§3.3), given for this document or, *url_guessed*, inferred
    from its place in a collection (then a saved-from mark outranks it)."""
    if base is None:
        return from_fallback(url, "retrieval-url", url_guessed=url_guessed)
    retrieval = Base(url, "retrieval-url") if url is not None else None
    return Candidates(
        enclosing=Base(base, "enclosing"),
        retrieval=None if url_guessed else retrieval,
        guessed=retrieval if url_guessed else None,
    )


def handed_down(*, url: str | None, base: str | None) -> tuple[str | None, Layer | None]:
    """The base an engine starts from before it looks in the document: a base handed down
    by an enclosing entity (§3.2, ``base=``) or the retrieval URL (§3.3, ``url=``), whichever
    :data:`PRECEDENCE` ranks first (no object made: this runs once per document)."""
    for place, layer in _HANDED:
        value = base if place == "enclosing" else url
        if value is not None:
            return value, layer
    return None, None


_HANDED: tuple[tuple[str, Layer], ...] = tuple(
    sorted((("enclosing", "enclosing"), ("retrieval", "retrieval-url")), key=lambda handed: _RANK[handed[0]])
)


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
