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

Where the fixed code runs on the CPU and on another device, a third check
compares the two runs (``compare_across_devices``): the fix must compute the
same thing on ``cuda`` as on the CPU. What is compared there, and what is not
(memory sharing, strides), is explained in ``docs/verification/README.md``.

torch and NumPy are imported inside functions only. ``warns`` claims run in a
fresh interpreter because torch emits several warnings once per process: on
Linux a child forked from a clean interpreter that has imported torch and run
nothing (``python -m flake8_tensorconv.verify.harness --serve``), which saves
the seconds that importing torch takes; elsewhere, and for ``cuda``, a new
interpreter per run (``python -m flake8_tensorconv.verify.harness FILE --device D``).
"""

from __future__ import annotations

import atexit
import enum
import importlib.metadata
import io
import json
import os
import platform
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import types
import warnings
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext, redirect_stdout
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from flake8_tensorconv.examples import Claim, Fixture, Requirement, all_fixtures, torch_device_name

SUBPROCESS_TIMEOUT_S = 300
_MAX_DETAIL = 400
_MAX_DEPTH = 6
# Names the harness puts into the namespace, never compared.
_INJECTED = frozenset({"DEVICE"})
# The fixed code's results on these devices are compared with its results on the CPU.
CROSS_DEVICES = ("cuda", "meta")
REFERENCE_DEVICE = "cpu"


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
    # The code drew random numbers from the CUDA generator, whose stream differs from the CPU's.
    random_on_device: bool = False

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
    """Run ``source`` in a fresh namespace with ``DEVICE`` set, after seeding torch, NumPy and random.

    What the code prints is discarded: it would break the ``verify`` table and the
    subprocess protocol.
    """
    import random

    import numpy
    import torch

    torch.manual_seed(0)
    numpy.random.seed(0)
    random.seed(0)
    cuda_generator = torch.cuda.get_rng_state() if device == "cuda" else None
    namespace: dict[str, Any] = {"__name__": "__fixture__", "DEVICE": device}
    code = compile(source, filename, "exec")
    error: BaseException | None = None
    # A fixture may switch global modes (``torch.set_grad_enabled(False)``); later runs must not inherit them.
    grad_enabled, default_dtype = torch.is_grad_enabled(), torch.get_default_dtype()
    with warnings.catch_warnings(record=True) as caught, redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        try:
            with torch.no_grad() if no_grad else nullcontext(), _full_float32_precision(device):
                exec(code, namespace)
        except Exception as exception:  # the claim under test, or a failure to report
            error = exception
        finally:
            torch.set_grad_enabled(grad_enabled)
            torch.set_default_dtype(default_dtype)
    random_on_device = cuda_generator is not None and not torch.equal(cuda_generator, torch.cuda.get_rng_state())
    return Run(namespace=namespace, error=error, warnings=[_caught(w) for w in caught], random_on_device=random_on_device)


def _full_float32_precision(device: str) -> AbstractContextManager[Any]:
    """On cuda, cuDNN without TensorFloat-32 (on by default for convolutions and RNNs).

    TF32 rounds float32 products to 10 mantissa bits, far outside float32's tolerance
    when the fixed code's cuda results are compared with its CPU results.
    """
    if device != "cuda":
        return nullcontext()
    import torch

    cudnn = torch.backends.cudnn
    return cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic, allow_tf32=False)


def _caught(message: warnings.WarningMessage) -> CaughtWarning:
    category = message.category
    return CaughtWarning(
        category=category.__name__,
        categories=tuple(klass.__name__ for klass in category.__mro__),
        message=str(message.message),
    )


class FreshRun:
    """A file running in a new interpreter, started at once; ``warnings()`` waits for what it emitted.

    torch emits some warnings once per process, so ``warns`` claims are checked in a
    fresh process. Starting the original's and the fixed code's runs together lets them overlap.
    """

    def __init__(self, path: Path, device: str) -> None:
        command = [sys.executable, "-m", "flake8_tensorconv.verify.harness", str(path), "--device", device]
        self.path = path
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_subprocess_env())

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
        return _warnings_from_report(json.loads(stdout.splitlines()[-1]))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate()


class ForkedRun:
    """The same check as ``FreshRun``, run by the fork server when ``warnings()`` is called."""

    def __init__(self, path: Path, device: str) -> None:
        self.path = path
        self.device = device

    def warnings(self) -> list[CaughtWarning]:
        report = _fork_server().run(self.path, self.device)
        if "error" in report:
            raise RuntimeError(f"{self.path}: the forked run that checks warnings failed: {report['error'][-2000:]}")
        return _warnings_from_report(report)

    def stop(self) -> None:
        """Nothing runs until ``warnings()`` asks."""


def fresh_run(path: Path, device: str) -> FreshRun | ForkedRun:
    """Check ``path``'s warnings in a fresh process: forked where that is safe and cheap, else a new interpreter."""
    if _can_fork(device):
        return ForkedRun(path, device)
    return FreshRun(path, device)


def _can_fork(device: str) -> bool:
    # Forking after importing torch is what DataLoader workers do on Linux; macOS and Windows
    # spawn instead. CUDA runs keep a new interpreter: CUDA must never be set up in the server,
    # and those runs are few.
    return sys.platform.startswith("linux") and hasattr(os, "fork") and device != "cuda"


def _subprocess_env() -> dict[str, str]:
    package_parent = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_parent, env.get("PYTHONPATH")]))
    return env


def _warnings_from_report(report: dict[str, Any]) -> list[CaughtWarning]:
    return [CaughtWarning(w["category"], tuple(w["categories"]), w["message"]) for w in report["warnings"]]


def _warnings_report(path: str, device: str) -> dict[str, Any]:
    source = Path(path).read_text(encoding="utf-8")
    run = execute(source, path, device)
    return {"warnings": [{"category": w.category, "categories": list(w.categories), "message": w.message} for w in run.warnings]}


class _ForkServerClient:
    """This process's connection to its fork server: one request at a time, a JSON line each way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")
        command = [sys.executable, "-m", "flake8_tensorconv.verify.harness", "--serve"]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, env=_subprocess_env()
        )

    def run(self, path: Path, device: str) -> dict[str, Any]:
        with self._lock:
            assert self._process.stdin is not None and self._process.stdout is not None
            try:
                self._process.stdin.write(json.dumps({"path": str(path), "device": device}) + "\n")
                self._process.stdin.flush()
                line = self._process.stdout.readline()
            except OSError:
                line = ""
            if not line:
                self._log.seek(0)
                raise RuntimeError(f"{path}: the fork server that checks warnings stopped: {self._log.read()[-2000:]}")
            report: dict[str, Any] = json.loads(line)
            return report

    def close(self) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        try:
            self._process.stdin.close()  # the server exits at the end of its input
        except OSError:
            pass  # it is gone already
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process.stdout.close()
        self._log.close()


_server: _ForkServerClient | None = None
_server_lock = threading.Lock()


def _fork_server() -> _ForkServerClient:
    global _server
    with _server_lock:
        if _server is None:
            _server = _ForkServerClient()
            atexit.register(_server.close)
        return _server


def _serve() -> int:
    """The fork server: a clean interpreter that forks a child per request, reads ``{path, device}`` lines on stdin."""
    import numpy  # noqa: F401  (imported once here, inherited by every child)
    import torch  # noqa: F401

    for line in sys.stdin:
        request = json.loads(line)
        report = _forked(request["path"], request["device"])
        sys.stdout.write(json.dumps(report) + "\n")
        sys.stdout.flush()
    return 0


def _forked(path: str, device: str) -> dict[str, Any]:
    """The warnings report of one run in a forked child (or why there is none)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, report through the pipe, never return into the server's loop
        os.close(read_end)
        status = 0
        try:
            silent = os.open(os.devnull, os.O_WRONLY)
            os.dup2(silent, 1)  # stdout is the server's reply channel
            try:
                payload = json.dumps(_warnings_report(path, device))
            except BaseException:
                payload = json.dumps({"error": traceback.format_exc()})
            with os.fdopen(write_end, "w", encoding="utf-8") as out:
                out.write(payload)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    chunks = []
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([pipe], [], [], remaining)[0]:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return {"error": f"the run ran over {SUBPROCESS_TIMEOUT_S} s"}
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    try:
        return dict(json.loads(b"".join(chunks).decode("utf-8")))
    except ValueError:
        return {"error": f"the child exited with status {status} without a report"}


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
    fresh: dict[str, FreshRun | ForkedRun] = {}
    try:
        if any(claim.kind == "warns" for claim in fixture.claims):
            if device in fixture.claim_devices:
                fresh["original"] = fresh_run(fixture.path, device)
            if fixture.fixed_path is not None and device in fixture.fix_devices:
                fresh["fixed"] = fresh_run(fixture.fixed_path, device)
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


def _check_claims(fixture: Fixture, device: str, run: Run, fresh: FreshRun | ForkedRun | None) -> Result:
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


def _check_fix(fixture: Fixture, device: str, original: Run, fresh: FreshRun | ForkedRun | None) -> Result:
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
    if fixed.error is None and device in CROSS_DEVICES and REFERENCE_DEVICE in fixture.fix_devices:
        reference = execute(fixture.fixed_source, filename, REFERENCE_DEVICE)
        if reference.error is not None:
            problems.append(f"on {REFERENCE_DEVICE} the fixed code {reference.describe_error()}")
        else:
            values = not fixed.random_on_device
            differences = compare_across_devices(reference.namespace, fixed.namespace, device, values=values)
            problems.extend(f"against its {REFERENCE_DEVICE} run: {difference}" for difference in differences)
            checked.append(_cross_device_summary(device, values))
    if problems:
        return Result(Status.FAILED, "; ".join(problems))
    return Result(Status.CONFIRMED, ", ".join(checked) or "runs cleanly")


def _cross_device_summary(device: str, values: bool) -> str:
    if device == "meta":
        return f"same dtypes and shapes as its {REFERENCE_DEVICE} run (meta tensors have no values)"
    if not values:
        return f"same dtypes and shapes as its {REFERENCE_DEVICE} run (values not compared: it draws random numbers on {device})"
    return f"equal to its {REFERENCE_DEVICE} run"


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


def compare_across_devices(reference: dict[str, Any], other: dict[str, Any], device: str, values: bool = True) -> list[str]:
    """Differences between what the same code left behind on the CPU (``reference``) and on ``device``.

    Compared: the same names, containers and plain values; tensors with the same
    dtype, shape, layout, requires-grad, conjugate/negative bits and gradient, on
    the CPU in the reference run and on the CPU or ``device`` in the other; arrays
    with the same dtype, shape and writeability; and values, which must be equal
    within ``torch.testing.assert_close``'s default tolerances for their dtype (NaN
    where NaN): kernels on another device may round differently. Values are not
    compared on ``meta`` (it has none) or with ``values=False`` (random numbers
    drawn on a GPU come from another stream than the CPU's). ``torch.device``
    values differ by design and are skipped, and in strings (an error message kept
    in a variable) the device's spellings (``torch.cuda.FloatTensor``, ``cuda:0``)
    read as the CPU's.

    Not compared: strides (each device's kernels choose their output layout) and
    memory sharing. On the CPU ``.cpu()`` returns the tensor itself, so an array
    taken from it shares the tensor's memory, while on a GPU it is a copy: every
    fix that adds ``.cpu()`` differs this way, by design. What that difference
    can change (a write through the array) shows in the values, which are compared.
    """
    left = dict(_leaves(reference, frozenset()))
    right = dict(_leaves(other, frozenset()))
    differences = []
    for path in sorted(left.keys() | right.keys()):
        if path not in right:
            differences.append(f"{path}: only the {REFERENCE_DEVICE} run has it")
        elif path not in left:
            differences.append(f"{path}: only the {device} run has it")
        else:
            problem = _compare_leaf_across(left[path], right[path], device, values)
            if problem:
                differences.append(f"{path}: {problem}")
    return differences


# rtol, atol per dtype: torch.testing.assert_close's defaults (exact for the others).
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex128": (1e-7, 1e-7),
}


def _compare_leaf_across(a: Any, b: Any, device: str, values: bool) -> str | None:
    import numpy
    import torch

    if type(a) is not type(b):
        return f"type {type(a).__name__} on {REFERENCE_DEVICE} is {type(b).__name__} on {device}"
    if isinstance(a, torch.device):
        return None
    if isinstance(a, torch.Tensor):
        return _compare_tensors_across(a, b, device, values)
    if isinstance(a, numpy.ndarray):
        for attribute in ("dtype", "shape"):
            left, right = getattr(a, attribute), getattr(b, attribute)
            if left != right:
                return f"{attribute} {left} on {REFERENCE_DEVICE} is {right} on {device}"
        if a.flags.writeable != b.flags.writeable:
            return f"writeable {a.flags.writeable} on {REFERENCE_DEVICE} is {b.flags.writeable} on {device}"
        if values and not _arrays_close(a, b):
            return f"values {_shorten(str(a))} on {REFERENCE_DEVICE} are {_shorten(str(b))} on {device}"
        return None
    if isinstance(a, (bool, int, float, complex, numpy.generic)):
        if not values:
            return None
        # A Python float usually comes out of a float32 tensor (``.item()``): float32's tolerance.
        dtype = a.dtype.name if isinstance(a, numpy.generic) else "float32"
        if _arrays_close(numpy.asarray(a), numpy.asarray(b), dtype):
            return None
        return f"{a!r} on {REFERENCE_DEVICE} is {b!r} on {device}"
    if isinstance(a, _Container) and a != b:
        return f"{a} on {REFERENCE_DEVICE} is {b} on {device}"
    if isinstance(b, str):
        b = _device_neutral(b, device)
    if a != b:
        return f"{_shorten(repr(a))} on {REFERENCE_DEVICE} is {_shorten(repr(b))} on {device}"
    return None


def _device_neutral(text: str, device: str) -> str:
    """``text`` with the device's spellings in torch messages made the CPU's (``torch.cuda.FloatTensor``, ``cuda:0``)."""
    return text.replace(f"torch.{device}.", "torch.").replace(torch_device_name(device), REFERENCE_DEVICE)


def _compare_tensors_across(a: Any, b: Any, device: str, values: bool, with_grad: bool = True) -> str | None:
    if a.device != b.device and not (a.device.type == REFERENCE_DEVICE and b.device.type == device.split(":")[0]):
        return f"device {a.device} on {REFERENCE_DEVICE} is {b.device} on {device}"
    for attribute in ("dtype", "shape", "layout", "requires_grad"):
        left, right = getattr(a, attribute), getattr(b, attribute)
        if left != right:
            return f"{attribute} {left} on {REFERENCE_DEVICE} is {right} on {device}"
    if (a.is_conj(), a.is_neg()) != (b.is_conj(), b.is_neg()):
        return "conjugate/negative bits differ"
    if values and "meta" not in (a.device.type, b.device.type):
        problem = _tensor_values_close(a.detach(), b.detach().cpu())
        if problem:
            return f"values differ: {problem}"
    if with_grad and a.is_leaf and b.is_leaf:
        grad_a, grad_b = a.grad, b.grad
        if (grad_a is None) != (grad_b is None):
            return f"grad {grad_a} on {REFERENCE_DEVICE} is {grad_b} on {device}"
        if grad_a is not None:
            problem = _compare_tensors_across(grad_a, grad_b, device, values, with_grad=False)
            if problem:
                return f"grad: {problem}"
    return None


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


def _arrays_close(a: Any, b: Any, dtype: str | None = None) -> bool:
    import numpy

    rtol, atol = _TOLERANCES.get(dtype or a.dtype.name, (0.0, 0.0))
    if a.dtype.kind not in "fc" or (rtol, atol) == (0.0, 0.0):
        try:
            return bool(numpy.array_equal(a, b, equal_nan=True))
        except TypeError:  # object, string and structured dtypes have no NaN
            return bool(numpy.array_equal(a, b))
    return bool(numpy.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


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
    """Run one file and print the warnings it emitted as JSON (the last line of stdout); or serve forks."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m flake8_tensorconv.verify.harness")
    parser.add_argument("path", nargs="?")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--serve", action="store_true", help="fork a child per {path, device} line read on stdin")
    arguments = parser.parse_args(argv)
    if arguments.serve:
        return _serve()
    if arguments.path is None:
        parser.error("a PATH or --serve is needed")
    sys.stdout.write("\n" + json.dumps(_warnings_report(arguments.path, arguments.device)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


__all__ = [
    "CaughtWarning",
    "ForkedRun",
    "FreshRun",
    "Environment",
    "Outcome",
    "Result",
    "Run",
    "Status",
    "compare_namespaces",
    "environment",
    "compare_across_devices",
    "execute",
    "fresh_run",
    "verify",
    "verify_fixture",
]
