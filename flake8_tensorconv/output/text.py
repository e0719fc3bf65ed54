from __future__ import annotations

from collections.abc import Sequence

from flake8_tensorconv.output.report import Report


def render(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    """``path:line:col: CODE [*] message``: 1-based line and column, ``[*]`` when fixable.

    In a notebook the cell comes first, as Ruff writes it: ``nb.ipynb:cell 4:2:7: ...``.
    """
    lines = []
    for report in reports:
        finding = report.finding
        marker = " [*]" if report.fix_available(unsafe_fixes) else ""
        cell = f"cell {finding.cell}:" if finding.cell is not None else ""
        lines.append(f"{report.path}:{cell}{finding.start.line}:{finding.start.column + 1}: {finding.code}{marker} {finding.message}")
    return "".join(line + "\n" for line in lines)
