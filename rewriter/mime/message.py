"""The MIME engine: rewrite the HTML and CSS parts of a message, changing no other byte.

A message (an .eml file, an MHTML archive, one message of an mbox) is read as bytes. Its
structure is found here, byte range by byte range: each entity's heading, its body, the
delimiter lines of a multipart (RFC 2046 §5.1.1) and the message inside a message/rfc822
part. The stdlib ``email`` package only reads what is inside a heading (content type,
parameters, transfer encoding); it never writes anything, because its serialiser changes
bytes nobody asked it to change (../shared/research/mime-base-urls.md §3).

Each text/html and text/css part is resolved against the first base found, innermost
first (RFC 1808 §3, RFC 2557 §5), in the one order :data:`rewriter.url.base.PRECEDENCE`
declares; this module only says what each level offers:

1. the first ``<base href>`` in the HTML (resolved against what follows; the HTML engine's);
2. the part's own heading: ``Base: <URL:...>`` (RFC 1808 §3.1) or ``Content-Base``
   (RFC 2110), else an absolute ``Content-Location`` (RFC 2557 §5(b)); a relative one is
   resolved against ``Content-Base`` in the same heading, else against the enclosing base;
3. for a part named only by ``cid:`` (Chrome's inline styles), the own heading's base of
   the HTML part that links it (RFC 1808 §3.2: that document encloses it);
4. the headings of the enclosing entities, innermost first (RFC 2557 §5(c), RFC 1808 §3.2);
5. the retrieval URL, or Chrome's ``Snapshot-Content-Location`` (RFC 1808 §3.3);
6. none: relative links stay as they are and are reported (§3.4), except those that name a
   part of the same or a surrounding multipart/related, resolved against ``thismessage:/``
   (RFC 2557 §5(e), §8): kept as they are with status ``"part"``.

The body is decoded (transfer encoding, then charset), rewritten by the HTML or CSS
engine, encoded the same way again and spliced into the original bytes.

>>> message = (b"Content-Type: multipart/related; boundary=b\\r\\n"
...            b"Content-Location: http://example.org/docs/\\r\\n\\r\\n"
...            b"--b\\r\\nContent-Type: text/html\\r\\n\\r\\n<img src=logo.png>\\r\\n--b--\\r\\n")
>>> result = rewrite_message(message)
>>> result.output.split(b"\\r\\n")[6]
b'<img src=http://example.org/docs/logo.png>'
>>> [(part.path, part.content_type, part.base, part.layer, part.origin) for part in result.parts]
[('1', 'multipart/related', 'http://example.org/docs/', 'Content-Location', '1'), \
('1.1', 'text/html', 'http://example.org/docs/', 'Content-Location', '1')]
"""

from __future__ import annotations

import contextlib
import email.errors
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from email.policy import compat32

from rewriter.document.engines import DOCUMENT_TYPES, engine_for_type
from rewriter.document.model import Action, DocumentResult, MessageResult, Part
from rewriter.mime.heading import collapse_rfc2231_value, content_charset, decode_header, decode_text, get_param
from rewriter.mime.transfer import IDENTITY, TransferError, decode, encode, mechanism
from rewriter.policy import DEFAULT_POLICY, Kept, Policy
from rewriter.problems import Problem, as_problem
from rewriter.url.base import NO_CANDIDATES, Base, Candidates, Layer, chain, usable_as_heading_base
from rewriter.url.resolve import Resolver, UnresolvableReference, parse

__all__ = ["Entity", "MessageResult", "Part", "entities", "find_message_links", "header_url", "rewrite_message"]

# The layers a part's base comes from (rewriter.url.base.Layer: one vocabulary for every
# engine); the older name.
MimeLayer = Layer
# --------------------------------------------------------------------------
# Structure: headings, bodies and delimiters as byte ranges
# --------------------------------------------------------------------------

# A line, with its line break (CRLF, CR or LF, as the email package splits lines).
_LINE = re.compile(rb"[^\r\n]*(?:\r\n|\r|\n)?")
# RFC 5322 §2.2 field names are printable ASCII but ":"; the email package's test, so
# that both read the same heading. A "From " line opens an mbox message.
_HEADER_LINE = re.compile(rb"From |[\x21-\x39\x3b-\x7e]*:|[\t ]")
_BLANK = re.compile(rb"(?:\r\n|\r|\n)")
_SIGNED = frozenset({"multipart/signed", "application/pkcs7-mime", "application/x-pkcs7-mime"})
# RFC 5322 §2.1.1 and RFC 5321 §4.5.3.1.6: a line holds at most 998 octets before its CRLF. Only bodies
# sent as they are (7bit, 8bit) can break it; quoted-printable and base64 are re-encoded in short lines.
_LINE_LIMIT = 998
_OVERLONG_LINE = re.compile(rb"[^\r\n]{%d}" % (_LINE_LIMIT + 1))
# A line with its line break, as the email package's FeedParser cuts them (io's newline="").
_TEXT_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def read_heading(block: bytes) -> Message:
    """The heading *block* (field lines only, as :func:`heading_end` finds them) as
    ``email.parser.BytesHeaderParser(policy=compat32).parsebytes(block)`` reads it.

    The same steps as the email package's ``FeedParser._parse_headers``, without its
    machinery for feeding a stream: a message has a heading per MIME part, and that
    machinery cost as much as the rest of reading the structure. Field values still come
    from ``compat32.header_source_parse``; tests compare the two on every heading of the
    corpus and on generated ones.
    """
    heading = Message(policy=compat32)
    lines = _TEXT_LINE.findall(block.decode("ascii", "surrogateescape"))
    field: list[str] = []
    for number, line in enumerate(lines):
        if line[0] in " \t":  # a continuation line
            if field:
                field.append(line)
            else:
                compat32.handle_defect(heading, email.errors.FirstHeaderLineIsContinuationDefect(line))
            continue
        if field:
            heading.set_raw(*compat32.header_source_parse(field))
            field = []
        if line.startswith("From "):
            if number == 0:
                heading.set_unixfrom(line.rstrip("\r\n"))
            elif number == len(lines) - 1:
                heading.set_payload(line)  # the first line of the body, to the email package
                return heading
            else:
                heading.defects.append(email.errors.MisplacedEnvelopeHeaderDefect(line))
            continue
        if line[0] == ":":
            heading.defects.append(email.errors.InvalidHeaderDefect("Missing header name."))
            continue
        field = [line]
    if field:
        heading.set_raw(*compat32.header_source_parse(field))
    heading.set_payload("")
    return heading


@dataclass(slots=True)
class _Entity:
    path: str
    start: int
    body_start: int
    end: int
    heading: Message
    content_type: str
    boundary: bytes | None = None  # a multipart's, once its delimiter lines were looked for
    children: list[_Entity] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def heading_end(data: bytes, start: int, end: int) -> tuple[int, int]:
    """(end of the heading, start of the body) for the entity at *start*.

    The heading runs to the first blank line, which is consumed; a line that is neither a
    field nor a continuation ends it too and starts the body (the email package's rule,
    its MissingHeaderBodySeparatorDefect).
    """
    position = start
    while position < end:
        line = _LINE.match(data, position, end)
        assert line is not None  # the pattern matches the empty string
        line_end = line.end()
        if line_end == position:
            break
        if _BLANK.fullmatch(data, position, line_end):
            return position, line_end
        if not _HEADER_LINE.match(data, position, line_end):
            return position, position
        position = line_end
    return position, position


def _boundary(heading: Message) -> str | None:
    """The boundary parameter, quotes removed but nothing else.

    ``Message.get_boundary`` also strips one pair of angle brackets, so a boundary such
    as ``<<001-3e1d>>`` would never be found (bpo-28945). Read as ``get_param`` reads it,
    in linear time (:mod:`rewriter.mime.heading`).
    """
    value = get_param(heading, "boundary", unquote=False)
    if value is None or value is True:  # absent, or a bare "boundary" without "="
        return None
    if isinstance(value, tuple):  # RFC 2231 continuations or charset
        value = collapse_rfc2231_value(value)
    value = str(value).strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = re.sub(r"\\(.)", r"\1", value[1:-1])
    # RFC 2046 §5.1.1 asks for 1 to 70 characters; an empty one is read as the email
    # package reads it, delimiter lines being a bare "--".
    return value.rstrip(" \t")


def _parse_entity(
    data: bytes, start: int, end: int, path: str, depth: int, default_type: str = "text/plain"
) -> _Entity:
    heading_stop, body_start = heading_end(data, start, end)
    heading = read_heading(data[start:heading_stop])
    if default_type != "text/plain":
        heading.set_default_type(default_type)
    content_type = heading.get_content_type()
    entity = _Entity(path, start, body_start, end, heading, content_type)
    if depth > 100:
        entity.problems.append(
            Problem("limit", "nested more than 100 levels deep: the inner levels are kept as they are")
        )
        return entity
    if content_type.startswith("multipart/"):
        _parse_multipart(data, entity, depth)
    elif content_type.startswith("message/") and content_type != "message/delivery-status":
        # As the email package reads it: a message/* body is a message (RFC 2046 §5.2).
        encoding = str(heading.get("content-transfer-encoding", "")).strip().lower()
        if not encoding or encoding in IDENTITY:
            entity.children.append(_parse_entity(data, body_start, end, f"{path}.1", depth + 1))
        else:  # RFC 2046 §5.2.1 forbids it; what is inside is kept as it is
            entity.problems.append(Problem("part", f"a {content_type} body in {encoding} is kept as it is"))
    return entity


def _delimiter_lines(data: bytes, boundary: bytes, start: int, end: int) -> Iterator[tuple[int, int, bool]]:
    """(start, end, closing) of each delimiter line of *boundary* in ``data[start:end]``.

    A line that is "--" boundary, "--" if closing, transport padding and a line break
    (RFC 2046 §5.1.1). Found with ``bytes.find``: a regular expression per boundary would
    be compiled once per message of an mbox.
    """
    needle = b"--" + boundary
    position = data.find(needle, start, end)
    while position >= 0:
        # At a line start: after LF, or after a lone CR, which the email package also reads
        # as a line break (a delimiter it sees must be one here too, or two parts merge).
        if position == 0 or data[position - 1] == 0x0A or data[position - 1] == 0x0D:
            after = position + len(needle)
            for closing in (True, False):
                cursor = after + 2 if closing else after
                if closing and data[after : after + 2] != b"--":
                    continue
                while cursor < end and data[cursor] in b" \t":
                    cursor += 1
                if cursor >= end:
                    yield position, end, closing
                    return
                if data[cursor] == 0x0A or data[cursor] == 0x0D:
                    line_end = cursor + (2 if data[cursor : cursor + 2] == b"\r\n" else 1)
                    yield position, min(line_end, end), closing
                    break
        position = data.find(needle, position + 1, end)


def _parse_multipart(data: bytes, entity: _Entity, depth: int) -> None:
    """The parts between the delimiter lines of *entity*'s boundary (RFC 2046 §5.1.1).

    The line break before a delimiter belongs to it. An enclosing multipart's delimiter
    cannot occur here: the enclosing entity's range already ends before it.
    """
    boundary_text = _boundary(entity.heading)
    if boundary_text is None:
        entity.problems.append(Problem("part", "a multipart without a boundary parameter is kept as it is"))
        return
    boundary = entity.boundary = boundary_text.encode("utf-8", "surrogateescape")
    part_start: int | None = None
    closed = False
    for start, end, closing in _delimiter_lines(data, boundary, entity.body_start, entity.end):
        if part_start is not None:
            _add_part(data, entity, part_start, _before_line_break(data, part_start, start), depth)
        if closing:
            closed = True
            break
        part_start = end
    else:
        if part_start is not None:  # the last part runs to the end of the body
            _add_part(data, entity, part_start, entity.end, depth)
    if not entity.children and not closed:
        entity.problems.append(
            Problem("part", f"no part delimited by the boundary {boundary_text!r}: the body is kept as it is")
        )
    elif not closed:
        entity.problems.append(Problem("part", f"the closing delimiter --{boundary_text}-- is missing"))


def _before_line_break(data: bytes, floor: int, position: int) -> int:
    """*position* moved before the line break that ends there (RFC 2046: it is the delimiter's)."""
    if position - 2 >= floor and data[position - 2 : position] == b"\r\n":
        return position - 2
    if position - 1 >= floor and data[position - 1 : position] in (b"\n", b"\r"):
        return position - 1
    return position


def _add_part(data: bytes, entity: _Entity, start: int, end: int, depth: int) -> None:
    path = f"{entity.path}.{len(entity.children) + 1}"
    # RFC 2046 §5.1.5: in a multipart/digest a part without a Content-Type is a message/rfc822.
    default_type = "message/rfc822" if entity.content_type == "multipart/digest" else "text/plain"
    entity.children.append(_parse_entity(data, start, end, path, depth + 1, default_type))


def _walk(entity: _Entity) -> list[_Entity]:
    entities = [entity]
    for child in entity.children:
        entities.extend(_walk(child))
    return entities


# --------------------------------------------------------------------------
# Base layers
# --------------------------------------------------------------------------


def header_url(heading: Message, name: str) -> str | None:
    """The URL in the first *name* field, as RFC 2557 §4.4.3 reads it: unfolded, with the
    whitespace that folding (URLBODY, RFC 2017 §3.1) put inside it removed, then RFC 2047
    decoded (a space it encodes stays), never percent-decoded. Surrounding quotes go, as
    Netscape wrote ``Content-Base: "file:///..."``. Raw 8-bit bytes are read as UTF-8."""
    value = next((value for field, value in heading.raw_items() if field.lower() == name), None)
    if value is None:
        return None
    text = str(value)
    if not text.isascii():  # raw 8-bit bytes; an ASCII value is kept, not copied (it may be megabytes)
        text = text.encode("ascii", "surrogateescape").decode("utf-8", "replace")
    text = re.sub(r"\s+", "", text)
    if "=?" in text:
        # Not RFC 2047 (a base64 word that cannot be decoded, an unknown charset): the text as it is.
        with contextlib.suppress(ValueError, LookupError, UnicodeError, email.errors.HeaderParseError):
            # Joined as they are: make_header would put a space between encoded and plain
            # pieces ("<URL:" "http://a/" ">"), and a URL has none there. Decoded as
            # email.header.decode_header decodes, in linear time (rewriter.mime.heading).
            text = "".join(
                (decode_text(piece, charset) if charset else piece.decode("raw-unicode-escape", "replace"))
                if isinstance(piece, bytes)
                else piece
                for piece, charset in decode_header(text)
            )
    return text.strip('"')


def _base_header(value: str) -> str:
    """RFC 1808 §3.1: ``Base: <URL:absoluteURL>`` (whitespace inside already gone)."""
    if value.startswith("<") and value.endswith(">"):
        value = value[1:-1]
    return value[4:] if value[:4].lower() == "url:" else value


def _against(reference: str, base: Base | None, policy: Policy) -> str | None:
    """*reference* made absolute against *base* under the policy's rules (``http:g`` is
    relative when not strict); None when it cannot be."""
    if base is None:
        return reference if parse(reference).scheme is not None else None
    try:
        return Resolver(base.url, rules=policy.rules, strict=policy.strict).resolve(reference)
    except UnresolvableReference:
        return None


# The fields that declare a base, the place each has in rewriter.url.base.PRECEDENCE, and
# its layer (RFC 1808 §3.1, RFC 2110 §4.1).
_DECLARING: tuple[tuple[str, str, Layer], ...] = (
    ("base", "base_field", "Base"),
    ("content-base", "content_base", "Content-Base"),
)


def _declared_base(entity: _Entity, enclosing: Base | None, policy: Policy, notes: list[Problem]) -> Candidates | None:
    """What *entity*'s ``Base`` or ``Content-Base`` field offers (RFC 1808 §3.1, RFC 2110
    §4.1): the first usable one, resolved against *enclosing*, in its place; None for neither."""
    heading = entity.heading
    for name, place, layer in _DECLARING:
        value = header_url(heading, name)
        if value is None:
            continue
        url = _base_header(value) if layer == "Base" else value
        resolved = _against(url, enclosing, policy) if url else None
        if resolved is not None and usable_as_heading_base(resolved):
            return NO_CANDIDATES.offering(**{place: Base(resolved, layer, entity.path)})
        notes.append(Problem("base-ignored", f"{layer}: {value!r} gives no base: it is not a usable URL"))
    return None


def _heading_candidates(entity: _Entity, handed: Candidates, policy: Policy, notes: list[Problem]) -> Candidates:
    """*handed* (what the enclosing entity or the caller gives) with what *entity*'s own
    heading offers (RFC 2557 §5(b), RFC 2110 §5, RFC 1808 §3.1). A relative value is
    resolved against the enclosing base (RFC 2557 §8.2(c)), a relative Content-Location
    against a Base or Content-Base of the same heading first; ``Content-Location`` is read
    only when nothing above it in the order is offered (RFC 2110 §5, RFC 2068 §14.11)."""
    enclosing = chain(handed)
    declared = _declared_base(entity, enclosing, policy, notes)
    candidates = handed
    if declared is not None:
        candidates = handed.offering(base_field=declared.base_field, content_base=declared.content_base)
    if candidates.outranked("content_location"):
        return candidates
    location = header_url(entity.heading, "content-location")
    if not location:
        return candidates
    resolved = _against(location, enclosing, policy)
    # Neither a relative location with nothing to resolve it against (RFC 2557 §4.2's
    # fiction1/fiction2) nor an opaque one (Chrome's cid: labels for frames and style
    # sheets) is a base; both are normal, so neither is reported as a problem.
    if resolved is None or not usable_as_heading_base(resolved):
        if resolved is not None and resolved.lower().startswith("thismessage:"):
            notes.append(
                Problem(
                    "base-ignored",
                    f"Content-Location: {location!r} names the message itself (RFC 2557), not a base for links",
                )
            )
        return candidates
    return candidates.offering(content_location=Base(resolved, "Content-Location", entity.path))


def _heading_base(entity: _Entity, enclosing: Base | None, policy: Policy, notes: list[Problem]) -> Base | None:
    """The base *entity* has from the MIME layers: its own heading's, else *enclosing*."""
    return chain(_heading_candidates(entity, Candidates(enclosing=enclosing), policy, notes))


def _top_candidates(entity: _Entity, url: str | None, policy: Policy) -> Candidates:
    """RFC 1808 §3.3 for the message itself: the retrieval URL (``guessed`` with
    ``Policy.url_guessed``), and Chrome's Snapshot-Content-Location, the page's URL (the
    order decides between them)."""
    location = header_url(entity.heading, "snapshot-content-location")
    given = Base(url, "retrieval-url", None) if url else None
    return Candidates(
        retrieval=None if policy.url_guessed else given,
        guessed=given if policy.url_guessed else None,
        snapshot=(
            Base(location, "Snapshot-Content-Location", entity.path)
            if location and usable_as_heading_base(location)
            else None
        ),
    )


# A cid: URL in a part's body (RFC 2392): what links one part of a message to another.
_CID_URL = re.compile(rb"cid:[^\s\"'<>()\\]+")  # matched in lowercased text: a literal prefix is fast


class _Referrers:
    """RFC 1808 §3.2 for a part named only by ``cid:`` (Chrome writes a page's and each frame's
    inline ``<style>`` as a text/css part labelled ``Content-Location: cid:css-...``, linked
    from that document's part): its encapsulating entity is the document that links it, so
    the base it offers is that document's own, not the message's Snapshot-Content-Location.
    Each multipart/related's HTML parts are read for ``cid:`` URLs once, the first time a part
    with no base of its own asks."""

    def __init__(self, data: bytes, policy: Policy) -> None:
        self.data = data
        self.policy = policy
        self.by_related: dict[str, dict[str, Base]] = {}
        # The bodies read, by where they start, kept for the walk to take (each decoded once).
        self.decoded: dict[int, bytes] = {}

    def offered(self, entity: _Entity, candidates: Candidates, related: tuple[_Entity, ...]) -> Candidates:
        """*candidates* with the base of the part that links *entity* by cid:, when its heading
        gives it one and it differs from the enclosing base (else it would add nothing)."""
        if not related or candidates.outranked("referrer"):
            return candidates
        names = _cid_names(entity)
        if not names:
            return candidates
        linking = self.by_related.get(related[0].path)
        if linking is None:
            linking = self.by_related[related[0].path] = self._read(related[0], entity.body_start)
        enclosing = chain(candidates)
        for name in names:
            found = linking.get(name)
            if found is not None and found.url != (enclosing.url if enclosing else None):
                return candidates.offering(referrer=found)
        return candidates

    def _read(self, related: _Entity, at: int) -> dict[str, Base]:
        """Each cid: URL the HTML parts under *related* hold: the base of the first that holds it
        (its own heading's: a frame's Content-Location). The bodies of parts after *at*, which
        the walk has yet to reach, are kept for it."""
        linking: dict[str, Base] = {}
        for part in _walk(related):
            if part.content_type != "text/html" or part.children:
                continue
            base = chain(_heading_candidates(part, Candidates(), self.policy, []))
            if base is None:
                continue
            encoding = str(part.heading.get("content-transfer-encoding", "")).strip().lower() or None
            try:
                body = decode(self.data[part.body_start : part.end], encoding)
            except TransferError:
                continue
            if part.body_start > at:
                self.decoded[part.body_start] = body
            for match in _CID_URL.finditer(body.lower()):
                linking.setdefault(match.group().decode("ascii", "replace"), base)
        return linking


def _cid_names(entity: _Entity) -> list[str]:
    """The cid: URLs that name *entity*: a ``cid:`` Content-Location, its Content-ID (RFC 2392)."""
    names = []
    location = header_url(entity.heading, "content-location")
    if location and location[:4].lower() == "cid:":
        names.append(location.lower())
    content_id = str(entity.heading.get("content-id", "")).strip()
    if content_id:
        names.append("cid:" + content_id.strip("<>").lower())
    return names


# --------------------------------------------------------------------------
# Links to parts of the message (RFC 2557 §8)
# --------------------------------------------------------------------------

# RFC 2557 §5(e): with no other base, the base for matching references to parts. Never a
# base for rewriting: nothing would be gained by writing it (see _hierarchical).
_THIS_MESSAGE = "thismessage:/"

_Named = dict[str, tuple[str, str]]  # a part's URL, fragment set aside: (its path, its Content-Location)


def _without_fragment(url: str) -> str:
    return url.partition("#")[0]


def _location_url(entity: _Entity, location: str, enclosing: Base | None, policy: Policy) -> str | None:
    """The URL *entity*'s Content-Location *location* names it by, fragment set aside (RFC 2557
    §8.2(c)): resolved against the ``Base``/``Content-Base`` of the same heading (RFC 2110
    §4.2), else the enclosing base (RFC 2557 §5), else ``thismessage:/`` (§5(e))."""
    declared = _declared_base(entity, enclosing, policy, [])
    context = chain(declared.offering(enclosing=enclosing)) if declared is not None else enclosing
    if context is None:
        context = Base(_THIS_MESSAGE, "Content-Location", None)
    resolved = _against(location, context, policy)
    return None if resolved is None else _without_fragment(resolved)


def _named_parts(related: _Entity, policy: Policy) -> _Named:
    """The URLs the entities of one multipart/related structure are named by, first in tree
    order winning: the multipart itself and every entity inside it, less the insides of a
    nested multipart/related (a structure of its own, which references from outside do not
    reach, RFC 2557 §7) and of a message/* part (another message, whose ``thismessage:/``
    is another). *related* has no base: it encloses a part that has none."""
    named: _Named = {}

    def add(entity: _Entity, enclosing: Base | None, top: bool) -> None:
        location = header_url(entity.heading, "content-location")
        url = _location_url(entity, location, enclosing, policy) if location else None
        if url is not None and location is not None:
            named.setdefault(url, (entity.path, location))
        if not top and (entity.content_type == "multipart/related" or entity.content_type.startswith("message/")):
            return
        base = _heading_base(entity, enclosing, policy, [])
        for child in entity.children:
            add(child, base, False)

    add(related, None, True)
    return named


class _PartLinks:
    """``Policy.keep`` for an HTML or CSS part that has no base: a relative reference that names
    a part of the same or a surrounding multipart/related structure is kept as written, with
    status "part" (RFC 2557 §8). It is given to the engine through ``Policy.with_keep``: the
    caller's own keep is asked first, and its answer wins.

    The rule (RFC 2557 §8.2): with no base, the reference and each part's Content-Location
    are resolved against ``thismessage:/`` (§5(e)), under the policy's rules; the reference,
    fragment set aside, names the part whose URL is identical to it. The comparison is of
    strings (RFC 3986 §6.2.1), octet for octet as §8.2(d) asks: no case folding, and no
    percent-encoding normalisation (§8.2(b): "a%2eb/c%20d" is not "a.b/c d"). Under
    ``rules="whatwg"`` both sides are serialised by the URL Standard first (a space becomes
    ``%20`` in both), the same function applied to both.

    Scope (§8.2(d), §7): the parts of the multipart/related structures enclosing the part,
    innermost first, within its own message; not an inner or parallel structure, not the
    parts of an encapsulated message (message/rfc822), and not parts outside any
    multipart/related, which ``thismessage:/`` is not defined for (§5(e)) and readers do not
    resolve (Thunderbird looks up parts only in a multipart/related).
    """

    __slots__ = ("matched", "policy", "refused", "related", "resolver", "structures", "walk")

    def __init__(self, related: tuple[_Entity, ...], walk: _Walk) -> None:
        self.related = related  # innermost first
        self.walk = walk
        self.policy = walk.policy
        self.structures: list[_Named] | None = None  # found on the first reference asked about
        self.resolver: Resolver | None = None  # thismessage:/, under the policy's rules
        self.matched: set[str] = set()
        self.refused: set[str] | None = set()  # None: all of them

    def __call__(self, reference: str, resolved: str | None) -> Kept | None:
        # A resolved reference has a real base (it is rewritten; a part named by a relative
        # Content-Location has that base too, so the absolute URL still names it).
        if resolved is not None or self.refused is None or reference in self.refused:
            return None
        structures, resolver = self.structures, self.resolver
        if structures is None or resolver is None:
            structures = self.structures = [self.walk.named_parts(entity) for entity in self.related]
            resolver = self.resolver = Resolver(_THIS_MESSAGE, rules=self.policy.rules, strict=self.policy.strict)
        if not any(structures):
            return None
        try:
            url = _without_fragment(resolver.resolve(reference))
        except UnresolvableReference:
            return None
        for named in structures:
            found = named.get(url)
            if found is not None:
                self.matched.add(reference)
                path, location = found
                return "part", f"names part {path} (Content-Location: {location!r}) of this message, RFC 2557 §8"
        return None

    def misread(self, result: DocumentResult) -> bool:
        """Whether *result* holds a "part" this keep gave where the engine had a base after all
        (a <base>, a srcdoc's own: None then meant unresolvable, not no base), or where a
        relative <base> was ignored (RFC 2557 §5(a) would resolve it against ``thismessage:/``
        and match against that): those references are refused from now on."""
        if not self.matched:
            return False
        if any(getattr(problem, "code", None) == "base-relative" for problem in result.problems):
            self.refused = None
            return True
        wrong = {link.original for link in result.links_with("part") if link.base is not None} & self.matched
        if self.refused is not None:
            self.refused |= wrong
        return bool(wrong)


# --------------------------------------------------------------------------
# Rewriting
# --------------------------------------------------------------------------


def _part(
    entity: _Entity, base: Base | None, action: Action, problems: list[Problem], result: DocumentResult | None = None
) -> Part:
    """The report for *entity*: the chain of the MIME base and the ``<base>`` element the engine used."""
    if result is not None and result.layer == "base-element" and result.base is not None:
        base = chain(Candidates(base_element=Base(result.base, "base-element"), enclosing=base))
    return Part(
        path=entity.path,
        content_type=entity.content_type,
        start=entity.start,
        body_start=entity.body_start,
        end=entity.end,
        base=base.url if base else None,
        layer=base.layer if base else None,
        origin=base.origin if base else None,
        links=result if result is not None else (),
        action=action,
        problems=tuple(problems) + (result.problems if result is not None else ()),
    )


def _rewrite_leaf(
    data: bytes,
    entity: _Entity,
    base: Base | None,
    policy: Policy,
    boundaries: list[bytes],
    rewrite: bool,
    problems: list[Problem],
    part_links: _PartLinks | None = None,
    decoded: bytes | None = None,
) -> tuple[Part, bytes | None]:
    """One text/html or text/css part: its report, and its new body (None: it stays).

    The body is decoded (transfer encoding; the charset is the engine's to apply: the
    part's parameter, else the document's own declaration), rewritten, and encoded again
    the same way. *part_links*: the keep that finds references to parts of the message
    (a part with no base), given to the engine with *policy*; *decoded*: the body decoded
    already (by :class:`_Referrers`).
    """
    body = data[entity.body_start : entity.end]
    encoding = str(entity.heading.get("content-transfer-encoding", "")).strip().lower() or None
    problems = list(problems)  # the entity's, and what its heading's bases gave
    try:
        decoded = decode(body, encoding) if decoded is None else decoded
    except TransferError as error:
        problems.append(Problem("part", f"kept as it is: {error.reason}"))
        return _part(entity, base, "skipped", problems), None
    engine = engine_for_type(entity.content_type)
    assert engine is not None  # only documents an engine reads come here
    fallback = {} if base is None else {"url" if base.layer == "retrieval-url" else "base": base.url}
    if part_links is not None:
        policy = policy.with_keep(part_links)
    try:
        result = engine.rewrite(decoded, charset=content_charset(entity.heading), policy=policy, **fallback)
        if part_links is not None and part_links.misread(result):
            result = engine.rewrite(decoded, charset=content_charset(entity.heading), policy=policy, **fallback)
    except ValueError as error:  # the policy refused it (NoBaseError)
        problems.append(Problem("part", str(error)))
        return _part(entity, base, "skipped", problems), None
    if not rewrite or result.output == decoded:
        return _part(entity, base, "unchanged", problems, result), None
    try:
        new_body = encode(body, encoding, result.output, decoded=decoded)
    except TransferError as error:
        problems.append(Problem("part", f"kept as it is: {error.reason}"))
        return _part(entity, base, "skipped", problems, result), None
    if any(next(_delimiter_lines(new_body, boundary, 0, len(new_body)), None) for boundary in boundaries):
        problems.append(Problem("part", "kept as it is: the rewritten body would contain a delimiter line"))
        return _part(entity, base, "skipped", problems, result), None
    transfer = mechanism(encoding)  # "7bit" for none; encode() took it, so it is one the module handles
    if transfer in ("7bit", "8bit") and ((line := _OVERLONG_LINE.search(new_body)) and not _OVERLONG_LINE.search(body)):
        problems.append(
            Problem(
                "line-length",
                f"a rewritten line (at byte {line.start()} of the body) is longer than the {_LINE_LIMIT} octets"
                f" RFC 5322 §2.1.1 allows in a {transfer} body: a mail server may break or refuse it",
            )
        )
    return _part(entity, base, "rewritten", problems, result), new_body


class _Walk:
    """One pass over a message's tree: the base of each entity, and the new bodies."""

    def __init__(self, data: bytes, policy: Policy, rewrite: bool) -> None:
        self.data = data
        self.policy = policy
        self.rewrite = rewrite
        self.parts: list[Part] = []
        self.edits: list[tuple[int, int, bytes]] = []
        self.problems: list[Problem] = []
        self.named: dict[str, _Named] = {}  # a multipart/related's path: the URLs naming its parts
        self.referrers = _Referrers(data, policy)

    def named_parts(self, related: _Entity) -> _Named:
        named = self.named.get(related.path)
        if named is None:
            named = self.named[related.path] = _named_parts(related, self.policy)
        return named

    def visit(
        self,
        entity: _Entity,
        handed: Candidates,
        boundaries: list[bytes],
        signed: bool,
        related: tuple[_Entity, ...] = (),
    ) -> None:
        """*handed*: the bases the enclosing entity (or, for the message, the caller) offers;
        *related*: the multipart/related entities around *entity* in its message, innermost first."""
        problems = list(entity.problems)
        candidates = _heading_candidates(entity, handed, self.policy, problems)
        if entity.content_type in DOCUMENT_TYPES and not entity.children:
            candidates = self.referrers.offered(entity, candidates, related)
        base = chain(candidates)
        if entity.content_type in _SIGNED and not self.policy.rewrite_signed:
            signed = True
            problems.append(Problem("signed", "signed content is left as it is: a change would break the signature"))
        if entity.content_type.startswith("multipart/") or entity.children:
            if entity.boundary is not None:
                boundaries = [entity.boundary, *boundaries]
            self._add(
                _part(entity, base, "skipped" if entity.content_type in _SIGNED and signed else "container", problems)
            )
            if entity.content_type.startswith("message/"):
                related = ()  # another message: thismessage:/ names it alone (RFC 2557 §7)
            elif entity.content_type == "multipart/related":
                related = (entity, *related)
            for child in entity.children:
                self.visit(child, Candidates(enclosing=base), boundaries, signed, related)
            return
        if entity.content_type not in DOCUMENT_TYPES:
            self._add(_part(entity, base, "other", problems))
        elif signed:
            self._add(
                _part(entity, base, "skipped", [*problems, Problem("signed", "inside signed content: left as it is")])
            )
        else:
            # With no base, a relative reference may still name a part (RFC 2557 §8); with one,
            # it resolves, and a part it names has that base too.
            part_links = _PartLinks(related, self) if base is None and related else None
            part, new_body = _rewrite_leaf(
                self.data,
                entity,
                base,
                self.policy,
                boundaries,
                self.rewrite,
                problems,
                part_links,
                self.referrers.decoded.pop(entity.body_start, None),
            )
            self._add(part)
            if new_body is not None:
                self.edits.append((entity.body_start, entity.end, new_body))

    def _add(self, part: Part) -> None:
        self.parts.append(part)
        self.problems.extend(as_problem(problem, "left-as-is").at(f"part {part.path}") for problem in part.problems)

    def output(self) -> bytes:
        """The input with the new bodies spliced in: every other byte as it was."""
        if not self.edits:
            return self.data
        # Views of the input, not slices: a slice of bytes is a copy, and the input's unchanged
        # stretches (a large attachment) would be held three times at the join, not twice.
        data = memoryview(self.data)
        pieces: list[bytes | memoryview] = []
        last = 0
        for start, end, new in sorted(self.edits):
            pieces.append(data[last:start])
            pieces.append(new)
            last = end
        pieces.append(data[last:])
        return b"".join(pieces)


def _process(data: bytes, url: str | None, policy: Policy, *, rewrite: bool) -> MessageResult:
    try:
        root = _parse_entity(data, 0, len(data), "1", 0)
        walk = _Walk(data, policy, rewrite)
        walk.visit(root, _top_candidates(root, url, policy), [], False)
    except RecursionError:
        return MessageResult(
            data, (), (Problem("limit", "the message is nested too deeply to read: it is kept as it is"),)
        )
    output = walk.output()
    if output is not data and _dkim_signed(root.heading):
        walk.problems.append(
            Problem("signed", "its DKIM-Signature will no longer verify: the body was changed", ("part 1",))
        )
    return MessageResult(output, tuple(walk.parts), tuple(dict.fromkeys(walk.problems)))


def _dkim_signed(heading: Message) -> bool:
    return heading.get("dkim-signature") is not None or heading.get("arc-message-signature") is not None


def rewrite_message(data: bytes, *, url: str | None = None, policy: Policy = DEFAULT_POLICY) -> MessageResult:
    """Make every relative link in the HTML and CSS parts of a MIME message absolute.

    *url* is where the message was retrieved from (RFC 1808 §3.3). Every byte outside
    the rewritten bodies stays as it is; a message with nothing to rewrite comes back
    byte for byte. Never raises on bad input: what cannot be read is kept and reported.
    """
    return _process(data, url, policy, rewrite=True)


def find_message_links(data: bytes, *, url: str | None = None, policy: Policy = DEFAULT_POLICY) -> MessageResult:
    """Every link of the message's HTML and CSS parts, resolved, without rewriting."""
    return _process(data, url, policy, rewrite=False)


@dataclass(frozen=True, slots=True)
class Entity:
    """One entity of a message's tree as :func:`entities` gives it (paths as in :class:`Part`).

    ``base`` is what the MIME layers give it (its own heading, else the enclosing
    entity's, RFC 2557 §5), before any ``<base>`` element of its body; ``enclosing`` is
    the enclosing entity's base, against which its relative Content-Location is
    resolved (RFC 2557 §8.2). ``body_start``/``end`` are byte offsets of the raw body.
    """

    path: str
    content_type: str
    heading: Message
    body_start: int
    end: int
    base: str | None
    enclosing: str | None
    children: tuple[str, ...]
    problems: tuple[str, ...]


def entities(data: bytes, *, url: str | None = None, policy: Policy = DEFAULT_POLICY) -> list[Entity]:
    """Every entity of the message in *data*, in tree order, with its MIME base.

    >>> [(e.path, e.content_type, e.base) for e in entities(b"Content-Base: http://a/b/\\r\\n\\r\\nhi")]
    [('1', 'text/plain', 'http://a/b/')]
    """
    try:
        root = _parse_entity(data, 0, len(data), "1", 0)
    except RecursionError:
        return []
    found: list[Entity] = []
    referrers = _Referrers(data, policy)

    def visit(entity: _Entity, handed: Candidates, related: tuple[_Entity, ...]) -> None:
        problems = list(entity.problems)
        candidates = _heading_candidates(entity, handed, policy, problems)
        if entity.content_type in DOCUMENT_TYPES and not entity.children:
            candidates = referrers.offered(entity, candidates, related)
        base = chain(candidates)
        enclosing = chain(handed)
        found.append(
            Entity(
                entity.path,
                entity.content_type,
                entity.heading,
                entity.body_start,
                entity.end,
                base.url if base else None,
                enclosing.url if enclosing else None,
                tuple(child.path for child in entity.children),
                tuple(problems),
            )
        )
        if entity.content_type.startswith("message/"):
            related = ()
        elif entity.content_type == "multipart/related":
            related = (entity, *related)
        for child in entity.children:
            visit(child, Candidates(enclosing=base), related)

    visit(root, _top_candidates(root, url, policy), ())
    return found
