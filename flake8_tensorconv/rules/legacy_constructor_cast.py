from __future__ import annotations

import ast

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules._legacy_constructor import LEGACY_CONSTRUCTORS, TRIGGERS, converts_exactly, is_data_argument, legacy_call
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix


class LegacyConstructorCast(Rule):
    """
    ## What it does
    Flags `torch.Tensor(x)` and the typed legacy constructors (`torch.FloatTensor`,
    `torch.LongTensor`, `torch.ByteTensor`, ...) given a NumPy array or a sequence.
    A display of number literals that the cast keeps (`torch.LongTensor([0, 1])`,
    `torch.Tensor([0.5, -2])`) is left alone: nothing can be lost there.

    ## Why is this bad?
    The legacy constructors cast silently: `torch.Tensor` to the default float
    dtype, the typed ones to theirs. Integer labels become float32, `2**53 + 1`
    becomes `9007199254740992`, `1e-50` becomes `0`, `1e300` becomes `inf`,
    `LongTensor` of uint64 max gives `-1`; no warning is emitted. For float32
    input `torch.Tensor(arr)` aliases the array instead of copying it.

    ## Example
    ```python
    labels = np.array([2**53 + 1, 7])
    t = torch.Tensor(labels)
    ```

    ## Use instead
    ```python
    t = torch.as_tensor(labels, dtype=torch.get_default_dtype())  # the same cast, now visible
    t = torch.tensor(labels)  # or keep the dtype (int64) and copy
    ```

    ## Fix safety
    Safe: `torch.as_tensor(x, dtype=torch.get_default_dtype())` (or the typed
    constructor's dtype) is the exact drop-in, measured on every NumPy dtype,
    contiguous, strided and read-only inputs, aliasing included. It is offered
    only when `x` is visibly an array or a sequence: with an integer argument
    the legacy call allocates that many elements (see TCV202).
    """

    code = "TCV201"
    name = "legacy-constructor-cast"
    message = (
        "`{name}(...)` silently casts its data to {dtype} (values can be lost); "
        "use `torch.as_tensor(..., dtype=...)` to make the cast explicit or `torch.tensor(...)` to keep the dtype"
    )
    triggers = TRIGGERS
    fix_safety = "safe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = legacy_call(node, ctx)
        if call is None or len(node.args) != 1 or not is_data_argument(node.args[0], ctx):
            return
        if converts_exactly(node.args[0], LEGACY_CONSTRUCTORS[call.qualname]):
            return  # `torch.LongTensor([0, 1])`, `torch.Tensor([0.5, -1])`: the cast loses nothing
        dtype = "the default float dtype" if call.short_name == "Tensor" else call.dtype_expression().rpartition(".")[2]
        message = self.message.format(name=ctx.text(node.func), dtype=dtype)
        fix = None
        if call.torch_alias is not None:
            last = node.keywords[-1].value if node.keywords else node.args[-1]
            fix = make_fix(
                Applicability.SAFE,
                "Use `torch.as_tensor` with the dtype the constructor casts to",
                Edit(ctx.start(node.func), ctx.end(node.func), f"{call.torch_alias}.as_tensor"),
                insertion(ctx.end(last), f", dtype={call.dtype_expression()}"),
            )
        ctx.report(self, node, message, fix)
