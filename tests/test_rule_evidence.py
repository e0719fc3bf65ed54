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


def findings(code: str, settings: Settings | None = None) -> list[tuple[int, str, str | None]]:
    result = lint_source(Source(text=textwrap.dedent(code)), settings or Settings())
    return [(f.start.line, f.code, f.fix.applicability.value if f.fix else None) for f in result]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # A chain that only reads: the same values and memory either way.
        ("import torch\nw = torch.ones(2, requires_grad=True)\na = w.data.numpy()\n", [(3, "TCV104", "safe")]),
        # `.float()` of a float tensor is the tensor itself; changing it in place is what `.detach()` reports
        # (on a computed tensor, which a graph may have saved).
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w.sigmoid()\nf = h.data.float()\nf.mul_(2)\n", [(4, "TCV104", "unsafe")]),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w.exp()\nh.data.cpu().zero_()\n", [(4, "TCV104", "unsafe")]),
        # ... but a product keeps its operands, not its result: zeroing the result hides nothing.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nh.data.cpu().zero_()\n", []),
        # Writing into a leaf through `.data` is a parameter update (an optimizer's step, init, clipping)...
        ("import torch\nw = torch.ones(2, requires_grad=True)\nf = w.data.float()\nf.mul_(2)\n", []),
        ("import torch\nlayer = torch.nn.Linear(2, 2)\nlayer.weight.data.mul_(0.5)\n", []),
        ("import torch\ndef clip(model):\n    for p in model.parameters():\n        p.data.clamp_(-1, 1)\n", []),
        # ... unless a backward follows in the same code, which then uses the changed value.
        (
            "import torch\nw = torch.ones(2, requires_grad=True)\nloss = (w ** 2).sum()\nw.data.sub_(0.5)\nloss.backward()\n",
            [(4, "TCV104", "unsafe")],
        ),
        # A copy, or an out-of-place operation, leaves no alias behind: nothing to hide.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nc = w.data.clone()\nc.zero_()\n", []),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nr = h.data.cpu() * 3\n", []),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nr = torch.cat([h.data.cpu(), h.data])\n", []),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nk = h.data.long()\n", []),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nv = torch.zeros(2)\nv.copy_(w.data.cpu())\n", []),
        # A chain bound, stored or returned keeps an alias outside autograd's check.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\ndef f():\n    return h.data.cpu()\n", [(5, "TCV104", "safe")]),
        # A plain `.data` that is only read, and `.data.detach()` (detached anyway), are left alone.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nprint(h.data)\ndef f():\n    return h.data\n", []),
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nd = h.data.detach().cpu()\n", []),
        # Items of a hook's saved gradients do not require grad.
        ("import torch\ndef f(self):\n    return [g.cpu().data.numpy() for g in self.gradients]\n", []),
        # Unknown receiver (it may have a `.data` of its own): reported on the torch-only chain, the fix unsafe.
        ("import torch\ndef f(scores):\n    return scores.data.numpy()\n", [(3, "TCV104", "unsafe")]),
        # memoryview and ndarray have `.tolist()`: no evidence of a tensor at all.
        ("import torch\ndef f(buffer):\n    return buffer.data.tolist(), buffer.data.item()\n", []),
        # Only a Python value leaves: nothing that autograd could miss.
        ("import torch\nw = torch.ones(2, requires_grad=True)\nv = w.data.tolist()\n", []),
        # A dataset's own `.data` (torchvision's MNIST: a uint8 tensor), whatever the split's name.
        ("import torch\ndef f(train_set, testset):\n    return train_set.data.float(), testset.data.cpu()\n", []),
        # Replacing a parameter's storage is what `.data` is for.
        ("import torch\nw = torch.nn.Parameter(torch.ones(2))\nw.data = w.data.half()\n", []),
        ("import torch\nw = torch.nn.Parameter(torch.ones(2))\nv = torch.nn.Parameter(torch.ones(2))\nw.data = v.data.clone()\n", []),
        # Gradients, buffers, integer tensors and values made under no_grad cannot require grad.
        ("import torch\ndef f(p):\n    return p.grad.data.cpu()\n", []),
        ("import torch\nlabels = torch.zeros(3, dtype=torch.long, requires_grad=False)\nc = labels.data.clone()\n", []),
        ("import torch\ndef f(model, x):\n    with torch.no_grad():\n        out = model(x)\n    return out.data.cpu()\n", []),
        # The name is rebound before the in-place write: the write does not reach `w`.
        (
            "import torch\nw = torch.ones(2, requires_grad=True)\ndef f():\n    y = w.data\n    y = torch.zeros(3)\n    y.zero_()\n",
            [],
        ),
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
    """
    assert findings(code) == []
    wrapped = """\
        import torch

        class Wrapped(torch.Tensor):
            def as_array(self):
                return self.data.numpy()
    """
    assert findings(wrapped) == [(5, "TCV104", "unsafe")]


@pytest.mark.parametrize(
    "code",
    [
        # A class of the file with its own `data` (a property): `image.data.numpy()` is no evidence of a tensor.
        "class Image:\n    @property\n    def data(self):\n        return self._tensor\ndef f(image):\n    return image.data.numpy()\n",
        # ... nor in a file that imports classes from its own package, whose members it cannot see.
        "from .image import Image\ndef f(image):\n    return image.data.cpu()\n",
        "from ..data import ScalarImage, Subject\ndef f(subject):\n    subject.t1.data.float().mul_(2)\n",
    ],
)
def test_data_of_a_project_class_is_not_tensor_data(code):
    assert findings("import torch\n" + code) == []
    # The same chain on a value known to be a tensor is still reported.
    known = "import torch\n" + code + "w = torch.ones(2, requires_grad=True)\na = w.data.numpy()\n"
    assert [code for _, code, _ in findings(known)] == ["TCV104"]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("count = np.array(3)\nt = torch.Tensor(count)\nprint(t)\n", "TCV202"),
        ("count = np.int64(3)\nt = torch.FloatTensor(count)\nprint(t + 1)\n", "TCV202"),
        ("flag = np.array(True)\nt = torch.Tensor(flag)\n", "TCV211"),  # a bool is a value: tensor(1.), nothing lost
        ("value = np.array(3.5)\nt = torch.Tensor(value)\n", "TCV211"),  # float64 -> float32: the default rounding
        ("values = np.array([3])\nt = torch.Tensor(values)\n", "TCV201"),  # int64 data turned into floats
    ],
)
def test_zero_d_integer_arrays_in_variables_are_sizes(code, expected):
    settings = Settings(extend_select=("TCV211",))
    assert [code for _, code, _ in findings("import numpy as np\nimport torch\n" + code, settings)] == [expected]


@pytest.mark.parametrize("fixture", [f for f in all_fixtures() if f.differs], ids=lambda fixture: fixture.id)
def test_a_fix_that_changes_results_on_purpose_is_unsafe(fixture):
    source = read_source(str(fixture.path))
    assert fix_source(source, Settings(), unsafe=False).text == source.text


def test_an_or_guard_that_returns_leaves_the_facts_of_every_operand():
    code = """\
        import torch

        def as_array(logits: torch.Tensor):
            if logits.device.type != "cpu" or logits.is_conj():
                return None
            return logits.detach().numpy()

        def maybe(logits: torch.Tensor):
            if logits.is_conj() or logits.device.type == "cpu":
                return logits.detach().numpy()
            return None
    """
    assert findings(code) == [(10, "TCV102", "safe")]


def _only(code: str, rule: str) -> list[tuple[int, str, str | None]]:
    return [finding for finding in findings(code) if finding[1] == rule]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # One NumPy call, one dtype: np.array(items) holds what torch would have read.
        ("rows = [np.ones(3) for _ in range(2)]\nt = torch.tensor(rows)\n", [(4, "TCV204", "safe")]),
        ("a = np.zeros(2, np.float32)\nt = torch.tensor([a, a * 2])\n", [(4, "TCV204", "unsafe")]),  # `a * 2`: dtype not followed
        # int64 + float32: float32 in torch, float64 through NumPy.
        ("t = torch.tensor([np.arange(2), np.ones(2, dtype=np.float32)])\n", [(3, "TCV204", "unsafe")]),
        # `insert` adds an item the inference does not follow.
        ("rows = [np.ones(2)]\nrows.insert(0, np.arange(2))\nt = torch.tensor(rows)\n", [(5, "TCV204", "unsafe")]),
        # What happens to the list after the conversion cannot matter (outside a loop).
        ("rows = [np.ones(2)]\nt = torch.tensor(rows)\nrows.insert(0, np.arange(2))\n", [(4, "TCV204", "safe")]),
        # Items of a 1-D array are NumPy scalars: no warning, nothing to report.
        ("a = np.ones(3)\nt = torch.tensor([a[i] for i in range(3)])\n", []),
        ("t = torch.tensor((np.ones(2) for _ in range(2)))\n", []),  # a generator: torch.tensor raises
    ],
)
def test_tensor_from_list_of_arrays_fix_safety(code, expected):
    assert _only("import numpy as np\nimport torch\n" + code, "TCV204") == expected


def test_tensor_from_list_of_arrays_without_a_numpy_name_has_no_fix():
    code = "from numpy import ones\nimport torch\nt = torch.tensor([ones(2), ones(2)])\n"
    assert _only(code, "TCV204") == [(3, "TCV204", None)]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # Known as a tensor from its annotation only: reported, but a caller may pass an int (issue 14).
        ("def f(t: torch.Tensor):\n    return torch.tensor(t)\n", [(3, "TCV205", "unsafe")]),
        ("def f(t: Optional[torch.Tensor]):\n    return torch.tensor(t)\n", [(3, "TCV205", "unsafe")]),
        ("def f(t: torch.Tensor):\n    t = t.float()\n    return torch.tensor(t)\n", [(4, "TCV205", "safe")]),
        ("t = torch.ones(2)\nc = torch.tensor(t)\n", [(3, "TCV205", "safe")]),
        ("def f(values):\n    return torch.tensor(values)\n", []),  # a list as often as a tensor
        # An instance of another library's class (`NonTensorData`): its `.data` is that class's, whatever the annotation.
        (
            "from tensordict import NonTensorData\ndef f(t: torch.Tensor):\n    if isinstance(t, NonTensorData):\n"
            "        return torch.tensor(t.data)\n    return t\n",
            [],
        ),
        ("t = torch.ones(2)\nc = torch.tensor(t, pin_memory=False)\n", [(3, "TCV205", None)]),  # no `.to()` spelling for it
        ("t = torch.ones(2)\nc = torch.tensor(t, **options)\n", [(3, "TCV205", None)]),
    ],
)
def test_tensor_copy_construct_needs_a_tensor(code, expected):
    assert _only("import torch\nfrom typing import Optional\n" + code, "TCV205") == [
        (line + 1, rule, fix) for line, rule, fix in expected
    ]


@pytest.mark.parametrize(
    "code",
    [
        "m = nn.Linear(3, 2)\nm.half()\ny = m(x)\n",  # `.float()` would not match float16 weights
        "m = nn.Embedding(4, 2)\ny = m(x)\n",  # indices: a float input is wrong whatever its width
        "m = nn.Linear(3, 2, dtype=dtype)\ny = m(x)\n",  # a dtype the linter cannot read
        "w = torch.randn(2, 3)\ny = F.linear(x, w)\n",  # a weight of unknown dtype
        "torch.set_default_dtype(torch.float64)\nm = nn.Linear(3, 2)\ny = m(x)\n",
        "y = build_model()(x)\n",
    ],
)
def test_float64_into_float32_model_needs_float32_weights(code):
    header = "import numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\nx = torch.from_numpy(np.random.rand(4, 3))\n"
    assert _only(header + code, "TCV206") == []


def test_float64_into_float32_model_reports_each_float64_input():
    code = """\
        import numpy as np
        import torch

        pairwise = torch.nn.Bilinear(3, 3, 1)
        left = torch.from_numpy(np.random.rand(2, 3))
        right = torch.zeros(2, 3)
        score = pairwise(left, right)
        again = pairwise.forward(left * 2, right)
    """
    assert _only(code, "TCV206") == [(7, "TCV206", "unsafe"), (8, "TCV206", "unsafe")]
    fixed = fix_source(Source(text=textwrap.dedent(code)), Settings(), unsafe=True).text
    assert "pairwise(left.float(), right)" in fixed and "pairwise.forward((left * 2).float(), right)" in fixed


def test_float64_into_float32_model_follows_the_module_dtype():
    code = """\
        import numpy as np
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 1)

            def forward(self, x):
                return self.fc(x)

        def run(dtype):
            x = torch.from_numpy(np.random.rand(2, 3))
            a = Net().to(dtype=dtype)(x)
            b = Net().to(torch.float64)(x)
            c = Net().to("cpu")(x)
            return a, b, c
    """
    assert _only(code, "TCV206") == [(16, "TCV206", "unsafe")]


def _legacy(code: str) -> list[tuple[str, str, str | None]]:
    result = lint_source(
        Source(text="import numpy as np\nimport torch\n" + textwrap.dedent(code)), Settings(extend_select=("TCV211",))
    )
    return [(f.code, f.message, f.fix.applicability.value if f.fix else None) for f in result]


@pytest.mark.parametrize(
    ("code", "expected_code", "says", "applicability"),
    [
        ("t = torch.Tensor(np.arange(3))\n", "TCV201", "turns int64 data into float32 floats (integers above 2**24", "safe"),
        # Literals written into a float constructor are meant as floats, and all are held exactly.
        ("t = torch.Tensor([1, 0, 2])\n", "TCV211", "implicit cast to the default dtype", "safe"),
        # A float type the author named: the cast is meant (an int32 0/1 feature matrix).
        ("t = torch.DoubleTensor(np.arange(3))\n", "TCV211", "implicit cast to float64", "safe"),
        ("t = torch.FloatTensor(np.zeros(3, dtype=np.int32))\n", "TCV211", "implicit cast to float32", "safe"),
        ("t = torch.LongTensor(np.random.rand(3))\n", "TCV201", "truncates float64 floats to int64", "safe"),
        # Floats that are whole numbers by construction truncate to themselves.
        ("t = torch.LongTensor(np.ones(3))\n", "TCV211", "implicit cast to int64", "safe"),
        ("y = np.hstack([np.zeros(2), np.ones(2)])\ny = torch.LongTensor(y)\n", "TCV211", "implicit cast to int64", "safe"),
        ("t = torch.ByteTensor(np.arange(3))\n", "TCV201", "wraps int64 values outside uint8's range", "safe"),
        ("t = torch.HalfTensor(np.ones(3))\n", "TCV201", "rounds float64 to float16", "safe"),
        ("t = torch.FloatTensor([1e-50])\n", "TCV201", "casts these literals to float32, which does not hold them all", "safe"),
        ("t = torch.Tensor(np.arange(3)).long()\n", "TCV201", "before the cast back to integers", "unsafe"),
        # Integers of unknown size through float32 and back: probably small, so only the opt-in rule.
        ("ids, _ = zip(*pairs)\nt = torch.Tensor(ids).long()\n", "TCV211", "before the cast back to integers", "unsafe"),
        ("t = torch.FloatTensor(np.array([True, False]))\n", "TCV211", "implicit cast to float32", "safe"),
        ("t = torch.IntTensor(np.zeros(2, dtype=np.int16))\n", "TCV211", "implicit cast to int32", "safe"),
        ("t = torch.Tensor(np.eye(2))\n", "TCV211", "implicit cast to the default dtype", "safe"),
        ("t = torch.LongTensor([1, 2])\n", "TCV211", "implicit cast to int64", "safe"),
        ("t = torch.Tensor(list(values))\n", "TCV211", "implicit cast to the default dtype", "safe"),
    ],
)
def test_legacy_constructor_messages_say_what_the_cast_does(code, expected_code, says, applicability):
    ((code_found, message, fix),) = _legacy(code)
    assert (code_found, fix) == (expected_code, applicability)
    assert says in message
    if expected_code == "TCV211":
        assert "lost" not in message


def test_data_instead_of_detach_speaks_of_wrong_gradients_only_before_an_in_place_write():
    code = """\
        import torch
        w = torch.ones(2, requires_grad=True).sigmoid()
        a = w.data.numpy()
        f = w.data.float()
        f.mul_(2)
        def g():
            y = w.data
            y.zero_()
    """
    result = lint_source(Source(text=textwrap.dedent(code)), Settings())
    messages = {f.start.line: f.message for f in result if f.code == "TCV104"}
    assert set(messages) == {3, 4, 7}
    assert "wrong gradients" not in messages[3] and "`.detach()` does the same" in messages[3]
    assert "in-place change that follows" in messages[4] and "wrong gradients" in messages[4]
    assert messages[7] == messages[4]


def test_data_instead_of_detach_names_the_binding_that_reaches_an_in_place_write():
    # The evidence named the step that makes the tensor require grad (`model(x)`), a binding the name had before
    # the one written (`torch.exp(h)`, which keeps its result): it names both now, the written one first.
    code = """\
        import torch
        from torch import nn
        model = nn.Linear(3, 3)
        def step(x):
            h = model(x)
            h = torch.exp(h)
            h.data[0] = 0.0
            g = torch.exp(model(x))
            g.data[0] = 0.0
            if x.sum() > 0:
                h = torch.sigmoid(x)
            h.data.zero_()
    """
    result = lint_source(Source(text=textwrap.dedent(code)), Settings())
    findings_ = {f.start.line: f for f in result if f.code == "TCV104"}
    assert findings_[7].message.endswith(
        "(`h` is made by `torch.exp(h)` on line 6, which requires grad through `model(x)` on line 5, outside `no_grad`)"
    )
    assert [r.message for r in findings_[7].related] == ["requires grad: `model(x)`", "made by: `torch.exp(h)`"]
    assert findings_[9].message.endswith("(`g` comes from `model(x)` on line 8, outside `no_grad`)")  # in the binding
    assert "is made by" not in findings_[12].message  # bound in a branch: another binding may reach the write


_FROZEN_BY_A_LOOP = """\
    import copy
    import torch
    from torch import nn
    features = copy.deepcopy(nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()))
    for parameter in features.parameters():
        parameter.requires_grad = False
    {after}
    def extract(image):
        current = image
        for layer in features.children():
            current = layer(current)
        return current
    last = extract(torch.rand(1, 3, 8, 8))
    activations = last.data.numpy()
"""


@pytest.mark.parametrize(
    ("after", "reported"),
    [
        ("", False),
        ("features[0].weight.requires_grad = True", True),  # unfrozen again
        ("features[1].requires_grad_()", True),
        ("features.head = nn.Linear(4, 2)", True),  # a layer stored after the freeze
        ("features.append(nn.Conv2d(4, 4, 1))", True),
    ],
)
def test_a_module_frozen_by_a_loop_stays_frozen_only_where_nothing_unfreezes_it(after, reported):
    code = textwrap.dedent(_FROZEN_BY_A_LOOP).replace("{after}", after)
    assert (findings(code) == [(14, "TCV104", "unsafe")]) is reported


_KEPT_OR_NOT = """\
    import torch
    import torch.nn.functional as F
    from torch import nn


    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))
            self.key = nn.Linear(4, 4)

        def masked(self, q, k, mask):
            dots = torch.einsum("bqa,bka->bqk", q, self.w @ k)
            dots.data.masked_fill_(mask, -float("inf"))  # nothing kept: einsum keeps q and k
            return F.softmax(dots, -1)

        def sigmoid(self, x, mask):
            p = torch.sigmoid(self.key(x))
            p.data.masked_fill_(mask, 0.0)  # kept: sigmoid keeps its result
            return p

        def layer(self, x, mask):
            h = self.key(x)
            h.data.masked_fill_(mask, 0.0)  # nothing kept: a Linear layer keeps its input
            return h

        def product(self, x, mask):
            h = self.key(x)
            y = h * self.w
            h.data.masked_fill_(mask, 0.0)  # kept: `h * w` keeps h for w's gradient
            return y

        def scaled(self, x, mask):
            h = self.key(x)
            y = h * 2 + h.sum() + h.shape[0]
            h.data.masked_fill_(mask, 0.0)  # nothing kept: a product with a number keeps nothing of h
            return y

        def view(self, x):
            h = self.key(x).softmax(-1)
            v = h.view(-1)
            v.data.zero_()  # kept: a view of softmax's result
            return h

        def loop(self, x):
            h = self.key(x)
            out = []
            for _ in range(3):
                h.data.clamp_(0, 1)  # kept: `h * w` of the last pass reads it
                out.append(h * self.w)
            return out

        def alias(self, x):
            h = self.key(x)
            buf = h.data  # kept: matmul reads h before the write into buf
            y = h @ self.w
            buf.zero_()
            return y

        def either(self, x, prior, mask):
            logp = -2.0 * self.key(x).sum(1)
            if prior is not None:
                logp = F.log_softmax(logp, -1) + prior
            logp.data.masked_fill_(mask, -1e9)  # nothing kept on either path
            return logp

        def branch(self, x, flag, mask):
            y = self.key(x)
            if flag:
                y = y.exp()
            y.data.masked_fill_(mask, 0.0)  # kept: exp's result on one path
            return y

        def unknown(self, x, mask):
            y = self.key(x).scatter(1, mask, 0.0)
            y.data.masked_fill_(mask, 0.0)  # kept: an op the table does not know may keep its result
            return y


    w = nn.Parameter(torch.ones(2))
    loss = (w + 1).sum()
    w.data.sub_(0.5)
    loss.backward()
    v = nn.Parameter(torch.ones(2))
    loss = (v ** 2).sum()
    v.data.sub_(0.5)  # kept: the power keeps v
    loss.backward()
"""


def test_data_instead_of_detach_reports_an_in_place_write_only_where_an_op_kept_the_tensor():
    text = textwrap.dedent(_KEPT_OR_NOT)
    lines = text.splitlines()
    result = lint_source(Source(text=text), Settings())
    messages = {f.start.line: f.message for f in result if f.code == "TCV104"}
    kept = {number for number, line in enumerate(lines, 1) if "# kept" in line}
    nothing_kept = {number for number, line in enumerate(lines, 1) if "# nothing kept" in line}
    assert kept and nothing_kept
    # Where no recorded op kept the tensor (and for the parameter updated where nothing read it) the write hides nothing.
    assert set(messages) == kept
    for line in kept:
        assert "silently wrong gradients" in messages[line], lines[line - 1]


def _apply_as_a_client(text: str, fixes) -> str:
    """Apply every edit of every fix at once, as an editor applying several quick fixes would."""
    source = Source(text=text)
    edits = sorted(
        ((source.offset(e.start), source.offset(e.end), e.content) for fix in fixes for e in fix.edits), reverse=True
    )
    for start, end, content in edits:
        text = text[:start] + content + text[end:]
    return text


@pytest.mark.parametrize(
    ("line", "both", "grad_alone"),
    [
        ("arr = out.numpy()", "arr = out.detach().cpu().numpy()", "arr = out.detach().numpy()"),
        ("arr = out.to(device).numpy()", "arr = out.detach().to(device).cpu().numpy()", "arr = out.detach().to(device).numpy()"),
        ("arr = (out * 2).numpy()", "arr = (out * 2).detach().cpu().numpy()", "arr = (out * 2).detach().numpy()"),
    ],
)
def test_numpy_fixes_of_tcv101_and_tcv102_do_not_overlap(line, both, grad_alone):
    text = f"import torch\ndevice = 'cuda'\nout = torch.nn.Linear(3, 2).to(device)(torch.ones(1, 3, device=device))\n{line}\n"
    result = lint_source(Source(text=text), Settings())
    by_code = {f.code: f.fix for f in result}
    grad_fix, device_fix = by_code["TCV101"], by_code["TCV102"]
    spans = [(e.start, e.end) for fix in (grad_fix, device_fix) for e in fix.edits]
    assert len(set(spans)) == len(spans)  # no two edits at one point: applying both is well defined
    assert _apply_as_a_client(text, [grad_fix, device_fix]).splitlines()[3] == both
    assert _apply_as_a_client(text, [grad_fix]).splitlines()[3] == grad_alone
    assert "`.detach()`" in grad_fix.message and "cpu" not in grad_fix.message
    assert device_fix.message == "Insert `.cpu()`"
    # With TCV102 off, TCV101's fix carries both parts, and its title says so.
    (alone,) = [f for f in lint_source(Source(text=text), Settings(ignore=("TCV102",))) if f.code == "TCV101"]
    assert _apply_as_a_client(text, [alone.fix]).splitlines()[3] == both
    assert "`.detach()`" in alone.fix.message and "`.cpu()`" in alone.fix.message


@pytest.mark.parametrize(
    ("code", "rule"),
    [
        ("def f(logits: torch.Tensor):\n    return logits.numpy()\n", "TCV101"),
        ("def f(w: torch.Tensor):\n    return w.data.numpy()\n", "TCV104"),
        ("def f(logits: torch.Tensor):\n    return logits.cuda().detach()\n", "TCV103"),
        ("def f(t: torch.Tensor):\n    return np.sum(t)\n", "TCV109"),
        ("def f(logits: torch.Tensor):\n    return np.asarray(logits)\n", "TCV105"),
    ],
)
def test_an_annotation_alone_never_makes_a_fix_safe(code, rule):
    """Issue 14: evidence that is only an annotation or a name may justify a finding, never a safe fix.

    (For grad and device risk an annotation says nothing: the parameter's name says it is a model's output.)
    """
    found = _only("import numpy as np\nimport torch\n" + code, rule)
    assert [applicability for _, _, applicability in found] == ["unsafe"]
    known = code.replace("(t: torch.Tensor):\n", "():\n    t = torch.ones(2, requires_grad=True)\n").replace(
        "(logits: torch.Tensor):\n", "():\n    logits = torch.ones(2, requires_grad=True)\n"
    ).replace(
        "(w: torch.Tensor):\n", "():\n    w = torch.ones(2, requires_grad=True)\n"
    )
    assert [applicability for _, _, applicability in _only("import numpy as np\nimport torch\n" + known, rule)] == ["safe"]


@pytest.mark.parametrize(
    "code",
    [
        # A mixture model of the file with its own `to` and `detach`: the chain is no evidence of a tensor.
        "class Mixture:\n    def to(self, device):\n        return self\n    def detach(self):\n        return self\n"
        "def f(mixture, device):\n    return mixture.to(device).detach()\n",
    ],
)
def test_cpu_before_detach_needs_a_tensor(code):
    assert _only("import torch\n" + code, "TCV103") == []
    unknown = "import torch\ndef f(loss):\n    return loss.cpu().detach()\n"
    assert _only(unknown, "TCV103") == [(3, "TCV103", "unsafe")]


@pytest.mark.parametrize(
    ("code", "reported"),
    [
        ("t = torch.Tensor(0)\n", False),  # no element to read
        ("def f(n, hidden):\n    return torch.nn.Parameter(torch.FloatTensor(n, hidden))\n", True),  # two args: sizes
        ("def f(n):\n    ids = torch.LongTensor(n, 2)\n    for i in range(n):\n        ids[i] = i\n    return ids\n", False),
        ("w = torch.nn.Parameter(torch.Tensor(2, 3))\ntorch.nn.init.zeros_(w)\n", False),
        # Whatever the number of sizes, a read before any write is reported...
        ("x = torch.FloatTensor(3, 4)\ny = torch.exp(x)\nprint(y)\n", True),
        ("g = torch.FloatTensor(3, 4)\nz = torch.ones(3, 4, requires_grad=True)\nz.backward(g)\n", True),
        ("def f(n):\n    noise = torch.LongTensor(n, 2) % 7\n    return noise\n", True),
        ("x = torch.Tensor(2, 3)\nx, x.t()\n", True),  # computed with, then shown
        ("x = torch.Tensor(2, 3).cuda()\nx.add_(1)\n", True),  # an in-place op that reads
        # ... and not when only the shape, dtype or device is used, or the first use writes.
        ("x = torch.Tensor(2, 3)\nprint(x)\n", False),  # a shape shown on purpose
        ("x = torch.Tensor(2, 3)\ny = torch.squeeze(x)\nprint(x.size(), y.size())\n", False),
        ("x = torch.Tensor(2, 3)\nx = x.cuda()\nx.fill_(0)\nprint(x)\n", False),
        ("x = torch.Tensor(4)\nx[:2].fill_(0)\nprint(x)\n", False),  # a view written first
        ("x = torch.Tensor(2, 3)\ntorch.rand(2, 3, out=x)\nprint(x)\n", False),
        ("def f(init, shape):\n    return init(torch.Tensor(*shape))\n", False),
        ("w = torch.nn.init.kaiming_uniform_(torch.nn.Parameter(torch.Tensor(3, 2)))\n", False),
        ("x = torch.Tensor(2, 3)\nbuffers = []\nbuffers.append(x)\n", False),  # not followed: silent
        # Handed to a function of another module of the project: kept or ignored out of sight (a placeholder).
        (
            "from .solver import wrap, Solver\nfn = wrap(model, condition=torch.Tensor(1))\nout = Solver(fn).sample(x)\n"
            "print(out + 1)\n",
            False,
        ),
        ("import numpy as np\nx = torch.Tensor(3)\ny = np.exp(x)\nprint(y)\n", True),  # NumPy computes with it
        # A size named as a count is a size.
        ("def f(out_features):\n    b = torch.Tensor(2 * out_features)\n    return b + 1\n", True),
        ("def f(values):\n    b = torch.Tensor(2 * values)\n    return b + 1\n", False),
        # `torch.zeros(...)` given the attribute makes a new tensor; it initialises nothing.
        (
            "class M(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            "        self.w = torch.nn.Parameter(torch.Tensor(2, 2))\n        self.m = torch.zeros(self.w)\n",
            True,
        ),
        # A base class from another file may initialise every parameter (a pretrained model's `_init_weights`).
        (
            "from .modeling import PreTrainedModel\nclass M(PreTrainedModel):\n    def __init__(self):\n"
            "        super().__init__()\n        self.w = torch.nn.Parameter(torch.Tensor(2, 2))\n",
            False,
        ),
        (
            "class Base(torch.nn.Module):\n    pass\nclass M(Base):\n    def __init__(self):\n"
            "        super().__init__()\n        self.w = torch.nn.Parameter(torch.Tensor(2, 2))\n",
            True,
        ),
        # A module class local to a test runs only where the test calls an instance of it.
        (
            "def test():\n    class M(torch.nn.Module):\n        def __init__(self):\n            super().__init__()\n"
            "            self.w = torch.nn.Parameter(torch.Tensor(2, 2))\n    model = torch.nn.Sequential(M())\n"
            "    model(torch.ones(2))\n",
            True,
        ),
        (
            "def test():\n    class M(torch.nn.Module):\n        def __init__(self):\n            super().__init__()\n"
            "            self.w = torch.nn.Parameter(torch.Tensor(2, 2))\n    model = torch.nn.Sequential(M())\n",
            False,
        ),
    ],
)
def test_legacy_constructor_size_reports_reads_of_uninitialised_memory(code, reported):
    assert bool(_only("import torch\n" + code, "TCV202")) is reported


@pytest.mark.parametrize("code", ["TCV101", "TCV103", "TCV104", "TCV106", "TCV201", "TCV202", "TCV204", "TCV205", "TCV211"])
def test_a_rules_example_fires_and_its_replacement_does_not(code):
    import re

    from flake8_tensorconv.rules import RULES_BY_CODE

    sections = RULES_BY_CODE[code].sections()
    settings = Settings(extend_select=(code,))
    for heading, fires in (("Example", True), ("Use instead", False)):
        block = re.search(r"```python\n(.*?)```", sections[heading], re.S)
        assert block is not None, f"{code}: no code block under {heading}"
        source = Source(text="import numpy as np\nimport torch\n" + block.group(1))
        assert (code in {f.code for f in lint_source(source, settings)}) is fires, f"{code} {heading}"


def test_unique_counts_and_inverse_are_integers_but_its_values_keep_grad():
    code = """\
        import torch
        out = torch.nn.Linear(3, 3)(torch.ones(2, 3))
        values, inverse, counts = out.unique(return_inverse=True, return_counts=True)
        a = counts.numpy()
        b = inverse.numpy()
        c = values.numpy()
    """
    assert [(line, rule) for line, rule, _ in findings(code)] == [(6, "TCV101")]


def test_data_instead_of_detach_names_where_the_grad_comes_from():
    code = "import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\narray = h.data.cpu().numpy()\n"
    (finding,) = lint_source(Source(text=code), Settings())
    assert finding.code == "TCV104"
    assert "comes from `torch.ones(2, requires_grad=True)` on line 2" in finding.message
    assert [related.start.line for related in finding.related] == [2]


@pytest.mark.parametrize(
    ("code", "clause", "related_line"),
    [
        (
            "import gym\nimport torch\nenv = gym.make('Pendulum-v1')\ns_lst = []\ns = env.reset()\nfor _ in range(3):\n"
            "    s_lst.append(s)\n    s, r, done, info = env.step([0.0])\nbatch = torch.tensor(s_lst)\n",
            " (`s_lst` holds arrays from `env.reset()` on line 5) ",
            5,
        ),
        (
            "import gym\nimport torch\nenv = gym.make('CartPole-v1')\nobs, info = env.reset()\nx = torch.FloatTensor([obs])\n",
            " (`obs` is an array from `env.reset()` on line 4) ",
            4,
        ),
        # The call that made the arrays is written in the list: nothing to add.
        ("import numpy as np\nimport torch\nx = torch.tensor([np.load(p) for p in ['a', 'b']])\n", " arrays converts ", None),
    ],
)
def test_list_of_arrays_names_the_step_that_made_the_arrays(code, clause, related_line):
    (finding,) = [f for f in lint_source(Source(text=code), Settings()) if f.code == "TCV204"]
    assert clause in finding.message
    assert [related.start.line for related in finding.related] == ([related_line] if related_line else [])


def test_list_of_tensors_names_where_the_graph_comes_from():
    code = (
        "import torch\nmodel = torch.nn.Linear(3, 1)\nlosses = []\nfor _ in range(2):\n"
        "    losses.append(model(torch.ones(3)).sum())\nt = torch.tensor(losses)\n"
    )
    (finding,) = lint_source(Source(text=code), Settings(extend_select=("TCV212",)))
    assert " (`losses` holds tensors that require grad: `model(torch.ones(3))` on line 5) " in finding.message
    assert [related.start.line for related in finding.related] == [5]


_TRAINER = """\
import torch
from torch import nn

class Trainer:
    def __init__(self):
        self.G = nn.Linear(2, 2)

    def train(self):
        with torch.no_grad():
            self.{name}(1)

    def {name}(self, epoch):
        samples = self.G(torch.ones(1, 2))
        return samples.data.numpy()
"""


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # The alias that `.data` gives reaches NumPy later, through a helper, or through a plot.
        ("import torch\nfrom models import Net\nmodel = Net()\nw = next(model.parameters()).data\nprint(w.numpy())\n", [(4, "TCV104", "safe")]),
        ("import torch\nfrom util import to_cpu\ndef save(conv, fp):\n    to_cpu(conv.weight.data).numpy().tofile(fp)\n", [(4, "TCV104", "unsafe")]),
        (
            "import torch\nimport matplotlib.pyplot as plt\nmodel = torch.nn.Linear(2, 2)\nout = model(torch.ones(1, 2))\nplt.imshow(out.data)\n",
            [(5, "TCV104", "safe")],
        ),
        # A helper of the file that converts its parameter (not a copy of it) to NumPy.
        (
            "import torch\ndef to_image(t):\n    image = t[0].cpu().float()\n    return image.numpy()\n"
            "model = torch.nn.Linear(2, 2)\nout = model(torch.ones(1, 2))\npicture = to_image(out.data)\n",
            [(7, "TCV104", "safe")],
        ),
        (
            "import torch\ndef to_image(t):\n    image = t.clone().cpu()\n    return image.numpy()\n"
            "model = torch.nn.Linear(2, 2)\nout = model(torch.ones(1, 2))\npicture = to_image(out.data)\n",
            [],
        ),
        # An item of a value of unknown kind is judged by what is indexed (`out`, not `out[0]`).
        ("import torch\nfrom models import Net\nout = Net()(torch.ones(1, 3))\nimage = out[0].data.cpu()\nprint(image)\n", [(4, "TCV104", "unsafe")]),
        # A public method of a class built in other modules: its same-file caller's no_grad is not all its callers'.
        (_TRAINER.format(name="visualize"), [(14, "TCV104", "safe")]),
        (_TRAINER.format(name="_visualize"), []),
        (_TRAINER.format(name="visualize") + "\nTrainer().train()\n", []),
        # Of unknown kind, an item named as data (an input, a target, ground truth) has no evidence of grad;
        # the model's outputs next to it keep theirs.
        (
            "import torch\ndef log(batch, outputs):\n    mel_input = batch['mel_input']\n"
            "    gt = mel_input[0].data.cpu().numpy()\n    pitch = outputs['pitch_target'][0].data.cpu().numpy()\n"
            "    pred = outputs['model_outputs'][0].data.cpu().numpy()\n    return gt, pitch, pred\n",
            [(6, "TCV104", "unsafe")],
        ),
        # Only a Python value leaves the array (issue 10, class 7, as `.data.item()`).
        ("import torch\nw = torch.ones(2, requires_grad=True)\nh = w * 2\nv = h.data.cpu().numpy().tolist()\nu = float(h.data.numpy()[0])\n", []),
        # A torchvision dataset's `data` is stored data, whatever the dataset is called.
        ("import torch\nfrom torchvision import datasets\ntrain_ds = datasets.MNIST('data', train=True)\nx = train_ds.data.numpy()\n", []),
        # A module that registers only a buffer and holds a parameter-free layer computes nothing that requires grad.
        (
            "import torch\nfrom torch import nn\nclass Encoding(nn.Module):\n    def __init__(self, p):\n"
            "        super().__init__()\n        self.dropout = nn.Dropout(p)\n        self.register_buffer('pe', torch.zeros(1, 5, 4))\n"
            "    def forward(self, x):\n        return self.dropout(x + self.pe)\n"
            "y = Encoding(0).forward(torch.zeros(1, 5, 4))\nprint(y[0].data.numpy())\n",
            [],
        ),
        # Running statistics read through a layer of unknown kind, and a comparison's result, never require grad.
        ("import torch\ndef save(bn, out):\n    return bn.running_var.data.cpu().numpy(), out.ge(0.5).cpu().data.numpy()\n", []),
    ],
)
def test_data_instead_of_detach_follows_the_alias_and_needs_something_to_hide(code, expected):
    assert findings(code) == expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        # A dataset's stored data stays data through casts, views and arithmetic with numbers...
        ("x = testset.data[:5].view(-1, 784).type(torch.FloatTensor) / 255.\nx.data.numpy()\n", []),
        ("x = (testset.data.contiguous() - 127.5) * 2\nx.data.numpy()\n", []),
        # ... but not where an operand of unknown grad joins it, nor for a cast of what requires grad.
        ("def f(scale):\n    x = testset.data / scale\n    return x.data.numpy()\n", ["TCV104"]),
        ("w = torch.ones(2, requires_grad=True)\nx = w.type(torch.FloatTensor) / 255.\nx.data.numpy()\n", ["TCV104"]),
    ],
)
def test_dataset_data_stays_grad_free_through_what_adds_no_grad(code, expected):
    header = "import torch\nfrom torchvision import datasets\ntestset = datasets.MNIST(root='.', train=False)\n"
    assert [code for _, code, _ in findings(header + code)] == expected


FROZEN_BY_CONSTRUCTOR = """\
import numpy as np
import torch


class Extractor(torch.nn.Module):
    def __init__(self, requires_grad=False):
        super().__init__()
        self.features = torch.nn.Linear(4, 4)
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, x):
        return self.features(torch.from_numpy(x))


style = MAKE(np.ones((2, 4), dtype=np.float32))
features = style.data.cpu().numpy()
"""


@pytest.mark.parametrize(
    ("make", "extra", "reported"),
    [
        ("Extractor()", "", False),  # the flag's default freezes every parameter
        ("Extractor(False)", "", False),
        ("Extractor(requires_grad=True)", "", True),
        ("Extractor(flag)", "", True),  # a flag the file does not spell: frozen or not is unknown
        ("Extractor()", "model.requires_grad_(True)\n", True),  # the file turns grad back on somewhere
    ],
)
def test_a_module_frozen_by_its_constructor_outputs_no_grad_for_data(make, extra, reported):
    code = FROZEN_BY_CONSTRUCTOR.replace("MAKE", make) + extra
    assert bool(findings(code)) is reported


def test_a_layer_stored_after_the_freeze_keeps_its_grad():
    code = FROZEN_BY_CONSTRUCTOR.replace("MAKE", "Extractor()").replace(
        "                param.requires_grad = False\n", "                param.requires_grad = False\n        self.head = torch.nn.Linear(4, 4)\n"
    )
    assert findings(code) == [(19, "TCV104", "safe")]


@pytest.mark.parametrize(
    ("layers", "reported"),
    [
        ("nn.ReLU(), nn.Dropout()", False),  # no parameters anywhere in the chain
        ("Extractor(), nn.ReLU()", False),  # a module whose constructor froze every parameter
        ("nn.ReLU(), nn.Linear(4, 4)", True),
        ("nn.ReLU(), make_layer()", True),  # a layer of unknown make may hold parameters
    ],
)
def test_a_sequential_of_modules_without_parameters_holds_none(layers, reported):
    code = FROZEN_BY_CONSTRUCTOR.replace("MAKE(np.ones((2, 4), dtype=np.float32))", "torch.ones(2, 4)").replace(
        "style = ", f"from torch import nn\nchain = nn.Sequential({layers})\nstyle = chain("
    ).replace("torch.ones(2, 4)\n", "torch.ones(2, 4))\n")
    assert bool(findings(code)) is reported


def test_a_model_of_a_projects_own_framework_is_no_torch_module():
    """`mytorch` (a project's own autograd, whose tensors hold NumPy `data`): its `nn.Module` and `optim.SGD`
    train no torch model, so `model(images)` is no tensor, even in a file that uses torch's DataLoader."""
    code = """
        import numpy as np
        import mytorch.nn as nn
        import mytorch.optim as optim
        from torch.utils.data import DataLoader

        model = build()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        for images, labels in DataLoader(dataset):
            predicted = model(images).data.argmax(axis=-1)
            accuracy = np.sum(predicted == labels)
    """
    assert findings(code) == []
    assert [code for _, code, _ in findings(code.replace("mytorch", "torch"))] == ["TCV109"]
