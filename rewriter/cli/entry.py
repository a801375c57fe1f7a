"""The command line's way in: the configuration file's defaults, the arguments parsed, the
run request checked, the verb run; exit statuses, and leaving without the interpreter's teardown.

Exit codes, for every verb:

- 0: everything asked for was done;
- 1: some item (a reference, a link left relative, a file that cannot be read or
  written) could not be done; the others were, and each failure is named on
  standard error;
- 2: the command itself is wrong (a usage error).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from rewriter.cli.defaults import apply_config, lists_from_config
from rewriter.cli.output import ClosedOutput, Escaping
from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, build_parser
from rewriter.cli.request import RunRequest, UsageError


def run_verb(request: RunRequest, out: TextIO | ClosedOutput, err: TextIO | Escaping) -> int:
    """Run the verb of *request* (its module imported only now: a verb's imports are its own)."""
    if request.verb == "rewrite":
        from rewriter.cli.verbs.rewrite import run_rewrite as run
    elif request.verb in ("links", "explain"):
        from rewriter.cli.verbs.inspect import run_explain, run_links

        run = run_links if request.verb == "links" else run_explain
    elif request.verb in ("pack", "unpack"):
        from rewriter.cli.verbs.bundle import run_pack, run_unpack

        run = run_pack if request.verb == "pack" else run_unpack
    else:
        from rewriter.cli.verbs.resolve import run_resolve as run
    if request.verb in ("rewrite", "links", "explain", "unpack"):
        waczs, kinds = request.wacz_inputs()
        if waczs:  # its WARC files taken out of it, the verb run on them
            from rewriter.cli.verbs.wacz import run_wacz

            return run_wacz(request, run, out, err, waczs, kinds)  # type: ignore[arg-type]
    return run(request, out, err)  # type: ignore[arg-type]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    err = Escaping(sys.stderr)
    try:
        folder: Path | None = Path.cwd()
    except OSError as error:  # the shell's folder was deleted (or moved out of reach) under it
        folder, lost = None, error.strerror or str(error)
    configuration = None  # the configuration file read: its content decides outputs too
    try:
        if folder is not None:
            configuration = apply_config(parser, folder)
    except ValueError as error:
        arguments = sys.argv[1:] if argv is None else list(argv)
        if not any(argument in ("-h", "--help", "--version") for argument in arguments):
            err.write(f"rewriter: {error}\n")
            return EXIT_USAGE
        parser = build_parser()  # help and the version never depend on the configuration
    args = parser.parse_args(argv)  # --help and --version need no working folder
    if folder is None:
        err.write(
            f"rewriter: the working folder cannot be found ({lost}): it was deleted or moved; "
            "change to an existing folder and run again\n"
        )
        return EXIT_USAGE
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.configuration = configuration
    lists_from_config(args)
    try:
        request = RunRequest.read(args, err)
    except UsageError as error:
        err.write(f"{error}\n")
        return EXIT_USAGE
    try:
        return int(run_verb(request, sys.stdout or ClosedOutput(), err))
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        sys.stderr.close()
        return EXIT_OK
    except OSError as error:  # standard output closed or full: named, never a traceback
        if error.filename is not None:  # a file the run could not go on without: named as it is
            err.write(f"rewriter: {error.filename}: {error.strerror or error}\n")
        else:
            err.write(f"rewriter: cannot write to standard output: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    except KeyboardInterrupt:
        return 130


def entry_point() -> None:
    """The console script: bytes that are not UTF-8 in arguments or files come back out unchanged."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    _exit_now(main())


def _exit_now(code: int) -> NoReturn:
    """Exit once standard output and standard error are out, without the interpreter's
    teardown: freeing every object one by one took 0.13-0.21 s after a batch run of the
    corpus, 0.08 s after the imports alone. Every file the tool writes is closed by then.
    Only when nothing else runs: no child process, no other thread (Dask's client has
    one); otherwise the usual exit, which waits for them."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (BrokenPipeError, ValueError):  # its reader left, or it was closed: nothing more can reach it
        pass
    except OSError as error:  # e.g. the disk is full: what is left unwritten is lost, and said so
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.write(f"rewriter: cannot write to standard output: {error.strerror or error}\n")
        code = code or EXIT_SOME_FAILED
    with contextlib.suppress(OSError, ValueError, AttributeError):
        sys.stderr.flush()
    multiprocessing = sys.modules.get("multiprocessing")
    if threading.active_count() > 1 or (multiprocessing is not None and multiprocessing.active_children()):
        sys.exit(code)
    os._exit(code)
