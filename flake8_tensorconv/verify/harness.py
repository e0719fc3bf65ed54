"""The verification policy: what a fixture's original and fixed code must do on a device.

For one fixture on one device it answers two questions:

* ``original``: does the flagged code do what the claim says (``raises``,
  ``warns``, ``holds``) on the claim devices, and run cleanly elsewhere?
* ``fix``: does the fixed code run cleanly, without the claimed warning, and
  leave behind the same tensors, arrays and plain values as the original
  wherever the original ran (also under ``torch.no_grad()`` with
  ``compare: no_grad``)?

Where the fixed code runs on the CPU and on another device, a third check compares
the two runs: the fix must compute the same thing on ``cuda`` as on the CPU
(``docs/verification/README.md``).

The parts: ``running`` runs code (here, or in a fresh process for ``warns`` claims),
``compare`` compares what two runs left behind, and this module decides.
"""

from __future__ import annotations

import enum
import importlib.metadata
import platform
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from flake8_tensorconv.examples import Claim, Fixture, Requirement, all_fixtures
from flake8_tensorconv.verify.compare import REFERENCE_DEVICE, compare_across_devices, compare_namespaces, shorten
from flake8_tensorconv.verify.running import CaughtWarning, FreshRun, Run, exception_text, execute, fresh_run

# The fixed code's results on these devices are compared with its results on the CPU.
CROSS_DEVICES = ("cuda", "meta")


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
        return False, f"evaluating it raised {exception_text(error)}"
    if value:
        return True, ""
    return False, f"it is {shorten(repr(value))}"


def _describe_warnings(caught: list[CaughtWarning]) -> str:
    if not caught:
        return "no warning was emitted"
    return "emitted only " + " | ".join(str(w) for w in caught)


__all__ = [
    "CROSS_DEVICES",
    "Environment",
    "Outcome",
    "Result",
    "Status",
    "environment",
    "verify",
    "verify_fixture",
]
