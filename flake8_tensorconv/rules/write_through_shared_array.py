from __future__ import annotations

import ast
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.findings import Applicability
from flake8_tensorconv.rules._in_place_writes import (
    InPlaceWrite,
    caller_reads_argument,
    in_place_writes,
    is_basic_index,
    used_after_write,
)
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix
from flake8_tensorconv.values import Device, Kind

if TYPE_CHECKING:
    pass

# Tensor methods whose result shares memory with the receiver (on the CPU, for `cpu`).
_TENSOR_VIEWS = frozenset(
    {"detach", "cpu", "view", "view_as", "squeeze", "unsqueeze", "permute", "t", "transpose", "narrow", "select",
     "unflatten", "movedim", "moveaxis", "diagonal", "expand", "expand_as"}
)
_TENSOR_VIEW_ATTRIBUTES = frozenset({"data", "T", "mT", "real"})
# ndarray methods that return a view (`reshape`/`ravel` of a contiguous array: see Known problems).
_ARRAY_VIEWS = frozenset({"view", "transpose", "swapaxes", "squeeze", "reshape", "ravel"})
_ARRAY_VIEW_ATTRIBUTES = frozenset({"T", "mT", "real"})
_AS_ARRAY = frozenset({"numpy.asarray", "numpy.asanyarray"})
# Casts that return the tensor itself when it already has the dtype: method -> that dtype.
_DTYPE_CASTS = {
    **K.FLOAT_METHODS,
    **{name: dtype for name, dtype in K.INTEGER_METHODS.items() if name in ("long", "int", "short", "char", "byte", "bool")},
}
# How many `a = a.reshape(...)` steps to follow back to the conversion.
_MAX_ALIAS_HOPS = 4


class Conversion(NamedTuple):
    """``t.detach().cpu().numpy()`` or ``np.asarray(t)``: an array sharing ``t``'s memory on the CPU."""

    call: ast.Call  # the `.numpy()` / `np.asarray(...)` call, where `.copy()` goes
    tensor: str  # the tensor's name
    crosses_device: bool  # `.cpu()` / `.to("cpu")` on the way: a copy, not a view, on a GPU
    # A dtype cast on the way (`.float()`) whose source dtype is not known: it returns the tensor
    # itself when the dtype already matches, a copy otherwise.
    cast: str | None = None
    # `predictions[0].numpy()`: the item of the tensor (or of a sequence of tensors) that the array shares.
    item: int | None = None


class WriteThroughSharedArray(Rule):
    """
    ## What it does
    Flags in-place writes (`a[...] = v`, `a += 1`, `np.copyto(a, ...)`,
    `a.fill(...)`, `a.sort()`, `out=a`) into an array made by `t.numpy()`,
    `t.detach().cpu().numpy()` or `np.asarray(t)` while the tensor `t` is still
    used afterwards, before its name is bound to another tensor. A parameter's
    tensor (also when the array is bound to the parameter's own name, `x =
    x.detach().numpy()`) belongs to the caller: the write is reported where a
    caller in the file reads what it passed after the call (or passes it again on
    the next pass of a loop). A temporary (`f(model(x))`,
    `dets = f(dets)`, a name the caller never reads again) changes nothing anyone
    reads, and where no caller is in sight nothing shows a reader, so neither is
    reported. An array made from one item, `preds[0].numpy()`,
    is not read back through another constant item (`preds[1]`). A dtype cast
    in the chain (`t.detach().float().numpy()`) returns the tensor itself when the
    dtype already matches: where that dtype is not known the write is reported as
    one that may reach the tensor; a cast known to change the dtype copies.

    ## Why is this bad?
    On the CPU these conversions do not copy: the array and the tensor share
    memory, so the write silently changes `t` too (values the model, a loss, or
    the caller will read). On a GPU, `.cpu()` makes a copy and the same write
    leaves `t` alone: the program computes different things on different
    devices, and tests on a laptop do not show what runs on the cluster.

    ## Example
    ```python
    logits = model(batch).detach()
    scores = logits.cpu().numpy()
    scores[scores < 0] = 0  # also zeroes `logits`, on the CPU only
    loss = logits.sum()
    ```

    ## Use instead
    ```python
    logits = model(batch).detach()
    scores = logits.cpu().numpy().copy()
    scores[scores < 0] = 0
    loss = logits.sum()
    ```

    ## Fix safety
    Unsafe: `.copy()` is added where the array is made, so the write no longer
    reaches the tensor on the CPU. That is the point, but it changes what the
    program computes there wherever it relied on the write-through (and the copy
    is C-contiguous, where `.numpy()` of a transposed tensor was not). On a GPU
    nothing changes: `.cpu()` already copied there (as the `Tensor.cpu`
    documentation says; the fixtures check it wherever CUDA is present).

    ## Known problems
    `a.reshape(...)` and `a.ravel()` after the conversion are taken to be views;
    they copy when the tensor is not contiguous, and then the write does not
    reach the tensor. Only tensors held in a local name are followed: a write
    into `self.weight.numpy()` is not reported.
    """

    code = "TCV106"
    name = "write-through-shared-array"
    message = (
        "in-place write into an array that shares memory with a tensor changes the tensor on the CPU "
        "(not on a GPU, where `.cpu()` copied); add `.copy()` where the array is made"
    )
    triggers = (".numpy(", *(f"{name}(" for name in sorted(_AS_ARRAY)))
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
        array = ctx.value(write.name)
        tensor_name = array.shares_with
        if array.kind is not Kind.NDARRAY or tensor_name is None:
            return
        scope = ctx.scope
        own_name = tensor_name == write.name.id  # `x = x.numpy()` on a parameter `x`
        if own_name and not scope.is_parameter(tensor_name):
            return
        tensor = None if own_name else ctx.state.env.get(tensor_name)
        if not own_name and (tensor is None or tensor.kind not in (Kind.TENSOR, Kind.UNKNOWN) or tensor.device is Device.ACCELERATOR):
            return  # on a GPU `.cpu()` copies (and a bare `.numpy()` raises: TCV102)
        conversions = self._conversions(write, tensor_name, ctx)
        if not conversions:
            return
        first = min(conversions, key=lambda conversion: (conversion.call.lineno, conversion.call.col_offset))
        if own_name:
            # The conversion's own assignment is the only binding before it: the array is made from the
            # caller's tensor, which the write then changes.
            if len(scope.before(tensor_name, first.call)) != 1:
                return
        elif scope.rebound_between(tensor_name, first.call, write.statement):
            return  # the name now holds another tensor
        caller_owns = scope.is_parameter(tensor_name) and (own_name or not scope.before(tensor_name, first.call))
        items = {conversion.item for conversion in conversions}
        item = items.pop() if len(items) == 1 else None
        # After `x = x.numpy()` the name holds the array: only a caller can read the tensor again.
        read_here = not own_name and used_after_write(tensor_name, write.statement, ctx, item)
        if not (read_here or (caller_owns and caller_reads_argument(tensor_name, ctx))):
            return
        array_name = write.name.id
        casts = [conversion.cast for conversion in conversions if conversion.cast is not None]
        if own_name:
            message = (
                f"`{array_name}` now holds an array that shares memory with the tensor the caller passed as "
                f"`{tensor_name}`: this write changes the caller's tensor; add `.copy()` where the array is made"
            )
        elif casts:
            message = (
                f"`{array_name}` may share memory with tensor `{tensor_name}` (`.{casts[0]}()` returns the tensor "
                f"itself when it already has that dtype): this write may also change `{tensor_name}`; "
                f"add `.copy()` where `{array_name}` is made"
            )
        elif any(conversion.crosses_device for conversion in conversions):
            message = (
                f"`{array_name}` shares memory with tensor `{tensor_name}` on the CPU but is a copy on a GPU: "
                f"this write changes `{tensor_name}` on the CPU only; add `.copy()` where `{array_name}` is made"
            )
        else:
            message = (
                f"`{array_name}` shares memory with tensor `{tensor_name}`: this write also changes "
                f"`{tensor_name}`; add `.copy()` where `{array_name}` is made"
            )
        edits = sorted({insertion(ctx.end(conversion.call), ".copy()") for conversion in conversions}, key=lambda e: e.start)
        fix = make_fix(Applicability.UNSAFE, f"Copy `{array_name}` where it is made", *edits)
        ctx.report(self, write.node, message, fix)

    def _conversions(self, write: InPlaceWrite, tensor_name: str, ctx: Context) -> list[Conversion]:
        """The conversions of ``tensor_name`` that reach the write through the written name.

        The last binding of the name before the write must be one (a branch that
        binds it otherwise has already made the inference forget the sharing);
        ``a = a.reshape(...)`` steps back to the binding before, and the bindings
        just before that one that are conversions too (``if``/``else``) are fixed
        along with it.
        """
        scope = ctx.scope
        name = write.name.id
        bindings = scope.before(name, write.statement)
        hops = 0
        while bindings and bindings[-1].value is not None and _view_of_name(bindings[-1].value, name, ctx):
            bindings = bindings[:-1]
            hops += 1
            if hops > _MAX_ALIAS_HOPS:
                return []
        conversions: list[Conversion] = []
        for binding in reversed(bindings):
            conversion = _conversion(binding.value, ctx) if binding.value is not None else None
            if conversion is None or conversion.tensor != tensor_name:
                break
            conversions.append(conversion)
        return conversions


def _view_of_name(expression: ast.expr, name: str, ctx: Context) -> bool:
    """``name.reshape(...)``, ``name.T``, ``name[1:]``: a view of the array held by ``name``."""
    inner = _strip_array_views(expression, ctx)
    return inner is not expression and isinstance(inner, ast.Name) and inner.id == name


def _strip_array_views(expression: ast.expr, ctx: Context) -> ast.expr:
    node = expression
    while True:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ARRAY_VIEWS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in _ARRAY_VIEW_ATTRIBUTES:
            node = node.value
        elif isinstance(node, ast.Subscript) and is_basic_index(node.slice, ctx) and _keeps_an_axis(node.slice):
            node = node.value
        else:
            return node


def _keeps_an_axis(index: ast.expr) -> bool:
    """``a[0]`` of a 1-d array is a NumPy scalar (``+=`` rebinds it); ``a[0, :]``, ``a[...]`` stay arrays."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return any(isinstance(part, ast.Slice) or (isinstance(part, ast.Constant) and part.value in (None, Ellipsis)) for part in parts)


def _conversion(expression: ast.expr, ctx: Context) -> Conversion | None:
    """The conversion at the heart of ``expression`` (views after it allowed), or None."""
    node = _strip_array_views(expression, ctx)
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args:
        if any(keyword.arg != "force" for keyword in node.keywords):
            return None
        receiver: ast.expr = func.value
        from_numpy_method = True
    elif ctx.qualname(func) in _AS_ARRAY and len(node.args) == 1 and not node.keywords:
        receiver = node.args[0]
        from_numpy_method = False
    else:
        return None
    crosses_device = False
    torch_evidence = False
    cast = None
    item: int | None = None
    while True:
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
            method = receiver.func.attr
            target = _cast_dtype(receiver, ctx)
            if target is not None:
                source = ctx.value(receiver.func.value).dtype
                if source is not None and source != target:
                    return None  # a cast to another dtype copies
                cast = cast or (method if source is None else None)
            elif method == "to" and _to_cpu(receiver):
                method = "cpu"
            elif method not in _TENSOR_VIEWS or (method in ("detach", "cpu") and (receiver.args or receiver.keywords)):
                return None
            crosses_device = crosses_device or method == "cpu"
            torch_evidence = torch_evidence or method in K.TORCH_ONLY_METHODS
            receiver = receiver.func.value
        elif isinstance(receiver, ast.Attribute) and receiver.attr in _TENSOR_VIEW_ATTRIBUTES:
            receiver = receiver.value
        elif isinstance(receiver, ast.Subscript) and is_basic_index(receiver.slice, ctx):
            index = receiver.slice
            item = index.value if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 0 else None
            receiver = receiver.value
        else:
            break
    if not isinstance(receiver, ast.Name):
        return None
    kind = ctx.value(receiver).kind
    # `.numpy()` exists on other libraries' tensors, and np.asarray(list) copies: need torch evidence.
    if not (kind is Kind.TENSOR or (from_numpy_method and kind is Kind.UNKNOWN and torch_evidence)):
        return None
    return Conversion(call=node, tensor=receiver.id, crosses_device=crosses_device, cast=cast, item=item)


def _cast_dtype(call: ast.Call, ctx: Context) -> str | None:
    """The dtype of ``t.float()``, ``t.to(torch.float32)``, ``t.type(torch.long)``; None for other calls."""
    method = call.func.attr  # type: ignore[attr-defined]
    if method in _DTYPE_CASTS and not call.args and not call.keywords:
        return _DTYPE_CASTS[method]
    if method in ("to", "type") and len(call.args) == 1 and not call.keywords:
        return K.dtype_from_qualname(ctx.qualname(call.args[0]) or "")
    return None


def _to_cpu(call: ast.Call) -> bool:
    """``.to("cpu")`` or ``.to(device="cpu")``."""
    arguments = [*call.args, *(keyword.value for keyword in call.keywords if keyword.arg == "device")]
    if len(arguments) != 1 or len(call.args) + len(call.keywords) != 1:
        return False
    argument = arguments[0]
    return isinstance(argument, ast.Constant) and argument.value == "cpu"
