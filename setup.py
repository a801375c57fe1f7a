"""The optional C extension, rewriter.document._speedups; everything else is in pyproject.toml.

``pip install .`` (or ``-e .``) compiles rewriter/document/_speedups.c with the platform's C
compiler. When there is none, or the build fails for any reason, the install goes on
without it and rewriter runs the Python twins of its functions (rewriter/document/speedups.py
says where they are), with the same output, only slower. ``REWRITER_NO_EXTENSION=1`` skips
the build on purpose.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SKIP = os.environ.get("REWRITER_NO_EXTENSION", "") not in ("", "0")


def _warn(message: str) -> None:
    line = "=" * 78
    print(
        f"{line}\nWARNING: {message}\nrewriter is installed without its C extension: the output is the same, "
        f"the engine slower.\n{line}",
        file=sys.stderr,
    )


class OptionalBuildExt(build_ext):
    """build_ext that never fails the install: a missing or broken compiler costs speed only."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as error:  # no compiler at all, or a broken tool chain
            _warn(f"the C extension could not be built ({type(error).__name__}: {error})")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as error:  # the compiler failed on this extension
            _warn(f"{ext.name} could not be built ({type(error).__name__}: {error})")


SOURCE = "rewriter/document/_speedups.c"
# The source's digest, built into the module (its SOURCE): rewriter.document.speedups leaves a build
# of an older source unused (a checkout updated without a reinstall) instead of calling it.
DIGEST = hashlib.sha256(Path(__file__).resolve().parent.joinpath(SOURCE).read_bytes()).hexdigest()[:16]
EXTENSION = Extension(
    "rewriter.document._speedups", [SOURCE], optional=True, define_macros=[("REWRITER_SOURCE", f'"{DIGEST}"')]
)
extensions = [] if SKIP else [EXTENSION]
setup(ext_modules=extensions, cmdclass={"build_ext": OptionalBuildExt})
