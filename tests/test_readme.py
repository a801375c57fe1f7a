"""The README's two set-up commands, as a newcomer meets them.

CI runs them as written (``.ci/run`` reads them from README.md): once in a clean clone without
``../shared`` where pip refuses to install outside a virtual environment, once beside
``../shared``. These tests hold the README to the shape that makes that possible, and run the
parts of the first command that need no install: the fixture it names is rewritten.

The README's jobs are held to what they say too: each command runs as written, on a copy of
``fixtures/``, with the installed ``rewriter``, and what it writes is checked; and docs/cli.md,
the full command reference, names every option of the real parser and no other.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import gzip
import hashlib
import json
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rewriter.cli import build_parser

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


# --- The README is a user's guide: short, and every job in it runs as written --------------------------------------


def test_the_readme_is_at_most_250_lines() -> None:
    """The full reference lives in docs/cli.md and the figures in docs/performance.md."""
    assert len(README.splitlines()) <= 250


def _section(text: str, title: str) -> str:
    """The text of the ``## title`` section of *text*, up to the next ``## ``."""
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _job_commands() -> list[str]:
    """Every command of the README's job sections, one per line of their ```sh blocks."""
    return [
        line.strip()
        for block in _sh_blocks(_section(README, "Jobs"))
        for line in block.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def _same(one: Path, other: Path) -> None:
    assert one.read_bytes() == other.read_bytes(), f"{other} is not {one} unchanged"


def _mime_texts(path: Path) -> dict[str, str]:
    """The decoded text bodies of a message or MHTML file, by content type (the last of each)."""
    message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
    return {
        part.get_content_type(): part.get_content() for part in message.walk() if part.get_content_maintype() == "text"
    }


def _warc_records(path: Path) -> list[tuple[str, str | None, bytes]]:
    """(type, target URI, content) of each record of the WARC at *path*."""
    from warcio.archiveiterator import ArchiveIterator

    with path.open("rb") as stream:
        return [
            (record.rec_type, record.rec_headers.get_header("WARC-Target-URI"), record.content_stream().read())
            for record in ArchiveIterator(stream)
        ]


def _saved_page(root: Path, out: str) -> None:
    page = (root / "out/saved/guide.html").read_text(encoding="utf-8")
    assert 'href="https://example.org/docs/guide/chapter-1.html"' in page  # from the saved-from mark
    assert 'href="https://example.org/docs/reference/cli.html?lang=en"' in page
    assert 'src="./guide_files/logo.png"' in page  # a local copy: kept as written
    for copy in (root / "fixtures/saved/guide_files").iterdir():
        _same(copy, root / "out/saved/guide_files" / copy.name)


def _saved_links(root: Path, out: str) -> None:
    assert "local" in out and "./guide_files/logo.png" in out
    assert "https://example.org/docs/guide/chapter-1.html" in out


def _saved_pack(root: Path, out: str) -> None:
    bundle = (root / "out/guide.mhtml").read_bytes()
    assert b"Content-Location: https://example.org/docs/guide/index.html" in bundle
    message = email.message_from_bytes(bundle, policy=email.policy.default)
    assert message.get_content_type() == "multipart/related"
    types = {part.get_content_type() for part in message.iter_parts()}
    assert {"text/html", "text/css", "image/png"} <= types, types


def _mirror(root: Path, out: str) -> None:
    source, target = root / "fixtures/mirror/example.org", root / "out/mirror/example.org"
    # Every file of the mirror is in the output: pages rewritten, the rest copied.
    assert sorted(p.relative_to(source) for p in source.rglob("*")) == sorted(
        p.relative_to(target) for p in target.rglob("*")
    )
    index = (target / "index.html").read_text(encoding="utf-8")
    assert 'href="https://example.org/view.php?id=2"' in index and 'href="https://example.org/about"' in index
    assert "url(https://example.org/img/logo.png)" in (target / "style.css").read_text(encoding="utf-8")
    _same(source / "img/logo.png", target / "img/logo.png")
    _same(source / "js/menu.js", target / "js/menu.js")  # a script is never read as HTML
    # Pages saved under their URLs' names are pages: rewritten against their own URLs.
    episode = (target / "view.php?id=2").read_text(encoding="utf-8")
    assert 'href="https://example.org/index.html"' in episode and 'href="https://example.org/view.php?id=1"' in episode
    assert 'src="https://example.org/media/ep2.mp3"' in episode
    assert 'href="https://example.org/people/ann"' in (target / "about").read_text(encoding="utf-8")


def _mbox_explain(root: Path, out: str) -> None:
    assert all(f"message {n}" in out for n in (1, 2, 3)), out
    # Each part's base, and the heading that gave it.
    assert "http://example.org/newsletter/issue-7/index.html" in out and "Content-Location" in out
    assert "http://lists.example.org/announce/2024/" in out and "Content-Base" in out


def _mbox_rewrite(root: Path, out: str) -> None:
    before, after = (root / "fixtures/mail/archive.mbox").read_bytes(), (root / "out/archive.mbox").read_bytes()
    assert b'<a href="http://lists.example.org/announce/2024/march.html">' in after
    assert b"http://example.org/newsletter/issue-7/story.html" in after.replace(b"=\n", b"")
    # What is not a link comes back as it was: the From lines, the quoting, the third message.
    assert after.count(b"\nFrom ") == before.count(b"\nFrom ") == 2
    assert before[before.index(b"From ann@") :] == after[after.index(b"From ann@") :]
    report = [json.loads(line) for line in (root / "out/links.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {record["message"] for record in report} == {1, 2}
    assert {record["status"] for record in report} == {"rewritten"}


def _maildir(root: Path, out: str) -> None:
    target = root / "out/Maildir"
    assert (target / "tmp").is_dir()
    (current,) = (target / "cur").iterdir()
    (new,) = (target / "new").iterdir()
    assert b'href="https://shop.example/mail/12/unsubscribe?u=me"' in current.read_bytes()
    assert b'href="http://club.example.com/calendar"' in new.read_bytes()


def _mhtml_rewrite(root: Path, out: str) -> None:
    texts = _mime_texts(root / "out/page.mhtml")
    assert 'href="https://example.org/blog/part-2.html"' in texts["text/html"]
    assert 'src="https://example.org/blog/images/photo.png"' in texts["text/html"]
    assert "url(https://example.org/img/banner.png)" in texts["text/css"]


def _mhtml_unpack(root: Path, out: str) -> None:
    folder = root / "out/page"
    page = (folder / "index.html").read_text(encoding="utf-8")
    (image,) = re.findall(r'<img src="([^"]+)"', page)
    (style,) = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
    assert (folder / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (folder / style).is_file()
    assert 'href="https://example.org/blog/part-2.html"' in page
    assert (folder / "manifest.json").is_file()


def _warc_rewrite(root: Path, out: str) -> None:
    before, after = _warc_records(root / "fixtures/warc/crawl.warc.gz"), _warc_records(root / "out/crawl.warc.gz")
    assert [record for record in after if record[0] != "conversion"] == before  # every record kept
    conversions = {uri: content for kind, uri, content in after if kind == "conversion"}
    assert set(conversions) == {"https://example.org/", "https://example.org/css/site.css"}
    assert b'href="https://example.org/about/"' in conversions["https://example.org/"]


def _warc_links(root: Path, out: str) -> None:
    assert "https://example.org/news/?page=2" in out and "https://example.org/css/site.css" in out


def _warc_unpack(root: Path, out: str) -> None:
    host = root / "out/crawl/example.org"
    assert 'href="https://example.org/about/"' in (host / "index.html").read_text(encoding="utf-8")
    _same(root / "fixtures/mirror/example.org/img/logo.png", host / "img/logo.png")


def _wacz_rewrite(root: Path, out: str) -> None:
    with zipfile.ZipFile(root / "out/crawl.wacz") as wacz, zipfile.ZipFile(root / "fixtures/wacz/crawl.wacz") as given:
        assert wacz.read("pages/pages.jsonl") == given.read("pages/pages.jsonl")
        resources = {item["path"]: item for item in json.loads(wacz.read("datapackage.json"))["resources"]}
        warc = wacz.read("archive/crawl.warc.gz")
        assert resources["archive/crawl.warc.gz"]["hash"] == "sha256:" + hashlib.sha256(warc).hexdigest()
        (root / "out/crawl-from-wacz.warc.gz").write_bytes(warc)
    before = _warc_records(root / "fixtures/warc/crawl.warc.gz")
    after = _warc_records(root / "out/crawl-from-wacz.warc.gz")
    assert [record for record in after if record[0] != "conversion"] == before  # every record kept
    conversions = {uri: content for kind, uri, content in after if kind == "conversion"}
    assert b'href="https://example.org/about/"' in conversions["https://example.org/"]


def _wacz_unpack(root: Path, out: str) -> None:
    host = root / "out/crawl-wacz/example.org"
    assert 'href="https://example.org/about/"' in (host / "index.html").read_text(encoding="utf-8")
    _same(root / "fixtures/mirror/example.org/img/logo.png", host / "img/logo.png")


# What each command of the README's jobs writes: the README says it in words, these checks in bytes.
WRITES = {
    "rewriter rewrite fixtures/saved/ -o out/saved/": _saved_page,
    "rewriter links fixtures/saved/guide.html": _saved_links,
    "rewriter pack fixtures/saved/guide.html -o out/guide.mhtml": _saved_pack,
    "rewriter rewrite fixtures/mirror/ -o out/mirror/ --url-root auto:https": _mirror,
    "rewriter explain fixtures/mail/archive.mbox": _mbox_explain,
    "rewriter rewrite fixtures/mail/archive.mbox -o out/archive.mbox --report out/links.jsonl": _mbox_rewrite,
    "rewriter rewrite fixtures/mail/Maildir -o out/Maildir": _maildir,
    "rewriter rewrite fixtures/mail/page.mhtml -o out/page.mhtml": _mhtml_rewrite,
    "rewriter unpack fixtures/mail/page.mhtml -o out/page/": _mhtml_unpack,
    "rewriter rewrite fixtures/warc/crawl.warc.gz -o out/crawl.warc.gz": _warc_rewrite,
    "rewriter links fixtures/warc/crawl.warc.gz": _warc_links,
    "rewriter unpack fixtures/warc/crawl.warc.gz -o out/crawl/": _warc_unpack,
    "rewriter rewrite fixtures/wacz/crawl.wacz -o out/crawl.wacz": _wacz_rewrite,
    "rewriter unpack fixtures/wacz/crawl.wacz -o out/crawl-wacz/": _wacz_unpack,
}


def test_the_readme_has_a_job_for_each_kind_of_input_and_each_is_checked() -> None:
    commands = _job_commands()
    assert commands == list(WRITES), "a command in the README's jobs with no check here, or one the README dropped"
    for kind in ("saved/", "mirror/", ".mbox", "Maildir", ".mhtml", ".warc.gz", ".wacz"):
        assert any(kind in command for command in commands), kind


def _installed_rewriter() -> list[str]:
    """The console script pip installed beside this interpreter (the README's .venv/bin/rewriter)."""
    script = Path(sys.executable).with_name("rewriter.exe" if sys.platform == "win32" else "rewriter")
    found = str(script) if script.is_file() else shutil.which("rewriter")
    return [found] if found else [sys.executable, "-m", "rewriter"]


@pytest.mark.parametrize("command", _job_commands())
def test_each_job_in_the_readme_runs_as_written(command: str, tmp_path: Path) -> None:
    """Run from a copy of the repository's root holding ``fixtures/``: exit 0, and it writes
    what the README says."""
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    name, *arguments = shlex.split(command)
    assert name == "rewriter" and not {"<", ">", "|", ";"} & set(arguments), command
    done = subprocess.run(
        [*_installed_rewriter(), *arguments], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    WRITES[command](tmp_path, done.stdout)
    # Nothing was written beside the inputs: the fixtures are as shipped.
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "fixtures").rglob("*")) == sorted(
        p.relative_to(ROOT) for p in (ROOT / "fixtures").rglob("*")
    )


def test_the_shipped_warc_is_the_one_its_script_writes() -> None:
    # run_path, not an import: no __pycache__ is left among the fixtures.
    crawl = runpy.run_path(str(ROOT / "fixtures" / "warc" / "make_crawl.py"))["crawl"]
    # Compared decompressed: another zlib may compress the same records to other bytes.
    shipped = (ROOT / "fixtures" / "warc" / "crawl.warc.gz").read_bytes()
    assert gzip.decompress(crawl()) == gzip.decompress(shipped)


# --- docs/cli.md names every option of every verb, and no other -----------------------------------------------------

CLI_DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
# An option as a word of its own: not the dash inside Content-Location, utf-8 or .rewriter-run.
OPTION = re.compile(r"(?<![\w./-])(--?[A-Za-z][\w-]*)")


def _options(parser: argparse.ArgumentParser) -> set[str]:
    # argparse lists a parser's actions only in ``_actions``; there is no public accessor.
    return {name for action in parser._actions for name in action.option_strings}


def _verbs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (verbs,) = (action.choices for action in parser._actions if isinstance(action.choices, dict))
    return dict(verbs)


def test_cli_doc_names_every_option_of_each_verb_and_no_other() -> None:
    parser = build_parser()
    verbs = _verbs(parser)
    assert {"rewrite", "links", "explain", "unpack", "pack", "resolve"} <= set(verbs)
    for name, verb in verbs.items():
        named = set(OPTION.findall(_section(CLI_DOC, f"rewriter {name}")))
        assert named == _options(verb), (
            f"docs/cli.md, rewriter {name}: missing {sorted(_options(verb) - named)}, "
            f"not options of it {sorted(named - _options(verb))}"
        )
    assert set(OPTION.findall(_section(CLI_DOC, "Top-level options"))) == _options(parser)


def test_cli_doc_names_no_option_that_does_not_exist() -> None:
    parser = build_parser()
    every = _options(parser).union(*(_options(verb) for verb in _verbs(parser).values()))
    named = {option for option in OPTION.findall(CLI_DOC) if option.startswith("--")}
    assert named - every == set()
