"""Configuration per path: the nearest config above each file, globs relative to it, --config, --show-settings."""

from __future__ import annotations

import os
import pickle

import pytest

from flake8_tensorconv.config import ConfigError, Overrides, Resolver, parse_torch_version

BUG = "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n"


def write(root, relative, text=BUG):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def reported(result):
    return sorted(line.split(":")[0] for line in result.stdout.splitlines())


def test_a_project_checked_from_its_parent_uses_its_own_pyproject(tensorconv, tmp_path):
    write(tmp_path, "proj/pyproject.toml", '[tool.tensorconv]\nignore = ["TCV101"]\n')
    write(tmp_path, "proj/src/a.py")
    write(tmp_path, "other/b.py")
    result = tensorconv("check", "proj", "other", cwd=tmp_path)
    assert reported(result) == ["other/b.py"]


def test_per_file_ignores_globs_are_relative_to_their_config(tensorconv, tmp_path):
    write(tmp_path, "proj/pyproject.toml", '[tool.tensorconv]\nper-file-ignores = { "tests/*" = ["TCV1"] }\n')
    write(tmp_path, "proj/tests/unit/test_a.py")
    write(tmp_path, "proj/src/tests_helper.py")
    assert reported(tensorconv("check", "proj", cwd=tmp_path)) == ["proj/src/tests_helper.py"]
    assert reported(tensorconv("check", ".", cwd=tmp_path / "proj")) == ["src/tests_helper.py"]
    assert reported(tensorconv("check", ".", cwd=tmp_path / "proj" / "tests")) == []


def test_the_nearest_config_wins_and_dot_tensorconv_toml_wins_in_its_folder(tensorconv, tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.tensorconv]\nignore = ["TCV101"]\n')
    write(tmp_path, "a.py")
    # A pyproject.toml without [tool.tensorconv] is not a config: the one above applies.
    write(tmp_path, "plain/pyproject.toml", "[project]\nname = 'x'\n")
    write(tmp_path, "plain/b.py")
    # A nearer config replaces the one above (no inheritance, as in Ruff).
    write(tmp_path, "strict/pyproject.toml", '[tool.tensorconv]\nignore = ["TCV101"]\n')
    write(tmp_path, "strict/.tensorconv.toml", 'extend-select = ["TCV108"]\n')
    write(tmp_path, "strict/c.py")
    assert reported(tensorconv("check", cwd=tmp_path)) == ["strict/c.py"]


def test_config_option_applies_to_every_file_and_the_command_line_goes_on_top(tensorconv, tmp_path):
    write(tmp_path, "proj/pyproject.toml", '[tool.tensorconv]\nignore = ["TCV101"]\n')
    write(tmp_path, "proj/a.py")
    write(tmp_path, "loud.toml", "\n")
    assert reported(tensorconv("check", cwd=tmp_path)) == []
    assert reported(tensorconv("check", "--config", "loud.toml", cwd=tmp_path)) == ["proj/a.py"]
    assert reported(tensorconv("check", "--config", "loud.toml", "--ignore", "TCV1", cwd=tmp_path)) == []
    missing = tensorconv("check", "--config", "nope.toml", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.toml: no such file" in missing.stderr


def test_show_settings_names_the_file_and_its_config(tensorconv, tmp_path):
    write(tmp_path, "proj/pyproject.toml", '[tool.tensorconv]\nper-file-ignores = { "tests/*" = ["TCV1"] }\ntarget-torch = "2.1.0+cu121"\n')
    write(tmp_path, "proj/tests/x.py")
    result = tensorconv("check", "--show-settings", "proj/tests/x.py", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Resolved settings for: proj/tests/x.py"
    assert lines[1] == f"Settings path: {tmp_path / 'proj' / 'pyproject.toml'}"
    assert f'per-file-ignores = {{ "tests/*" = ["TCV1"] }} (globs relative to {tmp_path / "proj"})' in lines
    assert 'target-torch = "2.1"' in lines
    from flake8_tensorconv.rules import ALL_RULES

    expected = [rule.code for rule in ALL_RULES if rule.default_enabled and not rule.code.startswith("TCV1")]
    assert lines[-1] == "# rules that run on this file: " + ", ".join(expected)
    write(tmp_path, "lonely/y.py")
    plain = tensorconv("check", "--show-settings", cwd=tmp_path / "lonely")
    assert plain.stdout.splitlines()[:2] == ["Resolved settings for: y.py", "Settings path: (none: defaults and the command line)"]


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("2.1", (2, 1)), ("1.12rc1", (1, 12)), ("2.1.0+cu121", (2, 1)), ("1.13.1", (1, 13)), ("2", (2, 0)),
        ("2.4.0a0+git1234", (2, 4)), ("2.6.0.dev20250101", (2, 6)),
    ],
)
def test_target_torch_versions(text, version):
    assert parse_torch_version(text, "pyproject.toml") == version


@pytest.mark.parametrize(
    ("value", "message"),
    [('"latest"', "pyproject.toml: target-torch = 'latest' is not a torch version"), ("1.10", 'target-torch must be a string such as "2.1", not 1.1')],
)
def test_a_bad_target_torch_is_an_error_naming_the_file_and_key(tensorconv, tmp_path, value, message):
    write(tmp_path, "pyproject.toml", f"[tool.tensorconv]\ntarget-torch = {value}\n")
    write(tmp_path, "a.py")
    result = tensorconv("check", cwd=tmp_path)
    assert result.returncode == 2
    assert f"tensorconv: error: {tmp_path / 'pyproject.toml'}: " in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr


def test_fix_style_force_checks_the_parsed_target_version(tmp_path):
    write(tmp_path, ".tensorconv.toml", 'fix-style = "force"\ntarget-torch = "1.12rc1"\n')
    with pytest.raises(ConfigError, match=r"\.tensorconv\.toml: fix-style 'force' needs torch 1\.13\+.*target-torch is 1\.12"):
        Resolver().config_for(str(tmp_path / "a.py"))
    write(tmp_path, ".tensorconv.toml", 'fix-style = "force"\ntarget-torch = "1.13.0+cpu"\n')
    assert Resolver().settings_for(str(tmp_path / "a.py")).target_torch == (1, 13)


def test_settings_stay_small_picklable_and_shared_by_a_folder(tmp_path):
    write(tmp_path, "pyproject.toml", '[tool.tensorconv]\nper-file-ignores = { "tests/*" = ["TCV1"] }\n')
    resolver = Resolver(Overrides(ignore=("TCV104",)))
    first = resolver.settings_for(str(tmp_path / "a" / "b.py"))
    assert resolver.settings_for(str(tmp_path / "a" / "c.py")) is first
    assert pickle.loads(pickle.dumps(first)) == first and hash(first) == hash(pickle.loads(pickle.dumps(first)))
    assert first.ignore == ("TCV104",) and first.root == str(tmp_path)
    assert first.ignored_for(os.path.join(tmp_path, "tests", "x.py")) == ("TCV1",)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('exclude = "build"\n', "exclude must be a list of globs such as [\"generated/*\"], not 'build'"),
        ('respect-gitignore = "yes"\n', "respect-gitignore must be true or false, not 'yes'"),
        ("select = 5\n", "select must be a list of codes such as [\"TCV1\"], not 5"),
        ('per-file-ignores = { "a.py" = ["XYZ"] }\n', "unknown rule selector 'XYZ'"),
        ("selekt = []\n", ".tensorconv.toml: unknown option(s): selekt"),
        ("exclude = [\n", ".tensorconv.toml: "),
    ],
)
def test_a_bad_dot_tensorconv_toml_is_an_error_naming_it(tensorconv, tmp_path, content, message):
    write(tmp_path, ".tensorconv.toml", content)
    write(tmp_path, "a.py")
    result = tensorconv("check", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"tensorconv: error: {tmp_path / '.tensorconv.toml'}: ") and message in result.stderr
    assert "Traceback" not in result.stderr
