"""Batch runs: many files, folders, mboxes and Maildirs, in parallel, with atomic writes.

The run's parts live beside this module, one job each: :mod:`rewriter.run.jobs` (the types and
their JSON), :mod:`rewriter.run.plan` (the planner), :mod:`rewriter.run.work` (doing one job),
:mod:`rewriter.run.tally` (the counts) and :mod:`rewriter.run.pipeline` (doing them all, in
order); this module hands on their public names (its old home, and ``rewriter.batch``'s) and
holds :func:`run`, the library's one call for a run.

A run is planned first, as a list of :class:`Job` (one input, one output), then each job
is done by :func:`run_job`, in this process or in worker processes: the outcomes come
back in the order of the plan whatever the number of workers, so outputs and reports
are the same for ``-j 1`` and ``-j 8``.

Every file is written through a temporary file in the same folder (fsync, rename, then
fsync of the folder; :mod:`rewriter.disk.files`): a reader, a crash or a ``kill -9`` sees the
old content or the new, never a mix. A failure in one job is reported in its :class:`Outcome`; the
others go on.

In place, only regular files are rewritten (a named pipe or a device is refused, never
replaced), and a file that another process changed, replaced or removed while it was being
rewritten is left as it is and reported. Under ``-o DIR`` (and in a folder rewritten in
place), folders are made and opened one level at a time and no symbolic link inside the
tree is followed. A temporary name holds at most 64 bytes of its file's name, so that a
file whose name has the file system's largest length (255 bytes) can be rewritten too.

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "page.html").write_bytes(b"<!-- saved from url=(0019)http://example.org/ --><a href=x>x</a>")
>>> jobs, problems = plan([str(folder)], in_place=True)
>>> [outcome.state for outcome in run(jobs, Settings())]
['rewritten']
>>> (folder / "page.html").read_bytes()[-34:]
b'<a href=http://example.org/x>x</a>'
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator

# Every public name of this module before it was split, handed on from its new home (those
# outside __all__ as "name as name": a re-export, not an unused import).
from rewriter.disk.files import write_atomically
from rewriter.run.jobs import Job, Outcome, Settings, Unrecognised
from rewriter.run.jobs import State as State
from rewriter.run.jobs import job_key as job_key
from rewriter.run.jobs import outcome_from_json as outcome_from_json
from rewriter.run.jobs import outcome_json as outcome_json
from rewriter.run.jobs import outcome_problem as outcome_problem
from rewriter.run.plan import Found as Found
from rewriter.run.plan import iter_plan as iter_plan
from rewriter.run.plan import kinds_of, plan
from rewriter.run.tally import count_into, located_links, tally, totals
from rewriter.run.work import REPORT_INLINE as REPORT_INLINE
from rewriter.run.work import job_settings, process, run_job
from rewriter.run.work import load_mirror_plan as load_mirror_plan
from rewriter.run.work import mirror_plan_path as mirror_plan_path
from rewriter.run.work import pieces_path as pieces_path
from rewriter.run.work import replacing_target as replacing_target
from rewriter.run.work import run_batch as run_batch

__all__ = [
    "Job",
    "Outcome",
    "Settings",
    "Unrecognised",
    "count_into",
    "job_settings",
    "kinds_of",
    "located_links",
    "plan",
    "process",
    "run",
    "run_job",
    "tally",
    "totals",
    "write_atomically",
]


def warm_up() -> None:
    """Import the page and style sheet engines before forking, so that the workers start
    with them (else each worker imports them for its first page: 0.05-0.1 s of CPU each,
    on every run). The MIME engine is left to the workers that meet mail: a batch of pages
    never needs it, and it adds 17-22 ms."""
    from rewriter.containers.emlx import EmlxError  # noqa: F401 - every document's job
    from rewriter.disk.files import CommitGroup
    from rewriter.document.encoding import sniff
    from rewriter.document.engines import engine
    from rewriter.run.collection import LocalCopies  # noqa: F401 - every file of a folder's job

    sniff(b"<meta charset=utf-8>", None)
    engine("html")
    engine("css")
    CommitGroup.create()  # whether the system has syncfs, asked once (ctypes imported)


def run(jobs: Iterable[Job], settings: Settings, workers: int = 1) -> Iterator[Outcome]:
    """Do *jobs* with *workers* processes (:mod:`rewriter.run.pipeline`); the outcomes come in
    the order of *jobs*."""
    from rewriter.run.executors import Executor, Processes, Serial
    from rewriter.run.pipeline import execute  # here: a command line that runs no batch never loads it

    # A plan too small to share is done here all the same (Processes.small, read by the pipeline).
    executor: Executor = Serial() if workers <= 1 else Processes(workers)
    if isinstance(executor, Processes):
        warm_up()
        # Objects the workers inherit stay out of their collector's sight: its passes would
        # otherwise write to every inherited object and copy each page of them (gc.freeze docs).
        gc.freeze()
    try:
        for item in execute(jobs, settings, executor):
            if isinstance(item, Outcome):
                yield item
    finally:
        if isinstance(executor, Processes):
            gc.unfreeze()
