"""Micro-benchmark of rewriter.document._speedups: each function in C against its Python twin.

The inputs come from the HTML corpus (../shared/corpus/html, or --corpus DIR), decoded as
the engine decodes them:

- tag_attributes and tag_end: the start tag of every element of every page (where
  turbohtml's tree says it starts), one call each;
- plain_links: the elements the engine selects in each page's tree, one call per page,
  every tag with the link table of ``<a>`` and every reference taken as relative;
- end_tag: the end of the raw text after each ``<style`` and ``<noscript``;
- scan_css: the text of every ``<style>`` element and every quoted ``style`` value;
- utf8_offsets: 400 sorted offsets per page with a character outside ASCII;
- utf8_splice: the same pages (UTF-8), 400 prefixes put in at those offsets;
- conditional_head: every ``<!--[`` of every page, one call each from the last one found;
- flattened: every page's text, as the engine makes its parser's one line;
- last_frameset_tag: every page's text, as the engine looks for a ``<frameset`` before stray head tags;
- named_start_tags: the elements the engine selects in each page, for ``base`` and ``noscript``;
- decode_qp: every page's UTF-8 as a mail's quoted-printable body (binascii's encoding, 76-character
  lines with soft breaks), with LF and with CR LF line breaks, as the MIME engine decodes a part;
- classified_quickly: every attribute value of every page that holds a URL (as ``<a>``'s table
  says), classified as the engine's loop asks, a relative one through a Python function, with a folder memo
  (SharedClassifications) fresh for each pass.

Each round times both implementations over the whole input (CPU time, the cyclic garbage
collector paused as the engine pauses it), the order alternating from round to round. It
prints, per function, the median seconds of each and the median of the rounds' own ratios
(reference / C), after checking that the two gave the same.

    python benchmarks/bench_speedups.py [--corpus DIR] [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import binascii
import gc
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import turbohtml

from rewriter.css import syntax  # noqa: F401 (the modules of the twins: imported, they are named)
from rewriter.document import process, speedups  # noqa: F401 (classified_quickly's twin)
from rewriter.document.encoding import ESCAPE, decode_checked, sniff
from rewriter.document.model import Link
from rewriter.html import (
    engine,  # noqa: F401 (conditional_head's twin)
    plain,
    tags,
)
from rewriter.html.table import attributes_of, selector
from rewriter.mime import transfer  # noqa: F401 (decode_qp's twin)

HTML = turbohtml.Namespace.HTML
DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
QUICK_PAGE = (
    '<!DOCTYPE html><html><head><style>a{background:url("x.png")} @import "y.css";</style></head>'
    '<body><a href=a.html class=x>é</a><img src=\'b.png\' alt="€"><p style="background:url(c)">'
    "<noscript><img src=d></noscript></body></html>"
)
_STYLE_TEXT = re.compile(r"<style[^>]*>(.*?)</style", re.S | re.I)
_STYLE_VALUE = re.compile(r"""style\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)
_RAW_TEXT = re.compile(r"<(style|noscript)[\t\n\f\r />]", re.I)


def load(corpus: Path | None) -> list[str]:
    if corpus is None:
        return [QUICK_PAGE]
    manifest = corpus / "manifest.json"
    if manifest.exists():
        paths = [corpus / entry["file"] for entry in json.loads(manifest.read_text(encoding="utf-8"))]
    else:
        paths = sorted(corpus.glob("*.htm*"))
    texts = []
    for path in paths:
        data = path.read_bytes()
        texts.append(decode_checked(data, sniff(data))[0])
    return texts


def parsed(text: str) -> turbohtml.Document:
    """*text*'s tree as the engine builds it: parsed as one line (line breaks read as
    spaces), so a column is an offset."""
    flat = re.sub("[\ud800-\udfff]", "\ufffd", text).replace("\n", " ").replace("\r", " ")
    return turbohtml.parse(flat, scripting=True, allow_declarative_shadow_roots=False)


def element_offsets(tree: turbohtml.Document) -> list[int]:
    """Where the start tag of each element of *tree* begins."""
    positions = {element.position for element in tree.iter_elements() if element.position is not None}
    return sorted(column for _, column in positions)


Work = Callable[[Any], object]


def relative(reference: str) -> tuple[str, str, None]:
    return "rewritten", "http://h/" + reference, None


def workloads(texts: list[str]) -> dict[str, tuple[Callable[[Any], Work], list[Any]]]:
    """Per function: how to run one implementation over all its inputs, and the inputs."""
    table = {name: plain.URL for name in attributes_of("html", "a")} | {"style": plain.STYLE}
    trees = [parsed(text) for text in texts]
    starts = [(text, element_offsets(tree)) for text, tree in zip(texts, trees, strict=True)]
    selected = [(text, tree.select(selector())) for text, tree in zip(texts, trees, strict=True)]
    ends = [(text, m.group(1).lower(), m.end() - 1) for text in texts for m in _RAW_TEXT.finditer(text)]
    sheets = [m.group(1) for text in texts for m in _STYLE_TEXT.finditer(text)]
    sheets += [m.group(2) if m.group(1) is None else m.group(1) for text in texts for m in _STYLE_VALUE.finditer(text)]
    rng = random.Random(23)
    offsets = [
        (text, sorted(rng.randrange(len(text) + 1) for _ in range(400)), any("\udc00" <= c <= "\udcff" for c in text))
        for text in texts
        if not text.isascii()
    ]

    def each_tag(impl: Any) -> Work:
        return lambda inputs: [impl.tag_attributes(text, at) for text, ats in inputs for at in ats]

    def each_tag_end(impl: Any) -> Work:
        return lambda inputs: [impl.tag_end(text, at) for text, ats in inputs for at in ats]

    def table_of(tables: dict[str, Any], namespace: object, tag: str) -> Any:
        return tables.setdefault(tag, table)

    def per_page(impl: Any) -> Work:
        def run(inputs: list[tuple[str, list[Any]]]) -> object:
            out = []
            for text, elements in inputs:
                found: list[Link] = []
                edits: list[tuple[int, int, str]] = []
                tables: dict[str, Any] = {}
                search = plain.LinkSearch(
                    text, elements, None, None, HTML, tables, {}, partial(table_of, tables), {}, relative, Link,
                    "http://h/", "retrieval-url", found, edits,
                )  # fmt: skip
                left = impl.plain_links(search)
                out.append((left, found, edits))
            return out

        return run

    def end_tags(impl: Any) -> Work:
        return lambda inputs: [impl.end_tag(text, name, start) for text, name, start in inputs]

    def css(impl: Any) -> Work:
        return lambda inputs: [impl.scan_css(sheet) for sheet in inputs]

    def utf8(impl: Any) -> Work:
        return lambda inputs: [impl.utf8_offsets(text, at, escaped) for text, at, escaped in inputs]

    def splice(impl: Any) -> Work:
        return lambda inputs: [
            impl.utf8_splice(text, body, edits, escaped, str.encode) for text, body, edits, escaped in inputs
        ]

    def heads(impl: Any) -> Work:
        def run(inputs: list[str]) -> object:
            found = []
            for text in inputs:
                at = impl.conditional_head(text, 0)
                while at >= 0:
                    found.append(at)
                    at = impl.conditional_head(text, at + 1)
                found.append(at)
            return found

        return run

    def qp(impl: Any) -> Work:
        return lambda inputs: [impl.decode_qp(body) for body in inputs]

    def flat(impl: Any) -> Work:
        return lambda inputs: [impl.flattened(text) for text in inputs]

    def frameset(impl: Any) -> Work:
        return lambda inputs: [impl.last_frameset_tag(text) for text in inputs]

    def named(impl: Any) -> Work:
        names = ("base", "noscript")
        return lambda inputs: [impl.named_start_tags(text, els, None, name) for text, els in inputs for name in names]

    same, absolute = ("same-document", None, None), ("absolute", None, None)

    def quick(impl: Any) -> Work:
        # A fresh folder memo each pass, as a run's first page meets it: every shared key a miss, then kept.
        return lambda inputs: [
            impl.classified_quickly(same, absolute, False, memo, relative, relative, value)
            for memo in ({},)
            for value in inputs
        ]

    values = [
        value.strip(" \t\n\f\r")
        for text, ats in starts
        for at in ats
        for name, (start, end, _) in tags.tag_attributes(text, at)[0].items()
        if name in table and name != "style"
        for value in [text[start:end]]
    ]

    bodies = [binascii.b2a_qp(text.encode("utf-8", "surrogatepass")) for text in texts]
    bodies += [body.replace(b"\n", b"\r\n") for body in bodies]

    errors = {True: ESCAPE, False: "surrogatepass"}
    splices = [
        (text, text.encode("utf-8", errors[escaped]), [(at, at, "http://h/") for at in ats], escaped)
        for text, ats, escaped in offsets
    ]

    return {
        "tag_attributes": (each_tag, starts),
        "tag_end": (each_tag_end, starts),
        "plain_links": (per_page, selected),
        "end_tag": (end_tags, ends),
        "scan_css": (css, sheets),
        "utf8_offsets": (utf8, offsets),
        "utf8_splice": (splice, splices),
        "conditional_head": (heads, texts),
        "flattened": (flat, texts),
        "last_frameset_tag": (frameset, texts),
        "decode_qp": (qp, bodies),
        "named_start_tags": (named, selected),
        "classified_quickly": (quick, values),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one small page: only checks that the benchmark runs")
    args = parser.parse_args(argv)
    if speedups.compiled is None:
        print("rewriter.document._speedups is not built: nothing to compare (pip install . with a C compiler)")
        return 0
    if not args.quick and not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus, or --quick", file=sys.stderr)
        return 2
    texts = load(None if args.quick else args.corpus)
    print(f"{len(texts)} pages, {sum(map(len, texts)) / 1e6:.1f} M characters, {args.rounds} rounds, CPU time")
    print(f"{'function':18} {'inputs':>8} {'Python s':>10} {'C s':>10} {'Python / C':>11}")
    for name, (make, inputs) in workloads(texts).items():
        runs = {"Python": make(SimpleNamespace(**speedups.reference)), "C": make(speedups.compiled)}
        if runs["Python"](inputs) != runs["C"](inputs):
            print(f"{name}: C and Python differ", file=sys.stderr)
            return 1
        seconds: dict[str, list[float]] = {"Python": [], "C": []}
        for number in range(args.rounds):
            for which in ("Python", "C") if number % 2 == 0 else ("C", "Python"):
                gc.collect()
                gc.disable()
                start = time.process_time()
                runs[which](inputs)
                seconds[which].append(time.process_time() - start)
                gc.enable()
        ratios = [python / max(c, 1e-9) for python, c in zip(seconds["Python"], seconds["C"], strict=True)]
        print(
            f"{name:18} {len(inputs):>8} {statistics.median(seconds['Python']):>10.4f} "
            f"{statistics.median(seconds['C']):>10.4f} {statistics.median(ratios):>10.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
