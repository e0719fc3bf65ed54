from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules._receivers import holds_gradients, only_declared, own_classes_may_have
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Grad, Kind

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

# A class of the file with its own `detach` (a mixture model) makes `x.to(d).detach()` its own,
# not torch's. (An nn.Module has `.to()` and `.cpu()` but no `.detach()`: the chain would fail.)
_OWN_DETACH = frozenset({"detach"})
# Operations between the copy and `.detach()` that autograd records too (`.to("cpu").clone().detach()`).
_RECORDED_BETWEEN = frozenset(
    {"clone", "contiguous", "view", "reshape", "squeeze", "unsqueeze", "permute", "transpose", "flatten", "float", "double", "half"}
)


class CpuBeforeDetach(Rule):
    """
    ## What it does
    Flags `.cpu().detach()`, `.cuda().detach()` and `.to(...).detach()` while grad
    mode is on and the tensor may require grad, also with operations that
    autograd records between the copy and `.detach()` (`.to("cpu").clone().detach()`).

    It needs evidence that the receiver is a torch tensor: a value the
    inference knows as one, or a receiver of unknown kind in a file that does
    not define a class with a `detach` method (a mixture model). Not reported
    where the tensor cannot require grad: gradients (`p.grad`, a hook's saved
    `self.gradients`), integer tensors (also a parameter annotated
    `torch.LongTensor`), values made under `no_grad` or stored already
    detached, and values past a guard that raises when they require grad.

    ## Why is this bad?
    The device copy runs first and autograd records it (`ToCopyBackward0`) in a
    graph that `.detach()` throws away a moment later. Detaching first copies a
    tensor that autograd does not track. On the CPU the two orders are
    indistinguishable; with a real device copy the wasted node is measurable.

    ## Example
    ```python
    arr = loss.cpu().detach().numpy()
    ```

    ## Use instead
    ```python
    arr = loss.detach().cpu().numpy()
    ```

    ## Fix safety
    Safe on a known tensor: both orders give the same values, dtype, device and
    memory. Unsafe where the only evidence is the chain itself or a parameter's
    annotation: another class's `.to()` and `.detach()` need not commute.
    """

    code = "TCV103"
    name = "cpu-before-detach"
    message = "`.detach()` after a device copy records the copy in the autograd graph; call `.detach()` first"
    triggers = (").detach(",)  # the device copy's closing parenthesis, then `.detach(`
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._own_classes: bool | None = None

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "detach") or node.args or node.keywords:
            return
        move = func.value
        while isinstance(move, ast.Call) and isinstance(move.func, ast.Attribute) and move.func.attr in _RECORDED_BETWEEN:
            move = move.func.value
        if not (isinstance(move, ast.Call) and isinstance(move.func, ast.Attribute)):
            return
        if move.func.attr not in ("cpu", "cuda", "to") or (move.func.attr == "to" and not (move.args or move.keywords)):
            return
        receiver = move.func.value
        value = ctx.value(receiver)
        if not ctx.grad_enabled or value.grad is Grad.NO or value.is_integer or holds_gradients(receiver, ctx):
            return  # a gradient (`p.grad`, hook-saved `self.gradients`) does not require grad
        if value.kind is Kind.UNKNOWN:
            # The chain is the only evidence of a tensor: not in sight of own classes with these methods.
            if self._own_classes is None:
                self._own_classes = own_classes_may_have(_OWN_DETACH, ctx, imported=False, called=True)
            if self._own_classes:
                return
        elif value.kind is not Kind.TENSOR:
            return
        safe = value.kind is Kind.TENSOR and not only_declared(receiver, ctx)
        ctx.report(self, node, fix=self._swap(move, node, ctx, Applicability.SAFE if safe else Applicability.UNSAFE))

    def _swap(self, move: ast.Call, detach: ast.Call, ctx: Context, applicability: Applicability):
        start = ctx.attribute_name_start(move.func)  # type: ignore[arg-type]
        end = ctx.end(detach)
        source = ctx.source
        span = source.text[source.offset(start) : source.offset(end)]
        # The copy and what follows it up to `.detach()`: `to("cpu")`, or `to("cpu").clone()`.
        moved_text = source.text[source.offset(start) : source.offset(ctx.end(detach.func.value))]  # type: ignore[attr-defined]
        if "\n" in span or "\r" in span or "#" in span:
            return None  # keep comments and line breaks the user wrote
        replacement = f"detach().{moved_text}"
        return make_fix(applicability, "Call `.detach()` before the device copy", Edit(start, end, replacement))
