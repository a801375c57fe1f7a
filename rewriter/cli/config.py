"""Defaults for the command line from a file: ``rewriter.toml`` or ``[tool.rewriter]``.

The nearest ``rewriter.toml`` (its top-level keys), or ``pyproject.toml`` with a
``[tool.rewriter]`` table, is read: in the working folder, or else in the closest folder
above it that has one, as ruff and black find theirs (a ``pyproject.toml`` without the table
is passed over). Keys are the long option names,
with dashes or underscores: ``rules = "whatwg"``, ``jobs = 2``, ``exclude = ["*.min.css"]``.
Options given on the command line win.

A configuration file is trusted to shape how a run reads and rewrites, never to choose what
it writes, where it connects or what else it reads: a file left in a folder (an unpacked
archive, a cloned repository) is met by every run below it. :data:`KEYS` classifies every
option, one by one; a key refused there is a usage error that names the file and the key,
and the same option on the command line stays allowed. A key that is not in the table is
not an option of rewriter.

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

__all__ = ["KEYS", "REFUSED", "ConfigError", "Key", "load", "read_bounded"]


class Key(NamedTuple):
    """Whether a configuration file may set an option, and why (said when it is refused)."""

    allowed: bool
    why: str


_SHAPES = Key(True, "it shapes how the inputs are read and rewritten, and names no path or address")
_SAYS = Key(True, "it shapes what the run says on standard error or output")
_OPERAND = Key(False, "it names what the command works on, which is the command line's to say")

# Every option a configuration file can name (by its argparse destination), and whether it is
# taken from one. Refused: a path to write, an address to connect to, a file to read beyond
# the inputs, and what the command works on. tests/test_security_config.py holds this table
# to the parser's options: a new option is refused from a file until it is classified here.
KEYS: Mapping[str, Key] = {
    # How references resolve and which links are rewritten
    "rules": _SHAPES,
    "non_strict": _SHAPES,
    "absolutize_fragments": _SHAPES,
    "absolutize_local": _SHAPES,
    "remove_base": _SHAPES,
    "no_lazy": _SHAPES,
    "no_conditional_comments": _SHAPES,
    "canonical_base": _SHAPES,
    "require_base": _SHAPES,
    # How the inputs are read: their retrieval URL, charset, format (strings, no file is opened)
    "url": _SHAPES,
    "url_root": _SHAPES,
    "layout": _SHAPES,
    "charset": _SHAPES,
    "format": _SHAPES,
    # Which files of a folder given on the command line are taken, and how a run is cut up
    "include": _SHAPES,
    "exclude": _SHAPES,
    "no_copy_others": Key(True, "it can only leave files out of an output folder the command line named"),
    "max_size": _SHAPES,
    "piece_size": _SHAPES,
    "jobs": Key(True, "it sets how many local worker processes share the run; they connect nowhere"),
    "no_fsync": Key(
        True, "the same bytes reach the same paths, still atomically; only a crash of the system may lose them"
    ),
    # What is said
    "quiet": _SAYS,
    "verbose": _SAYS,
    "json": _SAYS,
    # Paths written, and whether inputs are changed
    "output": Key(False, "it names a path to write"),
    "single_file": Key(False, "it names a path to write"),
    "report": Key(False, "it names a path to write"),
    "in_place": Key(False, "it makes a run modify its inputs"),
    "backup": Key(False, "it names the files written beside each input"),
    # Connections
    "dask": Key(False, "it chooses a Dask scheduler to connect to, or a cluster to start that listens on ports"),
    # Files read beyond the inputs
    "url_map": Key(False, "it names a file to read beyond the inputs"),
    "file": Key(False, "it names a file to read beyond the inputs"),
    "resume": Key(False, "it makes a run trust the journal an earlier run left in the output and skip what it names"),
    # What the command works on
    "files": _OPERAND,
    "base": _OPERAND,
    "references": _OPERAND,
}

_MAX_FILE = 4 << 20  # bytes of rewriter.toml or pyproject.toml read, at most

# Never taken from a file.
REFUSED = frozenset(name for name, key in KEYS.items() if not key.allowed)


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
        data = read_bounded(path)
        return tomllib.loads(data.decode("utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot be read: {error.strerror or error}") from None
    except RecursionError:  # tomllib reads nested arrays and inline tables by recursion
        raise ConfigError(f"{path}: its values are nested too deeply to read") from None
    except UnicodeDecodeError as error:  # TOML is UTF-8 (TOML 1.0, "Spec")
        line = error.object[: error.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: not UTF-8, as a TOML file must be: byte {error.start} (line {line}): {error.reason}"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def read_bounded(path: Path) -> bytes:
    """The bytes of the configuration file *path*: a regular file (a pipe swapped in after it
    was found is never waited on), at most :data:`_MAX_FILE` bytes."""
    import os
    import stat

    handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(handle, "rb") as stream:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise OSError(0, "not a regular file")
        data = stream.read(_MAX_FILE + 1)
    if len(data) > _MAX_FILE:
        raise OSError(0, f"larger than {_MAX_FILE:,} bytes, which no configuration file is")
    return data


def _normalised(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        known = KEYS.get(name)
        if known is None:
            raise ConfigError(f"{path}: {key!r} is not an option of rewriter")
        if not known.allowed:
            raise ConfigError(f"{path}: {key!r} can only be given on the command line: {known.why}")
        settings[name] = value
    return settings
