"""Golden outputs: what every verb writes over the corpora, frozen as digests (issue 21).

Every verb runs on the HTML and mail corpora of ../shared and on a web archive built here:
``rewrite`` of whole folders (no base; per-file URLs from the manifest under ``whatwg``; the
mail corpus; a WARC out), ``links`` and ``explain`` of every mail file and of every page,
``unpack`` of every message, ``pack`` of the fixture page, and ``resolve`` of real pairs under
every rule set. Each output file, report, standard output and standard error (paths and times
normalised) is kept as a SHA-256 digest in ``tests/golden/golden.json``; ``tests/test_golden.py``
computes them again and names every one that changed. A change of behaviour that is meant
rewrites the file, in the same commit, with:

    python3 tests/golden.py --write
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
GOLDEN = Path(__file__).resolve().parent / "golden" / "golden.json"
HTML = SHARED / "corpus" / "html"
MAIL = SHARED / "corpus" / "mail"
RULES = ("rfc1808", "rfc2396", "rfc3986", "whatwg")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def normalised(text: bytes, *folders: Path) -> bytes:
    """*text* with the run's own folders and the summary's time written the same way on every run."""
    for number, folder in enumerate(folders):
        text = text.replace(str(folder).encode(), f"<folder{number}>".encode())
    text = re.sub(rb"=_rewriter_[0-9a-f]{32}", b"=_rewriter_BOUNDARY", text)  # pack draws a fresh boundary
    text = re.sub(rb"(?m)^Date: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d -0000\r?$", b"Date: <when packed>", text)
    return re.sub(rb"[\d.,]+ MB in [\d.]+ s", b"MB in s", text)


def tree(folder: Path) -> dict[str, str]:
    return {
        path.relative_to(folder).as_posix(): digest(path.read_bytes())
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def command(cwd: Path, *argv: str) -> tuple[int, bytes, bytes]:
    done = subprocess.run([sys.executable, "-m", "rewriter", *argv], cwd=cwd, capture_output=True, timeout=900)
    return done.returncode, done.stdout, done.stderr


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    out, err = io.BytesIO(), io.BytesIO()
    saved = sys.stdout, sys.stderr
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="surrogateescape", write_through=True)
    try:
        yield out, err
    finally:
        for wrapper in (sys.stdout, sys.stderr):
            wrapper.flush()
            wrapper.detach()  # not closed with it: the bytes are read after
        sys.stdout, sys.stderr = saved


def in_process(*argv: str) -> tuple[int, bytes, bytes]:
    """``rewriter ARGV`` in this process (a verb that reads one file: no workers)."""
    from rewriter.cli.commands import main

    with _captured() as (out, err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def record(found: dict[str, str], key: str, code: int, out: bytes, err: bytes, *folders: Path) -> None:
    found[key] = f"{code} {digest(normalised(out, *folders))} {digest(normalised(err, *folders))}"


def web_archive(path: Path) -> Path:
    """A crawl of our own (tests/test_warc_out.py's collection, three times): gzip, chunked and
    coded pages, revisits, a 301, a 206, non-HTML records, a resource."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_warc_out import COLLECTION, write_collection

    return write_collection(path, compress=True, records=COLLECTION * 3)


def compute() -> dict[str, dict[str, str]]:
    golden: dict[str, dict[str, str]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="golden-"))
    old = Path.cwd()
    os.chdir(scratch)  # no rewriter.toml of the project applies
    try:
        # rewrite: whole folders through the command line (workers, report, summary).
        runs = {
            "rewrite-html-no-base": [str(HTML), "-o", "html", "--report", "html.jsonl", "-j", "2"],
            "rewrite-mail": [str(MAIL), "-o", "mail", "--report", "mail.jsonl", "--include", "*.eml", "--include",
                             "*.mht*", "--include", "*.mbox"],
        }  # fmt: skip
        manifest = json.loads((HTML / "manifest.json").read_text(encoding="utf-8"))
        with open(scratch / "urls.csv", "w", newline="", encoding="utf-8") as stream:
            writer = csv.writer(stream)
            for entry in manifest:
                if (entry["url"] or "").startswith(("http://", "https://")):  # else: its own layers alone
                    writer.writerow([entry["file"], entry["url"]])
        runs["rewrite-html-urls-whatwg"] = [
            str(HTML), "-o", "urls", "--url-map", str(scratch / "urls.csv"), "--rules", "whatwg",
            "--report", "urls.json", "-j", "2",
        ]  # fmt: skip
        archive = web_archive(scratch / "crawl.warc.gz")
        runs["rewrite-warc-out"] = [str(archive), "-o", "crawl-out.warc.gz", "--report", "crawl.jsonl"]
        for name, argv in runs.items():
            code, out, err = command(scratch, "rewrite", *argv)
            found = {"": f"{code} {digest(normalised(out, HTML, MAIL, scratch))}"}
            found["stderr"] = digest(normalised(err, HTML, MAIL, scratch))
            target = scratch / argv[2]
            found.update(tree(target) if target.is_dir() else {"output": digest(target.read_bytes())})
            report = scratch / argv[argv.index("--report") + 1]
            found["report"] = digest(normalised(report.read_bytes(), HTML, MAIL, scratch))
            golden[name] = found
        # links, explain: every message and every page, one by one.
        for verb, options in (("links", ["--json"]), ("links", []), ("explain", ["--json"]), ("explain", [])):
            found = {}
            for path in sorted(MAIL.iterdir()):
                if path.name != "SOURCES.md":
                    record(found, path.name, *in_process(verb, str(path), *options), MAIL)
            golden[f"{verb}{''.join(options)}-mail"] = found
        for verb in ("links", "explain"):
            found = {}
            for entry in manifest:
                page = HTML / entry["file"]
                url = ["--url", entry["url"]] if (entry["url"] or "").startswith(("http://", "https://")) else []
                record(found, entry["file"], *in_process(verb, str(page), *url, "--json"), HTML)
            golden[f"{verb}-html"] = found
        found = {}
        for verb in ("links", "explain"):
            record(found, verb, *in_process(verb, str(archive), "--json"), scratch)
        golden["warc-dry"] = found
        # unpack every message and MHTML file; pack the fixture page.
        found = {}
        for path in sorted(MAIL.iterdir()):
            if path.suffix in (".eml", ".mht", ".mhtml"):
                folder = scratch / "unpacked" / path.name
                code, out, err = in_process("unpack", str(path), "-o", str(folder))
                record(found, path.name, code, out, err, MAIL, scratch)
                for name, value in tree(folder).items():
                    found[f"{path.name}/{name}"] = value
        golden["unpack"] = found
        found = {}
        page = ROOT / "fixtures" / "saved-page.html"
        for name, options in (("mhtml", ["-o", str(scratch / "page.mhtml")]),
                              ("single", ["--single-file", str(scratch / "page-inline.html")])):  # fmt: skip
            code, out, err = in_process("pack", str(page), "--url", "https://example.org/docs/page.html", *options)
            record(found, name, code, out, err, ROOT, scratch)
            found[f"{name}-output"] = digest(normalised(Path(options[-1]).read_bytes(), scratch))
        golden["pack"] = found
        # resolve: real pairs, every rule set.
        with gzip.open(SHARED / "bench" / "resolve-pairs.json.gz", "rt", encoding="utf-8") as stream:
            pairs = json.load(stream)[::40]
        found = {}
        by_base: dict[str, list[str]] = {}
        for base, reference in pairs:
            by_base.setdefault(base, []).append(reference)
        lines = [f"{base}\t{reference}" for base, references in sorted(by_base.items()) for reference in references]
        for rules in RULES:
            outputs = []
            for base, references in sorted(by_base.items())[:300]:
                outputs.append(in_process("resolve", "--rules", rules, "--", base, *references))
            found[rules] = digest(repr(outputs).encode())
        found["pairs"] = digest("\n".join(lines).encode())
        golden["resolve"] = found
    finally:
        os.chdir(old)
        shutil.rmtree(scratch, ignore_errors=True)
    return golden


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write tests/golden/golden.json anew")
    options = parser.parse_args()
    found = compute()
    if options.write:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"{GOLDEN}: {sum(len(value) for value in found.values())} digests")
        return
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    changed = [f"{scenario}/{key}" for scenario in expected for key in expected[scenario]
               if found.get(scenario, {}).get(key) != expected[scenario][key]]  # fmt: skip
    print("\n".join(changed) or "unchanged")


if __name__ == "__main__":
    main()
