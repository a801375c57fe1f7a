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
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

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
    from rewriter.html.tree import TreeResult

__version__ = "0.1.0"

# The modules' old names (rewriter.batch, ...) are found in rewriter/_old, one more folder of
# this package's own search path: no import hook (rewriter._moved says how they are retired).
__path__.append(os.path.join(os.path.dirname(__file__), "_old"))
_moved.register_loaded(sys.modules)

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

Source = bytes | bytearray | memoryview | str | os.PathLike[str]
"""What :func:`rewrite` and :func:`find_links` read: the document's bytes (any bytes-like
object), its decoded text (a ``str`` is always text, never a file name), or a path
(``pathlib.Path``), whose file is read."""

DocumentFormat = Literal["html", "css"]
MessageFormat = Literal["message", "emlx"]
_FORMATS = ("html", "css", "message", "emlx")

F = TypeVar("F", bound=Callable[..., Any])

# Keywords users try, with what to give instead (the README's table once said "rules=").
_HINTS = {
    "rules": "rules are chosen by policy=Policy(rules=...)",
    "base_url": "url= is the address the document was retrieved from, base= a base handed down to it",
    "baseurl": "url= is the address the document was retrieved from, base= a base handed down to it",
    "base_uri": "url= is the address the document was retrieved from, base= a base handed down to it",
    "encoding": "charset= is the transport charset, e.g. HTTP's Content-Type charset",
    "path": "a file is read when the document is given as a pathlib.Path",
    "file": "a file is read when the document is given as a pathlib.Path",
    "filename": "a file is read when the document is given as a pathlib.Path",
}
_SUGGESTED = {"rules": "policy", "base_url": "url", "baseurl": "url", "base_uri": "url", "encoding": "charset"}


def _unexpected(function: str, name: str, known: tuple[str, ...]) -> TypeError:
    """The ``TypeError`` of an unknown keyword *name*: the nearest known name, and a hint."""
    import dataclasses
    import difflib

    policy_fields = {field.name for field in dataclasses.fields(Policy)}
    near = _SUGGESTED.get(name) or next(iter(difflib.get_close_matches(name, known, n=1)), None)
    hint = _HINTS.get(name)
    if hint is None and name in policy_fields:
        near, hint = "policy", f"{name} is a setting of the policy: policy=Policy({name}=...)"
    message = f"{function}() got an unexpected keyword argument {name!r}"
    if near:
        message += f" (did you mean {near!r}?{' ' + hint if hint else ''})"
    elif hint:
        message += f" ({hint})"
    return TypeError(f"{message}; it takes {', '.join(known)}")


def _strict(function: F) -> F:
    """*function*, refusing an unknown keyword with a ``TypeError`` that names it and the
    nearest known one (Python's own names neither). ``help()`` and ``inspect.signature``
    show *function*'s own signature."""
    import functools

    code = function.__code__
    known = code.co_varnames[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    names = frozenset(known)

    @functools.wraps(function)
    def checked(*args: Any, **options: Any) -> Any:
        if not names.issuperset(options):
            name = next(name for name in options if name not in names)
            raise _unexpected(function.__name__, name, known)
        return function(*args, **options)

    return cast(F, checked)


def _checked_url(name: str, value: object) -> str | None:
    """*value* of the argument *name* (``url`` or ``base``), if it can serve as a base."""
    if value is None:
        return None
    if not isinstance(value, str):
        decode = " (decode it: .decode())" if isinstance(value, bytes | bytearray) else ""
        raise TypeError(f"{name}= takes a str, an absolute URL, or None, not {type(value).__name__}{decode}")
    if value.startswith(("https://", "http://")):  # a scheme, then an authority: a base (the common case, at once)
        return value
    from rewriter.url.base import usable_as_base

    if not usable_as_base(value):  # the command line's --url is checked alike
        why = "it is empty" if not value else "it has no scheme" if parse(value).scheme is None else "it is opaque"
        raise ValueError(
            f"{name}={value!r} cannot serve as a base: it is not an absolute URL with a path from '/' ({why}), "
            "so no relative link could be resolved against it (http://example.org/page.html, "
            "file:///home/me/page.html; None for no base)"
        )
    return value


def _checked(url: object, base: object, charset: object, policy: object, format: object) -> None:
    """Refuse an argument of the wrong type (``TypeError``) or one that cannot serve (``ValueError``)."""
    _checked_url("url", url)
    _checked_url("base", base)
    if charset is not None:
        if not isinstance(charset, str):
            raise TypeError(f"charset= takes a str, an encoding's name, or None, not {type(charset).__name__}")
        import codecs

        from rewriter.document.encoding import lookup

        if lookup(charset) is None:
            try:
                codecs.lookup(charset)
            except LookupError:
                raise ValueError(
                    f"charset={charset!r}: no such encoding (neither WHATWG nor Python knows it)"
                ) from None
    if not isinstance(policy, Policy):
        raise TypeError(f"policy= takes a rewriter.Policy, not {type(policy).__name__}")
    if format is not None and not isinstance(format, str):
        raise TypeError(f"format= takes one of {', '.join(map(repr, _FORMATS))} or None, not {type(format).__name__}")


# A str that is a file's name rather than a document's text: one line, no markup, and it
# ends as a page's, a style sheet's or a message's file name does.
_PATH_SUFFIXES = (".html", ".htm", ".xhtml", ".shtml", ".css", ".eml", ".emlx", ".mht", ".mhtml", ".svg", ".xml")


def _looks_like_a_path(text: str) -> bool:
    """Whether the str *text* names a file: one short line with no ``<`` that ends in a
    document's suffix or names an existing file."""
    if len(text) > 4096 or "\n" in text or "<" in text or "{" in text:
        return False
    name = text.strip()
    return bool(name) and (name.lower().endswith(_PATH_SUFFIXES) or os.path.isfile(name))


def _document(source: object, function: str) -> tuple[bytes | str, str | None]:
    """The document *source* gives (its bytes or text) and the name of its file, if any."""
    if isinstance(source, bytes):
        return source, None
    if isinstance(source, str):
        if _looks_like_a_path(source):
            raise ValueError(
                f"{function}() was given the str {source!r}, which looks like a file name; a str is the "
                f"document's text: to read the file, give its path as a path: {function}(pathlib.Path({source!r}))"
            )
        return source, None
    if isinstance(source, os.PathLike):
        name = os.fspath(source)
        if not isinstance(name, str):
            name = os.fsdecode(name)
        with open(name, "rb") as file:
            return file.read(), name
    if isinstance(source, bytearray | memoryview):
        return bytes(source), None
    if hasattr(source, "read"):
        raise TypeError(
            f"{function}() takes bytes, a str (the document's text) or a pathlib.Path, not a file object "
            f"({type(source).__name__}): give its contents ({function}(file.read())) or its path"
        )
    raise TypeError(
        f"{function}() takes bytes, a str (the document's text) or a pathlib.Path, not {type(source).__name__}"
    )


def _engine(source: object, format: str | None, function: str) -> tuple[bytes | str, str, Any]:
    """The document of *source*, its format and the engine that reads it (:mod:`rewriter.document.engines`)."""
    from rewriter.containers.formats import SNIFF_SIZE, what_file_is
    from rewriter.document.engines import engine

    document, name = _document(source, function)
    if format is None:
        head = document[:SNIFF_SIZE]
        kind = what_file_is(head if isinstance(head, bytes) else head.encode("utf-8", "surrogatepass"), name)
        if not kind.document:  # a script, an image, data: no engine reads it unless told to
            raise ValueError(
                f"{name or 'the document'}: {kind.reason}: no engine reads it (give format= to read it all the same)"
            )
        if kind.format == "mbox":
            raise ValueError(
                f"{name or 'the document'} starts with a 'From ' line, so it reads as an mbox, which holds many "
                "messages (rewriter.run.batch, rewriter.containers.mailbox); if it is one message (an .eml "
                'saved with its envelope line), give format="message"'
            )
        format = kind.format
    if format not in _FORMATS:
        raise ValueError(
            f"format={format!r}: one document or message is read here ({', '.join(map(repr, _FORMATS))}); "
            "an mbox, a Maildir or a WARC holds many (rewriter.run.batch, rewriter.containers.mailbox, "
            "rewriter.containers.warc)"
        )
    if format in ("message", "emlx") and isinstance(document, str):
        document = document.encode("utf-8", "surrogateescape")  # a message is bytes
    return document, format, engine("message" if format == "emlx" else format)


class Options(DocumentOptions, total=False):
    """The keyword arguments of :func:`rewrite` and :func:`find_links`, as a ``TypedDict``
    (for a caller that keeps them in a dict): the engines' own
    (:class:`~rewriter.document.process.DocumentOptions`: *url*, *base* and *charset*, the
    last two not for a message, whose headings give its parts theirs; *policy*), and *format*,
    ``html``, ``css``, ``message`` or ``emlx`` (Apple Mail's message file: its byte count
    written anew, its property list kept), told from the content when not given."""

    format: str | None


@overload
def rewrite(
    source: Source,
    *,
    url: str | None = None,
    base: str | None = None,
    charset: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    format: DocumentFormat,
    links: bool = True,
) -> DocumentResult: ...
@overload
def rewrite(
    source: Source,
    *,
    url: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    format: MessageFormat,
    links: bool = True,
) -> MessageResult: ...
@overload
def rewrite(
    source: Source,
    *,
    url: str | None = None,
    base: str | None = None,
    charset: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    format: str | None = None,
    links: bool = True,
) -> DocumentResult | MessageResult: ...


@_strict
def rewrite(
    source: Source,
    *,
    url: str | None = None,
    base: str | None = None,
    charset: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    format: str | None = None,
    links: bool = True,
) -> DocumentResult | MessageResult:
    """Make every relative link of one document or message absolute, changing no other byte.

    :param source: the document: its bytes (or any bytes-like object), its decoded text (a
        ``str`` is always text, and its output is UTF-8: :attr:`DocumentResult.text` gives
        it back as a ``str``), or a path (``pathlib.Path``), whose file is read. A ``str``
        that looks like a file name is refused with a ``ValueError``.
    :param url: the address the document was retrieved from (RFC 1808 §3.3): an absolute URL.
    :param base: a base handed down by an enclosing entity (RFC 1808 §3.2), which takes
        precedence over the document's own; not for a message.
    :param charset: the transport charset (HTTP's or MIME's); not for a message, whose
        headings give its parts theirs.
    :param policy: the :class:`Policy`: the resolution rules and what is rewritten.
    :param format: ``"html"``, ``"css"``, ``"message"`` (.eml, .mht) or ``"emlx"`` (Apple
        Mail's message file); told from the content when not given.
    :param links: False when the caller will not read the result's links (only its output,
        its ``status_counts`` and the links left relative): a page's engine then keeps no
        record for each link, which on a link-dense page is most of the memory it takes.
        The result gives the same links all the same, found again when asked for. A
        message's parts ignore it.
    :returns: a :class:`DocumentResult` for a page or a style sheet, a
        :class:`MessageResult` for a message (its parts as a tree of :class:`Part` records).
    :raises TypeError: an unknown keyword or an argument of the wrong type.
    :raises ValueError: a *url*, *base* or *charset* that cannot serve, a ``str`` that looks
        like a file name, or a document that is not one page, style sheet or message.
    """
    _checked(url, base, charset, policy, format)
    if not isinstance(links, bool):
        raise TypeError(f"links= takes True or False, not {type(links).__name__}")
    result: DocumentResult | MessageResult = _run(source, url, base, charset, policy, format, "rewrite", True, links)
    return result


@_strict
def find_links(
    source: Source,
    *,
    url: str | None = None,
    base: str | None = None,
    charset: str | None = None,
    policy: Policy = DEFAULT_POLICY,
    format: str | None = None,
) -> tuple[Link, ...]:
    """Every link of one document or message, resolved, in document order (nothing is
    written): :func:`rewrite`'s arguments, its result's ``links``.

    :raises TypeError: an unknown keyword or an argument of the wrong type.
    :raises ValueError: as :func:`rewrite`.
    """
    _checked(url, base, charset, policy, format)
    return tuple(_run(source, url, base, charset, policy, format, "find_links", False).links)


def _run(
    source: object,
    url: str | None,
    base: str | None,
    charset: str | None,
    policy: Policy,
    format: str | None,
    function: str,
    rewrite: bool,
    links: bool = True,
) -> Any:
    """The engine of *source*'s format run on it: rewriting, or only finding its links."""
    document, format, engine = _engine(source, format, function)
    arguments: dict[str, Any] = {"url": url, "policy": policy}
    if engine.format == "message":
        if base is not None or charset is not None:
            raise ValueError("a message's parts take their base and charset from its headings: give url= only")
    else:
        arguments.update(base=base, charset=charset)
        if rewrite and not links:
            arguments["links"] = False
    if format == "emlx":  # Apple Mail's: a byte count, the message, a property list
        from rewriter.containers.emlx import run_emlx

        return run_emlx(cast(bytes, document), engine.run(rewrite=rewrite), **arguments)
    return engine.run(rewrite=rewrite)(document, **arguments)


@_strict
def rewrite_tree(
    tree: Any,
    *,
    url: str | None = None,
    base: str | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> TreeResult:
    """Make every relative link of a parsed tree absolute, in place.

    :param tree: a BeautifulSoup soup (or any of its nodes), or an lxml.html tree or element.
    :param url: the address the document was retrieved from: an absolute URL.
    :param base: a base handed down by an enclosing entity, which takes precedence.
    :param policy: the :class:`Policy`.
    :returns: a ``TreeResult``: every link, the base and its layer, problems.
    :raises TypeError: an unknown keyword, an argument of the wrong type, or a *tree* that is
        neither BeautifulSoup's nor lxml's.
    :raises ValueError: a *url* or *base* that cannot serve.

    The same rules as :func:`rewrite` (:mod:`rewriter.html.bs4`, :mod:`rewriter.html.lxml`);
    the tree's own serialiser writes the result.

    >>> import lxml.html
    >>> page = lxml.html.fromstring('<p><a href="x.html">x</a></p>')
    >>> rewrite_tree(page, url="http://h/d/").links[0].resolved
    'http://h/d/x.html'
    """
    _checked(url, base, None, policy, None)
    module = type(tree).__module__.split(".")[0]
    if module == "bs4":
        from rewriter.html import bs4

        return bs4.absolutize(tree, url=url, base=base, policy=policy)
    if module == "lxml":
        from rewriter.html import lxml

        return lxml.absolutize(tree, url=url, base=base, policy=policy)
    hint = ": parse it first (bs4.BeautifulSoup(text), lxml.html.fromstring(text)), or call rewrite()"
    raise TypeError(
        f"rewrite_tree() takes a BeautifulSoup or an lxml tree, not {type(tree).__name__}"
        + (hint if isinstance(tree, str | bytes) else "")
    )


if not TYPE_CHECKING:  # hidden from type checkers: a misspelt name stays an error for them

    def __getattr__(name: str) -> Any:
        """``rewriter.batch`` and the other old names: their modules, with a ``DeprecationWarning``."""
        return _moved.attribute(name)
