"""docs/ci.md: its YAML parses, names only options that exist, and its commands write valid reports."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from flake8_tensorconv.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
SARIF_SCHEMA = ROOT.parent / "shared" / "schemas" / "sarif-schema-2.1.0.json"
SOURCE = (
    "import numpy as np\nimport torch\n\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\narr = out.numpy()\n"
    "t = torch.Tensor(np.arange(1, 3))\nagain = out.numpy()\n"
)


def _yaml_blocks() -> list[dict]:
    yaml = pytest.importorskip("yaml")
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)]


def _github_workflow() -> dict:
    return next(block for block in _yaml_blocks() if "jobs" in block)


def _gitlab_job() -> dict:
    return next(block for block in _yaml_blocks() if "tensorconv" in block and "script" in block["tensorconv"])


def _commands() -> list[list[str]]:
    lines = [step["run"] for step in _github_workflow()["jobs"]["tensorconv"]["steps"] if "run" in step]
    lines += _gitlab_job()["tensorconv"]["script"]
    return [shlex.split(line) for line in lines if line.startswith("tensorconv ")]


def test_the_recipes_use_only_options_that_exist():
    commands = _commands()
    assert len(commands) == 3
    parser = build_parser()
    for command in commands:
        try:
            parser.parse_args(command[1:])
        except SystemExit:
            pytest.fail(f"docs/ci.md runs `{shlex.join(command)}`, which tensorconv does not accept")


def test_the_uploaded_files_are_the_ones_written():
    steps = _github_workflow()["jobs"]["tensorconv"]["steps"]
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    written = [command[command.index("--output-file") + 1] for command in _commands() if "--output-file" in command]
    assert upload["with"]["sarif_file"] in written
    assert _gitlab_job()["tensorconv"]["artifacts"]["reports"]["codequality"] in written
    assert _github_workflow()["jobs"]["tensorconv"]["permissions"]["security-events"] == "write"


def test_the_recipes_commands_write_valid_reports(tensorconv, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "model.py").write_text(SOURCE)
    outputs = {}
    for command in _commands():
        result = tensorconv(*command[1:], cwd=tmp_path)
        assert result.returncode in (0, 1), result.stderr
        assert "Traceback" not in result.stderr
        outputs[command[command.index("--output-format") + 1]] = result
    assert outputs["github"].stdout.startswith("::warning file=src/model.py,line=5,col=7,")
    if SARIF_SCHEMA.is_file():
        log = json.loads((tmp_path / "tensorconv.sarif").read_text())
        jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text()))
        assert [result["ruleId"] for result in log["runs"][0]["results"]] == ["TCV101", "TCV201", "TCV101"]
    issues = json.loads((tmp_path / "gl-code-quality-report.json").read_text())
    _check_code_quality(issues)
    assert [(issue["check_name"], issue["location"]["lines"]["begin"]) for issue in issues] == [("TCV101", 5), ("TCV201", 6), ("TCV101", 7)]
    assert {issue["location"]["path"] for issue in issues} == {"src/model.py"}


def _check_code_quality(issues: list) -> None:
    """The fields GitLab reads from a Code Quality report, with their types."""
    assert isinstance(issues, list) and issues
    for issue in issues:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert isinstance(issue["description"], str) and issue["description"].startswith(issue["check_name"] + " ")
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert re.fullmatch(r"[0-9a-f]{32}", issue["fingerprint"])
        location = issue["location"]
        assert set(location) == {"path", "lines"} and not location["path"].startswith("/")
        assert isinstance(location["lines"]["begin"], int) and location["lines"]["begin"] >= 1
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)


def test_gitlab_fingerprints_survive_moved_lines_and_paths_follow_ci_project_dir(tmp_path, monkeypatch):
    from flake8_tensorconv.findings import Finding, Position
    from flake8_tensorconv.output import gitlab
    from flake8_tensorconv.output.report import Report

    def issues(line: int) -> list:
        finding = Finding("TCV101", "message", Position(line, 0), Position(line, 3))
        return json.loads(gitlab.render([Report(str(tmp_path / "pkg" / "a.py"), finding)] * 2, False))

    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path))
    first, moved = issues(5), issues(9)
    assert [issue["fingerprint"] for issue in first] == [issue["fingerprint"] for issue in moved]
    assert first[0]["fingerprint"] != first[1]["fingerprint"]
    assert first[0]["location"]["path"] == "pkg/a.py"
    _check_code_quality(first)


def test_pre_commit_hooks_force_the_excludes():
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    for hook in hooks:
        arguments = shlex.split(hook["entry"])
        assert arguments[:2] == ["tensorconv", "check"] and "--force-exclude" in arguments
        build_parser().parse_args(arguments[1:])
