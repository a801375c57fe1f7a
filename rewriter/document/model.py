"""What a document gives: its links, their one status vocabulary, and its result.

:class:`Link` is one URL found in a document, a page's, a style sheet's, a MIME part's or a
tree's; :data:`Status` says what became of it; :class:`DocumentResult` is one document's
rewritten bytes and links (the HTML and the CSS engines give it; ``HTMLResult`` is its
older name). :data:`Kind` names the syntax a URL was found in. A container (a message, an
mbox, a WARC) reports a tree of these (:class:`rewriter.mime.Part`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Literal, NamedTuple

from rewriter.url.base import Layer

__all__ = ["DocumentResult", "Kind", "Link", "NoBaseError", "Status", "new_link"]

# What became of a link. "relinked": the policy's relink gave what to write (a bundle's
# local file). "local" and "part": the policy's keep kept a relative reference as written
# (a local copy; a part of the message).
Status = Literal["rewritten", "relinked", "absolute", "same-document", "local", "part", "no-base", "unresolvable"]

# Where a URL was found: how its value holds URLs.
Kind = Literal[
    "url",  # one URL
    "urls",  # space-separated URLs (ping; object archive; head profile)
    "comma-urls",  # comma-separated URLs (applet archive)
    "srcset",  # image candidate strings (HTML §4.8.4.3.10)
    "refresh",  # meta refresh content (HTML §7.11.1)
    "css",  # a style attribute: CSS declarations
    "srcdoc",  # a nested HTML document (iframe srcdoc)
]


class NoBaseError(ValueError):
    """The document has relative links and no base URL, and the policy requires one."""


class Link(NamedTuple):
    """One URL found in a document (a named tuple: pages have thousands).

    ``original`` is the URL as the document means it (character references decoded,
    surrounding whitespace left out); ``start``/``end`` are the byte offsets of its text
    in the input. ``base`` and ``layer`` say what it was resolved against and which
    layer of RFC 1808 §3 gave that base.
    """

    element: str
    attribute: str  # the attribute; "#style": a <style> element's text; "#stylesheet": a whole style sheet
    kind: Kind
    original: str
    resolved: str | None
    status: Status
    reason: str | None
    base: str | None
    layer: Layer | None
    start: int
    end: int


# Link(*fields) without the Python-level __new__ that a named tuple's constructor runs: the
# engines make one record per link, and a page has thousands (measured: the constructor cost
# the HTML engine 2.5 % of its time on the corpus; this, about half of that).
new_link: Callable[[type[Link], tuple[object, ...]], Link] = tuple.__new__


class DocumentResult:
    """One document's result, a page's or a style sheet's: the rewritten bytes and what was found in it.

    *links* may be given as a function that builds them: it is called on first use,
    with None for all of them or a set of statuses for those only. Their byte spans
    cost about as much to work out as the rewriting itself, and a caller that only
    writes the output never needs them.
    """

    __slots__ = ("_links", "_status_counts", "base", "encoding", "layer", "output", "problems")

    def __init__(
        self,
        output: bytes,
        links: tuple[Link, ...] | Callable[[frozenset[Status] | None], tuple[Link, ...]],
        encoding: str,
        base: str | None,
        layer: Layer | None,
        problems: tuple[str, ...] = (),
        status_counts: dict[Status, int] | Callable[[], dict[Status, int]] | None = None,
    ) -> None:
        self.output = output
        self._links = links
        self._status_counts = status_counts  # None: counted from the links
        self.encoding = encoding  # the WHATWG name of the encoding used
        self.base = base  # the document's base URL, if any
        self.layer = layer  # which layer gave it
        self.problems = problems  # e.g. an unusable <base> that was ignored

    @property
    def links(self) -> tuple[Link, ...]:
        """Every link found, in document order, with byte spans into the input."""
        if callable(self._links):
            self._links = self._links(None)
        return self._links

    def links_with(self, *statuses: Status) -> tuple[Link, ...]:
        """The links that have one of *statuses*, in document order. Only their byte spans
        are worked out: a batch run names the links left relative, and needs no others.

        >>> from rewriter.html import rewrite_html
        >>> [link.original for link in rewrite_html(b'<a href=a><a href=http://h/b>').links_with("no-base")]
        ['a']
        """
        if callable(self._links):
            return self._links(frozenset(statuses))
        return tuple(link for link in self._links if link.status in statuses)

    @property
    def status_counts(self) -> dict[Status, int]:
        """How many links have each status, without building the links (a mailbox run
        counts them for every part, and needs no more).

        >>> from rewriter.html import rewrite_html
        >>> rewrite_html(b'<a href=a><img src=b><a href="#c">', url="http://h/").status_counts
        {'rewritten': 2, 'same-document': 1}
        """
        if self._status_counts is None:
            self._status_counts = dict(Counter(link.status for link in self.links))
        elif callable(self._status_counts):
            self._status_counts = self._status_counts()
        return dict(self._status_counts)

    def _fields(self) -> tuple[object, ...]:
        return (self.output, self.links, self.encoding, self.base, self.layer, self.problems)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DocumentResult) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"DocumentResult(output={self.output!r}, links={self.links!r}, encoding={self.encoding!r}, "
            f"base={self.base!r}, layer={self.layer!r}, problems={self.problems!r})"
        )
