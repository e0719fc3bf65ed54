"""Every fixture is reported exactly where its `# expect:` markers say, and nowhere else."""

from __future__ import annotations

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.examples import all_fixtures, fixtures_for
from flake8_tensorconv.source import read_source

FIXTURES = all_fixtures()
SEED_RULES = ("TCV101", "TCV102", "TCV103", "TCV104", "TCV201", "TCV202")


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda fixture: fixture.id)
def test_findings_match_the_markers(fixture):
    # A fixture is read with the default rules and its own (an opt-in rule's example with that rule selected).
    findings = lint_source(read_source(str(fixture.path)), Settings(extend_select=(fixture.code,)))
    found = [(finding.start.line, finding.code) for finding in findings]
    assert found == fixture.expected_findings, "\n".join(f"{fixture.path}:{f.start.line}:{f.start.column + 1}: {f.code} {f.message}" for f in findings)


@pytest.mark.parametrize("fixture", [f for f in FIXTURES if not f.is_negative], ids=lambda fixture: fixture.id)
def test_a_positive_shows_its_own_rule_and_claims_something(fixture):
    assert fixture.code in {code for _, code in fixture.expected_findings}
    assert fixture.claims


@pytest.mark.parametrize("code", SEED_RULES)
def test_every_rule_has_a_fixed_positive_and_a_negative(code):
    fixtures = fixtures_for(code)
    assert any(not f.is_negative and f.fixed_path is not None for f in fixtures), f"{code}: no positive with a fixed form"
    assert any(f.is_negative for f in fixtures), f"{code}: no negative"
