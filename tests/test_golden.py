"""Behaviour frozen (issue 21): every verb over the corpora gives the digests of tests/golden/golden.json.

Any change to what a verb writes (an output byte, a report line, a message) shows here by name. A
change that is meant is recorded by ``python3 tests/golden.py --write`` in the same commit.
"""

from __future__ import annotations

import json

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
