"""Same-file summaries walk only what can change their answer, and walk a caller once for all its callees."""

from __future__ import annotations

import ast
import textwrap

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.inference.statements import StatementsMixin
from flake8_tensorconv.source import Source


def _lint(code: str):
    return lint_source(Source(text=textwrap.dedent(code).lstrip("\n")), Settings())


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(function name, depth) of every function body an interpreter walks during the test."""
    entered: list[tuple[str, int]] = []
    walk_function = StatementsMixin.walk_function

    def counting(self, node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> None:
        if self.walks is None or self.walks(node):
            entered.append((node.name, self.depth))
        walk_function(self, node, class_name)

    monkeypatch.setattr(StatementsMixin, "walk_function", counting)
    return entered


def test_a_call_in_a_loop_sees_what_the_loop_binds_after_it():
    """The caller's walk stops after the statement that holds the call; a loop is that statement, whole."""
    (finding,) = _lint(
        """
        import torch

        def _show(x):
            return x.cpu().numpy()

        def main(model, batches):
            out = torch.zeros(3)
            for batch in batches:
                _show(out)
                out = model(batch)
            print("done")
        """
    )
    assert (finding.code, finding.start.line) == ("TCV101", 4)
    assert "`x` comes from `model(batch)` on line 10" in finding.message


def test_what_a_caller_does_after_its_call_is_not_what_it_passes():
    assert not _lint(
        """
        import torch

        def _show(x):
            return x.cpu().numpy()

        def main(model, batch):
            out = torch.zeros(3)
            _show(out)
            out = model(batch)
            return out
        """
    )


def test_a_caller_is_walked_once_for_two_helpers_it_calls(walked: list[tuple[str, int]]):
    findings = _lint(
        """
        import torch

        class Runner:
            def __init__(self, model, batch):
                self.model = model
                a = self._first(torch.ones(2))
                b = self._second(model(batch))

            def _first(self, x):
                return x.numpy()

            def _second(self, y):
                return y.numpy()
        """
    )
    # `_first` is given a plain tensor, `_second` a model's output: only the second call is a risk.
    assert [(f.code, f.start.line) for f in findings] == [("TCV101", 13)]
    assert walked.count(("__init__", 1)) == 1  # the callers' walk, shared by both summaries


def test_a_caller_walked_for_an_early_call_is_walked_again_for_a_later_one(walked: list[tuple[str, int]]):
    findings = _lint(
        """
        import torch

        def _first(x):
            return x.numpy()

        def _second(y):
            return y.numpy()

        def main(model, batch):
            _second(torch.ones(2))
            out = model(batch)
            _first(out)
        """
    )
    # `_first` (walked first, at line 3) needs the caller walked down to line 12; `_second`'s call on line 10 is
    # in that walk already.
    assert [(f.code, f.start.line) for f in findings] == [("TCV101", 4)]
    assert walked.count(("main", 1)) == 1


def test_a_helpers_return_is_walked_without_the_functions_nested_in_it(walked: list[tuple[str, int]]):
    findings = _lint(
        """
        import torch

        def make(x):
            def unused(z):
                return z * 2
            return x.detach()

        def main(model, batch):
            return make(model(batch)).numpy()
        """
    )
    assert not findings  # the helper's own return statement detaches
    assert ("make", 1) in walked and ("unused", 2) not in walked
