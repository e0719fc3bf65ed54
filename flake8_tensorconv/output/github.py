from __future__ import annotations

from collections.abc import Sequence

from flake8_tensorconv.output.report import Report


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    """GitHub Actions workflow commands: one ``::warning`` annotation per finding.

    In a notebook, line and column are relative to the cell (as in Ruff's output), and the
    title and the message name the cell: ``title=TCV101 (cell 4)``, ``::cell 4:2:7: TCV101 ...``.
    """
    lines = []
    for report in reports:
        finding = report.finding
        cell = f"cell {finding.cell}:{finding.start.line}:{finding.start.column + 1}: " if finding.cell is not None else ""
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("file", report.path),
                ("line", finding.start.line),
                ("col", finding.start.column + 1),
                ("endLine", finding.end.line),
                ("endColumn", finding.end.column + 1),
                ("title", finding.code if finding.cell is None else f"{finding.code} (cell {finding.cell})"),
            )
        )
        lines.append(f"::warning {properties}::{_escape_data(f'{cell}{finding.code} {finding.message}')}")
    return "".join(line + "\n" for line in lines)
