from __future__ import annotations

import ast

from flake8_tensorconv.findings import Applicability, Edit, Fix
from flake8_tensorconv.rules._conversion import receiver_text, single_data_argument
from flake8_tensorconv.rules._receivers import only_declared
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.trees import walk
from flake8_tensorconv.values import Fact, Kind

# Tensor attributes that are tensors themselves.
_TENSOR_ATTRIBUTES = frozenset({"data", "grad", "T", "mT", "H", "mH", "real", "imag"})
# Keywords of `torch.tensor` the fix can express; others (`pin_memory=`, `**kwargs`) leave the call unfixed.
_FIXABLE_KEYWORDS = frozenset({"requires_grad", "dtype", "device"})


class TensorCopyConstruct(Rule):
    """
    ## What it does
    Flags `torch.tensor(t)` where `t` is already a tensor, also with
    `requires_grad=`, `dtype=` or `device=`. A parameter annotated `Tensor`
    whose callers are all in the file, none of them seen passing a tensor,
    is not reported: the callers say what comes in, not the annotation. Nor is
    a value inside `if isinstance(x, C):` with `C` another library's class
    (`NonTensorData`): there `x` is a `C`, whatever its annotation says. Nor is
    a parameter annotated `Tensor` that its function hands (or a slice of it)
    to `torch.from_numpy`, which accepts only arrays: the code says it is an array.
    Nor is a value in a branch where a test says it is a NumPy array
    (`type(x).__name__ == "ndarray"`, `type(x) is np.ndarray`, `isinstance(x,
    np.ndarray)`): whenever that branch runs it is one. An `isinstance` test
    with several classes, as a tuple (`(np.ndarray, list)`) or a PEP 604 union
    (`np.ndarray | list`), counts like one class: where none of them is a tensor
    class, its branch sees no tensor. A test kept in a flag bound once
    (`is_tensor = isinstance(x, torch.Tensor)`, then `if not is_tensor:`)
    counts like the test, where `x` gets no new value in between. The total norm that
    `torch.nn.utils.clip_grad_norm_` returns is a tensor, also when a caller in
    the file hands it over in a tuple. An attribute of `self` that the class
    binds to an `nn.Parameter` (`torch.tensor(self.temperature)`) is a tensor too;
    other attributes are judged by their name (`frame.values` is no tensor's).

    ## Why is this bad?
    `torch.tensor` is meant for data (lists, arrays, scalars). Given a tensor it
    copies it and emits `UserWarning: To copy construct from a tensor, it is
    recommended to use sourceTensor.detach().clone() or
    sourceTensor.detach().clone().requires_grad_(True), rather than
    torch.tensor(sourceTensor).` on every call, which floods the logs of a
    training loop. The spelling also hides that the copy is detached from the
    autograd graph.

    ## Example
    ```python
    prediction = torch.nn.Linear(4, 1)(batch)
    target = torch.tensor(prediction, dtype=torch.float64, requires_grad=True)
    ```

    ## Use instead
    ```python
    prediction = torch.nn.Linear(4, 1)(batch)
    target = prediction.detach().clone().to(torch.float64).requires_grad_(True)
    ```

    ## Fix safety
    Safe where the function itself shows the argument is a tensor (unsafe where
    that rests only on a parameter's annotation, name or callers: a caller
    elsewhere may pass a number, which `torch.tensor` takes and `.detach()` does
    not). Then `t.detach().clone()` gives
    the same values, dtype, device, strides (transposed and channels-last
    inputs included), conjugate resolution and a new memory block, detached;
    `.to(...)` after the clone does what `dtype=`/`device=` did, and
    `.requires_grad_(True)` comes last so the result is a leaf, as before.
    The fix is not offered when the call has other keywords or a comment inside.
    """

    code = "TCV205"
    name = "tensor-copy-construct"
    message = (
        "`torch.tensor()` of a tensor emits a UserWarning on every call (copy-construct); "
        "`t.detach().clone()` makes the same detached copy without it"
    )
    triggers = ("torch.tensor(",)
    silent_on_literal_data = True
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        if ctx.qualname(node.func) != "torch.tensor":
            return
        source = single_data_argument(node)
        if source is None or ctx.value(source).kind is not Kind.TENSOR:
            return
        if isinstance(source, ast.Attribute) and source.attr not in _TENSOR_ATTRIBUTES and not _kept_on_self(source, ctx):
            return  # `frame.values`, `result.scores`: an attribute a tensor does not have
        if isinstance(source, ast.Name) and _declared_as_maybe_not_tensor(source.id, node, ctx):
            return
        if isinstance(source, ast.Name) and _callers_pass_no_tensor(source.id, node, ctx):
            return
        root = _root_name(source)
        if root is not None and _parameter_not_rebound(root, node, ctx) and _used_as_an_array(root, ctx):
            return
        ctx.report(self, node, fix=self._fix(node, source, ctx))

    def _fix(self, node: ast.Call, source: ast.expr, ctx: Context) -> Fix | None:
        keywords = {keyword.arg: keyword.value for keyword in node.keywords}
        if not set(keywords) <= _FIXABLE_KEYWORDS or "#" in ctx.text(node):
            return None
        text = receiver_text(ctx, source) + ".detach().clone()"
        device, dtype = keywords.get("device"), keywords.get("dtype")
        if device is not None and dtype is not None:
            text += f".to(device={ctx.text(device)}, dtype={ctx.text(dtype)})"
        elif device is not None or dtype is not None:
            text += f".to({ctx.text(device or dtype)})"  # type: ignore[arg-type]
        requires_grad = keywords.get("requires_grad")
        if requires_grad is not None and not (isinstance(requires_grad, ast.Constant) and requires_grad.value is False):
            text += f".requires_grad_({ctx.text(requires_grad)})"
        # A parameter known as a tensor only from its annotation may be an int at run time.
        applicability = Applicability.UNSAFE if only_declared(source, ctx) else Applicability.SAFE
        return make_fix(applicability, "Use `.detach().clone()`", Edit(ctx.start(node), ctx.end(node), text))


def _kept_on_self(source: ast.Attribute, ctx: Context) -> bool:
    """``self.temperature`` that the class binds to an ``nn.Parameter``: known from the store, not read off a tensor
    (other values kept on ``self`` may be annotations or data its bases set, which a guard may check first)."""
    return (
        isinstance(source.value, ast.Name) and source.value.id == "self" and Fact.SELF in ctx.value(source.value).facts
        and Fact.PARAMETER in ctx.value(source).facts
    )


def _callers_pass_no_tensor(name: str, call: ast.Call, ctx: Context) -> bool:
    """``name`` is a parameter, not rebound before ``call``, whose every caller is in the file, and none
    is seen passing a tensor.

    Then the callers, not a `Tensor` annotation, say what comes in (`torch.tensor(mean)` of a
    config's list of floats, annotated `Tensor`).
    """
    summary = ctx.facts.caller_summaries.get(id(ctx.state.function))
    arguments = getattr(summary, "arguments", None)
    if arguments is None or name not in arguments or arguments[name].kind is Kind.TENSOR or not ctx.scope.is_parameter(name):
        return False
    scope = ctx.scope
    own = {binding.position for binding in scope.bindings.get(name, ()) if binding.value is not None and _within(call, binding.value)}
    at = (call.lineno, call.col_offset)
    return not any((store.lineno, store.col_offset) < at and (store.lineno, store.col_offset) not in own for store in scope.stores(name))


# Functions that accept only a NumPy array: a value given to one is an array, whatever its annotation says.
_ARRAY_ONLY = frozenset({"torch.from_numpy"})


def _used_as_an_array(name: str, ctx: Context) -> bool:
    """The parameter ``name`` (or a slice of it, also unpacked into other names) goes to ``torch.from_numpy``
    in its function: the code itself says it is an array (``torch.from_numpy(x_val)`` of ``x_train[n:]``), so a
    `Tensor` annotation is wrong there."""
    function = ctx.state.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    derived = {name}
    for node in walk(function):
        if not isinstance(node, ast.Assign):
            continue
        pairs: list[tuple[ast.expr, ast.expr]] = []
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) and len(target.elts) == len(node.value.elts):
                pairs.extend(zip(target.elts, node.value.elts))
            else:
                pairs.append((target, node.value))
        for target, value in pairs:
            if isinstance(target, ast.Name) and _root_name(value) == name:
                derived.add(target.id)
    return any(
        isinstance(node, ast.Call) and node.args and ctx.facts.qualname(node.func) in _ARRAY_ONLY and _root_name(node.args[0]) in derived
        for node in walk(function)
    )


def _parameter_not_rebound(name: str, call: ast.Call, ctx: Context) -> bool:
    at = (call.lineno, call.col_offset)
    return ctx.scope.is_parameter(name) and not any((store.lineno, store.col_offset) < at for store in ctx.scope.stores(name))


def _root_name(node: ast.expr) -> str | None:
    """``x`` of ``x[a:b]``, ``x.T``, ``x.reshape(...)``."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr == "T":
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("reshape", "astype", "copy"):
            node = node.func.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _declared_as_maybe_not_tensor(name: str, call: ast.Call, ctx: Context) -> bool:
    """A parameter annotated ``Tensor | NDArray`` (a union with more than a tensor) and never rebound.

    The annotation says it may be a tensor; `.detach()` would raise AttributeError on the other members.
    """
    function = ctx.state.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]
    annotation = next((argument.annotation for argument in arguments if argument.arg == name), None)
    if annotation is None:
        return False
    # `u = torch.tensor(u)` does not count as a rebinding before the conversion.
    scope = ctx.scope
    own = {binding.position for binding in scope.bindings.get(name, ()) if binding.value is not None and _within(call, binding.value)}
    if any((store.lineno, store.col_offset) not in own for store in scope.stores(name)):
        return False
    members = [member for member in _union_members(annotation) if not (isinstance(member, ast.Constant) and member.value is None)]
    return len(members) > 1  # `Tensor | None` is a tensor wherever it is converted


def _within(inner: ast.AST, outer: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (inner.lineno, inner.col_offset) and (  # type: ignore[attr-defined]
        inner.end_lineno, inner.end_col_offset) <= (outer.end_lineno, outer.end_col_offset)  # type: ignore[attr-defined]


def _union_members(annotation: ast.expr) -> list[ast.expr]:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return [annotation]
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return [*_union_members(annotation.left), *_union_members(annotation.right)]
    if _is_union(annotation):
        inner = annotation.slice  # type: ignore[attr-defined]
        return [member for part in (inner.elts if isinstance(inner, ast.Tuple) else [inner]) for member in _union_members(part)]
    return [annotation]


def _is_union(annotation: ast.expr) -> bool:
    if not isinstance(annotation, ast.Subscript):
        return False
    container = annotation.value
    name = container.attr if isinstance(container, ast.Attribute) else getattr(container, "id", "")
    return name in ("Union", "Optional")
