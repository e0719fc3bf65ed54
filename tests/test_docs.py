"""Docs are generated from the rules and fixtures, so they cannot drift."""

from __future__ import annotations

from pathlib import Path

from flake8_tensorconv import docs
from flake8_tensorconv.rules import ALL_RULES

ROOT = Path(__file__).resolve().parent.parent
REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety")


def test_readme_rule_table_is_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert docs.readme_with_table(readme) == readme, "run `python -m flake8_tensorconv.docs`"
    for rule in ALL_RULES:
        assert f"| {rule.code} | {rule.name} |" in readme


def test_rules_reference_is_current():
    assert (ROOT / "docs" / "rules.md").read_text(encoding="utf-8") == docs.rules_reference(), (
        "run `python -m flake8_tensorconv.docs`"
    )


def test_every_rule_is_documented():
    codes = [rule.code for rule in ALL_RULES]
    assert len(codes) == len(set(codes))
    for rule in ALL_RULES:
        sections = rule.sections()
        assert all(sections.get(heading) for heading in REQUIRED_SECTIONS), rule.code
        assert rule.fix_safety in ("safe", "unsafe", "sometimes", "none"), rule.code
        assert rule.name == rule.name.lower() and " " not in rule.name, rule.code
        if rule.code.startswith(("TCV1", "TCV2")):
            assert rule.triggers, f"{rule.code} has no trigger token: the prefilter would skip every file"
            assert "## Runtime claim" in docs.explain(rule), f"{rule.code} has no fixture with a claim"
