"""Open unpacked bundles in headless Chromium with the network off, and count what loads.

For each bundle (a folder holding ``index.html`` and ``manifest.json``), Chromium opens
``index.html`` from disk in a context that is offline, with every non-file request
aborted as well, and records each image and stylesheet request (frames included):

- **loaded**: a file of the bundle that Chromium read;
- **failed**: a file of the bundle that did not load, or a URL some part of the
  archive carries (its Content-Location or Content-ID) that was not pointed at that
  part's file: either is the unpacker's fault;
- **missing**: a URL no part of the archive carries (the page referenced something
  the archive never saved); it stays absolute and cannot load offline.

Run as a script for the whole corpus: ``python3 tests/browser_bundle.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from browser_relocation import CHROMIUM, LAUNCH_ARGS, tooling_problem

__all__ = [
    "MAIL_CORPUS",
    "BundleReport",
    "archives",
    "browser",
    "check_bundle",
    "open_browser",
    "open_offline",
    "tooling_problem",
]

MAIL_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "mail"
KINDS = ("image", "stylesheet")
LOAD_TIMEOUT_MS = 60_000


@dataclass
class BundleReport:
    name: str
    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def counts(self) -> tuple[int, int, int]:
        return len(self.loaded), len(self.missing), len(self.failed)


def archives(corpus: Path = MAIL_CORPUS) -> list[Path]:
    """Every .mhtml and .mht file of the corpus, by name."""
    return sorted(path for path in corpus.iterdir() if path.suffix.lower() in (".mhtml", ".mht"))


def open_browser() -> Any:
    """(playwright manager, browser): close the browser, then ``manager.__exit__``."""
    from playwright.sync_api import sync_playwright

    manager = sync_playwright()
    playwright = manager.start()
    try:
        return manager, playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
    except BaseException:
        manager.__exit__(None, None, None)
        raise


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for a test module; skips without it (fails when CI=true, which installs it)."""
    problem = tooling_problem()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{problem} (CI installs it: see .ci/run)")
        pytest.skip(problem)
    manager, chromium = open_browser()
    try:
        yield chromium
    finally:
        chromium.close()
        manager.__exit__(None, None, None)


def _part_urls(folder: Path) -> set[str]:
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return {url for part in manifest["parts"] for url in part["urls"]}


def open_offline(browser: Any, page: Path, timeout_ms: int = LOAD_TIMEOUT_MS) -> dict[str, bool]:
    """Open *page* from ``file:`` in an offline context (every other request aborted too) and
    return each image and style sheet request, frames included, in the order first asked: True
    when it finished, False when it failed."""
    requested: dict[str, None] = {}  # url, first request of each
    outcome: dict[str, bool] = {}

    def on_request(request: Any) -> None:
        if request.resource_type in KINDS:
            requested.setdefault(request.url)

    context = browser.new_context(java_script_enabled=False, offline=True, service_workers="block")
    context.on("request", on_request)
    context.on("requestfinished", lambda request: outcome.setdefault(request.url, True))
    context.on("requestfailed", lambda request: outcome.setdefault(request.url, False))

    def route(route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            route.abort("internetdisconnected")

    context.route("**/*", route)
    try:
        tab = context.new_page()
        tab.goto(page.resolve().as_uri(), wait_until="load", timeout=timeout_ms)
        # Images a style sheet asks for start after "load"; closing the context would abort them.
        tab.wait_for_load_state("networkidle", timeout=timeout_ms)
    finally:
        context.close()
    return {url: outcome.get(url, False) for url in requested}


def check_bundle(browser: Any, folder: Path, name: str = "") -> BundleReport:
    """Open *folder*/index.html offline and sort its image and stylesheet requests."""
    report = BundleReport(name or folder.name)
    carried = _part_urls(folder)
    prefix = folder.resolve().as_uri() + "/"
    for url, finished in open_offline(browser, folder / "index.html").items():
        if url.startswith(prefix):
            (report.loaded if finished else report.failed).append(url)
        elif url.partition("#")[0] in carried:
            report.failed.append(url)
        else:
            report.missing.append(url)
    return report


def main() -> int:
    problem = tooling_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 2
    from rewriter.bundle.unpack import unpack_message

    manager, browser = open_browser()
    totals = [0, 0, 0]
    try:
        with tempfile.TemporaryDirectory() as scratch:
            print(f"{'archive':44} {'loaded':>7} {'missing':>8} {'failed':>7}")
            for archive in archives():
                folder = Path(scratch) / archive.stem
                result = unpack_message(archive.read_bytes(), folder)
                if result.root is None:
                    print(f"{archive.name:44} no HTML part: {'; '.join(result.problems)[:60]}")
                    continue
                report = check_bundle(browser, folder, archive.name)
                counts = report.counts()
                totals = [a + b for a, b in zip(totals, counts, strict=True)]
                print(f"{archive.name:44} {counts[0]:7} {counts[1]:8} {counts[2]:7}")
                for url in report.failed:
                    print(f"    failed: {url[:110]}")
            print(f"{'total':44} {totals[0]:7} {totals[1]:8} {totals[2]:7}")
    finally:
        browser.close()
        manager.__exit__(None, None, None)
    return 1 if totals[2] else 0


if __name__ == "__main__":
    sys.exit(main())
