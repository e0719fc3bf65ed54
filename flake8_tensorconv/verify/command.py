"""``tensorconv verify``: run the selected rules' runtime claims with their fixtures and print the table.

The same fixtures and harness as the runtime tests, on the installed torch and
NumPy. Exit status: 0 when nothing failed, 1 when a claim or a fix failed, 2 for a
usage error or when torch or NumPy cannot be imported.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Sequence
from typing import TextIO

from flake8_tensorconv.config import ConfigError
from flake8_tensorconv.examples import DEVICES, all_fixtures, rule_codes

EXIT_CONFIRMED, EXIT_FAILED, EXIT_UNAVAILABLE = 0, 1, 2
INSTALL_HINT = 'pip install "flake8-tensorconv[verify]"'


def parse_devices(text: str) -> tuple[str, ...]:
    """``cpu,cuda`` -> ("cpu", "cuda"); raises ConfigError for an unknown device or an empty list."""
    devices = tuple(dict.fromkeys(word.strip().lower() for word in text.replace(" ", ",").split(",") if word.strip()))
    unknown = [device for device in devices if device not in DEVICES]
    if unknown:
        raise ConfigError(f"unknown device(s) {', '.join(unknown)} for --device (known: {', '.join(DEVICES)})")
    if not devices:
        raise ConfigError(f"--device needs at least one of {', '.join(DEVICES)}")
    return devices


def selected_rules(selectors: Sequence[str]) -> list[tuple[str, str]]:
    """(code, name) of the rules to verify: those with a runtime claim, filtered by code prefixes (``ALL``: every one).

    The TCV0xx codes report on the tool itself and have no runtime claim.
    """
    from flake8_tensorconv.rules import RULES_BY_CODE

    codes = sorted({code for code in RULES_BY_CODE if not code.startswith("TCV0")} | set(rule_codes()))
    for prefix in selectors:
        if prefix == "ALL" or any(code.startswith(prefix) for code in codes):
            continue
        if any(code.startswith(prefix) for code in RULES_BY_CODE):
            raise ConfigError(f"{prefix!r} selects only the TCV0xx codes, which report on the tool itself and have no runtime claim")
        raise ConfigError(f"unknown rule selector {prefix!r} (codes look like TCV101; `tensorconv rule --all` lists them)")
    if selectors and "ALL" not in selectors:
        codes = [code for code in codes if any(code.startswith(prefix) for prefix in selectors)]
    return [(code, RULES_BY_CODE[code].name if code in RULES_BY_CODE else "(no rule module)") for code in codes]


def missing_dependencies() -> str | None:
    """Why torch or NumPy cannot be imported, or None."""
    for module in ("numpy", "torch"):
        try:
            __import__(module)
        except (ImportError, OSError) as error:  # OSError: a torch build whose shared libraries do not load
            return f"{module} cannot be imported ({type(error).__name__}: {error})"
    return None


def unavailable_devices(devices: Sequence[str]) -> str | None:
    """Why a named device cannot run claims here (only cuda can be missing), or None."""
    import torch

    if "cuda" in devices and not torch.cuda.is_available():
        cuda_build = torch.version.cuda
        built = f"torch {torch.__version__} was built with CUDA {cuda_build}" if cuda_build else f"torch {torch.__version__} was built without CUDA"
        return f"cuda, but CUDA is not available on this machine ({built}; torch.cuda.is_available() is False)"
    return None


def environment_lines(devices: Sequence[str]) -> list[str]:
    """What the claims ran on: versions and devices."""
    import numpy
    import torch

    from flake8_tensorconv import __version__

    lines = [
        f"tensorconv {__version__} verify: each rule's runtime claims, run with its fixtures on this machine",
        f"Python {platform.python_version()}, torch {torch.__version__}, NumPy {numpy.__version__}",
        f"devices: {', '.join(devices)}",
    ]
    if torch.cuda.is_available():
        index = torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(index)
        lines.append(f"cuda: {torch.cuda.get_device_name(index)} (compute capability {major}.{minor}, torch built with CUDA {torch.version.cuda})")
    else:
        lines.append("cuda: not available")
    return lines


def run_verify(
    devices: Sequence[str], selectors: Sequence[str], out: TextIO | None = None, err: TextIO | None = None, required: bool = False
) -> int:
    """``required``: the user named the devices, so one that is missing is an error rather than a skip."""
    out = out or sys.stdout
    err = err or sys.stderr
    rules = selected_rules(selectors)
    problem = missing_dependencies()
    if problem:
        print(
            f"tensorconv: error: verify runs the rules' claims on torch and NumPy, but {problem}.\n"
            f"Install them with: {INSTALL_HINT}",
            file=err,
        )
        return EXIT_UNAVAILABLE
    missing = unavailable_devices(devices) if required else None
    if missing:
        print(f"tensorconv: error: --device names {missing}; leave it out of --device to verify on the others", file=err)
        return EXIT_UNAVAILABLE

    from flake8_tensorconv.verify.harness import environment, verify
    from flake8_tensorconv.verify.table import build_rows, format_report

    codes = {code for code, _ in rules}
    fixtures = [fixture for fixture in all_fixtures() if fixture.code in codes]
    counts = {code: (0, 0) for code in codes}
    for fixture in fixtures:
        positives, negatives = counts[fixture.code]
        counts[fixture.code] = (positives, negatives + 1) if fixture.is_negative else (positives + 1, negatives)
    header = environment_lines(devices)
    runnable = sum(1 for fixture in fixtures if set(fixture.devices) & set(devices))
    print(f"tensorconv: running {runnable} fixtures of {len(rules)} rules on {', '.join(devices)}...", file=err, flush=True)
    outcomes = verify(fixtures, devices, environment())
    out.write(format_report(header, build_rows(rules, outcomes, devices, counts), devices, outcomes))
    return EXIT_FAILED if any(outcome.failed for outcome in outcomes) else EXIT_CONFIRMED


__all__ = ["INSTALL_HINT", "environment_lines", "missing_dependencies", "unavailable_devices", "parse_devices", "run_verify", "selected_rules"]
