from __future__ import annotations

from collections.abc import Sequence

from flake8_tensorconv.output.report import Report


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    """GitHub Actions workflow commands: one ``::warning`` annotation per finding."""
    lines = []
    for report in reports:
        finding = report.finding
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("file", report.path),
                ("line", finding.start.line),
                ("col", finding.start.column + 1),
                ("endLine", finding.end.line),
                ("endColumn", finding.end.column + 1),
                ("title", f"{finding.code}"),
            )
        )
        lines.append(f"::warning {properties}::{_escape_data(f'{finding.code} {finding.message}')}")
    return "".join(line + "\n" for line in lines)
