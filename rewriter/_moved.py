"""The modules that moved into subpackages (issue 21), under their old names for one more
minor release, each with a ``DeprecationWarning`` (docs/versioning.md: an old name warns
for one minor release, then goes).

No import hook: ``import rewriter.batch`` finds ``rewriter/_old/batch.py`` (that folder is
one more entry of the package's ``__path__``, the way ``pkgutil.extend_path`` adds one), a
three-line module that puts :mod:`rewriter.run.batch` itself in its place, the same module
object, so that a function, a class, ``isinstance`` and pickling are all the same under
either name. ``rewriter.batch`` as an attribute goes through the package's ``__getattr__``
(:func:`attribute`). An old name whose module the package loads anyway
(``rewriter.resolve``, ``rewriter.encoding``) is registered when the package is imported
(:func:`register_loaded`), without a warning: ``rewriter.resolve`` is also the function.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import MutableMapping
from types import ModuleType

MOVED = {
    "rewriter.resolve": "rewriter.url.resolve",
    "rewriter.query_encoding": "rewriter.url.query_encoding",
    "rewriter.encoding": "rewriter.document.encoding",
    "rewriter.engines": "rewriter.document.engines",
    "rewriter.links": "rewriter.html.table",
    "rewriter.microsyntax": "rewriter.html.microsyntax",
    "rewriter.bs4": "rewriter.html.bs4",
    "rewriter.lxml": "rewriter.html.lxml",
    "rewriter.stylesheet": "rewriter.css.stylesheet",
    "rewriter.heading": "rewriter.mime.heading",
    "rewriter.transfer": "rewriter.mime.transfer",
    "rewriter.mailbox": "rewriter.containers.mailbox",
    "rewriter.warc": "rewriter.containers.warc",
    "rewriter.formats": "rewriter.containers.formats",
    "rewriter.pieces": "rewriter.containers.pieces",
    "rewriter.pack": "rewriter.bundle.pack",
    "rewriter.unpack": "rewriter.bundle.unpack",
    "rewriter.files": "rewriter.disk.files",
    "rewriter.names": "rewriter.disk.names",
    "rewriter.batch": "rewriter.run.batch",
    "rewriter.pipeline": "rewriter.run.pipeline",
    "rewriter.executors": "rewriter.run.executors",
    "rewriter.workers": "rewriter.run.workers",
    "rewriter.dask": "rewriter.run.dask",
    "rewriter.journal": "rewriter.run.journal",
    "rewriter.report": "rewriter.run.report",
    "rewriter.collection": "rewriter.run.collection",
    "rewriter.config": "rewriter.cli.config",
}

# Frames of these shims (this module, rewriter/_old, the package's __getattr__), skipped to
# warn at the importing line; warnings.warn skips the import system's frames itself.
_SHIMS = (
    __file__.rsplit(".", 1)[0],
    __file__.rsplit("_moved", 1)[0] + "_old",
    __file__.rsplit("_moved", 1)[0] + "__init__",
)


def _caller_level() -> int:
    """The ``stacklevel``, for :func:`_warn`'s call, of the first frame outside the shims."""
    frame = sys._getframe(1)  # _warn's: stacklevel 1
    level = 1
    while frame.f_back is not None:
        name = frame.f_code.co_filename
        if name.startswith(_SHIMS) or frame.f_globals.get("__name__") == "importlib":  # import_module
            level += 1
        elif not name.startswith("<frozen importlib"):
            break
        frame = frame.f_back
    return level


def _warn(old: str) -> None:
    warnings.warn(
        f"{old} is an old name of {MOVED[old]}: import {MOVED[old]} (the old name goes in the next minor release)",
        DeprecationWarning,
        stacklevel=_caller_level(),
    )


def alias(name: str) -> None:
    """Put the module at the new home of the old name *name* (``rewriter.batch``, the
    ``__name__`` of a module of ``rewriter/_old``) in its place in ``sys.modules``: the import
    system hands on what ``sys.modules`` holds once the module has run."""
    old = "rewriter." + name.rsplit(".", 1)[1]
    _warn(old)
    sys.modules[name] = importlib.import_module(MOVED[old])


def attribute(name: str) -> ModuleType:
    """The package's ``__getattr__``: the module an old name *name* stands for, with a warning."""
    old = f"rewriter.{name}"
    if old not in MOVED:
        raise AttributeError(f"module 'rewriter' has no attribute {name!r}")
    _warn(old)
    return importlib.import_module(MOVED[old])


def register_loaded(modules: MutableMapping[str, ModuleType]) -> None:
    """Register the old names whose new modules are loaded already, without a warning (the
    package loads them itself). ``import rewriter.resolve`` then finds the module registered
    and leaves the package's ``resolve``, the function, as it is."""
    for old, new in MOVED.items():
        if new in modules:
            modules.setdefault(old, modules[new])
