"""`--fix --unsafe-fixes` turns every positive into exactly its NAME.fixed.py, once and for all."""

from __future__ import annotations

import ast

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import fix_source
from flake8_tensorconv.examples import all_fixtures
from flake8_tensorconv.source import Source, read_source

FIXTURES = all_fixtures()
FIXED = [fixture for fixture in FIXTURES if fixture.fixed_path is not None]
UNFIXED = [fixture for fixture in FIXTURES if not fixture.is_negative and fixture.fixed_path is None]


@pytest.mark.parametrize("fixture", FIXED, ids=lambda fixture: fixture.id)
def test_fix_produces_the_fixed_file_byte_for_byte(fixture):
    source = read_source(str(fixture.path))
    result = fix_source(source, Settings(extend_select=(fixture.code,)), unsafe=True)
    assert result.applied, "no fix was applied"
    assert not result.dropped
    assert source.encode(result.text) == fixture.fixed_path.read_bytes()


@pytest.mark.parametrize("fixture", UNFIXED, ids=lambda fixture: fixture.id)
def test_a_positive_without_a_fixed_file_gets_no_fix(fixture):
    result = fix_source(read_source(str(fixture.path)), Settings(extend_select=(fixture.code,)), unsafe=True)
    assert not result.applied, "a fix was applied: add NAME.fixed.py"


@pytest.mark.parametrize("fixture", FIXED, ids=lambda fixture: fixture.id)
def test_fixed_file_parses_and_a_second_pass_changes_nothing(fixture):
    text = fixture.fixed_path.read_text(encoding="utf-8")
    ast.parse(text)
    again = fix_source(Source(text=text), Settings(extend_select=(fixture.code,)), unsafe=True)
    assert again.text == text
    assert not again.applied


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda fixture: fixture.id)
def test_fixture_files_compile(fixture):
    # They are byte-compiled when the package is installed.
    for path in filter(None, (fixture.path, fixture.fixed_path)):
        compile(path.read_text(encoding="utf-8"), str(path), "exec")
