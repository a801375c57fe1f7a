"""Writing files: atomic replace, exclusive create, and folders opened without following links.

Every module that writes a file goes through this one:

- :func:`write_atomically` (and :func:`replacing`, for output that is streamed) puts new
  content at a path in one rename. A temporary file is written beside it (or in a scratch
  folder of the same file system, such as a Maildir's ``tmp/``), fsynced, given its mode and
  renamed over the path; then the folder is fsynced (within :func:`folder_syncs_deferred`, once
  for many files, when the block ends). A reader, a crash or a ``kill -9`` sees the old content
  or the new, never a part. The old file can be kept as a backup (made in one
  rename), and a file that another process changed since it was read is left alone
  (:class:`Refused`).
- :meth:`Folder.write_new` creates a file that must not exist yet: no existing file or
  symbolic link is ever replaced or written through, and the file is whole when its name
  appears.
- :meth:`Folder.open` opens the folder a file is written in; under a *root* (an output tree,
  or a tree rewritten in place) one level at a time, and a symbolic link below the root is
  refused.
- :func:`temporary_name` names our temporary files, and :func:`is_temporary` recognises
  them (a killed run can leave one; a folder walk must not take it for an input);
  :meth:`Folder.remove_temporaries` removes those a killed run left.
- :func:`open_regular` reads a file the run wrote itself (a run's journal, pieces and
  reports), and :meth:`Folder.remove_tree` removes a folder of them: never through a
  symbolic link, and only regular files are read.
- :func:`mode_of` and :func:`kind_of`: a file's permissions for its copy, and what a file
  that is not a regular one is, for messages.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_atomically(folder / "page.html", b"<a href=old>")
>>> read = (folder / "page.html").stat()
>>> write_atomically(folder / "page.html", b"<a href=new>", backup=".orig", expect=read)
>>> sorted(path.name for path in folder.iterdir())
['page.html', 'page.html.orig']
>>> (folder / "page.html").read_bytes(), (folder / "page.html.orig").read_bytes()
(b'<a href=new>', b'<a href=old>')
>>> with Folder.open(folder / "bundle", None) as out:
...     out.write_new("a.txt", b"once")
...     try:
...         out.write_new("a.txt", b"twice")
...     except FileExistsError:
...         print("not replaced")
not replaced
>>> (folder / "bundle" / "a.txt").read_bytes(), os.listdir(folder / "bundle")
(b'once', ['a.txt'])
>>> is_temporary(temporary_name("page.html")), is_temporary("page.html")
(True, False)
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import functools
import itertools
import os
import re
import shutil
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "NAME_ROOM",
    "O_CLOEXEC",
    "O_NOFOLLOW",
    "SYNCFS_FILE_SYSTEMS",
    "TEMPORARY_PREFIX",
    "TEMPORARY_SUFFIX",
    "CommitGroup",
    "Folder",
    "Refused",
    "Replacement",
    "commit_group",
    "committing",
    "folder_syncs_deferred",
    "identity",
    "is_temporary",
    "kind_of",
    "mode_of",
    "not_written",
    "open_regular",
    "remove_temporaries_of",
    "replacing",
    "same_file",
    "temporaries_in",
    "temporary_name",
    "write_atomically",
]

# Our temporary files: ".NAME.rewriter-XXXXXXXXXXXXXXXX.tmp" beside NAME (a kill -9 can leave one),
# with no more than the first NAME_ROOM bytes of NAME: whatever NAME's length, the temporary's
# name stays within 95 bytes, far below NAME_MAX (255 bytes on most file systems).
TEMPORARY_PREFIX = ".rewriter-"
TEMPORARY_SUFFIX = ".tmp"
NAME_ROOM = 64

# The flags of os, or 0 where the system has none (Windows): callers can always OR them in.
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_BINARY: int = getattr(os, "O_BINARY", 0)  # Windows'; read once (a miss on a module costs 1 us a call)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)
_O_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | O_CLOEXEC

# Folders are opened and written through their descriptors where the system allows it
# (POSIX): a folder swapped for a symbolic link after it was checked is not followed.
_BY_DESCRIPTOR = (
    {os.open, os.mkdir, os.stat, os.unlink, os.rename, os.link} <= os.supports_dir_fd
    and hasattr(os, "O_DIRECTORY")
    and hasattr(os, "O_NOFOLLOW")
)


class Refused(OSError):
    """A write that was not done on purpose: its message says why (and names the path)."""


_TEMPORARY = re.compile(rf"\.(.+){re.escape(TEMPORARY_PREFIX)}[0-9a-f]{{16}}{re.escape(TEMPORARY_SUFFIX)}", re.S)


class _Names:
    """The 16 hex digits of this process's temporary names: 8 random ones drawn once in each
    process (again in a forked child), then a count, so that a page's name costs no
    getrandom(2). Names are created with O_EXCL: one taken (by another process, or planted)
    is passed over, and the next tries are wholly random (:func:`temporary_name`)."""

    def __init__(self) -> None:
        self.fresh()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.fresh)

    def fresh(self) -> None:
        # os.urandom, as secrets.token_hex is: secrets imports hmac and hashlib (3 ms of start-up).
        self.prefix = os.urandom(4).hex()
        self.count = itertools.count()

    def next(self) -> str:
        return f"{self.prefix}{next(self.count) & 0xFFFFFFFF:08x}"


_NAMES = _Names()


def temporary_name(name: str, *, random: bool = False) -> str:
    """A fresh temporary name for the file *name*: ``.NAME.rewriter-HEX.tmp`` with at most
    the first :data:`NAME_ROOM` bytes of NAME, so that it fits whatever NAME's length. HEX is
    this process's prefix and count, or with *random* 16 random digits."""
    stem = name
    if len(stem) > NAME_ROOM // 4:  # a name of NAME_ROOM // 4 characters fits in NAME_ROOM bytes
        while len(os.fsencode(stem)) > NAME_ROOM:
            stem = stem[:-1]
    digits = os.urandom(8).hex() if random else _NAMES.next()
    return f".{stem}{TEMPORARY_PREFIX}{digits}{TEMPORARY_SUFFIX}"


def is_temporary(name: str) -> bool:
    """Whether the file name *name* is one of our temporary files (left by a killed run).

    >>> is_temporary(".page.html.rewriter-0123456789abcdef.tmp"), is_temporary("page.tmp")
    (True, False)
    """
    return name.startswith(".") and TEMPORARY_PREFIX in name and name.endswith(TEMPORARY_SUFFIX)


def temporaries_in(folder: Path, root: Path | None = None) -> dict[str, list[str]]:
    """Our temporary files in *folder*, by the name of the file each was written for (only
    those whose name was kept whole: see :func:`remove_temporaries_of`). Under *root*, no
    symbolic link below it is followed to reach *folder*."""
    with contextlib.suppress(OSError), Folder.open(folder, root, make=False) as opened:
        return _by_name(opened)
    return {}


def remove_temporaries_of(path: Path, root: Path | None = None) -> int:
    """Remove the temporary files a writer of *path* that was killed left beside it (only
    when its name was short enough to be kept whole in theirs: a cut name could be another
    file's, still being written); how many were removed. For a job done again after its
    worker died. Under *root*, no symbolic link below it is followed."""
    try:
        folder = Folder.open(path.parent, root, make=False)
    except OSError:
        return 0
    with folder:
        return sum(folder.unlink_regular(name) for name in _by_name(folder).get(path.name, ()))


def _by_name(folder: Folder) -> dict[str, list[str]]:
    """The temporary files of *folder*, by the name each was written for, where that name
    was kept whole."""
    found: dict[str, list[str]] = {}
    for name in folder.temporaries():
        match = _TEMPORARY.fullmatch(name)
        if match and len(os.fsencode(match[1])) <= NAME_ROOM:
            found.setdefault(match[1], []).append(name)
    return found


def open_regular(path: Path, root: Path | None) -> BinaryIO:
    """*path*, a file the run wrote itself, opened for reading: under *root* no symbolic link
    below it is followed, the file itself is never a link, and only a regular file is read
    (:class:`Refused` names what was found instead)."""
    with Folder.open(path.parent, root, make=False) as folder:
        return os.fdopen(folder.open_file(path.name), "rb")


def kind_of(mode: int) -> str:
    """What a file that is not a regular one is, for messages (*mode*: its ``st_mode``)."""
    kinds = (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def mode_of(source: Path | None) -> int | None:
    """The permissions of a regular file *source*, for its copy (None for a pipe or stdin)."""
    if source is None:
        return None
    status = source.stat()
    return stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else None


def identity(status: os.stat_result) -> tuple[int, int, int, int]:
    """What tells that a file is still the one read: which file (device, inode), its size
    and its modification time."""
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def same_file(one: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether *one* and *other* name one file (links followed); False when either cannot be
    looked at (most outputs do not exist yet). The run's one answer to "is this path an input?"."""
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False


class Folder:
    """The folder a file is written in: its descriptor (None where the system has no
    ``dir_fd``), and its path for messages and for systems without descriptors.

    Names are taken relative to the descriptor, so that the folder cannot be swapped for a
    link between a check and a write. :meth:`close` (or the ``with`` block) closes it.
    """

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path, self.fd = path, fd

    @classmethod
    def open(cls, path: Path, root: Path | None, *, make: bool = True) -> Folder:
        """*path*, made if it is missing (with *make*). Under *root* (an output tree, or the
        tree rewritten in place), it is opened one level at a time, and a symbolic link at
        any level below *root* is refused (:class:`Refused`)."""
        if root is None:
            if make:
                path.mkdir(parents=True, exist_ok=True)
            return cls(path, os.open(path, _O_FOLDER) if _BY_DESCRIPTOR else None)
        here = root
        fd = cls._root(root, make)
        try:
            for part in path.relative_to(root).parts:
                here = here / part
                parent, fd = fd, None
                fd = cls._level(here, part, parent, make)  # closes parent
        except BaseException:
            if fd is not None:
                os.close(fd)
            raise
        return cls(path, fd)

    @staticmethod
    def _root(root: Path, make: bool) -> int | None:
        """The descriptor of *root*, made first if it is missing (with *make*). Opened first:
        a run writes many files in one tree, which is there after the first."""
        if _BY_DESCRIPTOR:
            with contextlib.suppress(FileNotFoundError):
                return os.open(root, _O_FOLDER)
        if make:
            root.mkdir(parents=True, exist_ok=True)
        return os.open(root, _O_FOLDER) if _BY_DESCRIPTOR else None

    @staticmethod
    def _level(here: Path, part: str, fd: int | None, make: bool) -> int | None:
        """The folder *here* (named *part* in the folder *fd*), made if missing, never a link."""
        name = part if fd is not None else str(here)
        if make:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=fd)
        try:
            status = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(status.st_mode):
                raise Refused(f"not written: {here} is a symbolic link; no link inside the folder written is followed")
            if not stat.S_ISDIR(status.st_mode):
                raise Refused(f"not written: {here} is {kind_of(status.st_mode)}, not a folder")
            if fd is None:
                return None
            try:
                return os.open(name, _O_FOLDER | O_NOFOLLOW, dir_fd=fd)
            except OSError as error:  # swapped for a link since the check: ELOOP
                raise Refused(f"not written: {here}: {error.strerror}; it is not followed") from None
        finally:
            if fd is not None:
                os.close(fd)

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def at(self, name: str) -> str:
        """*name* as the os functions take it with ``dir_fd=self.fd``."""
        return name if self.fd is not None else str(self.path / name)

    def status(self, name: str, *, follow: bool = False) -> os.stat_result | None:
        """The status of the entry *name* (of the link itself unless *follow*); None if missing."""
        try:
            return os.stat(self.at(name), dir_fd=self.fd, follow_symlinks=follow)
        except FileNotFoundError:
            return None

    def create(self, name: str, mode: int = 0o600) -> tuple[int, str]:
        """A new temporary file for *name*: (its descriptor, its name). ``O_EXCL`` and
        ``O_NOFOLLOW``: never an existing file, never through a link."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_BINARY
        for attempt in range(100):
            temporary = temporary_name(name, random=attempt > 0)
            try:
                return os.open(self.at(temporary), flags, mode, dir_fd=self.fd), temporary
            except FileExistsError:
                continue
        raise FileExistsError(errno.EEXIST, "no free temporary name", str(self.path))

    def write_new(self, name: str, data: bytes) -> None:
        """Write *data* as the new file *name* (one path segment), exclusively: FileExistsError
        if the folder has an entry of that name, a symbolic link included (never followed).

        The file is written under a temporary name, then hard-linked to *name*: link(2),
        unlike rename(2), fails rather than replace, and the file is whole when its name
        appears. Its mode is 0o644 less the umask.
        """
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise ValueError(f"not a plain file name: {name!r}")
        handle, temporary = self.create(name, 0o644)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.link(self.at(temporary), self.at(name), src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)
        finally:
            self.unlink(temporary)

    def unlink(self, name: str) -> None:
        """Remove the entry *name*, if it is there."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.at(name), dir_fd=self.fd)

    def unlink_regular(self, name: str) -> int:
        """Remove *name* when it is a regular file (a link, a folder or a pipe of that name is
        left as it is): 1 if it was removed, else 0."""
        status = self.status(name)
        if status is None or not stat.S_ISREG(status.st_mode):
            return 0
        try:
            os.unlink(self.at(name), dir_fd=self.fd)
        except FileNotFoundError:
            return 0
        return 1

    def temporaries(self) -> list[str]:
        """The names of our temporary files in the folder that are regular files (a link or
        anything else of such a name is not ours)."""
        with os.scandir(self.fd if self.fd is not None else self.path) as scan:
            return [
                entry.name
                for entry in scan
                if _TEMPORARY.fullmatch(entry.name) and entry.is_file(follow_symlinks=False)
            ]

    def remove_temporaries(self) -> int:
        """Remove every temporary file of ours in the folder (a killed run's: each is a
        regular file named by :func:`temporary_name`; nothing else, nothing through a link);
        how many were removed."""
        return sum(self.unlink_regular(name) for name in self.temporaries())

    def open_file(self, name: str, flags: int = os.O_RDONLY, mode: int = 0o600) -> int:
        """A descriptor of the regular file *name*, opened with *flags* (``O_CREAT|O_EXCL`` for
        a new one), never through a symbolic link; a link, a pipe, a device or a folder of
        that name is refused (:class:`Refused`), and a pipe is never waited on."""
        flags |= O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_BINARY
        if not _BY_DESCRIPTOR:  # no O_NOFOLLOW to rely on: checked first
            status = self.status(name)
            if status is not None and not stat.S_ISREG(status.st_mode):
                raise Refused(f"{self.path / name} is {kind_of(status.st_mode)}; it is not followed or read")
        try:
            handle = os.open(self.at(name), flags, mode, dir_fd=self.fd)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.EMLINK):  # EMLINK: FreeBSD's O_NOFOLLOW on a link
                raise Refused(f"{self.path / name} is a symbolic link; it is not followed") from None
            raise
        status = os.fstat(handle)
        if not stat.S_ISREG(status.st_mode):
            os.close(handle)
            raise Refused(f"{self.path / name} is {kind_of(status.st_mode)}, not a regular file; it is not read")
        if flags & O_NONBLOCK and hasattr(os, "set_blocking"):
            os.set_blocking(handle, True)
        return handle

    def remove_tree(self, name: str) -> None:
        """Remove the entry *name* and, for a folder, everything in it, without following a
        symbolic link: a link found anywhere is removed itself, never what it names."""
        status = self.status(name)
        if status is None:
            return
        if not stat.S_ISDIR(status.st_mode):
            self.unlink(name)
            return
        try:
            inner = Folder.open(self.path / name, self.path, make=False) if self.fd is None else None
            if inner is None:
                assert self.fd is not None
                inner = Folder(self.path / name, os.open(name, _O_FOLDER | O_NOFOLLOW, dir_fd=self.fd))
        except OSError:  # swapped for a link (or removed) since the check: removed as an entry
            self.unlink(name)
            return
        with inner:
            with os.scandir(inner.fd if inner.fd is not None else inner.path) as scan:
                names = [entry.name for entry in scan]
            for each in names:
                inner.remove_tree(each)
        with contextlib.suppress(FileNotFoundError):
            os.rmdir(self.at(name), dir_fd=self.fd)

    def replace(self, source: str, target: str, *, into: Folder | None = None) -> None:
        """Rename *source* over *target* (in the folder *into*, by default this one)."""
        into = into or self
        os.replace(self.at(source), into.at(target), src_dir_fd=self.fd, dst_dir_fd=into.fd)

    def sync(self) -> None:
        """fsync the folder, so that a rename in it survives a crash (where the system allows)."""
        with contextlib.suppress(OSError):
            if self.fd is not None:
                os.fsync(self.fd)
                return
            handle = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


# The folders renamed into within folder_syncs_deferred (None outside it): per thread and task.
_DEFERRED: contextvars.ContextVar[set[Path] | None] = contextvars.ContextVar("deferred_folder_syncs", default=None)


@contextlib.contextmanager
def folder_syncs_deferred() -> Iterator[None]:
    """Within the block, :func:`replacing` leaves the fsync of the folder it renamed a file into
    to the block's end: one for each folder, not one for each file. Each file's own content is
    synced before its rename as always, so a crash at any moment leaves the old content or the
    new (never a part); what the block defers is only that a rename made in it survives a crash
    of the system, which holds once the block has ended, and so before its caller reports
    any of its files written (the batch of a run's jobs: ``rewriter.run.batch.run_batch``).
    Each folder sync costs a journal commit and a flush of the disk's cache: the corpus's 320
    pages written with one each took twice the CPU of the files' own fsyncs.

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> with folder_syncs_deferred():
    ...     for name in ("a.html", "b.html"):
    ...         write_atomically(folder / name, b"<p>")
    >>> sorted(path.name for path in folder.iterdir())
    ['a.html', 'b.html']
    >>> import shutil; shutil.rmtree(folder)
    """
    pending: set[Path] = set()
    token = _DEFERRED.set(pending)
    try:
        yield
    finally:
        _DEFERRED.reset(token)
        for path in sorted(pending):
            Folder(path, None).sync()


def _check_unchanged(folder: Folder, name: str, expect: os.stat_result) -> None:
    """Refuse to replace *name* when it is no longer the file read (*expect*, its status then):
    another process wrote it, replaced it or removed it meanwhile, and its change would be lost."""
    now = folder.status(name)
    if now is None:
        raise Refused("removed by another process during the run; not written")
    if identity(now) != identity(expect):
        raise Refused("changed by another process during the run; left as it is")


def _new_file_mode() -> int:
    """What open() would give a new file: 0o666 less the umask (our temporaries are 0o600)."""
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask: where the system shows it (Linux's /proc/self/status), read
    without setting it, so that no other thread's new file meanwhile gets another mask;
    elsewhere set and set back, the only way POSIX has to read it."""
    try:  # through a descriptor: a buffered file object asks the terminal about it first
        handle = os.open("/proc/self/status", os.O_RDONLY | O_CLOEXEC)
        try:
            status = os.read(handle, 1 << 16)
        finally:
            os.close(handle)
        at = status.find(b"\nUmask:")
        if at >= 0:
            return int(status[at + 7 :].split(None, 1)[0], 8)
    except (OSError, ValueError, IndexError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def _mode_for(folder: Folder, name: str, mode: int | None) -> int:
    """*mode*, or by default the permissions of the file *name* a new file replaces (for a
    new name: 0o666 less the umask)."""
    if mode is not None:
        return mode
    current = folder.status(name, follow=True)
    return stat.S_IMODE(current.st_mode) if current is not None else _new_file_mode()


def _backup(folder: Folder, name: str, backup: str) -> None:
    """*backup* becomes the old *name*, in one rename: a hard link where the system has
    them, else a copy."""
    handle, scratch = folder.create(backup)
    os.close(handle)
    try:
        try:
            folder.unlink(scratch)
            os.link(folder.at(name), folder.at(scratch), src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
        except OSError:
            shutil.copy2(folder.path / name, folder.path / scratch)
        folder.replace(scratch, backup)
        # rename(2) does nothing when both names are links to one file: a backup already
        # linked to the old file (a run killed after its backup, before its rename) leaves
        # the scratch name in place, which is removed here.
        folder.unlink(scratch)
    except OSError as error:  # named by the backup's path, not by our scratch name
        folder.unlink(scratch)
        raise OSError(error.errno, f"the backup cannot be made: {error.strerror}", str(folder.path / backup)) from None
    except BaseException:
        folder.unlink(scratch)
        raise


def _settle(file: int | str, dir_fd: int | None, mode: int, times: tuple[int, int] | None) -> None:
    """Give the temporary *file* (a descriptor, or a name in the folder *dir_fd*) its *mode*,
    and its *times* last: any later write would set its modification time again."""
    os.chmod(file, mode, dir_fd=dir_fd)
    if times is not None:
        os.utime(file, ns=times, dir_fd=dir_fd)


@functools.cache
def _syncfs() -> Callable[[int], None] | None:
    """syncfs(2), where it reports what failed to reach the disk: Linux 5.8 and later (before,
    it returned 0 whatever happened, and a file could be renamed in whose content was lost)."""
    if not sys.platform.startswith("linux") or not _BY_DESCRIPTOR:
        return None
    try:
        if tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2]) < (5, 8):
            return None
        import ctypes

        call = ctypes.CDLL(None, use_errno=True).syncfs
    except (ValueError, OSError, AttributeError):
        return None
    call.argtypes = [ctypes.c_int]
    call.restype = ctypes.c_int

    def syncfs(fd: int) -> None:
        if call(fd) != 0:
            number = ctypes.get_errno()
            raise OSError(number, os.strerror(number))

    return syncfs


# File systems whose syncfs writes back every file's content and metadata to the disk as fsync
# would (a FUSE, network or virtual one may do less for syncfs than for fsync: a FUSE file system
# before Linux 5.15 nothing at all). The files of any other are fsynced one by one.
SYNCFS_FILE_SYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "bcachefs", "tmpfs"})


@functools.cache
def _file_system_types() -> dict[int, str]:
    """The type of each mounted file system, by device number (Linux's /proc/self/mountinfo)."""
    types: dict[int, str] = {}
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/mountinfo", encoding="utf-8") as lines:
        for line in lines:
            fields, _, rest = line.partition(" - ")
            major, minor = fields.split()[2].split(":")
            types[os.makedev(int(major), int(minor))] = rest.split()[0]
    return types


def _syncs_whole(device: int) -> bool:
    """Whether the file system of *device* is one whose syncfs stands for each file's fsync."""
    return _file_system_types().get(device) in SYNCFS_FILE_SYSTEMS


class _Written:
    """A file of a :class:`CommitGroup` written to its temporary name, waiting for the commit:
    its *folder* (open until the commit), and whether the file system's syncfs made it durable
    (*synced*; else it is fsynced on its own)."""

    # A plain class, not a dataclass: making one costs about a millisecond of every run's start-up.
    __slots__ = ("folder", "key", "name", "synced", "temporary")

    def __init__(self, folder: Folder, temporary: str, name: str, key: object) -> None:
        self.folder, self.temporary, self.name, self.key = folder, temporary, name, key
        self.synced = False


# The bytes of small files a CommitGroup holds to write at its commit (a batch's pages of
# 1-30 KB), so that no batch holds more than this beside its input.
HELD_FILE_BYTES = 4 << 20


def not_written(error: OSError) -> str:
    """Why an output was left as it was: a :class:`CommitGroup`'s file (its key's failure), a
    container's output, an unpacked file."""
    return f"not written: {error.strerror or error}"


class CommitGroup:
    """Files written atomically together and made durable together (a batch of a run's jobs).

    :meth:`write` writes each file in full under its temporary name beside its path, as
    :func:`write_atomically` does, but neither syncs nor renames it; small files are held
    until the commit (up to :data:`HELD_FILE_BYTES` in all) and written together then, so that a
    batch's engines run one after another with no system call between them (their caches
    stay warm: about a sixth less user time on pages of 1.7 KB). :meth:`commit` then
    syncs each file system they are on once (``syncfs``: all of their content is on disk),
    renames each over its path, and syncs once more (the renames). Each path holds its old
    content until its rename and the whole new content after it, whatever happens: what a
    fsync before each rename gives, with two syncs for the group instead of two for each
    file. The kernel's own threads write the pages back meanwhile, off the caller's CPU time,
    as they do for a program that does not sync: on the corpus (320 pages, -j 1), 0.838 of
    the command line's CPU, and its wall time nearer the run without syncs.

    Only where ``syncfs`` reports errors (:meth:`create` gives None elsewhere, and callers
    write each file with :func:`write_atomically`). A ``kill -9`` before the commit leaves the
    group's temporary files (walks skip them; a resumed run removes them) and every path as
    it was. :meth:`discard` removes them when the caller gives up.

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> group = CommitGroup.create() or CommitGroup(lambda fd: None)
    >>> group.write(folder / "a.html", b"<p>a", key=1)
    >>> group.write(folder / "b.html", b"<p>b", key=2)
    >>> [path.name for path in folder.iterdir() if not is_temporary(path.name)]
    []
    >>> group.commit(), sorted(path.name for path in folder.iterdir())
    ({}, ['a.html', 'b.html'])
    >>> import shutil; shutil.rmtree(folder)
    """

    def __init__(self, syncfs: Callable[[int], None]) -> None:
        self._syncfs = syncfs
        self._written: list[_Written] = []
        # Each folder written in, opened once for the group (a batch's pages share a few
        # folders: one open each, not a walk from the root a page), closed by the commit.
        self._folders: dict[tuple[str, str | None], Folder] = {}
        self.key: object = None  # what the caller's next writes belong to (a job), by default
        self._umask = _umask()  # read once a group: a batch's pages
        self._held: list[tuple[Folder, str, int, bytes, object]] = []  # written at the commit
        self._held_bytes = 0
        self._failures: dict[object, str] = {}  # of held files, by key, found on writing them

    @classmethod
    def create(cls) -> CommitGroup | None:
        """A group, where the system has a ``syncfs`` that reports errors; else None."""
        syncfs = _syncfs()
        return None if syncfs is None else cls(syncfs)

    def write(
        self,
        path: str | os.PathLike[str],
        data: bytes,
        *,
        mode: int | None = None,
        root: str | os.PathLike[str] | None = None,
        key: object = None,
    ) -> None:
        """Write *data* for *path* (see :func:`write_atomically` for *mode* and *root*) under its
        temporary name, now or (a small file) at the commit; *key* (by default the group's
        :attr:`key`, which the batch sets for each job) names it among the failures
        :meth:`commit` returns. Its folder is made and opened now: what stops that is raised."""
        key = self.key if key is None else key
        parent, name = os.path.split(os.fspath(path))  # strings: a Path's parts cost more than the write
        top = None if root is None else os.fspath(root)
        folder = self._folders.get((parent, top))
        if folder is None:
            opened = Folder.open(Path(parent), None if top is None else Path(top), make=True)
            folder = self._folders[parent, top] = opened
        wanted = _mode_for(folder, name, mode)
        if self._held_bytes + len(data) <= HELD_FILE_BYTES:
            self._held.append((folder, name, wanted, data, key))
            self._held_bytes += len(data)
            return
        self._write_held()
        self._write(folder, name, wanted, data, key)

    def _write_held(self) -> None:
        """Write the files held so far; one that cannot be is a failure of its key."""
        held, self._held, self._held_bytes = self._held, [], 0
        for folder, name, wanted, data, key in held:
            try:
                self._write(folder, name, wanted, data, key)
            except OSError as error:
                self._failures.setdefault(key, not_written(error))

    def _write(self, folder: Folder, name: str, wanted: int, data: bytes, key: object) -> None:
        # Made with its mode where the umask leaves it whole (no fchmod(2) a page); else 0o600,
        # then given it. A mode of set-id or sticky bits is always given by chmod, as before.
        given = not wanted & (0o7000 | self._umask)
        handle, temporary = folder.create(name, wanted if given else 0o600)
        try:
            try:  # through the descriptor: no buffered file object (its fstat, isatty and seek)
                write_all(handle, data)
                if not given:
                    _settle(handle, None, wanted, None)
            finally:
                os.close(handle)
        except BaseException:
            folder.unlink(temporary)
            raise
        self._written.append(_Written(folder, temporary, name, key))

    def commit(self) -> dict[object, str]:
        """Make the files written durable and put them in place: the failures, by key, each
        the reason its path was left as it was (the others are written)."""
        try:
            self._write_held()
        except BaseException:
            self.discard()
            raise
        written, self._written = self._written, []
        folders, self._folders = self._folders, {}
        failures, self._failures = self._failures, {}
        try:
            systems: dict[int, int] = {}  # a folder's descriptor on each file system whose syncfs serves
            whole: dict[int, bool] = {}  # each folder's: whether its file system's syncfs serves
            for folder in folders.values():
                assert folder.fd is not None  # a group exists only where folders have descriptors
                device = os.fstat(folder.fd).st_dev
                whole[folder.fd] = _syncs_whole(device)
                if whole[folder.fd]:
                    systems.setdefault(device, folder.fd)
            for entry in written:
                assert entry.folder.fd is not None
                entry.synced = whole[entry.folder.fd]
            unsynced = None  # why the syncfs failed: the contents may not be on disk
            try:
                for fd in systems.values():
                    self._syncfs(fd)
            except OSError as error:
                unsynced = f"not written: the file system could not be synced: {error.strerror}"
            for entry in written:  # a failure leaves its path as it was
                if entry.synced and unsynced is not None:
                    entry.folder.unlink(entry.temporary)
                    failures[entry.key] = unsynced
                    continue
                try:
                    if not entry.synced:
                        _fsync_named(entry.folder, entry.temporary)
                    entry.folder.replace(entry.temporary, entry.name)
                except OSError as error:
                    entry.folder.unlink(entry.temporary)
                    failures[entry.key] = not_written(error)
            with contextlib.suppress(OSError):  # the renames, as a folder's fsync after one
                for fd in systems.values():
                    self._syncfs(fd)
            for folder in {entry.folder.path: entry.folder for entry in written if not entry.synced}.values():
                folder.sync()  # once for each folder
        finally:
            for folder in folders.values():
                folder.close()
        return failures

    def discard(self) -> None:
        """Remove what was written and not committed; every path stays as it was."""
        self._held, self._held_bytes, self._failures = [], 0, {}
        written, self._written = self._written, []
        folders, self._folders = self._folders, {}
        try:
            for entry in written:
                entry.folder.unlink(entry.temporary)
        finally:
            for folder in folders.values():
                folder.close()


def write_all(handle: int, data: bytes) -> None:
    """Write the whole of *data* to the descriptor *handle* (os.write may write a part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view) :]


def _fsync_named(folder: Folder, name: str) -> None:
    """fsync the file *name* of *folder* (opened again, never through a link)."""
    handle = os.open(folder.at(name), os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC, dir_fd=folder.fd)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


_GROUP: contextvars.ContextVar[CommitGroup | None] = contextvars.ContextVar("commit_group", default=None)


@contextlib.contextmanager
def committing(group: CommitGroup | None) -> Iterator[CommitGroup | None]:
    """Within the block, :func:`commit_group` gives *group* (None: files are written one by one)."""
    token = _GROUP.set(group)
    try:
        yield group
    finally:
        _GROUP.reset(token)


def commit_group() -> CommitGroup | None:
    """The :class:`CommitGroup` of the :func:`committing` block this runs in, or None."""
    return _GROUP.get()


class Replacement:
    """The stream a new file is written to; ``keep = False`` leaves the old file as it was."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.keep = True


@contextlib.contextmanager
def replacing(
    path: Path,
    mode: int | None = None,
    backup: str | None = None,
    *,
    root: Path | None = None,
    expect: os.stat_result | None = None,
    scratch: Path | None = None,
    times: tuple[int, int] | None = None,
    make: bool | None = None,
    sync: bool = True,
) -> Iterator[Replacement]:
    """Write a temporary file and rename it over *path* when the block ends (fsync first):
    *path* holds the old content or the new, never a part. On an error, or with
    ``keep = False``, the temporary file goes and *path* is untouched.

    *mode*: the permissions to give it (default: those of the file it replaces; for a new
    file, 0o666 less the umask). *backup*: a suffix; the old file is kept as *path* + it,
    made in one rename. *root*: the tree *path* lies in; no symbolic link below it is
    followed. *expect*: the status of *path* when it was read (in place); if it is no
    longer that file, with that size and time, nothing is written and :class:`Refused`
    says so. *scratch*: the folder of the temporary file (default: *path*'s own; it must be
    on the same file system). *times*: (access, modification) times in nanoseconds to give
    the new file. *make*: whether *path*'s folder is made when missing (default: unless
    *expect*, for a file read in place has its folder). *sync*: False leaves out both fsyncs
    (the file's before the rename, the folder's after it): still atomic for readers and for a
    killed process, but a crash of the system may lose the new file, or leave it empty
    (``--no-fsync``, for outputs that can be made again).
    """
    make = expect is None if make is None else make
    with contextlib.ExitStack() as folders:
        folder = folders.enter_context(Folder.open(path.parent, root, make=make))
        work = folder if scratch is None else folders.enter_context(Folder.open(scratch, root, make=False))
        handle, temporary = work.create(path.name)
        try:
            with os.fdopen(handle, "wb") as stream:
                replacement = Replacement(stream)
                yield replacement
                stream.flush()
                if replacement.keep and os.chmod in os.supports_fd:
                    _settle(stream.fileno(), None, _mode_for(folder, path.name, mode), times)
                if sync:
                    os.fsync(stream.fileno())
            if not replacement.keep:
                work.unlink(temporary)
                return
            if os.chmod not in os.supports_fd:  # no fchmod (Windows): by name
                _settle(work.at(temporary), work.fd, _mode_for(folder, path.name, mode), times)
            if expect is not None:
                _check_unchanged(folder, path.name, expect)
            if backup:
                if folder.status(path.name) is not None:
                    _backup(folder, path.name, path.name + backup)
                if expect is not None:  # the backup took a moment: still the file read?
                    _check_unchanged(folder, path.name, expect)
            work.replace(temporary, path.name, into=folder)
            if sync:
                deferred = _DEFERRED.get()
                if deferred is None:
                    folder.sync()
                else:
                    deferred.add(folder.path)
        except BaseException:
            work.unlink(temporary)
            raise


def write_atomically(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    backup: str | None = None,
    root: Path | None = None,
    expect: os.stat_result | None = None,
    sync: bool = True,
) -> None:
    """Write *data* to *path* so that it holds the old content or the new, never a part.

    *mode*: the permissions to give it (default: those of the file it replaces). *backup*:
    keep the old file as *path* + this suffix. *root*: the output tree *path* lies in, where
    no symbolic link is followed. *expect*: the status of *path* when it was read; if it
    changed since, nothing is written (:class:`Refused`). *sync*: False, no fsync (see
    :func:`replacing`). :func:`replacing` has the rest.
    """
    with replacing(path, mode, backup, root=root, expect=expect, sync=sync) as replacement:
        replacement.stream.write(data)
