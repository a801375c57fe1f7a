"""``rewriter.pieces``: the old name of :mod:`rewriter.containers.pieces` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
