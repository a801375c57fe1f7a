"""Safe file names for bundles, and an output folder that nothing escapes.

Names in a bundle come from the content: a part's Content-Location, file name or
Content-ID, a WARC record's URL. Any of them may be hostile (``../../x``, ``/abs``,
``C:\\x``, ``con.html``, 5,000 characters, the same name twice). :func:`safe_name`
makes one name that is a single plain path segment on every common file system;
:class:`Folder` picks a name no other entry of the folder has (case and Unicode
normalisation ignored) and writes each file by name relative to the folder's
descriptor, exclusively: an existing file or symbolic link is never followed, replaced
or written through, and a file appears whole or not at all.

>>> safe_name("../../etc/passwd"), safe_name("C:\\\\x\\\\con.html"), safe_name("logo", "image/png")
('passwd', '_con.html', 'logo.png')
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import re
import secrets
import unicodedata
from pathlib import Path
from urllib.parse import unquote

__all__ = ["Folder", "safe_name"]

# Windows device names, reserved with any extension (Win32 file namespaces); the
# superscript digits count as digits there.
_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"{port}{digit}" for port in ("com", "lpt") for digit in "0123456789\u00b9\u00b2\u00b3"}
)
# Forbidden in a name on Windows or POSIX, or a path separator anywhere; C0 and DEL.
_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*]')
LIMIT = 120  # bytes of UTF-8: well under the 255 of ext4, APFS and NTFS, room for "-999"
_EXTENSIONS = {"text/html": ".html", "text/css": ".css", "image/jpeg": ".jpg", "text/javascript": ".js"}
# Types a browser reading local files takes from the extension alone (it sniffs images).
_TYPED_BY_EXTENSION = frozenset({"text/html", "application/xhtml+xml", "text/css", "image/svg+xml", "text/javascript"})


# One name for each type that goes by several (RFC 9239 §6: JavaScript is text/javascript).
_ALIASES = {
    "application/javascript": "text/javascript",
    "application/x-javascript": "text/javascript",
    "application/ecmascript": "text/javascript",
    "text/ecmascript": "text/javascript",
}


def _one_name(content_type: str | None) -> str | None:
    if content_type is None:
        return None
    content_type = content_type.lower()
    return _ALIASES.get(content_type, content_type)


def _extension_for(content_type: str | None) -> str | None:
    if not content_type:
        return None
    content_type = _one_name(content_type)  # type: ignore[assignment]
    if content_type == "application/octet-stream":
        return None
    return _EXTENSIONS.get(content_type) or mimetypes.guess_extension(content_type, strict=False)


def safe_name(raw: str, content_type: str | None = None, *, limit: int = LIMIT) -> str:
    """One path segment made from *raw* (a URL path, a file name, a Content-ID).

    The last segment after any ``/`` or ``\\`` is kept and percent-decoded; characters
    that Windows or POSIX forbid become ``_``; leading dots and trailing dots and spaces
    go (no hidden files, no ``..``); a Windows device name gets a ``_`` before it; the
    name is cut to *limit* bytes of UTF-8 and given the extension of *content_type*
    when its own says something else. Never empty.

    >>> safe_name("http://example.org/a/b%20c.png?x=1")
    'b c.png'
    >>> safe_name("style", "text/css"), safe_name("...."), safe_name("x" * 5000)[-4:]
    ('style.css', 'file', 'xxxx')
    """
    text = raw.replace("\\", "/")
    text = text.split("?", 1)[0].split("#", 1)[0] if "://" in text else text
    text = unquote(text.rstrip("/").rsplit("/", 1)[-1], errors="replace")
    text = unicodedata.normalize("NFC", _UNSAFE.sub("_", text)).strip(" ").lstrip(".").rstrip(". ")
    stem, dot, extension = text.rpartition(".")
    if not dot or not stem:
        stem, extension = text, ""
    wanted = _extension_for(content_type)
    kind = _one_name(content_type)
    typed = wanted is not None and kind in _TYPED_BY_EXTENSION
    if typed and extension and _one_name(mimetypes.guess_type("x." + extension, strict=False)[0]) != kind:
        # "page.php" holding HTML: a browser reading files takes the type from the extension.
        stem, extension = text, ""
    extension = "." + extension if extension else (wanted or "")
    if len(extension.encode("utf-8")) > 16:
        stem, extension = stem + extension, wanted or ""
    stem = stem or "file"
    if stem.split(".", 1)[0].rstrip(" ").lower() in _DEVICES:
        stem = "_" + stem
    room = limit - len(extension.encode("utf-8"))
    stem = stem.encode("utf-8")[:room].decode("utf-8", "ignore")
    return (stem.rstrip(". ") or "file") + extension


def _key(name: str) -> str:
    """What two names that one file system could take for the same file share."""
    return unicodedata.normalize("NFC", name).casefold()


class Folder:
    """An output folder written only by name, through its descriptor.

    Every write is exclusive (``O_EXCL`` and ``O_NOFOLLOW`` on a temporary name, then a
    hard link to the final name, which fails rather than replace): nothing outside the
    folder is touched, nothing in it is overwritten, and a file is complete when its
    name appears.
    """

    def __init__(self, path: Path | str, *, fd: int | None = None) -> None:
        self.path = Path(path)
        if fd is None:
            os.makedirs(self.path, exist_ok=True)
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        self._fd = fd
        self._taken = {_key(name) for name in os.listdir(fd)}

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def taken(self, name: str) -> bool:
        """Whether an entry of this folder (or one picked already) has *name*."""
        return _key(name) in self._taken

    def pick(self, raw: str, content_type: str | None = None) -> str:
        """A safe name from *raw* that no entry of the folder has; it is reserved."""
        name = safe_name(raw, content_type)
        stem, dot, extension = name.rpartition(".")
        if not dot or not stem:
            stem, dot, extension = name, "", ""
        number = 1
        while _key(name) in self._taken:
            number += 1
            suffix = f"-{number}{dot}{extension}"
            room = LIMIT - len(suffix.encode("utf-8"))
            name = stem.encode("utf-8")[:room].decode("utf-8", "ignore") + suffix
        self._taken.add(_key(name))
        return name

    def write(self, name: str, data: bytes) -> None:
        """Write *data* as the new file *name* (one segment); FileExistsError if it exists."""
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"not a plain file name: {name!r}")
        temporary = f".rewriter-{secrets.token_hex(8)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(temporary, flags, 0o644, dir_fd=self._fd)
        try:
            with os.fdopen(fd, "wb") as stream:
                stream.write(data)
            os.link(temporary, name, src_dir_fd=self._fd, dst_dir_fd=self._fd, follow_symlinks=False)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary, dir_fd=self._fd)
        self._taken.add(_key(name))

    def folder(self, name: str) -> Folder:
        """The subfolder *name* (one segment), made here if it is not; never a link followed."""
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"not a plain folder name: {name!r}")
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=self._fd)
        fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0), dir_fd=self._fd)
        self._taken.add(_key(name))
        return Folder(self.path / name, fd=fd)
