"""Run every fixture: the original does what its claim says, the fixed code runs and matches it.

Parametrized over fixture x device; cuda is skipped without a GPU, with the reason.
"""

from __future__ import annotations

import pytest

from flake8_tensorconv.examples import all_fixtures
from flake8_tensorconv.verify.harness import Status, verify_fixture

FIXTURES = all_fixtures()


def _cases(negative: bool):
    return [
        pytest.param(fixture, device, id=f"{fixture.id}-{device}")
        for fixture in FIXTURES
        if fixture.is_negative is negative
        for device in fixture.devices
    ]


def _skip_if_unavailable(outcome):
    if outcome.status in (Status.SKIPPED, Status.NOT_APPLICABLE):
        pytest.skip(outcome.original.detail)


@pytest.mark.parametrize(("fixture", "device"), _cases(negative=False))
def test_claim_holds_and_fix_matches(fixture, device):
    outcome = verify_fixture(fixture, device)
    _skip_if_unavailable(outcome)
    assert not outcome.failed, outcome.describe()
    expected = Status.CONFIRMED if device in fixture.claim_devices else Status.CLEAN
    assert outcome.original.status is expected, outcome.describe()
    if device in fixture.fix_devices and fixture.fixed_path is not None:
        # A positive without NAME.fixed.py belongs to a rule that offers no fix (test_fixtures_fix checks that).
        assert outcome.fix.status is Status.CONFIRMED, outcome.describe()


@pytest.mark.parametrize(("fixture", "device"), _cases(negative=True))
def test_negative_runs_cleanly(fixture, device):
    outcome = verify_fixture(fixture, device)
    _skip_if_unavailable(outcome)
    assert outcome.original.status is Status.CLEAN, outcome.describe()
