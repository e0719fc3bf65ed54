"""What a text run says after its findings: statistics, the fixes applied, and the summary lines (in Ruff's words)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flake8_tensorconv.findings import Applicability
from flake8_tensorconv.output.report import Report


def _plural(count: int, word: str, suffix: str = "s") -> str:
    return f"{count} {word}{'' if count == 1 else suffix}"


def statistics(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    """One line per code, most frequent first: count, code, ``[*]`` when its findings can be fixed, the rule's name."""
    from flake8_tensorconv.rules import RULES_BY_CODE

    counts: dict[str, int] = {}
    fixable: dict[str, bool] = {}
    for report in reports:
        code = report.finding.code
        counts[code] = counts.get(code, 0) + 1
        fixable[code] = fixable.get(code, False) or report.fix_available(unsafe_fixes)
    if not counts:
        return ""
    count_width = max(len(str(count)) for count in counts.values())
    code_width = max(len(code) for code in counts)
    any_fixable = any(fixable.values())
    lines = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        mark = ("[*] " if fixable[code] else "[ ] ") if any_fixable else ""
        rule = RULES_BY_CODE.get(code)
        lines.append(f"{count:>{count_width}}\t{code:<{code_width}}\t{mark}{rule.name if rule else code}")
    return "".join(line + "\n" for line in lines)


def statistics_json(reports: Sequence[Report], unsafe_fixes: bool) -> str:
    import json

    from flake8_tensorconv.rules import RULES_BY_CODE

    rows: dict[str, dict[str, object]] = {}
    for report in reports:
        code = report.finding.code
        row = rows.setdefault(code, {"code": code, "name": RULES_BY_CODE[code].name if code in RULES_BY_CODE else code, "count": 0, "fixable": False})
        row["count"] = int(row["count"]) + 1  # type: ignore[call-overload]
        row["fixable"] = bool(row["fixable"]) or report.fix_available(unsafe_fixes)
    return json.dumps(sorted(rows.values(), key=lambda row: (-int(row["count"]), row["code"])), indent=2) + "\n"  # type: ignore[call-overload]


def fix_summary(fixed: Mapping[str, Mapping[str, int]]) -> str:
    """``--show-fixes``: per file, how many findings of each code were fixed."""
    from flake8_tensorconv.rules import RULES_BY_CODE

    total = sum(sum(codes.values()) for codes in fixed.values())
    if not total:
        return ""
    width = max(len(str(count)) for codes in fixed.values() for count in codes.values())
    lines = [f"Fixed {_plural(total, 'error')}:"]
    for path in sorted(fixed):
        if not fixed[path]:
            continue
        lines.append(f"- {path}:")
        for code, count in sorted(fixed[path].items(), key=lambda item: (-item[1], item[0])):
            name = RULES_BY_CODE[code].name if code in RULES_BY_CODE else code
            lines.append(f"    {count:>{width}} × {code} ({name})")
    return "".join(line + "\n" for line in lines)


def summary(reports: Sequence[Report], fixed: int, unsafe_fixes: bool) -> str:
    """``Found N errors (M fixed, K remaining).`` or ``All checks passed!``, and the hint about what ``--fix`` would do."""
    remaining = len(reports)
    total = fixed + remaining
    if fixed:
        lines = [f"Found {_plural(total, 'error')} ({fixed} fixed, {remaining} remaining)."]
    elif remaining:
        lines = [f"Found {_plural(remaining, 'error')}."]
    else:
        lines = ["All checks passed!"]
    applicable = sum(1 for report in reports if report.fix_available(unsafe_fixes))
    hidden = sum(
        1
        for report in reports
        if report.finding.fix is not None and not unsafe_fixes and report.finding.fix.applicability is Applicability.UNSAFE
    )
    if applicable and hidden:
        lines.append(
            f"[*] {applicable} fixable with the `--fix` option ({_plural(hidden, 'hidden fix', 'es')} can be enabled with the `--unsafe-fixes` option)."
        )
    elif applicable:
        lines.append(f"[*] {applicable} fixable with the `--fix` option.")
    elif hidden:
        lines.append(f"No fixes available ({_plural(hidden, 'hidden fix', 'es')} can be enabled with the `--unsafe-fixes` option).")
    return "".join(line + "\n" for line in lines)


def diff_summary(reports: Sequence[Report], fixed: int, unsafe_fixes: bool) -> str:
    """``--diff``: ``Would fix N errors.``, and how many more ``--unsafe-fixes`` would add."""
    hidden = sum(1 for report in reports if report.finding.fix is not None and not report.fix_available(unsafe_fixes))
    more = f" ({_plural(hidden, 'additional fix', 'es')} available with `--unsafe-fixes`)" if hidden else ""
    return f"Would fix {_plural(fixed, 'error')}{more}." if fixed else f"No errors would be fixed{more}."
