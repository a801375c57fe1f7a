"""``rewriter.files``: the old name of :mod:`rewriter.disk.files` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
