"""``rewriter.formats``: the old name of :mod:`rewriter.containers.formats` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
