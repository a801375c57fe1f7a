"""The ``rewriter`` command line's old home, kept for the names imported from it: the
parser is :mod:`rewriter.cli.parser`, the checked run request :mod:`rewriter.cli.request`,
the verbs :mod:`rewriter.cli.verbs`, what the terminal shows :mod:`rewriter.cli.output`,
and the way in (``main``, ``entry_point``) :mod:`rewriter.cli.entry`.
"""

from __future__ import annotations

from rewriter.cli.entry import entry_point, main
from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, build_parser
from rewriter.run.report import escape_controls, json_text

__all__ = [
    "EXIT_OK",
    "EXIT_SOME_FAILED",
    "EXIT_USAGE",
    "build_parser",
    "entry_point",
    "escape_controls",
    "json_text",
    "main",
]
