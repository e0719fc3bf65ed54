"""--add-noqa on every fixture: the result parses, silences exactly what was reported, and a second pass adds nothing."""

from __future__ import annotations

import ast

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.examples import all_fixtures
from flake8_tensorconv.noqa import add_noqa
from flake8_tensorconv.source import Source, read_source

POSITIVES = [fixture for fixture in all_fixtures() if not fixture.is_negative]


@pytest.mark.parametrize("fixture", POSITIVES, ids=lambda fixture: fixture.id)
def test_add_noqa_on_each_fixture(fixture):
    settings = Settings(extend_select=(fixture.code,))
    source = read_source(str(fixture.path))
    findings = lint_source(source, settings)
    added = add_noqa(source, findings)
    ast.parse(added.text)
    silenced = Source(text=added.text, encoding=source.encoding, has_bom=source.has_bom)
    remaining = lint_source(silenced, settings)
    skipped_lines = {line for line, _ in added.skipped}
    assert {finding.start.line for finding in remaining} == skipped_lines
    assert added.count == len({finding.start.line for finding in findings} - skipped_lines)
    again = add_noqa(silenced, remaining)
    assert (again.text, again.count) == (added.text, 0)
    # Only comments were added: the lines without a finding are byte for byte the same.
    reported = {finding.start.line for finding in findings}
    before, after = source.text.splitlines(keepends=True), added.text.splitlines(keepends=True)
    assert len(before) == len(after)
    assert [line for number, line in enumerate(before, 1) if number not in reported] == [
        line for number, line in enumerate(after, 1) if number not in reported
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("arr = out.numpy()", "arr = out.numpy()  # noqa: TCV101"),
        ("arr = out.numpy()  # noqa:E501", "arr = out.numpy()  # noqa:E501, TCV101"),
        ("arr = out.numpy()  # noqa: TCV201,E501 why", "arr = out.numpy()  # noqa: E501, TCV101, TCV201 why"),
        ("arr = out.numpy()  # noqa", "arr = out.numpy()  # noqa"),
        ("arr = out.numpy()  # type: ignore", "arr = out.numpy()  # type: ignore  # noqa: TCV101"),
        ('arr = out.numpy() if "# noqa: X1" else 0', 'arr = out.numpy() if "# noqa: X1" else 0  # noqa: TCV101'),
    ],
)
def test_comment_placement(line, expected):
    source_text = f"import torch\n\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\n{line}\n"
    findings = lint_source(Source(text=source_text), Settings())
    added = add_noqa(Source(text=source_text), findings)
    assert added.text == source_text.replace(line, expected)
    assert lint_source(Source(text=added.text), Settings()) == []
    assert add_noqa(Source(text=added.text), findings).count == 0
