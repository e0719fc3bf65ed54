"""Comparing what two runs left behind: one walk over both namespaces, one comparer of leaves.

Two policies use it:

* ``EXACT`` (``compare_namespaces``): the original against its fix on one device. Equal
  means value (NaN where NaN), dtype, shape, strides, device, requires-grad, gradient,
  writeability, and the same pairs of names sharing memory.
* ``across`` (``compare_across_devices``): the fixed code on the CPU against the same
  code on another device. Values must agree within ``torch.testing.assert_close``'s
  tolerance for their dtype (kernels on another device may round differently), and not
  at all on ``meta`` or where random numbers were drawn on the device; strides, memory
  sharing and ``torch.device`` values may differ by design (``docs/verification/README.md``).

torch and NumPy are imported inside functions only.
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from flake8_tensorconv.examples import torch_device_name

_MAX_DETAIL = 400
_MAX_DEPTH = 6
# Names the harness puts into the namespace, never compared.
_INJECTED = frozenset({"DEVICE"})
REFERENCE_DEVICE = "cpu"

# rtol, atol per dtype: torch.testing.assert_close's defaults (exact for the others).
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
}


class Policy(NamedTuple):
    """How two runs are compared and how their differences read."""

    left: str  # the first run, as messages name it: "the original", "the cpu run"
    right: str
    # None: one device, everything exact. A device: the right run's device, compared with the CPU.
    device: str | None = None
    values: bool = True  # compare values (across devices: not where random numbers came from the device)

    @property
    def exact(self) -> bool:
        return self.device is None

    def differ(self, a: object, b: object, what: str = "") -> str:
        """``dtype float32 became float64`` / ``dtype float32 on cpu is float64 on cuda``."""
        prefix = f"{what} " if what else ""
        if self.exact:
            return f"{prefix}{a} became {b}"
        return f"{prefix}{a} on {REFERENCE_DEVICE} is {b} on {self.device}"


EXACT = Policy("the original", "the fixed code")


def across(device: str, values: bool = True) -> Policy:
    return Policy(f"the {REFERENCE_DEVICE} run", f"the {device} run", device=device, values=values)


def compare_namespaces(original: dict[str, Any], fixed: dict[str, Any], differs: Iterable[str] = ()) -> list[str]:
    """Differences between what the original and its fix left behind; an empty list when they agree."""
    return compare(original, fixed, EXACT, frozenset(differs))


def compare_across_devices(reference: dict[str, Any], other: dict[str, Any], device: str, values: bool = True) -> list[str]:
    """Differences between what the same code left behind on the CPU (``reference``) and on ``device``.

    Compared: the same names, containers and plain values; tensors with the same dtype,
    shape, layout, requires-grad, conjugate/negative bits and gradient, on the CPU in the
    reference run and on the CPU or ``device`` in the other; arrays with the same dtype,
    shape and writeability; values within the dtype's tolerance (NaN where NaN), except on
    ``meta`` or with ``values=False``. ``torch.device`` values differ by design and are
    skipped, and in strings the device's spellings (``torch.cuda.FloatTensor``, ``cuda:0``)
    read as the CPU's. Not compared: strides (each device's kernels choose their layout)
    and memory sharing (``.cpu()`` of a CPU tensor is the tensor itself, of a GPU tensor a
    copy: every fix that adds ``.cpu()`` differs this way, by design).
    """
    return compare(reference, other, across(device, values))


def compare(left: dict[str, Any], right: dict[str, Any], policy: Policy, differs: frozenset[str] = frozenset()) -> list[str]:
    left_leaves = dict(_leaves(left, differs))
    right_leaves = dict(_leaves(right, differs))
    differences = []
    for path in sorted(left_leaves.keys() | right_leaves.keys()):
        if path not in right_leaves:
            differences.append(f"{path}: only {policy.left} has it")
        elif path not in left_leaves:
            differences.append(f"{path}: only {policy.right} has it")
        else:
            problem = _compare_leaf(left_leaves[path], right_leaves[path], policy)
            if problem:
                differences.append(f"{path}: {problem}")
    if policy.exact:
        shared_left, shared_right = _sharing_pairs(left_leaves), _sharing_pairs(right_leaves)
        for pair in sorted(shared_left - shared_right):
            differences.append(f"{' and '.join(pair)} share memory in {policy.left} only")
        for pair in sorted(shared_right - shared_left):
            differences.append(f"{' and '.join(pair)} share memory in {policy.right} only")
    return differences


# --------------------------------------------------------------------- the leaves
def _compare_leaf(a: Any, b: Any, policy: Policy) -> str | None:
    import numpy
    import torch

    if type(a) is not type(b):
        return policy.differ(type(a).__name__, type(b).__name__, "type")
    if isinstance(a, torch.device) and not policy.exact:
        return None
    if isinstance(a, torch.Tensor):
        return _compare_tensors(a, b, policy)
    if isinstance(a, numpy.ndarray):
        return _compare_arrays(a, b, policy)
    if isinstance(a, (float, complex, numpy.generic)) or (not policy.exact and isinstance(a, (bool, int))):
        return _compare_numbers(a, b, policy)
    if isinstance(b, str) and policy.device is not None:
        b = _device_neutral(b, policy.device)
    if a != b:
        if isinstance(a, _Container):
            return policy.differ(a, b)
        return policy.differ(_shorten(repr(a)), _shorten(repr(b)))
    return None


def _compare_numbers(a: Any, b: Any, policy: Policy) -> str | None:
    import numpy

    if policy.exact:
        if a == b or (_is_nan(a) and _is_nan(b)):
            return None
        return policy.differ(repr(a), repr(b))
    if not policy.values:
        return None
    # A Python float usually comes out of a float32 tensor (``.item()``): float32's tolerance.
    dtype = a.dtype.name if isinstance(a, numpy.generic) else "float32"
    if _arrays_close(numpy.asarray(a), numpy.asarray(b), dtype):
        return None
    return policy.differ(repr(a), repr(b))


def _compare_tensors(a: Any, b: Any, policy: Policy, with_grad: bool = True) -> str | None:
    import torch

    attributes = ("dtype", "shape", "layout", "requires_grad")
    if policy.exact:
        attributes = ("device", *attributes)
    elif a.device != b.device and not (a.device.type == REFERENCE_DEVICE and b.device.type == policy.device.split(":")[0]):  # type: ignore[union-attr]
        return policy.differ(a.device, b.device, "device")
    for attribute in attributes:
        left, right = getattr(a, attribute), getattr(b, attribute)
        if left != right:
            return policy.differ(left, right, attribute)
    if policy.exact and a.layout == torch.strided and a.stride() != b.stride():
        return policy.differ(a.stride(), b.stride(), "strides")
    if (a.is_conj(), a.is_neg()) != (b.is_conj(), b.is_neg()):
        return "conjugate/negative bits differ"
    if policy.values and "meta" not in (a.device.type, b.device.type):
        if policy.exact:
            if not _tensor_values_equal(a, b):
                return policy.differ(_shorten(str(a.detach())), _shorten(str(b.detach())), "values")
        else:
            problem = _tensor_values_close(a.detach(), b.detach().cpu())
            if problem:
                return f"values differ: {problem}"
    if with_grad and a.is_leaf and b.is_leaf:
        grad_a, grad_b = a.grad, b.grad
        if (grad_a is None) != (grad_b is None):
            return policy.differ(grad_a, grad_b, "grad")
        if grad_a is not None:
            problem = _compare_tensors(grad_a, grad_b, policy, with_grad=False)
            if problem:
                return f"grad: {problem}"
    return None


def _compare_arrays(a: Any, b: Any, policy: Policy) -> str | None:
    import numpy

    for attribute in ("dtype", "shape", "strides") if policy.exact else ("dtype", "shape"):
        left, right = getattr(a, attribute), getattr(b, attribute)
        if left != right:
            return policy.differ(left, right, attribute)
    if a.flags.writeable != b.flags.writeable:
        return policy.differ(a.flags.writeable, b.flags.writeable, "writeable")
    if not policy.values:
        return None
    if policy.exact:
        try:
            equal = numpy.array_equal(a, b, equal_nan=True)
        except TypeError:  # object, string and structured dtypes have no NaN
            equal = numpy.array_equal(a, b)
    else:
        equal = _arrays_close(a, b)
    if equal:
        return None
    if policy.exact:
        return policy.differ(_shorten(str(a)), _shorten(str(b)), "values")
    return f"values {_shorten(str(a))} on {REFERENCE_DEVICE} are {_shorten(str(b))} on {policy.device}"


def _device_neutral(text: str, device: str) -> str:
    """``text`` with the device's spellings in torch messages made the CPU's (``torch.cuda.FloatTensor``, ``cuda:0``)."""
    return text.replace(f"torch.{device}.", "torch.").replace(torch_device_name(device), REFERENCE_DEVICE)


def _tensor_values_close(a: Any, b: Any) -> str | None:
    """Why two CPU tensors of one dtype are not equal within the dtype's tolerance, or None."""
    import torch

    try:
        torch.testing.assert_close(b, a, equal_nan=True, check_device=False, check_stride=False)
    except AssertionError as error:
        return _shorten(str(error))
    except (RuntimeError, NotImplementedError, TypeError):
        # Dtypes with few kernels (float8, uint16...): compare exactly.
        if not _tensor_values_equal(a, b):
            return f"{_shorten(str(a))} on {REFERENCE_DEVICE}, {_shorten(str(b))} elsewhere"
    return None


def _tensor_values_equal(a: Any, b: Any) -> bool:
    import torch

    a, b = a.detach(), b.detach()
    if a.layout != torch.strided:
        a, b = a.to_dense(), b.to_dense()
    a, b = a.resolve_conj().resolve_neg(), b.resolve_conj().resolve_neg()
    try:
        if a.is_floating_point() or a.is_complex():
            nan_a, nan_b = a.isnan(), b.isnan()
            if not torch.equal(nan_a, nan_b):
                return False
            a, b = a.masked_fill(nan_a, 0), b.masked_fill(nan_b, 0)
        return torch.equal(a, b)
    except (RuntimeError, NotImplementedError):
        # Dtypes with few kernels (uint16...): compare the bytes.
        return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def _arrays_close(a: Any, b: Any, dtype: str | None = None) -> bool:
    import numpy

    rtol, atol = _TOLERANCES.get(dtype or a.dtype.name, (0.0, 0.0))
    if a.dtype.kind not in "fc" or (rtol, atol) == (0.0, 0.0):
        try:
            return bool(numpy.array_equal(a, b, equal_nan=True))
        except TypeError:  # object, string and structured dtypes have no NaN
            return bool(numpy.array_equal(a, b))
    return bool(numpy.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def _is_nan(value: Any) -> bool:
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------- walking a namespace
def _leaves(namespace: dict[str, Any], differs: frozenset[str]) -> Iterator[tuple[str, Any]]:
    for name, value in namespace.items():
        if name.startswith("__") or name in _INJECTED or name in differs:
            continue
        if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType, type)):
            continue
        yield from _flatten(name, value, 0)


def _flatten(path: str, value: Any, depth: int) -> Iterator[tuple[str, Any]]:
    """Tensors, arrays and plain values under ``value``, each with a path such as ``out[0]``."""
    import numpy
    import torch

    if isinstance(value, (torch.Tensor, numpy.ndarray, numpy.generic)) or _is_plain(value):
        yield path, value
    elif depth >= _MAX_DEPTH:
        return
    elif isinstance(value, (list, tuple)):
        yield path, _Container(type(value).__name__, len(value))
        for index, item in enumerate(value):
            yield from _flatten(f"{path}[{index}]", item, depth + 1)
    elif isinstance(value, dict) and all(isinstance(key, (str, int)) for key in value):
        yield path, _Container("dict", len(value))
        for key, item in value.items():
            yield from _flatten(f"{path}[{key!r}]", item, depth + 1)
    elif isinstance(value, torch.nn.Module):
        yield from _flatten(f"{path}.state_dict()", dict(value.state_dict(keep_vars=True)), depth + 1)
    # Anything else (generators, user classes, instrumentation) is not a result to compare.


@dataclass(frozen=True)
class _Container:
    type_name: str
    length: int

    def __str__(self) -> str:
        return f"a {self.type_name} of {self.length}"


def _is_plain(value: Any) -> bool:
    import numpy
    import torch

    plain = (bool, int, float, complex, str, bytes, type(None), range, slice, torch.dtype, torch.device, numpy.dtype)
    return isinstance(value, plain) or (isinstance(value, (set, frozenset)) and all(_is_plain(v) for v in value))


# --------------------------------------------------------------------- memory sharing
def _sharing_pairs(leaves: dict[str, Any]) -> set[tuple[str, str]]:
    """The pairs of tensor/array leaves that share memory."""
    import numpy
    import torch

    buffers = [(path, value) for path, value in sorted(leaves.items()) if isinstance(value, (torch.Tensor, numpy.ndarray))]
    pairs = set()
    for index, (left_path, left) in enumerate(buffers):
        for right_path, right in buffers[index + 1 :]:
            if _share_memory(left, right):
                pairs.add((left_path, right_path))
    return pairs


def _share_memory(a: Any, b: Any) -> bool:
    import numpy
    import torch

    tensors = [x for x in (a, b) if isinstance(x, torch.Tensor)]
    if any(t.device.type == "meta" for t in tensors):
        # Meta tensors have no memory; views of one another share a storage object.
        return len(tensors) == 2 and all(t.device.type == "meta" for t in tensors) and (
            a.untyped_storage()._cdata == b.untyped_storage()._cdata
        )
    views = [_as_array(x) for x in (a, b)]
    if all(view is not None for view in views):
        return bool(numpy.shares_memory(views[0], views[1]))
    ranges = [_byte_range(x) for x in (a, b)]
    if None in ranges:
        return False
    (start_a, end_a, device_a), (start_b, end_b, device_b) = ranges  # type: ignore[misc]
    return device_a == device_b and start_a < end_b and start_b < end_a


def _as_array(value: Any) -> Any:
    """An ndarray viewing the same memory (CPU tensors of NumPy dtypes), or None."""
    import numpy
    import torch

    if isinstance(value, numpy.ndarray):
        return value
    tensor: torch.Tensor = value
    if tensor.device.type != "cpu" or tensor.layout != torch.strided or tensor.is_conj() or tensor.is_neg():
        return None
    try:
        return tensor.detach().numpy()
    except (TypeError, RuntimeError):
        return None


def _byte_range(value: Any) -> tuple[int, int, str] | None:
    """[start, end) bytes a strided tensor or array can touch, and its device."""
    import numpy
    import torch

    if isinstance(value, numpy.ndarray):
        from numpy.lib.array_utils import byte_bounds

        if value.size == 0:
            return None
        low, high = byte_bounds(value)
        return low, high, "cpu"
    if value.layout != torch.strided or value.numel() == 0:
        return None
    span = 1 + sum((size - 1) * stride for size, stride in zip(value.shape, value.stride()))
    start = value.data_ptr()
    return start, start + span * value.element_size(), str(value.device)


def shorten(text: str) -> str:
    """``text`` on one line, at most a few hundred characters."""
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


_shorten = shorten
