"""The RFC 2557 / RFC 2110 / RFC 1808 examples as MIME messages: which base each text/html (and text/css)
part gets, what is written in place of each reference, and that no other byte changes.

The fixtures in fixtures/mime/ are the RFC examples re-typed as valid messages: the examples' indentation and
their ``;`` annotation lines inside headings are dropped, ``=`` in quoted-printable bodies is written ``=3D``,
``etc...`` in base64 bodies is cut, a blank line is put after nested multipart headings (RFC 2557 §9.6 has
none), and the unbalanced quotes of RFC 2557 §9.6 (``SRC=images/ietflogo2e.gif"``, ``HREF="http://…/more-info>``)
are balanced. Every fixture is CRLF unless its name ends in ``-lf`` (and ``latin1-8bit.eml``, which is LF).

Case numbers ``cNN`` are those of ../shared/research/mime-base-urls.md, "RFC example cases as test facts";
``p-`` cases are the further precedence cases; each id names the RFC section the expectation rests on.
"""

from __future__ import annotations

import email
import functools
import re
from collections.abc import Iterator
from email.message import Message
from pathlib import Path
from typing import NamedTuple

import pytest

from rewriter.mime.message import MessageResult, Part, rewrite_message
from rewriter.policy import DEFAULT_POLICY, Policy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mime"
UNCHANGED = "unchanged"
IETF = "http://www.ietf.cnri.reston.va.us"
REWRITABLE = {"text/html", "text/css"}


class Case(NamedTuple):
    id: str
    fixture: str
    path: str  # "1" = the message, "1.2" its second child, ...
    reference: str  # as written in the (decoded) part body
    expected: str  # the absolute URL written in its place, or UNCHANGED
    status: str  # Link.status
    base: str | None  # Part.base
    layer: str | None  # Part.layer
    origin: str | None  # Part.origin
    url: str | None = None  # retrieval URL passed as url=
    strict: bool = True  # False: Policy().clone(strict=False), the RFC 3986 §5.2.2 non-strict reading


def _rfc2557_93(fixture: str, url: str | None = None, tag: str = "") -> list[Case]:
    base = IETF + "/"
    return [
        Case(f"c05-rfc2557-9.3{tag}-{fixture}", fixture, "1.1", "images/ietflogo1.gif", f"{IETF}/images/ietflogo1.gif",
             "rewritten", base, "Content-Location", "1", url=url),
        Case(f"c06-rfc2557-9.3{tag}-{fixture}", fixture, "1.1", "images/ietflogo2.gif", f"{IETF}/images/ietflogo2.gif",
             "rewritten", base, "Content-Location", "1", url=url),
        Case(f"c07-rfc2557-9.3{tag}-{fixture}", fixture, "1.1", "images/ietflogo3.gif", f"{IETF}/images/ietflogo3.gif",
             "rewritten", base, "Content-Location", "1", url=url),
    ]  # fmt: skip


def _rfc2557_96_nested(strict: bool) -> list[Case]:
    """RFC 2557 §9.6, the two nested multipart/related: base from their Content-Location (§5(c))."""
    tag, fixture, more, even = (
        ("" if strict else "-nonstrict"),
        "rfc2557-9.6.eml",
        f"{IETF}/more-info",
        f"{IETF}/even-more-info",
    )
    return [
        Case(f"c14-rfc2557-9.6-5c-nested{tag}", fixture, "1.3.1", "images/ietflogo.gif",
             f"{IETF}/images/ietflogo.gif", "rewritten", more, "Content-Location", "1.3", strict=strict),
        Case(f"c15-rfc2557-9.6-5c-nested{tag}", fixture, "1.3.1", "images/ietflogo2e.gif",
             f"{IETF}/images/ietflogo2e.gif", "rewritten", more, "Content-Location", "1.3", strict=strict),
        Case(f"c16-rfc2557-9.6-5c-nested{tag}", fixture, "1.4.1", "images/ietflogo2d.gif",
             f"{IETF}/images/ietflogo2d.gif", "rewritten", even, "Content-Location", "1.4", strict=strict),
        Case(f"c17-rfc2557-9.6-5c-nested{tag}", fixture, "1.4.1", "images/ietflogo2e.gif",
             f"{IETF}/images/ietflogo2e.gif", "rewritten", even, "Content-Location", "1.4", strict=strict),
    ]  # fmt: skip


def _rfc1808_51() -> list[Case]:
    """RFC 1808 §5.1 / RFC 3986 §5.4.1 normal examples, the base given by a §3.1 Base header."""
    answers = {
        "g": "http://a/b/c/g",
        "./g": "http://a/b/c/g",
        "g/": "http://a/b/c/g/",
        "/g": "http://a/g",
        "//g": "http://g",
        "?y": "http://a/b/c/d;p?y",
        "g?y": "http://a/b/c/g?y",
        "g#s": "http://a/b/c/g#s",
        ";x": "http://a/b/c/;x",  # RFC 3986 (the default rules); RFC 1808 gave http://a/b/c/d;x
        "g;x": "http://a/b/c/g;x",
        "g;x?y#s": "http://a/b/c/g;x?y#s",
        ".": "http://a/b/c/",
        "./": "http://a/b/c/",
        "..": "http://a/b/",
        "../": "http://a/b/",
        "../g": "http://a/b/g",
        "../..": "http://a/",
        "../../": "http://a/",
        "../../g": "http://a/g",
    }
    base = "http://a/b/c/d;p?q"
    cases = [
        Case(f"rfc1808-5.1[{ref}]", "rfc1808-5.1.eml", "1", ref, url, "rewritten", base, "Base", "1")
        for ref, url in answers.items()
    ]
    # A fragment-only reference is same-document; the default policy leaves it.
    cases.append(Case("rfc1808-5.1[#s]", "rfc1808-5.1.eml", "1", "#s", UNCHANGED, "same-document", base, "Base", "1"))
    return cases


def _qp(fixture: str) -> list[Case]:
    base = "http://www.example.org/docs/index.html"
    long = "chapter-one/section-two/a-rather-long-file-name.html"
    return [
        # RFC 2045 §6.7 rule 5: the soft line break is not part of the text, so the URL is one reference.
        Case(f"p-qp-soft-break-in-url-{fixture}", fixture, "1", long, "http://www.example.org/docs/" + long,
             "rewritten", base, "Content-Location", "1"),
        Case(f"p-qp-soft-break-before-quote-{fixture}", fixture, "1", "img/x.png",
             "http://www.example.org/docs/img/x.png", "rewritten", base, "Content-Location", "1"),
        Case(f"p-qp-soft-break-in-name-{fixture}", fixture, "1", "../up/", "http://www.example.org/up/",
             "rewritten", base, "Content-Location", "1"),
    ]  # fmt: skip


CASES: list[Case] = [
    # --- RFC 2557 §4.2: fictitious relative URIs, no base anywhere (§5(e) thismessage:/ is never written out):
    # thismessage:/fiction1/fiction2 names the part with that Content-Location (§8), so it is kept as a "part".
    Case("c01-rfc2557-4.2-relative-part", "rfc2557-4.2.eml", "1.1", "fiction1/fiction2", UNCHANGED,
         "part", None, None, None),
    Case("c02-rfc2557-4.2-cid", "rfc2557-4.2.eml", "1.1", "cid:97116092811xyz@foo.bar.net", UNCHANGED,
         "absolute", None, None, None),
    # --- RFC 2557 §9.1: single 8bit iso-8859-1 part, absolute link.
    Case("c03-rfc2557-9.1-absolute", "rfc2557-9.1.eml", "1", f"{IETF}/", UNCHANGED, "absolute", None, None, None),
    # --- RFC 2557 §9.2: absolute reference; the image's Content-Location is folded (§4.4.3).
    Case("c04-rfc2557-9.2-absolute", "rfc2557-9.2.eml", "1.1", f"{IETF}/images/ietflogo.gif", UNCHANGED,
         "absolute", None, None, None),
    # --- RFC 2557 §9.3: base from the outermost heading (§5(c)), QP body; CRLF and LF.
    *_rfc2557_93("rfc2557-9.3.eml"),
    *_rfc2557_93("rfc2557-9.3-lf.eml"),
    # §5(c) comes before §5(d): a retrieval URL does not override the heading's base.
    *_rfc2557_93("rfc2557-9.3.eml", url="http://retrieval.example/saved/msg.eml", tag="-5c-before-5d"),
    # --- RFC 2557 §9.4: no base available; the reference names the image part (§8, thismessage:/).
    Case("c08-rfc2557-9.4-part", "rfc2557-9.4.eml", "1.1", "ietflogo.gif", UNCHANGED, "part",
         None, None, None),
    # ... unless the message was retrieved from a URL (§5(d), RFC 1808 §3.3).
    Case("c08-rfc2557-5d-retrieval-url", "rfc2557-9.4.eml", "1.1", "ietflogo.gif",
         "http://retrieval.example/saved/ietflogo.gif", "rewritten", "http://retrieval.example/saved/msg.eml",
         "retrieval-url", None, url="http://retrieval.example/saved/msg.eml"),
    # --- RFC 2557 §9.5 / §8.3: cid: references are absolute and never rewritten.
    Case("c09-rfc2557-9.5-cid", "rfc2557-9.5.eml", "1.1", "cid:foo4@foo1@bar.net", UNCHANGED, "absolute",
         None, None, None),
    # --- RFC 2557 §9.6: nested multipart/related.
    Case("c10-rfc2557-9.6-absolute", "rfc2557-9.6.eml", "1.1", f"{IETF}/images/ietflogo.gif", UNCHANGED,
         "absolute", None, None, None),
    Case("c11-rfc2557-9.6-outer-no-base", "rfc2557-9.6.eml", "1.1", "images/ietflogo2e.gif", UNCHANGED,
         "no-base", None, None, None),
    Case("c12-rfc2557-9.6-absolute", "rfc2557-9.6.eml", "1.1", f"{IETF}/more-info", UNCHANGED, "absolute",
         None, None, None),
    Case("c13-rfc2557-9.6-absolute", "rfc2557-9.6.eml", "1.1", f"{IETF}/even-more-info", UNCHANGED, "absolute",
         None, None, None),
    *_rfc2557_96_nested(strict=True),
    # Cases 15/16: the *references* resolve the same under the non-strict reading (RFC 3986 §5.2.2); only the
    # RFC's claim that they match the `http:images/...` Content-Locations needs it. Run both ways.
    *_rfc2557_96_nested(strict=False),
    # Derived from §9.6: an HTML part's own `Content-Location: http:images/page.html`. Non-strict (needs
    # strict=False): same-scheme relative, resolved against the enclosing base (§8.2(c)), so the part's own base.
    Case("c15d-rfc2557-9.6-http-relative-cl-nonstrict", "rfc2557-9.6-nonstrict.eml", "1.1", "ietflogo2.gif",
         f"{IETF}/images/ietflogo2.gif", "rewritten", f"{IETF}/images/page.html", "Content-Location", "1.1",
         strict=False),
    # Strict RFC 3986: `http:images/page.html` is absolute with an opaque path (no authority, rootless), so it
    # cannot serve as a base (RFC 3986 §5.2.3 needs a hierarchical base) and gives nothing at its level.
    Case("c15d-rfc2557-9.6-http-relative-cl-strict", "rfc2557-9.6-nonstrict.eml", "1.1", "ietflogo2.gif",
         f"{IETF}/ietflogo2.gif", "rewritten", f"{IETF}/more-info", "Content-Location", "1"),
    # --- RFC 2110 §4.2 part 2: Content-Base beats Content-Location (RFC 2110 §5(b) before (c)); `?page=3`
    # tells the Content-Base (…/images/) from the Content-Location resolved against it (…/images/foo1.bar1).
    Case("c18-rfc2110-4.2-content-base", "rfc2110-4.2.eml", "1.2", "y.gif", f"{IETF}/images/y.gif", "rewritten",
         f"{IETF}/images/", "Content-Base", "1.2"),
    Case("c18-rfc2110-5b-before-5c", "rfc2110-4.2.eml", "1.2", "?page=3", f"{IETF}/images/?page=3", "rewritten",
         f"{IETF}/images/", "Content-Base", "1.2"),
    # --- RFC 2110 §4.2 part 1 (the RFC's "cnir" typo kept): the part's own absolute Content-Location.
    Case("c19-rfc2110-4.2-content-location", "rfc2110-4.2.eml", "1.1", "x.gif",
         "http://www.ietf.cnir.reston.va.us/images/x.gif", "rewritten",
         "http://www.ietf.cnir.reston.va.us/images/foo1.bar1", "Content-Location", "1.1"),
    Case("c19-rfc2110-5c-query", "rfc2110-4.2.eml", "1.1", "?page=2",
         "http://www.ietf.cnir.reston.va.us/images/foo1.bar1?page=2", "rewritten",
         "http://www.ietf.cnir.reston.va.us/images/foo1.bar1", "Content-Location", "1.1"),
    # --- RFC 2110 §9.3: Content-Base on the multipart heading is inherited (RFC 1808 §3.2, RFC 2557 §5(c);
    # contrary to RFC 2110 §4.1). The base has an empty path: RFC 3986 §5.2.3 merge gives "/" + ref.
    Case("c20-rfc2110-9.3-inherited-content-base", "rfc2110-9.3.eml", "1.1", "/images/ietflogo.gif",
         f"{IETF}/images/ietflogo.gif", "rewritten", IETF, "Content-Base", "1"),
    # --- RFC 2110 §4.3 / §8.2: relative Content-Location, no base: nothing is resolved; the textual match
    # (RFC 2557 §8: thismessage:/) makes the first a link to part 1.2, the second names no part.
    Case("c21-rfc2110-4.3-part", "rfc2110-4.3.eml", "1.1", "fiction1/fiction2", UNCHANGED, "part",
         None, None, None),
    Case("c21-rfc2110-8.2-relative-cl-no-base", "rfc2110-4.3.eml", "1.2", "fiction3", UNCHANGED, "no-base",
         None, None, None),
    # --- RFC 1808 §3.1 Base header.
    Case("c22-rfc1808-3.1-base-header", "rfc1808-3.1.eml", "1", "../d", "http://www.ics.uci.edu/Test/a/d",
         "rewritten", "http://www.ics.uci.edu/Test/a/b/c", "Base", "1"),
    Case("c22-rfc1808-3.1-base-header-e", "rfc1808-3.1.eml", "1", "e", "http://www.ics.uci.edu/Test/a/b/e",
         "rewritten", "http://www.ics.uci.edu/Test/a/b/c", "Base", "1"),
    # Folded, odd name case, whitespace inside <> (RFC 1808 §3.1), and beating a Content-Location in the same
    # heading (RFC 2068 §14.11: Content-Base "is described as Base in RFC 1808"; RFC 2110 §5(b) before (c)).
    Case("p-rfc1808-3.1-folded-base", "rfc1808-3.1-folded.eml", "1.2", "../d", "http://www.ics.uci.edu/Test/a/d",
         "rewritten", "http://www.ics.uci.edu/Test/a/b/c", "Base", "1"),
    Case("p-rfc1808-3.1-folded-base-g", "rfc1808-3.1-folded.eml", "1.2", "g", "http://www.ics.uci.edu/Test/a/b/g",
         "rewritten", "http://www.ics.uci.edu/Test/a/b/c", "Base", "1"),
    *_rfc1808_51(),
    # RFC 2046 §5.1.5: a digest's part without a Content-Type is a message/rfc822 (its text/html inside is
    # rewritten against the digest's base); one typed text/plain stays text.
    Case("p-rfc2046-5.1.5-digest-default-type", "rfc2046-digest.eml", "1.1.1", "msg00001.html",
         "http://lists.example.com/archive/2024/msg00001.html", "rewritten", "http://lists.example.com/archive/2024/",
         "Content-Location", "1"),
    # --- Precedence: <base> (RFC 2557 §5(a), RFC 2110 §5(a)).
    Case("c23-rfc2557-5a-base-element", "precedence-base-element.eml", "1.1", "z", "http://h/x/z", "rewritten",
         "http://h/x/", "base-element", None),
    # A relative <base href> is resolved against the MIME base (HTML "fallback base URL", RFC 1808 §3.1 + §3.2).
    Case("c24-relative-base-element-href", "precedence-base-element.eml", "1.2", "sub/", "http://cl/w/sub/",
         "rewritten", "http://cl/w/sub/", "base-element", None),
    Case("c24-relative-base-element", "precedence-base-element.eml", "1.2", "z2", "http://cl/w/sub/z2",
         "rewritten", "http://cl/w/sub/", "base-element", None),
    Case("p-rfc2110-5a-base-element-over-content-base", "precedence-base-element.eml", "1.3", "q", "http://h2/v/q",
         "rewritten", "http://h2/v/", "base-element", None),
    # --- Precedence: relative Content-Location resolved against the enclosing base (RFC 2557 §8.2(c), §9.3).
    Case("c25-relative-cl", "precedence-relative-cl.eml", "1.1", "img.png", "http://e/dir/img.png", "rewritten",
         "http://e/dir/page.html", "Content-Location", "1.1"),
    Case("c25-relative-cl-query", "precedence-relative-cl.eml", "1.1", "?q=1", "http://e/dir/page.html?q=1",
         "rewritten", "http://e/dir/page.html", "Content-Location", "1.1"),
    Case("p-relative-cl-chain", "precedence-relative-cl.eml", "1.2.1", "pic.png", "http://e/dir/sub/pic.png",
         "rewritten", "http://e/dir/sub/page2.html", "Content-Location", "1.2.1"),
    Case("p-relative-cl-on-multipart", "precedence-relative-cl.eml", "1.2.2", "x.png", "http://e/dir/sub/x.png",
         "rewritten", "http://e/dir/sub/", "Content-Location", "1.2"),
    # --- Precedence: Content-Base against Content-Location (RFC 2110 §5, RFC 2068 §14.11).
    Case("c26-rfc2110-5b-content-base-over-cl", "precedence-content-base.eml", "1.1", "z1", "http://b/z1",
         "rewritten", "http://b/", "Content-Base", "1.1"),
    Case("p-content-base-quoted", "precedence-content-base.eml", "1.2", "z2", "http://b.example/q/z2",
         "rewritten", "http://b.example/q/", "Content-Base", "1.2"),
    Case("p-content-base-over-cl-on-multipart", "precedence-content-base.eml", "1.3.1", "z3",
         "http://mb.example/base/z3", "rewritten", "http://mb.example/base/", "Content-Base", "1.3"),
    Case("p-relative-cl-against-inherited-content-base", "precedence-content-base.eml", "1.3.2", "z4",
         "http://mb.example/base/z4", "rewritten", "http://mb.example/base/page.html", "Content-Location", "1.3.2"),
    Case("p-relative-cl-against-inherited-content-base-query", "precedence-content-base.eml", "1.3.2", "?p=4",
         "http://mb.example/base/page.html?p=4", "rewritten", "http://mb.example/base/page.html",
         "Content-Location", "1.3.2"),
    Case("p-content-base-folded", "precedence-content-base.eml", "1.4", "z5", "http://b.example/long/z5",
         "rewritten", "http://b.example/long/", "Content-Base", "1.4"),
    # --- Precedence: through message/rfc822, two levels (RFC 1808 §3.2, RFC 2557 §5(c) "message heading").
    Case("c27-rfc1808-3.2-outer", "precedence-rfc822.eml", "1.1", "a.html", "http://outer.example/top/a.html",
         "rewritten", "http://outer.example/top/", "Content-Location", "1"),
    Case("c27-rfc1808-3.2-inner-message-heading", "precedence-rfc822.eml", "1.2.1.1", "b.html",
         "http://inner.example.com/b.html", "rewritten", "http://inner.example.com/", "Content-Location", "1.2.1"),
    Case("c27-rfc1808-3.2-message-rfc822-part-heading", "precedence-rfc822.eml", "1.3.1.2", "c.html",
         "http://wrapper.example/w/c.html", "rewritten", "http://wrapper.example/w/", "Content-Location", "1.3"),
    Case("c27-rfc1808-3.2-through-both", "precedence-rfc822.eml", "1.4.1", "d.html",
         "http://outer.example/top/d.html", "rewritten", "http://outer.example/top/", "Content-Location", "1"),
    # --- RFC 2557 §4.4.1 / §4.4.3 / §8.2(a)(b): RFC 2047-encoded Content-Location, decoded, not percent-decoded.
    # The decoded space stays as it is (the HTML engine writes base text unchanged).
    Case("c28-rfc2557-4.4-encoded-q", "rfc2557-4.4-encoded-cl.eml", "1.1", "c.html", "http://example.com/a b/c.html",
         "rewritten", "http://example.com/a b/", "Content-Location", "1.1"),
    Case("p-rfc2557-4.4-encoded-b", "rfc2557-4.4-encoded-cl.eml", "1.2", "d.html", "http://example.com/enc/d.html",
         "rewritten", "http://example.com/enc/", "Content-Location", "1.2"),
    Case("p-rfc2557-8.2b-no-percent-decoding", "rfc2557-4.4-encoded-cl.eml", "1.3", "e.html",
         "http://example.com/a%2eb/c%20d/e.html", "rewritten", "http://example.com/a%2eb/c%20d/",
         "Content-Location", "1.3"),
    # RFC 2047 §6.2: whitespace (here a fold) between adjacent encoded-words is dropped.
    Case("p-rfc2557-4.4.3-folded-encoded-words", "rfc2557-4.4-encoded-cl.eml", "1.4", "f.html",
         "http://example.com/long/path/f.html", "rewritten", "http://example.com/long/path/", "Content-Location",
         "1.4"),
    # --- Case 29: Chrome's cid: Content-Location on a CSS part is no base (opaque); Snapshot-Content-Location
    # serves as the retrieval URL when no url= is given; a given url= wins over it.
    Case("c29-chrome-cid-css-snapshot", "chrome-cid-css.eml", "1.2", "/static/x.woff",
         "https://example.org/static/x.woff", "rewritten", "https://example.org/news/page.html",
         "Snapshot-Content-Location", "1"),
    Case("c29-chrome-html-own-cl", "chrome-cid-css.eml", "1.1", "story.html", "https://example.org/news/story.html",
         "rewritten", "https://example.org/news/page.html", "Content-Location", "1.1"),
    Case("c29-chrome-cid-link", "chrome-cid-css.eml", "1.1", "cid:css-1@mhtml.blink", UNCHANGED, "absolute",
         "https://example.org/news/page.html", "Content-Location", "1.1"),
    # The cid: style part is content of the page part 1.1 that links it (RFC 1808 §3.2): that page's own
    # Content-Location is its base, as it is the page's, even when a url= for the whole message is given.
    Case("c29-chrome-cid-css-url", "chrome-cid-css.eml", "1.2", "/static/x.woff",
         "https://example.org/static/x.woff", "rewritten", "https://example.org/news/page.html",
         "Content-Location", "1.1", url="https://mirror.example/saved/page.mhtml"),
    Case("c29-chrome-html-own-cl-with-url", "chrome-cid-css.eml", "1.1", "story.html",
         "https://example.org/news/story.html", "rewritten", "https://example.org/news/page.html",
         "Content-Location", "1.1", url="https://mirror.example/saved/page.mhtml"),
    # --- Opaque (cid:) Content-Location: no base at its level, the enclosing one serves (RFC 3986 §5.2.3 needs a
    # hierarchical base); with no enclosing base the references stay (RFC 2557 §8.3: CID: locations ignored).
    Case("p-cid-cl-html-inherits", "precedence-cid-base.eml", "1.1.1", "img.png", "http://e.example/dir/img.png",
         "rewritten", "http://e.example/dir/", "Content-Location", "1.1"),
    Case("p-cid-cl-css-inherits", "precedence-cid-base.eml", "1.1.2", "/static/x.woff",
         "http://e.example/static/x.woff", "rewritten", "http://e.example/dir/", "Content-Location", "1.1"),
    Case("c29-cid-cl-css-no-base", "precedence-cid-base.eml", "1.2", "/static/y.woff", UNCHANGED, "no-base",
         None, None, None),
    Case("p-rfc2557-8.3-CID-cl-no-base", "precedence-cid-base.eml", "1.3", "a.html", UNCHANGED, "no-base",
         None, None, None),
    # --- Transfer encodings and charsets (RFC 2557 §8.2(b): remove the CTE before resolving).
    *_qp("qp-soft-break-crlf.eml"),
    *_qp("qp-soft-break-lf.eml"),
    Case("p-base64-html-link", "base64-html.eml", "1.1", "style.css", "http://b64.example/site/style.css",
         "rewritten", "http://b64.example/site/", "Content-Location", "1"),
    Case("p-base64-html-a", "base64-html.eml", "1.1", "../up.html", "http://b64.example/up.html", "rewritten",
         "http://b64.example/site/", "Content-Location", "1"),
    Case("p-base64-html-img", "base64-html.eml", "1.1", "pics/a.png", "http://b64.example/site/pics/a.png",
         "rewritten", "http://b64.example/site/", "Content-Location", "1"),
    Case("p-latin1-8bit-a", "latin1-8bit.eml", "1", "carte.html", "http://latin.example/menu/carte.html",
         "rewritten", "http://latin.example/menu/", "Content-Location", "1"),
    Case("p-latin1-8bit-img", "latin1-8bit.eml", "1", "images/ete.png", "http://latin.example/menu/images/ete.png",
         "rewritten", "http://latin.example/menu/", "Content-Location", "1"),
]  # fmt: skip

Run = tuple[str, str | None, bool]  # fixture, url, strict
RUNS: list[Run] = sorted({(case.fixture, case.url, case.strict) for case in CASES}, key=str)


def _run_id(run: Run) -> str:
    fixture, url, strict = run
    return fixture + ("+url" if url else "") + ("" if strict else "+nonstrict")


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def _policy(strict: bool) -> Policy:
    return DEFAULT_POLICY if strict else Policy().clone(strict=False)


@functools.cache
def _rewrite(fixture: str, url: str | None, strict: bool) -> tuple[bytes, MessageResult]:
    data = (FIXTURES / fixture).read_bytes()
    return data, rewrite_message(data, url=url, policy=_policy(strict))


def _walk(message: Message, path: str = "1") -> Iterator[tuple[str, Message]]:
    """Every entity with its path; a message/rfc822 part's payload is its enclosed message, path + ".1"."""
    yield path, message
    if message.is_multipart():
        for number, child in enumerate(message.get_payload(), 1):
            yield from _walk(child, f"{path}.{number}")


def _entities(data: bytes) -> dict[str, Message]:
    return dict(_walk(email.message_from_bytes(data)))


def _decoded(data: bytes) -> dict[str, bytes]:
    """The body of every leaf entity with its Content-Transfer-Encoding removed (stdlib email)."""
    return {
        path: entity.get_payload(decode=True)
        for path, entity in _walk(email.message_from_bytes(data))
        if not entity.is_multipart()
    }


def _site(reference: str) -> re.Pattern[bytes]:
    """The reference as an attribute value ("...") or a CSS url(...), nothing more and nothing less."""
    return re.compile(rb'(?<=["(])' + re.escape(reference.encode("latin-1")) + rb'(?=[")])')


def _part(result: MessageResult, path: str) -> Part:
    found = [part for part in result.parts if part.path == path]
    assert len(found) == 1, f"no single part {path!r} among {[part.path for part in result.parts]}"
    return found[0]


# --------------------------------------------------------------------------
# One reference: its base, its layer, what is written in its place
# --------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_reference(case: Case) -> None:
    data, result = _rewrite(case.fixture, case.url, case.strict)
    part = _part(result, case.path)
    assert part.content_type in REWRITABLE
    assert (part.base, part.layer, part.origin) == (case.base, case.layer, case.origin)

    links = [link for link in part.links if link.original == case.reference]
    assert links, f"{case.reference!r} not among {[link.original for link in part.links]}"
    assert {link.status for link in links} == {case.status}
    if case.expected != UNCHANGED:
        assert {link.resolved for link in links} == {case.expected}

    before = _decoded(data)[case.path]
    after = _decoded(result.output)[case.path]
    assert _site(case.reference).search(before), "the fixture does not hold the reference"
    if case.expected == UNCHANGED:
        assert _site(case.reference).search(after)
    else:
        assert not _site(case.reference).search(after)
        assert _site(case.expected).search(after)
    assert b"thismessage:" not in result.output  # RFC 2557 §5(e) is for matching only


# --------------------------------------------------------------------------
# One message: nothing else changes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("run", RUNS, ids=[_run_id(run) for run in RUNS])
def test_only_rewritten_bodies_change(run: Run) -> None:
    """Every byte outside [body_start, end) of the rewritten parts is the input's, in the same order."""
    data, result = _rewrite(*run)
    rewritten = sorted((part for part in result.parts if part.action == "rewritten"), key=lambda p: p.body_start)
    assert all(part.content_type in REWRITABLE for part in rewritten)
    if not rewritten:
        assert result.output == data
        return
    cuts = [0]
    for part in rewritten:
        assert cuts[-1] <= part.body_start <= part.end <= len(data)
        cuts += [part.body_start, part.end]
    cuts.append(len(data))
    kept = [re.escape(data[cuts[i] : cuts[i + 1]]) for i in range(0, len(cuts), 2)]
    assert re.fullmatch(b"(.*?)".join(kept), result.output, re.DOTALL), "bytes outside the rewritten bodies changed"


@pytest.mark.parametrize("run", RUNS, ids=[_run_id(run) for run in RUNS])
def test_decoded_bodies_change_only_at_the_references(run: Run) -> None:
    """Decoded, each body is the input's with exactly the table's references replaced; actions agree."""
    data, result = _rewrite(*run)
    before, after = _decoded(data), _decoded(result.output)
    assert before.keys() == after.keys()
    cases = [case for case in CASES if (case.fixture, case.url, case.strict) == run]
    for path, body in before.items():
        expected = body
        for case in cases:
            if case.path == path and case.expected != UNCHANGED:
                expected = _site(case.reference).sub(lambda _, new=case.expected: new.encode("latin-1"), expected)
        assert after[path] == expected, f"part {path}"
    for part in result.parts:
        entity = _entities(data)[part.path]
        if entity.is_multipart():
            assert part.action == "container", part.path
        elif part.content_type not in REWRITABLE:
            assert part.action == "other", part.path
        elif any(case.path == part.path and case.expected != UNCHANGED for case in cases):
            assert part.action == "rewritten", part.path
        else:
            assert part.action == "unchanged", part.path


@pytest.mark.parametrize("run", RUNS, ids=[_run_id(run) for run in RUNS])
def test_tree_shape(run: Run) -> None:
    """The stdlib sees the same tree in the output; result.parts is that tree, in order, with sane spans."""
    data, result = _rewrite(*run)
    shape = [entity.get_content_type() for entity in email.message_from_bytes(data).walk()]
    assert [entity.get_content_type() for entity in email.message_from_bytes(result.output).walk()] == shape
    entities = _entities(data)
    assert [(part.path, part.content_type) for part in result.parts] == [
        (path, entity.get_content_type()) for path, entity in entities.items()
    ]
    by_path = {part.path: part for part in result.parts}
    for part in result.parts:
        assert 0 <= part.start <= part.body_start <= part.end <= len(data), part.path
        parent = by_path.get(part.path.rpartition(".")[0])
        if parent is not None:
            assert parent.body_start <= part.start and part.end <= parent.end, part.path
        entity = entities[part.path]
        heading = data[part.start : part.body_start]
        for name in entity:
            assert name.encode() in heading, f"{part.path}: {name} is not in [start, body_start)"
        if not entity.is_multipart():
            # [body_start, end), read under the part's transfer encoding, is the body the stdlib sees.
            encoding = str(entity.get("Content-Transfer-Encoding", "7bit")).encode()
            probe = email.message_from_bytes(
                b"Content-Transfer-Encoding: " + encoding + b"\n\n" + data[part.body_start : part.end]
            )
            body = probe.get_payload(decode=True)
            assert _chomp(body) == _chomp(entity.get_payload(decode=True)), f"{part.path}: [body_start, end)"


def _chomp(body: bytes) -> bytes:
    return body[:-2] if body.endswith(b"\r\n") else body[:-1] if body.endswith(b"\n") else body


@pytest.mark.parametrize("run", RUNS, ids=[_run_id(run) for run in RUNS])
def test_line_ends_and_transfer_encoding_kept(run: Run) -> None:
    """CRLF stays CRLF, LF stays LF (also inside re-encoded bodies); QP and base64 lines stay valid."""
    data, result = _rewrite(*run)
    if b"\r\n" in data:
        assert re.search(rb"(?<!\r)\n", data) is None
        assert re.search(rb"(?<!\r)\n", result.output) is None, "a bare LF in a CRLF message"
    else:
        assert b"\r" not in result.output, "a CR in an LF message"
    for path, entity in _entities(result.output).items():
        encoding = str(entity.get("Content-Transfer-Encoding", "")).strip().lower()
        if entity.is_multipart() or encoding not in {"quoted-printable", "base64"}:
            continue
        lines = entity.get_payload().encode("ascii", "surrogateescape").splitlines()
        assert all(len(line) <= 76 for line in lines), f"{path}: RFC 2045 §6.7/§6.8 line length"
        if encoding == "quoted-printable":
            for line in lines:
                assert re.search(rb"=(?![0-9A-F]{2}|$)", line) is None, f"{path}: bad QP escape in {line!r}"


@pytest.mark.parametrize("run", RUNS, ids=[_run_id(run) for run in RUNS])
def test_rewriting_again_changes_nothing(run: Run) -> None:
    _, url, strict = run
    _, result = _rewrite(*run)
    assert rewrite_message(result.output, url=url, policy=_policy(strict)).output == result.output


def test_every_fixture_is_used() -> None:
    assert {path.name for path in FIXTURES.glob("*.eml")} == {case.fixture for case in CASES}


# RFC 5322 §2.1.1: at most 998 octets a line. A rewrite that lengthens a line of a body sent as it is
# (7bit, 8bit) past that is done and reported; re-encoded bodies (quoted-printable, base64) have short lines.
_LONG_LINE = " ".join(f'<a href="p{number}.html">x</a>' for number in range(40)).encode()  # 989 octets


def _html_message(encoding: str | None, body: bytes) -> bytes:
    heading = b"MIME-Version: 1.0\r\nContent-Type: text/html\r\nContent-Location: http://example.org/long/path/\r\n"
    if encoding:
        heading += b"Content-Transfer-Encoding: " + encoding.encode() + b"\r\n"
    return heading + b"\r\n" + body + b"\r\n"


@pytest.mark.parametrize("encoding", [None, "7bit", "8bit"])
def test_a_line_grown_past_998_octets_is_reported(encoding: str | None) -> None:
    assert len(_LONG_LINE) <= 998
    result = rewrite_message(_html_message(encoding, _LONG_LINE))
    (part,) = result.parts
    assert part.action == "rewritten"
    assert b'href="http://example.org/long/path/p39.html"' in result.output
    assert max(len(line) for line in result.output.split(b"\r\n")) > 998
    assert len(part.problems) == 1 and "longer than the 998 octets RFC 5322" in part.problems[0]
    assert f"in a {encoding or '7bit'} body" in part.problems[0]


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        ("binary", _LONG_LINE),  # no line limit (RFC 3030)
        ("7bit", _LONG_LINE.replace(b" ", b"\r\n")),  # every line stays short
        ("7bit", _LONG_LINE + b"<!--" + b"-" * 1000 + b"-->"),  # too long before the rewrite already
    ],
    ids=["binary", "short lines", "long already"],
)
def test_no_line_length_report_where_the_rewrite_breaks_no_limit(encoding: str, body: bytes) -> None:
    result = rewrite_message(_html_message(encoding, body))
    (part,) = result.parts
    assert part.action == "rewritten"
    assert not any("998" in problem for problem in part.problems)


def test_a_quoted_printable_body_keeps_short_lines() -> None:
    import quopri

    result = rewrite_message(_html_message("quoted-printable", quopri.encodestring(_LONG_LINE)))
    (part,) = result.parts
    assert part.action == "rewritten" and part.problems == ()
    assert max(len(line) for line in result.output.split(b"\r\n")) <= 76
