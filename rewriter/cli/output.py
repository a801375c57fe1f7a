r"""What the terminal shows of a run: messages escaped on their way to standard error, the
progress bar, one line per input, the closing summary, and bytes to standard output.

Every message has the characters that could drive a terminal escaped (:func:`escape_controls`),
as ``ls`` and git do: what comes from the documents never reaches the terminal raw.

>>> import io
>>> stream = io.StringIO()
>>> _ = Escaping(stream).write("a\x1b[31m b\n")
>>> stream.getvalue()
'a\\x1b[31m b\n'
"""

from __future__ import annotations

import errno
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from rewriter.problems import said as said_line
from rewriter.problems import said_within
from rewriter.run.report import escape_controls

if TYPE_CHECKING:
    from rewriter.run.batch import Outcome


class Escaping:
    """A text stream for messages: every write goes through :func:`escape_controls`, but
    for the line end that closes it (a line end inside a write is escaped: one message,
    one line). With no stream (standard error closed, ``2>&-``), nothing can be said: writes
    are dropped."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if self.stream is None:
            return len(text)
        body, end = (text[:-1], "\n") if text.endswith("\n") else (text, "")
        return self.stream.write(escape_controls(body) + end)

    def flush(self) -> None:
        if self.stream is not None:
            self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())


class ClosedOutput:
    """Standard output when the process was started without one (``1>&-``)."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass


class RunTotals:
    """The run's figures, kept as the outcomes go by (none of them is held), and what
    standard error says for each input; a container done in pieces is said once, at its end."""

    def __init__(self) -> None:
        from rewriter.run.batch import count_into, totals

        self._count_into = count_into  # kept: an import in add() would cost 1 us an outcome
        self.figures = totals([])
        self.unplanned = 0
        self.retried: list[str] = []
        self.resumed = 0
        self.container: Outcome | None = None  # the pieces of one container so far

    def add(self, outcome: Outcome, *, quiet: bool, verbose: bool) -> list[str]:
        if outcome.retried is not None:
            self.retried.append(
                outcome.shown if outcome.piece is None else f"{outcome.shown} (piece {outcome.piece.number + 1})"
            )
        self.resumed += outcome.resumed
        whole = outcome if outcome.piece is None else self._merged(outcome)
        if whole is None:
            return []
        self._count_into(self.figures, whole)
        return said(whole, quiet=quiet, verbose=verbose)

    def _merged(self, piece: Outcome) -> Outcome | None:
        """The container's outcome when *piece* is its last, else None (its counts kept)."""
        assert piece.piece is not None
        if piece.piece.number == 0 or self.container is None:
            self.container = replace(piece, piece=None, records=[], report="")
        else:
            whole = self.container
            for name in ("rewritten", "kept", "local", "relative", "no_base", "bytes_in", "bytes_out"):
                setattr(whole, name, getattr(whole, name) + getattr(piece, name))
            whole.messages += piece.messages
            whole.warnings += piece.warnings
            whole.details += piece.details
            whole.ok = whole.ok and piece.ok
            if piece.state == "failed" or whole.state == "failed":
                whole.state = "failed"
            elif piece.state == "rewritten":
                whole.state = "rewritten"
        if not piece.piece.last:
            return None
        whole, self.container = self.container, None
        return whole

    def closing(self) -> list[str]:
        """What follows the summary: the jobs done twice, the jobs taken from a journal."""
        lines = []
        if self.resumed:
            lines.append(
                f"rewriter: {self.resumed:,} done by the run that was stopped (its journal says so): not done again"
            )
        if self.retried:
            named = ", ".join(self.retried[:10]) + (
                f" and {len(self.retried) - 10:,} more" if len(self.retried) > 10 else ""
            )
            lines.append(f"rewriter: retried after their worker stopped: {named}")
        return lines


def said(outcome: Outcome, *, quiet: bool = False, verbose: bool = False) -> list[str]:
    """What standard error gets for one input: what went wrong, always; unless *quiet*,
    what was left as it was and one line for its links left relative; with *verbose*,
    each of those links too."""
    lines = [said_line(message) for message in outcome.messages]
    if verbose:
        left = outcome.left_relative()
        warnings = [said_line(warning) for warning in outcome.warnings]
        return lines + warnings + ([left] if left is not None else []) + [said_line(d) for d in outcome.details]
    if quiet:
        return lines
    # One line for the file: its links left relative, then what the engines left as it was
    # (each rendered from its record, its file left out: the line names it).
    prefix = f"rewriter: {outcome.shown}: "
    notes = [said_within(warning, 1) for warning in outcome.warnings]
    if len(notes) > NOTES:
        notes[NOTES:] = [f"and {len(notes) - NOTES:,} more (see -v)"]
    left = outcome.left_relative()
    if left is not None:
        lines.append("; ".join([left, *notes]))
    elif notes:
        lines.append(prefix + "; ".join(notes))
    return lines


NOTES = 3  # what the engines left as it was, said on a file's line (-v: all of it)


class Silent:
    """The progress interface, doing nothing but writing messages."""

    def __init__(self, err: TextIO) -> None:
        self.err = err

    def write(self, message: str) -> None:
        self.err.write(message + "\n")

    def update(self, count: int) -> None:
        pass

    def close(self) -> None:
        pass


class Bar(Silent):
    """tqdm's bar on a terminal; messages are written above it, escaped (the bar itself
    is drawn with control characters, so it is given the terminal's own stream)."""

    def __init__(self, total: int, err: TextIO) -> None:
        super().__init__(err)
        from tqdm import tqdm

        self.err = getattr(err, "stream", err)
        self.bar = tqdm(total=total, file=self.err, unit="file", leave=False, dynamic_ncols=True)

    def write(self, message: str) -> None:
        self.bar.write(escape_controls(message), file=self.err)

    def update(self, count: int) -> None:
        self.bar.update(count)

    def close(self) -> None:
        self.bar.close()


def counted(item: object) -> bool:
    """Whether the progress bar counts *item* (a job of the plan, or the planner's problem): as
    the summary counts its inputs, every input (a document, an archive, a Maildir) and every
    input the planner could not take, and no file copied beside the outputs (said apart)."""
    return isinstance(item, str) or not getattr(item, "copy", False)


def progress_for(total: int, err: TextIO, quiet: bool) -> Silent:
    """A progress bar only on a terminal, and never with -q or for one file."""
    if quiet or total < 2 or not getattr(err, "isatty", lambda: False)():
        return Silent(err)
    return Bar(total, err)


def summary(figures: dict[str, int], seconds: float, unplanned: int) -> str:
    failed = figures["failed_files"] + unplanned
    files = figures["files"] + unplanned
    kept = f"{figures['kept']:,} kept"
    if figures["local"]:
        kept += f" ({figures['local']:,} local)"
    relative = f"{figures['relative']:,} left relative"
    unresolvable = figures["relative"] - figures["no_base"]
    why = [f"{figures['no_base']:,} with no base"] if figures["no_base"] else []
    why += [f"{unresolvable:,} unresolvable"] if unresolvable else []
    if why:
        files_left = figures["relative_files"]
        relative += f" ({', '.join(why)}, in {files_left:,} file{'' if files_left == 1 else 's'})"
    copied = figures["copied_files"]
    others = f"{copied:,} other file{'' if copied == 1 else 's'} copied; " if copied else ""
    return (
        f"rewriter: {files:,} input{'' if files == 1 else 's'}: "
        f"{figures['rewritten_files']:,} rewritten, {figures['unchanged_files']:,} unchanged, {failed:,} failed; "
        f"{others}links: {figures['rewritten']:,} rewritten, {kept}, {relative}; "
        f"{figures['bytes'] / 1e6:,.1f} MB in {seconds:.1f} s"
    )


def write_bytes(out: TextIO | None, data: bytes) -> None:
    """Bytes to a text stream: to its binary buffer when it has one (a real stdout)."""
    if out is None:
        raise OSError(errno.EBADF, "standard output is closed")
    buffer = getattr(out, "buffer", None)
    if buffer is None:
        out.write(data.decode("utf-8", "surrogateescape"))
        return
    out.flush()
    buffer.write(data)
    buffer.flush()


def explained_problems(outcome: Outcome) -> list[str]:
    """``explain``'s problems of *outcome* (text and --json): each rendered from its record,
    its file left out (the tree names it)."""
    return [said_within(warning, 1) for warning in outcome.warnings]


def write_tree(out: Escaping, outcome: Outcome, problems: list[str]) -> None:
    """``explain``'s tree: the file, then each part (under its page or message) with its type,
    its links, and its base with where the base came from; then the problems."""
    why = f": {outcome.why}" if outcome.why else ""  # what the file was taken for, and why
    out.write(f"{outcome.shown} ({outcome.format}{why})\n")
    heading: object = None
    for row in outcome.rows:
        place = next((f"{key} {row[key]}" for key in ("record", "message") if key in row), None)
        if place is not None and place != heading:
            out.write(f"  {place}\n")
            heading = place
        _write_part(out, row, nested=place is not None)
    for problem in problems:
        out.write(f"  problem: {problem}\n")


def _write_part(out: Escaping, row: dict[str, Any], *, nested: bool) -> None:
    """One part of ``explain``'s tree: two lines, indented by its depth."""
    depth = str(row["path"]).count(".") + 1 if row["path"] else 1
    indent = "  " * (depth + nested)
    label = f"{row['path']} " if row["path"] else ""
    out.write(f"{indent}{label}{row['type']}")
    if row["action"] in ("rewritten", "unchanged", "skipped") or row["links"]:
        count = row["links"]
        out.write(
            f": {count} link{'' if count == 1 else 's'}, {row['rewritten']} to rewrite, {row['kept']} kept, "
            f"{row['relative']} left relative"
        )
    out.write("\n")
    base = row["base"] if row["base"] is not None else "none"
    source = str(row["layer"] or "no layer")
    if row["origin"]:
        source += f" of part {row['origin']}"
    out.write(f"{indent}  base: {base} ({source})\n")
