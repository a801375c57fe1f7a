"""URLs: the resolver that turns (base, reference) into an absolute URL under four rule
sets (:mod:`~rewriter.url.resolve`), the Encoding Standard's encoders for a query in a
document that is not UTF-8 (:mod:`~rewriter.url.query_encoding`), and the base of
RFC 1808 §3: its layers, what can be one, and the chain from innermost to outermost
(:mod:`~rewriter.url.base`). It knows nothing of documents; every layer above uses it.
"""
