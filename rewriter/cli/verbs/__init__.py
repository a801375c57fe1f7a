"""The verbs of the command line, one module per family: ``rewrite``; ``links`` and
``explain`` (:mod:`~rewriter.cli.verbs.inspect`); ``pack`` and ``unpack``
(:mod:`~rewriter.cli.verbs.bundle`); ``resolve``. Each takes a checked
:class:`~rewriter.cli.request.RunRequest`, standard output and standard error, and returns
the exit status.
"""
