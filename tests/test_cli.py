"""The tensorconv command as a user runs it: exit codes, formats, selection, errors."""

from __future__ import annotations

import json
import os
import stat

import pytest

GRAD_BUG = "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n"
CLEAN = "import torch\n\nx = torch.ones(3)\narr = x.numpy()\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bug.py").write_text(GRAD_BUG)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_text_output_is_one_line_per_finding_with_1_based_positions(tensorconv, project):
    result = tensorconv("check", "bug.py", cwd=project)
    assert result.returncode == 1
    assert result.stdout == (
        "bug.py:5:7: TCV101 [*] `.numpy()` on a tensor that may require grad raises RuntimeError; call `.detach()` first"
        " (`out` comes from `model(torch.ones(1, 3))` on line 4, outside `no_grad`)\n"
    )
    assert "Found 1 finding" in result.stderr


def test_clean_file_exits_zero(tensorconv, project):
    result = tensorconv("check", "clean.py", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == ""


def test_folder_is_searched_recursively_and_skips_virtualenvs(tensorconv, project):
    (project / "pkg" / "sub").mkdir(parents=True)
    (project / "pkg" / "sub" / "deep.py").write_text(GRAD_BUG)
    (project / ".venv").mkdir()
    (project / ".venv" / "site.py").write_text(GRAD_BUG)
    result = tensorconv("check", ".", cwd=project)
    files = sorted(line.split(":")[0] for line in result.stdout.splitlines())
    assert files == ["bug.py", os.path.join("pkg", "sub", "deep.py")]


def test_missing_path_is_an_error_naming_it_and_the_rest_is_checked(tensorconv, project):
    result = tensorconv("check", "nope.py", "bug.py", cwd=project)
    assert result.returncode == 2
    assert "nope.py: no such file or directory" in result.stderr
    assert "Traceback" not in result.stderr
    assert "bug.py:5:7: TCV101" in result.stdout


def test_unparsable_and_undecodable_files_are_tcv001_and_the_run_goes_on(tensorconv, project):
    (project / "broken.py").write_text("import torch\nx = torch.ones(3).numpy(\n")
    (project / "latin.py").write_bytes(b"# -*- coding: ascii -*-\nimport torch\nx = '\xe9'.numpy()\n")
    result = tensorconv("check", ".", cwd=project)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("broken.py:") and " TCV001 " in line for line in lines)
    assert any(line.startswith("latin.py:") and " TCV001 " in line for line in lines)
    assert any(line.startswith("bug.py:5:7: TCV101") for line in lines)
    assert "Traceback" not in result.stderr


def test_select_ignore_by_prefix(tensorconv, project):
    assert tensorconv("check", "bug.py", "--ignore", "TCV1", cwd=project).returncode == 0
    assert tensorconv("check", "bug.py", "--select", "TCV2", cwd=project).returncode == 0
    assert tensorconv("check", "bug.py", "--select", "TCV10", cwd=project).returncode == 1
    # The most specific prefix wins.
    assert tensorconv("check", "bug.py", "--ignore", "TCV1", "--extend-select", "TCV101", cwd=project).returncode == 1


def test_unknown_selector_is_a_usage_error(tensorconv, project):
    result = tensorconv("check", "bug.py", "--select", "XYZ1", cwd=project)
    assert result.returncode == 2
    assert "unknown rule selector 'XYZ1'" in result.stderr


def test_noqa(tensorconv, project):
    (project / "bug.py").write_text(GRAD_BUG.replace("out.numpy()", "out.numpy()  # noqa: TCV101"))
    assert tensorconv("check", "bug.py", cwd=project).returncode == 0
    (project / "bug.py").write_text(GRAD_BUG.replace("out.numpy()", "out.numpy()  # noqa"))
    assert tensorconv("check", "bug.py", cwd=project).returncode == 0
    (project / "bug.py").write_text(GRAD_BUG.replace("out.numpy()", "out.numpy()  # noqa: TCV201"))
    assert tensorconv("check", "bug.py", cwd=project).returncode == 1


def test_json_output_has_ruffs_fields(tensorconv, project):
    result = tensorconv("check", "bug.py", "--output-format", "json", cwd=project)
    (finding,) = json.loads(result.stdout)
    assert set(finding) == {"code", "message", "filename", "location", "end_location", "fix", "noqa_row", "url", "cell"}
    assert finding["location"] == {"row": 5, "column": 7}
    assert finding["end_location"] == {"row": 5, "column": 18}
    assert finding["fix"]["applicability"] == "safe"
    assert finding["fix"]["message"] == "Insert `.detach()`"
    assert finding["fix"]["edits"] == [
        {"content": ".detach()", "location": {"row": 5, "column": 10}, "end_location": {"row": 5, "column": 10}}
    ]
    assert finding["cell"] is None and finding["noqa_row"] == 5


def test_github_output(tensorconv, project):
    result = tensorconv("check", "bug.py", "--output-format", "github", cwd=project)
    assert result.stdout.startswith("::warning file=bug.py,line=5,col=7,endLine=5,endColumn=18,title=TCV101::TCV101 ")


def test_fix_writes_in_place_and_second_run_changes_nothing(tensorconv, project):
    path = project / "bug.py"
    os.chmod(path, 0o751)
    result = tensorconv("check", "--fix", "bug.py", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_text() == GRAD_BUG.replace("out.numpy()", "out.detach().numpy()")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o751
    again = tensorconv("check", "--fix", "bug.py", cwd=project)
    assert again.returncode == 0
    assert path.read_text() == GRAD_BUG.replace("out.numpy()", "out.detach().numpy()")
    assert not [name for name in os.listdir(project) if name.startswith(".tensorconv-")]


def test_diff_prints_and_writes_nothing(tensorconv, project):
    result = tensorconv("check", "--diff", "bug.py", cwd=project)
    assert result.returncode == 1
    assert "-arr = out.numpy()\n+arr = out.detach().numpy()\n" in result.stdout
    assert (project / "bug.py").read_text() == GRAD_BUG


def test_unsafe_fixes_need_the_flag(tensorconv, project):
    # `.data` assigned and then written in place: the fix changes behaviour on purpose.
    source = (
        "import torch\n\na = torch.ones(3, requires_grad=True)\nout = a.sigmoid()\n"
        "c = out.data\nc.zero_()\n"
    )
    (project / "data.py").write_text(source)
    assert tensorconv("check", "--fix", "data.py", cwd=project).returncode == 1
    assert (project / "data.py").read_text() == source
    assert tensorconv("check", "--fix", "--unsafe-fixes", "data.py", cwd=project).returncode == 0
    assert "c = out.detach()\n" in (project / "data.py").read_text()


def test_fix_style_force(tensorconv, project):
    result = tensorconv("check", "--diff", "--fix-style", "force", "bug.py", cwd=project)
    assert "+arr = out.numpy(force=True)\n" in result.stdout


def test_pyproject_configuration(tensorconv, project):
    (project / "pyproject.toml").write_text('[tool.tensorconv]\nignore = ["TCV101"]\n')
    assert tensorconv("check", "bug.py", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.tensorconv]\nper-file-ignores = { "bug.py" = ["TCV1"] }\n')
    assert tensorconv("check", "bug.py", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.tensorconv]\nfix-style = "force"\n')
    assert "numpy(force=True)" in tensorconv("check", "--diff", "bug.py", cwd=project).stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[tool.tensorconv]\nfix-style = "nope"\n', "fix-style must be one of"),
        ('[tool.tensorconv]\nselekt = ["TCV"]\n', "unknown option(s) in [tool.tensorconv]: selekt"),
        ("[tool.tensorconv\n", "pyproject.toml"),
        ('[tool.tensorconv]\nfix-style = "force"\ntarget-torch = "1.12"\n', "needs torch 1.13+"),
    ],
)
def test_bad_configuration_is_a_clear_error(tensorconv, project, content, message):
    (project / "pyproject.toml").write_text(content)
    result = tensorconv("check", "bug.py", cwd=project)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_rule_explanations(tensorconv):
    result = tensorconv("rule", "tcv101")
    assert result.returncode == 0
    for heading in ("# TCV101: numpy-requires-grad", "## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"):
        assert heading in result.stdout
    every = tensorconv("rule", "--all")
    assert every.stdout.count("## Fix safety") >= 8
    unknown = tensorconv("rule", "TCV999")
    assert unknown.returncode == 2 and "unknown rule" in unknown.stderr


def test_no_default_path_checks_nothing(tensorconv, project):
    result = tensorconv("check", "--no-default-path", cwd=project)
    assert result.returncode == 0
    assert result.stdout == ""


def test_usage_error_exit_code(tensorconv):
    assert tensorconv("check", "--output-format", "xml").returncode == 2
    assert tensorconv().returncode == 2
