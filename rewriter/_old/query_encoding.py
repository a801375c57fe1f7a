"""``rewriter.query_encoding``: the old name of :mod:`rewriter.url.query_encoding` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
