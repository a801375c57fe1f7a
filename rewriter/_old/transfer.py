"""``rewriter.transfer``: the old name of :mod:`rewriter.mime.transfer` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
