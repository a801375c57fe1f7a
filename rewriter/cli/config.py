"""Defaults for the command line from a file: ``rewriter.toml`` or ``[tool.rewriter]``.

The nearest ``rewriter.toml`` (its top-level keys), or ``pyproject.toml`` with a
``[tool.rewriter]`` table, is read: in the working folder, or else in the closest folder
above it that has one, as ruff and black find theirs (a ``pyproject.toml`` without the table
is passed over). Keys are the long option names,
with dashes or underscores: ``rules = "whatwg"``, ``jobs = 2``, ``exclude = ["*.min.css"]``.
Options given on the command line win. Options that choose what is written where
(``output``, ``in-place``) are refused: a file left in a folder must never make a
later run modify its inputs.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "pyproject.toml").write_text('[tool.rewriter]\\nrules = "whatwg"\\nno-lazy = true\\n')
>>> path, settings = load(folder)
>>> path.name, settings
('pyproject.toml', {'rules': 'whatwg', 'no_lazy': True})
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["REFUSED", "ConfigError", "load"]

# Never taken from a file: where the output goes, and whether inputs are changed.
REFUSED = frozenset({"output", "in_place", "files"})


class ConfigError(ValueError):
    """A configuration file that cannot be read, or a key or value it should not have."""


def load(folder: Path) -> tuple[Path | None, dict[str, Any]]:
    """(the file read, its settings with option names as argparse keeps them); (None, {})
    when neither *folder* nor a folder above it has one."""
    for here in (folder, *folder.parents):
        own = here / "rewriter.toml"
        project = here / "pyproject.toml"
        if own.is_file():
            return own, _normalised(own, _read(own))
        if project.is_file():
            tool = _read(project).get("tool", {})
            table = tool.get("rewriter") if isinstance(tool, dict) else None
            if table is None:
                continue  # a project of its own, configured for other tools
            if not isinstance(table, dict):
                raise ConfigError(f"{project}: [tool.rewriter] must be a table")
            return project, _normalised(project, table)
    return None, {}


def _read(path: Path) -> dict[str, Any]:
    # Imported here, for a file found: most runs have none, and tomllib costs 3 ms of start-up.
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:  # TOML is UTF-8 (TOML 1.0, "Spec")
        line = error.object[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8, as a TOML file must be: byte {error.start} (line {line}): {error.reason}"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def _normalised(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name in REFUSED:
            raise ConfigError(f"{path}: {key!r} can only be given on the command line")
        settings[name] = value
    return settings
