"""rewriter.disk.files through its public names: atomic replace (old or new content, even after a
SIGKILL), backups made in one rename, the refusal of a file another process changed, exclusive
create, folders opened without following a link, 255-byte names and our temporary names."""

from __future__ import annotations

import errno
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewriter.disk import files

ROOT = Path(__file__).resolve().parents[1]
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links, hard links and dir_fd (POSIX)")
can_kill = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")


def _names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


# --------------------------------------------------------------------------
# A writer killed with SIGKILL: the old content or the new, never a part
# --------------------------------------------------------------------------

SIZE = 1 << 20  # bytes of each version: large enough that a write takes many chunks
CHUNK = 1 << 16

# The child: rewrites PATH again and again with b"a" * SIZE, then b"b" * SIZE, ... through
# replacing(), in chunks flushed one by one (so that a part is on disk when the kill comes).
# With "half", it writes half of the first version, says so and waits to be killed.
WRITER = """
import sys, time
from pathlib import Path
from rewriter.disk.files import replacing

path, size, chunk, half = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "half"
print("writing", flush=True)
for round in range(10**9):
    fill = b"ab"[round % 2 : round % 2 + 1]
    with replacing(path) as replacement:
        for start in range(0, size, chunk):
            replacement.stream.write(fill * chunk)
            replacement.stream.flush()
            if half and start >= size // 2:
                print("half", flush=True)
                time.sleep(60)
"""


def _killed_writer(path: Path, *, half: bool, delay: float = 0.0) -> None:
    """Start the child writing *path*; SIGKILL it once it is half-way through (*half*) or
    *delay* seconds after it started writing."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-c", WRITER, str(path), str(SIZE), str(CHUNK), "half" if half else "loop"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, env=env) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == b"writing\n"
            if half:
                assert child.stdout.readline() == b"half\n"
            else:
                time.sleep(delay)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
    assert child.returncode == -signal.SIGKILL


@can_kill
def test_a_writer_killed_half_way_leaves_the_old_content_and_a_temporary_of_ours(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    _killed_writer(path, half=True)
    assert path.read_bytes() == b"old"
    left = [name for name in _names(tmp_path) if name != "page.html"]
    assert len(left) == 1 and files.is_temporary(left[0]), left
    assert (tmp_path / left[0]).read_bytes() == b"a" * (SIZE // 2 + CHUNK)  # the part, beside and apart


@can_kill
def test_a_writer_killed_at_random_moments_leaves_old_or_new_content(tmp_path: Path) -> None:
    rng = random.Random(20)
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    seen = set()
    for _ in range(8):
        _killed_writer(path, half=False, delay=rng.uniform(0.0, 0.25))
        data = path.read_bytes()
        assert data in (b"old", b"a" * SIZE, b"b" * SIZE), f"{len(data)} bytes, starting {data[:8]!r}"
        seen.add(data[:1])
        assert all(files.is_temporary(name) for name in _names(tmp_path) if name != "page.html")
    assert seen & {b"a", b"b"}, "the writer never finished one version: the kills came too early to test anything"


# --------------------------------------------------------------------------
# Atomic replace: mode, times, scratch folder, failures, backups
# --------------------------------------------------------------------------


def test_a_replaced_file_keeps_its_mode_and_a_new_one_takes_the_umask(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    path.chmod(0o640)
    files.write_atomically(path, b"new")
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == (b"new", 0o640)
    files.write_atomically(path, b"newer", mode=0o604)
    assert stat.S_IMODE(path.stat().st_mode) == 0o604
    umask = os.umask(0o027)
    try:
        files.write_atomically(tmp_path / "made" / "new.html", b"x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "made" / "new.html").stat().st_mode) == 0o640
    assert files.mode_of(path) == 0o604 and files.mode_of(None) is None


def test_sync_false_writes_the_same_file_in_one_rename_without_fsync(tmp_path: Path, fsync_calls: list[int]) -> None:
    synced = fsync_calls
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    path.chmod(0o640)
    files.write_atomically(path, b"new")
    assert len(synced) == 2  # the file before its rename, the folder after it
    synced.clear()
    files.write_atomically(path, b"newer", sync=False, root=tmp_path)
    with files.replacing(tmp_path / "sub" / "streamed.html", sync=False) as replacement:
        replacement.stream.write(b"streamed")
    assert synced == []
    assert (path.read_bytes(), stat.S_IMODE(path.stat().st_mode)) == (b"newer", 0o640)
    assert (tmp_path / "sub" / "streamed.html").read_bytes() == b"streamed"
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["page.html", "sub"]  # no temporary left


def test_a_scratch_folder_holds_the_temporary_and_times_are_given(tmp_path: Path) -> None:
    (tmp_path / "cur").mkdir()
    (tmp_path / "tmp").mkdir()
    message = tmp_path / "cur" / "1.host:2,S"
    message.write_bytes(b"old")
    times = (1_000_000_000_000_000_000, 1_200_000_000_123_456_789)
    with files.replacing(message, scratch=tmp_path / "tmp", times=times, make=False) as replacement:
        replacement.stream.write(b"new")
    assert (message.read_bytes(), message.stat().st_mtime_ns) == (b"new", times[1])
    assert _names(tmp_path / "tmp") == [] and _names(tmp_path / "cur") == ["1.host:2,S"]
    gone = tmp_path / "new" / "2.host"
    with pytest.raises(FileNotFoundError), files.replacing(gone, scratch=tmp_path / "tmp", make=False) as replacement:
        replacement.stream.write(b"x")  # make=False: a folder that is gone is not made again
    assert _names(tmp_path) == ["cur", "tmp"] and _names(tmp_path / "tmp") == []


def test_a_failed_or_abandoned_replacement_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), files.replacing(path) as replacement:
        replacement.stream.write(b"half")
        raise RuntimeError("the engine failed")
    with files.replacing(path) as replacement:
        replacement.stream.write(b"unchanged after all")
        replacement.keep = False
    assert (path.read_bytes(), _names(tmp_path)) == (b"old", ["page.html"])


def test_the_backup_is_the_old_file_made_in_one_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    old = path.stat()
    backup = tmp_path / "page.html.orig"
    backup.write_bytes(b"an older backup")
    renames: list[tuple[str, bytes, bytes]] = []
    rename = os.replace

    def spy(source: str, target: str, **folders: int | None) -> None:
        # What the backup and the page hold just before each rename: never missing, never a part.
        renames.append((Path(os.fsdecode(target)).name, backup.read_bytes(), path.read_bytes()))
        rename(source, target, **folders)

    monkeypatch.setattr(os, "replace", spy)
    files.write_atomically(path, b"new", backup=".orig")
    assert renames == [("page.html.orig", b"an older backup", b"old"), ("page.html", b"old", b"old")]
    assert (path.read_bytes(), backup.read_bytes()) == (b"new", b"old")
    assert (backup.stat().st_ino, backup.stat().st_mtime_ns) == (old.st_ino, old.st_mtime_ns)  # the old file itself
    assert _names(tmp_path) == ["page.html", "page.html.orig"]


# --------------------------------------------------------------------------
# A file changed or removed by another process is left as it is
# --------------------------------------------------------------------------


def test_a_file_changed_by_another_process_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"read")
    read = path.stat()
    path.write_bytes(b"their edit")
    with pytest.raises(files.Refused, match=r"^changed by another process during the run; left as it is$"):
        files.write_atomically(path, b"ours", backup=".orig", expect=read)
    assert (path.read_bytes(), _names(tmp_path)) == (b"their edit", ["page.html"])
    path.unlink()
    with pytest.raises(files.Refused, match=r"^removed by another process during the run; not written$"):
        files.write_atomically(path, b"ours", expect=read)
    assert _names(tmp_path) == []
    path.write_bytes(b"read")
    files.write_atomically(path, b"ours", expect=path.stat())  # the file as it is now: replaced
    assert path.read_bytes() == b"ours"


def test_a_file_swapped_for_another_of_the_same_size_and_time_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_bytes(b"read")
    read = path.stat()
    (tmp_path / "other").write_bytes(b"swap")
    os.utime(tmp_path / "other", ns=(read.st_atime_ns, read.st_mtime_ns))
    os.replace(tmp_path / "other", path)  # another file (inode), with the same size and time
    with pytest.raises(files.Refused, match="changed by another process"):
        files.write_atomically(path, b"ours", expect=read)
    assert path.read_bytes() == b"swap"


# --------------------------------------------------------------------------
# Exclusive create: never overwrites, never follows a link
# --------------------------------------------------------------------------


@posix_only
def test_exclusive_create_never_overwrites_nor_follows_a_link(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "kept.html").write_bytes(b"theirs")
    out = tmp_path / "out"
    out.mkdir()
    (out / "link.html").symlink_to(tmp_path / "outside" / "kept.html")
    (out / "dangling.html").symlink_to(tmp_path / "outside" / "made.html")
    with files.Folder.open(out, None) as folder:
        folder.write_new("a.txt", b"first")
        for name in ("a.txt", "link.html", "dangling.html"):
            with pytest.raises(FileExistsError):
                folder.write_new(name, b"second")
        for name in ("", ".", "..", "../escape", "a/b", "nul\0"):
            with pytest.raises(ValueError, match="not a plain file name"):
                folder.write_new(name, b"x")
    assert (out / "a.txt").read_bytes() == b"first"
    assert _names(tmp_path / "outside") == ["kept.html"]  # nothing made through the dangling link
    assert (tmp_path / "outside" / "kept.html").read_bytes() == b"theirs"
    assert (out / "link.html").is_symlink() and (out / "dangling.html").is_symlink()
    assert _names(out) == ["a.txt", "dangling.html", "link.html"]  # no temporary left behind


# --------------------------------------------------------------------------
# Folders under a root: no symbolic link followed
# --------------------------------------------------------------------------


@posix_only
def test_a_symbolic_link_inside_the_root_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    root = tmp_path / "out"
    (root / "real").mkdir(parents=True)
    (root / "real" / "sub").symlink_to(tmp_path / "outside", target_is_directory=True)
    (root / "file").write_bytes(b"")
    with pytest.raises(files.Refused, match=r"is a symbolic link; no link inside the folder written is followed"):
        files.write_atomically(root / "real" / "sub" / "deep" / "x.html", b"x", root=root)
    with pytest.raises(files.Refused, match=r"/file is not a regular file, not a folder$"):
        files.write_atomically(root / "file" / "x.html", b"x", root=root)
    with pytest.raises(files.Refused, match="is a symbolic link"):
        files.Folder.open(root / "real" / "sub", root, make=False)
    assert _names(tmp_path / "outside") == []
    files.write_atomically(root / "real" / "new" / "x.html", b"x", root=root)  # made one level at a time
    assert (root / "real" / "new" / "x.html").read_bytes() == b"x"
    files.write_atomically(root / "real" / "sub" / "x.html", b"x")  # without a root, the link is the caller's
    assert _names(tmp_path / "outside") == ["x.html"]


def test_kind_of_names_what_a_file_is() -> None:
    assert files.kind_of(stat.S_IFIFO | 0o600) == "a named pipe"
    assert files.kind_of(stat.S_IFDIR | 0o755) == "a folder"
    assert files.kind_of(stat.S_IFLNK | 0o777) == "a symbolic link"


# --------------------------------------------------------------------------
# 255-byte names and our temporary names
# --------------------------------------------------------------------------


def _longest(folder: Path, fill: str, extension: str) -> str:
    """A name of the file system's largest length (255 bytes where it allows that many)."""
    try:
        limit = os.pathconf(folder, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):
        limit = 255
    if limit < 255:
        pytest.skip(f"this file system takes names of {limit} bytes at most")
    room = 255 - len(extension.encode())
    stem = fill * (room // len(fill.encode()))
    return stem + "x" * (room - len(stem.encode())) + extension


@pytest.mark.parametrize("fill", ["x", "é", "日"])
def test_255_byte_names_are_replaced_and_created(tmp_path: Path, fill: str) -> None:
    name = _longest(tmp_path, fill, ".html")
    assert len(name.encode()) == 255
    files.write_atomically(tmp_path / name, b"first")
    files.write_atomically(tmp_path / name, b"second")
    with files.Folder.open(tmp_path / "new", None) as folder:
        folder.write_new(name, b"created")
    assert (tmp_path / name).read_bytes() == b"second"
    assert (tmp_path / "new" / name).read_bytes() == b"created"
    assert _names(tmp_path) == sorted([name, "new"]) and _names(tmp_path / "new") == [name]


@pytest.mark.parametrize("name", ["page.html", ".hidden", "x" * 255, "日" * 85, "a b:2,S", "p.html.rewriter-1.tmp"])
def test_temporary_names_are_ours_short_and_recognised(name: str) -> None:
    temporary = files.temporary_name(name)
    assert files.is_temporary(temporary)
    assert temporary != files.temporary_name(name)  # fresh each time
    assert len(os.fsencode(temporary)) <= files.NAME_ROOM + 31 <= 95
    stem = temporary[1 : temporary.rindex(files.TEMPORARY_PREFIX)]  # says whose temporary it is
    assert name.startswith(stem)
    assert stem == name or files.NAME_ROOM - 3 <= len(os.fsencode(stem)) <= files.NAME_ROOM  # whole characters


@pytest.mark.parametrize(
    "name",
    ["page.html", ".hidden", "page.tmp", ".page.tmp", ".rewriter-notes.txt", "rewriter-x.tmp", "page.rewriter-x.tmp"],
)
def test_other_names_are_not_taken_for_temporaries(name: str) -> None:
    assert not files.is_temporary(name)


def test_a_backup_already_linked_to_the_old_file_leaves_no_temporary(tmp_path: Path) -> None:
    """A run killed after making its backup (a hard link to the old file) and before its
    rename, then run again: rename(2) of one link over another of the same file does nothing,
    and the scratch name must not stay behind (found by test_batch_atomic's random kills)."""
    path = tmp_path / "page.html"
    path.write_bytes(b"old")
    os.link(path, tmp_path / "page.html.orig")
    files.write_atomically(path, b"new", backup=".orig")
    assert sorted(entry.name for entry in tmp_path.iterdir()) == ["page.html", "page.html.orig"]
    assert path.read_bytes() == b"new" and (tmp_path / "page.html.orig").read_bytes() == b"old"


def test_within_folder_syncs_deferred_each_folder_is_synced_once_when_the_block_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []  # what each fsync was of, in order
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append("folder" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with files.folder_syncs_deferred():
        for name in ("a", "b", "c"):
            files.write_atomically(tmp_path / "one" / f"{name}.html", b"x")
        with files.replacing(tmp_path / "two" / "d.html") as replacement:
            replacement.stream.write(b"streamed")
        assert synced == ["file"] * 4  # each file before its rename; no folder yet
        assert (tmp_path / "one" / "a.html").read_bytes() == b"x"  # renamed at once all the same
    assert synced == ["file"] * 4 + ["folder"] * 2
    files.write_atomically(tmp_path / "one" / "e.html", b"x")  # outside a block: at once, as ever
    assert synced[-2:] == ["file", "folder"]
    with pytest.raises(ZeroDivisionError), files.folder_syncs_deferred():
        files.write_atomically(tmp_path / "three" / "f.html", b"x")
        1 / 0  # noqa: B018 - a failure later in the block: what was renamed is synced all the same
    assert synced[-2:] == ["file", "folder"]


def test_a_commit_group_puts_its_files_in_place_together_after_one_sync(tmp_path: Path) -> None:
    synced: list[list[str]] = []  # at each sync, the pages in place

    def syncfs(fd: int) -> None:
        synced.append(sorted(path.name for path in tmp_path.rglob("*.html") if not files.is_temporary(path.name)))

    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "a.html").write_bytes(b"old")
    group = files.CommitGroup(syncfs)
    group.write(tmp_path / "one" / "a.html", b"new a", key="a")
    group.write(tmp_path / "two" / "b.html", b"new b", mode=0o640, key="b")
    assert (tmp_path / "one" / "a.html").read_bytes() == b"old"  # nothing in place before the commit
    assert not (tmp_path / "two" / "b.html").exists()
    assert group.commit() == {}
    assert synced == [["a.html"], ["a.html", "b.html"]]  # the contents, then the renames: one file system
    assert (tmp_path / "one" / "a.html").read_bytes() == b"new a"
    assert stat.S_IMODE((tmp_path / "two" / "b.html").stat().st_mode) == 0o640
    assert not [path for path in tmp_path.rglob("*") if files.is_temporary(path.name)]
    if sys.platform.startswith("linux") and tuple(map(int, os.uname().release.split(".")[:2])) >= (5, 8):
        assert isinstance(files.CommitGroup.create(), files.CommitGroup)


def test_a_commit_group_holds_small_files_to_its_commit_and_names_one_it_cannot_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Small files wait for the commit (nothing on disk before it); a large one is written at
    once, those held before it too; a held file that cannot be written is its key's failure,
    and the others are put in place."""
    real = files.Folder.create

    def create(folder: files.Folder, name: str, mode: int = 0o600) -> tuple[int, str]:
        if name == "b.html":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder, name, mode)

    monkeypatch.setattr(files.Folder, "create", create)

    def temporaries() -> list[str]:
        return sorted(path.name for path in tmp_path.iterdir() if files.is_temporary(path.name))

    group = files.CommitGroup(os.fsync)
    group.write(tmp_path / "a.html", b"a", key="a")
    group.write(tmp_path / "b.html", b"b", key="b")
    assert temporaries() == []  # held
    large = b"c" * (files.HELD_FILE_BYTES + 1)
    group.write(tmp_path / "c.html", large, key="c")
    assert len(temporaries()) == 2  # a's, then c's; b's could not be made
    assert group.commit() == {"b": f"not written: {os.strerror(errno.ENOSPC)}"}
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.html", "c.html"]
    assert (tmp_path / "a.html").read_bytes() == b"a" and (tmp_path / "c.html").read_bytes() == large
    group.write(tmp_path / "a.html", b"new", key="a")
    group.discard()  # a held file goes with the rest
    assert group.commit() == {} and (tmp_path / "a.html").read_bytes() == b"a"


def test_a_commit_group_that_cannot_sync_or_gives_up_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    (tmp_path / "a.html").write_bytes(b"old")
    group = files.CommitGroup(failing)
    group.write(tmp_path / "a.html", b"new", key=0)
    group.write(tmp_path / "b.html", b"new", key=1)
    failures = group.commit()
    assert sorted(failures) == [0, 1] and "could not be synced: Input/output error" in failures[0]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.html"]
    assert (tmp_path / "a.html").read_bytes() == b"old"
    group = files.CommitGroup(os.fsync)
    group.write(tmp_path / "a.html", b"new", key=0)
    group.discard()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.html"]
    assert (tmp_path / "a.html").read_bytes() == b"old" and group.commit() == {}


def test_a_commit_group_fsyncs_one_by_one_the_files_of_a_file_system_whose_syncfs_may_do_less(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync_calls: list[int]
) -> None:
    monkeypatch.setattr(files, "SYNCFS_FILE_SYSTEMS", frozenset())  # as on a FUSE or network file system
    synced: list[int] = []
    group = files.CommitGroup(synced.append)
    for name in ("a", "b"):
        group.write(tmp_path / f"{name}.html", name.encode(), key=name)
    assert group.commit() == {}
    assert synced == []  # no syncfs
    assert len(fsync_calls) == 3  # each file before its rename, then their folder
    assert (tmp_path / "a.html").read_bytes() == b"a" and (tmp_path / "b.html").read_bytes() == b"b"


@pytest.mark.skipif(files.CommitGroup.create() is None, reason="no syncfs that reports errors here")
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000])
def test_a_batch_gives_each_file_its_mode_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    """A group's file is made with its mode where the umask leaves it whole, else given it:
    either way the mode asked for, never the umask's, and set-id bits only by chmod."""
    modes = [0o644, 0o600, 0o755, 0o640, 0o666, 0o2755]
    old = os.umask(umask)
    try:
        group = files.CommitGroup.create()
        assert group is not None
        for number, mode in enumerate(modes):
            group.write(tmp_path / f"f{number}.html", b"<p>", mode=mode, key=number)
        assert group.commit() == {}
    finally:
        os.umask(old)
    found = [stat.S_IMODE((tmp_path / f"f{number}.html").stat().st_mode) for number in range(len(modes))]
    assert found == modes


def test_temporary_names_differ_in_a_process_and_between_forked_ones(tmp_path: Path) -> None:
    """A process's names are its random prefix and a count; a forked child draws its own
    prefix, so that two workers writing in one folder do not meet on each other's names."""
    mine = [files.temporary_name("page.html") for _ in range(1000)]
    assert len(set(mine)) == 1000 and all(files.is_temporary(name) for name in mine)
    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.write(writing, files.temporary_name("page.html").encode())
        os._exit(0)
    os.close(writing)
    theirs = os.read(reading, 4096).decode()
    os.close(reading)
    os.waitpid(child, 0)
    prefix = len(".page.html" + files.TEMPORARY_PREFIX)
    assert files.is_temporary(theirs)
    assert theirs[prefix : prefix + 8] != mine[-1][prefix : prefix + 8]


def test_a_planted_temporary_name_is_passed_over(tmp_path: Path) -> None:
    """The next names of the count are predictable from one seen: one planted there (a file
    or a link) is never opened, and the temporary is made under a random name instead, so
    that names planted for every try (100) cannot stop the write."""
    seen = files.temporary_name("page.html")
    digits = seen[len(".page.html" + files.TEMPORARY_PREFIX) :][:16]
    for ahead in range(1, 101):
        planted = f".page.html{files.TEMPORARY_PREFIX}{digits[:8]}{int(digits[8:], 16) + ahead:08x}.tmp"
        os.symlink(tmp_path / "elsewhere", tmp_path / planted)
    (tmp_path / "elsewhere").write_bytes(b"theirs")
    files.write_atomically(tmp_path / "page.html", b"<p>mine", root=tmp_path)
    assert (tmp_path / "page.html").read_bytes() == b"<p>mine"
    assert (tmp_path / "elsewhere").read_bytes() == b"theirs"
