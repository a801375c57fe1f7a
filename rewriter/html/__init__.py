"""The HTML engine: finds every link of a page (the link table, the microsyntaxes,
``<style>``, ``srcdoc``, ``<noscript>``, conditional comments) and hands it to the document
pipeline; :mod:`~rewriter.html.bs4` and :mod:`~rewriter.html.lxml` run the same rules over a
tree the caller holds. ``from rewriter.html import rewrite_html`` is the way in.
"""

from rewriter.html.engine import (
    HTMLResult,
    Layer,
    Link,
    NoBaseError,
    Status,
    find_links,
    rewrite_html,
    saved_from_mark,
    start_tags,
)

__all__ = [
    "HTMLResult",
    "Layer",
    "Link",
    "NoBaseError",
    "Status",
    "find_links",
    "rewrite_html",
    "saved_from_mark",
    "start_tags",
]
