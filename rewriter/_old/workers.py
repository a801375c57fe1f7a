"""``rewriter.workers``: the old name of :mod:`rewriter.run.workers` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
