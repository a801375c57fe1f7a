"""The redirects a WARC records (RFC 9110 §15.4): each 3xx response's URL → its Location resolved,
and the URL a chain of them leads to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from rewriter.containers.warc.model import WarcDocument
from rewriter.url.resolve import Rules, UnresolvableReference, resolve, url_key

if TYPE_CHECKING:
    pass


def redirect_map(documents: Iterable[WarcDocument], *, rules: Rules = "rfc3986", strict: bool = True) -> dict[str, str]:
    """From each 3xx response with a ``Location``: its URL (:func:`url_key`) → the Location
    resolved against its target URI (RFC 9110 §10.2.2). The first record of a URL wins; a
    Location that cannot be resolved is left out.

    >>> page = WarcDocument("http://h/old", 301, None, None, b"", "new/", 0)
    >>> redirect_map([page])
    {'http://h/old': 'http://h/new/'}
    """
    redirects: dict[str, str] = {}
    for document in documents:
        status, location = document.status, document.location
        if status is None or not 300 <= status < 400 or not location or not location.strip():
            continue
        key = url_key(document.uri)
        if key in redirects:
            continue
        try:
            redirects[key] = resolve(document.uri, location.strip(), rules=rules, strict=strict)
        except UnresolvableReference:
            continue
    return redirects


def follow_redirects(
    url: str, redirects: Mapping[str, str], *, stop: Callable[[str], bool] | None = None
) -> str | None:
    """The URL a chain of *redirects* (from :func:`redirect_map`) leads *url* to: the first that
    does not redirect, or the first for which *stop* is true. None when the chain loops.

    >>> chain = {"http://h/a": "http://h/b", "http://h/b": "http://h/c", "http://h/x": "http://h/x"}
    >>> follow_redirects("http://h/a", chain), follow_redirects("http://h/x", chain)
    ('http://h/c', None)
    """
    seen: set[str] = set()
    current = url
    while True:
        if stop is not None and stop(current):
            return current
        key = url_key(current)
        if key in seen:
            return None
        seen.add(key)
        following = redirects.get(key)
        if following is None:
            return current
        current = following
