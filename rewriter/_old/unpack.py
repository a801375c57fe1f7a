"""``rewriter.unpack``: the old name of :mod:`rewriter.bundle.unpack` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
