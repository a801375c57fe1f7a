"""Relocation invariance in a real browser: the shared harness of ``tests/test_browser.py``.

For a page P retrieved from URL U, Chromium loads the original bytes of P as if served at
U, and ``rewrite_html(P, url=U)`` as if served at a different URL (:func:`relocated_url`).
In both it lists, element by element in document order, the absolute URL each
URL-bearing attribute resolves to (``new URL(value, document.baseURI)``), and the two
lists must be equal: the rewritten page means the same links wherever it is served from.
In a document whose encoding is not UTF-8 each URL is also compared as the browser
fetches it, its query encoded in the document's encoding (``new URL`` always uses UTF-8).

Compared: href of a, area and link (and of base, against the document's URL), src,
action, formaction, cite, poster, background, longdesc, object data, usemap (not
``#name``), html manifest, every ping token, every srcset and imagesrcset candidate,
SVG and MathML href and xlink:href, the URL of a meta refresh, template contents
included; and the document's base URL where a <base> took effect, and its encoding.
Not compared: object/applet attributes beside a codebase (HTML 4 resolves them against
it, browsers do not), lazy-loading ``data-*`` attributes, CSS, ``iframe srcdoc`` content.

JavaScript is off in the pages and nothing but the document itself is served: every
other request (images, CSS, scripts, frames, a meta refresh) is aborted. The document is
fulfilled from memory with ``Content-Type: text/html`` and no charset, so Chromium finds
the encoding in the page itself, as rewriter does. The collection script runs through
Playwright's ``page.evaluate``, which works with page scripting disabled.

Run as a script for the whole corpus (every page whose retrieval URL is http or https)::

    python3 tests/browser_relocation.py --rules whatwg
    python3 tests/browser_relocation.py --rules rfc3986
    python3 tests/browser_relocation.py --all

Needs Debian's Chromium (``/usr/bin/chromium``) and the ``playwright`` package from PyPI
(never ``playwright install``: the browser is the system's). Importing this module needs
neither: they are looked for only when a browser is started.

>>> select_every([f"p{n}" for n in range(20)], 7)
['p0', 'p7', 'p14']
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import urlsplit

from rewriter.html.engine import rewrite_html
from rewriter.policy import Policy
from rewriter.url.resolve import RULES

__all__ = [
    "CHROMIUM",
    "CORPUS",
    "RELOCATED_URL",
    "Browser",
    "Mismatch",
    "Page",
    "PageReport",
    "compare",
    "compare_document",
    "compare_page",
    "corpus_pages",
    "policy_for",
    "relocated_url",
    "select_every",
    "tooling_problem",
]

CHROMIUM = Path("/usr/bin/chromium")
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "html"
# Another host, path and query (and https even for an http page): a link the rewrite
# missed resolves differently there than at the page's own URL, an empty one too.
RELOCATED_URL = "https://relocated.example{tld}/some/other/dir/page.html?moved=1"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Chromium upgrades http:// navigations to https:// by default: a page retrieved over
    # http must be served at its own http URL, or its scheme-relative links move.
    "--disable-features=HttpsUpgrades,HttpsFirstBalancedModeAutoEnable",
]
NAVIGATION_TIMEOUT_MS = 60_000

T = TypeVar("T")

# Runs in the page through page.evaluate (page scripting stays off). Returns the
# document's URL, base URL and encoding, and one row per URL found, in document order:
# [element index, element name, attribute, token index, value, resolved URL or null,
# the URL in the document's encoding when that is not UTF-8, else null].
COLLECT_JS = r"""
() => {
  const HTML = "http://www.w3.org/1999/xhtml";
  const SVG = "http://www.w3.org/2000/svg";
  const MATHML = "http://www.w3.org/1998/Math/MathML";
  const XLINK = "http://www.w3.org/1999/xlink";
  const isSpace = (c) => c === " " || c === "\t" || c === "\n" || c === "\f" || c === "\r";
  const trim = (s) => s.replace(/^[\t\n\f\r ]+|[\t\n\f\r ]+$/g, "");
  const resolve = (value, base) => {
    try {
      return new URL(trim(value), base).href;
    } catch (error) {
      return null;
    }
  };
  // new URL() encodes a query as UTF-8; the document's own links encode it in the
  // document's encoding (HTML "encoding-parse a URL"), which is what Chromium fetches.
  // A detached <a> of the document computes that form; only needed when it can differ.
  const legacy = document.characterSet !== "UTF-8";
  const scratch = document.createElement("a");
  const fetched = (value, resolved) => {
    if (!legacy || resolved === null) return null;
    scratch.setAttribute("href", value);
    return scratch.href;
  };

  // HTML "parse a srcset attribute": the URL of every image candidate, in order. A URL
  // runs to whitespace and may contain commas; trailing commas end the candidate; the
  // descriptors run to a comma outside parentheses. Candidates whose descriptors the
  // browser would reject are kept: their URLs must survive the rewrite all the same.
  const srcsetUrls = (input) => {
    const urls = [];
    const n = input.length;
    let pos = 0;
    for (;;) {
      while (pos < n && (isSpace(input[pos]) || input[pos] === ",")) pos++;
      if (pos >= n) return urls;
      const start = pos;
      while (pos < n && !isSpace(input[pos])) pos++;
      let url = input.slice(start, pos);
      if (url.endsWith(",")) {
        url = url.replace(/,+$/, "");
      } else {
        while (pos < n && isSpace(input[pos])) pos++;
        let state = "in descriptor";
        for (;;) {
          const c = pos < n ? input[pos] : null;
          if (c === null) break;
          if (state === "in descriptor") {
            if (c === ",") {
              pos++;
              break;
            }
            if (c === "(") state = "in parens";
            else if (isSpace(c)) state = "after descriptor";
          } else if (state === "in parens") {
            if (c === ")") state = "in descriptor";
          } else if (!isSpace(c)) {
            state = "in descriptor";
            continue; // reconsume
          }
          pos++;
        }
      }
      urls.push(url);
    }
  };

  // HTML "shared declarative refresh steps": the URL string of a refresh, or null when
  // there is none (a bare time refreshes the document itself) or the value is invalid.
  const refreshUrl = (input) => {
    const n = input.length;
    const isDigit = (c) => c >= "0" && c <= "9";
    let pos = 0;
    while (pos < n && isSpace(input[pos])) pos++;
    const timeStart = pos;
    while (pos < n && isDigit(input[pos])) pos++;
    if (pos === timeStart && input[pos] !== ".") return null;
    while (pos < n && (isDigit(input[pos]) || input[pos] === ".")) pos++;
    if (pos < n) {
      if (!(input[pos] === ";" || input[pos] === "," || isSpace(input[pos]))) return null;
      while (pos < n && isSpace(input[pos])) pos++;
      if (input[pos] === ";" || input[pos] === ",") pos++;
      while (pos < n && isSpace(input[pos])) pos++;
    }
    if (pos >= n) return null;
    let urlString = input.slice(pos);
    let skipQuotes = true;
    if (input[pos] === "U" || input[pos] === "u") {
      pos++;
      skipQuotes = false;
      if (input[pos] === "R" || input[pos] === "r") {
        pos++;
        if (input[pos] === "L" || input[pos] === "l") {
          pos++;
          while (pos < n && isSpace(input[pos])) pos++;
          if (input[pos] === "=") {
            pos++;
            while (pos < n && isSpace(input[pos])) pos++;
            skipQuotes = true;
          }
        }
      }
    }
    if (skipQuotes) {
      let quote = "";
      if (input[pos] === "'" || input[pos] === '"') quote = input[pos++];
      urlString = input.slice(pos);
      if (quote) {
        const end = urlString.indexOf(quote);
        if (end >= 0) urlString = urlString.slice(0, end);
      }
    }
    return urlString;
  };

  const base = document.baseURI;
  const rows = [];
  let index = 0;
  const add = (element, attribute, token, value, against = base) => {
    const resolved = resolve(value, against);
    const inDocument = against === base ? fetched(value, resolved) : null;
    rows.push([index, element.localName, attribute, token, value, resolved, inDocument]);
  };
  const one = (element, attribute) => {
    const value = element.getAttribute(attribute);
    if (value !== null) add(element, attribute, 0, value);
  };
  const ANY = ["src", "action", "formaction", "cite", "poster", "background", "longdesc"];
  const HREF = new Set(["a", "area", "link"]);
  const USEMAP = new Set(["img", "input", "object"]);

  const visit = (element) => {
    const name = element.localName;
    if (element.namespaceURI === HTML) {
      // HTML 4 resolves these against codebase; browsers ignore codebase: not compared.
      const codebase = (name === "object" || name === "applet") && element.hasAttribute("codebase");
      if (HREF.has(name)) one(element, "href");
      if (name === "base" && element.hasAttribute("href")) {
        // A base href is resolved against the document's URL (its fallback base URL).
        add(element, "href", 0, element.getAttribute("href"), document.URL);
      }
      for (const attribute of ANY) one(element, attribute);
      if (name === "object" && !codebase) one(element, "data");
      if (USEMAP.has(name)) {
        const value = element.getAttribute("usemap");
        if (value !== null && !trim(value).startsWith("#")) add(element, "usemap", 0, value);
      }
      if (name === "html") one(element, "manifest");
      const ping = element.getAttribute("ping");
      if (ping !== null) {
        const tokens = ping.split(/[\t\n\f\r ]+/).filter((token) => token !== "");
        tokens.forEach((token, i) => add(element, "ping", i, token));
      }
      for (const attribute of ["srcset", "imagesrcset"]) {
        const value = element.getAttribute(attribute);
        if (value !== null) srcsetUrls(value).forEach((url, i) => add(element, attribute, i, url));
      }
      if (name === "meta") {
        const equiv = element.getAttribute("http-equiv");
        const content = element.getAttribute("content");
        if (equiv !== null && equiv.toLowerCase() === "refresh" && content !== null) {
          const url = refreshUrl(content);
          if (url !== null) add(element, "content", 0, url);
        }
      }
    } else if (element.namespaceURI === SVG || element.namespaceURI === MATHML) {
      const href = element.getAttributeNS(null, "href");
      if (href !== null) add(element, "href", 0, href);
      const xlink = element.getAttributeNS(XLINK, "href");
      if (xlink !== null) add(element, "xlink:href", 0, xlink);
    }
    index++;
  };

  // Document order, template contents included (after the template element itself):
  // rewriter rewrites them, and they resolve against the document once instantiated.
  const stack = [document.documentElement];
  while (stack.length) {
    const element = stack.pop();
    if (element === null) continue;
    visit(element);
    const children = [...element.children];
    if (element.localName === "template" && element.namespaceURI === HTML && element.content) {
      children.unshift(...element.content.children);
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return {
    url: document.URL,
    baseURI: document.baseURI,
    characterSet: document.characterSet,
    rows: rows,
  };
}
"""


@dataclass(frozen=True, slots=True)
class Page:
    """A corpus page: its file name and retrieval URL."""

    file: str
    url: str


@dataclass(frozen=True, slots=True)
class Row:
    """One URL the browser found: where it is, what it says, what it resolves to."""

    index: int  # the element's position in document order
    element: str
    attribute: str
    token: int  # which URL of the attribute (srcset candidate, ping token), else 0
    value: str
    resolved: str | None  # new URL(value, document.baseURI), null when it fails
    fetched: str | None  # the same, the query encoded in the document's encoding (non-UTF-8 only)

    @property
    def key(self) -> tuple[int, str, str, int]:
        return self.index, self.element, self.attribute, self.token


@dataclass(frozen=True, slots=True)
class Collected:
    """What the browser saw in one load."""

    url: str
    base_uri: str
    character_set: str
    rows: tuple[Row, ...]
    aborted: tuple[str, ...]  # the requests refused (everything but the document)


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One URL that resolves differently in the relocated, rewritten page."""

    file: str
    element: str  # e.g. "a#12" (the element's index in document order)
    attribute: str  # e.g. "srcset[2]" for the third candidate
    original_value: str
    rewritten_value: str
    original_resolved: str | None
    relocated_resolved: str | None

    def __str__(self) -> str:
        return (
            f"{self.file}: <{self.element}> {self.attribute}: original {self.original_value!r} -> "
            f"{self.original_resolved!r}; rewritten {self.rewritten_value!r} -> {self.relocated_resolved!r}"
        )


@dataclass(slots=True)
class PageReport:
    """The comparison of one page."""

    file: str
    compared: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    seconds: float = 0.0


def select_every(items: Sequence[T], step: int) -> list[T]:
    """Every *step*-th item, from the first: a fixed, deterministic sample."""
    return list(items[::step])


def corpus_pages(corpus: Path = CORPUS) -> list[Page]:
    """The corpus pages, in manifest order, whose retrieval URL is http or https.

    Pages without a URL (null) are left out, and so are the few whose "URL" is a file
    label (``hard::name.html``): a browser cannot be at such a URL.
    """
    manifest = json.loads((corpus / "manifest.json").read_text(encoding="utf-8"))
    return [
        Page(entry["file"], entry["url"])
        for entry in manifest
        if isinstance(entry.get("url"), str) and entry["url"].lower().startswith(("http://", "https://"))
    ]


def tooling_problem() -> str | None:
    """Why the browser test cannot run here (None when it can)."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is absent: install Debian's chromium (apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is absent: python3 -m pip install playwright (no 'playwright install')"
    return None


class Browser:
    """One Chromium for many loads; each load gets a fresh context with scripting off."""

    def __init__(self, executable: Path | None = None) -> None:
        from playwright.sync_api import sync_playwright

        executable = executable or CHROMIUM
        self._manager = sync_playwright()
        self._playwright = self._manager.start()
        try:
            self._browser = self._playwright.chromium.launch(executable_path=str(executable), args=LAUNCH_ARGS)
        except BaseException:
            self._manager.__exit__(None, None, None)
            raise

    @property
    def version(self) -> str:
        return self._browser.version

    def close(self) -> None:
        try:
            self._browser.close()
        finally:
            self._manager.__exit__(None, None, None)

    def __enter__(self) -> Browser:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def evaluate(self, url: str, body: bytes, script: str, argument: Any = None) -> Any:
        """Serve *body* as the document at *url* (nothing else) and run *script*, a function of
        *argument*, in it through ``page.evaluate``; its result."""
        context = self._browser.new_context(java_script_enabled=False, service_workers="block")
        try:
            context.route(
                "**/*",
                lambda route: (
                    route.fulfill(status=200, headers={"Content-Type": "text/html"}, body=body)
                    if route.request.is_navigation_request()
                    else route.abort("aborted")
                ),
            )
            page = context.new_page()
            page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)
            return page.evaluate(script, argument)
        finally:
            context.close()

    def requested(self, url: str, body: bytes, settle_ms: int = 500) -> list[str]:
        """Serve *body* as the document at *url* and list every other request Chromium makes
        (each aborted) by *settle_ms* after the load: subresources, a meta refresh."""
        context = self._browser.new_context(java_script_enabled=False, service_workers="block")
        served: list[str] = []
        requested: list[str] = []

        def route(route: Any) -> None:
            if not served and route.request.is_navigation_request():
                served.append(route.request.url)
                route.fulfill(status=200, headers={"Content-Type": "text/html"}, body=body)
            else:
                requested.append(route.request.url)
                route.abort("aborted")

        try:
            context.route("**/*", route)
            page = context.new_page()
            page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)
            page.wait_for_timeout(settle_ms)
        finally:
            context.close()
        return requested

    def load(self, url: str, body: bytes) -> Collected:
        """Serve *body* as the document at *url* (nothing else) and collect its URLs."""
        context = self._browser.new_context(java_script_enabled=False, service_workers="block")
        served: list[str] = []
        aborted: list[str] = []

        def route(route: Any) -> None:
            request = route.request
            if not served and request.is_navigation_request() and request.frame.parent_frame is None:
                served.append(request.url)
                route.fulfill(status=200, headers={"Content-Type": "text/html"}, body=body)
            else:
                # "aborted" (net::ERR_ABORTED) commits no error page: a meta refresh or a
                # frame's navigation leaves the document in place.
                aborted.append(request.url)
                route.abort("aborted")

        try:
            context.route("**/*", route)
            page = context.new_page()
            page.goto(url, wait_until="load", timeout=NAVIGATION_TIMEOUT_MS)
            found = page.evaluate(COLLECT_JS)
        finally:
            context.close()
        document_url = found["url"]
        if served != [document_url.split("#")[0]] or document_url.split(":")[0] != url.split(":")[0]:
            raise RuntimeError(f"served {served} but the document is at {found['url']!r} (wanted {url!r})")
        return Collected(
            url=found["url"],
            base_uri=found["baseURI"],
            character_set=found["characterSet"],
            rows=tuple(Row(*row) for row in found["rows"]),
            aborted=tuple(aborted),
        )


def _label(row: Row) -> tuple[str, str]:
    attribute = row.attribute if row.token == 0 and row.attribute not in ("srcset", "imagesrcset", "ping") else None
    return f"{row.element}#{row.index}", attribute or f"{row.attribute}[{row.token}]"


def compare(file: str, original: Collected, relocated: Collected) -> tuple[int, list[Mismatch]]:
    """How many URLs were compared, and which differ, between the two loads."""
    mismatches: list[Mismatch] = []
    if original.character_set != relocated.character_set:
        mismatches.append(
            Mismatch(file, "#document", "characterSet", "", "", original.character_set, relocated.character_set)
        )
    # A <base> that took effect must give the same base URL (its fragment never matters).
    base_uri = original.base_uri.split("#")[0]
    if base_uri != original.url.split("#")[0] and base_uri != relocated.base_uri.split("#")[0]:
        mismatches.append(Mismatch(file, "#document", "baseURI", "", "", original.base_uri, relocated.base_uri))
    compared = 0
    for before, after in zip(original.rows, relocated.rows, strict=False):
        if before.key != after.key:
            element, attribute = _label(before)
            mismatches.append(
                Mismatch(
                    file, element, f"{attribute} (structure differs from here)", before.value, after.value, None, None
                )
            )
            return compared, mismatches
        if before.resolved is None and after.resolved is None:
            continue  # fails to parse in both
        compared += 1
        if before.fetched is not None or after.fetched is not None:
            # Not UTF-8: what the page means is what the browser fetches, its query in the
            # document's encoding (``new URL`` would read the query as UTF-8).
            if before.fetched != after.fetched:
                element, attribute = _label(before)
                mismatches.append(
                    Mismatch(
                        file,
                        element,
                        f"{attribute} (in the document's encoding, {original.character_set})",
                        before.value,
                        after.value,
                        before.fetched,
                        after.fetched,
                    )
                )
        elif before.resolved != after.resolved:
            element, attribute = _label(before)
            mismatches.append(
                Mismatch(file, element, attribute, before.value, after.value, before.resolved, after.resolved)
            )
    if len(original.rows) != len(relocated.rows):
        mismatches.append(
            Mismatch(file, "#document", "row count", "", "", str(len(original.rows)), str(len(relocated.rows)))
        )
    return compared, mismatches


def compare_document(browser: Browser, name: str, data: bytes, url: str, policy: Policy) -> PageReport:
    """Load *data* at *url* and its rewrite at :func:`relocated_url`, and compare every URL."""
    started = time.perf_counter()
    rewritten = rewrite_html(data, url=url, policy=policy).output
    original = browser.load(url, data)
    relocated = browser.load(relocated_url(url), rewritten)
    compared, mismatches = compare(name, original, relocated)
    return PageReport(name, compared, mismatches, time.perf_counter() - started)


def compare_page(browser: Browser, page: Page, policy: Policy, corpus: Path = CORPUS) -> PageReport:
    """:func:`compare_document` for a corpus page, at its retrieval URL."""
    return compare_document(browser, page.file, (corpus / page.file).read_bytes(), page.url, policy)


def relocated_url(url: str) -> str:
    """Where the rewritten page is served: :data:`RELOCATED_URL`, in the page's top-level domain.

    Chromium guesses the encoding of a page that declares none from its bytes *and* the
    top-level domain of its URL (a UTF-8 page without a declaration is EUC-KR at a .kr
    host, windows-1252 at .example): keeping the domain keeps the guess, which is the
    browser's, not the rewrite's.

    >>> relocated_url("http://entermedia.co.kr/news/view.html")
    'https://relocated.example.kr/some/other/dir/page.html?moved=1'
    >>> relocated_url("http://192.0.2.1/x")
    'https://relocated.example/some/other/dir/page.html?moved=1'
    """
    host = urlsplit(url).hostname or ""
    tld = host.rsplit(".", 1)[-1] if "." in host else ""
    return RELOCATED_URL.format(tld=f".{tld}" if tld.isascii() and tld.isalpha() else "")


def policy_for(rules: str) -> Policy:
    """The policy under test: *rules*, with fragment-only and empty references made absolute too."""
    return Policy().clone(rules=rules, same_document=True)


def _kind(mismatch: Mismatch) -> str:
    """A rough class of a mismatch, for the summary."""
    value = mismatch.original_value
    if mismatch.element == "#document":
        return mismatch.attribute
    if "structure" in mismatch.attribute:
        return "structure"
    features = []
    core = value.strip(" \t\n\f\r")
    if not core:
        features.append("empty reference")
    elif core[0] in "?#":
        features.append("query-only reference" if core[0] == "?" else "fragment-only reference")
    if "\\" in value:
        features.append("backslash")
    if any(ord(char) < 0x20 or char == "\x7f" for char in value):
        features.append("control character")
    if any(ord(char) > 0x7F for char in value):
        features.append("non-ASCII")
    if " " in value.strip():
        features.append("space")
    if "%" in value:
        features.append("percent")
    if value.strip().startswith("//"):
        features.append("scheme-relative")
    if ":" in value.split("/")[0]:
        features.append("scheme")
    if "../" in value or "/.." in value or "/./" in value:
        features.append("dot segments")
    if mismatch.original_resolved is None or mismatch.relocated_resolved is None:
        features.append("parse failure on one side")
    return ", ".join(features) or "other"


def run(pages: Sequence[Page], rules: str, corpus: Path, sample: int, out: Any = sys.stdout) -> list[PageReport]:
    """Compare every page under *rules* and print the figures."""
    policy = policy_for(rules)
    reports: list[PageReport] = []
    errors: list[tuple[str, str]] = []
    started = time.perf_counter()
    with Browser() as browser:
        print(f"== {rules}: {len(pages)} pages, Chromium {browser.version}", file=out, flush=True)
        for page in pages:
            try:
                reports.append(compare_page(browser, page, policy, corpus))
            except Exception as error:  # one page's failure must not hide the others' figures
                errors.append((page.file, f"{type(error).__name__}: {error}"))
    mismatches = [mismatch for report in reports for mismatch in report.mismatches]
    kinds = Counter(_kind(mismatch) for mismatch in mismatches)
    print(f"pages compared:          {len(reports)}", file=out)
    print(f"pages that failed:       {len(errors)}", file=out)
    print(f"attributes compared:     {sum(report.compared for report in reports)}", file=out)
    print(f"mismatches:              {len(mismatches)}", file=out)
    print(f"pages with a mismatch:   {sum(1 for report in reports if report.mismatches)}", file=out)
    print(f"seconds:                 {time.perf_counter() - started:.1f}", file=out)
    for kind, count in kinds.most_common():
        print(f"  {count:6d}  {kind}", file=out)
    for file, error in errors:
        print(f"  FAILED {file}: {error}", file=out)
    shown: Counter[str] = Counter()
    for mismatch in mismatches:
        kind = _kind(mismatch)
        if shown[kind] < sample:
            shown[kind] += 1
            print(f"  [{kind}] {mismatch}", file=out)
    print(file=out, flush=True)
    return reports


def _pages(args: argparse.Namespace) -> Iterator[Page]:
    for page in corpus_pages(args.corpus):
        if not args.file or page.file in args.file:
            yield page


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--rules", choices=RULES, default="whatwg", help="the rule set to rewrite with (whatwg)")
    group.add_argument("--all", action="store_true", help="every rule set in turn")
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=f"the corpus directory ({CORPUS})")
    parser.add_argument("--file", action="append", help="only this corpus file (repeatable)")
    parser.add_argument("--sample", type=int, default=5, help="mismatches shown per kind (5)")
    args = parser.parse_args(argv)
    problem = tooling_problem()
    if problem is not None:
        print(f"browser_relocation: {problem}", file=sys.stderr)
        return 2
    if not (args.corpus / "manifest.json").exists():
        print(f"browser_relocation: {args.corpus / 'manifest.json'} is absent", file=sys.stderr)
        return 2
    pages = list(_pages(args))
    any_mismatch = False
    for rules in RULES if args.all else (args.rules,):
        reports = run(pages, rules, args.corpus, args.sample)
        any_mismatch = any_mismatch or any(report.mismatches for report in reports) or len(reports) < len(pages)
    return 1 if any_mismatch else 0


if __name__ == "__main__":
    sys.exit(main())
