from __future__ import annotations

import ast

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Grad


class CpuBeforeDetach(Rule):
    """
    ## What it does
    Flags `.cpu().detach()`, `.cuda().detach()` and `.to(...).detach()` while grad
    mode is on and the tensor may require grad.

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
    Safe: both orders give the same values, dtype, device and memory.
    """

    code = "TCV103"
    name = "cpu-before-detach"
    message = "`.detach()` after a device copy records the copy in the autograd graph; call `.detach()` first"
    triggers = (").detach(",)  # the device copy's closing parenthesis, then `.detach(`
    fix_safety = "safe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "detach") or node.args or node.keywords:
            return
        move = func.value
        if not (isinstance(move, ast.Call) and isinstance(move.func, ast.Attribute)):
            return
        if move.func.attr not in ("cpu", "cuda", "to") or (move.func.attr == "to" and not (move.args or move.keywords)):
            return
        if not ctx.grad_enabled or ctx.value(move.func.value).grad is Grad.NO:
            return
        ctx.report(self, node, fix=self._swap(move, node, ctx))

    def _swap(self, move: ast.Call, detach: ast.Call, ctx: Context):
        start = ctx.attribute_name_start(move.func)  # type: ignore[arg-type]
        end = ctx.end(detach)
        source = ctx.source
        span = source.text[source.offset(start) : source.offset(end)]
        move_text = source.text[source.offset(start) : source.offset(ctx.end(move))]
        if "\n" in span or "\r" in span or "#" in span:
            return None  # keep comments and line breaks the user wrote
        replacement = f"detach().{move_text}"
        return make_fix(Applicability.SAFE, "Call `.detach()` before the device copy", Edit(start, end, replacement))
