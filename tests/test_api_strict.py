"""The library as Python users meet it (issue 35): arguments checked as Python functions
check them, a path told from page text, a str given back as a str, help() that lists the
options, and no process-wide state from an import or a call."""

from __future__ import annotations

import gc
import inspect
import io
import pathlib
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import rewriter
from rewriter import Policy, find_links, rewrite, rewrite_tree

PAGE = b'<a href="x.html">x</a>'
URL = "https://example.org/d/"
REWRITTEN = b'<a href="https://example.org/d/x.html">x</a>'
FACADE: list[Callable[..., Any]] = [rewrite, find_links]


def _tree() -> Any:
    import lxml.html

    return lxml.html.fromstring(PAGE)


def _call(function: Callable[..., Any], **options: Any) -> Any:
    """*function* on the page (a tree of it for rewrite_tree) with *options*."""
    return function(_tree() if function is rewrite_tree else PAGE, **options)


# --- unknown keywords: a TypeError naming the keyword and the nearest known name -----------


@pytest.mark.parametrize("function", [*FACADE, rewrite_tree], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("keyword", "value", "near"),
    [
        ("rules", "whatwg", "policy"),  # the README's table once said "rules="
        ("base_url", URL, "url"),
        ("ur", URL, "url"),
        ("polcy", rewriter.DEFAULT_POLICY, "policy"),
        ("same_document", True, "policy"),  # a setting of the policy
    ],
)
def test_an_unknown_keyword_is_a_type_error_naming_it_and_the_nearest_name(
    function: Callable[..., Any], keyword: str, value: object, near: str
) -> None:
    with pytest.raises(TypeError) as raised:
        _call(function, **{keyword: value})
    message = str(raised.value)
    assert f"{function.__name__}() got an unexpected keyword argument {keyword!r}" in message
    assert f"did you mean {near!r}?" in message


def test_the_rules_hint_says_where_rules_are_chosen() -> None:
    with pytest.raises(TypeError, match=r"policy=Policy\(rules=\.\.\.\)"):
        rewrite(PAGE, url=URL, rules="whatwg")
    assert rewrite(PAGE, url=URL, policy=Policy(rules="whatwg")).output == REWRITTEN


@pytest.mark.parametrize("function", FACADE, ids=lambda f: f.__name__)
def test_encoding_is_pointed_to_charset(function: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match=r"'encoding' \(did you mean 'charset'\?"):
        function(PAGE, encoding="latin-1")


# --- wrong types: a TypeError naming what is accepted ---------------------------------------


@pytest.mark.parametrize("function", FACADE, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("source", "named"),
    [(123, "not int"), (None, "not NoneType"), (io.BytesIO(PAGE), "file object"), (["<a>"], "not list")],
    ids=["int", "None", "file object", "list"],
)
def test_a_source_of_the_wrong_type_is_a_type_error_naming_what_is_accepted(
    function: Callable[..., Any], source: object, named: str
) -> None:
    with pytest.raises(TypeError) as raised:
        function(source, url=URL)
    message = str(raised.value)
    assert "bytes, a str (the document's text) or a pathlib.Path" in message
    assert named in message


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_a_bytes_like_source_reads_as_its_bytes(kind: Callable[[bytes], object]) -> None:
    assert rewrite(kind(PAGE), url=URL).output == REWRITTEN
    assert find_links(kind(PAGE), url=URL) == find_links(PAGE, url=URL)


@pytest.mark.parametrize("function", [*FACADE, rewrite_tree], ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("keyword", "value", "accepted"),
    [
        ("url", URL.encode(), "url= takes a str"),
        ("base", URL.encode(), "base= takes a str"),
        ("url", 42, "url= takes a str"),
        ("policy", "whatwg", "policy= takes a rewriter.Policy"),
    ],
)
def test_an_argument_of_the_wrong_type_is_a_type_error_naming_it(
    function: Callable[..., Any], keyword: str, value: object, accepted: str
) -> None:
    with pytest.raises(TypeError, match=accepted.replace(".", r"\.")):
        _call(function, **{keyword: value})


@pytest.mark.parametrize("function", FACADE, ids=lambda f: f.__name__)
def test_charset_and_format_of_the_wrong_type(function: Callable[..., Any]) -> None:
    with pytest.raises(TypeError, match="charset= takes a str"):
        function(PAGE, charset=b"utf-8")
    with pytest.raises(TypeError, match="format= takes one of 'html'"):
        function(PAGE, format=1)


def test_rewrite_tree_on_text_says_to_parse_it_first() -> None:
    with pytest.raises(TypeError, match=r"not str: parse it first"):
        rewrite_tree(PAGE.decode())


# --- values that cannot serve: a ValueError saying why --------------------------------------


@pytest.mark.parametrize("function", [*FACADE, rewrite_tree], ids=lambda f: f.__name__)
@pytest.mark.parametrize("keyword", ["url", "base"])
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("not a url", "it has no scheme"),
        ("example.org/page", "it has no scheme"),
        ("/d/page.html", "it has no scheme"),
        ("//example.org/d/", "it has no scheme"),
        ("mailto:someone@example.org", "it is opaque"),
        ("", "it is empty"),
    ],
)
def test_a_url_that_cannot_be_a_base_is_a_value_error(
    function: Callable[..., Any], keyword: str, value: str, why: str
) -> None:
    with pytest.raises(ValueError) as raised:
        _call(function, **{keyword: value})
    assert str(raised.value).startswith(f"{keyword}={value!r} cannot serve as a base: it is not an absolute URL")
    assert f"({why})" in str(raised.value)


def test_an_absolute_url_of_any_scheme_serves() -> None:
    assert rewrite(PAGE, url="file:///srv/d/").output == b'<a href="file:///srv/d/x.html">x</a>'
    assert rewrite(PAGE, url=None).output == PAGE  # no base: links left relative, as before


@pytest.mark.parametrize("function", FACADE, ids=lambda f: f.__name__)
def test_an_unknown_charset_is_a_value_error(function: Callable[..., Any]) -> None:
    with pytest.raises(ValueError, match=r"charset='klingon': no such encoding"):
        function(PAGE, url=URL, charset="klingon")


@pytest.mark.parametrize("charset", ["latin1", "ISO-8859-1", "x-user-defined", "cp1252", " utf-8 "])
def test_a_charset_whatwg_or_python_knows_is_taken(charset: str) -> None:
    assert rewrite(PAGE, url=URL, charset=charset).output == REWRITTEN


def test_a_message_that_starts_with_from_names_format_message() -> None:
    message = b"From someone Mon Jan  1 00:00:00 2024\nSubject: x\nContent-Type: text/html\n\n<a href=x>x</a>\n"
    with pytest.raises(ValueError, match=r'format="message"'):
        rewrite(message, url=URL)
    result = rewrite(message, url=URL, format="message")
    assert isinstance(result, rewriter.MessageResult)
    assert [link.resolved for link in result.links] == [URL + "x"]


# --- a path is a path -------------------------------------------------------------------------


@pytest.mark.parametrize("function", FACADE, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "name", ["/path/page.html", "page.htm", "mail/saved.eml", "C:\\Users\\me\\page.mht", "style.css", " x.HTML "]
)
def test_a_str_that_looks_like_a_file_name_is_refused_naming_pathlib(function: Callable[..., Any], name: str) -> None:
    with pytest.raises(ValueError) as raised:
        function(name)
    assert f"{function.__name__}(pathlib.Path({name!r}))" in str(raised.value)


def test_a_str_naming_an_existing_file_is_refused(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "page").write_bytes(PAGE)
    monkeypatch.chdir(tmp_path)
    for name in (str(tmp_path / "page"), "page"):
        with pytest.raises(ValueError, match=r"pathlib\.Path"):
            rewrite(name, url=URL)
    assert rewrite(tmp_path / "page", url=URL).output == REWRITTEN  # a path is read


@pytest.mark.parametrize(
    "text",
    [
        "page.html is the name",  # words, not a file's name
        "a { b: url(x.css) }",
        "@import 'x.css';",
        "hello",  # one word, no such file
        '<a href="x.html">x.html',
        "page.html\n<p>",
    ],
)
def test_a_str_of_text_is_text(text: str) -> None:
    result = rewrite(text, url=URL, format="css" if "{" in text or "@" in text else "html")
    assert isinstance(result.text, str)


# --- str in, str out --------------------------------------------------------------------------


def test_a_str_gives_back_a_str_and_the_declared_charset_is_left_for_the_caller() -> None:
    page = '<meta charset="windows-1252"><a href="x.html">é</a>\udcff'
    result = rewrite(page, url=URL, format="html")
    assert result.text == '<meta charset="windows-1252"><a href="https://example.org/d/x.html">é</a>\udcff'
    assert result.output == result.text.encode("utf-8", "surrogatepass")  # the bytes stay UTF-8, as before


def test_text_of_bytes_in_is_decoded_from_the_documents_encoding() -> None:
    page = '<meta charset="windows-1252"><a href="x.html">é</a>'.encode("cp1252") + b"\x81"
    result = rewrite(page, url=URL)
    assert result.encoding == "windows-1252"
    assert result.text == '<meta charset="windows-1252"><a href="https://example.org/d/x.html">é</a>\udc81'
    assert result.text.encode("cp1252", "surrogateescape") == result.output
    assert rewrite("p { b: url(i.png) }", url=URL, format="css").text == "p { b: url(https://example.org/d/i.png) }"


# --- help() lists the options -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "options"),
    [
        (rewrite, ["url", "base", "charset", "policy", "format", "links"]),
        (find_links, ["url", "base", "charset", "policy", "format"]),
        (rewrite_tree, ["url", "base", "policy"]),
    ],
    ids=lambda f: getattr(f, "__name__", ""),
)
def test_help_lists_each_option_with_its_default(function: Callable[..., Any], options: list[str]) -> None:
    parameters = inspect.signature(function).parameters
    assert [name for name, p in parameters.items() if p.kind is p.KEYWORD_ONLY] == options
    assert all(parameters[name].default is not inspect.Parameter.empty for name in options)
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    if function is not find_links:  # find_links: rewrite's arguments, said once
        assert all(f":param {name}:" in (function.__doc__ or "") for name in options)


# --- no process-wide state --------------------------------------------------------------------


def test_another_threads_garbage_collector_stays_on_while_a_large_page_is_rewritten() -> None:
    row = b'<tr><td><a href="p/%d.html">x</a><img src="i/%d.png" srcset="a.png 1x, b.png 2x"></td></tr>\n'
    page = b"<html><body><table>" + b"".join(row % (i, i) for i in range(40_000)) + b"</table></body></html>"
    assert len(page) > 3_000_000
    assert gc.isenabled()
    samples: list[bool] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(gc.isenabled())
            done.wait(0.0005)

    watcher = threading.Thread(target=sample)
    watcher.start()
    try:
        for _ in range(2):
            result = rewrite(page, url=URL)
            assert result.output.count(b"https://example.org/d/") == 4 * 40_000
    finally:
        done.set()
        watcher.join()
    assert len(samples) > 20 and all(samples), f"{samples.count(False)} of {len(samples)} samples saw it off"
    assert gc.isenabled()


def test_import_rewriter_leaves_the_import_system_as_it_was() -> None:
    script = (
        "import sys\n"
        "hooks = (list(sys.meta_path), list(sys.path_hooks), list(sys.path))\n"
        "import rewriter, rewriter.html, rewriter.css, rewriter.mime\n"
        "rewriter.rewrite(b'<a href=x>', url='http://h/')\n"
        "assert (list(sys.meta_path), list(sys.path_hooks), list(sys.path)) == hooks, sys.meta_path\n"
        "import gc\n"
        "assert gc.isenabled()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_an_old_module_name_still_imports_and_warns_at_the_importing_line() -> None:
    script = (
        "import warnings\n"
        "warnings.simplefilter('always')\n"
        "import rewriter.pack\n"
        "import rewriter.run.batch\n"
        "assert rewriter.batch is rewriter.run.batch\n"
        "from rewriter.bundle import pack\n"
        "assert rewriter.pack is pack\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "DeprecationWarning" in line]
    assert lines == [
        "<string>:3: DeprecationWarning: rewriter.pack is an old name of rewriter.bundle.pack: import "
        "rewriter.bundle.pack (the old name goes in the next minor release)",
        "<string>:5: DeprecationWarning: rewriter.batch is an old name of rewriter.run.batch: import "
        "rewriter.run.batch (the old name goes in the next minor release)",
    ]


def test_a_misspelt_attribute_of_the_package_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'rewirte'"):
        rewriter.rewirte  # noqa: B018
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rewriter.resolve("http://a/b", "c") == "http://a/c"  # the function, no warning


def test_py_typed_is_in_the_package() -> None:
    assert (pathlib.Path(rewriter.__file__).parent / "py.typed").is_file()
