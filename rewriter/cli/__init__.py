"""The command line: ``rewriter rewrite|links|explain|unpack|pack|resolve``, its options and
the defaults a ``rewriter.toml`` or ``pyproject.toml`` gives them
(:mod:`~rewriter.cli.config`), exit statuses, and what it says on standard error. It only
parses and reports: the work is the library's. ``rewriter.cli:entry_point`` is the
console script.
"""

from rewriter.cli.entry import entry_point, main
from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, build_parser

__all__ = ["EXIT_OK", "EXIT_SOME_FAILED", "EXIT_USAGE", "build_parser", "entry_point", "main"]
