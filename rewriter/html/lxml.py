"""Make the relative links of an lxml tree absolute, in place.

The same rules as :func:`rewriter.html.engine.rewrite_html` (the base of HTML §4.2.3, the link
table, ``srcset`` of HTML §4.8.4.3, meta refresh of HTML §4.2.5.3, CSS, every
:class:`~rewriter.policy.Policy` option), applied to an element or tree from
``lxml.html.fromstring``/``document_fromstring``/``parse``, or from
``lxml.html.html5parser`` (html5lib's tree in lxml). The tree's serialiser writes the
result, so this is for callers who hold a tree, not for archiving bytes; see
``docs/adapters.md``.

libxml2's HTML parser puts every element in no namespace: an ``<svg>`` or ``<math>``
subtree is recognised by its name, as HTML tree construction would (see
:func:`rewriter.html.tree.namespace_of`). Clark names (``{http://www.w3.org/2000/svg}svg``,
``{http://www.w3.org/1999/xlink}href``) are read as their namespace says.

>>> import lxml.html
>>> page = lxml.html.document_fromstring('<base href="/d/"><svg><a xlink:href="i.svg"/></svg>')
>>> result = absolutize(page, url="https://example.org/")
>>> page.find(".//a").get("xlink:href"), result.layer
('https://example.org/d/i.svg', 'base-element')
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from rewriter.document.encoding import python_codec
from rewriter.html import tree as _tree
from rewriter.html.tree import ATTRIBUTE_PREFIXES, NO_SPAN, NodeKind, TreeOptions, TreeResult

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["NO_SPAN", "TreeResult", "absolutize"]

# lxml is not imported: the adapter parses nothing (rewriter reads no XML, see
# tests/test_hostile.py), it only walks a tree the caller built, by its methods.
Element = Any  # an lxml element (etree._Element, lxml.html.HtmlElement)


class _Top:
    """The document above an lxml root element: its top-level comments are the root's siblings."""

    __slots__ = ("root",)

    def __init__(self, root: Element) -> None:
        self.root = root


_Node = Any  # an lxml node, or the _Top above the root


class _LxmlAdapter:
    """:class:`rewriter.html.tree.Adapter` over lxml's nodes; one per call (it holds the document)."""

    def __init__(self, node: Element) -> None:
        root = node.getroottree().getroot()
        self.top = _Top(root)

    def document(self, node: _Node) -> _Node:
        return self.top

    def may_hold(self, name: str) -> bool:
        """Whether the document may hold an element named *name* (ASCII lowercase, as the walk
        lowers a name with ``str.lower``) in any namespace, spelt in any case: False only when
        none is there. lxml looks each spelling up in the document's dictionary of names, so
        that a name no element has costs no walk at all (the tree's engine then skips its own)."""
        if len(name) > 6:
            return True
        spellings = ["{*}" + "".join(letters) for letters in itertools.product(*((c, c.upper()) for c in name))]
        return next(self.top.root.getroottree().iter(*spellings), None) is not None

    def descendants(self, node: _Node) -> Iterator[tuple[_Node, _Node | None, bool]]:
        """Every node under *node* (itself included, unless it is the document) in document
        order, as the tree's walk reads them one by one (:meth:`children`, :meth:`kind`), but
        by lxml's own iterator: each with its parent (None for *node* and the top-level nodes)
        and whether it is an element."""
        if isinstance(node, _Top):
            root = node.root
            for sibling in reversed(list(root.itersiblings(preceding=True))):
                yield sibling, None, isinstance(sibling.tag, str)
            yield from self._under(root)
            for sibling in root.itersiblings():
                yield sibling, None, isinstance(sibling.tag, str)
            return
        yield from self._under(node)

    @staticmethod
    def _under(node: Element) -> Iterator[tuple[_Node, _Node | None, bool]]:
        yield node, None, isinstance(node.tag, str)
        iterator = node.iter()
        next(iterator)  # node itself
        for descendant in iterator:
            if isinstance(descendant.tag, str):
                yield descendant, descendant.getparent(), True
            else:
                yield descendant, None, False

    def parent(self, node: _Node) -> _Node | None:
        if isinstance(node, _Top):
            return None
        parent = node.getparent()
        return self.top if parent is None else parent

    def children(self, node: _Node) -> Sequence[_Node]:
        if isinstance(node, _Top):
            root = node.root
            return [*reversed(list(root.itersiblings(preceding=True))), root, *root.itersiblings()]
        return list(node)

    def kind(self, node: _Node) -> NodeKind:
        if isinstance(node, _Top):
            return "document"
        if isinstance(node.tag, str):
            return "element"
        if getattr(node.tag, "__name__", None) == "Comment":  # etree.Comment, the factory, is a comment's tag
            return "comment"
        return "other"

    def name(self, node: _Node) -> tuple[str | None, str]:
        assert not isinstance(node, _Top)
        tag = node.tag
        return (None, tag) if tag[:1] != "{" else _split(tag)

    def attributes(self, node: _Node) -> list[tuple[str, object, str]]:
        assert not isinstance(node, _Top)
        found: list[tuple[str, object, str]] = []
        for key, value in node.items():
            if key[:1] != "{":  # most: a plain name (as _split reads it, without its call)
                found.append((key.lower(), key, value))
                continue
            uri, local = _split(key)
            if uri is not None:
                prefix = ATTRIBUTE_PREFIXES.get(uri)
                if prefix is None:
                    continue  # a namespace the table never names
                local = f"{prefix}:{local}"
            found.append((local.lower(), key, value))
        return found

    def set_attribute(self, node: _Node, key: object, value: str) -> None:
        assert not isinstance(node, _Top)
        node.set(key, value)

    def text(self, node: _Node) -> str | None:
        assert not isinstance(node, _Top)
        return None if len(node) else (node.text or "")

    def set_text(self, node: _Node, text: str) -> None:
        assert not isinstance(node, _Top)
        node.text = text

    def comment(self, node: _Node) -> str:
        assert not isinstance(node, _Top)
        return node.text or ""

    def set_comment(self, node: _Node, text: str) -> None:
        assert not isinstance(node, _Top)
        node.text = text

    def remove(self, node: _Node) -> None:
        """Take *node* out of the tree; the text after it (its tail) stays where it was."""
        assert not isinstance(node, _Top)
        parent = node.getparent()
        if parent is None:
            return
        tail = node.tail
        if tail:
            previous = node.getprevious()
            if previous is not None:
                previous.tail = (previous.tail or "") + tail
            else:
                parent.text = (parent.text or "") + tail
        parent.remove(node)


def _split(name: str) -> tuple[str | None, str]:
    """A Clark name ``{uri}local`` as (uri, local); a plain name as (None, name)."""
    if name.startswith("{"):
        uri, _, local = name[1:].partition("}")
        return uri, local
    return None, name


def absolutize(tree: Element, **options: Unpack[TreeOptions]) -> TreeResult:
    """Make every relative URL in *tree* absolute, in place, and report every link.

    *tree* is an element or an ``ElementTree``. The base is the document's (HTML §4.2.3
    "the base element": looked for in the whole tree, comments before ``<html>``
    included); given the root element or the tree, every link of the document changes,
    given another element, only those under it. *url* is the retrieval URL, *base* an
    enclosing base (RFC 1808 §3.2-3.3). Each link's ``start`` and ``end`` are
    :data:`NO_SPAN` (-1): a tree has no byte offsets. With ``policy.require_base``, a
    relative link with no base raises :class:`~rewriter.html.engine.NoBaseError` before
    anything changes.

    >>> import lxml.html
    >>> page = lxml.html.fromstring('<meta http-equiv=refresh content="0; url=next.html"><a href="a b">x</a>')
    >>> [(link.kind, link.resolved) for link in absolutize(page, url="http://h/d/").links]
    [('refresh', 'http://h/d/next.html'), ('url', 'http://h/d/a b')]
    >>> page.find(".//meta").get("content")
    '0; url=http://h/d/next.html'
    """
    if not hasattr(tree, "tag") and hasattr(tree, "getroot"):  # an ElementTree
        root = tree.getroot()
        start: _Node = root
    else:
        root = tree
        start = tree
    adapter = _LxmlAdapter(root)
    if start is adapter.top.root:
        start = adapter.top  # the whole document, its top-level comments included
    return _tree.absolutize(adapter, start, codec=_codec(root), **options)


def _codec(root: Element) -> str:
    """The Python codec of the encoding the document was read from (UTF-8 when unknown)."""
    return python_codec(root.getroottree().docinfo.encoding)
