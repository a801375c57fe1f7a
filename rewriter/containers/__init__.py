"""Containers of documents: what a file is, told by its first bytes
(:mod:`~rewriter.containers.formats`); mbox and Maildir (:mod:`~rewriter.containers.mailbox`)
and WARC and ARC archives (:mod:`~rewriter.containers.warc`), each read record by record,
their documents handed to the engines and written back byte for byte; and the pieces a
large one is cut into so that several workers share it (:mod:`~rewriter.containers.pieces`).
"""
