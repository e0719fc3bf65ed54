from __future__ import annotations

import ast

from flake8_tensorconv import arrays
from flake8_tensorconv.findings import Applicability
from flake8_tensorconv.rules._array_conversion import (
    TRIGGERS,
    ArrayConversion,
    append_call,
    array_conversion,
    function_text,
    negative_step_subscript,
)
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.values import Kind

# NumPy calls that always return a view with a negative stride (rot90 only for k % 4 != 0,
# which the inference checks before it records the fact).
_FLIP_CALLS = frozenset({"numpy.flip", "numpy.fliplr", "numpy.flipud", "numpy.rot90"})


class NegativeStrideArray(Rule):
    """
    ## What it does
    Flags `torch.from_numpy(x)`, `torch.as_tensor(x)`, `torch.asarray(x)`, `torch.tensor(x)`
    and `torch.Tensor(x)` where `x` is visibly a NumPy view with a negative stride:
    `a[::-1]`, `m[:, ::-1]`, `img[..., ::-1]`, `np.flip`, `np.fliplr`, `np.flipud`,
    `np.rot90` (k not a multiple of 4), `np.sort(a)[::-1]`, or a variable holding one.

    ## Why is this bad?
    Tensors cannot have negative strides, and torch does not copy for you: every one of
    these conversions, `torch.tensor` included, raises
    `ValueError: At least one stride in the given numpy array is negative, and tensors
    with negative strides are not currently supported. (You can probably work around
    this by making a copy of your array  with array.copy().)`.
    The BGR -> RGB idiom `img[..., ::-1]` and a descending `np.sort(a)[::-1]` hit it
    all the time. `np.asarray(x)` does not help: it returns the same view.

    ## Example
    ```python
    rgb = bgr[..., ::-1]
    t = torch.from_numpy(rgb)
    ```

    ## Use instead
    ```python
    t = torch.from_numpy(rgb.copy())
    ```

    ## Fix safety
    The fix appends `.copy()` to the array argument (not `np.ascontiguousarray`,
    which turns a 0-d array into a 1-d one). It is safe where the argument itself is
    the negative-step slice or the `np.flip`/`np.fliplr`/`np.flipud`/`np.rot90` call:
    the original raises on every non-empty array, so no working behaviour changes.
    Where the view reaches the conversion through a variable or another view, the fix
    is unsafe: it then rests on the inference's reading of every path to that point.

    ## Known problems
    An empty array (`np.zeros(0)[::-1]`) has stride 0 and converts without error; the
    fixed code then converts an empty copy instead of the empty view (same values).
    """

    code = "TCV203"
    name = "negative-stride-array"
    message = (
        "`{function}()` of a negative-stride NumPy view (`[::-1]`, `np.flip`, `np.rot90`) raises ValueError: "
        "tensors cannot have negative strides; convert a `.copy()` of the array"
    )
    triggers = TRIGGERS
    silent_on_literal_data = True
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        conversion = array_conversion(node, ctx)
        if conversion is None or not _negative_stride(conversion, ctx):
            return
        applicability = Applicability.SAFE if _makes_the_view(conversion.array, ctx) else Applicability.UNSAFE
        fix = make_fix(applicability, "Convert a `.copy()` of the array", *append_call(conversion.array, "copy()", ctx))
        ctx.report(self, node, self.message.format(function=function_text(conversion, ctx)), fix)


def _negative_stride(conversion: ArrayConversion, ctx: Context) -> bool:
    if conversion.has(arrays.NEGATIVE_STRIDE):
        return True
    # `torch.from_numpy` accepts nothing but an ndarray, and `x[::-1]` of an ndarray is always reversed.
    array = conversion.array
    return (
        conversion.is_from_numpy
        and negative_step_subscript(array)
        and ctx.value(array.value).kind is Kind.UNKNOWN  # type: ignore[attr-defined]
    )


def _makes_the_view(array: ast.expr, ctx: Context) -> bool:
    """The argument itself is the reversing slice or flip call (not a variable holding one)."""
    if isinstance(array, ast.Call):
        return ctx.qualname(array.func) in _FLIP_CALLS
    return negative_step_subscript(array)
