"""The MIME engine: the HTML and CSS parts of a message (eml, MHTML, each message of an
mbox or a Maildir) rewritten with the base each part inherits through the nested headings,
every other byte of the message as it was; headings read as RFC 5322 and RFC 2231 write
them (:mod:`~rewriter.mime.heading`), bodies decoded and encoded again as their
Content-Transfer-Encoding says (:mod:`~rewriter.mime.transfer`).
"""

from rewriter.mime.message import (
    Entity,
    MessageResult,
    Part,
    entities,
    find_message_links,
    header_url,
    rewrite_message,
)

__all__ = ["Entity", "MessageResult", "Part", "entities", "find_message_links", "header_url", "rewrite_message"]
