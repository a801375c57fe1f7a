"""Shared test helpers: where ../shared is, and what to do when it is absent; and the
network guard: no test may open a connection to another machine (see :class:`NetworkGuard`)."""

from __future__ import annotations

import io
import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

# Some shells set PYTHONDONTWRITEBYTECODE (sandboxes do): every command a test starts would then
# compile the package anew, a few tenths of a second each for thousands of commands (the README's
# test command took more than eight minutes for 6 % of the tests). Its intent, no bytecode beside
# the sources, is kept by a bytecode cache of the session's own, removed at its end.
if os.environ.get("PYTHONDONTWRITEBYTECODE") and "PYTHONPYCACHEPREFIX" not in os.environ:
    import atexit
    import shutil
    import tempfile

    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="rewriter-tests-bytecode-")
    atexit.register(shutil.rmtree, os.environ["PYTHONPYCACHEPREFIX"], ignore_errors=True)
# Worker processes start whatever the plan's size (rewriter.run.executors.SMALL_PLAN): the tests'
# plans are small, and their tests of -j N are about the workers. tests/test_workers.py tests the
# rule itself, without this.
os.environ["REWRITER_SMALL_PLAN"] = "0"
# The module-scoped `browser` fixture (headless Chromium for the bundle tests).
pytest_plugins = ["browser_bundle"]


def shared_path(*parts: str) -> Path:
    """A file under ../shared; skips the test with the reason when it is absent.

    In CI (CI=true) ../shared is always beside the clone, so its absence fails
    the test instead of hiding the conformance suites behind a skip.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        reason = f"{path} is absent: the conformance and corpus tests need ../shared beside the clone"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def run_cli(cwd: Path, *argv: str, stdin: bytes = b"", timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    """Run the ``rewriter`` command in *cwd* as a user would; never a traceback, whatever the case."""
    done = subprocess.run(
        [sys.executable, "-m", "rewriter", *argv], cwd=cwd, input=stdin, capture_output=True, timeout=timeout
    )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    return done


def err_lines(done: subprocess.CompletedProcess[bytes]) -> list[str]:
    """The lines a run wrote to standard error."""
    return done.stderr.decode("utf-8", "replace").splitlines()


_SUMMARY_LINE = r"rewriter: [\d,]+ inputs?: [\d,]+ rewritten, [\d,]+ unchanged, [\d,]+ failed; .* in [\d.]+ s\n"


def without_summary(said: Any) -> Any:
    """Standard error (bytes or text) without the closing summary line every run of ``rewrite``
    prints, one input or many (issue 32); fails when there is none."""
    text = said.decode("utf-8", "surrogateescape") if isinstance(said, bytes) else said
    rest, count = re.subn(r"(?m)^" + _SUMMARY_LINE, "", text)
    assert count == 1, f"not one summary line: {text!r}"
    return rest.encode("utf-8", "surrogateescape") if isinstance(said, bytes) else rest


def css_skeleton(text: str) -> str:
    """CSS with each URL's source text (as rewriter.css.syntax finds it) replaced by a marker: what a
    rewrite must leave as it was."""
    from rewriter.css.syntax import find_urls

    pieces, last = [], 0
    for url in find_urls(text):
        pieces += [text[last : url.start], "\0URL\0"]
        last = url.end
    return "".join([*pieces, text[last:]])


class Unseekable(io.RawIOBase):
    """A pipe: no seek, and short reads."""

    def __init__(self, data: bytes) -> None:
        self.stream = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        return self.stream.read(min(size, 3) if size > 0 else size)


def environment_seeing_this_one(environment_dir: Path) -> Path:
    """A new virtual environment that imports from its own site-packages first, then from the
    running interpreter's (their ``.pth`` files processed, as in the running one): a package
    installed there is the one imported, with this run's dependencies (and mypy) beside it.
    Its python."""
    import site
    import venv

    venv.create(environment_dir, system_site_packages=False, with_pip=False)
    python = environment_dir / "bin" / "python"
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    folders = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    lines = [f"import site; site.addsitedir({folder!r})" for folder in dict.fromkeys(folders) if os.path.isdir(folder)]
    # "zz": after the environment's own .pth files, so that the installed copy is found first.
    (Path(own) / "zz_running_interpreter.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return python


def load_shared_json(*parts: str) -> Any:
    return json.loads(shared_path(*parts).read_text(encoding="utf-8"))


def shared_cases(*parts: str) -> list[Any]:
    """The records of a JSON file under ../shared, for ``parametrize``.

    When the file is absent this is one ``None`` case, on which the test calls
    :func:`shared_path` to skip (or, in CI, fail) with the reason.
    """
    path = SHARED.joinpath(*parts)
    if not path.exists():
        return [pytest.param(None, id="shared-absent")]
    records = json.loads(path.read_text(encoding="utf-8"))
    return [record for record in records if isinstance(record, dict)]


# --------------------------------------------------------------------------
# The network guard
# --------------------------------------------------------------------------


class NetworkAccessError(RuntimeError):
    """A test (or the code under test) tried to reach another machine.

    Not an OSError: code that handles a failed connection must not mistake this for one.
    """


_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})
_INET = (socket.AF_INET, socket.AF_INET6)


def _is_loopback(host: object) -> bool:
    """Whether *host* (a name or an address, str or bytes) can only mean this machine."""
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])  # an IPv6 zone ("%eth0") is no part of it
    except ValueError:
        return False  # a name: resolving it is already a query to the network
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


class NetworkGuard:
    """Makes every attempt to reach another machine fail at once with :class:`NetworkAccessError`.

    Patched: ``socket.socket.connect``, ``connect_ex`` and ``sendto`` (for AF_INET and
    AF_INET6 sockets; AF_UNIX is local IPC and passes), ``socket.create_connection``,
    ``socket.getaddrinfo``, ``gethostbyname`` and ``gethostbyname_ex``. Each refused attempt is
    recorded in :attr:`attempts` (and appended to *log*, a file, as it happens: a forked worker's
    memory is lost when it exits) before the error is raised, so that one swallowed by an
    ``except Exception`` is still seen.

    Loopback is refused too, by default: no test needs it. The browser tests' Playwright talks to
    its Node driver over the child's stdin/stdout, and the driver to Chromium over
    ``--remote-debugging-pipe``: this process connects no socket (its asyncio loop's self-pipe is
    an AF_UNIX ``socketpair``, which connects nothing). Should a harness ever need a loopback
    WebSocket (``connect_over_cdp``), *allow_loopback* lets connections and look-ups that can only
    reach this machine pass, recorded in :attr:`loopback`.

    Only Python's socket module is guarded: code in C (a C library's own sockets) is not;
    ``tests/test_hostile.py`` traces the command line's system calls for that.
    """

    def __init__(self, *, allow_loopback: bool = False, log: str | os.PathLike[str] | None = None) -> None:
        self.allow_loopback = allow_loopback
        self.log = log
        self.attempts: list[str] = []
        self.loopback: list[str] = []
        self._saved: dict[tuple[object, str], Any] = {}

    @property
    def installed(self) -> bool:
        return bool(self._saved)

    def check(self, what: str, host: object, detail: object) -> None:
        """Let a loopback *host* through (if allowed); refuse any other, loudly."""
        entry = f"{what}({detail!r})"
        if self.allow_loopback and _is_loopback(host):
            self.loopback.append(entry)
            return
        self.attempts.append(entry)
        if self.log is not None:
            with open(self.log, "a", encoding="utf-8") as stream:
                stream.write(entry + "\n")
        raise NetworkAccessError(f"network access in a test: {entry}; tests must never reach another machine")

    def install(self) -> None:
        if self.installed:
            return
        guard = self

        def patch(owner: object, name: str, make: Callable[[Any], Any]) -> None:
            original = getattr(owner, name)
            self._saved[owner, name] = original
            setattr(owner, name, make(original))

        def socket_method(original: Any) -> Any:
            def guarded(sock: socket.socket, address: Any, *rest: Any) -> Any:
                if sock.family in _INET:
                    guard.check(original.__name__, address[0], address)
                return original(sock, address, *rest)

            return guarded

        def sendto(original: Any) -> Any:
            def guarded(sock: socket.socket, data: Any, *rest: Any) -> Any:
                address = rest[-1] if rest else None
                if sock.family in _INET and isinstance(address, tuple):
                    guard.check("sendto", address[0], address)
                return original(sock, data, *rest)

            return guarded

        def by_host(name: str) -> Callable[[Any], Any]:
            def make(original: Any) -> Any:
                def guarded(host: Any, *rest: Any, **options: Any) -> Any:
                    target = host[0] if isinstance(host, tuple) else host
                    if not (name == "getaddrinfo" and target is None):  # None: this machine, passive
                        guard.check(name, target, host)
                    return original(host, *rest, **options)

                return guarded

            return make

        patch(socket.socket, "connect", socket_method)
        patch(socket.socket, "connect_ex", socket_method)
        patch(socket.socket, "sendto", sendto)
        for name in ("create_connection", "getaddrinfo", "gethostbyname", "gethostbyname_ex"):
            patch(socket, name, by_host(name))

    def uninstall(self) -> None:
        for (owner, name), original in self._saved.items():
            setattr(owner, name, original)
        self._saved.clear()


NETWORK_GUARD = NetworkGuard()


def pytest_configure(config: pytest.Config) -> None:
    # At configuration, not in a fixture: collection, and the doctests of rewriter/ that run
    # in the same session, are guarded too.
    NETWORK_GUARD.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    NETWORK_GUARD.uninstall()


# --------------------------------------------------------------------------
# The suites a newcomer's run leaves out, and CI runs
# --------------------------------------------------------------------------

# The marked suites (pyproject.toml declares the markers): headless Chromium, the whole corpus of
# ../shared, and the slow ones (kills, builds, property sweeps, large inputs). The README's test
# command, run as it is, leaves them out and says so in one line; CI=true runs everything (and
# there a test that needs ../shared fails instead of skipping: see shared_path).
OPTIONAL_SUITES = ("browser", "corpus", "slow")
ALL_SUITES_SWITCH = "REWRITER_ALL_TESTS"  # =1: run every suite, as CI does, without CI's other rules

# Whole modules that go over every page or message of ../shared.
_CORPUS_MODULES = frozenset({"test_html_corpus.py", "test_mime_corpus.py", "test_html_differential.py"})

# Single tests of a suite in modules that are otherwise quick (a whole module of a suite says so
# itself, with `pytestmark` at its top): node id without parameters -> (suite, why). An entry
# that names no collected test fails a full run in CI, so a rename cannot quietly put a slow
# test back into the default run.
_FUZZ = "a derandomized fuzz campaign: thousands of mutated inputs"
_PROPERTY = "thousands of generated examples, each checked against a reference"
_KILL = "runs killed at chosen moments under each executor, then resumed"
MARKED_TESTS: dict[str, tuple[str, str]] = {
    "tests/test_adapters.py::test_corpus_page_agrees_with_the_bytes_engine": ("corpus", "50 pages x 4 adapters"),
    "tests/test_coverage.py::test_rewriter_finds_every_relative_url_lxml_finds": ("corpus", "each corpus page"),
    "tests/test_mbox_pieces.py::test_every_corpus_mbox_in_pieces_is_the_whole_file": ("corpus", "each corpus mbox"),
    "tests/test_warc.py::test_the_corpus_mirror_matches_a_direct_rewrite_of_each_page": ("corpus", "each corpus page"),
    "tests/test_dask.py::test_the_command_line_runs_on_dask_and_writes_what_it_writes_without": (
        "slow",
        "starts a Dask cluster from the command line",
    ),
    "tests/test_dask.py::test_the_local_clusters_own_error_log_stays_off_standard_error": (
        "slow",
        "starts a Dask cluster of its own",
    ),
    "tests/test_fuzz.py::test_every_mutation_runs_on_every_format": ("slow", _FUZZ),
    "tests/test_security_config.py::test_a_key_that_writes_connects_or_reads_is_refused_from_a_file": (
        "slow",
        "26 runs of the command line",
    ),
    "tests/test_dask.py::test_html_corpus_on_the_cluster_matches_the_serial_run": ("corpus", "the corpus on a cluster"),
    "tests/test_dask.py::test_mail_corpus_as_an_mbox_and_its_mbox_files": ("corpus", "the mail corpus on a cluster"),
    "tests/test_fuzz.py::test_resolver": ("slow", _FUZZ),
    "tests/test_fuzz.py::test_html": ("slow", _FUZZ),
    "tests/test_fuzz.py::test_css": ("slow", _FUZZ),
    "tests/test_fuzz.py::test_mime": ("slow", _FUZZ),
    "tests/test_fuzz.py::test_mbox": ("slow", _FUZZ),
    "tests/test_heading_linear.py::test_generated_parameters_read_as_the_email_package_reads_them": ("slow", _PROPERTY),
    "tests/test_heading_linear.py::test_generated_encoded_words_decode_as_the_email_package_decodes_them": (
        "slow",
        _PROPERTY,
    ),
    "tests/test_html.py::test_the_declared_encoding_is_read_as_bs4_reads_it": ("slow", _PROPERTY),
    "tests/test_mime_heading.py::test_generated_headings_read_as_the_email_package_reads_them": ("slow", _PROPERTY),
    "tests/test_refresh_steps.py::test_refresh_url_follows_the_steps": ("slow", _PROPERTY),
    "tests/test_shared_classifications.py::test_a_shared_key_resolves_alike_against_every_base_of_one_directory": (
        "slow",
        _PROPERTY,
    ),
    "tests/test_pack.py::test_chromium_renders_both_packs_offline": ("browser", "opens both packs in Chromium"),
    "tests/test_pipeline.py::test_a_killed_run_resumed_finishes_without_touching_what_was_done": ("slow", _KILL),
    "tests/test_pipeline.py::test_a_worker_killed_mid_run_costs_a_retry_named_in_the_summary": ("slow", _KILL),
    "tests/test_resolve.py::test_shortcuts_agree_with_the_full_algorithm": ("slow", _PROPERTY),
    "tests/test_resolve.py::test_properties": ("slow", _PROPERTY),
    "tests/test_resolve.py::test_remove_dot_segments_matches_the_rfc_rules": ("slow", _PROPERTY),
    "tests/test_resolve.py::test_rfc1808_dot_segments_match_the_steps_as_written": ("slow", _PROPERTY),
    "tests/test_security_decompression.py::test_a_1_gib_bomb_runs_in_flat_memory_and_is_named_and_kept": (
        "slow",
        "a gibibyte inflated through each reader",
    ),
    "tests/test_security_run.py::test_a_forged_journal_is_refused_with_its_line_and_never_a_traceback": (
        "slow",
        "35 runs of the command line",
    ),
}


def run_all_suites() -> bool:
    """Whether this run takes every suite: in CI, or when the user asks for it."""
    return os.environ.get("CI") == "true" or os.environ.get(ALL_SUITES_SWITCH) == "1"


def _named_on_the_command_line(config: pytest.Config, item: pytest.Item) -> bool:
    """Whether the user named *item*'s file (or the test itself), not only a folder holding it:
    `pytest tests/test_browser.py` runs that file in full."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return False  # the testpaths of pyproject.toml: no file named by the user
    root = Path(config.invocation_params.dir)
    for arg in config.args:
        path_part = str(arg).split("::", 1)[0]
        path = (root / path_part).resolve()
        if path.is_file() and path == item.path.resolve():
            return True
    return False


def _user_chose_markers(config: pytest.Config) -> bool:
    """Whether the command line has `-m` (even `-m ''`): then the user's expression decides."""
    return any(arg == "-m" or arg.startswith(("-m", "--markexpr")) for arg in config.invocation_params.args)


def _mark_suites(items: list[pytest.Item]) -> set[str]:
    """Add the suite markers that follow from a test's fixtures, module or entry in MARKED_TESTS;
    the MARKED_TESTS entries that matched a test."""
    matched: set[str] = set()
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        if item.path.name in _CORPUS_MODULES:
            item.add_marker(pytest.mark.corpus)
        name = item.nodeid.split("[", 1)[0]
        if name in MARKED_TESTS:
            item.add_marker(getattr(pytest.mark, MARKED_TESTS[name][0]))
            matched.add(name)
    return matched


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    matched = _mark_suites(items)
    stale = sorted(set(MARKED_TESTS) - matched)
    if stale and os.environ.get("CI") == "true" and config.args_source != pytest.Config.ArgsSource.ARGS:
        raise pytest.UsageError(f"tests/conftest.py MARKED_TESTS names tests that are not collected: {stale}")
    if run_all_suites() or _user_chose_markers(config):
        return
    kept, left_out = [], []
    for item in items:
        optional = any(item.get_closest_marker(suite) for suite in OPTIONAL_SUITES)
        (left_out if optional and not _named_on_the_command_line(config, item) else kept).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept
        config.stash[_LEFT_OUT] = left_out


_LEFT_OUT = pytest.StashKey[list[pytest.Item]]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """One line: how many tests the default run left out, and the switch that runs them."""
    left_out = config.stash.get(_LEFT_OUT, [])
    if not left_out:
        return
    counts = {suite: sum(1 for item in left_out if item.get_closest_marker(suite)) for suite in OPTIONAL_SUITES}
    which = ", ".join(f"{suite}: {count}" for suite, count in counts.items() if count)
    terminalreporter.write_line(
        f"{len(left_out)} tests left out ({which}): {ALL_SUITES_SWITCH}=1 runs them too, as CI=true does; "
        f"-m SUITE runs one suite",
        yellow=True,
        bold=True,
    )


@pytest.fixture(scope="session", autouse=True)
def network_guard() -> Iterator[NetworkGuard]:
    """The session's guard, installed for every test (here in case pytest_configure did not run)."""
    NETWORK_GUARD.install()
    yield NETWORK_GUARD


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    """Fail a test during which an attempt was refused, even if something caught the error."""
    before = len(NETWORK_GUARD.attempts)
    result = yield
    refused = NETWORK_GUARD.attempts[before:]
    if refused:
        raise NetworkAccessError(f"{item.nodeid} tried to reach the network: {'; '.join(refused)}")
    return result


@pytest.fixture
def fsync_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The descriptors ``os.fsync`` is called with while the test runs (each call still made)."""
    calls: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def on_a_terminal(arguments: list[str], cwd: Path, columns: int | None = None) -> tuple[int, bytes]:
    """``python -m rewriter ARGUMENTS`` in *cwd* with standard error on a pseudo-terminal (POSIX
    only; *columns* wide when given): its exit status and all it drew there."""
    import pty

    leader, follower = pty.openpty()
    if columns is not None:
        import fcntl
        import struct
        import termios

        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    try:
        tool = subprocess.Popen(
            [sys.executable, "-m", "rewriter", *arguments],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=follower,
        )
        os.close(follower)
        follower = -1
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the tool closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = tool.wait(timeout=60)
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return code, b"".join(chunks)
