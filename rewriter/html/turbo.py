"""turbohtml's compiled core (``turbohtml._html``), loaded without the rest of its package.

Everything the engine asks of turbohtml (``parse``, ``parse_fragment``, ``select``, element
positions, the tokenizer, ``Namespace``) is in the compiled core. The package's
``__init__`` also imports its renderers, article, feed and structured-data readers and XPath
helpers (to register their record types with the core), which is most of its import time and
more than lxml.html's whole start (see docs/decisions.md, "turbohtml's core alone"). So the
core is loaded as the package's submodule under its own name, ``turbohtml._html``, the
package not run: a later ``import turbohtml`` (a caller's, or ``turbohtml.detect`` for the
WHATWG codecs) finds the core already in ``sys.modules`` and runs the rest as usual; its
modules import the core as ``from ._html import ...``, which reads ``sys.modules``. (The
package is then without the attribute ``_html``, a private name, which the import system sets
only for a submodule it loads itself: no import hook is installed to set it, as importing
rewriter changes no other program's imports.)

Where the package is already imported, or the core cannot be found on its own (a zipped or
otherwise unusual install), the package is imported as usual: the same module, just slower.

>>> core.parse("<a href=x>").select("a")
[Element('a')]
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING

_CORE = "turbohtml._html"


def _load_core() -> ModuleType:
    """``turbohtml._html``, the package's ``__init__`` not run unless it already has been."""
    loaded = sys.modules.get(_CORE)
    if loaded is not None:
        return loaded
    if "turbohtml" not in sys.modules:
        from importlib.machinery import PathFinder
        from importlib.util import find_spec, module_from_spec

        package = find_spec("turbohtml")  # a top-level package's spec: found, not run
        locations = package.submodule_search_locations if package is not None else None
        spec = PathFinder.find_spec(_CORE, list(locations)) if locations else None
        if spec is not None and spec.loader is not None:
            module = module_from_spec(spec)
            sys.modules[_CORE] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[_CORE]
                raise
            return module
    import turbohtml._html

    return turbohtml._html


if TYPE_CHECKING:
    from turbohtml import _html as core
else:
    core = _load_core()

__all__ = ["core"]
