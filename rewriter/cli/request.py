"""A run request: what the command line and the configuration file ask for, validated once.

:meth:`RunRequest.read` makes every check a verb's options need before anything is read
or written (a value no engine could use, options that contradict each other, an output
that would replace an input) and says the first problem as a usage error (exit 2); the
verbs then read the request and check nothing of it again.

>>> from rewriter.cli.parser import build_parser
>>> args = build_parser().parse_args(["rewrite", "a.html", "--backup", ".orig"])
>>> RunRequest.read(args, None)
Traceback (most recent call last):
...
rewriter.cli.request.UsageError: rewriter rewrite: --backup goes with --in-place
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, TextIO

from rewriter.policy import Policy

if TYPE_CHECKING:
    from rewriter.cli.output import Escaping
    from rewriter.containers.formats import Kind
    from rewriter.run.batch import Settings


class UsageError(Exception):
    """The command is wrong: the line standard error gets (exit 2)."""


def policy_of(args: argparse.Namespace) -> Policy:
    """The policy the document options ask for."""
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


def shown(path: str) -> str:
    """A file named on the command line as messages name it."""
    return "<stdin>" if path == "-" else path


class RunRequest(NamedTuple):
    """One run of one verb: its inputs and its options (``options``, the parsed arguments with
    the configuration file's defaults), checked; ``kinds`` is what each named file of a rewrite
    is, told once (the planner reads it too)."""

    verb: str
    files: tuple[str, ...]
    options: argparse.Namespace
    kinds: Mapping[str, Kind | None] = MappingProxyType({})

    @classmethod
    def read(cls, args: argparse.Namespace, err: TextIO | Escaping | None) -> RunRequest:
        """The request *args* make, or :class:`UsageError`. An entry of a --url-map that names
        no input file is said on *err*, once."""
        problem = _option_problem(args) or _locations(args, err)
        if problem is not None:
            raise UsageError(f"rewriter {args.verb}: {problem}")
        if args.verb == "resolve" and not args.references and not args.file:
            raise UsageError("rewriter resolve: give at least one REF or --file")
        kinds: Mapping[str, Kind | None] = {}
        if args.verb == "rewrite":
            _check_rewrite(args)
            from rewriter.run.batch import kinds_of

            kinds = kinds_of(args.files)  # what each named file is, told once
            _check_archives(args, kinds)
        return cls(args.verb, tuple(getattr(args, "files", ()) or ()), args, kinds)

    def wacz_inputs(self) -> tuple[list[str], Mapping[str, Kind | None]]:
        """The inputs that are WACZ files, and what each named input is (told here, so that the
        WACZ verb's module is loaded only for a run that names one)."""
        kinds = self.kinds
        if self.verb != "rewrite":  # only rewrite's request tells them
            from rewriter.run.batch import kinds_of

            kinds = kinds_of(self.files)
        return [name for name in self.files if (kind := kinds.get(name)) is not None and kind.format == "wacz"], kinds

    @property
    def policy(self) -> Policy:
        return policy_of(self.options)

    @property
    def max_size(self) -> int:
        """--max-size, or the run's default (a WARC body's decoded bytes are counted against it)."""
        from rewriter.run.batch import Settings

        max_size = getattr(self.options, "max_size", None)
        return Settings().max_size if max_size is None else int(max_size)

    def settings(self, *, records: bool = False) -> Settings:
        """The settings every job of the run is given."""
        from rewriter.run.batch import Settings

        args = self.options
        return Settings(
            policy=self.policy,
            url=args.url,
            charset=args.charset,
            format=args.format,
            backup=getattr(args, "backup", None),
            records=records,
            locations=getattr(args, "locations", None),
            local_copies=not getattr(args, "absolutize_local", False),
            sync=not getattr(args, "no_fsync", False),
            max_size=self.max_size,
        )

    def to_stdout(self) -> bool:
        """Whether the outputs go to standard output (no -o, or -o -, and not in place)."""
        return self.options.output in (None, "-") and not self.options.in_place

    def fingerprint(self) -> dict[str, object]:
        """What a journal is bound to: the options (a run resumed with other values would write
        other outputs), and the digests of the files whose content decides the outputs."""
        found: dict[str, object] = {name: _plain(getattr(self.options, name, None)) for name in JOURNAL_OPTIONS}
        found.update(_contents(self.options))
        return found


def _check_rewrite(args: argparse.Namespace) -> None:
    """rewrite's own usage errors, in the order they are said."""
    if args.backup and not args.in_place:
        raise UsageError("rewriter rewrite: --backup goes with --in-place")
    if args.in_place and "-" in args.files:
        raise UsageError("rewriter rewrite: standard input cannot be rewritten in place")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("rewriter rewrite: -j needs at least 1")
    if args.output and args.output != "-" and len(args.files) > 1 and Path(args.output).is_file():
        raise UsageError(f"rewriter rewrite: several inputs need -o DIR, and {args.output} is a file")
    to_stdout = not args.in_place and args.output in (None, "-")
    if len(args.files) > 1 and to_stdout:
        raise UsageError("rewriter: several inputs need -o DIR (a folder for the outputs) or --in-place")
    if args.resume and to_stdout:
        raise UsageError("rewriter rewrite: --resume needs -o or --in-place: a run to standard output keeps no journal")
    overwritten = _report_over_an_input(args.report, args.files)
    if overwritten:
        raise UsageError(
            f"rewriter rewrite: --report {args.report} would overwrite {overwritten}, an input of this run"
        )


def _check_archives(args: argparse.Namespace, kinds: Mapping[str, Kind | None]) -> None:
    """A web archive records what was fetched: it is never changed in place."""
    if not args.in_place:
        return
    warc = next(
        (
            name
            for name in args.files
            if (kind := kinds.get(name)) is not None and kind.format in ("warc", "arc", "wacz")
        ),
        None,
    )
    if warc is not None:
        raise UsageError(
            f"rewriter rewrite: {warc} is a web archive: it is never changed in place; give -o OUT.warc.gz "
            "for a WARC with its pages rewritten, or -o DIR/ for a folder of them"
        )


def _report_over_an_input(report: str | None, files: Sequence[str]) -> str | None:
    """The input that writing the report *report* would replace: a file named among *files*, or an
    existing file inside a folder named there (which the run reads). A report is never an input,
    with --in-place or without: the run would read one and write the other over it."""
    if not report or report == "-" or not os.path.lexists(report):
        return None
    from rewriter.disk.files import same_file

    for name in files:
        if name == "-":
            continue
        if same_file(report, name):
            return name
        if os.path.isdir(name):
            folder = os.path.realpath(name)
            if os.path.commonpath([folder, os.path.realpath(report)]) == folder:
                return report
    return None


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
    return _collection_problem(args, url) or _output_problem(args)


def _collection_problem(args: argparse.Namespace, url: str | None) -> str | None:
    """--url-root and --url-map: what they cannot be given with."""
    root, mapping = getattr(args, "url_root", None), getattr(args, "url_map", None)
    if root is not None:
        from rewriter.run.collection import check_root

        if url is not None:
            return "give --url or --url-root, not both (--url gives every file the one URL; --url-root each its own)"
        problem = check_root(root)
        if problem is not None:
            return problem
    layout = getattr(args, "layout", None)
    if layout is not None:
        from rewriter.run.collection import Layout, LayoutError

        try:
            Layout.read(layout)
        except LayoutError as error:
            return str(error)
        if root is None and mapping is None:
            return "--layout says how a collection's files were named: give it with --url-root or --url-map"
    if (root is not None or mapping is not None) and all(name == "-" for name in args.files):
        return f"--url-{'root' if root is not None else 'map'} names files by their path; standard input has none"
    return None


def _output_problem(args: argparse.Namespace) -> str | None:
    """-q with -v; a --charset no encoding has."""
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


def _locations(args: argparse.Namespace, err: TextIO | Escaping | None) -> str | None:
    """Read --url-root and --url-map into ``args.locations`` (the problem, when they cannot
    be used: a usage error). An entry of the map that names no input file is said, once."""
    root, mapping = getattr(args, "url_root", None), getattr(args, "url_map", None)
    if root is None and mapping is None:
        return None
    from rewriter.run.collection import PLAIN_LAYOUT, CollectionError, Layout, Locations, load_url_map, read_url_map

    mapped: dict[str, str] = {}
    if mapping is not None:
        trees = [name if os.path.isdir(name) else os.path.dirname(name) for name in args.files if name != "-"]
        try:
            data = read_url_map(Path(mapping))
            args.url_map_content = data  # what the run used: a journal keeps its digest
            mapped, unmatched = load_url_map(Path(mapping), [tree for tree in trees if tree], data=data)
        except CollectionError as error:
            for problem in error.problems:  # each line that cannot be used, on a line of its own
                _say(err, f"rewriter {args.verb}: {problem}\n")
            return str(error)
        if unmatched:
            line, name = unmatched[0]
            count = len(unmatched)
            _say(
                err,
                f"rewriter {args.verb}: --url-map {mapping}: {count} entr{'y names' if count == 1 else 'ies name'} "
                f"no file of the input (the first: line {line}, {name!r})\n",
            )
    layout = getattr(args, "layout", None)
    args.locations = Locations(root=root, mapped=mapped, layout=PLAIN_LAYOUT if layout is None else Layout.read(layout))
    return None


def _say(err: TextIO | Escaping | None, text: str) -> None:
    if err is not None:
        err.write(text)


# The options a journal is bound to: a run resumed with other values would write other outputs.
JOURNAL_OPTIONS = (
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
    "layout",
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


def _contents(args: argparse.Namespace) -> dict[str, object]:
    """The digests of the files whose content decides the outputs, for the journal's
    fingerprint: the --url-map file the run read, and the configuration file (a resumed run
    whose map or configuration changed would mix old outputs and new)."""
    found: dict[str, object] = {}
    content = getattr(args, "url_map_content", None)
    configuration = getattr(args, "configuration", None)
    if content is None and configuration is None:
        return found
    import hashlib  # only for a run that keeps a journal and reads such a file: it loads OpenSSL (3-4 ms)

    if content is not None:
        found["url_map_sha256"] = hashlib.sha256(content).hexdigest()
    if configuration is not None:
        from rewriter.cli.config import read_bounded  # a regular file, at most what a configuration is read to

        try:
            digest = hashlib.sha256(read_bounded(Path(configuration))).hexdigest()
        except OSError as error:
            digest = f"unreadable: {error.strerror or error}"
        found["configuration"] = [str(configuration), digest]
    return found


def _plain(value: object) -> object:
    """An option's value as JSON can hold it."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return str(value)
