from __future__ import annotations

import ast

from flake8_tensorconv.rules._numpy_call import foreign_receiver, grad_rule_reports, numpy_call
from flake8_tensorconv.rules.base import Context, Rule

_DEFAULT_TWIN = "TCV102"


class NumpyMaybeOnAccelerator(Rule):
    """
    ## What it does
    Flags `.numpy()` on any receiver not provably on the CPU, in a file that imports
    torch. It is the strict twin of TCV102: it also reports values of unknown
    provenance, such as a function parameter, an attribute of a plain object or
    the result of another module's function. Receivers known to be NumPy arrays
    or other non-tensors, and values after `.cpu()` or `.to("cpu")`, are not
    reported.

    TCV102 reports the calls where it has evidence of an accelerator (`.cuda()`,
    `.to(device)`, `device=...`). With both rules enabled this one stays quiet on
    those calls, so each call is reported once (as Ruff does for overlapping
    rules); selected without TCV102, it reports them too.

    ## Why is this bad?
    A helper such as `def to_array(x): return x.numpy()` passes every test on a
    laptop and raises `TypeError: can't convert cuda:0 device type tensor to
    numpy. Use Tensor.cpu() to copy the tensor to host memory first.` on the
    first GPU run. `x.detach().cpu().numpy()` works whatever the tensor is, and
    on the CPU `.cpu()` returns the tensor itself.

    ## Example
    ```python
    def to_array(x):
        return x.numpy()
    ```

    ## Use instead
    ```python
    def to_array(x):
        return x.detach().cpu().numpy()
    ```

    ## Fix safety
    Inserts `.cpu()` (and `.detach()` where the receiver may require grad), as
    TCV102 does. Safe when the receiver is known to be a torch tensor (a
    chain such as `x.detach()`); otherwise unsafe, because the receiver may be a
    TensorFlow tensor or another object with a `.numpy()` method and no
    `.cpu()`.

    ## Known problems
    Objects of other libraries with a `.numpy()` method are reported when the
    file cannot show where they come from. Instances of classes defined in the
    same file with their own `numpy` method, and values built by TensorFlow,
    Keras or Paddle in the same scope, are recognised and skipped.
    """

    code = "TCV112"
    name = "numpy-maybe-on-accelerator"
    message = "`.numpy()` on a value not known to be on the CPU raises TypeError if it is a GPU tensor; call `.cpu()` first"
    triggers = (".numpy(",)
    default_enabled = False
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = numpy_call(node, ctx)
        if call is None or not call.device_risk(strict=True):
            return
        if _DEFAULT_TWIN in ctx.enabled_codes and call.device_risk():
            return  # TCV102 reports this call
        if foreign_receiver(call.receiver, ctx):
            return
        # The `.detach()` part is the grad rule's fix where that rule reports this call too.
        grad_part = call.grad_risk(ctx, strict=True) and not grad_rule_reports(call, ctx)
        fix = None if ctx.settings.fix_style == "force" and grad_rule_reports(call, ctx) else call.fix(ctx, detach=grad_part, cpu=True)
        ctx.report(self, node, fix=fix)
