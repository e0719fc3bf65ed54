"""SARIF is valid against the 2.1.0 schema; every format reads the same findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "sarif-schema-2.1.0.json"
SOURCE = (
    "import numpy as np\nimport torch\n\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\narr = out.numpy()\n"
    "t = torch.Tensor(np.arange(1, 3))\nz = out.cuda().detach()\n"
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "f.py").write_text(SOURCE)
    (tmp_path / "broken.py").write_text("import torch\nx.numpy(\n")
    return tmp_path


def test_sarif_is_valid(tensorconv, project):
    jsonschema = pytest.importorskip("jsonschema")
    if not SCHEMA.is_file():
        pytest.skip(f"the SARIF schema is not at {SCHEMA} (shared/ beside the checkout)")
    result = tensorconv("check", "--output-format", "sarif", ".", cwd=project)
    assert result.returncode == 1
    log = json.loads(result.stdout)
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    run = log["runs"][0]
    codes = sorted(r["ruleId"] for r in run["results"])
    assert codes == ["TCV001", "TCV101", "TCV103", "TCV201"]
    rules = run["tool"]["driver"]["rules"]
    for result_entry in run["results"]:
        assert rules[result_entry["ruleIndex"]]["id"] == result_entry["ruleId"]
    fixed = [r for r in run["results"] if r["ruleId"] == "TCV101"][0]
    assert fixed["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"]["text"] == ".detach()"
    assert fixed["locations"][0]["physicalLocation"]["region"] == {"startLine": 5, "startColumn": 7, "endLine": 5, "endColumn": 18}


def test_formats_agree(tensorconv, project):
    text = tensorconv("check", "--output-format", "text", "f.py", cwd=project).stdout.splitlines()
    findings = json.loads(tensorconv("check", "--output-format", "json", "f.py", cwd=project).stdout)
    github = tensorconv("check", "--output-format", "github", "f.py", cwd=project).stdout.splitlines()
    assert len(text) == len(findings) == len(github) == 3
    for line, finding, annotation in zip(text, findings, github):
        row, column = finding["location"]["row"], finding["location"]["column"]
        assert line.startswith(f"f.py:{row}:{column}: {finding['code']}")
        assert annotation.startswith(f"::warning file=f.py,line={row},col={column},")


def test_github_escapes_properties_and_data():
    from flake8_tensorconv.findings import Finding, Position
    from flake8_tensorconv.output import github
    from flake8_tensorconv.output.report import Report

    finding = Finding("TCV101", "a 100% bad\nline", Position(1, 0), Position(1, 3))
    (line,) = github.render([Report("dir,with:odd.py", finding)], False).splitlines()
    assert line.startswith("::warning file=dir%2Cwith%3Aodd.py,")
    assert line.endswith("::TCV101 a 100%25 bad%0Aline")
