"""The optional C extension, ``rewriter.document._speedups``: inner loops of the document
pipeline and of the engines above it, compiled where a C compiler was there at install time.

Each compiled function has a Python twin, the reference, which lives beside the code that
calls it (the start-tag reader in :mod:`rewriter.html.tags`, the CSS scanner in
:mod:`rewriter.css.syntax`, UTF-8 byte offsets in :mod:`rewriter.document.encoding`) and is
marked there with :func:`twin`. The two give the same result for every input, which
``tests/test_speedups.py`` holds them to, on arbitrary text and on the corpus. Which one runs
is chosen once, on import: the compiled one when the extension imports, unless the
environment variable ``REWRITER_PURE`` is set to anything but ``""`` or ``"0"``.
:data:`COMPILED` says which; :data:`reference` names every Python twin, and :data:`compiled`
is the extension module (None without it), for tests and benchmarks.

The two agree on any caller's input, not only the engine's: an argument of a wrong type
raises the same kind of exception (a twin checks its str arguments with
:func:`str_argument`, its offsets with ``operator.index``), an offset past either end of
the text is read as Python reads it, and a callback that changes what the function was
handed changes it for both alike.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["COMPILED", "built_from_another_source", "compiled", "reference", "str_argument", "twin"]


def _load() -> Any:
    try:  # by name: the module may not exist, and mypy is to say the same either way
        module = importlib.import_module("rewriter.document._speedups")
    except ImportError:
        return None
    stale = built_from_another_source(module)
    if stale:
        warnings.warn(
            f"rewriter's C extension was built from another version of its source ({stale}): "
            "it is left unused and the Python code runs (same output, slower); reinstall rewriter to rebuild it",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return module


SOURCE = Path(__file__).with_name("_speedups.c")  # beside the build in a checkout; not in a wheel


def built_from_another_source(module: Any, source: Path = SOURCE) -> str | None:
    """Why *module*, the extension, was not built from *source* (a checkout updated without a
    reinstall: its functions may take other arguments), or None when it was, or when there is
    no source to tell by (an installed wheel) or the module was built without setup.py."""
    built = getattr(module, "SOURCE", "")
    if not built or not source.is_file():
        return None
    try:  # CPython's own SHA-256: hashlib would load OpenSSL, a few ms of every start-up, for one digest
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]  # 3.12 on
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    digest = sha256(source.read_bytes()).hexdigest()[:16]
    return None if digest == built else f"built from {built}, the source is {digest}"


compiled: Any = _load()  # the extension module, or None when it was not built
COMPILED: bool = compiled is not None and os.environ.get("REWRITER_PURE", "") in ("", "0")
# Every Python twin, by name (the name of its compiled function), once its module is imported.
reference: dict[str, Callable[..., Any]] = {}

_F = TypeVar("_F", bound=Callable[..., Any])


def twin(function: _F) -> _F:
    """*function*, a Python reference, replaced by the compiled function of its name when
    the extension is used; either way recorded in :data:`reference`."""
    reference[function.__name__] = function
    return getattr(compiled, function.__name__) if COMPILED else function


def str_argument(value: object) -> str:
    """*value*, a twin's text argument, which is to be a str: TypeError otherwise, as its
    compiled twin says (a twin whose Python reads bytes, a list or nothing at all alike
    would otherwise answer where the C refuses). A subclass of str is given back as the str it
    holds: the C reads its characters, never its ``__len__`` or ``__getitem__``, and so does
    the twin that reads what this gives back."""
    if type(value) is str:
        return value
    if not isinstance(value, str):
        raise TypeError(f"expected str, not {type(value).__name__}")
    return str.__str__(value)
