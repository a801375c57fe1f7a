"""An in-place batch killed with SIGKILL at random moments: every file holds its old
content or its new one, never a mix or a truncation, and a re-run finishes the job.

Each write goes through ``.NAME.rewriter-XXXXXXXX.tmp`` in the same folder, fsync, then
``os.replace`` (rewriter/disk/files.py): these tests kill the whole process group (workers
included) while a run is busy, then look at every byte of every file.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.skipif(
        not hasattr(os, "killpg") or not hasattr(signal, "SIGKILL") or sys.platform == "win32",
        reason="needs os.killpg and SIGKILL (POSIX) to kill a batch and its worker processes at once",
    ),
    pytest.mark.slow,  # 34 kills, each a full run of a batch: about 40 s of CPU
]

URL = "http://example.org/base/"
SEED = 20240611
TRIALS = 30  # kills of the plain run; trials alternate -j 1 and -j 2
BACKUP_TRIALS = 4  # kills of a run with --backup
BACKUP = ".orig"
# What a killed run may leave: our temporary file beside NAME (rewriter/disk/files.py, temporary_name).
TEMPORARY = re.compile(r"^\.(?P<name>.+)\.rewriter-[^/]+\.tmp$")

Corpus = dict[str, bytes]  # path under the folder (POSIX) -> content


# --------------------------------------------------------------------------
# The corpus: deterministic, varied, with a relative link in every file
# --------------------------------------------------------------------------

_WORDS = ["alpha", "beta", "gamma", "delta", "page", "index", "img", "docs", "news", "café", "naïve", "Größe", "日本"]
_ASCII_WORDS = [word for word in _WORDS if word.isascii()]


def _relative_link(rng: random.Random) -> str:
    """A relative reference of one of the shapes pages carry."""
    word = rng.choice(_ASCII_WORDS)
    return rng.choice(
        [
            f"{word}.html",
            f"../{word}/{rng.randrange(1000)}.html",
            f"./{word}/x.png?size={rng.randrange(99)}",
            f"/{word}/a.html#s{rng.randrange(9)}",
            f"{word}/{rng.randrange(100)}/?q=1&amp;r=2",
            f"//cdn.example.net/{word}.js",
        ]
    )


def _html_page(rng: random.Random, size: int, *, charset: str, newline: str) -> bytes:
    """An HTML page of about *size* bytes: paragraphs of text (non-ASCII too) and links."""
    head = f'<!DOCTYPE html>\n<html><head><meta charset="{charset}"><title>{rng.choice(_WORDS)}</title>'
    head += f'<link rel=stylesheet href="{rng.choice(_ASCII_WORDS)}.css"></head>\n<body>\n'
    parts = [head]
    total = len(head)
    while total < size:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(5, 40)))
        kind = rng.randrange(4)
        if kind == 0:
            chunk = f'<p>{words} <a href="{_relative_link(rng)}">{rng.choice(_WORDS)}</a></p>\n'
        elif kind == 1:
            chunk = f"<img src={_relative_link(rng)} alt='{rng.choice(_WORDS)}'> {words}<br>\n"
        elif kind == 2:
            chunk = f"<div><a href='{_relative_link(rng)}'>{words}</a><a href=#top>top</a></div>\n"
        else:
            chunk = f"<p>{words}</p>\n"
        parts.append(chunk)
        total += len(chunk)
    parts.append(f'<p><a href="{_relative_link(rng)}">last</a></p>\n</body></html>\n')
    text = "".join(parts).replace("\n", newline)
    if charset == "iso-8859-1":
        return text.encode("latin-1", "replace")
    return text.encode("utf-8")


def _html_body(rng: random.Random, size: int) -> str:
    return _html_page(rng, size, charset="utf-8", newline="\r\n").decode("utf-8")


def _message(rng: random.Random, index: int, size: int) -> bytes:
    """A single-part HTML message whose Content-Location gives its base."""
    headers = (
        f"From: sender{index}@example.org\r\nTo: reader@example.org\r\nSubject: page {index}\r\n"
        f"Date: Mon, 3 Jun 2024 10:0{index}:00 +0000\r\nMessage-ID: <m{index}@example.org>\r\n"
        "MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n"
        f"Content-Location: http://mail.example.com/saved/{index}/page.html\r\n\r\n"
    )
    return (headers + _html_body(rng, size)).encode("utf-8")


def _mbox(rng: random.Random, size: int) -> bytes:
    """Two messages, each after its ``From `` separator line (read message by message)."""
    messages = []
    for index in range(2):
        envelope = f"From sender{index}@example.org Mon Jun  3 10:0{index}:00 2024\n"
        body = _message(rng, 10 + index, size).replace(b"\r\n", b"\n")
        messages.append(envelope.encode("ascii") + body + b"\n")
    return b"".join(messages)


def build_corpus(rng: random.Random) -> Corpus:
    """About 90 files in a few nested folders: small and large pages, messages, an mbox."""
    folders = ["", "site", "site/docs", "site/docs/old", "mail", "assets"]
    corpus: Corpus = {}
    for index in range(84):
        folder = rng.choice(folders)
        large = index % 14 == 0
        size = rng.randrange(200_000, 600_000) if large else rng.randrange(300, 30_000)
        charset = "iso-8859-1" if index % 9 == 4 else "utf-8"
        newline = "\r\n" if index % 3 == 0 else "\n"
        name = f"page{index:03d}.{'htm' if index % 5 == 0 else 'html'}"
        corpus[f"{folder}/{name}".lstrip("/")] = _html_page(rng, size, charset=charset, newline=newline)
    for index in range(3):
        corpus[f"mail/message{index}.eml"] = _message(rng, index, rng.randrange(2_000, 60_000))
    corpus["mail/archive.mbox"] = _mbox(rng, 150_000)
    corpus["site/page-large.html"] = _html_page(rng, 1_300_000, charset="utf-8", newline="\n")
    return corpus


def plant_temporary(corpus: Corpus, rng: random.Random) -> Corpus:
    """A temporary file as an earlier killed run leaves it, named after a page beside it.

    It holds a page with relative links: had a run taken it as an input, it would be
    rewritten, and its bytes would show it.
    """
    owner = sorted(name for name in corpus if name.startswith("site/docs/"))[0]
    folder, name = owner.rsplit("/", 1)
    return {f"{folder}/.{name}.rewriter-k1ll3d00.tmp": _html_page(rng, 5_000, charset="utf-8", newline="\n")}


def write_corpus(root: Path, corpus: Corpus) -> None:
    for relative, data in corpus.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def read_tree(root: Path) -> Corpus:
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()}


# --------------------------------------------------------------------------
# Running, killing, looking
# --------------------------------------------------------------------------


def _command(folder: Path, jobs: int) -> list[str]:
    return [sys.executable, "-m", "rewriter", "rewrite", str(folder), "--in-place", "--url", URL, "-q", "-j", str(jobs)]


def _run(base: Path, folder: Path, jobs: int, *extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """One run to its end, and how long it took. cwd is *base*: no rewriter.toml of the project applies."""
    start = time.monotonic()
    done = subprocess.run([*_command(folder, jobs), *extra], cwd=base, capture_output=True, text=True, timeout=120)
    return done, time.monotonic() - start


def _group_alive(group: int) -> bool | None:
    """Whether a process of *group* still runs; None where /proc cannot tell a zombie (dead, not yet
    reaped: a container's init may never reap it) from a live process."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        if int(fields[2]) == group and fields[0] != "Z":
            return True
    return False


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the run and its workers at once, and wait until none of them can still act."""
    group = process.pid  # the session leader: its pid is the group's id (start_new_session=True)
    with contextlib.suppress(ProcessLookupError):  # the whole run was over already
        os.killpg(group, signal.SIGKILL)
    process.wait(timeout=30)
    # Workers are reparented when the main process dies: wait for them too (a process in
    # the middle of a system call dies when it returns), so that what is checked next is
    # the folder as the kill left it, not a moving target.
    deadline = time.monotonic() + 10
    while alive := _group_alive(group):
        assert time.monotonic() < deadline, f"processes of group {group} survived SIGKILL"
        time.sleep(0.005)
    if alive is None:  # no /proc: wait until the group is gone, or for long enough
        while time.monotonic() < deadline - 8:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)


@dataclass
class Batch:
    """The pristine folder, each file's old and expected new content, and how long a full run takes."""

    base: Path
    pristine: Path
    old: Corpus
    new: Corpus
    planted: Corpus  # temporaries of an earlier killed run, in the pristine folder
    durations: dict[int, float] = field(default_factory=dict)  # -j N -> seconds of a full run


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    base = tmp_path_factory.mktemp("atomic")
    rng = random.Random(SEED)
    old = build_corpus(rng)
    planted = plant_temporary(old, rng)
    pristine = base / "pristine"
    write_corpus(pristine, old | planted)
    result = Batch(base, pristine, old, {}, planted)
    # The expected outputs: the same command, run to its end on a copy, once per -j.
    for jobs in (1, 2):
        copy = base / f"expected-j{jobs}"
        shutil.copytree(pristine, copy)
        done, result.durations[jobs] = _run(base, copy, jobs)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        outputs = read_tree(copy)
        assert sorted(outputs) == sorted(old | planted), "a full run must create or remove no file"
        assert {name: outputs.pop(name) for name in planted} == planted, "a temporary file was taken as an input"
        if jobs == 1:
            result.new = outputs
        else:
            assert outputs == result.new, "-j 2 must write the same bytes as -j 1"
        shutil.rmtree(copy)
    # Every file changes, so "holds the new content" can never be "was left alone".
    assert [name for name in old if result.new[name] == old[name]] == []
    return result


@dataclass
class Trial:
    """One kill: with how many workers, when, and in what state it left the folder."""

    jobs: int
    delay: float
    old: int = 0  # files that still held their old content after the kill
    new: int = 0  # files that held their new content
    temporaries: int = 0  # temporary files the kill left
    rerun: bool = False  # whether a re-run finished the job after the kill

    @property
    def mid_run(self) -> bool:
        return self.old > 0 and self.new > 0


def _look_after_kill(folder: Path, batch: Batch, trial: Trial, backup: str | None) -> list[Path]:
    """Every file holds its old or new content exactly; anything else is a backup or one of our temporaries.

    Returns the temporaries in the folder (the planted one too).
    """
    temporaries: list[Path] = []
    for relative, data in sorted(read_tree(folder).items()):
        if relative in batch.old:
            if data == batch.old[relative]:
                trial.old += 1
            elif data == batch.new[relative]:
                trial.new += 1
            else:
                pytest.fail(
                    f"{relative} holds neither its old content ({len(batch.old[relative])} bytes) nor its new one "
                    f"({len(batch.new[relative])} bytes) but {len(data)} bytes, after a SIGKILL at {trial.delay:.3f} s "
                    f"with -j {trial.jobs}"
                )
            continue
        path = Path(relative)
        if relative.startswith(".rewriter-run/"):
            continue  # the journal of the killed run (rewriter.run.journal): what --resume reads
        if backup and relative.endswith(backup) and relative[: -len(backup)] in batch.old:
            # A backup is a hard link to (or copy of) the old file, made before the rename.
            assert data == batch.old[relative[: -len(backup)]], f"{relative} is not the old file"
            continue
        match = TEMPORARY.match(path.name)
        # A temporary is named after a file of its own folder (or that file's backup).
        assert match, f"{relative}: a file a run must never leave"
        owner = (path.parent / match["name"]).as_posix()
        owners = {owner, owner[: -len(backup)]} if backup and owner.endswith(backup) else {owner}
        assert owners & set(batch.old), f"{relative}: a temporary file for no input"
        temporaries.append(folder / relative)
        trial.temporaries += relative not in batch.planted
    assert trial.old + trial.new == len(batch.old), "every input is still there under its name"
    return temporaries


def _reported_files(report: Path, folder: Path) -> set[str]:
    """The inputs a run took, from its --report (every file of the corpus has links, so has records)."""
    records = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines() if line]
    return {Path(record["file"]).relative_to(folder).as_posix() for record in records}


def _rerun_and_check(folder: Path, batch: Batch, jobs: int, temporaries: list[Path], *extra: str) -> None:
    """The same run to its end finishes the job, and removes the temporaries the kill left
    (the planted lookalike, not named by our pattern, is left alone)."""
    left = {path: path.read_bytes() for path in temporaries}
    # A temporary of this kill holds part of a new file, which a run would leave unchanged
    # even if it took it: only --report (0.5 s more a run) tells whether it did.
    report = batch.base / "report.jsonl" if len(temporaries) > len(batch.planted) else None
    done, _ = _run(batch.base, folder, jobs, *(["--report", str(report)] if report else []), *extra)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    after = read_tree(folder)
    for relative, data in batch.new.items():
        assert after[relative] == data, f"{relative}: the re-run did not leave its expected new content"
    # A run to its end leaves no temporary of its own: only the inputs, their backups and the old temporaries.
    backups = {relative + BACKUP for relative in batch.old} if "--backup" in extra else set()
    others = set(after) - set(batch.new) - {path.relative_to(folder).as_posix() for path in temporaries}
    assert others <= backups, sorted(others - backups)
    # The walk skips the temporaries: not taken as inputs, not rewritten. The kill's are
    # removed (-q: not said); the planted lookalike (not our pattern) is left as it was.
    for path in temporaries:
        if path.relative_to(folder).as_posix() in batch.planted:
            assert path.read_bytes() == left[path]
        else:
            assert not path.exists(), f"{path}: a temporary of the killed run, left by the re-run"
    if report is not None:
        assert _reported_files(report, folder) == set(batch.old)
        report.unlink()


def _kill_at_random(folder: Path, batch: Batch, trial: Trial, *extra: str) -> None:
    """Start the run on a pristine folder and SIGKILL it, with its workers, after *trial.delay* seconds."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(batch.pristine, folder)
    errors = batch.base / "killed-stderr.txt"  # a file, not a pipe: nobody reads it while the run goes
    with errors.open("wb") as stderr:
        process = subprocess.Popen(
            [*_command(folder, trial.jobs), *extra],
            cwd=batch.base,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # its own process group, workers included, for os.killpg
        )
        try:
            time.sleep(trial.delay)
        finally:
            _kill_group(process)
    # The whole group dies at once: no process is left to see a worker's death and crash on it.
    assert b"Traceback" not in errors.read_bytes(), errors.read_text(errors="replace")


def _summary(trials: list[Trial]) -> str:
    return ", ".join(f"-j{t.jobs} {t.delay:.2f}s: {t.old} old/{t.new} new/{t.temporaries} tmp" for t in trials)


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------


def test_sigkill_at_random_moments_leaves_old_or_new_content_and_a_rerun_finishes(batch: Batch) -> None:
    rng = random.Random(SEED + 1)
    folder = batch.base / "work"
    trials: list[Trial] = []
    for index in range(TRIALS):
        jobs = 1 + index % 2
        trial = Trial(jobs, rng.uniform(0, batch.durations[jobs]))
        trials.append(trial)
        _kill_at_random(folder, batch, trial)
        temporaries = _look_after_kill(folder, batch, trial, backup=None)
        # A kill that left every file old and no temporary changed nothing, and one that left
        # every file new has nothing left to do: a re-run after those is a full run once more
        # (0.8 s), checked by the others already. The last trial re-runs whatever it left.
        if trial.mid_run or trial.temporaries or index == TRIALS - 1:
            # --include '*': the temporaries match it, so only the walk's own rule keeps them out.
            _rerun_and_check(folder, batch, jobs, temporaries, "--include", "*")
            trial.rerun = True
    mid_run, reruns = sum(t.mid_run for t in trials), sum(t.rerun for t in trials)
    print(f"\n{len(trials)} kills, {mid_run} mid-run, {reruns} re-runs: {_summary(trials)}")
    # Some kills must land while files were being written, or nothing was tested.
    assert any(trial.mid_run for trial in trials), _summary(trials)


def test_sigkill_with_backup_keeps_the_old_file_and_a_rerun_finishes(batch: Batch) -> None:
    rng = random.Random(SEED + 2)
    folder = batch.base / "work-backup"
    trials: list[Trial] = []
    for index in range(BACKUP_TRIALS):
        jobs = 1 + index % 2
        # The middle of the run, where kills land between files as well as inside them.
        trial = Trial(jobs, rng.uniform(0.3, 0.9) * batch.durations[jobs])
        trials.append(trial)
        _kill_at_random(folder, batch, trial, "--backup", BACKUP)
        temporaries = _look_after_kill(folder, batch, trial, backup=BACKUP)
        # The default globs here: --include '*' would take the NAME.orig backups as pages.
        _rerun_and_check(folder, batch, jobs, temporaries, "--backup", BACKUP)
        # Every file now has its backup, holding its old content exactly (a file the killed
        # run had done is unchanged for the re-run: its backup is not overwritten with the new).
        for relative, data in batch.old.items():
            backup = folder / (relative + BACKUP)
            assert backup.is_file(), f"{relative}: no {BACKUP} backup"
            assert backup.read_bytes() == data, f"{relative}{BACKUP} does not hold the old content"
    print(f"\n{len(trials)} kills with --backup: {_summary(trials)}")
