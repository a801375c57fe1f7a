"""``rewriter.warc``: the old name of :mod:`rewriter.containers.warc` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
