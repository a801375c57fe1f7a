"""The writer: the links of one attribute value (each URL by its kind's microsyntax, a
``srcdoc`` as a document of its own) or of a ``<style>`` element's text, each recorded and
its new text spliced into the attribute as the value's quoting allows.
"""

from __future__ import annotations

from functools import partial

from rewriter.css import syntax as css
from rewriter.css.stylesheet import css_links
from rewriter.css.syntax import css_urls
from rewriter.document.model import Kind
from rewriter.document.process import Context, TextResult, shifted
from rewriter.html.links import for_context, url_spans
from rewriter.html.microsyntax import ASCII_WHITESPACE, decode_attribute, strip_whitespace
from rewriter.html.parsed import HTML, ParsedDocument
from rewriter.html.plain import NEEDS_QUOTES, escape_attribute
from rewriter.html.tags import VALUELESS, end_tag
from rewriter.html.turbo import core as turbohtml


def attribute_links(
    document: ParsedDocument,
    tag: str,
    name: str,
    kind: Kind,
    span: tuple[int, int, str],
    context: Context,
    result: TextResult,
) -> None:
    """The links of one attribute value, each by its kind's microsyntax. The common case,
    one URL with no character reference and no NUL, takes a short way."""
    raw_start, raw_end, quote = span
    raw = document.text[raw_start:raw_end]
    if kind == "url" and "&" not in raw and "\0" not in raw:
        start, end = 0, len(raw)
        if raw and (raw[0] in ASCII_WHITESPACE or raw[-1] in ASCII_WHITESPACE):
            start, end = strip_whitespace(raw, start, end)
            reference = raw[start:end]
        else:
            reference = raw
        resolved = result.record(context, tag, name, "url", reference, raw_start + start, raw_start + end)
        if resolved is not None:
            replacement = (start, end, resolved, prefix_of(resolved, reference))
            splice_attribute(raw, raw_start, raw_end, quote, raw, None, [replacement], result)
        return
    value, offsets = decode_attribute(raw)
    # HTML §13.2.5.36-38: the tokenizer reads NUL in a value as U+FFFD (one for one: the
    # offsets stay), and so does a browser resolving it.
    value = value.replace("\0", "\ufffd")

    # Each replacement: a span of the decoded value, its new text, and whether the new
    # text is the old one with a prefix (then only the prefix is written).
    replacements: list[tuple[int, int, str, str | None]] = []
    if kind == "css":
        css_context = context.for_css()
        for url in css_urls(value):
            _one_url(
                tag,
                name,
                kind,
                value,
                url.start,
                url.end,
                url.value,
                css_context,
                offsets,
                raw_start,
                result,
                replacements,
                css_quote=url.quote,
            )
    elif kind == "srcdoc":
        # A srcdoc document is a string: its encoding is UTF-8 (HTML §4.8.5 "about:srcdoc").
        # It is a document of its own, which the engine reads: imported here, where the
        # engine (which imports this module) is there to import.
        from rewriter.html.engine import rewrite_text

        nested = rewrite_text(
            value,
            context.base,
            context.layer,
            context.policy,
            in_noscript=context.in_noscript,
            lean=result.counts is not None,
        )
        result.take(nested, partial(shifted, offsets=offsets, shift=raw_start))
        for edit_start, edit_end, new in nested.all_edits():
            replacements.append((edit_start, edit_end, new, None))
        result.problems.extend(problem.at("in srcdoc") for problem in nested.problems)
    else:
        for url_start, url_end in url_spans(kind, value):
            reference = value[url_start:url_end]
            _one_url(
                tag, name, kind, value, url_start, url_end, reference, context, offsets, raw_start, result, replacements
            )
    if replacements:
        splice_attribute(raw, raw_start, raw_end, quote, value, offsets, replacements, result)


def _one_url(
    tag: str,
    name: str,
    kind: Kind,
    value: str,
    start: int,
    end: int,
    reference: str,
    context: Context,
    offsets: list[int] | None,
    raw_start: int,
    result: TextResult,
    replacements: list[tuple[int, int, str, str | None]],
    css_quote: css.Quote | None = None,
) -> None:
    start_at, end_at = raw_start + raw_offset(offsets, start), raw_start + raw_offset(offsets, end)
    resolved = result.record(context, tag, name, kind, reference, start_at, end_at)
    if resolved is None:
        return
    if css_quote is not None:
        new = css.escape_url(resolved, css_quote)
        replacements.append((start, end, new, None))
        return
    new = for_context(kind, resolved, value, start)
    replacements.append((start, end, new, prefix_of(new, reference) if value[start:end] == reference else None))


def prefix_of(new: str, reference: str) -> str | None:
    """What *new* adds before *reference* when it only adds a prefix (then only that is written)."""
    return new[: len(new) - len(reference)] if reference and new.endswith(reference) else None


def raw_offset(offsets: list[int] | None, index: int) -> int:
    return index if offsets is None else offsets[index]


def splice_attribute(
    raw: str,
    raw_start: int,
    raw_end: int,
    quote: str,
    value: str,
    offsets: list[int] | None,
    replacements: list[tuple[int, int, str, str | None]],
    result: TextResult,
) -> None:
    if not quote or quote == VALUELESS:
        written = "".join(new if prefix is None else prefix for _, _, new, prefix in replacements)
        if quote == VALUELESS or any(char in NEEDS_QUOTES for char in written):
            pieces: list[str] = []
            last = 0
            for start, end, new, _ in sorted(replacements):
                pieces += (value[last:start], new)
                last = end
            pieces.append(value[last:])
            equals = "=" if quote == VALUELESS else ""
            escaped = escape_attribute("".join(pieces), '"')
            result.edits.append((raw_start, raw_end, f'{equals}"{escaped}"'))
            return
    for start, end, new, prefix in replacements:
        raw_at = raw_start + raw_offset(offsets, start)
        if prefix is not None:
            result.edits.append((raw_at, raw_at, escape_attribute(prefix, quote)))
        else:
            result.edits.append((raw_at, raw_start + raw_offset(offsets, end), escape_attribute(new, quote)))


def style_element(
    document: ParsedDocument,
    element: turbohtml.Element,
    context: Context,
    result: TextResult,
) -> None:
    """CSS in a <style> element: raw text in HTML, so its source is its text.

    The text runs to the first ``</style`` followed by whitespace, "/" or ">" (HTML
    §13.2.5.12 "appropriate end tag"), or to the end of the document.
    """
    start = document.start_tag_end(element)
    end = end_tag(document.text, "style", start)
    source = document.text[start:end]
    foreign = element.namespace != HTML
    if foreign and ("&" in source or "<" in source):
        return  # SVG <style> is parsed as markup; only plain text is taken as is
    css_links(source, start, "style", "#style", context.for_css(), result, in_style_element=True, foreign=foreign)
