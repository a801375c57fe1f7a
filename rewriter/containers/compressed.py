"""Compressed mboxes (``.mbox.gz``, ``.mbox.xz``, ``.mbox.zst``): read as a stream through their
decompressor and written back through a compressor of the same kind.

The compression is told by its signature (:data:`rewriter.containers.formats.CODECS`), by
:func:`~rewriter.containers.formats.codec_of`; whether what it holds is an mbox is
:func:`rewriter.containers.formats.what_file_is`'s decision, from the start of what it decompresses
to. :func:`decompressed` gives the stream the mbox splitter reads: it reads the file a
chunk at a time and never holds the whole mbox, and it cannot seek (the splitter reads it as it
reads a pipe). Its :meth:`Decompressed.compressing` is the stream the rewritten mbox is written
to, compressed as the input was (gzip with the input's modification time, xz with its integrity
check, Zstandard with a checksum when the input had one), into whatever it is given: the run
gives it the atomic replacement of :mod:`rewriter.disk.files`, so that a file that cannot be read
to its end leaves no output at all.

gzip and xz are the standard library's (imported when a file needs them: telling a file's
format imports neither); Zstandard is the ``zstandard`` package, imported only
when a file needs it. Data that does not decompress raises :class:`CompressionError` (an
OSError whose text says what is wrong), as does a Zstandard file when the package is missing.

>>> import gzip, io
>>> packed = gzip.compress(b"From a\\nSubject: x\\n\\nhi\\n", mtime=0)
>>> codec_of(packed)
'gzip'
>>> source = decompressed(io.BytesIO(packed))
>>> out = io.BytesIO()
>>> with source.compressing(out) as sink:
...     _ = sink.write(source.read(100))
>>> gzip.decompress(out.getvalue())
b'From a\\nSubject: x\\n\\nhi\\n'
"""

from __future__ import annotations

import contextlib
import errno
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, Protocol

from rewriter.containers.formats import CODECS, Codec, codec_of

__all__ = [
    "CODECS",
    "Codec",
    "CompressionError",
    "Decompressed",
    "codec_of",
    "decompressed",
]

_HEADER = 18  # enough of the file's start for every codec's signature and the flags kept


class CompressionError(OSError):
    """Compressed data that cannot be read: not what its signature says, cut short, damaged,
    or (Zstandard) no ``zstandard`` package to read it with. Its ``strerror`` says which."""

    def __init__(self, detail: str) -> None:
        super().__init__(errno.EINVAL, detail)


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


def _zstandard() -> Any:
    try:
        import zstandard
    except ImportError:
        raise CompressionError(
            "Zstandard-compressed: reading it needs the zstandard package (pip install zstandard)"
        ) from None
    return zstandard


class _Joined:
    """*head*, then the rest of *stream*: a stream read once (the signature taken off it first)."""

    def __init__(self, head: bytes, stream: _Readable) -> None:
        self.head, self.stream = head, stream

    def read(self, size: int = -1, /) -> bytes:
        if not self.head:
            return self.stream.read(size)
        if size < 0:
            data, self.head = self.head + self.stream.read(), b""
            return data
        data, self.head = self.head[:size], self.head[size:]
        return data


_NAMES = {"gzip": "gzip", "xz": "xz", "zstd": "Zstandard"}


class Decompressed:
    """What a compressed file decompresses to, read as it is asked for (``read`` only: no
    ``seekable``, so that the mbox splitter never seeks back into it). ``codec`` is its
    compression; :meth:`compressing` writes another file the same way."""

    def __init__(self, stream: _Readable) -> None:
        import lzma

        header = b""
        while len(header) < _HEADER:
            chunk = stream.read(_HEADER - len(header))
            if not chunk:
                break
            header += chunk
        codec = codec_of(header)
        if codec is None:
            raise CompressionError("not compressed data: no gzip, xz or Zstandard signature at its start")
        self.codec: Codec = codec
        self.header = header
        source = _Joined(header, stream)
        self._inner: Any
        # What the decompressors raise on bad data (BadGzipFile is an OSError; a read error of
        # the file too, said the same way).
        self._errors: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError, zlib.error)
        if codec == "gzip":
            import gzip

            self._inner = gzip.GzipFile(fileobj=source, mode="rb")  # type: ignore[call-overload]
        elif codec == "xz":
            self._inner = lzma.LZMAFile(source, "rb", format=lzma.FORMAT_XZ)  # type: ignore[arg-type]  # noqa: SIM115
        else:
            zstandard = _zstandard()
            self._errors += (zstandard.ZstdError,)
            decompressor = zstandard.ZstdDecompressor()
            self._inner = decompressor.stream_reader(source, read_across_frames=True, closefd=False)

    def read(self, size: int = -1, /) -> bytes:
        try:
            return bytes(self._inner.read(size))
        except CompressionError:
            raise
        except self._errors as error:
            raise self._error(error) from None

    def _error(self, error: BaseException) -> CompressionError:
        what = str(error) or type(error).__name__
        if isinstance(error, EOFError):
            what = "cut short: " + what
        return CompressionError(f"{_NAMES[self.codec]} data that cannot be read to its end ({what})")

    @contextlib.contextmanager
    def compressing(self, sink: BinaryIO) -> Iterator[BinaryIO]:
        """A stream that compresses what is written to it into *sink*, as this file was
        compressed; its end (trailer, checksum) is written when the block ends without an
        error. *sink* is neither closed nor flushed."""
        import lzma

        out: Any
        if self.codec == "gzip":
            import gzip

            mtime = int.from_bytes(self.header[4:8], "little")  # RFC 1952 §2.3.1 MTIME, kept
            out = gzip.GzipFile(filename="", mode="wb", fileobj=sink, compresslevel=6, mtime=mtime)
        elif self.codec == "xz":
            check = self.header[7] & 0x0F if len(self.header) > 7 else lzma.CHECK_CRC64  # Stream Flags §2.1.1.2
            if not lzma.is_check_supported(check):
                check = lzma.CHECK_CRC64
            out = lzma.LZMAFile(sink, "wb", format=lzma.FORMAT_XZ, check=check)  # noqa: SIM115 (closed below)
        else:
            checksum = len(self.header) > 4 and bool(self.header[4] & 0x04)  # RFC 8878 §3.1.1.1.1.5
            compressor = _zstandard().ZstdCompressor(level=3, write_checksum=checksum)
            out = compressor.stream_writer(sink, closefd=False)
        try:
            yield out
        except BaseException:
            with contextlib.suppress(Exception):
                out.close()
            raise
        out.close()


def decompressed(stream: _Readable) -> Decompressed:
    """The decompressed stream of the compressed file *stream* (read from where it stands:
    its signature first). Raises :class:`CompressionError` when it has none, or when it is
    Zstandard and the ``zstandard`` package is missing."""
    return Decompressed(stream)
