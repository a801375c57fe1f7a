"""Safe file names for bundles, and an output folder that nothing escapes.

Names in a bundle come from the content: a part's Content-Location, file name or
Content-ID, a WARC record's URL. Any of them may be hostile (``../../x``, ``/abs``,
``C:\\x``, ``con.html``, 5,000 characters, the same name twice, ``evil.html`` on a part
declared ``image/png``). :func:`safe_name` makes one name that is a single plain path
segment on every common file system, whose extension is one its declared type allows;
:class:`Folder` picks a name no other entry of the folder has (case and Unicode
normalisation ignored) and writes each file by name relative to the folder's
descriptor, exclusively: an existing file or symbolic link is never followed, replaced
or written through, and a file appears whole or not at all.

>>> safe_name("../../etc/passwd"), safe_name("C:\\\\x\\\\con.html"), safe_name("logo", "image/png")
('passwd', '_con.html', 'logo.png')
"""

from __future__ import annotations

import contextlib
import errno
import functools
import mimetypes
import os
import re
import unicodedata
from pathlib import Path
from urllib.parse import unquote

from rewriter.disk import files

__all__ = ["Folder", "safe_name"]

# Windows device names, reserved with any extension (Win32 file namespaces); the
# superscript digits count as digits there.
_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$"}
    | {f"{port}{digit}" for port in ("com", "lpt") for digit in "0123456789\u00b9\u00b2\u00b3"}
)
# Forbidden in a name on Windows or POSIX, or a path separator anywhere; the C0 controls,
# DEL and the C1 controls; the line and paragraph separators (a name shown on two lines);
# lone surrogates (a byte that was not UTF-8, which no file system name can hold as such).
# Each becomes "_": it stood where something was, and a listing should show it.
_UNSAFE = re.compile('[\x00-\x1f\x7f-\x9f<>:"/\\\\|?*\u2028\u2029\ud800-\udfff]')
LIMIT = 120  # bytes of UTF-8: well under the 255 of ext4, APFS and NTFS, room for "-999"

# One name for each type that goes by several (RFC 9239 §6: JavaScript is text/javascript).
_ALIASES = {
    "application/javascript": "text/javascript",
    "application/x-javascript": "text/javascript",
    "application/ecmascript": "text/javascript",
    "text/ecmascript": "text/javascript",
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "image/x-icon": "image/vnd.microsoft.icon",
    "application/x-gzip": "application/gzip",
}
# Our own extensions, first for their type: where Python's built-in table has none (that of
# 3.11 lacks .webp, .woff2 and .xhtml) or does not start with the usual one (.xsl for
# application/xml). The built-in table's follow, for types it lists.
_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "text/html": (".html", ".htm"),
    "application/xhtml+xml": (".xhtml", ".xht"),
    "text/css": (".css",),
    "text/javascript": (".js", ".mjs"),
    "image/jpeg": (".jpg", ".jpeg"),
    "image/webp": (".webp",),
    "image/vnd.microsoft.icon": (".ico",),
    "font/woff": (".woff",),
    "font/woff2": (".woff2",),
    "font/ttf": (".ttf",),
    "font/otf": (".otf",),
    "application/xml": (".xml",),
    "application/gzip": (".gz",),
    "application/wasm": (".wasm",),
}
NEUTRAL = ".bin"  # for application/octet-stream, and a type no table knows
# Run by Windows when opened, whatever a type's table lists them under (text/plain has .bat).
_RUN_ON_OPEN = frozenset({".bat", ".cmd", ".com", ".exe", ".dll", ".scr", ".pif", ".msi", ".vbs", ".hta"})


def _one_name(content_type: str) -> str:
    content_type = content_type.strip().lower()
    return _ALIASES.get(content_type, content_type)


@functools.cache
def _builtin_table() -> dict[str, tuple[str, ...]]:
    """Type -> extensions in Python's own strict table, types under one name each.

    ``mimetypes.MimeTypes(filenames=())`` reads no system file: the module's functions add
    /etc/mime.types and the like (and the registry on Windows), so names would differ from
    one machine to the next, and any local file could make ``.html`` an image's.
    """
    table: dict[str, list[str]] = {}
    for kind, extensions in mimetypes.MimeTypes(filenames=()).types_map_inv[True].items():
        known = table.setdefault(_one_name(kind), [])
        known.extend(extension.lower() for extension in extensions if extension.lower() not in known)
    return {kind: tuple(extensions) for kind, extensions in table.items()}


@functools.cache
def allowed_extensions(content_type: str) -> tuple[str, ...]:
    """The extensions a file of the declared *content_type* may have, the usual one first
    (lower case, with the dot); empty for a type no table knows.

    Ours (:data:`_EXTENSIONS`), then Python's built-in strict table, without those that
    Windows runs when opened. ``application/octet-stream`` declares nothing about its
    content: it allows :data:`NEUTRAL` alone, not the ``.exe``, ``.dll`` or ``.so`` that
    the table lists for it.

    >>> allowed_extensions("image/jpeg"), allowed_extensions("IMAGE/PNG"), allowed_extensions("x/y")
    (('.jpg', '.jpeg', '.jpe'), ('.png',), ())
    """
    kind = _one_name(content_type)
    if kind == "application/octet-stream":
        return (NEUTRAL,)
    ours = _EXTENSIONS.get(kind, ())
    builtin = _builtin_table().get(kind, ())
    return ours + tuple(extension for extension in builtin if extension not in ours and extension not in _RUN_ON_OPEN)


def safe_name(raw: str, content_type: str | None = None, *, limit: int = LIMIT) -> str:
    """One path segment made from *raw* (a URL path, a file name, a Content-ID).

    The last segment after any ``/`` or ``\\`` is kept and percent-decoded; characters
    that Windows or POSIX forbid, controls (C0, DEL, C1), line and paragraph separators
    become ``_``; invisible format characters (bidirectional controls, zero-width
    characters: :func:`_visible`) are dropped; leading dots and trailing dots and spaces
    go (no hidden files, no ``..``); a Windows device name gets a ``_`` before it; the
    name is cut to *limit* bytes of UTF-8. Never empty.

    With a declared *content_type*, the extension follows it: a browser or a file manager
    opening the file goes by the extension alone, so ``evil.html``, ``a.svg``, ``a.exe`` or
    ``a.js`` declared ``image/png`` would be run as a page, a script or a program. A name
    whose extension is one of :func:`allowed_extensions` keeps it (``a.jpeg`` for
    ``image/jpeg``); any other gets the type's usual extension after the whole name
    (``evil.html.png``), or :data:`NEUTRAL` (``.bin``) for a type no table knows and for
    ``application/octet-stream``. A name without an extension gets the type's usual one;
    those two types have none to give, and such a name stays as it is: only an extension
    makes a claim that has to be undone. Without a type, the name's own extension stays.

    >>> safe_name("http://example.org/a/b%20c.png?x=1")
    'b c.png'
    >>> safe_name("style", "text/css"), safe_name("...."), safe_name("x" * 5000)[-4:]
    ('style.css', 'file', 'xxxx')
    >>> safe_name("evil.html", "image/png"), safe_name("a.JPEG", "image/jpeg"), safe_name("a.png", "x/y")
    ('evil.html.png', 'a.JPEG', 'a.png.bin')
    >>> safe_name("setup.exe", "application/octet-stream"), safe_name("data", "application/octet-stream")
    ('setup.exe.bin', 'data')
    """
    text = raw.replace("\\", "/")
    text = text.split("?", 1)[0].split("#", 1)[0] if "://" in text else text
    text = unquote(text.rstrip("/").rsplit("/", 1)[-1], errors="replace")
    text = unicodedata.normalize("NFC", _UNSAFE.sub("_", _visible(text))).strip(" ").lstrip(".").rstrip(". ")
    stem, dot, extension = text.rpartition(".")
    if not dot or not stem:
        stem, extension = text, ""
    extension = "." + extension if extension else ""
    if not content_type:
        if len(extension.encode("utf-8")) > 16:
            stem, extension = stem + extension, ""
    else:
        allowed = allowed_extensions(content_type)
        if extension and extension.lower() not in allowed:  # "page.php" holding HTML, "evil.html" a PNG
            stem, extension = text, allowed[0] if allowed else NEUTRAL
        elif not extension and allowed and allowed[0] != NEUTRAL:
            extension = allowed[0]
    stem = stem or "file"
    if stem.split(".", 1)[0].rstrip(" ").lower() in _DEVICES:
        stem = "_" + stem
    room = limit - len(extension.encode("utf-8"))
    stem = stem.encode("utf-8")[:room].decode("utf-8", "ignore")
    return (stem.rstrip(". ") or "file") + extension


def _visible(text: str) -> str:
    """*text* without its format characters (Unicode category Cf): the bidirectional controls
    and isolates (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069), the zero-width
    characters (U+200B-U+200D, U+2060, U+FEFF), the soft hyphen, the tag characters. None
    has a glyph of its own, so a name keeps its look without them; with them it may show
    another (``invoice\u202efdp.exe`` shown as ``invoiceexe.pdf``) or two names may look
    the same. Dropped rather than replaced, as nothing was seen where they were.

    >>> _visible("invoice\u202efdp.exe"), _visible("\ufeffa\u200bb")
    ('invoicefdp.exe', 'ab')
    """
    if text.isascii():
        return text
    return "".join(character for character in text if unicodedata.category(character) != "Cf")


def _key(name: str) -> str:
    """What two names that one file system could take for the same file share."""
    return unicodedata.normalize("NFC", name).casefold()


class Folder:
    """An output folder written only by name, through its descriptor.

    Every write is exclusive (:meth:`rewriter.disk.files.Folder.write_new`: ``O_EXCL`` and
    ``O_NOFOLLOW`` on a temporary name, then a hard link to the final name, which fails
    rather than replace): nothing outside the folder is touched, nothing in it is
    overwritten, and a file is complete when its name appears.
    """

    def __init__(self, path: Path | str, *, fd: int | None = None) -> None:
        self.path = Path(path)
        self._files = files.Folder.open(self.path, None) if fd is None else files.Folder(self.path, fd)
        self._taken = {_key(name) for name in os.listdir(self._fd)}

    @property
    def _fd(self) -> int:
        if self._files.fd is None:  # closed (or no dir_fd on this system): never the working folder
            raise OSError(errno.EBADF, os.strerror(errno.EBADF), str(self.path))
        return self._files.fd

    def close(self) -> None:
        self._files.close()

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
        self._files.write_new(name, data)
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
