"""``rewriter unpack`` and ``rewriter pack``: an archive (MHTML, a message, a WARC) into a
folder a browser opens offline, and a saved page with its local files into one MHTML (or one
HTML with data: URLs, or one WACZ).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE
from rewriter.cli.request import RunRequest, shown

if TYPE_CHECKING:
    from rewriter.containers.formats import Kind


def read_input(verb: str, path: str, err: TextIO) -> bytes | None:
    """The bytes of *path* ('-': standard input), or None (said on *err*)."""
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as error:
        err.write(f"rewriter {verb}: cannot read {shown(path)}: {error.strerror or error}\n")
        return None


def run_unpack(request: RunRequest, out: TextIO, err: TextIO) -> int:
    """Unpack the one input: a web archive mirrored as folders, or a message (MHTML) into parts."""
    from rewriter.run.batch import kinds_of

    path = request.files[0]
    kinds = kinds_of([path])  # None for standard input: told from what is read
    kind = kinds[path]
    if kind is not None and kind.format in ("warc", "arc"):
        return _unpack_archive(request._replace(kinds=kinds), out, err)
    return _unpack_message(request, kind, err)


# What rewrite's run reads of the options that unpack has not: a WARC unpacked is written to
# its folder, never in place, every record of it (no folder of inputs to filter), on this machine.
_RUN_DEFAULTS = {"in_place": False, "backup": None, "include": None, "exclude": None, "no_copy_others": False}


# The run's options that only a web archive's unpacking (a run of the pipeline) uses.
_RUN_ONLY = (("-j", "jobs"), ("--report", "report"), ("--resume", "resume"), ("--piece-size", "piece_size"))


def _unpack_archive(request: RunRequest, out: TextIO, err: TextIO) -> int:
    """A web archive unpacked into a folder by a run of the pipeline, as ``rewrite ARCHIVE -o
    DIR`` mirrors one (rewriter.run.pipeline.MirrorFolder), its records unpacked: every
    resource written, each link the archive answers pointed at its file. So it takes -j,
    --resume and --report, and says what it did as a run does."""
    from rewriter.cli.request import _report_over_an_input
    from rewriter.cli.verbs.rewrite import run_rewrite

    args = request.options
    if args.jobs is not None and args.jobs < 1:
        err.write("rewriter unpack: -j needs at least 1\n")
        return EXIT_USAGE
    if _report_over_an_input(args.report, request.files):
        err.write(f"rewriter unpack: --report {args.report} would overwrite {request.files[0]}, the input\n")
        return EXIT_USAGE
    options = argparse.Namespace(**{**_RUN_DEFAULTS, "dask": None, **vars(args)})
    return run_rewrite(request._replace(options=options), out, err)


def _unpack_message(request: RunRequest, kind: Kind | None, err: TextIO) -> int:
    from rewriter.bundle.unpack import UnpackError, unpack_message
    from rewriter.containers.formats import SNIFF_SIZE, what_file_is

    args = request.options
    path, folder = request.files[0], Path(args.output)
    name = shown(path)
    ignored = [option for option, given in _RUN_ONLY if getattr(args, given, None)]
    if ignored and not args.quiet:  # one message is one part of no run: said, not refused
        err.write(f"rewriter unpack: {', '.join(ignored)}: for a web archive; {name} is not one, so ignored\n")
    data = read_input("unpack", path, err)
    if data is None:
        return EXIT_SOME_FAILED
    if kind is None:
        kind = what_file_is(data[:SNIFF_SIZE], None if path == "-" else path)
    fmt = args.format if args.format != "auto" else kind.format
    if fmt == "emlx":  # Apple Mail's: the message between its byte count and its property list
        from rewriter.containers.emlx import EmlxError, split_emlx

        try:
            data, fmt = split_emlx(data).message, "message"
        except EmlxError as error:
            err.write(f"rewriter unpack: {name}: {error}\n")
            return EXIT_SOME_FAILED
    if fmt != "message":
        what = {"mbox": "an mbox (unpack one message of it)", "html": "an HTML page (bundle it with rewriter pack)"}
        what |= dict.fromkeys(("warc", "arc"), f"no web archive (--format {fmt}): {kind.reason}")
        err.write(f"rewriter unpack: {name} is {what.get(fmt, f'not a MIME message ({fmt})')}\n")
        return EXIT_SOME_FAILED
    try:
        result = unpack_message(data, folder, url=args.url, policy=request.policy)
    except UnpackError as error:
        err.write(f"rewriter unpack: {error}\n")
        return EXIT_SOME_FAILED
    except OSError as error:
        err.write(f"rewriter unpack: cannot write {folder}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    for problem in result.problems:
        err.write(f"{name}: {problem}\n")
    written = sum(1 for part in result.parts if part.file)
    relinked = sum(part.relinked for part in result.parts)
    absolute = sum(part.absolute for part in result.parts)
    root = f" ({result.root})" if result.root else ", no HTML part to open"
    err.write(
        f"{name}: {written} of {len(result.parts)} parts into {folder}{root}: {relinked} links to the bundle, "
        f"{absolute} made absolute\n"
    )
    failed = result.root is None or any(part.action == "failed" for part in result.parts)
    return EXIT_SOME_FAILED if failed else EXIT_OK


def run_pack(request: RunRequest, out: TextIO, err: TextIO) -> int:
    """Pack the saved page and its local files into one MHTML, or one HTML file."""
    from rewriter.bundle.pack import PackError, pack_mhtml, pack_single_file
    from rewriter.run.batch import write_atomically

    args = request.options
    page = Path(args.files[0])
    target = Path(args.single_file or args.output)
    try:
        if target.resolve() == page.resolve():
            err.write(f"rewriter pack: the output {target} is the page itself\n")
            return EXIT_USAGE
        # -o OUT.wacz: a WACZ that replay tools open (a WARC of the files, its index, its page)
        if not args.single_file and target.name.lower().endswith(".wacz"):
            from rewriter.containers.wacz import pack_wacz  # py-wacz only for a WACZ

            result = pack_wacz(page, url=args.url, policy=request.policy)
        else:
            pack = pack_single_file if args.single_file else pack_mhtml
            result = pack(page, url=args.url, policy=request.policy)
    except PackError as error:
        err.write(f"rewriter pack: {error}\n")
        return EXIT_SOME_FAILED
    except RuntimeError as error:  # py-wacz missing, or failing
        err.write(f"rewriter pack: {target} not written: {error}\n")
        return EXIT_SOME_FAILED
    except OSError as error:  # e.g. resolve() of a relative path once the working folder is gone
        err.write(f"rewriter pack: {page}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    for problem in result.problems:
        err.write(f"{page}: {problem}\n")
    from rewriter.disk.files import remove_temporaries_of

    removed = remove_temporaries_of(target)  # what a killed run left beside it: regular files of our pattern
    if removed and not getattr(args, "quiet", False):
        err.write(f"rewriter: removed {removed:,} temporary file{'s' if removed > 1 else ''} a killed run left\n")
    try:
        write_atomically(target, result.output)
    except OSError as error:
        err.write(f"rewriter pack: cannot write {target}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    err.write(f"{page}: {len(result.parts)} files packed into {target}\n")
    return EXIT_SOME_FAILED if result.problems else EXIT_OK
