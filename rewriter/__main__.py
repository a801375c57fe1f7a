"""``python -m rewriter`` runs the command line."""

from rewriter.cli import entry_point

entry_point()
