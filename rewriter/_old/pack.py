"""``rewriter.pack``: the old name of :mod:`rewriter.bundle.pack` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
