"""The flake8 face, tested through a real flake8 process (flake8 wants 0-based columns)."""

from __future__ import annotations

import argparse
import ast
import re

from flake8_tensorconv import plugin
from flake8_tensorconv.examples import all_fixtures, fixtures_root
from flake8_tensorconv.rules import ALL_RULES

_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")


def _parse(output: str) -> set[tuple[str, int, int, str]]:
    found = set()
    for line in output.splitlines():
        match = _LINE.match(line)
        if match and match["code"].startswith("TCV"):
            # flake8 keeps the "./" of the argument, the CLI prints the plain relative path.
            path = match["path"].replace("\\", "/").removeprefix("./")
            found.add((path, int(match["line"]), int(match["col"]), match["code"]))
    return found


def test_flake8_and_the_cli_agree_on_every_fixture(flake8, tensorconv):
    root = fixtures_root()
    opt_in = ",".join(rule.code for rule in ALL_RULES if not rule.default_enabled) or "TCV"
    from_flake8 = flake8("--select=TCV", f"--extend-select={opt_in}", "--no-show-source", ".", cwd=root)
    from_cli = tensorconv("check", "--select=ALL", "--output-format=text", "-j1", ".", cwd=root)
    assert from_flake8.returncode == from_cli.returncode == 1, from_flake8.stderr + from_cli.stderr
    flake8_findings = _parse(from_flake8.stdout)
    cli_findings = _parse(from_cli.stdout)
    assert flake8_findings == cli_findings
    expected = {
        (f"{fixture.code}/{fixture.path.name}", line, code)
        for fixture in all_fixtures()
        for line, code in fixture.expected_findings
    }
    # A fixture's markers are what the default rules and its own rule report (as test_fixtures_lint reads
    # it): the strict opt-in twins (TCV111/TCV112) also fire on other rules' examples of unknown provenance.
    default_on = {rule.code for rule in ALL_RULES if rule.default_enabled}
    shown = {
        (path.lstrip("./"), line, code)
        for path, line, _, code in flake8_findings
        if code in default_on or path.lstrip("./").startswith(f"{code}/")
    }
    assert shown == expected


def test_opt_in_rules_are_off_by_default_in_flake8_and_on_when_named(flake8):
    """Every opt-in rule, on its own positive fixtures: silent under `--select=TCV`, reported when named."""
    opt_in = [rule.code for rule in ALL_RULES if not rule.default_enabled]
    assert opt_in, "the catalogue has opt-in rules (the strict twins at least)"
    root = fixtures_root()
    for code in opt_in:
        positives = [f"{code}/{f.path.name}" for f in all_fixtures() if f.code == code and not f.is_negative]
        assert positives, f"{code}: no positive fixture"
        default = flake8("--select=TCV", "--no-show-source", *positives, cwd=root)
        assert f": {code}" not in default.stdout, default.stdout
        named = flake8("--select=TCV", f"--extend-select={code}", "--no-show-source", *positives, cwd=root)
        assert f": {code}" in named.stdout, (code, named.stdout, named.stderr)


def test_flake8_noqa_and_ignore(flake8, tmp_path):
    source = "import torch\n\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\narr = out.numpy()\n"
    (tmp_path / "f.py").write_text(source)
    assert "f.py:4:7: TCV101" in flake8("--select=TCV", "f.py", cwd=tmp_path).stdout
    assert flake8("--select=TCV", "--ignore=TCV101", "f.py", cwd=tmp_path).returncode == 0
    (tmp_path / "f.py").write_text(source.replace("out.numpy()", "out.numpy()  # noqa: TCV101"))
    assert flake8("--select=TCV", "f.py", cwd=tmp_path).returncode == 0


def test_flake8_setup_cfg_fix_style_option(flake8, tmp_path):
    (tmp_path / "f.py").write_text("import torch\n\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\narr = out.numpy()\n")
    default = flake8("--select=TCV", "f.py", cwd=tmp_path)
    assert "f.py:4:7: TCV101 [*]" in default.stdout and "(fix: " in default.stdout
    assert "force=True" not in default.stdout
    (tmp_path / "setup.cfg").write_text("[flake8]\ntensorconv-fix-style = force\n")
    forced = flake8("--select=TCV", "f.py", cwd=tmp_path)
    assert "f.py:4:7: TCV101 [*]" in forced.stdout and "force=True" in forced.stdout, forced.stdout
    (tmp_path / "setup.cfg").write_text("[flake8]\ntensorconv-fix-style = bogus\n")
    bogus = flake8("--select=TCV", "f.py", cwd=tmp_path)
    assert bogus.returncode != 0 and "bogus" in bogus.stderr


def _options(**values: object) -> argparse.Namespace:
    defaults = dict(
        select=None, extend_select=None, ignore=None, extend_ignore=None, extended_default_ignore=[],
        extended_default_select=["TCV", "E", "F", "W", "C90"], tensorconv_fix_style="detach-cpu", disable_noqa=False,
    )
    defaults.update(values)
    return argparse.Namespace(**defaults)


def _checker(source: str) -> plugin.TensorConvChecker:
    return plugin.TensorConvChecker(ast.parse(source), source.splitlines(keepends=True), "f.py")


def test_nothing_runs_when_no_tcv_code_is_selected(monkeypatch):
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the engine ran although no TCV code can be reported")

    monkeypatch.setattr("flake8_tensorconv.engine.lint_source", fail)
    monkeypatch.setattr(plugin.TensorConvChecker, "enabled", None)
    plugin.TensorConvChecker.parse_options(_options(select=["E", "W"]))
    try:
        assert list(_checker("import torch\nx = torch.ones(3, requires_grad=True).numpy()\n").run()) == []
    finally:
        plugin.TensorConvChecker.parse_options(_options())


def test_internal_error_is_reported_on_the_file_not_raised(monkeypatch):
    def boom(*args: object, **kwargs: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr("flake8_tensorconv.engine.run_rules", boom)
    plugin.TensorConvChecker.parse_options(_options())
    results = list(_checker("import torch\nx = torch.ones(3, requires_grad=True).numpy()\n").run())
    assert len(results) == 1
    line, column, message, _ = results[0]
    assert (line, column) == (1, 0) and message.startswith("TCV002 internal error")


def test_the_garbage_collector_is_paused_during_an_analysis_and_left_as_it_was(monkeypatch):
    import gc

    from flake8_tensorconv import engine

    seen: list[bool] = []
    walk_deeply = engine.walk_deeply

    def watching(*args: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())
        walk_deeply(*args, **kwargs)

    monkeypatch.setattr("flake8_tensorconv.engine.walk_deeply", watching)
    plugin.TensorConvChecker.parse_options(_options())
    source = "import torch\nx = torch.ones(3, requires_grad=True).numpy()\n"
    assert gc.isenabled()
    results = list(_checker(source).run())
    assert seen == [False] and gc.isenabled()
    assert [message.split()[0] for _, _, message, _ in results] == ["TCV101"]
    gc.disable()
    try:
        assert len(list(_checker(source).run())) == 1
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nothing_of_a_file_outlives_its_analysis():
    # flake8 lints every file in one process: whatever the plugin kept of a file (its tree, the legacy constructors'
    # parent maps) would be traversed by each of flake8's garbage collections until the next file replaced it.
    import gc
    import weakref

    plugin.TensorConvChecker.parse_options(_options())
    source = (fixtures_root() / "TCV202" / "float_literal.py").read_text(encoding="utf-8")
    checker = _checker(source)
    tree = weakref.ref(checker.tree)
    assert [message.split()[0] for _, _, message, _ in checker.run()] == ["TCV202"]
    del checker
    gc.collect()
    assert tree() is None
