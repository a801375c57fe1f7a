"""What the engines do where users differ: one immutable policy object, passed down.

>>> from rewriter.policy import Policy
>>> strict_rfc = Policy()
>>> browser_like = strict_rfc.clone(rules="whatwg", same_document=True)
>>> browser_like.rules, strict_rfc.rules
('whatwg', 'rfc3986')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rewriter.resolve import RULES, Rules

__all__ = ["DEFAULT_POLICY", "LAZY_ATTRIBUTES", "Kept", "Policy"]

# A relative reference kept as written on purpose: its status and why. "local": it names a
# file the document was saved or mirrored with; "part": it names a part of its own message
# (RFC 2557 §8, a part's relative Content-Location).
Kept = tuple[Literal["local", "part"], str]

# Attributes lazy-loading scripts copy into src/srcset; they hold URLs (or srcsets).
LAZY_ATTRIBUTES: frozenset[str] = frozenset(
    {
        "data-src",
        "data-srcset",
        "data-original",
        "data-original-src",
        "data-lazy-src",
        "data-lazy-srcset",
        "data-hi-res-src",
        "data-background-image",
        "data-bg",
    }
)


@dataclass(frozen=True, slots=True)
class Policy:
    """How to rewrite. Every field has the default a careful archivist would choose.

    - ``rules``, ``strict``: the resolver's rule set (see :mod:`rewriter.resolve`).
    - ``same_document``: also make ``#frag`` and empty references absolute (off: they
      keep pointing into the document, the peers' most common complaint otherwise).
    - ``lazy_attributes``: ``data-*`` attributes treated as URLs (``*srcset`` ones as srcsets).
    - ``conditional_comments``: rewrite links inside ``<!--[if IE]>...<![endif]-->``.
    - ``remove_base``: drop the ``<base>`` element instead of making its href absolute.
    - ``canonical_base``: with no retrieval URL, use ``<link rel=canonical>`` or ``og:url``.
    - ``require_base``: a document with relative links and no base is an error
      (otherwise its relative links stay as they are and are reported).
    - ``rewrite_signed``: also rewrite inside multipart/signed and application/pkcs7-mime
      entities (off: they are left byte for byte, and reported, since any change breaks
      the signature).
    - ``relink``: for bundles. Given each link's absolute URL (a reference with no base:
      the reference itself), return what to write instead (a local file's path, a
      ``data:`` URL), or None to treat the link as usual. ``#fragment`` is passed with it.
    - ``keep``: given a relative reference (as written, surrounding whitespace left out) and
      what it resolves to (None with no base, or when it cannot be resolved), return
      (status, reason) to keep it as written, or None to treat it as usual. Asked before
      ``relink``. The command line keeps a saved page's local copies with it (``local``);
      the MIME engine, references to parts of the message (``part``).
    """

    rules: Rules = "rfc3986"
    strict: bool = True
    same_document: bool = False
    lazy_attributes: frozenset[str] = LAZY_ATTRIBUTES
    conditional_comments: bool = True
    remove_base: bool = False
    canonical_base: bool = False
    require_base: bool = False
    rewrite_signed: bool = False
    relink: Callable[[str], str | None] | None = None
    keep: Callable[[str, str | None], Kept | None] | None = None

    def __post_init__(self) -> None:
        if self.rules not in RULES:
            raise ValueError(f"unknown rules {self.rules!r}: choose one of {', '.join(RULES)}")
        object.__setattr__(self, "lazy_attributes", frozenset(name.lower() for name in self.lazy_attributes))

    def clone(self, **changes: object) -> Policy:
        """A copy with *changes* applied (the CPython ``email.policy`` idiom)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def with_keep(self, keep: Callable[[str, str | None], Kept | None]) -> Policy:
        """A copy whose ``keep`` asks this policy's own first (its answer wins), then *keep*.

        >>> mine = Policy(keep=lambda reference, resolved: ("local", "mine") if reference == "a" else None)
        >>> both = mine.with_keep(lambda reference, resolved: ("part", "theirs"))
        >>> both.keep("a", None), both.keep("b", None)
        (('local', 'mine'), ('part', 'theirs'))
        """
        first = self.keep
        if first is None:
            return self.clone(keep=keep)

        def either(reference: str, resolved: str | None) -> Kept | None:
            return first(reference, resolved) or keep(reference, resolved)

        return self.clone(keep=either)


DEFAULT_POLICY = Policy()
