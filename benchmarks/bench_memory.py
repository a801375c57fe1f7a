"""Memory by the input: the peak of one document above start-up, as a multiple of its size, in one run.

Issue 36's figure. Each input is generated into a temporary folder, and each contender runs
on it in a child process of its own. The child imports what it needs and reads nothing else
first; then the kernel's high-water mark of its resident memory is reset (``/proc/self/clear_refs``,
"5") and its resident size taken: start-up. After the work, the high-water mark (``VmHWM``)
less start-up is the peak the work cost, printed in MB and as a multiple of the input's size
(the target: 3x or less).

Inputs:

- ``manual``: a 25 MB page of about 440,000 links (a single-page manual or specification:
  sections, paragraphs, a link or two in each sentence, a table of contents);
- ``dense``: an 8 MB page that is nearly all links (an index: one <a> a line);
- ``plain``: an 8 MB page of text with a link every few KB (the size without the links);
- ``wide``: the plain page with one emoji: a str of it takes four bytes a character (PEP 393);
- ``message``: a 100 MB MIME message: an HTML part of 1 MB of links, a plain text part, a 75 MB
  attachment in base64.

Contenders (each where it applies):

- ``cli``: ``rewriter rewrite FILE -o OUT --url URL -q`` (its ``main``, in the child);
- ``library``: ``rewriter.rewrite(Path(FILE), url=URL)``, the output written;
- ``lxml``: ``lxml.html.document_fromstring``, ``make_links_absolute``, ``tostring`` (pages);
- ``turbohtml``: the page decoded and ``turbohtml.parse``'d as the engine parses it, nothing else:
  the tree every tree-based run holds at its peak, and so the floor under rewriter's figure;
- ``email``: ``BytesParser(policy=email.policy.default).parsebytes`` and ``as_bytes`` (the
  message: parse and serialise, no link rewritten).

    python benchmarks/bench_memory.py [--only manual,dense,plain,wide,message] [--quick] [--pure]

--quick: inputs a hundredth the size (checks that it runs). --pure: rewriter without its C
extension (REWRITER_PURE=1).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

URL = "https://docs.example.org/manual/current/index.html"
TARGET = 3.0
PEERS = ("lxml", "email", "turbohtml")  # measured beside rewriter, not held to the target
MB = 1 << 20

# The child: imports, the mark reset, the work, the figures as one JSON line on standard output.
CHILD = r"""
import json, os, sys

kind, source, out, url = sys.argv[1:5]


def status(field):
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


if kind == "cli":
    from rewriter.cli.entry import main
elif kind == "library":
    import rewriter
    from pathlib import Path
elif kind == "lxml":
    import lxml.html
elif kind == "turbohtml":
    from rewriter.html.turbo import core as turbohtml
elif kind == "email":
    import email.policy
    from email.parser import BytesParser
try:
    with open("/proc/self/clear_refs", "w") as marks:
        marks.write("5")  # the high-water mark starts again from here
    reset = True
except OSError:
    reset = False
start = status("VmRSS")
if kind == "cli":
    code = main(["rewrite", source, "-o", out, "--url", url, "-q", "-j", "1"])
elif kind == "library":
    result = rewriter.rewrite(Path(source), url=url)
    with open(out, "wb") as stream:
        stream.write(result.output)
    code = 0
elif kind == "lxml":
    with open(source, "rb") as stream:
        data = stream.read()
    tree = lxml.html.document_fromstring(data)
    tree.make_links_absolute(url, resolve_base_href=True)
    with open(out, "wb") as stream:
        stream.write(lxml.html.tostring(tree))
    code = 0
elif kind == "turbohtml":
    with open(source, "rb") as stream:
        data = stream.read()
    text = data.decode("utf-8", "surrogateescape")
    tree = turbohtml.parse(text, scripting=True, allow_declarative_shadow_roots=False)
    code = 0
else:
    with open(source, "rb") as stream:
        data = stream.read()
    message = BytesParser(policy=email.policy.default).parsebytes(data)
    with open(out, "wb") as stream:
        stream.write(message.as_bytes())
    code = 0
print(json.dumps({"start": start, "peak": status("VmHWM"), "reset": reset, "code": code}))
"""


def manual(size: int) -> bytes:
    """A single-page manual of about *size* bytes, about one link in 60 bytes (440,000 in 25 MB)."""
    head = b'<!doctype html><html><head><meta charset="utf-8"><title>Manual</title>'
    head += b'<link rel="stylesheet" href="../static/manual.css"></head><body>\n'
    parts = [head, b"<nav><ul>\n"]
    for number in range(200):
        parts.append(b'<li><a href="#s%d">Section %d</a></li>\n' % (number, number))
    parts.append(b"</ul></nav>\n")
    written, number = sum(map(len, parts)), 0
    while written < size:
        section = [b'<h2 id="s%d">Section %d</h2>\n' % (number, number)]
        for paragraph in range(12):
            section.append(
                b'<p>See <a href="../api/module-%d.html#f%d">f%d</a> and <a href="ref/%d-%d.html">the '
                b'reference</a>, with its figure <img src="img/fig-%d-%d.png" alt="a figure">.</p>\n'
                % (number, paragraph, paragraph, number, paragraph, number, paragraph)
            )
        chunk = b"".join(section)
        parts.append(chunk)
        written += len(chunk)
        number += 1
    parts.append(b"</body></html>\n")
    return b"".join(parts)


def dense(size: int) -> bytes:
    """An index page of about *size* bytes: one link a line."""
    parts = [b'<!doctype html><html><head><meta charset="utf-8"><title>Index</title></head><body><ul>\n']
    written, number = len(parts[0]), 0
    while written < size:
        line = b'<li><a href="p/%07d.html">%d</a></li>\n' % (number, number)
        parts.append(line)
        written += len(line)
        number += 1
    parts.append(b"</ul></body></html>\n")
    return b"".join(parts)


def plain(size: int) -> bytes:
    """A page of about *size* bytes of text, with a link every 4 KB or so."""
    sentence = b"The quick brown fox jumps over the lazy dog, and then it rests a while. "
    paragraph = b"<p>" + sentence * 55 + b'<a href="more.html">more</a></p>\n'
    head = b'<!doctype html><html><head><meta charset="utf-8"><title>Text</title></head><body>\n'
    return head + paragraph * max(1, (size - len(head)) // len(paragraph)) + b"</body></html>\n"


def wide(size: int) -> bytes:
    """The plain page with one character past U+FFFF in its first paragraph: Python holds the
    decoded text at four bytes a character (PEP 393), for every engine that reads a str."""
    return plain(size).replace(b"<body>", "<body><p>\N{GRINNING FACE}</p>".encode(), 1)


def message(size: int) -> bytes:
    """A MIME message of about *size* bytes: an HTML part with links (a hundredth of it), a
    plain text part (to a quarter), then an attachment of three quarters of it in base64 (lines
    of 76 characters)."""
    import base64

    page = dense(max(size // 100, 1000)).decode()
    line = b"A line of the plain text part of the report, quoted and requoted by each reply.\r\n"
    text = line * max(1, (size // 4 - len(page)) // len(line))
    attachment = base64.encodebytes(os.urandom(size * 3 // 4 * 3 // 4 * 76 // 78)).replace(b"\n", b"\r\n")
    return b"".join(
        [
            b"From: a@example.org\r\nTo: b@example.org\r\nSubject: a report\r\nMIME-Version: 1.0\r\n",
            b"Content-Location: https://mail.example.org/reports/2026/\r\n",
            b'Content-Type: multipart/mixed; boundary="b0undary"\r\n\r\n',
            b"--b0undary\r\nContent-Type: text/html; charset=utf-8\r\n\r\n",
            page.encode().replace(b"\n", b"\r\n"),
            b"\r\n--b0undary\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n",
            text,
            b"\r\n--b0undary\r\nContent-Type: application/octet-stream\r\n",
            b'Content-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename="data.bin"\r\n\r\n',
            attachment,
            b"--b0undary--\r\n",
        ]
    )


INPUTS = {
    "manual": (manual, 25 * MB, "page.html", ("cli", "library", "lxml", "turbohtml")),
    "dense": (dense, 8 * MB, "page.html", ("cli", "library", "lxml", "turbohtml")),
    "plain": (plain, 8 * MB, "page.html", ("cli", "library", "lxml", "turbohtml")),
    "wide": (wide, 8 * MB, "page.html", ("cli", "library", "lxml", "turbohtml")),
    "message": (message, 100 * MB, "message.eml", ("cli", "library", "email")),
}


def measure(kind: str, source: Path, out: Path, pure: bool) -> dict[str, int | bool]:
    """The child's figures: its start-up and peak resident sizes, in bytes."""
    environment = dict(os.environ, PYTHONHASHSEED="0")
    if pure:
        environment["REWRITER_PURE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, kind, str(source), str(out), URL],
        capture_output=True,
        env=environment,
        check=False,
    )
    lines = done.stdout.decode().strip().splitlines()
    if not lines:
        raise SystemExit(f"{kind} on {source.name} failed: {done.stderr.decode()[-2000:]}")
    figures: dict[str, int | bool] = json.loads(lines[-1])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", default=",".join(INPUTS))
    parser.add_argument("--quick", action="store_true", help="inputs a hundredth the size, to check that it runs")
    parser.add_argument("--pure", action="store_true", help="rewriter without its C extension")
    args = parser.parse_args()
    if not Path("/proc/self/status").exists():
        raise SystemExit("bench_memory reads /proc/self/status: Linux only")
    chosen = [name for name in args.only.split(",") if name]
    unknown = [name for name in chosen if name not in INPUTS]
    if unknown:
        raise SystemExit(f"unknown input {', '.join(unknown)}: choose from {', '.join(INPUTS)}")
    print(f"peak resident memory above start-up, as a multiple of the input (target: {TARGET:g}x or less)")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        for name in chosen:
            make, size, file_name, contenders = INPUTS[name]
            data = make(size // 100 if args.quick else size)
            source = Path(folder) / name / file_name
            source.parent.mkdir()
            source.write_bytes(data)
            links = data.count(b"href=") + data.count(b"src=")
            print(f"{name}: {len(data) / MB:.1f} MB, about {links:,} link attributes")
            del data
            peaks = {}
            for kind in contenders:
                out = Path(folder) / name / f"out-{kind}"
                figures = measure(kind, source, out / file_name if kind == "cli" else out, args.pure)
                peak = max(0, int(figures["peak"]) - int(figures["start"]))
                peaks[kind] = peak
                note = "" if figures["reset"] else " (no reset: the peak includes start-up)"
                within = peak <= TARGET * source.stat().st_size
                flag = "" if kind in PEERS else ("  ok" if within else "  over")
                print(
                    f"  {kind:8} {peak / MB:9.1f} MB  {peak / source.stat().st_size:6.1f}x the input"
                    f"  (start-up {int(figures['start']) / MB:.0f} MB){flag}{note}"
                )
                if figures["code"]:
                    print(f"  {kind}: exit status {figures['code']}")
            for named in ("lxml", "email", "turbohtml"):
                peer = peaks.get(named)
                for kind in ("cli", "library"):
                    if peer and kind in peaks:
                        print(f"  {kind} peak / {named} peak: {peaks[kind] / peer:.2f}")


if __name__ == "__main__":
    main()
