"""What the folders of a run's input hold, each folder read once (:class:`Listings`): whether
a reference names a file is answered from them, not by a stat call for each link."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Hashable
from typing import TypeVar

__all__ = ["Listings"]

T = TypeVar("T")
_UNKNOWN = object()  # no answer kept yet (None is an answer)

_FILE, _FOLDER, _LINK, _OTHER = "file", "folder", "link", "other"


class Listings:
    """What each folder of a run's input holds, each read once (os.scandir, whose entries say
    what each is) and kept for the run: whether a page's reference names a local copy is
    answered from them, not by a stat call for each link (a page of a mirror asks about
    dozens). A run's settings hold one (``Settings.listings`` of rewriter.run.jobs); pickled,
    it is empty (each worker process reads its own). Past :attr:`MOST` folders it starts again.

    Where it cannot answer (a symbolic link on the way, a file system that ignores case), it
    says so (None) and the caller asks the file system as before.

    >>> import tempfile; from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp()); _ = (folder / "a.png").write_bytes(b"png")
    >>> listings = Listings()
    >>> listings.is_file(str(folder), "a.png"), listings.is_file(str(folder), "b.png")
    (True, False)
    """

    MOST = 4096
    # Linux: names compared as written (a macOS or Windows file system ignores case by default).
    EXACT = os.path.normcase("A") == "A" and sys.platform.startswith("linux")

    def __init__(self) -> None:
        self._folders: dict[str, dict[str, str] | None] = {}
        # What a caller worked out from the listings, by its own key (the pages of a site share
        # their references: ../style/site.css is looked up once, not once a page).
        self.answers: dict[Hashable, object] = {}

    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self._folders, self.answers = {}, {}

    def answer(self, key: Hashable, work: Callable[[], T]) -> T:
        """What ``work()`` gives, worked out once for the run under *key* (:attr:`answers`,
        within its bound) and remembered."""
        found = self.answers.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            if len(self.answers) >= self.MOST * 16:
                self.answers.clear()
            found = self.answers[key] = work()
        return found  # type: ignore[return-value]

    def _listing(self, folder: str) -> dict[str, str] | None:
        listing = self._folders.get(folder, False)
        if listing is not False:
            return listing  # type: ignore[return-value]
        if len(self._folders) >= self.MOST:
            self._folders.clear()
        try:
            with os.scandir(folder) as scan:
                listing = {entry.name: _entry_kind(entry) for entry in scan}
        except OSError:
            listing = None  # missing, or unreadable: no file in it is known to be there
        self._folders[folder] = listing
        return listing

    def is_file(self, top: str, relative: str) -> bool | None:
        """Whether *relative* (a normalised path, ``os.sep`` between its names) names a regular
        file below the folder *top*, through no symbolic link; None when the listings cannot
        say (a link on the way, or a file system whose names ignore case)."""
        if not self.EXACT:
            return None
        folder = top
        *folders, name = relative.split(os.sep)
        for part in folders:
            listing = self._listing(folder)
            kind = None if listing is None else listing.get(part)
            if kind == _LINK:
                return None
            if kind != _FOLDER:
                return False
            folder = os.path.join(folder, part)
        listing = self._listing(folder)
        kind = None if listing is None else listing.get(name)
        return None if kind == _LINK else kind == _FILE

    def is_file_in(self, folder: str, name: str) -> bool | None:
        """Whether the entry *name* of *folder* is a regular file (the folder itself reached
        through no link: the caller's to know); None when the listings cannot say."""
        if not self.EXACT:
            return None
        folders = self._folders  # asked for each of a page's own links: no call once the folder is read
        listing = folders[folder] if folder in folders else self._listing(folder)
        kind = None if listing is None else listing.get(name)
        return None if kind == _LINK else kind == _FILE


def _entry_kind(entry: os.DirEntry[str]) -> str:
    try:
        if entry.is_symlink():
            return _LINK
        if entry.is_file(follow_symlinks=False):
            return _FILE
        return _FOLDER if entry.is_dir(follow_symlinks=False) else _OTHER
    except OSError:
        return _OTHER
