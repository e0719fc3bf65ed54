from __future__ import annotations

import ast

from flake8_tensorconv import arrays
from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules._array_conversion import (
    TRIGGERS,
    ArrayConversion,
    append_call,
    array_conversion,
    function_text,
    is_simple_reference,
)
from flake8_tensorconv.rules.base import Context, Rule, make_fix

# Multi-byte dtypes torch converts once they are in native order: ``np.<name>`` is that dtype.
_NUMERIC_DTYPES = frozenset(
    "float16 float32 float64 complex64 complex128 int16 int32 int64 uint16 uint32 uint64".split()
)


class NonNativeByteOrder(Rule):
    """
    ## What it does
    Flags a NumPy -> torch conversion (`torch.from_numpy`, `torch.as_tensor`,
    `torch.asarray`, `torch.tensor`, `torch.Tensor`) of an array whose dtype visibly
    has a non-native (big-endian) byte order: `dtype=">f4"`, `np.frombuffer(data, ">i8")`,
    `np.dtype(">f8")`, `.newbyteorder()`, `.view(">u2")`.

    ## Why is this bad?
    Big-endian data is common in file formats (FITS, network protocols, MATLAB and
    legacy binary dumps), but torch only has native byte order. Every conversion,
    `torch.tensor` included, raises `ValueError: given numpy array has byte order
    different from the native byte order. Conversion between byte orders is currently
    not supported.`

    ## Example
    ```python
    samples = np.frombuffer(payload, dtype=">f4")
    t = torch.from_numpy(samples)
    ```

    ## Use instead
    ```python
    t = torch.from_numpy(samples.astype(samples.dtype.newbyteorder("=")))
    ```

    ## Fix safety
    Safe: the original raises on every array with that dtype, so the fix changes no
    working behaviour. It appends `.astype(x.dtype.newbyteorder("="))` (the same dtype
    in native order, values unchanged) when `x` is a name or attribute; for a longer
    expression, which must not run twice, it appends `.astype(np.float32)` (the dtype
    the inference knows). Without either there is no fix.

    ## Known problems
    One-byte dtypes (`">u1"`, `">i1"`, `">?"`) have no byte order and convert fine;
    they are not flagged.
    """

    code = "TCV209"
    name = "non-native-byte-order"
    message = (
        "`{function}()` of a big-endian (non-native byte order) NumPy array raises ValueError: torch supports "
        "only native byte order; convert it with `.astype(...)` to the same dtype in native order first"
    )
    triggers = TRIGGERS
    silent_on_literal_data = True
    fix_safety = "safe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        conversion = array_conversion(node, ctx)
        if conversion is None or not conversion.has(arrays.NON_NATIVE):
            return
        edits = _native_order_edits(conversion, ctx)
        fix = make_fix(Applicability.SAFE, "Convert the array to native byte order", *edits) if edits else None
        ctx.report(self, node, self.message.format(function=function_text(conversion, ctx)), fix)


def _native_order_edits(conversion: ArrayConversion, ctx: Context) -> tuple[Edit, ...]:
    array = conversion.array
    if is_simple_reference(array):
        return append_call(array, f'astype({ctx.text(array)}.dtype.newbyteorder("="))', ctx)
    numpy = _numpy_alias(ctx)
    if conversion.ndarray_dtype in _NUMERIC_DTYPES and numpy is not None:
        return append_call(array, f"astype({numpy}.{conversion.ndarray_dtype})", ctx)
    return ()


def _numpy_alias(ctx: Context) -> str | None:
    """How the file spells the numpy module (``np``, ``numpy``), if it imports it whole."""
    for name, qualname in ctx.facts.aliases.items():
        if qualname == "numpy" and name not in ctx.state.env:
            return name
    return None
