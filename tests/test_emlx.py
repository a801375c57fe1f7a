"""Apple Mail's .emlx and .partial.emlx: told apart, rewritten in their own format (the byte
count on the first line made right, the property list kept byte for byte), and a file whose
count is wrong said by name and copied as it is (issue 32)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rewriter.cli.commands import main
from rewriter.containers.emlx import EmlxError, run_emlx, split_emlx
from rewriter.containers.formats import what_file_is
from rewriter.mime.message import find_message_links, rewrite_message

MESSAGE = (
    b"From: a@example.org\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n"
    b"Content-Location: http://example.org/docs/\n\n"
    b"<p><a href=next.html>next</a> <img src='i.png'> <a href=http://elsewhere.example/>x</a></p>\n"
)
REWRITTEN = MESSAGE.replace(b"href=next.html", b"href=http://example.org/docs/next.html").replace(
    b"src='i.png'", b"src='http://example.org/docs/i.png'"
)
PLIST = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n'
    b'<plist version="1.0">\n<dict>\n\t<key>date-received</key>\n\t<integer>1700000000</integer>\n'
    b"\t<key>flags</key>\n\t<integer>8590195713</integer>\n</dict>\n</plist>\n"
)


def emlx(message: bytes = MESSAGE, plist: bytes = PLIST, count: bytes | None = None) -> bytes:
    return (b"%d\n" % len(message) if count is None else count) + message + plist


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


def test_split_and_join() -> None:
    data = emlx()
    pieces = split_emlx(data)
    assert (pieces.count_line, pieces.message, pieces.plist) == (b"%d\n" % len(MESSAGE), MESSAGE, PLIST)
    assert pieces.joined(MESSAGE) == data
    assert pieces.joined(b"x" * 7) == b"7\n" + b"x" * 7 + PLIST


def test_a_padded_count_keeps_its_width_and_a_crlf_line_its_line_break() -> None:
    padded = split_emlx(emlx(count=b"%-10d\n" % len(MESSAGE)))
    assert padded.joined(b"x" * 12) == b"12        \n" + b"x" * 12 + PLIST
    narrow = split_emlx(b"5 \nA: b\n" + PLIST)
    assert narrow.joined(b"x" * 100) == b"100\n" + b"x" * 100 + PLIST  # wider than the padding: the digits alone
    crlf = split_emlx(emlx(count=b"%d\r\n" % len(MESSAGE)))
    assert crlf.joined(b"abc") == b"3\r\nabc" + PLIST


def test_run_emlx_rewrites_the_message_only() -> None:
    result = run_emlx(emlx(), rewrite_message, url=None)
    assert result.output == b"%d\n" % len(REWRITTEN) + REWRITTEN + PLIST
    assert [link.original for link in result.links] == ["next.html", "i.png", "http://elsewhere.example/"]
    found = run_emlx(emlx(), find_message_links, url=None)
    assert found.output == emlx() and len(found.links) == 3


def test_unchanged_is_the_same_bytes() -> None:
    data = emlx(message=b"Subject: plain\n\nno links\n", count=b"24   \n")
    assert run_emlx(data, rewrite_message).output == data


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (b"Subject: x\n\nhi\n" + PLIST, "its first line is not the message's byte count"),
        (emlx(count=b"%d\n" % (len(MESSAGE) + len(PLIST) + 1)), "and only"),
        (emlx(count=b"%d\n" % (len(MESSAGE) + 5)), "is no property list"),
        (emlx(count=b"%d\n" % (len(MESSAGE) - 5)), "is no property list"),
        (emlx(plist=b""), "no property list after"),
        (emlx(plist=b"\n\n"), "no property list after"),
    ],
)
def test_what_is_not_an_emlx_is_said(data: bytes, detail: str) -> None:
    with pytest.raises(EmlxError, match=r"not an Apple Mail \.emlx") as raised:
        split_emlx(data)
    assert detail in str(raised.value)


def test_what_an_emlx_is() -> None:
    assert what_file_is(emlx(), "12345.emlx").format == "emlx"
    assert what_file_is(emlx(), "12345.partial.emlx").format == "emlx"
    assert what_file_is(emlx(), None).format == "emlx"  # by its content: a count, then a heading
    assert what_file_is(emlx(), "saved.html").format == "emlx"
    assert what_file_is(b"garbage", "1.EMLX").format == "emlx"  # by its name: the job says what is wrong
    assert what_file_is(b"2024\nsome notes <b>x</b>\n", None).format != "emlx"  # no heading after the number


@pytest.mark.parametrize("name", ["12345.emlx", "12346.partial.emlx"])
def test_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    source = tmp_path / "Messages" / name
    source.parent.mkdir()
    source.write_bytes(emlx(count=b"%d\n" % len(MESSAGE)))
    code, err = run(capsys, "rewrite", str(source.parent), "-o", str(tmp_path / "out"))
    assert code == 0, err
    output = (tmp_path / "out" / name).read_bytes()
    count_line, _, rest = output.partition(b"\n")
    count = int(count_line)
    assert count == len(REWRITTEN) and rest[:count] == REWRITTEN  # the bytes outside links unchanged
    assert rest[count:] == PLIST  # the property list byte for byte
    assert split_emlx(output).message == REWRITTEN


def test_in_place_and_standard_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "1.emlx"
    source.write_bytes(emlx())
    code, err = run(capsys, "rewrite", "--in-place", str(source))
    assert code == 0, err
    assert source.read_bytes() == b"%d\n" % len(REWRITTEN) + REWRITTEN + PLIST
    code, err = run(capsys, "rewrite", "--in-place", str(source))  # nothing left to rewrite
    assert code == 0 and source.read_bytes() == b"%d\n" % len(REWRITTEN) + REWRITTEN + PLIST


def test_links_and_explain_read_an_emlx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "1.emlx"
    source.write_bytes(emlx())
    assert main(["links", str(source)]) == 0
    out = capsys.readouterr().out
    assert "http://example.org/docs/next.html" in out and "http://example.org/docs/i.png" in out
    assert main(["explain", str(source)]) == 0
    assert "(emlx: " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("data", "detail"),
    [
        (emlx(count=b"%d\n" % (len(MESSAGE) + 9)), "is no property list"),
        (emlx(count=b"99999\n"), "counts 99,999 bytes of message, and only"),
        (emlx(plist=b""), "no property list after"),
    ],
)
def test_a_bad_emlx_is_said_by_name_and_copied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes, detail: str
) -> None:
    source = tmp_path / "in" / "7.emlx"
    source.parent.mkdir()
    source.write_bytes(data)
    (tmp_path / "in" / "8.emlx").write_bytes(emlx())
    code, err = run(capsys, "rewrite", str(tmp_path / "in"), "-o", str(tmp_path / "out"))
    assert code == 1 and "Traceback" not in err
    [line] = [line for line in err.splitlines() if "7.emlx" in line]
    assert line.startswith(f"rewriter: {source}: not an Apple Mail .emlx: ") and detail in line
    assert line.endswith(": copied as it is")
    assert (tmp_path / "out" / "7.emlx").read_bytes() == data  # copied unchanged, as other unreadable inputs are
    assert split_emlx((tmp_path / "out" / "8.emlx").read_bytes()).message == REWRITTEN  # the others go on
    # In place: left as it is.
    code, err = run(capsys, "rewrite", "--in-place", str(source))
    assert code == 1 and "left as it is" in err and source.read_bytes() == data


def test_format_emlx_reads_standard_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    class Stdin:
        buffer = io.BytesIO(emlx(count=b"%d\n" % len(MESSAGE)))

    monkeypatch.setattr(sys, "stdin", Stdin())
    target = tmp_path / "out.emlx"
    assert main(["rewrite", "--format", "emlx", "-", "-o", str(target)]) == 0
    assert target.read_bytes() == b"%d\n" % len(REWRITTEN) + REWRITTEN + PLIST


def test_the_library_reads_an_emlx(tmp_path: Path) -> None:
    """rewriter.rewrite() takes an .emlx by its path or its bytes, and gives the whole file back."""
    import rewriter

    path = tmp_path / "1.emlx"
    path.write_bytes(emlx())
    result = rewriter.rewrite(path)
    assert result.output == emlx(REWRITTEN)
    assert rewriter.rewrite(emlx(), format="emlx").output == emlx(REWRITTEN)
    assert [link.original for link in rewriter.find_links(path)] == ["next.html", "i.png", "http://elsewhere.example/"]
    with pytest.raises(EmlxError):
        rewriter.rewrite(emlx(count=b"9999\n"), format="emlx")


def test_unpack_reads_an_emlx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "1.emlx"
    path.write_bytes(emlx())
    code, err = run(capsys, "unpack", str(path), "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert b"http://example.org/docs/next.html" in (tmp_path / "out" / "index.html").read_bytes()
    path.write_bytes(emlx(count=b"9999\n"))
    code, err = run(capsys, "unpack", str(path), "-o", str(tmp_path / "out2"))
    assert code == 1 and "1.emlx" in err and "Traceback" not in err
