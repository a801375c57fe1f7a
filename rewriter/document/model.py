r"""What a document gives: its links, their one status vocabulary, and its result.

:class:`Link` is one URL found in a document, a page's, a style sheet's, a MIME part's or a
tree's; :data:`Status` says what became of it; :class:`DocumentResult` is one document's
rewritten bytes and links (the HTML and the CSS engines give it; ``HTMLResult`` is its
older name). :data:`Kind` names the syntax a URL was found in. A message reports a tree of
records, :class:`MessageResult` of :class:`Part`\ s, each with its links. A container (an
mbox, a Maildir, a WARC) hands the run each of its documents as a :class:`Unit`, the same
whatever the container, so that the run keeps one tally.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from rewriter.problems import Problem, as_problem
from rewriter.url.base import Layer

__all__ = [
    "LEFT_RELATIVE",
    "Action",
    "DocumentResult",
    "Kind",
    "Link",
    "MessageResult",
    "NoBaseError",
    "Part",
    "Status",
    "Unit",
    "new_link",
    "placed",
]

# What became of a link. "relinked": the policy's relink gave what to write (a bundle's
# local file). "local" and "part": the policy's keep kept a relative reference as written
# (a local copy; a part of the message).
Status = Literal["rewritten", "relinked", "absolute", "same-document", "local", "part", "no-base", "unresolvable"]
# The statuses of a link left relative (no base; a base it cannot be resolved against): what a
# run names link by link, and the only links a lean result keeps as records.
LEFT_RELATIVE: frozenset[Status] = frozenset({"no-base", "unresolvable"})

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
    def text(self) -> str:
        """The output as a ``str``, decoded from :attr:`encoding` (the text given, when a
        ``str`` went in, with its links rewritten). A declared charset (``<meta charset>``,
        ``@charset``) is left as it was: text has no encoding; the caller who encodes it
        chooses one. A byte that encoding cannot read comes back as a lone surrogate
        (``surrogateescape``), as the output keeps it.

        >>> from rewriter.html import rewrite_html
        >>> rewrite_html('<meta charset=latin1><a href=x>é</a>', url="http://h/").text
        '<meta charset=latin1><a href=http://h/x>é</a>'
        """
        from rewriter.document.encoding import lookup

        found = lookup(self.encoding)
        codec = "utf-8" if found is None else found.codec_info.name
        try:
            return self.output.decode(codec, "surrogatepass" if codec == "utf-8" else "strict")
        except UnicodeDecodeError:
            return self.output.decode(codec, "surrogateescape")

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


# What was done to one entity of a message.
Action = Literal["rewritten", "unchanged", "skipped", "container", "other"]


# Part's attributes in the order of its constructor's parameters.
_PART_SLOTS = (
    "path",
    "content_type",
    "start",
    "body_start",
    "end",
    "base",
    "layer",
    "origin",
    "_links",
    "action",
    "problems",
)


class Part:
    """One MIME entity of a message, what its base is, and what was done to it.

    ``path`` numbers entities like IMAP: "1" is the message, "1.2" its second child, and
    the message inside a message/rfc822 part "1.2" is "1.2.1". ``start``, ``body_start``
    and ``end`` are byte offsets in the input: the heading, the body, the body's end (the
    line break before a delimiter belongs to the delimiter, RFC 2046 §5.1.1).
    ``base``/``layer``/``origin``: the base the part's links were resolved against, which
    layer gave it, and the path of the entity whose heading gave it (None for a
    ``<base>`` element and the retrieval URL). ``links`` have byte spans in the decoded body.

    Immutable. *links* may be the engine's result, whose links are built on first use:
    their byte spans cost a tenth of a mailbox run, which only counts them (:meth:`count`).
    """

    __slots__ = _PART_SLOTS

    path: str
    content_type: str
    start: int
    body_start: int
    end: int
    base: str | None
    layer: Layer | None
    origin: str | None
    action: Action
    problems: tuple[str, ...]
    _links: tuple[Link, ...] | DocumentResult

    def __init__(
        self,
        path: str,
        content_type: str,
        start: int,
        body_start: int,
        end: int,
        base: str | None,
        layer: Layer | None,
        origin: str | None,
        links: tuple[Link, ...] | DocumentResult = (),
        action: Action = "other",
        problems: tuple[str, ...] = (),
    ) -> None:
        values = (path, content_type, start, body_start, end, base, layer, origin, links, action, problems)
        for name, value in zip(_PART_SLOTS, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Part is immutable: cannot set {name!r}")

    def __reduce__(self) -> tuple[type[Part], tuple[object, ...]]:
        return Part, self._fields()  # the links built: the engine's result holds a function

    @property
    def links(self) -> tuple[Link, ...]:
        links = self._links
        return links.links if isinstance(links, DocumentResult) else links

    def links_with(self, *statuses: Status) -> tuple[Link, ...]:
        """This part's links that have one of *statuses*; only their byte spans are worked out."""
        links = self._links
        if isinstance(links, DocumentResult):
            return links.links_with(*statuses)
        return tuple(link for link in links if link.status in statuses)

    def count(self, *statuses: Status) -> int:
        """How many of this part's links have one of *statuses* (all of them without any).

        >>> from rewriter.mime import rewrite_message
        >>> part = rewrite_message(b"Content-Type: text/html\\n\\n<a href=x><a href=#y>", url="http://h/").parts[0]
        >>> part.count("rewritten"), part.count()
        (1, 2)
        """
        counts = self.status_counts
        return sum(counts.values()) if not statuses else sum(counts.get(status, 0) for status in set(statuses))

    @property
    def status_counts(self) -> dict[Status, int]:
        """How many of this part's links have each status, without building the links."""
        links = self._links
        return (
            links.status_counts if isinstance(links, DocumentResult) else dict(Counter(link.status for link in links))
        )

    def _fields(self) -> tuple[object, ...]:
        return tuple(self.links if name == "_links" else getattr(self, name) for name in _PART_SLOTS)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Part) and self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        fields = zip((name.lstrip("_") for name in _PART_SLOTS), self._fields(), strict=True)
        return f"Part({', '.join(f'{name}={value!r}' for name, value in fields)})"


@dataclass(frozen=True, slots=True)
class MessageResult:
    """A container's report, a tree of records: the rewritten message and every entity of it
    (a :class:`Part`, numbered by its place in the tree), in tree order."""

    output: bytes
    parts: tuple[Part, ...]
    problems: tuple[str, ...] = ()

    @property
    def links(self) -> tuple[Link, ...]:
        return tuple(link for part in self.parts for link in part.links)


@dataclass(frozen=True, slots=True)
class Unit:
    """One document of a job, as its container hands it to the run's tally
    (:func:`rewriter.run.tally.fold`): where it is, what the engine made of it, what was said
    of it, its bytes, whether it changed. A file alone is one unit; an mbox, a Maildir, a WARC
    hand one per message or record (each report's ``unit()``).

    >>> unit = Unit({"offset": 99}, errors=placed(["no record here"], "record", "offset 99"), failed=True)
    >>> [str(error) for error in unit.errors], unit.errors[0].code
    (['offset 99: no record here'], 'record')
    """

    # How its warnings, each link left relative, its records and its rows name it:
    # {"message": 3} in an mbox, {"record": url} in a WARC; {} for a file alone.
    where: Mapping[str, object]
    result: DocumentResult | MessageResult | None = None  # None: no engine read it through
    format: str = "html"  # what the engine read it as: html, css, message
    problems: Sequence[str] | None = None  # its warnings, said under *where* (None: the result's own)
    errors: Sequence[str] = ()  # what went wrong, always said: problem records, placed where they are
    failed: bool = False  # nothing (or not all) came of it: the outcome is not ok
    bytes_in: int = 0
    bytes_out: int = 0
    changed: bool = False  # its output differs from its input (and was written, when written)
    report: dict[str, object] | None = field(default=None, compare=False)  # its own report (Settings.units)


def placed(problems: Iterable[str], code: str, *where: str) -> list[Problem]:
    """*problems* as records inside *where* (a message, a record, an offset; outermost first):
    one that is not a record yet becomes one of *code*.

    >>> placed(["cut short"], "record", "record http://h/")
    [Problem('record', 'cut short', where=('record http://h/',))]
    """
    return [as_problem(problem, code).at(*where) for problem in problems]
