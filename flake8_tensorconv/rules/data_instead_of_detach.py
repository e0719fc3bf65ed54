from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules._receivers import holds_gradients, only_declared, own_classes_may_have
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Grad, Kind

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

# Calls after `.data` that only read it: replacing `.data` by `.detach()` there changes nothing.
# (`.item()` and `.tolist()` are not among them: only a Python value leaves, nothing to hide.)
_CONVERSIONS = frozenset(
    {"numpy", "cpu", "cuda", "clone", "float", "double", "half", "long", "int", "to", "detach", "contiguous"}
)
# Conversions that may return `.data` itself (`.float()` of a float tensor, `.cpu()` on the CPU...):
# an in-place op on their result changes the tensor, hidden from autograd only through `.data`.
_MAY_ALIAS = frozenset({"cpu", "cuda", "to", "float", "double", "half", "long", "int", "detach", "contiguous"})
# Methods that reshape a tensor (or an array) without changing what it is.
_RESHAPES = frozenset({"view", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "contiguous"})
# Receivers whose `.data` is their own attribute, not `Tensor.data`.
_CONTAINER_NAMES = frozenset(
    {
        "dataset", "datasets", "loader", "dataloader", "data_loader", "df", "frame", "series",
        "batch", "sample", "record", "response", "request", "module", "model",
    }
)


class DataInsteadOfDetach(Rule):
    """
    ## What it does
    Flags `Tensor.data` used to get a tensor out of autograd: conversion chains
    such as `x.data.numpy()`, `x.data.cpu()`, `x.data.clone()`, and
    `y = x.data` followed by in-place operations on `y`. It needs evidence that
    `x` is a torch tensor that can require grad: not a gradient (`p.grad.data`),
    a buffer, an integer tensor or a value made under `no_grad`, and not an
    object of a class the file defines or imports from its own package that has
    its own `data`, nor a value of unknown kind whose name says it holds
    gradients (`self.gradients` saved by a backward hook). Not reported:
    `.data.item()` and `.data.tolist()` (only a Python value leaves), and
    parameter updates through `.data` (`p.data = p.data.half()`,
    `dst.data = src.data.clone()`, `dst.data.copy_(src.data)`, `dst.data += src.data.cpu()`).

    ## Why is this bad?
    `.data` shares memory with `x` but hides changes from autograd's version
    counter. An in-place change through it silently corrupts gradients: with
    `c = out.data; c.zero_()` backward succeeds and returns wrong (zero)
    gradients, where `.detach()` raises "one of the variables needed for gradient
    computation has been modified by an inplace operation". Where nothing is
    changed in place, `.detach()` does the same as `.data` and keeps that check
    for the day someone adds a write.

    ## Example
    ```python
    arr = weight.data.numpy()
    ```

    ## Use instead
    ```python
    arr = weight.detach().numpy()
    ```

    ## Fix safety
    Safe in conversion chains on a known tensor (same values, dtype and memory).
    Where the result is then changed in place (`y = x.data` followed by
    `y.zero_()`, or `x.data.float().mul_(2)` where `.float()` returns the tensor
    itself) the fix is unsafe: the code that silently computed wrong gradients
    will raise instead, which is the point.
    With no evidence but the torch-only chain after `.data` (the receiver's kind
    is unknown) the fix is unsafe too: the receiver may still be an object whose
    `data` is its own.
    """

    code = "TCV104"
    name = "data-instead-of-detach"
    message = "`.data` detaches without autograd's check; `.detach()` does the same and keeps the check"
    in_place_message = (
        "`.data` hides the in-place change that follows from autograd (silently wrong gradients); "
        "use `.detach()`, which makes backward raise instead"
    )
    triggers = (".data",)
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._in_place_receivers: set[int] | None = None
        self._assignments: dict[int, ast.Assign] = {}
        self._storage_replacements: set[int] | None = None
        self._own_classes: bool | None = None

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in _CONVERSIONS):
            return
        data = func.value
        if not (isinstance(data, ast.Attribute) and data.attr == "data") or self._replaces_storage(node, ctx):
            return
        if not self._is_tensor_data(data, ctx, chained=True):
            return
        known_tensor = ctx.value(data.value).kind is Kind.TENSOR and not only_declared(data.value, ctx)
        changed = func.attr in _MAY_ALIAS and self._changed_in_place(node, ctx)
        # Safe only for a known tensor whose converted value is not then changed in place:
        # after such a change `.detach()` makes backward raise where `.data` gave wrong gradients.
        safe = known_tensor and not changed
        message = self.in_place_message if changed else self.message
        ctx.report(self, data, message, self._fix(data, ctx, Applicability.SAFE if safe else Applicability.UNSAFE))

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        data = node.value
        if not (isinstance(data, ast.Attribute) and data.attr == "data") or len(node.targets) != 1:
            return
        target = node.targets[0]
        if not isinstance(target, ast.Name) or not self._is_tensor_data(data, ctx, chained=False):
            return
        if ctx.scope.written_in_place_after(target.id, node):
            ctx.report(self, data, self.in_place_message, self._fix(data, ctx, Applicability.UNSAFE))

    def _is_tensor_data(self, data: ast.Attribute, ctx: Context, chained: bool) -> bool:
        receiver = data.value
        value = ctx.value(receiver)
        if value.grad is Grad.NO or value.is_integer or _cannot_require_grad(receiver, ctx):
            return False  # a gradient, a buffer, an integer tensor, a value made under no_grad
        if value.kind is Kind.TENSOR:
            return True
        if value.kind is not Kind.UNKNOWN or not chained:
            return False
        # Unknown receiver: the chain after `.data` is torch-only, which says that `x.data` is a
        # tensor, not that `x` is one: rule out objects with their own `.data`.
        if self._own_classes is None:
            self._own_classes = own_classes_may_have(frozenset({"data"}), ctx, attributes=True)
        if self._own_classes:
            return False
        while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in _RESHAPES:
            receiver = receiver.func.value  # `x.view(n, -1).data.float()`: judged by `x`
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
        if name is None or name.lower() in _CONTAINER_NAMES or name.lower().endswith(("dataset", "loader", "_set", "trainset", "testset", "valset")):
            return False
        return ctx.facts.imports_torch

    def _replaces_storage(self, call: ast.Call, ctx: Context) -> bool:
        """A parameter update through `.data`, which is what `.data` is for: ``p.data = p.data.half()``,
        ``dst.data = src.data.clone()``, ``dst.data.copy_(src.data.clone())``, ``dst.data += src.data.cpu()``."""
        if self._storage_replacements is None:
            self._storage_replacements = set()
            for node in ast.walk(ctx.facts.tree):
                if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
                    _is_data(target) for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                ):
                    self._storage_replacements.update(id(child) for child in ast.walk(node.value))
                elif (
                    isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_in_place(node.func.attr)
                    and _is_data(node.func.value)
                ):
                    for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                        self._storage_replacements.update(id(child) for child in ast.walk(argument))
        return id(call) in self._storage_replacements

    def _changed_in_place(self, call: ast.Call, ctx: Context) -> bool:
        """Whether an in-place op is applied to the call's result, directly or through the name it is assigned to."""
        if self._in_place_receivers is None:
            self._in_place_receivers = set()
            for node in ast.walk(ctx.facts.tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _is_in_place(node.func.attr):
                    self._in_place_receivers.add(id(node.func.value))
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self._assignments[id(node.value)] = node
        if id(call) in self._in_place_receivers:
            return True
        assignment = self._assignments.get(id(call))
        return assignment is not None and ctx.scope.written_in_place_after(assignment.targets[0].id, assignment)  # type: ignore[attr-defined]

    def _fix(self, data: ast.Attribute, ctx: Context, applicability: Applicability):
        start = ctx.attribute_name_start(data)
        return make_fix(applicability, "Replace `.data` with `.detach()`", Edit(start, ctx.end(data), "detach()"))


def _is_data(node: ast.expr) -> bool:
    """``x.data`` or ``x.data[...]``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "data"


def _cannot_require_grad(receiver: ast.expr, ctx: Context) -> bool:
    """``p.grad`` (a gradient), or ``self.X`` registered as a buffer of the enclosing class.

    Of unknown kind, a name that says it holds gradients (``self.gradients`` saved by a
    backward hook, ``grads``) does not require grad either: hooks get plain gradients.
    """
    if holds_gradients(receiver, ctx):
        return True
    if not isinstance(receiver, ast.Attribute):
        return False
    if not (isinstance(receiver.value, ast.Name) and receiver.value.id == "self"):
        return False
    for cls in ast.walk(ctx.facts.tree):
        if isinstance(cls, ast.ClassDef) and cls.name == ctx.state.class_name:
            return receiver.attr in _buffers(cls)
    return False


def _buffers(cls: ast.ClassDef) -> set[str]:
    """Names a class registers with ``self.register_buffer("name", ...)``."""
    return {
        node.args[0].value
        for node in ast.walk(cls)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer"
        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
    }


def _is_in_place(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")
