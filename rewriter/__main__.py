"""``python -m rewriter`` runs the command line."""

from rewriter.cli.main import entry_point

entry_point()
