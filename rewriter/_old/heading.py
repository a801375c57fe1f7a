"""``rewriter.heading``: the old name of :mod:`rewriter.mime.heading` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
