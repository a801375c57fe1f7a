"""A mirror made by HTTrack itself, rewritten with ``--url-root auto --layout httrack``, compared link
by link with the site that was mirrored (the site and the comparison of tests/test_wget_mirrors.py).

HTTrack names the copy of a URL with a query after a hash of the query (``casts95f9.html`` for
``casts.html?from=query``), keeps the query in the links it writes (``casts95f9.html?from=query``),
replaces characters such as ``:`` (``docs/x_y.html``), writes ``host_port`` folders, and puts
``<!-- Mirrored from HOST/PATH by HTTrack Website Copier/... -->`` into every page. The layout reads a
page's URL from that mark, and a reference naming a style sheet or an image whose name holds its
query's hash back to ``NAME.EXT?QUERY``. Without /usr/bin/httrack these tests skip (CI's .ci/run
installs it).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_wget_mirrors import compare_link_by_link, rewrite, server

HTTRACK = Path("/usr/bin/httrack")
__all__ = ["server"]  # the fixture: the site on 127.0.0.1
pytestmark = [
    pytest.mark.skipif(
        not HTTRACK.exists(), reason=f"{HTTRACK} is absent: the mirror these tests rewrite is made by HTTrack itself"
    ),
    pytest.mark.slow,  # HTTrack mirrors the site first: about 12 s, a twentieth of the README's test command
]


@pytest.fixture(scope="module")
def mirror(server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """(top folder, host folder, root URL) of the site mirrored by HTTrack."""
    top = tmp_path_factory.mktemp("httrack")
    done = subprocess.run(
        [str(HTTRACK), server, "-O", str(top / "m"), "-q", "-s0", "-%v0", "-c1", "-I0", "-%I0"],
        env={"LC_ALL": "C.UTF-8", "PATH": "/usr/bin:/bin", "HOME": str(top)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    hosts = [path for path in (top / "m").iterdir() if path.is_dir() and not path.name.startswith("hts-")]
    assert len(hosts) == 1 and hosts[0].name.endswith("_" + server.rsplit(":", 1)[1].strip("/")), hosts
    assert (hosts[0] / "casts95f9.html").is_file() and (hosts[0] / "style30f4.css").is_file()  # hashed names
    yield top / "m", hosts[0], server
    shutil.rmtree(top, ignore_errors=True)


def test_httrack_mirror_rewritten_link_by_link(mirror: tuple[Path, Path, str], tmp_path: Path) -> None:
    top, host, root = mirror
    output, report = tmp_path / "out", tmp_path / "links.jsonl"
    rewrite(top, "-o", f"{output}/", "--url-root", "auto", "--layout", "httrack", "--report", report)
    # A page's URL comes from its mark; a style sheet's from its name, whose folder is the right one.
    compare_link_by_link(output / host.name, host, root, report, bases_of="html")


def test_without_the_layout_httracks_names_are_wrong(mirror: tuple[Path, Path, str], tmp_path: Path) -> None:
    """What the layout mends: with --url-root alone, links name HTTrack's hashed files."""
    top, host, root = mirror
    rewrite(top, "-o", f"{tmp_path}/out/", "--url-root", "auto")
    index = (tmp_path / "out" / host.name / "index.html").read_text(encoding="utf-8")
    assert "casts95f9.html?from=query" in index and f'href="{root}casts.html?from=query"' not in index
