"""The legacy tensor constructors (``torch.Tensor(...)``, ``torch.FloatTensor(...)``...)."""

from __future__ import annotations

import ast
from typing import NamedTuple

from flake8_tensorconv.arrays import ZERO_D
from flake8_tensorconv.rules.base import Context
from flake8_tensorconv.values import INTEGER_DTYPES, Fact, Kind

# qualified constructor -> the dtype expression it casts to (None: the default dtype).
LEGACY_CONSTRUCTORS: dict[str, str | None] = {
    "torch.Tensor": None,
    "torch.FloatTensor": "float32",
    "torch.DoubleTensor": "float64",
    "torch.HalfTensor": "float16",
    "torch.BFloat16Tensor": "bfloat16",
    "torch.LongTensor": "int64",
    "torch.IntTensor": "int32",
    "torch.ShortTensor": "int16",
    "torch.CharTensor": "int8",
    "torch.ByteTensor": "uint8",
    "torch.BoolTensor": "bool",
}
# 0-d arrays and NumPy scalars of these dtypes are read as a size (a bool one as the value 1.0).
_SIZE_DTYPES = INTEGER_DTYPES - {"bool"}
TRIGGERS = tuple(f"{name}(" for name in LEGACY_CONSTRUCTORS)


class LegacyCall(NamedTuple):
    node: ast.Call
    qualname: str
    torch_alias: str | None  # how the file spells the torch module, for the fix

    @property
    def short_name(self) -> str:
        return self.qualname.rpartition(".")[2]

    def dtype_expression(self) -> str:
        dtype = LEGACY_CONSTRUCTORS[self.qualname]
        return f"{self.torch_alias}.get_default_dtype()" if dtype is None else f"{self.torch_alias}.{dtype}"


def legacy_call(node: ast.Call, ctx: Context) -> LegacyCall | None:
    qualname = ctx.qualname(node.func)
    if qualname not in LEGACY_CONSTRUCTORS or not node.args:
        return None
    if any(keyword.arg != "device" for keyword in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    return LegacyCall(node=node, qualname=qualname, torch_alias=torch_alias(node.func, ctx))


def torch_alias(func: ast.expr, ctx: Context) -> str | None:
    """The expression that names the torch module here (``torch``, ``th``...)."""
    if isinstance(func, ast.Attribute) and ctx.qualname(func.value) == "torch":
        return ctx.text(func.value)
    for name, qualname in ctx.facts.aliases.items():
        if qualname == "torch" and name not in ctx.state.env:
            return name
    return None


def is_size_argument(node: ast.expr, ctx: Context) -> bool:
    """An int, a NumPy integer scalar, or a 0-d integer array: read as a *size*."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    value = ctx.value(node)
    if value.kind is Kind.NUMBER and _is_integer_expression(node):
        return True
    # Held in a variable: `count = np.array(3)` / `n = np.int64(3)`.
    if value.dtype in _SIZE_DTYPES and (
        (value.kind is Kind.NDARRAY and ZERO_D in value.facts) or (value.kind is Kind.NUMBER and Fact.NUMPY_SCALAR in value.facts)
    ):
        return True
    if isinstance(node, ast.Call) and node.args and len(node.args) == 1:
        qualname = ctx.qualname(node.func) or ""
        argument = node.args[0]
        literal_int = isinstance(argument, ast.Constant) and isinstance(argument.value, int) and not isinstance(argument.value, bool)
        if qualname in ("numpy.array", "numpy.asarray") and literal_int:
            return True
        if qualname.startswith(("numpy.int", "numpy.uint")) and literal_int:
            return True
    return False


def _is_integer_expression(node: ast.expr) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("len", "int"):
        return True
    if isinstance(node, ast.Subscript):
        container = node.value
        return (isinstance(container, ast.Attribute) and container.attr == "shape") or (
            isinstance(container, ast.Call) and isinstance(container.func, ast.Attribute) and container.func.attr == "size"
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        return all(
            (isinstance(side, ast.Constant) and isinstance(side.value, int)) or _is_integer_expression(side)
            for side in (node.left, node.right)
        )
    return False


def is_data_argument(node: ast.expr, ctx: Context) -> bool:
    """A list/tuple display, a comprehension, or a value known to be an array or a sequence."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp)):
        return True
    if is_size_argument(node, ctx):
        return False
    return ctx.value(node).kind in (Kind.NDARRAY, Kind.SEQUENCE)


# Float dtypes: the largest integer held exactly, the smallest normal and the largest finite value.
_FLOAT_LIMITS = {
    "float16": (2**11, 6.11e-05, 65504.0),
    "bfloat16": (2**8, 1.18e-38, 3.38e38),
    "float32": (2**24, 1.18e-38, 3.40e38),
    "float64": (2**53, 2.23e-308, 1.79e308),
}
_INTEGER_RANGES = {
    "bool": (0, 1), "uint8": (0, 2**8 - 1), "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
}


def converts_exactly(node: ast.expr, dtype: str | None) -> bool:
    """A display of number literals that the cast keeps: nothing can be lost, whatever runs it.

    Integers the dtype holds exactly, and (for a float dtype) floats inside its normal range,
    where rounding a decimal literal to the dtype is what writing it there means.
    """
    dtype = dtype or "float32"  # torch.Tensor: the default dtype
    if dtype == "int64" and isinstance(node, (ast.List, ast.Tuple)) and all(_is_python_int(e) for e in node.elts):
        return True  # `torch.LongTensor([len(data)])`: Python ints fit int64
    numbers = _literal_numbers(node)
    if numbers is None:
        return False
    if dtype in _FLOAT_LIMITS:
        exact, smallest, largest = _FLOAT_LIMITS[dtype]
        return all(
            abs(value) <= exact if isinstance(value, int) else value == 0 or smallest <= abs(value) <= largest
            for value in numbers
        )
    low, high = _INTEGER_RANGES.get(dtype, (1, 0))
    return all(isinstance(value, int) and low <= value <= high for value in numbers)


def _is_python_int(node: ast.expr) -> bool:
    """An int literal, ``len(...)``, ``x.shape[i]``, ``x.numel()``, ``x.size(i)``, ``x.dim()`` or int arithmetic of those."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _is_python_int(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("numel", "dim", "nelement"):
        return not node.args
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        return len(node.args) == 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        return _is_python_int(node.left) and _is_python_int(node.right)
    return _is_integer_expression(node)


def _literal_numbers(node: ast.expr) -> list[int | float] | None:
    """The numbers of a (nested) list/tuple display of int, float and bool literals, else None."""
    if isinstance(node, (ast.List, ast.Tuple)):
        numbers: list[int | float] = []
        for element in node.elts:
            inner = _literal_numbers(element)
            if inner is None:
                return None
            numbers.extend(inner)
        return numbers
    negative = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
    operand = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) else node
    if isinstance(operand, ast.Constant) and isinstance(operand.value, (int, float)) and not isinstance(operand.value, complex):
        value = int(operand.value) if isinstance(operand.value, bool) else operand.value
        return [-value if negative else value]
    return None
