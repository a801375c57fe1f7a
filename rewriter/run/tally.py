"""The tally: what the engines found in a job's documents, folded into its :class:`Outcome`.

Every container hands its documents over as uniform :class:`Unit` values (a file alone is
one unit; an mbox, a Maildir, a WARC written out or mirrored into a folder hand one per
message or record, told from their own reports by the ``*_units`` functions here), and one
function, :func:`fold`, counts them all: links rewritten, kept and left relative, what was
said of each, the bytes, whether anything changed. :func:`totals` and :func:`count_into`
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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rewriter.document.model import DocumentResult
from rewriter.problems import Problem, as_problem
from rewriter.run.jobs import Outcome, Settings

if TYPE_CHECKING:
    from rewriter.containers.mailbox import MaildirReport, MboxReport
    from rewriter.containers.warc import MirroredRecord, WarcDamage, WarcPage
    from rewriter.document.model import Link, MessageResult, Status
    from rewriter.url.base import Layer

__all__ = [
    "Tallied",
    "Unit",
    "count_into",
    "fold",
    "located_links",
    "maildir_units",
    "message_units",
    "mirror_units",
    "tally",
    "totals",
    "warc_units",
]


@dataclass(frozen=True, slots=True)
class Unit:
    """One document of a job, as its container hands it to the tally: where it is, what the
    engine made of it, what was said of it, its bytes, whether it changed."""

    # How its warnings, each link left relative, its records and its rows name it:
    # {"message": 3} in an mbox, {"record": url} in a WARC; {} for a file alone.
    where: Mapping[str, object]
    result: DocumentResult | MessageResult | None = None  # None: no engine read it through
    format: str = "html"  # what the engine read it as: html, css, message
    problems: Sequence[str] | None = None  # its warnings, said under *where* (None: the result's own)
    errors: Sequence[str] = ()  # what went wrong, always said, as the container words it
    failed: bool = False  # nothing (or not all) came of it: the outcome is not ok
    bytes_in: int = 0
    bytes_out: int = 0
    changed: bool = False  # its output differs from its input (and was written, when written)
    report: dict[str, object] | None = field(default=None, compare=False)  # its own report (Settings.units)


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


def message_units(reports: Iterable[MboxReport], settings: Settings) -> Iterator[Unit]:
    """An mbox's (or a piece's) messages as units: one the engine could not read (too large,
    or it failed on it) is kept as it was, and fails; the problems of one it read are its own
    and the mbox's (quoted From lines)."""
    for report in reports:
        where = {"message": report.index + 1}
        own = _report_dict(report) if settings.units else None
        if report.result is None:
            errors = [f"message {report.index + 1}: {problem}" for problem in report.problems]
            yield Unit(
                where,
                errors=errors,
                failed=True,
                bytes_in=report.size,
                bytes_out=report.output_size,
                changed=report.changed,
                report=own,
            )
        else:
            yield Unit(
                where,
                report.result,
                "message",
                report.problems,
                bytes_in=report.size,
                bytes_out=report.output_size,
                changed=report.changed,
                report=own,
            )


def _report_dict(report: MboxReport) -> dict[str, object]:
    """One message's report as a plain dict (the engine's result left out)."""
    from dataclasses import fields

    return {
        item.name: list(value) if isinstance(value := getattr(report, item.name), tuple) else value
        for item in fields(report)
        if item.name != "result"
    }


def maildir_units(reports: Iterable[MaildirReport], folder: Path, *, dry: bool, in_place: bool) -> Iterator[Unit]:
    """A Maildir's message files as units, each named by its path in the Maildir. Its problems
    are always said (each names its file); nothing written is a failure, but for a message
    left alone in place on purpose."""
    for report in reports:
        size = report.path.stat().st_size if report.path.exists() else 0
        unwritten = not dry and report.target is None and not (in_place and not report.changed)
        yield Unit(
            {"message": str(report.path.relative_to(folder))},
            report.result,
            "message",
            errors=report.problems,
            failed=report.result is None or unwritten,
            bytes_in=size,
            changed=report.changed and not unwritten,
        )


def warc_units(items: Iterable[WarcPage | WarcDamage]) -> Iterator[Unit]:
    """A WARC's (or ARC's) pages as units, each named by its record's URI, and each damaged
    part as a unit that fails, named by its offset. A page's warnings are its record's, then
    the engine's; one whose body could not be read or rewritten fails."""
    from rewriter.containers.warc import WarcDamage

    for item in items:
        if isinstance(item, WarcDamage):
            yield Unit({"offset": item.offset}, errors=[f"offset {item.offset}: {item.problem}"], failed=True)
        elif item.result is None:
            errors = [f"record {item.uri}: {problem}" for problem in item.problems]
            yield Unit({"record": item.uri}, errors=errors, failed=True, bytes_in=item.size)
        else:
            problems = (*item.problems, *item.result.problems)
            yield Unit(
                {"record": item.uri}, item.result, item.format, problems, bytes_in=item.size, changed=item.converted
            )


def mirror_units(records: Iterable[MirroredRecord]) -> Iterator[Unit]:
    """The records of a WARC mirrored into a folder as units, each named by its URL: its
    problems are said once for the whole plan (by the job), not here."""
    for record in records:
        yield Unit(
            {"record": record.url},
            record.result,
            record.format or "html",
            (),
            bytes_in=record.size,
            changed=record.written,
        )


def located_links(result: DocumentResult | MessageResult, *statuses: Status) -> list[tuple[str, Link]]:
    """(where, link) for every link of *result* (with *statuses*: those that have one of
    them, whose byte spans alone are worked out): the part path for a message, "" for a document."""
    if isinstance(result, DocumentResult):
        return [("", link) for link in (result.links_with(*statuses) if statuses else result.links)]
    parts = result.parts
    return [(part.path, link) for part in parts for link in (part.links_with(*statuses) if statuses else part.links)]


_RELATIVE: tuple[Status, ...] = ("no-base", "unresolvable")  # links left relative


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
    counts: Counter[str] = Counter()
    for counted in (result,) if isinstance(result, DocumentResult) else result.parts:
        counts.update(counted.status_counts)
    outcome.rewritten += counts["rewritten"]
    relative = sum(counts[status] for status in _RELATIVE)
    outcome.relative += relative
    outcome.no_base += counts["no-base"]
    outcome.kept += counts.total() - counts["rewritten"] - relative
    outcome.local += counts["local"]
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
