"""A WARC written into a folder (:func:`rewrite_warc`, :func:`unpack_warc`) in three steps a run
of the pipeline does apart: :func:`plan_mirror` (every file's name), :func:`write_mirror_piece`
(the records of one piece, by that plan), :func:`finish_mirror` (``manifest.json``, the report)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from rewriter.bundle.unpack import declare_charset
from rewriter.containers.pieces import PIECE_SIZE, Piece
from rewriter.containers.warc.layout import (
    _Folders,
    _has_host,
    _is_web,
    _layout,
    _naming_type,
    _plan_names,
    _Planned,
    _relative,
)
from rewriter.containers.warc.model import MAX_BODY, Wanted, WarcDamage, WarcDocument, _clean, _success
from rewriter.containers.warc.read import _Record, _records, _source_events, _Whole
from rewriter.containers.warc.redirects import follow_redirects, redirect_map
from rewriter.disk.files import not_written, open_regular
from rewriter.disk.names import Folder
from rewriter.document.engines import DOCUMENT_TYPES, engine_for_type
from rewriter.document.model import Unit
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem, as_problem, said_from_json, said_json
from rewriter.url.resolve import UnresolvableReference, resolve, url_key

if TYPE_CHECKING:
    from rewriter.document.model import DocumentResult


MANIFEST = "manifest.json"


@dataclass(frozen=True, slots=True)
class WarcEntry:
    """What one record became: ``file`` is its path under the output folder (POSIX
    separators), None when it was not written; ``location`` the resolved Location of a
    redirect. A damaged part of the file is an entry with no ``url``."""

    url: str | None
    file: str | None
    status: int | None
    content_type: str | None
    offset: int
    problems: tuple[str, ...] = ()
    location: str | None = None
    links: int = 0  # links rewritten (or relinked) in it


@dataclass(frozen=True, slots=True)
class WarcReport:
    """The outcome of :func:`rewrite_warc` or :func:`unpack_warc`."""

    warc: Path
    out_dir: Path
    manifest: str | None  # its name under out_dir, None when it could not be written
    entries: tuple[WarcEntry, ...]  # in file order
    documents: tuple[str, ...]  # the files written, in file order
    links: int  # links rewritten or relinked
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def files(self) -> dict[str, str]:
        """Each URL written → its file under out_dir (what ``manifest.json`` records)."""
        return {entry.url: entry.file for entry in self.entries if entry.url is not None and entry.file is not None}

    def summary(self) -> str:
        """One line: what was written.

        >>> WarcReport(Path("a.warc"), Path("out"), MANIFEST, (), ("h/index.html",), 3, ()).summary()
        '1 file written (3 links rewritten or relinked), no problem'
        """
        files = len(self.documents)
        problems = len(self.problems)
        return (
            f"{files} file{'s' if files != 1 else ''} written ({self.links} link{'s' if self.links != 1 else ''} "
            f"rewritten or relinked), {problems or 'no'} problem{'s' if problems > 1 else ''}"
        )


def rewrite_warc(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_BODY,
) -> WarcReport:
    """Write each HTML and CSS page of the WARC at *path* (2xx responses and resource records
    of a web URL: http, https, ftp) under *out_dir*, its relative links made absolute against its
    own ``WARC-Target-URI``.

    Each output is ``rewrite_html(body, url=target_uri, charset=charset, policy=policy)``
    (``rewrite_css`` for a style sheet) of the decoded body; see the module docstring for
    the layout. The WARC is only read; nothing is raised for what it holds. A body whose decoded
    bytes are more than *max_size* is not read, and its record is named (see :func:`iter_documents`).
    """
    return _mirror(Path(path), Path(out_dir), policy, max_size, unpack=False)


def unpack_warc(
    path: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_BODY,
) -> WarcReport:
    """Write every resource of the WARC at *path* (2xx responses and resource records) under
    *out_dir*, as a mirror a browser can read offline. Only what a web URL names (http, https,
    ftp) is written: a record of no web page (wget's ``metadata://`` records, ``dns:``) has an
    entry that says so (a problem coded ``not-a-document``, which the report's ``problems``
    leave out), and one entry says how many ``warcinfo``, ``request`` and ``metadata`` records
    there are, none of them written.

    HTML and CSS are rewritten with ``policy.clone(remove_base=True, relink=...)``: a link
    whose absolute URL the WARC holds, directly or through its recorded redirects, becomes
    the relative path from the document's folder to that file (percent-encoded, fragment
    kept); every other link is made absolute. An HTML page whose charset only HTTP gave,
    and which a browser reading the file would guess otherwise, gets a ``<meta charset>``
    first. A body whose decoded bytes are more than *max_size* is not written, and its record is
    named (see :func:`iter_documents`).
    """
    return _mirror(Path(path), Path(out_dir), policy, max_size, unpack=True)


def _mirror(warc: Path, out_dir: Path, policy: Policy, limit: int, *, unpack: bool) -> WarcReport:
    try:
        plan = plan_mirror(warc, out_dir, policy=policy, max_size=limit, unpack=unpack)
    except OSError as error:
        problem = f"cannot write into {out_dir}: {error.strerror or error}"
        return WarcReport(warc, out_dir, None, (), (), 0, (problem,))
    for _ in write_mirror_piece(plan, None, policy=policy, max_size=limit):
        pass
    return finish_mirror(plan)


class MirrorPlan:
    """The first pass of a mirror (:func:`plan_mirror`): every record worth an entry of the
    manifest, in file order, the file of each record to write picked under the output folder
    (``file``), and the manifest's name. The second pass (:func:`write_mirror_piece`) writes
    the records of a piece of the file by it, so that pieces are written independently and
    in any order; :func:`finish_mirror` writes the manifest. A run in pieces keeps it as JSON
    (:meth:`head_json`, :meth:`entries_json`): a resumed run writes the names the killed one
    picked, which the files it wrote have taken since."""

    def __init__(
        self, warc: str, out_dir: str, unpack: bool, manifest: str, entries: list[_Planned], problems: list[str]
    ) -> None:
        self.warc, self.out_dir, self.unpack, self.manifest = warc, out_dir, unpack, manifest
        self.entries = entries  # in file order
        self.problems = problems  # the mirror's own (the manifest's name)
        self.files: dict[str, str] = {}  # each URL written -> its file (unpack: what links are relinked to)
        self.redirects: dict[str, str] = {}
        self.whole: int | None = None  # where the file is read as one gzip stream from (see _Whole)
        self.identity: tuple[int, int] | None = None  # the archive's (size, mtime) when planned, for a run
        self.pieces: list[Piece] = [Piece(0, 0, 0, 0, last=True)]  # what plan_warc gives (plan_mirror)

    def relinked(self, policy: Policy) -> None:
        """Fill :attr:`files` and :attr:`redirects` from the entries (unpack relinks by them)."""
        self.files = {item.key: item.file for item in self.entries if item.file is not None}
        self.redirects = redirect_map(
            (WarcDocument(e.url, e.status, None, None, None, e.sent, e.offset) for e in self.entries if e.location),
            rules=policy.rules,
            strict=policy.strict,
        )

    def holds(self, entry: _Planned, piece: Piece | None) -> bool:
        """Whether *entry*'s record is read by *piece* (None: the whole file); each entry is of
        one piece. Past the point where the file is one gzip stream, offsets count decompressed
        bytes: those records are the last piece's, which runs to the end."""
        if piece is None:
            return True
        if self.whole is not None and entry.whole:
            return piece.last
        return piece.start <= entry.offset and (piece.last or entry.offset < piece.end)

    def head_json(self) -> dict[str, object]:
        """What every piece needs: the files, the manifest's name, the redirects to follow."""
        return {
            "warc": self.warc,
            "out_dir": self.out_dir,
            "unpack": self.unpack,
            "manifest": self.manifest,
            "problems": [said_json(problem) for problem in self.problems],
            "files": self.files,
            "redirects": self.redirects,
            "whole": self.whole,
            "pieces": [[piece.start, piece.end, piece.first, piece.number, piece.last] for piece in self.pieces],
            "identity": None if self.identity is None else list(self.identity),
        }

    def entries_json(self, piece: Piece | None) -> list[list[object]]:
        """The entries of *piece*, as JSON arrays."""
        return [
            [e.offset, e.url, e.key, e.status, e.content_type, e.file, _said(e.problems), e.location, e.sent, e.whole]
            for e in self.entries
            if self.holds(e, piece)
        ]

    @classmethod
    def from_json(cls, head: object, entries: Iterable[object]) -> MirrorPlan:
        """The plan :meth:`head_json` and :meth:`entries_json` wrote (each value checked:
        the work folder is as untrusted as the tree it lies in); ValueError when it is not one."""
        head = _head_from_json(head)
        texts = [str(head[name]) for name in ("warc", "out_dir", "manifest")]
        files, redirects, problems, whole = head["files"], head["redirects"], head["problems"], head.get("whole")
        plan = cls(texts[0], texts[1], bool(head["unpack"]), texts[2], [], list(problems))
        plan.files, plan.redirects, plan.whole = dict(files), dict(redirects), whole
        plan.pieces = [_piece_from_json(value) for value in _listed(head.get("pieces"))] or plan.pieces
        identity = head.get("identity")
        if isinstance(identity, list) and len(identity) == 2 and all(type(value) is int for value in identity):
            plan.identity = (identity[0], identity[1])
        plan.entries = [_entry_from_json(value) for value in entries]
        return plan


def _head_from_json(head: object) -> dict[str, Any]:
    """*head* (what :meth:`MirrorPlan.head_json` wrote), each value checked; ValueError when it is not one."""
    if not isinstance(head, dict):
        raise ValueError("a mirror's plan is an object")
    texts = [head.get(name) for name in ("warc", "out_dir", "manifest")]
    if not all(isinstance(text, str) for text in texts) or not isinstance(head.get("unpack"), bool):
        raise ValueError("a mirror's plan names its archive, its folder and its manifest")
    for mapping in (head.get("files"), head.get("redirects")):
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in (*mapping, *mapping.values())):
            raise ValueError("a mirror's plan maps URLs to names")
    problems = head.get("problems")
    if not isinstance(problems, list):
        raise ValueError("a mirror's problems are text or problems")
    head["problems"] = [said_from_json(problem) for problem in problems]  # ValueError: not one
    whole = head.get("whole")
    if whole is not None and type(whole) is not int:
        raise ValueError("a mirror's plan says where the file is one gzip stream by an offset")
    return head


def _said(problems: list[str]) -> list[object]:
    return [said_json(problem) for problem in problems]


def _listed(value: object) -> list[object]:
    if not isinstance(value, list):
        raise ValueError("a mirror's pieces are a list")
    return value


def _piece_from_json(value: object) -> Piece:
    if (
        not isinstance(value, list)
        or len(value) != 5
        or not all(type(number) is int and number >= 0 for number in value[:4])
        or type(value[4]) is not bool
    ):
        raise ValueError("a mirror's piece is four offsets and whether it is the last")
    return Piece(value[0], value[1], value[2], value[3], last=value[4])


def _entry_from_json(value: object) -> _Planned:
    if not isinstance(value, list) or len(value) != 10:
        raise ValueError("a mirror's entry is an array of 10 values")
    offset, url, key, status, content_type, file, problems, location, sent, whole = value
    if type(offset) is not int or not isinstance(url, str) or not isinstance(key, str):
        raise ValueError("a mirror's entry has an offset, a URL and its key")
    if (status is not None and type(status) is not int) or type(whole) is not bool:
        raise ValueError("a mirror's entry has a status")
    if not all(text is None or isinstance(text, str) for text in (content_type, file, location, sent)):
        raise ValueError("a mirror's entry has a type, a file, a Location")
    if not isinstance(problems, list):
        raise ValueError("a mirror's entry's problems are text or problems")
    problems = [said_from_json(problem) for problem in problems]  # ValueError: not one
    if file is not None and any(name in ("", ".", "..") or "\0" in name for name in file.split("/")):
        raise ValueError(f"a mirror's file is a path of plain names, not {file[:80]!r}")
    entry = _Planned(offset, url, key, status, content_type, (), "", None, file=file, problems=list(problems))
    entry.location, entry.sent, entry.whole = location, sent, whole
    return entry


@dataclass(frozen=True, slots=True)
class MirroredRecord:
    """What the second pass did with one record to write: ``written`` whether its file is there
    (a run done again finds the file it wrote before, and takes it as written when its bytes are
    the same); ``links`` rewritten or relinked; ``problems`` of this pass; ``result`` the engine's
    (None for what no engine reads, or when the record was not rewritten); ``size`` its body's bytes."""

    offset: int
    url: str
    file: str
    written: bool
    links: int
    problems: tuple[str, ...]
    format: str | None
    size: int
    result: DocumentResult | None = field(repr=False)

    def unit(self) -> Unit:
        """This record as the run's tally takes it, named by its URL: its problems are said
        once for the whole plan (by the job), not here."""
        return Unit(
            {"record": self.url}, self.result, self.format or "html", (), bytes_in=self.size, changed=self.written
        )


def plan_mirror(
    warc: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    policy: Policy = DEFAULT_POLICY,
    max_size: int = MAX_BODY,
    unpack: bool = False,
    piece_size: int = PIECE_SIZE,
) -> MirrorPlan:
    """The first pass of :func:`rewrite_warc` (*unpack*: :func:`unpack_warc`): every record read,
    the files of those to write picked (their folders made) in *out_dir*, which is made, and the
    pieces of *piece_size* the second pass may be done in (``pieces``: :func:`plan_warc`'s,
    from the same reading). Raises OSError when *out_dir* cannot be."""

    def candidate(offset: int, kind: str, uri: str, status: int | None, content_type: str | None) -> bool:
        if not _success(kind, status) or not _is_web(uri):
            return False
        return unpack or content_type in DOCUMENT_TYPES

    with Folder(Path(out_dir)) as root:
        problems: list[str] = []
        manifest = root.pick(MANIFEST)
        if manifest != MANIFEST:
            problems.append(f"{out_dir} already holds {MANIFEST}: the manifest is {manifest}")
        plan = MirrorPlan(os.fspath(warc), os.fspath(out_dir), unpack, manifest, [], problems)
        planned = _plan(Path(warc), candidate, plan, policy, max_size, piece_size)
        _plan_names(root, planned)
    if unpack:
        plan.relinked(policy)
    return plan


def write_mirror_piece(
    plan: MirrorPlan, piece: Piece | None, *, policy: Policy = DEFAULT_POLICY, max_size: int = MAX_BODY
) -> Iterator[MirroredRecord]:
    """The second pass for *piece* of the file (None: the whole file): each record of it that the
    plan writes, its body read again, HTML and CSS rewritten (relinked to the mirror when
    unpacking), written to its file; yielded in file order. The plan's entries take what was done."""
    by_offset = {item.offset: item for item in plan.entries if item.file is not None and plan.holds(item, piece)}
    if not by_offset:
        return
    start, end = (None, None) if piece is None else (piece.start, None if piece.last else piece.end)
    with Folder(Path(plan.out_dir)) as root:
        folders = _Folders(root)
        try:
            for item in _piece_documents(plan.warc, lambda offset, *_: offset in by_offset, start, end, max_size):
                entry = by_offset.get(item.offset)
                if entry is None or entry.written:
                    continue
                before = len(entry.problems)
                output, result, fmt = _rendered(entry, item, policy, plan)
                if output is not None:
                    _store(folders, entry, output)
                yield MirroredRecord(
                    entry.offset,
                    entry.url,
                    entry.file or "",
                    entry.written,
                    entry.links,
                    tuple(entry.problems[before:]),
                    fmt,
                    len(item.body or b""),
                    result,
                )
        finally:
            folders.close()


def _piece_documents(
    warc: str, wanted: Wanted, start: int | None, end: int | None, limit: int
) -> Iterator[WarcDocument]:
    """The documents *wanted* of the records that begin in [*start*, *end*) (None: from the
    first, to the last) of the file at *warc*, read once each."""
    try:
        stream = open(warc, "rb")  # noqa: SIM115 - the with below closes it
    except OSError:
        return  # its records are not written; the first pass named an unreadable file
    with stream:
        for event in _records(stream, wanted, start=start, end=end, limit=limit):
            if isinstance(event, _Record) and not event.again and isinstance(event.item, WarcDocument):
                yield event.item


def finish_mirror(plan: MirrorPlan) -> WarcReport:
    """The last step of a mirror: ``manifest.json`` (what each record became), and the report."""
    with Folder(Path(plan.out_dir)) as root:
        return _finish(Path(plan.warc), Path(plan.out_dir), root, plan.manifest, plan.entries, list(plan.problems))


def _finish(
    warc: Path, out_dir: Path, root: Folder, manifest: str, entries: list[_Planned], problems: list[str]
) -> WarcReport:
    """The last step of a mirror: each record's entry, ``manifest.json``, and the report."""
    frozen = tuple(
        WarcEntry(
            e.url or None,
            e.file if e.written else None,
            e.status,
            e.content_type,
            e.offset,
            tuple(e.problems),
            e.location,
            e.links,
        )
        for e in sorted(entries, key=lambda e: e.offset)
    )
    # What is no web page is said in its entry, not a problem of the report.
    problems.extend(problem for entry in frozen for problem in entry.problems if not _noted_only(problem))
    listing = [
        {
            "url": entry.url,
            "file": entry.file,
            "status": entry.status,
            "content_type": entry.content_type,
            "offset": entry.offset,
            "problems": list(entry.problems),
            **({"location": entry.location} if entry.location else {}),
        }
        for entry in frozen
    ]
    written: str | None = manifest
    data = json.dumps(listing, indent=1, ensure_ascii=False).encode("utf-8") + b"\n"
    try:
        root.write(manifest, data)
    except FileExistsError as error:  # a killed run's, of the same plan: taken when it is the same
        if not _holds(root.path, manifest, data):
            problems.append(f"{MANIFEST} {not_written(error)}")
            written = None
    except OSError as error:
        problems.append(f"{MANIFEST} {not_written(error)}")
        written = None
    documents = tuple(entry.file for entry in frozen if entry.file is not None)
    return WarcReport(warc, out_dir, written, frozen, documents, sum(e.links for e in frozen), tuple(problems))


def _plan(
    warc: Path, candidate: Wanted, plan: MirrorPlan, policy: Policy, limit: int, piece_size: int
) -> list[_Planned]:
    """The first pass: every record worth an entry (into *plan*), and those to write (first 2xx
    of each URL), returned; and the pieces of the file (into *plan*: as :func:`plan_warc` cuts)."""
    entries = plan.entries
    planned: list[_Planned] = []
    first: dict[str, int] = {}
    cut = _Cuts(piece_size)
    others = _Others()
    for event in _source_events(warc, candidate, limit):
        if isinstance(event, _Whole):
            plan.whole = event.position
            continue
        if isinstance(event, _Record) and not event.again:
            cut.record(event.offset, whole=plan.whole is not None)
        item = event if isinstance(event, WarcDamage) else event.item
        if item is None and isinstance(event, _Record) and not event.again and plan.unpack:
            others.note(event, whole=plan.whole is not None)
        if item is None or (isinstance(event, _Record) and event.again):
            continue
        if isinstance(item, WarcDamage):
            entries.append(_Planned(item.offset, "", "", None, None, (), "", None, problems=[item.problem]))
            entries[-1].whole = plan.whole is not None
            continue
        entry = _entry(item, candidate, plan, policy, first)
        if entry is None:
            continue
        if entry.leaf:  # laid out: a file to write
            planned.append(entry)
        entries.append(entry)
    if others.offset is not None:  # said once, where the first of them is: one per page would drown the rest
        entries.append(_Planned(others.offset, "", "", None, None, (), "", None, problems=[others.said()]))
        entries[-1].whole = others.whole
    with contextlib.suppress(OSError):
        plan.pieces = [*cut.pieces, Piece(cut.start, os.stat(warc).st_size, cut.first, cut.number, last=True)]
    return planned


NOT_A_PAGE = "not-a-document"  # the code of what unpack leaves out as no web page: said, not a failure


def _noted_only(problem: str) -> bool:
    return isinstance(problem, Problem) and problem.code == NOT_A_PAGE


def _not_a_page(offset: int, what: str) -> Problem:
    return Problem(NOT_A_PAGE, f"{what}: no web page, not written", (f"offset {offset}",))


class _Others:
    """The records of a file that hold no web page and no document (``warcinfo``, ``request``,
    ``metadata``): counted by type, for one line that says them (``rewriter unpack``)."""

    TYPES = ("warcinfo", "request", "metadata")

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.offset: int | None = None
        self.whole = False

    def note(self, record: _Record, *, whole: bool) -> None:
        kind = _header_of(record, "WARC-Type")
        if kind in self.TYPES:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if self.offset is None:
                self.offset, self.whole = record.offset, whole

    def said(self) -> Problem:
        counted = ", ".join(f"{count} {kind}" for kind, count in sorted(self.counts.items()))
        total = sum(self.counts.values())
        return _not_a_page(self.offset or 0, f"{total} record{'s' if total > 1 else ''} ({counted})")


def _header_of(record: _Record, name: str) -> str | None:
    value = record.headers.get_header(name) if record.headers is not None else None
    return None if value is None else str(value).strip().lower()


def _entry(
    item: WarcDocument, candidate: Wanted, plan: MirrorPlan, policy: Policy, first: dict[str, int]
) -> _Planned | None:
    """The entry of one document read by the first pass (None: worth none): a redirect, a file to
    write (its folders and leaf laid out: the first whole response of its URL, whose offset goes
    to *first*), or a record not written and why."""
    entry = _Planned(item.offset, item.uri, url_key(item.uri), item.status, item.content_type, (), "", None)
    entry.whole = plan.whole is not None
    entry.problems.extend(item.problems)
    if item.status is not None and 300 <= item.status < 400:
        if not item.location:
            return None
        entry.sent = item.location
        entry.location = _resolved_location(item, policy)
        if entry.location is None:
            entry.problems.append(
                Problem("mirror", f"Location {item.location!r} cannot be resolved", (f"offset {item.offset}",))
            )
    elif candidate(item.offset, item.record_type, item.uri, item.status, item.content_type):
        if item.body is None:
            entry.problems.append(Problem("mirror", "not written", (f"offset {item.offset}",)))
        elif entry.key in first:
            entry.problems.append(
                Problem(
                    "mirror",
                    f"{_clean(item.uri, 120)} is also the record at offset {first[entry.key]},"
                    " which is the one written",
                    (f"offset {item.offset}",),
                )
            )
        else:
            first[entry.key] = item.offset
            entry.naming_type = _naming_type(item.content_type)
            entry.folders, entry.leaf = _layout(entry.key, entry.naming_type)
    elif _success(item.record_type, item.status) and not _is_web(item.uri):
        if plan.unpack or item.content_type in DOCUMENT_TYPES:  # a page it would have been, by its type
            entry.problems.append(_not_a_page(item.offset, f"{_clean(item.uri, 120)}, a {item.record_type} record"))
        elif not item.problems:
            return None
    elif item.status == 206 and _has_host(item.uri) and (plan.unpack or item.content_type in DOCUMENT_TYPES):
        entry.problems.append(
            Problem(
                "mirror",
                f"206 Partial Content holds only part of {_clean(item.uri, 120)}: not written",
                (f"offset {item.offset}",),
            )
        )
    elif not item.problems:
        return None
    return entry


class _Cuts:
    """The pieces of a file, cut as :func:`plan_warc` cuts them, from the records as they are read."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.pieces: list[Piece] = []
        self.start = self.first = self.number = self.count = 0

    def record(self, offset: int, *, whole: bool) -> None:
        if not whole and self.count > self.first and offset >= self.start + self.size:
            self.pieces.append(Piece(self.start, offset, self.first, self.number))
            self.start, self.first, self.number = offset, self.count, self.number + 1
        self.count += 1


def _resolved_location(document: WarcDocument, policy: Policy) -> str | None:
    try:
        return resolve(document.uri, (document.location or "").strip(), rules=policy.rules, strict=policy.strict)
    except UnresolvableReference:
        return None


def _store(folders: _Folders, item: _Planned, output: bytes) -> None:
    """Write one record's *output* to its planned file; a failure is the record's problem. A file
    there with the same bytes is the one a killed run wrote by the same plan: it is taken."""
    assert item.file is not None
    folder_path, _, name = item.file.rpartition("/")
    try:
        folders.get(tuple(folder_path.split("/")) if folder_path else ()).write(name, output)
    except (OSError, ValueError) as error:
        if isinstance(error, FileExistsError) and _holds(folders.root.path, item.file, output):
            item.written = True
            return
        item.problems.append(
            Problem("mirror", f"not written: {getattr(error, 'strerror', None) or error}", (f"offset {item.offset}",))
        )
        return
    item.written = True


def _holds(root: Path, file: str, output: bytes) -> bool:
    """Whether *file* under *root* is a regular file (reached through no link) of *output*'s bytes."""
    try:
        with open_regular(root / file, root) as stream:
            return stream.read(len(output) + 1) == output
    except OSError:
        return False


def _rendered(
    item: _Planned, document: WarcDocument, policy: Policy, plan: MirrorPlan
) -> tuple[bytes | None, DocumentResult | None, str | None]:
    """What one record's file holds: its body, HTML and CSS rewritten (relinked to the
    mirror when unpacking); None, with the record's problem noted, when it is not written.
    And the engine's result and format (None for what no engine reads)."""
    if document.body is None or url_key(document.uri) != item.key:
        item.problems.append(
            Problem("mirror", "the record read differently the second time: not written", (f"offset {item.offset}",))
        )
        return None, None, None
    assert item.file is not None
    content_type = document.content_type
    engine = engine_for_type(content_type)
    if engine is None:
        return document.body, None, None
    folder_path = item.file.rpartition("/")[0]
    unpack = plan.unpack
    used = policy
    if unpack:
        used = policy.clone(remove_base=True, relink=_relinker(plan.files, plan.redirects, folder_path))
    try:
        result = engine.rewrite(document.body, url=document.uri, charset=document.charset, policy=used)
    except Exception as error:  # the engines never raise by contract; should one, the record is reported
        item.problems.append(
            Problem(
                "mirror", f"not rewritten: {_clean(str(error)) or type(error).__name__}", (f"offset {item.offset}",)
            )
        )
        return None, None, None
    item.links = _tally(result, item)
    if unpack and content_type == "text/html":
        return declare_charset(document.body, result.output, document.charset, result.encoding), result, engine.format
    return result.output, result, engine.format


def _tally(result: DocumentResult, item: _Planned) -> int:
    """Links rewritten or relinked; the document's own problems and links left relative go to *item*."""
    count = left = 0
    for link in result.links:
        if link.status == "rewritten" or link.status == "relinked":
            count += 1
        elif link.status == "no-base" or link.status == "unresolvable":
            left += 1
    item.problems.extend(as_problem(problem, "left-as-is").at(f"offset {item.offset}") for problem in result.problems)
    if left:
        item.problems.append(
            Problem(
                "mirror",
                f"{left} link{'s' if left > 1 else ''} left relative (unresolvable)",
                (f"offset {item.offset}",),
            )
        )
    return count


def _relinker(files: Mapping[str, str], redirects: Mapping[str, str], folder: str) -> Callable[[str], str | None]:
    """The ``Policy.relink`` of one document in *folder*: a URL the mirror holds → its relative path."""

    def relink(url: str) -> str | None:
        target, mark, fragment = url.partition("#")
        final = follow_redirects(target, redirects, stop=lambda current: url_key(current) in files)
        path = files.get(url_key(final)) if final is not None else None
        if path is None:
            return None
        return quote(_relative(path, folder)) + mark + fragment

    return relink
