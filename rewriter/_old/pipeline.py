"""``rewriter.pipeline``: the old name of :mod:`rewriter.run.pipeline` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
