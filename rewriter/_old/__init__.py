"""The modules' old names (``rewriter.batch``, ``rewriter.mailbox``, ...), each a module of
three lines that puts the module at its new home in its place, with a DeprecationWarning:
this folder is one more entry of the package's ``__path__``, not an import hook
(:mod:`rewriter._moved` says how the names are retired)."""
