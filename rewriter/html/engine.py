"""The HTML engine: find every URL in a document, resolve it through the base layers,
and splice the absolute form into the original bytes, changing no other byte.

One primitive, :func:`rewrite_text`, finds every link site once (like lxml's
``iterlinks``) and the edits for it; :func:`rewrite_html` and :func:`find_links` are
thin layers on it.

The document is parsed by turbohtml (WHATWG tree construction, scripting on, as browsers
run: ``<noscript>`` is raw text; its text is read again as a browser with scripting off
reads it, see :func:`_noscript_links`). The tree
says what each tag is (its namespace, whether it is in ``<template>`` content) and
where its start tag begins; a tokenizer-exact scan of that one tag gives the byte
span of each attribute value. Nothing is re-serialised.

This module chooses a document's base and reads the documents inside it (``<noscript>``
text, conditional comments, ``srcdoc``); its other jobs have modules of their own: the
parsed document (:mod:`rewriter.html.parsed`), where the conditional comments are
(:mod:`rewriter.html.comments`), the loop over the elements (:mod:`rewriter.html.elements`)
and the writer of one attribute's links (:mod:`rewriter.html.attributes`).

>>> result = rewrite_html(b'<base href="/docs/"><a href="guide.html#s">x</a><a href="#top">t</a>',
...                       url="https://example.org/index.html")
>>> result.output
b'<base href="https://example.org/docs/"><a href="https://example.org/docs/guide.html#s">x</a><a href="#top">t</a>'
>>> [(link.attribute, link.status) for link in result.links]
[('href', 'rewritten'), ('href', 'rewritten'), ('href', 'same-document')]
"""

from __future__ import annotations

import bisect
import re
from collections import deque
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING

from rewriter.document.encoding import decode_checked, sniff
from rewriter.document.model import DocumentResult, Link, NoBaseError, Status
from rewriter.document.process import (
    RELATIVE_BASE,
    Context,
    DocumentOptions,
    TextResult,
    frozen_base,
    process,
    require_base,
    shifted,
    spliced,
)
from rewriter.html.attributes import raw_offset
from rewriter.html.comments import (
    CONDITIONAL_END,
    CONDITIONAL_HEAD,
    START_TAG_TOKEN,
    comment_data,
    comment_offsets,
    conditional_head,
)
from rewriter.html.comments import (
    conditional_spans as conditional_spans,  # this module's before it was split, as the ones below
)
from rewriter.html.elements import element_links, elements_links
from rewriter.html.links import Site, ViewElement
from rewriter.html.microsyntax import decode_attribute, strip_whitespace
from rewriter.html.parsed import HTML, NAMESPACE_NAMES, ParsedDocument, is_inert, tag_name_at
from rewriter.html.parsed import flattened as flattened
from rewriter.html.parsed import for_parser as for_parser
from rewriter.html.parsed import starts_of_lines as starts_of_lines
from rewriter.html.tags import QUOTE_OF_VALUE_GROUP as QUOTE_OF_VALUE_GROUP
from rewriter.html.tags import ascii_lower, end_tag
from rewriter.html.tags import attribute_value_pattern as attribute_value_pattern
from rewriter.html.turbo import core as turbohtml
from rewriter.policy import Policy
from rewriter.problems import Problem
from rewriter.url.base import Base, Candidates, Layer, chain, from_fallback, usable_as_base
from rewriter.url.resolve import parse

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ByteView",
    "HTMLResult",
    "Layer",
    "Link",
    "NoBaseError",
    "Status",
    "conditional_spans",
    "find_links",
    "rewrite_html",
    "rewrite_text",
    "saved_from",
    "saved_from_mark",
    "start_tags",
]

# The result's older name: a style sheet gives the same type.
HTMLResult = DocumentResult

_SAVED_FROM = re.compile(r"<!--\s*saved from url=\((\d{4})\)")
# HTTrack's mark, written after <html> in each page it mirrors: "<!-- Mirrored from HOST/PATH by HTTrack
# Website Copier/3.x [XR&CO'2014], DATE -->". It drops "http://" and keeps any other scheme.
_OPAQUE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?![0-9])")
_MIRRORED_FROM = re.compile(r"<!--\s*Mirrored from ([^\s<>]+) by HTTrack Website Copier/")


def rewrite_text(
    text: str,
    fallback: str | None,
    fallback_layer: Layer | None,
    policy: Policy,
    codec: str = "utf-8",
    readable: bool = False,
    *,
    base_elements: bool = True,
    context: Context | None = None,
    in_noscript: bool = False,
    lean: bool = False,
) -> TextResult:
    """Find and resolve every link of one document's text; the edits are text spans.

    *readable*: the text was decoded without an unreadable byte, so it holds no lone
    surrogate. Without *base_elements*, a ``<base>`` in the text is a link like others,
    never the base (conditional comments: markup only old IE read). A *context* given
    is the text's base as it is (the enclosing document's, whose references are
    classified once for all its conditional comments): no base is looked for.
    *in_noscript*: the text is itself inside a ``<noscript>`` (a srcdoc there). *lean*: a
    lean result (:class:`~rewriter.document.process.TextResult`), unless the page's two
    readings differ (:func:`_left_where_readings_differ` changes links by where they are:
    then the text is read again, each link a record).
    """
    document = ParsedDocument(text, readable)
    result = TextResult.lean() if lean else TextResult()
    if context is not None:
        result.base, result.layer = context.base, context.layer
        _document_links(document, None, context, result)
        if lean and document.diverges_at is not None:
            return rewrite_text(text, fallback, fallback_layer, policy, codec, readable, context=context)
        _left_where_readings_differ(document, result)
        require_base(policy, result)
        return result

    candidates = _offered(document, from_fallback(fallback, fallback_layer, url_guessed=policy.url_guessed), policy)
    below = chain(candidates)  # what a <base href> is resolved against
    fallback_context = Context(below.url if below else None, below.layer if below else None, policy, codec, in_noscript)
    base_element, frozen, usable_base = None, None, False  # the first one that counts, usable or not
    if base_elements:
        base_element, frozen, usable_base = _first_base_element(document, fallback_context, result)
    chosen = chain(candidates.offering(base_element=frozen)) if frozen is not None else below
    base, layer = (chosen.url, chosen.layer) if chosen is not None else (None, None)
    # No <base> chose another: the fallback's context is this one (its base parsed once a page).
    context = fallback_context if chosen is below else Context(base, layer, policy, codec, in_noscript)
    result.base, result.layer = base, layer

    _document_links(document, base_element, context, result)
    if lean and document.diverges_at is not None:
        return rewrite_text(
            text,
            fallback,
            fallback_layer,
            policy,
            codec,
            readable,
            base_elements=base_elements,
            in_noscript=in_noscript,
        )
    if base_element is not None and usable_base:
        _base_element(document, base_element, fallback_context, result)
    _left_where_readings_differ(document, result)
    require_base(policy, result)
    return result


def _offered(document: ParsedDocument, candidates: Candidates, policy: Policy) -> Candidates:
    """*candidates* with what the document offers below its <base>: the saved-from mark and,
    with ``Policy.canonical_base``, the canonical URL; each looked for only when it could win."""
    if not candidates.outranked("saved_from") and (mark := saved_from(document.text)) is not None:
        candidates = candidates.offering(saved_from=Base(mark, "saved-from-mark"))
    if policy.canonical_base and not candidates.outranked("canonical"):
        canonical = _canonical(document)
        if canonical is not None:
            candidates = candidates.offering(canonical=Base(canonical, "canonical"))
    return candidates


def _first_base_element(
    document: ParsedDocument, fallback: Context, result: TextResult
) -> tuple[turbohtml.Element | None, Base | None, bool]:
    """RFC 1808 §3.1 / HTML "document base URL": the first base element with an href, in
    tree order, in the HTML namespace, not in template content (the tree is the scripting
    one, where a <base> in a <noscript> is text): (it, the base it gives, whether usable)."""
    document.selected(fallback.policy.lazy_attributes)  # the one query, which named() reads
    for candidate in document.named("base"):
        if candidate.namespace != HTML or "href" not in candidate.attrs or is_inert(candidate):
            continue  # the first <base href> of the tree (HTML §4.2.3); a named() has a position
        href = document.attribute_value(candidate, "href") or ""
        start, end = strip_whitespace(href, 0, len(href))
        frozen, problem = frozen_base(href[start:end], fallback)
        if problem is not None:
            # Left exactly as it is: rewritten, a disguised javascript: base could become
            # a usable http: one that the page never had.
            code = "base-relative" if problem is RELATIVE_BASE else "base-ignored"
            result.problems.append(Problem(code, f"<base href={href!r}> ignored: {problem}"))
        return candidate, Base(frozen, "base-element") if frozen is not None else None, problem is None
    return None, None, False


def _document_links(
    document: ParsedDocument,
    base_element: turbohtml.Element | None,
    context: Context,
    result: TextResult,
) -> None:
    """Every link of *document* but its base element's: the elements of the scripting
    tree, each <noscript>'s text as markup (:func:`_noscript_links`), and the markup of
    conditional comments."""
    lazy = context.policy.lazy_attributes
    elements_links(document, document.selected(lazy), base_element, context, result)
    _noscript_links(document, context, result)
    if context.policy.conditional_comments:
        _conditional_comments(document, context, result)


def _noscript_links(document: ParsedDocument, context: Context, result: TextResult) -> None:
    """The links in each <noscript>, as a browser with scripting off reads its text.

    Both readings must hold (HTML §13.2.6.4.7 "noscript", scripting on and off): with
    scripting off the text is markup, so each new value is escaped for its attribute as
    anywhere; with scripting on it is raw text that ends at the first ``</noscript``, so
    no new value holds a "<" (the context percent-encodes it). Each range's edits are
    checked against that end before they are kept.
    """
    starts, ends = document.noscript_ranges()
    if not starts:
        return
    inner_context = context.inside_noscript()
    text = document.text
    for start, end in zip(starts, ends, strict=True):
        if start >= end:
            continue
        fragment = ParsedDocument(text[start:end], noscript_fragment=True)
        inner = result.inner()
        _document_links(fragment, None, inner_context, inner)
        if inner.all_edits():
            written = spliced(fragment.text, inner.edits)
            if end_tag(written, "noscript", 0) != len(written):
                # Never reached while no new value holds "<"; kept as the last guard.
                result.problems.append(
                    Problem("left-as-is", f"links in the <noscript> at character {start} were left as they are")
                )
                inner.edits.clear()
        result.take(inner, partial(shifted, offsets=None, shift=start))
        result.edits.extend((edit_start + start, edit_end + start, new) for edit_start, edit_end, new in inner.edits)
        result.problems.extend(problem.at("in <noscript>") for problem in inner.problems)
        if document.diverges_at is None and not _reads_on_alike(fragment):
            document.diverges_at = end


# Start tags that leave a scripting-off reader where a later <style> or <title> would not
# open raw text (in <select>, a frameset), or a CDATA section that may run on.
_DIVERGING = re.compile(r"<(?:[sS][eE][lL][eE][cC][tT]|[fF][rR][aA][mM][eE][sS][eE][tT])[\t\n\f\r />]|<!\[CDATA\[")
_SENTINEL = "<rewriter-sentinel>"


def _reads_on_alike(fragment: ParsedDocument) -> bool:
    """Whether, after this <noscript>'s text, a browser with scripting off reads on as one
    with scripting on does: from the data state, not inside a tag, a comment or raw text
    the text opened (``<noscript><style></noscript>``). Told by tokenizing the text with a
    start tag after it, which must come out as that tag, just where it was put."""
    text = fragment.parser_text
    if _DIVERGING.search(text) is not None:
        return False
    tokens = deque(turbohtml.tokenize(text + _SENTINEL, capture_attributes=False), maxlen=1)  # the last only
    last = tokens[0] if tokens else None
    return last is not None and last.type is START_TAG_TOKEN and last.tag == _SENTINEL[1:-1] and last.col == len(text)


def _left_where_readings_differ(document: ParsedDocument, result: TextResult) -> None:
    """After a <noscript> that a browser with scripting off reads on from elsewhere than one
    with scripting on (it opened a tag, a comment or raw text that runs past its end), the
    two readings of the page differ: what is a link to one is text to the other. Nothing
    there is rewritten (a new value would change the other reading's text, or end it);
    each such link is reported, with the reason."""
    at = document.diverges_at
    if at is None:
        return
    reason = (
        f"left as it is: after the <noscript> that ends at character {at}, a browser with scripting off "
        "reads the page differently from one with scripting on"
    )
    result.edits = [edit for edit in result.all_edits() if edit[0] < at]
    for index, found in enumerate(result.found):
        if found.start >= at and found.status in ("rewritten", "relinked"):
            result.found[index] = found._replace(resolved=None, status="unresolvable", reason=reason)
    result.problems.append(Problem("left-as-is", reason.replace("left as it is", "links were left as they are")))


def saved_from_mark(document: bytes | str) -> str | None:
    """The URL of a browser's ``<!-- saved from url=(NNNN)URL -->`` mark near the start of
    *document* (an ASCII mark, as browsers write it), when it is one a link can be resolved against.

    >>> saved_from_mark(b"<!-- saved from url=(0023)https://o.test/x/y.html -->\\n<p>")
    'https://o.test/x/y.html'
    """
    head = document[:4096]
    return saved_from(head.decode("latin-1") if isinstance(head, bytes) else head)


def saved_from(text: str) -> str | None:
    """The retrieval URL in a browser's ``<!-- saved from url=(NNNN)URL -->`` mark, or else in
    HTTrack's ``<!-- Mirrored from HOST/PATH by HTTrack Website Copier/... -->`` (over http
    when it names no scheme, as HTTrack writes an http URL): where that very page came from.

    >>> saved_from("<html><!-- Mirrored from o.test/a/b.html by HTTrack Website Copier/3.x [XR&CO'2014] -->")
    'http://o.test/a/b.html'
    """
    match = _SAVED_FROM.search(text, 0, 4096)
    if match is not None:
        url = text[match.end() : match.end() + int(match.group(1))].strip()
    elif (match := _MIRRORED_FROM.search(text, 0, 4096)) is not None:
        url = match.group(1)
        if "://" not in url:
            if _OPAQUE.match(url):  # about:blank and the like: no page's URL
                return None
            url = "http://" + url  # a host, or a host and its port
    else:
        return None
    # Hierarchical only: Internet Explorer and Edge write "about:internet" (the Mark of the
    # Web) there, which no relative link can be resolved against.
    return url if usable_as_base(url) else None


def _canonical(document: ParsedDocument) -> str | None:
    for element in document.tree.select('link[rel~="canonical"][href], meta[property="og:url"][content]'):
        if element.position is None:
            continue
        value = document.attribute_value(element, "href" if element.tag == "link" else "content")
        if value is not None and parse(value.strip()).scheme is not None:
            return value.strip()
    return None


def _base_element(
    document: ParsedDocument,
    element: turbohtml.Element,
    fallback: Context,
    result: TextResult,
) -> None:
    """The <base> element stays with its href made absolute, or goes (``remove_base``)."""
    if fallback.policy.remove_base:
        result.edits.append((document.offset(element), document.start_tag_end(element), ""))
        return
    element_links(document, element, fallback, result)


def _conditional_comments(document: ParsedDocument, context: Context, result: TextResult) -> None:
    """Links inside ``<!--[if IE]>...<![endif]-->``: markup that old IE rendered.

    Each is parsed as a document of its own with this document's base (a <base> inside
    one is never used). Only the comment nodes the parser made are rewritten, at their
    own offsets (:func:`comment_offsets`): a lookalike in an attribute value, a script,
    a style sheet or any raw text is never touched, and where the offsets cannot be
    told for certain the comments are left as they are.
    """
    text = document.text
    first = conditional_head(text, 0)
    if first < 0:
        return
    offsets = comment_offsets(document, first)
    if not offsets:
        return
    # One policy and context for all of them: a conditional comment has no base of its own.
    nested_policy = _without_conditional_comments(context.policy)
    nested_context = Context(context.base, context.layer, nested_policy, context.codec, context.in_noscript)
    nested_context.classified = context.classified  # the same base, rules and escaping: the same answers
    parsed = document.parser_text  # as text, offset for offset, with what the parser read for each character
    for start, data in offsets:
        head = CONDITIONAL_HEAD(text, start)
        # Within the comment (its data, twice for CR LF read as one, and its end): linear.
        end = CONDITIONAL_END(text, head.end(), start + 2 * len(data) + 12) if head is not None else None
        if head is None or end is None or comment_data(document, parsed[start + 4 : end.end() - 3]) != data:
            continue  # not one conditional comment from "<!--[if" to "<![endif]-->"
        inner_start, inner_end = head.end(), end.start()
        if _START_TAG(text, inner_start, inner_end) is None:
            continue  # no start tag: no element, no link (most are "<![endif]-->" closers of a "<!--[if !IE]>")
        nested = rewrite_text(
            text[inner_start:inner_end],
            context.base,
            context.layer,
            nested_policy,
            context.codec,
            base_elements=False,
            context=nested_context,
            lean=result.counts is not None,
        )
        result.take(nested, partial(shifted, offsets=None, shift=inner_start))
        for edit_start, edit_end, new in nested.all_edits():
            # The new text lands inside a comment: a ">" could end it ("-->", "--!>") and
            # turn the rest of the URL into live markup. Browsers percent-encode ">" in a
            # URL's path, query and fragment anyway.
            result.edits.append((edit_start + inner_start, edit_end + inner_start, new.replace(">", "%3E")))


# A start tag's "<" (HTML §13.2.5.6 tag open state: an ASCII alpha follows).
_START_TAG = re.compile("<[A-Za-z]").search


def _without_conditional_comments(policy: Policy) -> Policy:
    """*policy* for the markup of a conditional comment (none nested in it), made again only
    for another policy than the last one's (a run's pages share one; a policy may hold
    functions that cannot be hashed)."""
    last = _NESTED_POLICY[0]
    if last is None or last[0] is not policy:
        last = _NESTED_POLICY[0] = (policy, policy.clone(conditional_comments=False))
    return last[1]


_NESTED_POLICY: list[tuple[Policy, Policy] | None] = [None]


# --------------------------------------------------------------------------
# Bytes in, bytes out
# --------------------------------------------------------------------------


def rewrite_html(document: bytes | str, *, links: bool = True, **options: Unpack[DocumentOptions]) -> DocumentResult:
    """Make every relative URL of an HTML document absolute, changing no other byte.

    *options* (:class:`~rewriter.document.process.DocumentOptions`): *url* is the retrieval
    URL (RFC 1808 §3.3); *base* a base handed down by an enclosing entity (§3.2, e.g. a MIME
    part's), which takes precedence; *charset* a transport charset (HTTP or MIME); *policy*.
    The output is bytes in the document's own encoding; a ``str`` document is taken as
    already decoded and comes back as UTF-8. *links* False: the caller asks for no links,
    and the engine keeps no record for each (see :func:`~rewriter.document.process.process`);
    the result gives them all the same, found again when asked for.
    """
    return process(document, rewrite=True, engine=rewrite_text, sniffer=sniff, links=links, **options)


def find_links(document: bytes | str, **options: Unpack[DocumentOptions]) -> DocumentResult:
    """Every link of an HTML document, resolved, without rewriting (``output`` is the input)."""
    return process(document, rewrite=False, engine=rewrite_text, sniffer=sniff, **options)


class ByteView:
    """A page's text as a view for :func:`rewriter.html.links.iter_links`: every start tag
    of the tree this engine reads (scripting on, as browsers run), in tree order, with its
    attribute values as its start tag holds them (character references decoded; the first
    of duplicate names winning) and a ``<style>``'s text. A site's span is in the decoded
    value; :meth:`span` gives its offsets in the text. What the engine reads besides the
    elements (each ``<noscript>``'s text with scripting off, conditional comments, ``srcdoc``
    documents) are documents of their own, with views of their own.
    """

    def __init__(self, document: bytes | str, *, charset: str | None = None) -> None:
        text, readable = (
            (document, False) if isinstance(document, str) else decode_checked(document, sniff(document, charset))
        )
        self.text = text
        self._document = ParsedDocument(text, readable)

    def elements(self) -> Iterator[ViewElement]:
        document = self._document
        for element in document.start_tags(document.tree.iter_elements()):
            spans = document.attributes(element)
            values = {name: decode_attribute(document.text[start:end])[0] for name, (start, end, _) in spans.items()}
            namespace = NAMESPACE_NAMES.get(element.namespace)
            style = None
            if element.tag == "style":
                start = document.start_tag_end(element)
                style = document.text[start : end_tag(document.text, "style", start)]
                if element.namespace is not HTML and ("&" in style or "<" in style):
                    style = None  # SVG <style> is parsed as markup; only plain text is taken as is
            yield ViewElement(element, namespace, element.tag, values, style)

    def span(self, site: Site) -> tuple[int, int]:
        """Where *site*'s URL is in the text."""
        document, element = self._document, site.element.node
        assert isinstance(element, turbohtml.Element)
        if site.attribute == "#style":
            start = document.start_tag_end(element)
            return start + site.start, start + site.end
        raw_start, raw_end, _ = document.attributes(element)[site.attribute]
        _, offsets = decode_attribute(document.text[raw_start:raw_end])
        return raw_start + raw_offset(offsets, site.start), raw_start + raw_offset(offsets, site.end)


def start_tags(document: bytes | str, *, charset: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """Every start tag the engine sees, in tree order, with its attribute values.

    Values are as the HTML tokenizer gives them (character references decoded,
    newlines normalised, NUL read as U+FFFD), the first of duplicate names winning.
    Start tags the tree builder ignores or merges into an earlier element (a second
    ``<body>``, a ``<tr>`` outside a table) are not included: no element carries them.
    The tree is a scripting browser's; the text of each ``<noscript>`` is read as a
    browser with scripting off reads it, and its start tags follow the ``<noscript>``'s.
    This is what tests compare with an independent HTML5 tokenizer.

    >>> start_tags('<A HREF="x&amp;y" href=dup>t</A><svg><image xlink:href=i /></svg>')
    [('a', {'href': 'x&y'}), ('svg', {}), ('image', {'xlink:href': 'i'})]
    >>> start_tags('<noscript><img src=a></noscript>')
    [('noscript', {}), ('img', {'src': 'a'})]
    """
    text, readable = (
        (document, False) if isinstance(document, str) else decode_checked(document, sniff(document, charset))
    )
    return _start_tags(ParsedDocument(text, readable))


def _start_tags(parsed: ParsedDocument) -> list[tuple[str, dict[str, str]]]:
    text = parsed.text
    starts, ends = parsed.noscript_ranges()
    tags: list[tuple[str, dict[str, str]]] = []
    for element in parsed.start_tags(parsed.tree.iter_elements()):
        start = parsed.offset(element)
        name = ascii_lower(tag_name_at(text, start).group()[1:]).replace("\0", "\ufffd")
        values: dict[str, str] = {}
        # Spans, not element.attrs: the parser saw a space for each line break (see ParsedDocument).
        for attribute, span in parsed.attributes(element).items():
            values[attribute.replace("\0", "\ufffd")] = parsed.value(span)
        tags.append((name, values))
        if element.tag == "noscript" and element.namespace is HTML:
            after = parsed.start_tag_end(element)
            at = bisect.bisect_left(starts, after)
            if at < len(starts) and starts[at] == after:
                inner = ParsedDocument(text[starts[at] : ends[at]], noscript_fragment=True)
                tags.extend(_start_tags(inner))
    return tags
