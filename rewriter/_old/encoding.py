"""``rewriter.encoding``: the old name of :mod:`rewriter.document.encoding` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
