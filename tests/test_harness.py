"""The fixture format parser and the runtime harness catch what they are meant to catch."""

from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pytest
import torch

from flake8_tensorconv.examples import (
    Claim,
    FixtureError,
    Requirement,
    fixtures_root,
    load_fixture,
)
from flake8_tensorconv.verify.compare import compare_namespaces
from flake8_tensorconv.verify.harness import Environment, Status, verify_fixture
from flake8_tensorconv.verify.running import execute

HERE = Environment(versions={"torch": "2.13.0+cpu", "numpy": "2.4.6"}, cuda_available=False)


def make_fixture(tmp_path, original: str, fixed: str | None = None, name: str = "case"):
    folder = tmp_path / "TCV999"
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(original), encoding="utf-8")
    fixed_path = None
    if fixed is not None:
        fixed_path = folder / f"{name}.fixed.py"
        fixed_path.write_text(textwrap.dedent(fixed), encoding="utf-8")
    return load_fixture(path, "TCV999", fixed_path)


GRAD_ORIGINAL = """\
    # claim: raises RuntimeError: Can't call numpy() on Tensor that requires grad
    # devices: cpu, meta
    # compare: no_grad
    import torch

    weights = torch.ones(3, requires_grad=True)
    values = (weights * 2).numpy()  # expect: TCV101
"""
GRAD_FIXED = GRAD_ORIGINAL.replace(".numpy()", ".detach().numpy()")


# ----------------------------------------------------------------------------- the format
def test_header_and_markers_are_parsed(tmp_path):
    fixture = make_fixture(
        tmp_path,
        """\
        # claim: raises TypeError: can't convert {device} device type tensor
        # claim: holds: x == 1
        # devices: cpu, cuda, meta
        # claim-devices: cuda, meta
        # fix-devices: cpu, cuda
        # differs: a, b
        # needs: numpy>=2, torch>=1.13
        # What this shows, in words.
        x = 1
        text = "# expect: TCV777"
        y = x  # expect: TCV101, TCV102
        """,
    )
    assert fixture.claims == (Claim("raises", "TypeError", "can't convert {device} device type tensor"), Claim("holds", "", "x == 1"))
    assert fixture.claims[0].message_prefix("cuda") == "can't convert cuda:0 device type tensor"
    assert fixture.devices == ("cpu", "cuda", "meta")
    assert fixture.claim_devices == ("cuda", "meta")
    assert fixture.fix_devices == ("cpu", "cuda")
    assert fixture.differs == {"a", "b"}
    assert [str(r) for r in fixture.needs] == ["numpy>=2", "torch>=1.13"]
    assert fixture.description == "What this shows, in words."
    assert fixture.expected_findings == [(11, "TCV101"), (11, "TCV102")]
    assert not fixture.is_negative


def test_defaults(tmp_path):
    fixture = make_fixture(tmp_path, "# claim: holds: True\nx = 1  # expect: TCV999\n")
    assert fixture.devices == fixture.claim_devices == fixture.fix_devices == ("cpu", "cuda")
    assert fixture.compare == () and fixture.differs == frozenset() and fixture.needs == ()


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("case", "x = 1  # expect: TCV999\n", "needs a '# claim:'"),
        ("case", "# claim: holds: True\nx = 1\n", "at least one '# expect"),
        ("neg_case", "x = 1  # expect: TCV999\n", "must not carry"),
        ("case", "# clam: holds: True\nx = 1  # expect: TCV999\n", "unknown header key 'clam'"),
        ("case", "# claim: raises: oops\nx = 1  # expect: TCV999\n", "is not 'raises TYPE"),
        ("case", "# claim: holds: x ==\nx = 1  # expect: TCV999\n", "not an expression"),
        ("case", "# claim: holds: True\n# devices: cpu, tpu\nx = 1  # expect: TCV999\n", "unknown device(s) tpu"),
        ("case", "# claim: holds: True\n# devices: cpu\n# claim-devices: meta\nx = 1  # expect: TCV999\n", "not in devices"),
        ("case", "# claim: holds: True\n# needs: numpy~=2\nx = 1  # expect: TCV999\n", "needs:"),
        ("case", "# claim: holds: True\nx = 1  # expect: TCV1\n", "malformed marker"),
    ],
)
def test_format_errors_name_the_file(tmp_path, name, text, problem):
    with pytest.raises(FixtureError, match=problem.replace("(", r"\(").replace(")", r"\)")) as error:
        make_fixture(tmp_path, text, name=name)
    assert name in str(error.value)


@pytest.mark.parametrize(
    ("requirement", "installed", "expected"),
    [
        (Requirement("torch", ">=", "1.13"), "2.13.0+cpu", True),
        (Requirement("numpy", ">=", "2"), "1.26.4", False),
        (Requirement("numpy", "<", "2"), "2.0.0rc1", False),
        (Requirement("torch", "==", "2.13"), "2.13.0", True),
        (Requirement("torch", "!=", "2.13"), "2.13.0", False),
    ],
)
def test_requirement_versions(requirement, installed, expected):
    assert requirement.satisfied_by(installed) is expected


def test_the_checkout_fixtures_are_found():
    root = fixtures_root()
    assert (root / "README.md").is_file()
    assert (root / "TCV101").is_dir()


# ----------------------------------------------------------------------------- the harness
def test_a_true_claim_and_an_equal_fix_are_confirmed(tmp_path):
    fixture = make_fixture(tmp_path, GRAD_ORIGINAL, GRAD_FIXED)
    outcome = verify_fixture(fixture, "cpu", HERE)
    assert outcome.original.status is Status.CONFIRMED
    assert outcome.fix.status is Status.CONFIRMED
    assert "equal results under no_grad" in outcome.fix.detail


def test_a_wrong_message_prefix_fails_with_what_was_raised(tmp_path):
    fixture = make_fixture(tmp_path, GRAD_ORIGINAL.replace("requires grad", "wants grad"), GRAD_FIXED)
    outcome = verify_fixture(fixture, "cpu", HERE)
    assert outcome.original.status is Status.FAILED
    assert "raised RuntimeError: Can't call numpy() on Tensor that requires grad" in outcome.original.detail


def test_a_claim_that_does_not_show_fails(tmp_path):
    original = GRAD_ORIGINAL.replace("requires_grad=True", "requires_grad=False")
    outcome = verify_fixture(make_fixture(tmp_path, original, GRAD_FIXED), "cpu", HERE)
    assert outcome.original.status is Status.FAILED
    assert "ran without raising" in outcome.original.detail


def test_meta_device_is_substituted_and_the_fix_need_not_run_there(tmp_path):
    original = """\
        # claim: raises TypeError: can't convert {device} device type tensor to numpy
        # devices: cpu, meta
        # claim-devices: meta
        # fix-devices: cpu
        import torch

        values = torch.ones(3, device=DEVICE).numpy()  # expect: TCV102
    """
    fixture = make_fixture(tmp_path, original, original.replace(").numpy()", ").cpu().numpy()"))
    meta = verify_fixture(fixture, "meta", HERE)
    assert meta.original.status is Status.CONFIRMED and meta.fix.status is Status.NOT_RUN
    cpu = verify_fixture(fixture, "cpu", HERE)
    assert cpu.original.status is Status.CLEAN and cpu.fix.status is Status.CONFIRMED


def test_cuda_without_a_gpu_is_skipped_with_the_reason(tmp_path):
    fixture = make_fixture(tmp_path, GRAD_ORIGINAL.replace("cpu, meta", "cpu, cuda"), GRAD_FIXED)
    outcome = verify_fixture(fixture, "cuda", HERE)
    assert outcome.status is Status.SKIPPED
    assert outcome.original.detail == "CUDA not available"


def test_unmet_versions_are_not_applicable(tmp_path):
    original = GRAD_ORIGINAL.replace("# compare", "# needs: numpy<2, torch>=1.13\n    # compare")
    outcome = verify_fixture(make_fixture(tmp_path, original, GRAD_FIXED), "cpu", HERE)
    assert outcome.status is Status.NOT_APPLICABLE
    assert outcome.original.detail == "needs numpy<2, have 2.4.6"


def test_holds_reports_the_false_value_or_the_error(tmp_path):
    false = make_fixture(tmp_path, "# claim: holds: x == 2\nx = 1  # expect: TCV999\n", name="false")
    assert "it is False" in verify_fixture(false, "cpu", HERE).original.detail
    broken = make_fixture(tmp_path, "# claim: holds: y == 2\nx = 1  # expect: TCV999\n", name="broken")
    assert "NameError" in verify_fixture(broken, "cpu", HERE).original.detail


def test_a_fix_that_changes_results_fails_unless_declared(tmp_path):
    original = """\
        # claim: holds: features[0].item() == 5.0
        # devices: cpu
        import numpy as np
        import torch

        pixels = np.ones(3, dtype=np.float32)
        features = torch.Tensor(pixels)  # expect: TCV201
        pixels[0] = 5.0
    """
    copying = original.replace("torch.Tensor(pixels)", "torch.tensor(pixels)")
    outcome = verify_fixture(make_fixture(tmp_path, original, copying), "cpu", HERE)
    assert outcome.fix.status is Status.FAILED
    assert "features: values" in outcome.fix.detail
    declared = original.replace("# devices", "# differs: features\n        # devices")
    outcome = verify_fixture(make_fixture(tmp_path, declared, copying, name="declared"), "cpu", HERE)
    assert outcome.fix.status is Status.CONFIRMED


def test_a_fix_that_raises_fails(tmp_path):
    fixed = GRAD_FIXED.replace(".detach().numpy()", ".detach().numpy(); raise ValueError('boom')")
    outcome = verify_fixture(make_fixture(tmp_path, GRAD_ORIGINAL, fixed), "cpu", HERE)
    assert outcome.fix.status is Status.FAILED
    assert "ValueError: boom" in outcome.fix.detail


def test_a_negative_that_raises_fails(tmp_path):
    fixture = make_fixture(tmp_path, "import torch\ntorch.ones(2, requires_grad=True).numpy()\n", name="neg_case")
    outcome = verify_fixture(fixture, "cpu", HERE)
    assert outcome.failed and "expected to run cleanly" in outcome.original.detail


WARNS_ORIGINAL = """\
    # claim: warns UserWarning: Creating a tensor from a list of numpy.ndarrays is extremely slow
    # devices: cpu
    import numpy as np
    import torch

    rows = [np.ones(2), np.zeros(2)]
    batch = torch.tensor(rows)  # expect: TCV204
"""


def test_warns_claims_run_in_a_fresh_process(tmp_path):
    # Emitted once per process: having seen it here must not hide it from the check.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.tensor([np.ones(2), np.ones(2)])  # noqa: TCV204 (the slow path is the point)
    fixed = WARNS_ORIGINAL.replace("torch.tensor(rows)", "torch.tensor(np.array(rows))")
    outcome = verify_fixture(make_fixture(tmp_path, WARNS_ORIGINAL, fixed), "cpu", HERE)
    assert outcome.original.status is Status.CONFIRMED, outcome.describe()
    assert outcome.fix.status is Status.CONFIRMED and "no claimed warning" in outcome.fix.detail


def test_a_missing_warning_and_a_fix_that_still_warns_fail(tmp_path):
    silent = WARNS_ORIGINAL.replace("[np.ones(2), np.zeros(2)]", "[[1.0, 1.0], [0.0, 0.0]]")
    outcome = verify_fixture(make_fixture(tmp_path, silent, WARNS_ORIGINAL), "cpu", HERE)
    assert outcome.original.status is Status.FAILED and "no warning was emitted" in outcome.original.detail
    assert outcome.fix.status is Status.FAILED and "still warns" in outcome.fix.detail


def test_global_grad_mode_is_restored():
    run = execute("import torch\ntorch.set_grad_enabled(False)\nraise KeyError('x')\n", "<test>", "cpu")
    assert isinstance(run.error, KeyError)
    assert torch.is_grad_enabled()


# ----------------------------------------------------------------------------- comparing
def test_equal_namespaces_with_nan_and_sharing():
    def make():
        base = torch.tensor([1.0, float("nan"), 3.0])
        view = base[1:]
        array = base.numpy()
        return {"base": base, "view": view, "array": array, "pair": (1, 2.5), "name": "x", "torch": torch}

    assert compare_namespaces(make(), make()) == []


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (torch.ones(2), torch.ones(2, dtype=torch.float64), "dtype"),
        (torch.ones(2, 3), torch.ones(3, 2).t(), "strides"),
        (torch.ones(2), torch.ones(2).requires_grad_(), "requires_grad"),
        (torch.ones(2), torch.tensor([1.0, 2.0]), "values"),
        (np.ones(2), np.ones(2, dtype=np.float32), "dtype"),
        (np.ones((2, 3)), np.asfortranarray(np.ones((2, 3))), "strides"),
        (np.ones(2), np.broadcast_to(np.ones(1), (2,)), "strides"),
        (1, 1.0, "type int became float"),
        ([1, 2], [1, 2, 3], "only the fixed code has it"),
    ],
)
def test_differences_are_named(left, right, expected):
    differences = compare_namespaces({"x": left}, {"x": right})
    assert any(expected in difference for difference in differences), differences


def test_writeability_and_gradients_are_compared():
    readonly = np.ones(2)
    readonly.flags.writeable = False
    assert "writeable" in compare_namespaces({"a": np.ones(2)}, {"a": readonly})[0]
    leaf, other = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    (leaf * 2).sum().backward()
    assert "grad" in compare_namespaces({"w": leaf}, {"w": other})[0]


def test_memory_sharing_must_agree():
    array = np.ones(3, dtype=np.float32)
    shared = {"array": array, "tensor": torch.from_numpy(array)}
    copied = {"array": array.copy(), "tensor": torch.tensor(array)}
    assert compare_namespaces(shared, copied) == ["array and tensor share memory in the original only"]


def test_differs_modules_and_dunders_are_skipped():
    left = {"__builtins__": {}, "DEVICE": "cpu", "np": np, "out": 1, "f": len}
    right = {"__builtins__": {"x": 1}, "DEVICE": "meta", "np": torch, "out": 2, "f": print}
    assert compare_namespaces(left, right, differs={"out"}) == []


def test_a_confirmed_claim_reads_as_on_its_device(tmp_path):
    original = """\
        # claim: raises TypeError: can't convert {device} device type tensor to numpy
        # devices: meta
        import torch

        values = torch.ones(3, device=DEVICE).numpy()  # expect: TCV102
    """
    outcome = verify_fixture(make_fixture(tmp_path, original), "meta", HERE)
    assert outcome.original.detail == "raises TypeError: can't convert meta device type tensor to numpy"
