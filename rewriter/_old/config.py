"""``rewriter.config``: the old name of :mod:`rewriter.cli.config` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
