"""``rewriter links`` and ``rewriter explain``: a file read through the steps of a rewrite
(the same plan and pipeline) with nothing written, and what was found listed: every link,
or the MIME tree with each part's base and where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rewriter.cli.output import Escaping, RunTotals, explained_problems, write_tree
from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED
from rewriter.cli.request import RunRequest
from rewriter.problems import Problem, said
from rewriter.run.report import escape_controls, json_text

if TYPE_CHECKING:
    from rewriter.run.batch import Outcome


def _dry_run(verb: str, request: RunRequest, *, explain: bool) -> Iterator[Outcome]:
    """Read FILE through the steps of a rewrite (the same plan and pipeline), writing nothing:
    every document of it (each message of an mbox or a Maildir, each page of a WARC) with its
    links and, for *explain*, its rows; an outcome for each job (a piece of a large mbox, or
    the whole file), as they are done."""
    from rewriter.containers.pieces import PIECE_SIZE
    from rewriter.run.batch import Outcome, iter_plan
    from rewriter.run.executors import Serial
    from rewriter.run.pipeline import execute

    name = request.files[0]
    if name != "-" and os.path.isdir(name):
        from rewriter.containers.mailbox import is_maildir  # a folder is read only when it is a Maildir

        if not is_maildir(Path(name)):
            problem = f"a folder, and not a Maildir (cur/, new/, tmp/): {verb} reads one file or Maildir"
            yield Outcome(name).fail(Problem("input", problem))
            return
    settings = replace(request.settings(records=not explain), explain=explain)
    plan = iter_plan([name], dry=True, piece_size=PIECE_SIZE, max_message=settings.max_size)
    for item in execute(plan, settings, Serial()):
        # a problem of the plan: said as the plan words it
        yield item if isinstance(item, Outcome) else Outcome(name, state="failed", ok=False, messages=[item])


def run_links(request: RunRequest, out: TextIO, err: TextIO) -> int:
    args = request.options
    places = ("record", "message", "part")  # a WARC's page, an mbox's or a Maildir's message, a part
    said = RunTotals()
    ok = True
    for outcome in _dry_run("links", request, explain=False):
        for record in outcome.records:
            record.pop("file", None)
            if args.json:
                out.write(json_text(record) + "\n")
                continue
            # One line a link, tab-separated: each field escaped (its tabs and line ends too).
            resolved = record["resolved"] if record["resolved"] is not None else "-"
            fields = [str(record[place]) for place in places if place in record]
            fields += [str(record[key]) for key in ("element", "attribute", "status", "original")] + [str(resolved)]
            out.write("\t".join(escape_controls(field) for field in fields) + "\n")
        outcome.records = []
        ok = ok and outcome.ok
        for line in said.add(outcome, quiet=False, verbose=False):
            err.write(line + "\n")
    return EXIT_OK if ok else EXIT_SOME_FAILED


def _whole(outcomes: Iterable[Outcome]) -> Outcome:
    """One outcome of a file done in pieces: rows, messages and warnings together."""
    whole: Outcome | None = None
    for outcome in outcomes:
        if whole is None:
            whole = outcome
            continue
        whole.rows += outcome.rows
        whole.messages += outcome.messages
        whole.warnings += outcome.warnings
        whole.ok = whole.ok and outcome.ok
        if outcome.state == "failed":
            whole.state = "failed"
    assert whole is not None
    return whole


def run_explain(request: RunRequest, out: TextIO, err: TextIO) -> int:
    """The MIME tree (or the one document) of each document of FILE: each part's type, base,
    where the base came from, and how many links were rewritten, kept and left relative."""
    args = request.options
    outcome = _whole(_dry_run("explain", request, explain=True))
    for line in outcome.messages:
        err.write(said(line) + "\n")
    if outcome.state == "failed" and not outcome.rows:
        return EXIT_SOME_FAILED
    problems = explained_problems(outcome)
    if args.json:
        document = {
            "file": outcome.shown,
            "format": outcome.format,
            "why": outcome.why,
            "parts": outcome.rows,
            "problems": problems,
        }
        out.write(json_text(document, indent=2) + "\n")
        return EXIT_SOME_FAILED if outcome.messages else EXIT_OK
    write_tree(Escaping(out), outcome, problems)  # names, types and bases come from the document
    return EXIT_SOME_FAILED if outcome.messages else EXIT_OK
