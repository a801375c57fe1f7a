"""A WACZ named on the command line (``rewrite``, ``links``, ``explain``, ``unpack``): its WARC
files taken out of it into a scratch folder (:mod:`rewriter.containers.wacz`), and the verb run
on them as on any WARC, by the same code; messages name each as ``x.wacz/archive/name.warc.gz``.

- ``rewrite x.wacz -o y.wacz``: each WARC of it written back by WARC out (rewriter.containers.warc,
  its pages followed by their conversion records), then the WACZ made again of them by py-wacz
  (its index and datapackage.json recomputed; pages.jsonl kept). y.wacz is written only when
  every WARC was, whole (rewriter.disk).
- ``links``: each WARC of it in turn.
- ``explain``, ``rewrite x.wacz -o DIR/``, ``-o OUT.warc.gz`` and ``unpack x.wacz -o DIR/``: its
  WARC as the input (its WARC files joined into one when there are several, named
  ``x.wacz/archive.warc.gz``: a page in one and its style sheet in another are one mirror).
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE
from rewriter.cli.request import RunRequest
from rewriter.disk.files import same_file

if TYPE_CHECKING:
    from rewriter.containers.formats import Kind
    from rewriter.containers.wacz import Wacz

Verb = Callable[[RunRequest, Any, Any], int]
_MANIFEST_MAX = 256 << 20  # bytes of an unpacked mirror's manifest.json read back, at most
_MAX_INFLATION = 200  # a .warc.gz joined to plain WARC files inflates at most this many times its size


class _Named:
    """A text stream whose writes name each WARC taken out of a WACZ by the WACZ and the member
    (``x.wacz/archive/data.warc.gz``) rather than by its scratch path."""

    def __init__(self, stream: Any, names: Mapping[str, str]) -> None:
        self.stream = stream
        self.names = sorted(names.items(), key=lambda item: -len(item[0]))  # the longest first

    def write(self, text: str) -> int:
        for scratch, name in self.names:
            text = text.replace(scratch, name)
        return int(self.stream.write(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def run_wacz(
    request: RunRequest, verb: Verb, out: TextIO, err: TextIO, waczs: list[str], kinds: Mapping[str, Kind | None]
) -> int:
    """Run *verb* on *request*, whose inputs *waczs* are WACZ files (``RunRequest.wacz_inputs``, with what
    each input is: *kinds*; see the module)."""
    from rewriter.containers.wacz import WaczError, check_digests, extract_warcs, read_wacz

    args = request.options
    name = f"rewriter {request.verb}"
    to_wacz = request.verb == "rewrite" and bool(args.output) and args.output.lower().endswith(".wacz")
    problem = _usage(request, waczs, to_wacz)
    if problem is not None:
        err.write(f"{name}: {problem}\n")
        return EXIT_USAGE
    if to_wacz and same_file(waczs[0], args.output):
        err.write(f"rewriter: {waczs[0]}: the output is the input itself; a WACZ is never changed in place\n")
        return EXIT_SOME_FAILED
    with tempfile.TemporaryDirectory(prefix="rewriter-wacz-") as scratch:
        opened: dict[str, tuple[Wacz, list[Path]]] = {}
        names: dict[str, str] = {}
        for number, given in enumerate(waczs):
            folder = Path(scratch, str(number), Path(given).name)
            try:
                wacz = read_wacz(given)
                opened[given] = (wacz, extract_warcs(wacz, folder))
            except WaczError as error:
                err.write(f"{name}: {error}\n")
                return EXIT_SOME_FAILED
            except OSError as error:
                err.write(f"{name}: cannot read {given}: {error.strerror or error}\n")
                return EXIT_SOME_FAILED
            names[str(folder)] = given
            members = dict(zip(opened[given][0].warcs, opened[given][1], strict=True))
            for line in check_digests(opened[given][0], members):
                err.write(f"{given}: {line}\n")
        named_out, named_err = _Named(out, names), _Named(err, names)
        if to_wacz:
            return _rewrite_to_wacz(request, verb, opened[waczs[0]], Path(scratch), named_out, named_err)
        # links: each WARC in turn (JSON Lines join); explain: one document, so several WARCs joined
        if request.verb == "links" or (request.verb == "explain" and len(opened[waczs[0]][1]) == 1):
            status = EXIT_OK
            for member in opened[waczs[0]][1]:
                status = max(status, verb(_on(request, (str(member),)), named_out, named_err))
            return status
        files = []
        for given in request.files:
            if given not in opened:
                files.append(given)
                continue
            joined = Path(scratch, f"joined-{len(files)}", Path(given).name)
            try:
                files.append(str(_one_warc(opened[given][1], joined, given)))
            except WaczError as error:
                err.write(f"{name}: {error}\n")
                return EXIT_SOME_FAILED
            names[str(joined)] = given  # x.wacz/archive.warc.gz: its WARC files joined
        named_out, named_err = _Named(out, names), _Named(err, names)
        status = verb(_on(request, tuple(files), kinds=kinds), named_out, named_err)
        if request.verb == "unpack" and not args.quiet:
            for line in _pages_unpacked(opened[waczs[0]][0], Path(args.output)):
                err.write(line + "\n")
        return status


def _pages_unpacked(wacz: Wacz, folder: Path) -> list[str]:
    """Where each page of the WACZ's pages.jsonl was unpacked (the mirror's manifest.json says
    which file each URL became): the lines that say it, the first page first."""
    import json

    from rewriter.disk.files import open_regular
    from rewriter.url.resolve import url_key

    urls = wacz.page_urls
    if not urls:
        return []
    try:  # the output folder's own file: no link followed, no pipe or device, at most _MANIFEST_MAX bytes
        with open_regular(folder / "manifest.json", folder) as stream:
            manifest = json.loads(stream.read(_MANIFEST_MAX + 1))
    except (OSError, ValueError, RecursionError):
        return []
    if not isinstance(manifest, list):
        return []
    files = {
        url_key(entry["url"]): entry["file"]
        for entry in manifest
        if isinstance(entry, dict) and isinstance(entry.get("url"), str) and isinstance(entry.get("file"), str)
    }
    lines = [f"{wacz.path}: {len(urls)} page{'s' if len(urls) > 1 else ''} in pages.jsonl:"]
    for url in urls:
        file = files.get(url_key(url))
        lines.append(f"  {url} -> {folder / file if file else '(no record of it was unpacked)'}")
    return lines


def _usage(request: RunRequest, waczs: list[str], to_wacz: bool) -> str | None:
    """Why the request cannot take its WACZ inputs (a usage error), or None."""
    args = request.options
    if (request.verb in ("links", "explain", "unpack") or to_wacz) and len(request.files) > 1:
        return f"{waczs[0]} is a WACZ: give it alone"
    if request.verb == "rewrite" and args.output in (None, "-"):
        return (
            f"{waczs[0]} is a WACZ: give -o OUT.wacz for a WACZ with its pages rewritten, "
            "or -o DIR/ for a folder of them"
        )
    if to_wacz and getattr(args, "resume", False):
        return "--resume: a WACZ is written whole, in one run; run it again without --resume"
    return None


def _on(request: RunRequest, files: tuple[str, ...], *, output: str | None = None, kinds: Any = None) -> RunRequest:
    """*request* with other inputs (and output), what each is told again."""
    from rewriter.run.batch import kinds_of

    options = vars(request.options) | {"files": list(files)}
    if output is not None:
        options["output"] = output
    told = {name: (kinds or {}).get(name) or kinds_of([name])[name] for name in files}
    return request._replace(files=files, options=argparse.Namespace(**options), kinds=told)


def _one_warc(members: list[Path], joined: Path, wacz: str) -> Path:
    """The one WARC file that holds every record of *members*: the member itself when it is the
    only one, else the members one after the other (WARC 1.1 Annex D: gzip members are
    records, so gzip files join as they are; plain and gzip mixed are joined plain)."""
    if len(members) == 1:
        return members[0]
    from rewriter.containers.wacz import WaczError

    compressed = all(member.name.lower().endswith(".gz") for member in members)
    joined.mkdir(parents=True, exist_ok=True)
    target = joined / ("archive.warc.gz" if compressed else "archive.warc")
    with open(target, "wb") as sink:
        for member in members:
            if compressed or not member.name.lower().endswith(".gz"):
                with open(member, "rb") as source:
                    shutil.copyfileobj(source, sink, 1 << 20)
                continue
            # A .warc.gz inflated onto the disk to be joined to plain ones: at most _MAX_INFLATION
            # times its size (a gzip bomb of 1 MB would otherwise fill 1 GB of the scratch folder).
            limit, written = _MAX_INFLATION * max(member.stat().st_size, 1 << 20), 0
            try:
                with gzip.open(member, "rb") as source:
                    while block := source.read(1 << 20):
                        written += len(block)
                        if written > limit:
                            raise WaczError(
                                wacz,
                                f"inflates to more than {_MAX_INFLATION} times its size to be joined to the plain "
                                "WARC files beside it: refused (a gzip bomb)",
                                f"archive/{member.name}",
                            )
                        sink.write(block)
            except (OSError, EOFError, zlib.error) as error:
                raise WaczError(
                    wacz, f"its gzip cannot be read to be joined: {error}", f"archive/{member.name}"
                ) from None
    return target


def _rewrite_to_wacz(
    request: RunRequest, verb: Verb, opened: tuple[Wacz, list[Path]], scratch: Path, out: _Named, err: _Named
) -> int:
    """``rewrite x.wacz -o y.wacz``: each WARC by WARC out, then the WACZ of them (py-wacz)."""
    from rewriter.containers.wacz import WaczError, extract_logs, write_wacz

    wacz, members = opened
    target = Path(request.options.output)
    written = scratch / "out" / "archive"
    written.mkdir(parents=True)
    outputs, status = [], EXIT_OK
    for member in members:
        output = written / member.name
        status = max(status, verb(_on(request, (str(member),), output=str(output)), out, err))
        outputs.append(output)
    if status != EXIT_OK or not all(output.is_file() for output in outputs):
        err.write(f"rewriter rewrite: {target} not written: a WARC of {wacz.path} could not be rewritten whole\n")
        return EXIT_SOME_FAILED
    from rewriter.disk.files import remove_temporaries_of

    removed = remove_temporaries_of(target)  # what a killed run left beside it: regular files of our pattern
    if removed and not request.options.quiet:
        err.write(f"rewriter: removed {removed:,} temporary file{'s' if removed > 1 else ''} a killed run left\n")
    try:
        notes = write_wacz(
            target,
            outputs,
            pages=wacz.pages,
            extra_pages=wacz.extra_pages,
            title=wacz.title,
            description=wacz.description,
            logs=extract_logs(wacz, scratch / "logs"),
            sync=not getattr(request.options, "no_fsync", False),
        )
    except (RuntimeError, WaczError) as error:
        err.write(f"rewriter rewrite: {target} not written: {error}\n")
        return EXIT_SOME_FAILED
    except OSError as error:
        err.write(f"rewriter rewrite: cannot write {target}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    for note in notes:
        err.write(f"{wacz.path}: {note}\n")
    for name in wacz.others:  # what py-wacz has no place for: said, not lost silently
        err.write(
            f"{wacz.path}: {name}: not carried over into {target} (a WACZ made again holds its WARC files, "
            "pages and logs)\n"
        )
    if not request.options.quiet:
        count = len(members)
        err.write(f"{wacz.path}: {count} WARC file{'s' if count > 1 else ''} rewritten into {target}\n")
    return EXIT_OK
