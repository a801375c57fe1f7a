"""Style sheets as documents of their own: a .css file, or a MIME text/css part.

The URLs are found and rewritten by exactly the rules the HTML engine applies to a
``<style>`` element (``url()``, ``src()``, ``@import`` strings, ``image-set()``
strings; new text escaped by :func:`rewriter.css.syntax.escape_url`), through the same
classification, byte mapping and splicing: only rewritten URL text changes, and every
offset is a byte offset in the input. What differs is how the encoding is found
(CSS Syntax 3 §3.2, :func:`sniff_stylesheet`) and that the base is the style sheet's
own URL, there being no ``<base>`` element.

Each :class:`~rewriter.document.model.Link` has ``element`` ``""`` (there is none),
``attribute`` ``"#stylesheet"`` and ``kind`` ``"css"``.

>>> result = rewrite_css(b'@import "print.css";\\nh1 { background: url(img/h.png) } a { b: url(#f) }',
...                      url="https://example.org/css/site.css")
>>> print(result.output.decode())
@import "https://example.org/css/print.css";
h1 { background: url(https://example.org/css/img/h.png) } a { b: url(#f) }
>>> [(link.original, link.status) for link in result.links]
[('print.css', 'rewritten'), ('img/h.png', 'rewritten'), ('#f', 'same-document')]
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rewriter.css.syntax import css_urls, escape_url
from rewriter.document.encoding import BOMS, Sniffed, by_default, encoding_named, lookup, sniffed
from rewriter.document.model import DocumentResult
from rewriter.document.process import Context, DocumentOptions, TextResult, process, require_base
from rewriter.policy import Policy
from rewriter.url.base import Layer

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["css_links", "find_css_links", "rewrite_css", "sniff_stylesheet"]

# CSS Syntax 3 §3.2 step 2: the stream begins with exactly these bytes, "@charset" and
# one space, a double-quoted label without '"' or ';', then '";', all in the first 1024
# bytes. Case, other spacing or single quotes do not count.
_CHARSET_RULE = re.compile(rb'@charset "([^";]*)";')


def sniff_stylesheet(data: bytes, transport: str | None = None) -> Sniffed:
    """The encoding of a style sheet's bytes (CSS Syntax 3 §3.2 "Determine the fallback encoding").

    Order: the byte order mark (Encoding §4 "decode": it beats every label); the
    transport charset (the protocol encoding: HTTP's or a MIME part's ``charset``);
    a leading ``@charset "label";`` (source ``"meta"``; a UTF-16 label reads as UTF-8,
    §3.2 step 2). §3.2 step 3, the referring document's "environment encoding", is not
    known here; in its place: UTF-8 (step 4) when the bytes are valid UTF-8, else
    windows-1252 (source ``"default"``). A sheet that is not UTF-8 came with a legacy
    page, windows-1252 the commonest; it reads every byte, so a URL holding non-ASCII
    bytes keeps them when it is rewritten (read as UTF-8 they would be unreadable, and
    a rewritten URL could only carry U+FFFD, as CSS cannot write a lone byte). It is
    also the HTML engine's last resort (:func:`rewriter.document.encoding.sniff`).

    >>> sniff_stylesheet(b'@charset "iso-8859-15"; a{}')
    Sniffed(codec='iso8859-15', label='iso-8859-15', bom=b'', source='meta')
    >>> sniff_stylesheet(b'@charset "iso-8859-15"; a{}', "utf-8").source
    'transport'
    >>> sniff_stylesheet(b"@charset 'iso-8859-15'; a{}").label
    'UTF-8'
    """
    for bom, name in BOMS:
        if data.startswith(bom):
            return sniffed(encoding_named(name), bom, "bom")
    if transport and (encoding := lookup(transport)) is not None:
        return sniffed(encoding, b"", "transport")
    match = _CHARSET_RULE.match(data[:1024])
    if match is not None and (encoding := lookup(match.group(1).decode("latin-1"))) is not None:
        if encoding.name in ("utf-16be", "utf-16le"):
            encoding = encoding_named("utf-8")  # §3.2 step 2: the bytes read were ASCII, so not UTF-16
        return sniffed(encoding, b"", "meta")
    return by_default(data)


def css_links(
    source: str,
    shift: int,
    element: str,
    attribute: str,
    context: Context,
    result: TextResult,
    *,
    in_style_element: bool,
    foreign: bool = False,
) -> None:
    """Record the URLs of a style sheet's text that starts at *shift* (a ``<style>`` element's,
    or a whole .css file's) in *result*, with the edits that write each new one."""
    for url in css_urls(source):
        start, end = shift + url.start, shift + url.end
        resolved = result.record(context, element, attribute, "css", url.value, start, end)
        if resolved is not None:
            new = escape_url(resolved, url.quote, in_style_element=in_style_element)
            if foreign:
                new = new.replace("&", "&amp;")  # SVG <style> is markup: "&" would start a reference
            result.edits.append((start, end, new))


def _rewrite_stylesheet_text(
    text: str,
    fallback: str | None,
    fallback_layer: Layer | None,
    policy: Policy,
    *_codec_and_readable: object,
    lean: bool = False,
) -> TextResult:
    """The text engine for a whole style sheet: its base is the one handed down (RFC 1808 §3.2)
    or its own URL (§3.3). The codec the pipeline passes is not used: CSS parses every URL, query included, as
    UTF-8 whatever the sheet's encoding (CSSWG resolution, w3c/csswg-drafts#9301)."""
    context = Context(fallback, fallback_layer, policy, "utf-8")
    result = TextResult(base=fallback, layer=fallback_layer, counts={} if lean else None)
    # Not in an HTML <style> element: "<" needs no escaping, "&" is no reference.
    css_links(text, 0, "", "#stylesheet", context, result, in_style_element=False)
    require_base(policy, result)
    return result


def rewrite_css(document: bytes | str, *, links: bool = True, **options: Unpack[DocumentOptions]) -> DocumentResult:
    """Make every relative URL of a style sheet absolute, changing no other byte.

    *options* (:class:`~rewriter.document.process.DocumentOptions`): *url* is the sheet's
    retrieval URL (RFC 1808 §3.3), *base* a base handed down by an enclosing entity (§3.2,
    e.g. a MIME part's), which takes precedence; *charset* a transport charset
    (:func:`sniff_stylesheet`). The output is bytes in the sheet's own
    encoding; a ``str`` sheet is taken as decoded and comes back as UTF-8. Without a
    base, relative URLs stay as they are and are reported ``"no-base"``
    (``policy.require_base``: :class:`~rewriter.document.model.NoBaseError`). *links* False:
    the caller asks for no links, and the engine keeps no record for each (see
    :func:`~rewriter.document.process.process`).

    >>> rewrite_css("a { background: url('b c.png') }", url="http://h/s/x.css").output
    b"a { background: url('http://h/s/b c.png') }"
    >>> [link.status for link in rewrite_css(b"@import url(x.css);").links]
    ['no-base']
    """
    return process(
        document, rewrite=True, engine=_rewrite_stylesheet_text, sniffer=sniff_stylesheet, links=links, **options
    )


def find_css_links(document: bytes | str, **options: Unpack[DocumentOptions]) -> DocumentResult:
    """Every URL of a style sheet, resolved, without rewriting (``output`` is the input).

    >>> link, = find_css_links(b"p { b: url(i.png) }", url="http://h/a.css").links
    >>> link.element, link.attribute, link.kind, link.resolved, link.start, link.end
    ('', '#stylesheet', 'css', 'http://h/i.png', 11, 16)
    """
    return process(document, rewrite=False, engine=_rewrite_stylesheet_text, sniffer=sniff_stylesheet, **options)
