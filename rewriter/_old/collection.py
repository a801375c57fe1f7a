"""``rewriter.collection``: the old name of :mod:`rewriter.run.collection` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
