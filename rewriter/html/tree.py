"""The tree adapters' shared engine: the bytes engine's rules, run over a parsed tree.

:mod:`rewriter.html.bs4` and :mod:`rewriter.html.lxml` are thin :class:`Adapter` implementations;
everything else lives here and reuses the bytes engine's parts (:mod:`rewriter.html.engine`'s
base checks and resolving context, the link table of :mod:`rewriter.html.table`, the
microsyntaxes of :mod:`rewriter.html.microsyntax`, :mod:`rewriter.css.syntax`), so both engines
apply one set of rules:

- the base (RFC 1808 §3, HTML §4.2.3 "the base element"): the first ``<base href>`` in
  tree order, in the HTML namespace, not in ``<template>`` or ``<noscript>``; then the
  enclosing base (``base=``), the retrieval URL (``url=``), the ``saved from url=``
  mark, and with ``policy.canonical_base`` the canonical URL;
- every attribute :func:`rewriter.html.table.attributes_of` names for the element;
  ``srcset`` (HTML §4.8.4.3.10), ``ping`` and archives, meta refresh (HTML §4.2.5.3 and
  §7.11.1), CSS in ``style`` attributes and ``<style>`` text, ``iframe srcdoc``, and
  ``<!--[if IE]>`` comments;
- every :class:`~rewriter.policy.Policy` option.

A tree has no bytes, so each :class:`~rewriter.html.engine.Link` has ``start == end == -1``.

>>> from rewriter.html.bs4 import absolutize
>>> from bs4 import BeautifulSoup
>>> soup = BeautifulSoup('<a href="x">x</a>', "html.parser")
>>> absolutize(soup, url="http://h/d/").links[0][:6]
('a', 'href', 'url', 'x', 'http://h/d/x', 'rewritten')
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Generic, Literal, Protocol, TypedDict, TypeVar

from rewriter.css import syntax as css
from rewriter.document.model import Kind, Link, NoBaseError
from rewriter.document.process import RELATIVE_BASE, Context, frozen_base, spliced
from rewriter.html.engine import conditional_spans, rewrite_text, saved_from
from rewriter.html.links import ViewElement, element_links, for_context
from rewriter.html.microsyntax import strip_whitespace
from rewriter.html.table import GENERAL_PATH_ELEMENTS, attributes_of, is_plain_url
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem
from rewriter.url.base import Base, Candidates, Layer, chain, handed_down_candidates
from rewriter.url.resolve import parse

__all__ = ["NO_SPAN", "Adapter", "Namespace", "TreeOptions", "TreeResult", "TreeView", "absolutize", "namespace_of"]

N = TypeVar("N")
Namespace = Literal["html", "svg", "math"]
NodeKind = Literal["document", "element", "comment", "other"]

# Link.start and Link.end of a link found in a tree: a tree has no byte offsets.
NO_SPAN = -1

NAMESPACES: dict[str, Namespace] = {
    "http://www.w3.org/1999/xhtml": "html",
    "http://www.w3.org/2000/svg": "svg",
    "http://www.w3.org/1998/Math/MathML": "math",
}
# Attribute namespaces (HTML §13.2.6.1 "adjust foreign attributes"), for Clark names.
ATTRIBUTE_PREFIXES = {
    "http://www.w3.org/1999/xlink": "xlink",
    "http://www.w3.org/XML/1998/namespace": "xml",
    "http://www.w3.org/2000/xmlns/": "xmlns",
}
_MATHML_TEXT_POINTS = frozenset({"mi", "mo", "mn", "ms", "mtext"})
_SVG_HTML_POINTS = frozenset({"foreignobject", "desc", "title"})


class Adapter(Protocol[N]):
    """What the engine needs of a tree: nodes in document order, and reading and writing them.

    Names are as the tree holds them: :meth:`name` gives the namespace URI (None when the
    parser records none) and the local name; :meth:`attributes` gives (the name as
    the table spells it, lowercase with an ``xlink:`` style prefix; the tree's own key;
    the value, character references decoded).
    """

    def document(self, node: N) -> N:
        """The outermost node of the tree *node* is in (its children are the top-level nodes)."""
        ...

    def parent(self, node: N) -> N | None: ...

    def children(self, node: N) -> Sequence[N]: ...

    def kind(self, node: N) -> NodeKind: ...

    def name(self, node: N) -> tuple[str | None, str]: ...

    def attributes(self, node: N) -> list[tuple[str, object, str]]: ...

    def set_attribute(self, node: N, key: object, value: str) -> None: ...

    def text(self, node: N) -> str | None:
        """The text of an element that holds only text (a ``<style>``), else None."""
        ...

    def set_text(self, node: N, text: str) -> None: ...

    def comment(self, node: N) -> str: ...

    def set_comment(self, node: N, text: str) -> None: ...

    def remove(self, node: N) -> None: ...


class TreeOptions(TypedDict, total=False):
    """The keyword arguments of the adapters' ``absolutize`` (and ``rewriter.rewrite_tree``):
    *url* the retrieval URL (RFC 1808 §3.3), *base* a base handed down by an enclosing entity
    (§3.2), *policy* the :class:`~rewriter.policy.Policy`."""

    url: str | None
    base: str | None
    policy: Policy


@dataclass(frozen=True, slots=True)
class TreeResult:
    """What :func:`absolutize` found and changed: every link (``start``/``end`` are
    :data:`NO_SPAN`), the document's base, the layer that gave it, and problems."""

    links: tuple[Link, ...]
    base: str | None
    layer: Layer | None
    problems: tuple[str, ...] = ()


class _Element(Generic[N]):
    """One element as the walk saw it (never changed once made: a plain class with slots, not a
    frozen dataclass, whose ``__init__`` sets each field through ``object.__setattr__``: one is
    made for every element of the tree)."""

    __slots__ = ("in_noscript", "inert", "keys", "namespace", "node", "tag")

    def __init__(self, node: N, namespace: Namespace | None, tag: str, inert: bool, in_noscript: bool = False) -> None:
        self.node = node
        self.namespace = namespace  # None: a namespace the link table does not know
        self.tag = tag  # lowercase for HTML, as the tree spells it for SVG and MathML
        self.inert = inert  # in a <template> or a <noscript>: never the document's base (HTML §4.2.3)
        # Under an HTML <noscript>: raw text to a scripting browser once serialised, so no new
        # value here may hold "<" (a base holding "</noscript>" would end the element early).
        self.in_noscript = in_noscript
        self.keys: dict[str, object] = {}  # each attribute's key in the tree, by the table's name (TreeView.element)


def namespace_of(
    uri: str | None, local: str, parent: tuple[Namespace | None, str, dict[str, str]] | None
) -> Namespace | None:
    """The namespace of an element: its own, or, where the parser recorded none (html.parser,
    lxml.html), the one HTML tree construction gives it (HTML §13.2.6.5 foreign content):
    ``<svg>`` and ``<math>`` open SVG and MathML, their descendants inherit it, and the HTML
    integration points (SVG ``foreignObject``/``desc``/``title``, MathML text integration
    points, ``annotation-xml`` with an HTML encoding) hold HTML again. *parent* is the
    parent's (namespace, local name, attributes), None at the top.

    >>> namespace_of(None, "image", ("svg", "svg", {}))
    'svg'
    >>> namespace_of(None, "img", ("svg", "foreignobject", {}))
    'html'
    >>> namespace_of("http://www.w3.org/2000/svg", "a", None), namespace_of("urn:x", "a", None)
    ('svg', None)
    """
    if uri is not None:
        return NAMESPACES.get(uri)
    if parent is not None and parent[0] in ("svg", "math") and not _integration_point(*parent):
        return parent[0]
    lower = local.lower()
    if lower == "svg":
        return "svg"
    if lower == "math":
        return "math"
    return "html"


def _integration_point(namespace: Namespace | None, local: str, attributes: dict[str, str]) -> bool:
    lower = local.lower()
    if namespace == "svg":
        return lower in _SVG_HTML_POINTS
    if lower in _MATHML_TEXT_POINTS:
        return True
    encoding = attributes.get("encoding", "").strip().lower()
    return lower == "annotation-xml" and encoding in ("text/html", "application/xhtml+xml")


class _Walk(Generic[N]):
    """Document-order traversal that knows each element's namespace and inertness."""

    def __init__(self, adapter: Adapter[N]) -> None:
        self.adapter = adapter

    def element(self, node: N, parent: _Element[N] | None) -> _Element[N]:
        adapter = self.adapter
        uri, local = adapter.name(node)
        if uri is None and parent is not None and parent.namespace == "html":
            # The common case, as namespace_of reads it: an element in no namespace under an HTML one.
            lower = local.lower()
            namespace: Namespace | None = "svg" if lower == "svg" else "math" if lower == "math" else "html"
            tag = lower if namespace == "html" else local
            if parent.inert or parent.tag in ("template", "noscript"):
                in_noscript = parent.in_noscript or parent.tag == "noscript"
                return _Element(node, namespace, tag, True, in_noscript)
            return _Element(node, namespace, tag, False, parent.in_noscript)
        context = None
        if parent is not None:
            names: dict[str, str] = {}
            if parent.namespace == "math" and parent.tag.lower() == "annotation-xml":
                names = {name: value for name, _, value in adapter.attributes(parent.node)}
            context = (parent.namespace, parent.tag, names)
        namespace = namespace_of(uri, local, context)
        tag = local.lower() if namespace == "html" else local
        inert = parent is not None and (
            parent.inert or (parent.namespace == "html" and parent.tag in ("template", "noscript"))
        )
        in_noscript = parent is not None and (
            parent.in_noscript or (parent.namespace == "html" and parent.tag == "noscript")
        )
        return _Element(node, namespace, tag, inert, in_noscript)

    def context_of(self, node: N) -> _Element[N] | None:
        """The element *node*'s parent as the walk from the document would have seen it."""
        chain: list[N] = []
        parent = self.adapter.parent(node)
        while parent is not None and self.adapter.kind(parent) == "element":
            chain.append(parent)
            parent = self.adapter.parent(parent)
        seen: _Element[N] | None = None
        for ancestor in reversed(chain):
            seen = self.element(ancestor, seen)
        return seen

    def nodes(self, root: N) -> Iterator[tuple[N, _Element[N] | None]]:
        """Every node under *root* (itself included, unless it is the document), in
        document order, with the element it is (None for comments and other nodes)."""
        adapter = self.adapter
        descendants = getattr(adapter, "descendants", None)  # an adapter's own walk, where it has one
        if descendants is not None:
            yield from self._nodes_by_parent(root, descendants(root))
            return
        stack: list[tuple[N, _Element[N] | None]] = []
        if adapter.kind(root) == "document":
            stack.extend((child, None) for child in reversed(adapter.children(root)))
        else:
            stack.append((root, self.context_of(root)))
        while stack:
            node, parent = stack.pop()
            kind = adapter.kind(node)
            if kind != "element":
                yield node, None
                continue
            element = self.element(node, parent)
            yield node, element
            children = adapter.children(node)
            if children:
                stack.extend(zip(reversed(children), repeat(element)))

    def _nodes_by_parent(
        self, root: N, descendants: Iterator[tuple[N, N | None, bool]]
    ) -> Iterator[tuple[N, _Element[N] | None]]:
        """:meth:`nodes` from an adapter's ``descendants(root)``: the same nodes in the same
        order, each with its parent node (None for *root* and the document's top-level nodes)
        and whether it is an element; each element's parent is looked up among those seen."""
        start = None if self.adapter.kind(root) == "document" else self.context_of(root)
        seen: dict[N, _Element[N]] = {}
        element_of = self.element
        for node, parent, is_element in descendants:
            if not is_element:
                yield node, None
                continue
            element = element_of(node, start if parent is None else seen[parent])
            seen[node] = element
            yield node, element


@dataclass(slots=True)
class _Run(Generic[N]):
    """One call's state: the links found, the problems, and the writes to make at the end."""

    adapter: Adapter[N]
    view: TreeView[N]
    policy: Policy
    codec: str
    links: list[Link]
    problems: list[Problem]
    writes: list[tuple[str, Callable[[], None]]]  # (what is written, the write)

    def record(self, context: Context, element: str, attribute: str, kind: Kind, reference: str) -> str | None:
        """Classify one reference, note it, and give the URL to write (None: leave it)."""
        link, new = context.link(element, attribute, kind, reference, NO_SPAN, NO_SPAN)
        self.links.append(link)
        return new

    def nested(self, found: Sequence[Link]) -> None:
        """Links a nested run of the bytes engine found (srcdoc, conditional comments), spans dropped."""
        self.links.extend(item._replace(start=NO_SPAN, end=NO_SPAN) for item in found)


def absolutize(
    adapter: Adapter[N],
    root: N,
    *,
    url: str | None = None,
    base: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    codec: str = "utf-8",
) -> TreeResult:
    """Make every relative URL under *root* absolute, in place (what the adapters call).

    The base is the document's (HTML §4.2.3): looked for in the whole tree *root* is in,
    even when *root* is one element of it; only links under *root* are found and
    changed. *codec* is the document's encoding, for the URL Standard's query encoding
    under ``rules="whatwg"``. With ``policy.require_base`` and a relative link but no
    base, :class:`~rewriter.html.engine.NoBaseError` is raised before anything is changed.

    >>> from rewriter.html.lxml import _LxmlAdapter
    >>> import lxml.html
    >>> page = lxml.html.fromstring('<p><a href="x">x</a></p>')
    >>> absolutize(_LxmlAdapter(page), page, url="http://h/").base
    'http://h/'
    >>> lxml.html.tostring(page)
    b'<p><a href="http://h/x">x</a></p>'
    """
    view = TreeView(adapter, root)
    walk = view.walk
    run = _Run(adapter, view, policy, codec, [], [], [])
    document = adapter.document(root)

    # Which base wins is rewriter.url.base's to say: the tree only reports what it offers.
    candidates = _offered(
        walk, document, handed_down_candidates(url=url, base=base, url_guessed=policy.url_guessed), policy
    )
    below = chain(candidates)
    fallback_context = Context(below.url if below else None, below.layer if below else None, policy, codec)
    found = _base_element(walk, document, fallback_context, run)
    base_node, usable, frozen = found
    chosen = chain(candidates.offering(base_element=frozen)) if frozen is not None else below
    found_base, layer = (chosen.url, chosen.layer) if chosen is not None else (None, None)
    context = Context(found_base, layer, policy, codec)
    noscript_context = context.inside_noscript()

    for node, element in walk.nodes(root):
        if element is None:
            if policy.conditional_comments and adapter.kind(node) == "comment":
                parent = walk.context_of(node) if _CONDITIONAL_DATA.match(adapter.comment(node)) else None
                _conditional_comment(
                    node, noscript_context if parent is not None and _holds_raw_noscript(parent) else context, run
                )
            continue
        if base_node is not None and node is base_node:
            if not usable:
                continue
            if policy.remove_base:
                run.writes.append(("<base> removed", functools.partial(adapter.remove, node)))
            else:
                _element_links(element, fallback_context, run)
            continue
        _element_links(element, noscript_context if element.in_noscript else context, run)

    if policy.require_base and any(link.status == "no-base" for link in run.links):
        raise NoBaseError("the document has relative links and no base URL (RFC 1808 §3.4)")
    for what, write in run.writes:
        try:
            write()
        except ValueError as error:  # a value the tree refuses (lxml: no control characters)
            run.problems.append(
                Problem("left-as-is", f"{what} could not be written to the tree, and stays as it was: {error}")
            )
    return TreeResult(tuple(run.links), found_base, layer, tuple(run.problems))


def _holds_raw_noscript(element: _Element[N]) -> bool:
    """Whether *element* is, or is inside, an HTML ``<noscript>``."""
    return element.in_noscript or (element.namespace == "html" and element.tag == "noscript")


def _offered(walk: _Walk[N], document: N, candidates: Candidates, policy: Policy) -> Candidates:
    """*candidates* with what the tree offers below its <base>: the saved-from mark and, with
    ``Policy.canonical_base``, the canonical URL; each looked for only when it could win."""
    if not candidates.outranked("saved_from") and (mark := _saved_from_mark(walk, document)) is not None:
        candidates = candidates.offering(saved_from=Base(mark, "saved-from-mark"))
    if policy.canonical_base and not candidates.outranked("canonical"):
        canonical = _canonical(walk, document)
        if canonical is not None:
            candidates = candidates.offering(canonical=Base(canonical, "canonical"))
    return candidates


def _saved_from_mark(walk: _Walk[N], document: N) -> str | None:
    """The ``<!-- saved from url=(NNNN)URL -->`` mark, in a comment before ``<body>``
    (the bytes engine looks in the first 4096 characters; browsers write it first)."""
    adapter = walk.adapter
    for node, element in walk.nodes(document):
        if element is not None:
            if element.namespace == "html" and element.tag == "body":
                break
            continue
        if adapter.kind(node) == "comment":
            mark = saved_from(f"<!--{adapter.comment(node)}-->")
            if mark is not None:
                return mark
    return None


def _canonical(walk: _Walk[N], document: N) -> str | None:
    """``<link rel=canonical href>`` or ``<meta property=og:url content>``, the first with a scheme."""
    adapter = walk.adapter
    for _, element in walk.nodes(document):
        if element is None or element.namespace != "html" or element.tag not in ("link", "meta"):
            continue
        names = {name: value for name, _, value in adapter.attributes(element.node)}
        if element.tag == "link":
            if "canonical" not in names.get("rel", "").lower().split() or "href" not in names:
                continue
            value = names["href"]
        elif names.get("property") == "og:url" and "content" in names:
            value = names["content"]
        else:
            continue
        if parse(value.strip()).scheme is not None:
            return value.strip()
    return None


def _base_element(walk: _Walk[N], document: N, fallback: Context, run: _Run[N]) -> tuple[N | None, bool, Base | None]:
    """HTML §4.2.3: the first ``<base href>`` that counts, whether it is usable, and the
    base it offers (resolved against *fallback*; None when unusable).

    A usable one has its href made absolute, or is removed (``remove_base``). An
    unusable one (``javascript:``, an opaque URL, relative with nothing to resolve it
    against) is left exactly as it is, reported in the problems, and not listed as a link.
    """
    adapter = walk.adapter
    holds = getattr(adapter, "may_hold", None)  # an adapter's quick answer, where it has one
    if holds is not None and not holds("base"):
        return None, False, None
    for _, element in walk.nodes(document):
        if element is None or element.namespace != "html" or element.tag != "base" or element.inert:
            continue
        names = {name: value for name, _, value in adapter.attributes(element.node)}
        if "href" not in names:
            continue
        href = names["href"]
        start, end = strip_whitespace(href, 0, len(href))
        frozen, problem = frozen_base(href[start:end], fallback)
        if problem is not None or frozen is None:
            if problem is not None:
                code = "base-relative" if problem is RELATIVE_BASE else "base-ignored"
                run.problems.append(Problem(code, f"<base href={href!r}> ignored: {problem}"))
            return element.node, False, None
        return element.node, True, Base(frozen, "base-element")
    return None, False, None


class TreeView(Generic[N]):
    """A tree as a view for :func:`rewriter.html.links.iter_links`: the elements under
    *root* in document order, each with the namespace HTML tree construction gives it, its
    attributes as the adapter reads them, and a ``<style>``'s text when it holds only
    text. Each :class:`~rewriter.html.links.ViewElement`'s ``node`` is the walk's element
    (its tree node, and whether it is inert or under a ``<noscript>``)."""

    def __init__(self, adapter: Adapter[N], root: N) -> None:
        self.adapter = adapter
        self.root = root
        self.walk = _Walk(adapter)

    def elements(self) -> Iterator[ViewElement]:
        for _, element in self.walk.nodes(self.root):
            if element is not None:
                yield self.element(element)

    def element(self, element: _Element[N], attributes: list[tuple[str, object, str]] | None = None) -> ViewElement:
        """*element* as the view gives it: the first of duplicate attribute names winning.
        *attributes* are the adapter's, when the caller has read them already."""
        values: dict[str, str] = {}
        keys = element.keys
        if attributes is None:
            attributes = self.adapter.attributes(element.node)
        for name, key, value in attributes:
            if name not in values:
                values[name] = value
                keys[name] = key
        style = self.adapter.text(element.node) if element.tag == "style" else None
        return ViewElement(element, element.namespace, element.tag, values, style)


def _element_links(element: _Element[N], context: Context, run: _Run[N]) -> None:
    """The links of one element (:func:`rewriter.html.links.element_links`), each new
    value written at the end: an attribute's all at once, a ``<style>``'s text."""
    tag = element.tag
    codebase_context: Context | None = None
    pending: tuple[str, str, list[tuple[int, int, str]]] | None = None  # attribute, value, replacements
    attributes = run.adapter.attributes(element.node)
    if tag != "style":  # else only attributes the link table names hold links: most elements have none
        if not attributes or element.namespace is None:
            return
        lazy = run.policy.lazy_attributes
        table, plain = _PLAIN.get((element.namespace, tag, lazy)) or _tables(element.namespace, tag, lazy)
        found = [attribute for attribute in attributes if attribute[0] in table]
        if not found:
            return
        for name, _, _ in found:
            if name not in plain:
                break  # the general path, for all of the element's links
        else:
            _plain_links(element, found, context, run)
            return
    for site in element_links(run.view.element(element, attributes), run.policy.lazy_attributes):
        if pending is not None and pending[0] != site.attribute:
            _write(element, pending, run)
            pending = None
        if pending is None:
            pending = (site.attribute, site.value, [])
        local = context
        if site.codebase is not None:
            if codebase_context is None:
                codebase_context = context.codebase(site.codebase)
            local = codebase_context
        if site.kind == "srcdoc":
            # HTML §4.8.5: a srcdoc document is a string; the bytes engine rewrites it as text.
            nested = rewrite_text(site.value, local.base, local.layer, run.policy, in_noscript=local.in_noscript)
            run.nested(nested.found)
            pending[2].extend(nested.edits)
            run.problems.extend(problem.at("in srcdoc") for problem in nested.problems)
        elif site.kind == "css":
            in_style_element = site.attribute == "#style"
            # CSS reads every URL as UTF-8.
            resolved = run.record(local.for_css(), tag, site.attribute, "css", site.url)
            if resolved is not None:
                new = css.escape_url(resolved, site.quote or "", in_style_element=in_style_element)
                pending[2].append((site.start, site.end, new))
        else:
            resolved = run.record(local, tag, site.attribute, site.kind, site.url)
            if resolved is not None:
                pending[2].append((site.start, site.end, for_context(site.kind, resolved, site.value, site.start)))
    if pending is not None:
        _write(element, pending, run)


# For an element (by namespace, tag and lazy attributes): its URL attributes with their kinds
# (table.attributes_of), and those whose values are each one plain URL (table.is_plain_url),
# which _plain_links reads without the general path's records: none for the elements whose
# links need more than their values (a codebase, a <style>'s text). One lookup an element.
_PLAIN: dict[tuple[str, str, frozenset[str]], tuple[dict[str, Kind], frozenset[str]]] = {}


def _tables(namespace: str, tag: str, lazy: frozenset[str]) -> tuple[dict[str, Kind], frozenset[str]]:
    table = attributes_of(namespace, tag, lazy)
    plain = () if tag in GENERAL_PATH_ELEMENTS else (n for n, kind in table.items() if is_plain_url(tag, n, kind))
    tables = table, frozenset(name for name in plain if name not in lazy)
    if len(_PLAIN) < 4096:  # custom element names are many; the table's own cache is bounded alike
        _PLAIN[(namespace, tag, lazy)] = tables
    return tables


def _plain_links(element: _Element[N], found: list[tuple[str, object, str]], context: Context, run: _Run[N]) -> None:
    """The links of an element whose every URL attribute holds one plain URL: what
    :func:`_element_links` makes of them (each value read as element_links reads it, NUL as
    U+FFFD, whitespace around it kept), without a view, a site or a pending record each."""
    tag, node, seen = element.tag, element.node, set()
    for name, key, value in found:
        if name in seen:
            continue  # the first of duplicate names, as TreeView.element reads them
        seen.add(name)
        value = value.replace("\0", "\ufffd")  # HTML §13.2.5.36-38, as element_links reads it
        start, end = strip_whitespace(value, 0, len(value))
        resolved = run.record(context, tag, name, "url", value[start:end])
        if resolved is not None:
            new = value[:start] + for_context("url", resolved, value, start) + value[end:]
            run.writes.append((f"<{tag} {name}>", functools.partial(run.adapter.set_attribute, node, key, new)))


def _write(element: _Element[N], pending: tuple[str, str, list[tuple[int, int, str]]], run: _Run[N]) -> None:
    """Note the write of one attribute's new value (or a ``<style>``'s new text)."""
    attribute, value, replacements = pending
    if not replacements:
        return
    adapter, node, tag = run.adapter, element.node, element.tag
    new = spliced(value, replacements)
    if attribute == "#style":
        run.writes.append(("<style> text", lambda: adapter.set_text(node, new)))
        return
    key = element.keys[attribute]  # as TreeView.element read them: the first of duplicate names
    run.writes.append((f"<{tag} {attribute}>", functools.partial(adapter.set_attribute, node, key, new)))


_CONDITIONAL_DATA = re.compile(r"\[if[^\]]*\]>", re.IGNORECASE)


def _conditional_comment(node: N, context: Context, run: _Run[N]) -> None:
    """``<!--[if IE]>...<![endif]-->``: the markup old IE read, parsed as a document of its
    own with this document's base (a ``<base>`` in it is never the base)."""
    adapter = run.adapter
    data = adapter.comment(node)
    if _CONDITIONAL_DATA.match(data) is None:
        return
    found = next(conditional_spans(f"<!--{data}-->"), None)
    if found is None or found[0] != 0:
        return
    inner_start, inner_end = found[1] - 4, found[2] - 4
    policy = run.policy.clone(conditional_comments=False)
    nested = rewrite_text(
        data[inner_start:inner_end],
        context.base,
        context.layer,
        policy,
        run.codec,
        base_elements=False,
        in_noscript=context.in_noscript,
    )
    run.nested(nested.found)
    if nested.edits:
        # A ">" in the new text could end the comment when serialised ("-->").
        edits = [(start + inner_start, end + inner_start, new.replace(">", "%3E")) for start, end, new in nested.edits]
        new = spliced(data, edits)
        run.writes.append(("a conditional comment", lambda: adapter.set_comment(node, new)))
