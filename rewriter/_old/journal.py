"""``rewriter.journal``: the old name of :mod:`rewriter.run.journal` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
