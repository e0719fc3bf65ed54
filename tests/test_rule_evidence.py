"""Rules fire on evidence, and a fix is only as safe as that evidence allows.

Cases found while writing the fixtures (fixtures/TCV104, fixtures/TCV202).
"""

from __future__ import annotations

import textwrap

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import fix_source, lint_source
from flake8_tensorconv.examples import all_fixtures
from flake8_tensorconv.source import Source, read_source


def findings(code: str) -> list[tuple[int, str, str | None]]:
    result = lint_source(Source(text=textwrap.dedent(code)), Settings())
    return [(f.start.line, f.code, f.fix.applicability.value if f.fix else None) for f in result]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # A chain that only reads: the same values and memory either way.
        ("import torch\nw = torch.ones(2, requires_grad=True)\na = w.data.numpy()\n", [(3, "TCV104", "safe")]),
        # `.float()` of a float tensor is the tensor itself; changing it in place is what `.detach()` reports.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nf = w.data.float()\nf.mul_(2)\n", [(3, "TCV104", "unsafe")]),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nw.data.cpu().zero_()\n", [(3, "TCV104", "unsafe")]),
        # `.clone()` copies: what happens to the copy afterwards cannot matter.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nc = w.data.clone()\nc.zero_()\n", [(3, "TCV104", "safe")]),
        # Unknown receiver (a torchvision dataset's `.data` is its own attribute): reported, but the fix is unsafe.
        ("import torch\ndef f(train_set):\n    return train_set.data.numpy()\n", [(3, "TCV104", "unsafe")]),
        # memoryview and ndarray have `.tolist()`: no evidence of a tensor at all.
        ("import torch\ndef f(buffer):\n    return buffer.data.tolist(), buffer.data.item()\n", []),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nv = w.data.tolist()\n", [(3, "TCV104", "safe")]),
    ],
)
def test_data_instead_of_detach_fix_safety(code, expected):
    assert findings(code) == expected


def test_an_attribute_the_class_assigns_is_not_tensor_data():
    code = """\
        import torch

        class Digits(torch.utils.data.Dataset):
            def __init__(self, images):
                self.data = images

            def as_array(self):
                return self.data.numpy()

        class Wrapped(torch.Tensor):
            def as_array(self):
                return self.data.numpy()
    """
    assert findings(code) == [(12, "TCV104", "unsafe")]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("count = np.array(3)\nt = torch.Tensor(count)\n", "TCV202"),
        ("count = np.int64(3)\nt = torch.FloatTensor(count)\n", "TCV202"),
        ("flag = np.array(True)\nt = torch.Tensor(flag)\n", "TCV201"),  # a bool is a value: tensor(1.)
        ("value = np.array(3.5)\nt = torch.Tensor(value)\n", "TCV201"),
        ("values = np.array([3])\nt = torch.Tensor(values)\n", "TCV201"),
    ],
)
def test_zero_d_integer_arrays_in_variables_are_sizes(code, expected):
    assert [code for _, code, _ in findings("import numpy as np\nimport torch\n" + code)] == [expected]


@pytest.mark.parametrize("fixture", [f for f in all_fixtures() if f.differs], ids=lambda fixture: fixture.id)
def test_a_fix_that_changes_results_on_purpose_is_unsafe(fixture):
    source = read_source(str(fixture.path))
    assert fix_source(source, Settings(), unsafe=False).text == source.text


def test_an_or_guard_that_returns_leaves_the_facts_of_every_operand():
    code = """\
        import torch

        def as_array(t: torch.Tensor):
            if t.device.type != "cpu" or t.is_conj():
                return None
            return t.detach().numpy()

        def maybe(t: torch.Tensor):
            if t.is_conj() or t.device.type == "cpu":
                return t.detach().numpy()
            return None
    """
    assert findings(code) == [(10, "TCV102", "safe")]
