"""Check that safe fixes keep every test outcome of real projects' own test suites.

    python bench/fix_safety.py [--project NAME ...] [--unsafe] [--root DIR]

For each project below (a public repository at an exact commit): unpack it into
``ROOT/NAME/src`` (from a local git mirror, else ``git clone``), make a virtualenv in
``ROOT/NAME/venv`` with torch pinned by this repository's ``constraints.txt``, run a
fixed selection of the project's own tests (junitxml, one outcome per test id), apply
``tensorconv check --fix`` to the project's sources (not its tests), run the same tests
again and compare test by test. With ``--unsafe`` the same follows with ``--fix
--unsafe-fixes``; when outcomes change, each fixed file is then fixed alone to name the
file whose fixes changed which tests. Every applied safe fix is also listed with the
places in the project that name its enclosing function (``ROOT/NAME/fixes.md``), so a
fix that no test reaches can be checked by reading its callers.

Prints one table row per project; exits 1 when a safe fix changed any outcome.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints.txt"
PROBES = REPO / "bench" / "fix_safety_probes"
TEST_TIMEOUT_S = 900


class Project(NamedTuple):
    name: str
    repo: str  # OWNER/REPO on GitHub
    commit: str
    sources: tuple[str, ...]  # what gets fixed, relative to the checkout
    install: tuple[str, ...]  # pip arguments, run in the checkout
    tests: tuple[str, ...]  # pytest arguments: the fixed selection, chosen to reach the fixed files
    env: tuple[tuple[str, str], ...] = ()
    probes: tuple[str, ...] = ()  # scripts in bench/fix_safety_probes/ that run fixed code no selected test reaches


# Each selection names the test modules of the files with findings (see docs/fix-safety.md).
PROJECTS = (
    Project(
        "kornia",
        "kornia/kornia",
        "b4f5a78a13891c7ac4c1cd9695941380273e981d",
        ("kornia",),
        ("-e", ".", "pillow"),
        (
            "tests/contrib/test_diamond_square.py",
            "tests/enhance/test_adjust.py",
            "tests/image",
            "tests/sensors/camera/test_projection_model.py",
            "tests/core/test_module.py",
            "tests/feature/test_lightglue.py",
        ),
    ),
    Project(
        "botorch",
        "pytorch/botorch",
        "e390e135c5327f832275d69ac485d7844e68e234",
        ("botorch",),
        ("-e", "."),
        (
            "test/models/test_pairwise_gp.py",
            "test/optim/test_parameter_constraints.py",
            "test/test_functions/test_sensitivity_analysis.py",
            "test/utils/multi_objective/test_optimize.py",
        ),
        (("SETUPTOOLS_SCM_PRETEND_VERSION", "0.0.0"),),
    ),
    Project(
        "gpytorch",
        "cornellius-gp/gpytorch",
        "7c4ec80f0f05cf530348a8a8972d67a11dd26ed2",
        ("gpytorch",),
        ("-e", "."),
        (
            "test/kernels/test_spectral_delta_kernel.py",
            "test/utils/test_nearest_neighbors.py",
            "test/variational/test_nearest_neighbor_variational_strategy.py",
        ),
        (("SETUPTOOLS_SCM_PRETEND_VERSION", "0.0.0"),),
    ),
    Project(
        "captum",
        "pytorch/captum",
        "faac08773131888714b15709b28494ebeea7f6eb",
        ("captum",),
        ("-e", ".", "flask", "flask-compress", "ipywidgets"),
        (
            "tests/influence/_core/test_similarity_influence.py",
            "tests/utils/test_linear_model.py",
            "tests/insights",
        ),
        probes=("captum_attribute_endpoint.py",),
    ),
    Project(
        "pytorch-metric-learning",
        "KevinMusgrave/pytorch-metric-learning",
        "216a792c22b0154d3d3bf008a7317edc7d677e71",
        ("src",),
        ("-e", "."),
        (
            "tests/samplers/test_fixed_set_of_triplets.py",
            "tests/samplers/test_hierarchical_sampler.py",
            "tests/samplers/test_m_per_class_sampler.py",
            "tests/utils/test_common_functions.py",
        ),
    ),
)


class Fix(NamedTuple):
    code: str
    applicability: str
    path: str  # relative to the checkout
    row: int
    message: str


class Outcome(NamedTuple):
    tests: dict[str, str]  # test id -> passed / failed / error / skipped
    log: Path


def run(cmd: Sequence[str], cwd: Path, env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), cwd=cwd, env=env, text=True, capture_output=True, **kwargs)


def git(checkout: Path, *args: str) -> str:
    done = run(["git", "-c", "user.name=fix-safety", "-c", "user.email=fix-safety@localhost", *args], checkout)
    if done.returncode:
        raise SystemExit(f"{checkout}: git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def mirror_of(mirrors: Path, repo: str) -> Path | None:
    candidate = mirrors / repo.replace("/", "+") / "repo"
    return candidate if (candidate / "HEAD").is_file() else None


def unpack(project: Project, checkout: Path, mirrors: Path) -> None:
    """Write the project's files at its commit; blobs a partial mirror lacks (large data) are left out."""
    with tempfile.TemporaryDirectory() as scratch:
        git_dir = mirror_of(mirrors, project.repo)
        if git_dir is None:
            git_dir = Path(scratch) / "clone"
            subprocess.run(["git", "clone", "-q", "--bare", f"https://github.com/{project.repo}.git", str(git_dir)], check=True)
        listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", "-z", project.commit], check=True, capture_output=True).stdout
        blobs = []
        for entry in filter(None, listing.split(b"\0")):
            meta, path = entry.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob" and mode in (b"100644", b"100755"):
                blobs.append((mode == b"100755", sha, os.fsdecode(path)))
        partial = checkout.with_name(checkout.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        with subprocess.Popen(["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat:
            assert cat.stdin and cat.stdout
            for executable, sha, path in blobs:
                cat.stdin.write(sha + b"\n")
                cat.stdin.flush()
                header = cat.stdout.readline().split()
                if header[-1] == b"missing":
                    continue
                data = cat.stdout.read(int(header[2]))
                cat.stdout.read(1)
                target = partial / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                if executable:
                    target.chmod(0o755)
            cat.stdin.close()
        partial.rename(checkout)
    git(checkout, "init", "-q")
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", f"{project.repo}@{project.commit}")


def project_env(project: Project) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(project.env)
    env["CUDA_VISIBLE_DEVICES"] = ""  # the same device (CPU) for every run
    return env


def prepare(project: Project, root: Path, mirrors: Path) -> tuple[Path, Path]:
    home = root / project.name
    checkout, venv = home / "src", home / "venv"
    if not checkout.is_dir():
        home.mkdir(parents=True, exist_ok=True)
        unpack(project, checkout, mirrors)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-c", str(CONSTRAINTS), "pytest", "coverage", *project.install]
    # what was installed: the arguments and the constraints' content (not their path: any copy of this repo reuses the venv)
    wanted = " ".join(pip[7:]) + "\n" + CONSTRAINTS.read_text()
    stamp = venv / "installed"
    if not stamp.is_file() or stamp.read_text() != wanted:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        done = run(pip, checkout, project_env(project))
        if done.returncode:
            raise SystemExit(f"{project.name}: pip install failed:\n{done.stderr[-3000:]}")
        stamp.write_text(wanted)
    return checkout, venv


def run_tests(project: Project, checkout: Path, venv: Path, label: str, measure: Sequence[str] = ()) -> Outcome:
    """Run the selection; with `measure`, also record which lines of those files ran (coverage-LABEL.json)."""
    report = checkout.parent / f"junit-{label}.xml"
    log = checkout.parent / f"pytest-{label}.log"
    report.unlink(missing_ok=True)
    python = [str(venv / "bin" / "python"), "-m"]
    if measure:
        data = checkout.parent / f"coverage-{label}"
        python += ["coverage", "run", f"--data-file={data}", f"--include={','.join(measure)}", "-m"]
    cmd = [*python, "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q", f"--junitxml={report}", *project.tests]
    try:
        done = run(cmd, checkout, project_env(project), timeout=TEST_TIMEOUT_S)
        log.write_text(" ".join(cmd) + "\n" + done.stdout + done.stderr)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{project.name}: the tests ran past {TEST_TIMEOUT_S} s ({label}); see {log}") from None
    if not report.is_file():
        raise SystemExit(f"{project.name}: pytest wrote no report ({label}); see {log}")
    if measure:
        run([str(venv / "bin" / "python"), "-m", "coverage", "json", f"--data-file={data}", "-o", f"{data}.json"], checkout)
    outcomes = read_junit(report)
    for probe in project.probes:
        done = run([str(venv / "bin" / "python"), str(PROBES / probe)], checkout, project_env(project), timeout=TEST_TIMEOUT_S)
        last = (done.stdout if done.returncode == 0 else done.stderr).strip().splitlines()[-1:] or [""]
        # a probe's printed values are part of its outcome: a fix that changes them changes the outcome
        outcomes[f"probe::{probe}"] = f"{'passed' if done.returncode == 0 else 'failed'}: {last[0]}"
    return Outcome(outcomes, log)


SEVERITY = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def read_junit(report: Path) -> dict[str, str]:
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).iter("testcase"):
        test_id = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
        # a test that fails in its call and errors in teardown appears twice: keep the worse
        if SEVERITY[outcome] >= SEVERITY[outcomes.get(test_id, "passed")]:
            outcomes[test_id] = outcome
    return outcomes


def changed(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {t: (before.get(t, "absent"), after.get(t, "absent")) for t in sorted(before.keys() | after.keys()) if before.get(t) != after.get(t)}


def tensorconv(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    done = run([sys.executable, "-m", "flake8_tensorconv", "check", *args], checkout)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{checkout}: tensorconv check {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr}")
    return done


def fixable(project: Project, checkout: Path, applicabilities: set[str]) -> list[Fix]:
    findings = json.loads(tensorconv(checkout, "--output-format", "json", *project.sources).stdout)
    fixes = []
    for finding in findings:
        fix = finding.get("fix")
        if fix and fix["applicability"] in applicabilities:
            path = os.path.relpath(os.path.join(checkout, finding["filename"]), checkout)
            fixes.append(Fix(finding["code"], fix["applicability"], path, finding["location"]["row"], finding["message"]))
    return fixes


def apply_fixes(project: Project, checkout: Path, unsafe: bool, paths: Sequence[str] | None = None) -> list[str]:
    """Fix in place; returns the files that changed."""
    git(checkout, "checkout", "-q", "--", ".")
    tensorconv(checkout, "--fix", *(["--unsafe-fixes"] if unsafe else []), *(paths or project.sources))
    return git(checkout, "diff", "--name-only").split()


def lines_run(checkout: Path, label: str) -> dict[str, set[int]]:
    """The lines the tests ran, by path relative to the checkout (empty when coverage wrote nothing)."""
    report = checkout.parent / f"coverage-{label}.json"
    if not report.is_file():
        return {}
    files = json.loads(report.read_text())["files"]
    return {os.path.relpath(os.path.join(checkout, path), checkout): set(data["executed_lines"]) for path, data in files.items()}


def enclosing_function(source: str, row: int) -> str | None:
    """The innermost function around `row`; for a dunder method (called implicitly), its class."""
    chain = [
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.lineno <= row <= (node.end_lineno or node.lineno)
    ]
    chain.sort(key=lambda node: node.lineno)
    for node in reversed(chain):
        if isinstance(node, ast.ClassDef) or not node.name.startswith("__"):
            return node.name
    return None


def callers(checkout: Path, name: str) -> list[str]:
    """Lines of the project's Python files that name `name` other than its definition."""
    done = run(["git", "grep", "-n", "-w", "-e", name, "--", "*.py"], checkout)
    lines = []
    for line in done.stdout.splitlines():
        path, row, text = line.split(":", 2)
        if re.search(rf"\bdef\s+{re.escape(name)}\b", text):
            continue
        lines.append(f"{path}:{row}: {text.strip()}")
    return lines


def fix_listing(project: Project, checkout: Path, fixes: Sequence[Fix], diff: str, ran: dict[str, set[int]]) -> str:
    out = [f"# {project.name} {project.repo}@{project.commit}", "", "## Applied safe fixes and who reaches them", ""]
    for fix in fixes:
        reached = "run by the selected tests" if fix.row in ran.get(fix.path, ()) else "NOT run by the selected tests"
        source = (checkout / fix.path).read_text(encoding="utf-8", errors="replace")
        original = source.splitlines()[fix.row - 1].strip()
        function = enclosing_function(source, fix.row)
        out.append(f"### {fix.path}:{fix.row} {fix.code} in `{function or '<module>'}`: {reached}")
        out.append(f"    {original}")
        if function:
            found = callers(checkout, function)
            out.append(f"{len(found)} line(s) name `{function}`:")
            out.extend(f"- {line}" for line in found[:40])
            if len(found) > 40:
                out.append(f"- ... {len(found) - 40} more")
        out.append("")
    out += ["## The diff", "", "```diff", diff.rstrip(), "```", ""]
    return "\n".join(out)


class Row(NamedTuple):
    project: str
    commit: str
    tests: int
    safe_fixes: Counter
    safe_fixes_run: int  # how many of them the selected tests execute
    safe_changed: dict[str, tuple[str, str]]
    unsafe_fixes: Counter | None
    unsafe_changed: dict[str, tuple[str, str]] | None
    unsafe_blame: dict[str, list[str]]  # fixed file -> tests its fixes alone change


def check_project(project: Project, root: Path, mirrors: Path, unsafe: bool) -> Row:
    checkout, venv = prepare(project, root, mirrors)
    git(checkout, "checkout", "-q", "--", ".")
    all_fixes = fixable(project, checkout, {"safe", "unsafe"})
    print(f"[{project.name}] baseline tests", file=sys.stderr, flush=True)
    baseline = run_tests(project, checkout, venv, "baseline", measure=sorted({f.path for f in all_fixes}))
    ran = lines_run(checkout, "baseline")

    touched = apply_fixes(project, checkout, unsafe=False)
    safe = [f for f in all_fixes if f.applicability == "safe" and f.path in touched]
    diff = git(checkout, "diff")
    git(checkout, "checkout", "-q", "--", ".")
    (checkout.parent / "fixes.md").write_text(fix_listing(project, checkout, safe, diff, ran), encoding="utf-8")
    apply_fixes(project, checkout, unsafe=False)
    print(f"[{project.name}] tests after {len(safe)} safe fixes", file=sys.stderr, flush=True)
    safe_changed = changed(baseline.tests, run_tests(project, checkout, venv, "safe").tests)

    unsafe_fixes = unsafe_changed = None
    blame: dict[str, list[str]] = {}
    if unsafe:
        touched = apply_fixes(project, checkout, unsafe=True)
        (checkout.parent / "unsafe.diff").write_text(git(checkout, "diff"), encoding="utf-8")
        unsafe_list = [f for f in all_fixes if f.applicability == "unsafe" and f.path in touched]
        unsafe_fixes = Counter(f.code for f in unsafe_list)
        print(f"[{project.name}] tests after safe + {len(unsafe_list)} unsafe fixes", file=sys.stderr, flush=True)
        unsafe_changed = changed(baseline.tests, run_tests(project, checkout, venv, "unsafe").tests)
        if unsafe_changed:
            for path in sorted({f.path for f in unsafe_list}):
                apply_fixes(project, checkout, unsafe=True, paths=[path])
                alone = run_tests(project, checkout, venv, "unsafe-" + path.replace("/", "_"))
                blame[path] = sorted(changed(baseline.tests, alone.tests))
    git(checkout, "checkout", "-q", "--", ".")
    safe_run = sum(fix.row in ran.get(fix.path, ()) for fix in safe)
    safe_codes = Counter(f.code for f in safe)
    return Row(project.name, project.commit[:12], len(baseline.tests), safe_codes, safe_run, safe_changed, unsafe_fixes, unsafe_changed, blame)


def by_code(counts: Counter | None) -> str:
    if counts is None:
        return "-"
    return ", ".join(f"{code} {n}" for code, n in sorted(counts.items())) or "0"


def table(rows: Sequence[Row]) -> str:
    lines = [
        "| project | commit | tests run | safe fixes applied | safe fixes the tests run | outcomes changed by safe fixes"
        " | unsafe fixes applied | outcomes changed by unsafe fixes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        unsafe_changed = "-" if row.unsafe_changed is None else str(len(row.unsafe_changed))
        lines.append(
            f"| {row.project} | {row.commit} | {row.tests} | {by_code(row.safe_fixes)} | {row.safe_fixes_run} of {sum(row.safe_fixes.values())}"
            f" | {len(row.safe_changed)} | {by_code(row.unsafe_fixes)} | {unsafe_changed} |"
        )
    for row in rows:
        for label, found in (("safe", row.safe_changed), ("unsafe", row.unsafe_changed or {})):
            for test, (before, after) in found.items():
                lines.append(f"{row.project}: {label} fixes changed {test}: {before} -> {after}")
        for path, tests in row.unsafe_blame.items():
            named = ", ".join(tests[:10]) + (" ..." if len(tests) > 10 else "")
            lines.append(f"{row.project}: the unsafe fixes in {path} alone change {len(tests)} test(s): {named}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = [p.name for p in PROJECTS]
    parser.add_argument("--project", action="append", choices=names, help="only this project (repeatable); default: all")
    parser.add_argument("--unsafe", action="store_true", help="also apply --unsafe-fixes and compare")
    parser.add_argument("--root", type=Path, default=Path("/work/fixsafety"), help="checkouts, virtualenvs and reports (default: %(default)s)")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="local git mirrors, OWNER+REPO/repo (else git clone)")
    args = parser.parse_args(argv)
    selected = [p for p in PROJECTS if not args.project or p.name in args.project]
    rows = [check_project(p, args.root, args.mirrors, args.unsafe) for p in selected]
    print(table(rows))
    return 1 if any(row.safe_changed for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
