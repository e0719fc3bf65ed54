"""Shared analysis of a ``.numpy()`` call, used by TCV101/102 and their strict twins."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules.base import Context, insertion
from flake8_tensorconv.values import Device, Grad, Kind, Value

# Calls that move a tensor between devices; `.detach()` goes before them (see TCV103).
DEVICE_MOVES = frozenset({"cpu", "cuda", "to"})


@dataclass(frozen=True)
class NumpyCall:
    node: ast.Call
    receiver: ast.expr
    value: Value

    @property
    def is_tensor(self) -> bool:
        return self.value.kind is Kind.TENSOR

    def grad_risk(self, ctx: Context, strict: bool = False) -> bool:
        """May raise "Can't call numpy() on Tensor that requires grad" here."""
        if not ctx.grad_enabled or self.value.grad is Grad.NO or self.value.is_integer:
            return False
        if strict:
            return self.value.kind in (Kind.TENSOR, Kind.UNKNOWN)
        return self.is_tensor

    def device_risk(self, strict: bool = False) -> bool:
        """May raise "can't convert cuda:0 device type tensor to numpy" here."""
        if self.value.device is Device.CPU:
            return False
        if strict:
            return self.value.kind in (Kind.TENSOR, Kind.UNKNOWN)
        return self.is_tensor

    def edits(self, ctx: Context, detach: bool, cpu: bool) -> tuple[Edit, ...]:
        if ctx.settings.fix_style == "force":
            start = ctx.attribute_name_start(self.node.func)  # type: ignore[arg-type]
            end = ctx.end(self.node)
            if start.line != end.line:
                return ()
            return (Edit(start, end, "numpy(force=True)"),)
        edits = []
        if detach:
            # Detach before any device move so the copy is not recorded by autograd.
            target: ast.Attribute = self.node.func  # type: ignore[assignment]
            chain = self.receiver
            while (
                isinstance(chain, ast.Call)
                and isinstance(chain.func, ast.Attribute)
                and chain.func.attr in DEVICE_MOVES
            ):
                target, chain = chain.func, chain.func.value
            if target is self.node.func and cpu:
                return (insertion(ctx.attribute_name_start(target), "detach().cpu()."),)
            edits.append(insertion(ctx.attribute_name_start(target), "detach()."))
        if cpu:
            edits.append(insertion(ctx.attribute_name_start(self.node.func), "cpu()."))  # type: ignore[arg-type]
        return tuple(edits)

    def applicability(self) -> Applicability:
        return Applicability.SAFE if self.is_tensor else Applicability.UNSAFE


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
