"""The linter runs clean on its own code, and never imports torch or numpy."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flake8_tensorconv"


def test_flake8_with_the_plugin_is_clean_on_our_code(flake8):
    result = flake8("flake8_tensorconv", "tests", "bench" if (ROOT / "bench").is_dir() else "tests", cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_is_clean_on_our_code():
    beside = Path(sys.executable).with_name("ruff")  # the venv's own, when the tests run without activating it
    ruff = str(beside) if beside.is_file() else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed")
    result = subprocess.run([ruff, "check", "--no-cache", "flake8_tensorconv", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_torch_or_numpy_import_outside_verify():
    for path in PACKAGE.rglob("*.py"):
        if "verify" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            for name in names:
                assert name.partition(".")[0] not in ("torch", "numpy"), f"{path} imports {name}"


def test_importing_and_running_the_cli_loads_neither_torch_nor_numpy(tmp_path):
    (tmp_path / "f.py").write_text("import torch\nx = torch.ones(3, requires_grad=True).numpy()\n")
    (tmp_path / "plain.py").write_text("print('no trigger here')\n")
    code = (
        "import sys\nfrom flake8_tensorconv import cli\n"
        "status = cli.main(['check', '-j1', 'plain.py'])\n"
        "assert 'flake8_tensorconv.inference' not in sys.modules, 'a file without triggers was analysed'\n"
        "cli.main(['check', '-j1', 'f.py'])\n"
        "assert 'torch' not in sys.modules and 'numpy' not in sys.modules and 'libcst' not in sys.modules\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.stdout.strip().endswith("ok"), result.stdout + result.stderr


def test_a_check_imports_nothing_slow_to_import(tmp_path):
    """Start-up is a large part of a run over a small project: a check imports none of the
    standard modules that cost milliseconds (dataclasses and inspect; tokenize for UTF-8
    files; output formats it does not print)."""
    (tmp_path / "f.py").write_text("import torch\nx = torch.ones(3, requires_grad=True).numpy()\n")
    code = (
        "import sys\nbefore = set(sys.modules)\nfrom flake8_tensorconv import cli\n"
        "cli.main(['check', '-j1', '--no-cache', 'f.py'])\n"
        "slow = {'dataclasses', 'inspect', 'pkgutil', 'tokenize', 'textwrap', 'concurrent.futures', 'hashlib', 'json'}\n"
        "slow |= {'flake8_tensorconv.output.' + name for name in ('json_format', 'sarif', 'github')}\n"
        "print(sorted((set(sys.modules) - before) & slow))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1:] == ["[]"], result.stdout + result.stderr
