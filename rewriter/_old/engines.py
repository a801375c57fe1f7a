"""``rewriter.engines``: the old name of :mod:`rewriter.document.engines` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
