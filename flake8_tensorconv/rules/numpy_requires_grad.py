from __future__ import annotations

import ast

from flake8_tensorconv.findings import Applicability
from flake8_tensorconv.rules._numpy_call import device_rule_reports, evidence, foreign_receiver, numpy_call
from flake8_tensorconv.rules._receivers import grad_free_as_called, requires_grad_as_called
from flake8_tensorconv.rules.base import Context, Rule


class NumpyRequiresGrad(Rule):
    """
    ## What it does
    Flags `.numpy()` on a tensor that may require grad, with no `.detach()` before
    it, outside a `torch.no_grad()` / `torch.inference_mode()` region. A module of
    the file that holds no parameters (derived from `nn.Module` or from such a
    module of the file, storing only settings such as `self.quants = quants`,
    a parameter annotated `int` or a local bound only to settings
    (`r = kernel_size // 2`, then `self.padding = r`), parameter-free torch layers such as
    `nn.ConstantPad3d`, and plain tensors) is no grad source: its output
    requires grad only where its inputs do. A model handed to a class's
    `__init__` and stored on `self` (`self.model = model`, then `self.model(x)`
    in another method) is a grad source, as a layer built there is; so is a
    model whose `.parameters()` the file hands to an optimizer or a gradient
    clip (whatever class of another module it is), a model loaded with
    `X.from_pretrained(...)`, a value that `.backward()` runs through, a tensor
    made a leaf with `t.requires_grad = True` (until `t.requires_grad = False`), and the
    layer output a function registered with `register_forward_hook` receives. A
    model the file freezes is none: `.freeze()`, `.requires_grad_(False)` (also
    after the module's own methods, `m.eval().requires_grad_(False).to(d)`), or
    a loop whose first statement sets `p.requires_grad = False` on each of its
    `parameters()`. What a call returns under `no_grad` holds no grad, a
    tuple or dict of tensors included (`logits, value = net.step(obs)` in the
    block, `value` converted after it); parameters listed there still require
    it. Calling a module of the file runs its `forward`: where that forward
    detaches its result or runs under `no_grad` (a block or a decorator),
    `self(x)` and `model(x)` are no grad source; where it returns a tuple,
    each item it shows without grad (an action drawn with `dist.sample()`
    beside its log-probability) is none, unpacked or indexed from the call.
    So is each such item of a module whose class another module of the
    package defines, its `forward` walked there when the finding asks
    (`loss, acc = self.model(x, y)` with `acc` counted from `pred.eq(y)`,
    argmax indices, `.data`); the module's output itself still requires grad.

    A parameter named or documented as a model's output (`logits`, `preds`) is
    evidence only where the function has no caller in the file (a public
    function), and the message says that it is the name; where every caller is
    in the file, what they pass decides. Where the file cannot settle how a
    function or method is called (no caller in the file, or a public one that
    other modules may call), the finding asks the package before it is
    reported: where every call of it in the package's other modules (or in the
    functions that call it, one level up) runs under `no_grad` /
    `inference_mode`, or passes values without grad, it is silent (an
    evaluation loop under `@torch.no_grad()` calling a model's `predict`); one
    call with grad on keeps it. The package also makes findings there: where
    the file knows nothing of a parameter (`def show_prob(p): p.numpy()`) and
    every call of the function in the package passes a tensor that requires
    grad (`show_prob(net(im))` in a script of another module), it is reported,
    naming that step (file and line); one call passing something else, or no
    call at all in the package (a public helper), keeps it silent (TCV111
    reports it). A calling function's parameter that every
    call of it in the package passes without grad holds none where it is
    handed on (a public `show(ids)` handing loaded token ids to a private
    `_decode`), one level up too; a
    call that the function's signature could not take (`seen.add(x)` for an
    `add(obs, value)`) is some other object's, not one of its calls. A name is no evidence in a private
    function (`_helper`: its callers are the file's, followed or unknown), for
    a gradient (`grad_output`), for a prediction the function scores against
    ground truth it converts to NumPy too (a metric: `y_preds` beside
    `y_targets.cpu().numpy()`), nor where a docstring names a property of an
    output ("shape of the output of the network"). A custom
    `torch.autograd.Function`'s `forward` and `backward` run with grad mode
    off (backward's gradients require grad only in a double backward, which
    the file would ask for with `create_graph=True`). Results of `&`, `|`, `^`,
    `~` and shifts are integer or bool tensors, which never require grad.
    Framework code that runs with grad off is silent too: a LightningModule's
    evaluation and prediction hooks (`validation_step`, `test_step`,
    `predict_step`, their `*_epoch_end`, `on_*_start` / `_end` / `_epoch_*` /
    `_batch_*` hooks), where the class derives from Lightning's
    `LightningModule`, from a project base named `...LightningModule`, or
    defines `configure_optimizers`, a hook only Lightning calls; and the
    methods of a `torch.optim.Optimizer` subclass (the parameter update and its
    state, which torch's optimizers run under `no_grad`).

    Code written for another framework's model calls no torch module: an
    arm of a test of a string that names a framework (`if self.model_type ==
    "tf":`, the `else` of `if framework == "torch":`, also a conditional
    expression), in a file that imports another framework (TensorFlow, Keras,
    JAX, Flax, Paddle, MXNet), and the handler of a `try:` whose body imports
    torch, where it catches a failed import (bare, `ImportError`,
    `Exception`): the path written for where torch, or the torch path, is not
    there. What a model returns there is of unknown kind (silent). A string
    that names no framework (`mode == "classification"`), or a file that
    imports no other framework, says nothing of the model.

    ## Why is this bad?
    While grad mode is on, `Tensor.numpy()` refuses tensors that require grad:
    parameters, module outputs, and anything computed from them. The call raises
    `RuntimeError: Can't call numpy() on Tensor that requires grad. Use
    tensor.detach().numpy() instead.` It works under `no_grad`, which is why the
    bug often shows up only when an evaluation helper is reused during training.

    ## Example
    ```python
    model = torch.nn.Linear(3, 2)
    out = model(torch.ones(1, 3))
    arr = out.numpy()
    ```

    ## Use instead
    ```python
    arr = out.detach().numpy()
    ```

    ## Fix safety
    Safe where the function itself shows the receiver is a torch tensor:
    `t.detach().numpy()` returns the same values, dtype, strides and memory as
    `t.numpy()` wherever `t.numpy()` works. Unsafe where that rests only on a
    parameter (its annotation, its name, or what the file's own callers pass): a
    caller elsewhere may pass an object whose `.numpy()` is its own. With `fix-style = "force"` the fix is `.numpy(force=True)`,
    equally safe on the CPU (it copies where the tensor is not on the CPU).
    """

    code = "TCV101"
    name = "numpy-requires-grad"
    message = "`.numpy()` on a tensor that may require grad raises RuntimeError; call `.detach()` first"
    triggers = (".numpy(",)
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = numpy_call(node, ctx)
        if call is None:
            return
        as_called = not call.grad_risk(ctx)
        if as_called:
            # Unknown in the file: the package's calls may show a tensor that requires grad (TCV111 reports it otherwise).
            known = requires_grad_as_called(call.receiver, ctx) if call.grad_risk(ctx, strict=True) else None
            if known is None or foreign_receiver(call.receiver, ctx):
                return
            call = call._replace(value=known)
        elif grad_free_as_called(call.receiver, ctx):
            return
        # The `.cpu()` part is the device rule's fix where that rule reports this call too.
        fix = call.fix(ctx, detach=True, cpu=call.device_risk() and not device_rule_reports(call, ctx))
        if fix is not None and as_called:
            fix = fix._replace(applicability=Applicability.UNSAFE)  # a caller outside the package may pass anything
        because, related = evidence(ctx, call.receiver, call.value, grad=True, device=False)
        ctx.report(self, node, self.message + because, fix, related)
