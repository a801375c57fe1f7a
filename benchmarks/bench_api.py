"""Library benchmark: ``rewriter.rewrite`` as a Python caller meets it, against its peers, in one run.

A crawler, a requests + lxml script, a notebook: each call takes one fetched page's bytes and
gives its links absolute. Four parts, each in the same run:

1. Per call, at four page sizes (100 B, 2 KB, 20 KB, 200 KB; generated pages of a realistic
   link density: about one link each 250 bytes, as bench_small.py's medium pages, with a
   ``<base>``-less head, a style sheet and script link, anchors, images, a ``srcset``, inline
   styles), the CPU time of one call of:

   - ``rewriter.rewrite(page, url=URL)`` (bytes in, bytes out, every other byte kept);
   - ``rewriter.find_links(page, url=URL)`` (the links, resolved; nothing written);
   - lxml: ``lxml.html.document_fromstring`` + ``make_links_absolute(URL, handle_failures="ignore")``
     + ``lxml.html.tostring``;
   - lxml: ``document_fromstring`` + ``urljoin(URL, link)`` for each of ``iterlinks()`` (finding only);
   - parsel: ``Selector(body=page)`` + ``urljoin`` for each ``//@href | //@src`` (finding only;
     skipped, with a note, when parsel is not installed: ``pip install parsel``);
   - BeautifulSoup (``"lxml"`` tree builder): every ``href``/``src`` made absolute with ``urljoin``,
     then ``str(soup)``.

   Each round runs every contender on the same page, in an order that alternates from round to
   round; the figure is the median round's CPU time per call (this process's user and system time,
   what other load on a shared machine changes least), and each ratio is the median of the rounds'
   own ratios (theirs / rewriter.rewrite's). The links each finds are printed beside it.
2. Threads: the 20 KB and 200 KB pages rewritten by 4 threads at once against 1 thread, the same
   number of calls; the throughput ratio is in wall time (threads share one process's CPU time),
   with lxml's make_links_absolute pipeline timed the same way beside it. The machine's cores
   bound it (``os.cpu_count()`` is printed).
3. Start-up: ``import rewriter`` + the first ``rewrite`` of a small page, in a fresh interpreter,
   against ``import lxml.html`` + its first ``fromstring``/``make_links_absolute``/``tostring`` of
   the same page, and a bare interpreter (``pass``): child CPU time (getrusage), median of rounds,
   modules read from compiled bytecode (a scratch ``PYTHONPYCACHEPREFIX``, filled by an untimed run).
4. Trees: ``rewriter.rewrite_tree`` on an lxml tree against the tree's own ``make_links_absolute``
   (each on trees parsed beforehand, untimed), per call, at 2 KB, 20 KB and 200 KB.

--quick runs every part once on small inputs: it only checks that the benchmark works.

    python benchmarks/bench_api.py [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from urllib.parse import urljoin

import lxml.html
from bs4 import BeautifulSoup

import rewriter
from rewriter.document import speedups

try:
    import parsel
except ImportError:  # optional: its column is left out, with a note
    parsel = None

URL = "https://www.example.org/blog/2024/05/post.html"
SIZES = {"100 B": 100, "2 KB": 2_000, "20 KB": 20_000, "200 KB": 200_000}
SMALL_PAGE = b'<p><a href="next.html">next</a> <img src="i.png"></p>'
BUDGET = 0.25  # seconds of calls a round, per contender and size (quick: one call)


def page_of(size: int) -> bytes:
    """A generated page of about *size* bytes: head, then paragraphs with a link each 250 bytes or so."""
    if size <= 200:
        return b'<!doctype html><title>t</title><a href="a.html">a</a> <img src="/i/b.png"> <a href="#top">^</a>'[
            :size
        ].ljust(size, b" ")
    head = (
        b"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>A post</title>\n"
        b'<link rel=stylesheet href="../../css/site.css"><link rel=icon href=/favicon.ico>\n'
        b'<script src="../../js/app.js" defer></script>\n<style>body{background:url(img/bg.png)}</style>\n'
        b"</head><body>\n<nav><a href=/>Home</a> | <a href=../>2024</a> | <a href=archive.html>Archive</a></nav>\n"
    )
    parts = [head]
    length, number = len(head), 0
    while length < size - 40:
        number += 1
        block = (
            f'<p>Paragraph {number}: some prose about the subject, with <a href="post-{number}.html">'
            f'a link</a> and <a href="/tags/t{number % 17}/">a tag</a>, and an image '
            f'<img src="img/p{number}.jpg" alt="picture {number}" width=300 height=200>.</p>\n'
        )
        if number % 5 == 0:
            block += (
                f'<div style="background-image:url(img/d{number}.png)"><img src="s{number}.png" '
                f'srcset="s{number}-2x.png 2x, s{number}-3x.png 3x"></div>\n'
            )
        if number % 7 == 0:
            block += f'<p><a href="https://other.example/{number}">elsewhere</a> <a href="#s{number}">here</a></p>\n'
        parts.append(block.encode())
        length += len(block)
    parts.append(b'<footer><a href="/about.html">About</a></footer>\n</body></html>\n')
    return b"".join(parts)


# ----------------------------------------------------------------------------- the contenders


def run_rewrite(page: bytes) -> int:
    return len(rewriter.rewrite(page, url=URL).links)


def run_find_links(page: bytes) -> int:
    return len(rewriter.find_links(page, url=URL))


def run_lxml_absolute(page: bytes) -> int:
    tree = lxml.html.document_fromstring(page)
    tree.make_links_absolute(URL, handle_failures="ignore")
    lxml.html.tostring(tree)
    return -1  # it counts nothing


def run_lxml_iterlinks(page: bytes) -> int:
    tree = lxml.html.document_fromstring(page)
    return len([urljoin(URL, link) for _, _, link, _ in tree.iterlinks()])


def run_parsel(page: bytes) -> int:
    selector = parsel.Selector(body=page, base_url=URL)
    return len([urljoin(URL, link) for link in selector.xpath("//@href | //@src").getall()])


def run_bs4(page: bytes) -> int:
    soup = BeautifulSoup(page, "lxml")
    count = 0
    for attribute in ("href", "src"):
        for tag in soup.find_all(attrs={attribute: True}):
            tag[attribute] = urljoin(URL, tag[attribute])
            count += 1
    str(soup)
    return count


CONTENDERS: dict[str, Callable[[bytes], int]] = {
    "rewriter.rewrite": run_rewrite,
    "rewriter.find_links": run_find_links,
    "lxml make_links_absolute+tostring": run_lxml_absolute,
    "lxml iterlinks+urljoin": run_lxml_iterlinks,
    "parsel xpath+urljoin": run_parsel,
    "BeautifulSoup(lxml) urljoin+str": run_bs4,
}


def cpu() -> float:
    return time.process_time()


def per_call(run: Callable[[bytes], int], page: bytes, calls: int) -> float:
    gc.collect()
    start = cpu()
    for _ in range(calls):
        run(page)
    return (cpu() - start) / calls


def calls_for(run: Callable[[bytes], int], page: bytes, quick: bool) -> int:
    if quick:
        return 1
    start = cpu()
    run(page)
    once = max(cpu() - start, 1e-6)
    return max(1, min(5000, int(BUDGET / once)))


def part_calls(rounds: int, quick: bool) -> None:
    contenders = dict(CONTENDERS)
    if parsel is None:
        del contenders["parsel xpath+urljoin"]
        print("parsel is not installed (pip install parsel): its column is left out")
    names = list(contenders)
    print(f"\n1. per call, CPU time (median of {rounds} rounds; ratio: theirs / rewriter.rewrite, median of rounds)")
    print(f"   {'contender':34} " + " ".join(f"{size:>20}" for size in SIZES))
    results: dict[str, dict[str, tuple[float, float, int]]] = {name: {} for name in names}
    for size_name, size in SIZES.items():
        page = page_of(size)
        links = {name: run(page) for name, run in contenders.items()}  # untimed: lazy imports, the counts
        calls = {name: calls_for(run, page, quick) for name, run in contenders.items()}
        times: dict[str, list[float]] = {name: [] for name in names}
        for number in range(rounds):
            for name in names[:: 1 if number % 2 == 0 else -1]:
                times[name].append(max(per_call(contenders[name], page, calls[name]), 1e-9))
        ours = times["rewriter.rewrite"]
        for name in names:
            ratio = statistics.median(t / o for t, o in zip(times[name], ours, strict=True))
            results[name][size_name] = (statistics.median(times[name]), ratio, links[name])
    for name in names:
        cells = []
        for size_name in SIZES:
            seconds, ratio, count = results[name][size_name]
            found = "" if count < 0 else f"{count}L "
            cells.append(f"{found}{seconds * 1e6:7.0f}us {ratio:5.2f}x")
        print(f"   {name:34} " + " ".join(f"{cell:>20}" for cell in cells))
    print("   (nL: links found; lxml's make_links_absolute counts none)")


def threaded(run: Callable[[bytes], int], page: bytes, threads: int, calls: int) -> float:
    """Wall seconds for *threads* threads to make *calls* calls in all."""
    barrier = threading.Barrier(threads + 1)
    share = [calls // threads + (1 if number < calls % threads else 0) for number in range(threads)]

    def work(count: int) -> None:
        barrier.wait()
        for _ in range(count):
            run(page)

    workers = [threading.Thread(target=work, args=(count,)) for count in share]
    for worker in workers:
        worker.start()
    gc.collect()
    start = time.perf_counter()
    barrier.wait()
    for worker in workers:
        worker.join()
    return time.perf_counter() - start


def part_threads(rounds: int, quick: bool) -> None:
    print(f"\n2. threads: 4 threads against 1, the same calls; throughput ratio in wall time ({os.cpu_count()} CPUs)")
    for size_name in ("20 KB", "200 KB"):
        page = page_of(SIZES[size_name] if not quick else 2_000)
        for name in ("rewriter.rewrite", "lxml make_links_absolute+tostring"):
            run = CONTENDERS[name]
            calls = 4 if quick else 4 * calls_for(run, page, False)
            ratios = []
            for number in range(rounds):
                order = (1, 4) if number % 2 == 0 else (4, 1)
                wall = {threads: threaded(run, page, threads, calls) for threads in order}
                ratios.append(wall[1] / wall[4])
            print(f"   {size_name:7} {name:34} 4 threads / 1 thread throughput: {statistics.median(ratios):.2f}x")


def child_cpu(code: str, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def part_startup(rounds: int) -> None:
    page = repr(SMALL_PAGE)
    codes = {
        "python -c pass": "pass",
        "import lxml.html + first call": (
            f"import lxml.html; t = lxml.html.document_fromstring({page}); "
            f"t.make_links_absolute({URL!r}, handle_failures='ignore'); lxml.html.tostring(t)"
        ),
        "import rewriter + first rewrite": f"import rewriter; rewriter.rewrite({page}, url={URL!r})",
        "import rewriter": "import rewriter",
    }
    with tempfile.TemporaryDirectory() as scratch:
        # Modules read from compiled bytecode, as an installed package has them: a scratch cache
        # (PYTHONDONTWRITEBYTECODE, if set, would make each child compile every module anew).
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = scratch
        for code in codes.values():
            child_cpu(code, env)  # untimed: the bytecode cache written
        seconds: dict[str, list[float]] = {name: [] for name in codes}
        for number in range(rounds * 2):
            for name in list(codes)[:: 1 if number % 2 == 0 else -1]:
                seconds[name].append(child_cpu(codes[name], env))
    print(f"\n3. start-up in a fresh interpreter, child CPU time (median of {rounds * 2} rounds)")
    bare = statistics.median(seconds["python -c pass"])
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"   {name:34} {median * 1e3:6.1f} ms  ({(median - bare) * 1e3:+6.1f} ms over a bare interpreter)")
    pairs = zip(seconds["import rewriter + first rewrite"], seconds["import lxml.html + first call"], strict=True)
    ours = [o - t for o, t in pairs]
    print(f"   rewriter - lxml.html, import + first call: {statistics.median(ours) * 1e3:+.1f} ms (target: <= +10 ms)")


def part_trees(rounds: int, quick: bool) -> None:
    print(f"\n4. rewrite_tree on an lxml tree against its make_links_absolute, per call (median of {rounds} rounds)")
    for size_name in ("2 KB", "20 KB", "200 KB"):
        page = page_of(SIZES[size_name])
        calls = 1 if quick else max(1, min(200, int(2e6 / len(page))))
        times: dict[str, list[float]] = {"rewrite_tree": [], "make_links_absolute": []}
        for number in range(rounds):
            for name in list(times)[:: 1 if number % 2 == 0 else -1]:
                trees = [lxml.html.document_fromstring(page) for _ in range(calls)]
                gc.collect()
                start = cpu()
                if name == "rewrite_tree":
                    for tree in trees:
                        rewriter.rewrite_tree(tree, url=URL)
                else:
                    for tree in trees:
                        tree.make_links_absolute(URL, handle_failures="ignore")
                times[name].append(max((cpu() - start) / calls, 1e-9))
        ours, theirs = times["rewrite_tree"], times["make_links_absolute"]
        ratio = statistics.median(t / o for t, o in zip(theirs, ours, strict=True))
        print(
            f"   {size_name:7} rewrite_tree {statistics.median(ours) * 1e6:8.0f} us   make_links_absolute "
            f"{statistics.median(theirs) * 1e6:8.0f} us   lxml / rewriter: {ratio:.2f}x"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="every part once, small inputs: checks that it runs")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds = 1
        SIZES.update({"20 KB": 4_000, "200 KB": 8_000})
    mode = "with its C extension" if speedups.COMPILED else "on its Python twins (no C extension)"
    print(f"rewriter {rewriter.__version__} {mode}, Python {sys.version.split()[0]}, {args.rounds} rounds")
    print("pages: " + ", ".join(f"{name} = {len(page_of(size))} bytes" for name, size in SIZES.items()))
    part_calls(args.rounds, args.quick)
    part_threads(args.rounds, args.quick)
    part_startup(args.rounds)
    part_trees(args.rounds, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
