"""Compressed mboxes (.mbox.gz, .mbox.xz, .mbox.zst, and a plain .gz, .xz or .zst that holds
an mbox): read as a stream, written back in the same compression under the same name, and
a file that does not decompress said by name, with no output (issue 32)."""

from __future__ import annotations

import gzip
import io
import lzma
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from rewriter.cli.commands import main
from rewriter.containers.compressed import CompressionError, decompressed
from rewriter.containers.formats import codec_of, what_file_is
from rewriter.containers.mailbox import rewrite_mbox

MESSAGE = (
    b"From: a@example.org\nSubject: one\nMIME-Version: 1.0\nContent-Type: text/html\n"
    b"Content-Location: http://example.org/docs/\n\n<p><a href=next.html>next</a> <img src=i.png>\n"
    b">From the quoted line, kept\n"
)
MBOX = (
    b"From a@example.org Sat Jan  1 00:00:00 2000\n"
    + MESSAGE
    + b"\nFrom b@example.org Sat Jan  1 00:00:00 2000\nSubject: two\n\nno links\n"
)
REWRITTEN = MBOX.replace(b"href=next.html", b"href=http://example.org/docs/next.html").replace(
    b"src=i.png", b"src=http://example.org/docs/i.png"
)

Pack = Callable[[bytes], bytes]
CODECS: dict[str, tuple[Pack, Pack]] = {
    ".gz": (lambda data: gzip.compress(data, mtime=1_700_000_000), gzip.decompress),
    ".xz": (lambda data: lzma.compress(data, check=lzma.CHECK_CRC32), lzma.decompress),
    ".zst": (
        lambda data: zstandard.ZstdCompressor(write_checksum=True).compress(data),
        lambda data: zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read(),
    ),
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("suffix", sorted(CODECS))
def test_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    pack, unpack = CODECS[suffix]
    name = f"list.mbox{suffix}"
    (tmp_path / "in").mkdir()
    packed = pack(MBOX)
    (tmp_path / "in" / name).write_bytes(packed)
    code, err = run(capsys, "rewrite", str(tmp_path / "in"), "-o", str(tmp_path / "out"))
    assert code == 0, err
    output = (tmp_path / "out" / name).read_bytes()  # the same name
    assert codec_of(output) == codec_of(packed)  # the same compression
    assert unpack(output) == REWRITTEN  # decompressed: the bytes outside links unchanged
    assert unpack(packed) == MBOX
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == [name]


def test_what_the_compression_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gzip's modification time, xz's integrity check, Zstandard's checksum flag."""
    outputs = {}
    for suffix, (pack, _) in CODECS.items():
        (tmp_path / f"m.mbox{suffix}").write_bytes(pack(MBOX))
        assert main(["rewrite", str(tmp_path / f"m.mbox{suffix}"), "-o", str(tmp_path / f"o.mbox{suffix}")]) == 0
        outputs[suffix] = (tmp_path / f"o.mbox{suffix}").read_bytes()
    assert int.from_bytes(outputs[".gz"][4:8], "little") == 1_700_000_000
    assert outputs[".xz"][7] & 0x0F == lzma.CHECK_CRC32
    assert outputs[".zst"][4] & 0x04


@pytest.mark.parametrize("suffix", sorted(CODECS))
def test_a_plain_compressed_name_holding_an_mbox(tmp_path: Path, suffix: str) -> None:
    pack, unpack = CODECS[suffix]
    packed = pack(MBOX)
    kind = what_file_is(packed[:8192], f"archive{suffix}")
    assert kind.format == "mbox" + suffix and "From_ line" in kind.reason
    (tmp_path / f"archive{suffix}").write_bytes(packed)
    assert main(["rewrite", str(tmp_path / f"archive{suffix}"), "-o", str(tmp_path / f"out{suffix}")]) == 0
    assert unpack((tmp_path / f"out{suffix}").read_bytes()) == REWRITTEN


def test_compressed_data_that_is_no_mbox_is_copied_as_before(tmp_path: Path) -> None:
    page = gzip.compress(b"<p><a href=x>x</a>")
    assert what_file_is(page, "page.html.gz").format == "other"
    assert what_file_is(gzip.compress(b"some notes"), "notes.gz").format == "other"
    assert what_file_is(gzip.compress(b"some notes"), "notes.mbox.gz").format == "mbox.gz"  # by its name


def test_in_place_and_standard_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "m.mbox.xz"
    source.write_bytes(lzma.compress(MBOX))
    code, err = run(capsys, "rewrite", "--in-place", str(source))
    assert code == 0, err
    assert lzma.decompress(source.read_bytes()) == REWRITTEN
    before = source.stat().st_mtime_ns
    assert main(["rewrite", "--in-place", str(source)]) == 0
    assert source.stat().st_mtime_ns == before  # unchanged: not written again


def test_links_reads_a_compressed_mbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "m.mbox.zst"
    source.write_bytes(CODECS[".zst"][0](MBOX))
    assert main(["links", str(source)]) == 0
    out = capsys.readouterr().out
    assert "1\t1\ta\thref\trewritten\tnext.html\thttp://example.org/docs/next.html" in out


@pytest.mark.parametrize("cut", [-20, 30])
def test_a_corrupt_gz_is_said_by_name_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cut: int
) -> None:
    packed = gzip.compress(MBOX * 50)
    damaged = (
        packed[:cut] if cut < 0 else packed[:cut] + bytes(b ^ 0x55 for b in packed[cut : cut + 40]) + packed[cut + 40 :]
    )
    source = tmp_path / "in" / "broken.mbox.gz"
    source.parent.mkdir()
    source.write_bytes(damaged)
    code, err = run(capsys, "rewrite", str(source.parent), "-o", str(tmp_path / "out"))
    assert code == 1 and "Traceback" not in err
    [line] = [line for line in err.splitlines() if "broken.mbox.gz" in line]
    assert line.startswith(f"rewriter: {source}: gzip data that cannot be read to its end (")
    assert not (tmp_path / "out" / "broken.mbox.gz").exists()  # no output file, not even a part of one
    assert not (tmp_path / "out").exists() or list((tmp_path / "out").iterdir()) == []
    code, err = run(capsys, "rewrite", "--in-place", str(source))
    assert code == 1 and source.read_bytes() == damaged  # in place: left as it was


def test_no_zstandard_package_is_said_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "m.mbox.zst"
    source.write_bytes(CODECS[".zst"][0](MBOX))
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import zstandard raises ImportError
    code, err = run(capsys, "rewrite", str(source), "-o", str(tmp_path / "out.mbox.zst"))
    assert code == 1 and "Traceback" not in err
    assert f"rewriter: {source}: Zstandard-compressed: reading it needs the zstandard package" in err
    assert not (tmp_path / "out.mbox.zst").exists()


def test_decompressed_cannot_seek_and_says_what_is_wrong() -> None:
    source = decompressed(io.BytesIO(gzip.compress(MBOX)))
    assert not hasattr(source, "seekable") and source.codec == "gzip"  # the splitter reads it as a pipe
    assert source.read(5) == b"From " and source.read(-1) == MBOX[5:]
    with pytest.raises(CompressionError, match="not compressed data"):
        decompressed(io.BytesIO(MBOX))
    with pytest.raises(CompressionError, match="xz data that cannot be read to its end"):
        decompressed(io.BytesIO(lzma.compress(MBOX)[:-30])).read()


def test_a_compressed_mbox_is_streamed() -> None:
    """Memory stays flat in the size of the mbox, as for an uncompressed one: 24 MB of messages,
    read and written back, with at most a few MB held at once."""
    body = b"plain text, no links; " * 4000 + b"\n"  # about 88 KB a message
    message = b"From x Sat Jan  1 00:00:00 2000\nSubject: s\n\n" + body
    count = (24 << 20) // len(message)
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", compresslevel=1) as writer:
        for _ in range(count):
            writer.write(message)
    packed.seek(0)
    out = io.BytesIO()
    tracemalloc.start()
    try:
        source = decompressed(packed)
        with source.compressing(out) as sink:
            reports = sum(1 for _ in rewrite_mbox(source, sink))  # type: ignore[arg-type]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reports == count
    assert peak < 12 << 20, f"{peak:,} bytes held at once for {count * len(message):,} bytes of mbox"
    assert gzip.decompress(out.getvalue()) == message * count


def test_format_mbox_reads_a_compressed_one_through_its_decompressor(tmp_path: Path) -> None:
    source = tmp_path / "m.mbox.gz"
    source.write_bytes(gzip.compress(MBOX))
    assert main(["rewrite", "--format", "mbox", str(source), "-o", str(tmp_path / "o.mbox.gz")]) == 0
    assert gzip.decompress((tmp_path / "o.mbox.gz").read_bytes()) == REWRITTEN
