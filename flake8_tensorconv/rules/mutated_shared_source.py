from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit, Fix
from flake8_tensorconv.rules._in_place_writes import InPlaceWrite, in_place_writes, used_after_write
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Kind

if TYPE_CHECKING:
    pass

# Conversions that return a tensor sharing the array's memory.
_SHARING_CONVERSIONS = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray"})
# The keywords under which `as_tensor`/`asarray` may still share (when they match the array); `torch.tensor` takes them too.
_SHARING_KEYWORDS = frozenset({"dtype", "device"})


class MutatedSharedSource(Rule):
    """
    ## What it does
    Flags an in-place write (`a[...] = v`, `a += 1`, `np.copyto(a, ...)`,
    `a.fill(...)`, `a.sort()`, `out=a`) into a NumPy array `a` after
    `t = torch.from_numpy(a)` or `t = torch.as_tensor(a)` in the same scope,
    while the tensor `t` is still used afterwards (before `t` is bound to
    another tensor).

    ## Why is this bad?
    `torch.from_numpy` and `torch.as_tensor` do not copy: the tensor is a view
    of the array's memory. Changing the array afterwards silently changes the
    tensor too: a batch already handed to a model, a target kept for the loss,
    a tensor appended to a list. Code that reads like "convert, then reuse the
    buffer" computes with the new values.

    ## Example
    ```python
    frame = np.zeros(4, dtype=np.float32)
    first = torch.from_numpy(frame)
    frame[:] = 1.0  # `first` is all ones now
    batch = torch.stack([first, torch.from_numpy(frame)])
    ```

    ## Use instead
    ```python
    first = torch.tensor(frame)  # a copy
    ```

    ## Fix safety
    Unsafe: `torch.tensor(a)` copies, so the write no longer reaches the tensor.
    That is the point, but it changes the results wherever the program relied
    on the sharing (a preallocated buffer refilled on purpose), and the copy is
    contiguous where the array was strided.

    ## Known problems
    Only a conversion bound to a name in the same scope as the write is
    followed: a tensor stored in a list or an attribute and a write in a later
    loop iteration are not seen.
    """

    code = "TCV207"
    name = "mutated-shared-source"
    message = (
        "in-place write into an array that a tensor made by `torch.from_numpy`/`torch.as_tensor` shares: "
        "the tensor changes too; convert with `torch.tensor(...)` (a copy)"
    )
    triggers = tuple(f"{name}(" for name in sorted(_SHARING_CONVERSIONS))
    silent_on_literal_data = True
    fix_safety = "unsafe"

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        self._check(node, ctx)

    def visit_AugAssign(self, node: ast.AugAssign, ctx: Context) -> None:
        self._check(node, ctx)

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        self._check(node, ctx)

    def _check(self, node: ast.AST, ctx: Context) -> None:
        for write in in_place_writes(node, ctx):
            self._check_write(write, ctx)

    def _check_write(self, write: InPlaceWrite, ctx: Context) -> None:
        array_name = write.name.id
        array = ctx.value(write.name)
        if array.kind not in (Kind.NDARRAY, Kind.UNKNOWN):
            return
        scope = ctx.scope
        for tensor_name, tensor in sorted(ctx.state.env.items()):
            if tensor.kind is not Kind.TENSOR or tensor.shares_with != array_name or tensor_name == array_name:
                continue
            bindings = scope.before(tensor_name, write.statement)
            conversion = _sharing_conversion(bindings[-1].value, array_name, ctx) if bindings else None
            if conversion is None:
                continue
            # as_tensor(list) copies; from_numpy proves an ndarray (or raises).
            if array.kind is Kind.UNKNOWN and ctx.qualname(conversion.func) != "torch.from_numpy":
                continue
            if scope.rebound_between(array_name, conversion, write.statement):
                continue  # the tensor shares the array the name held before
            if not used_after_write(tensor_name, write.statement, ctx):
                continue
            message = (
                f"`{tensor_name}` shares memory with `{array_name}` "
                f"(made by `{ctx.text(conversion.func)}`): this write changes `{tensor_name}` too; "
                f"make `{tensor_name}` with `torch.tensor(...)`, a copy"
            )
            ctx.report(self, write.node, message, _fix(conversion, ctx))


def _sharing_conversion(expression: ast.expr | None, array_name: str, ctx: Context) -> ast.Call | None:
    """``torch.from_numpy(a)`` / ``torch.as_tensor(a)`` returning a tensor that shares ``a``'s memory."""
    if not isinstance(expression, ast.Call) or len(expression.args) != 1:
        return None
    argument = expression.args[0]
    if not (isinstance(argument, ast.Name) and argument.id == array_name):
        return None
    qualname = ctx.qualname(expression.func)
    if qualname not in _SHARING_CONVERSIONS:
        return None
    for keyword in expression.keywords:
        if keyword.arg == "device" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value == "cpu"):
            return None  # a copy on any other device
        if keyword.arg == "dtype":
            dtype = ctx.value(keyword.value)
            if dtype.kind is not Kind.DTYPE or dtype.dtype is None or dtype.dtype != ctx.value(argument).dtype:
                return None  # a different dtype is a copy
        if keyword.arg not in _SHARING_KEYWORDS:
            return None  # copy=..., requires_grad=...: not a plain sharing conversion
    return expression


def _fix(conversion: ast.Call, ctx: Context) -> Fix | None:
    func = conversion.func
    if not isinstance(func, ast.Attribute):
        return None  # `from torch import from_numpy`: no `torch.` to write `tensor` after
    return make_fix(
        Applicability.UNSAFE,
        "Copy the array with `torch.tensor(...)`",
        Edit(ctx.attribute_name_start(func), ctx.end(func), "tensor"),
    )
