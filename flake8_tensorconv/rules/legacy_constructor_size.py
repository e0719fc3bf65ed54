from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit
from flake8_tensorconv.rules._legacy_constructor import (
    LEGACY_CONSTRUCTORS,
    TRIGGERS,
    Initialisation,
    is_size_argument,
    legacy_call,
)
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix
from flake8_tensorconv.values import Kind

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings


def _sizes(arguments: list[ast.expr], ctx: Context) -> bool:
    """Integers, or (two or more of them) values that can only be sizes: data is one argument."""
    if all(is_size_argument(argument, ctx) for argument in arguments):
        return True
    return len(arguments) >= 2 and all(
        is_size_argument(argument, ctx)
        or (isinstance(argument, (ast.Name, ast.Attribute, ast.BinOp)) and ctx.value(argument).kind in (Kind.UNKNOWN, Kind.NUMBER))
        for argument in arguments
    )


class LegacyConstructorSize(Rule):
    """
    ## What it does
    Flags `torch.Tensor(3)`, `torch.FloatTensor(n)`, `torch.Tensor(np.array(3))`
    and `torch.Tensor(np.int64(3))`: a legacy constructor given one integer, which
    reads like the value but is a size; and an `nn.Parameter` of such an
    allocation (`nn.Parameter(torch.Tensor(2, 3))`) that nothing initialises. Two or
    more sizes elsewhere (`torch.Tensor(2, 3)`) are a shape nobody mistakes for
    values, and are left alone.

    An allocation that is initialised before it is read is not reported: a
    direct initialiser (`torch.FloatTensor(n).uniform_(-1, 1)`), or a name or a
    `self` attribute (also wrapped in `nn.Parameter`) that gets an initialiser
    later in its function, or in any method of its class (`nn.init.xavier_uniform_
    (self.weight)`, `self.weight.data.normal_()`, a loop over `self.parameters()`
    in `reset_parameters`), or a name whose items are assigned one by one later in
    its function (`ids[i] = ...`). That is an old spelling of `torch.empty`, not a
    bug. Nor is `torch.Tensor(0)`, which has no element to read.

    ## Why is this bad?
    An integer argument is a *size*: `torch.Tensor(3)` allocates an uninitialised
    tensor of three elements holding whatever was in memory, not `tensor(3.)`.
    A 0-d integer array or a NumPy integer scalar is read the same way, which is
    almost never what the author meant.

    ## Example
    ```python
    buffer = torch.Tensor(3)
    ```

    ## Use instead
    ```python
    buffer = torch.empty(3)       # if an uninitialised buffer was meant
    value = torch.tensor(3.0)     # if the value was meant
    ```

    ## Fix safety
    Safe: `torch.empty(...)` (with the typed constructor's dtype) does exactly what
    the legacy call did, and says so. If the value was meant, change it by hand.
    """

    code = "TCV202"
    name = "legacy-constructor-size"
    message = (
        "`{name}({args})` allocates an uninitialised tensor of that size, not a tensor holding the value; "
        "use `torch.empty(...)` if a buffer was meant, `torch.tensor(...)` for the value"
    )
    parameter_message = (
        "`{name}({args})` in `nn.Parameter` is never initialised in this file: the parameter starts from "
        "whatever was in memory; initialise it (`nn.init...`), and write `torch.empty(...)` for the allocation"
    )
    triggers = TRIGGERS
    fix_safety = "safe"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._initialisation: Initialisation | None = None

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = legacy_call(node, ctx)
        if call is None or not _sizes(node.args, ctx):
            return
        if any(isinstance(argument, ast.Constant) and argument.value == 0 for argument in node.args):
            return  # `torch.Tensor(0)`: no element, nothing uninitialised to read
        if self._initialisation is None:
            self._initialisation = Initialisation(ctx.facts.tree)
        if len(node.args) > 1 and not self._initialisation.wrapped_in_parameter(node, ctx):
            return  # `torch.Tensor(rows, cols)`: nobody reads a shape as values; a shape to fill is what is meant
        if self._initialisation.initialised(node, ctx):
            return  # allocate-then-initialise: the values are written before anyone reads them
        arguments = ", ".join(ctx.text(argument) for argument in node.args)
        template = self.message if len(node.args) == 1 else self.parameter_message
        message = template.format(name=ctx.text(node.func), args=arguments if len(arguments) < 30 else "...")
        fix = None
        if call.torch_alias is not None:
            edits = [Edit(ctx.start(node.func), ctx.end(node.func), f"{call.torch_alias}.empty")]
            if LEGACY_CONSTRUCTORS[call.qualname] is not None:
                last = node.keywords[-1].value if node.keywords else node.args[-1]
                edits.append(insertion(ctx.end(last), f", dtype={call.dtype_expression()}"))
            fix = make_fix(Applicability.SAFE, "Use `torch.empty`, which does the same explicitly", *edits)
        ctx.report(self, node, message, fix)
