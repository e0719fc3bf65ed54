from __future__ import annotations

import json
from collections.abc import Sequence

from flake8_tensorconv.findings import Position
from flake8_tensorconv.output.report import Report, rule_url


def _location(position: Position) -> dict[str, int]:
    return {"row": position.line, "column": position.column + 1}


def as_dict(report: Report) -> dict[str, object]:
    """One finding with Ruff's JSON field names; in a notebook, rows count from the start of cell ``cell``."""
    finding = report.finding
    fix = None
    if finding.fix is not None:
        fix = {
            "applicability": finding.fix.applicability.value,
            "message": finding.fix.message,
            "edits": [
                {"content": edit.content, "location": _location(edit.start), "end_location": _location(edit.end)}
                for edit in finding.fix.edits
            ],
        }
    return {
        "code": finding.code,
        "message": finding.message,
        "filename": report.path,
        "location": _location(finding.start),
        "end_location": _location(finding.end),
        "fix": fix,
        "noqa_row": finding.start.line,
        "url": rule_url(finding.code),
        "cell": finding.cell,
    }


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    return json.dumps([as_dict(report) for report in reports], indent=2) + "\n"
