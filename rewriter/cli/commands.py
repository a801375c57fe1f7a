"""The ``rewriter`` command line: git-style verbs over the library.

Exit codes, for every verb:

- 0: everything asked for was done;
- 1: some item (a reference, a link left relative, a file that cannot be read or
  written) could not be done; the others were, and each failure is named on
  standard error;
- 2: the command itself is wrong (a usage error).

Every message and listing the command writes (standard error; the text of ``links`` and
``explain``) has the characters that could drive a terminal escaped by :func:`escape_controls`,
as ``ls`` and git do: what comes from the documents (file names, URLs, headings, part names)
never reaches the terminal raw. Outputs that are data are written as they are: a rewritten
document, ``resolve``'s URLs; JSON (``--json``, ``--report``) is valid JSON with those characters
written as ``\\u`` escapes.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from rewriter import __version__
from rewriter.policy import Policy
from rewriter.run.report import escape_controls, json_text
from rewriter.url.resolve import RULES, Resolver, UnresolvableReference

if TYPE_CHECKING:
    from rewriter.containers.formats import Kind
    from rewriter.run.batch import Job, Outcome, Settings
    from rewriter.run.journal import Journal
    from rewriter.run.pipeline import Leftovers
    from rewriter.run.report import ReportFile

EXIT_OK = 0
EXIT_SOME_FAILED = 1
EXIT_USAGE = 2


_json = json_text  # JSON that stays JSON, with what could drive a terminal escaped (rewriter.run.report)


class _Escaping:
    """A text stream for messages: every write goes through :func:`escape_controls`, but
    for the line end that closes it (a line end inside a write is escaped: one message,
    one line). With no stream (standard error closed, ``2>&-``), nothing can be said: writes
    are dropped."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is None:
            return len(text)
        body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        return self.stream.write(escape_controls(body) + end)

    def flush(self) -> None:
        if self.stream is not None:
            self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())


@dataclass(frozen=True, slots=True)
class _Option:
    """What a configuration file may set: an option's destination, how argparse stores it
    (``store``, ``store_true``, ``append``, ...), its type and its choices."""

    dest: str
    action: str
    type: object
    choices: tuple[object, ...] | None


class _Parser(argparse.ArgumentParser):
    """argparse that says which verb a usage error belongs to, and exits 2, and that keeps
    a record of each option it is given (``options``) and of its verbs (``verbs``), so that
    configuration files are checked against the options themselves, through no private name
    of argparse."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options: dict[str, _Option] = {}  # before argparse adds its own -h
        self.verbs: dict[str, _Parser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return self.record(super().add_argument(*args, **kwargs), kwargs.get("action", "store"))

    def record(self, added: argparse.Action, action: object = "store") -> argparse.Action:
        """Keep *added* (an option of this parser, or of a group of it) in ``options``."""
        choices = tuple(added.choices) if isinstance(added.choices, (list, tuple, set, frozenset)) else None
        # The first option of a destination is the one a configuration file sets (a switch's
        # --no- opposite, with the same destination, only turns it off again).
        self.options.setdefault(added.dest, _Option(added.dest, str(action), added.type, choices))
        return added

    def add_verb(self, verbs: Any, name: str, **kwargs: Any) -> _Parser:
        """``verbs.add_parser(name, ...)``, recorded as one of this parser's verbs."""
        parser: _Parser = verbs.add_parser(name, **kwargs)
        self.verbs[name] = parser
        return parser

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> _Parser:
    parser = _Parser(
        prog="rewriter",
        description="Make every relative link in HTML documents and MIME messages absolute.",
        epilog="Exit codes: 0 all done, 1 some item failed (each named on stderr, the others done), 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"rewriter {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)

    resolve = parser.add_verb(
        verbs,
        "resolve",
        help="resolve references against a base URL",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  rewriter resolve http://a/b/c/d ../g '#f'\n"
            "  rewriter resolve --rules whatwg 'http://a/b/' 'https:g'\n"
            "  rewriter resolve https://example.org/ --file references.txt\n\n"
            "exit codes: 0 all resolved; 1 some reference could not be (each named on stderr); 2 usage error"
        ),
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
    _switch(resolve, "--non-strict", "rfc2396/rfc3986: read a scheme equal to the base's as relative (http:g)")
    resolve.set_defaults(run=_run_resolve)

    rewrite = parser.add_verb(
        verbs,
        "rewrite",
        help="make every relative link of pages, style sheets and mail absolute",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Rewrite each INPUT with every relative URL made absolute and no other byte changed. An INPUT is an\n"
            "HTML page, a CSS file, a message (.eml, .mht, .mhtml), an mbox, a Maildir, a folder (each of its\n"
            "files that is one of these, whatever its name; --include and --exclude filter on top) or '-' for\n"
            "standard input; the content tells which. A script, an image or data is copied as it is.\n\n"
            "Output: standard output for one file; -o FILE for one input; -o DIR for several, or a folder,\n"
            "where each file keeps its path; or --in-place (with --backup SUFFIX to keep the old files).\n"
            "Every file is written atomically (a temporary file in the same folder, fsync, rename): it holds\n"
            "its old content or its new one, never a part. A file whose output equals its input is not\n"
            "rewritten in place. One bad file is named on stderr and the others still done."
        ),
        epilog=(
            "examples:\n"
            "  rewriter rewrite saved.html --url https://example.org/docs/page.html -o page.html\n"
            "  rewriter rewrite - --url https://example.org/ < page.html > absolute.html\n"
            "  rewriter rewrite pages/ -o absolute/ -j 4 --report links.jsonl\n"
            "  rewriter rewrite archive/ --in-place --backup .orig --exclude 'drafts/*'\n"
            "  rewriter rewrite mail.mbox -o absolute.mbox\n"
            "  rewriter rewrite ~/Maildir -o ~/Maildir-absolute\n\n"
            "exit codes: 0 all done; 1 some file, part or link failed (each named on stderr); 2 usage error"
        ),
    )
    rewrite.add_argument("files", metavar="INPUT", nargs="+", help="a file, a folder, a Maildir, or '-' for stdin")
    where = rewrite.add_mutually_exclusive_group()
    rewrite.record(where.add_argument("-o", "--output", metavar="OUT", help="output file ('-' for stdout), or folder"))
    in_place = where.add_argument("-i", "--in-place", action="store_true", help="replace each input with its output")
    rewrite.record(in_place, "store_true")
    rewrite.add_argument("--backup", metavar="SUFFIX", help="with --in-place: keep each old file as NAME+SUFFIX")
    rewrite.add_argument(
        "--include",
        metavar="GLOB",
        action="append",
        default=None,
        help="in folders, take only the documents matching GLOB (a path under the folder, or a file name; "
        "repeatable; default: every file whose content is a document, whatever its name)",
    )
    rewrite.add_argument(
        "--exclude", metavar="GLOB", action="append", default=None, help="in folders, leave out GLOB (repeatable)"
    )
    _switch(
        rewrite,
        "--no-copy-others",
        "with -o DIR, do not copy a folder's files that are not rewritten (by default they are copied unchanged, "
        "so that DIR is a complete mirror)",
        opposite="--copy-others",
    )
    _switch(
        rewrite,
        "--no-fsync",
        "write each file without fsync: still atomic (a reader or a killed run sees the old file or the new), but "
        "a crash of the system may lose files written just before it; for outputs that can be made again",
        opposite="--fsync",
    )
    rewrite.add_argument(
        "-j", "--jobs", metavar="N", type=int, default=None, help="worker processes (default: the machine's cores)"
    )
    rewrite.add_argument(
        "--report",
        metavar="FILE",
        help="write every link of every file and part to FILE: JSON Lines, or one JSON array if FILE ends in .json",
    )
    rewrite.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run on Dask: a dask.distributed scheduler address (tcp://host:8786), or 'local' for Dask's local "
        "processes (needs the dask extra; workers read and write the paths, so a cluster needs a shared file system)",
    )
    _switch(
        rewrite,
        "--resume",
        "go on with a run that was stopped (killed, or the machine went down): the inputs its journal says are "
        "done, and are unchanged since, are not done again (the journal is kept in OUT/.rewriter-run/, or beside "
        "an output file, until a run ends)",
    )
    _switch(rewrite, "--quiet", "say nothing but errors: no progress bar, no line per file, no summary", short="-q")
    _switch(rewrite, "--verbose", "also name each link left relative (--report has every link)", short="-v")
    _max_size_option(
        rewrite,
        "a document larger than SIZE (bytes, or with K, M, G) is copied unchanged and named, not held in memory; "
        "each message of an mbox too, up to 64M, and each body of a WARC, counted as decoded (default: 1G)",
    )
    rewrite.add_argument(
        "--piece-size",
        metavar="SIZE",
        type=_size,
        default=None,
        help="an mbox or a WARC larger than SIZE (bytes, or with K, M, G) written to a file is done in pieces of "
        "about SIZE, each a job of its own, so that every worker shares it (default: 64M)",
    )
    _document_options(rewrite)
    _collection_options(rewrite)
    rewrite.set_defaults(run=_run_rewrite)

    links = parser.add_verb(
        verbs,
        "links",
        help="list every link of a document, message, mbox, Maildir or WARC",
        description=(
            "List every URL the engine finds in FILE: element, attribute, status, value as written, resolved. "
            "In a message each link is preceded by its part; in an mbox or a Maildir, by its message too; "
            "in a WARC, by the URL of its page."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  rewriter links saved.html --url https://example.org/\n"
            "  rewriter links message.eml --json\n\n"
            "exit codes: 0 every link resolved; 1 some link left relative or the file unreadable; 2 usage error"
        ),
    )
    links.add_argument(
        "files", metavar="FILE", nargs=1, help="a page, style sheet, message, mbox, Maildir or WARC, or '-' for stdin"
    )
    _switch(links, "--json", "one JSON object per link (JSON Lines)")
    _document_options(links)
    _collection_options(links)
    _max_size_option(
        links,
        "a document larger than SIZE (bytes, or with K, M, G), or a WARC body decoded to more, "
        "is named and not read (default: 1G)",
    )
    links.set_defaults(run=_run_links)

    unpack = parser.add_verb(
        verbs,
        "unpack",
        help="unpack an MHTML archive, a message or a WARC into a folder a browser opens offline",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Write every part of FILE (.mhtml, .mht, .eml, or a WARC) to a file of its own in DIR, the root\n"
            "document as DIR/index.html. In HTML and CSS, each reference to a part of the archive (RFC 2557\n"
            "§8: its resolved URL is the part's Content-Location, or a cid: URL its Content-ID; in a WARC, a\n"
            "record's URL, redirects followed) points at that part's file by a relative path; every other\n"
            "reference is made absolute. Names come from the parts, made safe: nothing is written outside\n"
            "DIR, nothing already there is replaced, and DIR/manifest.json keeps each part's original names.\n"
            "A WARC is mirrored as folders, one per host and path."
        ),
        epilog=(
            "examples:\n"
            "  rewriter unpack saved.mhtml -o saved/\n"
            "  rewriter unpack crawl.warc.gz -o mirror/\n\n"
            "exit codes: 0 unpacked; 1 unpacked with problems (named on stderr), or not unpacked; 2 usage error"
        ),
    )
    unpack.add_argument("files", metavar="FILE", nargs=1, help="an MHTML archive, a message, a WARC, or '-'")
    unpack.add_argument("-o", "--output", metavar="DIR", required=True, help="the folder to write (made if missing)")
    _document_options(unpack)
    _max_size_option(
        unpack,
        "a body of a WARC decoded to more than SIZE (bytes, or with K, M, G) is named and not written (default: 1G)",
    )
    unpack.set_defaults(run=_run_unpack)

    pack = parser.add_verb(
        verbs,
        "pack",
        help="pack a saved page and its local files into one MHTML (or one HTML with data: URLs)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Read PAGE and the local files it references (the page_files/ folder a browser saves, or any\n"
            "file under the page's folder; nothing outside it, nothing fetched) and write one MHTML file\n"
            "(RFC 2557) whose parts carry their absolute URLs as Content-Location: the page's --url, else\n"
            "the browser's 'saved from' mark, else its <base>, else its file: URL. The HTML is kept byte for\n"
            "byte but the rewritten references. --single-file writes one HTML file instead, each local\n"
            "resource inlined as a data: URL."
        ),
        epilog=(
            "examples:\n"
            "  rewriter pack saved.html -o saved.mhtml\n"
            "  rewriter pack saved.html --url https://example.org/a.html --single-file saved-one.html\n\n"
            "exit codes: 0 packed; 1 packed with problems (named on stderr), or not packed; 2 usage error"
        ),
    )
    pack.add_argument("files", metavar="PAGE", nargs=1, help="a saved HTML page")
    output = pack.add_mutually_exclusive_group(required=True)
    pack.record(output.add_argument("-o", "--output", metavar="OUT", help="the MHTML file to write"))
    pack.record(output.add_argument("--single-file", metavar="OUT", help="write one HTML file with data: URLs instead"))
    _document_options(pack)
    pack.set_defaults(run=_run_pack)

    explain = parser.add_verb(
        verbs,
        "explain",
        help="show the MIME tree with each part's base and where it came from",
        description=(
            "Show FILE's structure: for each MIME part its type, its effective base URL, which layer gave it "
            "(a <base> element, a Base/Content-Base/Content-Location header of which part, the retrieval URL) "
            "and how many links would be rewritten, kept, or left relative. A plain HTML file is one document; "
            "an mbox or a Maildir, each of its messages; a WARC, each of its pages."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  rewriter explain saved.mhtml\n"
            "  rewriter explain message.eml --url https://example.org/ --json\n\n"
            "exit codes: 0 shown; 1 the file could not be read or recognised; 2 usage error"
        ),
    )
    explain.add_argument(
        "files", metavar="FILE", nargs=1, help="a message, MHTML archive, HTML document, mbox, Maildir or WARC"
    )
    _switch(explain, "--json", "the tree as one JSON object")
    _document_options(explain)
    _collection_options(explain)
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
    _switch(parser, "--non-strict", "rfc2396/rfc3986: read http:g as relative")
    _switch(parser, "--absolutize-fragments", "also make #frag and empty references absolute")
    _switch(parser, "--remove-base", "drop the <base> element instead of fixing it")
    _switch(parser, "--no-lazy", "leave lazy-loading data-* attributes alone", opposite="--lazy")
    _switch(
        parser,
        "--no-conditional-comments",
        "leave links inside <!--[if IE]> comments alone",
        opposite="--conditional-comments",
    )
    _switch(parser, "--canonical-base", "with no --url, take <link rel=canonical> / og:url as it")
    _switch(parser, "--require-base", "a page with relative links and no base fails")


def _collection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url-root",
        metavar="URL",
        help="each file's retrieval URL is URL joined with its path under its input folder (a file named alone: "
        "its name); 'auto' (or auto:https) for a wget or HTTrack mirror whose folders are named by host",
    )
    parser.add_argument(
        "--url-map",
        metavar="FILE",
        help='each file\'s retrieval URL from FILE: CSV lines path,url or JSON Lines {"path": ..., "url": ...}, '
        "a path under its input folder; asked before --url-root and --url",
    )
    _switch(
        parser,
        "--absolutize-local",
        "make absolute even a relative link to a file of the input folder (a saved page's NAME_files/ copy), "
        "which is kept as written by default",
    )


def _switch(
    parser: argparse.ArgumentParser, option: str, help: str, *, opposite: str | None = None, short: str | None = None
) -> None:
    """An on/off option, off by default, and its opposite (``--no-`` + the name, or *opposite*
    for one that is itself a ``--no-``), which turns off what a configuration file turned on.
    The opposite stays out of ``--help``; the README's CONFIGURATION section names the rule."""
    names = [short, option] if short else [option]
    action = parser.add_argument(*names, action="store_true", help=help)
    parser.add_argument(
        opposite or "--no-" + option.removeprefix("--"), dest=action.dest, action="store_false", help=argparse.SUPPRESS
    )


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


def _read(verb: str, path: str, err: TextIO) -> bytes | None:
    try:
        return sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as error:
        err.write(f"rewriter {verb}: cannot read {_shown(path)}: {error.strerror or error}\n")
        return None


def _size(text: str) -> int:
    """A size for --max-size: bytes, or a number with K, M or G (powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().removesuffix("B")
    factor = units.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in units else text
    try:
        value = int(number) * factor
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (bytes, or a number with K, M or G)") from None
    if value < 1:
        raise argparse.ArgumentTypeError("a size must be positive")
    return value


def _max_size_option(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--max-size", metavar="SIZE", type=_size, default=None, help=help)


def _max_size(args: argparse.Namespace) -> int:
    """--max-size, or the run's default (a WARC body's decoded bytes are counted against it)."""
    from rewriter.run.batch import Settings

    max_size = getattr(args, "max_size", None)
    return Settings().max_size if max_size is None else int(max_size)


def _settings(args: argparse.Namespace, *, records: bool = False) -> Settings:
    from rewriter.run.batch import Settings

    return Settings(
        policy=_policy(args),
        url=args.url,
        charset=args.charset,
        format=args.format,
        backup=getattr(args, "backup", None),
        records=records,
        locations=getattr(args, "locations", None),
        local_copies=not getattr(args, "absolutize_local", False),
        sync=not getattr(args, "no_fsync", False),
        max_size=_max_size(args),
    )


def _report_over_an_input(report: str | None, files: Sequence[str]) -> str | None:
    """The input that writing the report *report* would replace: a file named among *files*, or an
    existing file inside a folder named there (which the run reads). A report is never an input,
    with --in-place or without: the run would read one and write the other over it."""
    if not report or report == "-" or not os.path.lexists(report):
        return None
    for name in files:
        if name == "-":
            continue
        if _same_path(Path(report), Path(name)):
            return name
        if os.path.isdir(name):
            folder = os.path.realpath(name)
            if os.path.commonpath([folder, os.path.realpath(report)]) == folder:
                return report
    return None


def _run_rewrite(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rewriter.containers.pieces import PIECE_SIZE
    from rewriter.run.batch import iter_plan, kinds_of

    if args.backup and not args.in_place:
        err.write("rewriter rewrite: --backup goes with --in-place\n")
        return EXIT_USAGE
    if args.in_place and "-" in args.files:
        err.write("rewriter rewrite: standard input cannot be rewritten in place\n")
        return EXIT_USAGE
    if args.jobs is not None and args.jobs < 1:
        err.write("rewriter rewrite: -j needs at least 1\n")
        return EXIT_USAGE
    if args.output and args.output != "-" and len(args.files) > 1 and Path(args.output).is_file():
        err.write(f"rewriter rewrite: several inputs need -o DIR, and {args.output} is a file\n")
        return EXIT_USAGE
    if len(args.files) > 1 and not args.in_place and args.output in (None, "-"):
        err.write("rewriter: several inputs need -o DIR (a folder for the outputs) or --in-place\n")
        return EXIT_USAGE
    if args.resume and not args.in_place and args.output in (None, "-"):
        err.write("rewriter rewrite: --resume needs -o or --in-place: a run to standard output keeps no journal\n")
        return EXIT_USAGE
    overwritten = _report_over_an_input(args.report, args.files)
    if overwritten:
        err.write(f"rewriter rewrite: --report {args.report} would overwrite {overwritten}, an input of this run\n")
        return EXIT_USAGE
    kinds = kinds_of(args.files)  # what each named file is, told once: the planner reads it too
    warc_status, others, mirrors = _rewrite_warcs(args, err, kinds)
    if warc_status == EXIT_USAGE or not (others or mirrors):
        return warc_status
    batch = bool(mirrors) or len(args.files) > 1 or any(Path(name).is_dir() for name in args.files if name != "-")
    quiet = args.quiet or not batch
    options = {
        "in_place": args.in_place,
        "include": args.include or (),
        "exclude": args.exclude or (),
        "copy_others": not args.no_copy_others,
        "backup": args.backup,
        "kinds": kinds,
    }
    settings = replace(_settings(args, records=bool(args.report)), report_text=bool(args.report))
    journal = _journal(args, err, batch)
    if isinstance(journal, int):
        return journal
    from rewriter.run.pipeline import Leftovers

    leftovers = Leftovers(settings.backup)  # the temporary files a killed run left where this one writes
    executor = _executor(args, err)
    if isinstance(executor, int):
        return executor
    started = time.perf_counter()
    total = 0
    if not quiet and getattr(err, "isatty", lambda: False)():  # the bar's length: a walk that keeps nothing
        total = len(mirrors) + sum(1 for item in iter_plan(others, args.output, **options) if not isinstance(item, str))
    progress = _progress(total, err, quiet)
    size = args.piece_size or PIECE_SIZE
    pieces: dict[str, Any] = {"piece_size": size, "max_message": settings.max_size} if journal is not None else {}
    plan = _planned(args, others, mirrors, journal, leftovers, settings, **pieces, **options)
    status = warc_status
    run = _RunTotals()
    report = None
    try:
        if args.report:
            try:
                from rewriter.disk.files import remove_temporaries_of

                leftovers.removed += remove_temporaries_of(Path(args.report))
                report = _report_file(Path(args.report), sync=settings.sync)
            except OSError as error:
                err.write(f"rewriter rewrite: cannot write the report {args.report}: {error.strerror or error}\n")
                return EXIT_SOME_FAILED
        for item in _released(plan, settings, executor, journal, leftovers):
            if isinstance(item, str):
                progress.write(item)
                run.unplanned += 1
                status = EXIT_SOME_FAILED
                continue
            if report is not None:
                report.add(item.report)
                if item.report_file is not None and journal is not None:  # the work folder's (checked)
                    report.add_file(Path(item.report_file), root=journal.root)
            item.report = ""
            if item.output is not None:
                try:
                    _write_bytes(out, item.output)
                except OSError as error:
                    progress.write(f"rewriter: {item.shown}: cannot write to standard output: {error.strerror}")
                    item.ok = False
                item.output = None
            for line in run.add(item, quiet=args.quiet, verbose=args.verbose):
                progress.write(line)
            if not item.ok:
                status = EXIT_SOME_FAILED
            if item.piece is None or item.piece.last:
                progress.update(1)
        if report is not None:
            try:
                report.commit()
            except OSError as error:
                err.write(f"rewriter rewrite: cannot write the report {args.report}: {error.strerror or error}\n")
                status = EXIT_SOME_FAILED
            report = None
        if journal is not None:
            journal.close(finished=True)
            journal = None
    finally:
        progress.close()
        if report is not None:
            report.discard()
        if journal is not None:
            journal.close(finished=False)
        close = getattr(executor, "close", None)
        if close is not None:
            close()
    if not quiet:
        err.write(_summary(run.figures, time.perf_counter() - started, run.unplanned) + "\n")
        for line in run.closing():
            err.write(line + "\n")
    if leftovers.removed and not args.quiet:
        plural = "file" if leftovers.removed == 1 else "files"
        err.write(f"rewriter: removed {leftovers.removed:,} temporary {plural} a killed run left\n")
    return status


def _released(
    plan: Iterable[Job | str],
    settings: Settings,
    executor: object,
    journal: Journal | None,
    leftovers: Leftovers | None = None,
) -> Iterator[Outcome | str]:
    """The pipeline's outcomes; before forking workers, the engines are imported (so that
    each worker starts with them) and the collector's objects frozen."""
    import gc

    from rewriter.run.executors import Processes, tune_allocator
    from rewriter.run.pipeline import execute

    tune_allocator()  # this process's, and those of the workers it forks
    forking = isinstance(executor, Processes)
    if forking:
        from rewriter.run.batch import warm_up

        warm_up()
        gc.freeze()
    try:
        yield from execute(plan, settings, executor, journal=journal, leftovers=leftovers)  # type: ignore[arg-type]
    finally:
        if forking:
            gc.unfreeze()


def _report_file(path: Path, *, sync: bool = True) -> ReportFile:
    from rewriter.run.report import ReportFile

    return ReportFile(path, sync=sync)


def _executor(args: argparse.Namespace, err: TextIO) -> object | int:
    """The executor the options ask for, or the exit status of why there is none."""
    from rewriter.run.executors import DaskExecutor, DaskMissing, Processes, Serial

    workers = args.jobs or os.cpu_count() or 1
    if args.dask:
        try:
            executor = DaskExecutor(None if args.dask == "local" else args.dask, workers=args.jobs)
            executor.open()
        except DaskMissing as error:
            err.write(f"rewriter rewrite: {error}\n")
            return EXIT_USAGE
        except OSError as error:  # the scheduler cannot be reached
            err.write(f"rewriter rewrite: Dask at {args.dask}: {error.strerror or error}\n")
            return EXIT_SOME_FAILED
        return executor
    single = len(args.files) == 1 and not (args.files[0] != "-" and Path(args.files[0]).is_dir())
    if workers <= 1 or (single and not _large(args.files[0], args.piece_size)):
        return Serial()
    return Processes(workers)


def _large(name: str, piece_size: int | None) -> bool:
    """Whether the one input is large enough to be done in pieces (then by several workers)."""
    from rewriter.containers.pieces import PIECE_SIZE

    with contextlib.suppress(OSError):
        return name != "-" and os.stat(name).st_size >= (piece_size or PIECE_SIZE)
    return False


# The options a journal is bound to: a run resumed with other values would write other outputs.
_JOURNAL_OPTIONS = (
    "files",
    "output",
    "in_place",
    "backup",
    "include",
    "exclude",
    "no_copy_others",
    "max_size",
    "url",
    "url_root",
    "url_map",
    "absolutize_local",
    "charset",
    "format",
    "rules",
    "non_strict",
    "absolutize_fragments",
    "remove_base",
    "no_lazy",
    "no_conditional_comments",
    "canonical_base",
    "require_base",
    "report",
    "piece_size",
)


def _journal(args: argparse.Namespace, err: TextIO, batch: bool) -> Journal | int | None:
    """The run's journal (None for a run that keeps none: standard output, or one small
    file), or the exit status of why it cannot be kept."""
    from rewriter.disk.files import Refused
    from rewriter.run.journal import Journal, JournalError, work_folder_for

    if args.output in (None, "-") and not args.in_place:
        return None
    if not batch and not _large(args.files[0], args.piece_size):
        return None
    if args.in_place:
        first = Path(args.files[0])
        folder = work_folder_for(first, folder=first.is_dir())
    else:
        output = Path(args.output)
        if any(_same_path(Path(name), output) for name in args.files if name != "-"):
            return None  # every job would be refused (the output is the input): nothing to keep
        as_folder = len(args.files) > 1 or args.output.endswith(("/", os.sep)) or output.is_dir()
        as_folder = as_folder or any(Path(name).is_dir() for name in args.files if name != "-")
        folder = work_folder_for(output, folder=as_folder)
    fingerprint = {name: _plain(getattr(args, name, None)) for name in _JOURNAL_OPTIONS}
    fingerprint.update(_contents(args))
    existed = os.path.lexists(folder / "journal.jsonl")
    try:
        journal = Journal.open(folder, fingerprint, resume=args.resume)
    except JournalError as error:
        err.write(f"rewriter rewrite: cannot resume: {error}\n")
        return EXIT_USAGE
    except Refused as error:  # a link or a pipe where the run keeps its own files: nothing done
        err.write(f"rewriter rewrite: cannot keep the journal in {folder}: {error}\n")
        return EXIT_USAGE
    except OSError as error:
        err.write(f"rewriter rewrite: cannot keep the journal in {folder}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    if args.resume and not existed and not args.quiet:
        err.write(f"rewriter rewrite: no journal at {folder}: nothing to resume, the run starts from the beginning\n")
    elif existed and not args.resume and not args.quiet:
        err.write(
            f"rewriter rewrite: {folder} held the journal of a run that did not finish: starting over "
            "(--resume goes on from where it stopped)\n"
        )
    return journal


def _contents(args: argparse.Namespace) -> dict[str, object]:
    """The digests of the files whose content decides the outputs, for the journal's
    fingerprint: the --url-map file the run read, and the configuration file (a resumed run
    whose map or configuration changed would mix old outputs and new)."""
    import hashlib  # only for a run that keeps a journal

    found: dict[str, object] = {}
    content = getattr(args, "url_map_content", None)
    if content is not None:
        found["url_map_sha256"] = hashlib.sha256(content).hexdigest()
    configuration = getattr(args, "configuration", None)
    if configuration is not None:
        try:
            digest = hashlib.sha256(Path(configuration).read_bytes()).hexdigest()
        except OSError as error:
            digest = f"unreadable: {error.strerror or error}"
        found["configuration"] = [str(configuration), digest]
    return found


def _same_path(one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


def _plain(value: object) -> object:
    """An option's value as JSON can hold it."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return str(value)


class _RunTotals:
    """The run's figures, kept as the outcomes go by (none of them is held), and what
    standard error says for each input; a container done in pieces is said once, at its end."""

    def __init__(self) -> None:
        from rewriter.run.batch import totals

        self.figures = totals([])
        self.unplanned = 0
        self.retried: list[str] = []
        self.resumed = 0
        self.container: Outcome | None = None  # the pieces of one container so far

    def add(self, outcome: Outcome, *, quiet: bool, verbose: bool) -> list[str]:
        from rewriter.run.batch import count_into

        if outcome.retried is not None:
            self.retried.append(
                outcome.shown if outcome.piece is None else f"{outcome.shown} (piece {outcome.piece.number + 1})"
            )
        self.resumed += outcome.resumed
        whole = outcome if outcome.piece is None else self._merged(outcome)
        if whole is None:
            return []
        count_into(self.figures, whole)
        return _said(whole, quiet=quiet, verbose=verbose)

    def _merged(self, piece: Outcome) -> Outcome | None:
        """The container's outcome when *piece* is its last, else None (its counts kept)."""
        assert piece.piece is not None
        if piece.piece.number == 0 or self.container is None:
            self.container = replace(piece, piece=None, records=[], report="")
        else:
            whole = self.container
            for name in ("rewritten", "kept", "local", "relative", "no_base", "bytes_in", "bytes_out"):
                setattr(whole, name, getattr(whole, name) + getattr(piece, name))
            whole.messages += piece.messages
            whole.warnings += piece.warnings
            whole.details += piece.details
            whole.ok = whole.ok and piece.ok
            if piece.state == "failed" or whole.state == "failed":
                whole.state = "failed"
            elif piece.state == "rewritten":
                whole.state = "rewritten"
        if not piece.piece.last:
            return None
        whole, self.container = self.container, None
        return whole

    def closing(self) -> list[str]:
        """What follows the summary: the jobs done twice, the jobs taken from a journal."""
        lines = []
        if self.resumed:
            lines.append(
                f"rewriter: {self.resumed:,} done by the run that was stopped (its journal says so): not done again"
            )
        if self.retried:
            named = ", ".join(self.retried[:10]) + (
                f" and {len(self.retried) - 10:,} more" if len(self.retried) > 10 else ""
            )
            lines.append(f"rewriter: retried after their worker stopped: {named}")
        return lines


def _warcs(names: list[str], kinds: Mapping[str, Kind | None]) -> list[str]:
    """The web archives (WARC or ARC) among *names*, as *kinds* (rewriter.run.batch.kinds_of) tells
    (rewriter.containers.warc, with warcio and fsspec, is imported only for those: 0.28 s)."""
    return [name for name in names if (kind := kinds.get(name)) is not None and kind.format in ("warc", "arc")]


def _rewrite_warcs(
    args: argparse.Namespace, err: TextIO, kinds: Mapping[str, Kind | None]
) -> tuple[int, list[str], list[Job]]:
    """The web archives named with ``-o DIR``: each a job mirroring it into the folder, its pages
    rewritten against their URLs (the archive itself is never changed), done by the pipeline
    like any input (rewriter.run.pipeline.MirrorFolder); returns the status, the other inputs
    and those jobs. One archive written to ``-o OUT.warc`` or ``OUT.warc.gz``, or to standard
    output, is a WARC out: a job of the pipeline, like any other input (and so is an archive
    found in a folder: it keeps its path and its format)."""
    warcs = _warcs(args.files, kinds)
    if not warcs:
        return EXIT_OK, args.files, []
    if args.in_place:
        err.write(
            f"rewriter rewrite: {warcs[0]} is a web archive: it is never changed in place; give -o OUT.warc.gz "
            "for a WARC with its pages rewritten, or -o DIR/ for a folder of them\n"
        )
        return EXIT_USAGE, args.files, []
    output = args.output
    # -o OUT.warc[.gz] (one input) is a WARC out; any other -o is the folder the pages go to.
    warc_out = len(args.files) == 1 and output is not None and output.lower().endswith((".warc", ".warc.gz"))
    if output in (None, "-") or (warc_out and not Path(output).is_dir()):
        return EXIT_OK, args.files, []
    from rewriter.run.batch import Job

    mirrors = []
    for name in warcs:
        folder = Path(args.output)
        if len(args.files) > 1:  # one folder each, named after the file
            stem = Path(name).name
            for suffix in (".gz", ".warc", ".arc"):
                stem = stem.removesuffix(suffix)
            folder = folder / stem
        kind = kinds[name]
        assert kind is not None  # _warcs took only the named archives
        mirrors.append(Job(name, str(folder), name, format=kind.format, why=kind.reason, mirror=True))
    return EXIT_OK, [name for name in args.files if name not in warcs], mirrors


def _planned(
    args: argparse.Namespace,
    others: list[str],
    mirrors: list[Job],
    journal: Journal | None,
    leftovers: Leftovers,
    settings: Settings,
    **options: Any,
) -> Iterator[Job | str]:
    """The run's plan: the archives mirrored into folders (their pieces), then the other inputs."""
    from rewriter.containers.pieces import PIECE_SIZE
    from rewriter.run.batch import iter_plan
    from rewriter.run.pipeline import MirrorFolder

    for job in mirrors:
        if journal is None:  # never: a run with a folder out keeps one
            yield f"rewriter: {job.shown}: not mirrored: the run keeps no journal"
            continue
        size = args.piece_size or PIECE_SIZE
        yield from MirrorFolder.jobs(job, settings, journal, piece_size=size, leftovers=leftovers)
    if others:
        output = args.output if not mirrors or len(args.files) == 1 else os.path.join(args.output, "")
        yield from iter_plan(others, output, **options)


def _said(outcome: Outcome, *, quiet: bool = False, verbose: bool = False) -> list[str]:
    """What standard error gets for one input: what went wrong, always; unless *quiet*,
    what was left as it was and one line for its links left relative; with *verbose*,
    each of those links too."""
    lines = list(outcome.messages)
    if verbose:
        left = outcome.left_relative()
        return lines + outcome.warnings + ([left] if left is not None else []) + outcome.details
    if quiet:
        return lines
    # One line for the file: its links left relative, then what the engines left as it was.
    prefix = f"rewriter: {outcome.shown}: "
    notes = [warning.removeprefix(prefix) for warning in outcome.warnings]
    if len(notes) > _NOTES:
        notes[_NOTES:] = [f"and {len(notes) - _NOTES:,} more (see -v)"]
    left = outcome.left_relative()
    if left is not None:
        lines.append("; ".join([left, *notes]))
    elif notes:
        lines.append(prefix + "; ".join(notes))
    return lines


_NOTES = 3  # what the engines left as it was, said on a file's line (-v: all of it)


class _Silent:
    """The progress interface, doing nothing but writing messages."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def write(self, message: str) -> None:
        self.err.write(message + "\n")

    def update(self, count: int) -> None:
        pass

    def close(self) -> None:
        pass


class _Bar(_Silent):
    """tqdm's bar on a terminal; messages are written above it, escaped (the bar itself
    is drawn with control characters, so it is given the terminal's own stream)."""

    def __init__(self, total: int, err: TextIO) -> None:
        super().__init__(err)
        from tqdm import tqdm

        self.err = getattr(err, "stream", err)
        self.bar = tqdm(total=total, file=self.err, unit="file", leave=False, dynamic_ncols=True)

    def write(self, message: str) -> None:
        self.bar.write(escape_controls(message), file=self.err)

    def update(self, count: int) -> None:
        self.bar.update(count)

    def close(self) -> None:
        self.bar.close()


def _progress(total: int, err: TextIO, quiet: bool) -> _Silent:
    """A progress bar only on a terminal, and never with -q or for one file."""
    if quiet or total < 2 or not getattr(err, "isatty", lambda: False)():
        return _Silent(err)
    return _Bar(total, err)


def _summary(figures: dict[str, int], seconds: float, unplanned: int) -> str:
    failed = figures["failed_files"] + unplanned
    files = figures["files"] + unplanned
    kept = f"{figures['kept']:,} kept"
    if figures["local"]:
        kept += f" ({figures['local']:,} local)"
    relative = f"{figures['relative']:,} left relative"
    unresolvable = figures["relative"] - figures["no_base"]
    why = [f"{figures['no_base']:,} with no base"] if figures["no_base"] else []
    why += [f"{unresolvable:,} unresolvable"] if unresolvable else []
    if why:
        files_left = figures["relative_files"]
        relative += f" ({', '.join(why)}, in {files_left:,} file{'' if files_left == 1 else 's'})"
    copied = figures["copied_files"]
    others = f"{copied:,} other file{'' if copied == 1 else 's'} copied; " if copied else ""
    return (
        f"rewriter: {files:,} input{'' if files == 1 else 's'}: "
        f"{figures['rewritten_files']:,} rewritten, {figures['unchanged_files']:,} unchanged, {failed:,} failed; "
        f"{others}links: {figures['rewritten']:,} rewritten, {kept}, {relative}; "
        f"{figures['bytes'] / 1e6:,.1f} MB in {seconds:.1f} s"
    )


def _write_bytes(out: TextIO | None, data: bytes) -> None:
    """Bytes to a text stream: to its binary buffer when it has one (a real stdout)."""
    if out is None:
        raise OSError(errno.EBADF, "standard output is closed")
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8", "surrogateescape"))
        return
    out.flush()
    buffer.write(data)
    buffer.flush()


def _dry_run(verb: str, args: argparse.Namespace, *, explain: bool) -> Iterator[Outcome]:
    """Read FILE through the steps of a rewrite (the same plan and pipeline), writing nothing:
    every document of it (each message of an mbox or a Maildir, each page of a WARC) with its
    links and, for *explain*, its rows; an outcome for each job (a piece of a large mbox, or
    the whole file), as they are done."""
    from rewriter.containers.pieces import PIECE_SIZE
    from rewriter.run.batch import Outcome, iter_plan
    from rewriter.run.executors import Serial
    from rewriter.run.pipeline import execute

    name = args.files[0]
    if name != "-" and os.path.isdir(name):
        from rewriter.containers.mailbox import is_maildir  # a folder is read only when it is a Maildir

        if not is_maildir(Path(name)):
            problem = f"a folder, and not a Maildir (cur/, new/, tmp/): {verb} reads one file or Maildir"
            yield Outcome(name).fail(problem)
            return
    settings = replace(_settings(args, records=not explain), explain=explain)
    plan = iter_plan([name], dry=True, piece_size=PIECE_SIZE, max_message=settings.max_size)
    for item in execute(plan, settings, Serial()):
        yield item if isinstance(item, Outcome) else Outcome(name).fail(item.removeprefix(f"rewriter: {name}: "))


def _run_links(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    places = ("record", "message", "part")  # a WARC's page, an mbox's or a Maildir's message, a part
    said = _RunTotals()
    ok = True
    for outcome in _dry_run("links", args, explain=False):
        for record in outcome.records:
            record.pop("file", None)
            if args.json:
                out.write(_json(record) + "\n")
                continue
            # One line a link, tab-separated: each field escaped (its tabs and line ends too).
            resolved = record["resolved"] if record["resolved"] is not None else "-"
            fields = [str(record[place]) for place in places if place in record]
            fields += [str(record[key]) for key in ("element", "attribute", "status", "original")] + [str(resolved)]
            out.write("\t".join(escape_controls(field) for field in fields) + "\n")
        outcome.records = []
        ok = ok and outcome.ok
        for line in said.add(outcome, quiet=False, verbose=False):
            err.write(line + "\n")
    return EXIT_OK if ok else EXIT_SOME_FAILED


def _whole(outcomes: Iterable[Outcome]) -> Outcome:
    """One outcome of a file done in pieces: rows, messages and warnings together."""
    whole: Outcome | None = None
    for outcome in outcomes:
        if whole is None:
            whole = outcome
            continue
        whole.rows += outcome.rows
        whole.messages += outcome.messages
        whole.warnings += outcome.warnings
        whole.ok = whole.ok and outcome.ok
        if outcome.state == "failed":
            whole.state = "failed"
    assert whole is not None
    return whole


def _run_explain(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """The MIME tree (or the one document) of each document of FILE: each part's type, base,
    where the base came from, and how many links were rewritten, kept and left relative."""
    outcome = _whole(_dry_run("explain", args, explain=True))
    for line in outcome.messages:
        err.write(line + "\n")
    if outcome.state == "failed" and not outcome.rows:
        return EXIT_SOME_FAILED
    prefix = f"rewriter: {outcome.shown}: "
    problems = [line.removeprefix(prefix) for line in outcome.warnings]
    if args.json:
        document = {"file": outcome.shown, "format": outcome.format, "parts": outcome.rows, "problems": problems}
        out.write(_json(document, indent=2) + "\n")
        return EXIT_SOME_FAILED if outcome.messages else EXIT_OK
    out = _Escaping(out)  # type: ignore[assignment]  # names, types and bases come from the document
    out.write(f"{outcome.shown} ({outcome.format})\n")
    heading: object = None
    for row in outcome.rows:
        place = next((f"{key} {row[key]}" for key in ("record", "message") if key in row), None)
        if place is not None and place != heading:
            out.write(f"  {place}\n")
            heading = place
        depth = str(row["path"]).count(".") + 1 if row["path"] else 1
        indent = "  " * (depth + (place is not None))
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
        source = str(row["layer"] or "no layer")
        if row["origin"]:
            source += f" of part {row['origin']}"
        out.write(f"{indent}  base: {base} ({source})\n")
    for problem in problems:
        out.write(f"  problem: {problem}\n")
    return EXIT_SOME_FAILED if outcome.messages else EXIT_OK


def _run_unpack(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rewriter.bundle.unpack import UnpackError, unpack_message
    from rewriter.containers.formats import SNIFF_SIZE, what_file_is
    from rewriter.run.batch import kinds_of

    path, folder = args.files[0], Path(args.output)
    name = _shown(path)
    kind = kinds_of([path])[path]  # None for standard input: told from what is read
    if kind is not None and kind.format in ("warc", "arc"):
        from rewriter.containers.warc import unpack_warc

        try:
            report = unpack_warc(Path(path), folder, policy=_policy(args), max_size=_max_size(args))
        except (OSError, ValueError) as error:
            err.write(f"rewriter unpack: {name}: {getattr(error, 'strerror', None) or error}\n")
            return EXIT_SOME_FAILED
        for problem in report.problems:
            err.write(f"{name}: {problem}\n")
        err.write(f"{name}: {report.summary()} into {folder}\n")
        return EXIT_SOME_FAILED if report.problems else EXIT_OK
    data = _read("unpack", path, err)
    if data is None:
        return EXIT_SOME_FAILED
    if kind is None:
        kind = what_file_is(data[:SNIFF_SIZE], None if path == "-" else path)
    fmt = args.format if args.format != "auto" else kind.format
    if fmt != "message":
        what = {"mbox": "an mbox (unpack one message of it)", "html": "an HTML page (bundle it with rewriter pack)"}
        err.write(f"rewriter unpack: {name} is {what.get(fmt, f'not a MIME message ({fmt})')}\n")
        return EXIT_SOME_FAILED
    try:
        result = unpack_message(data, folder, url=args.url, policy=_policy(args))
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


def _run_pack(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from rewriter.bundle.pack import PackError, pack_mhtml, pack_single_file
    from rewriter.run.batch import write_atomically

    page = Path(args.files[0])
    target = Path(args.single_file or args.output)
    try:
        if target.resolve() == page.resolve():
            err.write(f"rewriter pack: the output {target} is the page itself\n")
            return EXIT_USAGE
        pack = pack_single_file if args.single_file else pack_mhtml
        result = pack(page, url=args.url, policy=_policy(args))
    except PackError as error:
        err.write(f"rewriter pack: {error}\n")
        return EXIT_SOME_FAILED
    except OSError as error:  # e.g. resolve() of a relative path once the working folder is gone
        err.write(f"rewriter pack: {page}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    for problem in result.problems:
        err.write(f"{page}: {problem}\n")
    try:
        write_atomically(target, result.output)
    except OSError as error:
        err.write(f"rewriter pack: cannot write {target}: {error.strerror or error}\n")
        return EXIT_SOME_FAILED
    err.write(f"{page}: {len(result.parts)} files packed into {target}\n")
    return EXIT_SOME_FAILED if result.problems else EXIT_OK


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


class _ClosedOutput:
    """Standard output when the process was started without one (``1>&-``)."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass


# List options (--include, --exclude) from a configuration file: replaced, not added
# to, by the command line's.
_CONFIG_LIST = "config_list_"


def _lists_from_config(args: argparse.Namespace) -> None:
    for name, value in list(vars(args).items()):
        if name.startswith(_CONFIG_LIST):
            option = name.removeprefix(_CONFIG_LIST)
            if getattr(args, option, None) is None:
                setattr(args, option, value)
            delattr(args, name)


def _apply_config(parser: _Parser, folder: Path) -> Path | None:
    """Defaults from rewriter.toml or pyproject's [tool.rewriter] (see rewriter.cli.config):
    each key must be an option of some verb, with a value of its type. The file read, if any."""
    from rewriter.cli.config import ConfigError, load

    path, settings = load(folder)
    if not settings:
        return path
    known: dict[str, _Option] = {}
    for verb in parser.verbs.values():
        for option in verb.options.values():
            known.setdefault(option.dest, option)
    for name, value in settings.items():
        found = known.get(name)
        if found is None or name in ("help", "run", "verb"):
            raise ConfigError(f"{path}: {name.replace('_', '-')!r} is not an option of rewriter")
        settings[name] = _config_value(path, found, value)
    for verb in parser.verbs.values():
        for name, value in settings.items():
            mine = verb.options.get(name)
            if mine is None:
                continue
            if mine.action == "append":
                verb.set_defaults(**{_CONFIG_LIST + name: value})
            else:
                verb.set_defaults(**{name: value})
    return path


def _config_value(path: Path | None, option: _Option, value: object) -> object:
    """*value* of a configuration file checked against the *option* it sets."""
    shown = option.dest.replace("_", "-")
    if option.action == "store_true":
        if not isinstance(value, bool):
            raise ValueError(f"{path}: {shown!r} must be true or false")
        return value
    if option.action == "append":
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not all(isinstance(item, str) for item in values):
            raise ValueError(f"{path}: {shown!r} must be a string or a list of strings")
        return values
    if option.type is _size:
        try:
            return _size(str(value))
        except argparse.ArgumentTypeError as error:
            raise ValueError(f"{path}: {shown!r}: {error}") from None
    if option.type is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{path}: {shown!r} must be an integer")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{path}: {shown!r} must be a string")
    if option.choices is not None and value not in option.choices:
        raise ValueError(f"{path}: {shown!r} must be one of {', '.join(map(str, option.choices))}")
    return value


def _option_problem(args: argparse.Namespace) -> str | None:
    """Why the options, from the command line and the configuration, are a usage error
    (a value no engine could use, or one that changes nothing); None when they are not."""
    from rewriter.url.base import usable_as_base

    url = getattr(args, "url", None)
    if url is not None and not usable_as_base(url):
        return (
            f"--url {url!r} is not an absolute URL that can be a base "
            "(a scheme, then a path from '/': http://example.org/page.html, file:///home/me/page.html)"
        )
    if getattr(args, "non_strict", False) and getattr(args, "rules", None) in ("whatwg", "rfc1808"):
        return (
            f"--non-strict does nothing under --rules {args.rules} "
            "(it is RFC 2396 and RFC 3986's reading of http:g; rfc1808 and whatwg have their own)"
        )
    root, mapping = getattr(args, "url_root", None), getattr(args, "url_map", None)
    if root is not None:
        from rewriter.run.collection import check_root

        if url is not None:
            return "give --url or --url-root, not both (--url gives every file the one URL; --url-root each its own)"
        problem = check_root(root)
        if problem is not None:
            return problem
    if (root is not None or mapping is not None) and all(name == "-" for name in args.files):
        return f"--url-{'root' if root is not None else 'map'} names files by their path; standard input has none"
    if getattr(args, "quiet", False) and getattr(args, "verbose", False):
        return "-q and -v say opposite things: give one"
    charset = getattr(args, "charset", None)
    if charset is not None:
        from rewriter.document.encoding import lookup  # here: a run without --charset need not load it

        if lookup(charset) is None:
            return (
                f"--charset {charset!r} is no encoding label of the Encoding Standard "
                "(utf-8, windows-1252, shift_jis, gb18030, ...)"
            )
    return None


def _locations(args: argparse.Namespace, err: TextIO | _Escaping) -> str | None:
    """Read --url-root and --url-map into ``args.locations`` (the problem, when they cannot
    be used: a usage error). An entry of the map that names no input file is said, once."""
    root, mapping = getattr(args, "url_root", None), getattr(args, "url_map", None)
    if root is None and mapping is None:
        return None
    from rewriter.run.collection import CollectionError, Locations, load_url_map, read_url_map

    mapped: dict[str, str] = {}
    if mapping is not None:
        trees = [name if os.path.isdir(name) else os.path.dirname(name) for name in args.files if name != "-"]
        try:
            data = read_url_map(Path(mapping))
            args.url_map_content = data  # what the run used: a journal keeps its digest
            mapped, unmatched = load_url_map(Path(mapping), [tree for tree in trees if tree], data=data)
        except CollectionError as error:
            for problem in error.problems:  # each line that cannot be used, on a line of its own
                err.write(f"rewriter {args.verb}: {problem}\n")
            return str(error)
        if unmatched:
            line, name = unmatched[0]
            count = len(unmatched)
            err.write(
                f"rewriter {args.verb}: --url-map {mapping}: {count} entr{'y names' if count == 1 else 'ies name'} "
                f"no file of the input (the first: line {line}, {name!r})\n"
            )
    args.locations = Locations(root=root, mapped=mapped)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    err = _Escaping(sys.stderr)
    try:
        folder: Path | None = Path.cwd()
    except OSError as error:  # the shell's folder was deleted (or moved out of reach) under it
        folder, lost = None, error.strerror or str(error)
    configuration = None  # the configuration file read: its content decides outputs too
    try:
        if folder is not None:
            configuration = _apply_config(parser, folder)
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
    _lists_from_config(args)
    problem = _option_problem(args) or _locations(args, err)
    if problem is not None:
        err.write(f"rewriter {args.verb}: {problem}\n")
        return EXIT_USAGE
    try:
        return int(args.run(args, sys.stdout or _ClosedOutput(), err))
    except BrokenPipeError:  # e.g. piped into head: stop quietly
        sys.stderr.close()
        return EXIT_OK
    except OSError as error:  # standard output closed or full: named, never a traceback
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
