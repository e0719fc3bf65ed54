from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.rules._legacy_constructor import (
    CHANGES,
    LOSSY,
    TRIGGERS,
    Cast,
    DataCasts,
    explicit_cast_fix,
    keep_integers_fix,
)
from flake8_tensorconv.rules.base import Context, Rule

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings
    from flake8_tensorconv.rules._legacy_constructor import LegacyCall

# The largest integer each float dtype holds exactly: above it, integers are rounded.
_EXACT_INTEGERS = {"float16": "2**11", "bfloat16": "2**8", "float32": "2**24", "float64": "2**53"}


class LegacyConstructorCast(Rule):
    """
    ## What it does
    Flags `torch.Tensor(x)` and the typed legacy constructors (`torch.FloatTensor`,
    `torch.LongTensor`, `torch.ByteTensor`, ...) where the cast they make changes
    what the data is or can lose values: integer data into a float tensor
    (`torch.Tensor(labels)`), floats into an integer type (`torch.LongTensor` of
    floats), integers into a narrower integer type (`torch.ByteTensor` of int64),
    floats into a 16-bit float, and number literals the dtype cannot hold
    (`torch.FloatTensor([1e-50])`). Data whose dtype is not visible counts as
    integer data when the result is cast straight back to integers
    (`torch.Tensor(indices).long()`). Casts that lose nothing (bools, exact
    literals, integers into a wider type, float64 into float32, floats that are
    whole numbers by construction such as `np.hstack([np.zeros(n), np.ones(m)])`
    or `np.eye(n)` into an integer type (also an item of the tuple a function of the
    file returns, `X, y = make_data(n)`), also where every in-place write stores
    whole numbers (`relative[labels == c] = i` with `i` an `enumerate` or `range`
    counter), 0 and 1 into `torch.BoolTensor` (zeros, ones, an identity, or an
    `np.empty` array that only ever receives comparison results:
    `local_map[i, j] = np.abs(i - j) > width`; other whole numbers such as
    counts stay here, `2` becomes `True`), float literals below the float
    dtype's normal range that it still holds to every digit written (float32's
    subnormal `5.6052e-45`, as a float32 tensor prints it), a uint8 mask into
    `torch.BoolTensor`, an array of integer literals
    written in the call (`torch.Tensor(np.array([[-1, 0], [0, 1]]))`, a display
    written through NumPy; a named array such as `labels` stays here),
    integers cast straight back that are whole numbers by construction
    (`torch.Tensor(np.ones(n, dtype=int)).long()`, or a literal carried through
    conversions and casts: `level = torch.Tensor((10,)).long()` and then
    `torch.Tensor((level,)).long()`), integer data divided at once,
    `1.0 / torch.Tensor(counts)`, where true division makes floats anyway) are
    TCV211's, an opt-in rule. So are floats read from a file (`np.loadtxt`,
    `np.genfromtxt`, `np.load`, a column of one) into an integer type: whether
    they are whole numbers (class ids written as floats) is the file's, not
    visible; also written into an array of zeros (`labels = np.zeros(n)`, then
    `labels[train_index] = y_train` of an `np.load` archive, also returned by a
    function of the file that loads it). `np.full`'s dtype is its fill value's: with a fill of unknown type
    (`np.full(shape, pad_id)`) the dtype is not visible.

    ## Why is this bad?
    The legacy constructors cast silently: `torch.Tensor` to the default float
    dtype, the typed ones to theirs. Integer labels become float32, `2**53 + 1`
    becomes `9007199254740992` (in float32 everything above `2**24` is rounded),
    `1.7` becomes `1` in a `LongTensor`, `256` becomes `0` in a `ByteTensor`,
    `1e-50` becomes `0`, `2` becomes `True` in a `BoolTensor`; no warning is emitted.

    ## Example
    ```python
    labels = np.array([2**53 + 1, 7])
    t = torch.Tensor(labels)
    ```

    ## Use instead
    ```python
    t = torch.tensor(labels)  # keep the dtype (int64), probably what was meant
    t = torch.as_tensor(labels, dtype=torch.get_default_dtype())  # or the same cast, now visible
    ```

    ## Fix safety
    Safe: `torch.as_tensor(x, dtype=torch.get_default_dtype())` (or the typed
    constructor's dtype) is the exact drop-in, measured on every NumPy dtype,
    contiguous, strided and read-only inputs, aliasing included. It keeps the
    cast, so the message says when `torch.tensor(x)` (which keeps the dtype) is
    probably what was meant. Where the result is cast straight back to integers
    (`torch.Tensor(ids).long()`) integers were meant, and the fix is
    `torch.tensor(ids).long()`: unsafe, because integers above `2**24` now keep
    their values. The fix is offered only when `x` is visibly an array or a
    sequence: with an integer argument the legacy call allocates that many
    elements (see TCV202).
    """

    code = "TCV201"
    name = "legacy-constructor-cast"
    message = "`{name}(...)` {what}"
    triggers = TRIGGERS
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._casts = DataCasts()

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        found = self._casts.of(node, ctx)
        if found is None:
            return
        call, cast = found
        if cast.verdict not in (LOSSY, CHANGES):
            return  # nothing is lost: TCV211 (opt-in) modernises these
        message = self.message.format(name=ctx.text(node.func), what=_what_happens(cast, call))
        fix = explicit_cast_fix(call, ctx)
        if cast.verdict == CHANGES and cast.back_to_integers and call.torch_alias is not None:
            fix = keep_integers_fix(call, ctx)
        ctx.report(self, node, message, fix)


def _what_happens(cast: Cast, call: LegacyCall) -> str:
    source, target = cast.source_dtype, cast.target_dtype
    if cast.verdict == CHANGES:
        data = f"{source} data" if source else "integer data"
        limit = _EXACT_INTEGERS[target]
        if cast.back_to_integers:
            return (
                f"sends {data} through {target} before the cast back to integers: integers above {limit} are "
                "silently rounded; `torch.tensor(...)` keeps them exact (probably what was meant)"
            )
        return (
            f"silently turns {data} into {target} floats (integers above {limit} are rounded); if the integers "
            "were meant (labels, indices), use `torch.tensor(...)`, which keeps their dtype; "
            "`torch.as_tensor(..., dtype=...)` keeps the cast, visibly"
        )
    if source is None:
        loss = f"casts these literals to {target}, which does not hold them all: values are lost"
    elif target == "bool":
        loss = f"turns every nonzero {source} value into True (a 2 becomes True)"
    elif source in _EXACT_INTEGERS and target not in _EXACT_INTEGERS:
        loss = f"truncates {source} floats to {target}"
    elif source in _EXACT_INTEGERS:
        loss = f"rounds {source} to {target}, whose range and precision are much smaller: values are lost"
    elif source.startswith("complex"):
        loss = f"casts {source} data to {target}: values are lost"
    else:
        loss = f"wraps {source} values outside {target}'s range"
    return (
        f"silently {loss}; use `torch.tensor(...)` to keep the dtype or `torch.as_tensor(..., dtype=...)` "
        "to make the cast explicit"
    )
