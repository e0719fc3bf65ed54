from __future__ import annotations

import ast
import keyword
from collections.abc import Iterator
from typing import NamedTuple

from flake8_tensorconv.findings import Applicability, Edit, Fix
from flake8_tensorconv.rules._numpy_call import device_risk, edited_text, evidence, grad_risk, host_edits
from flake8_tensorconv.rules._receivers import only_declared
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Kind, Value, same

# NumPy functions that turn array-like arguments into arrays through `Tensor.__array__`
# (which calls `Tensor.numpy()`), and which positional arguments are array-likes.
_FIRST = (0,)
_FIRST_TWO = (0, 1)
_ALL = None  # every positional argument
_CONVERTERS: dict[str, tuple[int, ...] | None] = {
    **dict.fromkeys(
        "array asarray asanyarray ascontiguousarray asfortranarray asarray_chkfinite copy require ravel "
        "concatenate stack vstack hstack dstack column_stack "
        "nansum nanmean nanmax nanmin nanstd nanvar nanprod median average".split(),
        _FIRST,
    ),
    **dict.fromkeys("atleast_1d atleast_2d atleast_3d".split(), _ALL),
    **dict.fromkeys(
        "append allclose isclose testing.assert_allclose testing.assert_array_equal "
        "testing.assert_array_almost_equal testing.assert_array_less".split(),
        _FIRST_TWO,
    ),
    "save": (1,),
    "savetxt": (1,),
}
# Reductions that call the tensor's own method (always a TypeError, TCV109) when given a tensor,
# but convert a list of tensors through `__array__` like the functions above.
_SEQUENCE_REDUCTIONS = frozenset("sum mean max min std var prod amax amin any all".split())
# `np.array(x, copy=False)` / `np.asarray(x, copy=False)`: NumPy 2 cannot promise torch's `__array__` makes no copy.
_COPY_KEYWORD_FUNCTIONS = frozenset({"array", "asarray"})


class _Conversion(NamedTuple):
    """One array-like operand that reaches `Tensor.__array__`."""

    node: ast.expr
    value: Value  # the tensor, or the element of a sequence of tensors
    in_sequence: bool  # `node` holds tensors (a list or tuple variable) rather than being one


class NumpyCallOnTensor(Rule):
    """
    ## What it does
    Flags NumPy conversions (`np.asarray(t)`, `np.array(t)`, `np.concatenate([t, ...])`
    and friends) of a tensor that may require grad or live on a GPU, and
    `np.array(t, copy=False)` of any tensor. The friends are the functions that
    turn their arguments into arrays: `np.stack`, `np.vstack`, `np.hstack`,
    `np.testing.assert_allclose`, `np.allclose`, `np.isclose`, `np.save`,
    `np.savetxt`, `np.nanmean`, `np.median`, ...; a list of tensors (a list
    display, a comprehension, a list built with `.append`) counts as well.
    An instance of another module's class moved or cast (`Meta(args).to(device)`)
    is a module, not a tensor: what its own methods return
    (`maml.finetunning(...)`) is unknown and not reported; its outputs
    (`maml(x)`) are on the device it was moved to. So is any value moved with a
    `.to(...)` of its own and then asked for a method that tensors do not have
    (`workspace.time_size()`) with no grad source behind it: what that method
    returns is unknown, and numbers computed from it are no tensors.
    Nor is an integer item of a loss reduced to one value (`loss.data[0]` of a
    torch loss with its default reduction, of `F.mse_loss(...)`, of `out.sum()`):
    a Python number in the PyTorch such code was written for, an `IndexError`
    (a 0-d tensor has no item 0) since torch 0.5; never a tensor.

    ## Why is this bad?
    NumPy converts a tensor through `Tensor.__array__`, which calls `.numpy()`,
    so it fails the same way: `RuntimeError: Can't call numpy() on Tensor that
    requires grad` while grad mode is on, and `TypeError: can't convert cuda:0
    device type tensor to numpy` off the CPU. The failure hides in a helper such as
    `np.concatenate(predictions)` or a test's `np.testing.assert_allclose(out, ...)`
    and shows up only when the code runs with grad enabled or on a GPU.

    With NumPy 2, `np.array(t, copy=False)` always raises `ValueError: Unable to
    avoid copy while creating an array as requested`, even for a plain CPU tensor:
    torch's `__array__` does not take the `copy` keyword, so NumPy cannot promise
    that no copy is made. `np.asarray(t)` is what `copy=False` meant under NumPy 1.

    ## Example
    ```python
    model = nn.Linear(3, 2)
    out = model(torch.ones(4, 3))
    probs = np.asarray(out)
    merged = np.concatenate([model(a), model(b)])
    ```

    ## Use instead
    ```python
    probs = out.detach().numpy()
    merged = np.concatenate([model(a).detach(), model(b).detach()])
    ```

    ## Fix safety
    Safe. `np.asarray(t)` becomes `t.detach().cpu().numpy()` (only the parts
    needed), which returns the same values, strides and memory wherever the
    original worked; elsewhere `.detach()` / `.cpu()` are inserted into the
    arguments (`np.array(t.detach())`, `[x.detach() for x in outputs]` for a list
    of tensors), which leaves NumPy's result unchanged: on the CPU `.cpu()`
    returns the tensor itself. `.copy()` would not be safe: it changes strides.
    `np.array(t, copy=False)` becomes `np.asarray(t)`, which aliases `t` as the
    original did under NumPy 1. Unsafe where `t` is a parameter known as a tensor
    from its annotation alone: a caller may pass an array, which NumPy converts
    and which has no `.detach()`.

    ## Known problems
    Only tensors the inference knows about are reported; a list of tensors must
    be visible as one (a list display, a comprehension, a list built with
    `.append`). `np.array(t)` itself emits a NumPy 2 `DeprecationWarning` (torch's
    `__array__` lacks the `copy` keyword) that the fix keeps.
    """

    code = "TCV105"
    name = "numpy-call-on-tensor"
    message = "`{function}()` of a tensor that {risk} raises {error}, as `.numpy()` does; {advice}"
    copy_message = (
        "`{function}(..., copy=False)` of a tensor always raises ValueError on NumPy 2 "
        "(torch's `__array__` cannot promise not to copy); use `np.asarray(...)`"
    )
    triggers = tuple(sorted(f"numpy.{name}(" for name in (*_CONVERTERS, *_SEQUENCE_REDUCTIONS)))
    silent_on_literal_data = True
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        qualname = ctx.qualname(node.func)
        if qualname is None or not qualname.startswith("numpy."):
            return
        name = qualname[len("numpy."):]
        if name in _COPY_KEYWORD_FUNCTIONS and _copy_false(node) is not None and node.args:
            if ctx.value(node.args[0]).kind is Kind.TENSOR:
                self._report_copy_false(node, name, ctx)
                return
        conversions = list(self._conversions(node, name, ctx))
        risky = [c for c in conversions if grad_risk(c.value, ctx) or device_risk(c.value)]
        if not risky:
            return
        grad = any(grad_risk(c.value, ctx) for c in risky)
        device = any(device_risk(c.value) for c in risky)
        message = self.message.format(function=ctx.text(node.func), **_wording(grad, device))
        first = risky[0]
        because, related = evidence(ctx, first.node, first.value, grad_risk(first.value, ctx), device_risk(first.value))
        ctx.report(self, node, message + because, self._fix(node, name, risky, grad, device, ctx), related)

    # ------------------------------------------------------------------ what is converted
    def _conversions(self, node: ast.Call, name: str, ctx: Context) -> Iterator[_Conversion]:
        if name in _SEQUENCE_REDUCTIONS:
            if node.args and ctx.value(node.args[0]).kind is not Kind.TENSOR:  # a tensor itself is TCV109's
                yield from _operands(node.args[0], ctx)
            return
        if name not in _CONVERTERS:
            return
        positions = _CONVERTERS[name]
        for index, argument in enumerate(node.args):
            if positions is None or index in positions:
                yield from _operands(argument, ctx)

    # ------------------------------------------------------------------ fixes
    def _fix(self, node: ast.Call, name: str, risky: list[_Conversion], grad: bool, device: bool, ctx: Context) -> Fix | None:
        if any(c.in_sequence and not _is_sequence_operand(c.node) for c in risky):
            return None
        what = "`.detach().cpu()`" if grad and device else "`.detach()`" if grad else "`.cpu()`"
        # A parameter known as a tensor from its annotation alone may be an array at run time,
        # which NumPy converts and `.detach()` does not have.
        applicability = Applicability.UNSAFE if any(only_declared(c.node, ctx) for c in risky) else Applicability.SAFE
        if _plain_asarray(node, name, ctx) and risky[0].node is node.args[0] and not risky[0].in_sequence:
            argument = node.args[0]
            text = edited_text(ctx, argument, host_edits(ctx, argument, grad, device))
            return make_fix(applicability, f"Convert with {what} and `.numpy()`", Edit(ctx.start(node), ctx.end(node), f"{text}.numpy()"))
        edits: list[Edit] = []
        for conversion in risky:
            edits.extend(self._operand_edits(conversion, ctx))
        return make_fix(applicability, f"Insert {what} before NumPy converts the tensor", *edits)

    def _operand_edits(self, conversion: _Conversion, ctx: Context) -> tuple[Edit, ...]:
        detach, cpu = grad_risk(conversion.value, ctx), device_risk(conversion.value)
        if not conversion.in_sequence:
            return host_edits(ctx, conversion.node, detach, cpu)
        # A list of tensors: convert each item, keeping the list's order.
        item = _item_name(conversion.node, ctx)
        suffix = (".detach()" if detach else "") + (".cpu()" if cpu else "")
        text = f"[{item}{suffix} for {item} in {ctx.text(conversion.node)}]"
        return (Edit(ctx.start(conversion.node), ctx.end(conversion.node), text),)

    def _report_copy_false(self, node: ast.Call, name: str, ctx: Context) -> None:
        argument, copy = node.args[0], _copy_false(node)
        assert copy is not None
        value = ctx.value(argument)
        edits = list(host_edits(ctx, argument, grad_risk(value, ctx), device_risk(value)))
        fix = None
        previous = _operand_before(node, copy.value)
        if previous is not None and (name == "asarray" or isinstance(node.func, ast.Attribute)):
            # Drop `, copy=False`; an insertion at the same point (`t` + `.detach()`) goes first.
            start = ctx.end(previous)
            inserted = "".join(edit.content for edit in edits if edit.start == edit.end == start)
            edits = [edit for edit in edits if not edit.start == edit.end == start]
            edits.append(Edit(start, ctx.end(copy.value), inserted))
            if name == "array":
                func: ast.Attribute = node.func  # type: ignore[assignment]
                edits.append(Edit(ctx.attribute_name_start(func), ctx.end(func), "asarray"))
            fix = make_fix(Applicability.SAFE, "Use `np.asarray(...)` without `copy=False`", *edits)
        ctx.report(self, node, self.copy_message.format(function=ctx.text(node.func)), fix)


def _operands(node: ast.expr, ctx: Context) -> Iterator[_Conversion]:
    """The tensors (or lists of tensors) inside one array-like argument."""
    if isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            if not isinstance(element, ast.Starred):
                yield from _operands(element, ctx)
        return
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        yield from _operands(node.elt, ctx)
        return
    value = ctx.value(node)
    if value.kind is Kind.TENSOR:
        yield _Conversion(node, value, in_sequence=False)
    elif value.kind in (Kind.SEQUENCE, Kind.ITERABLE):
        item = _item(value)
        if item is not None and item.kind is Kind.TENSOR:
            yield _Conversion(node, item, in_sequence=True)


def _plain_asarray(node: ast.Call, name: str, ctx: Context) -> bool:
    """`np.asarray(t)` with nothing else between its parentheses: it can become `t.numpy()`."""
    if name != "asarray" or len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
        return False
    around = ctx.text(node).replace(ctx.text(node.args[0]), "", 1)
    return "#" not in around


def _item(value: Value) -> Value | None:
    if value.element is not None:
        return value.element
    if value.elements:
        first = value.elements[0]
        return first if all(same(element, first) for element in value.elements) else None
    return None


def _is_sequence_operand(node: ast.expr) -> bool:
    """A list of tensors whose items a comprehension can convert: a name or an attribute, not a call to repeat."""
    return isinstance(node, (ast.Name, ast.Attribute))


def _item_name(sequence: ast.expr, ctx: Context) -> str:
    """A name for one item of ``sequence`` that the enclosing scope does not use: `output` for `outputs`."""
    name = sequence.id if isinstance(sequence, ast.Name) else sequence.attr if isinstance(sequence, ast.Attribute) else ""
    singular = ""
    if name.endswith(("sses", "xes", "ches", "shes", "zes")):
        singular = name[:-2]
    elif name.endswith("ies"):
        singular = name[:-3] + "y"
    elif len(name) > 2 and name.endswith("s") and not name.endswith("ss"):
        singular = name[:-1]
    used = ctx.scope.names
    for candidate in (singular, "t", "tensor", "item"):
        if candidate.isidentifier() and not keyword.iskeyword(candidate) and candidate not in used:
            return candidate
    return next(f"t{index}" for index in range(1, len(used) + 2) if f"t{index}" not in used)


def _operand_before(node: ast.Call, target: ast.expr) -> ast.expr | None:
    """The argument or keyword value written last before ``target``."""
    operands = [*node.args, *(k.value for k in node.keywords)]
    before = [n for n in operands if (n.lineno, n.col_offset) < (target.lineno, target.col_offset) and n is not target]
    return max(before, key=lambda n: (n.end_lineno or 0, n.end_col_offset or 0), default=None)


def _copy_false(node: ast.Call) -> ast.keyword | None:
    for keyword_ in node.keywords:
        if keyword_.arg == "copy" and isinstance(keyword_.value, ast.Constant) and keyword_.value.value is False:
            return keyword_
    return None


def _wording(grad: bool, device: bool) -> dict[str, str]:
    if grad and device:
        return {"risk": "may require grad or be on a GPU", "error": "RuntimeError or TypeError", "advice": "call `.detach().cpu()` on it first"}
    if grad:
        return {"risk": "may require grad", "error": "RuntimeError", "advice": "call `.detach()` on it first"}
    return {"risk": "may be on a GPU", "error": "TypeError", "advice": "call `.cpu()` on it first"}
