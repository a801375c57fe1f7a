"""A configuration file's values made the verbs' defaults: each key checked against the option
it sets (its action, type and choices, as the parser recorded them), list options replaced,
not added to, by the command line's. :mod:`rewriter.cli.config` finds and reads the file and
says which keys a file may set.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rewriter.cli.parser import Parser, Recorded, size
from rewriter.containers.pieces import MAX_DOCUMENT

# List options (--include, --exclude) from a configuration file: replaced, not added
# to, by the command line's.
CONFIG_LIST = "config_list_"


def _most_jobs() -> int:
    """The most worker processes a configuration file may ask for: four per core."""
    import os

    return 4 * (os.cpu_count() or 1)


def lists_from_config(args: argparse.Namespace) -> None:
    for name, value in list(vars(args).items()):
        if name.startswith(CONFIG_LIST):
            option = name.removeprefix(CONFIG_LIST)
            if getattr(args, option, None) is None:
                setattr(args, option, value)
            delattr(args, name)


def apply_config(parser: Parser, folder: Path) -> Path | None:
    """Defaults from rewriter.toml or pyproject's [tool.rewriter] (see rewriter.cli.config):
    each key must be an option of some verb, with a value of its type. The file read, if any."""
    from rewriter.cli.config import ConfigError, load

    path, settings = load(folder)
    if not settings:
        return path
    known: dict[str, Recorded] = {}
    for verb in parser.verbs.values():
        for option in verb.options.values():
            known.setdefault(option.dest, option)
    for name, value in settings.items():
        found = known.get(name)
        if found is None or name in ("help", "run", "verb"):
            raise ConfigError(f"{path}: {name.replace('_', '-')!r} is not an option of rewriter")
        settings[name] = config_value(path, found, value)
    for verb in parser.verbs.values():
        for name, value in settings.items():
            mine = verb.options.get(name)
            if mine is None:
                continue
            if mine.action == "append":
                verb.set_defaults(**{CONFIG_LIST + name: value})
            else:
                verb.set_defaults(**{name: value})
    return path


def config_value(path: Path | None, option: Recorded, value: object) -> object:
    """*value* of a configuration file checked against the *option* it sets."""
    shown = option.dest.replace("_", "-")
    if option.action == "store_true":
        if not isinstance(value, bool):
            raise ValueError(f"{path}: {shown!r} must be true or false")
        return value
    if option.action == "append":
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
            raise ValueError(f"{path}: {shown!r} must be a string or a list of strings")
        return values
    if option.type is size:
        try:
            bytes_ = size(str(value))
        except argparse.ArgumentTypeError as error:
            raise ValueError(f"{path}: {shown!r}: {error}") from None
        if option.dest == "max_size" and bytes_ > MAX_DOCUMENT:
            # The limit bounds the memory a run takes for one document (a WARC body inflated):
            # a file left in a folder may lower it, only the command line may raise it.
            raise ValueError(
                f"{path}: {shown!r} above {MAX_DOCUMENT:,} bytes (the default) can only be given on the command "
                "line: it bounds the memory one document takes"
            )
        return bytes_
    if option.type is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{path}: {shown!r} must be an integer")
        if option.dest == "jobs" and not 0 <= value <= _most_jobs():
            # Each job is a process: a file left in a folder must not start thousands of them.
            raise ValueError(
                f"{path}: {shown!r} must be from 0 (the default: one per core) to {_most_jobs()} (four per core) "
                "in a configuration file; more can only be given on the command line"
            )
        return value
    if not isinstance(value, str):
        raise ValueError(f"{path}: {shown!r} must be a string")
    if option.choices is not None and value not in option.choices:
        raise ValueError(f"{path}: {shown!r} must be one of {', '.join(map(str, option.choices))}")
    return value
