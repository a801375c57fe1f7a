"""``python -m rewriter`` runs the command line."""

from rewriter.cli.commands import entry_point

entry_point()
