"""Checking files in several processes gives exactly what one process gives, in the same order."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.parallel import run_tasks
from flake8_tensorconv.runner import Mode, check_files

ROOT = Path(__file__).resolve().parent.parent

SNIPPETS = [
    "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n",
    "import torch\nimport numpy as np\n\nt = torch.Tensor(np.arange(3))\n",
    "import torch\n\nx = torch.ones(3, requires_grad=True)\ny = x.cpu().detach()\n",
    "import torch\n\nx = torch.ones(3)\narr = x.numpy()\n",
    "print('no trigger here')\n",
    "import torch\nx = torch.ones(3).numpy(\n",  # unparsable: TCV001
    "import torch\nw = torch.nn.Linear(2, 2).weight\nv = w.data.numpy()\n",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Many files of very different sizes (the scheduler groups small ones and sorts by size)."""
    root = tmp_path_factory.mktemp("parallel")
    rng = random.Random(7)
    for index in range(60):
        folder = root / f"pkg{index % 4}"
        folder.mkdir(exist_ok=True)
        snippet = SNIPPETS[index % len(SNIPPETS)]
        padding = "\n".join(f"def f{n}(a):\n    return a + {n}\n" for n in range(rng.choice([0, 5, 100, 600])))
        (folder / f"m{index:02}.py").write_text(snippet + "\n" + padding + "\n")
    (root / "latin.py").write_bytes(b"# -*- coding: ascii -*-\nimport torch\nx = '\xe9'.numpy()\n")
    return root


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_cli_output_is_the_same_with_one_two_and_three_jobs(tensorconv, project, output_format):
    runs = [tensorconv("check", "--no-cache", "-j", str(jobs), "--output-format", output_format, ".", cwd=project) for jobs in (1, 2, 3)]
    assert runs[0].returncode == 1
    assert runs[0].stdout.count("TCV") > 20
    for other in runs[1:]:
        assert (other.stdout, other.stderr, other.returncode) == (runs[0].stdout, runs[0].stderr, runs[0].returncode)


def test_diff_is_the_same_in_parallel(tensorconv, project):
    serial = tensorconv("check", "--no-cache", "-j1", "--diff", "--unsafe-fixes", ".", cwd=project)
    parallel = tensorconv("check", "--no-cache", "-j2", "--diff", "--unsafe-fixes", ".", cwd=project)
    assert serial.stdout.startswith("---")
    assert (parallel.stdout, parallel.stderr) == (serial.stdout, serial.stderr)


def test_results_come_back_in_the_order_of_the_paths(project):
    paths = sorted(str(path) for path in project.rglob("*.py"))
    random.Random(3).shuffle(paths)
    serial = check_files(paths, Settings(), Mode(), jobs=1)
    parallel = check_files(paths, Settings(), Mode(), jobs=2)
    assert [result.path for result in parallel] == paths
    assert parallel == serial


def test_fixes_in_parallel_write_what_one_process_writes(tmp_path, project):
    copies = []
    for jobs in (1, 2):
        target = tmp_path / f"j{jobs}"
        target.mkdir()
        for path in sorted(project.rglob("*.py")):
            (target / path.relative_to(project).as_posix().replace("/", "_")).write_bytes(path.read_bytes())
        paths = sorted(str(path) for path in target.glob("*.py"))
        results = check_files(paths, Settings(), Mode(fix=True, unsafe_fixes=True), jobs=jobs)
        copies.append(({Path(p).name: Path(p).read_bytes() for p in paths}, [(r.fixed, r.findings) for r in results]))
    assert copies[0] == copies[1]
    assert sum(fixed for fixed, _ in copies[0][1]) > 5


def test_the_fixtures_folder_lints_the_same_in_parallel(tensorconv):
    serial = tensorconv("check", "--no-cache", "-j1", "--output-format", "json", "fixtures", cwd=ROOT)
    parallel = tensorconv("check", "--no-cache", "-j2", "--output-format", "json", "fixtures", cwd=ROOT)
    assert serial.stdout.startswith("[")
    assert (parallel.stdout, parallel.returncode) == (serial.stdout, serial.returncode)


# ------------------------------------------------------------------ the worker pool itself
PARENT = os.getpid()


def _square(number: int) -> int:
    return number * number


def _big(number: int) -> str:
    return str(number) * 300_000  # far more than a pipe holds: the parent must read while workers write


def _fails_on_seven(number: int) -> int:
    if number == 7:
        raise ValueError("seven")
    return number


def _dies_on_five(number: int) -> int:
    if number == 5 and os.getpid() != PARENT:
        os._exit(3)  # a worker killed mid-task (out of memory, say)
    return -number


def test_run_tasks_gives_every_result_in_order():
    assert run_tasks(_square, list(range(100)), jobs=3) == [n * n for n in range(100)]
    assert run_tasks(_big, [1, 2, 3], jobs=2) == [_big(1), _big(2), _big(3)]
    assert run_tasks(_square, [], jobs=4) == []


def test_a_task_that_raises_in_a_worker_raises_in_the_parent():
    with pytest.raises(ValueError, match="seven"):
        run_tasks(_fails_on_seven, list(range(10)), jobs=2)


def test_the_tasks_of_a_worker_that_died_are_done_by_the_parent():
    assert run_tasks(_dies_on_five, list(range(12)), jobs=2) == [-n for n in range(12)]


@pytest.mark.parametrize("jobs", [1, 3])
def test_each_task_is_reported_done_once_in_the_parent(jobs):
    done: list[int] = []
    assert run_tasks(_dies_on_five, list(range(12)), jobs=jobs, done=done.append) == [-n for n in range(12)]
    assert sorted(done) == list(range(12))
