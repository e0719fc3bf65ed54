"""What the engine skips must not change what it finds: the prefilter, the qualified triggers, the pruned walk."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from flake8_tensorconv import engine, prefilter
from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source, needs_parse, rule_set, select_rules
from flake8_tensorconv.inference import iter_statements
from flake8_tensorconv.prefilter import Triggers
from flake8_tensorconv.rules import ALL_RULES
from flake8_tensorconv.source import Source, read_source

ROOT = Path(__file__).resolve().parent.parent
ALL = rule_set(frozenset(rule.code for rule in ALL_RULES))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import torch\ny = x.data\n", True),
        ("import torch\ny = x.dataset\n", False),
        ("import torch\np = x.data_ptr()\n", False),
        ("import torch\nt = torch.Tensor(3)\n", True),
        ("import torch\nt = FakeTensor(3)\n", False),
        ("x = y.numpy()\n", False),  # no torch at all
        ("import torchvision\nx = y.numpy()\n", False),  # names torch only as a prefix
        ("from torch import nn\nx = y.numpy()\n", True),
        ("import os, torch\nx = y.numpy()\n", True),
        ("from fastai.basics import *\nx = torch.ones(3).numpy()\n", True),  # a star import may re-export torch
        ("# torch\nx = y.numpy()\n", False),
        ('import torch\n"""Example:\n\n    >>> y.numpy()\n"""\n', False),  # only in a docstring's example
        ('import torch\n"""\n>>> y.numpy()\n"""\nz = y.numpy()\n', True),
        # Calls of torch functions count under the names the file imports them as.
        ("import torch\nz = torch.tensor(a)\n", True),
        ("import torch as th\nz = th.from_numpy(a)\n", True),
        ("from torch import tensor\nz = tensor(a)\n", True),
        ("x = 1; from torch import as_tensor as at\nz = at(a)\n", True),
        ("import torch\nz = table.tensor(a)\n", False),  # a method of something else
        ('import torch\n"""Returns:\n    tensor([1., 2.])\n"""\n', False),  # a printed tensor in a docstring
        ("import numpy as np\nimport torch\nz = np.asanyarray(t)\n", True),
        # `.detach(` counts right after a call, also across a line break and a comment.
        ("import torch\nz = y.cpu().detach()\n", True),
        ("import torch\nz = (y.cpu()  # to the host\n     .detach())\n", True),
        ("import torch\nz = y.detach()\n", False),
        ("import torch\n    # call x.numpy() first\n", False),  # a comment line
        ("import torch\ns = '# not a comment'; z = y.numpy()\n", True),
    ],
)
def test_prefilter(text, expected):
    assert needs_parse(text, ALL) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("import numpy as np\nnp.sum(t)\n", True),
        ("import numpy\nnumpy.sum(t)\n", True),
        ("import numpy as np\nsum(t)\n", False),  # the builtin
        ("import numpy as np\nt.sum()\n", False),  # the tensor method
        ("from numpy import sum\nsum(t)\n", True),
        ("from numpy import sum as total\ntotal(t)\n", True),
        ("from numpy import mean\nsum(t)\n", False),
        ("from numpy import (\n    sum,\n)\nsum(t)\n", True),  # cannot read the names: any may be imported
        ("import numpy.testing as npt\nnpt.assert_allclose(a, b)\n", True),
        ("from numpy.testing import assert_allclose\nassert_allclose(a, b)\n", True),
        ("sum(t)\n", False),
    ],
)
def test_qualified_triggers_follow_the_imports(text, expected):
    triggers = Triggers(["numpy.sum(", "numpy.testing.assert_allclose("])
    assert triggers.in_file(text) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "import" in prose or a comment is not an import statement that could not be read.
        ("# Local import avoids a cycle via torch.library.\nimport numpy as np\n", {("np", "numpy")}),
        ('"""We import it from torch lazily."""\nimport numpy\n', {("numpy", "numpy")}),
        ("try: import numpy as np\nexcept ImportError: pass\n", {("np", "numpy")}),
        ("x = 1; from numpy import sum\n", {("sum", "numpy.sum")}),
        ("import numpy.testing as npt, torch.nn as nn\n", {("npt", "numpy.testing")}),
        ("import foo.torch_helpers as numpy_like\n", set()),
    ],
)
def test_imports_read_from_the_text(text, expected):
    triggers = Triggers(["numpy.sum(", "numpy.testing.assert_allclose("])
    assert prefilter._bindings_in_text(text, triggers) == expected


LITERAL_SILENT = rule_set(frozenset(rule.code for rule in ALL_RULES if rule.silent_on_literal_data))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A call of literal numbers is no trigger for the rules that need an array or a tensor there.
        ("import torch\nz = torch.tensor([[1, 2], [3, -4.5e-3]])\n", False),
        ("import torch\nz = torch.as_tensor((0.5, True, None))\n", False),
        ("import torch as th\nz = th.tensor(\n    [1, 2],\n)\n", False),
        ("import numpy as np\nimport torch\nz = np.sum([1, 2])\n", False),
        # Anything else is one: a name, a keyword, a string, a comment, or a call taken from its result.
        ("import torch\nz = torch.tensor([e, 2])\n", True),
        ("import torch\nz = torch.tensor([1.0], dtype=torch.float64)\n", True),
        ("import torch\nz = torch.tensor([1.0]).double()\n", True),
        ("import torch\nz = torch.tensor([1.0])[0]\n", True),
        ("import torch\nz = torch.tensor([1,  # one\n 2])\n", True),
        ("import torch\nz = torch.tensor('1')\n", True),
        ("import torch\nz = torch.tensor([1, 2]\n", True),  # not closed: let the parser decide
        ("import torch\nz = torch.tensor([1]); y = torch.tensor(x)\n", True),
    ],
)
def test_a_call_of_literal_numbers_is_no_trigger_where_no_rule_reports_it(text, expected):
    assert needs_parse(text, LITERAL_SILENT) is expected


def test_a_call_of_literal_numbers_stays_a_trigger_for_a_rule_that_reports_it():
    # TCV201/TCV202 report legacy constructors of literal numbers (`torch.LongTensor([0.5])`, `torch.Tensor(3, 4)`).
    assert not any(rule.silent_on_literal_data for rule in ALL_RULES if rule.code in ("TCV201", "TCV202"))
    assert needs_parse("import torch\nz = torch.Tensor(3, 4)\n", ALL)
    assert needs_parse("import torch\nz = torch.LongTensor([0.5])\n", ALL)
    assert not needs_parse("import torch\nz = torch.tensor([0.5])\n", ALL)


def test_calls_of_literal_numbers_skipped_change_no_finding(monkeypatch):
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    settings = Settings(select=("ALL",))
    skipped = {path: lint_source(read_source(str(path)), settings) for path in files}
    monkeypatch.setattr(prefilter, "_literal_call", lambda text, start: False)
    counted = {path: lint_source(read_source(str(path)), settings) for path in files}
    assert skipped == counted
    assert sum(map(len, counted.values())) > 10


def test_a_trigger_in_a_docstring_does_not_make_its_function_walked():
    text = (
        "import torch\n\n"
        "def documented(t):\n"
        '    """Like `t.numpy()`,\n'
        "    but kept as a tensor.\n"
        '    """\n'
        "    return t\n\n"
        "def used(t):\n"
        '    """Converts."""; return t.numpy()\n\n'
        "def after(t):\n"
        '    """Docs."""\n'
        "    return t.numpy()\n"
    )
    source = Source(text=text)
    tree = ast.parse(text)
    walks = engine._scopes_to_walk(source, {"torch": "torch"}, ALL)
    assert {node.name: walks(node) for node in tree.body if isinstance(node, ast.FunctionDef)} == {
        "documented": False,
        "used": True,
        "after": True,
    }


def test_trigger_lines_of_tokens_after_a_call():
    triggers = Triggers([").detach("])
    text = "a = x.detach()\nb = (x.cpu()\n     .detach())\nc = f(x) .detach()\n"
    assert triggers.lines(text, {}) == [3, 4]


def test_trigger_lines_skip_docstring_examples():
    triggers = Triggers([".numpy("])
    text = 'def f(t):\n    """\n    >>> f(x).numpy()\n    """\n    return t\n\ny = x.numpy()\n'
    assert triggers.lines(text, {}) == [7]


def test_trigger_lines_allow_spacing_and_renamed_imports():
    triggers = Triggers([".numpy(", "torch.Tensor(", "numpy.sum("])
    text = "import numpy as np\nfrom torch import Tensor as T\nx = a .numpy ()\ny = T(3)\nz = np . sum(x)\nw = sum(x)\n"
    assert triggers.lines(text, {"np": "numpy", "T": "torch.Tensor"}) == [3, 4, 5]


def test_statements_come_in_ast_walk_order():
    for path in sorted((ROOT / "flake8_tensorconv").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        expected = [node for node in ast.walk(tree) if isinstance(node, (ast.Module, ast.stmt, ast.excepthandler, ast.match_case))]
        assert list(iter_statements(tree)) == expected, path


def _corpus() -> list[Path]:
    files = sorted((ROOT / "fixtures").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    return [path for path in files if needs_parse(read_source(str(path)).text, select_rules(Settings(select=("ALL",))))]


def test_walking_only_functions_with_triggers_finds_what_walking_everything_finds(monkeypatch):
    files = _corpus()
    assert len(files) > 10
    settings = Settings(select=("ALL",))
    pruned = {path: lint_source(read_source(str(path)), settings) for path in files}
    monkeypatch.setattr(engine, "_scopes_to_walk", lambda *args: None)
    full = {path: lint_source(read_source(str(path)), settings) for path in files}
    assert pruned == full
    assert sum(map(len, full.values())) > 10


def test_a_function_without_triggers_is_not_walked_but_binds_its_name():
    text = (
        "import torch\n\n"
        "w = torch.ones(3, requires_grad=True)\n\n"
        "def helper():\n"
        "    w = torch.zeros(3)\n"
        "    return w\n\n"
        "def convert():\n"
        "    return w.numpy()\n"
    )
    findings = lint_source(Source(text=text), Settings())
    assert [(finding.code, finding.start.line) for finding in findings] == [("TCV101", 10)]
