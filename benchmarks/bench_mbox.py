"""mbox benchmark: rewriter against a plain stdlib email loop on one large mbox, in the same run.

Builds an mbox of --size-mb MB (default 500) in a temporary folder from the corpus mail
(../shared/corpus/mail, or --corpus): every .eml/.mht/.mhtml file and every message of
every .mbox file, each behind a ``From `` line, repeated until the size is reached. Then
each contender runs in a process of its own, so that the peak RSS printed is its own
(the child's VmHWM from /proc, else its ru_maxrss):

- rewriter: ``rewrite_mbox(source, target)`` from the file to an output file, with no
  URL (each message's own headings give the base);
- stdlib email: the same From_-line split, ``BytesParser(policy=compat32).parsebytes``
  and ``as_bytes()`` written to an output file (parse and serialise, rewrite nothing).

Each contender runs --rounds times, the two alternating so that machine noise falls on
both. Prints messages, MB, seconds, messages/s and MB/s of each one's median run, its
highest peak RSS, and the ratio of the median throughputs. The target: at least 4x the
stdlib loop's throughput, peak RSS under 150 MB. The mbox is deleted at the end unless
--keep.

    python benchmarks/bench_mbox.py [--corpus DIR] [--size-mb 500] [--rounds 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from rewriter.containers.mailbox import iter_mbox

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "mail"
SUFFIXES = (".eml", ".mht", ".mhtml", ".mbox")
FROM_LINE = re.compile(rb"^(>*From )", re.M)
TARGET_RATIO = 4.0
TARGET_RSS_MB = 150.0
CONTENDERS = ("rewriter", "stdlib")
TITLES = {"rewriter": "rewriter.mailbox.rewrite_mbox", "stdlib": "stdlib email compat32 parse+as_bytes"}


def corpus_messages(corpus: Path) -> list[bytes]:
    """Every message of the corpus, each behind a From_ line and ending in a line break.

    Body lines starting ``From `` are quoted the mboxrd way, so that both contenders
    (and any reader) find the same messages.
    """
    messages = []
    for path in sorted(corpus.iterdir()):
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            continue
        if suffix == ".mbox":
            with path.open("rb") as stream:
                found = [message for _, message in iter_mbox(stream)]
        else:
            data = path.read_bytes()
            # A message saved with its envelope line (mime4j-mp-msg-rfc822.eml) gets ours instead.
            found = [data.split(b"\n", 1)[1] if data.startswith(b"From ") else data]
        for message in found:
            if not message.strip():
                continue
            message = FROM_LINE.sub(rb">\1", message)
            eol = b"\r\n" if b"\r\n" in message[:4096] else b"\n"
            if not message.endswith(b"\n"):
                message += eol
            messages.append(b"From bench@example.invalid Thu Jan  1 00:00:00 1970" + eol + message)
    return messages


def build(corpus: Path, path: Path, size: int) -> int:
    """Write an mbox of at least *size* bytes to *path*; the number of messages in it."""
    messages = corpus_messages(corpus)
    if not messages:
        raise SystemExit(f"no messages in {corpus}")
    unit = b"".join(messages)
    rounds = -(-size // len(unit))
    with path.open("wb") as stream:
        for _ in range(rounds):
            stream.write(unit)
    return rounds * len(messages)


# --------------------------------------------------------------------------
# The contenders, each run in a child process
# --------------------------------------------------------------------------


def run_rewriter(source: BinaryIO, target: BinaryIO) -> tuple[int, int]:
    from rewriter.containers.mailbox import rewrite_mbox

    messages = changed = 0
    for report in rewrite_mbox(source, target):
        messages += 1
        changed += report.changed
    return messages, changed


def run_stdlib(source: BinaryIO, target: BinaryIO) -> tuple[int, int]:
    from email.parser import BytesParser
    from email.policy import compat32

    parser = BytesParser(policy=compat32)
    messages = changed = 0
    separator = b""
    lines: list[bytes] = []

    def flush() -> None:
        nonlocal messages, changed
        if not separator and not lines:
            return
        data = b"".join(lines)
        try:
            output = parser.parsebytes(data).as_bytes()
        except Exception:  # the loop keeps going, as rewrite_mbox does
            output = data
        target.write(separator)
        target.write(output)
        messages += 1
        changed += output != data

    # The split of iter_mbox: every line starting "From " opens a message.
    for line in source:
        if line.startswith(b"From "):
            flush()
            separator, lines = line, []
        else:
            lines.append(line)
    flush()
    return messages, changed


RUNNERS: dict[str, Callable[[BinaryIO, BinaryIO], tuple[int, int]]] = {"rewriter": run_rewriter, "stdlib": run_stdlib}


def peak_rss_kb() -> int:
    """This process's peak resident set size in KiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes on macOS, KiB elsewhere


def child(name: str, mbox: Path, output: Path) -> int:
    runner = RUNNERS[name]
    if name == "rewriter":
        # Imported before the clock starts, like the stdlib's email.
        import rewriter.mime.message  # noqa: F401
    with mbox.open("rb") as source, output.open("wb") as target:
        start = time.perf_counter()
        messages, changed = runner(source, target)
        seconds = time.perf_counter() - start
    figures = {
        "messages": messages,
        "changed": changed,
        "bytes": mbox.stat().st_size,
        "seconds": seconds,
        "peak_rss_kb": peak_rss_kb(),
    }
    print(json.dumps(figures))
    return 0


# --------------------------------------------------------------------------
# The parent
# --------------------------------------------------------------------------


def measure(name: str, mbox: Path, folder: Path) -> dict[str, float]:
    output = folder / f"{name}.out"
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", name, str(mbox), str(output)], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise SystemExit(f"{name} failed:\n{done.stderr}")
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        output.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--size-mb", type=float, default=500.0, help="the size of the mbox built (default 500)")
    parser.add_argument("--keep", action="store_true", help="keep the mbox built (its path is printed)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each contender, alternating (default 3)")
    parser.add_argument("--child", nargs=3, metavar=("NAME", "MBOX", "OUTPUT"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, mbox, output = args.child
        return child(name, Path(mbox), Path(output))
    if not args.corpus.is_dir():
        print(f"no corpus at {args.corpus}: pass --corpus", file=sys.stderr)
        return 2

    folder = Path(tempfile.mkdtemp(prefix="bench_mbox."))
    mbox = folder / "bench.mbox"
    try:
        built = build(args.corpus, mbox, int(args.size_mb * 1e6))
        size = mbox.stat().st_size
        print(
            f"mbox: {size / 1e6:.1f} MB, {built} messages, from {args.corpus}; {args.rounds} round(s), "
            f"the median run of each shown; Python {sys.version.split()[0]}"
        )
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
        for _ in range(max(args.rounds, 1)):  # alternating, so that machine noise falls on both
            for name in CONTENDERS:
                runs[name].append(measure(name, mbox, folder))
        figures = {}
        for name, rows in runs.items():
            median = sorted(rows, key=lambda row: row["seconds"])[len(rows) // 2]
            figures[name] = {**median, "peak_rss_kb": max(row["peak_rss_kb"] for row in rows)}
        widths = {"messages": 9, "MB": 8, "seconds": 8, "messages/s": 11, "MB/s": 7, "peak RSS MB": 12}
        print(f"{'contender':40}" + "".join(f" {title:>{width}}" for title, width in widths.items()))
        for name, row in figures.items():
            seconds = max(row["seconds"], 1e-9)
            print(
                f"{TITLES[name]:40} {row['messages']:9d} {row['bytes'] / 1e6:8.1f} {seconds:8.2f}"
                f" {row['messages'] / seconds:11.0f} {row['bytes'] / seconds / 1e6:7.1f}"
                f" {row['peak_rss_kb'] / 1024:12.1f}"
            )
        mine, peer = figures["rewriter"], figures["stdlib"]
        if mine["messages"] != peer["messages"]:
            print(f"warning: the two split {mine['messages']} and {peer['messages']} messages")
        ratio = peer["seconds"] / max(mine["seconds"], 1e-9)
        rss = mine["peak_rss_kb"] / 1024
        print(f"messages changed: rewriter {mine['changed']}, stdlib {peer['changed']} (it rewrites no link)")
        print(
            f"rewriter / stdlib throughput: {ratio:.2f}x (target >= {TARGET_RATIO:g}x: "
            f"{'met' if ratio >= TARGET_RATIO else 'NOT met'})"
        )
        verdict = "met" if rss < TARGET_RSS_MB else "NOT met"
        print(f"rewriter peak RSS: {rss:.1f} MB (target < {TARGET_RSS_MB:g} MB: {verdict})")
    finally:
        if args.keep:
            print(f"mbox kept: {mbox}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
