from __future__ import annotations

import ast

from flake8_tensorconv.rules.base import Context
from flake8_tensorconv.rules.cpu_before_detach import CpuBeforeDetach, copy_before_detach

_DEFAULT_TWIN = "TCV103"


class CpuBeforeDetachMaybeGrad(CpuBeforeDetach):
    """
    ## What it does
    Flags `.cpu().detach()`, `.cuda().detach()` and `.to(...).detach()` on any
    value not known to be free of grad, in a file that imports torch. It is the
    strict twin of TCV103: it also reports values of unknown provenance, such as
    a helper's parameter or the result of another module's function. Values known
    not to require grad (made under `no_grad`, integer results, gradients, values
    already detached), calls inside `torch.no_grad()` / `torch.inference_mode()`,
    `.cpu()` of a tensor known to be on the CPU and receivers of a class of the
    file with its own `detach` are not reported.

    TCV103 reports the calls where it has evidence of a grad source. With both
    rules enabled this one stays quiet on those calls, so each call is reported
    once; selected without TCV103, it reports them too.

    ## Why is this bad?
    A helper such as `def to_host(x): return x.cpu().detach()` cannot see which
    tensors it gets. When one requires grad and lives on a GPU, autograd records
    the host copy (`ToCopyBackward0`) in a graph that `.detach()` throws away a
    moment later. `x.detach().cpu()` gives the same result whatever the tensor is.

    ## Example
    ```python
    def to_host(x):
        return x.cpu().detach()
    ```

    ## Use instead
    ```python
    def to_host(x):
        return x.detach().cpu()
    ```

    ## Fix safety
    Safe on a known tensor, where both orders give the same values, dtype, device
    and memory; unsafe where the receiver's kind is not known: another class's
    `.to()` and `.detach()` need not commute.
    """

    code = "TCV113"
    name = "cpu-before-detach-maybe-grad"
    message = "`.detach()` after a device copy records the copy in the autograd graph if the value requires grad; call `.detach()` first"
    triggers = (").detach(",)
    default_enabled = False
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        move = copy_before_detach(node)
        if move is None or not ctx.facts.imports_torch:
            return  # without torch, `.cpu().detach()` belongs to another library's objects
        receiver = move.func.value  # type: ignore[attr-defined]
        value = ctx.value(receiver)
        if not self.reportable(move, receiver, value, ctx, strict=True):
            return
        if _DEFAULT_TWIN in ctx.enabled_codes and self.reportable(move, receiver, value, ctx, strict=False):
            return  # TCV103 reports this call
        self.report(node, move, receiver, value, ctx, self.message)
