"""knowledge.SAVED_FOR_BACKWARD against torch: what each op's backward keeps (``grad_fn._saved_*``).

TCV104 says "silently wrong gradients" at a write through ``.data`` only where an op kept the
tensor for backward, and decides that from this table: a wrong entry would print a false message
(or hide a true one), so every entry is checked on the pinned torch here.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from flake8_tensorconv import knowledge as K  # noqa: E402

_INDEX = [[0], [1], [2]]


def _unary(function):
    return lambda a, o: function(a)


def _along_last(function):
    return lambda a, o: function(a, -1)


def _binary(function):
    return lambda a, o: function(a, o)


def _listed(function):
    return lambda a, o: function([a, o])


def _pool(name: str):
    function, dimensions = getattr(F, name), int(name[-2])
    return lambda a, o: function(a.reshape((1,) * dimensions + (3, 4)), 1)


def _convolution(name: str):
    function, dimensions = getattr(F, name), int(name[-2])
    shape = (1, 1) + (1,) * (dimensions - 1)
    return lambda a, o: function(a.reshape(shape + (12,)), o.reshape(-1)[:2].reshape(shape + (2,)))


# How to run each op: (a, o) -> result, where `a` is the tensor whose keeping is asked (3 x 4, values
# in [0.5, 1.5]) and `o` another operand of the same shape.
_PROBES = {
    **{name: _unary(getattr(torch, name)) for name in (
        "exp exp2 expm1 sigmoid tanh sqrt rsqrt reciprocal log log2 log10 log1p sin cos tan atan sinh cosh abs erf "
        "square logit neg negative clone asin acos"
    ).split()},
    **{name: _along_last(getattr(F, name)) for name in ("softmax", "log_softmax", "softmin", "glu")},
    **{name: _unary(getattr(F, name)) for name in (
        "relu gelu silu mish hardswish hardtanh relu6 leaky_relu elu selu softplus logsigmoid normalize"
    ).split()},
    "clamp": lambda a, o: a.clamp(0, 1),
    "clip": lambda a, o: a.clip(0, 1),
    "pow": lambda a, o: a.pow(2),
    "var": lambda a, o: a.var(),
    "gather": lambda a, o: a.gather(1, torch.tensor(_INDEX)),
    "layer_norm": lambda a, o: F.layer_norm(a, (4,)),
    "batch_norm": lambda a, o: F.batch_norm(a, None, None, training=True),
    "group_norm": lambda a, o: F.group_norm(a, 1),
    "instance_norm": lambda a, o: F.instance_norm(a[None]),
    "mse_loss": lambda a, o: F.mse_loss(a, o),
    "nll_loss": lambda a, o: F.nll_loss(a, torch.tensor([0, 1, 2])),
    **{f"{kind}_pool{n}d": _pool(f"{kind}_pool{n}d") for kind in ("max", "avg") for n in (1, 2, 3)},
    **{name: _binary(getattr(torch, name)) for name in "mul multiply div divide true_divide".split()},
    "matmul": lambda a, o: a.matmul(o.t()),
    "mm": lambda a, o: a.mm(o.t()),
    "bmm": lambda a, o: a[None].bmm(o.t()[None]),
    "einsum": lambda a, o: torch.einsum("ij,kj->ik", a, o),
    "linear": lambda a, o: F.linear(a, o),
    "bilinear": lambda a, o: F.bilinear(a, o, o.repeat(3, 1)[:8].reshape(2, 4, 4)),
    "baddbmm": lambda a, o: torch.baddbmm(torch.zeros(1, 3, 3), a[None], o.t()[None]),
    "addmm": lambda a, o: torch.addmm(torch.zeros(3, 3), a, o.t()),
    **{name: _convolution(name) for n in (1, 2, 3) for name in (f"conv{n}d", f"conv_transpose{n}d")},
    "add": lambda a, o: torch.add(a, o),
    "sub": lambda a, o: torch.sub(a, o),
    "subtract": lambda a, o: torch.subtract(a, o),
    **{name: _listed(getattr(torch, name)) for name in "cat concat concatenate stack hstack vstack".split()},
    "sum": lambda a, o: a.sum(-1),
    "mean": lambda a, o: a.mean(-1),
    "masked_fill": lambda a, o: a.masked_fill(o > 1, 0.0),
    "where": lambda a, o: torch.where(o > 1, a, o),
    "index_select": lambda a, o: a.index_select(0, torch.tensor([0, 2])),
    "repeat": lambda a, o: a.repeat(2, 1),
    "pad": lambda a, o: F.pad(a, (1, 1)),
    "cumsum": lambda a, o: a.cumsum(-1),
    "flip": lambda a, o: a.flip(0),
    "roll": lambda a, o: a.roll(1, 0),
    "dropout": lambda a, o: F.dropout(a, 0.5, True),
    "cross_entropy": lambda a, o: F.cross_entropy(a, torch.tensor([0, 1, 2])),
    "l1_loss": lambda a, o: F.l1_loss(a, o),
    "interpolate": lambda a, o: F.interpolate(a[None], scale_factor=2),
    "lerp": lambda a, o: torch.lerp(a, o, 0.5),
    "logsumexp": lambda a, o: a.logsumexp(-1),
    "std": lambda a, o: a.std(),
    "prod": lambda a, o: a.prod(),
    "amax": lambda a, o: a.amax(-1),
    "amin": lambda a, o: a.amin(-1),
}


def _kept(op, other_requires_grad: bool = True) -> tuple[bool, bool]:
    """Whether the op's backward (its own nodes, down to where its inputs were made) keeps its result, and its input."""
    torch.manual_seed(0)
    made = (torch.rand(3, 4) + 0.5).requires_grad_()
    a = made * 1.0  # a computed input, as at a write through `.data`
    o = (torch.rand(3, 4) + 0.5).requires_grad_(other_requires_grad)
    result = op(a, o)
    storages = {"result": result.untyped_storage().data_ptr(), "input": a.untyped_storage().data_ptr()}
    found = set()
    pending, seen = [result.grad_fn], set()
    while pending:
        node = pending.pop()
        if node is None or node in seen or node is a.grad_fn or type(node).__name__ == "AccumulateGrad":
            continue
        seen.add(node)
        for attribute in dir(node):
            if attribute.startswith("_saved_"):
                saved = getattr(node, attribute)
                for tensor in saved if isinstance(saved, (tuple, list)) else [saved]:
                    if isinstance(tensor, torch.Tensor) and tensor.numel():
                        found |= {what for what, pointer in storages.items() if tensor.untyped_storage().data_ptr() == pointer}
        pending.extend(next_node for next_node, _ in node.next_functions)
    return "result" in found, "input" in found


def test_every_op_of_the_table_is_checked():
    assert set(_PROBES) == set(K.SAVED_FOR_BACKWARD)


@pytest.mark.parametrize("op", sorted(K.SAVED_FOR_BACKWARD))
def test_what_an_op_keeps_for_backward(op):
    saved = K.SAVED_FOR_BACKWARD[op]
    result, inputs = _kept(_PROBES[op])
    assert (result, inputs) == (saved.result, saved.inputs)
    if saved.for_other_operand:
        assert _kept(_PROBES[op], other_requires_grad=False)[1] is False


@pytest.mark.parametrize("module", sorted(K.SAVED_BY_MODULE))
def test_modules_stand_for_ops_of_the_table(module):
    assert K.SAVED_BY_MODULE[module] in K.SAVED_FOR_BACKWARD
    assert hasattr(torch.nn, module.rpartition(".")[2])
