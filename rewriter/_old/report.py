"""``rewriter.report``: the old name of :mod:`rewriter.run.report` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
