"""Sphinx configuration of the API reference, built from the docstrings:

pip install -e '.[docs]'
sphinx-build -W --keep-going -b html docs/api <out>
"""

from __future__ import annotations

import sys
from pathlib import Path

# The source tree this reference sits in, when the package is not installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import rewriter

project = "rewriter"
release = version = rewriter.__version__
extensions = ["sphinx.ext.autodoc", "sphinx.ext.doctest"]
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True  # policy=DEFAULT_POLICY, not the policy's whole repr
html_theme = "alabaster"
exclude_patterns: list[str] = []
