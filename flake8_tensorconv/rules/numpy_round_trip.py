from __future__ import annotations

import ast

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Kind

# Steps before `.numpy()` that `.tolist()` / `.item()` make unnecessary: they copy or
# detach, but the Python values read out are the same.
_DROPPED_STEPS = frozenset({"detach", "cpu", "clone", "contiguous", "resolve_conj", "resolve_neg"})
_READOUTS = frozenset({"tolist", "item"})


class NumpyRoundTrip(Rule):
    """
    ## What it does
    Flags `.numpy().tolist()` and `.numpy().item()` on a torch tensor
    (`t.detach().cpu().numpy().tolist()`, `t.numpy().item()`, ...).

    ## Why is this bad?
    `Tensor.tolist()` and `Tensor.item()` read Python values straight out of the
    tensor, on any device and whether or not it requires grad. Going through
    NumPy first builds a detached CPU tensor and an ndarray only to throw both
    away, and the NumPy path fails where the direct one does not: on tensors that
    require grad, bfloat16 tensors, and conjugate or negative views.

    ## Example
    ```python
    scores = logits.detach().cpu().numpy().tolist()
    value = loss.detach().cpu().numpy().item()
    ```

    ## Use instead
    ```python
    scores = logits.tolist()
    value = loss.item()
    ```

    ## Fix safety
    Safe: `t.tolist()` and `t.item()` give the same Python types and values as
    the NumPy round trip for every dtype NumPy supports (floats, ints, unsigned,
    bool, complex, 0-d and n-d), and they also work where the round trip raises.
    Reported only when the chain shows a torch tensor (`.detach()`, `.cpu()`, or
    a known tensor): TensorFlow tensors have `.numpy()` but no `.tolist()`.
    """

    code = "TCV108"
    name = "numpy-round-trip"
    message = "`.numpy().{readout}()` takes a needless trip through NumPy (and fails on grad, bf16 or conj tensors); call `.{readout}()` on the tensor"
    triggers = (".numpy(",)
    default_enabled = False
    fix_safety = "safe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in _READOUTS) or node.args or node.keywords:
            return
        conversion = func.value
        if not (isinstance(conversion, ast.Call) and isinstance(conversion.func, ast.Attribute)):
            return
        if conversion.func.attr != "numpy" or conversion.args or not _plain_numpy_keywords(conversion):
            return
        root, steps = _strip_steps(conversion.func.value)
        if ctx.value(conversion.func.value).kind is not Kind.TENSOR:
            return
        if ctx.value(root).kind is not Kind.TENSOR and not any(step in K.TORCH_ONLY_METHODS for step in steps):
            return
        message = self.message.format(readout=func.attr)
        start, end = ctx.end(root), ctx.end(node)
        removed = ctx.source.text[ctx.source.offset(start) : ctx.source.offset(end)]
        fix = None
        if "#" not in removed:  # keep the comments the user wrote inside the chain
            fix = make_fix(Applicability.SAFE, f"Call `.{func.attr}()` on the tensor", Edit(start, end, f".{func.attr}()"))
        ctx.report(self, node, message, fix)


def _plain_numpy_keywords(call: ast.Call) -> bool:
    """`.numpy()` or `.numpy(force=<literal>)`."""
    return all(keyword.arg == "force" and isinstance(keyword.value, ast.Constant) for keyword in call.keywords)


def _strip_steps(node: ast.expr) -> tuple[ast.expr, list[str]]:
    """``t`` and the dropped steps in ``t.detach().cpu()`` (also `.to("cpu")`)."""
    steps: list[str] = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        name = node.func.attr
        if name in _DROPPED_STEPS and not node.args and not node.keywords:
            pass
        elif name == "to" and _to_cpu(node):
            pass
        else:
            break
        steps.append(name)
        node = node.func.value
    return node, steps


def _to_cpu(node: ast.Call) -> bool:
    """`.to("cpu")` / `.to(device="cpu")` with nothing else."""
    arguments = [*node.args, *(keyword.value for keyword in node.keywords if keyword.arg == "device")]
    if len(arguments) != 1 or len(node.args) + len(node.keywords) != 1:
        return False
    argument = arguments[0]
    return isinstance(argument, ast.Constant) and argument.value == "cpu"
