"""Shared analysis of tensor-to-NumPy conversions, used by TCV101/102, TCV105 and the strict twins TCV111/112.

A conversion can fail for two reasons that torch checks in this order: the tensor
is not on the CPU (TypeError), or it requires grad while grad mode is on
(RuntimeError). ``grad_risk`` and ``device_risk`` say whether the inference knows
enough to expect either; ``host_edits`` makes an expression safe to convert.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from flake8_tensorconv.findings import Applicability, Edit, Fix, Position, Related
from flake8_tensorconv.rules._receivers import only_declared
from flake8_tensorconv.rules.base import Context, insertion, make_fix
from flake8_tensorconv.values import Device, Fact, Grad, Kind, Origin, Value

# Calls that move a tensor between devices; `.detach()` goes before them (see TCV103).
DEVICE_MOVES = frozenset({"cpu", "cuda", "to"})
# Methods that keep the data (and so the evidence) of their receiver: a message names the receiver.
_SAME_DATA_METHODS = frozenset(
    "cpu cuda to float double half long int contiguous clone squeeze unsqueeze view reshape flatten permute transpose t".split()
)
# How a parameter's name or docstring is described as the evidence (inference/summaries.py).
_PARAMETER_EVIDENCE = "a parameter of "
# Facts of a tensor that requires grad whatever the grad mode (a parameter, `requires_grad=True`).
_LEAF_FACTS = frozenset({Fact.LEAF, Fact.PARAMETER})
# Expressions that take a method call without parentheses around them.
_POSTFIX_OPERANDS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript)


def grad_risk(value: Value, ctx: Context, strict: bool = False) -> bool:
    """Converting ``value`` may raise "Can't call numpy() on Tensor that requires grad" here."""
    if not ctx.grad_enabled or value.grad is Grad.NO or value.is_integer:
        return False
    if strict:
        return value.kind in (Kind.TENSOR, Kind.UNKNOWN)
    # Evidence of risk: a grad source, or what a caller passes in; unknown provenance is the strict twin's.
    return value.kind is Kind.TENSOR and value.grad in (Grad.YES, Grad.MAYBE)


def device_risk(value: Value, strict: bool = False) -> bool:
    """Converting ``value`` may raise "can't convert cuda:0 device type tensor to numpy" here."""
    if value.device is Device.CPU:
        return False
    if strict:
        return value.kind in (Kind.TENSOR, Kind.UNKNOWN)
    return value.kind is Kind.TENSOR and value.device in (Device.ACCELERATOR, Device.MAYBE)


def evidence(ctx: Context, subject: ast.expr | None, value: Value, grad: bool, device: bool) -> tuple[str, tuple[Related, ...]]:
    """Where the risk comes from, as a clause for the message (" (`logits` comes from `model(x)` on line 12, outside
    `no_grad`)") and as related locations. Empty where the inference recorded no source step."""
    while isinstance(subject, ast.Call) and isinstance(subject.func, ast.Attribute) and subject.func.attr in _SAME_DATA_METHODS:
        if ctx.value(subject.func.value).kind is Kind.OTHER:  # `torch.flatten(loss)`: a function of a module
            subject = subject.args[0] if subject.args and not isinstance(subject.args[0], ast.Starred) else None
            continue
        subject = subject.func.value  # `logits.cpu()`: the evidence is about `logits`
    name = ctx.text(subject) if subject is not None else ""
    who = f"`{name}`" if name and len(name) <= 40 and "\n" not in name else "the tensor"
    clauses: list[str] = []
    related: list[Related] = []
    grad_origin = value.grad_origin if grad else None
    device_origin = value.device_origin if device else None
    if grad_origin is not None:
        what = describe_origin(ctx, grad_origin)
        who = "it" if who == what else who
        line = ctx.where(grad_origin)
        if what.endswith(".backward()`"):  # the step is the backward pass through it, not where it was made
            clauses.append(f"{who} requires grad: {what} runs on {line}")
        elif what.startswith(_PARAMETER_EVIDENCE):  # no step in sight: the parameter's name or docstring
            clauses.append(f"{who} is {what} on {line}, so it may require grad")
        elif (value.facts or (ctx.value(subject).facts if subject is not None else frozenset())) & _LEAF_FACTS:
            # A parameter or a `requires_grad=True` leaf requires grad whatever the grad mode it was made in.
            clauses.append(f"{who} requires grad in any grad mode: it comes from {what} on {line}")
        else:
            clauses.append(f"{who} comes from {what} on {line}, outside `no_grad`")
        related.append(_related(ctx, grad_origin, f"requires grad: {what}"))
    if device_origin is not None:
        what = describe_origin(ctx, device_origin)
        if device_origin == grad_origin:
            clauses[-1] += ", and may be on a GPU"
        else:
            line = ctx.where(device_origin)
            if what.startswith(_PARAMETER_EVIDENCE):
                clauses.append(f"{who} is {what} on {line}, so it may be on a GPU")
            else:
                subject_text = "its device" if clauses else ("it" if who == what else who)
                clauses.append(f"{subject_text} comes from {what} on {line}, which may be a GPU")
        related.append(_related(ctx, device_origin, f"may be on a GPU: {what}"))
    return (f" ({'; '.join(clauses)})" if clauses else ""), tuple(related)


def describe_origin(ctx: Context, where: Origin) -> str:
    """The source step as a message shows it: its description, or its code (`model(x)`)."""
    if where.description is not None:
        return where.description
    start, end = ctx.position(where.line, where.column), ctx.position(where.end_line, where.end_column)
    text = ctx.source.text[ctx.source.offset(start) : ctx.source.offset(end)]
    text = " ".join(text.split())
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"


def _related(ctx: Context, where: Origin, message: str) -> Related:
    return ctx.related(where, message)


def first_device_move(expression: ast.expr) -> ast.Attribute | None:
    """In ``t.cuda().cpu()``, the ``.cuda`` that starts the trailing chain of device moves."""
    move = None
    while (
        isinstance(expression, ast.Call)
        and isinstance(expression.func, ast.Attribute)
        and expression.func.attr in DEVICE_MOVES
    ):
        move, expression = expression.func, expression.func.value
    return move


def host_edits(ctx: Context, expression: ast.expr, detach: bool, cpu: bool) -> tuple[Edit, ...]:
    """Edits that turn ``expression`` into ``expression.detach().cpu()`` (the parts asked for).

    `.detach()` goes before a trailing device move, as TCV103 wants; an operand
    that is not a name, attribute, call or subscript is put in parentheses.
    """
    edits: list[Edit] = []
    tail = ""
    if detach:
        move = first_device_move(expression)
        if move is not None:
            edits.append(insertion(ctx.attribute_name_start(move), "detach()."))
        else:
            tail += ".detach()"
    if cpu:
        tail += ".cpu()"
    if not tail:
        return tuple(edits)
    if isinstance(expression, _POSTFIX_OPERANDS):
        return (*edits, insertion(ctx.end(expression), tail))
    return (insertion(ctx.start(expression), "("), *edits, insertion(ctx.end(expression), ")" + tail))


def edited_text(ctx: Context, expression: ast.expr, edits: tuple[Edit, ...]) -> str:
    """The text of ``expression`` after ``edits`` (which lie within it or on its bounds)."""
    source = ctx.source
    base = source.offset(ctx.start(expression))
    text = ctx.text(expression)
    for edit in sorted(edits, key=lambda e: (source.offset(e.start), source.offset(e.end)), reverse=True):
        start, end = source.offset(edit.start) - base, source.offset(edit.end) - base
        text = text[:start] + edit.content + text[end:]
    return text


class NumpyCall(NamedTuple):
    node: ast.Call
    receiver: ast.expr
    value: Value

    @property
    def is_tensor(self) -> bool:
        return self.value.kind is Kind.TENSOR

    def grad_risk(self, ctx: Context, strict: bool = False) -> bool:
        """May raise "Can't call numpy() on Tensor that requires grad" here."""
        if strict and _after_data(self.receiver):
            return False  # `x.data` never requires grad (TCV104 has its own say about `.data`)
        return grad_risk(self.value, ctx, strict)

    def device_risk(self, strict: bool = False) -> bool:
        """May raise "can't convert cuda:0 device type tensor to numpy" here."""
        return device_risk(self.value, strict)

    def fix(self, ctx: Context, detach: bool, cpu: bool) -> Fix | None:
        """The fix that inserts the parts asked for, titled after what it inserts.

        The parts sit at different points (`.detach()` at the dot before `numpy`, or before a
        trailing device move; `cpu().` at `numpy`'s name), so the fixes of TCV101 (`.detach()`)
        and TCV102 (`.cpu()`) on one call never overlap and a client applying both gets
        `x.detach().cpu().numpy()`, not the parts twice.
        """
        func = self.node.func
        assert isinstance(func, ast.Attribute)
        name_start = ctx.attribute_name_start(func)
        if ctx.settings.fix_style == "force":
            end = ctx.end(self.node)
            if name_start.line != end.line:
                return None
            return make_fix(self.applicability(ctx), "Replace `.numpy()` with `.numpy(force=True)`", Edit(name_start, end, "numpy(force=True)"))
        edits: list[Edit] = []
        inserted: list[str] = []
        if detach:
            move = first_device_move(self.receiver)
            dot = _dot_before(name_start, ctx)
            if move is not None:
                edits.append(insertion(ctx.attribute_name_start(move), "detach()."))
                inserted.append(f"`.detach()` before `.{move.attr}()`")
            elif dot is not None:
                edits.append(insertion(dot, ".detach()"))
                inserted.append("`.detach()`")
            elif cpu:
                return make_fix(self.applicability(ctx), "Insert `.detach().cpu()`", insertion(name_start, "detach().cpu()."))
            else:
                edits.append(insertion(name_start, "detach()."))
                inserted.append("`.detach()`")
        if cpu:
            edits.append(insertion(name_start, "cpu()."))
            inserted.append("`.cpu()`")
        if not edits:
            return None
        return make_fix(self.applicability(ctx), "Insert " + " and ".join(inserted), *edits)

    def applicability(self, ctx: Context) -> Applicability:
        # Safe on evidence that the receiver is a torch tensor; an annotation alone is not that.
        return Applicability.SAFE if self.is_tensor and not only_declared(self.receiver, ctx) else Applicability.UNSAFE


def _dot_before(name_start: Position, ctx: Context) -> Position | None:
    """Where the ``.`` of ``x.numpy`` is, when it sits right before the name on the same line."""
    line = ctx.source.line(name_start.line)
    if name_start.column > 0 and line[name_start.column - 1] == ".":
        return Position(name_start.line, name_start.column - 1)
    return None


def grad_rule_reports(call: NumpyCall, ctx: Context) -> bool:
    """TCV101 or its strict twin TCV111 reports this call (and so carries the `.detach()` part)."""
    if "TCV101" in ctx.enabled_codes and call.grad_risk(ctx):
        return True
    return "TCV111" in ctx.enabled_codes and call.grad_risk(ctx, strict=True) and not foreign_receiver(call.receiver, ctx)


def device_rule_reports(call: NumpyCall, ctx: Context) -> bool:
    """TCV102 or its strict twin TCV112 reports this call (and so carries the `.cpu()` part)."""
    if "TCV102" in ctx.enabled_codes and call.device_risk():
        return True
    return "TCV112" in ctx.enabled_codes and call.device_risk(strict=True) and not foreign_receiver(call.receiver, ctx)


def _after_data(receiver: ast.expr) -> bool:
    """``x.data``, also followed by device moves (``x.data.cpu()``)."""
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in DEVICE_MOVES:
        receiver = receiver.func.value
    return isinstance(receiver, ast.Attribute) and receiver.attr == "data"


def numpy_call(node: ast.Call, ctx: Context) -> NumpyCall | None:
    """The ``.numpy()`` call at ``node`` that can fail, or None."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "numpy") or node.args:
        return None
    for keyword in node.keywords:
        if keyword.arg != "force" or not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False):
            return None  # force=True (or a computed force) never raises for these reasons
    value = ctx.value(func.value)
    if value.kind not in (Kind.TENSOR, Kind.UNKNOWN):
        return None
    return NumpyCall(node=node, receiver=func.value, value=value)


# Libraries whose tensors have a `.numpy()` method of their own.
_FOREIGN_TENSOR_LIBRARIES = ("tensorflow.", "keras.", "paddle.")


def foreign_receiver(receiver: ast.expr, ctx: Context) -> bool:
    """The receiver of `.numpy()` is provably not a torch tensor.

    It is a TensorFlow (or Keras, Paddle) tensor, or an instance of a class of this
    file that defines `numpy` itself: built right there, bound only to such values
    in the enclosing scope, or `self` in such a class's methods.
    """
    own = _own_numpy_classes(ctx)
    if isinstance(receiver, ast.Name):
        if receiver.id == "self" and ctx.state.class_name in own:
            return True
        definitions = ctx.scope.definitions(receiver.id)
        return bool(definitions) and all(d is not None and _foreign_construction(d, own, ctx) for d in definitions)
    return _foreign_construction(receiver, own, ctx)


def _foreign_construction(node: ast.expr, own: set[str], ctx: Context) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name) and node.func.id in own:
        return True
    qualname = ctx.facts.qualname(node.func)
    return qualname is not None and qualname.startswith(_FOREIGN_TENSOR_LIBRARIES)


def _own_numpy_classes(ctx: Context) -> set[str]:
    """Classes of this file with a `numpy` member that do not derive from torch.Tensor."""
    classes = set()
    for node in ctx.facts.classes:
        if "numpy" in ctx.facts.class_members.get(node.name, ()):
            bases = [ctx.facts.qualname(base) or "" for base in node.bases]
            if not any(base.startswith("torch.") for base in bases):
                classes.add(node.name)
    return classes
