"""The HTML engine on arbitrary input: it never raises, and its output is stable."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewriter.html import find_links, rewrite_html, start_tags
from rewriter.policy import Policy

_PIECES = [
    "<a href=",
    "<img srcset='",
    "<base href=",
    "<meta http-equiv=refresh content='0;url=",
    "<style>",
    "</style>",
    "url(",
    "@import '",
    "<svg>",
    "</svg>",
    "<template>",
    "<noscript>",
    "<!--",
    "-->",
    "<!--[if IE]>",
    "<![endif]-->",
    "<script>",
    "</script>",
    "<iframe srcdoc='",
    "&amp;",
    "&#x",
    '"',
    "'",
    ">",
    " ",
    "\r\n",
    "\r",
    "\x00",
    "x",
    "../",
    "#",
    "?",
    ",",
    "é",
    "\ud800",
    "<p>",
    "<b>",
    "http://",
    "javascript:",
    "<meta charset=utf-16>",
    "<meta charset=shift_jis>",
]
_markup = st.lists(st.sampled_from(_PIECES), max_size=40).map("".join)
_documents = st.one_of(
    st.binary(max_size=300),
    _markup.map(lambda text: text.encode("utf-8", "surrogatepass")),
    _markup.map(lambda text: text.encode("utf-16", "surrogatepass")),
)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(document=_documents, rules=st.sampled_from(["rfc3986", "whatwg", "rfc1808"]))
def test_never_raises_and_is_idempotent(document: bytes, rules: str) -> None:
    policy = Policy(rules=rules)  # type: ignore[arg-type]
    result = rewrite_html(document, url="http://h/dir/page.html", policy=policy)
    assert isinstance(result.output, bytes)
    for link in result.links:
        assert 0 <= link.start <= link.end <= len(document)
    again = rewrite_html(result.output, url="http://h/dir/page.html", policy=policy)
    assert again.output == result.output
    find_links(document)
    start_tags(document)
