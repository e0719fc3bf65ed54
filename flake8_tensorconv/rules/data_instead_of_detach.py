from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Grad, Kind

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

# Calls after `.data` that only read it: replacing `.data` by `.detach()` there changes nothing.
_CONVERSIONS = frozenset(
    {"numpy", "cpu", "cuda", "clone", "tolist", "item", "float", "double", "half", "long", "int", "to", "detach", "contiguous"}
)
# Conversions that may return `.data` itself (`.float()` of a float tensor, `.cpu()` on the CPU...):
# an in-place op on their result changes the tensor, hidden from autograd only through `.data`.
_MAY_ALIAS = frozenset({"cpu", "cuda", "to", "float", "double", "half", "long", "int", "detach", "contiguous"})
# Not evidence of a tensor: ndarray `.data` is a memoryview and masked/xarray `.data` an ndarray, which have these too.
_NOT_TORCH_ONLY = frozenset({"tolist", "item"})
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
    `y = x.data` followed by in-place operations on `y`.

    ## Why is this bad?
    `.data` shares memory with `x` but hides changes from autograd's version
    counter. An in-place change through it silently corrupts gradients: with
    `c = out.data; c.zero_()` backward succeeds and returns wrong (zero)
    gradients, where `.detach()` raises "one of the variables needed for gradient
    computation has been modified by an inplace operation".

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
    `.data` is also an attribute of NumPy arrays (a memoryview), of datasets and
    of many classes: with no evidence that `x` is a torch tensor the fix is
    unsafe, and `.data.tolist()` / `.data.item()` (which memoryviews and arrays
    have too) are not reported at all.
    """

    code = "TCV104"
    name = "data-instead-of-detach"
    message = "`.data` hides in-place changes from autograd (silently wrong gradients); use `.detach()`"
    triggers = (".data",)
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._in_place_receivers: set[int] | None = None
        self._assignments: dict[int, ast.Assign] = {}

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in _CONVERSIONS):
            return
        data = func.value
        if not (isinstance(data, ast.Attribute) and data.attr == "data"):
            return
        known_tensor = ctx.value(data.value).kind is Kind.TENSOR
        if not known_tensor and func.attr in _NOT_TORCH_ONLY:
            return
        if not self._is_tensor_data(data, ctx, chained=True):
            return
        # Safe only for a known tensor whose converted value is not then changed in place:
        # after such a change `.detach()` makes backward raise where `.data` gave wrong gradients.
        safe = known_tensor and not (func.attr in _MAY_ALIAS and self._changed_in_place(node, ctx))
        ctx.report(self, data, fix=self._fix(data, ctx, Applicability.SAFE if safe else Applicability.UNSAFE))

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        data = node.value
        if not (isinstance(data, ast.Attribute) and data.attr == "data") or len(node.targets) != 1:
            return
        target = node.targets[0]
        if not isinstance(target, ast.Name) or not self._is_tensor_data(data, ctx, chained=False):
            return
        if ctx.scope.written_in_place_after(target.id, node):
            ctx.report(self, data, fix=self._fix(data, ctx, Applicability.UNSAFE))

    def _is_tensor_data(self, data: ast.Attribute, ctx: Context, chained: bool) -> bool:
        receiver = data.value
        value = ctx.value(receiver)
        if value.kind is Kind.TENSOR:
            return value.grad is not Grad.NO and not value.is_integer
        if value.kind is not Kind.UNKNOWN or not chained:
            return False
        # Unknown receiver: the chain after `.data` is torch-only; rule out objects with their own `.data`.
        while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in _RESHAPES:
            receiver = receiver.func.value  # `x.view(n, -1).data.float()`: judged by `x`
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
        if name is None or name.lower() in _CONTAINER_NAMES or name.lower().endswith(("dataset", "loader")):
            return False
        if name == "self" and "data" in ctx.facts.class_members.get(ctx.state.class_name or "", ()):
            return False
        return ctx.facts.imports_torch

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


def _is_in_place(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")
