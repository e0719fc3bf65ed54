"""The ``tensorconv verify`` report: one row per rule, one cell per device, then the failures.

Plain text from outcomes; nothing here imports torch or NumPy.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from flake8_tensorconv.verify.harness import Outcome, Status

NO_FIXTURE = "-"
LEGEND = (
    "claim confirmed: the flagged code fails or misbehaves as the rule says (exception and message, warning, or the `holds` expression)",
    "fix confirmed: the fixed code runs, without the claimed warning, and leaves the same results as the original wherever that ran;",
    "    on cuda also the same results as on the CPU (within the dtype's tolerance), on meta the same dtypes and shapes",
    "runs cleanly: no claim on this device (the claim is about another one); the originals and the negatives run without error",
    f"{NO_FIXTURE}: none of the rule's fixtures runs on this device",
)


@dataclass(frozen=True)
class RuleRow:
    code: str
    name: str
    positives: int
    negatives: int
    cells: dict[str, str]


def summarize(outcomes: Sequence[Outcome]) -> str:
    """One cell: what a rule's fixtures did on one device."""
    if not outcomes:
        return NO_FIXTURE
    failed = [outcome for outcome in outcomes if outcome.failed]
    if failed:
        return f"FAILED ({len(failed)} of {len(outcomes)})"
    skipped = [outcome for outcome in outcomes if outcome.status is Status.SKIPPED]
    not_applicable = [outcome for outcome in outcomes if outcome.status is Status.NOT_APPLICABLE]
    ran = [outcome for outcome in outcomes if outcome.status is Status.CONFIRMED]
    if not ran:
        if skipped:
            return f"skipped ({_reasons(skipped)})"
        return f"not applicable ({_reasons(not_applicable)})"
    claims = any(outcome.original.status is Status.CONFIRMED for outcome in ran)
    fixes = any(outcome.fix.status is Status.CONFIRMED for outcome in ran)
    if claims and fixes:
        text = "claim + fix confirmed"
    elif claims:
        text = "claim confirmed"
    elif fixes:
        text = "fix confirmed"
    else:
        text = "runs cleanly"
    extra = [f"{len(group)} {label}" for group, label in ((not_applicable, "not applicable"), (skipped, "skipped")) if group]
    return f"{text} ({', '.join(extra)})" if extra else text


def _reasons(outcomes: Sequence[Outcome]) -> str:
    return "; ".join(dict.fromkeys(outcome.original.detail for outcome in outcomes))


def build_rows(
    rules: Sequence[tuple[str, str]], outcomes: Sequence[Outcome], devices: Sequence[str], fixture_counts: dict[str, tuple[int, int]]
) -> list[RuleRow]:
    """``rules`` are (code, name) pairs; ``fixture_counts`` maps a code to (positives, negatives)."""
    rows = []
    for code, name in rules:
        cells = {
            device: summarize([outcome for outcome in outcomes if outcome.fixture.code == code and outcome.device == device])
            for device in devices
        }
        positives, negatives = fixture_counts.get(code, (0, 0))
        rows.append(RuleRow(code, name, positives, negatives, cells))
    return rows


def format_report(header: Sequence[str], rows: Sequence[RuleRow], devices: Sequence[str], outcomes: Sequence[Outcome]) -> str:
    titles = ["rule", "name", "fixtures", *devices]
    lines = [
        [row.code, row.name, f"{row.positives} + {row.negatives}" if row.positives or row.negatives else "none", *(row.cells[d] for d in devices)]
        for row in rows
    ]
    widths = [max(len(text) for text in column) for column in zip(titles, *lines)]

    def render(cells: Sequence[str]) -> str:
        return "  ".join(text.ljust(width) for text, width in zip(cells, widths)).rstrip()

    out = [*header, "", render(titles), render(["-" * width for width in widths])]
    out.extend(render(line) for line in lines)
    out += ["", "fixtures: positives + negatives", *LEGEND]

    not_applicable = [outcome for outcome in outcomes if outcome.status is Status.NOT_APPLICABLE]
    if not_applicable:
        out += ["", "Not applicable with the installed versions:"]
        out += [f"  {outcome.fixture.id} on {outcome.device}: {outcome.original.detail}" for outcome in not_applicable]
    failed = [outcome for outcome in outcomes if outcome.failed]
    if failed:
        out += ["", "FAILED:"]
        for outcome in failed:
            out += [f"  {line}" for line in outcome.describe().splitlines()]
    out += ["", summary_line(rows, outcomes)]
    return "\n".join(out) + "\n"


def summary_line(rows: Sequence[RuleRow], outcomes: Sequence[Outcome]) -> str:
    counts = Counter(outcome.status for outcome in outcomes)
    fixtures = len({outcome.fixture.id for outcome in outcomes})
    parts = [
        f"{counts[status]} {status.value}"
        for status in (Status.CONFIRMED, Status.SKIPPED, Status.NOT_APPLICABLE, Status.FAILED)
        if counts[status] or status is Status.FAILED
    ]
    return f"{len(rows)} rules, {fixtures} fixtures that run on these devices, {len(outcomes)} runs (fixture x device): {', '.join(parts)}"


__all__ = ["LEGEND", "NO_FIXTURE", "RuleRow", "build_rows", "format_report", "summarize", "summary_line"]
