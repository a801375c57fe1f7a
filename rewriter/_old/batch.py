"""``rewriter.batch``: the old name of :mod:`rewriter.run.batch` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
