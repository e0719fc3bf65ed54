"""`tensorconv verify`, the cross-device comparison of fixed code and the fork server for `warns` claims.

Nothing here needs a GPU: the comparison is tested on hand-made namespaces and on
`meta`; the cases that need CUDA are skipped with the reason when it is absent.
"""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from flake8_tensorconv.examples import Requirement, all_fixtures, load_fixture
from flake8_tensorconv.verify import command
from flake8_tensorconv.verify.compare import compare_across_devices
from flake8_tensorconv.verify.harness import Environment, Outcome, Result, Status, verify_fixture
from flake8_tensorconv.verify.running import _full_float32_precision, execute, fresh_run, start_method
from flake8_tensorconv.verify.table import NO_FIXTURE, build_rows, format_report, summarize

HERE = Environment(versions={"torch": "2.13.0+cpu", "numpy": "2.4.6"}, cuda_available=False)
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")


def make_fixture(tmp_path: Path, original: str, fixed: str | None = None, name: str = "case", code: str = "TCV999"):
    folder = tmp_path / code
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(original), encoding="utf-8")
    fixed_path = None
    if fixed is not None:
        fixed_path = folder / f"{name}.fixed.py"
        fixed_path.write_text(textwrap.dedent(fixed), encoding="utf-8")
    return load_fixture(path, code, fixed_path)


# ----------------------------------------------------------------------------- comparing across devices
def test_equal_results_across_devices():
    def run(device):
        weights = torch.tensor([1.0, 2.0, float("nan")], device=device, requires_grad=True)
        (weights[:2] * 3).sum().backward()
        host = weights.detach().cpu().numpy() if device == "cpu" else np.array([1.0, 2.0, np.nan], dtype=np.float32)
        return {"weights": weights, "host": host, "count": 3, "mean": 1.5, "where": torch.device(device)}

    assert compare_across_devices(run("cpu"), run("meta"), "meta") == []
    assert compare_across_devices(run("cpu"), run("cpu"), "cuda") == []


@pytest.mark.parametrize(
    ("reference", "other", "expected"),
    [
        (torch.ones(2), torch.ones(2, dtype=torch.float64, device="meta"), "dtype torch.float32 on cpu is torch.float64 on meta"),
        (torch.ones(2), torch.ones(3, device="meta"), "shape"),
        (torch.ones(2), torch.ones(2, device="meta", requires_grad=True), "requires_grad"),
        (np.ones(2), np.ones(2, dtype=np.float32), "dtype"),
        (np.ones(2), np.ones(3), "shape"),
        ([1, 2], (1, 2), "a list of 2 on cpu is a tuple of 2 on meta"),
        ("done", "failed", "'done' on cpu is 'failed' on meta"),
    ],
)
def test_metadata_differences_are_named(reference, other, expected):
    differences = compare_across_devices({"x": reference}, {"x": other}, "meta")
    assert any(expected in difference for difference in differences), differences


def test_values_must_agree_within_the_dtype_tolerance():
    # "cuda" here only names the device; both namespaces are on the CPU, as after moving them.
    nearly = torch.tensor([1.0, 2.0]) * (1 + 1e-7)
    assert compare_across_devices({"x": torch.tensor([1.0, 2.0])}, {"x": nearly}, "cuda") == []
    assert compare_across_devices({"x": 1.0}, {"x": 1.0 + 1e-9}, "cuda") == []
    differences = compare_across_devices({"x": torch.tensor([1.0, 2.0])}, {"x": torch.tensor([1.0, 2.1])}, "cuda")
    assert differences and differences[0].startswith("x: values differ"), differences
    assert compare_across_devices({"n": torch.tensor([3])}, {"n": torch.tensor([4])}, "cuda")
    assert compare_across_devices({"a": np.arange(3)}, {"a": np.arange(3) + 1}, "cuda")
    assert compare_across_devices({"k": 2}, {"k": 3}, "cuda") == ["k: 2 on cpu is 3 on cuda"]


def test_gradients_are_compared_across_devices():
    left, right = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    (left * 2).sum().backward()
    (right * 3).sum().backward()
    assert "grad: values differ" in compare_across_devices({"w": left}, {"w": right}, "cuda")[0]


def test_sharing_strides_and_devices_may_differ_by_design():
    tensor = torch.arange(6.0).reshape(2, 3)
    on_cpu = {"tensor": tensor, "array": tensor.numpy(), "view": tensor.t(), "device": torch.device("cpu")}
    elsewhere = {"tensor": tensor.clone(), "array": tensor.numpy().copy(), "view": tensor.t().contiguous(), "device": torch.device("meta")}
    assert compare_across_devices(on_cpu, elsewhere, "cuda") == []


def test_a_tensor_on_a_third_device_is_a_difference():
    differences = compare_across_devices({"x": torch.ones(2)}, {"x": torch.ones(2, device="meta")}, "cuda")
    assert differences == ["x: device cpu on cpu is meta on cuda"]


def test_device_spellings_in_messages_read_as_the_cpus():
    cpu = {"outcome": "modified by an inplace operation: [torch.FloatTensor [3]]"}
    cuda = {"outcome": "modified by an inplace operation: [torch.cuda.FloatTensor [3]]"}
    assert compare_across_devices(cpu, cuda, "cuda") == []


def test_without_values_only_metadata_is_compared():
    reference = {"x": torch.tensor([1.0]), "n": 1}
    assert compare_across_devices(reference, {"x": torch.tensor([9.0]), "n": 2}, "cuda", values=False) == []
    assert compare_across_devices(reference, {"x": torch.tensor([9], dtype=torch.int64), "n": 2}, "cuda", values=False)


def test_names_missing_on_one_device():
    assert compare_across_devices({"a": 1}, {"b": 1}, "meta") == ["a: only the cpu run has it", "b: only the meta run has it"]


META_ORIGINAL = """\
    # claim: holds: grid.dtype == torch.float32
    # devices: cpu, meta
    import torch

    grid = torch.ones(2, 3, device=DEVICE)
    total = grid.sum()  # expect: TCV999
"""


def test_the_fix_on_meta_is_compared_with_its_cpu_run(tmp_path):
    fixture = make_fixture(tmp_path, META_ORIGINAL, META_ORIGINAL)
    outcome = verify_fixture(fixture, "meta", HERE)
    assert outcome.fix.status is Status.CONFIRMED, outcome.describe()
    assert "same dtypes and shapes as its cpu run (meta tensors have no values)" in outcome.fix.detail
    assert "cpu run" not in verify_fixture(fixture, "cpu", HERE).fix.detail


def test_a_fix_that_computes_another_dtype_off_the_cpu_fails(tmp_path):
    drifting = META_ORIGINAL.replace("total = grid.sum()", 'total = grid.sum(dtype=torch.float64 if DEVICE == "meta" else None)')
    outcome = verify_fixture(make_fixture(tmp_path, drifting, drifting), "meta", HERE)
    assert outcome.fix.status is Status.FAILED
    assert "against its cpu run: total: dtype torch.float32 on cpu is torch.float64 on meta" in outcome.fix.detail


def test_no_comparison_where_the_fix_does_not_run_on_the_cpu(tmp_path):
    original = META_ORIGINAL.replace("# devices: cpu, meta", "# devices: cpu, meta\n    # fix-devices: meta")
    outcome = verify_fixture(make_fixture(tmp_path, original, original), "meta", HERE)
    assert outcome.fix.status is Status.CONFIRMED and "cpu run" not in outcome.fix.detail


def test_cuda_fixtures_are_skipped_with_the_reason(tmp_path):
    original = META_ORIGINAL.replace("cpu, meta", "cpu, cuda")
    outcome = verify_fixture(make_fixture(tmp_path, original, original), "cuda", HERE)
    assert outcome.status is Status.SKIPPED and outcome.original.detail == "CUDA not available"


@CUDA
def test_the_fix_on_cuda_equals_its_cpu_run(tmp_path):
    original = META_ORIGINAL.replace("cpu, meta", "cpu, cuda")
    outcome = verify_fixture(make_fixture(tmp_path, original, original), "cuda")
    assert outcome.fix.status is Status.CONFIRMED, outcome.describe()
    assert "equal to its cpu run" in outcome.fix.detail


@CUDA
def test_random_numbers_drawn_on_cuda_leave_the_values_uncompared(tmp_path):
    original = META_ORIGINAL.replace("cpu, meta", "cpu, cuda").replace("torch.ones(2, 3,", "torch.randn(2, 3,")
    outcome = verify_fixture(make_fixture(tmp_path, original, original), "cuda")
    assert outcome.fix.status is Status.CONFIRMED, outcome.describe()
    assert "values not compared: it draws random numbers on cuda" in outcome.fix.detail


@CUDA
def test_a_fix_that_computes_another_value_on_cuda_fails(tmp_path):
    original = META_ORIGINAL.replace("cpu, meta", "cpu, cuda")
    drifting = original.replace("total = grid.sum()", 'total = grid.sum() + (DEVICE == "cuda")')
    outcome = verify_fixture(make_fixture(tmp_path, drifting, drifting), "cuda")
    assert outcome.fix.status is Status.FAILED and "against its cpu run: total: values differ" in outcome.fix.detail


def test_cuda_runs_turn_cudnn_tf32_off_and_restore_it():
    before = torch.backends.cudnn.allow_tf32
    with _full_float32_precision("cuda"):
        assert torch.backends.cudnn.allow_tf32 is False
    assert torch.backends.cudnn.allow_tf32 == before


@CUDA
def test_fixtures_run_on_cuda_without_tf32():
    run = execute("import torch\nflag = torch.backends.cudnn.allow_tf32\n", "<tf32>", "cuda")
    assert run.error is None and run.namespace["flag"] is False


# ----------------------------------------------------------------------------- the fork server
WARNS = """\
    import numpy as np
    import torch

    print("fixtures may print; the reply channel must not see it")
    batch = torch.tensor([np.ones(2), np.zeros(2)])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the fork server runs on Linux only")
def test_each_fresh_run_sees_the_warnings_torch_emits_once_per_process(tmp_path):
    path = tmp_path / "warns.py"
    path.write_text(textwrap.dedent(WARNS), encoding="utf-8")
    assert start_method("cpu") == "forkserver"
    first = [str(w) for w in fresh_run(path, "cpu").warnings()]
    assert any("Creating a tensor from a list of numpy.ndarrays" in w for w in first)
    # This process has emitted it now; a fresh run still sees it again.
    execute(textwrap.dedent(WARNS), str(path), "cpu")
    assert [str(w) for w in fresh_run(path, "cpu").warnings()] == first


def test_cuda_runs_spawn_a_new_interpreter():
    assert start_method("cuda") == "spawn"


def test_a_fresh_run_that_exits_is_reported_and_the_next_one_goes_on(tmp_path):
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="(?s)the run that checks warnings failed: .*SystemExit: 3"):
        fresh_run(exits, "cpu").warnings()
    dies = tmp_path / "dies.py"
    dies.write_text("import os\nos._exit(4)\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="exited with status 4 without a report"):
        fresh_run(dies, "cpu").warnings()
    quiet = tmp_path / "quiet.py"
    quiet.write_text("import torch\nx = torch.ones(2)\n", encoding="utf-8")
    assert fresh_run(quiet, "cpu").warnings() == []


# ----------------------------------------------------------------------------- version ranges
VERSION_DEPENDENT = [
    # (what the fixture's code or claim contains, the requirement it must declare)
    ("numpy(force=True)", Requirement("torch", ">=", "1.13")),
    ("Unable to avoid copy while creating an array", Requirement("numpy", ">=", "2")),
]


@pytest.mark.parametrize(("marker", "requirement"), VERSION_DEPENDENT, ids=[marker for marker, _ in VERSION_DEPENDENT])
def test_version_dependent_fixtures_declare_needs(marker, requirement):
    fixtures = [f for f in all_fixtures() if marker in f.source or marker in (f.fixed_source or "")]
    assert fixtures, f"no fixture uses {marker!r}: drop it from VERSION_DEPENDENT"
    missing = [f.id for f in fixtures if requirement not in f.needs]
    assert not missing, f"these fixtures depend on {requirement} and must say `# needs: {requirement}`: {missing}"


# ----------------------------------------------------------------------------- the table
NOT_RUN = Result(Status.NOT_RUN)


def outcome(fixture, device, original, fix=NOT_RUN):
    return Outcome(fixture, device, original, fix)


@pytest.fixture
def two_fixtures(tmp_path):
    positive = make_fixture(tmp_path, META_ORIGINAL, META_ORIGINAL, code="TCV101")
    negative = make_fixture(tmp_path, "# devices: cpu, meta\nx = 1\n", name="neg_case", code="TCV101")
    return positive, negative


def test_cells_summarise_a_rules_fixtures_on_a_device(two_fixtures):
    positive, negative = two_fixtures
    confirmed, clean = Result(Status.CONFIRMED, "ok"), Result(Status.CLEAN)
    assert summarize([]) == NO_FIXTURE
    assert summarize([outcome(positive, "cpu", confirmed, confirmed), outcome(negative, "cpu", clean)]) == "claim + fix confirmed"
    assert summarize([outcome(positive, "meta", confirmed)]) == "claim confirmed"
    assert summarize([outcome(positive, "cpu", clean, confirmed)]) == "fix confirmed"
    assert summarize([outcome(negative, "cpu", clean)]) == "runs cleanly"
    skipped = Result(Status.SKIPPED, "CUDA not available")
    assert summarize([outcome(positive, "cuda", skipped, skipped)]) == "skipped (CUDA not available)"
    not_applicable = Result(Status.NOT_APPLICABLE, "needs numpy<2, have 2.4.6")
    assert summarize([outcome(positive, "cpu", not_applicable, not_applicable)]) == "not applicable (needs numpy<2, have 2.4.6)"
    mixed = [outcome(positive, "cpu", confirmed, confirmed), outcome(positive, "cpu", not_applicable, not_applicable)]
    assert summarize(mixed) == "claim + fix confirmed (1 not applicable)"
    failed = Result(Status.FAILED, "ran without raising")
    assert summarize([outcome(positive, "cpu", failed), outcome(negative, "cpu", clean)]) == "FAILED (1 of 2)"


def test_the_report_lists_every_failure_below_the_table(two_fixtures):
    positive, negative = two_fixtures
    outcomes = [
        outcome(positive, "cpu", Result(Status.FAILED, "claim `holds: x`: it is False"), Result(Status.CONFIRMED)),
        outcome(negative, "cpu", Result(Status.CLEAN)),
    ]
    rows = build_rows([("TCV101", "numpy-requires-grad"), ("TCV102", "numpy-on-accelerator")], outcomes, ["cpu", "meta"], {"TCV101": (1, 1)})
    text = format_report(["header line"], rows, ["cpu", "meta"], outcomes)
    table = text.split("\n\n")[1].splitlines()
    assert table[0].split() == ["rule", "name", "fixtures", "cpu", "meta"]
    assert table[2].split() == ["TCV101", "numpy-requires-grad", "1", "+", "1", "FAILED", "(1", "of", "2)", NO_FIXTURE]
    assert table[3].split() == ["TCV102", "numpy-on-accelerator", "none", NO_FIXTURE, NO_FIXTURE]
    assert "FAILED:\n  TCV101/case on cpu\n    original: FAILED: claim `holds: x`: it is False" in text
    assert text.rstrip().endswith("2 rules, 2 fixtures that run on these devices, 2 runs (fixture x device): 1 confirmed, 1 FAILED")


def test_a_failing_claim_makes_verify_exit_1(tmp_path, monkeypatch):
    wrong = META_ORIGINAL.replace("torch.float32", "torch.float16")
    fixture = make_fixture(tmp_path, wrong, wrong, code="TCV101")
    monkeypatch.setattr(command, "all_fixtures", lambda: [fixture])
    out, err = io.StringIO(), io.StringIO()
    assert command.run_verify(["cpu"], ["TCV101"], out, err) == 1
    assert "TCV101  numpy-requires-grad  1 + 0     FAILED (1 of 1)" in out.getvalue()
    assert "claim `holds: grid.dtype == torch.float16`: it is False" in out.getvalue()


# ----------------------------------------------------------------------------- the command
def test_verify_prints_versions_devices_and_the_table(tensorconv):
    result = tensorconv("verify", "--select", "TCV102")  # by default cuda is skipped where it is missing
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"torch {torch.__version__}, NumPy {np.__version__}" in lines[1]
    assert lines[2] == "devices: cpu, cuda, meta"
    row = next(line for line in lines if line.startswith("TCV102"))
    assert "numpy-on-accelerator" in row and "fix confirmed" in row and "claim confirmed" in row
    if torch.cuda.is_available():
        assert lines[3].startswith(f"cuda: {torch.cuda.get_device_name()} (compute capability")
    else:
        assert lines[3] == "cuda: not available"
        assert "skipped (CUDA not available)" in row
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_verify_on_a_named_device_that_is_missing_is_an_error(tensorconv):
    result = tensorconv("verify", "--select", "TCV102", "--device", "cpu,cuda")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith("tensorconv: error: --device names cuda, but CUDA is not available on this machine (torch ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "cpu,tpu"], "unknown device(s) tpu for --device (known: cpu, cuda, meta)"),
        (["--device", ","], "--device needs at least one of cpu, cuda, meta"),
        (["--select", "TCV9"], "unknown rule selector 'TCV9'"),
        (["--select", "TCV00"], "'TCV00' selects only the TCV0xx codes, which report on the tool itself and have no runtime claim"),
    ],
)
def test_usage_errors_exit_2(tensorconv, args, message):
    result = tensorconv("verify", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("hidden", ["torch", "numpy"])
def test_without_torch_or_numpy_it_says_how_to_install_them(hidden):
    # `None` in sys.modules makes `import torch` raise ImportError, as if it were not installed.
    wrapper = f"import sys; sys.modules[{hidden!r}] = None; from flake8_tensorconv.cli import main; sys.exit(main(['verify']))"
    result = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert f"{hidden} cannot be imported" in result.stderr
    assert 'pip install "flake8-tensorconv[verify]"' in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_the_verify_extra_installs_torch_and_numpy():
    tomllib = pytest.importorskip("tomllib")
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text(encoding="utf-8"))
    extra = pyproject["project"]["optional-dependencies"]["verify"]
    assert {requirement.split(">")[0].split("=")[0] for requirement in extra} == {"torch", "numpy"}


def test_selection_takes_code_prefixes():
    codes = [code for code, _ in command.selected_rules(["TCV10"])]
    assert codes and all(code.startswith("TCV10") for code in codes)
    assert not any(code.startswith("TCV0") for code, _ in command.selected_rules([]))
    assert command.selected_rules(["ALL"]) == command.selected_rules([])
