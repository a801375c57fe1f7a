"""Web archives: read the pages of a WARC (or ARC) file, write it back with its pages
rewritten (WARC out), or mirror its pages into a folder.

A WARC file (ISO 28500:2017, WARC 1.1) holds what a crawler fetched: each ``response``
record an HTTP response (RFC 9112 §4-§6: status line, header fields, body as sent),
each ``resource`` record a resource without HTTP around it. :func:`iter_documents`
reads both with :mod:`warcio`, plain or gzip (one gzip member per record, WARC 1.1
Annex D), and gives each body with the chunked transfer coding (RFC 9112 §7.1) and the
content coding (RFC 9110 §8.4) undone. Damage never raises: a record that is cut short
or cannot be parsed is named by its offset, and reading goes on at the next record. An
ARC v1 file (the Internet Archive's format before WARC) is read the same way, each record
as the WARC record warcio's ARC-to-WARC reading makes of it.

:func:`rewrite_warc_piece` is WARC out: every record written back as it was, each page
(a whole 2xx HTML or CSS response, or a resource record) followed by a ``conversion``
record (WARC 1.1 §6.7) holding it rewritten against its own URL, found from the page by its
``WARC-Refers-To``; written so that a replay tool (pywb) still replays the original capture and
warcio's and warcat's checkers pass it (:mod:`.page`). :func:`plan_warc` cuts a large file into
pieces at record starts, which are written independently and joined.

:func:`rewrite_warc` writes every HTML and CSS page of the archive with its relative
links made absolute against the page's own URL (its ``WARC-Target-URI``: a redirect's
target is a record of its own, RFC 9110 §15.4). :func:`unpack_warc` writes every
resource, and points each link the archive can answer (directly or through its
recorded redirects) at the file that answers it, by a relative path.

The mirror is ``OUT/<host>[_<port>]/<path segments>``: a path ending in ``/`` gets an
``index`` file, a query is folded into the last name (``search?q=1`` is
``search_q=1.html``), and every name is made by :class:`rewriter.disk.names.Folder`, so that
nothing is written outside OUT, nothing is overwritten, and each file appears whole or
not at all. ``OUT/manifest.json`` lists what each record became. A mirror is three steps, which a
run of the pipeline does apart (rewriter.run.pipeline.MirrorFolder): :func:`plan_mirror` reads
the file once and picks every file's name, :func:`write_mirror_piece` writes the records of one
piece of the file by that plan (pieces in any order, or at once), :func:`finish_mirror` writes
the manifest.

One module per job: :mod:`.read` the record loop (warcio, and going on past damage), :mod:`.http`
HTTP bodies, :mod:`.model` what reading gives, :mod:`.redirects`, :mod:`.layout` the mirror's names,
:mod:`.mirror` the mirror's three steps, :mod:`.page` a page and its conversion record, :mod:`.out`
WARC out.

>>> import io, tempfile, pathlib
>>> from warcio.warcwriter import WARCWriter
>>> from warcio.statusandheaders import StatusAndHeaders
>>> buffer = io.BytesIO()
>>> writer = WARCWriter(buffer, gzip=True)
>>> http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
>>> writer.write_record(writer.create_warc_record("http://example.org/docs/", "response",
...     payload=io.BytesIO(b'<a href="guide.html">guide</a>'), http_headers=http))
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "site.warc.gz").write_bytes(buffer.getvalue())
>>> report = rewrite_warc(folder / "site.warc.gz", folder / "out")
>>> report.documents, report.links, report.problems
(('example.org/docs/index.html',), 1, ())
>>> (folder / "out" / "example.org" / "docs" / "index.html").read_bytes()
b'<a href="http://example.org/docs/guide.html">guide</a>'
"""

from __future__ import annotations

from rewriter.containers.formats import is_warc
from rewriter.containers.warc.layout import MAX_DEPTH as MAX_DEPTH
from rewriter.containers.warc.mirror import MANIFEST as MANIFEST
from rewriter.containers.warc.mirror import (
    MirroredRecord,
    MirrorPlan,
    WarcEntry,
    WarcReport,
    finish_mirror,
    plan_mirror,
    rewrite_warc,
    unpack_warc,
    write_mirror_piece,
)
from rewriter.containers.warc.model import MAX_BODY, WarcDamage, WarcDocument
from rewriter.containers.warc.model import Source as Source
from rewriter.containers.warc.model import Wanted as Wanted
from rewriter.containers.warc.out import plan_warc, rewrite_warc_piece
from rewriter.containers.warc.page import WarcPage
from rewriter.containers.warc.read import iter_documents
from rewriter.containers.warc.redirects import follow_redirects, redirect_map
from rewriter.document.engines import CSS_TYPES, DOCUMENT_TYPES, HTML_TYPES
from rewriter.url.resolve import url_key

__all__ = [
    "CSS_TYPES",
    "DOCUMENT_TYPES",
    "HTML_TYPES",
    "MAX_BODY",
    "MirrorPlan",
    "MirroredRecord",
    "WarcDamage",
    "WarcDocument",
    "WarcEntry",
    "WarcPage",
    "WarcReport",
    "finish_mirror",
    "follow_redirects",
    "is_warc",
    "iter_documents",
    "plan_mirror",
    "plan_warc",
    "redirect_map",
    "rewrite_warc",
    "rewrite_warc_piece",
    "unpack_warc",
    "url_key",
    "write_mirror_piece",
]
