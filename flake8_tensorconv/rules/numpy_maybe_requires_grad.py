from __future__ import annotations

import ast

from flake8_tensorconv.rules._numpy_call import device_rule_reports, foreign_receiver, numpy_call
from flake8_tensorconv.rules._receivers import requires_grad_as_called
from flake8_tensorconv.rules.base import Context, Rule

_DEFAULT_TWIN = "TCV101"


class NumpyMaybeRequiresGrad(Rule):
    """
    ## What it does
    Flags `.numpy()` on any receiver not provably detached, in a file that imports
    torch. It is the strict twin of TCV101: it also reports values of unknown
    provenance, such as a function parameter, an attribute of a plain object or
    the result of another module's function. Receivers known to be NumPy arrays
    or other non-tensors, values after `.detach()` or `.data`, and calls inside
    `torch.no_grad()` / `torch.inference_mode()` are not reported.

    TCV101 reports the calls where it has evidence of a grad source (an
    `nn.Parameter`, a module output, `requires_grad=True`). With both rules enabled
    this one stays quiet on those calls, so each call is reported once (as Ruff
    does for overlapping rules); selected without TCV101, it reports them too.

    ## Why is this bad?
    A helper such as `def to_array(x): return x.numpy()` works in evaluation code
    under `no_grad` and raises `RuntimeError: Can't call numpy() on Tensor that
    requires grad` the first time someone passes it a training tensor. Nothing in
    the helper shows which kind of tensor it gets, so TCV101 cannot see the risk.
    `x.detach().cpu().numpy()` works whatever the tensor is.

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
    Inserts `.detach()` (and `.cpu()` where the device is not known either), as
    TCV101 does. Safe when the receiver is known to be a torch tensor (a
    chain such as `x.cpu()`); otherwise unsafe, because the receiver may be a
    TensorFlow tensor or another object with a `.numpy()` method and no
    `.detach()`.

    ## Known problems
    Objects of other libraries with a `.numpy()` method are reported when the
    file cannot show where they come from. Instances of classes defined in the
    same file with their own `numpy` method, and values built by TensorFlow,
    Keras or Paddle in the same scope, are recognised and skipped.
    """

    code = "TCV111"
    name = "numpy-maybe-requires-grad"
    message = "`.numpy()` on a value not known to be detached raises RuntimeError if it is a tensor that requires grad; call `.detach()` first"
    triggers = (".numpy(",)
    default_enabled = False
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = numpy_call(node, ctx)
        if call is None or not call.grad_risk(ctx, strict=True):
            return
        if _DEFAULT_TWIN in ctx.enabled_codes and (call.grad_risk(ctx) or requires_grad_as_called(call.receiver, ctx) is not None):
            return  # TCV101 reports this call
        if foreign_receiver(call.receiver, ctx):
            return
        # The `.cpu()` part is the device rule's fix where that rule reports this call too.
        fix = call.fix(ctx, detach=True, cpu=call.device_risk(strict=True) and not device_rule_reports(call, ctx))
        ctx.report(self, node, fix=fix)
