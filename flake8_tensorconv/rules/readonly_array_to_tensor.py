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
)
from flake8_tensorconv.rules.base import Context, Rule, make_fix


class ReadonlyArrayToTensor(Rule):
    """
    ## What it does
    Flags `torch.from_numpy(x)`, `torch.as_tensor(x)` and `torch.asarray(x)` where `x` is
    provably a read-only NumPy array: `np.frombuffer` of a `bytes` object,
    `np.broadcast_to`, `sliding_window_view`, `np.memmap(..., mode="r")`,
    `np.load(..., mmap_mode="r")`, or an array after `x.setflags(write=False)`.

    ## Why is this bad?
    These conversions share the array's memory, and torch has no read-only tensors.
    The first conversion in a process warns `UserWarning: The given NumPy array is not
    writable, and PyTorch does not support non-writable tensors. This means writing to
    this tensor will result in undefined behavior...`; later ones are silent. Any
    in-place operation on the tensor then writes into memory that must not change:
    it mutates the immutable `bytes` object behind `np.frombuffer`, changes every row
    of a `broadcast_to` view at once (stride 0), and kills the process with SIGSEGV
    on a read-only memmap.

    ## Example
    ```python
    pixels = np.frombuffer(bytes(payload), dtype=np.uint8)
    t = torch.from_numpy(pixels)
    ```

    ## Use instead
    ```python
    t = torch.from_numpy(pixels.copy())
    ```

    ## Fix safety
    Unsafe: `.copy()` gives the tensor its own writable memory, so the tensor no longer
    shares memory with the array (no zero-copy, more memory), and writes through it no
    longer reach the buffer (which is the point, but observable). `torch.tensor(x)`
    already copies and is not flagged.

    ## Known problems
    `np.ascontiguousarray(x)` is not a cure: for an already contiguous read-only array
    it returns the same array, and the conversion still warns.
    `torch.Tensor(x)` of a read-only float32 array shares and warns too; it is left to
    TCV201, whose fix (`torch.as_tensor(x, dtype=...)`) this rule then reports.
    """

    code = "TCV208"
    name = "readonly-array-to-tensor"
    message = (
        "`{function}()` of a read-only NumPy array warns and shares memory torch treats as writable: an in-place "
        "write through the tensor mutates the buffer (a `bytes` object, every broadcast row) or crashes "
        "(read-only memmap); convert a `.copy()`"
    )
    triggers = TRIGGERS
    silent_on_literal_data = True
    fix_safety = "unsafe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        conversion = array_conversion(node, ctx)
        if conversion is None or not conversion.zero_copy or not conversion.has(arrays.READONLY):
            return
        if _raises_anyway(conversion):
            return
        if conversion.qualname == "torch.asarray" and any(k.arg == "dtype" for k in node.keywords):
            return  # torch.asarray copies for a new dtype without going through the warning
        fix = make_fix(Applicability.UNSAFE, "Convert a `.copy()` of the array", *append_call(conversion.array, "copy()", ctx))
        ctx.report(self, node, self.message.format(function=function_text(conversion, ctx)), fix)


def _raises_anyway(conversion: ArrayConversion) -> bool:
    """The conversion fails for another reason (TCV203/209/210), whose fix copies the array anyway."""
    return (
        conversion.has(arrays.NEGATIVE_STRIDE)
        or conversion.has(arrays.NON_NATIVE)
        or conversion.ndarray_dtype in arrays.UNSUPPORTED_DTYPES
    )
