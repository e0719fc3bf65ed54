"""The rules as Fixit rules: generated from the registry, tested by Fixit's own harness, run by the real `fixit`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("fixit")

from fixit.engine import LintRunner  # noqa: E402
from fixit.ftypes import Config  # noqa: E402

from flake8_tensorconv import fixit as default_rules  # noqa: E402
from flake8_tensorconv.config import Settings  # noqa: E402
from flake8_tensorconv.engine import fix_source  # noqa: E402
from flake8_tensorconv.examples import fixtures_for  # noqa: E402
from flake8_tensorconv.fixit import opt_in  # noqa: E402
from flake8_tensorconv.fixit._engine import class_name  # noqa: E402
from flake8_tensorconv.rules import ALL_RULES  # noqa: E402
from flake8_tensorconv.source import Source  # noqa: E402

FIXIT = Path(sys.executable).with_name("fixit")
GRAD = """\
import torch

model = torch.nn.Linear(3, 2)
scores = model(torch.ones(1, 3))
values = scores.numpy()
"""


@pytest.fixture
def fixit_command() -> str:
    if not FIXIT.exists():
        pytest.skip(f"the fixit command is not installed beside {sys.executable}")
    return str(FIXIT)


def fixit_rule(code: str) -> type:
    rule = next(rule for rule in ALL_RULES if rule.code == code)
    return getattr(default_rules if rule.default_enabled else opt_in, class_name(rule))


def run_fixit_rule(code: str, text: str) -> tuple[list, str]:
    """Fixit's reports of one rule on ``text``, and the text with all their replacements applied."""
    runner = LintRunner(Path("t.py"), text.encode("utf-8"))
    reports = list(runner.collect_violations([fixit_rule(code)()], Config(path=Path.cwd() / "t.py")))
    return reports, runner.apply_replacements(reports).code


def test_every_rule_with_triggers_is_a_fixit_rule_in_the_package_fixit_enables_for_its_default():
    for rule in ALL_RULES:
        if not rule.triggers:
            continue
        generated = fixit_rule(rule.code)
        assert generated.CODE == rule.code
        assert generated.__module__ == ("flake8_tensorconv.fixit" if rule.default_enabled else "flake8_tensorconv.fixit.opt_in")


def test_importing_the_rules_as_fixit_lint_does_loads_no_fixture():
    # Fixit imports the package on every run; the cases are for `fixit test` only.
    code = (
        "import sys\nimport flake8_tensorconv.fixit as rules\n"
        "print(sum('cases' in vars(rule.INVALID) or 'cases' in vars(rule.VALID) for rule in vars(rules).values() if hasattr(rule, 'CODE')),"
        " 'flake8_tensorconv.examples' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["0", "False"], result.stdout + result.stderr


def test_positives_of_safe_rules_carry_their_fixed_file_as_expected_replacement():
    # The harness checks Fixit's result against these; a rule whose fixes are all safe has one for every fixed file.
    for rule in ALL_RULES:
        if rule.fix_safety != "safe" or not rule.triggers:
            continue
        generated = fixit_rule(rule.code)
        positives = [fixture for fixture in fixtures_for(rule.code) if not fixture.is_negative]
        cases = list(generated.INVALID)
        assert [case.code for case in cases] == [fixture.source for fixture in positives]
        for fixture, case in zip(positives, cases):
            assert case.expected_replacement == fixture.fixed_source, fixture.id
        assert [case.code for case in generated.VALID] == [f.source for f in fixtures_for(rule.code) if f.is_negative]


def test_fixit_test_passes_on_every_generated_case(fixit_command: str, tmp_path: Path):
    result = subprocess.run(
        [fixit_command, "test", "flake8_tensorconv.fixit", "flake8_tensorconv.fixit.opt_in"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    ran = int(result.stderr.split("Ran ")[1].split()[0])
    cases = sum(len(rule.VALID) + len(rule.INVALID) for rule in map(fixit_rule, (r.code for r in ALL_RULES if r.triggers)))
    assert ran == cases > 150


@pytest.mark.parametrize(
    "text",
    [
        GRAD,
        GRAD.replace("values = scores.numpy()", "values = (scores\n          .numpy())"),  # the node's range leaves out its parentheses
        GRAD.replace("values = scores.numpy()", 'label, values = "é😀", scores.numpy()  # a comment stays'),
        GRAD.replace("values = scores.numpy()", "if True:\n    # above\n    values = [scores.numpy(), scores.numpy()]"),
    ],
    ids=["plain", "parenthesized", "non-ascii", "nested"],
)
def test_the_replacement_makes_what_the_engine_makes(text: str):
    reports, fixed = run_fixit_rule("TCV101", text)
    assert reports and all(report.replacement is not None for report in reports)
    assert fixed == fix_source(Source(text=text), Settings(select=("TCV101",))).text


def test_a_finding_is_reported_at_its_own_range_even_where_the_replacement_node_is_larger():
    (report,) = run_fixit_rule("TCV101", GRAD)[0]
    assert (report.range.start.line, report.range.start.column, report.range.end.column) == (5, 9, 23)
    assert report.message.startswith("TCV101 `.numpy()` on a tensor that may require grad")


def test_an_unsafe_fix_is_reported_without_a_replacement():
    text = "import numpy as np\nimport torch\n\nweights = torch.ones(3)\nsnapshot = np.asarray(weights)\nnp.copyto(snapshot, 0)\nnorm = weights.norm()\n"
    (report,) = run_fixit_rule("TCV106", text)[0]
    assert report.replacement is None


def test_fixit_lint_and_fix_report_and_fix_a_tcv101_file_in_a_project(fixit_command: str, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.fixit]\nroot = true\nenable = ["flake8_tensorconv.fixit"]\n')
    path = tmp_path / "train.py"
    path.write_text(GRAD)

    lint = subprocess.run([fixit_command, "lint", "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert lint.returncode == 1, lint.stdout + lint.stderr
    assert "train.py@5:9 NumpyRequiresGrad: TCV101 `.numpy()` on a tensor that may require grad" in lint.stdout

    fix = subprocess.run([fixit_command, "fix", "--automatic", "train.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert fix.returncode == 0, fix.stdout + fix.stderr
    assert path.read_text() == GRAD.replace("scores.numpy()", "scores.detach().numpy()")
