"""The corpus against independent parsers: the machinery of two test modules, and their figures.

* :func:`compare_start_tags`: rewriter's :func:`~rewriter.html.engine.start_tags` against the start tags
  html5lib's tokenizer emits while html5lib's own tree builder drives it (used by
  ``test_html_differential.py``).
* :func:`coverage`: every relative URL ``lxml.html`` ``iterlinks()`` finds, looked up among
  rewriter's :func:`~rewriter.html.engine.find_links` (used by ``test_coverage.py``), and what rewriter
  finds that lxml does not.

Run as a script to print the figures over the whole corpus (about 25 s of CPU)::

    python3 tests/corpus_figures.py [--differential] [--coverage]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import html5lib
import lxml.html
from conftest import SHARED
from html5lib import _tokenizer
from html5lib.constants import tokenTypes
from lxml import etree

from rewriter.document.encoding import decode, sniff
from rewriter.html.engine import Link, find_links, start_tags
from rewriter.policy import LAZY_ATTRIBUTES

CORPUS = SHARED / "corpus" / "html"
ASCII_WHITESPACE = "\t\n\f\r "

StartTag = tuple[str, dict[str, str]]
_Key = tuple[str, tuple[tuple[str, str], ...]]


def manifest(corpus: Path = CORPUS) -> list[dict[str, Any]]:
    """The corpus records (``file``, ``url`` which may be None, ...)."""
    records = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    return [record for record in records if isinstance(record, dict)]


def page_text(data: bytes) -> str:
    """The text of a page exactly as rewriter decodes it (BOM, then meta, then UTF-8 or windows-1252)."""
    return decode(data, sniff(data))


def _examples(items: Sequence[object], limit: int = 3) -> str:
    return "; ".join(_short(item) for item in items[:limit]) + (" ..." if len(items) > limit else "")


def _short(item: object, limit: int = 160) -> str:
    text = repr(item)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ==========================================================================================
# 1. Start tags: rewriter against html5lib's tokenizer, driven by html5lib's tree builder
# ==========================================================================================

_START_TAG = tokenTypes["StartTag"]


def _attribute_name(name: str | tuple[str | None, ...]) -> str:
    """An html5lib attribute name as rewriter spells it.

    The tokenizer itself gives plain strings ("xlink:href"); only the tree builder turns
    foreign attributes into (prefix, local name, namespace) tuples, and it does that to the
    token after the recorder has copied it. A tuple is still mapped back to "prefix:local".
    """
    if isinstance(name, str):
        return name
    prefix, local = name[0], name[1]
    return f"{prefix}:{local}" if prefix else str(local)


@contextmanager
def _recording(tags: list[StartTag]) -> Iterator[None]:
    """Append every start tag token html5lib's tokenizer yields to *tags*, while active.

    The method is patched on the class, not the class replaced: ``HTMLTokenizer.__init__``
    calls ``super(HTMLTokenizer, self)``. The token is copied as it leaves the tokenizer,
    before the tree builder adjusts it (SVG/MathML attribute case, "image" to "img"...).
    """
    original = _tokenizer.HTMLTokenizer.__iter__

    def recorded(self: _tokenizer.HTMLTokenizer) -> Iterator[dict[str, Any]]:
        for token in original(self):
            if token["type"] == _START_TAG:
                attributes = {_attribute_name(name): value for name, value in token["data"].items()}
                tags.append((token["name"], attributes))
            yield token

    _tokenizer.HTMLTokenizer.__iter__ = recorded  # type: ignore[method-assign]
    try:
        yield
    finally:
        _tokenizer.HTMLTokenizer.__iter__ = original  # type: ignore[method-assign]


def html5lib_start_tags(text: str) -> list[StartTag]:
    """The start tags html5lib's tokenizer emits for *text*, in source order.

    html5lib's own parser drives the tokenizer, so it switches to the RCDATA, RAWTEXT,
    script data and PLAINTEXT states where the tree builder says so (and reads
    ``<noscript>`` content as markup: html5lib's default is scripting off, like rewriter).

    >>> html5lib_start_tags('<style><a href=x></style><svg><image xlink:href="i&amp;j"/></svg>')
    [('style', {}), ('svg', {}), ('image', {'xlink:href': 'i&j'})]
    """
    tags: list[StartTag] = []
    with _recording(tags):
        html5lib.HTMLParser(namespaceHTMLElements=False).parse(text)
    return tags


# Start tags html5lib's tokenizer emits that no element carries, so rewriter's start_tags
# (one entry per element the parser made from a start tag) cannot list them. The tree
# builder merges them into an element made earlier or ignores them (WHATWG HTML §13.2.6.4).
# Only these names may be missing from rewriter's list; any other missing tag fails.
DROPPED_BY_TREE_BUILDER: dict[str, str] = {
    # (Insertion mode names and their section numbers in WHATWG HTML §13.2.6.4.)
    "html": '"in body" (§13.2.6.4.7, whose rules most other modes use), a start tag "html": parse error; '
    "its attributes are added to the <html> element already made, and the token makes no element",
    "head": '"in head" (.4), "in head noscript" (.5), "after head" (.6), "in body" (.7), a start tag "head" '
    "once the head element exists: parse error; ignore the token",
    "body": '"in body" (.7), a start tag "body": parse error; its attributes are added to the body element '
    "already made (explicitly, or implied by earlier content), and the token makes no element",
    "frameset": '"in body" (.7), a start tag "frameset" when the frameset-ok flag is "not ok": parse error; '
    "ignore the token",
    "frame": '"in body" (.7), a start tag "frame" (outside a frameset): parse error; ignore the token',
    "caption": '"in body" (.7), a start tag caption/col/colgroup/frame/head/tbody/td/tfoot/th/thead/tr: parse '
    'error; ignore the token (table parts outside a table). "in table body" (.13): caption/col/colgroup/'
    "tbody/tfoot/thead with no tbody/thead/tfoot in table scope: ignored",
    "col": 'as caption: a table part outside a table is ignored ("in body")',
    "colgroup": 'as caption: a table part outside a table is ignored ("in body")',
    "tbody": 'as caption: outside a table ("in body"), or with no table section open ("in table body"): ignored',
    "thead": 'as caption: outside a table ("in body"), or with no table section open ("in table body"): ignored',
    "tfoot": 'as caption: outside a table ("in body"), or with no table section open ("in table body"): ignored',
    "tr": '"in body" (.7), a start tag "tr" outside a table: parse error; ignore the token',
    "td": '"in body" (.7), a start tag "td" outside a table: parse error; ignore the token; "in row" (.14) '
    "with no tr in table scope: ignored",
    "th": 'as td: "in body" (.7), a start tag "th" outside a table is ignored',
    "form": '"in body" (.7), a start tag "form" while the form element pointer is set and no <template> is '
    'open (a nested form): parse error; ignore the token. "in table" (.9): likewise',
    "select": '"in select" (html5lib\'s spec; "in body" in the current one), a start tag "select" inside a '
    "select: parse error; it closes the open select like an end tag and makes no element",
    "noscript": '"in head noscript" (.5, scripting off), a start tag "noscript": parse error; ignore the token',
}


# HTML §13.2.4.3: the elements the list of active formatting elements holds, which the tree
# builder may clone ("reconstruct the active formatting elements", the adoption agency).
FORMATTING_ELEMENTS = frozenset(
    ["a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"]
)


def _key(tag: StartTag) -> _Key:
    return tag[0], tuple(sorted(tag[1].items()))


@dataclass
class StartTagComparison:
    """One page: rewriter's start tags against html5lib's."""

    file: str
    rewriter: int = 0  # start tags rewriter lists
    html5lib: int = 0  # start tags html5lib's tokenizer emits
    aligned: int = 0  # equal, in the same order
    reordered: list[StartTag] = field(default_factory=list)  # equal, moved by foster parenting
    dropped: list[StartTag] = field(default_factory=list)  # html5lib's, on DROPPED_BY_TREE_BUILDER
    missing: list[StartTag] = field(default_factory=list)  # html5lib's, unexplained
    extra: list[StartTag] = field(default_factory=list)  # rewriter's, not html5lib's
    # Of ``extra``: a formatting element equal to one html5lib emits, i.e. the same source
    # tag listed again (a clone's). Still a difference; the tests mark it as a known one.
    extra_clones: list[StartTag] = field(default_factory=list)

    def problems(self) -> list[str]:
        """One line per difference the allow-lists do not explain (empty: the page agrees)."""
        lines: list[str] = []
        for name, value in self.extra:
            lines.append(f"{self.file}: rewriter lists <{name}> {_short(value)}, which html5lib does not emit")
        for name, value in self.missing:
            lines.append(
                f"{self.file}: html5lib emits <{name}> {_short(value)}, missing from rewriter's start tags "
                "(not a tag the tree builder drops or merges)"
            )
        return lines


def compare_start_tags(file: str, data: bytes) -> StartTagComparison:
    """Compare ``start_tags(data)`` with html5lib's start tags for the same text.

    The two are aligned (difflib, no junk heuristics). A run that is not equal on both
    sides is either:

    * a reordering: rewriter lists tags in tree order, html5lib in source order, and
      foster parenting (§13.2.6.1, "in table" §13.2.6.4.9 "anything else") moves content
      misplaced in a table to before the table. Those tags are equal on both sides but
      not in the same order, so the unequal runs are compared as multisets: a tag found
      on both sides, on a page that has a table, is a reordered tag;
    * an html5lib tag that no element carries (:data:`DROPPED_BY_TREE_BUILDER`);
    * anything else: a difference (``missing`` or ``extra``).

    >>> result = compare_start_tags("x", b"<body><table><b>bold</b><tr><td>1</table><body class=a><td>")
    >>> [tag for tag, _ in result.reordered], [tag for tag, _ in result.dropped], result.problems()
    (['b'], ['body', 'td'], [])
    """
    text = page_text(data)
    theirs = html5lib_start_tags(text)
    ours = start_tags(data)
    result = StartTagComparison(file, rewriter=len(ours), html5lib=len(theirs))
    their_keys = [_key(tag) for tag in theirs]
    our_keys = [_key(tag) for tag in ours]
    if their_keys == our_keys:
        result.aligned = len(ours)
        return result
    only_theirs: list[int] = []
    only_ours: list[int] = []
    matcher = SequenceMatcher(None, their_keys, our_keys, autojunk=False)
    for operation, i1, i2, j1, j2 in matcher.get_opcodes():
        if operation == "equal":
            result.aligned += i2 - i1
        else:
            only_theirs.extend(range(i1, i2))
            only_ours.extend(range(j1, j2))
    # Foster parenting puts an element before the table it was misplaced in, i.e. before
    # tags that came earlier in the source; it needs a table. On a page without one, an
    # equal pair out of order is left unexplained: a difference on each side.
    moved = Counter(their_keys[i] for i in only_theirs) & Counter(our_keys[j] for j in only_ours)
    if not any(name == "table" for name, _ in ours):
        moved = Counter()
    pending = moved.copy()
    for i in only_theirs:
        if pending[their_keys[i]] > 0:
            pending[their_keys[i]] -= 1
            result.reordered.append(theirs[i])
        elif theirs[i][0] in DROPPED_BY_TREE_BUILDER:
            result.dropped.append(theirs[i])
        else:
            result.missing.append(theirs[i])
    pending = moved.copy()
    emitted = set(their_keys)
    for j in only_ours:
        if pending[our_keys[j]] > 0:
            pending[our_keys[j]] -= 1
        else:
            result.extra.append(ours[j])
            if ours[j][0] in FORMATTING_ELEMENTS and our_keys[j] in emitted:
                result.extra_clones.append(ours[j])
    return result


# ==========================================================================================
# 2. Coverage: every relative URL lxml.html finds is one rewriter finds
# ==========================================================================================

# lxml cannot take a str that starts with an XML declaration; HTML reads "<?xml ...?>" as a
# bogus comment (§13.2.5.42), so taking it out changes no element or attribute.
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*>")
# rewriter decodes with "surrogateescape": a byte the declared encoding cannot read becomes a
# lone surrogate. lxml silently cuts the document at the first one (a Shift_JIS-labelled
# page with such bytes lost all of its body), so both sides see U+FFFD there instead, as a
# browser's decoder gives.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# lxml's refresh value when its regex finds no "url" part: the whole content.
_DELAY_ONLY = re.compile(r"[0-9.]+[\t\n\f\r ]*[;,]?")
_CONDITIONAL_COMMENT = re.compile(rb"<!--\[if[^\]]*\]>.*?<!\[endif\]\s*-->", re.DOTALL | re.IGNORECASE)
_SRCDOC = re.compile(rb"""\ssrcdoc[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"|'[^']*')""", re.IGNORECASE)


def _clean(text: str) -> str:
    return _LONE_SURROGATE.sub("\ufffd", text)


def is_relative(value: str) -> bool:
    """Not empty and without a scheme (``urlsplit``), ASCII whitespace stripped; "#frag" counts.

    >>> [is_relative(v) for v in ["a.png", " #top ", "//h/x", "http://h/", "", "mailto:x", "//[bad"]]
    [True, True, True, False, False, False, True]
    """
    value = value.strip(ASCII_WHITESPACE)
    if not value:
        return False
    try:
        return urlsplit(value).scheme == ""
    except ValueError:  # e.g. "//[bad": an unparsable authority, but no scheme either way
        return _SCHEME.match(value) is None


# What lxml reports that rewriter does not, and why it is no URL a browser would fetch or
# follow. A value in one of these classes is allowed to be missing from rewriter's links;
# every other lxml value must be found by rewriter, or the test fails.
LXML_OVER_REPORTS: dict[str, str] = {
    "data on an element other than <object>": "lxml.html.defs.link_attrs applies to every element; HTML gives "
    "a data attribute a URL only on <object> (§4.8.7). Elsewhere it is author data (e.g. <a data='Topics'>, "
    "<span data='vuukle-count-244592'>, <li data='1'>)",
    'usemap="#name"': "lxml reports usemap as a link; HTML says usemap is a valid hash-name reference to a "
    "<map> (the 'hash-name reference' microsyntax; image maps): the map is found by name, never by "
    "resolving the value against the base as a URL",
    "refresh without a URL": '<meta http-equiv=refresh content="2700">: with no ";" lxml returns the whole '
    "content. HTML's shared declarative refresh steps (the refresh pragma, §4.2.5.3) read a delay only: the "
    "page reloads itself; "
    "there is no URL in the value",
    "CSS url( 'x' ) quotes kept, absolute inside": "lxml's CSS regex url\\((\"…\"|'…'|[^)]*)\\) takes "
    "url( 'x' ) with whitespace inside the parentheses as an unquoted URL and keeps the quotes; the value "
    "between the quotes, which is the URL CSS reads (css-syntax §4.3.6), is absolute (it is not a relative URL "
    "the browser would resolve)",
}

# lxml values that are not the URL as written but contain it: rewritten to what the browser
# reads, then looked up among rewriter's links like any other value (a miss still fails).
LXML_NORMALISED: dict[str, str] = {
    "CSS url( 'x' ) quotes kept, matched unquoted": "as above, but the URL inside the quotes is relative: it "
    "is looked up without the quotes",
    "applet archive as one URL": "lxml gives <applet archive='a.jar, b.jar'> as one value; it is a "
    "comma-separated list (HTML 4.01 §13.4): each item is looked up",
}


@dataclass
class Coverage:
    """One page: lxml's relative URLs looked up among rewriter's, and rewriter's surplus."""

    file: str
    lxml: int = 0  # relative values lxml.html iterlinks() gives
    rewriter: int = 0  # relative values among rewriter's links
    matched: int = 0  # lxml values found as they are
    normalised: Counter[str] = field(default_factory=Counter)  # found after LXML_NORMALISED
    over_reports: Counter[str] = field(default_factory=Counter)  # LXML_OVER_REPORTS
    missed: list[tuple[str, str, str]] = field(default_factory=list)  # (element, attribute, value)
    extras: Counter[str] = field(default_factory=Counter)  # rewriter's values lxml lacks, by category
    examples: dict[str, list[str]] = field(default_factory=dict)  # a few of each over-report/extra

    def note(self, category: str, example: str) -> None:
        found = self.examples.setdefault(category, [])
        if len(found) < 3:
            found.append(example)

    def problems(self) -> list[str]:
        return [
            f"{self.file}: lxml finds <{element} {attribute}> {value!r}, which rewriter's find_links does not"
            for element, attribute, value in self.missed
        ]


def lxml_links(text: str) -> list[tuple[str, str, str]]:
    """(element, attribute, value) of every relative URL ``lxml.html`` iterlinks() gives.

    The attribute is "#style" for a <style> element's text (lxml's None), as rewriter names it.
    """
    tree = lxml.html.fromstring(_XML_DECLARATION.sub("", _clean(text)))
    # fromstring() returns the body's content when the text does not start with <html> or a
    # doctype; the links of the whole document are wanted.
    root = tree.getroottree().getroot()
    found: list[tuple[str, str, str]] = []
    for element, attribute, link, _ in root.iterlinks():
        value = link.strip(ASCII_WHITESPACE)
        if is_relative(value):
            tag = element.tag if isinstance(element.tag, str) else "?"
            found.append((tag, "#style" if attribute is None else attribute, value))
    return found


def _lookup(pool: Counter[tuple[str, str]], attribute: str, value: str) -> bool:
    key = (attribute, value)
    if pool[key] > 0:
        pool[key] -= 1
        return True
    return False


def _over_report(element: str, attribute: str, value: str) -> str | None:
    if attribute == "data" and element != "object":
        return "data on an element other than <object>"
    if attribute == "usemap" and value.startswith("#"):
        return 'usemap="#name"'
    if element == "meta" and attribute == "content" and _DELAY_ONLY.fullmatch(value):
        return "refresh without a URL"
    return None


def _normalised(element: str, attribute: str, value: str) -> tuple[str, list[str]] | None:
    """The class of an lxml value that holds the URL(s) in another form, and the URL(s)."""
    if attribute in ("#style", "style") and len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        return "CSS url( 'x' ) quotes kept, matched unquoted", [value[1:-1].strip(ASCII_WHITESPACE)]
    if element == "applet" and attribute == "archive" and "," in value:
        parts = [part.strip(ASCII_WHITESPACE) for part in value.split(",")]
        return "applet archive as one URL", [part for part in parts if is_relative(part)]
    return None


def _extra_category(link: Link, data: bytes, conditional: list[tuple[int, int]], srcdoc: list[tuple[int, int]]) -> str:
    """Why lxml does not report a relative URL rewriter finds (for the figures)."""
    if any(start <= link.start < end for start, end in conditional):
        return "inside an <!--[if IE]> conditional comment (lxml: a comment)"
    if any(start <= link.start < end for start, end in srcdoc):
        return "in iframe srcdoc (a nested document)"
    if link.attribute in LAZY_ATTRIBUTES:
        return f"lazy-loading {link.attribute}"
    if link.kind == "css":
        before = data[max(0, link.start - 40) : link.start]
        if re.search(rb"@import[\t\n\f\r ]*['\"]$", before):
            return 'CSS @import string (lxml reads only @import "...")'
        if re.search(rb"url\([\t\n\f\r ]+['\"]$", before):
            return "CSS url( 'x' ) with spaces (lxml keeps the quotes)"
        function = re.search(rb"(url)\([\t\n\f\r ]*['\"]?$", before, re.IGNORECASE)
        if function is not None and function.group(1) != b"url":
            return "CSS URL() not in lower case (lxml's regex is case-sensitive)"
        return f"CSS in {'<style>' if link.attribute == '#style' else 'style='} (other)"
    if link.kind in ("srcset", "urls", "refresh", "comma-urls") or link.attribute in ("poster", "itemid"):
        return f"{link.attribute} ({link.kind})"
    return f"<{link.element} {link.attribute}> that lxml's tree lacks or has fewer times"


def coverage(file: str, data: bytes, url: str | None) -> Coverage:
    """lxml's relative URLs on one page, looked up among rewriter's (as a multiset).

    Matching is by (attribute, value) and counts: each of rewriter's links matches at most
    one lxml value, so a URL lxml finds twice must be found twice. The corpus needs no
    looser (set) matching.

    >>> page = b'<a href="a.html" data="x">1</a><img usemap="#m" srcset="s.png 2x"><style>b{c:url(d.png)}</style>'
    >>> result = coverage("x", page, "http://example.org/")
    >>> result.matched, dict(result.over_reports), result.missed, dict(result.extras)
    (2, {'data on an element other than <object>': 1, 'usemap="#name"': 1}, [], {'srcset (srcset)': 1})
    """
    text = page_text(data)
    result = Coverage(file)
    pool: Counter[tuple[str, str]] = Counter()
    relative: list[Link] = []
    for link in find_links(data, url=url).links:
        if is_relative(link.original):
            relative.append(link)
            pool[(link.attribute, _clean(link.original))] += 1
    result.rewriter = len(relative)
    theirs = lxml_links(text)
    result.lxml = len(theirs)
    unmatched: list[tuple[str, str, str]] = []
    for element, attribute, value in theirs:
        if _lookup(pool, attribute, value):
            result.matched += 1
        else:
            unmatched.append((element, attribute, value))
    for element, attribute, value in unmatched:
        category = _over_report(element, attribute, value)
        if category is not None:
            result.over_reports[category] += 1
            result.note(category, f"<{element} {attribute}={value!r}>")
            continue
        normalised = _normalised(element, attribute, value)
        if normalised is not None:
            category, urls = normalised
            if not any(is_relative(item) for item in urls):
                category = "CSS url( 'x' ) quotes kept, absolute inside"
                result.over_reports[category] += 1
                result.note(category, f"<{element} {attribute}> {value!r}")
                continue
            if all(_lookup(pool, attribute, item) for item in urls if is_relative(item)):
                result.normalised[category] += 1
                result.note(category, f"<{element} {attribute}> {value!r}")
                continue
        result.missed.append((element, attribute, value))
    # What is left in the pool: rewriter's relative URLs that lxml did not report.
    # When a value is left over fewer times than rewriter has it, the copies lxml cannot see
    # (in a conditional comment or a srcdoc) are the ones it lacks: they are taken first.
    conditional = [match.span() for match in _CONDITIONAL_COMMENT.finditer(data)]
    srcdoc = [match.span() for match in _SRCDOC.finditer(data)]
    hidden = conditional + srcdoc
    for link in sorted(relative, key=lambda link: not any(start <= link.start < end for start, end in hidden)):
        key = (link.attribute, _clean(link.original))
        if pool[key] > 0:
            pool[key] -= 1
            category = _extra_category(link, data, conditional, srcdoc)
            result.extras[category] += 1
            result.note(category, f"<{link.element} {link.attribute}> {link.original!r}")
    return result


# ==========================================================================================
# Per-corpus figures, cached so that the tests and the script compute each page once
# ==========================================================================================


@cache
def cached_comparison(corpus: Path, file: str) -> StartTagComparison:
    return compare_start_tags(file, (corpus / file).read_bytes())


@cache
def cached_coverage(corpus: Path, file: str, url: str | None) -> Coverage:
    return coverage(file, (corpus / file).read_bytes(), url)


def _print_differential(corpus: Path) -> None:
    started = time.perf_counter()
    pages = [cached_comparison(corpus, record["file"]) for record in manifest(corpus)]
    elapsed = time.perf_counter() - started
    print(f"== start tags: rewriter.html.engine.start_tags against html5lib {html5lib.__version__} ({elapsed:.1f} s)")
    print(f"pages compared:                 {len(pages)}")
    print(
        f"pages identical:                {sum(not (p.reordered or p.dropped or p.missing or p.extra) for p in pages)}"
    )
    print(f"start tags, rewriter:           {sum(p.rewriter for p in pages)}")
    print(f"start tags, html5lib:           {sum(p.html5lib for p in pages)}")
    print(f"aligned equal, in order:        {sum(p.aligned for p in pages)}")
    for label, attribute in (
        ("reordered (foster parenting)", "reordered"),
        ("dropped/merged by tree builder", "dropped"),
        ("missing, unexplained", "missing"),
        ("extra on rewriter's side", "extra"),
    ):
        tags: list[StartTag] = [tag for page in pages for tag in getattr(page, attribute)]
        names = Counter(name for name, _ in tags)
        where = sorted({page.file for page in pages if getattr(page, attribute)})
        print(f"{label + ':':<32}{len(tags)} {dict(names.most_common())} on {len(where)} page(s) {where}")


def _print_coverage(corpus: Path) -> None:
    started = time.perf_counter()
    records = [record for record in manifest(corpus) if record.get("url")]
    pages = [cached_coverage(corpus, record["file"], record["url"]) for record in records]
    elapsed = time.perf_counter() - started
    version = ".".join(map(str, etree.LXML_VERSION[:3]))
    print(f"== coverage: lxml {version} iterlinks() against rewriter's find_links ({elapsed:.1f} s)")
    print(f"pages with a URL:                 {len(pages)}")
    print(f"relative values, lxml:            {sum(p.lxml for p in pages)}")
    print(f"relative values, rewriter:        {sum(p.rewriter for p in pages)}")
    print(f"lxml values matched as they are:  {sum(p.matched for p in pages)}")
    examples: dict[str, list[str]] = {}
    for page in pages:
        for category, found in page.examples.items():
            examples.setdefault(category, []).extend(f"{page.file}: {item}" for item in found)

    def table(title: str, counts: Counter[str]) -> None:
        print(f"{title}: {sum(counts.values())}")
        for category, count in counts.most_common():
            print(f"  {count:6}  {category}")
            for example in examples.get(category, [])[:2]:
                print(f"            e.g. {_short(example, 150)}")

    table("lxml values matched after normalising", sum((p.normalised for p in pages), Counter()))
    table("lxml over-reports (allowed misses)", sum((p.over_reports for p in pages), Counter()))
    missed = [(page.file, *item) for page in pages for item in page.missed]
    print(f"lxml values rewriter misses (unexplained): {len(missed)} {_examples(missed)}")
    table("rewriter's relative values lxml does not report", sum((p.extras for p in pages), Counter()))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--differential", action="store_true", help="only the start tag comparison")
    parser.add_argument("--coverage", action="store_true", help="only the lxml coverage figures")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the corpus directory (with manifest.json)")
    arguments = parser.parse_args(argv)
    if not (arguments.corpus / "manifest.json").exists():
        print(f"{arguments.corpus / 'manifest.json'} is absent", file=sys.stderr)
        return 2
    both = not (arguments.differential or arguments.coverage)
    if arguments.differential or both:
        _print_differential(arguments.corpus)
    if arguments.coverage or both:
        _print_coverage(arguments.corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
