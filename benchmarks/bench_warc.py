"""Reading a WARC: warcio (what rewriter.containers.warc reads with) against fastwarc, in one run.

A WARC of about --size-mb MB (uncompressed) is generated in a temporary folder, seeded, as a
crawl writes it: HTML pages and style sheets (some chunked and gzip-coded), images of
incompressible bytes, requests, revisits, one warcinfo. Written twice by warcio's writer: one
gzip member per record (WARC 1.1 Annex D) and plain. On each, in alternating rounds:

- ``warcio``: warcio's ``ArchiveIterator``, every record's raw payload read;
- ``fastwarc``: fastwarc's ``ArchiveIterator`` (HTTP parsed, ``auto_decode`` off), the same;
- ``fastwarc offsets``: fastwarc's iterator, payloads skipped, each record's ``stream_pos``;
- ``plan_warc``: rewriter's piece scan (its record loop on warcio, payloads drained);
- ``record loop``: the loop WARC out reads with (page bodies kept and decoded, digests checked);
- ``iter_documents``: rewriter's reading (every body decoded, digests checked), for scale.

Then, once, for scale: WARC out of the gzip file (``rewrite_warc_piece``, every page rewritten).

Printed: the best CPU time of each (``time.process_time``: the fairer figure on a shared
machine), MB/s of the file's own size, the ratios warcio / fastwarc, and the records and
payload bytes each saw (they must agree; for plan_warc, pieces of 1 MB and the last
one's first record; for the offset scan, the last record's offset; for iter_documents, the
documents and their decoded bytes). Then the damage each library gets past on small
damaged files: a gzip member zeroed in the middle, junk between plain records, a cut. fastwarc
is optional: without it only warcio and rewriter are measured, and that is said.

    python3 benchmarks/bench_warc.py                  # about 150 MB, 3 rounds
    python3 benchmarks/bench_warc.py --size-mb 300 --rounds 5
"""

from __future__ import annotations

import argparse
import gzip
import io
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO, cast

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rewriter.containers.warc import WarcDamage, WarcDocument, WarcPage, iter_documents, plan_warc, rewrite_warc_piece
from rewriter.containers.warc.out import _page_body  # the record loop itself, as WARC out runs it
from rewriter.containers.warc.read import _Record, _records

try:
    from fastwarc.warc import ArchiveIterator as FastIterator
    from fastwarc.warc import WarcRecordType

    WANTED = WarcRecordType.response | WarcRecordType.resource
except ImportError:  # optional: measured only when installed
    FastIterator = None  # type: ignore[misc, assignment]

DATE = "2024-05-01T12:00:00Z"
Reader = Callable[[Path], tuple[int, int]]  # a way to read a file: (records, payload bytes)


def _chunked(data: bytes, size: int = 8192) -> bytes:
    parts = [b"%x\r\n%s\r\n" % (len(data[i : i + size]), data[i : i + size]) for i in range(0, len(data), size)]
    return b"".join(parts) + b"0\r\n\r\n"


def _page(rng: random.Random, number: int) -> bytes:
    words = [rng.choice(("archive", "crawl", "record", "page", "link", "style", "image")) for _ in range(600)]
    links = "".join(f'<a href="p{rng.randrange(10**6)}.html">{word}</a> ' for word in words[:150])
    head = f"<!doctype html><title>{number}</title><link rel=stylesheet href=s.css>"
    return f"{head}<p>{' '.join(words)}</p>{links}".encode()


def generate(folder: Path, size_mb: float, seed: int = 20) -> tuple[Path, Path]:
    """The crawl, gzip and plain: the same records in the same order."""
    rng = random.Random(seed)
    paths = folder / "crawl.warc.gz", folder / "crawl.warc"
    with open(paths[0], "wb") as packed, open(paths[1], "wb") as plain:
        writers = WARCWriter(packed, gzip=True), WARCWriter(plain, gzip=False)

        def write(kind: str, uri: str, payload: bytes, heading: StatusAndHeaders | None, **extra: str) -> int:
            for number, writer in enumerate(writers):
                fields = {"WARC-Record-ID": f"<urn:uuid:{uuid.UUID(int=rng.getrandbits(128))}>", "WARC-Date": DATE}
                if kind == "revisit":
                    record = writer.create_revisit_record(uri, extra["digest"], uri, DATE, heading, fields)
                elif kind == "warcinfo":
                    record = writer.create_warc_record(
                        "",
                        kind,
                        payload=io.BytesIO(payload),
                        warc_content_type="application/warc-fields",
                        warc_headers_dict=fields,
                    )
                else:
                    record = writer.create_warc_record(
                        uri, kind, payload=io.BytesIO(payload), http_headers=heading, warc_headers_dict=fields
                    )
                writer.write_record(record)
                if number == 1:
                    return plain.tell()
            return 0

        write("warcinfo", "", b"software: bench_warc\r\n", None)
        number = 0
        while plain.tell() < size_mb * 1e6:
            number += 1
            uri = f"http://example.org/{number}/"
            write("request", uri, b"", StatusAndHeaders("GET /", [("Host", "example.org")], is_http_request=True))
            kind = rng.random()
            if kind < 0.45:
                body, fields = _page(rng, number), [("Content-Type", "text/html; charset=utf-8")]
                if number % 3 == 0:
                    body = _chunked(gzip.compress(body, mtime=0))
                    fields += [("Transfer-Encoding", "chunked"), ("Content-Encoding", "gzip")]
            elif kind < 0.55:
                body, fields = b"body { background: url(bg.png) }\n" * 200, [("Content-Type", "text/css")]
            else:
                body, fields = rng.randbytes(rng.randrange(20_000, 120_000)), [("Content-Type", "image/jpeg")]
            heading = StatusAndHeaders("200 OK", fields, protocol="HTTP/1.1")
            write("response", uri, body, heading)
            if number % 10 == 0:
                write("revisit", uri, b"", heading, digest="sha1:" + "A" * 32)
    return paths


def read_warcio(path: Path) -> tuple[int, int]:
    records = size = 0
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            records += 1
            while data := record.raw_stream.read(1 << 16):
                size += len(data)
    return records, size


def read_fastwarc(path: Path) -> tuple[int, int]:
    records = size = 0
    with open(path, "rb") as stream:
        for record in FastIterator(stream, parse_http=True, auto_decode="none"):
            records += 1
            while data := record.reader.read(1 << 16):
                size += len(data)
    return records, size


def offsets_fastwarc(path: Path) -> tuple[int, int]:
    records = last = 0
    with open(path, "rb") as stream:
        for record in FastIterator(stream, parse_http=False):
            records += 1
            last = record.stream_pos
    return records, last


def pieces_rewriter(path: Path) -> tuple[int, int]:
    pieces = list(plan_warc(path, piece_size=1 << 20))
    return len(pieces), pieces[-1].first


def loop_rewriter(path: Path) -> tuple[int, int]:
    """The record loop as WARC out runs it: only the pages' bodies kept and decoded, digests checked."""
    records = size = 0
    with open(path, "rb") as stream:
        for event in _records(stream, _page_body, start=0):
            if isinstance(event, _Record) and isinstance(event.item, WarcDocument):
                records += 1
                size += len(event.item.body or b"")
    return records, size


def documents_rewriter(path: Path) -> tuple[int, int]:
    documents = size = 0
    for item in iter_documents(path):
        if isinstance(item, WarcDocument):
            documents += 1
            size += len(item.body or b"")
    return documents, size


class _Sink(io.RawIOBase):
    """A target that keeps nothing (the bytes are counted)."""

    written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self.written += len(data)
        return len(data)


def warc_out(path: Path) -> int:
    return sum(
        isinstance(item, WarcPage) for item in rewrite_warc_piece(path, None, cast(BinaryIO, _Sink()), gzip=True)
    )


def measure(readers: dict[str, Reader], paths: tuple[Path, ...], rounds: int) -> dict[tuple[str, Path], list[float]]:
    """Each reader on each file, *rounds* times, alternating; CPU seconds of each run."""
    times: dict[tuple[str, Path], list[float]] = {}
    for _ in range(rounds):
        for path in paths:
            for name, reader in readers.items():
                start = time.process_time()
                seen = reader(path)
                times.setdefault((name, path), []).append(time.process_time() - start)
                SEEN[(name, path)] = seen
    return times


SEEN: dict[tuple[str, Path], tuple[int, int]] = {}


def damaged(folder: Path, packed: Path, plain: Path) -> dict[str, Path]:
    """Small damaged copies: the gzip file with one member in the middle zeroed for 64 bytes, the
    plain one with junk between two records, and the gzip one cut short."""
    data = packed.read_bytes()[: 4 << 20]
    starts = [offset for offset in _starts(packed) if offset < len(data)]
    middle = starts[len(starts) // 2]
    zeroed = bytearray(data[: starts[-1]])
    zeroed[middle + 40 : middle + 104] = bytes(64)
    text = plain.read_bytes()[: 4 << 20]
    plain_starts = [offset for offset in _starts(plain) if offset < len(text)]
    cut = plain_starts[len(plain_starts) // 2]
    cases = {
        "a gzip member zeroed": bytes(zeroed),
        "junk between plain records": text[:cut] + b"this is no record\r\n" * 3 + text[cut : plain_starts[-1]],
        "cut short": data[: starts[-1] - 100],
    }
    paths = {}
    for number, (name, content) in enumerate(cases.items()):
        paths[name] = folder / f"damaged{number}.warc"
        paths[name].write_bytes(content)
    return paths


def _starts(path: Path) -> list[int]:
    with open(path, "rb") as stream:
        iterator = ArchiveIterator(stream)
        return [iterator.get_record_offset() for _ in iterator]


def _documents_warcio(path: Path) -> Iterator[object]:
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream):
            if record.rec_type in ("response", "resource"):
                record.raw_stream.read()
                yield record


def _documents_fastwarc(path: Path) -> Iterator[object]:
    with open(path, "rb") as stream:
        for record in FastIterator(stream, record_types=WANTED, parse_http=True, auto_decode="none"):
            record.reader.read()
            yield record


def _documents_fastwarc_quirks(path: Path) -> Iterator[object]:
    with open(path, "rb") as stream:
        iterator = FastIterator(stream, record_types=WANTED, parse_http=True, auto_decode="none", quirks_mode=True)
        for record in iterator:
            record.reader.read()
            yield record


def _documents_rewriter(path: Path) -> Iterator[object]:
    for item in iter_documents(path):
        if isinstance(item, WarcDamage):
            DAMAGE.append(item.problem)
        elif item.body is not None:
            yield item


DAMAGE: list[str] = []


def tolerance(cases: dict[str, Path]) -> None:
    """How many response and resource records each reader reads whole from each damaged file."""
    readers = {"warcio": _documents_warcio, "iter_documents": _documents_rewriter}
    if FastIterator is not None:
        readers |= {"fastwarc": _documents_fastwarc, "fastwarc quirks": _documents_fastwarc_quirks}
    print("\ndamage: response and resource records read (iter_documents: with a body), and how the reading ended")
    for name, path in cases.items():
        print(f"  {name}:")
        for label, documents in readers.items():
            count, DAMAGE[:] = 0, []
            try:
                for _ in documents(path):
                    count += 1
                ended = f"to the end, {len(DAMAGE)} damage reports" if label == "iter_documents" else "to the end"
            except Exception as error:  # what each library raises on damage is part of the figure
                ended = f"raised {type(error).__name__}: {' '.join(str(error).split())[:50]}"
            print(f"    {label:<16} {count:>6}   {ended}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=150.0, help="uncompressed size of the WARC (default 150)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each reader, alternating (default 3)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="bench-warc-"))
    try:
        start = time.perf_counter()
        packed, plain = generate(scratch, args.size_mb)
        mb = {path: path.stat().st_size / 1e6 for path in (packed, plain)}
        print(
            f"generated in {time.perf_counter() - start:.1f} s: {packed.name} {mb[packed]:.1f} MB, "
            f"{plain.name} {mb[plain]:.1f} MB; {args.rounds} rounds, CPU time, best of each"
        )
        readers: dict[str, Reader] = {"warcio": read_warcio}
        if FastIterator is None:
            print("fastwarc is not installed (pip install fastwarc): only warcio and rewriter are measured")
        else:
            readers |= {"fastwarc": read_fastwarc, "fastwarc offsets": offsets_fastwarc}
        readers |= {"plan_warc": pieces_rewriter, "record loop": loop_rewriter, "iter_documents": documents_rewriter}
        times = measure(readers, (packed, plain), args.rounds)
        for path in (packed, plain):
            print(f"\n{path.name}:")
            for name in readers:
                best = min(times[(name, path)])
                seen = SEEN[(name, path)]
                speed = mb[path] / best if best else 0.0
                print(f"  {name:<16} cpu {best:7.2f} s  {speed:8.1f} MB/s   saw {seen[0]:>7} / {seen[1]:,}")
            if FastIterator is not None:
                ratio = min(times[("warcio", path)]) / min(times[("fastwarc", path)])
                scan = min(times[("plan_warc", path)]) / min(times[("fastwarc offsets", path)])
                agree = SEEN[("warcio", path)] == SEEN[("fastwarc", path)]
                print(
                    f"  warcio / fastwarc, payloads read: {ratio:.2f}x; plan_warc / fastwarc offsets: {scan:.2f}x; "
                    f"records and payload bytes {'agree' if agree else 'DIFFER'}"
                )
        print("\nfor scale, WARC out of the whole gzip file (rewrite_warc_piece, gzip to gzip, one run):", end=" ")
        start = time.process_time()
        pages = warc_out(packed)
        print(f"cpu {time.process_time() - start:.2f} s, {pages} pages rewritten")
        tolerance(damaged(scratch, packed, plain))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
