"""The layers (issue 21): each subpackage imports only from those below it, says its one
job, and the old import paths keep working; the facade; tests use public names only."""

from __future__ import annotations

import ast
import importlib
import pathlib
import pickle
import subprocess
import sys

import pytest

import rewriter

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rewriter"
FIXTURES = ROOT / "fixtures"

# Every module that moved (issue 21), old name > new home under rewriter.: importable for one release.
_MOVES = """
resolve>url.resolve query_encoding>url.query_encoding encoding>document.encoding engines>document.engines
links>html.table microsyntax>html.microsyntax bs4>html.bs4 lxml>html.lxml stylesheet>css.stylesheet
heading>mime.heading transfer>mime.transfer mailbox>containers.mailbox warc>containers.warc
formats>containers.formats pieces>containers.pieces pack>bundle.pack unpack>bundle.unpack
files>disk.files names>disk.names batch>run.batch pipeline>run.pipeline executors>run.executors
workers>run.workers dask>run.dask journal>run.journal report>run.report collection>run.collection
config>cli.config
"""
MOVED = {f"rewriter.{old}": f"rewriter.{new}" for old, new in (pair.split(">") for pair in _MOVES.split())}

# Bottom to top (docs/layers.md): a module may import from its own layer and those before it.
LAYERS = ["problems", "url", "disk", "policy", "document", "css", "html", "mime", "bundle", "containers", "run", "cli"]


def _layer(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def _runtime_imports(tree: ast.Module) -> list[str]:
    """The rewriter modules *tree* imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for statement in node.body for inner in ast.walk(statement))
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rewriter."):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if alias.name.startswith("rewriter."))
    return found


def test_each_layer_imports_only_from_the_layers_below_it() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        layer = _layer(path)
        if layer not in LAYERS:
            continue  # __init__ (the facade), __main__, _moved: above every layer
        for module in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            target = module.split(".")[1]
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(layer):
                upward.append(f"{path.relative_to(ROOT)} imports {module}")
    assert upward == []


@pytest.mark.parametrize("name", sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()))
def test_each_subpackage_says_its_one_job(name: str) -> None:
    module = importlib.import_module(f"rewriter.{name}")
    assert module.__doc__ and len(module.__doc__.split()) >= 20, name
    assert "\n\n" not in module.__doc__.strip().split(">>>")[0], f"{name}: one paragraph"


@pytest.mark.filterwarnings("ignore:rewriter.* is an old name:DeprecationWarning")
@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_import_path_is_the_module_at_its_new_home(old: str) -> None:
    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_old_paths_of_the_public_names_still_import() -> None:
    script = (
        "from rewriter.html import rewrite_html, find_links, HTMLResult, Link, Status, Layer\n"
        "from rewriter.batch import plan, run, Settings\n"
        "from rewriter.mailbox import rewrite_mbox\n"
        "from rewriter.mime import rewrite_message, MessageResult\n"
        "from rewriter.css import find_urls, escape_url\n"
        "from rewriter.stylesheet import rewrite_css\n"
        "from rewriter.cli import entry_point, main\n"
        "import rewriter.dask, rewriter.bs4, rewriter.lxml, rewriter.resolve\n"
        "import pickle\n"
        "assert pickle.loads(pickle.dumps(Settings())) == Settings()\n"
        "print(rewrite_html(b'<a href=x>', url='http://h/').output.decode())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "<a href=http://h/x>\n"
    # Each old name imported warns once, at the line that imports it, naming the new home
    # (rewriter.resolve is the package's own function too, and its module is loaded with it).
    warned = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    assert [line.split(":")[1] for line in warned] == ["2", "3", "6", "8", "8", "8"], done.stderr
    assert "rewriter.batch is an old name of rewriter.run.batch" in warned[0]
    assert all(line.startswith("<string>:") for line in warned), done.stderr


def test_python_m_rewriter_and_the_console_script_entry_point() -> None:
    done = subprocess.run([sys.executable, "-m", "rewriter", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and rewriter.__version__ in done.stdout
    from rewriter.cli import entry_point
    from rewriter.cli.commands import entry_point as at_home

    assert entry_point is at_home


def test_settings_pickled_under_the_new_home() -> None:
    from rewriter.run.batch import Settings
    from rewriter.run.jobs import Settings as at_home

    assert Settings is at_home  # the old home hands on the type itself
    assert pickle.loads(pickle.dumps(Settings(url="http://h/"))) == Settings(url="http://h/")
    assert Settings.__module__ == "rewriter.run.jobs"
    # A pickle made when the type lived in rewriter.run.batch still loads.
    old = pickle.dumps(Settings(url="http://h/"), protocol=0).replace(b"rewriter.run.jobs", b"rewriter.run.batch")
    assert pickle.loads(old) == Settings(url="http://h/")


def test_the_facade_is_the_engines() -> None:
    from rewriter.css.stylesheet import rewrite_css
    from rewriter.html import rewrite_html
    from rewriter.mime import rewrite_message

    page = (FIXTURES / "saved-page.html").read_bytes()
    assert rewriter.rewrite(page) == rewrite_html(page)
    assert rewriter.rewrite(FIXTURES / "saved-page.html", url="http://h/") == rewrite_html(page, url="http://h/")
    assert rewriter.find_links(page) == rewrite_html(page).links
    sheet = b"a { b: url(x.png) }"
    assert rewriter.rewrite(sheet, url="http://h/s.css") == rewrite_css(sheet, url="http://h/s.css")
    message = (FIXTURES / "mime" / "precedence-rfc822.eml").read_bytes()
    assert rewriter.rewrite(message).output == rewrite_message(message).output
    assert rewriter.find_links(message) == rewrite_message(message).links
    assert rewriter.rewrite(page.decode("utf-8"), format="html").output == rewrite_html(page.decode("utf-8")).output
    with pytest.raises(ValueError, match="many"):
        rewriter.rewrite(b"From a@b Thu Jan  1 00:00:00 2024\nFrom: a@b\nSubject: x\n\nbody\n")
    with pytest.raises(ValueError, match="headings"):
        rewriter.rewrite(message, base="http://h/")


def test_rewrite_tree_takes_soups_and_lxml_trees() -> None:
    import lxml.html
    from bs4 import BeautifulSoup

    soup = BeautifulSoup('<base href="/d/"><img src="a.png">', "html.parser")
    assert rewriter.rewrite_tree(soup, url="http://h/").base == "http://h/d/"
    assert soup.img["src"] == "http://h/d/a.png"
    tree = lxml.html.fromstring('<p><img src="a.png"></p>')
    rewriter.rewrite_tree(tree, url="http://h/")
    assert lxml.html.tostring(tree) == b'<p><img src="http://h/a.png"></p>'
    with pytest.raises(TypeError):
        rewriter.rewrite_tree("<p>")


def test_no_test_imports_a_private_name_from_rewriter() -> None:
    private = []
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rewriter":
                names = [
                    alias.name for alias in node.names if alias.name.startswith("_") and alias.name != "__version__"
                ]
                if names or any(part.startswith("_") for part in node.module.split(".")):
                    private.append(f"{path.name}: from {node.module} import {', '.join(names)}")
    assert private == []


def test_the_readmes_layout_names_every_module_where_it_is() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout") :]
    missing = []
    # rewriter/_old holds no code: the modules' old names, each handing on its new module.
    for package in sorted(p for p in PACKAGE.iterdir() if (p / "__init__.py").exists() and p.name != "_old"):
        row = next((line for line in layout.splitlines() if line.startswith(f"| `rewriter/{package.name}/`")), None)
        if row is None:
            missing.append(f"rewriter/{package.name}/")
            continue
        missing.extend(
            f"rewriter/{package.name}/{module.name}"
            for module in sorted(package.glob("*.py"))
            if module.name != "__init__.py" and f"`{module.name}`" not in row
        )
    assert missing == []


def test_importing_an_old_module_name_leaves_the_packages_function_of_that_name() -> None:
    script = "import rewriter.resolve\nimport rewriter\nprint(rewriter.resolve('http://a/b', 'c'))\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "http://a/c\n", "")


def _cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    """Each strongly connected set of more than one module (Tarjan), as a sorted tuple."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: set[tuple[str, ...]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.add(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_run_has_no_import_cycle_among_its_modules() -> None:
    # A cycle makes the order modules load in matter, and no module of it can be understood
    # (or replaced) alone: the types are jobs.py's, which imports no other module of the run.
    graph = {
        f"rewriter.run.{path.stem}": {
            module
            for module in _runtime_imports(ast.parse(path.read_text(encoding="utf-8")))
            if module.startswith("rewriter.run.")
        }
        for path in sorted((PACKAGE / "run").glob("*.py"))
    }
    assert graph["rewriter.run.jobs"] == set()
    assert _cycles(graph) == set()
    # The check sees a cycle, however far round it goes.
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}
