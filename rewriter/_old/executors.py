"""``rewriter.executors``: the old name of :mod:`rewriter.run.executors` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
