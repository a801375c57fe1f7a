"""A long fuzz campaign: the properties of tests/test_fuzz.py, run for as long as you like.

Usage (from the repository root, after ``pip install -e '.[test]'``)::

    python fuzz/campaign.py                                  # every target, 20,000 examples each
    python fuzz/campaign.py --targets html mime --examples 50000
    python fuzz/campaign.py --seconds 300                    # each target for 5 minutes (or --examples)
    python fuzz/campaign.py --seed 7 --window 16384          # another random stream, larger documents
    python fuzz/campaign.py --atheris --targets html --seconds 300    # coverage-guided, needs atheris
    python fuzz/campaign.py --atheris --targets html /tmp/rewriter-fuzz/crash-...  # replay a crash

Targets: ``resolver``, ``html``, ``css``, ``mime``, ``mbox`` (tests/test_fuzz.py says what each
checks). The seeds are ../shared/corpus when it is there, else fixtures/.

The default engine is hypothesis: batches of examples, each batch with its own seed, no
example database (nothing is written to the repository). A failure is shrunk by hypothesis,
then cut down further here (chunks of the case's bytes and strings removed while the same
failure remains), and printed as a Python expression to paste into a test::

    check_html(HTMLCase(document=b'...', url='...', ...))

``--atheris`` drives the same case builders and properties from atheris's coverage-guided
fuzzer (libFuzzer): the fuzzer's bytes are the builders' choices (which seed, where the
window is, which mutations), and the rewriter package is instrumented so that choices that
reach new code are kept. One target per process (several are run one after the other);
libFuzzer's ``-runs`` and ``-max_total_time`` come from ``--examples`` and ``--seconds``;
crash files go to ``--artifacts`` (a temporary folder by default). atheris 3.0.0 installs from
PyPI as a manylinux wheel for CPython 3.11 on x86_64 (``pip install atheris``); where it does
not install, ``--atheris`` says so and the hypothesis engine still runs.

For each target the campaign prints the examples executed (shrinking runs included), the
time, and every distinct failure with its minimal reproduction. It exits 1 if anything failed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY / "tests"))  # test_fuzz and its conftest

TARGET_NAMES = ("resolver", "html", "css", "mime", "mbox")
SUMMARY: list[str] = []


# --------------------------------------------------------------------------
# Failures: a signature to tell them apart, and a smaller case
# --------------------------------------------------------------------------


def signature(error: BaseException) -> tuple[str, str, str]:
    """What makes two failures the same: the exception type, the first line of its message,
    and the innermost frame in rewriter/ (else the innermost frame)."""
    frames = traceback.extract_tb(error.__traceback__)
    inside = [frame for frame in frames if f"{os.sep}rewriter{os.sep}" in frame.filename] or frames[-1:]
    where = f"{Path(inside[-1].filename).name}:{inside[-1].lineno}" if inside else "?"
    message = re.sub(r"\d+", "N", str(error).splitlines()[0][:120]) if str(error) else ""  # not offsets
    return type(error).__name__, message, where


def failure_of(check: Callable[[Any], None], case: Any) -> tuple[str, str, str] | None:
    try:
        check(case)
    except Exception as error:
        return signature(error)
    return None


def minimise(check: Callable[[Any], None], case: Any, seconds: float = 60.0) -> Any:
    """*case* with its bytes and str fields cut down (delta debugging: chunks of halving size
    removed) while *check* still fails the same way."""
    wanted = failure_of(check, case)
    if wanted is None:
        return case
    deadline = time.monotonic() + seconds
    for field in dataclasses.fields(case):
        value = getattr(case, field.name)
        if not isinstance(value, bytes | str) or not value:
            continue
        chunk = max(1, len(value) // 2)
        while chunk >= 1 and time.monotonic() < deadline:
            start, progressed = 0, False
            while start < len(value) and time.monotonic() < deadline:
                smaller = value[:start] + value[start + chunk :]
                candidate = dataclasses.replace(case, **{field.name: smaller})
                if failure_of(check, candidate) == wanted:
                    case, value, progressed = candidate, smaller, True
                else:
                    start += chunk
            if not progressed:
                chunk //= 2
    return case


def report(name: str, error: BaseException, case: Any, check: Callable[[Any], None]) -> None:
    small = minimise(check, case)
    print(f"\n[{name}] FAILURE {' | '.join(signature(error))}", flush=True)
    print("".join(traceback.format_exception(error)[-6:]), end="")
    print(f"[{name}] minimal reproduction:\n    {check.__name__}({small!r})\n", flush=True)


# --------------------------------------------------------------------------
# The hypothesis engine
# --------------------------------------------------------------------------


def run_hypothesis(
    name: str, examples: int, seconds: float | None, seed: int, limits: Any, batch: int, skip_known: bool
) -> int:
    """Batches of hypothesis examples until *examples* ran or *seconds* passed; returns the failure count."""
    import test_fuzz
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings
    from hypothesis import seed as hypothesis_seed

    target = next(target for target in test_fuzz.TARGETS if target.name == name)
    strategy = test_fuzz.strategy(target, limits)
    test_fuzz.seeds()  # loaded before the clock starts
    executed = known = 0
    last: list[Any] = [None]
    seen: set[tuple[str, str, str]] = set()
    started = time.monotonic()
    round_ = 0
    while executed < examples and (seconds is None or time.monotonic() - started < seconds):

        def run(case: Any) -> None:
            nonlocal executed, known
            executed += 1
            if skip_known and test_fuzz.known_issue(case) is not None:
                known += 1
                return
            last[0] = case
            target.check(case)

        size = min(batch, examples - executed)
        test = settings(
            max_examples=size,
            deadline=None,
            database=None,
            derandomize=False,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            print_blob=False,
            verbosity=Verbosity.quiet,  # the minimal reproduction is printed by report()
        )(given(strategy)(run))
        test = hypothesis_seed(seed * 1_000_003 + round_)(test)
        round_ += 1
        try:
            test()
        except Exception as error:  # hypothesis re-raises the minimal example's failure last
            key = signature(error)
            if key not in seen:
                seen.add(key)
                report(name, error, last[0], target.check)
        print(f"[{name}] {executed} examples, {time.monotonic() - started:.0f} s, {len(seen)} failure(s)", flush=True)
    elapsed = time.monotonic() - started
    summary = (
        f"[{name}] done: {executed} examples in {elapsed:.0f} s ({executed / max(elapsed, 1e-9):.0f}/s), "
        f"{known} set aside as known issues, {len(seen)} failure(s)"
    )
    print(summary, flush=True)
    SUMMARY.append(summary)
    return len(seen)


# --------------------------------------------------------------------------
# The atheris engine
# --------------------------------------------------------------------------


class ProviderChooser:
    """Choices read from atheris's FuzzedDataProvider: the fuzzer's bytes steer the builders."""

    def __init__(self, provider: Any) -> None:
        self._provider = provider

    def integer(self, low: int, high: int) -> int:
        return int(self._provider.ConsumeIntInRange(low, high))

    def blob(self, max_size: int) -> bytes:
        return bytes(self._provider.ConsumeBytes(self._provider.ConsumeIntInRange(0, max_size)))


def run_atheris(
    name: str, examples: int, seconds: float | None, limits_fields: dict[str, int], rest: list[str], skip_known: bool
) -> None:
    """One target under atheris in this process (libFuzzer exits the process when done)."""
    try:
        import atheris
    except ImportError:
        sys.exit("atheris is not installed (pip install atheris; wheels exist for CPython 3.8-3.11 on Linux)")
    with atheris.instrument_imports(include=["rewriter"]):
        pass
    import test_fuzz

    target = next(target for target in test_fuzz.TARGETS if target.name == name)
    limits = test_fuzz.Limits(**limits_fields)
    test_fuzz.seeds()
    counter = [0, time.monotonic()]

    def one_input(data: bytes) -> None:
        case = target.build(ProviderChooser(atheris.FuzzedDataProvider(data)), limits)
        counter[0] += 1
        if counter[0] % 5000 == 0:
            print(f"[{name}] {counter[0]} executions, {time.monotonic() - counter[1]:.0f} s", flush=True)
        if skip_known and test_fuzz.known_issue(case) is not None:
            return
        try:
            target.check(case)
        except Exception as error:
            report(name, error, case, target.check)
            raise

    arguments = [sys.argv[0], *rest]
    if not any(argument.startswith("-runs=") for argument in rest):
        arguments.append(f"-runs={examples}")
    if seconds is not None and not any(argument.startswith("-max_total_time=") for argument in rest):
        arguments.append(f"-max_total_time={int(seconds)}")
    # The bytes are choices, a few per mutation: let them be long from the start.
    for flag in ("-max_len=1024", "-len_control=0", "-print_final_stats=1"):
        if not any(argument.startswith(flag.split("=")[0] + "=") for argument in rest):
            arguments.append(flag)
    atheris.Setup(arguments, one_input)
    atheris.Fuzz()


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", choices=TARGET_NAMES, default=list(TARGET_NAMES))
    parser.add_argument("--examples", type=int, default=20_000, help="examples (executions) per target")
    parser.add_argument("--seconds", type=float, default=None, help="wall-clock budget per target")
    parser.add_argument("--seed", type=int, default=0, help="the random stream (hypothesis engine)")
    parser.add_argument("--batch", type=int, default=2_000, help="examples per hypothesis run")
    parser.add_argument("--window", type=int, default=8192, help="bytes of a page or style sheet")
    parser.add_argument("--message", type=int, default=48_000, help="bytes of a message")
    parser.add_argument("--mutations", type=int, default=6, help="most mutations per case")
    parser.add_argument("--include-known", action="store_true", help="also check cases of known (xfail) issues")
    parser.add_argument("--atheris", action="store_true", help="coverage-guided fuzzing with atheris")
    parser.add_argument("--artifacts", default=str(Path(tempfile.gettempdir()) / "rewriter-fuzz"))
    arguments, rest = parser.parse_known_args(argv)
    limits_fields = {"window": arguments.window, "message": arguments.message, "mutations": arguments.mutations}

    if arguments.atheris:
        Path(arguments.artifacts).mkdir(parents=True, exist_ok=True)
        if len(arguments.targets) == 1:
            rest = [*rest, f"-artifact_prefix={arguments.artifacts}/"]
            run_atheris(
                arguments.targets[0],
                arguments.examples,
                arguments.seconds,
                limits_fields,
                rest,
                not arguments.include_known,
            )
            return 0  # not reached: libFuzzer exits the process
        # libFuzzer fuzzes one function per process: one child per target.
        command = [sys.executable, __file__, "--atheris", "--examples", str(arguments.examples)]
        command += ["--window", str(arguments.window), "--message", str(arguments.message)]
        command += ["--mutations", str(arguments.mutations), "--artifacts", arguments.artifacts]
        if arguments.seconds is not None:
            command += ["--seconds", str(arguments.seconds)]
        if arguments.include_known:
            command.append("--include-known")
        status = [subprocess.call([*command, "--targets", name, *rest]) for name in arguments.targets]
        return 1 if any(status) else 0

    import test_fuzz

    limits = test_fuzz.Limits(**limits_fields)
    failures = 0
    for name in arguments.targets:
        failures += run_hypothesis(
            name,
            arguments.examples,
            arguments.seconds,
            arguments.seed,
            limits,
            arguments.batch,
            not arguments.include_known,
        )
    print("\n".join(["", *SUMMARY, f"{failures} distinct failure(s)"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
