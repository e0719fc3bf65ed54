"""What NumPy calls produce: dtype, and the array facts the TCV2xx rules rely on.

Facts (``values.Fact`` members in ``Value.facts``) hold on every path:

- ``negative-stride``: a view with a negative step (``a[::-1]``, ``np.flip``...)
- ``readonly``: not writable (``np.frombuffer(bytes)``, ``np.broadcast_to``, read-only memmaps...)
- ``non-native-byte-order``: a big-endian dtype on this (little-endian) platform
- ``masked``: a ``numpy.ma`` masked array (the mask is dropped by torch)
- ``zero-d``: a 0-d array (``np.array(3)``)
- ``maybe-scalar``: ``a[i]`` of an array of unknown rank, which is a NumPy scalar when ``a`` is 1-D
"""

from __future__ import annotations

import ast

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.values import Fact, Grad, Kind, Value, ndarray, origin

NEGATIVE_STRIDE = Fact.NEGATIVE_STRIDE
READONLY = Fact.READONLY
NON_NATIVE = Fact.NON_NATIVE
MASKED = Fact.MASKED
ZERO_D = Fact.ZERO_D
MAYBE_SCALAR = Fact.MAYBE_SCALAR

UNSUPPORTED_DTYPES = frozenset(
    {"object", "str_", "bytes_", "datetime64", "timedelta64", "longdouble", "clongdouble", "void", "structured"}
)

# Functions whose result is float64 unless a dtype is given.
_FLOAT64_PRODUCERS = frozenset(
    "random.rand random.randn random.random random.random_sample random.uniform random.normal random.standard_normal "
    "random.exponential random.beta random.gamma linspace logspace zeros ones empty full identity eye "
    "mean std var average".split()
)
_FLIPS = frozenset({"flip", "fliplr", "flipud"})
_MAY_COPY = frozenset({"ravel", "reshape"})
_READONLY_VIEWS = frozenset({"broadcast_to", "lib.stride_tricks.broadcast_to"})
# Read-only unless ``writeable=True`` (sliding_window_view), writable unless ``writeable=False`` (as_strided).
_STRIDE_TRICKS = {"lib.stride_tricks.sliding_window_view": False, "lib.stride_tricks.as_strided": True}
# Where a function takes its dtype positionally: ``np.zeros(3, np.float32)``, ``np.frombuffer(b, ">f4")``.
_DTYPE_POSITION = {
    **dict.fromkeys(("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "zeros", "ones", "empty"), 1),
    **dict.fromkeys(("frombuffer", "fromfile", "fromiter", "memmap"), 1),
    "full": 2,
}
# ``numpy.ma`` functions whose result is not a masked array.
_MA_PLAIN_RESULTS = frozenset(
    "getdata getmask getmaskarray filled compressed is_masked is_mask isMaskedArray isMA isarray count "
    "make_mask make_mask_none mask_or".split()
)
# Functions that return a view or the same array: facts carry over from the first argument.
_VIEWS = frozenset({"asarray", "ravel", "squeeze", "transpose", "reshape", "swapaxes", "moveaxis", "atleast_1d", "expand_dims"})


# Reductions that give a NumPy scalar, not an array, over the whole array (no axis, keepdims or out):
# name -> where their axis is passed positionally.
_WHOLE_ARRAY_REDUCTIONS = {
    **dict.fromkeys(
        "sum mean max min amax amin std var prod median average any all argmax argmin ptp nansum nanmean nanmax nanmin "
        "nanstd nanvar nanmedian".split(),
        1,
    ),
    "linalg.norm": 2,
}

# Element-wise functions (ufuncs): a NumPy scalar of numbers (``np.sqrt(5)``), an array of arrays.
_ELEMENTWISE = frozenset(
    "sqrt cbrt square exp exp2 expm1 log log2 log10 log1p sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh "
    "arcsinh arccosh arctanh deg2rad rad2deg degrees radians abs absolute fabs floor ceil rint trunc sign power "
    "float_power maximum minimum fmax fmin hypot mod fmod remainder round around clip isnan isinf isfinite".split()
)

# Random draws that give one number, not an array, without a size: name -> where `size` is passed positionally
# (None: they take sizes as separate arguments, `np.random.rand(2, 3)`).
_RANDOM_DRAWS: dict[str, int | None] = {
    **dict.fromkeys(("random.rand", "random.randn"), None),
    **dict.fromkeys(("random.random", "random.random_sample", "random.ranf", "random.sample", "random.standard_normal"), 0),
    **dict.fromkeys(("random.exponential", "random.poisson", "random.choice", "random.standard_gamma", "random.chisquare"), 1),
    **dict.fromkeys(
        ("random.uniform", "random.normal", "random.randint", "random.beta", "random.gamma", "random.binomial",
         "random.lognormal", "random.laplace", "random.logistic", "random.gumbel"),
        2,
    ),
}

# Functions that return a tuple of 1-D int64 index arrays, one per dimension, whatever they are given.
_INDEX_TUPLES = frozenset(
    "tril_indices triu_indices tril_indices_from triu_indices_from diag_indices diag_indices_from mask_indices".split()
)

# NumPy functions whose result is int64 (the default integer) when no dtype is given.
_INT64_PRODUCERS = frozenset(
    "random.randint argsort argmax argmin argwhere flatnonzero searchsorted digitize bincount".split()
)


def dtype_facts(dtype_node: ast.expr | None, dtype_value: Value | None) -> tuple[str | None, frozenset[str]]:
    """The canonical dtype named by a ``dtype=`` argument, and the facts it implies."""
    if dtype_node is None:
        return None, frozenset()
    text = _dtype_text(dtype_node)
    if text is not None:
        dtype = K.dtype_from_string(text) or ("structured" if "," in text else None)
        big_endian = text.startswith(">") and dtype is not None and dtype not in K.SINGLE_BYTE_DTYPES
        return dtype, frozenset({NON_NATIVE}) if big_endian else frozenset()
    if isinstance(dtype_node, (ast.List, ast.Dict)):
        return "structured", frozenset()
    if dtype_value is not None and dtype_value.kind is Kind.DTYPE:
        return dtype_value.dtype, dtype_value.facts
    if isinstance(dtype_node, ast.Name):
        return K.dtype_from_builtin(dtype_node.id), frozenset()
    return None, frozenset()


def _dtype_text(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def numpy_call(qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
    """The value of ``numpy.<name>(...)``."""
    name = qualname[len("numpy."):]
    dtype_node, dtype_value = _keyword(node, "dtype"), keywords.get("dtype")
    position = _DTYPE_POSITION.get(name)
    if dtype_node is None and position is not None and len(node.args) > position:
        dtype_node, dtype_value = node.args[position], args[position]
    dtype, facts = dtype_facts(dtype_node, dtype_value)
    if name == "dtype" and node.args:
        dtype, facts = dtype_facts(node.args[0], args[0])
        return Value(kind=Kind.DTYPE, dtype=dtype, facts=facts)
    first = args[0] if args else None
    if name in ("vectorize", "frompyfunc"):
        return Value(kind=Kind.OTHER, grad=Grad.NO, instance_of=qualname)  # a function over arrays, not an array
    if name in ("array", "asarray", "ascontiguousarray", "asanyarray", "copy", "require"):
        return _from_data(name, node, first, dtype, facts, dtype_given=dtype_node is not None)
    if name == "nonzero" or (name == "where" and len(node.args) == 1 and not node.keywords) or name in _INDEX_TUPLES:
        # A tuple of 1-D int64 index arrays, one per dimension: `np.where(mask)[0]` is an array, never a scalar.
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=ndarray("int64", array_origin=origin(node)))
    if name.startswith("ma.") or name == "ma":
        if name[len("ma."):] in _MA_PLAIN_RESULTS:
            return ndarray(dtype)
        return ndarray(dtype, facts=facts | {MASKED})
    if name in _FLIPS or (name == "rot90" and _rot90_flips(node)):
        return ndarray(first.dtype if first is not None else None, facts=frozenset({NEGATIVE_STRIDE}))
    if name in _READONLY_VIEWS:
        return ndarray(first.dtype if first is not None else None, facts=frozenset({READONLY}))
    if name in _STRIDE_TRICKS:
        writeable = _keyword(node, "writeable")
        if writeable is None:
            readonly = not _STRIDE_TRICKS[name]
        else:
            readonly = isinstance(writeable, ast.Constant) and writeable.value is False
        return ndarray(first.dtype if first is not None else None, facts=frozenset({READONLY}) if readonly else frozenset())
    if name == "frombuffer":
        readonly = frozenset({READONLY}) if node.args and _is_bytes(node.args[0]) else frozenset()
        return ndarray(dtype or (None if dtype_node is not None else "float64"), facts=facts | readonly)
    if name == "memmap":
        mode = _keyword(node, "mode")
        if mode is None and len(node.args) >= 3:
            mode = node.args[2]
        readonly = isinstance(mode, ast.Constant) and mode.value in ("r", "readonly")
        return ndarray(dtype or (None if dtype_node is not None else "uint8"), facts=facts | ({READONLY} if readonly else set()))
    if name == "load":
        mode = _keyword(node, "mmap_mode")
        readonly = isinstance(mode, ast.Constant) and mode.value == "r"
        return ndarray(dtype, facts=frozenset({READONLY}) if readonly else frozenset())
    if name in _VIEWS and first is not None and first.kind is Kind.NDARRAY:
        if name == "asarray":
            return first
        # ravel/reshape copy a non-contiguous array (positive strides) and view a contiguous one.
        return first.with_(facts=first.facts - {ZERO_D} - ({NEGATIVE_STRIDE} if name in _MAY_COPY else set()))
    if dtype_node is not None and dtype is None:
        return ndarray(None, facts=facts)  # a dtype we cannot read: do not guess the default
    if name == "full" and dtype is None:
        # The fill value decides: np.full(3, 7) is int64, np.full(3, "x") str_; a fill of unknown type
        # (`np.full(shape, pad_id)`) leaves the dtype unknown, not float64.
        fill, fill_value = (node.args[1], args[1]) if len(node.args) > 1 else (_keyword(node, "fill_value"), keywords.get("fill_value"))
        if fill is None:
            return ndarray(None)
        known = fill_value.dtype if fill_value is not None and fill_value.kind in (Kind.NUMBER, Kind.NDARRAY) else None
        return ndarray(literal_dtype(fill) or known)
    if dtype is None and name in _FLOAT64_PRODUCERS:
        dtype = "float64"
    if dtype is None and name in _INT64_PRODUCERS:
        dtype = "int64"
    if dtype is None and name in ("arange",):
        dtype = "float64" if any(isinstance(a, ast.Constant) and isinstance(a.value, float) for a in node.args) else "int64"
    if dtype is None and name in ("zeros_like", "ones_like", "empty_like", "full_like") and first is not None:
        dtype = first.dtype
    if dtype is None and name in ("sort", "concatenate", "stack", "vstack", "hstack", "clip", "abs") and first is not None:
        dtype = first.dtype if first.kind is Kind.NDARRAY else (first.element.dtype if first.element else None)
    if name in _RANDOM_DRAWS and _draws_one(node, _RANDOM_DRAWS[name]):
        return Value(kind=Kind.NUMBER, facts=frozenset({Fact.NUMPY_SCALAR}))  # np.random.uniform(0, 1): one number
    if name in _ELEMENTWISE and args and not any(arg.kind in (Kind.NDARRAY, Kind.SEQUENCE, Kind.TENSOR) for arg in args):
        if all(arg.kind is Kind.NUMBER for arg in args):
            return Value(kind=Kind.NUMBER, dtype=dtype, facts=frozenset({Fact.NUMPY_SCALAR}))
        return ndarray(dtype, facts=facts | {MAYBE_SCALAR})  # of a value of unknown kind: a scalar of a number
    if name in _ELEMENTWISE and args and not any(arg.kind in (Kind.SEQUENCE, Kind.TENSOR) for arg in args) and all(
        MAYBE_SCALAR in arg.facts for arg in args if arg.kind is Kind.NDARRAY
    ):
        return ndarray(dtype, facts=facts | {MAYBE_SCALAR})  # `np.sqrt(np.inner(x, x))`: a scalar of a scalar
    if name == "vdot":
        return Value(kind=Kind.NUMBER, dtype=dtype, facts=frozenset({Fact.NUMPY_SCALAR}))  # always one number
    if name == "inner" and not any(arg.kind is Kind.TENSOR for arg in args):
        return ndarray(dtype, facts=facts | {MAYBE_SCALAR})  # `np.inner(x, x)` of 1-D arrays: a NumPy scalar
    scalar = K.dtype_from_qualname(qualname)
    if scalar is not None:  # np.float32(1.5), np.int64(3): NumPy scalars
        return Value(kind=Kind.NUMBER, dtype=scalar, facts=frozenset({Fact.NUMPY_SCALAR}))
    if name in _WHOLE_ARRAY_REDUCTIONS and _reduces_everything(node, _WHOLE_ARRAY_REDUCTIONS[name]):
        if first is not None and first.kind is Kind.TENSOR:
            return ndarray(dtype, facts=facts)  # np.max(t) of a tensor: not followed
        return Value(kind=Kind.NUMBER, dtype=dtype, facts=frozenset({Fact.NUMPY_SCALAR}))
    return ndarray(dtype, facts=facts)


def _draws_one(node: ast.Call, size_position: int | None) -> bool:
    """No size given (``np.random.rand()``, ``np.random.normal(0, 1)``): one number is drawn."""
    if any(isinstance(argument, ast.Starred) for argument in node.args) or any(k.arg in (None, "size") for k in node.keywords):
        return False
    return not node.args if size_position is None else len(node.args) <= size_position


def _reduces_everything(node: ast.Call, axis_position: int) -> bool:
    """``np.max(a)``: no axis (or ``axis=None``), no ``keepdims``, no ``out`` that would keep an array."""
    if len(node.args) > axis_position or any(isinstance(argument, ast.Starred) for argument in node.args):
        return False
    for keyword in node.keywords:
        if keyword.arg is None or keyword.arg in ("keepdims", "out"):
            return False
        if keyword.arg == "axis" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is None):
            return False
    return True


def _from_data(
    name: str, node: ast.Call, first: Value | None, dtype: str | None, facts: frozenset[str], dtype_given: bool
) -> Value:
    data = node.args[0] if node.args else None
    if dtype is None and first is not None and not dtype_given:
        if first.kind is Kind.NDARRAY:
            dtype = first.dtype
        elif data is not None:
            dtype = literal_dtype(data)
    result_facts = set(facts)
    if first is not None and first.kind is Kind.NDARRAY and not dtype_given:
        if name in ("asarray", "asanyarray"):
            # The same array: its facts still hold (np.asarray drops a mask, np.asanyarray keeps it).
            result_facts |= first.facts - ({MASKED} if name == "asarray" else set())
        else:
            result_facts |= first.facts & {NON_NATIVE}  # a copy keeps the dtype, byte order included
    if isinstance(data, ast.Constant) and isinstance(data.value, (int, float, bool)) and name != "ascontiguousarray":
        result_facts.add(ZERO_D)
    shares = data.id if isinstance(data, ast.Name) and name in ("asarray", "asanyarray") else None
    return ndarray(dtype, facts=frozenset(result_facts), shares_with=shares)


def literal_dtype(node: ast.expr) -> str | None:
    """dtype NumPy infers from a literal list of numbers (nested lists too)."""
    constants: list[object] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, (ast.List, ast.Tuple)):
            stack.extend(item.elts)
        elif isinstance(item, ast.Constant):
            constants.append(item.value)
        elif isinstance(item, ast.UnaryOp) and isinstance(item.operand, ast.Constant):
            constants.append(item.operand.value)
        elif isinstance(item, ast.BinOp) and isinstance(item.op, (ast.Add, ast.Sub, ast.Mult, ast.Pow, ast.FloorDiv)):
            stack.extend((item.left, item.right))  # 1 + 2j, 2**53 + 1
        elif isinstance(item, ast.BinOp) and isinstance(item.op, ast.Div):
            constants.append(0.0)  # true division makes a float
            stack.extend((item.left, item.right))
        else:
            return None
    if not constants:
        return "float64"
    if all(isinstance(c, bool) for c in constants):
        return "bool"
    if any(isinstance(c, str) for c in constants):
        return "str_"
    if all(isinstance(c, bytes) for c in constants):
        return "bytes_"
    if any(isinstance(c, complex) for c in constants):
        return "complex128"
    if any(isinstance(c, float) for c in constants):
        return "float64"
    if all(isinstance(c, int) for c in constants):
        return "int64"
    return "object"


def _rot90_flips(node: ast.Call) -> bool:
    k = node.args[1] if len(node.args) > 1 else _keyword(node, "k")
    if k is None:
        return True
    if isinstance(k, ast.Constant) and isinstance(k.value, int):
        return k.value % 4 != 0
    if isinstance(k, ast.UnaryOp) and isinstance(k.op, ast.USub) and isinstance(k.operand, ast.Constant):
        return isinstance(k.operand.value, int) and k.operand.value % 4 != 0
    return False


def _is_bytes(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
        return True
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "bytes":
            return True
        if isinstance(func, ast.Attribute) and func.attr in ("tobytes", "read", "encode", "getvalue"):
            return True
    return False


def has_negative_step(index: ast.expr) -> bool:
    """``::-1``, ``4:0:-2``, or such a slice inside a tuple index."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if isinstance(part, ast.Slice) and part.step is not None:
            step = part.step
            if isinstance(step, ast.UnaryOp) and isinstance(step.op, ast.USub) and isinstance(step.operand, ast.Constant):
                if isinstance(step.operand.value, (int, float)) and step.operand.value > 0:
                    return True
            if isinstance(step, ast.Constant) and isinstance(step.value, int) and step.value < 0:
                return True
    return False


def numpy_only_index(index: ast.expr) -> bool:
    """An index a list would reject: a tuple of slices or an Ellipsis (``[:, ::-1]``, ``[..., ::-1]``)."""
    if isinstance(index, ast.Tuple):
        return True
    return isinstance(index, ast.Constant) and index.value is Ellipsis


def subscript(container: Value, index: ast.expr, index_value: Value | None = None) -> Value:
    """Indexing or slicing an array keeps its dtype; a negative step gives a negative-stride view.

    ``index_value`` is what the index holds: a list or an array of indices keeps an axis (``np.eye(n)[ids]``).
    """
    if isinstance(index, ast.Constant) and isinstance(index.value, str):
        # A field of a structured array (``points["x"]``): a view with the field's dtype.
        return container.with_(dtype=None, facts=container.facts & {READONLY, MASKED}, shares_with=container.shares_with)
    facts = {fact for fact in container.facts if fact in (READONLY, NON_NATIVE, MASKED, NEGATIVE_STRIDE)}
    if not _is_view_index(index):
        facts = {fact for fact in facts if fact in (NON_NATIVE, MASKED)}  # fancy indexing copies
    if has_negative_step(index):
        if NEGATIVE_STRIDE in container.facts:
            facts.discard(NEGATIVE_STRIDE)  # a second reversal may restore the axis (``a[::-1][::-1]``)
        else:
            facts.add(NEGATIVE_STRIDE)
    if _may_select_a_scalar(index) and not _indexes_many(index, index_value):
        facts.add(MAYBE_SCALAR)
    return container.with_(facts=frozenset(facts), shares_with=container.shares_with)


def _may_select_a_scalar(index: ast.expr) -> bool:
    """Integer indices only (``a[i]``, ``a[0, j]``): no slice, ``...``, ``None``, list or mask that keeps an axis."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    keeps_an_axis = (ast.Slice, ast.List, ast.ListComp, ast.Compare)
    return not any(
        isinstance(p, keeps_an_axis) or (isinstance(p, ast.Constant) and (p.value is Ellipsis or p.value is None)) for p in parts
    )


def _indexes_many(index: ast.expr, index_value: Value | None) -> bool:
    """An index (or a part of a tuple index, ``a[i, j]``) that holds a list or an array, not one that may be a
    scalar: fancy indexing, which keeps an axis (``np.eye(n)[ids]``)."""
    if index_value is None:
        return False
    parts = (index_value.elements or ()) if isinstance(index, ast.Tuple) else (index_value,)
    return any(
        part.kind is Kind.SEQUENCE or (part.kind is Kind.NDARRAY and not part.facts & {MAYBE_SCALAR, ZERO_D}) for part in parts
    )


def _is_view_index(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(isinstance(p, ast.Slice) or (isinstance(p, ast.Constant) and (p.value is Ellipsis or p.value is None)) for p in parts)


def method(receiver: Value, name: str, node: ast.Call, argument_values: list[Value]) -> Value:
    """The value of ``array.<name>(...)``."""
    if name in ("tolist", "item", "tobytes", "tofile", "dump", "fill", "sort", "setflags", "resize", "put", "itemset"):
        return Value(kind=Kind.OTHER)
    if name in ("sum", "mean", "max", "min", "std", "var", "any", "all", "prod") and not node.args and not node.keywords:
        return Value(kind=Kind.NUMBER, dtype=receiver.dtype)
    if name == "astype" and node.args:
        dtype, facts = dtype_facts(node.args[0], argument_values[0] if argument_values else None)
        return ndarray(dtype, facts=facts)
    if name == "newbyteorder":  # NumPy < 2: the same bytes read in another byte order
        order = swapped_byte_order(receiver, node)
        return receiver.with_(facts=(receiver.facts - {NON_NATIVE, READONLY}) | order, shares_with=None)
    if name == "byteswap":  # swaps the bytes and keeps the dtype, byte order included
        return ndarray(receiver.dtype, facts=receiver.facts & {NON_NATIVE})
    if name in ("copy", "flatten"):
        return ndarray(receiver.dtype, facts=frozenset(f for f in receiver.facts if f in (NON_NATIVE, MASKED)))
    if name in ("filled", "compressed") and MASKED in receiver.facts:
        return ndarray(receiver.dtype)
    if name in ("view", "reshape", "transpose", "squeeze", "ravel", "swapaxes"):
        keep = {f for f in receiver.facts if f in (READONLY, NON_NATIVE, MASKED, NEGATIVE_STRIDE)}
        if name == "view" and node.args:
            dtype, order = dtype_facts(node.args[0], argument_values[0] if argument_values else None)
            return ndarray(dtype, facts=frozenset(keep - {NON_NATIVE}) | order, shares_with=receiver.shares_with)
        if name in _MAY_COPY:
            keep.discard(NEGATIVE_STRIDE)
        return receiver.with_(facts=frozenset(keep))
    return ndarray()


def dtype_method(receiver: Value, name: str, node: ast.Call) -> Value:
    """The value of ``dtype.<name>(...)``: ``np.dtype("f4").newbyteorder(">")``."""
    if name == "newbyteorder":
        return receiver.with_(facts=(receiver.facts - {NON_NATIVE}) | swapped_byte_order(receiver, node))
    return Value(kind=Kind.UNKNOWN)


def swapped_byte_order(receiver: Value, node: ast.Call) -> frozenset[str]:
    """``{NON_NATIVE}`` when ``receiver.newbyteorder(order)`` is big-endian on every path, else nothing.

    A dtype NumPy spells without ``>`` is taken as native: byte orders are only ever set by a visible spelling.
    """
    order = node.args[0] if node.args else _keyword(node, "new_order")
    if order is None:
        letter = "S"
    elif isinstance(order, ast.Constant) and isinstance(order.value, str) and order.value:
        letter = order.value[0].upper()
    else:
        return frozenset()
    if receiver.dtype is None or receiver.dtype in K.SINGLE_BYTE_DTYPES:
        return frozenset()
    big = letter in (">", "B") or (letter == "S" and NON_NATIVE not in receiver.facts)
    return frozenset({NON_NATIVE}) if big else frozenset()


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def vectorized_call(args: list[Value]) -> Value:
    """``np.vectorize(f)(x)``: an array shaped as ``x``; 0-d (a NumPy scalar's stand-in) where ``x`` may be a scalar."""
    first = args[0] if args else None
    whole = first is not None and (
        (first.kind is Kind.NDARRAY and not first.facts & {MAYBE_SCALAR, ZERO_D}) or first.kind is Kind.SEQUENCE
    )
    return ndarray(None) if whole else ndarray(None, facts=frozenset({MAYBE_SCALAR}))
