"""The engine table: which engine reads which document, by format or by content type.

Every verb (``rewrite``, ``links``, ``explain``, ``unpack``, ``pack``) and every container
(a file, a MIME message's parts, an mbox, a Maildir, a WARC's records) asks this table which
engine a document needs, as pywb's ``rewrite_types`` maps a content type to its rewriter:
the mapping is data, written once, not an ``if`` in each module. An :class:`Engine` is the
pair of functions that rewrite a document and that only find its links (same arguments,
same result type); the engines themselves are imported only when one is used, so that
telling a format imports none of them.

>>> engine_for_type("Text/HTML; charset=utf-8").format, engine_for_type("text/css").format
('html', 'css')
>>> engine_for_type("image/png") is None
True
>>> engine("css").rewrite(b"p { background: url(i.png) }", url="http://h/a/").output
b'p { background: url(http://h/a/i.png) }'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

if TYPE_CHECKING:
    from rewriter.document.model import DocumentResult, MessageResult

__all__ = [
    "CSS_TYPES",
    "DOCUMENT_TYPES",
    "HTML_TYPES",
    "Engine",
    "EngineFormat",
    "engine",
    "engine_for_type",
    "essence",
]

EngineFormat = Literal["html", "css", "message"]

# MIME type essences (MIME Sniffing §4.6, "HTML MIME type" and "XML MIME type" for XHTML;
# CSS's text/css, CSS Syntax §3.2) each engine reads. A WARC record's payload, a MIME part
# and an unpacked file are sent to an engine by this table alone.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
CSS_TYPES = frozenset({"text/css"})
DOCUMENT_TYPES = HTML_TYPES | CSS_TYPES

# format -> (module, rewriting function, link-finding function). Imported on first use.
_TABLE: dict[EngineFormat, tuple[str, str, str]] = {
    "html": ("rewriter.html.engine", "rewrite_html", "find_links"),
    "css": ("rewriter.css.stylesheet", "rewrite_css", "find_css_links"),
    "message": ("rewriter.mime.message", "rewrite_message", "find_message_links"),
}
_BY_TYPE: dict[str, EngineFormat] = {
    **dict.fromkeys(HTML_TYPES, "html"),
    **dict.fromkeys(CSS_TYPES, "css"),
}


Result = TypeVar("Result", covariant=True)


class Engine(Generic[Result]):
    """One engine: *rewrite* returns the document with its links made absolute, *find*
    only reads them; both take the document and keyword arguments (``url``, ``policy``, and
    for pages and style sheets ``base`` and ``charset``). Pages and style sheets give an
    ``DocumentResult``, messages a ``MessageResult``."""

    __slots__ = ("find", "format", "rewrite")

    def __init__(self, format: EngineFormat, rewrite: Callable[..., Result], find: Callable[..., Result]) -> None:
        self.format = format
        self.rewrite = rewrite
        self.find = find

    def run(self, *, rewrite: bool) -> Callable[..., Result]:
        """The function a verb needs: *rewrite* for ``rewrite``, else the finder."""
        return self.rewrite if rewrite else self.find


_LOADED: dict[str, Engine[Any]] = {}


@overload
def engine(format: Literal["html", "css"]) -> Engine[DocumentResult]: ...
@overload
def engine(format: str) -> Engine[DocumentResult | MessageResult]: ...


def engine(format: str) -> Engine[Any]:
    """The engine for *format* (``html``, ``css``, ``message``; an mbox's messages are
    ``message``). Raises ``KeyError`` for any other."""
    found = _LOADED.get(format)
    if found is None:
        name = cast(EngineFormat, "message" if format == "mbox" else format)
        module_name, rewrite_name, find_name = _TABLE[name]
        module = importlib.import_module(module_name)
        found = Engine(name, getattr(module, rewrite_name), getattr(module, find_name))
        _LOADED[format] = found
    return found


def essence(content_type: str | None) -> str | None:
    """A Content-Type's essence: its type/subtype, lower case, parameters and spaces gone.

    >>> essence(' Text/HTML ; charset="x"'), essence(None), essence("")
    ('text/html', None, None)
    """
    if content_type is None:
        return None
    value = content_type.split(";", 1)[0].strip().lower()
    return value or None


def engine_for_type(content_type: str | None) -> Engine[DocumentResult] | None:
    """The engine for a document of *content_type* (a full Content-Type value or its
    essence), or None when no engine reads that type."""
    format = _BY_TYPE.get(essence(content_type) or "")
    return None if format is None else cast("Engine[DocumentResult]", engine(format))
