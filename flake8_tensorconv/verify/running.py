"""Running a fixture's code: here (``execute``) or, for ``warns`` claims, in a fresh process.

torch emits several warnings once per process, so a ``warns`` claim is checked in a
process that has run nothing else. On Linux (and wherever ``forkserver`` exists) that
process is forked from the standard library's fork server, which has imported torch and
NumPy once (``multiprocessing.set_forkserver_preload``) and never touches CUDA: a fresh
run costs a fork, not the seconds of importing torch. ``cuda`` runs, and platforms
without a fork server, spawn a new interpreter.

torch and NumPy are imported inside functions only.
"""

from __future__ import annotations

import io
import multiprocessing
import sys
import traceback
import warnings
from contextlib import AbstractContextManager, nullcontext, redirect_stdout
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from flake8_tensorconv.examples import Claim
from flake8_tensorconv.verify.compare import shorten

SUBPROCESS_TIMEOUT_S = 300


@dataclass(frozen=True)
class CaughtWarning:
    category: str
    # The category and its base classes, so that ``warns Warning:`` matches any warning.
    categories: tuple[str, ...]
    message: str

    def matches(self, claim: Claim, device: str) -> bool:
        return claim.category in self.categories and self.message.startswith(claim.message_prefix(device))

    def __str__(self) -> str:
        return f"{self.category}: {shorten(self.message)}"


@dataclass
class Run:
    """One execution of a fixture's source."""

    namespace: dict[str, Any]
    error: BaseException | None
    warnings: list[CaughtWarning] = field(default_factory=list)
    # The code drew random numbers from the CUDA generator, whose stream differs from the CPU's.
    random_on_device: bool = False

    def describe_error(self) -> str:
        return "ran without raising" if self.error is None else f"raised {exception_text(self.error)}"


def exception_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {shorten(str(error))}"


def execute(source: str, filename: str, device: str, no_grad: bool = False) -> Run:
    """Run ``source`` in a fresh namespace with ``DEVICE`` set, after seeding torch, NumPy and random.

    What the code prints is discarded: it would break the ``verify`` table.
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


# --------------------------------------------------------------------- fresh processes
class FreshRun:
    """A file running in a process of its own, started at once; ``warnings()`` waits for what it emitted.

    Starting the original's and the fixed code's runs together lets them overlap.
    """

    def __init__(self, path: Path, device: str) -> None:
        context = _context(device)
        self.path = path
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_report_warnings, args=(str(path), device, send), daemon=True)
        self._process.start()
        send.close()

    def warnings(self) -> list[CaughtWarning]:
        try:
            if not self._receive.poll(SUBPROCESS_TIMEOUT_S):
                self.stop()
                raise RuntimeError(f"{self.path}: the run that checks warnings ran over {SUBPROCESS_TIMEOUT_S} s")
            report: dict[str, Any] = self._receive.recv()
        except EOFError:
            self._process.join()
            report = {"error": f"the process exited with status {self._process.exitcode} without a report"}
        finally:
            self._receive.close()
        self._process.join()
        if "error" in report:
            raise RuntimeError(f"{self.path}: the run that checks warnings failed: {report['error'][-2000:]}")
        return [CaughtWarning(w["category"], tuple(w["categories"]), w["message"]) for w in report["warnings"]]

    def stop(self) -> None:
        if self._process.is_alive():
            self._process.kill()
        self._process.join()


def fresh_run(path: Path, device: str) -> FreshRun:
    """Check ``path``'s warnings in a fresh process."""
    return FreshRun(path, device)


def start_method(device: str) -> str:
    """``forkserver`` (torch preloaded) where it exists; ``spawn`` for cuda and elsewhere."""
    if device != "cuda" and sys.platform.startswith("linux") and "forkserver" in multiprocessing.get_all_start_methods():
        return "forkserver"
    return "spawn"


@cache
def _context(device: str) -> Any:
    method = start_method(device)
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        # Imported once by the server, inherited by every run it forks. The server is started
        # on first use; importing torch there sets up no CUDA state.
        context.set_forkserver_preload(["numpy", "torch", __name__])
    return context


def _report_warnings(path: str, device: str, send: Any) -> None:
    """In the fresh process: run the file and send back the warnings it emitted (or why it could not run)."""
    try:
        source = Path(path).read_text(encoding="utf-8")
        run = execute(source, path, device)
        report: dict[str, Any] = {
            "warnings": [{"category": w.category, "categories": list(w.categories), "message": w.message} for w in run.warnings]
        }
    except BaseException:  # SystemExit from the fixture too: say what happened instead of vanishing
        report = {"error": traceback.format_exc()}
    send.send(report)
    send.close()
