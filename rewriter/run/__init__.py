"""Runs over many inputs: the plan (a stream of jobs over files, folders, mboxes, Maildirs
and archives), the pipeline that takes jobs to results in plan order with retries and
pieces, where jobs run (this process, worker processes, Dask), the journal ``--resume``
reads, the report, and the collections' URLs (``--url-root``, ``--url-map``).
"""
