"""``rewriter resolve``: references resolved against a base URL, one per line."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TextIO

from rewriter.cli.parser import EXIT_OK, EXIT_SOME_FAILED
from rewriter.cli.request import RunRequest, shown
from rewriter.url.resolve import Resolver, UnresolvableReference


def _lines(path: str) -> Iterator[str]:
    """The lines of *path* without their line ends; bytes that are not UTF-8 survive."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        for raw in stream:
            yield raw.decode("utf-8", "surrogateescape").removesuffix("\n").removesuffix("\r")
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def run_resolve(request: RunRequest, out: TextIO, err: TextIO) -> int:
    args = request.options
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
            resolve_all(_lines(path), shown(path))
        except OSError as error:
            err.write(f"rewriter resolve: cannot read {path}: {error.strerror or error}\n")
            status = EXIT_SOME_FAILED
    return status
