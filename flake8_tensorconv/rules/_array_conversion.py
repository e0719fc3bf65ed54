"""A NumPy -> torch conversion call and its array argument, shared by TCV203/208/209/210.

``torch.from_numpy(x)``, ``torch.as_tensor(x)``, ``torch.asarray(x)``, ``torch.tensor(x)``
and ``torch.Tensor(x)`` all hand an ndarray to the same C++ path (``tensor_from_numpy``), so
they fail, warn and drop masks alike (CLAIMS §7).
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from flake8_tensorconv import arrays
from flake8_tensorconv.findings import Edit
from flake8_tensorconv.rules.base import Context, insertion
from flake8_tensorconv.values import Kind, Value

# qualified name -> the keyword that may carry the data instead of the first argument.
CONVERSIONS: dict[str, str | None] = {
    "torch.from_numpy": None,
    "torch.as_tensor": "data",
    "torch.asarray": "obj",
    "torch.tensor": "data",
    "torch.Tensor": None,
}
TRIGGERS = tuple(f"{name}(" for name in CONVERSIONS)
# Conversions that reuse the array's memory (``torch.asarray`` unless told to copy).
_ZERO_COPY = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.asarray"})
# Expressions ``.copy()`` can follow without parentheses.
_PRIMARY = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.List, ast.Tuple, ast.ListComp, ast.Dict)


class ArrayConversion(NamedTuple):
    node: ast.Call
    qualname: str
    array: ast.expr  # the data argument
    value: Value  # what the inference knows about it

    @property
    def is_from_numpy(self) -> bool:
        return self.qualname == "torch.from_numpy"

    @property
    def zero_copy(self) -> bool:
        """The tensor shares the array's memory (when the dtype and device allow)."""
        if self.qualname not in _ZERO_COPY:
            return False
        copy = _keyword(self.node, "copy")
        return copy is None or (isinstance(copy, ast.Constant) and copy.value in (False, None))

    def has(self, fact: str) -> bool:
        """The argument is an ndarray with ``fact`` on every path."""
        return self.value.kind is Kind.NDARRAY and fact in self.value.facts

    @property
    def ndarray_dtype(self) -> str | None:
        return self.value.dtype if self.value.kind is Kind.NDARRAY else None


def array_conversion(node: ast.Call, ctx: Context) -> ArrayConversion | None:
    """The conversion at ``node`` with its array argument, or None."""
    qualname = ctx.qualname(node.func)
    if qualname not in CONVERSIONS or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    if qualname == "torch.Tensor" and (len(node.args) != 1 or node.keywords):
        return None  # torch.Tensor(2, 3) is a size, not data
    if node.args:
        array = node.args[0]
    else:
        keyword = CONVERSIONS[qualname]
        array = _keyword(node, keyword) if keyword else None
        if array is None:
            return None
    return ArrayConversion(node=node, qualname=qualname, array=array, value=ctx.value(array))


def function_text(conversion: ArrayConversion, ctx: Context) -> str:
    """How the file spells the conversion (``torch.from_numpy``, ``th.tensor``...), for messages."""
    return ctx.text(conversion.node.func)


def append_call(expression: ast.expr, call: str, ctx: Context) -> tuple[Edit, ...]:
    """Edits that turn ``expression`` into ``expression.<call>``, parenthesising where needed."""
    if isinstance(expression, _PRIMARY):
        return (insertion(ctx.end(expression), f".{call}"),)
    return insertion(ctx.start(expression), "("), insertion(ctx.end(expression), f").{call}")


def is_simple_reference(expression: ast.expr) -> bool:
    """A name or attribute chain (``x``, ``self.data``): cheap and harmless to spell twice."""
    while isinstance(expression, ast.Attribute):
        expression = expression.value
    return isinstance(expression, ast.Name)


def negative_step_subscript(expression: ast.expr) -> bool:
    """``a[::-1]``, ``m[:, ::-1]``: the expression itself makes a reversed view."""
    return isinstance(expression, ast.Subscript) and arrays.has_negative_step(expression.slice)


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None
