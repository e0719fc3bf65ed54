"""Arbitrary input never crashes the engine, and fixes always parse and are idempotent."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import ParseError, fix_source, lint_source
from flake8_tensorconv.examples import all_fixtures
from flake8_tensorconv.source import Source

ROOT = Path(__file__).resolve().parent.parent
EVERYTHING = Settings(select=("ALL",))
SEEDS = [fixture.source for fixture in all_fixtures()] + [(ROOT / "examples" / "evaluate.py").read_text()]


def _lint_or_parse_error(text: str) -> None:
    try:
        lint_source(Source(text=text), EVERYTHING)
    except ParseError:
        pass


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_mutated_sources_never_crash(seed: str, data: st.DataObject) -> None:
    lines = seed.splitlines(keepends=True)
    # Drop, duplicate or swap whole lines, and cut the file anywhere.
    operations = data.draw(st.lists(st.tuples(st.sampled_from(["drop", "dup", "swap"]), st.integers(0, max(len(lines) - 1, 0))), max_size=6))
    for operation, index in operations:
        if not lines:
            break
        index %= len(lines)
        if operation == "drop":
            del lines[index]
        elif operation == "dup":
            lines.insert(index, lines[index])
        else:
            other = (index + 1) % len(lines)
            lines[index], lines[other] = lines[other], lines[index]
    text = "".join(lines)
    cut = data.draw(st.integers(0, len(text)))
    _lint_or_parse_error(text)
    _lint_or_parse_error(text[:cut])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(SEEDS), data=st.data())
def test_fixes_parse_and_are_idempotent(seed: str, data: st.DataObject) -> None:
    lines = seed.splitlines(keepends=True)
    keep = data.draw(st.lists(st.booleans(), min_size=len(lines), max_size=len(lines)))
    text = "".join(line for line, kept in zip(lines, keep) if kept or line.startswith(("import", "from")))
    try:
        ast.parse(text)
    except SyntaxError:
        return
    first = fix_source(Source(text=text), EVERYTHING, unsafe=True)
    ast.parse(first.text)
    second = fix_source(Source(text=first.text), EVERYTHING, unsafe=True)
    assert second.text == first.text


def test_deep_nesting_is_reported_not_raised() -> None:
    deep = "import torch\nx = " + "+".join(["torch.ones(1, requires_grad=True)"] * 5000) + "\ny = x.numpy()\n"
    try:
        lint_source(Source(text=deep), EVERYTHING)
    except ParseError as error:
        assert "deep" in str(error) or "recursion" in str(error)
    moderately_deep = "import torch\nx = " + "+".join(["torch.ones(1, requires_grad=True)"] * 1500) + "\ny = x.numpy()\n"
    assert [f.code for f in lint_source(Source(text=moderately_deep), EVERYTHING)] == ["TCV101"]


def test_every_installed_torch_module_is_analysed_without_internal_error() -> None:
    """Walk a slice of the torch sources, as flake8-bugbear walks site-packages."""
    import importlib.util

    import pytest

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed: no torch sources to walk")
    root = Path(spec.origin).parent / "nn"
    for path in sorted(root.rglob("*.py")):
        try:
            lint_source(Source(text=path.read_text(encoding="utf-8")), EVERYTHING)
        except ParseError:
            pass
