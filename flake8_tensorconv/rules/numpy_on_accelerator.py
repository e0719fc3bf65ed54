from __future__ import annotations

import ast

from flake8_tensorconv.rules._numpy_call import evidence, grad_rule_reports, numpy_call
from flake8_tensorconv.rules.base import Context, Rule


class NumpyOnAccelerator(Rule):
    """
    ## What it does
    Flags `.numpy()` on a tensor that may live on a GPU (moved with `.cuda()`,
    `.to(device)`, created with `device=...`, or of unknown placement) with no
    `.cpu()` before it. A branch where it cannot be on a GPU is left alone:
    where `torch.cuda.is_available()` (or a name bound to it) is false, where
    the flag that guards every move to the GPU is off (`if use_gpu: x =
    x.cuda()` ... `x.numpy() if not use_gpu else x.cpu().numpy()`), and where
    the device it was moved to is `"cpu"` (`if device != "cpu": x = x.cpu()`),
    also a CPU device that the class's `__init__` keeps on `self`
    (`self._cpu_device = torch.device("cpu")`, `self.host = "cpu"`) and no other
    method rebinds (`.to(self._cpu_device)`; a subclass without an `__init__` of
    its own runs its base's, so a base class of the file keeping it counts), and where a test of the tensor's own device says it is not a CUDA one
    (`x.is_cuda`, `x.device.type == "cuda"`, `"cuda" in str(x.device)`).
    A parameter whose device the function itself reads (`torch.zeros(n).to(x.device)`)
    is expected on any device, a GPU included, unless the callers in the file
    show where it lives. A parameter named or documented as a model's output is evidence only in a
    function with no caller in the file; where every caller is in the file,
    what they pass decides. As for TCV101, a private function, a prediction
    scored against ground truth it converts too, and a docstring that names a
    property of an output ("shape of the output of the network") are no such
    evidence. An instance of another module's class moved with `.to(device)`
    (`MyNet(3).to(device)`) is a module on that device, so its outputs may be
    on a GPU; what its other methods return is unknown. A module moved in place
    by a statement (`net.cuda()`, `net.to(device).eval()`) is on that device
    from there on. So are its parameters
    and their gradients (`for p in model.parameters(): p.grad.numpy()`), also in
    a function whose callers in the file pass that module (`model.train()` inside
    it is the module's method, not a call of a function named `train`). The
    output of a model called on inputs made on the CPU is on the CPU wherever the
    call returns (a model on a GPU fails at the call), unless the model may move
    its inputs: a `DataParallel`, a model whose placement is not known
    (`device_map=` dispatches inputs), or a class of the file whose `forward`
    moves something. As for TCV101, what a model returns in code written for
    another framework's model (an arm of a test of a framework's name, in a
    file that imports another framework; the handler of a `try:` that imports
    torch) is of unknown kind.

    ## Why is this bad?
    NumPy arrays live in host memory. `.numpy()` on a CUDA tensor raises
    `TypeError: can't convert cuda:0 device type tensor to numpy. Use
    Tensor.cpu() to copy the tensor to host memory first.` The device check runs
    before the requires-grad check, so on a GPU this is the error you see first.
    Code tested only on a laptop passes, then fails on the training machine.

    ## Example
    ```python
    x = torch.ones(3, device=device)
    arr = x.numpy()
    ```

    ## Use instead
    ```python
    arr = x.cpu().numpy()
    ```

    ## Fix safety
    Safe where the function itself shows the receiver is a torch tensor: on the
    CPU `.cpu()` returns the very same tensor, so values and memory sharing are
    unchanged wherever the original worked. Unsafe where that rests only on a
    parameter (its annotation, its name, or what the file's own callers pass). When the tensor may also
    require grad the fix is `.detach().cpu().numpy()`.
    """

    code = "TCV102"
    name = "numpy-on-accelerator"
    message = "`.numpy()` on a tensor that may be on a GPU raises TypeError; call `.cpu()` first"
    triggers = (".numpy(",)
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = numpy_call(node, ctx)
        if call is None or not call.device_risk():
            return
        # The `.detach()` part is the grad rule's fix where that rule reports this call too.
        grad_part = call.grad_risk(ctx) and not grad_rule_reports(call, ctx)
        fix = None if ctx.settings.fix_style == "force" and grad_rule_reports(call, ctx) else call.fix(ctx, detach=grad_part, cpu=True)
        because, related = evidence(ctx, call.receiver, call.value, grad=False, device=True)
        ctx.report(self, node, self.message + because, fix, related)
