"""A run's types: what every job shares (:class:`Settings`), one job (:class:`Job`), what
came of it (:class:`Outcome`), and an outcome as the journal keeps it (:func:`outcome_json`,
:func:`outcome_from_json`, checked on the way back by :func:`outcome_problem`).

Kept apart from the planner and the work so that every module of a run (the pipeline, the
journal, the executors, Dask) reads the same types without importing what does the jobs.

>>> outcome = Outcome("page.html", state="rewritten", rewritten=2)
>>> outcome_json(outcome)
{'shown': 'page.html', 'state': 'rewritten', 'rewritten': 2}
>>> outcome_from_json(outcome_json(outcome)) == outcome
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from rewriter.containers.pieces import MAX_DOCUMENT, Piece
from rewriter.disk.listings import Listings
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import as_problem, said_from_json, said_json

if TYPE_CHECKING:
    from rewriter.run.collection import LocalCopies, Locations

__all__ = [
    "WHOLE_FORMATS",
    "Job",
    "Outcome",
    "Settings",
    "State",
    "Unrecognised",
    "job_key",
    "outcome_from_json",
    "outcome_json",
    "outcome_problem",
]


# "passed": a file its job found to be no input (Job.untold), never counted: the pipeline drops it.
State = Literal["rewritten", "unchanged", "failed", "copied", "passed"]

# The formats whose engine takes a document's bytes at once (an mbox and a web archive are
# streamed): a small file of one of them is read whole by the planner (Job.data).
WHOLE_FORMATS = frozenset({"html", "css", "message", "emlx"})


class Unrecognised(ValueError):
    """The input is neither HTML, CSS, a MIME message nor an mbox."""


@dataclass(frozen=True, slots=True)
class Settings:
    """What every job of a run shares (immutable, and sent to each worker once)."""

    policy: Policy = DEFAULT_POLICY
    url: str | None = None  # the retrieval URL (RFC 1808 §3.3)
    charset: str | None = None  # a transport charset
    format: str = "auto"  # auto, html, css, message, mbox
    backup: str | None = None  # in place: keep the old file as NAME + this suffix
    records: bool = False  # gather every link for a report
    # A document larger than this is not held in memory: it is copied unchanged and reported
    # (an mbox is streamed whatever its size; each of its messages has this limit too).
    max_size: int = MAX_DOCUMENT
    # Each file's own retrieval URL (--url-root, --url-map), asked before *url*.
    locations: Locations | None = None
    # Keep a page's relative references to files of its input folder as written (status
    # "local"); False: --absolutize-local.
    local_copies: bool = True
    # One document's local copies (set per job by job_settings, for HTML and CSS).
    local: LocalCopies | None = None
    # What the input folders hold, each read once for the run (local copies are told from it).
    listings: Listings | None = field(default_factory=Listings, compare=False, repr=False)
    # *url* is a collection's (--url-root, --url-map): a page's saved-from mark wins over it, as
    # its <base> does (the mark says where this very page came from; the layout only suggests it).
    url_from_collection: bool = False
    # Gather each document's or part's base and counts (rows of ``rewriter explain``).
    explain: bool = False
    # The records go back as JSON Lines text (Outcome.report), made in the worker: the
    # caller only writes them (--report), holding no dict of them.
    report_text: bool = False
    # The run's work folder (rewriter.run.journal), where a piece of a container writes its output.
    work: str | None = None
    # Each message of an mbox as a record of its own (Outcome.units: rewriter.run.dask).
    units: bool = False
    # fsync each file written (and its folder after the rename), so that it survives a crash
    # of the system; False: --no-fsync (still atomic for readers and for a killed run).
    sync: bool = True


@dataclass(frozen=True, slots=True)
class Job:
    """One input and where its output goes.

    *source* is a path or ``-`` (standard input); *target* a path (the source itself
    in place) or None for standard output; *shown* is how messages name it.
    """

    source: str
    target: str | None
    shown: str
    maildir: bool = False
    in_place: bool = False  # --in-place: the target is the source, replaced only when it changes
    # The folder of the tree the target lies in (-o DIR, or the folder rewritten in place): no
    # symbolic link below it is followed when the target's folders are made and opened.
    root: str | None = None
    # The input folder the source was found in (a file named alone: its own folder): the
    # collection its retrieval URL and its local copies are told from. None for stdin.
    tree: str | None = None
    # Nothing is written: each document is read and its links found (``links``, ``explain``),
    # through the same steps as a rewrite. A WARC's pages are read too.
    dry: bool = False
    # A file of a folder that is not rewritten, copied unchanged into the output folder.
    copy: bool = False
    # What the file is (rewriter.containers.formats.what_file_is: html, css, message, mbox,
    # warc, arc or other), told once by the planner from its head, and why; None: told by the
    # job from the stream it reads (standard input, a named pipe, a file the planner could
    # not read, which the job then names).
    format: str | None = None
    why: str | None = None
    # A piece of a large container (its bytes [start, end)), done as a job of its own.
    piece: Piece | None = None
    # The input's status when it was planned: in place, for a container done in pieces, a file
    # changed since is left as it is; with *data*, the status of the descriptor it was read from.
    status: os.stat_result | None = None
    # A small file's bytes, read whole by the planner when it told what the file is (its job
    # reads them from here, not from the file again; in place, *status* is the descriptor's).
    data: bytes | None = field(default=None, repr=False, compare=False)
    # A WARC (or ARC) whose records go to files in the folder *target* (a mirror, its pages
    # rewritten), not into a WARC: each piece writes its records by the plan of the whole file,
    # kept in the work folder (:func:`mirror_plan_path`; rewriter.run.pipeline.MirrorFolder).
    mirror: bool = False
    # A mirror that unpacks (``rewriter unpack``): every resource written, each link the archive
    # answers pointed at its file (rewriter.containers.warc.unpack_warc); not only the pages.
    unpack: bool = False
    # The input's size when the planner read it (None: not read): what sizes its batch
    # (rewriter.run.pipeline.Batching), without a stat call.
    size: int | None = None
    # A small file of a folder the planner did not read (its jobs run in other processes, which
    # read it anyway): its job tells what it is (rewriter.run.plan.told) and, when it is no
    # document, copies it ("copy": the run copies the others) or passes over it ("pass"), as the
    # planner would have; "passed": told, passed over (its outcome is no one's, the pipeline drops it).
    untold: Literal["copy", "pass", "passed"] | None = None

    # Pickled in batches to the worker processes: by one attrgetter call, not the dataclass's
    # own state functions, which look up the fields of the class for each job.
    def __getstate__(self) -> tuple[object, ...]:
        return _job_state(self)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for name, value in zip(_JOB_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)


_JOB_FIELDS = tuple(Job.__dataclass_fields__)
_job_state = attrgetter(*_JOB_FIELDS)


@dataclass(slots=True)
class Outcome:
    """What happened to one job: its messages for standard error, its counts, its links."""

    shown: str
    state: State = "unchanged"
    ok: bool = True  # False: something failed, or links stayed relative
    # What went wrong (always said), and what the engines left as it was, and why (not with
    # -q): Problem records, the file first in their where (rewriter.problems.said renders
    # each for standard error).
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rewritten: int = 0  # links made absolute
    kept: int = 0  # links left as they were on purpose (absolute, same-document, local, part)
    local: int = 0  # of those kept: local copies (status "local")
    relative: int = 0  # links left relative: no base, or unresolvable
    no_base: int = 0  # of those: for want of a base
    bytes_in: int = 0
    bytes_out: int = 0
    records: list[dict[str, object]] = field(default_factory=list)
    output: bytes | None = None  # the output, for a job whose target is standard output
    details: list[str] = field(default_factory=list)  # each link left relative, for -v (Problem records too)
    format: str | None = None  # what the input was: html, css, message, mbox, maildir, warc, arc, other
    why: str | None = None  # explain: why it was taken for that (what_file_is's reason)
    rows: list[dict[str, object]] = field(default_factory=list)  # explain: each document or part
    report: str = ""  # the records as JSON Lines (Settings.report_text)
    # ... or, when they are many, the file in the run's work folder that holds them (so that
    # neither the executor's pipes nor the caller's memory carry them)
    report_file: str | None = None
    # What a resumed run must find at the source to take this outcome as done: (size,
    # modification time) of the input read, or in place of the file written.
    identity: tuple[int, int] | None = None
    retried: str | None = None  # why the job was done a second time (its worker died)
    resumed: bool = False  # taken from the journal of a run that was stopped
    piece: Piece | None = None  # the piece of a container this outcome is of
    units: list[dict[str, object]] = field(default_factory=list)  # each message's report (Settings.units)

    # Pickled back from the worker processes, one a job: by one attrgetter call, not the
    # dataclass's own state functions, which look up the fields of the class for each outcome.
    def __getstate__(self) -> tuple[object, ...]:
        return _outcome_state(self)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for name, value in zip(_OUTCOME_SLOTS, state, strict=True):
            setattr(self, name, value)

    def weight(self) -> int:
        """About how many bytes this outcome holds (records, messages, output)."""
        return (
            len(self.report)
            + sum(len(line) for line in self.details)
            + 200 * (len(self.records) + len(self.rows) + len(self.messages) + len(self.warnings))
            + len(self.output or b"")
            + 200
        )

    def fail(self, message: str, code: str = "input") -> Outcome:
        """This outcome failed: *message* (a Problem, else a problem of *code*) said of its file."""
        self.state, self.ok = "failed", False
        self.messages.append(as_problem(message, code).at(self.shown))
        return self

    def left_relative(self) -> str | None:
        """The one line that says how many links of this file stayed relative, and why
        (None when none did); each of them is in :attr:`details`.

        >>> print(Outcome("page.html", relative=3, no_base=2).left_relative())  # doctest: +NORMALIZE_WHITESPACE
        rewriter: page.html: 3 links left relative: 2 with no base (give --url, --url-root or --canonical-base),
        1 unresolvable (see -v or --report)
        """
        if not self.relative:
            return None
        unresolvable = self.relative - self.no_base
        why = []
        if self.no_base:
            count = f"{self.no_base:,} with " if unresolvable else ""
            why.append(f"{count}no base (give --url, --url-root or --canonical-base)")
        if unresolvable:
            count = f"{unresolvable:,} " if self.no_base else ""
            why.append(f"{count}unresolvable (see -v or --report)")
        plural = "" if self.relative == 1 else "s"
        return f"rewriter: {self.shown}: {self.relative:,} link{plural} left relative: {', '.join(why)}"


_OUTCOME_SLOTS = tuple(Outcome.__dataclass_fields__)
_outcome_state = attrgetter(*_OUTCOME_SLOTS)


def job_key(job: Job, *, whole: bool = False) -> str:
    """What names *job* in a journal: its input and output, and for a piece its first byte
    (*whole*: the container's, without the piece)."""
    key = f"{job.source}\0{job.target}\0{'dry' if job.dry else 'unpack' if job.unpack else 'write'}"
    if job.piece is not None and not whole:
        key += f"\0{job.piece.start}"
    return key


_OUTCOME_FIELDS = (
    "shown",
    "state",
    "ok",
    "messages",
    "warnings",
    "rewritten",
    "kept",
    "local",
    "relative",
    "no_base",
    "bytes_in",
    "bytes_out",
    "records",
    "details",
    "format",
    "why",
    "rows",
    "report",
    "report_file",
    "retried",
)


def outcome_json(outcome: Outcome) -> dict[str, object]:
    """*outcome* as plain JSON values, for the journal (its standard-output bytes aside): the
    fields that are not their default, which :func:`outcome_from_json` gives back (a page's
    line is a third as long, and a third of the time to write)."""
    value: dict[str, object] = {"shown": outcome.shown}
    for name, default in _OUTCOME_DEFAULTS:
        field_value = getattr(outcome, name)
        if field_value != default:
            value[name] = [said_json(item) for item in field_value] if name in SAID_FIELDS else field_value
    if outcome.identity is not None:
        value["identity"] = list(outcome.identity)
    piece = outcome.piece
    if piece is not None:
        value["piece"] = [piece.start, piece.end, piece.first, piece.number, piece.last]
    return value


_OUTCOME_DEFAULTS = tuple((name, getattr(Outcome("x"), name)) for name in _OUTCOME_FIELDS if name != "shown")


_OUTCOME_TYPES: dict[str, type] = {
    "shown": str,
    "state": str,
    "ok": bool,
    "messages": list,
    "warnings": list,
    "details": list,
    "records": list,
    "rows": list,
    "report": str,
    "format": str,
    "why": str,
    "report_file": str,
    "retried": str,
}
_STATES = frozenset(get_args(State))  # every state a run gives, "passed" included (a resumed run's)
_COUNTS = ("rewritten", "kept", "local", "relative", "no_base", "bytes_in", "bytes_out")
_LARGEST = 1 << 63  # counts and sizes are 64-bit integers


def outcome_problem(value: dict[str, object], report_file: Path, *, piece: bool) -> str | None:
    """Why *value*, an outcome read back from a journal, is not one :func:`outcome_json` writes
    (each field checked: its type, its range, no field but theirs); None when it is one. The
    one file it may name is *report_file*, the work folder's for its job; *piece*: whether
    its job is a piece of a container.

    >>> outcome_problem({"shown": "a", "kept": -1}, Path("r"), piece=False)
    "its outcome's kept is not a count"
    """
    if "shown" not in value:
        return "its outcome has no shown"
    for name, field_value in value.items():
        problem = _field_problem(name, field_value)
        if problem is not None:
            return problem
    if value.get("state", "unchanged") not in _STATES:
        return "its outcome's state is not one a run gives"
    if "report_file" in value and value["report_file"] != str(report_file):
        return f"its outcome names a file that is not this run's report of the job ({value['report_file']!r})"
    if "piece" in value and not piece:
        return "its outcome is of a piece, and its job is not"
    return None


_KNOWN = frozenset((*_OUTCOME_FIELDS, "identity", "piece"))


def _field_problem(name: str, value: object) -> str | None:
    """Why one field of an outcome read back is not one :func:`outcome_json` writes, or None."""
    if name not in _KNOWN:
        return f"its outcome has an unknown field {name[:40]!r}"
    if name in _COUNTS:
        return None if type(value) is int and 0 <= value < _LARGEST else f"its outcome's {name} is not a count"
    if name in ("identity", "piece"):
        return _integers_problem(name, value)
    kind = _OUTCOME_TYPES[name]
    if not isinstance(value, kind) or (name != "ok" and type(value) is bool):
        return f"its outcome's {name} is not a {kind.__name__}"
    if name in SAID_FIELDS and not all(_said_problem(item) is None for item in value):  # type: ignore[attr-defined]
        return f"its outcome's {name} are not all text or problems"
    if name in ("records", "rows") and not all(isinstance(item, dict) for item in value):  # type: ignore[attr-defined]
        return f"its outcome's {name} are not all objects"
    return None


# The fields of an outcome that hold what is said of it: each a Problem (its JSON in a journal,
# so that a resumed run says it with its code), or a line said as it is.
SAID_FIELDS = ("messages", "warnings", "details")


def _said_problem(item: object) -> str | None:
    """Why *item*, one of an outcome's messages read back, is neither text nor a problem, or None."""
    try:
        said_from_json(item)
    except ValueError as error:
        return str(error)
    return None


def _integers_problem(name: str, value: object) -> str | None:
    """Why an identity (size, time) or a piece (start, end, first, number, last) read back is
    not one, or None."""
    size = 2 if name == "identity" else 5
    if (
        not isinstance(value, list)
        or len(value) != size
        or not all(type(item) is int and -_LARGEST <= item < _LARGEST for item in value[:4])
        or (name == "piece" and type(value[4]) is not bool)
    ):
        return f"its outcome's {name} is not {size} integers"
    return None


def outcome_from_json(value: dict[str, object]) -> Outcome:
    """The :class:`Outcome` :func:`outcome_json` wrote."""
    outcome = Outcome(str(value["shown"]))
    for name in _OUTCOME_FIELDS:
        if name in value:
            field_value = value[name]
            if name in SAID_FIELDS and isinstance(field_value, list):
                field_value = [said_from_json(item) for item in field_value]
            setattr(outcome, name, field_value)
    identity = value.get("identity")
    if isinstance(identity, list) and len(identity) == 2:
        outcome.identity = (int(identity[0]), int(identity[1]))
    piece = value.get("piece")
    if isinstance(piece, list) and len(piece) == 5:
        outcome.piece = Piece(int(piece[0]), int(piece[1]), int(piece[2]), int(piece[3]), bool(piece[4]))
    return outcome
