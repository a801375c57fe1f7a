"""rewriter.run.dask on a two-worker dask.distributed cluster (loopback only): outputs and reports
are byte for byte those of the serial paths (batch.run, mailbox.rewrite_mbox, warc.rewrite_warc)."""

from __future__ import annotations

import dataclasses
import io
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dask.bag", reason="the dask extra is not installed: pip install 'rewriter[dask]'")
distributed = pytest.importorskip("distributed", reason="the dask extra is not installed: pip install 'rewriter[dask]'")

from conftest import NetworkGuard, shared_path  # noqa: E402

import rewriter.run.dask as rdask  # noqa: E402
from rewriter.containers.mailbox import rewrite_mbox  # noqa: E402
from rewriter.containers.warc import rewrite_warc  # noqa: E402
from rewriter.run.batch import Settings, plan, run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SEPARATOR = b"From someone@example.org Sat Jan  1 00:00:00 2000\n"


@pytest.fixture(scope="module")
def client(network_guard: NetworkGuard) -> Iterator[distributed.Client]:
    """A LocalCluster of 2 worker processes, 1 thread each, listening on 127.0.0.1 only."""
    allowed = network_guard.allow_loopback
    network_guard.allow_loopback = True  # the client talks to its scheduler over loopback TCP
    try:
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                host="127.0.0.1",
                silence_logs=40,
            ) as cluster,
            distributed.Client(cluster) as connected,
        ):
            yield connected
    finally:
        network_guard.allow_loopback = allowed


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under *folder* (hidden ones too) by relative path."""
    found = {}
    for parent, _, names in os.walk(folder):
        for name in names:
            path = Path(parent) / name
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


def relative_targets(records: list[dict[str, object]], out: Path) -> list[dict[str, object]]:
    return [{**record, "target": os.path.relpath(str(record["target"]), out)} for record in records]


def serial(inputs: list[str], out: Path, settings: Settings, **options: object) -> list[dict[str, object]]:
    """What ``rewriter rewrite INPUTS -o OUT -j 1`` does, as records."""
    out.mkdir(parents=True)
    jobs, problems = plan(inputs, str(out), **options)  # type: ignore[arg-type]
    assert problems == []
    outcomes = run(jobs, settings)
    return [{**rdask.as_record(outcome), "target": job.target} for job, outcome in zip(jobs, outcomes, strict=True)]


def assert_same_run(inputs: list[str], tmp_path: Path, settings: Settings, **options: object) -> int:
    """The Dask run and the serial run of *inputs* give the same trees and records; the file count."""
    records = rdask.rewrite_files(inputs, tmp_path / "dask", settings=settings, **options)  # type: ignore[arg-type]
    selection = {key: value for key, value in options.items() if key in ("include", "exclude")}
    expected = serial(inputs, tmp_path / "serial", settings, **selection)
    assert relative_targets(records, tmp_path / "dask") == relative_targets(expected, tmp_path / "serial")
    assert tree(tmp_path / "dask") == tree(tmp_path / "serial")
    return len(records)


def test_fixtures_on_the_cluster_match_the_serial_run(client: distributed.Client, tmp_path: Path) -> None:
    # The page and the messages, each known: the README's job fixtures beside them change as the walk does.
    inputs = [str(FIXTURES / "saved-page.html"), str(FIXTURES / "mime")]
    count = assert_same_run(inputs, tmp_path, Settings(records=True), client=client)
    assert count == 1 + len(list(FIXTURES.glob("mime/*.eml")))


def test_html_corpus_on_the_cluster_matches_the_serial_run(client: distributed.Client, tmp_path: Path) -> None:
    corpus = shared_path("corpus", "html")
    count = assert_same_run([str(corpus)], tmp_path, Settings(records=True), client=client, include=["*.html"])
    assert count > 300


def test_an_address_string_and_glob_patterns(client: distributed.Client, tmp_path: Path) -> None:
    address = client.scheduler.address
    assert address.startswith("tcp://127.0.0.1:")
    pattern = str(FIXTURES / "**" / "*.eml")
    records = rdask.rewrite_files([pattern], tmp_path / "out", client=address)
    names = sorted(path.relative_to(FIXTURES).as_posix() for path in FIXTURES.glob("**/*.eml"))
    assert sorted(os.path.relpath(str(record["target"]), tmp_path / "out") for record in records) == names
    for record in records:  # each file's output is what the serial engine writes for it alone
        alone = tmp_path / "alone" / Path(str(record["file"])).name
        [expected] = serial([str(record["file"])], alone, Settings())
        assert {**record, "target": None} == {**expected, "target": None}
        assert Path(str(record["target"])).read_bytes() == (alone / alone.name).read_bytes()


def test_the_local_scheduler_by_default_and_a_missing_input(tmp_path: Path) -> None:
    inputs = [str(FIXTURES / "saved-page.html"), str(tmp_path / "absent.html"), str(tmp_path / "none-*.html")]
    records = rdask.rewrite_files(inputs, tmp_path / "out", workers=2)
    assert [(record["state"], record["ok"]) for record in records] == [
        ("rewritten", True),
        ("failed", False),
        ("failed", False),
    ]
    assert records[1]["messages"] == [f"rewriter: {tmp_path / 'absent.html'}: no such file or folder"]
    assert records[2]["messages"] == [f"rewriter: {tmp_path / 'none-*.html'}: no file matches"]
    assert (tmp_path / "out" / "saved-page.html").is_file()


def mbox_of(messages: list[bytes], lead: bytes = b"") -> bytes:
    """An mbox: a From_ line before each message, a blank line after it."""
    pieces = [lead]
    for message in messages:
        pieces += [SEPARATOR, message if message.endswith(b"\n") else message + b"\n", b"\n"]
    return b"".join(pieces)


def assert_same_mbox(mbox: Path, tmp_path: Path, client: object, **options: object) -> list[dict[str, object]]:
    out = tmp_path / (mbox.name + ".out")
    records = list(rdask.rewrite_mbox_messages(mbox, out, client=client, **options))  # type: ignore[arg-type]
    target = io.BytesIO()
    limit = {"max_message": options["max_message"]} if "max_message" in options else {}
    with open(mbox, "rb") as source:
        expected = [rdask.as_record(report) for report in rewrite_mbox(source, target, **limit)]  # type: ignore[arg-type]
    assert out.read_bytes() == target.getvalue()
    assert records == expected
    return records


def test_fixture_messages_as_an_mbox(client: distributed.Client, tmp_path: Path) -> None:
    messages = [path.read_bytes() for path in sorted(FIXTURES.glob("mime/*.eml"))]
    mbox = tmp_path / "fixtures.mbox"
    mbox.write_bytes(mbox_of(messages))
    records = assert_same_mbox(mbox, tmp_path, client)
    assert len(records) >= len(messages) and sum(bool(record["changed"]) for record in records) > 10


def test_small_windows_oversize_messages_and_a_file_not_starting_like_an_mbox(
    client: distributed.Client, tmp_path: Path
) -> None:
    messages = [path.read_bytes() for path in sorted(FIXTURES.glob("mime/*.eml"))]
    big = max(len(message) for message in messages)
    mbox = tmp_path / "odd.mbox"
    mbox.write_bytes(mbox_of(messages, lead=b"Subject: junk before the first From_ line\n\n<a href=x>\n"))
    records = assert_same_mbox(mbox, tmp_path, client, max_message=big // 2, window=3 * big)
    assert records[0]["problems"][0].startswith("no From_ line before it")  # type: ignore[index]
    assert any("copied unchanged" in " ".join(record["problems"]) for record in records)  # type: ignore[arg-type]


def test_mail_corpus_as_an_mbox_and_its_mbox_files(client: distributed.Client, tmp_path: Path) -> None:
    corpus = shared_path("corpus", "mail")
    messages = [path.read_bytes() for path in sorted(corpus.iterdir()) if path.suffix in (".eml", ".mht", ".mhtml")]
    mbox = tmp_path / "corpus.mbox"
    mbox.write_bytes(mbox_of(messages))
    assert len(assert_same_mbox(mbox, tmp_path, client)) >= len(messages)
    for found in sorted(corpus.glob("*.mbox")):
        assert_same_mbox(found, tmp_path, client)


def test_warc_pages_match_rewrite_warc(client: distributed.Client, tmp_path: Path) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)

    def record(uri: str, body: bytes, content_type: str, status: str = "200 OK", **headers: str) -> None:
        fields = [("Content-Type", content_type), *headers.items()]
        http = StatusAndHeaders(status, fields, protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(uri, "response", payload=io.BytesIO(body), http_headers=http))

    page = (FIXTURES / "saved-page.html").read_bytes()
    for number in range(12):
        record(f"http://example.org/docs/{number}/", page, "text/html; charset=utf-8")
    record("http://example.org/docs/0/", b"<a href=again>the same URL again</a>", "text/html")
    record("http://example.org/style.css", b"body { background: url(img/bg.png) }", "text/css")
    record("http://example.org/old", b"", "text/html", "301 Moved Permanently", Location="/docs/0/")
    record("http://example.org/missing", b"<a href=x>", "text/html", "404 Not Found")
    record("http://example.org/logo.png", b"\x89PNG\r\n\x1a\n", "image/png")
    warc = tmp_path / "site.warc.gz"
    warc.write_bytes(buffer.getvalue() + b"WARC/1.1\r\ntruncated")
    expected = rewrite_warc(warc, tmp_path / "serial")
    report = rdask.rewrite_warc_records(warc, tmp_path / "dask", client=client, window=len(page) * 3)
    assert report == dataclasses.replace(expected, out_dir=report.out_dir)
    assert tree(tmp_path / "dask") == tree(tmp_path / "serial")
    assert len(report.documents) == 13 and report.links > 0 and report.problems
    first = rdask.as_record(report.entries[0])
    assert first["url"] == "http://example.org/docs/0/" and first["file"] == "example.org/docs/0/index.html"


def test_without_dask_the_module_imports_and_each_function_names_the_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "blocked" / "dask"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('No module named dask (blocked for this test)')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker.parent), str(ROOT)])}
    check = textwrap.dedent(
        """
        import rewriter.run.dask
        try:
            rewriter.run.dask.rewrite_files(["x.html"], "out")
        except ImportError as error:
            print(type(error).__name__, error)
        """
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.stdout.strip() == (
        "DaskMissing rewriter.run.dask needs Dask and dask.distributed: pip install 'rewriter[dask]'"
    ), done.stderr
    assert not (tmp_path / "out").exists()
    # pytest --doctest-modules (the suite's addopts) collects the module and runs what needs no Dask.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "rewriter/run/dask.py"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def test_the_command_line_runs_on_dask_and_writes_what_it_writes_without(tmp_path: Path) -> None:
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    runs = {}
    for name, extra in (("serial", []), ("dask", ["--dask", "local"])):
        done = subprocess.run(
            [sys.executable, "-m", "rewriter", "rewrite", str(fixtures), "-o", str(tmp_path / name), "-q", *extra],
            capture_output=True,
            timeout=120,
        )
        assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
        runs[name] = (done.returncode, done.stderr)
        assert any((tmp_path / name).rglob("*.html"))
    assert runs["dask"] == runs["serial"]
    serial = {
        p.relative_to(tmp_path / "serial"): p.read_bytes() for p in (tmp_path / "serial").rglob("*") if p.is_file()
    }
    dask = {p.relative_to(tmp_path / "dask"): p.read_bytes() for p in (tmp_path / "dask").rglob("*") if p.is_file()}
    assert dask == serial


def test_a_link_to_a_folder_inside_the_output_is_not_followed(tmp_path: Path) -> None:
    """Glob patterns and folders alike: the output tree's own links are never written through."""
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "sub" / "page.html").write_bytes(b'<a href="x">x</a>')
    (tmp_path / "elsewhere").mkdir()
    for name, inputs in (("globbed", [str(tmp_path / "in" / "**" / "*.html")]), ("walked", [str(tmp_path / "in")])):
        out = tmp_path / name
        out.mkdir()
        (out / "sub").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
        records = rdask.rewrite_files(inputs, out, settings=Settings(url="http://h/"), scheduler="synchronous")
        assert [record["state"] for record in records] == ["failed"], records
        assert "is a symbolic link" in " ".join(map(str, records[0]["messages"]))  # type: ignore[arg-type]
        assert list((tmp_path / "elsewhere").iterdir()) == []


def test_the_local_clusters_own_error_log_stays_off_standard_error(tmp_path: Path) -> None:
    """A worker's heartbeat in flight as the cluster closes logs a traceback at ERROR; a task's
    failure or a worker's death comes back as its job's outcome, so the cluster this executor
    starts logs nothing below CRITICAL. Here a task logs such an error itself, in the worker."""
    script = textwrap.dedent(
        """
        import logging
        from rewriter.run.executors import DaskExecutor

        def planted(item):
            logging.getLogger("distributed.worker").error("planted error %s", item)
            logging.getLogger("distributed.worker").critical("planted critical %s", item)
            return item * 2

        if __name__ == "__main__":
            with DaskExecutor(workers=1) as executor:
                print(sorted(executor.map(planted, [1, 2])))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.strip() == b"[(0, 2), (1, 4)]"
    assert b"planted error" not in done.stderr
    assert b"planted critical 1" in done.stderr  # the worker's log still reaches standard error
