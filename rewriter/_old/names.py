"""``rewriter.names``: the old name of :mod:`rewriter.disk.names` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
