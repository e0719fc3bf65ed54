"""Plain data: what a rule reports and how it can be fixed."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Applicability(str, enum.Enum):
    """Whether a fix may be applied by ``--fix`` alone or needs ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Position:
    """1-based line, 0-based column counted in characters (code points)."""

    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text between ``start`` and ``end`` with ``content``."""

    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    filename: str = field(default="", compare=False)

    @property
    def sort_key(self) -> tuple[int, int, str]:
        return (self.start.line, self.start.column, self.code)
