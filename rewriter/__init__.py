"""rewriter: make every relative link in HTML documents and MIME messages absolute.

The way in, as ``email.message_from_bytes`` is the way into the email package:

>>> import rewriter
>>> result = rewriter.rewrite(b'<base href="/d/"><img src="a.png">', url="https://example.org/")
>>> result.output
b'<base href="https://example.org/d/"><img src="https://example.org/d/a.png">'
>>> [(link.original, link.status) for link in rewriter.find_links(b"p { b: url(i.png) }", url="http://h/")]
[('i.png', 'rewritten')]
>>> rewriter.resolve("http://a/b/c/d;p?q", "../g")
'http://a/b/g'

:func:`rewrite` and :func:`find_links` take a document's bytes, its decoded text, or a
path (``pathlib.Path``): a page, a style sheet or a message (.eml, .mht), told by its
content. :func:`rewrite_tree` changes a BeautifulSoup or lxml tree in place. Behaviour is
one :class:`Policy`. Many files, mboxes, Maildirs and WARCs are for :mod:`rewriter.run`
and the command line. The subpackages are the layers: ``url``, ``document``, ``html``,
``css``, ``mime``, ``containers``, ``bundle``, ``disk``, ``run``, ``cli`` (``docs/layers.md``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from rewriter import _moved
from rewriter.document.model import DocumentResult, Link, MessageResult, NoBaseError, Part, Status
from rewriter.document.process import DocumentOptions
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.url.base import Layer
from rewriter.url.resolve import (
    RFC1808URL,
    RULES,
    Resolver,
    UnresolvableReference,
    URIReference,
    parse,
    resolve,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from rewriter.html.tree import TreeOptions, TreeResult

__version__ = "0.1.0"

_moved.install()

__all__ = [
    "DEFAULT_POLICY",
    "RFC1808URL",
    "RULES",
    "DocumentResult",
    "Layer",
    "Link",
    "MessageResult",
    "NoBaseError",
    "Options",
    "Part",
    "Policy",
    "Resolver",
    "Status",
    "URIReference",
    "UnresolvableReference",
    "__version__",
    "find_links",
    "parse",
    "resolve",
    "rewrite",
    "rewrite_tree",
]

Source = bytes | str | os.PathLike[str]


def _engine(source: Source, format: str | None) -> tuple[bytes | str, str, Any]:
    """The document of *source*, its format and the engine that reads it (:mod:`rewriter.document.engines`)."""
    from rewriter.containers.formats import SNIFF_SIZE, what_file_is
    from rewriter.document.engines import engine

    name = None
    if isinstance(source, os.PathLike):
        name = os.fspath(source)
        with open(name, "rb") as file:
            document: bytes | str = file.read()
    else:
        document = source
    if format is None:
        head = document[:SNIFF_SIZE]
        kind = what_file_is(head if isinstance(head, bytes) else head.encode("utf-8", "surrogatepass"), name)
        if not kind.document:  # a script, an image, data: no engine reads it unless told to
            raise ValueError(
                f"{name or 'the document'}: {kind.reason}: no engine reads it (give format= to read it all the same)"
            )
        format = kind.format
    if format not in ("html", "css", "message", "emlx"):
        raise ValueError(
            f"{format!r}: one document or message is read here; an mbox, a Maildir or a WARC holds "
            "many (rewriter.run.batch, rewriter.containers.mailbox, rewriter.containers.warc)"
        )
    if format in ("message", "emlx") and isinstance(document, str):
        document = document.encode("utf-8", "surrogateescape")  # a message is bytes
    return document, format, engine("message" if format == "emlx" else format)


class Options(DocumentOptions, total=False):
    """The keyword arguments of :func:`rewrite` and :func:`find_links`: the engines' own
    (:class:`~rewriter.document.process.DocumentOptions`: *url*, *base* and *charset*, the
    last two not for a message, whose headings give its parts theirs; *policy*), and *format*,
    ``html``, ``css``, ``message`` or ``emlx`` (Apple Mail's message file: its byte count
    written anew, its property list kept), told from the content when not given."""

    format: str | None


def rewrite(source: Source, **options: Unpack[Options]) -> DocumentResult | MessageResult:
    """Make every relative link of one document or message absolute, changing no other byte.

    *source* is bytes, decoded text (given back as UTF-8), or a path; *options* are
    :class:`Options`. A page or a style sheet gives a :class:`DocumentResult`, a message a
    :class:`MessageResult` (its parts as a tree of :class:`Part` records).
    """
    result: DocumentResult | MessageResult = _run(source, options, rewrite=True)
    return result


def find_links(source: Source, **options: Unpack[Options]) -> tuple[Link, ...]:
    """Every link of one document or message, resolved, in document order (nothing is
    written): :func:`rewrite`'s arguments, its result's ``links``."""
    return tuple(_run(source, options, rewrite=False).links)


def _run(source: Source, options: Options, *, rewrite: bool) -> Any:
    """The engine of *source*'s format run on it: rewriting, or only finding its links."""
    document, format, engine = _engine(source, options.get("format"))
    arguments: dict[str, Any] = {"url": options.get("url"), "policy": options.get("policy", DEFAULT_POLICY)}
    if engine.format == "message":
        if options.get("base") is not None or options.get("charset") is not None:
            raise ValueError("a message's parts take their base and charset from its headings: give url= only")
    else:
        arguments.update(base=options.get("base"), charset=options.get("charset"))
    if format == "emlx":  # Apple Mail's: a byte count, the message, a property list
        from rewriter.containers.emlx import run_emlx

        return run_emlx(cast(bytes, document), engine.run(rewrite=rewrite), **arguments)
    return engine.run(rewrite=rewrite)(document, **arguments)


def rewrite_tree(tree: Any, **options: Unpack[TreeOptions]) -> TreeResult:
    """Make every relative link of a parsed tree absolute, in place: a BeautifulSoup soup
    (or any of its nodes), or an lxml.html tree or element. The same rules as
    :func:`rewrite` (:mod:`rewriter.html.bs4`, :mod:`rewriter.html.lxml`); the tree's own
    serialiser writes the result.

    >>> import lxml.html
    >>> page = lxml.html.fromstring('<p><a href="x.html">x</a></p>')
    >>> rewrite_tree(page, url="http://h/d/").links[0].resolved
    'http://h/d/x.html'
    """
    module = type(tree).__module__.split(".")[0]
    if module == "bs4":
        from rewriter.html import bs4

        return bs4.absolutize(tree, **options)
    if module == "lxml":
        from rewriter.html import lxml

        return lxml.absolutize(tree, **options)
    raise TypeError(f"rewrite_tree takes a BeautifulSoup or an lxml tree, not {type(tree).__name__}")
