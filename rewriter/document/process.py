"""The document pipeline, below the HTML and the CSS engines: decode -> find -> classify ->
byte map -> splice -> result.

:func:`process` decodes a document's bytes (the engine's sniffer chooses the encoding),
hands the text to a text engine, which finds every link and records it through a
:class:`Context` (the document's base and the policy: what each reference becomes) in a
:class:`TextResult` (links and edits, in text offsets), then maps text offsets to byte
offsets and splices the new URLs into the original bytes, changing no other byte. The
result is one :class:`~rewriter.document.model.DocumentResult`. :func:`frozen_base` is HTML's
"set the frozen base URL" over a context, for the engines that read a ``<base href>``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from functools import cache, partial
from operator import attrgetter
from typing import Any, TypedDict, cast

from rewriter.document.encoding import (
    ESCAPE,
    ByteMap,
    Sniffed,
    decode_checked,
    encode_url_text,
    errors_for,
    split,
    utf8_splice,
)
from rewriter.document.model import LEFT_RELATIVE, DocumentResult, Kind, Link, NoBaseError, Status, new_link
from rewriter.document.speedups import COMPILED, str_argument, twin
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem
from rewriter.url.base import Layer, base_element_problem, handed_down
from rewriter.url.query_encoding import encode_query, has_encoder, python_misreadings, whatwg_name
from rewriter.url.resolve import (
    Resolver,
    UnresolvableReference,
    authority_problem,
    directory_of,
    resolver_for,
    scheme_of,
    scheme_prefix,
)

__all__ = [
    "CLASSIFIED_MOST",
    "KEPT_STATUSES",
    "Context",
    "DocumentOptions",
    "SharedClassifications",
    "TextEngine",
    "TextResult",
    "frozen_base",
    "kept_answer",
    "process",
    "require_base",
    "shared_key",
    "shifted",
    "spliced",
    "with_fragment",
]


@cache
def _whatwg_alone() -> Resolver:
    """The WHATWG parser with no base, made on first use: it imports ada-url, which only
    WHATWG rules need (2 ms of every start-up)."""
    return Resolver("", rules="whatwg")


# A special scheme (URL Standard §3.1), then (group 2) two slashes or backslashes, tab
# and newline being removed first; leading C0 controls and spaces are stripped.
# Compiled at its first use (0.25 ms): only WHATWG rules ask.
@cache
def _special_scheme() -> Callable[[str], re.Match[str] | None]:
    return re.compile(
        r"[\x00-\x20]*((?i:f[\t\n\r]*t[\t\n\r]*p|f[\t\n\r]*i[\t\n\r]*l[\t\n\r]*e|h[\t\n\r]*t[\t\n\r]*t[\t\n\r]*p"
        r"(?:[\t\n\r]*s)?|w[\t\n\r]*s(?:[\t\n\r]*s)?)[\t\n\r]*:)([\t\n\r]*[/\\][\t\n\r]*[/\\])?"
    ).match


def shifted(found: Link, offsets: list[int] | None, shift: int) -> Link:
    """*found* with its span moved from a decoded value (or nested text) to the outer text."""
    start, end = found.start, found.end
    if offsets is not None:
        start, end = offsets[start], offsets[end]
    return new_link(Link, (*found[:9], start + shift, end + shift))  # not _replace: a Python-level call


# The statuses of the links a lean result (TextResult.counts) keeps as records: those left
# relative, which a run names one by one. Every other link is only counted.
KEPT_STATUSES: frozenset[Status] = LEFT_RELATIVE


class TextResult:
    """What an engine found in one document's text: the edits to make (text spans and
    their new text), every link (a :class:`Link` whose span is in text offsets), the
    document's base and its layer, and the problems.

    A lean result (*counts* a dict, not None) holds no record for most links: *counts* has
    how many links have each status, every link counted, and *found* only the links whose
    status is one of :data:`KEPT_STATUSES`, in the order they were found; and the edits that
    put a prefix before a URL (most of a page's) are kept compactly, outside *edits*: their
    offsets in *inserts* (8 bytes each, an array's "q") and their texts in *insert_texts*
    (:meth:`all_edits` makes them edits). The command line's rewrite path asks for it (a page
    of 460,000 links kept about 300 bytes a link in records and 100 in edits)."""

    __slots__ = ("base", "counts", "edits", "found", "insert_texts", "inserts", "layer", "problems")

    def __init__(
        self,
        *,
        base: str | None = None,
        layer: Layer | None = None,
        counts: dict[Status, int] | None = None,
        inserts: bytearray | None = None,
        insert_texts: list[str] | None = None,
    ) -> None:
        self.edits: list[tuple[int, int, str]] = []
        self.found: list[Link] = []
        self.base = base
        self.layer = layer
        self.problems: list[Problem] = []
        self.counts = counts
        self.inserts = inserts
        self.insert_texts = insert_texts

    @classmethod
    def lean(cls) -> TextResult:
        """An empty lean result."""
        return cls(counts={}, inserts=bytearray(), insert_texts=[])

    def all_edits(self) -> list[tuple[int, int, str]]:
        """:attr:`edits`, with the compact ones (a lean result's inserts) made edits and moved there."""
        if self.inserts and self.insert_texts:
            starts = memoryview(self.inserts).cast("q").tolist()
            self.edits.extend(zip(starts, starts, self.insert_texts, strict=True))
        if self.inserts is not None:
            self.inserts, self.insert_texts = bytearray(), []
        return self.edits

    def record(
        self, context: Context, element: str, attribute: str, kind: Kind, reference: str, start: int, end: int
    ) -> str | None:
        """Classify one reference, note it as found, and give the URL to write (None: leave it)."""
        link, new = context.link(element, attribute, kind, reference, start, end)
        counts = self.counts
        if counts is None:
            self.found.append(link)
        else:
            status = link.status
            counts[status] = counts.get(status, 0) + 1
            if status in KEPT_STATUSES:
                self.found.append(link)
        return new

    def inner(self) -> TextResult:
        """An empty result for a document inside this one's text, lean when this one is."""
        return TextResult() if self.counts is None else TextResult.lean()

    def take(self, inner: TextResult, shift: Callable[[Link], Link]) -> None:
        """The links of *inner* (a document inside this one's text, lean or not), each moved by
        *shift*, added to this result's (its edits and problems are the caller's)."""
        counts = self.counts
        if counts is None:
            self.found.extend(map(shift, inner.found))
            return
        kept = inner.found
        if inner.counts is None:  # every link a record (its readings differ, see the HTML engine)
            kept = []
            for link in inner.found:
                counts[link.status] = counts.get(link.status, 0) + 1
                if link.status in KEPT_STATUSES:
                    kept.append(link)
        else:
            for status, count in inner.counts.items():
                counts[status] = counts.get(status, 0) + count
        self.found.extend(map(shift, kept))

    def status_counts(self) -> dict[Status, int]:
        """How many links have each status."""
        if self.counts is not None:
            return dict(self.counts)
        return dict(Counter(map(attrgetter("status"), self.found)))


_ABSOLUTE: tuple[Status, None, None] = ("absolute", None, None)
_SAME_DOCUMENT: tuple[Status, None, None] = ("same-document", None, None)
_NO_BASE: tuple[Status, None, str] = (
    "no-base",
    None,
    "no base URL: the document has no <base>, and no retrieval URL was given",
)


Classification = tuple[Status, str | None, str | None]  # (status, resolved URL, reason)


@twin
def classified_quickly(
    same_document: Classification | None,
    absolute: Classification | None,
    rfc1808: bool,
    shared: dict[str, Classification] | None,
    classify: Callable[[str], Classification],
    classify_shared: Callable[[str], Classification],
    reference: str,
) -> Classification:
    """``classify(reference)``, but without the call for the answers known already:
    *same_document* (when not None) for an empty reference or one that starts with "#",
    *absolute* (when not None) for one that starts with a scheme and its ":" (RFC 3986 §3.1,
    or RFC 1808's syntax with *rfc1808*), and what *shared* (a dict, or None) holds for the
    reference's :func:`shared_key`: made by *classify_shared* for that key and kept there when it holds
    nothing yet (*shared* emptied first when it holds :attr:`SharedClassifications.MOST`), its
    resolved URL given the reference's fragment when the key went without it
    (:func:`with_fragment`). :class:`Context` passes what its own classification would answer,
    as a partial: most of a page's references, in C.

    >>> same, absolute, rewritten = ("same-document", None, None), ("absolute", None, None), ("rewritten", "x", None)
    >>> shared = {"g": ("rewritten", "http://a/g", None)}
    >>> def classify(reference): return rewritten
    >>> [classified_quickly(same, absolute, False, shared, classify, classify, r)[1] for r in ("#a", "g:h", "g#s", "h")]
    [None, None, 'http://a/g#s', 'x']
    """
    if shared is not None and type(shared) is not dict:
        raise TypeError("classified_quickly: shared is a dict or None")
    str_argument(reference)
    if same_document is not None and (not reference or reference[0] == "#"):
        return same_document
    if absolute is not None and scheme_prefix("rfc1808" if rfc1808 else "rfc3986")(reference) is not None:
        return absolute
    key = None if shared is None else shared_key(reference)
    if key is None:
        return classify(reference)
    known = shared.get(key, _NOTHING)  # type: ignore[union-attr]
    if known is _NOTHING:
        known = classify_shared(key)
        if len(shared) >= SharedClassifications.MOST:  # type: ignore[arg-type]
            shared.clear()  # type: ignore[union-attr]
        shared[key] = known  # type: ignore[index]
    return known if len(key) == len(reference) else with_fragment(known, reference[len(key) :])


# The most classifications a document's cache holds (Context.classified, and the engines' loops
# over it; the C spells it CLASSIFIED_MOST too): emptied when full, so that a page of a million
# distinct links holds no million answers (about 250 bytes each) to the end of its call.
CLASSIFIED_MOST = 65536


def kept_answer(classified: dict[str, Any], reference: str, known: Any) -> Any:
    """*known*, kept in a document's cache of classifications *classified* as *reference*'s,
    the cache emptied first when it holds :data:`CLASSIFIED_MOST` (as the C does)."""
    if len(classified) >= CLASSIFIED_MOST:
        classified.clear()
    classified[reference] = known
    return known


_NOTHING: Any = object()  # what a dict holds under no key (None is a value the C gives back)
# A reference's first segment (it always matches), where a ":" would make it a scheme.
_FIRST_SEGMENT = re.compile(r"[^/?#]*").match
# A fragment that every rule set copies as it is: printable ASCII but for what the URL Standard's
# fragment percent-encode set adds (space, '"', "<", ">", "`"); the URL Standard removes tabs and
# newlines, and percent-encodes controls and all past "~".
_PLAIN_FRAGMENT = re.compile(r"#[!#-;=?-_a-~]*\Z").match


def shared_key(reference: str) -> str | None:
    """What of *reference* the documents of one folder whose bases have the same directory
    (:func:`~rewriter.url.resolve.directory_of`) classify alike, so that the folder's pages
    classify it once (:class:`SharedClassifications`): the reference without its fragment when
    that fragment is plain (each rule set appends it to the resolved URL as it is, and a local
    copy is found without it), else the whole reference; None when nothing of it is shared.

    Its part before any "#" must resolve reading no more of the base than that directory: it
    has a path (RFC 3986 §5.2.2: only an empty path takes the base's own path and query; RFC
    1808 §4 step 5 also lets a ";params" one and a "//" with no authority inherit it) and no
    scheme (no ":" in its first segment); it starts with no control character or space (the URL
    Standard strips those, which could leave a "#" or "?" first) and holds no "\\" (a "/" there
    for special schemes). What a local copy is (:class:`~rewriter.run.collection.LocalCopies`)
    is the same for the pages of one folder but for the copies a saved page keeps in a folder
    named after itself (``NAME_files``), so a part naming "_files", or holding a "%" that could
    spell it, is not shared.

    >>> [shared_key(r) for r in ("img/a.png", "../b?q", "/c", "//h/d", "e#f", "e#a b")]
    ['img/a.png', '../b?q', '/c', '//h/d', 'e', 'e#a b']
    >>> [shared_key(r) for r in ("", "#f", "?q", ";p", "g:h", "a%20b", "page_files/x.png", "\\\\x")]
    [None, None, None, None, None, None, None, None]
    """
    if not reference or reference[0] <= " " or reference[0] in "#?;":
        return None
    if reference[:2] == "//" and reference[2:3] in ("", "?", "#"):
        return None  # no authority and no path: RFC 1808 §4 step 5 gives it the base's path and query
    cut = reference.find("#")
    before = reference if cut < 0 else reference[:cut]
    if "\\" in before or "%" in before or "_files" in before:
        return None
    if ":" in before[: _FIRST_SEGMENT(before).end()]:  # type: ignore[union-attr]
        return None
    if cut < 0 or before[-1] <= " " or _PLAIN_FRAGMENT(reference, cut) is None:
        return reference  # a space or control just before the "#": the URL Standard strips it from the key alone
    return before


def with_fragment(classification: Classification, fragment: str) -> Classification:
    """*classification* (of a reference without its fragment) for the reference with *fragment*
    ("#" and what follows): its resolved URL, where it has one, followed by the fragment (RFC 3986
    §5.2.2 and §5.3, RFC 1808 §4 step 7, the URL Standard's fragment state). Anything but a
    (status, resolved, reason) whose resolved URL is a str or None is given back as it is.

    >>> with_fragment(("rewritten", "http://a/g", None), "#s"), with_fragment(("local", None, "why"), "#s")
    (('rewritten', 'http://a/g#s', None), ('local', None, 'why'))
    """
    if type(classification) is not tuple or len(classification) != 3 or type(classification[1]) is not str:
        return classification
    status, resolved, reason = classification
    return status, cast(str, resolved) + fragment, reason


class SharedClassifications:
    """The classifications the documents of one folder share (:func:`shared_key`):
    a memo the run gives each page's :class:`~rewriter.run.collection.LocalCopies` of the folder
    (its ``shared``), read by the page's :class:`Context`. It holds one dict a scope: the
    policy's rules and strictness, the directory of the base, the query's
    encoding and whether the links are in a ``<noscript>``. A scope is emptied when it holds
    :attr:`MOST` answers (whoever adds one to it: a page of a million links included), and all of
    them go when there are :attr:`SCOPES`.

    The one who gives it vouches that ``keep`` answers a shared reference alike for every
    document given it; a policy whose ``keep`` does not carry it shares nothing.

    >>> shared = SharedClassifications()
    >>> one = shared.scope(Policy(), "http://a/b/page1.html", None, False)
    >>> one is shared.scope(Policy(), "http://a/b/page2.html?q", None, False)
    True
    >>> shared.scope(Policy(), "http://a/b/..", None, False) is None
    True
    """

    MOST = 4096  # answers a scope holds, emptied when full (the C spells it SHARED_MOST)
    SCOPES = 16  # so 65,536 answers at most, about 15 MB

    def __init__(self) -> None:
        self._scopes: dict[tuple[object, ...], dict[str, Classification]] = {}

    def scope(
        self, policy: Policy, base: str | None, query_encoding: str | None, in_noscript: bool
    ) -> dict[str, Classification] | None:
        """The dict of classifications for documents of *base* under *policy*; None when the
        base's directory cannot be told from its text, or the policy relinks (a relink sees
        each URL whole, its fragment too), and nothing is shared."""
        directory = directory_of(base) if base is not None else None
        if directory is None or policy.relink is not None:
            return None
        key = (policy.rules, policy.strict, directory, query_encoding, in_noscript)
        scopes = self._scopes
        found = scopes.get(key)
        if found is None:
            if len(scopes) >= self.SCOPES:
                scopes.clear()  # a document under way keeps its dict, whose answers stay true
            found = scopes[key] = {}
        return found


class Context:
    """The base of one document and the policy, classifying one reference at a time:
    its status, the URL to write, and the reason when it is left (cached per reference)."""

    def __init__(
        self, base: str | None, layer: Layer | None, policy: Policy, codec: str = "utf-8", in_noscript: bool = False
    ) -> None:
        self.base = base
        # The links are in a <noscript>'s raw text (scripting on): a new URL there must never
        # hold "<", or a base holding "</noscript>" would end the element early and what
        # follows would be live markup. Browsers percent-encode "<" in every URL part anyway.
        self.in_noscript = in_noscript
        self.layer: Layer | None = layer
        self.policy = policy
        self.codec = codec
        # URL Standard §4.4 "query state": a special URL's query is encoded in the document's
        # encoding (HTML §2.4.2 "encoding-parse a URL"); ada-url knows only UTF-8, so such a
        # query is encoded here first (rewriter.url.query_encoding). CSS reads every URL as UTF-8.
        encoding = whatwg_name(codec) if policy.rules == "whatwg" else None
        self.query_encoding = encoding if encoding is not None and has_encoder(encoding) else None
        self._css: Context | None = None
        # Resolver parses its base once; the resolve module caches parsed bases.
        self.resolver = Resolver(base, rules=policy.rules, strict=policy.strict) if base else None
        self.classified: dict[str, tuple[Status, str | None, str | None]] = {}  # reference: classify()
        # Whether a scheme alone makes a reference absolute (see is_absolute): then a
        # miss in the cache costs one scheme match before resolving.
        self.scheme_match = (
            scheme_prefix(policy.rules)
            if policy.rules != "whatwg" and (policy.strict or policy.rules == "rfc1808" or base is None)
            else None
        )
        self.resolve_one = self.resolver.resolve if self.resolver is not None else None
        self._folder_resolve: Callable[[str], str] | None = None  # see _classified_in_folder
        self.keep_same_document = not policy.same_document
        # The answers this document shares with the others of its folder (shared_key):
        # given by the policy's keep when it answers alike for all of them (the command line's
        # local copies of a folder).
        memo = getattr(policy.keep, "shared", None)
        self.shared = (
            memo.scope(policy, base, self.query_encoding, in_noscript)
            if isinstance(memo, SharedClassifications)
            else None
        )

    def with_base(self, base: str, layer: Layer) -> Context:
        return Context(base, layer, self.policy, self.codec, self.in_noscript)

    def for_css(self) -> Context:
        """This base and policy for the URLs of CSS, which are UTF-8 whatever the document's
        encoding (CSS Values §4.5.1.1, w3c/csswg-drafts#9301): the query is not encoded in it."""
        if self.query_encoding is None:
            return self
        if self._css is None:
            self._css = Context(self.base, self.layer, self.policy, "utf-8", self.in_noscript)
        return self._css

    def inside_noscript(self) -> Context:
        """This base and policy, for the links of a <noscript>'s text."""
        return Context(self.base, self.layer, self.policy, self.codec, in_noscript=True)

    def codebase(self, reference: str) -> Context:
        """HTML 4.01 §13.3: the context for classid/data/archive/code, relative to the
        codebase *reference* (decoded, whitespace stripped), itself resolved against this base."""
        status, resolved, _ = self.classify(reference)
        if status == "absolute":
            return self.with_base(reference, "codebase")
        if status == "rewritten" and resolved is not None:
            return self.with_base(resolved, "codebase")
        return self

    def is_absolute(self, reference: str) -> bool:
        policy = self.policy
        if policy.rules == "whatwg":
            # URL Standard "special relative or authority state": a special scheme not
            # followed by two slashes ("https:g", "http:/x") is relative to a base of
            # that scheme, so the reference means another URL on a page served
            # elsewhere. Only one that parses alone to what it resolves to, and does
            # not lean on the base's scheme, is absolute.
            special = _special_scheme()(reference)
            if special is not None and special.group(2) is None:
                return False
            try:
                alone = _whatwg_alone().resolve(reference)  # fails for a reference that needs a base ("x")
                return self.resolver is None or alone == self.resolver.resolve(reference)
            except UnresolvableReference:
                return False
        scheme = scheme_of(reference, rules=policy.rules)
        if scheme is None:
            return False
        if not policy.strict and policy.rules != "rfc1808" and self.base is not None:
            base_scheme = scheme_of(self.base)
            return base_scheme is None or scheme.lower() != base_scheme.lower()
        return True

    def classify(self, reference: str) -> tuple[Status, str | None, str | None]:
        """(status, resolved URL, reason) for one reference (whitespace already stripped)."""
        known = self.classified.get(reference)
        if known is None:
            known = kept_answer(self.classified, reference, self._classify(reference))
        return known

    def classifier(self) -> Callable[[str], Classification]:
        """:meth:`_classify`, for the engine's loops over a page's references: with the C
        extension, the answers that need no base are given first (:func:`classified_quickly`:
        a same-document reference kept; an absolute one when a scheme alone says so and no
        relink may change it). Made for each loop, never kept on the context: a callable that
        holds the context, kept by it, would be a reference cycle, which only the cyclic
        collector frees, and the engine pauses it."""
        if not COMPILED:
            return self._classify  # the same answers, one Python call fewer
        return partial(
            classified_quickly,
            _SAME_DOCUMENT if self.keep_same_document else None,
            _ABSOLUTE if self.scheme_match is not None and self.policy.relink is None else None,
            self.policy.rules == "rfc1808",
            self.shared,
            self._classified_here,
            self._classified_in_folder,  # a shared reference is looked up and kept by classified_quickly
        )

    def link(
        self, element: str, attribute: str, kind: Kind, reference: str, start: int, end: int
    ) -> tuple[Link, str | None]:
        """One reference (whitespace already stripped) found at *start*-*end*, as a Link
        record with its status, and the URL to write for it (None: leave it as it is)."""
        status, resolved, reason = self.classify(reference)
        fields = (element, attribute, kind, reference, resolved, status, reason, self.base, self.layer, start, end)
        write = resolved if (status == "rewritten" or status == "relinked") and resolved != reference else None
        return new_link(Link, fields), write

    def _classify(self, reference: str) -> tuple[Status, str | None, str | None]:
        """:meth:`classify` for a reference not yet seen: the folder's shared answer, or this
        document's own."""
        if self.shared is None:
            return self._classified_here(reference)
        return classified_quickly(
            None, None, False, self.shared, self._classified_here, self._classified_in_folder, reference
        )

    def _classified_in_folder(self, key: str) -> tuple[Status, str | None, str | None]:
        """:meth:`_classified_here` for a :func:`shared_key`, which reads no more of the base than
        its directory: resolved against the directory's URL, whose parse the pages of a folder
        share (``resolver_for`` keeps it), so a page whose references all have such keys never
        parses its own URL (about 10 us a page)."""
        folder = self._folder_resolve
        if folder is None:
            directory = directory_of(self.base) if self.base is not None else None
            if directory is None:  # no shared scope is made for such a base; never so here
                return self._classified_by(key, self.resolve_one)
            # The cached resolver itself, not a Resolver around it: no object a page, no call a link.
            folder = self._folder_resolve = resolver_for(directory, self.policy.rules, self.policy.strict)
        return self._classified_by(key, folder)

    def _classified_here(self, reference: str) -> tuple[Status, str | None, str | None]:
        return self._classified_by(reference, self.resolve_one)

    def _classified_by(
        self, reference: str, resolve_one: Callable[[str], str] | None
    ) -> tuple[Status, str | None, str | None]:
        """The classification of *reference*, resolved by *resolve_one* (None: no base)."""
        if self.keep_same_document and (not reference or reference[0] == "#"):
            return _SAME_DOCUMENT
        found = self._resolve(reference, resolve_one)
        keep = self.policy.keep
        if keep is not None and found[0] in ("rewritten", "no-base", "unresolvable"):
            kept = keep(reference, found[1] if found[0] == "rewritten" else None)
            if kept is not None:
                if kept[0] == "rewritten":  # the URL a local copy stands for
                    found = ("rewritten", kept[1], None)
                else:
                    return kept[0], None, kept[1]
        relink = self.policy.relink
        if relink is not None and found[0] != "unresolvable":
            resolved = found[1]
            new = relink(resolved if found[0] == "rewritten" and resolved is not None else reference)
            if new is not None:
                found = ("relinked", new, None)
        if self.in_noscript and found[1] is not None and "<" in found[1]:
            found = (found[0], found[1].replace("<", "%3C"), found[2])
        return found

    def _resolve(
        self, reference: str, resolve_one: Callable[[str], str] | None
    ) -> tuple[Status, str | None, str | None]:
        scheme_match = self.scheme_match
        # Every scheme ends at a colon (RFC 3986 §3.1, URL Standard "scheme state"): most
        # references have none, and need no match.
        if ":" in reference and (
            (scheme_match(reference) is not None) if scheme_match is not None else self.is_absolute(reference)
        ):
            return _ABSOLUTE
        if resolve_one is None:
            return _NO_BASE
        try:
            query_encoding = self.query_encoding
            resolved = resolve_one(
                reference if query_encoding is None else encode_query(reference, query_encoding, self.base)
            )
        except UnresolvableReference as error:
            return "unresolvable", None, error.reason
        if resolved == reference:
            # Non-strict rules read "http://h/x" on an http: page as relative ("//h/x"); it
            # resolves to itself, and was absolute all along.
            return _ABSOLUTE
        return "rewritten", resolved, None


def spliced(text: str, edits: list[tuple[int, int, str]]) -> str:
    """*text* with *edits* (spans of it) applied; the tree adapters splice values with it too."""
    pieces: list[str] = []
    last = 0
    for start, end, new in sorted(edits, key=lambda edit: (edit[0], edit[1])):
        if start < last:
            continue  # never overlapping; should two, the first stands
        pieces += (text[last:start], new)
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def require_base(policy: Policy, result: TextResult) -> None:
    """:class:`NoBaseError` when the policy requires a base and a link was left for want of one."""
    if policy.require_base and any(found.status == "no-base" for found in result.found):
        raise NoBaseError("the document has relative links and no base URL (RFC 1808 §3.4)")


# frozen_base's reason for a relative <base href> with nothing to resolve it against: the
# engines give its problem the code "base-relative" (the MIME engine's decision reads the code).
RELATIVE_BASE = "it is relative and there is no base to resolve it against"


def frozen_base(reference: str, fallback: Context) -> tuple[str | None, str | None]:
    """HTML §4.2.3 "set the frozen base URL": the ``<base href>`` *reference* (whitespace
    stripped) parsed against the fallback base, and None with the reason when it cannot be
    the base; the fallback then stays the base (the next layer of RFC 1808 §3). Under the
    RFC rules an absolute URL whose authority is none of the rules' syntax (an unclosed IP
    literal) fails to parse, as the WHATWG parser fails."""
    problem = base_element_problem(reference, has_fallback=fallback.base is not None)
    if problem is not None:
        return None, problem
    try:
        if fallback.is_absolute(reference):
            frozen = reference
        elif fallback.resolver is not None:
            frozen = fallback.resolver.resolve(reference)
        else:
            return None, RELATIVE_BASE
    except UnresolvableReference as error:
        return None, error.reason
    problem = authority_problem(frozen, rules=fallback.policy.rules)
    return (None, problem) if problem is not None else (frozen, None)


class DocumentOptions(TypedDict, total=False):
    """The keyword arguments of every document engine's functions (``rewrite_html``,
    ``find_links``, ``rewrite_css``, ``find_css_links``): *url* the retrieval URL (RFC 1808
    §3.3); *base* a base handed down by an enclosing entity (§3.2, e.g. a MIME part's), which
    takes precedence; *charset* a transport charset (HTTP or MIME); *policy* the policy."""

    url: str | None
    base: str | None
    charset: str | None
    policy: Policy


# A text engine (HTML or CSS): text, fallback base, its layer, policy, codec, and
# whether every byte was readable; with the keyword lean=True, a lean result (TextResult.counts).
TextEngine = Callable[..., TextResult]


def process(
    document: bytes | str,
    *,
    rewrite: bool,
    engine: TextEngine,
    sniffer: Callable[[bytes, str | None], Sniffed],
    url: str | None = None,
    base: str | None = None,
    charset: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    links: bool = True,
) -> DocumentResult:
    """Decode, run *engine* on the text, map its text offsets to bytes, and splice its edits
    into the original bytes. *sniffer* chooses the encoding (HTML's or CSS's rules). The
    rest are :class:`DocumentOptions`, as the engines' functions take them.

    *links* False: the caller asks for no links (the command line's rewrite path), so the
    engine keeps a lean result: each link counted by status, a record kept only for the
    links left relative (:data:`KEPT_STATUSES`). The result gives the same links, counts and
    output all the same; asking it for other links runs the engine on the text again."""
    fallback, layer = handed_down(url=url, base=base)
    if isinstance(document, str):
        # A decoded document may hold any lone surrogate; it goes out as UTF-8 with them.
        text, codec, label, errors = document, "utf-8", "utf-8", "surrogatepass"
        bom, body, tail = b"", document.encode("utf-8", errors), b""
        readable = False
    else:
        sniffed = sniffer(document, charset)
        text, readable = decode_checked(document, sniffed)
        codec, label, errors = sniffed.codec, sniffed.label, errors_for(sniffed.codec)
        bom = sniffed.bom
        body, tail = split(document, sniffed)
    # The cyclic garbage collector is left as the caller has it: it is the process's, not the
    # library's (pausing it here saved 0.1-0.3 % of the instructions over the corpus).
    read = _as_browsers_read(text, codec, policy)
    found = engine(read, fallback, layer, policy, codec, readable, **({} if links else {"lean": True}))
    byte_map = ByteMap(text, body, codec, errors)
    shift = len(bom)
    every: list[TextResult] = []  # a lean result's links made again, each one a record, when asked for

    def links_of(statuses: frozenset[Status] | None) -> tuple[Link, ...]:
        records = found
        if found.counts is not None and (statuses is None or not statuses <= KEPT_STATUSES):
            if not every:
                every.append(engine(read, fallback, layer, policy, codec, readable))
            records = every[0]
        records.found.sort(key=attrgetter("start"))  # document order (conditional comments come last)
        chosen = records.found if statuses is None else [item for item in records.found if item.status in statuses]
        positions = sorted({p for item in chosen for p in (item.start, item.end)})
        mapped = dict(zip(positions, byte_map.byte_offsets(positions), strict=True))
        # Each link with its span in bytes: its fields but the span (item[:-2]), then the span.
        return tuple(
            [new_link(Link, (*item[:-2], mapped[item.start] + shift, mapped[item.end] + shift)) for item in chosen]
        )

    output = document if isinstance(document, bytes) else body
    if rewrite:
        found.all_edits()  # the engine is done: its tree is gone, and a tuple for each edit costs less now
    in_c = rewrite and found.edits and COMPILED and byte_map.utf8
    if in_c:
        # One call in C: the edits sorted, their offsets mapped, the new text encoded, the bytes joined.
        encode = partial(encode_url_text, codec=codec, errors=errors)
        spliced_body = utf8_splice(text, body, found.edits, errors == ESCAPE, encode)
        output = bom + spliced_body + tail if bom or tail else spliced_body
    edits = sorted(found.edits, key=lambda edit: (edit[0], edit[1])) if rewrite and not in_c else []
    positions = sorted({p for edit in edits for p in edit[:2]})
    mapped = dict(zip(positions, byte_map.byte_offsets(positions), strict=True))
    if edits:
        pieces: list[bytes] = [bom]
        last = 0
        for start, end, new in edits:
            byte_start, byte_end = mapped[start], mapped[end]
            if byte_start < last:
                continue  # edits never overlap; should one, the first stands
            pieces.append(body[last:byte_start])
            pieces.append(encode_url_text(new, codec, errors))
            last = byte_end
        pieces.append(body[last:])
        pieces.append(tail)
        output = b"".join(pieces)

    found.edits, found.inserts, found.insert_texts = [], None, None  # spliced: the result holds no edit
    return DocumentResult(output, links_of, label, found.base, found.layer, tuple(found.problems), found.status_counts)


def _as_browsers_read(text: str, codec: str, policy: Policy) -> str:
    """Under ``whatwg`` rules, *text* (decoded by Python's *codec*) with each character Python
    reads from bytes the Encoding Standard's decoder reads as another character replaced by
    that one (EUC-JP 0xA1 0xC1 is U+FF5E, not U+301C; gb18030 0xA6 0xD9 is U+FE10, not
    U+E78D): the URL a browser makes of a link is made of those. One character for one, so
    every offset holds; character references are decoded later, from the text as written.
    The RFC rule sets write a link's characters back as they are, so they keep Python's."""
    if policy.rules != "whatwg" or text.isascii():
        return text
    encoding = whatwg_name(codec)
    if encoding is None or not has_encoder(encoding):
        return text
    misreadings = python_misreadings(encoding, codec)
    return text.translate(misreadings) if misreadings else text
