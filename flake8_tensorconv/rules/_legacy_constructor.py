"""The legacy tensor constructors (``torch.Tensor(...)``, ``torch.FloatTensor(...)``...)."""

from __future__ import annotations

import ast
import enum
import re
import struct
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv.arrays import ZERO_D
from flake8_tensorconv.findings import Applicability, Edit, Fix
from flake8_tensorconv.knowledge import RESETS_EVERY_PARAMETER, dtype_from_qualname
from flake8_tensorconv.rules.base import Context, insertion, make_fix
from flake8_tensorconv.trees import child_nodes, free_names, last_name, walk
from flake8_tensorconv.values import INTEGER_DTYPES, Fact, Kind

if TYPE_CHECKING:
    from collections.abc import Callable

    from flake8_tensorconv.inference.bindings import Binding, Scope

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
    if value.kind not in (Kind.NDARRAY, Kind.SEQUENCE, Kind.TENSOR) and _scaled_count(node):
        return True
    # Held in a variable: `count = np.array(3)` / `n = np.int64(3)`.
    if value.dtype in _SIZE_DTYPES and (
        (value.kind is Kind.NDARRAY and ZERO_D in value.facts) or (value.kind is Kind.NUMBER and Fact.NUMPY_SCALAR in value.facts)
    ):
        return True
    if value.kind is Kind.NUMBER and declared_int(node, ctx):
        return True  # `def __init__(self, num_tags: int)`: an int, by its annotation
    if isinstance(node, ast.Call) and node.args and len(node.args) == 1:
        qualname = ctx.qualname(node.func) or ""
        argument = node.args[0]
        literal_int = isinstance(argument, ast.Constant) and isinstance(argument.value, int) and not isinstance(argument.value, bool)
        if qualname in ("numpy.array", "numpy.asarray") and literal_int:
            return True
        if qualname.startswith(("numpy.int", "numpy.uint")) and literal_int:
            return True
    return False


def declared_int(node: ast.expr, ctx: Context) -> bool:
    """``node`` is a parameter annotated ``int`` and not rebound before it is used here: an int by its annotation
    alone (enough to report, never for a safe fix: a caller may pass a list, which the legacy call reads as data)."""
    function = ctx.state.function
    if not isinstance(node, ast.Name) or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    arguments = function.args
    annotation = next(
        (a.annotation for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs) if a.arg == node.id), None
    )
    if not (isinstance(annotation, ast.Name) and annotation.id == "int"):
        return False
    here = (node.lineno, node.col_offset)
    return not any((store.lineno, store.col_offset) < here for store in ctx.scope.stores(node.id))


# A name that says it holds a count: `out_features`, `hidden_size`, `n_heads`, `num_classes`.
_COUNT_NAME = re.compile(r"^_*(n|num|number)_|_(features|size|dim|channels|units|neurons|heads|count|classes)$")


def _scaled_count(node: ast.expr) -> bool:
    """``2 * self.out_features``: an int literal and a value named as a count (the names of sizes are
    read as sizes where their kind is not known)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv))):
        return False
    sides = (node.left, node.right)
    literal = any(isinstance(side, ast.Constant) and type(side.value) is int for side in sides)
    named = [side.attr if isinstance(side, ast.Attribute) else side.id for side in sides if isinstance(side, (ast.Attribute, ast.Name))]
    return literal and len(named) == 1 and _COUNT_NAME.search(named[0]) is not None


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
    if dtype == "int64" and isinstance(node, (ast.List, ast.Tuple)) and all(is_python_int(e) for e in node.elts):
        return True  # `torch.LongTensor([len(data)])`: Python ints fit int64
    numbers = _literal_numbers(node)
    if numbers is None:
        return False
    if dtype in _FLOAT_LIMITS:
        exact, smallest, largest = _FLOAT_LIMITS[dtype]
        return all(
            abs(value) <= exact if isinstance(value, int)
            else value == 0 or smallest <= abs(value) <= largest or _subnormal_kept(value, dtype)
            for value in numbers
        )
    low, high = _INTEGER_RANGES.get(dtype, (1, 0))
    return all(isinstance(value, int) and low <= value <= high for value in numbers)


# struct formats of the float dtypes whose subnormal values Python can round to.
_STRUCT_FORMATS = {"float16": "e", "float32": "f", "float64": "d"}


def _subnormal_kept(value: float, dtype: str) -> bool:
    """A literal below the dtype's normal range that the dtype still holds to every digit written: a subnormal such
    as float32's ``5.6052e-45`` (four times the smallest), printed from a float32 tensor and pasted back."""
    code = _STRUCT_FORMATS.get(dtype)
    if code is None:
        return False
    try:
        rounded = struct.unpack(code, struct.pack(code, value))[0]
    except (OverflowError, struct.error):
        return False
    if rounded == 0:
        return False  # below the smallest subnormal: the value becomes zero
    digits = len(repr(abs(value)).split("e")[0].replace(".", "").lstrip("0")) or 1
    return float(f"{rounded:.{digits - 1}e}") == value


def is_python_int(node: ast.expr) -> bool:
    """An int literal, ``len(...)``, ``x.shape[i]``, ``x.numel()``, ``x.size(i)``, ``x.dim()`` or int arithmetic of those."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return is_python_int(node.operand)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("numel", "dim", "nelement"):
        return not node.args
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size":
        return len(node.args) == 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
        return is_python_int(node.left) and is_python_int(node.right)
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
# Wrappers whose result is the allocation itself, still to be initialised.
_WRAPPERS = _PARAMETER_CLASSES | {"torch.autograd.Variable", "torch.autograd.variable.Variable"}
# Calls after the allocation whose result is still to be initialised (a device move, a cast).
_KEEPS_THE_ALLOCATION = frozenset({"to", "cuda", "cpu", "type", "float", "double", "half", "long", "int", "contiguous", "requires_grad_"})
# What reads only the allocation's metadata, never its values.
_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "layout", "requires_grad", "is_leaf", "grad", "grad_fn"})
_SHAPE_METHODS = frozenset(
    {"size", "dim", "numel", "nelement", "ndimension", "element_size", "get_device", "is_contiguous", "stride"}
    # A fresh tensor with the allocation's dtype and device (`x.new_empty(x.shape + (4,))`): its values are not read.
    | {"new", "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"}
)
_SHAPE_FUNCTIONS = frozenset({"len", "isinstance", "type", "id", "hasattr"})
# Views: writing into one writes the allocation (`numpy()`'s array shares its memory: a C library may fill it
# through `.ctypes.data`).
_VIEWS = frozenset(
    "view reshape t T mT transpose permute squeeze unsqueeze expand flatten narrow select view_as reshape_as expand_as "
    "numpy".split()
)
# Calls that keep their argument somewhere the analysis does not follow.
_STORES = frozenset({"append", "extend", "insert", "add", "register_buffer", "register_parameter", "setattr", "setdefault", "update", "add_module"})
_DISPLAYS = frozenset({"print", "display", "repr", "str"})
# Libraries whose functions compute with (or plot) the values they are given; a callee imported from
# anywhere else (the project's own modules) is out of sight.
_READING_LIBRARIES = frozenset(
    "torch numpy math scipy matplotlib seaborn sklearn skimage pandas torchvision torchaudio einops kornia timm PIL cv2".split()
)
# A callee named for writing its argument: `init_weights(w)`, `glorot(w)` from an `inits` module,
# `self.reset(w)`, `fill_buffer(w)`, `load_weights(w)`.
_WRITER_WORDS = ("init", "fill", "reset", "load", "copy")
# torch.nn.init's functions, also under another module's name (timm's `trunc_normal_`, a project's `init`).
_INIT_FUNCTIONS = frozenset(
    "uniform_ normal_ trunc_normal_ constant_ ones_ zeros_ eye_ dirac_ xavier_uniform_ xavier_normal_ "
    "kaiming_uniform_ kaiming_normal_ orthogonal_ sparse_ glorot zeros ones".split()
)


class Use(enum.Enum):
    """What happens first to an allocation's values."""

    WRITE = "write"  # something overwrites them before anything reads them
    SHAPE = "shape"  # only its shape, dtype or device is used, or nothing at all
    DISPLAY = "display"  # printed, or the value of a notebook cell: shown, not computed with
    READ = "read"  # used as an operand, passed on, returned
    UNKNOWN = "unknown"  # kept somewhere the analysis does not follow
    PARAMETER = "parameter"  # a module's parameter that nothing in the file initialises


class Fate(NamedTuple):
    use: Use
    node: ast.AST | None = None  # the expression that reads or shows the values (a parameter's: the class-name test
    # that keeps the file's initialiser from it)


_SHAPE, _WRITE, _UNKNOWN = Fate(Use.SHAPE), Fate(Use.WRITE), Fate(Use.UNKNOWN)
_DEPTH = 6  # how far one allocation is followed through names and results


# The maps of the top-level statements of the document's last version, kept in ``Context.kept``: the language
# server's incremental re-analysis keeps the statements an edit did not touch, and rebuilding the maps of the
# whole file on every change was half of its work. A run over many files keeps none (the context's dict is
# new for each file); an id is trusted only with its object.
_KEPT_MAPS = "legacy constructors: statement maps"
_INITIALISATION = "legacy constructors: initialisation"


def _statement_maps(statement: ast.stmt) -> tuple[dict[int, ast.AST], dict[int, ast.ClassDef]]:
    """The parent and the innermost class of every node of a top-level statement (the statement's own
    parent, the module, is not included: a module is made anew by each parse)."""
    parents: dict[int, ast.AST] = {}
    classes: dict[int, ast.ClassDef] = {}
    top_class = statement if isinstance(statement, ast.ClassDef) else None
    if top_class is not None:
        classes[id(statement)] = top_class
    stack: list[tuple[ast.AST, ast.ClassDef | None]] = [(statement, top_class)]
    while stack:
        node, cls = stack.pop()
        for child in child_nodes(node):
            parents[id(child)] = node
            child_class = child if isinstance(child, ast.ClassDef) else cls
            if child_class is not None:
                classes[id(child)] = child_class
            stack.append((child, child_class))
    return parents, classes


class Initialisation:
    """Whether a legacy allocation's uninitialised values are read before anything writes them.

    Follows the allocation through names (the def-use index of its scope), views, casts and
    wrappers (``nn.Parameter``); an allocation stored on ``self`` is initialised when any
    initialiser of the file writes an attribute of that name (``nn.init.normal_(module.w)``
    in another class's ``_init_weights``), or a method of its class initialises every parameter.
    Built once per file, on the first question.
    """

    def __init__(self, tree: ast.Module, kept_between_versions: dict[str, object] | None = None) -> None:
        self.parents: dict[int, ast.AST] = {}
        self.classes: dict[int, ast.ClassDef] = {}  # a node -> its innermost class
        between = {} if kept_between_versions is None else kept_between_versions
        previous: dict[int, tuple[ast.stmt, dict[int, ast.AST], dict[int, ast.ClassDef]]] = between.get(_KEPT_MAPS, {})  # type: ignore[assignment]
        kept: dict[int, tuple[ast.stmt, dict[int, ast.AST], dict[int, ast.ClassDef]]] = {}
        for statement in tree.body:
            maps = previous.get(id(statement))
            if maps is None or maps[0] is not statement:
                maps = (statement, *_statement_maps(statement))
            kept[id(statement)] = maps
            self.parents.update(maps[1])
            self.classes.update(maps[2])
            self.parents[id(statement)] = tree
        between[_KEPT_MAPS] = kept
        self.tree = tree
        self._initialised: tuple[dict[str, frozenset[ClassNameTest | None]], frozenset[int]] | None = None
        self._called: tuple[frozenset[str], frozenset[str]] | None = None
        self._relative: frozenset[str] | None = None  # names imported from the package's own modules
        self._free: frozenset[str] = frozenset()  # names the file reads and never binds (set with _relative)
        self._display_names: dict[str, list[ast.expr]] | None = None
        self._builders: dict[str, list[ast.ClassDef]] | None = None  # a called name -> the classes calling it
        self._defined: frozenset[str] | None = None  # the names of the file's functions and methods

    def wrapped_in_parameter(self, node: ast.Call, ctx: Context) -> bool:
        """``nn.Parameter(torch.Tensor(2, 3))``: the allocation becomes a module's parameter."""
        parent = self.parents.get(id(node))
        return (
            isinstance(parent, ast.Call) and bool(parent.args) and parent.args[0] is node
            and ctx.facts.qualname(parent.func) in _PARAMETER_CLASSES
        )

    def fate(self, node: ast.Call, ctx: Context) -> Fate:
        """What happens first to the values of the allocation ``node``."""
        allocation: ast.expr = node
        parameter = self.wrapped_in_parameter(node, ctx)
        if parameter:
            allocation = self.parents[id(node)]  # type: ignore[assignment]
        parent = self.parents.get(id(allocation))
        while isinstance(parent, ast.Attribute) and parent.attr in _KEEPS_THE_ALLOCATION:
            call = self.parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                break
            allocation, parent = call, self.parents.get(id(call))  # `nn.Parameter(...).to(device)`
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Attribute):
            attributes, classes = self._initialised_attributes(ctx)
            cls = self.classes.get(id(parent))
            if self._written(parent.targets[0].attr, attributes, cls) or (cls is not None and id(cls) in classes):
                return _WRITE
            if not parameter or cls is None or not self._bases_known(cls, ctx) or not self._runs(cls):
                return _UNKNOWN
            outer = self._built_by(cls)
            if any(id(builder) in classes for builder in outer):
                return _WRITE  # a module of the file that initialises every parameter builds this one
            if outer and not _is_script(self.tree) and not any(self._applies_own_initialiser(c) for c in (cls, *outer)):
                # A library's building block (`self.rnn = AGRUCell(...)` in another class of the file): the outer
                # module is built in other modules, whose code may initialise every parameter it holds. Not where a
                # module of the file applies the file's initialiser to it (`self.apply(self.init_weights)`): the
                # file's initialisers decide, and were asked above.
                return _UNKNOWN
            tests = attributes.get(parent.targets[0].attr) or ()
            return Fate(Use.PARAMETER, next((test.node for test in tests if test is not None), None))
        return self._fate(node, ctx, 0)

    def overwritten_at_once(self, node: ast.Call) -> ast.Attribute | None:
        """``torch.FloatTensor(...).uniform_()``: the in-place initialiser chained on the allocation, if any."""
        allocation: ast.AST = node
        parent = self.parents.get(id(allocation))
        while isinstance(parent, ast.Attribute):
            call = self.parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                return None
            if parent.attr in INITIALISERS and parent.attr not in ("set_", "resize_"):
                return parent
            if parent.attr not in _KEEPS_THE_ALLOCATION:
                return None
            allocation, parent = call, self.parents.get(id(call))
        return None

    # ------------------------------------------------------------------ following the values
    def _fate(self, expr: ast.expr, ctx: Context, depth: int) -> Fate:
        if depth > _DEPTH:
            return _UNKNOWN
        parent = self.parents.get(id(expr))
        if isinstance(parent, ast.Attribute):
            call = self.parents.get(id(parent))
            called = isinstance(call, ast.Call) and call.func is parent
            if parent.attr == "data" and not called:
                return self._fate(parent, ctx, depth + 1)
            if called and parent.attr in INITIALISERS:
                return _WRITE
            if parent.attr in _SHAPE_ATTRIBUTES or (called and parent.attr in _SHAPE_METHODS):
                return _SHAPE
            if called and parent.attr == "type" and not call.args and not call.keywords:  # type: ignore[union-attr]
                return _SHAPE  # `x.type()`: the type's name
            if called and parent.attr in _KEEPS_THE_ALLOCATION:
                return self._fate(call, ctx, depth + 1)  # type: ignore[arg-type]
            if called and parent.attr == "data_ptr":
                return _UNKNOWN  # its address, handed to code that may write the values (a C library's call)
            if called and parent.attr == "resize_as_":
                # Returns the allocation, reshaped and still uninitialised: what follows decides
                # (`x.resize_as_(y).copy_(y)`); a statement of its own reads nothing.
                after = self._fate(call, ctx, depth + 1)  # type: ignore[arg-type]
                return _SHAPE if after.use is Use.DISPLAY and isinstance(self.parents.get(id(call)), ast.Expr) else after
            if not called and parent.attr not in _VIEWS:
                return _UNKNOWN  # an attribute of its own (`.volatile`, a project's wrapper)
            return self._consumed(call if called else parent, ctx, depth, view=parent.attr in _VIEWS)  # type: ignore[arg-type]
        if isinstance(parent, ast.Subscript):
            if parent.value is not expr:
                return Fate(Use.READ, parent)  # its values index something
            if isinstance(parent.ctx, ast.Store):
                return _WRITE  # `ids[i] = v`: filled element by element
            return self._consumed(parent, ctx, depth, view=True) if isinstance(parent.ctx, ast.Load) else _UNKNOWN
        if isinstance(parent, ast.keyword):
            call = self.parents.get(id(parent))
            if parent.arg == "out":
                return _WRITE
            return self._argument(call, ctx, depth) if isinstance(call, ast.Call) else _UNKNOWN
        if isinstance(parent, ast.Call) and parent.func is not expr:
            if expr in parent.args and self._callee_only_measures(parent, parent.args.index(expr)):
                return _SHAPE  # `MultiBoxPrior(X, ...)` whose body only asks `X.shape`
            return self._argument(parent, ctx, depth)
        if isinstance(parent, ast.Starred):
            call = self.parents.get(id(parent))
            return self._argument(call, ctx, depth) if isinstance(call, ast.Call) else _UNKNOWN
        if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
            return self._consumed(parent, ctx, depth, view=False)  # `c = a + b` whose device alone is asked
        if isinstance(parent, (ast.Compare, ast.Return, ast.Yield, ast.YieldFrom, ast.Await)):
            return Fate(Use.READ, parent)
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is expr:
            return Fate(Use.READ, parent.iter)
        if isinstance(parent, (ast.Expr, ast.FormattedValue)):
            return Fate(Use.DISPLAY, expr)  # a notebook cell's value, an f-string
        if isinstance(parent, ast.Tuple) and isinstance(self.parents.get(id(parent)), ast.Expr):
            return Fate(Use.DISPLAY, expr)  # `x1, x2` as a cell's value
        if isinstance(parent, ast.Assign) and parent.value is expr and len(parent.targets) == 1:
            target = parent.targets[0]
            if isinstance(target, ast.Name):
                return self._name(target.id, parent, ctx, depth)
        return _UNKNOWN

    def _consumed(self, result: ast.expr, ctx: Context, depth: int, view: bool) -> Fate:
        """A call or view made from the values: a read, unless only its result's shape is used
        (or, for a view, its result is written or kept)."""
        after = self._fate(result, ctx, depth + 1)
        if after.use is Use.SHAPE or (view and after.use in (Use.WRITE, Use.UNKNOWN)):
            return after
        return Fate(Use.READ, result)

    def _argument(self, call: ast.Call, ctx: Context, depth: int) -> Fate:
        func = call.func
        qualname = ctx.facts.qualname(func) or ""
        name = last_name(func)
        if qualname in _WRAPPERS:
            return self._fate(call, ctx, depth + 1)  # `Variable(torch.Tensor(3, 4))`: still the allocation
        if writes_argument(call, ctx):
            return _WRITE
        if name in _DISPLAYS:
            return Fate(Use.DISPLAY, call)
        if isinstance(func, ast.Name) and name in _SHAPE_FUNCTIONS:
            return _SHAPE
        if name in _STORES or self._out_of_sight(func, qualname):
            return _UNKNOWN  # a function of another module of the project may keep it, or ignore it
        return self._consumed(call, ctx, depth, view=False)

    def _name(self, name: str, assignment: ast.Assign, ctx: Context, depth: int) -> Fate:
        """The first uses of ``name`` after ``assignment``, up to its next binding, in source order."""
        scope = ctx.scope
        after = _end(assignment)
        rebinding = next((binding for binding in scope.bindings.get(name, ()) if binding.position > after), None)

        def live(load: ast.Name) -> bool:
            position = _start(load)
            if position <= after:
                return False
            if rebinding is None or position < rebinding.position:
                return True
            value = rebinding.value  # `x = x.cuda()`: read by the value of its own rebinding
            return value is not None and _start(value) <= position < _end(value)

        shown: Fate | None = None
        for load in sorted((load for load in scope.loads(name) if live(load)), key=_start):
            fate = self._fate(load, ctx, depth + 1)
            if fate.use is Use.SHAPE:
                continue
            if fate.use is Use.DISPLAY:
                shown = shown or fate
                continue
            return fate
        return shown or _SHAPE

    def _callee_only_measures(self, call: ast.Call, position: int) -> bool:
        """Whether ``call`` is of a function defined once at the top of the file whose parameter at ``position``
        is only measured there (``x.shape``, ``x.size(0)``, ``len(x)``) and never rebound: nothing reads the values."""
        if not isinstance(call.func, ast.Name) or any(isinstance(argument, ast.Starred) for argument in call.args[: position + 1]):
            return False
        definitions = [
            node for node in self.tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == call.func.id
        ]
        if len(definitions) != 1 or not isinstance(definitions[0], ast.FunctionDef):
            return False
        function = definitions[0]
        positional = [*function.args.posonlyargs, *function.args.args]
        if position >= len(positional) or function.decorator_list:
            return False
        name = positional[position].arg
        uses = [node for node in walk(function) if isinstance(node, ast.Name) and node.id == name]
        if not uses:
            return False
        for use in uses:
            if not isinstance(use.ctx, ast.Load):
                return False
            parent = self.parents.get(id(use))
            if isinstance(parent, ast.Attribute) and parent.attr in _SHAPE_ATTRIBUTES:
                continue
            called = self.parents.get(id(parent))
            if isinstance(parent, ast.Attribute) and parent.attr in _SHAPE_METHODS and isinstance(called, ast.Call) and called.func is parent:
                continue
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _SHAPE_FUNCTIONS:
                continue
            return False
        return True

    def _out_of_sight(self, func: ast.expr, qualname: str) -> bool:
        """A callee imported from a module other than the libraries that compute with their arguments:
        ``from TTS.layers.solver import model_wrapper``, ``from .solver import wrap``, ``utils.run(...)``;
        or one the file never binds (``Parameter(...)`` from a star import or a notebook's earlier session),
        whose origin it does not show."""
        if qualname:
            return qualname.partition(".")[0] not in _READING_LIBRARIES
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if self._relative is None:
            self._relative = frozenset(
                alias.asname or alias.name.partition(".")[0]
                for node in walk(self.tree) if isinstance(node, ast.ImportFrom) and node.level
                for alias in node.names
            )
            self._free = free_names(self.tree)
        return isinstance(root, ast.Name) and (root.id in self._relative or root.id in self._free)

    # ------------------------------------------------------------------ modules that run
    def _runs(self, cls: ast.ClassDef) -> bool:
        """Whether the module class ``cls`` may run forward: a library's class (users build and call
        it), or one whose instance the file calls. A class local to a function (a test's), or of a
        script or notebook, runs only where the file calls an instance of it."""
        if self.parents.get(id(cls)) is self.tree and not _is_script(self.tree):
            return True
        names, attributes = self._called_names()
        for node in walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == cls.name):
                continue
            instance: ast.AST = node
            parent = self.parents.get(id(instance))
            if isinstance(parent, (ast.List, ast.Tuple)):
                instance, parent = parent, self.parents.get(id(parent))
            if isinstance(parent, ast.Call) and parent.func is not instance:
                instance, parent = parent, self.parents.get(id(parent))  # `nn.Sequential(Block(), ...)`, a wrapper
            if isinstance(parent, ast.Call) and parent.func is instance:
                return True
            if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
                target = parent.targets[0]
                if (isinstance(target, ast.Name) and target.id in names) or (isinstance(target, ast.Attribute) and target.attr in attributes):
                    return True
        return False

    def _built_by(self, cls: ast.ClassDef, depth: int = 0) -> list[ast.ClassDef]:
        """The other classes of the file that build ``cls`` as a submodule (``self.gnn = GNN(...)``), and the
        classes that build those: ``outer.parameters()`` holds the parameters of ``cls`` too."""
        if self._builders is None:
            self._builders = {}
            for node in walk(self.tree):  # once per file: the classes whose code calls each name
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    builder = self.classes.get(id(node))
                    if builder is not None:
                        self._builders.setdefault(node.func.id, []).append(builder)
        builders: list[ast.ClassDef] = []
        for builder in self._builders.get(cls.name, ()):
            if builder is not cls and builder not in builders:
                builders.append(builder)
        if depth < 3:
            for builder in list(builders):
                builders.extend(outer for outer in self._built_by(builder, depth + 1) if outer not in builders)
        return builders

    def _bases_known(self, cls: ast.ClassDef, ctx: Context, depth: int = 0) -> bool:
        """Whether every base class is torch's or the file's own (with known bases): a base from elsewhere
        (a project's pretrained-model class) may initialise every parameter (``self.apply(self._init_weights)``)."""
        own = {node.name: node for node in self.tree.body if isinstance(node, ast.ClassDef)}
        for base in cls.bases:
            qualname = ctx.facts.qualname(base) or ""
            if qualname.startswith("torch.") or (isinstance(base, ast.Name) and base.id == "object"):
                continue
            if isinstance(base, ast.Name) and base.id in own and own[base.id] is not cls and depth < 4:
                if self._bases_known(own[base.id], ctx, depth + 1):
                    continue
            return False
        return True

    def _displays(self) -> dict[str, list[ast.expr]]:
        """The list and tuple displays assigned to each name of the file (``params = [self.u, self.v]``)."""
        if self._display_names is None:
            displays: dict[str, list[ast.expr]] = {}
            for node in walk(self.tree):
                if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)):
                    for target in node.targets:
                        if isinstance(target, ast.Name):
                            displays.setdefault(target.id, []).append(node.value)
            self._display_names = displays
        return self._display_names

    def _called_names(self) -> tuple[frozenset[str], frozenset[str]]:
        """The names called (``model(x)``) and the attributes called (``self.attn(x)``, ``model.forward(x)``)."""
        if self._called is None:
            names: set[str] = set()
            attributes: set[str] = set()
            for node in walk(self.tree):
                if isinstance(node, ast.Call):
                    func = node.func
                    if isinstance(func, ast.Name):
                        names.add(func.id)
                    elif isinstance(func, ast.Attribute):
                        attributes.add(func.attr)
                        if func.attr == "forward" and isinstance(func.value, ast.Name):
                            names.add(func.value.id)
            self._called = frozenset(names), frozenset(attributes)
        return self._called

    # ------------------------------------------------------------------ attributes initialised anywhere
    def _written(self, attribute: str, attributes: dict[str, frozenset[ClassNameTest | None]], cls: ast.ClassDef | None) -> bool:
        """Whether an initialiser of the file writes ``attribute`` of a module of class ``cls``: anywhere, or under a
        test of the module's class name (``classname.find('Linear') != -1``) that ``cls`` or a subclass of the file
        passes."""
        tests = attributes.get(attribute)
        if not tests:
            return False
        if None in tests or cls is None:
            return True
        names = [cls.name, *(subclass.name for subclass in self._subclasses(cls))]
        return any(test is not None and test.passed_by(name) for test in tests for name in names)

    def _applies_own_initialiser(self, cls: ast.ClassDef) -> bool:
        """Whether ``cls.__init__`` applies a function of the file to every submodule (``self.apply(self.init_weights)``)."""
        if self._defined is None:
            self._defined = frozenset(node.name for node in walk(self.tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
        defined = self._defined
        for method in cls.body:
            if not (isinstance(method, ast.FunctionDef) and method.name == "__init__"):
                continue
            for call in walk(method):
                if (
                    isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "apply"
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "self" and len(call.args) == 1
                    and last_name(call.args[0]) in defined
                ):
                    return True
        return False

    def _subclasses(self, cls: ast.ClassDef, depth: int = 0) -> list[ast.ClassDef]:
        """The classes of the file derived from ``cls`` (a module's class name at run time may be theirs)."""
        found: list[ast.ClassDef] = []
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef) and node is not cls and any(isinstance(b, ast.Name) and b.id == cls.name for b in node.bases):
                found.append(node)
                if depth < 4:
                    found.extend(self._subclasses(node, depth + 1))
        return found

    def _initialised_attributes(self, ctx: Context) -> tuple[dict[str, frozenset[ClassNameTest | None]], frozenset[int]]:
        """The attribute names some initialiser of the file writes (with the class-name tests it runs under, None for
        none), and the classes with a method that initialises every parameter (``for p in self.parameters():
        nn.init.normal_(p)``, or an inherited ``reset_parameters()`` of torch's that does, called by the class)."""
        if self._initialised is not None:
            return self._initialised
        names: dict[str, set[ClassNameTest | None]] = {}
        classes: set[int] = set()
        loops: dict[str, list[ast.For]] = {}
        for node in walk(self.tree):
            if isinstance(node, ast.For):
                for target in walk(node.target):
                    if isinstance(target, ast.Name):
                        loops.setdefault(target.id, []).append(node)
        initialising: set[int] = set()
        looping: set[int] = set()  # the methods (of a class's body) holding such a loop over `self.parameters()`
        for node in walk(self.tree):
            if _initialising_method(node):
                initialising.update(id(call) for call in walk(node) if isinstance(call, ast.Call))
        for node in walk(self.tree):
            if not isinstance(node, ast.Call):
                continue
            written: list[ast.expr] = []
            if isinstance(node.func, ast.Attribute) and node.func.attr in INITIALISERS:
                written.append(node.func.value)
            if id(node) in initialising or writes_argument(node, ctx):
                written.extend(argument for argument in node.args if not isinstance(argument, ast.Starred))
            arms = [expression for written_one in written for expression in _arms(written_one)]
            guard = self._class_name_guard(node) if arms else None
            for expression in arms:
                while isinstance(expression, ast.Subscript) or (isinstance(expression, ast.Attribute) and expression.attr == "data"):
                    expression = expression.value  # `w[:n]`, `w.data`
                if isinstance(expression, ast.Attribute):
                    # The test restricts the write only where it tests the class of the module written (`m.r_bias`).
                    tested = guard is not None and isinstance(expression.value, ast.Name) and expression.value.id == guard.subject
                    names.setdefault(expression.attr, set()).add(guard if tested else None)
                elif isinstance(expression, ast.Name):
                    for loop in loops.get(expression.id, ()):
                        if loop.lineno <= node.lineno <= (loop.end_lineno or loop.lineno):
                            for attribute in _attributes_iterated(loop.iter, self._displays()):
                                names.setdefault(attribute, set()).add(None)
                            cls = self.classes.get(id(loop))
                            if cls is not None and _iterates_parameters(loop.iter):
                                classes.add(id(cls))
                                method = _method_of(loop, cls, self.parents)
                                if method is not None:
                                    looping.add(id(method))
        own_classes = [node for node in walk(self.tree) if isinstance(node, ast.ClassDef)]
        if looping:
            classes.update(id(cls) for cls in own_classes if id(cls) not in classes and self._inherits_loop(cls, looping))
        for cls in own_classes:
            if id(cls) not in classes and self._inherits_reset_of_every_parameter(cls, ctx):
                classes.add(id(cls))
        for attribute in self._replaced_by_a_method(own_classes):
            names.setdefault(attribute, set()).add(None)
        self._initialised = {name: frozenset(tests) for name, tests in names.items()}, frozenset(classes)
        return self._initialised

    def _class_name_guard(self, node: ast.AST) -> ClassNameTest | None:
        """The test of a module's class name that ``node`` runs under, in its function (``if classname.find('LSTM')
        != -1:``, also as an ``elif``); None where it runs under none."""
        child, parent = node, self.parents.get(id(node))
        while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
            if isinstance(parent, ast.If) and child in parent.body:
                test = class_name_test(parent.test, _function_of(parent, self.parents))
                if test is not None:
                    return test
            child, parent = parent, self.parents.get(id(parent))
        return None

    def _inherits_loop(self, cls: ast.ClassDef, looping: set[int]) -> bool:
        """Whether ``cls`` inherits, from a base class of the file, a method that loops over ``self.parameters()``
        initialising each: the method Python's MRO resolves for its name is one of ``looping`` (a subclass of the
        file overriding it wins). A base from elsewhere met first in the MRO may define it: unknown, not inherited."""
        order = self._mro(cls, 0)
        if order is None:
            return False
        names = {method.name for base in order if isinstance(base, ast.ClassDef) for method in _methods(base).values() if id(method) in looping}
        for name in names:
            for base in order:
                if not isinstance(base, ast.ClassDef):
                    break  # a base from elsewhere (torch's too): what it defines is not known here
                method = _methods(base).get(name)
                if method is not None:
                    if id(method) in looping:
                        return True
                    break
        return False

    def _mro(self, cls: ast.ClassDef, depth: int) -> list[ast.ClassDef | str] | None:
        """Python's C3 linearisation of ``cls`` over the file's top-level classes; a base from elsewhere is one
        opaque entry (its text). None where it fails (an inconsistent order, or too deep)."""
        if depth > 8:
            return None
        own = {node.name: node for node in self.tree.body if isinstance(node, ast.ClassDef)}
        sequences: list[list[ast.ClassDef | str]] = []
        for base in cls.bases:
            if isinstance(base, ast.Name) and base.id in own and own[base.id] is not cls:
                linearised = self._mro(own[base.id], depth + 1)
                if linearised is None:
                    return None
                sequences.append(linearised)
            else:
                sequences.append([ast.unparse(base)])
        sequences.append([sequence[0] for sequence in sequences])  # the bases themselves, in their order
        result: list[ast.ClassDef | str] = [cls]
        sequences = [sequence for sequence in sequences if sequence]
        while sequences:
            for sequence in sequences:
                head = sequence[0]
                if not any(_same(head, other) for rest in sequences for other in rest[1:]):
                    break
            else:
                return None
            result.append(head)
            sequences = [[entry for entry in sequence if not _same(entry, head)] for sequence in sequences]
            sequences = [sequence for sequence in sequences if sequence]
        return result

    def _inherits_reset_of_every_parameter(self, cls: ast.ClassDef, ctx: Context) -> bool:
        """A subclass of a torch module whose ``reset_parameters()`` initialises every parameter (``nn.LSTMCell``)
        that calls ``self.reset_parameters()`` without defining its own."""
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "reset_parameters" for s in cls.body):
            return False
        if not any(ctx.facts.qualname(base) in RESETS_EVERY_PARAMETER for base in cls.bases):
            return False
        return any(
            isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "reset_parameters"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == "self" and not call.args
            for call in walk(cls)
        )

    @staticmethod
    def _replaced_by_a_method(own_classes: list[ast.ClassDef]) -> set[str]:
        """The attributes a method other than ``__init__`` replaces with a parameter of values it is given
        (``def set_values(self, mu): self.mu = nn.Parameter(mu)``): the class is made to have them set."""
        replaced: set[str] = set()
        for cls in own_classes:
            for method in cls.body:
                if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or method.name == "__init__":
                    continue
                given = {a.arg for a in (*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs)} - {"self"}
                for statement in walk(method):
                    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
                        continue
                    target, value = statement.targets[0], statement.value
                    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"):
                        continue
                    if (
                        isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Name)
                        and value.args[0].id in given and last_name(value.func) == "Parameter"
                    ):
                        replaced.add(target.attr)
        return replaced


def _is_script(tree: ast.Module) -> bool:
    """Code that runs when the file runs: a call, loop or ``with`` at the top level, or a main guard."""
    for statement in tree.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            return True
        if isinstance(statement, (ast.For, ast.While, ast.With)):
            return True
        if isinstance(statement, ast.If) and "__name__" in ast.unparse(statement.test):
            return True
    return False


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]


def writes_argument(call: ast.Call, ctx: Context) -> bool:
    """An initialiser: ``nn.init.xavier_uniform_(w)``, ``init.normal_(w)`` (a project's own ``init``
    module), ``trunc_normal_(w)``, or a callee named for writing its argument (``init_weights(w)``)."""
    if not call.args:
        return False
    func = call.func
    qualname = (ctx.facts.qualname(func) or "").lower()
    name = last_name(func)
    if qualname.startswith("torch.nn.init."):
        return True
    if name in _INIT_FUNCTIONS and not qualname.startswith(("torch.", "numpy.")):
        return True  # `zeros(self.bias)` from torch_geometric's inits, not `torch.zeros(n)`
    receiver = func.value if isinstance(func, ast.Attribute) else None
    if isinstance(receiver, (ast.Name, ast.Attribute)) and "init" in (receiver.id if isinstance(receiver, ast.Name) else receiver.attr).lower():
        return True  # `init.normal_(w)`, `inits.glorot(w)`
    return any(word in name.lower() or word in qualname for word in _WRITER_WORDS)


class ClassNameTest(NamedTuple):
    """A test of a module's class name: ``classname.find('Linear') != -1`` (``how`` "in"), ``== 'Linear'``
    ("=="), ``.startswith('Conv')``, ``.endswith('Norm')``."""

    how: str
    text: str
    node: ast.expr  # the test as written
    subject: str  # the name whose class is tested (`m` of `m.__class__.__name__`)

    def passed_by(self, name: str) -> bool:
        if self.how == "in":
            return self.text in name
        if self.how == "==":
            return name == self.text
        return name.startswith(self.text) if self.how == "startswith" else name.endswith(self.text)


def class_name_test(test: ast.expr, function: ast.AST | None) -> ClassNameTest | None:
    """``test`` as a test of a class name read in ``function`` (``m.__class__.__name__``, ``type(m).__name__``, or a
    name bound to one there); None for any other test."""

    def subject_of(node: ast.expr) -> str | None:
        """``m`` where ``node`` is ``m``'s class name."""
        if isinstance(node, ast.Attribute) and node.attr == "__name__":
            owner = node.value
            if isinstance(owner, ast.Attribute) and owner.attr == "__class__" and isinstance(owner.value, ast.Name):
                return owner.value.id
            if isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name) and owner.func.id == "type" and len(owner.args) == 1:
                return owner.args[0].id if isinstance(owner.args[0], ast.Name) else None
            return None
        if isinstance(node, ast.Name) and function is not None:
            bound = [
                s.value for s in walk(function)
                if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in s.targets)
            ]
            return subject_of(bound[0]) if len(bound) == 1 else None
        return None

    def text(node: ast.expr) -> str | None:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value else None

    how, written, subject = None, None, None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, ast.In):
            how, written, subject = "in", text(left), subject_of(right)
        elif isinstance(op, ast.Eq):
            how, written, subject = "==", text(right), subject_of(left)
        elif (
            isinstance(left, ast.Call) and isinstance(left.func, ast.Attribute) and left.func.attr == "find"
            and len(left.args) == 1 and _not_minus_one(op, right)
        ):
            how, written, subject = "in", text(left.args[0]), subject_of(left.func.value)
    elif isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr in ("startswith", "endswith") and len(test.args) == 1:
        how, written, subject = test.func.attr, text(test.args[0]), subject_of(test.func.value)
    if how is None or written is None or subject is None:
        return None
    return ClassNameTest(how, written, test, subject)


def _not_minus_one(op: ast.cmpop, right: ast.expr) -> bool:
    """``!= -1``, ``>= 0``, ``> -1``: what ``str.find`` returns when the text is found."""
    number = right.operand.value if isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub) and isinstance(right.operand, ast.Constant) else None
    value = -number if isinstance(number, int) else right.value if isinstance(right, ast.Constant) else None
    return (isinstance(op, (ast.NotEq, ast.Gt)) and value == -1) or (isinstance(op, ast.GtE) and value == 0)


def _method_of(node: ast.AST, cls: ast.ClassDef, parents: dict[int, ast.AST]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The method of ``cls``'s body that holds ``node`` (None where ``node`` is in the class body itself)."""
    child, parent = node, parents.get(id(node))
    while parent is not None and parent is not cls:
        child, parent = parent, parents.get(id(parent))
    return child if parent is cls and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The methods ``cls`` defines, by name (the last definition of a name wins, as in Python)."""
    return {s.name: s for s in cls.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _same(one: ast.ClassDef | str, other: ast.ClassDef | str) -> bool:
    return one is other or (isinstance(one, str) and one == other)


def _function_of(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST | None:
    while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        node = parents.get(id(node))  # type: ignore[assignment]
    return node


def _initialising_method(function: ast.AST) -> bool:
    """``reset_parameters``, ``_init_weights``, ``initialize``: a method named for (re)initialising."""
    return (
        isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name != "__init__"
        and any(word in function.name.lower() for word in ("init", "reset"))
    )


def _arms(expression: ast.expr) -> list[ast.expr]:
    """``a if c else b`` may be either: an initialiser given it writes both (``xavier_uniform_(w if c else v)``)."""
    if isinstance(expression, ast.IfExp):
        return [*_arms(expression.body), *_arms(expression.orelse)]
    return [expression]


def _attributes_iterated(iterable: ast.expr, displays: dict[str, list[ast.expr]]) -> list[str]:
    """``for p in [module.q, module.k]``: the attribute names of a display, also through a name bound to one
    (``params = [self.u, self.v]; for p in params:``)."""
    if isinstance(iterable, ast.Name):
        return [name for display in displays.get(iterable.id, ()) for name in _attributes_iterated(display, {})]
    if isinstance(iterable, (ast.List, ast.Tuple)):
        return [element.attr for element in iterable.elts if isinstance(element, ast.Attribute)]
    return []


def _iterates_parameters(iterable: ast.expr) -> bool:
    """``self.parameters()``, ``self.named_parameters()``."""
    return (
        isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute)
        and iterable.func.attr in ("parameters", "named_parameters")
        and isinstance(iterable.func.value, ast.Name) and iterable.func.value.id == "self"
    )


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
    # The statement of the call: its own targets (`X, y = Tensor(X), Tensor(y).long()`) are bound after it runs.
    statement: ast.AST = call.node
    while not isinstance(statement, ast.stmt) and id(statement) in parents:
        statement = parents[id(statement)]
    verdict = _verdict(source, target)
    if verdict == LOSSY and source in _FLOAT_BITS and target in _INTEGER_RANGES and _read_from_a_file(argument, ctx, statement):
        # `torch.LongTensor(np.loadtxt(path, dtype=np.float32)[:, -1])`: whether the column holds whole numbers
        # (class ids written as floats) is decided by the file, not visible in the code.
        verdict = UNKNOWN_SOURCE
    if verdict == LOSSY and source in _FLOAT_BITS and target in _INTEGER_RANGES and _whole_numbers(argument, ctx, statement, binary=target == "bool"):
        verdict = KEEPS  # `torch.LongTensor(np.hstack([np.zeros(n), np.ones(m)]))`: 0/1 floats truncate to themselves
    if verdict == LOSSY and source in _FLOAT_BITS and target in _INTEGER_RANGES and _filled_from_a_file(argument, ctx, statement):
        # `labels = np.zeros(n)`, then `labels[train_index] = y_train` of `np.load(...)` data: whole numbers where
        # nothing is written, and whatever the file holds elsewhere (class ids written as floats, or not).
        verdict = UNKNOWN_SOURCE
    if verdict == CHANGES and ((back and _whole_numbers(argument, ctx, statement)) or _divided(call.node, parents)):
        # `Tensor(np.hstack([np.zeros(n, dtype=int), np.ones(m, dtype=int)])).long()`: 0/1 integers come back
        # exactly; `1.0 / Tensor(counts)`: true division makes floats of integers anyway.
        verdict = KEEPS
    if verdict == CHANGES and _literal_array(argument, ctx):
        # `torch.Tensor(np.array([[-1, 0], [0, 1]]))`: an array of literals is a display of literals written
        # through NumPy; like `torch.Tensor([[-1, 0], [0, 1]])`, meant as floats and held exactly.
        verdict = KEEPS
    if verdict == CHANGES and declared is not None:
        # `torch.FloatTensor(int32 features)`: the author named the float dtype; nothing visible is lost.
        verdict = KEEPS
    return Cast(verdict, source, target, back)


# NumPy constructors whose floats are whole numbers (given whole-number arguments), and the functions
# that only rearrange or join their arguments' values.
_WHOLE_NUMBER_MAKERS = frozenset({"numpy.zeros", "numpy.ones", "numpy.eye", "numpy.identity", "numpy.zeros_like", "numpy.ones_like"})
_JOINS = frozenset(
    {"numpy.hstack", "numpy.vstack", "numpy.stack", "numpy.concatenate", "numpy.append", "numpy.array", "numpy.asarray", "numpy.column_stack"}
)


def _whole_numbers(node: ast.expr, ctx: Context, before: ast.AST, depth: int = 0, binary: bool = False, scope: Scope | None = None) -> bool:
    """Floats that are whole numbers by construction: zeros, ones, an identity, joined or stacked.

    A name counts when every binding of it before ``before`` assigns such a value and nothing writes
    into it in place afterwards (the def-use index), also an item of the tuple every ``return`` of a function of the
    file gives (``X, y = make_data(n)`` of ``return X, np.hstack([np.zeros(n), np.ones(n)])``). With ``binary``, only
    0 and 1 count (what a bool dtype keeps): zeros, ones, an identity, comparisons, not counters or other whole
    numbers. ``scope``: the function the names belong to (the one being walked unless said).
    """
    if depth > 4:
        return False
    scope = scope or ctx.scope
    if isinstance(node, ast.Name):
        # `y = torch.LongTensor(y)` binds `y` before the call starts: that binding is not the call's source.
        bindings = [
            binding for binding in scope.before(node.id, before)
            if binding.value is None or not (_start(binding.value) <= _start(before) and _end(before) <= _end(binding.value))
        ]
        return bool(bindings) and not scope.is_parameter(node.id) and all(
            (
                (not binary and _counter(node.id, binding, ctx, scope))
                or _unpacked_item_holds(node.id, binding, ctx, scope, lambda item, at, inner: _whole_numbers(item, ctx, at, depth + 1, binary, inner))
            ) if binding.value is None else (
                _writes_whole_numbers(node.id, binding.value, ctx, depth, binary=binary, scope=scope)
                and (
                    _whole_numbers(binding.value, ctx, binding.value, depth + 1, binary=binary, scope=scope)
                    or (_allocation(binding.value, ctx) and scope.written_in_place_after(node.id, binding.value))
                )
            )
            for binding in bindings
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VALUE_KEEPING_METHODS:
        return _whole_numbers(node.func.value, ctx, before, depth, binary=binary, scope=scope)  # `ids.long().to(device)`: the same numbers
    if isinstance(node, (ast.List, ast.Tuple)):
        return bool(node.elts) and all(_whole_numbers(element, ctx, before, depth, binary=binary, scope=scope) for element in node.elts)
    if isinstance(node, ast.Constant):
        if binary:
            return isinstance(node.value, (int, float)) and node.value in (0, 1)
        return isinstance(node.value, (int, float)) and float(node.value).is_integer() and abs(node.value) <= 2**24
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and not binary:
        return _whole_numbers(node.operand, ctx, before, depth + 1, binary=binary, scope=scope)
    if isinstance(node, ast.Attribute) and node.attr == "T":
        return _whole_numbers(node.value, ctx, before, depth + 1, binary=binary, scope=scope)
    if isinstance(node, ast.Compare):
        return True  # `np.abs(i - j) > width`: booleans, stored as 0 and 1
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitXor, ast.BitAnd, ast.BitOr)):
        return all(_whole_numbers(side, ctx, before, depth + 1, binary=binary, scope=scope) for side in (node.left, node.right))
    if not (isinstance(node, ast.Call) and node.args):
        return False
    qualname = ctx.qualname(node.func) or ""
    if qualname in _WHOLE_NUMBER_MAKERS:
        return True
    if qualname == "numpy.full":
        return len(node.args) >= 2 and _whole_numbers(node.args[1], ctx, before, depth + 1, binary=binary, scope=scope)
    if qualname in _JOINS or qualname in _TORCH_CONVERSIONS:
        return _whole_numbers(node.args[0], ctx, before, depth, binary=binary, scope=scope)  # nested calls end: only names can loop
    return False


# Methods that give the same numbers back (a cast between whole-number-holding dtypes, a move, a copy).
_VALUE_KEEPING_METHODS = frozenset(
    {"long", "int", "float", "double", "short", "to", "cpu", "cuda", "clone", "copy", "detach", "astype", "reshape", "view", "flatten", "squeeze", "unsqueeze"}
)
# Conversions into a tensor that keep the numbers (the legacy constructors of a wide enough dtype included).
_TORCH_CONVERSIONS = frozenset(
    {"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.Tensor", "torch.FloatTensor", "torch.DoubleTensor", "torch.LongTensor", "torch.IntTensor"}
)


def _allocation(node: ast.expr, ctx: Context) -> bool:
    """``np.empty(shape)``: an array whose values are only what is written into it afterwards."""
    return isinstance(node, ast.Call) and (ctx.qualname(node.func) or "") in ("numpy.empty", "numpy.empty_like")


def _counter(name: str, binding: Binding, ctx: Context, scope: Scope) -> bool:
    """``for i, x in enumerate(xs)`` / ``for i in range(n)``: ``name`` is bound to a loop counter (whole numbers
    that count items, far below ``2**24`` in any array built item by item)."""
    parents = initialisation_of(ctx).parents
    for store in scope.stores(name):
        if _start(store) != binding.position:
            continue
        parent = parents.get(id(store))
        if isinstance(parent, ast.For) and parent.target is store:
            return _builtin_call(parent.iter, "range")
        if isinstance(parent, ast.Tuple) and parent.elts and parent.elts[0] is store:
            loop = parents.get(id(parent))
            return (
                isinstance(loop, (ast.For, ast.comprehension)) and loop.target is parent
                and _builtin_call(loop.iter, "enumerate")
            )
    return False


def _builtin_call(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def _filled_from_a_file(node: ast.expr, ctx: Context, before: ast.AST) -> bool:
    """``labels`` of ``labels = np.zeros(n)`` whose in-place writes store whole numbers or values read from a
    file (``labels[train_index] = y_train`` of ``np.load``), at least one of them from the file."""
    if not isinstance(node, ast.Name) or ctx.scope.is_parameter(node.id):
        return False
    bindings = ctx.scope.before(node.id, before)
    return bool(bindings) and all(
        binding.value is not None
        and _whole_numbers(binding.value, ctx, binding.value)
        and ctx.scope.written_in_place_after(node.id, binding.value)
        and _writes_whole_numbers(node.id, binding.value, ctx, 0, from_a_file=True)
        for binding in bindings
    )


def _writes_whole_numbers(
    name: str, value: ast.expr, ctx: Context, depth: int, binary: bool = False, from_a_file: bool = False, scope: Scope | None = None
) -> bool:
    """Whether every in-place write of ``name`` after it gets ``value`` (before its next binding) stores whole
    numbers: ``ids[mask] = i`` with ``i`` a counter, ``grid[:, j] = 1``. ``from_a_file``: values read from a file
    count too, and at least one write must store one."""
    read = False
    scope = scope or ctx.scope
    if not scope.written_in_place_after(name, value):
        return True
    after = _end(value)
    rebound = min((binding.position for binding in scope.bindings.get(name, ()) if binding.position > after), default=None)
    parents = initialisation_of(ctx).parents
    for mention in scope.mentions(name):
        at = _start(mention.node)
        if not (after < at and (rebound is None or at < rebound)):
            continue
        if isinstance(mention.node, ast.Call) and mention.method is not None and not mention.method.endswith("_"):
            continue  # `ids.sum()`: not a write (`f(ids)` is not one either, as for `written_in_place_after`)
        if isinstance(mention.node, ast.Call) and mention.method is None:
            continue
        assignment = parents.get(id(mention.node))
        if not (isinstance(mention.node, ast.Subscript) and isinstance(assignment, ast.Assign)):
            return False
        if from_a_file and _read_from_a_file(assignment.value, ctx, assignment, 0, scope):
            read = True
            continue
        if not _whole_numbers(assignment.value, ctx, assignment, depth + 1, binary, scope):
            return False
    return read or not from_a_file


def _literal_array(node: ast.expr, ctx: Context) -> bool:
    """``torch.Tensor(np.array([[-1, 0], [0, 1]]))``: integer literals that float32 holds exactly, written through
    NumPy in the call itself, without a dtype. A named array (``labels = np.array([0, 1, 2])``) is data, not a
    display: it stays TCV201's."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return False
    if (ctx.qualname(node.func) or "") not in ("numpy.array", "numpy.asarray"):
        return False
    numbers = _literal_numbers(node.args[0]) if isinstance(node.args[0], (ast.List, ast.Tuple)) else None
    return bool(numbers) and all(type(value) is int and abs(value) <= 2**24 for value in numbers)


def _divided(node: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """``1.0 / torch.Tensor(counts)``: the result is an operand of true division, whose result is a float
    tensor whatever the dtype of the operands."""
    parent = parents.get(id(node))
    return isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Div)


# Functions that read an array's values from a file: what they hold is not visible in the code.
_FILE_READERS = frozenset({"numpy.loadtxt", "numpy.genfromtxt", "numpy.load", "numpy.fromfile"})


def _read_from_a_file(node: ast.expr, ctx: Context, before: ast.AST, depth: int = 0, scope: Scope | None = None) -> bool:
    """An array read from a file (``np.loadtxt``, ``np.genfromtxt``, ``np.load``), or a slice, column or item of one
    (``data["y_train"]`` of an ``np.load`` archive), also through names every binding of which before ``before`` is
    one, and through an item of the tuple a function of the file returns (``adj, y = load_data(path)``).
    ``scope``: the function the names belong to (the one being walked unless said)."""
    if depth > 4:
        return False
    scope = scope or ctx.scope
    while isinstance(node, ast.Subscript) or (isinstance(node, ast.Attribute) and node.attr == "T"):
        node = node.value
    if isinstance(node, ast.Name):
        bindings = scope.before(node.id, before)
        return bool(bindings) and not scope.is_parameter(node.id) and all(
            _read_from_a_file(binding.value, ctx, binding.value, depth + 1, scope)
            if binding.value is not None
            else _unpacked_from_a_reader(node.id, binding, ctx, depth, scope)
            for binding in bindings
        )
    return isinstance(node, ast.Call) and (ctx.qualname(node.func) or "") in _FILE_READERS


def _unpacked_from_a_reader(name: str, binding: Binding, ctx: Context, depth: int, scope: Scope) -> bool:
    """``name`` of ``a, name = load(path)`` where every ``return`` of the file's function ``load`` is a tuple
    whose item there is read from a file."""
    return _unpacked_item_holds(name, binding, ctx, scope, lambda item, at, inner: _read_from_a_file(item, ctx, at, depth + 1, inner))


def _unpacked_item_holds(
    name: str, binding: Binding, ctx: Context, scope: Scope, holds: Callable[[ast.expr, ast.AST, Scope], bool]
) -> bool:
    """``name`` of ``a, name = make(...)`` where every ``return`` of the file's function ``make`` is a tuple whose
    item there ``holds`` (given the item, the ``return`` and the function's scope)."""
    parents = initialisation_of(ctx).parents
    store = next((store for store in scope.stores(name) if _start(store) == binding.position), None)
    target = parents.get(id(store)) if store is not None else None
    assignment = parents.get(id(target))
    if not (isinstance(target, ast.Tuple) and isinstance(assignment, ast.Assign) and assignment.targets == [target]):
        return False
    call = assignment.value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)) or any(isinstance(e, ast.Starred) for e in target.elts):
        return False
    definitions = ctx.facts.definitions.get(call.func.id, ())
    if len(definitions) != 1 or not isinstance(definitions[0], ast.FunctionDef):
        return False
    function = definitions[0]
    index = target.elts.index(store)  # type: ignore[arg-type]
    helper_scope = ctx.scope_of(function)
    returns = helper_scope.returns()
    return bool(returns) and all(
        isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(target.elts)
        and holds(node.value.elts[index], node, helper_scope)
        for node in returns
    )


def _verdict(source: str, target: str) -> str:
    if source == "bool" or (source == "uint8" and target == "bool"):
        return KEEPS  # uint8 is the mask dtype torch had before bool: a mask stays the mask it was
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


def keep_integers_fix(call: LegacyCall, ctx: Context) -> Fix:
    """``torch.tensor(ids)`` for ``torch.Tensor(ids)`` whose integers are cast back (``.long()``): unsafe,
    because integers above ``2**24`` now keep their values instead of being rounded through float32."""
    node = call.node
    return make_fix(
        Applicability.UNSAFE,
        f"Replace `{ctx.text(node.func)}` with `{call.torch_alias}.tensor`, which keeps the integers",
        Edit(ctx.start(node.func), ctx.end(node.func), f"{call.torch_alias}.tensor"),
    )


def initialisation_of(ctx: Context) -> Initialisation:
    """The file's :class:`Initialisation`, shared by the legacy-constructor rules (TCV201, TCV202, TCV211):
    built once per file, not once per rule, and dropped with the file's context."""
    initialisation = ctx.shared.get(_INITIALISATION)
    if initialisation is None:
        initialisation = ctx.shared[_INITIALISATION] = Initialisation(ctx.facts.tree, ctx.kept)
    return initialisation  # type: ignore[return-value]


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
            self._parents = initialisation_of(ctx).parents
        return call, classify_cast(call, self._parents, ctx)
