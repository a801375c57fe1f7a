"""The README's two set-up commands, as a newcomer meets them.

CI runs them as written (``.ci/run`` reads them from README.md): once in a clean clone without
``../shared`` where pip refuses to install outside a virtual environment, once beside
``../shared``. These tests hold the README to the shape that makes that possible, and run the
parts of the first command that need no install: the fixture it names is rewritten.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CI_RUN = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _sh_blocks(text: str) -> list[str]:
    """The ```sh blocks of *text*, in order, as .ci/run's awk reads them."""
    return [block.strip("\n") for block in re.findall(r"^```sh\n(.*?)^```$", text, flags=re.M | re.S)]


def _steps(command: str) -> list[list[str]]:
    return [shlex.split(step) for step in command.split("&&")]


def test_the_readme_starts_with_exactly_two_setup_commands() -> None:
    """The first two code blocks are the two commands, and no other shell command comes before
    the first section."""
    opening = README.split("\n## ", 1)[0]
    fences = re.findall(r"^```(\S*)$", opening, flags=re.M)
    assert fences[:4] == ["sh", "", "sh", ""], fences
    assert "sh" not in fences[4:] and "bash" not in fences[4:] and "console" not in fences[4:], fences
    blocks = _sh_blocks(opening)
    assert all("\n" not in block for block in blocks), "each set-up command is one line, run as a whole"
    assert _sh_blocks(README)[:2] == blocks


def test_both_commands_make_and_use_a_virtual_environment() -> None:
    """Neither installs into the system's Python (PEP 668 refuses it on Debian 12, Ubuntu 23.04+,
    Fedora): each makes .venv first, and every later step runs a program of .venv."""
    for command in _sh_blocks(README)[:2]:
        first, *rest = _steps(command)
        assert first == ["python3", "-m", "venv", ".venv"], command
        assert rest, command
        for step in rest:
            assert step[0].startswith(".venv/bin/"), f"{step[0]!r} is not the environment's: {command}"
        installs = [step for step in rest if step[1:4] == ["-m", "pip", "install"]]
        assert len(installs) == 1 and installs[0][0] == ".venv/bin/python", command


def test_the_first_command_runs_the_main_job_on_a_shipped_fixture() -> None:
    setup = _steps(_sh_blocks(README)[0])
    job = setup[-1]
    assert job[0] == ".venv/bin/rewriter"
    fixture = ROOT / job[-1]
    assert fixture.is_file() and fixture.is_relative_to(ROOT / "fixtures"), job
    # The job as the installed command runs it (through this interpreter, where the tests run).
    done = subprocess.run([sys.executable, "-m", "rewriter", *job[1:]], cwd=ROOT, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"https://example.org/docs/" in done.stdout


def test_the_test_command_runs_pytest_with_the_test_extra() -> None:
    _venv, install, run = _steps(_sh_blocks(README)[1])
    assert install[-1] == ".[test]"
    assert run == [".venv/bin/python", "-m", "pytest"]


def test_ci_runs_the_readme_commands_read_from_the_readme() -> None:
    """.ci/run takes both commands from README.md (never a copy that could drift), runs them in a
    clone without ../shared under PIP_REQUIRE_VIRTUALENV=1, and again in its own clone."""
    awk = re.search(r"awk -v k=\"\$1\" '(.*?)' README\.md", CI_RUN)
    assert awk, "readme_command's awk program"
    assert "SETUP=$(readme_command 1)" in CI_RUN and "TESTS=$(readme_command 2)" in CI_RUN
    assert CI_RUN.count('bash -c "$SETUP"') == 2 and CI_RUN.count('bash -c "$TESTS"') == 2
    assert "export PIP_REQUIRE_VIRTUALENV=1" in CI_RUN
    if sys.platform != "win32":
        for k, expected in ((1, _sh_blocks(README)[0]), (2, _sh_blocks(README)[1])):
            done = subprocess.run(
                ["awk", "-v", f"k={k}", awk.group(1), "README.md"], cwd=ROOT, capture_output=True, text=True
            )
            assert done.returncode == 0 and done.stdout.strip("\n") == expected
