"""Problems as data: what was left as it was, or failed, and where, rendered in one place.

A :class:`Problem` is a record of three things: its *code* (what kind of problem, one of
:data:`CODES`), *where* it is (the part, record, message or link, outermost first) and its
*detail* (what a reader needs to act on it). Code that decides reads the code and the
fields; nothing parses the text. The text is made once, by :func:`render`, and is what
standard error, ``--report`` and ``explain`` show.

A problem is also the ``str`` of its text: a result's ``problems`` were strings before they
were records, and code that prints, joins or compares them goes on working.

>>> problem = Problem("base-ignored", "<base href='a'> ignored: it is relative", where=("part 1",))
>>> str(problem)
"part 1: <base href='a'> ignored: it is relative"
>>> problem.code, problem.where, problem.detail
('base-ignored', ('part 1',), "<base href='a'> ignored: it is relative")
>>> problem.at("message 2").where
('message 2', 'part 1')
>>> Problem.from_json(problem.to_json()) == problem
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

# Every kind of problem there is, with what it means: a problem's code is one of these
# (a mistyped code fails where it is made, in the tests, not in a user's report).
CODES: Mapping[str, str] = MappingProxyType(
    {
        # A document's own content.
        "base-ignored": "a <base href> or base header that could not be used; the next layer's base was used",
        "base-relative": "a relative <base href> with no base to resolve it against: ignored (in a MIME part,"
        " RFC 2557 §5(a) would resolve it against thismessage:/, so no reference is taken as naming a part)",
        "left-as-is": "links in a part of the document that were deliberately left as they are",
        "repeated-tag": "an attribute that comes from a repeated tag, which a browser ignores",
        "unresolvable": "a reference that cannot be made absolute under the rules in use",
        "encoding": "bytes that could not be decoded or encoded as the document's encoding says",
        "not-a-document": "an input that is not a page, a style sheet or a message: left as it is or copied",
        # A message, mailbox or archive.
        "part": "a MIME part that could not be read or rewritten; kept as it was",
        "message": "a message of a mailbox or Maildir that could not be read or rewritten; kept as it was",
        "record": "a record of a web archive that could not be read or rewritten; kept as it was",
        "signed": "signed content left as it is, or a signature that no longer verifies once the body changed",
        "line-length": "a rewritten line longer than a mail transport allows (RFC 5322 §2.1.1)",
        "mirror": "a record of a web archive not mirrored into the folder as it should be, or the mirror's manifest",
        # A bundle.
        "not-packed": "a file a document refers to that was not packed, and why",
        "no-url": "a page packed with no URL given, marked or in a <base href>: its own file: URL stands for it",
        "not-unpacked": "a part or record that was not unpacked, and why",
        # The run.
        "not-done": "a job not done at all: its worker died, an internal error, or a setting it cannot run under",
        "input": "an input that could not be read, or is not what it was said to be",
        "output": "an output that could not be written",
        "limit": "an input or part over a size or count limit; kept as it was",
    }
)


def render(where: Iterable[str], detail: str) -> str:
    """The one text of a problem: where it is, outermost first, then its detail.

    >>> render(("message 3", "part 1.2"), "not base64")
    'message 3: part 1.2: not base64'
    """
    return ": ".join((*where, detail))


class Problem(str):
    """One problem: *code* (one of :data:`CODES`), *where* (outermost first) and *detail*;
    its ``str`` is its :func:`render`-ed text."""

    code: str
    where: tuple[str, ...]
    detail: str

    def __new__(cls, code: str, detail: str, where: Iterable[str] = ()) -> Problem:
        if code not in CODES:
            raise ValueError(f"unknown problem code {code!r} (rewriter.problems.CODES)")
        where = tuple(where)
        self = super().__new__(cls, render(where, detail))
        self.code, self.where, self.detail = code, where, detail
        return self

    def at(self, *outer: str) -> Problem:
        """This problem, inside *outer* (a message, a record, a part), outermost first."""
        return Problem(self.code, self.detail, (*outer, *self.where))

    def to_json(self) -> dict[str, object]:
        """This problem as JSON values (``--report``, the run's journal)."""
        return {"code": self.code, "where": list(self.where), "detail": self.detail}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> Problem:
        """The problem :meth:`to_json` gave *value* for; ValueError when it is not one."""
        code, where, detail = value.get("code"), value.get("where", []), value.get("detail")
        if (
            not isinstance(code, str)
            or not isinstance(detail, str)
            or not isinstance(where, list)
            or not all(isinstance(item, str) for item in where)
        ):
            raise ValueError("not a problem: it needs a code, a detail and where (a list of text)")
        return cls(code, detail, where)

    def __getnewargs__(self) -> tuple[str, str, tuple[str, ...]]:  # type: ignore[override]
        # pickle (a worker process's outcome) makes it again from its fields, not its text
        return (self.code, self.detail, self.where)

    def __repr__(self) -> str:
        return f"Problem({self.code!r}, {self.detail!r}, where={self.where!r})"


def said(problem: str) -> str:
    """The line standard error gets for *problem*: the program's name, then its text (where it
    is, the file first, then its detail). A line made before problems were records (a plain
    ``str``, "rewriter: ..." already) is said as it is.

    >>> said(Problem("part", "not base64", where=("a.eml", "part 1.2")))
    'rewriter: a.eml: part 1.2: not base64'
    """
    return f"rewriter: {problem}" if isinstance(problem, Problem) else problem


def said_within(problem: str, outer: int) -> str:
    """*problem*'s text without its *outer* places (a file's name, when the file is said
    already): its rendering from its fields, never its text cut.

    >>> said_within(Problem("part", "not base64", where=("a.eml", "part 1.2")), 1)
    'part 1.2: not base64'
    """
    if isinstance(problem, Problem):
        return render(problem.where[outer:], problem.detail)
    return problem


def report_record(problem: str, file: str) -> dict[str, object]:
    """*problem* as a line of ``--report``: the file, its text (without the file), its code
    and where it is (after the file), and its detail."""
    value = as_problem(problem, "input")
    where = list(value.where[1:] if value.where[:1] == (file,) else value.where)
    return {
        "file": file,
        "problem": render(where, value.detail),
        "code": value.code,
        "where": where,
        "detail": value.detail,
    }


def as_problem(value: str, code: str) -> Problem:
    """*value* as a problem: itself when it is one, else a problem of *code* whose detail is
    *value* (text from outside the package: a library's exception message)."""
    return value if isinstance(value, Problem) else Problem(code, value)


def said_all(problems: Iterable[str]) -> list[str]:
    """:func:`said` of each of *problems*: the lines standard error gets."""
    return [said(problem) for problem in problems]


def said_json(item: str) -> object:
    """One problem as JSON for a file of the run's own (a journal, a mirror's plan): a
    problem's :meth:`Problem.to_json`, a line of text as it is."""
    return item.to_json() if isinstance(item, Problem) else item


def said_from_json(item: object) -> str:
    """What :func:`said_json` gave *item* for; ValueError when it is neither text nor a problem
    (a known code, where and detail all text, and no other field)."""
    if isinstance(item, str):
        return item
    if not isinstance(item, dict) or not set(item) <= {"code", "where", "detail"}:
        raise ValueError("not a problem: an object of a code, where and a detail")
    return Problem.from_json(item)
