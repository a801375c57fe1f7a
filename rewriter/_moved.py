"""The modules that moved into subpackages (issue 21), importable under their old names
for one release: ``import rewriter.batch`` gives :mod:`rewriter.run.batch` itself, the same
module object, so that a function, a class, ``isinstance`` and pickling are all the same
under either name (a copy in a shim module would not be patched with the original).

No warning is given: a ``DeprecationWarning`` raised at import fails the whole test run of
a user who runs with ``-W error``. The old names go in the release after next; the README
names the new homes. (``rewriter.html``, ``rewriter.css``, ``rewriter.mime`` and
``rewriter.cli`` are packages now, which hand on their public names themselves.)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
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


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module at its new home: the import system returns what
    ``sys.modules`` holds under the name once the module is executed."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a blank module, replaced at once

    def exec_module(self, module: ModuleType) -> None:
        sys.modules[module.__name__] = importlib.import_module(self.target)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds only the names of :data:`MOVED`: first, so that no other copy of the package
    (an editable install of another checkout) answers for an old name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        return None if new is None else importlib.util.spec_from_loader(fullname, _Alias(new))


def install() -> None:
    """Let the old names be imported (once per interpreter).

    An old name whose new module is loaded already (``rewriter.resolve``, which the package
    imports) is registered at once: importing it through the finder would then set the
    package's attribute of that name to the module, and ``rewriter.resolve`` is the function.
    """
    for old, new in MOVED.items():
        if new in sys.modules:
            sys.modules.setdefault(old, sys.modules[new])
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
