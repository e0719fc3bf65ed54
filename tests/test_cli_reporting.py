"""What `tensorconv check` prints and returns: stdin, statistics, fixes shown, noqa added, summary, output options."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys

import pytest

BUG = "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n"
FIXED = BUG.replace("out.numpy()", "out.detach().numpy()")
# TCV101 (safe fix), TCV201 (safe fix), TCV206 (unsafe fix only) and TCV210 (no fix).
MIXED = (
    "import numpy as np\nimport torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\n"
    "arr = out.numpy()\nt = torch.Tensor(np.arange(1, 3))\n"
    "y = model(torch.ones(1, 3, dtype=torch.float64))\nz = torch.tensor(np.array(['a'], dtype=object))\n"
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bug.py").write_text(BUG)
    (tmp_path / "mixed.py").write_text(MIXED)
    return tmp_path


def test_stdin_is_named_by_stdin_filename_and_uses_its_config(tensorconv, project):
    (project / "pkg" / "tests").mkdir(parents=True)
    (project / "pkg" / "pyproject.toml").write_text('[tool.tensorconv]\nper-file-ignores = { "tests/*" = ["TCV101"] }\n')
    result = tensorconv("check", "-", "--stdin-filename", "pkg/src/a.py", cwd=project, stdin=BUG)
    assert result.returncode == 1
    assert result.stdout.startswith("pkg/src/a.py:5:7: TCV101 [*] ")
    ignored = tensorconv("check", "-", "--stdin-filename", "pkg/tests/test_a.py", cwd=project, stdin=BUG)
    assert (ignored.returncode, ignored.stdout) == (0, "")
    unnamed = tensorconv("check", "-", cwd=project, stdin=BUG)
    assert unnamed.stdout.startswith("-:5:7: TCV101")


def test_stdin_fix_prints_only_the_fixed_source_on_stdout(tensorconv, project):
    result = tensorconv("check", "--fix", "-", "--stdin-filename", "a.py", cwd=project, stdin=BUG)
    assert (result.returncode, result.stdout) == (0, FIXED)
    assert result.stderr == "Found 1 error (1 fixed, 0 remaining).\n"
    remaining = tensorconv("check", "--fix", "-", "--stdin-filename", "m.py", cwd=project, stdin=MIXED)
    assert remaining.returncode == 1
    assert remaining.stdout == MIXED.replace("out.numpy()", "out.detach().numpy()").replace(
        "torch.Tensor(np.arange(1, 3))", "torch.as_tensor(np.arange(1, 3), dtype=torch.get_default_dtype())"
    )
    assert "m.py:8:11: TCV206 " in remaining.stderr and "m.py:9:5: TCV210 " in remaining.stderr
    clean = tensorconv("check", "--fix", "-", cwd=project, stdin="import torch\nx = 1\n")
    assert (clean.returncode, clean.stdout) == (0, "import torch\nx = 1\n")
    assert not (project / "-").exists()


def test_stdin_diff_and_unparsable_input(tensorconv, project):
    diff = tensorconv("check", "--diff", "-", "--stdin-filename", "a.py", cwd=project, stdin=BUG)
    assert diff.returncode == 1 and "--- a.py\n+++ a.py\n" in diff.stdout and "+arr = out.detach().numpy()\n" in diff.stdout
    broken = tensorconv("check", "-", "--stdin-filename", "a.py", cwd=project, stdin="import torch\nx.numpy(\n")
    assert broken.returncode == 1 and broken.stdout.startswith("a.py:2:") and " TCV001 " in broken.stdout


def test_summary_says_what_was_fixed_and_what_fix_could_do(tensorconv, project):
    result = tensorconv("check", "mixed.py", cwd=project)
    assert result.stderr == (
        "Found 4 errors.\n[*] 2 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    )
    fixed = tensorconv("check", "--fix", "mixed.py", cwd=project)
    assert fixed.returncode == 1
    assert fixed.stderr == "Found 4 errors (2 fixed, 2 remaining).\nNo fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option).\n"
    assert tensorconv("check", "bug.py", "--select", "TCV2", cwd=project).stderr == "All checks passed!\n"


def test_statistics_count_per_code_with_the_fixable_mark(tensorconv, project):
    (project / "bug2.py").write_text(BUG)
    result = tensorconv("check", "--statistics", ".", cwd=project)
    assert result.returncode == 1
    assert result.stdout == (
        "3\tTCV101\t[*] numpy-requires-grad\n"
        "1\tTCV201\t[*] legacy-constructor-cast\n"
        "1\tTCV206\t[ ] float64-into-float32-model\n"
        "1\tTCV210\t[ ] unsupported-array-dtype\n"
    )
    as_json = tensorconv("check", "--statistics", "--output-format", "json", "bug.py", cwd=project)
    assert json.loads(as_json.stdout) == [{"code": "TCV101", "name": "numpy-requires-grad", "count": 1, "fixable": True}]
    assert tensorconv("check", "--statistics", "--output-format", "sarif", cwd=project).returncode == 2


def test_show_fixes_lists_the_fixes_per_file(tensorconv, project):
    result = tensorconv("check", "--fix", "--show-fixes", ".", cwd=project)
    assert result.stderr.startswith(
        "Fixed 3 errors:\n"
        "- bug.py:\n"
        "    1 × TCV101 (numpy-requires-grad)\n"
        "- mixed.py:\n"
        "    1 × TCV101 (numpy-requires-grad)\n"
        "    1 × TCV201 (legacy-constructor-cast)\n"
        "Found 5 errors (3 fixed, 2 remaining).\n"
    )


def test_exit_non_zero_on_fix(tensorconv, project):
    assert tensorconv("check", "--fix", "bug.py", cwd=project).returncode == 0
    (project / "bug.py").write_text(BUG)
    assert tensorconv("check", "--fix", "--exit-non-zero-on-fix", "bug.py", cwd=project).returncode == 1
    assert tensorconv("check", "--fix", "--exit-non-zero-on-fix", "bug.py", cwd=project).returncode == 0  # nothing left to fix


def test_output_file_quiet_and_silent(tensorconv, project):
    result = tensorconv("check", "--output-file", "reports/out.txt", "bug.py", cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    assert (project / "reports" / "out.txt").read_text().startswith("bug.py:5:7: TCV101 [*] ")
    quiet = tensorconv("check", "-q", "bug.py", cwd=project)
    assert (quiet.returncode, quiet.stderr) == (1, "") and quiet.stdout.startswith("bug.py:5:7:")
    silent = tensorconv("check", "--silent", "bug.py", "nope.py", cwd=project)
    assert (silent.returncode, silent.stdout) == (2, "")
    assert silent.stderr == "tensorconv: error: nope.py: no such file or directory\n"
    bad = tensorconv("check", "--output-file", "bug.py/x.txt", "bug.py", cwd=project)
    assert bad.returncode == 2 and "bug.py/x.txt: cannot write the output" in bad.stderr


def test_add_noqa_adds_merges_and_is_idempotent(tensorconv, tmp_path):
    source = (
        "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\r\n"
        "a = out.numpy()\r\n"
        "b = out.numpy()  # noqa: E501 keep this reason\r\n"
        "c = out.numpy()  # a note\r\n"
        "d = f(out.numpy(), '''\r\n# not a comment''')\r\n"
        "e = out.numpy() + \\\r\n    1\r\n"
    )
    path = tmp_path / "f.py"
    path.write_bytes(source.encode())
    result = tensorconv("check", "--add-noqa", "f.py", cwd=tmp_path)
    assert result.returncode == 0
    assert "Added 3 noqa directives." in result.stderr
    assert "f.py:8: the line ends inside a string" in result.stderr
    assert "f.py:10: the line ends with a backslash continuation" in result.stderr
    expected = (
        source.replace("a = out.numpy()\r\n", "a = out.numpy()  # noqa: TCV101\r\n")
        .replace("# noqa: E501 keep", "# noqa: E501, TCV101 keep")
        .replace("# a note\r\n", "# a note  # noqa: TCV101\r\n")
    )
    assert path.read_bytes() == expected.encode()
    again = tensorconv("check", "--add-noqa", "f.py", cwd=tmp_path)
    assert "Added 0 noqa directives." in again.stderr
    assert path.read_bytes() == expected.encode()
    remaining = tensorconv("check", "f.py", cwd=tmp_path)
    assert sorted(line.split(":")[1] for line in remaining.stdout.splitlines()) == ["10", "8"]


def test_a_read_only_file_is_not_rewritten_unless_asked(tensorconv, project):
    path = project / "bug.py"
    os.chmod(path, 0o444)
    result = tensorconv("check", "--fix", "bug.py", cwd=project)
    assert result.returncode == 2
    assert "tensorconv: error: bug.py: the file is read-only: not rewritten (--fix-read-only rewrites it)" in result.stderr
    assert result.stdout.startswith("bug.py:5:7: TCV101")  # the findings of the file as it is
    assert path.read_text() == BUG
    assert tensorconv("check", "--add-noqa", "bug.py", cwd=project).returncode == 2
    assert path.read_text() == BUG
    assert tensorconv("check", "--fix", "--fix-read-only", "bug.py", cwd=project).returncode == 0
    assert path.read_text() == FIXED
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_usage_conflicts_are_errors(tensorconv, project):
    for args in (["--add-noqa", "--fix"], ["--add-noqa", "-"], ["-", "bug.py"], ["-j", "0"]):
        result = tensorconv("check", *args, cwd=project, stdin="")
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_only_on_a_terminal(project, monkeypatch, capsys):
    from flake8_tensorconv import cli
    from flake8_tensorconv.output import progress

    for index in range(3):
        (project / f"copy{index}.py").write_text(BUG)
    monkeypatch.chdir(project)
    monkeypatch.setattr(cli, "PROGRESS_MIN_FILES", 2)
    monkeypatch.setattr(progress, "DELAY_S", 0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert cli.main(["check", "-j1", "--no-cache", "."]) == 1
    drawn = terminal.getvalue()
    assert "tensorconv:   0%|" in drawn and "| 0/5 [" in drawn and "file/s]" in drawn
    assert drawn.index("file/s]") < drawn.index("Found 8 errors.")  # the bar is gone before the summary


def test_no_progress_library_is_imported_when_stderr_is_not_a_terminal(project):
    code = "import sys\nfrom flake8_tensorconv import cli\ncli.main(['check', '-j1', '--no-cache', '.'])\nprint('tqdm' in sys.modules)\n"
    for index in range(60):
        (project / f"copy{index}.py").write_text(BUG)
    result = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True)
    assert result.stdout.splitlines()[-1] == "False"
    assert "%|" not in result.stderr


def test_stdin_with_force_exclude_echoes_an_excluded_file_unchanged(tensorconv, project):
    result = tensorconv("check", "--fix", "--force-exclude", "-", "--stdin-filename", "build/lib/a.py", cwd=project, stdin=BUG)
    assert (result.returncode, result.stdout) == (0, BUG)
    report = tensorconv("check", "--force-exclude", "-", "--stdin-filename", "build/lib/a.py", cwd=project, stdin=BUG)
    assert (report.returncode, report.stdout) == (0, "")


def test_add_noqa_names_a_file_that_does_not_parse_and_leaves_it(tensorconv, tmp_path):
    (tmp_path / "broken.py").write_text("import torch\nx.numpy(\n")
    result = tensorconv("check", "--add-noqa", ".", cwd=tmp_path)
    assert result.returncode == 0
    assert "tensorconv: warning: broken.py:2:" in result.stderr and "TCV001" in result.stderr and "no noqa comment added" in result.stderr
    assert (tmp_path / "broken.py").read_text() == "import torch\nx.numpy(\n"


def test_diff_summary_and_output_file(tensorconv, project):
    result = tensorconv("check", "--diff", "--output-file", "fixes.diff", "mixed.py", cwd=project)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "Would fix 2 errors (1 additional fix available with `--unsafe-fixes`).\n"
    assert "+arr = out.detach().numpy()\n" in (project / "fixes.diff").read_text()
    clean = tensorconv("check", "--diff", "mixed.py", "--select", "TCV206", cwd=project)
    assert clean.stderr == "No errors would be fixed (1 additional fix available with `--unsafe-fixes`).\n"
