"""Every fixture is reported exactly where its `# expect:` markers say, and nowhere else."""

from __future__ import annotations

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.examples import all_fixtures, fixtures_for
from flake8_tensorconv.rules import ALL_RULES
from flake8_tensorconv.source import read_source

FIXTURES = all_fixtures()
# TCV0xx report on the tool itself (unparsable file, internal error): they have no runtime claim.
CATALOGUE = [rule for rule in ALL_RULES if not rule.code.startswith("TCV0")]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda fixture: fixture.id)
def test_findings_match_the_markers(fixture):
    # A fixture is read with the default rules and its own (an opt-in rule's example with that rule selected).
    findings = lint_source(read_source(str(fixture.path)), Settings(extend_select=(fixture.code,)))
    found = [(finding.start.line, finding.code) for finding in findings]
    report = "\n".join(f"{fixture.path}:{f.start.line}:{f.start.column + 1}: {f.code} {f.message}" for f in findings)
    assert found == fixture.expected_findings, report
    # A marker that names a column pins the node the rule reports at.
    for expectation, finding in zip(fixture.expectations, findings):
        if expectation.column is not None:
            assert finding.start.column + 1 == expectation.column, report


@pytest.mark.parametrize("fixture", [f for f in FIXTURES if not f.is_negative], ids=lambda fixture: fixture.id)
def test_a_positive_shows_its_own_rule_and_claims_something(fixture):
    assert fixture.code in {code for _, code in fixture.expected_findings}
    assert fixture.claims


@pytest.mark.parametrize("rule", CATALOGUE, ids=lambda rule: rule.code)
def test_every_rule_has_a_positive_a_fixed_form_and_a_negative(rule):
    fixtures = fixtures_for(rule.code)
    assert any(not f.is_negative for f in fixtures), f"{rule.code}: no positive"
    if rule.fix_safety != "none":
        assert any(not f.is_negative and f.fixed_path is not None for f in fixtures), f"{rule.code}: no positive with a fixed form"
    assert any(f.is_negative for f in fixtures), f"{rule.code}: no negative"


def test_a_column_marker_is_read_and_held_to(tmp_path):
    from flake8_tensorconv.examples import _expectations

    marked = _expectations("x = 1  # expect: TCV104:12, TCV101\n", tmp_path / "f.py")
    assert [(e.line, e.code, e.column) for e in marked] == [(1, "TCV101", None), (1, "TCV104", 12)]
