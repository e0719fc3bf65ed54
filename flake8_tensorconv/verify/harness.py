"""Run a fixture's original and fixed code and check what its header claims.

For one fixture on one device the harness answers two questions:

* ``original``: does the flagged code do what the claim says (``raises``,
  ``warns``, ``holds``) on the claim devices, and run cleanly elsewhere?
* ``fix``: does the fixed code run cleanly, without the claimed warning, and
  leave behind the same tensors, arrays and plain values as the original
  wherever the original ran (also under ``torch.no_grad()`` with
  ``compare: no_grad``)? Equal means value (NaN where NaN), dtype, shape,
  strides, device, requires-grad, gradient, writeability, and the same pairs of
  names sharing memory.

torch and NumPy are imported inside functions only. ``warns`` claims run in a
fresh interpreter (``python -m flake8_tensorconv.verify.harness FILE --device D``)
because torch emits several warnings once per process.
"""

from __future__ import annotations

import enum
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import types
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from flake8_tensorconv.examples import Claim, Fixture, Requirement, all_fixtures

SUBPROCESS_TIMEOUT_S = 300
_MAX_DETAIL = 400
_MAX_DEPTH = 6
# Names the harness puts into the namespace, never compared.
_INJECTED = frozenset({"DEVICE"})


class Status(str, enum.Enum):
    CONFIRMED = "confirmed"  # the claim shows / the fix runs and matches
    CLEAN = "runs cleanly"  # the original on a device where no claim is made (and negatives)
    SKIPPED = "skipped"  # the device is not available here
    NOT_APPLICABLE = "not applicable"  # the installed versions are outside ``needs``
    NOT_RUN = "not run"  # nothing to run here (no fixed form, or the fix cannot run on this device)
    FAILED = "FAILED"


@dataclass(frozen=True)
class Result:
    status: Status
    # Why it was skipped / not applicable / not run, what was confirmed, or what was observed instead.
    detail: str = ""

    @property
    def failed(self) -> bool:
        return self.status is Status.FAILED

    def __str__(self) -> str:
        return f"{self.status.value}: {self.detail}" if self.detail else self.status.value


@dataclass(frozen=True)
class Outcome:
    """What one fixture did on one device; a row of the ``tensorconv verify`` table."""

    fixture: Fixture
    device: str
    original: Result
    fix: Result

    @property
    def failed(self) -> bool:
        return self.original.failed or self.fix.failed

    @property
    def status(self) -> Status:
        """The row's overall status: FAILED wins, then skipped / not applicable, else confirmed."""
        statuses = (self.original.status, self.fix.status)
        for status in (Status.FAILED, Status.SKIPPED, Status.NOT_APPLICABLE):
            if status in statuses:
                return status
        return Status.CONFIRMED

    def describe(self) -> str:
        return f"{self.fixture.id} on {self.device}\n  original: {self.original}\n  fix: {self.fix}"


@dataclass(frozen=True)
class CaughtWarning:
    category: str
    # The category and its base classes, so that ``warns Warning:`` matches any warning.
    categories: tuple[str, ...]
    message: str

    def matches(self, claim: Claim, device: str) -> bool:
        return claim.category in self.categories and self.message.startswith(claim.message_prefix(device))

    def __str__(self) -> str:
        return f"{self.category}: {_shorten(self.message)}"


@dataclass
class Run:
    """One execution of a fixture's source."""

    namespace: dict[str, Any]
    error: BaseException | None
    warnings: list[CaughtWarning] = field(default_factory=list)

    def describe_error(self) -> str:
        return "ran without raising" if self.error is None else f"raised {_exception_text(self.error)}"


@dataclass(frozen=True)
class Environment:
    versions: dict[str, str]
    cuda_available: bool

    def unmet(self, requirements: Iterable[Requirement]) -> list[str]:
        problems = []
        for requirement in requirements:
            installed = self.versions.get(requirement.package) or _installed_version(requirement.package)
            if installed is None:
                problems.append(f"needs {requirement}, not installed")
            elif not requirement.satisfied_by(installed):
                problems.append(f"needs {requirement}, have {installed}")
        return problems

    def unavailable(self, device: str) -> str | None:
        """Why ``device`` cannot be used here, or None."""
        if device == "cuda" and not self.cuda_available:
            return "CUDA not available"
        return None


@lru_cache(maxsize=1)
def environment() -> Environment:
    import numpy
    import torch

    versions = {"torch": torch.__version__, "numpy": numpy.__version__, "python": platform.python_version()}
    return Environment(versions=versions, cuda_available=torch.cuda.is_available())


def _installed_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------- running code
def execute(source: str, filename: str, device: str, no_grad: bool = False) -> Run:
    """Run ``source`` in a fresh namespace with ``DEVICE`` set, after seeding torch, NumPy and random."""
    import random

    import numpy
    import torch

    torch.manual_seed(0)
    numpy.random.seed(0)
    random.seed(0)
    namespace: dict[str, Any] = {"__name__": "__fixture__", "DEVICE": device}
    code = compile(source, filename, "exec")
    error: BaseException | None = None
    # A fixture may switch global modes (``torch.set_grad_enabled(False)``); later runs must not inherit them.
    grad_enabled, default_dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with torch.no_grad() if no_grad else nullcontext():
                exec(code, namespace)
        except Exception as exception:  # the claim under test, or a failure to report
            error = exception
        finally:
            torch.set_grad_enabled(grad_enabled)
            torch.set_default_dtype(default_dtype)
    return Run(namespace=namespace, error=error, warnings=[_caught(w) for w in caught])


def _caught(message: warnings.WarningMessage) -> CaughtWarning:
    category = message.category
    return CaughtWarning(
        category=category.__name__,
        categories=tuple(klass.__name__ for klass in category.__mro__),
        message=str(message.message),
    )


class FreshRun:
    """A file running in a fresh interpreter, started at once; ``warnings()`` waits for what it emitted.

    torch emits some warnings once per process, so ``warns`` claims are checked this way.
    Starting the original's and the fixed code's runs together lets them overlap.
    """

    def __init__(self, path: Path, device: str) -> None:
        package_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
        command = [sys.executable, "-m", "flake8_tensorconv.verify.harness", str(path), "--device", device]
        self.path = path
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)

    def warnings(self) -> list[CaughtWarning]:
        try:
            stdout, stderr = self.process.communicate(timeout=SUBPROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.stop()
            raise RuntimeError(f"{self.path}: the subprocess that checks warnings ran over {SUBPROCESS_TIMEOUT_S} s") from None
        if self.process.returncode != 0:
            raise RuntimeError(
                f"{self.path}: the subprocess that checks warnings failed (rc {self.process.returncode}): {stderr[-2000:]}"
            )
        report = json.loads(stdout.splitlines()[-1])
        return [CaughtWarning(w["category"], tuple(w["categories"]), w["message"]) for w in report["warnings"]]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


# --------------------------------------------------------------------- verification
def verify_fixture(fixture: Fixture, device: str, env: Environment | None = None) -> Outcome:
    if device not in fixture.devices:
        raise ValueError(f"{fixture.id} does not run on {device} (devices: {', '.join(fixture.devices)})")
    env = env or environment()
    unmet = env.unmet(fixture.needs)
    if unmet:
        result = Result(Status.NOT_APPLICABLE, "; ".join(unmet))
        return Outcome(fixture, device, result, result)
    reason = env.unavailable(device)
    if reason is not None:
        result = Result(Status.SKIPPED, reason)
        return Outcome(fixture, device, result, result)
    if fixture.is_negative:
        original = execute(fixture.source, str(fixture.path), device)
        return Outcome(fixture, device, _runs_cleanly(original), Result(Status.NOT_RUN, "a negative has no fix"))
    fresh: dict[str, FreshRun] = {}
    try:
        if any(claim.kind == "warns" for claim in fixture.claims):
            if device in fixture.claim_devices:
                fresh["original"] = FreshRun(fixture.path, device)
            if fixture.fixed_path is not None and device in fixture.fix_devices:
                fresh["fixed"] = FreshRun(fixture.fixed_path, device)
        original = execute(fixture.source, str(fixture.path), device)
        if device in fixture.claim_devices:
            original_result = _check_claims(fixture, device, original, fresh.get("original"))
        else:
            original_result = _runs_cleanly(original, f"no claim on {device}")
        fix_result = _check_fix(fixture, device, original, fresh.get("fixed"))
    finally:
        for run in fresh.values():
            run.stop()
    return Outcome(fixture, device, original_result, fix_result)


def verify(
    fixtures: Iterable[Fixture] | None = None,
    devices: Sequence[str] = ("cpu", "cuda", "meta"),
    env: Environment | None = None,
) -> list[Outcome]:
    """Outcomes for every fixture on every requested device it runs on."""
    env = env or environment()
    return [
        verify_fixture(fixture, device, env)
        for fixture in (all_fixtures() if fixtures is None else fixtures)
        for device in fixture.devices
        if device in devices
    ]


def _runs_cleanly(run: Run, detail: str = "") -> Result:
    if run.error is not None:
        return Result(Status.FAILED, f"expected to run cleanly, {run.describe_error()}")
    return Result(Status.CLEAN, detail)


def _check_claims(fixture: Fixture, device: str, run: Run, fresh: FreshRun | None) -> Result:
    problems: list[str] = []
    raises = [claim for claim in fixture.claims if claim.kind == "raises"]
    for claim in raises:
        if not _error_matches(run.error, claim, device):
            problems.append(f"claim `{claim}`: {run.describe_error()}")
    if run.error is not None and not raises:
        problems.append(f"the original {run.describe_error()}")
    for claim in fixture.claims:
        if claim.kind == "holds":
            holds, observed = _evaluate(claim.text, run.namespace)
            if not holds:
                problems.append(f"claim `{claim}`: {observed}")
    warns = [claim for claim in fixture.claims if claim.kind == "warns"]
    if warns and fresh is not None:
        emitted = fresh.warnings()
        for claim in warns:
            if not any(caught.matches(claim, device) for caught in emitted):
                problems.append(f"claim `{claim}`: {_describe_warnings(emitted)}")
    if problems:
        return Result(Status.FAILED, "; ".join(problems))
    return Result(Status.CONFIRMED, "; ".join(claim.describe(device) for claim in fixture.claims))


def _check_fix(fixture: Fixture, device: str, original: Run, fresh: FreshRun | None) -> Result:
    if fixture.fixed_source is None or fixture.fixed_path is None:
        return Result(Status.NOT_RUN, "no fixed form")
    if device not in fixture.fix_devices:
        return Result(Status.NOT_RUN, f"the fixed code cannot run on {device}")
    filename = str(fixture.fixed_path)
    fixed = execute(fixture.fixed_source, filename, device)
    problems: list[str] = []
    checked: list[str] = []
    if fixed.error is not None:
        problems.append(f"the fixed code {fixed.describe_error()}")
    warns = [claim for claim in fixture.claims if claim.kind == "warns"]
    if warns and fresh is not None:
        emitted = fresh.warnings()
        for claim in warns:
            if any(caught.matches(claim, device) for caught in emitted):
                problems.append(f"the fixed code still {claim}")
        checked.append("no claimed warning")
    if original.error is None and fixed.error is None:
        differences = compare_namespaces(original.namespace, fixed.namespace, fixture.differs)
        problems.extend(differences)
        checked.append("equal results")
    if "no_grad" in fixture.compare:
        original_ng = execute(fixture.source, str(fixture.path), device, no_grad=True)
        fixed_ng = execute(fixture.fixed_source, filename, device, no_grad=True)
        if original_ng.error is not None or fixed_ng.error is not None:
            problems.append(
                f"under no_grad the original {original_ng.describe_error()} and the fixed code {fixed_ng.describe_error()}"
            )
        else:
            differences = compare_namespaces(original_ng.namespace, fixed_ng.namespace, fixture.differs)
            problems.extend(f"under no_grad: {difference}" for difference in differences)
            checked.append("equal results under no_grad")
    if problems:
        return Result(Status.FAILED, "; ".join(problems))
    return Result(Status.CONFIRMED, ", ".join(checked) or "runs cleanly")


def _error_matches(error: BaseException | None, claim: Claim, device: str) -> bool:
    if error is None:
        return False
    return claim.category in _type_names(type(error)) and str(error).startswith(claim.message_prefix(device))


def _type_names(klass: type) -> set[str]:
    return {klass.__name__, f"{klass.__module__}.{klass.__qualname__}"}


def _evaluate(expression: str, namespace: dict[str, Any]) -> tuple[bool, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = eval(expression, dict(namespace))
    except Exception as error:
        return False, f"evaluating it raised {_exception_text(error)}"
    if value:
        return True, ""
    return False, f"it is {_shorten(repr(value))}"


def _describe_warnings(caught: list[CaughtWarning]) -> str:
    if not caught:
        return "no warning was emitted"
    return "emitted only " + " | ".join(str(w) for w in caught)


def _exception_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {_shorten(str(error))}"


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


# --------------------------------------------------------------------- comparing results
def compare_namespaces(original: dict[str, Any], fixed: dict[str, Any], differs: Iterable[str] = ()) -> list[str]:
    """Differences between what two runs left behind; an empty list when they agree."""
    left = dict(_leaves(original, frozenset(differs)))
    right = dict(_leaves(fixed, frozenset(differs)))
    differences = []
    for path in sorted(left.keys() | right.keys()):
        if path not in right:
            differences.append(f"{path}: only the original has it")
        elif path not in left:
            differences.append(f"{path}: only the fixed code has it")
        else:
            problem = _compare_leaf(left[path], right[path])
            if problem:
                differences.append(f"{path}: {problem}")
    shared_left, shared_right = _sharing_pairs(left), _sharing_pairs(right)
    for pair in sorted(shared_left - shared_right):
        differences.append(f"{' and '.join(pair)} share memory in the original only")
    for pair in sorted(shared_right - shared_left):
        differences.append(f"{' and '.join(pair)} share memory in the fixed code only")
    return differences


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


def _is_plain(value: Any) -> bool:
    import numpy
    import torch

    plain = (bool, int, float, complex, str, bytes, type(None), range, slice, torch.dtype, torch.device, numpy.dtype)
    return isinstance(value, plain) or (isinstance(value, (set, frozenset)) and all(_is_plain(v) for v in value))


def _compare_leaf(a: Any, b: Any) -> str | None:
    import numpy
    import torch

    if type(a) is not type(b):
        return f"type {type(a).__name__} became {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        return _compare_tensors(a, b)
    if isinstance(a, numpy.ndarray):
        return _compare_arrays(a, b)
    if isinstance(a, (float, complex, numpy.generic)):
        if a == b or (_is_nan(a) and _is_nan(b)):
            return None
        return f"{a!r} became {b!r}"
    if a != b:
        return f"{_shorten(repr(a))} became {_shorten(repr(b))}"
    return None


def _is_nan(value: Any) -> bool:
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


def _compare_tensors(a: Any, b: Any, with_grad: bool = True) -> str | None:
    import torch

    for attribute in ("device", "dtype", "shape", "layout", "requires_grad"):
        left, right = getattr(a, attribute), getattr(b, attribute)
        if left != right:
            return f"{attribute} {left} became {right}"
    if a.layout == torch.strided and a.stride() != b.stride():
        return f"strides {a.stride()} became {b.stride()}"
    if (a.is_conj(), a.is_neg()) != (b.is_conj(), b.is_neg()):
        return "conjugate/negative bits differ"
    if a.device.type != "meta" and not _tensor_values_equal(a, b):
        return f"values {_shorten(str(a.detach()))} became {_shorten(str(b.detach()))}"
    if with_grad and a.is_leaf and b.is_leaf:
        grad_a, grad_b = a.grad, b.grad
        if (grad_a is None) != (grad_b is None):
            return f"grad {grad_a} became {grad_b}"
        if grad_a is not None:
            problem = _compare_tensors(grad_a, grad_b, with_grad=False)
            if problem:
                return f"grad: {problem}"
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


def _compare_arrays(a: Any, b: Any) -> str | None:
    import numpy

    for attribute in ("dtype", "shape", "strides"):
        left, right = getattr(a, attribute), getattr(b, attribute)
        if left != right:
            return f"{attribute} {left} became {right}"
    if a.flags.writeable != b.flags.writeable:
        return f"writeable {a.flags.writeable} became {b.flags.writeable}"
    try:
        equal = numpy.array_equal(a, b, equal_nan=True)
    except TypeError:  # object, string and structured dtypes have no NaN
        equal = numpy.array_equal(a, b)
    return None if equal else f"values {_shorten(str(a))} became {_shorten(str(b))}"


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


# --------------------------------------------------------------------- the subprocess face
def _main(argv: Sequence[str]) -> int:
    """Run one file and print the warnings it emitted as JSON (the last line of stdout)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m flake8_tensorconv.verify.harness")
    parser.add_argument("path")
    parser.add_argument("--device", default="cpu")
    arguments = parser.parse_args(argv)
    source = Path(arguments.path).read_text(encoding="utf-8")
    run = execute(source, arguments.path, arguments.device)
    warnings_seen = [{"category": w.category, "categories": list(w.categories), "message": w.message} for w in run.warnings]
    sys.stdout.write("\n" + json.dumps({"warnings": warnings_seen}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


__all__ = [
    "CaughtWarning",
    "FreshRun",
    "Environment",
    "Outcome",
    "Result",
    "Run",
    "Status",
    "compare_namespaces",
    "environment",
    "execute",
    "verify",
    "verify_fixture",
]
