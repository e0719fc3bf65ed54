"""Output formats: each module turns findings into text; none of them decides anything."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flake8_tensorconv.output import github, json_format, sarif, text
from flake8_tensorconv.output.report import Report

FORMATTERS: dict[str, Callable[[Sequence[Report], bool], str]] = {
    "text": text.render,
    "json": json_format.render,
    "sarif": sarif.render,
    "github": github.render,
}

__all__ = ["FORMATTERS", "Report"]
