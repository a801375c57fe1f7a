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
    from rewriter.html import HTMLResult, Link
    from rewriter.mailbox import MboxReport
    from rewriter.mime import MessageResult

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

    explain = verbs.add_parser(
        "explain",
        help="show the MIME tree with each part's base and where it came from",
        description=(
            "Show FILE's structure: for each MIME part its type, its effective base URL, which layer gave it "
            "(a <base> element, a Base/Content-Base/Content-Location header of which part, the retrieval URL) "
            "and how many links would be rewritten, kept, or left relative. A plain HTML file is one document."
        ),
        epilog="Example: rewriter explain saved.mhtml --json",
    )
    explain.add_argument("files", metavar="FILE", nargs=1, help="a message, MHTML archive or HTML document")
    explain.add_argument("--json", action="store_true", help="the tree as one JSON object")
    _document_options(explain)
    explain.set_defaults(run=_run_explain)
    return parser


def _document_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("auto", "html", "css", "message", "mbox"),
        default="auto",
        help="what the input is (default: told by its content: an mbox, a MIME message or MHTML, CSS, HTML)",
    )
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


class _Document:
    """One input read and run through the engine its format needs: what the verbs share."""

    def __init__(self, name: str, fmt: str, result: HTMLResult | MessageResult) -> None:
        self.name = name
        self.format = fmt
        self.result = result

    @property
    def output(self) -> bytes:
        return self.result.output

    def located_links(self) -> Iterator[tuple[str, Link]]:
        """(where, link) for every link: the part path for a message, "" for a document."""
        parts = getattr(self.result, "parts", None)
        if parts is None:
            for link in self.result.links:
                yield "", link
            return
        for part in parts:
            for link in part.links:
                yield part.path, link

    def report(self, err: TextIO) -> bool:
        """Name on stderr every problem and every link that stayed relative; True if all went well."""
        well = True
        for problem in self.result.problems:
            err.write(f"rewriter: {self.name}: {problem}\n")
        for where, link in self.located_links():
            if link.status in ("no-base", "unresolvable"):
                well = False
                part = f"part {where}: " if where else ""
                err.write(
                    f"rewriter: {self.name}: {part}<{link.element} {link.attribute}> {link.original!r} at bytes "
                    f"{link.start}-{link.end}: {link.status}: {link.reason}\n"
                )
        return well


def _read(verb: str, path: str, err: TextIO) -> bytes | None:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as error:
        err.write(f"rewriter {verb}: cannot read {_shown(path)}: {error.strerror or error}\n")
        return None


def _run_engine(
    verb: str, path: str, data: bytes, args: argparse.Namespace, err: TextIO, *, rewrite: bool
) -> _Document | None:
    """Run the engine *data*'s format needs (told by its content, the name only breaking
    ties); None, with the file and the reason on stderr, when the policy refuses it."""
    from rewriter.html import NoBaseError, find_links, rewrite_html
    from rewriter.mailbox import detect_format
    from rewriter.mime import find_message_links, rewrite_message

    policy = _policy(args)
    fmt = args.format if getattr(args, "format", "auto") != "auto" else detect_format(data[:65536], path)
    try:
        if fmt in ("message", "mbox"):  # one message read whole (mbox streams elsewhere)
            engine = rewrite_message if rewrite else find_message_links
            result: HTMLResult | MessageResult = engine(data, url=args.url, policy=policy)
        elif fmt == "css":
            from rewriter.stylesheet import find_css_links, rewrite_css

            css_engine = rewrite_css if rewrite else find_css_links
            result = css_engine(data, url=args.url, charset=args.charset, policy=policy)
        else:
            html_engine = rewrite_html if rewrite else find_links
            result = html_engine(data, url=args.url, charset=args.charset, policy=policy)
    except NoBaseError as error:
        err.write(f"rewriter {verb}: {_shown(path)}: {error}\n")
        return None
    return _Document(_shown(path), fmt, result)


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


def _run_rewrite(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rewriter.mailbox import detect_format, is_maildir

    several = len(args.files) > 1
    target = Path(args.output) if args.output and args.output != "-" else None
    if several and (target is None or (target.exists() and not target.is_dir())):
        err.write("rewriter rewrite: several inputs need -o DIR, a folder for the outputs\n")
        return EXIT_USAGE
    if several:
        target.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
    status = EXIT_OK
    for name in args.files:
        destination = target / Path(name).name if several and target is not None else target
        if name != "-" and Path(name).is_dir():
            if not is_maildir(Path(name)):
                err.write(f"rewriter rewrite: {name} is a folder but not a Maildir (cur/, new/, tmp/)\n")
                status = EXIT_SOME_FAILED
            elif destination is None:
                err.write(f"rewriter rewrite: the Maildir {name} needs -o DIR, a folder for the rewritten copy\n")
                status = EXIT_SOME_FAILED
            elif not _rewrite_maildir(Path(name), destination, args, err):
                status = EXIT_SOME_FAILED
            continue
        if name != "-" and _is_mbox(Path(name), detect_format):
            if not _rewrite_mbox(name, destination, args, out, err):
                status = EXIT_SOME_FAILED
            continue
        data = _read("rewrite", name, err)
        document = None if data is None else _run_engine("rewrite", name, data, args, err, rewrite=True)
        if document is None:
            status = EXIT_SOME_FAILED
            continue
        if not document.report(err):
            status = EXIT_SOME_FAILED
        try:
            if destination is None:
                _write_bytes(out, document.output)
            else:
                _write_atomically(destination, document.output)
        except OSError as error:
            err.write(f"rewriter rewrite: cannot write the output of {document.name}: {error.strerror or error}\n")
            status = EXIT_SOME_FAILED
    return status


def _is_mbox(path: Path, detect_format: Callable[[bytes, str | None], str]) -> bool:
    try:
        with path.open("rb") as stream:
            return detect_format(stream.read(65536), path.name) == "mbox"
    except OSError:
        return False  # reported when it is read


def _rewrite_mbox(name: str, destination: Path | None, args: argparse.Namespace, out: TextIO, err: TextIO) -> bool:
    """Stream an mbox message by message: memory stays flat whatever its size."""
    from rewriter.mailbox import rewrite_mbox

    well = True
    policy = _policy(args)
    temporary: Path | None = None
    try:
        with open(name, "rb") as source:
            if destination is None:
                sink = getattr(out, "buffer", None)
                if sink is None:
                    err.write("rewriter rewrite: an mbox needs a binary standard output or -o FILE\n")
                    return False
                out.flush()
                reports = list(_mbox_reports(rewrite_mbox(source, sink, url=args.url, policy=policy), name, err))
                sink.flush()
            else:
                handle, temporary_name = tempfile.mkstemp(
                    dir=destination.parent, prefix=f".{destination.name}.", suffix=".tmp"
                )
                temporary = Path(temporary_name)
                with os.fdopen(handle, "wb") as sink:
                    reports = list(_mbox_reports(rewrite_mbox(source, sink, url=args.url, policy=policy), name, err))
                    sink.flush()
                    os.fsync(sink.fileno())
                if destination.exists():
                    os.chmod(temporary, destination.stat().st_mode & 0o7777)
                os.replace(temporary, destination)
                temporary = None
        well = all(reports)
    except OSError as error:
        err.write(f"rewriter rewrite: {name}: {error.strerror or error}\n")
        well = False
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
    return well


def _mbox_reports(reports: Iterable[MboxReport], name: str, err: TextIO) -> Iterator[bool]:
    """Each message's problems on stderr, numbered from 1; True for a message that went well."""
    for report in reports:
        for problem in report.problems:
            err.write(f"rewriter: {name}: message {report.index + 1}: {problem}\n")
        if report.relative:
            err.write(f"rewriter: {name}: message {report.index + 1}: {report.relative} link(s) left relative\n")
        yield not report.relative


def _rewrite_maildir(folder: Path, destination: Path, args: argparse.Namespace, err: TextIO) -> bool:
    from rewriter.mailbox import rewrite_maildir

    well = True
    for report in rewrite_maildir(folder, destination, url=args.url, policy=_policy(args)):
        for problem in report.problems:
            err.write(f"rewriter: {folder}: {problem}\n")
        if report.relative:
            err.write(f"rewriter: {report.path}: {report.relative} link(s) left relative\n")
        well = well and not report.relative and report.target is not None
    return well


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
    name = args.files[0]
    data = _read("links", name, err)
    document = None if data is None else _run_engine("links", name, data, args, err, rewrite=False)
    if document is None:
        return EXIT_SOME_FAILED
    for where, link in document.located_links():
        if args.json:
            record = link._asdict()
            if document.format in ("message", "mbox"):
                record = {"part": where, **record}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            resolved = link.resolved if link.resolved is not None else "-"
            part = f"{where}\t" if document.format in ("message", "mbox") else ""
            out.write(f"{part}{link.element}\t{link.attribute}\t{link.status}\t{link.original}\t{resolved}\n")
    return EXIT_OK if document.report(err) else EXIT_SOME_FAILED


def _run_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The MIME tree (or the one document): each part's type, base, where the base came
    from, and how many links were rewritten, kept and left relative."""
    name = args.files[0]
    data = _read("explain", name, err)
    document = None if data is None else _run_engine("explain", name, data, args, err, rewrite=False)
    if document is None:
        return EXIT_SOME_FAILED
    rows = _explain_rows(document)
    if args.json:
        out.write(
            json.dumps(
                {
                    "file": document.name,
                    "format": document.format,
                    "parts": rows,
                    "problems": list(document.result.problems),
                },
                ensure_ascii=False,
                indent=2,
            )
            + "\n"
        )
    else:
        out.write(f"{document.name} ({document.format})\n")
        for row in rows:
            indent = "  " * (row["path"].count(".") + 1) if row["path"] else "  "
            label = f"{row['path']} " if row["path"] else ""
            out.write(f"{indent}{label}{row['type']}")
            if row["action"] in ("rewritten", "unchanged", "skipped") or row["links"]:
                count = row["links"]
                out.write(
                    f": {count} link{'' if count == 1 else 's'}, {row['rewritten']} to rewrite, {row['kept']} kept, "
                    f"{row['relative']} left relative"
                )
            out.write("\n")
            base = row["base"] if row["base"] is not None else "none"
            source = row["layer"] or "no layer"
            if row["origin"]:
                source += f" of part {row['origin']}"
            out.write(f"{indent}  base: {base} ({source})\n")
        for problem in document.result.problems:
            out.write(f"  problem: {problem}\n")
    return EXIT_OK


def _explain_rows(document: _Document) -> list[dict[str, object]]:
    parts = getattr(document.result, "parts", None)
    if parts is None:
        result = document.result
        links = result.links
        entries = [
            (
                "",
                "text/css" if document.format == "css" else "text/html",
                result.base,
                result.layer,
                None,
                links,
                "document",
            )
        ]
    else:
        entries = [(p.path, p.content_type, p.base, p.layer, p.origin, p.links, p.action) for p in parts]
    rows: list[dict[str, object]] = []
    for path, kind, base, layer, origin, links, action in entries:
        rows.append(
            {
                "path": path,
                "type": kind,
                "action": action,
                "base": base,
                "layer": layer,
                "origin": origin,
                "links": len(links),
                "rewritten": sum(1 for link in links if link.status == "rewritten"),
                "kept": sum(1 for link in links if link.status in ("absolute", "same-document")),
                "relative": sum(1 for link in links if link.status in ("no-base", "unresolvable")),
            }
        )
    return rows


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
