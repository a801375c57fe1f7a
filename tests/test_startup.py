"""What a fresh interpreter loads to rewrite its first page: turbohtml's compiled core alone
(its package's extras are most of its import time), and the whole package still the same
module when a caller imports it, before or after rewriter."""

from __future__ import annotations

import json
import subprocess
import sys

PAGE = b"<html><head><title>t</title></head><body><a href='a/b.html'>x</a><img srcset='i.png 2x'></body></html>"
URL = "http://example.com/d/p.html"


def fresh(code: str) -> dict[str, object]:
    """What *code* leaves in ``answer`` (JSON), run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", f"import json\n{code}\nprint(json.dumps(answer))"],
        capture_output=True,
        text=True,
        check=True,
    )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_a_first_rewrite_loads_turbohtmls_core_and_not_its_package() -> None:
    answer = fresh(
        "import sys, rewriter\n"
        f"out = rewriter.rewrite({PAGE!r}, url={URL!r})\n"
        "answer = dict(out=out.output.decode(), loaded=sorted(m for m in sys.modules if m.startswith('turbohtml')))"
    )
    assert answer["loaded"] == ["turbohtml._html"]
    assert "http://example.com/d/a/b.html" in str(answer["out"])
    assert "http://example.com/d/i.png 2x" in str(answer["out"])


def test_turbohtml_imported_after_rewriter_is_whole_and_shares_the_core() -> None:
    """Its public names all there, its core the one rewriter loaded, and no import hook left."""
    answer = fresh(
        "import sys\nhooks = len(sys.meta_path)\nimport rewriter\n"
        f"first = rewriter.rewrite({PAGE!r}, url={URL!r}).output\n"
        "import turbohtml, turbohtml.detect\n"
        "from rewriter.html.turbo import core\n"
        "answer = dict(same=sys.modules['turbohtml._html'] is core, hooks=len(sys.meta_path) == hooks,\n"
        "    names=[hasattr(turbohtml, n) for n in ('Article', 'parse', 'Link')],\n"
        f"    again=rewriter.rewrite({PAGE!r}, url={URL!r}).output == first,\n"
        "    parsed=turbohtml.parse('<p>x').select('p')[0].text)"
    )
    assert answer == {"same": True, "hooks": True, "names": [True, True, True], "again": True, "parsed": "x"}


def test_turbohtml_imported_before_rewriter_is_the_core_rewriter_uses() -> None:
    answer = fresh(
        "import turbohtml, rewriter\n"
        "from rewriter.html.turbo import core\n"
        f"out = rewriter.rewrite({PAGE!r}, url={URL!r}).output.decode()\n"
        "answer = dict(same=turbohtml._html is core, rewritten='http://example.com/d/a/b.html' in out)"
    )
    assert answer == {"same": True, "rewritten": True}
