"""CSS: the URLs of CSS text (``url()``, ``src()``, ``@import`` and ``image-set()``
strings) and how a new one is written (:mod:`~rewriter.css.syntax`), and style sheets as
documents of their own (:mod:`~rewriter.css.stylesheet`), which the HTML engine's
``<style>`` and ``style`` attributes share.
"""

from rewriter.css.syntax import CSSURL, Context, Quote, escape_url, find_urls

__all__ = ["CSSURL", "Context", "Quote", "escape_url", "find_urls"]
