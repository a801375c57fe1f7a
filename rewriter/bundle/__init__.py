"""Offline bundles: ``pack`` gathers a saved page and the local files it references into
one MHTML file (or one HTML file with ``data:`` URLs), and ``unpack`` writes each part of
an MHTML archive, a message or a WARC to a file of its own, the links between them made
local.
"""
