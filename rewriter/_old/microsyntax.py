"""``rewriter.microsyntax``: the old name of :mod:`rewriter.html.microsyntax` (deprecated)."""

from rewriter._moved import alias

alias(__name__)
