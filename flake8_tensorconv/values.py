"""The abstract values that provenance inference computes for expressions.

Each lattice has a "don't know" element. ``join`` merges what two control-flow
paths know: agreement is kept, disagreement becomes MAYBE (one path is risky)
or UNKNOWN (nothing is known on one path).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterable, Sequence
from typing import NamedTuple


class Kind(enum.Enum):
    UNKNOWN = "unknown"
    TENSOR = "tensor"
    NDARRAY = "ndarray"
    MODULE = "module"  # an nn.Module instance
    DEVICE = "device"  # a torch.device or a device string
    DTYPE = "dtype"
    SEQUENCE = "sequence"  # list / tuple (``elements`` when the items are known)
    ITERABLE = "iterable"  # parameters(), dict views... (``element`` describes an item)
    MAPPING = "mapping"  # state_dict() and similar (``element`` describes a value)
    NUMBER = "number"
    STRING = "string"
    OTHER = "other"  # known not to be a tensor or an array


class Grad(enum.Enum):
    NO = "no"
    YES = "yes"
    MAYBE = "maybe"  # requires grad on some path
    UNKNOWN = "unknown"


class Device(enum.Enum):
    CPU = "cpu"
    ACCELERATOR = "accelerator"
    MAYBE = "maybe"  # on an accelerator on some path, or moved to a configurable device
    UNKNOWN = "unknown"


class Fact(str, enum.Enum):
    """What holds of a value on every path (``Value.facts``).

    A str enum (``enum.StrEnum`` needs Python 3.11), so that a set of facts is spelled with members,
    and each member prints as it reads.
    """

    # modules
    PARAMETRIZED = "parametrized"  # an nn.Module that holds parameters
    REDUCING_LOSS = "reducing-loss"  # a loss module of torch's whose reduction ("mean", "sum") returns a 0-d tensor
    SELF = "self"  # the module a method runs on
    # tensors
    PARAMETER = "parameter"  # an nn.Parameter: requires grad even when made under no_grad
    LEAF = "leaf"  # a leaf that requires grad (a module's weight, `requires_grad=True`): what optimizers update in place
    FROM_NUMPY = "from-numpy"  # made by torch.from_numpy: shares an array's memory
    SPARSE = "sparse"  # a sparse layout, which .numpy() refuses
    CONJ = "conj"  # a lazy conjugate view, which .numpy() refuses
    NEG = "neg"  # a lazy negative view, which .numpy() refuses
    RECORDED_COPY = "recorded-copy"  # a device copy of a tensor that requires grad, made with grad on: autograd records it
    # a 0-d tensor (a loss reduced to one value): `loss.data[0]` raises IndexError, where torch before 0.5 gave a number
    ZERO_D_TENSOR = "zero-d-tensor"
    # NumPy arrays and scalars (see arrays.py)
    NEGATIVE_STRIDE = "negative-stride"
    READONLY = "readonly"
    NON_NATIVE = "non-native-byte-order"
    MASKED = "masked"
    ZERO_D = "zero-d"
    MAYBE_SCALAR = "maybe-scalar"
    NUMPY_SCALAR = "numpy-scalar"  # a NumPy scalar (np.float32(1.0)), not a Python number
    # other values
    FOREIGN = "foreign"  # a value of another array or data library (TensorFlow, JAX, PIL, pandas...)
    DISTRIBUTION = "distribution"  # a torch.distributions object
    ACCELERATOR_CHECK = "accelerator-check"  # torch.cuda.is_available(): false only where nothing can be on a GPU
    ENVIRONMENT = "environment"  # a gym / gymnasium environment whose observations are NumPy arrays (environments.py)
    ENV_RESULT = "environment-result"  # what such an environment's reset() / step() returns: the observation first
    # refinement only: a guard says the value is not a torch tensor
    NOT_TENSOR = "not-tensor"

    def __str__(self) -> str:
        return str(self.value)


class Origin(NamedTuple):
    """Where a value's risk comes from: the source step a finding names as its evidence."""

    line: int
    column: int  # 0-based, as ``ast`` counts (UTF-8 bytes)
    end_line: int
    end_column: int
    description: str | None = None  # None: the source text there (`model(x)`) says it
    # Another module of the package where the step is (a caller's argument, a value a function there returns), with
    # ``description`` set from that module's text; None: the file being linted.
    path: str | None = None


def origin(node: ast.AST, description: str | None = None) -> Origin:
    return Origin(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0, description)  # type: ignore[attr-defined]


INTEGER_DTYPES = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}
)


class Value(NamedTuple):
    kind: Kind = Kind.UNKNOWN
    grad: Grad = Grad.UNKNOWN
    device: Device = Device.UNKNOWN
    dtype: str | None = None
    # Items of a sequence whose length and members are known (tuple unpacking, topk).
    elements: tuple[Value, ...] | None = None
    # What any item of an iterable/mapping/sequence is.
    element: Value | None = None
    # Named fields of a result (``topk(...).indices``).
    fields: tuple[tuple[str, Value], ...] = ()
    # Facts that hold on every path: e.g. Fact.PARAMETRIZED for modules, Fact.NEGATIVE_STRIDE.
    facts: frozenset[Fact] = frozenset()
    # The variable whose memory this value may share (for aliasing rules).
    shares_with: str | None = None
    # Where "requires grad" (grad YES / MAYBE) and "may be on a GPU" (device ACCELERATOR / MAYBE) come from.
    grad_origin: Origin | None = None
    device_origin: Origin | None = None
    # The class of an instance: a module's (``torch.nn.Linear``, qualified) or a class of the file (``Net``).
    instance_of: str | None = None
    # Where a NumPy array (an item of a list of them, an environment's observation) was made: the step a
    # TCV2xx message names as its evidence.
    array_origin: Origin | None = None

    @property
    def is_tensor(self) -> bool:
        return self.kind is Kind.TENSOR

    @property
    def is_integer(self) -> bool:
        return self.dtype in INTEGER_DTYPES

    def field(self, name: str) -> Value | None:
        for key, value in self.fields:
            if key == name:
                return value
        return None

    def with_(self, **changes: object) -> Value:
        return self._replace(**changes)


UNKNOWN = Value()
OTHER = Value(kind=Kind.OTHER, grad=Grad.NO)
NUMBER = Value(kind=Kind.NUMBER, grad=Grad.NO)


def tensor(
    grad: Grad = Grad.NO,
    device: Device = Device.CPU,
    dtype: str | None = None,
    **extra: object,
) -> Value:
    if dtype in INTEGER_DTYPES:
        grad = Grad.NO
    return Value(kind=Kind.TENSOR, grad=grad, device=device, dtype=dtype, **extra)  # type: ignore[arg-type]


def ndarray(dtype: str | None = None, **extra: object) -> Value:
    return Value(kind=Kind.NDARRAY, grad=Grad.NO, device=Device.CPU, dtype=dtype, **extra)  # type: ignore[arg-type]


def join_grad(a: Grad, b: Grad) -> Grad:
    if a is b:
        return a
    if Grad.YES in (a, b) or Grad.MAYBE in (a, b):
        return Grad.MAYBE
    return Grad.UNKNOWN


def join_device(a: Device, b: Device) -> Device:
    if a is b:
        return a
    if Device.ACCELERATOR in (a, b) or Device.MAYBE in (a, b):
        return Device.MAYBE
    return Device.UNKNOWN


def any_grad(grads: list[Grad]) -> Grad:
    """Requires-grad state of an op's result from its operands' states."""
    if not grads:
        return Grad.NO
    if Grad.YES in grads:
        return Grad.YES
    if Grad.MAYBE in grads:
        return Grad.MAYBE
    if Grad.UNKNOWN in grads:
        return Grad.UNKNOWN
    return Grad.NO


def any_device(devices: list[Device]) -> Device:
    """Device of an op's result from its operands' devices (CPU scalars mix with anything)."""
    known = [device for device in devices if device is not Device.CPU]
    if not known:
        return Device.CPU
    if Device.ACCELERATOR in known:
        return Device.ACCELERATOR
    if Device.MAYBE in known:
        return Device.MAYBE
    return Device.UNKNOWN


def join(a: Value, b: Value) -> Value:
    if a == b:
        return a
    kind = a.kind if a.kind is b.kind else Kind.UNKNOWN
    elements = None
    if a.elements is not None and b.elements is not None and len(a.elements) == len(b.elements):
        elements = tuple(join(x, y) for x, y in zip(a.elements, b.elements))
    if a.element is not None and b.element is not None:
        element = join(a.element, b.element)
    else:  # an empty list joined with a filled one: the filled one says what the items are
        element = a.element if b.elements == () else b.element if a.elements == () else None
    fields = tuple(
        (name, join(value, other))
        for name, value in a.fields
        for other_name, other in b.fields
        if name == other_name
    )
    return Value(
        kind=kind,
        grad=join_grad(a.grad, b.grad),
        device=join_device(a.device, b.device),
        dtype=a.dtype if a.dtype == b.dtype else None,
        elements=elements,
        element=element,
        fields=fields,
        facts=a.facts & b.facts,
        shares_with=a.shares_with if a.shares_with == b.shares_with else None,
        instance_of=a.instance_of if a.instance_of == b.instance_of else None,
        grad_origin=grad_origin_of((a, b)),
        device_origin=device_origin_of((a, b)),
        array_origin=a.array_origin if a.array_origin is not None else b.array_origin,
    )


def join_all(values: Sequence[Value]) -> Value:
    """What one of ``values`` (at least one) holds, not knowing which: their ``join``."""
    joined = values[0]
    for value in values[1:]:
        joined = join(joined, value)
    return joined


def same(a: Value, b: Value) -> bool:
    """Equal but for where their risks come from."""
    unsourced = {"grad_origin": None, "device_origin": None, "array_origin": None}
    return a == b or a._replace(**unsourced) == b._replace(**unsourced)


def grad_origin_of(values: Iterable[Value]) -> Origin | None:
    """The origin of the first value that may require grad."""
    return next((v.grad_origin for v in values if v.grad in (Grad.YES, Grad.MAYBE) and v.grad_origin is not None), None)


def device_origin_of(values: Iterable[Value]) -> Origin | None:
    """The origin of the first value that may be on an accelerator."""
    return next(
        (v.device_origin for v in values if v.device in (Device.ACCELERATOR, Device.MAYBE) and v.device_origin is not None), None
    )


def grad_free_items(output: Value, returned: Value | None) -> Value:
    """What calling a module returns where ``output`` is its output as the caller sees it and ``returned`` what its
    ``forward`` returns: where that is a tuple some of whose items are tensors without grad (``return loss, acc`` of
    an accuracy counted from a comparison, ``return action, dist.log_prob(action)`` of a sampled action), those items
    on the device of ``output``, the others as ``output``; ``output`` itself where it is no tensor or the forward
    shows no such item."""
    if output.kind is not Kind.TENSOR or returned is None or returned.kind is not Kind.SEQUENCE or not returned.elements:
        return output
    free = [item.kind is Kind.TENSOR and item.grad is Grad.NO for item in returned.elements]
    if not any(free):
        return output
    moved = {"device": output.device, "device_origin": output.device_origin}
    items = tuple(item.with_(**moved) if is_free else output for item, is_free in zip(returned.elements, free))
    return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=items)


def join_envs(a: dict[str, Value], b: dict[str, Value]) -> dict[str, Value]:
    """Merge two paths' variables; a name bound on one path only keeps that binding."""
    merged = dict(a)
    for name, value in b.items():
        merged[name] = join(merged[name], value) if name in merged else value
    return merged
