"""Unpack an MHTML archive or a mail message into a folder a browser can open offline.

Every leaf part is written to a file of its own. The HTML and CSS parts are rewritten so
that each reference RFC 2557 §8 matches to a part points at that part's file by a
relative path, and every other reference is made absolute (the base finder and
resolver of :mod:`rewriter.mime.message`). A reference matches a part when

- its resolved URL, fragment aside, equals the part's Content-Location (resolved
  against the enclosing entity's base, RFC 2557 §8.2) octet for octet; failing that,
  the two as the URL Standard serialises them (``a b.png`` and ``a%20b.png``), which is
  what a browser reading the archive compares; with no base at all, the reference and
  the Content-Location are compared as written, and as resolved against
  ``thismessage:/`` (§5e);
- or it is a ``cid:`` URL (RFC 2392, percent-decoded) naming the part's Content-ID.

The root document (the ``start`` part of a multipart/related, else the first
text/html part) becomes ``index.html``; the other names come from Content-Location,
the file name or the Content-ID, made safe by :mod:`rewriter.disk.names`: nothing is written
outside the folder, nothing overwrites anything, each extension is one the part's
declared Content-Type allows (``evil.html`` declared ``image/png`` is written as
``evil.html.png``, and the links to it say so), and ``manifest.json`` keeps each part's
original names.

>>> import tempfile, pathlib
>>> message = (b"Content-Type: multipart/related; boundary=b\\r\\n\\r\\n"
...            b"--b\\r\\nContent-Type: text/html\\r\\nContent-Location: http://example.org/a/\\r\\n\\r\\n"
...            b"<img src=logo.png><a href=next.html>next</a>\\r\\n"
...            b"--b\\r\\nContent-Type: image/png\\r\\nContent-Location: http://example.org/a/logo.png\\r\\n\\r\\n"
...            b"PNG\\r\\n--b--\\r\\n")
>>> folder = pathlib.Path(tempfile.mkdtemp()) / "out"
>>> result = unpack_message(message, folder)
>>> (folder / "index.html").read_bytes()
b'<img src=logo.png><a href=http://example.org/a/next.html>next</a>'
>>> [(part.file, part.action) for part in result.parts]
[('index.html', 'rewritten'), ('logo.png', 'written')]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from email.message import Message
from pathlib import Path
from typing import Literal
from urllib.parse import quote, unquote

from rewriter.disk.files import not_written
from rewriter.disk.names import Folder
from rewriter.document.encoding import sniff
from rewriter.document.engines import engine_for_type
from rewriter.mime.heading import content_charset, get_filename, get_param
from rewriter.mime.message import Entity, entities, header_url
from rewriter.mime.transfer import TransferError, decode
from rewriter.policy import DEFAULT_POLICY, Policy
from rewriter.problems import Problem, as_problem
from rewriter.url.resolve import Resolver, UnresolvableReference, parse, url_key

__all__ = ["UnpackError", "UnpackResult", "UnpackedPart", "declare_charset", "unpack_message"]

ROOT, MANIFEST = "index.html", "manifest.json"
Action = Literal["rewritten", "written", "failed"]


class UnpackError(ValueError):
    """The folder cannot take the bundle (it holds an index.html or manifest.json)."""


@dataclass(frozen=True, slots=True)
class UnpackedPart:
    """One leaf part and the file it became (None: not written)."""

    path: str
    file: str | None
    content_type: str
    content_location: str | None
    content_id: str | None
    filename: str | None
    size: int
    action: Action
    urls: tuple[str, ...] = ()  # the URLs that name it (RFC 2557 §8): resolved Content-Location, cid:
    relinked: int = 0  # references pointed at files of the bundle
    absolute: int = 0  # references made absolute (outside the bundle)
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class UnpackResult:
    folder: Path
    root: str | None
    parts: tuple[UnpackedPart, ...]
    problems: tuple[str, ...] = ()


@dataclass(slots=True)
class _Leaf:
    entity: Entity
    content_location: str | None
    content_id: str | None
    filename: str | None
    keys: list[str] = field(default_factory=list)  # the URLs that name it (RFC 2557 §8)
    file: str | None = None


def _content_id(heading: Message) -> str | None:
    value = heading.get("content-id")
    if value is None:
        return None
    text = str(value).strip()
    return (text[1:-1] if text.startswith("<") and text.endswith(">") else text) or None


def _filename(heading: Message) -> str | None:
    for getter in (lambda: get_filename(heading), lambda: get_param(heading, "name")):
        try:
            value = getter()
        except (ValueError, LookupError, TypeError):
            continue
        if isinstance(value, tuple):
            value = value[2]
        if value:
            return str(value)
    return None


def _leaves(found: list[Entity]) -> list[_Leaf]:
    leaves = []
    for entity in found:
        if entity.children:
            continue  # a multipart none of whose parts could be read is written whole
        heading = entity.heading
        location = header_url(heading, "content-location") or None
        leaves.append(_Leaf(entity, location, _content_id(heading), _filename(heading)))
    return leaves


def _root(found: list[Entity], leaves: list[_Leaf]) -> _Leaf | None:
    """RFC 2387 §3.2: the ``start`` part of the outermost multipart/related, else its first
    part, when that is HTML; otherwise the first text/html part in tree order."""
    by_path = {leaf.entity.path: leaf for leaf in leaves}
    for entity in found:
        if entity.content_type != "multipart/related" or not entity.children:
            continue
        start = get_param(entity.heading, "start")
        start = str(start).strip().strip("<>") if isinstance(start, str) else None
        chosen = next((by_path[p] for p in entity.children if p in by_path and by_path[p].content_id == start), None)
        chosen = chosen if start and chosen else by_path.get(entity.children[0])
        if chosen is not None and chosen.entity.content_type in ("text/html", "application/xhtml+xml"):
            return chosen
        break
    return next((leaf for leaf in leaves if leaf.entity.content_type == "text/html"), None)


def _keys(leaf: _Leaf, policy: Policy) -> list[str]:
    keys = []
    location = leaf.content_location
    if location:
        enclosing = leaf.entity.enclosing
        resolved = None
        if enclosing:
            try:
                resolved = Resolver(enclosing, rules=policy.rules, strict=policy.strict).resolve(location)
            except UnresolvableReference:
                resolved = None
        keys.append((resolved or location).partition("#")[0])
        if resolved is None and parse(location).scheme is None:
            keys.append(_against_message(location))
    if leaf.content_id:
        keys.append("cid:" + leaf.content_id)
    return [key for key in keys if key]


def _against_message(reference: str) -> str:
    """RFC 2557 §5e: with no base, ``thismessage:/`` is the base for matching."""
    try:
        return Resolver("thismessage:/").resolve(reference).partition("#")[0]
    except UnresolvableReference:
        return ""


def _raw_name(leaf: _Leaf) -> str:
    location = leaf.content_location
    parsed = parse(location) if location else None
    if parsed is not None and parsed.scheme not in ("cid", "mid", "thismessage") and location.strip("/"):  # type: ignore[union-attr]
        path = parsed.path or ""
        return path if path.strip("/") else location  # type: ignore[return-value]
    if leaf.filename:
        return leaf.filename
    if leaf.content_id:
        return leaf.content_id.split("@", 1)[0]
    return f"part-{leaf.entity.path}"


def unpack_message(
    data: bytes,
    folder: Path | str,
    *,
    url: str | None = None,
    policy: Policy = DEFAULT_POLICY,
) -> UnpackResult:
    """Write the parts of the message *data* into *folder* (made if missing), the root
    document as ``index.html``, and ``manifest.json``; see the module docstring.

    Raises :class:`UnpackError` when *folder* already holds an ``index.html`` or
    ``manifest.json``; anything wrong with one part is a problem of that part.
    """
    found = entities(data, url=url, policy=policy)
    leaves = _leaves(found)
    problems: list[str] = [as_problem(problem, "part").at(f"part {e.path}") for e in found for problem in e.problems]
    if not found:
        problems.append(Problem("input", "the message is nested too deeply to read"))
    with Folder(folder) as out:
        for reserved in (ROOT, MANIFEST):
            if out.taken(reserved):
                raise UnpackError(f"{folder} already holds {reserved}: unpack into an empty or new folder")
            out.pick(reserved)
        root = _root(found, leaves)
        if root is None:
            problems.append(Problem("not-unpacked", "no text/html part: there is no index.html"))
        named = _named(out, leaves, root, policy, problems)
        bundled = policy.clone(remove_base=True, relink=_relinker({key: leaf.file for key, leaf in named.items()}))
        parts = [_write(out, leaf, data, bundled) for leaf in leaves]
        problems.extend(
            as_problem(problem, "part").at(f"part {part.path}") for part in parts for problem in part.problems
        )
        manifest = {
            "root": ROOT if root is not None else None,
            "parts": [asdict(part) for part in parts],
            "problems": problems,
        }
        out.write(MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False).encode("utf-8") + b"\n")
    return UnpackResult(Path(folder), ROOT if root is not None else None, tuple(parts), tuple(problems))


def _named(
    out: Folder, leaves: list[_Leaf], root: _Leaf | None, policy: Policy, problems: list[str]
) -> dict[str, _Leaf]:
    """Each leaf's file picked in *out* (the root's is ``index.html``), and the leaf each URL
    that names one reaches (RFC 2557 §8): the first leaf it names; a later one it names too
    is a problem (in *problems*)."""
    named: dict[str, _Leaf] = {}
    for leaf in leaves:
        leaf.file = ROOT if leaf is root else out.pick(_raw_name(leaf), leaf.entity.content_type)
        leaf.keys = _keys(leaf, policy)
        for key in leaf.keys:
            if key in named and named[key] is not leaf:
                first = named[key].entity.path
                where = (f"part {leaf.entity.path}",)
                problems.append(
                    Problem("not-unpacked", f"{key} also names part {first}, which links to it reach", where)
                )
                continue
            named.setdefault(key, leaf)
    return named


def _relinker(named: dict[str, str | None]) -> Callable[[str], str | None]:
    """The bundle's relink: a reference to a part (by its URL, its ``cid:``, a name relative to
    the message, or failing these the browser's reading of both sides) becomes its file's name."""
    files = {key: file for key, file in named.items() if file}
    # Where the exact URL is not a key, the browser's reading of both sides decides.
    browser_files: dict[str, str] = {}
    for key, name in files.items():
        browser_files.setdefault(url_key(key), name)

    def relink(target: str) -> str | None:
        url, hash_mark, fragment = target.partition("#")
        name = files.get(url)
        if name is None and url[:4].lower() == "cid:":
            name = files.get("cid:" + unquote(url[4:]))
        if name is None and parse(url).scheme is None:
            name = files.get(_against_message(url))
        if name is None:
            name = browser_files.get(url_key(url))
        return None if name is None else quote(name, safe="") + hash_mark + fragment

    return relink


def declare_charset(original: bytes, output: bytes, transport: str | None, encoding: str) -> bytes:
    """*output* (an HTML page read in *encoding*), with ``<meta charset>`` put first when
    its charset came only from the transport (a MIME or HTTP heading) and a browser reading
    the file alone would guess another; never before UTF-16, which ASCII would break."""
    if not transport or encoding.lower().startswith("utf-16") or sniff(original).label.lower() == encoding.lower():
        return output
    return f'<meta charset="{encoding}">\n'.encode("ascii") + output


def _write(out: Folder, leaf: _Leaf, data: bytes, policy: Policy) -> UnpackedPart:
    entity = leaf.entity
    body = data[entity.body_start : entity.end]
    encoding = str(entity.heading.get("content-transfer-encoding", "")).strip().lower() or None
    problems: list[str] = []
    relinked = absolute = 0
    action: Action = "written"
    try:
        content = decode(body, encoding)
    except TransferError as error:
        content = body
        problems.append(f"written as it is, still encoded: {error.reason}")
    engine = engine_for_type(entity.content_type)
    if engine is not None and not problems:
        charset = content_charset(entity.heading)
        try:
            result = engine.rewrite(content, charset=charset, base=entity.base, policy=policy)
        except ValueError as error:
            problems.append(f"links left as they are: {error}")
        else:
            problems.extend(result.problems)
            links = result.links
            relinked = sum(1 for link in links if link.status == "relinked")
            absolute = sum(1 for link in links if link.status == "rewritten")
            if engine.format == "html":
                content = declare_charset(content, result.output, charset, result.encoding)
            else:
                content = result.output
            action = "rewritten"
    try:
        out.write(leaf.file, content)  # type: ignore[arg-type]
    except OSError as error:
        problems.append(not_written(error))
        action = "failed"
    return UnpackedPart(
        entity.path,
        leaf.file if action != "failed" else None,
        entity.content_type,
        leaf.content_location,
        leaf.content_id,
        leaf.filename,
        len(content),
        action,
        tuple(leaf.keys),
        relinked,
        absolute,
        tuple(problems),
    )
