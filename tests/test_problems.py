"""Problems as data (rewriter.problems): a record with a code, where and a detail, one text."""

from __future__ import annotations

import json
import pickle

import pytest

from rewriter.problems import CODES, Problem, as_problem, render


def test_a_problem_is_its_fields_and_renders_once() -> None:
    problem = Problem("part", "not base64", where=("message 3", "part 1.2"))
    assert (problem.code, problem.where, problem.detail) == ("part", ("message 3", "part 1.2"), "not base64")
    assert problem == "message 3: part 1.2: not base64" == render(problem.where, problem.detail)


def test_at_puts_the_problem_inside_an_outer_place() -> None:
    problem = Problem("record", "truncated").at("record http://h/").at("file.warc")
    assert problem.where == ("file.warc", "record http://h/")
    assert str(problem) == "file.warc: record http://h/: truncated"


def test_unknown_codes_are_refused_where_they_are_made() -> None:
    with pytest.raises(ValueError, match="unknown problem code 'no-such'"):
        Problem("no-such", "x")


@pytest.mark.parametrize("code", sorted(CODES))
def test_every_code_goes_through_json_and_pickle_unchanged(code: str) -> None:
    problem = Problem(code, "detail: with a colon", where=("part 2",))
    again = Problem.from_json(json.loads(json.dumps(problem.to_json())))
    assert (again.code, again.where, again.detail) == (problem.code, problem.where, problem.detail)
    unpickled = pickle.loads(pickle.dumps(problem))
    assert type(unpickled) is Problem
    assert (unpickled.code, unpickled.where, unpickled.detail) == (code, ("part 2",), "detail: with a colon")


@pytest.mark.parametrize(
    "value", [{}, {"code": "part"}, {"code": "part", "detail": 3}, {"code": "part", "detail": "d", "where": [1]}]
)
def test_from_json_refuses_what_is_not_a_problem(value: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Problem.from_json(value)


def test_as_problem_keeps_a_problem_and_wraps_text() -> None:
    problem = Problem("input", "unreadable")
    assert as_problem(problem, "output") is problem
    wrapped = as_problem("disk full", "output")
    assert (wrapped.code, wrapped.detail, wrapped.where) == ("output", "disk full", ())
