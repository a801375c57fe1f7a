"""One tally: every container hands its documents to rewriter.run.tally.fold as uniform units,
and that one function folds them into the job's outcome (counts, what is said, the state)."""

from __future__ import annotations

import ast
import pathlib

from rewriter.html import rewrite_html
from rewriter.mime import rewrite_message
from rewriter.problems import said, said_all
from rewriter.run.jobs import Outcome, Settings
from rewriter.run.tally import Tallied, Unit, fold

WORK = pathlib.Path(__file__).resolve().parents[1] / "rewriter" / "run" / "work.py"


def test_the_work_of_a_job_counts_through_fold_alone() -> None:
    called = {
        node.func.id
        for node in ast.walk(ast.parse(WORK.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert "fold" in called
    assert "tally" not in called  # no container counts a result of its own


def test_fold_counts_units_says_their_problems_and_sets_the_state() -> None:
    page = rewrite_html(b"<a href=x>x</a><a href=http://h/>", url="http://h/")
    orphan = rewrite_html(b"<a href=y>y</a>")  # no base: its link stays relative
    outcome = Outcome("crawl.warc")
    units = [
        Unit({"record": "http://h/"}, page, problems=("a warning",), bytes_in=10, changed=True),
        Unit({"offset": 99}, errors=["offset 99: no record here"], failed=True),
        Unit({"record": "http://h/b"}, orphan, problems=(), bytes_in=5),
    ]
    assert fold(outcome, units, Settings(records=True)) == Tallied(units=3, failed=1, changed=True)
    assert (outcome.state, outcome.ok, outcome.bytes_in) == ("rewritten", False, 15)
    assert (outcome.rewritten, outcome.kept, outcome.relative, outcome.no_base) == (1, 1, 1, 1)
    assert said_all(outcome.warnings) == ["rewriter: crawl.warc: record http://h/: a warning"]
    assert said_all(outcome.messages) == ["rewriter: crawl.warc: offset 99: no record here"]
    left = [said(detail).split(": ")[2:4] for detail in outcome.details]
    assert left == [["record http://h/b", "<a href> 'y' at bytes 8-9"]]
    assert [(record["record"], record["status"]) for record in outcome.records] == [
        ("http://h/", "rewritten"),
        ("http://h/", "absolute"),
        ("http://h/b", "no-base"),
    ]


def test_a_units_own_problems_stand_for_the_results_and_none_means_the_results() -> None:
    message = rewrite_message(b"Content-Type: text/html\r\nContent-Base: ::\r\n\r\n<a href=x>x</a>")
    assert message.problems  # the engine says something of this message
    said, replaced = Outcome("m"), Outcome("m")
    fold(said, [Unit({"message": 1}, message, "message")], Settings())
    fold(replaced, [Unit({"message": 1}, message, "message", ("quoted 1 From line",))], Settings())
    assert said_all(said.warnings) == [f"rewriter: m: message 1: {problem}" for problem in message.problems]
    assert said_all(replaced.warnings) == ["rewriter: m: message 1: quoted 1 From line"]
    assert (said.state, replaced.state) == ("unchanged", "unchanged")


TALLY = WORK.with_name("tally.py")


def test_the_tally_has_no_adapter_of_a_container_report() -> None:
    defined = {
        node.name for node in ast.parse(TALLY.read_text(encoding="utf-8")).body if isinstance(node, ast.FunctionDef)
    }
    assert not {name for name in defined if name.endswith("_units")}  # each container hands units itself


def test_each_container_hands_units_whose_errors_are_placed_problem_records() -> None:
    import io

    from rewriter.containers.mailbox import rewrite_mbox
    from rewriter.containers.warc import WarcDamage
    from rewriter.problems import Problem

    mbox = b"From a\n" + b"x" * 200 + b"\n"
    (report,) = rewrite_mbox(io.BytesIO(mbox), io.BytesIO(), max_message=50)
    unit = report.unit(report=True)
    assert unit.failed and unit.where == {"message": 1} and unit.report is not None
    (error,) = unit.errors
    assert isinstance(error, Problem) and (error.code, error.where) == ("limit", ("message 1",))
    assert str(error).startswith("message 1: larger than 50 bytes")
    damage = WarcDamage(7, "offset 7: cut short").unit()
    assert damage.failed and damage.where == {"offset": 7}
    assert [(e.code, e.where, str(e)) for e in damage.errors] == [  # type: ignore[attr-defined]
        ("record", ("offset 7",), "offset 7: offset 7: cut short")
    ]
