"""``rewriter.links``: the old name of :mod:`rewriter.html.table` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
