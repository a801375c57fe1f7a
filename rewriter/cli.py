"""The ``rewriter`` command line: git-style verbs over the library.

Exit codes, for every verb:

- 0: everything asked for was done;
- 1: some item (a reference, a link left relative, a file that cannot be read or
  written) could not be done; the others were, and each failure is named on
  standard error;
- 2: the command itself is wrong (a usage error).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rewriter import __version__
from rewriter.policy import Policy
from rewriter.resolve import RULES, Resolver, UnresolvableReference

if TYPE_CHECKING:
    from rewriter.html import HTMLResult

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
        epilog="Exit codes: 0 all done, 1 some item failed (each named on stderr, the others done), 2 usage error.",
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

    rewrite = verbs.add_parser(
        "rewrite",
        help="make every relative link of HTML documents absolute",
        description=(
            "Rewrite each FILE ('-' for standard input) with every relative URL made absolute and no other "
            "byte changed. One input goes to standard output unless -o names a file; several inputs need "
            "-o DIR. Links that stay relative (no base, unresolvable) are named on stderr, and the exit code "
            "is then 1; an unreadable file is named and skipped, the others still done."
        ),
        epilog="Example: rewriter rewrite saved.html --url https://example.org/docs/page.html -o page.html",
    )
    rewrite.add_argument("files", metavar="FILE", nargs="+", help="an HTML document, or '-' for stdin")
    rewrite.add_argument("-o", "--output", metavar="OUT", help="output file ('-' for stdout), or folder for several")
    _document_options(rewrite)
    rewrite.set_defaults(run=_run_rewrite)

    links = verbs.add_parser(
        "links",
        help="list every link of an HTML document",
        description="List every URL the engine finds in FILE: element, attribute, status, value as written, resolved.",
        epilog="Example: rewriter links saved.html --url https://example.org/ --json",
    )
    links.add_argument("files", metavar="FILE", nargs=1, help="an HTML document, or '-' for stdin")
    links.add_argument("--json", action="store_true", help="one JSON object per link (JSON Lines)")
    _document_options(links)
    links.set_defaults(run=_run_links)
    return parser


def _document_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the retrieval URL: the base when the page has no <base> (RFC 1808 §3.3)")
    parser.add_argument("--charset", help="the transport charset, if known (HTTP or MIME charset parameter)")
    parser.add_argument("--rules", choices=RULES, default="rfc3986", help="resolution rules (default: rfc3986)")
    parser.add_argument("--non-strict", action="store_true", help="rfc2396/rfc3986: read http:g as relative")
    parser.add_argument(
        "--absolutize-fragments", action="store_true", help="also make #frag and empty references absolute"
    )
    parser.add_argument("--remove-base", action="store_true", help="drop the <base> element instead of fixing it")
    parser.add_argument("--no-lazy", action="store_true", help="leave lazy-loading data-* attributes alone")
    parser.add_argument(
        "--no-conditional-comments", action="store_true", help="leave links inside <!--[if IE]> comments alone"
    )
    parser.add_argument(
        "--canonical-base", action="store_true", help="with no --url, take <link rel=canonical> / og:url as it"
    )
    parser.add_argument("--require-base", action="store_true", help="a page with relative links and no base fails")


def _policy(args: argparse.Namespace) -> Policy:
    policy = Policy(
        rules=args.rules,
        strict=not args.non_strict,
        same_document=args.absolutize_fragments,
        conditional_comments=not args.no_conditional_comments,
        remove_base=args.remove_base,
        canonical_base=args.canonical_base,
        require_base=args.require_base,
    )
    return policy.clone(lazy_attributes=frozenset()) if args.no_lazy else policy


def _shown(path: str) -> str:
    return "<stdin>" if path == "-" else path


def _run_engine(verb: str, path: str, engine: Callable[[bytes], HTMLResult], err: TextIO) -> HTMLResult | None:
    """Read *path* ('-': stdin) and run *engine* on its bytes; None, with the file and
    the reason on stderr, when it cannot be read or the policy refuses it."""
    from rewriter.html import NoBaseError

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as error:
        err.write(f"rewriter {verb}: cannot read {_shown(path)}: {error.strerror or error}\n")
        return None
    try:
        return engine(data)
    except NoBaseError as error:
        err.write(f"rewriter {verb}: {_shown(path)}: {error}\n")
        return None


def _write_atomically(path: Path, data: bytes) -> None:
    """Write *data* to *path* so that it holds the old content or the new, never a part."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _report(name: str, result: HTMLResult, err: TextIO) -> bool:
    """Name on stderr every link that stayed relative and every problem; True if all went well."""
    well = True
    for problem in result.problems:
        err.write(f"rewriter: {name}: {problem}\n")
    for link in result.links:
        if link.status in ("no-base", "unresolvable"):
            well = False
            err.write(
                f"rewriter: {name}: <{link.element} {link.attribute}> {link.original!r} at bytes "
                f"{link.start}-{link.end}: {link.status}: {link.reason}\n"
            )
    return well


def _run_rewrite(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rewriter.html import rewrite_html  # the HTML stack loads only for the verbs that use it

    policy = _policy(args)
    several = len(args.files) > 1
    target = Path(args.output) if args.output and args.output != "-" else None
    if several and (target is None or (target.exists() and not target.is_dir())):
        err.write("rewriter rewrite: several inputs need -o DIR, a folder for the outputs\n")
        return EXIT_USAGE
    if several:
        target.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    status = EXIT_OK
    for name in args.files:
        shown = _shown(name)
        result = _run_engine(
            "rewrite", name, lambda data: rewrite_html(data, url=args.url, charset=args.charset, policy=policy), err
        )
        if result is None:
            status = EXIT_SOME_FAILED
            continue
        if not _report(shown, result, err):
            status = EXIT_SOME_FAILED
        try:
            if target is None:
                _write_bytes(out, result.output)
            else:
                destination = target / Path(name).name if several else target
                _write_atomically(destination, result.output)
        except OSError as error:
            err.write(f"rewriter rewrite: cannot write the output of {shown}: {error.strerror or error}\n")
            status = EXIT_SOME_FAILED
    return status


def _write_bytes(out: TextIO, data: bytes) -> None:
    """Bytes to a text stream: to its binary buffer when it has one (a real stdout)."""
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8", "surrogateescape"))
        return
    out.flush()
    buffer.write(data)
    buffer.flush()


def _run_links(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rewriter.html import find_links

    name = args.files[0]
    policy = _policy(args)
    result = _run_engine(
        "links", name, lambda data: find_links(data, url=args.url, charset=args.charset, policy=policy), err
    )
    if result is None:
        return EXIT_SOME_FAILED
    for link in result.links:
        if args.json:
            out.write(json.dumps(link._asdict(), ensure_ascii=False) + "\n")
        else:
            resolved = link.resolved if link.resolved is not None else "-"
            out.write(f"{link.element}\t{link.attribute}\t{link.status}\t{link.original}\t{resolved}\n")
    return EXIT_OK if _report(_shown(name), result, err) else EXIT_SOME_FAILED


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
            resolve_all(_lines(path), _shown(path))
        except OSError as error:
            err.write(f"rewriter resolve: cannot read {path}: {error.strerror or error}\n")
            status = EXIT_SOME_FAILED
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
