from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.rules._legacy_constructor import (
    KEEPS,
    TRIGGERS,
    UNKNOWN_SOURCE,
    DataCasts,
    explicit_cast_fix,
    keep_integers_fix,
)
from flake8_tensorconv.rules.base import Context, Rule

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})


class LegacyConstructorModernise(Rule):
    """
    ## What it does
    Flags `torch.Tensor(x)` and the typed legacy constructors (`torch.FloatTensor`,
    `torch.LongTensor`, ...) given a NumPy array or a sequence where the cast loses
    nothing visible: bools, integers into a wider integer type, float64 into
    float32, integers into a float type the author named (`torch.FloatTensor` of
    an int32 0/1 feature matrix), a uint8 mask into `torch.BoolTensor` (uint8 was
    torch's mask dtype), integer data divided at once (`1.0 / torch.Tensor(counts)`),
    number literals the dtype holds exactly (also as `np.array([[-1, 0], [0, 1]])` in the call),
    floats that are whole numbers by construction (zeros written with loop
    counters) into an integer type, floats read from a file
    (`np.loadtxt`) into an integer type (whole or not, the file decides), and
    data whose dtype is not visible (also `torch.Tensor(ids).long()`, where the
    integers are probably small enough for float32). Opt-in: it modernises the spelling; casts that can lose values are
    TCV201's.

    ## Why is this bad?
    The legacy constructors are deprecated in spirit: their dtype is implicit
    (`torch.Tensor` follows `torch.set_default_dtype`), they read an integer
    argument as a size (see TCV202), and for float32 input `torch.Tensor(arr)`
    shares the array's memory where the name suggests a copy: a later write to
    the array shows in the tensor.

    ## Example
    ```python
    mask = torch.FloatTensor([True, False])
    ```

    ## Use instead
    ```python
    mask = torch.as_tensor([True, False], dtype=torch.float32)
    ```

    ## Fix safety
    Safe: `torch.as_tensor(x, dtype=...)` with the constructor's dtype (the
    default dtype for `torch.Tensor`) is the exact drop-in, aliasing included.
    Where the result is cast straight back to integers (`torch.Tensor(ids).long()`)
    integers were meant, and the fix is `torch.tensor(ids).long()`: unsafe,
    because integers above `2**24` then keep their values.
    """

    code = "TCV211"
    name = "legacy-constructor-modernise"
    message = (
        "`{name}(...)` is a legacy constructor with an implicit cast to {dtype}; "
        "`torch.as_tensor(..., dtype=...)` says what it does"
    )
    back_to_integers_message = (
        "`{name}(...)` sends its data through {dtype} before the cast back to integers: integers above "
        "2**24 would be rounded; `torch.tensor(...)` keeps them exact"
    )
    triggers = TRIGGERS
    default_enabled = False
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._casts = DataCasts()

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        found = self._casts.of(node, ctx)
        if found is None:
            return
        call, cast = found
        if cast.verdict not in (KEEPS, UNKNOWN_SOURCE):
            return  # values can be lost: TCV201 reports it
        dtype = "the default dtype" if call.short_name == "Tensor" else cast.target_dtype
        message = self.message.format(name=ctx.text(node.func), dtype=dtype)
        fix = explicit_cast_fix(call, ctx)
        if cast.back_to_integers and cast.target_dtype in _FLOATS and call.torch_alias is not None:
            # `torch.Tensor(ids).long()`: integers were meant; through float32 those above 2**24 are rounded.
            message = self.back_to_integers_message.format(name=ctx.text(node.func), dtype=cast.target_dtype)
            fix = keep_integers_fix(call, ctx)
        ctx.report(self, node, message, fix)
