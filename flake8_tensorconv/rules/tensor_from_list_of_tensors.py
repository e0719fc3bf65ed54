from __future__ import annotations

import ast

from flake8_tensorconv.findings import Applicability, Edit, Fix, Related
from flake8_tensorconv.rules._conversion import TENSOR_FROM_DATA, module_alias, single_data_argument
from flake8_tensorconv.rules._numpy_call import describe_origin, grad_risk
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.rules.tensor_from_list_of_arrays import list_items
from flake8_tensorconv.values import Kind, Value


class TensorFromListOfTensors(Rule):
    """
    ## What it does
    Flags `torch.tensor(items)` (and `torch.as_tensor`, `torch.asarray`) where
    `items` is a list of tensors of which at least one may require grad: a list
    display or comprehension of a model's outputs, of losses, of values computed
    from parameters, or a name holding such a list; the message names the step
    that makes them require grad. Opt-in: the analysis does not
    know shapes, and with one-element tensors dropping the graph is often meant
    (a TD target, losses collected for a plot).

    ## Why is this bad?
    `torch.tensor` reads a list element by element, as Python numbers. A tensor of
    more than one element cannot be read so: `ValueError: only one element tensors
    can be converted to Python scalars`. One-element tensors pass, but as numbers:
    the result is a new leaf without their autograd graph (torch warns
    `UserWarning: Converting a tensor with requires_grad=True to a scalar may lead
    to unexpected behavior.`), so a loss summed from it trains nothing.

    ## Example
    ```python
    weights = torch.ones((), requires_grad=True)
    total = torch.tensor([weights * 2, weights * 3])
    ```

    ## Use instead
    ```python
    total = torch.stack([weights * 2, weights * 3])
    ```

    ## Fix safety
    Unsafe: `torch.stack` keeps the graph the original dropped (the result
    requires grad where it did not), and stacks one-element tensors of shape `(1,)`
    into shape `(n, 1)` where the original made `(n,)`. A nested list gets no fix.
    """

    code = "TCV212"
    name = "tensor-from-list-of-tensors"
    message = (
        "`{name}()` of a list of tensors{evidence} reads each one as a Python number: it raises ValueError for tensors "
        "of more than one element and drops the autograd graph of the others; `torch.stack(...)` joins them"
    )
    triggers = tuple(f"{name}(" for name in sorted(TENSOR_FROM_DATA))
    silent_on_literal_data = True
    # Opt-in: where the tensors hold one element each, dropping their graph is often what the code
    # wants (a TD target, a list of losses to plot), and the inference does not know shapes.
    default_enabled = False
    fix_safety = "unsafe"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        if ctx.qualname(node.func) not in TENSOR_FROM_DATA or node.keywords:
            return
        items = single_data_argument(node)
        if items is None or isinstance(items, ast.GeneratorExp):
            return
        tensors = list_items(items, ctx, _is_tensor)
        risky = [tensor for tensor in tensors or () if grad_risk(tensor, ctx)]
        if not risky:
            return
        clause, related = _evidence(items, risky, ctx)
        message = self.message.format(name=ctx.text(node.func), evidence=clause)
        ctx.report(self, node, message, self._fix(items, node, ctx), related)

    def _fix(self, items: ast.expr, node: ast.Call, ctx: Context) -> Fix | None:
        torch = module_alias(ctx, "torch")
        nested = isinstance(items, (ast.List, ast.Tuple)) and any(isinstance(e, (ast.List, ast.Tuple)) for e in items.elts)
        if torch is None or nested:
            return None
        return make_fix(Applicability.UNSAFE, f"Use `{torch}.stack()`", Edit(ctx.start(node.func), ctx.end(node.func), f"{torch}.stack"))


def _evidence(items: ast.expr, risky: list[Value], ctx: Context) -> tuple[str, tuple[Related, ...]]:
    """Where the graph comes from (" (`losses` holds tensors that require grad: `loss_fn(out, y)` on line 12)")."""
    where = next((tensor.grad_origin for tensor in risky if tensor.grad_origin is not None), None)
    if where is None:
        return "", ()
    what = describe_origin(ctx, where)
    subject = f"`{items.id}` holds" if isinstance(items, ast.Name) else "it holds"
    start, end = ctx.position(where.line, where.column), ctx.position(where.end_line, where.end_column)
    clause = f" ({subject} tensors that require grad: {what} on {ctx.source.describe_line(where.line)})"
    return clause, (Related(start, end, f"requires grad: {what}"),)


def _is_tensor(value: Value) -> bool:
    return value.kind is Kind.TENSOR
