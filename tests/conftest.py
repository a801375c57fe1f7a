"""Shared test helpers: where ../shared is, and what to do when it is absent."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_path(*parts: str) -> Path:
    """A file under ../shared; skips the test with the reason when it is absent.

    In CI (CI=true) ../shared is always beside the clone, so its absence fails
    the test instead of hiding the conformance suites behind a skip.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        reason = f"{path} is absent: the conformance and corpus tests need ../shared beside the clone"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def load_shared_json(*parts: str) -> Any:
    return json.loads(shared_path(*parts).read_text(encoding="utf-8"))


def shared_cases(*parts: str) -> list[Any]:
    """The records of a JSON file under ../shared, for ``parametrize``.

    When the file is absent this is one ``None`` case, on which the test calls
    :func:`shared_path` to skip (or, in CI, fail) with the reason.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        return [pytest.param(None, id="shared-absent")]
    records = json.loads(path.read_text(encoding="utf-8"))
    return [record for record in records if isinstance(record, dict)]
