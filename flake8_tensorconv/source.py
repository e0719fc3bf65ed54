"""Reading and writing Python source without losing a byte.

A file is decoded the way CPython decodes it (BOM, then a PEP 263 cookie, else
UTF-8) and written back with the same encoding, BOM, newline bytes and mode.
"""

from __future__ import annotations

import os
import re
import stat
from functools import cached_property
from itertools import accumulate

from flake8_tensorconv.findings import Position

# Python ends a line at \r\n, \r or \n, nothing else (str.splitlines also splits
# at form feeds and other separators, which would shift line numbers).
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def newline_starts(text: str) -> list[int]:
    """Where each line of ``text`` starts when only ``\\n`` ends a line: 0, then the offset after each ``\\n``.

    Summed from the lines' lengths, all in C: a generator over ``re.finditer`` took two to three times as long
    (every file analysed asks, some twice: the source's and the file facts' offsets)."""
    return list(accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))


_BOM = b"\xef\xbb\xbf"


class SourceError(Exception):
    """A file that cannot be read or decoded; the message names what went wrong."""

    def __init__(self, message: str, position: Position | None = None) -> None:
        super().__init__(message)
        self.position = position or Position(1, 0)


class Source:
    """The decoded text of one file and what is needed to write it back."""

    def __init__(self, text: str, encoding: str = "utf-8", has_bom: bool = False) -> None:
        self.text = text
        self.encoding = encoding
        self.has_bom = has_bom

    def __repr__(self) -> str:
        return f"Source(text={self.text!r}, encoding={self.encoding!r}, has_bom={self.has_bom!r})"

    def describe_line(self, line: int) -> str:
        """How a message names one of this text's lines (a notebook's joined cells name the cell too)."""
        return f"line {line}"

    @cached_property
    def line_starts(self) -> list[int]:
        if "\r" not in self.text:
            return newline_starts(self.text)
        starts = [0]
        starts.extend(match.end() for match in _LINE_BREAK.finditer(self.text))
        return starts

    @cached_property
    def newline(self) -> str:
        """The file's first newline sequence; used for text that a fix adds."""
        match = _LINE_BREAK.search(self.text)
        return match.group() if match else "\n"

    @cached_property
    def lines(self) -> list[str]:
        """Lines without their line breaks, index 0 is line 1."""
        # Most files end their lines with \n alone: str.split is several times faster than the pattern.
        return self.text.split("\n") if "\r" not in self.text else _LINE_BREAK.split(self.text)

    @cached_property
    def normalized(self) -> str:
        """The text with every line break as ``\\n`` (same line numbering)."""
        return self.text if "\r" not in self.text else _LINE_BREAK.sub("\n", self.text)

    def offset(self, position: Position) -> int:
        return self.line_starts[position.line - 1] + position.column

    def line(self, number: int) -> str:
        return self.lines[number - 1] if 0 < number <= len(self.lines) else ""

    def encode(self, text: str | None = None) -> bytes:
        body = (self.text if text is None else text).encode(self.encoding)
        return (_BOM + body) if self.has_bom else body


def decode(raw: bytes) -> Source:
    """Decode bytes as the interpreter would; raise SourceError when it cannot."""
    encoding = _encoding(raw)
    has_bom = encoding == "utf-8-sig"
    if has_bom:
        encoding = "utf-8"
        raw = raw[3:]
    try:
        text = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        line = raw[: getattr(error, "start", 0)].count(b"\n") + 1
        raise SourceError(f"cannot decode as {encoding}: {error}", Position(line, 0)) from None
    return Source(text=text, encoding=encoding, has_bom=has_bom)


def _encoding(raw: bytes) -> str:
    """The encoding that the BOM or the PEP 263 cookie declares; UTF-8 where neither is written."""
    # A cookie stands on line 1 or 2 and says "coding": most files have neither it nor a BOM.
    second_line_end = raw.find(b"\n", raw.find(b"\n") + 1)
    if not raw.startswith(_BOM) and b"coding" not in (raw if second_line_end < 0 else raw[:second_line_end]):
        return "utf-8"
    import io
    import tokenize

    try:
        return tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
    except SyntaxError as error:
        raise SourceError(f"cannot determine the encoding: {error}") from None


def read_source(path: str) -> Source:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None
    return decode(raw)


# A fix is written to `.tensorconv-PID-XXXXXXXX.tmp` beside the file, then renamed over it. A run
# killed in between leaves its temporary behind; the next run that writes there removes it.
_TEMPORARY_PREFIX = ".tensorconv-"
_TEMPORARY_SUFFIX = ".tmp"
_swept: set[str] = set()


def write_atomically(path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` via a temporary file in the same folder, keeping its mode.

    The file holds either its old or its new bytes at every moment, also when the process is
    killed; temporaries of killed runs in the folder are removed first.
    """
    import tempfile  # only a run that writes pays for it

    mode = stat.S_IMODE(os.stat(path).st_mode)
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in _swept:
        _swept.add(directory)
        remove_stale_temporaries(directory)
    fd, temporary = tempfile.mkstemp(prefix=f"{_TEMPORARY_PREFIX}{os.getpid()}-", suffix=_TEMPORARY_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def remove_stale_temporaries(directory: str) -> None:
    """Remove the temporaries that runs no longer alive left in ``directory``.

    A temporary of a run that is still going (another ``--fix`` on the same tree) is kept.
    """
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(_TEMPORARY_PREFIX) and name.endswith(_TEMPORARY_SUFFIX)):
            continue
        pid = name[len(_TEMPORARY_PREFIX) :].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, but belongs to someone else
        return True
    return True
