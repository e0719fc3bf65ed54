from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_tool(*args: str, cwd: Path | str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a console tool the way a user does, in a subprocess."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        timeout=300,
    )


@pytest.fixture
def tensorconv():
    def run(*args: str, cwd: Path | str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return run_tool("-m", "flake8_tensorconv", *args, cwd=cwd, stdin=stdin)

    return run


@pytest.fixture
def flake8():
    def run(*args: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess[str]:
        return run_tool("-m", "flake8", *args, cwd=cwd)

    return run
