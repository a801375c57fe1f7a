"""What the engines do where users differ: one immutable policy object, passed down.

>>> from rewriter.policy import Policy
>>> strict_rfc = Policy()
>>> browser_like = strict_rfc.clone(rules="whatwg", same_document=True)
>>> browser_like.rules, strict_rfc.rules
('whatwg', 'rfc3986')
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from rewriter.url.resolve import RULES, Rules

__all__ = [
    "DEFAULT_POLICY",
    "LAZY_ATTRIBUTES",
    "Kept",
    "Policy",
    "attribute_name_problem",
    "attribute_names",
    "copied",
]


def copied(instance: Any, **changes: Any) -> Any:
    """A copy of a frozen dataclass with slots, *changes* applied, without running its
    ``__init__`` and its checks again: for values checked already (the run makes a policy and
    settings for each of its files; ``dataclasses.replace`` spends most of its 9 us on them).

    >>> copied(Policy(), strict=True).strict
    True
    """
    kind = type(instance)
    key = (kind, *changes)
    copier = _COPIERS.get(key)
    if copier is None:
        copier = _COPIERS[key] = _copier(kind, tuple(changes))
    return copier(instance, *changes.values())


# One function for each class and set of changed fields, written out field by field: the loop
# over the slots with getattr and setattr it replaces cost 11 us a copy, twice a file of a run.
_COPIERS: dict[tuple[object, ...], Callable[..., Any]] = {}


def _copier(kind: Any, changed: tuple[str, ...]) -> Callable[..., Any]:
    slots: tuple[str, ...] = kind.__slots__
    unknown = [name for name in changed if name not in slots]
    if unknown:
        raise TypeError(f"{kind.__name__} has no field {unknown[0]!r}")
    lines = [f"def copy(instance, {', '.join(f'_{index}' for index in range(len(changed)))}):"]
    lines.append("    new = new_object(kind)")
    given = dict(zip(changed, (f"_{index}" for index in range(len(changed))), strict=True))
    for name in slots:
        lines.append(f"    set_field(new, {name!r}, {given.get(name, f'instance.{name}')})")
    lines.append("    return new")
    namespace: dict[str, Any] = {"new_object": object.__new__, "kind": kind, "set_field": object.__setattr__}
    exec("\n".join(lines), namespace)  # names from the class's own __slots__ only
    copier: Callable[..., Any] = namespace["copy"]
    return copier


# A relative reference kept as written on purpose: its status and why. "local": it names a
# file the document was saved or mirrored with; "part": it names a part of its own message
# (RFC 2557 §8, a part's relative Content-Location). Or ("rewritten", URL): it names a local
# copy that stands for URL (a mirror tool's name for it, --layout wget), which is written.
Kept = tuple[Literal["local", "part", "rewritten"], str]

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

    - ``rules``, ``strict``: the resolver's rule set (see :mod:`rewriter.url.resolve`).
    - ``same_document``: also make ``#frag`` and empty references absolute (off: they
      keep pointing into the document, the peers' most common complaint otherwise).
    - ``lazy_attributes``: ``data-*`` attributes treated as URLs (``*srcset`` ones as srcsets).
    - ``conditional_comments``: rewrite links inside ``<!--[if IE]>...<![endif]-->``.
    - ``remove_base``: drop the ``<base>`` element instead of making its href absolute.
    - ``canonical_base``: with no retrieval URL, use ``<link rel=canonical>`` or ``og:url``.
    - ``url_guessed``: the retrieval URL was inferred (from a file's place in a collection,
      ``--url-root``/``--url-map``; from the link to a frame), so a saved-from mark outranks
      it (:data:`rewriter.url.base.PRECEDENCE`).
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
      (status, reason) to keep it as written, ``("rewritten", URL)`` to write URL instead
      (the URL a local copy stands for), or None to treat it as usual. Asked before
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
    url_guessed: bool = False
    require_base: bool = False
    rewrite_signed: bool = False
    relink: Callable[[str], str | None] | None = None
    keep: Callable[[str, str | None], Kept | None] | None = None

    def __post_init__(self) -> None:
        """Every value is checked here: a bad one is a ValueError now, never an exception
        inside an engine later."""
        if not isinstance(self.rules, str) or self.rules not in RULES:
            raise ValueError(f"unknown rules {self.rules!r}: choose one of {', '.join(RULES)}")
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, not {getattr(self, name)!r}")
        for name in ("relink", "keep"):
            if getattr(self, name) is not None and not callable(getattr(self, name)):
                raise ValueError(f"{name} must be a function or None, not {getattr(self, name)!r}")
        lazy = self.lazy_attributes
        # A frozenset is checked once (a clone holds its policy's): the command line clones the
        # run's policy for each page, with its local copies, and a check is 6 us of a 9 us clone.
        checked = _checked_names(lazy) if type(lazy) is frozenset else attribute_names(lazy)
        object.__setattr__(self, "lazy_attributes", checked)

    def clone(self, **changes: Any) -> Policy:
        """A copy with *changes* applied (the CPython ``email.policy`` idiom)."""
        return dataclasses.replace(self, **changes)

    def with_keep(self, keep: Callable[[str, str | None], Kept | None]) -> Policy:
        """A copy whose ``keep`` asks this policy's own first (its answer wins), then *keep*.

        >>> mine = Policy(keep=lambda reference, resolved: ("local", "mine") if reference == "a" else None)
        >>> both = mine.with_keep(lambda reference, resolved: ("part", "theirs"))
        >>> both.keep("a", None), both.keep("b", None)
        (('local', 'mine'), ('part', 'theirs'))
        """
        if not callable(keep):
            raise ValueError(f"keep must be a function, not {keep!r}")
        first = self.keep
        if first is None:
            return copied(self, keep=keep)  # checked: nothing else changes

        def either(reference: str, resolved: str | None) -> Kept | None:
            return first(reference, resolved) or keep(reference, resolved)

        return copied(self, keep=either)


_FLAGS = (
    "strict",
    "same_document",
    "conditional_comments",
    "remove_base",
    "canonical_base",
    "url_guessed",
    "require_base",
    "rewrite_signed",
)
_ENDS_A_NAME = frozenset("\t\n\f\r />")


def attribute_name_problem(name: str) -> str | None:
    """Why no start tag can have an attribute *name*, or None when one can.

    HTML §13.2.5.32-34 (before attribute name, attribute name): a name runs to ASCII
    whitespace, "/" or ">", and to "=" after its first character; U+0000 in it is read as
    U+FFFD (§13.2.5.33) and a CR never reaches the tokenizer (§13.2.3.5, newlines). Any
    other string is a name some markup gives (``"q``, ``a{``, ``=``, control characters).

    >>> attribute_name_problem("data-src") is None, attribute_name_problem("=") is None
    (True, True)
    >>> attribute_name_problem("a b")
    "holds ' ', which ends an attribute name (HTML §13.2.5.33)"
    """
    if not name:
        return "is empty"
    for char in name:
        if char in _ENDS_A_NAME:
            return f"holds {char!r}, which ends an attribute name (HTML §13.2.5.33)"
        if char == "\0":
            return "holds U+0000, which the tokenizer reads as U+FFFD (HTML §13.2.5.33)"
        if "\ud800" <= char <= "\udfff":
            return f"holds the lone surrogate U+{ord(char):04X}, which no document's text holds"
    if "=" in name[1:]:
        return 'holds "=" after its first character, where it starts the value (HTML §13.2.5.33)'
    return None


def attribute_names(names: object) -> frozenset[str]:
    """*names* checked (:func:`attribute_name_problem`) and ASCII-lowercased, as the tokenizer
    lowercases names (§13.2.5.33); a ValueError for a bad one or for anything but a
    collection of strings (one string is not a collection of names).

    >>> sorted(attribute_names(["Data-Src", "data-É"]))
    ['data-src', 'data-É']
    """
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise ValueError(f"lazy_attributes must be a collection of attribute names, not {names!r}")
    checked: set[str] = set()
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"lazy_attributes: {name!r} is not a string")
        problem = attribute_name_problem(name)
        if problem is not None:
            raise ValueError(f"lazy_attributes: {name!r} {problem}")
        checked.add(name.lower() if name.isascii() else "".join(c.lower() if c.isascii() else c for c in name))
    return frozenset(checked)


# attribute_names of a frozenset, remembered (bounded: a caller making policies of ever new
# names keeps the last 64); a bad set raises each time, as nothing is remembered for it.
_checked_names = functools.lru_cache(maxsize=64)(attribute_names)


DEFAULT_POLICY = Policy()
