"""``rewriter.lxml``: the old name of :mod:`rewriter.html.lxml` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
