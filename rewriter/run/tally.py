"""The tally: what the engines found in a job's documents, folded into its :class:`Outcome`.

Every container hands its documents over as uniform units
(:class:`rewriter.document.model.Unit`: a file alone is one unit; an mbox, a Maildir, a WARC
written out or mirrored into a folder hand one per message or record, each report's
``unit()``), and one function, :func:`fold`, counts them all: links rewritten, kept and
left relative, what was said of each, the bytes, whether anything changed. :func:`totals` and :func:`count_into`
then sum the outcomes into a run's closing figures.

>>> from rewriter.html import rewrite_html
>>> outcome = Outcome("page.html")
>>> fold(outcome, [Unit({}, rewrite_html(b"<a href=x>x</a><a href=#top>"), changed=False)], Settings())
Tallied(units=1, failed=0, changed=False)
>>> (outcome.kept, outcome.relative, outcome.ok, outcome.left_relative())
(1, 1, False, 'rewriter: page.html: 1 link left relative: no base (give --url, --url-root or --canonical-base)')
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from rewriter.document.model import LEFT_RELATIVE, DocumentResult, Unit
from rewriter.problems import Problem, as_problem
from rewriter.run.jobs import Outcome, Settings

if TYPE_CHECKING:
    from rewriter.document.model import Link, MessageResult, Status
    from rewriter.url.base import Layer

__all__ = [
    "Tallied",
    "Unit",
    "count_into",
    "fold",
    "located_links",
    "tally",
    "totals",
]


class Tallied(NamedTuple):
    """What :func:`fold` counted: its units, those that failed, whether any changed."""

    units: int
    failed: int
    changed: bool


def fold(outcome: Outcome, units: Iterable[Unit], settings: Settings) -> Tallied:
    """Count every unit of a job into *outcome* (:func:`tally` for each engine's result), as
    the container hands them over, and set its state: "rewritten" when any unit changed."""
    count = failed = 0
    changed = False
    for unit in units:
        count += 1
        changed = changed or unit.changed
        if unit.report is not None:
            outcome.units.append(unit.report)
        outcome.bytes_in += unit.bytes_in
        outcome.bytes_out += unit.bytes_out
        if unit.result is not None:
            tally(outcome, unit.result, settings, dict(unit.where), unit.problems, fmt=unit.format)
        code = "record" if "record" in unit.where or "offset" in unit.where else "message"
        outcome.messages.extend(as_problem(error, code).at(outcome.shown) for error in unit.errors)
        if unit.failed:
            failed += 1
            outcome.ok = False
    outcome.state = "rewritten" if changed else "unchanged"
    return Tallied(count, failed, changed)


def located_links(result: DocumentResult | MessageResult, *statuses: Status) -> list[tuple[str, Link]]:
    """(where, link) for every link of *result* (with *statuses*: those that have one of
    them, whose byte spans alone are worked out): the part path for a message, "" for a document."""
    if isinstance(result, DocumentResult):
        return [("", link) for link in (result.links_with(*statuses) if statuses else result.links)]
    parts = result.parts
    return [(part.path, link) for part in parts for link in (part.links_with(*statuses) if statuses else part.links)]


_RELATIVE: tuple[Status, ...] = tuple(sorted(LEFT_RELATIVE))  # links left relative


def tally(
    outcome: Outcome,
    result: DocumentResult | MessageResult,
    settings: Settings,
    extra: dict[str, object],
    problems: Sequence[str] | None = None,
    *,
    fmt: str = "html",
) -> None:
    """Count *result*'s links into *outcome*, name each problem (*problems*, else the
    result's) and each link left relative, and keep every link as a record (and each
    document's or part's row, for explain) when the settings ask for them. *fmt*: what
    the document is (html, css, message)."""
    message = not isinstance(result, DocumentResult)
    if settings.explain:
        outcome.rows.extend(_rows(result, fmt, extra))
    where = (outcome.shown, *(f"{key} {value}" for key, value in extra.items()))
    for problem in result.problems if problems is None else problems:
        outcome.warnings.append(as_problem(problem, "left-as-is").at(*where))
    counts: dict[Status, int]
    if isinstance(result, DocumentResult):
        counts = result.status_counts  # a copy of its own
    else:
        counts = {}
        for counted in result.parts:
            for status, count in counted.status_counts.items():
                counts[status] = counts.get(status, 0) + count
    rewritten, no_base = counts.get("rewritten", 0), counts.get("no-base", 0)
    relative = sum(counts.get(status, 0) for status in _RELATIVE)
    outcome.rewritten += rewritten
    outcome.relative += relative
    outcome.no_base += no_base
    outcome.kept += sum(counts.values()) - rewritten - relative
    outcome.local += counts.get("local", 0)
    every = located_links(result) if settings.records else None  # all their spans, once
    if relative:
        outcome.ok = False
        left = (
            located_links(result, *_RELATIVE)
            if every is None
            else [(part, link) for part, link in every if link.status in _RELATIVE]
        )
        for part, link in left:
            outcome.details.append(
                Problem(
                    "unresolvable",
                    f"<{link.element} {link.attribute}> {link.original!r} at bytes {link.start}-{link.end}: "
                    f"{link.status}: {link.reason}",
                    (*where, f"part {part}") if part else where,
                )
            )
    if every is not None:
        for part, link in every:
            record: dict[str, object] = {"file": outcome.shown, **extra}
            if message:
                record["part"] = part
            record.update(link._asdict())
            outcome.records.append(record)


def _rows(result: DocumentResult | MessageResult, fmt: str, extra: dict[str, object]) -> list[dict[str, object]]:
    """``explain``'s rows: for each MIME part (or the one document) its type, what was done,
    its base, the layer that gave it (and the part whose heading did), and its link counts."""
    entries: list[tuple[str, str, str | None, Layer | None, str | None, tuple[Link, ...], str]]
    if isinstance(result, DocumentResult):
        kind = "text/css" if fmt == "css" else "text/html"
        entries = [("", kind, result.base, result.layer, None, result.links, "document")]
    else:
        entries = [(p.path, p.content_type, p.base, p.layer, p.origin, p.links, p.action) for p in result.parts]
    rows: list[dict[str, object]] = []
    for path, kind, base, layer, origin, links, action in entries:
        counts = Counter(link.status for link in links)
        relative = sum(counts[status] for status in _RELATIVE)
        rows.append(
            {
                **extra,
                "path": path,
                "type": kind,
                "action": action,
                "base": base,
                "layer": layer,
                "origin": origin,
                "links": len(links),
                "rewritten": counts["rewritten"] + counts["relinked"],
                "kept": len(links) - counts["rewritten"] - counts["relinked"] - relative,
                "relative": relative,
            }
        )
    return rows


def totals(outcomes: Iterable[Outcome]) -> dict[str, int]:
    """The closing summary's figures."""
    names = ("files", "rewritten_files", "unchanged_files", "failed_files", "relative_files", "rewritten", "kept")
    figures = dict.fromkeys((*names, "local", "relative", "no_base", "bytes", "copied_files"), 0)
    for outcome in outcomes:
        count_into(figures, outcome)
    return figures


def count_into(figures: dict[str, int], outcome: Outcome) -> None:
    """Add *outcome* to *figures* (:func:`totals`'s): a run keeps its totals as the outcomes go
    by, without a tally of its own for each one."""
    if outcome.state == "copied":  # not an input: a file of its folder, copied beside the outputs
        figures["copied_files"] += 1
        return
    figures["files"] += 1
    figures[f"{outcome.state}_files"] += 1
    figures["relative_files"] += outcome.relative > 0
    figures["rewritten"] += outcome.rewritten
    figures["kept"] += outcome.kept
    figures["local"] += outcome.local
    figures["relative"] += outcome.relative
    figures["no_base"] += outcome.no_base
    figures["bytes"] += outcome.bytes_in
