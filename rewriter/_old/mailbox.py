"""``rewriter.mailbox``: the old name of :mod:`rewriter.containers.mailbox` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
