"""``rewriter.dask``: the old name of :mod:`rewriter.run.dask` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
