"""The command line's parser: every verb and option as a declarative table, read by
:func:`build_parser`.

An option is an :class:`Opt` row (its names, help, type, default, its hidden opposite...);
a verb is a :class:`Verb` row (its help, description, epilog and the option rows in the
order ``--help`` shows them). The parser records each option it is given (``options``) so
that a configuration file is checked against the options themselves (:mod:`rewriter.cli.apply`).

>>> parser = build_parser()
>>> sorted(parser.verbs)
['explain', 'links', 'pack', 'resolve', 'rewrite', 'unpack']
>>> parser.parse_args(["resolve", "http://a/b/c", "../d"]).references
['../d']
>>> parser.verbs["rewrite"].options["no_copy_others"].action
'store_true'
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NamedTuple, NoReturn

from rewriter import __version__
from rewriter.url.resolve import RULES

EXIT_OK = 0  # everything asked for was done
EXIT_SOME_FAILED = 1  # some item failed, each named on standard error; the others were done
EXIT_USAGE = 2  # the command itself is wrong


class Recorded(NamedTuple):
    """What a configuration file may set: an option's destination, how argparse stores it
    (``store``, ``store_true``, ``append``, ...), its type and its choices."""

    dest: str
    action: str
    type: object
    choices: tuple[object, ...] | None


class Parser(argparse.ArgumentParser):
    """argparse that says which verb a usage error belongs to, and exits 2, and that keeps
    a record of each option it is given (``options``) and of its verbs (``verbs``), so that
    configuration files are checked against the options themselves, through no private name
    of argparse."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.options: dict[str, Recorded] = {}  # before argparse adds its own -h
        self.verbs: dict[str, Parser] = {}
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return self.record(super().add_argument(*args, **kwargs), kwargs.get("action", "store"))

    def record(self, added: argparse.Action, action: object = "store") -> argparse.Action:
        """Keep *added* (an option of this parser, or of a group of it) in ``options``."""
        choices = tuple(added.choices) if isinstance(added.choices, (list, tuple, set, frozenset)) else None
        # The first option of a destination is the one a configuration file sets (a switch's
        # --no- opposite, with the same destination, only turns it off again).
        self.options.setdefault(added.dest, Recorded(added.dest, str(action), added.type, choices))
        return added

    def add_verb(self, verbs: Any, name: str, **kwargs: Any) -> Parser:
        """``verbs.add_parser(name, ...)``, recorded as one of this parser's verbs."""
        parser: Parser = verbs.add_parser(name, **kwargs)
        self.verbs[name] = parser
        return parser

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def size(text: str) -> int:
    """A size for --max-size and --piece-size: bytes, or a number with K, M or G (powers of 1024).

    >>> size("64M"), size("1g"), size("512")
    (67108864, 1073741824, 512)
    """
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


class Opt(NamedTuple):
    """One option (or positional argument) of a verb, as argparse is given it.

    ``switch``: an on/off option, off by default, and its opposite (``--no-`` + the name, or
    *opposite* for one that is itself a ``--no-``), which turns off what a configuration file
    turned on; the opposite stays out of ``--help`` (docs/cli.md's configuration section names
    the rule). ``group``: the mutually exclusive group the option is in (the verb's
    ``exclusive``)."""

    names: tuple[str, ...]
    help: str
    metavar: str | None = None
    action: str | None = None
    type: Any = None
    default: Any = None
    choices: tuple[str, ...] | None = None
    nargs: Any = None
    required: bool = False
    switch: bool = False
    opposite: str | None = None
    group: bool = False

    def add_to(self, parser: Parser, group: Any) -> None:
        """Add this option to *parser* (into *group* when it is in one)."""
        if self.switch:
            action = parser.add_argument(*self.names, action="store_true", help=self.help)
            long = self.names[-1]
            hidden = self.opposite or "--no-" + long.removeprefix("--")
            parser.add_argument(hidden, dest=action.dest, action="store_false", help=argparse.SUPPRESS)
            return
        fields = ("metavar", "action", "type", "default", "choices", "nargs")
        kwargs = {name: getattr(self, name) for name in fields if getattr(self, name) is not None}
        if self.required:
            kwargs["required"] = True
        kwargs["help"] = self.help
        if group is not None and self.group:
            parser.record(group.add_argument(*self.names, **kwargs), kwargs.get("action", "store"))
        else:
            parser.add_argument(*self.names, **kwargs)


def switch(name: str, help: str, *, opposite: str | None = None, short: str | None = None) -> Opt:
    """An on/off option (see :class:`Opt`)."""
    return Opt((short, name) if short else (name,), help, switch=True, opposite=opposite)


def max_size(help: str) -> Opt:
    """--max-size, with the verb's own *help*."""
    return Opt(("--max-size",), help, metavar="SIZE", type=size)


# The options of every verb that reads documents.
DOCUMENT = (
    Opt(
        ("--format",),
        "what the input is (default: told by its content: a web archive (WARC or ARC, plain or gzip), an mbox "
        "(plain or gzip, xz or Zstandard), an Apple Mail .emlx, a MIME message or MHTML, CSS, HTML); warc or arc: "
        "each input must be a web archive (one that is not is named and fails)",
        choices=("auto", "html", "css", "message", "mbox", "emlx", "warc", "arc"),
        default="auto",
    ),
    Opt(("--url",), "the retrieval URL: the base when the page has no <base> (RFC 1808 §3.3)"),
    Opt(("--charset",), "the transport charset, if known (HTTP or MIME charset parameter)"),
    Opt(("--rules",), "resolution rules (default: rfc3986)", choices=RULES, default="rfc3986"),
    switch("--non-strict", "rfc2396/rfc3986: read http:g as relative"),
    switch("--absolutize-fragments", "also make #frag and empty references absolute"),
    switch("--remove-base", "drop the <base> element instead of fixing it"),
    switch("--no-lazy", "leave lazy-loading data-* attributes alone", opposite="--lazy"),
    switch(
        "--no-conditional-comments",
        "leave links inside <!--[if IE]> comments alone",
        opposite="--conditional-comments",
    ),
    switch("--canonical-base", "with no --url, take <link rel=canonical> / og:url as it"),
    switch("--require-base", "a page with relative links and no base fails"),
)

# The options of every verb that reads collections (a folder, a mirror, a list of pages).
COLLECTION = (
    Opt(
        ("--url-root",),
        "each file's retrieval URL is URL joined with its path under its input folder (a file named alone: "
        "its name); 'auto' (or auto:https) for a wget or HTTrack mirror whose folders are named by host",
        metavar="URL",
    ),
    Opt(
        ("--url-map",),
        'each file\'s retrieval URL from FILE: CSV lines path,url or JSON Lines {"path": ..., "url": ...}, '
        "a path under its input folder; asked before --url-root and --url",
        metavar="FILE",
    ),
    Opt(
        ("--layout",),
        "how the collection's files were named: plain (the path is the URL's path; the default) or wget "
        "(wget's names read back to their URLs: the query after '?', -E's .html or .css, index.html for a "
        "folder, escapes; wget:windows,nocontrol,ascii for its --restrict-file-names modes) or httrack (a "
        "page's URL from its 'Mirrored from' mark, which a link to it then names); with --url-root or --url-map",
        metavar="LAYOUT",
    ),
    switch(
        "--absolutize-local",
        "make absolute even a relative link to a file of the input folder (a saved page's NAME_files/ copy), "
        "which is kept as written by default",
    ),
)


class Verb(NamedTuple):
    """One verb: what ``rewriter --help`` says of it, its own ``--help``, and its options in order.
    *exclusive*: its options marked ``group`` are mutually exclusive (one required, if so)."""

    name: str
    help: str
    description: str
    epilog: str
    options: tuple[Opt, ...]
    exclusive_required: bool = False

    def add_to(self, parser: Parser, verbs: Any) -> Parser:
        """This verb's parser, added to *parser*'s *verbs*."""
        verb = parser.add_verb(
            verbs,
            self.name,
            help=self.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,  # the description keeps its line ends
            description=self.description,
            epilog=self.epilog,
        )
        group = None
        for option in self.options:
            if option.group and group is None:
                group = verb.add_mutually_exclusive_group(required=self.exclusive_required)
            option.add_to(verb, group)
        return verb


RESOLVE = Verb(
    "resolve",
    "resolve references against a base URL",
    "Print the absolute form of each REF against BASE, one per line. A reference "
    "that cannot be resolved is named on stderr with the reason; the others are "
    "still printed, and the exit code is 1.",
    "examples:\n"
    "  rewriter resolve http://a/b/c/d ../g '#f'\n"
    "  rewriter resolve --rules whatwg 'http://a/b/' 'https:g'\n"
    "  rewriter resolve https://example.org/ --file references.txt\n\n"
    "exit codes: 0 all resolved; 1 some reference could not be (each named on stderr); 2 usage error",
    (
        Opt(("base",), "the base URL ('' for none)", metavar="BASE"),
        Opt(("references",), "a URL reference", metavar="REF", nargs="*"),
        Opt(
            ("-f", "--file"),
            "also read references from FILE, one per line ('-' for standard input)",
            metavar="FILE",
            action="append",
            default=[],
        ),
        Opt(("--rules",), "resolution rules (default: rfc3986)", choices=RULES, default="rfc3986"),
        switch("--non-strict", "rfc2396/rfc3986: read a scheme equal to the base's as relative (http:g)"),
    ),
)

REWRITE = Verb(
    "rewrite",
    "make every relative link of pages, style sheets, mail and web archives absolute",
    "Rewrite each INPUT with every relative URL made absolute and no other byte changed. An INPUT is an\n"
    "HTML page, a CSS file, a message (.eml, .mht, .mhtml), an mbox, a Maildir, a web archive (WARC or\n"
    "ARC, plain or .gz), a folder (each of its files that is one of these, whatever its name; --include\n"
    "and --exclude filter on top) or '-' for standard input; the content tells which. A script, an image\n"
    "or data is copied as it is.\n\n"
    "Output: standard output for one file; -o FILE for one input; -o DIR for several, or a folder,\n"
    "where each file keeps its path; or --in-place (with --backup SUFFIX to keep the old files).\n"
    "A web archive is written as a WARC (-o OUT.warc.gz): every record kept byte for byte, each page\n"
    "whose links change followed by a conversion record of it rewritten, which names its page by\n"
    "WARC-Refers-To (replay tools still replay the original capture); or, named with -o DIR, mirrored\n"
    "into DIR as one file per page. It is never rewritten in place.\n"
    "Every file is written atomically (a temporary file in the same folder, fsync, rename): it holds\n"
    "its old content or its new one, never a part. A file whose output equals its input is not\n"
    "rewritten in place. One bad file is named on stderr and the others still done.",
    "examples:\n"
    "  rewriter rewrite saved.html --url https://example.org/docs/page.html -o page.html\n"
    "  rewriter rewrite - --url https://example.org/ < page.html > absolute.html\n"
    "  rewriter rewrite pages/ -o absolute/ -j 4 --report links.jsonl\n"
    "  rewriter rewrite archive/ --in-place --backup .orig --exclude 'drafts/*'\n"
    "  rewriter rewrite mail.mbox -o absolute.mbox\n"
    "  rewriter rewrite crawl.warc.gz -o absolute.warc.gz\n"
    "  rewriter rewrite ~/Maildir -o ~/Maildir-absolute\n\n"
    "exit codes: 0 all done; 1 some file, part or link failed (each named on stderr); 2 usage error",
    (
        Opt(("files",), "a file, a folder, a Maildir, a WARC or ARC, or '-' for stdin", metavar="INPUT", nargs="+"),
        Opt(("-o", "--output"), "output file ('-' for stdout), or folder", metavar="OUT", group=True),
        Opt(("-i", "--in-place"), "replace each input with its output", action="store_true", group=True),
        Opt(("--backup",), "with --in-place: keep each old file as NAME+SUFFIX", metavar="SUFFIX"),
        Opt(
            ("--include",),
            "in folders, take only the documents matching GLOB (a path under the folder, or a file name; "
            "repeatable; default: every file whose content is a document, whatever its name)",
            metavar="GLOB",
            action="append",
        ),
        Opt(("--exclude",), "in folders, leave out GLOB (repeatable)", metavar="GLOB", action="append"),
        switch(
            "--no-copy-others",
            "with -o DIR, do not copy a folder's files that are not rewritten (by default they are copied "
            "unchanged, so that DIR is a complete mirror)",
            opposite="--copy-others",
        ),
        switch(
            "--no-fsync",
            "write each file without fsync: still atomic (a reader or a killed run sees the old file or the new), "
            "but a crash of the system may lose files written just before it; for outputs that can be made again",
            opposite="--fsync",
        ),
        Opt(("-j", "--jobs"), "worker processes (default: the machine's cores)", metavar="N", type=int),
        Opt(
            ("--report",),
            "write every link of every file and part to FILE: JSON Lines, or one JSON array if FILE ends in .json",
            metavar="FILE",
        ),
        Opt(
            ("--dask",),
            "run on Dask: a dask.distributed scheduler address (tcp://host:8786), or 'local' for Dask's local "
            "processes (needs the dask extra; workers read and write the paths, so a cluster needs a shared file "
            "system)",
            metavar="ADDRESS",
        ),
        switch(
            "--resume",
            "go on with a run that was stopped (killed, or the machine went down): the inputs its journal says are "
            "done, and are unchanged since, are not done again (the journal is kept in OUT/.rewriter-run/, or "
            "beside an output file, until a run ends)",
        ),
        switch("--quiet", "say nothing but errors: no progress bar, no line per file, no summary", short="-q"),
        switch("--verbose", "also name each link left relative (--report has every link)", short="-v"),
        max_size(
            "a document larger than SIZE (bytes, or with K, M, G) is copied unchanged and named, not held in "
            "memory; each message of an mbox too, up to 64M, and each body of a WARC, counted as decoded "
            "(default: 1G)"
        ),
        Opt(
            ("--piece-size",),
            "an mbox or a WARC larger than SIZE (bytes, or with K, M, G) written to a file is done in pieces of "
            "about SIZE, each a job of its own, so that every worker shares it (default: 64M)",
            metavar="SIZE",
            type=size,
        ),
        *DOCUMENT,
        *COLLECTION,
    ),
)

LINKS = Verb(
    "links",
    "list every link of a document, message, mbox, Maildir or WARC",
    "List every URL the engine finds in FILE: element, attribute, status, value as written, resolved. "
    "In a message each link is preceded by its part; in an mbox or a Maildir, by its message too; "
    "in a WARC (or each WARC of a WACZ), by the URL of its page.",
    "examples:\n"
    "  rewriter links saved.html --url https://example.org/\n"
    "  rewriter links message.eml --json\n\n"
    "exit codes: 0 every link resolved; 1 some link left relative or the file unreadable; 2 usage error",
    (
        Opt(
            ("files",),
            "a page, style sheet, message, mbox, Maildir, WARC or WACZ, or '-' for stdin",
            metavar="FILE",
            nargs=1,
        ),
        switch("--json", "one JSON object per link (JSON Lines)"),
        *DOCUMENT,
        *COLLECTION,
        max_size(
            "a document larger than SIZE (bytes, or with K, M, G), or a WARC body decoded to more, "
            "is named and not read (default: 1G)"
        ),
    ),
)

# The options of rewrite's run that unpack takes too (a WARC unpacked is a run of the pipeline).
_UNPACK_RUN = ("--no-fsync", "--jobs", "--report", "--resume", "--quiet", "--verbose", "--piece-size")

UNPACK = Verb(
    "unpack",
    "unpack an MHTML archive, a message or a WARC into a folder a browser opens offline",
    "Write every part of FILE (.mhtml, .mht, .eml, or a WARC) to a file of its own in DIR, the root\n"
    "document as DIR/index.html. In HTML and CSS, each reference to a part of the archive (RFC 2557\n"
    "§8: its resolved URL is the part's Content-Location, or a cid: URL its Content-ID; in a WARC, a\n"
    "record's URL, redirects followed) points at that part's file by a relative path; every other\n"
    "reference is made absolute. Names come from the parts, made safe: nothing is written outside\n"
    "DIR, nothing already there is replaced, and DIR/manifest.json keeps each part's original names.\n"
    "A WARC is mirrored as folders, one per host and path; so are the WARC files of a WACZ, and\n"
    "each page its pages.jsonl lists is named with its file.",
    "examples:\n"
    "  rewriter unpack saved.mhtml -o saved/\n"
    "  rewriter unpack crawl.warc.gz -o mirror/\n"
    "  rewriter unpack crawl.wacz -o mirror/\n\n"
    "exit codes: 0 unpacked; 1 unpacked with problems (named on stderr), or not unpacked; 2 usage error",
    (
        Opt(("files",), "an MHTML archive, a message, a WARC, a WACZ, or '-'", metavar="FILE", nargs=1),
        Opt(("-o", "--output"), "the folder to write (made if missing)", metavar="DIR", required=True),
        *DOCUMENT,
        max_size(
            "a body of a WARC decoded to more than SIZE (bytes, or with K, M, G) is named and not written (default: 1G)"
        ),
        # A WARC is unpacked by a run of the pipeline, as rewrite mirrors one: the same run options.
        *(option for option in REWRITE.options if option.names[-1] in _UNPACK_RUN),
    ),
)

PACK = Verb(
    "pack",
    "pack a saved page and its local files into one MHTML (or one HTML with data: URLs)",
    "Read PAGE and the local files it references (the page_files/ folder a browser saves, or any\n"
    "file under the page's folder; nothing outside it, nothing fetched) and write one MHTML file\n"
    "(RFC 2557) whose parts carry their absolute URLs as Content-Location: the page's --url, else\n"
    "the browser's 'saved from' mark, else its <base>, else its file: URL. The HTML is kept byte for\n"
    "byte but the rewritten references. --single-file writes one HTML file instead, each local\n"
    "resource inlined as a data: URL. -o OUT.wacz writes a WACZ that ReplayWeb.page opens: a WARC\n"
    "of the same files (each named by its URL), its index, and pages.jsonl with the page.",
    "examples:\n"
    "  rewriter pack saved.html -o saved.mhtml\n"
    "  rewriter pack saved.html --url https://example.org/a.html -o saved.wacz\n"
    "  rewriter pack saved.html --url https://example.org/a.html --single-file saved-one.html\n\n"
    "exit codes: 0 packed; 1 packed with problems (named on stderr), or not packed; 2 usage error",
    (
        Opt(("files",), "a saved HTML page", metavar="PAGE", nargs=1),
        Opt(("-o", "--output"), "the MHTML file to write (a WACZ when it ends in .wacz)", metavar="OUT", group=True),
        Opt(("--single-file",), "write one HTML file with data: URLs instead", metavar="OUT", group=True),
        *DOCUMENT,
    ),
    exclusive_required=True,
)

EXPLAIN = Verb(
    "explain",
    "show the MIME tree with each part's base and where it came from",
    "Show FILE's structure: for each MIME part its type, its effective base URL, which layer gave it "
    "(a <base> element, a Base/Content-Base/Content-Location header of which part, the retrieval URL) "
    "and how many links would be rewritten, kept, or left relative. A plain HTML file is one document; "
    "an mbox or a Maildir, each of its messages; a WARC, each of its pages.",
    "examples:\n"
    "  rewriter explain saved.mhtml\n"
    "  rewriter explain message.eml --url https://example.org/ --json\n\n"
    "exit codes: 0 shown; 1 the file could not be read or recognised; 2 usage error",
    (
        Opt(("files",), "a message, MHTML archive, HTML document, mbox, Maildir or WARC", metavar="FILE", nargs=1),
        switch("--json", "the tree as one JSON object"),
        *DOCUMENT,
        *COLLECTION,
    ),
)

# The verbs, in the order ``rewriter --help`` lists them.
VERBS = (RESOLVE, REWRITE, LINKS, UNPACK, PACK, EXPLAIN)


def build_parser() -> Parser:
    """The command line's parser: every verb of :data:`VERBS` with its options."""
    parser = Parser(
        prog="rewriter",
        description="Make every relative link in HTML documents, MIME messages and web archives (WARC, ARC) absolute.",
        epilog="Exit codes: 0 all done, 1 some item failed (each named on stderr, the others done), 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"rewriter {__version__}")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    for verb in VERBS:
        verb.add_to(parser, verbs)
    return parser
