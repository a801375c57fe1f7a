"""docs/spark.md's recipe, run as written: the pipeline on a local SparkContext writes what the
serial executor writes (skipped, with the reason, where pyspark or a Java runtime is missing)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import NetworkGuard

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "docs" / "spark.md"

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed: the Spark recipe is not tested here")
if shutil.which("java") is None:
    pytest.skip("no Java runtime: Spark cannot start", allow_module_level=True)


def recipe() -> dict[str, object]:
    """The first code block of docs/spark.md, run: its names."""
    block = re.search(r"```python\n(.*?)```", RECIPE.read_text(encoding="utf-8"), re.S)
    assert block is not None
    names: dict[str, object] = {}
    exec(compile(block.group(1), str(RECIPE), "exec"), names)  # the document's own code
    return names


def tree(folder: Path) -> dict[str, bytes]:
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_the_recipe_writes_what_the_serial_run_writes(
    tmp_path: Path, network_guard: NetworkGuard, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rewriter.run.batch import Settings, iter_plan
    from rewriter.run.executors import Serial
    from rewriter.run.journal import Journal
    from rewriter.run.pipeline import execute

    site = tmp_path / "site"
    for number in range(12):
        path = site / f"d{number % 3}" / f"{number}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"<a href=../x%d>x</a><img srcset='a.png 1x, b.png 2x'>" % number)
    mbox = b"".join(
        b"From a@b Sat Jan  1 00:00:00 2000\nContent-Type: text/html\nContent-Base: http://m/%d/\n\n<a href=y>\n\n" % n
        for n in range(40)
    )
    (site / "mail.mbox").write_bytes(mbox)
    settings = Settings(url="http://example.org/site/", report_text=True, records=True)
    SparkExecutor = recipe()["SparkExecutor"]  # the class the document defines
    # Spark's driver talks to its own JVM and workers over loopback; nothing else is reached.
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    # Spark's Python workers run this interpreter (by default, whatever python3 the PATH finds:
    # not the virtual environment the README installs into, when it is not activated).
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setattr(network_guard, "allow_loopback", True)
    context = pyspark.SparkContext("local[2]", "rewriter-test")
    context.setLogLevel("ERROR")
    try:
        results = {}
        for name, executor in (("serial", Serial()), ("spark", SparkExecutor(context, window=5))):  # type: ignore[operator]
            out = tmp_path / name
            journal = Journal.open(out / ".rewriter-run", {}, resume=False)
            plan = iter_plan([str(site)], str(out), piece_size=500)
            outcomes = list(execute(plan, settings, executor, journal=journal))
            journal.close(finished=True)
            results[name] = (
                [(o.shown, o.state, o.rewritten, o.report) for o in outcomes if not isinstance(o, str)],
                tree(out),
            )
    finally:
        context.stop()
    assert results["spark"] == results["serial"]
    assert sum(1 for outcome in results["serial"][0] if outcome[0].endswith("mail.mbox")) > 1  # done in pieces
