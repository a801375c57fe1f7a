"""rewriter: make every relative link in HTML documents and MIME messages absolute.

>>> import rewriter
>>> rewriter.resolve("http://a/b/c/d;p?q", "../g")
'http://a/b/g'
"""

from rewriter import _moved
from rewriter.url.resolve import (
    RFC1808URL,
    RULES,
    Resolver,
    UnresolvableReference,
    URIReference,
    parse,
    resolve,
)

__version__ = "0.1.0"

_moved.install()

__all__ = [
    "RFC1808URL",
    "RULES",
    "Resolver",
    "URIReference",
    "UnresolvableReference",
    "__version__",
    "parse",
    "resolve",
]
