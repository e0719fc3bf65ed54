from __future__ import annotations

import ast

from flake8_tensorconv import arrays
from flake8_tensorconv.rules._array_conversion import TRIGGERS, array_conversion, function_text
from flake8_tensorconv.rules.base import Context, Rule

# What to convert to, by the dtype torch rejects (the choice is the user's, so there is no fix).
_REMEDIES = {
    "object": "`.astype(np.float32)` (or another numeric dtype) if it holds numbers",
    "str_": "parse the strings to numbers (`.astype(np.float32)`) or encode them as integer ids",
    "bytes_": "decode the bytes (`np.frombuffer(...)`) or map them to integer ids",
    "datetime64": "`.astype(np.int64)` (ticks since the epoch)",
    "timedelta64": "`.astype(np.int64)` (ticks)",
    "longdouble": "`.astype(np.float64)` (rounds to double precision)",
    "clongdouble": "`.astype(np.complex128)` (rounds to double precision)",
    "void": "select a field (`x['name']`) or use `numpy.lib.recfunctions.structured_to_unstructured`",
    "structured": "select a field (`x['name']`) or use `numpy.lib.recfunctions.structured_to_unstructured`",
}
_DTYPE_NAMES = {"structured": "a structured dtype", "void": "a structured dtype"}


class UnsupportedArrayDtype(Rule):
    """
    ## What it does
    Flags a NumPy -> torch conversion (`torch.from_numpy`, `torch.as_tensor`,
    `torch.asarray`, `torch.tensor`, `torch.Tensor`) of an array whose dtype torch does
    not have, visibly: `dtype=object`, strings (`np.array(["a", "b"])`, `dtype=str`,
    `"U10"`), bytes, `datetime64`/`timedelta64`, `np.longdouble`, structured dtypes
    (a list or dict of fields, `"f4,i4"`); and of a masked array (`np.ma.*`).

    ## Why is this bad?
    torch converts only bool, the integer, float16/32/64 and complex64/128 dtypes.
    Everything else raises, whatever the conversion and even with `dtype=`:
    `TypeError: can't convert np.ndarray of type numpy.object_. The only supported
    types are: float64, float32, float16, complex64, complex128, int64, int32, int16,
    int8, uint64, uint32, uint16, uint8, and bool.` (`numpy.str_`, `numpy.datetime64`,
    `numpy.longdouble`, `numpy.void`...).
    A masked array is worse: it converts without a word and the mask is dropped, so
    the masked-out entries (often garbage or fill values) become ordinary data.

    ## Example
    ```python
    stamps = np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]")
    t = torch.from_numpy(stamps)

    readings = np.ma.masked_invalid(raw)
    t = torch.as_tensor(readings)
    ```

    ## Use instead
    ```python
    t = torch.from_numpy(stamps.astype(np.int64))  # days since the epoch

    t = torch.as_tensor(readings.filled(0.0))
    valid = torch.as_tensor(~np.ma.getmaskarray(readings))  # keep the mask if it matters
    ```

    ## Fix safety
    There is no fix: the target dtype, or the fill value for masked entries, is a
    choice the code has to make. The message names the usual options.
    """

    code = "TCV210"
    name = "unsupported-array-dtype"
    message = (
        "`{function}()` of a NumPy array of {dtype} raises TypeError: torch has no such dtype; "
        "convert it first: {remedy}"
    )
    masked_message = (
        "`{function}()` of a masked array silently drops the mask: masked entries become ordinary values; "
        "convert `x.filled(value)` and pass the mask (`np.ma.getmaskarray(x)`) separately if it matters"
    )
    triggers = TRIGGERS
    silent_on_literal_data = True

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        conversion = array_conversion(node, ctx)
        if conversion is None:
            return
        function = function_text(conversion, ctx)
        dtype = conversion.ndarray_dtype
        if dtype in arrays.UNSUPPORTED_DTYPES:
            name = _DTYPE_NAMES.get(dtype, f"dtype {dtype}")
            ctx.report(self, node, self.message.format(function=function, dtype=name, remedy=_REMEDIES[dtype]))
        elif conversion.has(arrays.MASKED):
            ctx.report(self, node, self.masked_message.format(function=function))
