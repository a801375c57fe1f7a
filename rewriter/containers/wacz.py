"""WACZ (Web Archive Collection Zipped, https://specs.webrecorder.net/wacz/1.1.1/): the format
ArchiveWeb.page, Browsertrix and ReplayWeb.page use. A ZIP file holding WARC files under
``archive/``, an index of their records under ``indexes/`` (``index.cdx.gz`` with
``index.idx``, or ``index.cdx``/``index.cdxj``), the list of pages a user saw in
``pages/pages.jsonl``, and ``datapackage.json``: every other file with its size and sha256
digest (``datapackage-digest.json`` holds the digest of that one).

Reading (:func:`read_wacz`, :func:`extract_warcs`) needs only the standard library: the WARC
files come out of the ZIP into a folder, to be read by the WARC reader
(:mod:`rewriter.containers.warc`) like any other. Writing (:func:`build_wacz`,
:func:`write_wacz`) is py-wacz's ``wacz create`` (the ``wacz`` package, the Webrecorder's own
tool): it indexes the WARC files with cdxj-indexer, and writes the index, the pages and the
data package with their digests; nothing of it is written here by hand.

>>> import io, tempfile, pathlib, zipfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> with zipfile.ZipFile(folder / "none.wacz", "w") as empty:
...     empty.writestr("datapackage.json", "{}")
>>> read_wacz(folder / "none.wacz")
Traceback (most recent call last):
...
rewriter.containers.wacz.WaczError: ...none.wacz: no WARC file under archive/: not a WACZ (WACZ 1.1.1, ...)
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rewriter.containers.formats import sniff_container
from rewriter.policy import DEFAULT_POLICY, Policy

if TYPE_CHECKING:
    from rewriter.bundle.pack import PackResult

__all__ = [
    "PAGES",
    "Wacz",
    "WaczError",
    "build_wacz",
    "check_digests",
    "extract_logs",
    "extract_warcs",
    "pack_wacz",
    "pages_jsonl",
    "read_wacz",
    "write_wacz",
]

PAGES = "pages/pages.jsonl"
EXTRA_PAGES = "pages/extraPages.jsonl"
_DATAPACKAGE = "datapackage.json"
_DATAPACKAGE_DIGEST = "datapackage-digest.json"
_LOG = re.compile(r"logs/(?!\.\.?\Z)[^/\\]+\Z")  # a file of logs/, never "." or ".."
# WACZ 1.1.1, "Directory Layout": archive/ holds the WARC files, one level deep.
_ARCHIVE = re.compile(r"archive/([^/\\]+\.warc(?:\.gz)?)\Z", re.IGNORECASE)
_MAX_LIST = 64 * 2**20  # bytes of pages.jsonl (or datapackage.json) read at most
# A member may be deflated (a plain .warc in ArchiveWeb.page's WACZ files is): its size is what
# its heading says, and zipfile stops there; a ratio beyond this is a bomb, not a WARC.
_MAX_RATIO = 200
_BOMB_FLOOR = 2**20
# What all the members taken out of one WACZ may hold together: this many times the WACZ's own
# size (and a floor). Without it, many members each within the ratio (or members whose
# compressed bytes overlap, which zipfile before Python 3.11.8 does not notice) fill the disk.
_MAX_TOTAL_RATIO = _MAX_RATIO
# Members a WACZ may list: zipfile holds about 600 bytes for each one it lists, read before any
# is opened; a WACZ holds its WARC files, an index, its pages and logs, never this many.
_MAX_MEMBERS = 100_000
_MAX_DIRECTORY = 16 << 20
_SPEC = "WACZ 1.1.1, 'Directory Layout'"
# What zipfile raises on a damaged ZIP or member, besides BadZipFile: a version or a method it
# does not know (NotImplementedError), a cut member (EOFError), a deflate stream that is no
# deflate stream (zlib.error), an LZMA or bzip2 one (lzma.LZMAError, OSError), a heading whose
# numbers make no sense (ValueError, OverflowError).
_DAMAGED = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    EOFError,
    zlib.error,
    ValueError,
    OverflowError,
)


class WaczError(ValueError):
    """A WACZ that cannot be read: not a ZIP, no WARC under ``archive/``, a member damaged.
    The message names the file and, when it is one member's fault, the member."""

    def __init__(self, path: str | os.PathLike[str], reason: str, member: str | None = None) -> None:
        where = f"{os.fspath(path)}" + (f": {member}" if member else "")
        super().__init__(f"{where}: {reason}")
        self.path = os.fspath(path)
        self.member = member
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Wacz:
    """What a WACZ holds, as far as reading it goes: its WARC members (``archive/...``, in the
    ZIP's order), ``pages/pages.jsonl`` and ``pages/extraPages.jsonl`` as they are (None when
    missing), and the title and description of its ``datapackage.json``."""

    path: str
    warcs: tuple[str, ...]
    pages: bytes | None = None
    extra_pages: bytes | None = None
    title: str | None = None
    description: str | None = None
    # datapackage.json's digest of each file it lists ("sha256:<hex>" or "md5:<hex>"), by path
    digests: Mapping[str, str] = field(default_factory=dict)
    # the members a WACZ made again does not hold as they are: logs/ (carried over by py-wacz's
    # --log-directory), anything else (named, left out); the index and data package are made anew
    logs: tuple[str, ...] = ()
    others: tuple[str, ...] = ()

    @property
    def page_urls(self) -> tuple[str, ...]:
        """The URL of each page of ``pages.jsonl``, in its order (the header line and lines
        that are no JSON object with a ``url`` are skipped)."""
        return tuple(page["url"] for page in _pages(self.pages))


def _pages(data: bytes | None) -> Iterable[dict[str, str]]:
    for line in (data or b"").splitlines():
        try:
            page = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: JSON nested too deeply to read
            continue
        if isinstance(page, dict) and isinstance(page.get("url"), str):
            yield page


def read_wacz(path: str | os.PathLike[str]) -> Wacz:
    """The WACZ at *path*: its WARC members and its lists of pages. Raises :class:`WaczError`
    for a file that is no ZIP, or a ZIP with no WARC under ``archive/``, and OSError when it
    cannot be read."""
    try:
        _check_count(path)
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            _check_names(path, names)
            warcs = tuple(name for name in names if _ARCHIVE.match(name))
            if not warcs:
                raise WaczError(path, f"no WARC file under archive/: not a WACZ ({_SPEC})")
            _check_total(
                path,
                [info for info in archive.infolist() if _ARCHIVE.match(info.filename) or _LOG.match(info.filename)],
            )
            pages = _small(archive, path, PAGES)
            extra = _small(archive, path, EXTRA_PAGES)
            package = _small(archive, path, _DATAPACKAGE)
    except WaczError:
        raise
    except (*_DAMAGED, _lzma_error()) as error:
        raise WaczError(path, f"not a ZIP file ({error}): a WACZ is one ({_SPEC})") from error
    title = description = None
    digests: dict[str, str] = {}
    if package is not None:
        with contextlib.suppress(ValueError, RecursionError):  # RecursionError: nested too deeply
            document = json.loads(package)
            if isinstance(document, dict):
                title = document.get("title") if isinstance(document.get("title"), str) else None
                text = document.get("description")
                description = text if isinstance(text, str) else None
                digests = _digests(document.get("resources"))
    files = [name for name in names if not name.endswith("/")]
    logs = tuple(name for name in files if _LOG.match(name))
    made = {*warcs, *logs, PAGES, EXTRA_PAGES, _DATAPACKAGE, _DATAPACKAGE_DIGEST}
    others = tuple(name for name in files if name not in made and not name.startswith("indexes/"))
    return Wacz(os.fspath(path), warcs, pages, extra, title, description, digests, logs, others)


def _lzma_error() -> type[Exception]:
    import lzma  # zipfile imports it for an LZMA member anyway

    return lzma.LZMAError


def _check_count(path: str | os.PathLike[str]) -> None:
    """Refuse a ZIP whose end record lists more than :data:`_MAX_MEMBERS` members, or a
    central directory larger than :data:`_MAX_DIRECTORY` bytes (what zipfile reads, whatever
    the count says), before zipfile reads it into memory. The end record is read by zipfile's
    own reader, which follows a ZIP64 one; a file it cannot read is left to zipfile to name."""
    with open(path, "rb") as stream:
        end = zipfile._EndRecData(stream)  # type: ignore[attr-defined]
    if not end:
        return
    count, size = end[zipfile._ECD_ENTRIES_TOTAL], end[zipfile._ECD_SIZE]  # type: ignore[attr-defined]
    if count > _MAX_MEMBERS or size > _MAX_DIRECTORY:
        raise WaczError(
            path,
            f"a ZIP of {count:,} members in a directory of {size:,} bytes, more than a WACZ holds "
            f"(at most {_MAX_MEMBERS:,} members, {_MAX_DIRECTORY:,} bytes): refused unread",
        )


def _check_names(path: str | os.PathLike[str], names: list[str]) -> None:
    """A ZIP that names one member twice is refused: which of the two a reader takes is the
    reader's choice (zipfile takes the last, others the first), so a WACZ could show one WARC to
    a validator and another to this run."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise WaczError(path, "two members of this name: which one is meant cannot be told; refused", name)
        seen.add(name)


def _check_total(path: str | os.PathLike[str], infos: list[zipfile.ZipInfo]) -> None:
    """The members taken out (WARC files, logs) together may hold at most :data:`_MAX_TOTAL_RATIO` times the WACZ's own
    size (their declared sizes, which zipfile reads no further than)."""
    total = sum(info.file_size for info in infos)
    limit = _BOMB_FLOOR + _MAX_TOTAL_RATIO * os.stat(path).st_size
    if total > limit:
        raise WaczError(
            path,
            f"its {len(infos)} WARC and log members are said to hold {total:,} bytes, "
            f"more than {_MAX_TOTAL_RATIO} times the WACZ's own size: refused (a ZIP bomb)",
        )


def _check_member(path: str | os.PathLike[str], info: zipfile.ZipInfo) -> None:
    """A member that cannot be read safely is refused before it is opened: an encrypted one
    (a WACZ is never encrypted, and zipfile would ask for a password), or a compressed one
    said to hold more than :data:`_MAX_RATIO` times its compressed bytes (a bomb, not a WARC or
    a log)."""
    if info.flag_bits & 0x1:
        raise WaczError(path, "encrypted: a WACZ member never is (WACZ 1.1.1); refused", info.filename)
    if info.compress_type != zipfile.ZIP_STORED and info.file_size > max(
        _BOMB_FLOOR, _MAX_RATIO * max(info.compress_size, 1)
    ):
        raise WaczError(
            path, f"{info.compress_size:,} compressed bytes said to hold {info.file_size:,}: refused", info.filename
        )


def _digests(resources: object) -> dict[str, str]:
    """datapackage.json's ``resources``: each listed path's ``hash`` (WACZ 1.1.1, 'datapackage.json')."""
    if not isinstance(resources, list):
        return {}
    return {
        entry["path"]: entry["hash"]
        for entry in resources
        if isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("hash"), str)
    }


def check_digests(wacz: Wacz, members: Mapping[str, Path]) -> list[str]:
    """What does not match datapackage.json among the WARC files taken out of *wacz* (*members*:
    member name to file): each file whose digest is not the one listed (the WARC was changed
    after the WACZ was made, or the data package is wrong), and each not listed at all."""
    said = []
    for name, path in members.items():
        listed = wacz.digests.get(name)
        if listed is None:
            if wacz.digests:
                said.append(f"{name}: not listed in datapackage.json")
            continue
        algorithm, _, expected = listed.partition(":")
        if algorithm.lower() not in ("sha256", "md5") or not expected:
            continue
        digest = hashlib.new(algorithm.lower())
        with open(path, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != expected.lower():
            said.append(f"{name}: its {algorithm.lower()} is not the one datapackage.json gives (changed since?)")
    return said


def extract_logs(wacz: Wacz, folder: Path) -> Path | None:
    """Copy the ``logs/`` members of *wacz* to *folder* (its files, one level); the folder, or None
    when it has none."""
    if not wacz.logs:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wacz.path) as archive:
            for name in wacz.logs:
                info = archive.getinfo(name)
                _check_member(wacz.path, info)
                with archive.open(info) as source, open(folder / name.split("/", 1)[1], "wb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
    except WaczError:
        raise
    except (*_DAMAGED, _lzma_error(), KeyError) as error:
        raise WaczError(wacz.path, f"a log cannot be read: {error}") from error
    return folder


def _small(archive: zipfile.ZipFile, path: str | os.PathLike[str], name: str) -> bytes | None:
    """A small member read whole (None when missing); WaczError when it is damaged or too large."""
    try:
        info = archive.getinfo(name)
    except KeyError:
        return None
    if info.file_size > _MAX_LIST:
        raise WaczError(path, f"{info.file_size:,} bytes, more than the {_MAX_LIST:,} read of it", name)
    _check_member(path, info)
    try:
        return archive.read(info)
    except (*_DAMAGED, _lzma_error(), OSError) as error:
        raise WaczError(path, f"cannot be read: {error}", name) from error


def extract_warcs(wacz: Wacz, folder: Path) -> list[Path]:
    """Copy each WARC member of *wacz* to ``folder/archive/<name>`` (made as needed); the paths,
    in the members' order. Raises :class:`WaczError` naming the member when one is damaged
    (its CRC, its compression) or is no WARC (nor ARC) file."""
    target = folder / "archive"
    target.mkdir(parents=True, exist_ok=True)
    paths = []
    try:
        with zipfile.ZipFile(wacz.path) as archive:
            for name in wacz.warcs:
                paths.append(_extract(archive, wacz.path, name, target))
    except WaczError:
        raise
    except (*_DAMAGED, _lzma_error()) as error:
        raise WaczError(wacz.path, f"not a ZIP file ({error})") from error
    return paths


def _extract(archive: zipfile.ZipFile, path: str, name: str, target: Path) -> Path:
    info = archive.getinfo(name)
    _check_member(path, info)
    match = _ARCHIVE.match(name)
    assert match is not None  # only archive/ members are extracted
    out = target / match.group(1)
    try:
        with archive.open(info) as source, open(out, "wb") as sink:
            shutil.copyfileobj(source, sink, 1 << 20)
    except (*_DAMAGED, _lzma_error()) as error:
        raise WaczError(path, f"damaged in the ZIP: {error}", name) from error
    with open(out, "rb") as stream:
        if sniff_container(stream) is None:
            raise WaczError(path, "not a WARC file (its first record is no WARC/1.x record: WARC 1.1 4)", name)
    return out


def pages_jsonl(pages: Iterable[tuple[str, str, str | None]], *, title: str = "Pages") -> bytes:
    """``pages/pages.jsonl`` (WACZ 1.1.1, 'pages.jsonl'): a header line, then one line for each
    page given as (URL, its capture's ISO 8601 date, its title or None)."""
    lines = [{"format": "json-pages-1.0", "id": "pages", "title": title}]
    for number, (url, ts, name) in enumerate(pages):
        line = {"id": f"page-{number}", "url": url, "ts": ts}
        if name:
            line["title"] = name
        lines.append(line)
    return b"".join(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n" for line in lines)


def _usable_pages(data: bytes) -> bool:
    """Whether py-wacz copies *data* as pages.jsonl as it is: a header line with ``format`` and
    ``id``, then lines with ``url`` and ``ts`` (its own check, ``validate_pages_jsonl_file``)."""
    lines = data.decode("utf-8", "replace").splitlines()
    try:
        documents = [json.loads(line) for line in lines]
    except (ValueError, RecursionError):
        return False
    if not documents or not all(isinstance(document, dict) for document in documents):
        return False
    header, rest = documents[0], documents[1:]
    return "format" in header and "id" in header and all("url" in page and "ts" in page for page in rest)


def build_wacz(
    output: Path,
    warcs: Sequence[Path],
    *,
    pages: bytes | None = None,
    extra_pages: bytes | None = None,
    title: str | None = None,
    description: str | None = None,
    logs: Path | None = None,
) -> list[str]:
    """Write a WACZ of the WARC files *warcs* at *output* with py-wacz (``wacz create``): the
    index (``indexes/index.cdx.gz``, ``index.idx``) made from the records, *pages* (a
    ``pages.jsonl``) copied as it is when py-wacz can (else the pages are found again from the
    records, and a note says so), and ``datapackage.json`` with every file's size and sha256.
    The files of the folder *logs* go under ``logs/``. The notes; RuntimeError when py-wacz is
    missing or fails (what it said)."""
    try:
        from wacz.main import main as wacz_main
    except ImportError as error:  # an optional dependency: pip install 'rewriter[wacz]'
        raise RuntimeError(
            f"writing a WACZ needs py-wacz, which cannot be imported ({error}): pip install 'rewriter[wacz]'"
        ) from error
    notes = []
    with tempfile.TemporaryDirectory(prefix="rewriter-wacz-") as scratch:
        arguments = ["create", "-o", str(output), *map(str, warcs)]
        if pages is not None and _usable_pages(pages):
            listed = Path(scratch, "pages.jsonl")
            listed.write_bytes(pages)
            arguments += ["--pages", str(listed), "--copy-pages"]
            if extra_pages is not None and _usable_pages(extra_pages):
                Path(scratch, "extraPages.jsonl").write_bytes(extra_pages)
                arguments += ["--extra-pages", str(Path(scratch, "extraPages.jsonl"))]
        else:
            if pages is not None:
                notes.append("its pages.jsonl is not one py-wacz reads: the pages were found again from the records")
            arguments.append("--detect-pages")
        if title:
            arguments += ["--title", title]
        if description:
            arguments += ["--desc", description]
        if logs is not None:
            arguments += ["--log-directory", str(logs)]
        said = io.StringIO()
        try:
            with contextlib.redirect_stdout(said):
                status = wacz_main(arguments)
        except Exception as error:  # py-wacz raises what it meets (ValueError, OSError, KeyError)
            raise RuntimeError(f"py-wacz could not write it: {type(error).__name__}: {error}") from error
        if status:
            last = [line for line in said.getvalue().splitlines() if line.strip()][-1:]
            raise RuntimeError(f"py-wacz could not write it ({'; '.join(last) or f'status {status}'})")
    return notes


def write_wacz(
    target: Path, warcs: Sequence[Path], *, sync: bool = True, **options: str | bytes | Path | None
) -> list[str]:
    """:func:`build_wacz` to *target* through :func:`rewriter.disk.files.replacing`: *target*
    holds the old file or the whole new one, never a part. The notes."""
    from rewriter.disk.files import replacing

    with tempfile.TemporaryDirectory(prefix="rewriter-wacz-") as scratch:
        built = Path(scratch, "out.wacz")
        notes = build_wacz(built, warcs, **options)  # type: ignore[arg-type]
        with replacing(target, sync=sync) as replacement, open(built, "rb") as source:
            shutil.copyfileobj(source, replacement.stream, 1 << 20)
    return notes


def pack_wacz(page: Path, *, url: str | None = None, policy: Policy = DEFAULT_POLICY) -> PackResult:
    """One WACZ of the saved *page* and the local files it loads, which ReplayWeb.page opens: the
    WARC :func:`rewriter.bundle.pack.pack_warc` makes of them (each a ``resource`` record named
    by its URL; the page and its style sheets written as MHTML's parts are), and
    ``pages/pages.jsonl`` with the page (its URL, the time it was packed, its title), made a
    WACZ by :func:`build_wacz`. The result's ``output`` is the WACZ's bytes. Raises what
    :func:`~rewriter.bundle.pack.pack_warc` raises, and RuntimeError when py-wacz is missing or
    fails."""
    import datetime
    from dataclasses import replace

    from rewriter.bundle.pack import pack_warc
    from rewriter.problems import Problem

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    result = pack_warc(page, url=url, policy=policy, date=date)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(page).stem).strip("-.") or "page"
    with tempfile.TemporaryDirectory(prefix="rewriter-pack-") as scratch:
        archive = Path(scratch, f"{stem}.warc.gz")
        archive.write_bytes(result.output)
        output = Path(scratch, "page.wacz")
        pages = pages_jsonl([(result.url, date, result.title)])
        notes = build_wacz(output, [archive], pages=pages, title=result.title)
        said = tuple(Problem("output", note) for note in notes)
        return replace(result, output=output.read_bytes(), notes=result.notes + said)
