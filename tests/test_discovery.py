"""Which files `tensorconv check` looks at: default and configured excludes, ignore files, force-exclude, errors."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flake8_tensorconv.config import DEFAULT_EXCLUDE

BUG = "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n"


def write(root, *relative_paths, text=BUG):
    for relative in relative_paths:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def shown(tensorconv, cwd, *args):
    result = tensorconv("check", "--show-files", *args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_default_excludes_are_ruffs_and_our_cache():
    ruff = (
        ".bzr .direnv .eggs .git .git-rewrite .hg .ipynb_checkpoints .mypy_cache .nox .pants.d .pyenv .pytest_cache "
        ".pytype .ruff_cache .svn .tox .venv .vscode __pypackages__ _build buck-out build dist node_modules site-packages venv"
    ).split()
    assert set(ruff) | {".tensorconv_cache"} <= set(DEFAULT_EXCLUDE)


def test_build_copies_and_virtualenvs_are_skipped(tensorconv, tmp_path):
    write(tmp_path, "src/pkg/a.py", "build/lib/pkg/a.py", "dist/a.py", "venv/lib/site-packages/x.py", "lib/site-packages/y.py", "node_modules/z.py")
    assert shown(tensorconv, tmp_path) == ["src/pkg/a.py"]
    result = tensorconv("check", cwd=tmp_path)
    assert result.stdout.count("TCV101") == 1  # the build/ copy no longer doubles every finding


def test_exclude_globs_are_relative_to_the_config_that_states_them(tensorconv, tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "pyproject.toml").write_text('[tool.tensorconv]\nextend-exclude = ["generated/*", "*_pb2.py"]\n')
    write(tmp_path, "proj/generated/deep/a.py", "proj/src/model_pb2.py", "proj/src/ok.py", "other/generated/b.py")
    # From the parent folder, the globs still mean proj/generated; other/generated is not excluded.
    assert shown(tensorconv, tmp_path) == ["other/generated/b.py", "proj/src/ok.py"]
    assert shown(tensorconv, tmp_path / "proj") == ["src/ok.py"]


def test_command_line_exclude_replaces_the_defaults_and_extend_exclude_adds(tensorconv, tmp_path):
    write(tmp_path, "build/a.py", "src/b.py", "src/gen/c.py")
    assert shown(tensorconv, tmp_path, "--exclude", "gen") == ["build/a.py", "src/b.py"]
    assert shown(tensorconv, tmp_path, "--extend-exclude", "src/gen,nothing") == ["src/b.py"]


def test_gitignore_files_nested_ones_and_negations_are_respected_in_a_repository(tensorconv, tmp_path):
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("private.py\n")
    (tmp_path / ".gitignore").write_text("ignored/\n*_gen.py\n")
    write(tmp_path, "ignored/a.py", "src/a_gen.py", "src/keep_gen.py", "src/sub/local.py", "src/sub/b.py", "private.py", "main.py")
    (tmp_path / "src" / ".gitignore").write_text("!keep_gen.py\n")
    (tmp_path / "src" / "sub" / ".gitignore").write_text("local.py\n")
    assert shown(tensorconv, tmp_path) == ["main.py", "src/keep_gen.py", "src/sub/b.py"]
    # A folder checked on its own still follows the ignore files above it in the repository.
    assert shown(tensorconv, tmp_path, "src") == ["src/keep_gen.py", "src/sub/b.py"]
    assert len(shown(tensorconv, tmp_path, "--no-respect-gitignore")) == 7
    (tmp_path / "pyproject.toml").write_text("[tool.tensorconv]\nrespect-gitignore = false\n")
    assert len(shown(tensorconv, tmp_path)) == 7


def test_dot_ignore_applies_everywhere_and_gitignore_only_in_a_repository(tensorconv, tmp_path):
    (tmp_path / ".ignore").write_text("scratch/\n")
    (tmp_path / ".gitignore").write_text("main.py\n")
    write(tmp_path, "scratch/a.py", "main.py")
    assert shown(tensorconv, tmp_path) == ["main.py"]


def test_a_file_named_explicitly_is_checked_unless_force_exclude(tensorconv, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    write(tmp_path, "build/gen.py", "ignored.py", "src/a.py")
    assert shown(tensorconv, tmp_path, "build/gen.py", "ignored.py", "src/a.py") == ["build/gen.py", "ignored.py", "src/a.py"]
    # pre-commit passes every staged file: --force-exclude applies the excludes to them (a folder above counts).
    assert shown(tensorconv, tmp_path, "--force-exclude", "build/gen.py", "src/a.py") == ["src/a.py"]
    (tmp_path / "pyproject.toml").write_text('[tool.tensorconv]\nforce-exclude = true\nextend-exclude = ["src"]\n')
    result = tensorconv("check", "build/gen.py", "src/a.py", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == ""
    assert "No Python files found under the given path(s)" in result.stderr


def test_no_python_files_is_a_warning_and_exit_0(tensorconv, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "readme.md").write_text("# nothing\n")
    result = tensorconv("check", "docs", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr == "tensorconv: warning: No Python files found under the given path(s)\n"


def test_a_file_that_cannot_be_read_is_an_error_naming_it(tensorconv, tmp_path):
    write(tmp_path, "good.py")
    os.symlink(tmp_path / "missing-target.py", tmp_path / "dangling.py")
    os.symlink("loop.py", tmp_path / "loop.py")
    for args in ([], ["--select", "TCV2"], ["--ignore", "TCV001"]):  # never hidden by a selection
        result = tensorconv("check", *args, cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "tensorconv: error: dangling.py: cannot read: No such file or directory" in result.stderr
        assert "tensorconv: error: loop.py: cannot read: Too many levels of symbolic links" in result.stderr
        assert "Traceback" not in result.stderr


def test_a_folder_that_cannot_be_read_is_an_error_naming_it(tmp_path, monkeypatch, capsys):
    from flake8_tensorconv import cli

    write(tmp_path, "ok/a.py", "locked/b.py")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.path.basename(os.path.abspath(path)) == "locked":
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "-j1", "--no-cache", "."]) == 2
    captured = capsys.readouterr()
    assert "tensorconv: error: locked: cannot read the folder: Permission denied" in captured.err
    assert "ok/a.py:5:7: TCV101" in captured.out


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_folder_on_disk(tensorconv, tmp_path):
    write(tmp_path, "locked/b.py")
    os.chmod(tmp_path / "locked", 0)
    try:
        result = tensorconv("check", cwd=tmp_path)
    finally:
        os.chmod(tmp_path / "locked", 0o755)
    assert result.returncode == 2
    assert "locked: cannot read the folder: Permission denied" in result.stderr


def test_a_folder_named_explicitly_is_walked_even_if_an_ignore_file_above_ignores_it(tensorconv, tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("vendored/\n")
    write(tmp_path, "vendored/lib/a.py", "vendored/lib/skip_me.py", "src/b.py")
    (tmp_path / "vendored" / ".gitignore").write_text("skip_me.py\n")
    assert shown(tensorconv, tmp_path) == ["src/b.py"]
    assert shown(tensorconv, tmp_path, "vendored") == ["vendored/lib/a.py"]


def test_pathspec_is_imported_only_when_a_walk_meets_an_ignore_file_with_more_than_plain_lines(tmp_path):
    import subprocess
    import sys

    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("# plain lines\nignored.py\nbuild/\n*.egg-info/\n")
    write(tmp_path, "a.py", "ignored.py", "plain/a.py", "plain/ignored.py", "plain/build/b.py", "plain/c.py", "fancy/b.py", "fancy/keep.py")
    (tmp_path / "plain" / ".ignore").write_text("/c.py\n")
    (tmp_path / "fancy" / ".ignore").write_text("!keep.py\n[bc].py\n")
    code = (
        "import sys\nfrom flake8_tensorconv import cli\n"
        "cli.main(['check', '-j1', '--no-cache', 'a.py'])\nprint('pathspec' in sys.modules)\n"
        "cli.main(['check', '--show-files', 'plain'])\nprint('pathspec' in sys.modules)\n"
        "cli.main(['check', '--show-files', 'fancy'])\nprint('pathspec' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert [line for line in result.stdout.splitlines() if line in ("True", "False")] == ["False", "False", "True"]
    assert [line for line in result.stdout.splitlines() if line.endswith(".py")] == ["plain/a.py", "fancy/keep.py"]


_SEGMENTS = st.sampled_from(["a", "b", "ab", "*", "a*", "*.py", ".venv", "x-y", "...", ".", "**", "é", "a b", "[ab]", "!a", "#a", ""])
_PATTERNS = st.builds(
    lambda anchor, segments, folder: anchor + "/".join(segments) + folder,
    st.sampled_from(["", "/"]),
    st.lists(_SEGMENTS, min_size=1, max_size=3),
    st.sampled_from(["", "/"]),
)
_PATHS = st.builds(
    lambda parts, folder: "/".join(parts) + folder,
    st.lists(st.sampled_from(["a", "b", "ab", "a.py", ".venv", "x-y", "..."]), min_size=1, max_size=4),
    st.sampled_from(["", "/"]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PATTERNS, max_size=4), st.lists(_PATHS, min_size=1, max_size=5))
def test_plain_ignore_lines_are_matched_as_pathspec_matches_them(lines, paths):
    """An ignore file of plain lines is matched without pathspec, with pathspec's decisions; any other is pathspec's."""
    import pathspec

    from flake8_tensorconv.files import ignore_spec

    spec, reference = ignore_spec(lines), pathspec.GitIgnoreSpec.from_lines(lines)
    for path in paths:
        assert spec.check_file(path).include == reference.check_file(path).include, (lines, path)


def test_ignore_files_of_plain_lines_are_matched_without_pathspec():
    from flake8_tensorconv.files import ignore_spec

    spec = ignore_spec(["# a comment", "", "build/", "*.egg-info/", "/docs/_build", "a/*.py"])
    assert type(spec).__module__ == "flake8_tensorconv.files"
    paths = ("build/", "x/build/", "build", "p.egg-info/", "docs/_build/", "x/docs/_build/", "a/b.py", "a/b/c.py", "b.py")
    decisions = {path: spec.check_file(path).include for path in paths}
    assert decisions == {
        "build/": True, "x/build/": True, "build": None, "p.egg-info/": True, "docs/_build/": True,
        "x/docs/_build/": None, "a/b.py": True, "a/b/c.py": None, "b.py": None,
    }
    assert type(ignore_spec(["!keep.py"])).__module__.startswith("pathspec")
