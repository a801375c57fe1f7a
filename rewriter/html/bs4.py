"""Make the relative links of a BeautifulSoup tree absolute, in place.

The same rules as :func:`rewriter.html.engine.rewrite_html` (the base of HTML §4.2.3, the link
table, ``srcset`` of HTML §4.8.4.3, meta refresh of HTML §4.2.5.3, CSS, every
:class:`~rewriter.policy.Policy` option), applied to a soup from any builder
(``html.parser``, ``lxml``, ``html5lib``, ``lxml-xml``). The soup's own serialiser writes
the result, so this is for callers who hold a tree, not for archiving bytes; see
``docs/adapters.md``.

>>> from bs4 import BeautifulSoup
>>> soup = BeautifulSoup('<base href="/d/"><img srcset="a,1.png 1x, b.png 2x">', "html5lib")
>>> result = absolutize(soup, url="https://example.org/")
>>> soup.img["srcset"]
'https://example.org/d/a,1.png 1x, https://example.org/d/b.png 2x'
>>> result.base, result.layer
('https://example.org/d/', 'base-element')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from bs4 import BeautifulSoup, Comment, NavigableString, PageElement, Tag

from rewriter.document.encoding import python_codec
from rewriter.html import tree as _tree
from rewriter.html.tree import NO_SPAN, NodeKind, TreeOptions, TreeResult

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["NO_SPAN", "TreeResult", "absolutize"]


class _SoupAdapter:
    """:class:`rewriter.html.tree.Adapter` over BeautifulSoup's nodes."""

    def document(self, node: PageElement) -> PageElement:
        while node.parent is not None:
            node = node.parent
        return node

    def parent(self, node: PageElement) -> PageElement | None:
        return node.parent

    def children(self, node: PageElement) -> Sequence[PageElement]:
        return node.contents if isinstance(node, Tag) else ()

    def kind(self, node: PageElement) -> NodeKind:
        if isinstance(node, BeautifulSoup):
            return "document"
        if isinstance(node, Tag):
            return "element"
        if isinstance(node, Comment):
            return "comment"
        return "other"

    def name(self, node: PageElement) -> tuple[str | None, str]:
        assert isinstance(node, Tag)
        name = node.name
        if node.prefix and name.startswith(node.prefix + ":"):
            name = name[len(node.prefix) + 1 :]  # lxml-xml: "svg:rect" is rect in SVG's namespace
        return node.namespace or None, name

    def attributes(self, node: PageElement) -> list[tuple[str, object, str]]:
        assert isinstance(node, Tag)
        # A multi-valued attribute (class, rel, object archive) is a list: its tokens joined.
        return [
            (str(key).lower(), key, value if isinstance(value, str) else " ".join(value))
            for key, value in node.attrs.items()
        ]

    def set_attribute(self, node: PageElement, key: object, value: str) -> None:
        assert isinstance(node, Tag)
        assert isinstance(key, str)  # attributes() gives the soup's own keys
        attributes = cast("dict[str, object]", node.attrs)  # a multi-valued one (ping) is a list of tokens
        attributes[key] = value.split() if isinstance(attributes.get(key), list) else value

    def text(self, node: PageElement) -> str | None:
        assert isinstance(node, Tag)
        children = node.contents
        if any(not isinstance(child, NavigableString) or isinstance(child, Comment) for child in children):
            return None
        return "".join(cast("list[NavigableString]", children))

    def set_text(self, node: PageElement, text: str) -> None:
        assert isinstance(node, Tag)
        first = node.contents[0] if node.contents else None
        kind = type(first) if isinstance(first, NavigableString) else NavigableString
        node.clear()
        node.append(kind(text))

    def comment(self, node: PageElement) -> str:
        return str(node)

    def set_comment(self, node: PageElement, text: str) -> None:
        node.replace_with(Comment(text))

    def remove(self, node: PageElement) -> None:
        node.extract()


def absolutize(soup: Tag, **options: Unpack[TreeOptions]) -> TreeResult:
    """Make every relative URL in *soup* absolute, in place, and report every link.

    *soup* is a :class:`~bs4.BeautifulSoup` or one :class:`~bs4.Tag` of it: the base
    is the document's (HTML §4.2.3 "the base element": looked for in the whole tree),
    only the links under the tag change. *url* is the retrieval URL, *base* an enclosing
    base (RFC 1808 §3.2-3.3). Each link's ``start`` and ``end`` are :data:`NO_SPAN` (-1):
    a tree has no byte offsets. With ``policy.require_base``, a relative link with no
    base raises :class:`~rewriter.html.engine.NoBaseError` before anything changes.

    >>> from bs4 import BeautifulSoup
    >>> soup = BeautifulSoup('<p style="background:url(a.png)"><a href="#top" ping="p q">x</a>', "html.parser")
    >>> [(link.attribute, link.status) for link in absolutize(soup, url="http://h/d/").links]
    [('style', 'rewritten'), ('href', 'same-document'), ('ping', 'rewritten'), ('ping', 'rewritten')]
    >>> print(soup)
    <p style="background:url(http://h/d/a.png)"><a href="#top" ping="http://h/d/p http://h/d/q">x</a></p>
    """
    return _tree.absolutize(_SoupAdapter(), soup, codec=_codec(soup), **options)


def _codec(soup: Tag) -> str:
    """The Python codec of the encoding the soup was decoded from (UTF-8 when unknown)."""
    while soup.parent is not None:
        soup = soup.parent
    return python_codec(getattr(soup, "original_encoding", None) if isinstance(soup, BeautifulSoup) else None)
