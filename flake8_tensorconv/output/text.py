from __future__ import annotations

from collections.abc import Sequence

from flake8_tensorconv.output.report import Report


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    """``path:line:col: CODE [*] message``: 1-based line and column, ``[*]`` when fixable."""
    lines = []
    for report in reports:
        finding = report.finding
        marker = " [*]" if report.fix_available(unsafe_fixes) else ""
        lines.append(f"{report.path}:{finding.start.line}:{finding.start.column + 1}: {finding.code}{marker} {finding.message}")
    return "".join(line + "\n" for line in lines)
