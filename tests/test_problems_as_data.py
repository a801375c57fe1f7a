"""Problems as data (issue #31, item 5): every problem a run says is a record with a code, said
once (standard error, ``--report``, ``explain``), and no decision reads its text.

Each code a run can produce is shown here in ``--report`` for a real input made in the test;
the two decisions that once parsed problem text (the MIME engine's "misread", the packer's
"is it a folder") are shown to stand when the wording changes.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import uuid
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

import rewriter.document.process
import rewriter.html.engine
import rewriter.html.tree
from rewriter.bundle import pack
from rewriter.cli.entry import main
from rewriter.mime.message import rewrite_message
from rewriter.problems import CODES, Problem, report_record, said, said_within
from rewriter.run.jobs import Outcome, outcome_from_json, outcome_json, outcome_problem

RELATIVE_BASE_MHTML = (
    b"Content-Type: multipart/related; boundary=b\r\n\r\n"
    b'--b\r\nContent-Type: text/html\r\n\r\n<base href="sub/"><img src="image1">\r\n'
    b"--b\r\nContent-Type: image/png\r\nContent-Location: image1\r\n\r\nPNG\r\n--b--\r\n"
)


def run(tmp_path: Path, *argv: str) -> tuple[int, str]:
    err = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(list(argv))
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


def report_problems(tmp_path: Path, name: str, data: bytes, output: str) -> tuple[list[dict[str, object]], str]:
    """``rewriter rewrite NAME -o OUTPUT --report r.jsonl``: the report's problem lines, and stderr."""
    (tmp_path / name).write_bytes(data)
    _, err = run(tmp_path, "rewrite", name, "-o", output, "--report", "r.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if "code" in line], err


def test_an_ignored_relative_base_in_an_mhtml_part_is_base_relative_in_the_report(tmp_path: Path) -> None:
    problems, err = report_problems(tmp_path, "page.mhtml", RELATIVE_BASE_MHTML, "out.mhtml")
    [problem] = problems
    assert problem["code"] == "base-relative" and problem["where"] == ["part 1.1"]
    assert problem["file"] == "page.mhtml"
    assert problem["problem"] == f"part 1.1: {problem['detail']}"
    assert err.startswith("rewriter: page.mhtml: ") and f"; part 1.1: {problem['detail']}\n" in err  # as ever


def test_a_bad_part_in_an_mbox_is_a_part_problem_with_its_message_and_part(tmp_path: Path) -> None:
    mbox = (
        b"From a@b Mon Jan  1 00:00:00 2024\n"
        b"Content-Type: multipart/mixed\n\n<a href=x>x</a>\n\n"
        b"From a@b Mon Jan  1 00:00:00 2024\nContent-Type: text/html\n\n<a href=y>y</a>\n"
    )
    problems, _ = report_problems(tmp_path, "box.mbox", mbox, "out.mbox")
    assert [(p["code"], p["where"]) for p in problems] == [("part", ["message 1", "part 1"])]
    assert "boundary" in str(problems[0]["detail"])


def _warc(path: Path) -> bytes:
    with open(path, "wb") as stream:
        writer = WARCWriter(stream, gzip=False)
        for number in range(3):
            uri = f"http://h.example/{number}.html"
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            fixed = {
                "WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, uri)}>",
                "WARC-Date": "2024-05-01T12:00:00Z",
            }
            body = io.BytesIO(b"<a href=next.html>n</a>" * 20)
            record = writer.create_warc_record(
                uri, "response", payload=body, warc_headers_dict=fixed, http_headers=http
            )
            writer.write_record(record)
    return path.read_bytes()


def test_a_damaged_warc_record_is_a_record_problem(tmp_path: Path) -> None:
    whole = _warc(tmp_path / "whole.warc")
    problems, _ = report_problems(tmp_path, "cut.warc", whole[:-100], "out.warc")
    assert problems and {p["code"] for p in problems} == {"record"}
    assert any("cut short" in str(p["detail"]) for p in problems)


@pytest.mark.parametrize("output", ["out.warc", "mirror/"])
def test_a_damaged_archive_names_each_offset_once(tmp_path: Path, output: str) -> None:
    """A damage is placed where it was found (its offset) once, by the reader, not again by its unit."""
    whole = _warc(tmp_path / "whole.warc")
    problems, err = report_problems(tmp_path, "cut.warc", whole[:-100] + b"\r\n" * 3 + b"x" * 50, output)
    assert problems and all(sum(str(w).startswith("offset ") for w in p["where"]) == 1 for p in problems)
    for line in err.splitlines():
        assert line.count("offset ") <= 1, line


def test_a_file_named_that_is_no_document_is_not_a_document(tmp_path: Path) -> None:
    problems, _ = report_problems(tmp_path, "logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "out.png")
    assert [p["code"] for p in problems] == ["not-a-document"]


def test_a_file_not_packed_is_not_packed_with_its_name_as_where(tmp_path: Path) -> None:
    (tmp_path / "page.html").write_bytes(b'<img src="missing.png"><img src="../outside.png">')
    result = pack.pack_mhtml(tmp_path / "page.html", url="http://h.example/page.html")
    assert {(p.code, p.where) for p in result.problems} == {
        ("not-packed", ("missing.png",)),
        ("not-packed", ("../outside.png",)),
    }
    assert all(str(p) == f"{p.where[0]}: {p.detail}" for p in result.problems)  # the text it always had


def test_the_codes_the_tests_show_are_known() -> None:
    assert {"base-relative", "part", "record", "not-a-document", "not-packed"} <= set(CODES)


# --------------------------------------------------------------------------
# No decision reads the wording
# --------------------------------------------------------------------------


def test_misread_does_not_depend_on_the_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    """The relative <base> that stops RFC 2557 §8 matching is told by its code: worded otherwise,
    the decision stays (the reference is left with no base, not claimed to name a part)."""
    before = rewrite_message(RELATIVE_BASE_MHTML)
    reworded = "cannot serve: relative, with nothing under it"
    for module in (rewriter.document.process, rewriter.html.engine, rewriter.html.tree):
        monkeypatch.setattr(module, "RELATIVE_BASE", reworded)
    after = rewrite_message(RELATIVE_BASE_MHTML)
    assert [problem.detail for problem in after.problems] == [f"<base href='sub/'> ignored: {reworded}"]
    assert [problem.code for problem in after.problems] == ["base-relative"]
    statuses = [[link.status for link in part.links] for part in after.parts]
    assert statuses == [[link.status for link in part.links] for part in before.parts] == [[], ["no-base"], []]


def test_a_page_that_is_a_folder_is_told_by_the_reading_not_its_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = pack._read

    def reworded(fd: int, limit: int) -> bytes | pack._Unread:
        data = read(fd, limit)
        return data if isinstance(data, bytes) else data._replace(reason="something else entirely")

    monkeypatch.setattr(pack, "_read", reworded)
    (tmp_path / "folder.html").mkdir()
    with pytest.raises(pack.PackError, match="is a folder, not a page"):
        pack.pack_mhtml(tmp_path / "folder.html")


# --------------------------------------------------------------------------
# One rendering; the journal keeps the records
# --------------------------------------------------------------------------


def test_one_rendering_for_standard_error_explain_and_the_report() -> None:
    problem = Problem("part", "not base64", ("part 1.2",)).at("message 3").at("box.mbox")
    assert said(problem) == "rewriter: box.mbox: message 3: part 1.2: not base64"
    assert said_within(problem, 1) == "message 3: part 1.2: not base64"
    assert report_record(problem, "box.mbox") == {
        "file": "box.mbox",
        "problem": "message 3: part 1.2: not base64",
        "code": "part",
        "where": ["message 3", "part 1.2"],
        "detail": "not base64",
    }


def test_the_journal_gives_back_each_problem_with_its_code(tmp_path: Path) -> None:
    outcome = Outcome("box.mbox")
    outcome.fail(Problem("limit", "larger than 9 bytes", ("message 2",)))
    outcome.warnings.append(
        Problem("base-relative", "<base href='a/'> ignored", ("message 1", "part 1.1")).at("box.mbox")
    )
    value = json.loads(json.dumps(outcome_json(outcome)))
    assert outcome_problem(value, tmp_path / "r", piece=False) is None
    again = outcome_from_json(value)
    assert [(p.code, p.where, p.detail) for p in again.messages] == [
        ("limit", ("box.mbox", "message 2"), "larger than 9 bytes")
    ]
    assert [(p.code, p.where) for p in again.warnings] == [("base-relative", ("box.mbox", "message 1", "part 1.1"))]
    assert [said(p) for p in again.messages + again.warnings] == [said(p) for p in outcome.messages + outcome.warnings]


@pytest.mark.parametrize(
    "planted",
    [
        {"code": "no-such-code", "where": [], "detail": "x"},
        {"code": "part", "where": [], "detail": "x", "extra": "injected"},
        {"code": "part", "where": [3], "detail": "x"},
        {"code": "part", "where": "box.mbox", "detail": "x"},
        {"code": "part", "where": []},
        ["part", "x"],
        7,
    ],
)
def test_a_planted_journal_cannot_inject_a_problem(tmp_path: Path, planted: object) -> None:
    value = {"shown": "a.html", "state": "failed", "messages": [planted]}
    assert outcome_problem(value, tmp_path / "r", piece=False) == "its outcome's messages are not all text or problems"


def test_a_record_not_mirrored_is_a_mirror_problem_through_the_pieces(tmp_path: Path) -> None:
    """A WARC mirrored into a folder, in pieces: the record whose URL another holds is said with
    its code and offset, carried from its piece to the run as a record, not as text."""
    records = [(f"http://h.example/{number % 2}.html", b"<a href=x>x</a>" * 200) for number in range(6)]
    with open(tmp_path / "crawl.warc", "wb") as stream:
        writer = WARCWriter(stream, gzip=False)
        for number, (uri, body) in enumerate(records):
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            fixed = {"WARC-Record-ID": f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, str(number))}>"}
            record = writer.create_warc_record(
                uri, "response", payload=io.BytesIO(body), warc_headers_dict=fixed, http_headers=http
            )
            writer.write_record(record)
    _, err = run(tmp_path, "rewrite", "crawl.warc", "-o", "site", "--piece-size", "4K", "--report", "r.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text(encoding="utf-8").splitlines()]
    problems = [line for line in lines if "code" in line]
    assert len(problems) == 4 and {p["code"] for p in problems} == {"mirror"}
    assert all(len(p["where"]) == 1 and str(p["where"][0]).startswith("offset ") for p in problems)  # type: ignore[index]
    assert all(f"rewriter: crawl.warc: {p['problem']}" in err for p in problems)
