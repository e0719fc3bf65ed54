"""Plain data: what a rule reports and how it can be fixed.

Records here and in every module a check imports are ``NamedTuple``s (or plain classes,
where they change) rather than dataclasses: a dataclass costs about a millisecond to
define (it compiles its methods), and a run over a small project is short enough that the
package's import time shows. ``examples`` and ``verify``, which a check never imports,
keep their dataclasses; tests/test_self_lint.py keeps ``dataclasses`` out of a check.
"""

from __future__ import annotations

import enum
from typing import NamedTuple


class Applicability(str, enum.Enum):
    """Whether a fix may be applied by ``--fix`` alone or needs ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"


class Position(NamedTuple):
    """1-based line, 0-based column counted in characters (code points)."""

    line: int
    column: int


class Edit(NamedTuple):
    """Replace the text between ``start`` and ``end`` with ``content``."""

    start: Position
    end: Position
    content: str


class Fix(NamedTuple):
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


class Related(NamedTuple):
    """A place that explains a finding: the step its risk comes from."""

    start: Position
    end: Position
    message: str
    # The file it is in, where that is another module of the package (a caller there, a function it calls); None: the
    # finding's own file.
    path: str | None = None


class Finding(NamedTuple):
    code: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    # In a notebook: the 1-based index of the cell among all cells (Ruff's numbering); the
    # positions (and the fix's edits) are then relative to that cell. None for a Python file.
    cell: int | None = None
    related: tuple[Related, ...] = ()

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (self.start.line, self.start.column, self.code)
