"""The cache makes a run faster and never different: hits, every kind of invalidation, and what it leaves on disk."""

from __future__ import annotations

import json
import os

import pytest

from flake8_tensorconv import cache as cache_module
from flake8_tensorconv import runner
from flake8_tensorconv.cache import CACHE_DIRECTORY, Cache, project_root
from flake8_tensorconv.config import Settings, find_pyproject
from flake8_tensorconv.runner import Mode, check_files

GRAD_BUG = "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n"
LEGACY = "import torch\nimport numpy as np\n\nt = torch.Tensor(np.arange(3))\n"
CLEAN = "import torch\n\nx = torch.ones(3)\narr = x.numpy()\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bug.py").write_text(GRAD_BUG)
    (tmp_path / "legacy.py").write_text(LEGACY)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "plain.py").write_text("print('no trigger')\n")
    return tmp_path


@pytest.fixture
def count_lints(monkeypatch):
    """How many files the engine really linted (a cache hit does not get there)."""
    calls: list[str] = []
    original = runner.check_file

    def counting(path, settings, mode):
        calls.append(os.path.basename(path))
        return original(path, settings, mode)

    monkeypatch.setattr(runner, "check_file", counting)
    return calls


def run(project, settings: Settings | None = None, mode: Mode | None = None) -> list[tuple[str, list[tuple[str, int, int]]]]:
    settings = settings or Settings()
    mode = mode or Mode()
    paths = sorted(str(path) for path in project.glob("*.py"))
    results = check_files(paths, settings, mode, jobs=1, cache=Cache(str(project), settings))
    assert all(result.error is None for result in results)
    return [(os.path.basename(r.path), [(f.code, f.start.line, f.start.column) for f in r.findings]) for r in results]


def test_second_run_is_answered_from_the_cache_with_the_same_findings(project, count_lints):
    first = run(project)
    assert sorted(count_lints) == ["bug.py", "clean.py", "legacy.py", "plain.py"]
    count_lints.clear()
    assert run(project) == first
    assert count_lints == []
    assert ("bug.py", [("TCV101", 5, 6)]) in first


def test_a_changed_file_is_linted_again_and_only_that_one(project, count_lints):
    run(project)
    count_lints.clear()
    (project / "clean.py").write_text(GRAD_BUG)
    results = dict(run(project))
    assert count_lints == ["clean.py"]
    assert results["clean.py"] == [("TCV101", 5, 6)]


def test_other_settings_do_not_use_the_entries(project, count_lints):
    run(project)
    count_lints.clear()
    results = dict(run(project, Settings(ignore=("TCV101",))))
    assert len(count_lints) == 4
    assert results["bug.py"] == []


def test_per_file_ignores_are_part_of_the_key(project, tmp_path, count_lints):
    settings = Settings(per_file_ignores=(("bug.py", ("TCV101",)),))
    first = dict(run(project, settings))
    assert first["bug.py"] == []
    count_lints.clear()
    assert dict(run(project, settings)) == first
    assert count_lints == []


def test_a_new_version_or_changed_linter_code_starts_afresh(project, monkeypatch, count_lints):
    run(project)
    count_lints.clear()
    monkeypatch.setattr(cache_module, "__version__", "99.0")
    run(project)
    assert len(count_lints) == 4
    count_lints.clear()
    monkeypatch.setattr(cache_module, "_source_fingerprint", lambda: "edited rule")
    run(project)
    assert len(count_lints) == 4


def test_the_fingerprint_covers_the_linters_own_source():
    assert len(cache_module._source_fingerprint()) == 32
    assert cache_module.fingerprint(Settings()) != cache_module.fingerprint(Settings(fix_style="force"))


def test_corrupt_cache_file_is_ignored_and_replaced(project, count_lints):
    first = run(project)
    (cache_file,) = (project / CACHE_DIRECTORY).glob("*.json")
    cache_file.write_text("{not json")
    count_lints.clear()
    assert run(project) == first
    assert len(count_lints) == 4
    count_lints.clear()
    assert run(project) == first
    assert count_lints == []


def test_corrupt_entry_is_ignored(project, count_lints):
    first = run(project)
    (cache_file,) = (project / CACHE_DIRECTORY).glob("*.json")
    data = json.loads(cache_file.read_text())
    key = str(project / "bug.py")
    data["entries"][key][2] = [["TCV101", "message", "line one", 0, 5, 9, None]]
    data["entries"][str(project / "legacy.py")] = "garbage"
    cache_file.write_text(json.dumps(data))
    count_lints.clear()
    assert run(project) == first
    assert sorted(count_lints) == ["bug.py", "legacy.py"]


def test_entries_round_trip_fixes_exactly(project):
    paths = [str(project / "legacy.py")]
    settings = Settings()
    first = check_files(paths, settings, Mode(), jobs=1, cache=Cache(str(project), settings))
    second = check_files(paths, settings, Mode(), jobs=1, cache=Cache(str(project), settings))
    assert first[0].findings and first[0].findings[0].fix is not None
    assert second[0].findings == first[0].findings


def test_cache_directory_is_tagged_and_ignored_by_git(project):
    run(project)
    directory = project / CACHE_DIRECTORY
    assert (directory / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (directory / ".gitignore").read_text().splitlines()[-1] == "*"


def test_concurrent_runs_keep_each_others_entries(project):
    settings = Settings()
    first, second = Cache(str(project), settings), Cache(str(project), settings)
    check_files([str(project / "bug.py")], settings, Mode(), jobs=1, cache=first)
    check_files([str(project / "legacy.py")], settings, Mode(), jobs=1, cache=second)
    with open(first.path, encoding="utf-8") as handle:
        entries = json.load(handle)["entries"]
    assert set(entries) == {str(project / "bug.py"), str(project / "legacy.py")}
    assert not [name for name in os.listdir(project / CACHE_DIRECTORY) if name.endswith(".tmp")]


def test_fix_is_never_skipped_and_the_fixed_file_is_cached(project, count_lints):
    run(project)
    count_lints.clear()
    run(project, mode=Mode(fix=True))
    assert "bug.py" in count_lints and "plain.py" not in count_lints
    assert "out.detach().numpy()" in (project / "bug.py").read_text()
    count_lints.clear()
    assert dict(run(project))["bug.py"] == []
    assert count_lints == []


def test_unwritable_cache_is_reported_not_fatal(project, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache_module.os, "makedirs", refuse)
    cache = Cache(str(project), Settings())
    results = check_files([str(project / "bug.py")], Settings(), Mode(), jobs=1, cache=cache)
    assert results[0].findings
    assert "Permission denied" in (cache.write_error or "")


def test_only_the_most_recent_fingerprints_are_kept(project, monkeypatch):
    for version in range(12):
        monkeypatch.setattr(cache_module, "__version__", f"0.{version}")
        run(project)
    assert len(list((project / CACHE_DIRECTORY).glob("*.json"))) == cache_module._KEPT_FILES
    assert os.path.exists(Cache(str(project), Settings()).path)  # the newest one stays


def test_cli_writes_the_cache_in_the_project_root_and_no_cache_leaves_none(tensorconv, project):
    (project / "pyproject.toml").write_text("[tool.tensorconv]\n")
    (project / "sub").mkdir()
    first = tensorconv("check", "--no-cache", ".", cwd=project / "sub")
    assert not (project / CACHE_DIRECTORY).exists() and not (project / "sub" / CACHE_DIRECTORY).exists()
    cold = tensorconv("check", "..", cwd=project / "sub")
    warm = tensorconv("check", "..", cwd=project / "sub")
    assert (project / CACHE_DIRECTORY / "CACHEDIR.TAG").is_file()
    assert cold.stdout == warm.stdout and cold.returncode == warm.returncode == 1
    assert "TCV101" in warm.stdout and first.returncode == 0


def test_project_root_is_the_pyproject_folder_else_the_current_one(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    if find_pyproject(str(tmp_path)) is None:
        assert project_root(start=str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    (tmp_path / "a" / "pyproject.toml").write_text("")
    assert project_root(start=str(tmp_path / "a" / "b")) == str(tmp_path / "a")
    assert project_root(config=str(tmp_path / "a" / "pyproject.toml"), start=str(tmp_path)) == str(tmp_path / "a")
    (tmp_path / "a" / "b" / ".tensorconv.toml").write_text("")
    assert project_root(start=str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")


def test_a_diff_run_does_not_cache_the_findings_of_the_fixed_text(project):
    settings = Settings()
    bug = str(project / "bug.py")
    check_files([bug], settings, Mode(diff=True), jobs=1, cache=Cache(str(project), settings))
    (result,) = check_files([bug], settings, Mode(), jobs=1, cache=Cache(str(project), settings))
    assert [finding.code for finding in result.findings] == ["TCV101"]


def test_an_edited_nested_config_is_not_answered_from_the_cache(tensorconv, project):
    (project / "sub").mkdir()
    (project / "sub" / "bug.py").write_text(GRAD_BUG)
    config = project / "sub" / ".tensorconv.toml"

    def fix_contents() -> list[str]:
        findings = json.loads(tensorconv("check", "--output-format", "json", "sub", cwd=project).stdout)
        return [edit["content"] for finding in findings for edit in finding["fix"]["edits"]]

    config.write_text('fix-style = "force"\n')
    assert fix_contents() == fix_contents() == ["numpy(force=True)"]
    config.write_text('fix-style = "detach-cpu"\n')
    assert fix_contents() == [".detach()"]
