"""The legacy tensor constructors (``torch.Tensor(...)``, ``torch.FloatTensor(...)``...)."""

from __future__ import annotations

import ast
from typing import NamedTuple

from flake8_tensorconv.arrays import ZERO_D
from flake8_tensorconv.findings import Applicability, Edit, Fix
from flake8_tensorconv.knowledge import dtype_from_qualname
from flake8_tensorconv.rules.base import Context, insertion, make_fix
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
    "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1), "uint64": (0, 2**64 - 1),
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


# In-place methods that overwrite every element: after one of them the allocation holds values.
INITIALISERS = frozenset(
    "uniform_ normal_ fill_ zero_ copy_ random_ bernoulli_ exponential_ geometric_ cauchy_ log_normal_ "
    "set_ resize_ orthogonal_".split()
)
_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Calls after the allocation whose result is still to be initialised (a device move, a cast).
_KEEPS_THE_ALLOCATION = frozenset({"to", "cuda", "cpu", "type", "float", "double", "half", "long", "int", "contiguous"})


class Initialisation:
    """Which legacy allocations are initialised before anyone reads them.

    ``torch.FloatTensor(n).uniform_(-1, 1)``, ``w = nn.Parameter(torch.Tensor(3, 4))`` with
    ``nn.init.xavier_uniform_(w)`` later in the scope, or ``self.w = ...`` with an
    initialiser on ``self.w`` in any method of the class (``reset_parameters``).
    Built once per file, on the first question.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.parents: dict[int, ast.AST] = {}
        self.classes: dict[int, ast.ClassDef] = {}  # a node -> its innermost class
        self.scopes: dict[int, ast.AST] = {}  # a node -> its innermost function (or the module)
        stack: list[tuple[ast.AST, ast.ClassDef | None, ast.AST]] = [(tree, None, tree)]
        while stack:
            node, cls, scope = stack.pop()
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
                child_class = child if isinstance(child, ast.ClassDef) else cls
                child_scope = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
                if child_class is not None:
                    self.classes[id(child)] = child_class
                self.scopes[id(child)] = child_scope
                stack.append((child, child_class, child_scope))

    def wrapped_in_parameter(self, node: ast.Call, ctx: Context) -> bool:
        """``nn.Parameter(torch.Tensor(2, 3))``: the allocation becomes a module's parameter."""
        parent = self.parents.get(id(node))
        return (
            isinstance(parent, ast.Call) and bool(parent.args) and parent.args[0] is node
            and ctx.facts.qualname(parent.func) in _PARAMETER_CLASSES
        )

    def initialised(self, node: ast.Call, ctx: Context) -> bool:
        allocation: ast.expr = node
        parent = self.parents.get(id(allocation))
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is allocation:
            if ctx.facts.qualname(parent.func) in _PARAMETER_CLASSES:
                allocation, parent = parent, self.parents.get(id(parent))
        while isinstance(parent, ast.Attribute) and parent.attr in _KEEPS_THE_ALLOCATION:
            call = self.parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                break
            allocation, parent = call, self.parents.get(id(call))  # `torch.LongTensor(n, m).to(device)`
        if isinstance(parent, ast.Attribute) and parent.attr in INITIALISERS:
            return True  # `torch.FloatTensor(n).uniform_(-1, 1)`
        if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1):
            return False
        target = parent.targets[0]
        if isinstance(target, ast.Name):
            scope = self.scopes.get(id(parent))
            after = (parent.end_lineno or 0, parent.end_col_offset or 0)
            return scope is not None and any(
                (node.lineno, node.col_offset) > after and _initialises(node, target, ctx) for node in _writes(scope)
            )
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            cls = self.classes.get(id(parent))
            return cls is not None and (
                any(_initialises(call, target, ctx) for call in _calls(cls)) or _initialises_all_parameters(cls, ctx)
            )
        return False


def _writes(scope: ast.AST) -> list[ast.Call | ast.Subscript]:
    """Calls, and item assignments (``ids[i] = v``: filled element by element)."""
    return [
        node for node in ast.walk(scope)
        if isinstance(node, ast.Call) or (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store))
    ]


def _calls(scope: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(scope) if isinstance(node, ast.Call)]


def _initialises_all_parameters(cls: ast.ClassDef, ctx: Context) -> bool:
    """``for weight in self.parameters(): weight.data.uniform_(-std, std)`` in a method of the class."""
    for loop in ast.walk(cls):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call)):
            continue
        func = loop.iter.func
        if isinstance(func, ast.Attribute) and func.attr == "parameters" and ast.unparse(func.value) == "self":
            if any(_initialises(call, loop.target, ctx) for statement in loop.body for call in _calls(statement)):
                return True
    return False


def _initialises(call: ast.Call | ast.Subscript, target: ast.Name | ast.Attribute, ctx: Context) -> bool:
    """``target.uniform_()``, ``target.data.normal_()``, ``nn.init.xavier_uniform_(target)``, ``target[i] = v``..."""
    if isinstance(call, ast.Subscript):
        return _names_target(call.value, target)
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in INITIALISERS and _names_target(func.value, target):
        return True
    qualname = ctx.facts.qualname(func) or ""
    if qualname.startswith("torch.nn.init.") and call.args and _names_target(call.args[0], target):
        return True
    # `self.weight_init_func(self.proxies)`, `init_weights(w)`: a function named for initialising, given it.
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return "init" in name.lower() and any(_names_target(argument, target) for argument in call.args)


def _names_target(node: ast.expr, target: ast.Name | ast.Attribute) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return _shape(node) == _shape(target)


def _shape(node: ast.expr) -> str:
    """The expression's structure without its load/store contexts (``self.w`` read and assigned alike)."""
    return ast.dump(node).replace("Load()", "").replace("Store()", "")


# How a legacy constructor treats its data, from what the source's dtype and the target's say.
LOSSY = "lossy"  # values can be lost: floats truncated, integers wrapped, literals out of range
CHANGES = "changes"  # integer data becomes floating point: what the data is changes
KEEPS = "keeps"  # nothing is lost (bools, integers into a wider type, exact literals)
UNKNOWN_SOURCE = "unknown"  # the source's dtype is not visible

_FLOAT_BITS = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}
# Methods and dtypes that cast a legacy constructor's result straight back to integers.
_INTEGER_CASTS = frozenset({"long", "int", "short", "char", "byte"})


class Cast(NamedTuple):
    verdict: str
    source_dtype: str | None
    target_dtype: str  # the dtype the constructor casts to ("float32" for torch.Tensor)
    back_to_integers: bool  # the result is cast to an integer type right away (`.long()`)


def classify_cast(call: LegacyCall, parents: dict[int, ast.AST], ctx: Context) -> Cast:
    argument = call.node.args[0]
    declared = LEGACY_CONSTRUCTORS[call.qualname]
    target = declared or "float32"
    back = _cast_back_to_integers(call.node, parents, ctx)
    literals = _literal_numbers(argument) if isinstance(argument, (ast.List, ast.Tuple)) else None
    if literals is not None:
        if not converts_exactly(argument, declared):
            return Cast(LOSSY, None, target, back)
        # `torch.Tensor([1, 0, 2])`: literals written into a float constructor are meant as floats
        # (test data, kernels, strides); every one is held exactly, so nothing is lost.
        integers = bool(literals) and all(isinstance(value, int) for value in literals)
        return Cast(KEEPS, "int64" if integers else None, target, back)
    if converts_exactly(argument, declared):
        return Cast(KEEPS, "int64", target, back)  # `torch.LongTensor([len(data)])`
    source = _source_dtype(argument, ctx)
    if source is None:
        return Cast(UNKNOWN_SOURCE, None, target, back)
    verdict = _verdict(source, target)
    if verdict == CHANGES and declared is not None:
        # `torch.FloatTensor(int32 features)`: the author named the float dtype; nothing visible is lost.
        verdict = KEEPS
    return Cast(verdict, source, target, back)


def _verdict(source: str, target: str) -> str:
    if source == "bool":
        return KEEPS
    if source in _INTEGER_RANGES:
        if target in _FLOAT_BITS:
            return CHANGES
        low, high = _INTEGER_RANGES[source]
        target_low, target_high = _INTEGER_RANGES.get(target, (1, 0))
        return KEEPS if target_low <= low and high <= target_high else LOSSY
    if source in _FLOAT_BITS and target in _FLOAT_BITS:
        # float64 -> float32 is the default dtype's rounding, which is what such code asks for;
        # a 16-bit float overflows above 65504 (float16) or keeps 8 bits of mantissa (bfloat16).
        return LOSSY if _FLOAT_BITS[target] == 16 and _FLOAT_BITS[source] > 16 else KEEPS
    return LOSSY  # floats into integers truncate; complex drops its imaginary part


def _source_dtype(argument: ast.expr, ctx: Context) -> str | None:
    value = ctx.value(argument)
    if value.dtype is not None:
        return value.dtype
    items = [value.element] if value.element is not None else list(value.elements or ())
    dtypes = {item.dtype for item in items}
    if items and len(dtypes) == 1 and all(item.kind in (Kind.NDARRAY, Kind.TENSOR) for item in items):
        return dtypes.pop()
    return None


def _cast_back_to_integers(node: ast.Call, parents: dict[int, ast.AST], ctx: Context) -> bool:
    """``torch.Tensor(ids).long()``, ``.type(torch.long)``, ``.to(torch.int64)``: integers were meant."""
    attribute = parents.get(id(node))
    call = parents.get(id(attribute))
    if not (isinstance(attribute, ast.Attribute) and isinstance(call, ast.Call) and call.func is attribute):
        return False
    if attribute.attr in _INTEGER_CASTS:
        return True
    if attribute.attr in ("type", "to") and call.args:
        dtype = dtype_from_qualname(ctx.facts.qualname(call.args[0]) or "")
        return dtype in _INTEGER_RANGES and dtype != "bool"
    return False


def explicit_cast_fix(call: LegacyCall, ctx: Context) -> Fix | None:
    """``torch.as_tensor(x, dtype=...)``: the very cast the legacy call made, now visible (safe)."""
    if call.torch_alias is None:
        return None
    node = call.node
    last = node.keywords[-1].value if node.keywords else node.args[-1]
    return make_fix(
        Applicability.SAFE,
        f"Replace `{ctx.text(node.func)}` with `{call.torch_alias}.as_tensor(..., dtype={call.dtype_expression()})`",
        Edit(ctx.start(node.func), ctx.end(node.func), f"{call.torch_alias}.as_tensor"),
        insertion(ctx.end(last), f", dtype={call.dtype_expression()}"),
    )


class DataCasts:
    """What each legacy constructor given data (``torch.LongTensor(rows)``) does to it, for TCV201 and TCV211.

    One per rule and file: the tree's parents are worked out on the first call that needs them.
    """

    def __init__(self) -> None:
        self._parents: dict[int, ast.AST] | None = None

    def of(self, node: ast.Call, ctx: Context) -> tuple[LegacyCall, Cast] | None:
        call = legacy_call(node, ctx)
        if call is None or len(node.args) != 1 or not is_data_argument(node.args[0], ctx):
            return None
        if self._parents is None:
            self._parents = Initialisation(ctx.facts.tree).parents
        return call, classify_cast(call, self._parents, ctx)
