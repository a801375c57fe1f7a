"""The install without a C compiler: ``pip install .`` still succeeds, and rewriter runs on
its Python reference; with one, the extension is built and used.

Each case installs a copy of the project (its sources, without any built extension) into a
throwaway virtual environment that sees the packages of the interpreter running the tests
(the dependencies are not installed again: ``--no-deps``; pip fetches the build backend,
setuptools, as for any install from source), then runs a rewrite there, from a folder
outside the project, so that the installed package is the one imported.

"This interpreter's packages" are its own site-packages folders, whatever it is: the base
interpreter, or a virtual environment (the README's set-up), whose packages the base
interpreter does not see. ``venv.create(system_site_packages=True)`` would give the base
interpreter's instead (a venv is always made from the base one), so the new environment
gets a ``.pth`` file that adds the running interpreter's folders after its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import environment_seeing_this_one

pytestmark = pytest.mark.slow  # each case builds and installs the project into a fresh virtual environment

ROOT = Path(__file__).resolve().parents[1]
CHECK = (
    "from rewriter.document import speedups; from rewriter.html import rewrite_html; import rewriter, sys\n"
    "result = rewrite_html(b'<a href=x>x</a><p style=\"background:url(y)\">', url='http://h/d/')\n"
    "assert result.output == b'<a href=http://h/d/x>x</a><p style=\"background:url(http://h/d/y)\">', result.output\n"
    "print(speedups.COMPILED, rewriter.__file__)\n"
)


def _project_copy(target: Path) -> Path:
    """The files ``pip install .`` needs, copied without build products or caches."""
    target.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(
        ROOT / "rewriter", target / "rewriter", ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    )
    return target


def _install(tmp_path: Path, **environment: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    project = _project_copy(tmp_path / "project")
    python = environment_seeing_this_one(tmp_path / "venv")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "REWRITER_PURE")}
    env |= environment
    # This interpreter's pip, installing into the new environment's site-packages.
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-v", str(project)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    return done, python


def _run(python: Path, cwd: Path) -> str:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "REWRITER_PURE")}
    done = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("compiler", ["false", "/nonexistent/cc"], ids=["compiler-fails", "no-compiler"])
def test_install_without_a_working_compiler_still_works(tmp_path: Path, compiler: str) -> None:
    done, python = _install(tmp_path, CC=compiler)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "installed without its C extension" in done.stdout + done.stderr
    compiled, location = _run(python, tmp_path).split()
    assert compiled == "False"
    assert Path(location).is_relative_to(tmp_path / "venv"), location
    assert not list((tmp_path / "venv").rglob("_speedups*.so"))


def test_install_with_a_compiler_builds_the_extension(tmp_path: Path) -> None:
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine")
    done, python = _install(tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    compiled, location = _run(python, tmp_path).split()
    assert compiled == "True"
    assert Path(location).is_relative_to(tmp_path / "venv"), location


def test_an_extension_built_from_another_source_is_left_unused(tmp_path: Path) -> None:
    """A checkout updated without a reinstall keeps the old build, whose functions may take other
    arguments: it is told by the source's digest built into it, and the Python twins run instead."""
    from types import SimpleNamespace

    from rewriter.document.speedups import built_from_another_source, compiled

    source = tmp_path / "_speedups.c"
    source.write_bytes(b"int x;\n")
    assert "built from 0123456789abcdef" in str(
        built_from_another_source(SimpleNamespace(SOURCE="0123456789abcdef"), source)
    )
    assert built_from_another_source(SimpleNamespace(SOURCE="3d7db2a1e5b2e0f4"), tmp_path / "missing.c") is None
    assert built_from_another_source(SimpleNamespace(), source) is None  # built without setup.py: not checked
    if compiled is not None:  # this install's own build is of this checkout's source
        assert built_from_another_source(compiled) is None
    # The whole path, in a new interpreter: the build's digest made stale before the module is checked.
    script = (
        "import importlib, warnings, rewriter.document._speedups as built, rewriter.document.speedups as s\n"
        "built.SOURCE = '0' * 16\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    importlib.reload(s)\n"
        "print(s.compiled is None, s.COMPILED, [str(w.message)[:40] for w in caught])\n"
    )
    if compiled is None:
        pytest.skip("the extension is not built here")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.startswith("True False [") and "rewriter's C extension was built" in out
