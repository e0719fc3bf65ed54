from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules._numpy_call import evidence
from flake8_tensorconv.rules._receivers import (
    grad_free_as_called,
    holds_gradients,
    only_declared,
    own_classes_may_have,
    requires_grad_as_called,
)
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Device, Fact, Grad, Kind, Value

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

# A class of the file with its own `detach` (a mixture model) makes `x.to(d).detach()` its own, not torch's.
_OWN_DETACH = frozenset({"detach"})

# Operations between the copy and `.detach()` that autograd records too (`.to("cpu").clone().detach()`).
_RECORDED_BETWEEN = frozenset(
    {"clone", "contiguous", "view", "reshape", "squeeze", "unsqueeze", "permute", "transpose", "flatten", "float", "double", "half"}
)


def _to_the_cpu(move: ast.Call, ctx: Context) -> bool:
    """``.cpu()``, or ``.to(d)`` where ``d`` is known to be the CPU (and no dtype comes with it)."""
    if move.func.attr == "cpu":  # type: ignore[attr-defined]
        return True
    if move.func.attr != "to" or len(move.args) != 1 or move.keywords:  # type: ignore[attr-defined]
        return False
    target = ctx.value(move.args[0])
    return target.kind is Kind.DEVICE and target.device is Device.CPU


def _already_there(move: ast.Call, value: Value, ctx: Context) -> bool:
    """``x.to(device)`` where the step that placed ``x`` used the same ``device`` (``.to(device)``,
    ``device=device``): the tensors of one operation share a device, so ``x`` is there already."""
    where = value.device_origin
    if move.func.attr != "to" or len(move.args) != 1 or move.keywords or where is None:  # type: ignore[attr-defined]
        return False
    target = move.args[0]
    if not isinstance(target, (ast.Name, ast.Attribute)):
        return False
    text = ctx.text(target)
    start, end = ctx.position(where.line, where.column), ctx.position(where.end_line, where.end_column)
    placed = ctx.source.text[ctx.source.offset(start) : ctx.source.offset(end)]
    return placed.endswith(f".to({text})") or f"device={text})" in placed or f"device={text}," in placed


def copy_before_detach(node: ast.Call) -> ast.Call | None:
    """The device copy in ``x.cpu().detach()`` / ``x.to(...).clone().detach()``, or None."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "detach") or node.args or node.keywords:
        return None
    return _device_copy(_before_recorded(func.value))


def copies_combined_before_detach(node: ast.Call) -> list[ast.Call]:
    """The device copies among the operands of arithmetic that ``.detach()`` ends: ``(x.cpu() + y).detach()``
    records the copy of ``x`` (and the sum) in the graph that the detach throws away."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "detach") or node.args or node.keywords:
        return []
    copies: list[ast.Call] = []
    pending = [_before_recorded(func.value)]
    if not isinstance(pending[0], (ast.BinOp, ast.UnaryOp)):
        return []
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp):
            pending += [_before_recorded(current.left), _before_recorded(current.right)]
        elif isinstance(current, ast.UnaryOp):
            pending.append(_before_recorded(current.operand))
        else:
            move = _device_copy(current)
            if move is not None:
                copies.append(move)
    return sorted(copies, key=lambda move: (move.lineno, move.col_offset))


def _before_recorded(node: ast.expr) -> ast.expr:
    """``x.to("cpu")`` of ``x.to("cpu").clone()``: what comes before operations autograd records too."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RECORDED_BETWEEN:
        node = node.func.value
    return node


def _device_copy(move: ast.expr) -> ast.Call | None:
    """``move`` if it is ``.cpu()``, ``.cuda()`` or ``.to(...)`` with an argument, else None."""
    if not (isinstance(move, ast.Call) and isinstance(move.func, ast.Attribute)):
        return None
    if move.func.attr not in ("cpu", "cuda", "to") or (move.func.attr == "to" and not (move.args or move.keywords)):
        return None
    return move


class CpuBeforeDetach(Rule):
    """
    ## What it does
    Flags `.cpu().detach()`, `.cuda().detach()` and `.to(...).detach()` while grad
    mode is on and the tensor requires grad on some path, also with operations that
    autograd records between the copy and `.detach()` (`.to("cpu").clone().detach()`),
    and a copy that arithmetic combines before the `.detach()` that ends it
    (`(log_probs.cpu() + target).detach()`). Where a call returns the copy (a
    method of the file ending in `return torch.tanh(mu).cpu()[0]`) and the caller
    detaches it (`actor.get_action(s).detach()`), the message says so and offers
    no fix: the copy is in the callee.

    It needs a source of grad on the path to the copy, the same evidence TCV101
    needs: a module call outside `no_grad`, `requires_grad=True` (also assigned:
    `t.requires_grad = True`), a parameter, a
    value that `.backward()` runs through, the layer output a forward hook
    receives, a parameter named or documented as a model's output, or what
    same-file callers and returns carry. A model counts
    as holding parameters that require grad where the file shows it: a layer of
    torch, a module class of the file, a model handed in and called, a name or
    `self` attribute whose `.parameters()` go to an optimizer or a gradient clip,
    or `X.from_pretrained(...)` of a model class; not where the file freezes it
    (`.freeze()`, `.requires_grad_(False)`, a loop setting `requires_grad = False`),
    nor in code that runs with grad off (a LightningModule's evaluation hooks, an
    optimizer's methods, a function whose package calls it only without grad or
    passes it only values without grad, a forward hook on a model that every call
    of the file runs under `no_grad`; see TCV101). The message names the source.
    A parameter the file knows nothing of is reported where every call of the
    function in the package passes a tensor that requires grad and the copy is
    recorded (a model's output on a GPU moved by `.cpu()`), naming the step in
    the calling module.

    Not reported where nothing shows grad (a value of unknown provenance, labels,
    metric state), where the tensor cannot require grad (gradients, integer
    tensors and results such as `argmax`, values made under `no_grad` or stored
    already detached, values past a guard that raises when they require grad),
    for `.cpu()` of a tensor known to be on the CPU, `.cuda()` of one the file put on
    the GPU (`netG(x.cuda())` of a model moved with `.cuda()`), and `.to(device)` of one placed
    with that same `device` (`.to(device)`, `device=device`: it is the tensor
    itself, and nothing is copied or recorded), and where a class of the file has its own
    `detach` (a mixture model) and the receiver's kind is not known.

    ## Why is this bad?
    The device copy runs first and autograd records it (`ToCopyBackward0`) in a
    graph that `.detach()` throws away a moment later. Detaching first copies a
    tensor that autograd does not track. On the CPU the two orders are
    indistinguishable; with a real device copy the wasted node is measurable.

    ## Example
    ```python
    model = torch.nn.Linear(3, 2).cuda()
    scores = model(torch.ones(1, 3, device="cuda"))
    arr = scores.cpu().detach().numpy()
    ```

    ## Use instead
    ```python
    model = torch.nn.Linear(3, 2).cuda()
    scores = model(torch.ones(1, 3, device="cuda"))
    arr = scores.detach().cpu().numpy()
    ```

    ## Fix safety
    Safe on a known tensor: both orders give the same values, dtype, device and
    memory. In arithmetic the fix detaches the copied operand first and keeps the
    outer `.detach()`, so the other operands are detached as before. Unsafe where the only evidence is the chain itself or a parameter's
    annotation or name: another class's `.to()` and `.detach()` need not commute.
    """

    code = "TCV103"
    name = "cpu-before-detach"
    message = "`.detach()` after a device copy records the copy in the autograd graph; call `.detach()` first"
    copied_earlier_message = (
        "`.detach()` of a device copy made with grad on: autograd recorded the copy that this throws away; "
        "call `.detach()` before the copy"
    )
    triggers = (").detach(",)  # the device copy's closing parenthesis, then `.detach(`
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._own_classes: bool | None = None

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        move = copy_before_detach(node)
        if move is None:
            if not self._visit_combined(node, ctx):
                self._visit_copied_earlier(node, ctx)
            return
        receiver = move.func.value  # type: ignore[attr-defined]
        value = ctx.value(receiver)
        if self.reportable(move, receiver, value, ctx, strict=False):
            self.report(node, move, receiver, value, ctx, self.message)
        elif value.grad is Grad.UNKNOWN and self.reportable(move, receiver, value, ctx, strict=True):
            # Unknown in the file: the package's calls may show a tensor that requires grad (TCV113 reports it otherwise).
            known = requires_grad_as_called(receiver, ctx)
            if known is not None and self.reportable(move, receiver, known, ctx, strict=False):
                self.report(node, move, receiver, known, ctx, self.message, as_called=True)

    def _visit_copied_earlier(self, node: ast.Call, ctx: Context) -> None:
        """``get_action(state).detach()`` where the method returns ``.cpu()`` of its output: the copy was recorded
        where it was made, and this ``.detach()`` throws it away. No fix: the copy is in the callee."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "detach") or node.args or node.keywords:
            return
        receiver = _before_recorded(func.value)
        if not isinstance(receiver, ast.Call):
            return  # what a call returns (the trigger `).detach(` sees only these)
        value = ctx.value(receiver)
        if Fact.RECORDED_COPY not in value.facts or not ctx.grad_enabled or value.kind is not Kind.TENSOR:
            return
        if value.grad not in (Grad.YES, Grad.MAYBE) or value.is_integer or holds_gradients(receiver, ctx):
            return
        because, related = evidence(ctx, receiver, value, grad=True, device=False)
        ctx.report(self, node, self.copied_earlier_message + because, None, related)

    def _visit_combined(self, node: ast.Call, ctx: Context) -> bool:
        """``(x.cpu() + y).detach()``: the first copy of an operand with grad, and a fix that detaches it first
        (the outer ``.detach()`` stays, so operands without a copy are detached as before)."""
        for move in copies_combined_before_detach(node):
            receiver = move.func.value  # type: ignore[attr-defined]
            value = ctx.value(receiver)
            if self.reportable(move, receiver, value, ctx, strict=False):
                safe = value.kind is Kind.TENSOR and not only_declared(receiver, ctx)
                because, related = evidence(ctx, receiver, value, grad=True, device=False)
                start = ctx.attribute_name_start(move.func)  # type: ignore[arg-type]
                fix = make_fix(
                    Applicability.SAFE if safe else Applicability.UNSAFE,
                    "Call `.detach()` before the device copy",
                    Edit(start, start, "detach()."),
                )
                ctx.report(self, node, self.message + because, fix, related)
                return True
        return False

    def reportable(self, move: ast.Call, receiver: ast.expr, value: Value, ctx: Context, strict: bool) -> bool:
        """Whether the copy is recorded: grad evidence on the path (``strict``: anything but known no grad)."""
        # A source of grad on the path to the copy, as TCV101 needs one; unknown provenance is no evidence.
        wanted = (Grad.YES, Grad.MAYBE, Grad.UNKNOWN) if strict else (Grad.YES, Grad.MAYBE)
        if not ctx.grad_enabled or value.grad not in wanted or value.is_integer or holds_gradients(receiver, ctx):
            return False  # a gradient (`p.grad`, hook-saved `self.gradients`) does not require grad
        if ctx.value(move).is_integer:
            return False  # `.to(dtype=torch.uint8, device="cpu")`: a cast to an integer dtype leaves autograd, recording nothing
        if value.kind is Kind.UNKNOWN:
            # Without a known kind (a parameter named `logits`, or nothing known at all): the chain says tensor,
            # unless a class of the file has its own `detach` (a mixture model). An nn.Module has no `.detach()`.
            if self._own_classes is None:
                self._own_classes = own_classes_may_have(_OWN_DETACH, ctx, imported=False, called=True)
            if self._own_classes:
                return False
        elif value.kind is not Kind.TENSOR:
            return False
        if value.device is Device.CPU and _to_the_cpu(move, ctx):
            return False  # `.cpu()` of a CPU tensor is the tensor itself: nothing is copied or recorded
        if value.device is Device.ACCELERATOR and move.func.attr == "cuda" and not (move.args or move.keywords):  # type: ignore[attr-defined]
            return False  # `.cuda()` of a tensor the file put on the GPU is the tensor itself, as `.cpu()` on the CPU
        return not _already_there(move, value, ctx)  # `.to(device)` of a tensor placed with that same `device`

    def report(
        self, node: ast.Call, move: ast.Call, receiver: ast.expr, value: Value, ctx: Context, message: str, as_called: bool = False
    ) -> None:
        if not as_called and grad_free_as_called(receiver, ctx):
            return  # the package's callers run the function without grad, or pass what has none
        # Where the package's callers decide it, a caller outside it may pass anything: the fix is unsafe.
        safe = value.kind is Kind.TENSOR and not only_declared(receiver, ctx) and not as_called
        because, related = evidence(ctx, receiver, value, grad=True, device=False)
        fix = self._swap(move, node, ctx, Applicability.SAFE if safe else Applicability.UNSAFE)
        ctx.report(self, node, message + because, fix, related)

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
