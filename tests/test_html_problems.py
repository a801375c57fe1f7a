"""The HTML engines' problems are records (rewriter.problems.Problem) with the right code,
and their text is what it was."""

from __future__ import annotations

from rewriter.html import rewrite_html
from rewriter.problems import Problem


def _problems(page: bytes, url: str | None = "https://example.org/a/") -> list[Problem]:
    problems = list(rewrite_html(page, url=url).problems)
    assert all(isinstance(problem, Problem) for problem in problems)
    return problems


def test_base_ignored() -> None:
    # relative, with nothing to resolve it against: its own code (the MIME engine's part matching reads it)
    (problem,) = _problems(b'<base href="x.html"><a href="y">y</a>', url=None)
    assert problem.code == "base-relative"
    assert problem.startswith("<base href='x.html'> ignored: ")
    (problem,) = _problems(b'<base href="javascript:x"><a href="y">y</a>', url="http://h/")
    assert problem.code == "base-ignored"


def test_nested_problems_keep_their_code_and_say_where() -> None:
    (problem,) = _problems(b'<iframe srcdoc="<base href=&quot;javascript:x&quot;>"></iframe>')
    assert problem.code == "base-ignored"
    assert problem.where == ("in srcdoc",)
    assert str(problem) == f"in srcdoc: {problem.detail}"


def test_repeated_tag() -> None:
    (problem,) = _problems(b'<body><p>x<body background="bg.png">')
    assert problem.code == "repeated-tag"
    assert str(problem) == "<body background> comes from a repeated <body> tag and was left as it is"
