"""``rewriter.stylesheet``: the old name of :mod:`rewriter.css.stylesheet` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
