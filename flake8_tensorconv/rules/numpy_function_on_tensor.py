from __future__ import annotations

import ast
import re

from flake8_tensorconv.findings import Applicability, Edit, Fix
from flake8_tensorconv.rules._numpy_call import device_risk, grad_risk
from flake8_tensorconv.rules._receivers import only_declared
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Kind

# NumPy reductions that hand a tensor to its own method with NumPy-only keywords
# (`t.sum(axis=None, dtype=None, out=None)`): always a TypeError. -> the tensor method.
_REDUCTIONS = {
    "sum": "sum", "mean": "mean", "prod": "prod", "any": "any", "all": "all",
    "max": "max", "amax": "max", "min": "min", "amin": "min", "std": "std", "var": "var",
}
# With an axis, NumPy's max/min are torch's amax/amin (`Tensor.max(dim)` returns values and indices).
_AXIS_METHODS = {"max": "amax", "min": "amin"}
# NumPy's std/var divide by N (ddof=0), torch's by N - 1 unless told.
_DDOF_METHODS = frozenset({"std", "var"})

# NumPy ufuncs -> the torch function computing the same thing on tensors.
_UNARY_UFUNCS = {
    **{name: name for name in (
        "isnan isinf isfinite signbit logical_not exp exp2 expm1 log log2 log10 log1p sqrt square abs "
        "sign sin cos tan sinh cosh tanh floor ceil trunc reciprocal"
    ).split()},
    "absolute": "abs", "fabs": "abs", "negative": "neg", "rint": "round",
    "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh",
}
# Binary ufuncs whose torch function also takes a Python number as the second operand.
_BINARY_UFUNCS = {
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "equal": "eq", "not_equal": "ne",
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "true_divide": "div",
    "power": "pow", "remainder": "remainder", "fmod": "fmod", "copysign": "copysign",
}
# ... and those whose torch function needs two tensors.
_TENSOR_PAIR_UFUNCS = {
    "maximum": "maximum", "minimum": "minimum", "fmax": "fmax", "fmin": "fmin", "arctan2": "atan2",
    "hypot": "hypot", "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
}
# Ufuncs with a boolean result: through NumPy the tensor comes back as uint8.
_BOOLEAN_UFUNCS = frozenset(
    "isnan isinf isfinite signbit logical_not logical_and logical_or logical_xor "
    "greater greater_equal less less_equal equal not_equal".split()
)
_UFUNCS = {**_UNARY_UFUNCS, **_BINARY_UFUNCS, **_TENSOR_PAIR_UFUNCS}
# Reductions right after a boolean ufunc that read its uint8 result as they would a bool one.
_REDUCED = re.compile(r"\.(?:any|all|sum)\(\s*\)")
# Casts right after a boolean ufunc: its 0/1 become what the cast of a bool result gives (`.bool()` is that result).
_CAST = re.compile(r"\.(?:bool|float|double|half|bfloat16|int|long|short|char|byte)\(\s*\)")
# A number literal multiplying the (parenthesised) call, before it or after it: `1 * np.isnan(x)`, `np.isnan(x) * 0.5`.
_NUMBER = r"(\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_TIMES_BEFORE = re.compile(r"(?<![-\w.])" + _NUMBER + r"\s*\*\s*\(*\s*$")
_TIMES_AFTER = re.compile(r"^\)*\s*\*\s*" + _NUMBER + r"(?![\w.(\[]|\s*\*\*)")
# Operators that bind the number before them tighter than to the call (`x / 2 * np.isnan(t)` multiplies by `x / 2`).
_BINDS_TIGHTER = ("*", "/", "%", "@")


# The start and end of a statement whose test is the call alone (`if not np.isnan(x):`, `assert np.isfinite(x)`).
_TEST_HEAD = re.compile(r"^\s*(?:if|elif|while|assert)\s+(?:not\s+)?\(?\s*$")
_TEST_TAIL = re.compile(r"^\s*\)?\s*(?::|,|$|#)")


class NumpyFunctionOnTensor(Rule):
    """
    ## What it does
    Flags NumPy reductions called on a tensor (`np.sum(t)`), NumPy ufuncs with a
    boolean result (`np.isnan(t)`), and other ufuncs on a tensor that may require
    grad or live on a GPU (`np.exp(model(x))`). The reductions are `np.sum`,
    `np.mean`, `np.max`, `np.min`, `np.std`, `np.var`, `np.prod`, `np.any`, `np.all`,
    `np.amax` and `np.amin`; the ufuncs are those with a torch counterpart
    (`np.isnan`, `np.exp`, `np.sqrt`, `np.greater`, `np.maximum`, ...). A float
    ufunc on a CPU tensor without grad (`np.sqrt(t.cpu())`) works, with NumPy 2's
    deprecation warning about torch's `__array_wrap__`, and is left alone; so is
    a boolean ufunc on such a tensor whose result only feeds `.any()`, `.all()`
    or `.sum()` at once (`np.isinf(pose).any()`), or is the whole test of an
    `if`, `elif`, `while` or `assert` (`if not np.isnan(loss.std()):`), which
    read 0/1 as they read `False`/`True`, and one whose result is used as
    numbers at once: cast (`np.isnan(x).bool()`, `.float()`, `.long()`...) or
    multiplied by a number that keeps 0/1 exact (`1 - 1 * np.isnan(x)`; a
    float, or an integer up to 255), which give what `torch.isnan` gives
    there: no uint8 mask is left. An identity or membership test is a Python
    bool whatever it compares (`np.all(p.grad is None)`, `np.logical_not(x in t)`):
    NumPy gets the bool, not a tensor.

    ## Why is this bad?
    A NumPy reduction hands a non-array to the object's own method with NumPy's
    keywords, `t.sum(axis=None, dtype=None, out=None)`, which torch rejects: the
    call always raises, e.g. `TypeError: sum() got an unexpected keyword argument
    'axis'` or `TypeError: max(): argument 'dim' must be int, not NoneType`.

    A ufunc converts the tensor through `.numpy()` (so it raises on tensors that
    require grad or live on a GPU) and wraps the result back into a tensor. A
    boolean result comes back as `torch.uint8`, not `torch.bool`: `t[np.isnan(t)]
    = 0` raises `RuntimeError: masked_fill_ only supports boolean masks, but got
    mask with dtype unsigned char`, and indexing with it is deprecated. With NumPy 2
    every such call also warns that torch's `__array_wrap__` will stop working.

    ## Example
    ```python
    t = torch.tensor([0.5, float("nan"), 2.0])
    total = np.sum(t)
    t[np.isnan(t)] = 0
    ```

    ## Use instead
    ```python
    total = t.sum()
    t[torch.isnan(t)] = 0
    ```

    ## Fix safety
    Reductions: safe, since the original always raises. The fix calls the tensor
    method with NumPy's meaning: `np.max(t, axis=1)` becomes `t.amax(dim=1)`
    (`t.max(1)` would return values and indices), `np.std(t)` becomes
    `t.std(correction=0)` (NumPy divides by N), `keepdims=` becomes `keepdim=`.
    The result is a tensor where the NumPy call would have returned a NumPy
    scalar or array. Calls with other keywords (`dtype=`, `out=`, `where=`) are
    reported without a fix.

    Ufuncs: unsafe. `torch.isnan(t)` returns `torch.bool` where the original
    returned `torch.uint8`, and torch's kernels can differ from NumPy's in the
    last bit (`np.exp` vs `torch.exp`). Binary ufuncs whose torch function needs
    two tensors (`np.maximum(t, 0)`) are fixed only when both operands are
    tensors. The fix needs `torch` imported under a name.
    """

    code = "TCV109"
    name = "numpy-function-on-tensor"
    message = "`{function}()` on a tensor always raises TypeError (NumPy calls the tensor's method with NumPy-only keywords); use `{fix}`"
    ufunc_message = "`{function}()` on a tensor {problem}; use `{fix}`"
    triggers = tuple(sorted(f"numpy.{name}(" for name in (*_REDUCTIONS, *_UFUNCS)))
    silent_on_literal_data = True
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        qualname = ctx.qualname(node.func)
        if qualname is None or not qualname.startswith("numpy.") or not node.args:
            return
        name = qualname[len("numpy."):]
        if name in _REDUCTIONS:
            if ctx.value(node.args[0]).kind is Kind.TENSOR:
                self._reduction(node, name, ctx)
        elif name in _UFUNCS and any(ctx.value(argument).kind is Kind.TENSOR for argument in node.args):
            # A float ufunc on a CPU tensor without grad works (NumPy 2 only warns about `__array_wrap__`):
            # reported where the result is a broken mask, or where the conversion can raise.
            if (name in _BOOLEAN_UFUNCS and not _reduced_at_once(node, ctx) and not _truth_test(node, ctx) and not _numbers_at_once(node, ctx)) or any(
                grad_risk(ctx.value(argument), ctx) or device_risk(ctx.value(argument)) for argument in node.args
            ):
                self._ufunc(node, name, ctx)

    # ------------------------------------------------------------------ reductions
    def _reduction(self, node: ast.Call, name: str, ctx: Context) -> None:
        method = _REDUCTIONS[name]
        call = self._method_call(node, method, ctx)
        receiver = _receiver_text(node.args[0], ctx)
        shown = call if call is not None else f"{receiver}.{method}()"
        message = self.message.format(function=ctx.text(node.func), fix=shown)
        fix = None
        if call is not None:
            applicability = Applicability.UNSAFE if only_declared(node.args[0], ctx) else Applicability.SAFE
            fix = make_fix(applicability, "Call the tensor's own method", Edit(ctx.start(node), ctx.end(node), call))
        ctx.report(self, node, message, fix)

    def _method_call(self, node: ast.Call, method: str, ctx: Context) -> str | None:
        """`t.amax(dim=1, keepdim=True)` for `np.max(t, axis=1, keepdims=True)`, or None if it has other arguments."""
        if any(isinstance(argument, ast.Starred) for argument in node.args) or len(node.args) > 2:
            return None
        arguments: list[str] = []
        axis = node.args[1] if len(node.args) == 2 else None
        correction = "0" if method in _DDOF_METHODS else None
        for keyword in node.keywords:
            if keyword.arg == "axis" and axis is None:
                axis = keyword.value
            elif keyword.arg == "keepdims":
                arguments.append(f"keepdim={ctx.text(keyword.value)}")
            elif keyword.arg == "ddof" and method in _DDOF_METHODS:
                correction = ctx.text(keyword.value)
            else:
                return None
        if axis is not None and not (isinstance(axis, ast.Constant) and axis.value is None):
            if method == "prod" and isinstance(axis, ast.Tuple):
                return None  # Tensor.prod reduces one dim at a time
            method = _AXIS_METHODS.get(method, method)
            arguments.insert(0, f"dim={ctx.text(axis)}")
        if correction is not None:
            arguments.append(f"correction={correction}")
        text = f"{_receiver_text(node.args[0], ctx)}.{method}({', '.join(arguments)})"
        return None if "#" in ctx.text(node) and "#" not in text else text

    # ------------------------------------------------------------------ ufuncs
    def _ufunc(self, node: ast.Call, name: str, ctx: Context) -> None:
        torch_name = _UFUNCS[name]
        torch_alias = _torch_alias(ctx)
        function = f"{torch_alias or 'torch'}.{torch_name}"
        if name in _BOOLEAN_UFUNCS:
            problem = "returns a uint8 tensor, not a bool one (masks fail), and raises on tensors that require grad or live on a GPU"
        else:
            problem = "goes through `.numpy()`: it raises on tensors that require grad or live on a GPU"
        message = self.ufunc_message.format(function=ctx.text(node.func), problem=problem, fix=f"{function}()")
        ctx.report(self, node, message, self._ufunc_fix(node, name, torch_alias, function, ctx))

    def _ufunc_fix(self, node: ast.Call, name: str, torch_alias: str | None, function: str, ctx: Context) -> Fix | None:
        if torch_alias is None or node.keywords or any(isinstance(argument, ast.Starred) for argument in node.args):
            return None
        arity = 1 if name in _UNARY_UFUNCS else 2
        if len(node.args) != arity:
            return None
        if name in _TENSOR_PAIR_UFUNCS and not all(ctx.value(argument).kind is Kind.TENSOR for argument in node.args):
            return None
        if arity == 2 and ctx.value(node.args[0]).kind is not Kind.TENSOR:
            return None  # torch.gt(0, t) wants the tensor first
        return make_fix(Applicability.UNSAFE, f"Use `{function}()`", Edit(ctx.start(node.func), ctx.end(node.func), function))


def _reduced_at_once(node: ast.Call, ctx: Context) -> bool:
    """``np.isinf(t).any()``: the uint8 result only feeds a reduction that reads 0/1 as bool does (no mask)."""
    source = ctx.source
    after = source.text[source.offset(ctx.end(node)) : source.offset(ctx.end(node)) + 16]
    return _REDUCED.match(after) is not None


def _numbers_at_once(node: ast.Call, ctx: Context) -> bool:
    """``np.isnan(t).bool()``, ``1 - 1 * np.isnan(t)``: the uint8 result is cast at once, or multiplied by a number that
    keeps its 0/1 exact (a float, or an integer that fits in uint8), so no uint8 mask is left; the cast of a bool result
    (``torch.isnan(t).float()``) and its product with the number give the same values."""
    source = ctx.source
    start, end = ctx.start(node), ctx.end(node)
    after = source.text[source.offset(end) : source.offset(end) + 24]
    if _CAST.match(after) is not None:
        return True
    before = source.line(start.line)[: start.column]
    factor = _TIMES_BEFORE.search(before)
    if factor is not None and before[: factor.start()].rstrip().endswith(_BINDS_TIGHTER):
        factor = None
    factor = factor or _TIMES_AFTER.match(source.line(end.line)[end.column :])
    if factor is None:
        return False
    number = factor.group(1)
    return any(mark in number for mark in ".eE") or int(number) <= 255


def _truth_test(node: ast.Call, ctx: Context) -> bool:
    """``if not np.isnan(t.std()):``: the whole test of an ``if`` / ``elif`` / ``while`` / ``assert``, read as one truth
    value (0/1 as False/True; a result of more than one element raises there as a bool one does): no mask is made."""
    source = ctx.source
    start, end = ctx.start(node), ctx.end(node)
    before = source.line(start.line)[: start.column]
    after = source.line(end.line)[end.column :]
    return _TEST_HEAD.match(before) is not None and _TEST_TAIL.match(after) is not None


def _receiver_text(node: ast.expr, ctx: Context) -> str:
    text = ctx.text(node)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
        return text
    return f"({text})"


def _torch_alias(ctx: Context) -> str | None:
    """The name `torch` itself is imported under in this file (`import torch as th` -> `th`)."""
    names = sorted(local for local, qualname in ctx.facts.aliases.items() if qualname == "torch" and local not in ctx.state.env)
    return "torch" if "torch" in names else next(iter(names), None)
