"""A finding names the step that makes it risky: in its message, as related locations, in SARIF and in the cache."""

from __future__ import annotations

import json
import textwrap

from flake8_tensorconv.cache import _encode, _finding
from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.findings import Position
from flake8_tensorconv.source import Source


def _lint(code: str, **settings: object):
    return lint_source(Source(text=textwrap.dedent(code).lstrip("\n")), Settings(**settings))


def test_grad_evidence_names_the_module_call_and_its_line():
    (finding,) = _lint(
        """
        import torch

        def evaluate(model, x):
            logits = model(x)
            probabilities = logits.softmax(1)
            return probabilities.numpy()
        """
    )
    assert finding.code == "TCV101"
    assert finding.message.endswith("(`probabilities` comes from `model(x)` on line 4, outside `no_grad`)")
    (related,) = finding.related
    assert (related.start, related.end) == (Position(4, 13), Position(4, 21))
    assert related.message == "requires grad: `model(x)`"


def test_device_evidence_names_the_move():
    (finding,) = _lint(
        """
        import torch

        def run(device):
            t = torch.ones(3)
            t = t.to(device)
            return t.numpy()
        """
    )
    assert finding.code == "TCV102"
    assert finding.message.endswith("(`t` comes from `t.to(device)` on line 5, which may be a GPU)")
    assert [r.message for r in finding.related] == ["may be on a GPU: `t.to(device)`"]


def test_indices_and_integer_results_keep_the_evidence_of_their_source():
    findings = _lint(
        """
        import torch

        def rank(device):
            t = torch.ones(3).to(device)
            values, order = torch.sort(t)
            best = torch.argmax(t)
            return order.numpy(), best.numpy()
        """
    )
    assert [f.code for f in findings] == ["TCV102", "TCV102"]
    assert all(f.message.endswith("comes from `torch.ones(3).to(device)` on line 4, which may be a GPU)") for f in findings)


def test_a_torch_function_of_the_tensor_names_the_tensor_not_torch():
    """`torch.flatten(loss).cpu()`: the evidence is about `loss`, the function's argument, not the module `torch`."""
    (finding,) = _lint(
        """
        import torch

        def step(model, x):
            loss = model(x).mean()
            return torch.flatten(loss).cpu().detach().numpy()
        """
    )
    assert finding.code == "TCV103"
    assert finding.message.endswith("(`loss` comes from `model(x)` on line 4, outside `no_grad`)")


def test_a_parameter_named_as_a_models_output_says_so():
    """With no caller in the file, the name is the evidence, and the message says that, not "the callers"."""
    (finding,) = _lint(
        """
        import torch

        def report(logits):
            return logits.cpu().numpy()
        """
    )
    assert finding.message.endswith("(`logits` is a parameter of `report()` named as a model's output on line 3, so it may require grad)")
    assert finding.related[0].start == Position(3, 11)


def test_callers_in_sight_decide_over_a_parameters_name():
    """Every caller is in the file: what they pass decides; a name does not outweigh them."""
    findings = _lint(
        """
        import torch

        def report(logits):
            return logits.cpu().numpy()

        def score(preds):
            return preds.cpu().numpy()

        report(gather(outputs))
        model = torch.nn.Linear(3, 2)
        score(model(torch.ones(1, 3)))
        """
    )
    assert [(f.code, f.start.line) for f in findings] == [("TCV101", 7)]
    assert findings[0].message.endswith("(`preds` comes from `model(torch.ones(1, 3))` on line 11, outside `no_grad`)")


def test_numpy_function_on_a_module_output_names_it():
    (finding,) = _lint(
        """
        import numpy as np
        import torch

        layer = torch.nn.Linear(3, 2)
        out = layer(torch.ones(1, 3))
        array = np.asarray(out)
        """
    )
    assert finding.code == "TCV105"
    assert "`out` comes from `layer(torch.ones(1, 3))` on line 5" in finding.message


def test_related_locations_survive_the_cache():
    (finding,) = _lint("import torch\nw = torch.nn.Parameter(torch.ones(2))\na = (w * 2).numpy()\n")
    assert finding.related
    assert _finding(json.loads(json.dumps(_encode(finding)))) == finding


def test_sarif_shows_related_locations(tensorconv, tmp_path):
    (tmp_path / "f.py").write_text("import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n")
    result = tensorconv("check", "--output-format", "sarif", "f.py", cwd=tmp_path)
    (entry,) = json.loads(result.stdout)["runs"][0]["results"]
    (location,) = entry["relatedLocations"]
    assert location["physicalLocation"]["region"] == {"startLine": 4, "startColumn": 7, "endLine": 4, "endColumn": 30}
    assert location["message"]["text"] == "requires grad: `model(torch.ones(1, 3))`"


def test_a_parameter_requires_grad_in_any_grad_mode_and_the_message_says_so():
    # "outside `no_grad`" would be false: a parameter made under no_grad still requires grad.
    findings = _lint(
        """
        import torch

        with torch.no_grad():
            weight = torch.nn.Parameter(torch.randn(2, 3))
        snapshot = weight.float().numpy()
        layer = torch.nn.Linear(3, 2)
        for p in layer.parameters():
            p.numpy()
        """,
        select=("TCV101",),
    )
    assert [finding.message[finding.message.index(" (") :] for finding in findings] == [
        " (`weight` requires grad in any grad mode: it comes from `torch.nn.Parameter(torch.randn(2, 3))` on line 4)",
        " (`p` requires grad in any grad mode: it comes from `layer.parameters()` on line 7)",
    ]


def test_a_value_computed_from_a_parameter_names_the_mode_it_was_computed_in():
    (finding,) = _lint(
        """
        import torch

        weight = torch.nn.Parameter(torch.randn(2, 3))
        doubled = (weight * 2).numpy()
        """,
        select=("TCV101",),
    )
    assert finding.message.endswith("(`weight * 2` comes from `torch.nn.Parameter(torch.randn(2, 3))` on line 3, outside `no_grad`)")
