"""`tensorconv check --fix` killed at any moment leaves every file whole: its old bytes or its new ones.

The kill test runs a few dozen iterations here; `TENSORCONV_KILL_ITERATIONS=500 pytest
tests/test_crash_safety.py` is the slow variant (see docs/robustness.md).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ITERATIONS = int(os.environ.get("TENSORCONV_KILL_ITERATIONS", "16"))
FILES = 24
# A module that a safe fix rewrites (TCV101 + TCV102), with bulk so that writes take a moment.
BODY = (
    "import torch\n\n"
    "def evaluate():\n"
    "    model = torch.nn.Linear(3, 2).cuda()\n"
    "    out = model(torch.ones(1, 3).cuda())\n"
    "    return out.numpy()\n"
    + "".join(f"\nPAD_{i} = {'x' * 200!r}\n" for i in range(60))
)


def _tree(root: Path) -> dict[Path, bytes]:
    files = {}
    for index in range(FILES):
        folder = root / f"pkg{index % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"m{index}.py"
        data = BODY.replace("out.numpy()", f"out.numpy()  # {index}").encode()
        path.write_bytes(data)
        files[path] = data
    return files


def _tensorconv(*args: str) -> list[str]:
    return [sys.executable, "-m", "flake8_tensorconv", "check", "--no-cache", *args]


def _fixed_forms(tmp_path: Path) -> dict[str, bytes]:
    """What every file becomes, by file name, from an uninterrupted run."""
    reference = tmp_path / "reference"
    files = _tree(reference)
    subprocess.run(_tensorconv("--fix", "-j1", str(reference)), check=False, capture_output=True)
    fixed = {path.name: path.read_bytes() for path in files}
    assert all(fixed[path.name] != data for path, data in files.items()), "the reference run fixed nothing"
    return fixed


def _temporaries(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if path.name.startswith(".tensorconv-")]


def test_killed_fix_runs_leave_old_or_new_bytes_and_the_next_run_cleans_up(tmp_path):
    fixed = _fixed_forms(tmp_path)
    rng = random.Random(20261124)
    interrupted = 0
    for iteration in range(ITERATIONS):
        root = tmp_path / f"run{iteration}"
        original = _tree(root)
        jobs = "-j1" if iteration % 2 else "-j2"
        process = subprocess.Popen(_tensorconv("--fix", jobs, str(root)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.02, 0.3))
        if process.poll() is None:
            interrupted += 1
        process.send_signal(signal.SIGKILL)
        process.wait()
        for path, data in original.items():
            now = path.read_bytes()
            assert now in (data, fixed[path.name]), f"{path} holds neither its old nor its new bytes"
        # The next run finishes the work and removes what the killed one left behind.
        subprocess.run(_tensorconv("--fix", "-j1", str(root)), check=False, capture_output=True)
        assert all(path.read_bytes() == fixed[path.name] for path in original)
        assert _temporaries(root) == []
    assert interrupted >= ITERATIONS // 3, f"only {interrupted} of {ITERATIONS} runs were killed mid-way: adjust the delays"


def test_two_concurrent_fix_runs_corrupt_nothing(tmp_path):
    fixed = _fixed_forms(tmp_path)
    for iteration in range(4):
        root = tmp_path / f"run{iteration}"
        original = _tree(root)
        runs = [subprocess.Popen(_tensorconv("--fix", jobs, str(root)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for jobs in ("-j1", "-j2")]
        errors = [run.communicate()[1].decode() for run in runs]
        assert all("Traceback" not in error for error in errors), errors
        assert all(path.read_bytes() == fixed[path.name] for path in original)
        assert _temporaries(root) == []


def test_a_temporary_of_a_live_run_is_kept(tmp_path):
    from flake8_tensorconv.source import remove_stale_temporaries

    live = tmp_path / f".tensorconv-{os.getpid()}-abc.tmp"
    dead_pid = 2**22 + 12345  # above the kernel's pid_max default of 2**22
    dead = tmp_path / f".tensorconv-{dead_pid}-def.tmp"
    unrelated = tmp_path / ".tensorconv-notes.tmp"
    for path in (live, dead, unrelated):
        path.write_text("x")
    remove_stale_temporaries(str(tmp_path))
    assert live.exists() and unrelated.exists() and not dead.exists()


@pytest.mark.parametrize("errno_name", ["ENOSPC", "EIO"])
def test_a_failed_write_leaves_the_original_and_names_the_file(tmp_path, monkeypatch, capsys, errno_name):
    import errno

    from flake8_tensorconv import cli

    path = tmp_path / "f.py"
    path.write_text(BODY)

    def fail(fd: int) -> None:
        raise OSError(getattr(errno, errno_name), os.strerror(getattr(errno, errno_name)))

    monkeypatch.setattr(os, "fsync", fail)
    status = cli.main(["check", "--fix", "--no-cache", "-j1", str(path)])
    assert status == 2
    assert path.read_text() == BODY
    assert f"{path}" in capsys.readouterr().err
    assert _temporaries(tmp_path) == []
