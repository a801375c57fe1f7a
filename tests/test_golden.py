"""Behaviour frozen (issue 21): every verb over the corpora gives the digests of tests/golden/golden.json.

Any change to what a verb writes (an output byte, a report line, a message) shows here by name. A
change that is meant is recorded by ``python3 tests/golden.py --write`` in the same commit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import shared_path
from golden import GOLDEN, compute

pytestmark = pytest.mark.corpus


def test_every_verb_over_the_corpora_writes_what_it_wrote() -> None:
    shared_path("corpus", "html")  # skips, with the reason, where ../shared is absent
    shared_path("corpus", "mail")
    shared_path("bench", "resolve-pairs.json.gz")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    found = compute()
    assert sorted(found) == sorted(expected)
    changed = [
        f"{scenario}/{key}: {expected[scenario].get(key)} -> {found[scenario].get(key)}"
        for scenario in expected
        for key in sorted(set(expected[scenario]) | set(found[scenario]))
        if expected[scenario].get(key) != found[scenario].get(key)
    ]
    assert changed == [], f"{len(changed)} outputs changed:\n" + "\n".join(changed[:50])


def test_the_python_twins_write_what_the_extension_wrote() -> None:
    """Issue 23: the outputs are the same without the C extension. The same digests, computed
    again in a child process that runs the Python twins (REWRITER_PURE=1, which its own
    subprocesses inherit); where the extension is not built, both tests run the twins."""
    shared_path("corpus", "html")
    shared_path("corpus", "mail")
    shared_path("bench", "resolve-pairs.json.gz")
    script = Path(__file__).resolve().parent / "golden.py"
    environment = os.environ | {"REWRITER_PURE": "1"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=1800, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "unchanged", f"changed without the extension:\n{done.stdout[:4000]}"
