"""The package as its users install it (issue 35): ``py.typed`` in the wheel and the sdist,
``mypy --strict`` on typical calls against the installed wheel (not the source tree), and the
API reference built from the docstrings with warnings as errors.

The wheel is built from a copy of the project (``pip wheel --no-deps``, without the C
extension: the types are the same; pip fetches the build backend, setuptools, as for any
install from source, since a virtual environment's own may be older than pyproject.toml asks;
the sdist by this interpreter's setuptools, offline), and installed into
a throwaway virtual environment that sees this interpreter's packages after its own (as in
tests/test_speedups_build.py), so that mypy finds the installed copy first; mypy runs from a
folder outside the project, so the source tree is not on its path.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import environment_seeing_this_one

pytestmark = pytest.mark.slow  # builds a wheel and an sdist, installs one, runs mypy or Sphinx

ROOT = Path(__file__).resolve().parents[1]
TYPING = Path(__file__).resolve().parent / "typing"
PACKAGED = ("rewriter/py.typed", "rewriter/_old/batch.py", "rewriter/_old/__init__.py")


def _environment() -> dict[str, str]:
    drop = ("PYTHONPATH", "REWRITER_PURE", "MYPYPATH")
    return {key: value for key, value in os.environ.items() if key not in drop} | {"REWRITER_NO_EXTENSION": "1"}


def _project_copy(target: Path) -> Path:
    """The files a build needs, copied without build products or caches."""
    target.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    ignored = shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    shutil.copytree(ROOT / "rewriter", target / "rewriter", ignore=ignored)
    return target


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The project's wheel and sdist, built offline from a copy of it."""
    tmp = tmp_path_factory.mktemp("build")
    project = _project_copy(tmp / "project")
    dist = tmp / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), "."],
        cwd=project, env=_environment(), check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta; build_meta.build_sdist({str(dist)!r})"],
        cwd=project, env=_environment(), check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (wheel,) = dist.glob("rewriter-*.whl")
    (sdist,) = dist.glob("rewriter-*.tar.gz")
    return wheel, sdist


def test_py_typed_and_the_old_names_are_in_the_wheel_and_the_sdist(built: tuple[Path, Path]) -> None:
    wheel, sdist = built
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert set(PACKAGED) <= in_wheel
    with tarfile.open(sdist) as archive:
        in_sdist = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    assert set(PACKAGED) <= in_sdist


@pytest.fixture(scope="module")
def installed(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a virtual environment where the wheel is installed."""
    tmp = tmp_path_factory.mktemp("installed")
    python = environment_seeing_this_one(tmp / "venv")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(built[0])],
        env=_environment(), check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return python


def _mypy(python: Path, checked: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` on a copy of *checked*, run outside the project, with the environment
    of *python*; ``-v``, to say which copy of rewriter it read."""
    copy = tmp_path / checked.name
    shutil.copy2(checked, copy)
    return subprocess.run(
        [str(python), "-m", "mypy", "--strict", "-v", "--no-incremental", "--python-executable", str(python),
         "--cache-dir", str(tmp_path / "cache"), copy.name],
        capture_output=True, text=True, cwd=tmp_path, env=_environment(), timeout=900,
    )  # fmt: skip


def _read_from(done: subprocess.CompletedProcess[str]) -> set[str]:
    """The folders mypy read ``rewriter/__init__.py`` from (its ``-v`` log)."""
    return set(re.findall(r"Parsing (\S+)/rewriter/__init__\.py \(rewriter\)", done.stderr))


def test_mypy_strict_on_typical_calls_against_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra: pip install -e '.[test]')")
    done = _mypy(installed, TYPING / "calls_ok.py", tmp_path)
    folders = _read_from(done)
    assert folders and all(str(installed.parent.parent) in folder for folder in folders), folders
    assert done.returncode == 0, done.stdout
    assert "Success: no issues found in 1 source file" in done.stdout


def test_mypy_strict_refuses_a_misspelt_keyword_against_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra: pip install -e '.[test]')")
    done = _mypy(installed, TYPING / "calls_misspelt.py", tmp_path)
    assert all(str(installed.parent.parent) in folder for folder in _read_from(done))
    assert done.returncode == 1
    errors = "\n".join(line for line in done.stdout.splitlines() if ": error:" in line)
    assert ':10: error: Unexpected keyword argument "base_url" for overloaded function "rewrite"' in errors
    assert ':14: error: Unexpected keyword argument "rules" for overloaded function "rewrite"' in errors
    assert ':18: error: Module has no attribute "rewirte"; maybe "rewrite"?' in errors


def test_the_api_reference_builds_without_a_warning(tmp_path: Path) -> None:
    if importlib.util.find_spec("sphinx") is None:
        pytest.skip("Sphinx is not installed (it is in the docs extra: pip install -e '.[docs]')")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs" / "api"),
         str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "html" / "index.html").read_text(encoding="utf-8")
    for name in ("rewrite", "find_links", "rewrite_tree", "Policy", "DocumentResult", "MessageResult"):
        assert f'id="rewriter.{name}"' in page, name
