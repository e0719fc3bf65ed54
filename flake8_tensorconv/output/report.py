from __future__ import annotations

from typing import NamedTuple

from flake8_tensorconv.findings import Applicability, Finding

DOCS_URL = "https://github.com/flake8-tensorconv/flake8-tensorconv/blob/main/docs/rules.md"


class Report(NamedTuple):
    """A finding with the file it belongs to."""

    path: str
    finding: Finding

    def fix_available(self, unsafe_fixes: bool) -> bool:
        fix = self.finding.fix
        return fix is not None and (unsafe_fixes or fix.applicability is Applicability.SAFE)


def rule_url(code: str) -> str:
    from flake8_tensorconv.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code)
    return f"{DOCS_URL}#{code.lower()}-{rule.name}" if rule else DOCS_URL
