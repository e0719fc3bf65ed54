"""Rule documentation, generated from each rule's docstring and its fixtures."""

from __future__ import annotations

from flake8_tensorconv.rules import ALL_RULES, Rule

_FIX_SAFETY_WORDS = {"safe": "safe", "unsafe": "unsafe", "sometimes": "safe or unsafe (depends on evidence)", "none": "none"}


def explain(rule: type[Rule]) -> str:
    """``tensorconv rule CODE``: What / Why / Example / Fix / Fix safety, and the runtime claim."""
    sections = rule.sections()
    default = "on" if rule.default_enabled else "opt-in (select it by its code)"
    parts = [
        f"# {rule.code}: {rule.name}",
        f"Default: {default}. Fix: {_FIX_SAFETY_WORDS[rule.fix_safety]}.",
    ]
    for heading in ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Known problems"):
        if sections.get(heading):
            parts.append(f"## {heading}\n{sections[heading]}")
    claims = runtime_claims(rule.code)
    if claims:
        parts.append("## Runtime claim (executed by the test suite and `tensorconv verify`)\n" + claims)
    return "\n\n".join(parts) + "\n"


def runtime_claims(code: str) -> str:
    from flake8_tensorconv.examples import fixtures_for

    lines = []
    for fixture in fixtures_for(code):
        if fixture.is_negative:
            continue
        for claim in fixture.claims:
            lines.append(f"- `{fixture.path.name}`: {claim.describe()}")
    return "\n".join(lines)


def rules_table() -> str:
    """The Markdown table of every rule, as the README shows it."""
    rows = ["| code | name | what it flags | default | fix |", "|---|---|---|---|---|"]
    for rule in ALL_RULES:
        default = "on" if rule.default_enabled else "opt-in"
        rows.append(f"| {rule.code} | {rule.name} | {rule.summary()} | {default} | {_FIX_SAFETY_WORDS[rule.fix_safety]} |")
    return "\n".join(rows) + "\n"
