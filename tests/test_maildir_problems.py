"""A Maildir's problems: each said once, under the message file it is of (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.cli.commands import main
from rewriter.containers.mailbox import rewrite_maildir

# A multipart with no boundary parameter: the engine keeps its body as it is, and says so.
BROKEN = (
    b"From: a@example.org\nSubject: x\nMIME-Version: 1.0\nContent-Type: multipart/related\n\n"
    b"--b\nContent-Type: text/html\nContent-Location: http://example.org/\n\n<a href=x>x</a>\n--b--\n"
)
GOOD = b"Content-Type: text/html\nContent-Location: http://example.org/d/\n\n<a href=next.html>next</a>\n"
DETAIL = "a multipart without a boundary parameter is kept as it is"


def maildir(root: Path) -> Path:
    for name in ("cur", "new", "tmp"):
        (root / name).mkdir(parents=True)
    (root / "cur" / "1000.M1P1.host:2,S").write_bytes(BROKEN)
    (root / "new" / "1001.M2P2.host").write_bytes(GOOD)
    return root


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("verb", ["rewrite", "links"])
def test_a_structural_problem_is_said_once_with_the_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], verb: str
) -> None:
    folder = maildir(tmp_path / "Mail")
    argv = [verb, str(folder), *(["-o", str(tmp_path / "out")] if verb == "rewrite" else [])]
    code, err = run(capsys, *argv)
    assert code == 0, err
    lines = [line for line in err.splitlines() if DETAIL in line]
    assert lines == [f"rewriter: {folder}: message cur/1000.M1P1.host:2,S: part 1: {DETAIL}"]
    assert err.count(DETAIL) == 1


def test_the_report_names_the_message_file_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    folder = maildir(tmp_path / "Mail")
    report = tmp_path / "report.jsonl"
    code, err = run(capsys, "rewrite", str(folder), "-o", str(tmp_path / "out"), "--report", str(report))
    assert code == 0, err
    problems = [line for line in map(json.loads, report.read_text().splitlines()) if "code" in line]
    assert [(p["code"], p["where"], p["detail"]) for p in problems] == [
        ("part", ["message cur/1000.M1P1.host:2,S", "part 1"], DETAIL)
    ]


def test_what_the_module_says_of_a_file_is_said_once_and_always(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = maildir(tmp_path / "Mail")
    named = folder / "new" / "1001.M2P2.host,S=80"
    (folder / "new" / "1001.M2P2.host").rename(named)
    code, err = run(capsys, "rewrite", "-q", str(folder), "-o", str(tmp_path / "out"))
    assert code == 0, err
    said = [line for line in err.splitlines() if "no longer matches" in line]
    assert len(said) == 1 and said[0].startswith(f"rewriter: {folder}: message new/1001.M2P2.host,S=80: the size")
    assert DETAIL not in err  # -q: what the engine left as it was is not said


def test_the_report_problems_carry_no_file_name_of_their_own(tmp_path: Path) -> None:
    folder = maildir(tmp_path / "Mail")
    (folder / "new" / "1001.M2P2.host").rename(folder / "new" / "1001.M2P2.host,S=80")
    reports = list(rewrite_maildir(folder, tmp_path / "out", with_links=True))
    size = reports[1].problems[-1]
    assert size.code == "message" and size.where == ()  # type: ignore[attr-defined]
    unit = reports[1].unit()
    assert [str(error) for error in unit.errors] == [f"message new/1001.M2P2.host,S=80: {size.detail}"]  # type: ignore[attr-defined]
    assert unit.problems == []
