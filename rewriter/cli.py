"""The ``rewriter`` command line: git-style verbs over the library.

Exit codes, for every verb:

- 0: everything asked for was done;
- 1: some item (a reference, later a link, part or file) could not be done; the
  others were, and each failure is named on standard error;
- 2: the command itself is wrong: a usage error or an input that cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO

from rewriter import __version__
from rewriter.resolve import RULES, Resolver, UnresolvableReference

EXIT_OK = 0
EXIT_SOME_FAILED = 1
EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse that says which verb a usage error belongs to, and exits 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rewriter",
        description="Make every relative link in HTML documents and MIME messages absolute.",
        epilog="Exit codes: 0 all done, 1 some item failed (each named on stderr), 2 usage or input error.",
    )
    parser.add_argument("--version", action="version", version=f"rewriter {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    resolve = verbs.add_parser(
        "resolve",
        help="resolve references against a base URL",
        description=(
            "Print the absolute form of each REF against BASE, one per line. A reference "
            "that cannot be resolved is named on stderr with the reason; the others are "
            "still printed, and the exit code is 1."
        ),
    )
    resolve.add_argument("base", metavar="BASE", help="the base URL ('' for none)")
    resolve.add_argument("references", metavar="REF", nargs="*", help="a URL reference")
    resolve.add_argument(
        "-f",
        "--file",
        metavar="FILE",
        action="append",
        default=[],
        help="also read references from FILE, one per line ('-' for standard input)",
    )
    resolve.add_argument("--rules", choices=RULES, default="rfc3986", help="resolution rules (default: rfc3986)")
    resolve.add_argument(
        "--non-strict",
        action="store_true",
        help="rfc2396/rfc3986: read a scheme equal to the base's as relative (http:g)",
    )
    resolve.set_defaults(run=_run_resolve)
    return parser


def _lines(path: str) -> Iterator[str]:
    """The lines of *path* without their line ends; bytes that are not UTF-8 survive."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        for raw in stream:
            yield raw.decode("utf-8", "surrogateescape").removesuffix("\n").removesuffix("\r")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def _run_resolve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if not args.references and not args.file:
        err.write("rewriter resolve: give at least one REF or --file\n")
        return EXIT_USAGE
    resolver = Resolver(args.base, rules=args.rules, strict=not args.non_strict)
    status = EXIT_OK

    def resolve_all(references: Iterable[str], where: str) -> None:
        nonlocal status
        for number, reference in enumerate(references, 1):
            try:
                out.write(resolver.resolve(reference) + "\n")
            except UnresolvableReference as error:
                place = f"{where}:{number}: " if where else ""
                err.write(f"rewriter resolve: {place}{reference!r}: {error.reason}\n")
                status = EXIT_SOME_FAILED

    resolve_all(args.references, "")
    for path in args.file:
        try:
            resolve_all(_lines(path), "<stdin>" if path == "-" else path)
        except OSError as error:
            err.write(f"rewriter resolve: cannot read {path}: {error.strerror or error}\n")
            return EXIT_USAGE
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verb is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.run(args, sys.stdout, sys.stderr))
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        return 130


def entry_point() -> None:
    """The console script: bytes that are not UTF-8 in arguments or files come back out unchanged."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")
    sys.exit(main())
