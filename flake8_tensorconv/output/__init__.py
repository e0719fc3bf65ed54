"""Output formats: each module turns findings into text; none of them decides anything.

Only the format asked for is imported (SARIF's module pulls in pathlib and json, tens of
milliseconds that a plain text run should not pay).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from flake8_tensorconv.output.report import Report

# Format name -> the module (in this package) whose ``render`` writes it.
FORMATS = {"text": "text", "json": "json_format", "sarif": "sarif", "github": "github", "gitlab": "gitlab"}


def formatter(name: str) -> Callable[[Sequence[Report], bool], str]:
    return importlib.import_module(f"{__name__}.{FORMATS[name]}").render  # type: ignore[no-any-return]


__all__ = ["FORMATS", "Report", "formatter"]
