"""The wheel that `pip install .` builds holds every module of the package.

The packages are listed by hand in pyproject.toml (the fixtures are mapped in from another
folder), so a new subpackage that is not listed works in the editable install the tests use
and is missing from a user's install: the linter then fails on every file.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "flake8_tensorconv"


def test_wheel_holds_every_module(tmp_path: Path) -> None:
    # Built from a copy: setuptools reuses a `build/` folder, which would hide a missing package.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__", "docs", "bench", "tests"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(source)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("flake8_tensorconv-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if name.endswith(".py")}
    sources = {path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts}
    assert sources - shipped == set()
    fixtures = {f"flake8_tensorconv/fixtures/{path.relative_to(ROOT / 'fixtures').as_posix()}" for path in (ROOT / "fixtures").glob("TCV*/*.py")}
    assert fixtures - shipped == set()
