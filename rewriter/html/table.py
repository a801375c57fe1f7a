"""Which attribute of which element holds which kind of URL: a table, not a chain of ifs.

Sources: the HTML attribute index (current and obsolete features), and the coverage
table of ../shared/research/html-link-rewriters.md §9 (lxml, pywb, wget and others).

>>> kind_of("html", "img", "srcset")
'srcset'
>>> kind_of("svg", "use", "xlink:href")
'url'
>>> kind_of("html", "div", "title") is None
True
"""

from __future__ import annotations

from functools import lru_cache

from rewriter.document.model import Kind

__all__ = [
    "CODEBASE_RELATIVE",
    "CONDITIONAL",
    "GENERAL_PATH_ELEMENTS",
    "Kind",
    "attributes_of",
    "css_identifier",
    "is_plain_url",
    "kind_of",
    "selector",
]

# URL attributes on any HTML element. Like lxml's iterlinks, the attribute name alone
# decides, so custom elements (amp-img src, amp-iframe src) are covered too.
_HTML_ANY: dict[str, Kind] = {
    "href": "url",
    "src": "url",
    "action": "url",
    "formaction": "url",
    "cite": "url",
    "poster": "url",
    "background": "url",
    "longdesc": "url",
    "lowsrc": "url",
    "dynsrc": "url",
    "itemid": "url",
    "srcset": "srcset",
    "imagesrcset": "srcset",
    "ping": "urls",
    "style": "css",
}

# Attributes that are URLs only on some elements.
_HTML_BY_ELEMENT: dict[tuple[str, str], Kind] = {
    ("object", "data"): "url",
    ("object", "classid"): "url",
    ("object", "codebase"): "url",
    ("object", "archive"): "urls",
    ("applet", "codebase"): "url",
    ("applet", "code"): "url",
    ("applet", "archive"): "comma-urls",
    ("html", "manifest"): "url",
    ("head", "profile"): "urls",
    ("command", "icon"): "url",
    ("menuitem", "icon"): "url",
    ("img", "usemap"): "url",  # only when not "#name" (the engine checks)
    ("input", "usemap"): "url",
    ("object", "usemap"): "url",
    ("param", "value"): "url",  # only with valuetype=ref (the engine checks)
    ("meta", "content"): "refresh",  # only with http-equiv=refresh (the engine checks)
    ("iframe", "srcdoc"): "srcdoc",
}

# SVG and MathML: href and xlink:href on any element (SVG 2 §5.6, MathML 3 §2.1.6).
_FOREIGN_ANY: dict[str, Kind] = {"href": "url", "xlink:href": "url", "style": "css"}

# HTML 4.01 §13.3: classid, data and archive of object, and code and archive of
# applet, are relative to codebase, itself relative to the document's base.
CODEBASE_RELATIVE: frozenset[tuple[str, str]] = frozenset(
    {
        ("object", "classid"),
        ("object", "data"),
        ("object", "archive"),
        ("applet", "code"),
        ("applet", "archive"),
    }
)

# Entries that hold only under a condition on the element (the engine checks them).
CONDITIONAL: frozenset[tuple[str, str]] = frozenset(
    {("meta", "content"), ("img", "usemap"), ("input", "usemap"), ("object", "usemap"), ("param", "value")}
)

# Every attribute name the tables mention, for a quick first filter.
ATTRIBUTE_NAMES: frozenset[str] = frozenset(_HTML_ANY) | {a for _, a in _HTML_BY_ELEMENT} | frozenset(_FOREIGN_ANY)


def kind_of(namespace: str, element: str, attribute: str, lazy: frozenset[str] = frozenset()) -> Kind | None:
    """The kind of URL *attribute* holds on *element* in *namespace* ("html", "svg", "math")."""
    if namespace != "html":
        return _FOREIGN_ANY.get(attribute)
    kind = _HTML_BY_ELEMENT.get((element, attribute)) or _HTML_ANY.get(attribute)
    if kind is None and attribute in lazy:
        kind = "srcset" if attribute.endswith("srcset") else "url"
    return kind


# Element names longer than this are no element of any table: their answer is not kept, so
# that a page of megabyte-long names cannot fill the cache with them.
CACHED_NAME_LENGTH = 64


# Elements whose links need more than their attribute values (a <style>'s text; an <object>'s
# or <applet>'s codebase): both engines read them on their general path, never the plain one.
GENERAL_PATH_ELEMENTS: frozenset[str] = frozenset({"style", "object", "applet"})


def is_plain_url(element: str, attribute: str, kind: Kind) -> bool:
    """Whether *attribute* of *element* (of *kind*) holds one URL, whitespace around it aside,
    under no condition of the element's: the values both engines read on their fast paths
    (the bytes engine's ``plain_links``, the trees' plain attributes).

    >>> is_plain_url("a", "href", "url"), is_plain_url("img", "usemap", "url"), is_plain_url("img", "srcset", "srcset")
    (True, False, False)
    """
    return kind == "url" and (element, attribute) not in CONDITIONAL


def attributes_of(namespace: str, element: str, lazy: frozenset[str] = frozenset()) -> dict[str, Kind]:
    """Every URL attribute of *element* in *namespace*, with its kind (the table, per element).

    >>> attributes_of("html", "object")["archive"]
    'urls'
    """
    if len(element) > CACHED_NAME_LENGTH:
        return _attributes_of(namespace, element, lazy)
    return cached_attributes_of(namespace, element, lazy)


def _attributes_of(namespace: str, element: str, lazy: frozenset[str]) -> dict[str, Kind]:
    names = ATTRIBUTE_NAMES | lazy
    return {name: kind for name in names if (kind := kind_of(namespace, element, name, lazy)) is not None}


cached_attributes_of = lru_cache(maxsize=4096)(_attributes_of)


# What an element must have for an entry that holds only under a condition: the
# engine checks the condition itself.
_CONDITION_ATTRIBUTES = {("meta", "content"): "http-equiv", ("param", "value"): "valuetype"}


def css_identifier(name: str) -> str:
    """*name* as a CSS identifier that means it exactly: CSSOM §2.1 "serialize an identifier"
    (what ``CSS.escape`` does). A policy's attribute names go into a selector through it, so
    ``"``, ``{``, ``=``, ``:`` or a control character in one is a name, never syntax.

    >>> css_identifier("xlink:href"), css_identifier('a{"'), css_identifier("1a"), css_identifier("-")
    ('xlink\\\\:href', 'a\\\\{\\\\"', '\\\\31 a', '\\\\-')
    """
    out: list[str] = []
    for index, char in enumerate(name):
        if char == "\0":
            out.append("\ufffd")
        elif (
            "\x01" <= char <= "\x1f"
            or char == "\x7f"
            or (char.isdigit() and char.isascii() and (index == 0 or (index == 1 and name[0] == "-")))
        ):
            out.append(f"\\{ord(char):x} ")
        elif index == 0 and char == "-" and len(name) == 1:
            out.append("\\-")
        elif char >= "\x80" or char in "-_" or (char.isascii() and char.isalnum()):
            out.append(char)
        else:
            out.append("\\" + char)
    return "".join(out)


@lru_cache(maxsize=64)
def selector(lazy: frozenset[str] = frozenset()) -> str:
    """One CSS selector for every element that may hold a link, generated from the tables.

    It lets the parser's C selector engine pick the elements worth a look, so the Python
    side never visits the many elements with no URL attribute. It only narrows: each
    alternative costs the engine a test per element, so it names attributes, never an
    element or a value (the engine checks which element has which attribute, the
    conditions, and whether a style attribute holds a URL), and ``style`` elements.

    >>> '[http-equiv]' in selector() and '[usemap]' in selector() and '[data-src]' not in selector()
    True
    """
    names = set(_HTML_ANY) | set(_FOREIGN_ANY) | lazy
    for element, name in _HTML_BY_ELEMENT:
        names.add(_CONDITION_ATTRIBUTES.get((element, name), name))
    parts = [f"[{css_identifier(name)}]" for name in sorted(names)]
    parts.append("style")  # <style> elements, for their text
    return ",".join(parts)
