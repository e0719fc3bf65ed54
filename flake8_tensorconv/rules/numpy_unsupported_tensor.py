from __future__ import annotations

import ast
from typing import NamedTuple

from flake8_tensorconv.findings import Applicability
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix
from flake8_tensorconv.values import Fact, Kind, Value

_COMPLEX_DTYPES = frozenset({"complex32", "complex64", "complex128"})


class Problem(NamedTuple):
    what: str  # how the message names the tensor
    error: str  # what `.numpy()` raises
    cure: str  # the call inserted before `.numpy()`
    effect: str  # what the cure does


_SPARSE = Problem("a sparse tensor", "TypeError", "to_dense", "convert it to a dense tensor")
_CONJ = Problem("a conjugate view (`.conj()`, `.mH`, `.adjoint()`)", "RuntimeError", "resolve_conj", "materialize it")
_NEG = Problem("a negative view (`.conj().imag`)", "RuntimeError", "resolve_neg", "materialize it")
# dtype -> the lossless conversion to a dtype NumPy has.
_DTYPE_CURES = {
    "bfloat16": "float",
    "float8_e4m3fn": "float",
    "float8_e5m2": "float",
    "float8_e4m3fnuz": "float",
    "float8_e5m2fnuz": "float",
    "float8_e8m0fnu": "float",
    "complex32": "cfloat",
}


class NumpyUnsupportedTensor(Rule):
    """
    ## What it does
    Flags `.numpy()` on a tensor that NumPy cannot represent: a bfloat16,
    float8 or complex32 tensor (`.bfloat16()`, `dtype=torch.bfloat16`), a sparse
    tensor (`.to_sparse()`), or a lazy conjugate / negative view of a complex
    tensor (`.conj()`, `.mH`, `.adjoint()`, `.conj().imag`). A reinterpreting
    view to another dtype (`t.view(torch.int16)` of a bfloat16 tensor) has the
    new dtype, so it is not reported when NumPy has that dtype.

    ## Why is this bad?
    The call always raises. NumPy has no bfloat16, float8 or complex32:
    `TypeError: Got unsupported ScalarType BFloat16`. A sparse tensor gives
    `TypeError: can't convert Sparse layout tensor to numpy. Use
    Tensor.to_dense() first.` A conjugate view gives `RuntimeError: Can't call
    numpy() on Tensor that has conjugate bit set. Use
    tensor.resolve_conj().numpy() instead.` (the negative bit likewise).
    `numpy(force=True)` helps with the views only.

    ## Example
    ```python
    embedding = model(batch).detach().bfloat16()
    values = embedding.numpy()
    ```

    ## Use instead
    ```python
    values = embedding.float().numpy()  # bfloat16 -> float32 is exact
    ```

    ## Fix safety
    Safe: the original raises on every run, and the fix makes it work:
    `.float()` (bfloat16 and float8 to float32) and `.cfloat()` (complex32 to
    complex64) are exact, `.to_dense()` keeps every value, `.resolve_conj()` /
    `.resolve_neg()` compute the values the view stands for. The array is a
    copy, not a view of the tensor (there was no array before). `.conj()` of a
    real tensor is a no-op that `.numpy()` accepts, so a conjugate is reported
    only when the tensor is known to be complex.
    """

    code = "TCV107"
    name = "numpy-unsupported-tensor"
    message = (
        "`.numpy()` on a bfloat16/float8/complex32, sparse or conjugate/negative-view tensor always raises; "
        "convert it first (`.float()`, `.to_dense()`, `.resolve_conj()`, `.resolve_neg()`)"
    )
    triggers = (".numpy(",)
    fix_safety = "safe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "numpy") or node.args:
            return
        force = None
        for keyword in node.keywords:
            if keyword.arg != "force" or not isinstance(keyword.value, ast.Constant):
                return
            force = keyword.value.value
        value = ctx.value(func.value)
        if value.kind is not Kind.TENSOR:
            return
        problem = _problem(value, forced=bool(force))
        if problem is None:
            return
        message = (
            f"`.numpy()` on {problem.what} raises {problem.error}; "
            f"call `.{problem.cure}()` first to {problem.effect}"
        )
        fix = make_fix(
            Applicability.SAFE,
            f"Insert `.{problem.cure}()` before `.numpy()`",
            insertion(ctx.attribute_name_start(func), f"{problem.cure}()."),
        )
        ctx.report(self, node, message, fix)


def _problem(value: Value, forced: bool) -> Problem | None:
    """What makes ``.numpy()`` raise, in the order torch checks (layout, conj, neg, dtype)."""
    if Fact.SPARSE in value.facts:
        return _SPARSE
    if not forced and Fact.CONJ in value.facts and value.dtype in _COMPLEX_DTYPES:
        return _CONJ
    if not forced and Fact.NEG in value.facts:
        return _NEG  # the inference marks `.imag` of a conjugate view only for complex tensors
    cure = _DTYPE_CURES.get(value.dtype or "")
    if cure is None:
        return None
    name = "a " + (value.dtype or "")
    effect = "convert it exactly to float32" if cure == "float" else "convert it exactly to complex64"
    return Problem(f"{name} tensor (NumPy has no such dtype)", "TypeError", cure, effect)
