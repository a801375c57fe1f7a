"""``rewriter.bs4``: the old name of :mod:`rewriter.html.bs4` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
