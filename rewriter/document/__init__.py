"""The per-document pipeline below the HTML and CSS engines: decode the bytes, let an
engine find the links in the text, classify each against its base, map text offsets to
byte offsets and splice the new URLs into the original bytes, giving one result per
document. It also holds the encodings (:mod:`~rewriter.document.encoding`) and the engine
table that says which engine reads which document (:mod:`~rewriter.document.engines`).
"""
