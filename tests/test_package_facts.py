"""Facts from the other modules of a package, read only when a would-be finding asks (inference/package.py).

Single-file fixtures cannot show callers in another module, so each test builds a small package in
tmp_path: a model module whose method and helper convert what they are given, and a caller module.
"""

from __future__ import annotations

import os

import pytest

from flake8_tensorconv.cache import Cache
from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source, select_rules
from flake8_tensorconv.incremental import IncrementalLinter
from flake8_tensorconv.inference import package
from flake8_tensorconv.runner import Mode, check_files, check_stdin
from flake8_tensorconv.source import Source

MODEL = """\
import torch


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def predict(self, x):
        out = self.fc(x)
        return out.data.cpu().numpy()


def to_array(value):
    return value.data.cpu().numpy()


def to_numpy(logits):
    return logits.cpu().numpy()
"""

CALLERS_WITHOUT_GRAD = """\
import torch

from .model import Tagger, to_array, to_numpy


@torch.no_grad()
def evaluate(model, batches):
    return [model.predict(batch) for batch in batches]


def report(model, x):
    with torch.inference_mode():
        logp = model.fc(x)
        return to_array(logp), to_numpy(logp)
"""

CALLERS_WITH_GRAD = """\
import torch

from .model import Tagger, to_array, to_numpy


def evaluate(model, batches):
    return [model.predict(batch) for batch in batches]


def report(model, x):
    logp = Tagger().fc(x)
    return to_array(logp), to_numpy(logp)
"""

# Where each finding of MODEL is: TCV104 in `predict` and `to_array`, TCV101 in `to_numpy`.
ALL_FINDINGS = [("TCV104", 11), ("TCV104", 15), ("TCV101", 19)]


def make_package(root, callers: str, model: str = MODEL):
    folder = root / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / "model.py").write_text(model)
    (folder / "evaluate.py").write_text(callers)
    return folder


def lint(path, dependencies=None):
    text = path.read_text()
    findings = lint_source(Source(text=text), Settings(), path=str(path), dependencies=dependencies)
    return [(finding.code, finding.start.line) for finding in findings]


def test_callers_in_another_module_under_no_grad_settle_the_findings(tmp_path):
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    dependencies: dict[str, str] = {}
    assert lint(folder / "model.py", dependencies) == []
    assert str(folder / "evaluate.py") in dependencies  # the answer was read there


def test_callers_in_another_module_with_grad_leave_the_findings(tmp_path):
    folder = make_package(tmp_path, CALLERS_WITH_GRAD)
    assert lint(folder / "model.py") == ALL_FINDINGS


def test_one_caller_with_grad_among_callers_without_is_enough_to_report(tmp_path):
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    (folder / "train.py").write_text("from .model import Tagger\n\n\ndef step(model, x):\n    return model.predict(x)\n")
    assert ("TCV104", 11) in lint(folder / "model.py")


def test_a_function_passed_as_a_value_elsewhere_is_out_of_sight(tmp_path):
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    (folder / "hooks.py").write_text("from .model import to_array\n\nCALLBACKS = [to_array]\n")
    assert ("TCV104", 15) in lint(folder / "model.py")


def test_text_alone_has_no_package(tmp_path):
    """The same text without a path (an unsaved buffer's twin, a notebook) or from stdin reads no package."""
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    text = (folder / "model.py").read_text()
    findings = lint_source(Source(text=text), Settings())
    assert [(f.code, f.start.line) for f in findings] == ALL_FINDINGS
    result, _ = check_stdin(text.encode(), str(folder / "model.py"), Settings(), Mode())
    assert [(f.code, f.start.line) for f in result.findings] == ALL_FINDINGS


def test_a_package_too_large_is_not_worked_across(tmp_path, monkeypatch):
    """A framework's own tree (torch) has far more files than the bound: its files are analysed one by one."""
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    monkeypatch.setattr(package, "MAX_PACKAGE_FILES", 2)
    monkeypatch.setattr(package, "_LISTINGS", {})
    assert lint(folder / "model.py") == ALL_FINDINGS


def test_a_loose_script_folder_is_its_package(tmp_path):
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "evaluate.py").write_text(CALLERS_WITHOUT_GRAD.replace("from .model", "from model"))
    assert lint(tmp_path / "model.py") == []


def test_the_cache_drops_findings_whose_callers_changed(tmp_path):
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    settings = Settings()
    paths = [str(folder / name) for name in ("model.py", "evaluate.py")]

    def run() -> list[tuple[str, int]]:
        results = check_files(paths, settings, Mode(), jobs=1, cache=Cache(str(tmp_path), settings))
        return [(f.code, f.start.line) for f in results[0].findings]

    assert run() == []
    assert run() == []  # from the cache
    stamp = os.stat(folder / "evaluate.py").st_mtime_ns
    (folder / "evaluate.py").write_text(CALLERS_WITH_GRAD)
    os.utime(folder / "evaluate.py", ns=(stamp + 10**9, stamp + 10**9))
    assert run() == ALL_FINDINGS  # model.py did not change, the callers it was judged by did
    (folder / "evaluate.py").write_text(CALLERS_WITHOUT_GRAD)
    os.utime(folder / "evaluate.py", ns=(stamp + 2 * 10**9, stamp + 2 * 10**9))
    assert run() == []


@pytest.mark.parametrize("new_file", ["train.py", os.path.join("sub", "train.py")])
def test_the_cache_drops_findings_when_a_new_caller_appears(tmp_path, new_file):
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    (folder / "sub").mkdir()
    (folder / "sub" / "__init__.py").write_text("")
    settings = Settings()
    path = str(folder / "model.py")

    def run() -> list[tuple[str, int]]:
        results = check_files([path], settings, Mode(), jobs=1, cache=Cache(str(tmp_path), settings))
        return [(f.code, f.start.line) for f in results[0].findings]

    assert run() == []
    (folder / new_file).write_text("from proj.model import Tagger\n\n\ndef step(model, x):\n    return model.predict(x)\n")
    assert ("TCV104", 11) in run()


def test_the_editor_reads_the_other_modules_as_on_disk_and_notices_their_change(tmp_path):
    """The LSP's incremental linter keeps a body's findings between keystrokes only while the files they were
    drawn from stay the same."""
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    path = folder / "model.py"
    settings = Settings()
    linter = IncrementalLinter()

    def lint_buffer(text: str) -> list[tuple[str, int]]:
        findings = linter.lint(Source(text=text), settings, select_rules(settings), path=str(path))
        return [(f.code, f.start.line) for f in findings]

    assert lint_buffer(MODEL) == []
    assert lint_buffer(MODEL + "\n# an edit\n") == []
    assert linter.reused > 0
    stamp = os.stat(folder / "evaluate.py").st_mtime_ns
    (folder / "evaluate.py").write_text(CALLERS_WITH_GRAD)
    os.utime(folder / "evaluate.py", ns=(stamp + 10**9, stamp + 10**9))
    assert lint_buffer(MODEL) == ALL_FINDINGS


def test_callers_of_the_caller_count_one_level_up(tmp_path):
    """`predict` is called with grad on in `run_batch` (helpers.py), which the package calls only under no_grad."""
    folder = make_package(tmp_path, CALLERS_WITH_GRAD.replace("Tagger, to_array, to_numpy", "Tagger"))
    (folder / "evaluate.py").write_text("from .model import Tagger\n")
    (folder / "helpers.py").write_text("def run_batch(model, x):\n    return model.predict(x)\n")
    (folder / "loop.py").write_text(
        "import torch\n\nfrom .helpers import run_batch\n\n\ndef validate(model, x):\n    with torch.no_grad():\n        return run_batch(model, x)\n"
    )
    assert ("TCV104", 11) not in lint(folder / "model.py")
    (folder / "train.py").write_text("from .helpers import run_batch\n\n\ndef step(model, x):\n    return run_batch(model, x)\n")
    assert ("TCV104", 11) in lint(folder / "model.py")


RUN_CALLERS = """\
import sys, torch
for root in sys.argv[1:]:
    sys.path.insert(0, root)
    from proj.evaluate import evaluate, report
    from proj.model import Tagger
    model, x = Tagger(), torch.ones(1, 4)
    evaluate(model, [x])
    try:
        report(model, x)
    except RuntimeError as error:
        print("raised:", str(error)[:18])
    else:
        print("no error")
    sys.path.remove(root)
    for name in [name for name in sys.modules if name.startswith("proj")]:
        del sys.modules[name]
"""


def test_what_the_silence_rests_on_holds_at_run_time(tmp_path):
    """The claim behind the silence: the package's callers run the conversions without grad, so `.numpy()` in
    `to_numpy` does not raise; called with grad on, it does (TCV101's runtime claim, across modules)."""
    import subprocess
    import sys

    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    make_package(tmp_path / "without", CALLERS_WITHOUT_GRAD)
    make_package(tmp_path / "with", CALLERS_WITH_GRAD)
    command = [sys.executable, "-c", RUN_CALLERS, str(tmp_path / "without"), str(tmp_path / "with")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["no error", "raised: Can't call numpy()"]


def test_a_layers_parameter_requires_grad_whoever_calls_under_no_grad(tmp_path):
    folder = make_package(tmp_path, CALLERS_WITHOUT_GRAD)
    (folder / "export.py").write_text("import torch\n\n\ndef export(layer: torch.nn.Linear):\n    return layer.weight.data.cpu().numpy()\n")
    (folder / "save.py").write_text(
        "import torch\n\nfrom .export import export\n\n\ndef save(model):\n    with torch.no_grad():\n        return export(model.fc)\n"
    )
    assert lint(folder / "export.py") == [("TCV104", 5)]


# ------------------------------------------------------------------ what another module's functions and classes return
HELPERS = """\
import numpy as np
import torch


def load_mel(path):
    return torch.from_numpy(np.load(path))


def flat_grad(grads):
    return torch.cat([grad.view(-1) for grad in grads])


def predict(model, x):
    out = model(x)
    return out.cpu()


def chunks(arrays, size):
    for start in range(0, len(arrays), size):
        yield torch.from_numpy(arrays[start:start + size])
"""

NETS = """\
import torch


class Vgg(torch.nn.Module):
    def __init__(self, requires_grad=False):
        super().__init__()
        self.features = torch.nn.Linear(4, 4)
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, x):
        return self.features(torch.from_numpy(x).float())


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).data
"""

USES_HELPERS = """\
import torch

from .helpers import chunks, flat_grad, load_mel, predict


def report(model, x, arrays, path, loss):
    mel = load_mel(path)
    a = mel.data.cpu().numpy()
    direction = flat_grad(torch.autograd.grad(loss, model.parameters(), retain_graph=True))
    b = direction.data.cpu().numpy()
    with torch.no_grad():
        guess = predict(model, x)
    c = guess.data.cpu().numpy()
    for chunk in chunks(arrays, 2):
        d = chunk.data.cpu().numpy()
    return a, b, c, d


def report_with_grad(model, x, loss):
    direction = flat_grad(torch.autograd.grad(loss, model.parameters(), create_graph=True))
    b = direction.data.cpu().numpy()
    guess = predict(model, x)
    c = guess.data.cpu().numpy()
    return b, c
"""

USES_NETS = """\
import numpy as np
import torch

from proj.nets import Encoder, Vgg


def describe(images, x):
    style = Vgg()(images)
    a = style.data.cpu().numpy()
    code = Encoder()(x)
    b = code.data.cpu().numpy()
    return a, b


def describe_trained(images):
    style = Vgg(requires_grad=True)(images)
    return style.data.cpu().numpy()


def load(path):
    return describe(np.load(path), torch.ones(1, 4)), describe_trained(np.load(path))
"""

# Without the package: every `.data` conversion of a value the file cannot see is reported.
HELPER_FINDINGS = [("TCV104", 8), ("TCV104", 10), ("TCV104", 15), ("TCV104", 21), ("TCV104", 23)]
NET_FINDINGS = [("TCV104", 9), ("TCV104", 11), ("TCV104", 17)]


def make_modules(root, **modules: str):
    folder = root / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text("")
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
    return folder


def lint_text_alone(path) -> list[tuple[str, int]]:
    return [(f.code, f.start.line) for f in lint_source(Source(text=path.read_text()), Settings())]


def test_what_another_modules_function_returns_settles_the_findings(tmp_path):
    """Data loaded and made a tensor there, gradients taken without `create_graph` and flattened there, an output
    moved there under the caller's `no_grad`, a generator of tensors made from arrays: none requires grad."""
    folder = make_modules(tmp_path, helpers=HELPERS, report=USES_HELPERS)
    assert lint_text_alone(folder / "report.py") == HELPER_FINDINGS
    dependencies: dict[str, str] = {}
    # Kept: gradients taken with `create_graph=True`, and a model output the helper moves with grad on.
    assert lint(folder / "report.py", dependencies) == [("TCV104", 21), ("TCV104", 23)]
    assert str(folder / "helpers.py") in dependencies


def test_a_model_class_of_another_module_that_freezes_or_detaches(tmp_path):
    """`Vgg()` freezes every parameter in its constructor (its flag left to the default), and its input is a NumPy
    array; `Encoder`'s forward returns `.data`. Built with `requires_grad=True`, the Vgg's output requires grad."""
    folder = make_modules(tmp_path, nets=NETS, describe=USES_NETS)
    assert lint_text_alone(folder / "describe.py") == NET_FINDINGS
    assert lint(folder / "describe.py") == [("TCV104", 17)]


@pytest.mark.parametrize(
    ("helper", "still_reported"),
    [
        # The helper returns a model output: a tensor that requires grad, whatever it loads.
        ("def load_mel(path):\n    return MODEL(torch.ones(1, 4))\n", True),
        # Defined twice, or decorated: which definition runs, or what the decorator makes of it, is out of sight.
        ("def load_mel(path):\n    return torch.from_numpy(np.load(path))\n\n\nload_mel = staticmethod(load_mel)\n", True),
        ("import functools\n\n\n@functools.lru_cache\ndef load_mel(path):\n    return torch.from_numpy(np.load(path))\n", True),
    ],
)
def test_what_another_module_returns_is_read_only_where_it_is_in_sight(tmp_path, helper, still_reported):
    text = HELPERS.replace('def load_mel(path):\n    return torch.from_numpy(np.load(path))\n', "MODEL = torch.nn.Linear(4, 4)\n\n\n" + helper)
    folder = make_modules(tmp_path, helpers=text, report=USES_HELPERS)
    assert (("TCV104", 8) in lint(folder / "report.py")) is still_reported


def test_a_constructor_that_freezes_only_under_a_flag_the_call_leaves_unknown(tmp_path):
    folder = make_modules(tmp_path, nets=NETS, describe=USES_NETS.replace("Vgg()(images)", "Vgg(requires_grad=trainable)(images)").replace(
        "def describe(images, x):", "def describe(images, x, trainable=False):"
    ))
    assert ("TCV104", 9) in lint(folder / "describe.py")


FREEZE = "                param.requires_grad = False\n"


@pytest.mark.parametrize(
    "nets",
    [
        # A layer stored after the loop holds parameters that require grad.
        NETS.replace(FREEZE, FREEZE + "        self.head = torch.nn.Linear(4, 4)\n"),
        # The loop tests names first: part of the model stays trainable.
        NETS.replace(FREEZE, "                if True:\n    " + FREEZE),
    ],
)
def test_a_constructor_that_freezes_part_of_the_model_freezes_nothing_for_sure(tmp_path, nets):
    folder = make_modules(tmp_path, nets=nets, describe=USES_NETS)
    assert ("TCV104", 9) in lint(folder / "describe.py")


# The loop sets what the constructor's flag holds (DeOldify's InceptionV3): False left to its default, or passed True.
FLAG_LOOP = NETS.replace(
    "        if not requires_grad:\n            for param in self.parameters():\n" + FREEZE,
    "        for param in self.parameters():\n            param.requires_grad = requires_grad\n",
)


@pytest.mark.parametrize(("call", "reported"), [("Vgg()", False), ("Vgg(requires_grad=False)", False), ("Vgg(requires_grad=True)", True)])
def test_a_constructor_that_sets_requires_grad_to_its_flag(tmp_path, call, reported):
    assert "param.requires_grad = requires_grad" in FLAG_LOOP
    folder = make_modules(tmp_path, nets=FLAG_LOOP, describe=USES_NETS.replace("Vgg()(images)", f"{call}(images)"))
    assert (("TCV104", 9) in lint(folder / "describe.py")) is reported


def test_the_file_that_unfreezes_the_model_keeps_its_findings(tmp_path):
    text = USES_NETS.replace("    style = Vgg()(images)\n", "    vgg = Vgg()\n    vgg.requires_grad_(True)\n    style = vgg(images)\n")
    folder = make_modules(tmp_path, nets=NETS, describe=text)
    assert ("TCV104", 11) in lint(folder / "describe.py")


def test_a_name_imported_through_the_packages_init_is_followed(tmp_path):
    folder = make_modules(tmp_path, helpers=HELPERS, report=USES_HELPERS.replace("from .helpers import", "from . import"))
    (folder / "__init__.py").write_text("from .helpers import chunks, flat_grad, load_mel, predict\n")
    assert lint(folder / "report.py") == [("TCV104", 21), ("TCV104", 23)]


def test_the_cache_drops_findings_whose_helper_changed(tmp_path):
    folder = make_modules(tmp_path, helpers=HELPERS, report=USES_HELPERS)
    settings = Settings()
    path = str(folder / "report.py")

    def run() -> list[tuple[str, int]]:
        results = check_files([path], settings, Mode(), jobs=1, cache=Cache(str(tmp_path), settings))
        return [(f.code, f.start.line) for f in results[0].findings]

    assert run() == [("TCV104", 21), ("TCV104", 23)]
    stamp = os.stat(folder / "helpers.py").st_mtime_ns
    (folder / "helpers.py").write_text(HELPERS.replace("return torch.from_numpy(np.load(path))", "return torch.nn.Linear(4, 4)(torch.ones(1, 4))"))
    os.utime(folder / "helpers.py", ns=(stamp + 10**9, stamp + 10**9))
    assert ("TCV104", 8) in run()


RUN_RETURNS = """\
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1])
from proj.helpers import chunks, flat_grad, load_mel, predict
from proj.nets import Encoder, Vgg
np.save(sys.argv[2], np.ones((2, 4), dtype=np.float32))
model, x = torch.nn.Linear(4, 4), torch.ones(1, 4)
loss = (model(x) ** 2).sum()
print(load_mel(sys.argv[2]).requires_grad)
print(flat_grad(torch.autograd.grad(loss, model.parameters(), retain_graph=True)).requires_grad)
with torch.no_grad():
    print(predict(model, x).requires_grad)
print(any(chunk.requires_grad for chunk in chunks(np.ones((4, 4), dtype=np.float32), 2)))
print(Vgg()(np.ones((1, 4), dtype=np.float32)).requires_grad, Encoder()(x).requires_grad)
print(flat_grad(torch.autograd.grad(loss, model.parameters(), create_graph=True)).requires_grad)
print(predict(model, x).requires_grad, Vgg(requires_grad=True)(np.ones((1, 4), dtype=np.float32)).requires_grad)
"""


def test_what_the_returns_rest_on_holds_at_run_time(tmp_path):
    """Each value the package's returns silence is made without grad when the code runs; each one kept requires it."""
    import subprocess
    import sys

    make_modules(tmp_path, helpers=HELPERS, nets=NETS)
    command = [sys.executable, "-c", RUN_RETURNS, str(tmp_path), str(tmp_path / "mel.npy")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["False", "False", "False", "False", "False False", "True", "True True"]


def test_a_frozen_model_of_another_module_stored_by_init(tmp_path):
    """`self.vgg = Vgg()` in `__init__`, called on an array in another method: the constructor froze it."""
    text = '''\
import numpy as np
import torch

from proj.nets import Vgg


class Loss(torch.nn.Module):
    def __init__(self, trainable=False):
        super().__init__()
        self.vgg = Vgg()
        self.trained = Vgg(requires_grad=True)

    def forward(self, path):
        style = self.vgg(np.load(path))
        a = style.data.cpu().numpy()
        trained = self.trained(np.load(path))
        b = trained.data.cpu().numpy()
        return a, b
'''
    folder = make_modules(tmp_path, nets=NETS, loss=text)
    assert lint_text_alone(folder / "loss.py") == [("TCV104", 15), ("TCV104", 17)]
    assert lint(folder / "loss.py") == [("TCV104", 17)]


def test_a_loader_another_module_builds_gives_batches_of_data(tmp_path):
    data = (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n\n"
        "def get_loader(arrays):\n    return DataLoader(TensorDataset(torch.from_numpy(arrays)), batch_size=4)\n\n\n"
        "def get_model():\n    return torch.nn.Linear(4, 4)\n"
    )
    run = (
        "import torch\n\nfrom .data import get_loader, get_model\n\n\n"
        "def run(arrays):\n    model = get_model()\n    for (x,) in get_loader(arrays):\n"
        "        a = x.data.cpu().numpy()\n        out = model(x)\n        b = out.data.cpu().numpy()\n    return a, b\n"
    )
    folder = make_modules(tmp_path, data=data, run=run)
    assert lint_text_alone(folder / "run.py") == [("TCV104", 9), ("TCV104", 11)]
    assert lint(folder / "run.py") == [("TCV104", 11)]  # the model that module builds has parameters


def test_a_model_another_module_builds_and_returns_is_its_class(tmp_path):
    """`build()` of nets.py returns `Encoder()`, whose forward returns `.data`: the caller's output holds no grad."""
    nets = NETS + "\n\ndef build():\n    return Encoder()\n\n\ndef build_trained():\n    return torch.nn.Linear(4, 4)\n"
    text = (
        "import torch\n\nfrom .nets import build, build_trained\n\n\n"
        "def encode(x):\n    code = build()(x)\n    a = code.data.cpu().numpy()\n"
        "    out = build_trained()(x)\n    b = out.data.cpu().numpy()\n    return a, b\n"
    )
    folder = make_modules(tmp_path, nets=nets, encode=text)
    assert lint_text_alone(folder / "encode.py") == [("TCV104", 8), ("TCV104", 10)]
    assert lint(folder / "encode.py") == [("TCV104", 10)]


def test_what_a_method_of_another_modules_model_returns_under_no_grad_has_a_kind(tmp_path):
    """Under `no_grad` the file sees an object of unknown kind; the package shows a tensor, whose `max(1)[1]` is an index
    tensor after the block too. Outside `no_grad` the same call's output requires grad. Alone, the file also shows that
    `y_hat.max(1)` holds no grad: a tensor op of what `no_grad` made, with numbers (round 9; line 10 was reported)."""
    nets = NETS + "\n\nclass Vocoder(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
        "        self.fc = torch.nn.Linear(4, 4)\n\n    def generate(self, x):\n        return self.fc(x)\n"
    text = (
        "import torch\n\nfrom .nets import Vocoder\n\n\n"
        "def synthesize(x):\n    model = Vocoder()\n    with torch.no_grad():\n        y_hat = model.generate(x)\n"
        "    a = y_hat.max(1)[1].float().cpu().data.numpy()\n    y = model.generate(x)\n    b = y.float().cpu().data.numpy()\n"
        "    return a, b\n"
    )
    folder = make_modules(tmp_path, nets=nets, synthesize=text)
    assert lint_text_alone(folder / "synthesize.py") == [("TCV104", 12)]
    assert lint(folder / "synthesize.py") == [("TCV104", 12)]


SCORED = """\
import torch


class Scored(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x, labels):
        pred = self.fc(x)
        loss = torch.nn.functional.cross_entropy(pred, labels)
        acc = pred.argmax(1).eq(labels.data).sum()
        with torch.no_grad():
            probs = pred.softmax(1)
        return loss, acc, pred.max(1)[1], pred.data, probs, pred
"""

USES_SCORED = """\
import numpy as np
import torch

from .scored import Scored


class Trainer:
    def __init__(self):
        self.model = Scored()
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def step(self, x, labels):
        loss, acc, index, data, probs, pred = self.model(x, labels)
        loss.backward()
        a = acc.cpu().numpy()
        b = index.numpy()
        c = data.numpy()
        d = probs.numpy()
        e = self.model(x, labels)[1].numpy()
        f = pred.cpu().numpy()
        g = np.asarray(self.model(x, labels)[5])
        return a, b, c, d, e, f, g
"""


def test_the_items_a_model_of_another_module_returns_without_grad(tmp_path):
    """`self.model(x, labels)` of a class of another module whose forward returns `loss, acc, indices, .data, probs, pred`:
    the file alone sees the module's output in every item; the package's walk shows the accuracy (a comparison summed),
    the argmax indices, `.data` and what `no_grad` made without grad, unpacked or indexed from the call. The model's
    output itself (`pred`, item 5) still requires grad."""
    folder = make_modules(tmp_path, scored=SCORED, trainer=USES_SCORED)
    assert lint_text_alone(folder / "trainer.py") == [
        ("TCV101", 15), ("TCV101", 16), ("TCV101", 17), ("TCV101", 18), ("TCV101", 19), ("TCV101", 20), ("TCV105", 21),
    ]
    assert lint(folder / "trainer.py") == [("TCV101", 20), ("TCV105", 21)]


def test_the_items_of_a_model_the_module_builds_at_top_level(tmp_path):
    """`model = Scored().to(device)` at module level, called in a function: that function calls into the package too."""
    text = (
        "import torch\n\nfrom .scored import Scored\n\nmodel = Scored().to('cpu')\n"
        "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def step(x, labels):\n    loss, acc, index, data, probs, pred = model(x, labels)\n    loss.backward()\n"
        "    return acc.numpy(), index.numpy(), pred.numpy()\n"
    )
    folder = make_modules(tmp_path, scored=SCORED, script=text)
    assert lint_text_alone(folder / "script.py") == [("TCV101", 12), ("TCV101", 12), ("TCV101", 12)]
    assert lint(folder / "script.py") == [("TCV101", 12)]


RUN_SCORED = """\
import sys, torch
sys.path.insert(0, sys.argv[1])
from proj.scored import Scored
items = Scored()(torch.ones(2, 4), torch.tensor([0, 1]))
print(*(item.requires_grad for item in items))
"""


def test_what_the_items_rest_on_holds_at_run_time(tmp_path):
    """The items the package's walk shows without grad are made without grad when the code runs; the output is not."""
    import subprocess
    import sys

    make_modules(tmp_path, scored=SCORED)
    command = [sys.executable, "-c", RUN_SCORED, str(tmp_path)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "False", "False", "False", "False", "True"]


# ------------------------------------------------------------------ what the callers of a caller pass (round 9)
STORE = """\
import torch


class Storage:
    def __init__(self):
        self.values = []

    def add(self, obs, logits):
        self.values.append((obs, logits.clone().cpu().numpy()))


def _decode(tokens, logits):
    return tokens.data.cpu().numpy(), logits.cpu().numpy()


def show(tokens, logits):
    return _decode(tokens, logits)
"""

# Storage.add's TCV101, then _decode's TCV104 and TCV101.
STORE_FINDINGS = [("TCV101", 9), ("TCV104", 13), ("TCV101", 13)]

COLLECT = """\
import numpy as np
import torch

from .store import Storage, show


def collect(net, obs, path):
    storage, seen = Storage(), set()
    logits = net(obs)
    storage.add(obs, {passed})
    seen.add(net(obs))
    ids = torch.from_numpy(np.load(path))
    return show(ids, {passed}), storage, seen
"""


def test_what_the_callers_of_a_caller_pass_settles_the_findings(tmp_path):
    """`_decode` is called only by `show` of its own file, which the package calls with token ids loaded from NumPy and
    a detached output: `_decode`'s parameters hold no grad. `Storage.add` is given a detached output; `seen.add(...)`
    with one argument cannot be a call of `add(obs, logits)`, so it says nothing of it."""
    folder = make_modules(tmp_path, store=STORE, collect=COLLECT.format(passed="logits.detach()"))
    assert lint_text_alone(folder / "store.py") == STORE_FINDINGS
    dependencies: dict[str, str] = {}
    assert lint(folder / "store.py", dependencies) == []
    assert str(folder / "collect.py") in dependencies


def test_what_the_callers_of_a_caller_pass_with_grad_keeps_the_findings(tmp_path):
    """The same callers passing the output itself: `logits` requires grad in `add` and `_decode`; the token ids still
    hold none."""
    folder = make_modules(tmp_path, store=STORE, collect=COLLECT.format(passed="logits"))
    assert lint(folder / "store.py") == [("TCV101", 9), ("TCV101", 13)]


def test_a_call_the_signature_cannot_take_is_another_objects_method(tmp_path):
    """Calls of `x.add(...)` that `Storage.add` could not take (too few arguments, an unknown keyword) are not its
    calls; a call that could take them (`*args`), or a matching one with grad, keeps the finding."""
    collect = COLLECT.format(passed="logits.detach()")
    folder = make_modules(tmp_path, store=STORE, collect=collect + "\n\ndef other(bag, net, x):\n    bag.add(net(x), key=1)\n")
    assert ("TCV101", 9) not in lint(folder / "store.py")
    (folder / "more.py").write_text("def more(bag, net, x):\n    bag.add(*net(x))\n")
    assert ("TCV101", 9) in lint(folder / "store.py")
    (folder / "more.py").write_text("def more(bag, net, x):\n    bag.add(x, logits=net(x))\n")
    assert ("TCV101", 9) in lint(folder / "store.py")


RUN_STORE = """\
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1])
import proj.store as store
from proj.collect import collect
seen = []
original = store._decode
def spy(tokens, logits):
    seen.append((tokens.requires_grad, logits.requires_grad))
    return original(tokens, logits)
store._decode = spy
np.save(sys.argv[2], np.arange(4))
net = torch.nn.Linear(4, 2)
(arrays, _), storage, _ = collect(net, torch.ones(1, 4), sys.argv[2])
print(seen, len(storage.values))
try:
    store.Storage().add(None, net(torch.ones(1, 4)))
except RuntimeError as error:
    print("raised:", str(error)[:18])
"""


def test_what_the_callers_of_a_caller_pass_holds_at_run_time(tmp_path):
    """The silence's claim: run as the package runs it, `_decode` gets tensors without grad and `add` converts without
    raising; given the output itself, `add` raises (TCV101's claim)."""
    import subprocess
    import sys

    make_modules(tmp_path, store=STORE, collect=COLLECT.format(passed="logits.detach()"))
    command = [sys.executable, "-c", RUN_STORE, str(tmp_path), str(tmp_path / "ids.npy")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["[(False, False)] 1", "raised: Can't call numpy()"]


# ------------------------------------------------------------------ values without grad only another module shows (round 10)
GRAPHS = """\
import torch


def simple_graph(net=None):
    G = object()
    y = torch.tensor([0, 1, 1]).long()
    x = torch.zeros(3, 2)
    out = net(x) if net is not None else x
    return G, x, y, out
"""

TEST_GRAPH = """\
import numpy as np
import torch

from .graphs import simple_graph


def test_labels():
    G, x, y, out = simple_graph(torch.nn.Linear(2, 2))
    assert np.max(y.data.numpy()) == 1
    return out.data.numpy()
"""


def test_the_items_of_a_tuple_another_module_returns_are_trusted_one_by_one(tmp_path):
    """`simple_graph` returns an object, features, integer labels and a model output: the labels hold no grad there,
    though the tuple as a whole does not show that; the model output still may require grad."""
    folder = make_modules(tmp_path, graphs=GRAPHS, test_graph=TEST_GRAPH)
    assert lint_text_alone(folder / "test_graph.py") == [("TCV104", 9), ("TCV104", 10)]
    assert lint(folder / "test_graph.py") == [("TCV104", 10)]


PLOTS = """\
import torch


def plot_beams(y_pred_edges, num_plots=3):
    \"\"\"
    Args:
        y_pred_edges: Predictions for edges (batch_size, num_nodes, num_nodes)
    \"\"\"
    y_probs = torch.softmax(y_pred_edges, dim=-1)
    return y_probs[0].cpu().numpy()
"""

STAR_CALLER = """\
import torch

from proj.plots import *


def validate(model, x):
    with torch.no_grad():
        y_preds = model(x)
        plot_beams(y_preds)
"""


@pytest.mark.parametrize(("imports", "reported"), [("from proj.plots import *", False), ("from proj.other import *", True)])
def test_a_module_that_imports_every_name_of_another_calls_its_functions(tmp_path, imports, reported):
    """`from proj.plots import *` binds `plot_beams`: its call under `no_grad` is its only call. A star import of another
    module binds a `plot_beams` of its own (or none): the documented model output stays reported."""
    folder = make_modules(tmp_path, plots=PLOTS, evaluate=STAR_CALLER.replace("from proj.plots import *", imports), other="")
    assert lint_text_alone(folder / "plots.py") == [("TCV101", 10)]
    assert (lint(folder / "plots.py") == [("TCV101", 10)]) is reported


POLICIES = """\
import torch
import torch.nn.functional as F


class OnPolicy(torch.nn.Module):
    def forward(self, x):
        raise NotImplementedError

    def act(self, x, deterministic=False):
        logit = self.forward(x)
        probs = F.softmax(logit, dim=1)
        if deterministic:
            return probs.max(1)[1]
        return probs.multinomial(1)

    def values(self, x):
        return self.forward(x)
"""

AGENT = """\
import torch

from .policies import OnPolicy


class Agent(OnPolicy):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def main():
    agent = Agent()
    state = torch.ones(2, 4)
    action = agent.act(state)
    value = agent.values(state)
    actions = action.squeeze(1).cpu().data.numpy()
    return actions, value.cpu().data.numpy()
"""


def test_a_method_inherited_from_another_modules_class_is_walked_there(tmp_path):
    """`Agent` inherits `act` from `OnPolicy`: actions drawn with `multinomial` (or picked with `max(1)[1]`) are integer
    indices. `values` returns what `self.forward` gives, which `Agent` overrides: walked with `self` of unknown class,
    it shows nothing, and the finding stays."""
    folder = make_modules(tmp_path, policies=POLICIES, agent=AGENT)
    assert lint_text_alone(folder / "agent.py") == [("TCV104", 20), ("TCV104", 21)]
    assert lint(folder / "agent.py") == [("TCV104", 21)]


RUN_ROUND_10 = """\
import sys

import torch

sys.path.insert(0, sys.argv[1])
from proj.agent import Agent
from proj.graphs import simple_graph

_, _, labels, out = simple_graph(torch.nn.Linear(2, 2))
agent = Agent()
state = torch.ones(2, 4)
print(labels.requires_grad, out.requires_grad)
print(agent.act(state).requires_grad, agent.act(state, deterministic=True).requires_grad, agent.values(state).requires_grad)
"""


def test_what_round_10s_package_facts_rest_on_holds_at_run_time(tmp_path):
    """The labels another module returns beside a model output, and the actions an inherited `act` draws, hold no grad
    when the code runs; the output, and what the overridden `forward` gives through `values`, require it."""
    import subprocess
    import sys

    make_modules(tmp_path, graphs=GRAPHS, policies=POLICIES, agent=AGENT)
    run = subprocess.run([sys.executable, "-c", RUN_ROUND_10, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["False True", "False False True"]


LOADERS = """\
import torch


def load_model(path):
    model = torch.load(path)
    model.eval()
    for p in model.parameters():
        p.requires_grad = False
    return model


def build_frozen(n):
    net = torch.nn.Linear(n, 2)
    net.requires_grad_(False)
    return net


def build(n):
    return torch.nn.Linear(n, 2)
"""

USES_LOADERS = """\
import torch

from proj.loaders import build, build_frozen, load_model


def features(x):
    model = load_model("model.pt")
    out = model(torch.from_numpy(x))
    return out.data.cpu().numpy()


def frozen_layer(x):
    layer = build_frozen(3)
    out = layer(torch.from_numpy(x))
    return out.data.cpu().numpy()


def trained_layer(x):
    layer = build(3)
    out = layer(torch.from_numpy(x))
    return out.data.cpu().numpy()
"""


def test_a_model_that_a_loader_of_another_module_freezes(tmp_path):
    """`load_model` sets every parameter's `requires_grad` false, `build_frozen` calls `requires_grad_(False)`: their
    layers' outputs on data hold no grad. `build`'s layer is trained."""
    folder = make_modules(tmp_path, loaders=LOADERS, report=USES_LOADERS)
    assert lint_text_alone(folder / "report.py") == [("TCV104", 9), ("TCV104", 15), ("TCV104", 21)]
    assert lint(folder / "report.py") == [("TCV104", 21)]


@pytest.mark.parametrize(
    ("change", "line"),
    [
        # A layer stored into the loaded model holds parameters that require grad.
        (('    model = load_model("model.pt")\n', '    model = load_model("model.pt")\n    model.fc = torch.nn.Linear(2, 2)\n'), 10),
        # The calling file turns grad back on (anywhere: the frozen layers too).
        (('    layer = build(3)\n', '    layer = build(3)\n    layer.requires_grad_(True)\n'), 9),
    ],
)
def test_a_model_a_loader_froze_that_the_calling_file_may_unfreeze(tmp_path, change, line):
    folder = make_modules(tmp_path, loaders=LOADERS, report=USES_LOADERS.replace(*change))
    assert ("TCV104", line) in lint(folder / "report.py")


RUN_LOADERS = """\
import sys

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
from proj import loaders
from proj.report import features, frozen_layer, trained_layer

torch.save(torch.nn.Sequential(torch.nn.Linear(3, 2)), sys.argv[2], _use_new_zipfile_serialization=True)
real_load = torch.load
loaders.torch.load = lambda path: real_load(sys.argv[2], weights_only=False)
x = np.ones((1, 3), dtype=np.float32)
for build in (lambda: loaders.load_model("model.pt"), lambda: loaders.build_frozen(3), lambda: loaders.build(3)):
    print(build()(torch.from_numpy(x)).requires_grad)
print(features(x).shape, frozen_layer(x).shape, trained_layer(x).shape)
"""


def test_what_a_loaders_freeze_rests_on_holds_at_run_time(tmp_path):
    """The loaded model and the frozen layer compute outputs that do not require grad on data; the built one does."""
    import subprocess
    import sys

    make_modules(tmp_path, loaders=LOADERS, report=USES_LOADERS)
    command = [sys.executable, "-c", RUN_LOADERS, str(tmp_path), str(tmp_path / "model.pt")]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["False", "False", "True", "(1, 2) (1, 2) (1, 2)"]


# Round 11: a masked write through `.data` into what a layer built from another module's class returns.
LAYERS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Head(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_out, n_in))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)


class Classifier(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.hidden = nn.Linear(n_in, 8)
        self.head = Head(8, n_out)

    def forward(self, x):
        out = torch.relu(self.hidden(x))
        out = self.head(out)
        return out


class Squashed(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))


class Stack(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.net = nn.Sequential(*[nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])

    def forward(self, x):
        return self.net(x)


def classifier(n_in, n_out):
    return Classifier(n_in, n_out)
"""

NETS_OF_LAYERS = """\
from . import layers
from .layers import Classifier


class Base(layers.nn.Module):
    pass


class Wide(Classifier):
    def forward(self, x):
        return Classifier.forward(self, x) * 2
"""

LEARNER = """\
import torch
import torch.nn.functional as F

from . import layers
from .layers import Squashed, Stack, classifier
from .nets import Classifier


class Learner(torch.nn.Module):
    def __init__(self, n_in, n_out, squash=False, stack=False):
        super().__init__()
        self.net = Classifier(n_in, n_out)
        self.model = layers.classifier(n_in, n_out)
        self.encoder = classifier(n_in, n_out)
        self.network = Squashed(n_in, n_out) if squash else Classifier(n_in, n_out)
        self.backbone = Stack([n_in, n_out]) if stack else classifier(n_in, n_out)

    def forward(self, x, k):
        output = self.net(x)
        output[:, :k].data.fill_(-1e11)
        return output

    def built(self, x, k):
        output = self.model(x)
        output[:, :k].data.fill_(-1e11)
        return output

    def built_here(self, x, k):
        output = self.encoder(x)
        output[:, :k].data.fill_(-1e11)
        return output

    def squashed(self, x, k):
        output = self.network(x)
        output[:, :k].data.fill_(-1e11)
        return output

    def stacked(self, x, k):
        output = self.backbone(x)
        output[:, :k].data.fill_(-1e11)
        return output
"""


def test_a_layer_of_another_module_that_keeps_nothing_of_its_output(tmp_path):
    """`self.net = Classifier(...)` of another module (imported directly, through a module that re-exports it, or made
    by a function of the package), whose `forward` ends in `F.linear` (a small module class around it) or `nn.Linear`:
    the masked write through `.data` changes nothing backward reads. A binding that may be `Squashed` (ends in a
    sigmoid, which keeps its result) or a `Stack` (an `nn.Sequential`, out of sight) keeps the finding; so does the
    text alone, which cannot see the classes."""
    folder = make_modules(tmp_path, layers=LAYERS, nets=NETS_OF_LAYERS, learner=LEARNER)
    kept = [("TCV104", 35), ("TCV104", 40)]
    assert lint_text_alone(folder / "learner.py") == [("TCV104", 20), ("TCV104", 25), ("TCV104", 30), *kept]
    dependencies: dict[str, str] = {}
    assert lint(folder / "learner.py", dependencies) == kept
    assert str(folder / "layers.py") in dependencies  # the answer was read there


@pytest.mark.parametrize(
    ("change", "reported"),
    [
        ("self.model = layers.classifier(n_in, n_out)\n", ("self.model = layers.classifier(n_in, n_out)\n        self.model.cuda()\n", False)),
        ("self.model = layers.classifier(n_in, n_out)\n", ("self.model = layers.classifier(n_in, n_out).to('cpu').eval()\n", False)),
        ("self.model = layers.classifier(n_in, n_out)\n", ("self.model = layers.classifier(n_in, n_out)\n        self.model = self.model.to('cpu')\n", False)),
        ("self.model = layers.classifier(n_in, n_out)\n", ("self.model = layers.classifier(n_in, n_out)\n        self.model = self.model.fused()\n", True)),
        ("    def built(self", ("    def reset(self):\n        self.model = None\n\n    def built(self", True)),
        ("self.model = layers.classifier(n_in, n_out)\n", ("self.model = layers.Stack([n_in, n_out])\n", True)),
        ("output = self.model(x)", ("output = torch.sigmoid(self.model(x))", True)),
    ],
)
def test_a_layer_of_another_module_is_followed_only_where_every_binding_is_in_sight(tmp_path, change, reported):
    """Another method that rebinds the attribute, a layer whose `forward` is out of sight (an `nn.Sequential`), a
    binding to what a method of the layer returns (other than the module itself: `to`, `eval`), or a result that an op
    keeping its output made keeps the finding; a call of a method of the layer changes nothing (the name is still
    bound once, in `__init__`), nor does moving the layer."""
    old, (new, kept) = change, reported
    text = LEARNER.replace(old, new)
    folder = make_modules(tmp_path, layers=LAYERS, nets=NETS_OF_LAYERS, learner=text)
    line = next(number for number, source in enumerate(text.splitlines(), 1) if "def built(self" in source) + 2
    assert (("TCV104", line) in lint(folder / "learner.py")) is kept


RUN_LAYERS = """\
import sys

import torch

sys.path.insert(0, sys.argv[1])
from proj.learner import Learner

torch.manual_seed(0)
x = torch.randn(4, 5)


def grads(learner, method, loss):
    learner.zero_grad()
    loss(getattr(learner, method)(x, 2)).backward()
    return [p.grad.clone() for p in learner.parameters() if p.grad is not None]


def masked(output):
    mask = torch.zeros_like(output, dtype=torch.bool)
    mask[:, :2] = True
    return output, mask


learner = Learner(5, 4, squash=True)
layers = {"forward": learner.net, "built": learner.model, "built_here": learner.encoder, "squashed": learner.network}
y = torch.tensor([2, 3, 2, 3])
for method, layer in layers.items():
    # What backward computes where it reads nothing the write changed: the write as a constant offset.
    def offset(x, k):
        output, mask = masked(layer(x))
        return output + ((-1e11 - output) * mask).detach()

    def out_of_place(x, k):
        output, mask = masked(layer(x))
        return output.masked_fill(mask, -1e11)

    setattr(learner, "offset", offset)
    setattr(learner, "out_of_place", out_of_place)
    total = lambda output: output.sum()
    classes = lambda output: torch.nn.functional.cross_entropy(output, y)
    same = all(torch.equal(a, b) for a, b in zip(grads(learner, method, total), grads(learner, "offset", total)))
    masked_like = all(torch.allclose(a, b) for a, b in zip(grads(learner, method, classes), grads(learner, "out_of_place", classes)))
    print(method, same, masked_like)
"""


def test_what_the_layers_silence_rests_on_holds_at_run_time(tmp_path):
    """Backward reads nothing the masked write through `.data` changes in the linear-ended layers' outputs (their
    gradients are those of the write as a constant offset, and, before a cross-entropy, those of an out-of-place
    `masked_fill`); the sigmoid's backward reads its own result, which the write changed."""
    import subprocess
    import sys

    make_modules(tmp_path, layers=LAYERS, nets=NETS_OF_LAYERS, learner=LEARNER)
    run = subprocess.run([sys.executable, "-c", RUN_LAYERS, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["forward True True", "built True True", "built_here True True", "squashed False True"]


# ------------------------------------------------------------------ findings the package's callers make (round 13)
RL_AGENT = """\
import numpy as np
import torch


class Agent:
    def __init__(self, net):
        self.net = net

    def act(self, state):
        x = torch.tensor([state], dtype=torch.float32)
        return self.net(x).argmax().item()

    def learn(self, states):
        return torch.tensor(states, dtype=torch.float32).mean()

    def unused(self, obs):
        return torch.tensor([obs])
"""

PLAY = """\
import gym
import torch

from .agent import Agent

env = gym.make("CartPole-v1")
agent = Agent(torch.nn.Linear(4, 2))
for episode in range(3):
    state, _ = env.reset()
    done = False
    states = []
    while not done:
        action = agent.act(state)
        state, reward, done, truncated, _ = env.step(action)
        states.append(state)
    agent.learn(states)
"""


def lint_findings(path):
    return lint_source(Source(text=path.read_text()), Settings(), path=str(path))


def test_callers_in_another_module_passing_observations_make_findings(tmp_path):
    """`torch.tensor([state])` of a parameter that every call in the package passes an environment's observation:
    the finding names the step in the calling module (message and related location); the method nobody calls stays
    silent, and so does the file read without its package."""
    folder = make_modules(tmp_path, agent=RL_AGENT, play=PLAY)
    findings = lint_findings(folder / "agent.py")
    assert [(f.code, f.start.line) for f in findings] == [("TCV204", 10), ("TCV204", 14)]
    act, learn = findings
    assert "(`state` is an array from `env.reset()` on line 9 of play.py: every call in the package passes one)" in act.message
    assert "(`states` holds arrays from `env.step(action)` on line 14 of play.py" in learn.message
    assert [(r.path, r.start.line, r.start.column) for r in act.related] == [(str(folder / "play.py"), 9, 15)]
    assert act.fix is not None and act.fix.applicability.value == "unsafe"  # a caller outside may pass numbers
    assert lint_text_alone(folder / "agent.py") == []


@pytest.mark.parametrize(
    ("other", "reported"),
    [
        # One call passes numbers: not every call passes an array (the policy: all the package's calls, joined).
        ("from .agent import Agent\n\n\ndef warm_up(agent):\n    agent.act([0.0, 0.0, 0.0, 0.0])\n", []),
        # A call passes an observation of an environment the package does not show: unknown, silent.
        ("from .agent import Agent\n\n\ndef replay(agent, env):\n    s = env.reset()\n    agent.act(s)\n", []),
        # Passed as a value: called out of sight.
        ("from .agent import Agent\n\n\ndef hooks(agent):\n    return [agent.act]\n", []),
        # Another observation of an environment observing arrays: still every call.
        (
            "import gym\nfrom .agent import Agent\n\n\ndef evaluate(agent):\n    env = gym.make('Pendulum-v1')\n"
            "    s, _ = env.reset()\n    agent.act(s)\n",
            [("TCV204", 10)],
        ),
    ],
)
def test_every_call_in_the_package_must_pass_arrays(tmp_path, other, reported):
    folder = make_modules(tmp_path, agent=RL_AGENT, play=PLAY.replace("agent.learn(states)", "pass"), other=other)
    assert [(f.code, f.start.line) for f in lint_findings(folder / "agent.py")] == reported


RL_UTILS = """\
def train_on_policy_agent(env, agent, num_episodes):
    returns = []
    for _ in range(num_episodes):
        state = env.reset()
        done = False
        while not done:
            action = agent.act(state)
            state, reward, done, _ = env.step(action)
        returns.append(reward)
    return returns
"""

SCRIPT = """\
import gym
import torch

import rl_utils
from agent import Agent

env = gym.make("CartPole-v0")
agent = Agent(torch.nn.Linear(4, 2))
rl_utils.train_on_policy_agent(env, agent, 10)
"""


def test_an_environment_a_script_hands_to_a_helper_above_it(tmp_path):
    """A script in a folder (`ac/`) imports a helper module of the folder above (run from the repository's root); the
    helper gets the environment as a parameter and passes its observations to the agent's method: two modules away."""
    (tmp_path / "rl_utils.py").write_text(RL_UTILS)
    (tmp_path / "ac").mkdir()
    (tmp_path / "ac" / "agent.py").write_text(RL_AGENT)
    (tmp_path / "ac" / "a2c.py").write_text(SCRIPT)
    findings = lint_findings(tmp_path / "ac" / "agent.py")
    assert [(f.code, f.start.line) for f in findings] == [("TCV204", 10)]
    assert "from `env.reset()` on line 4 of ../rl_utils.py" in findings[0].message
    # The same environment's observations, where the script passes an environment nothing says observes arrays.
    (tmp_path / "ac" / "a2c.py").write_text(SCRIPT.replace('gym.make("CartPole-v0")', 'gym.make("FrozenLake-v1")'))
    package._LISTINGS.clear()
    assert lint_findings(tmp_path / "ac" / "agent.py") == []


RUN_AGENT = """\
import sys
import warnings

import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
from proj.agent import Agent

agent = Agent(torch.nn.Linear(4, 2))
observation = np.zeros(4, dtype=np.float32)  # what a Box space's reset() and step() give
with warnings.catch_warnings(record=True) as caught:  # torch warns once per process: one method per run
    warnings.simplefilter("always")
    if sys.argv[2] == "act":
        agent.act(observation)
    else:
        agent.learn([observation, observation])
print(sum("list of numpy.ndarrays is extremely slow" in str(w.message) for w in caught))
fixed = torch.tensor(np.array([observation]), dtype=torch.float32)
print(torch.equal(fixed, torch.tensor([observation], dtype=torch.float32)))
"""


def test_what_the_callers_observations_make_of_the_method_holds_at_run_time(tmp_path):
    """TCV204's claim where the package's callers decide it: given the observation arrays, both conversions warn, and
    the fix's `np.array()` first gives the same tensor."""
    import subprocess
    import sys

    make_modules(tmp_path, agent=RL_AGENT)
    for method in ("act", "learn"):
        run = subprocess.run([sys.executable, "-c", RUN_AGENT, str(tmp_path), method], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines() == ["1", "True"]


VIEWS = """\
import numpy as np
import torch


def show_prob(p):
    return np.round(p.numpy(), 3)


def show_data(p):
    return p.data.numpy()


def to_host(p):
    return p.cpu().detach()
"""

SHOW = """\
import torch

from .views import show_data, show_prob, to_host

net = torch.nn.Linear(4, 2)
im = torch.ones(1, 4)
print(show_prob(torch.softmax(net(im), dim=1)))
print(show_data(net(im)))
print(to_host(net(im)))
"""


def test_callers_in_another_module_passing_outputs_with_grad_make_findings(tmp_path):
    """`p.numpy()` of a parameter that every call in the package passes a model's output computed with grad: TCV101,
    naming the step there; `.cpu()` of a CPU tensor records no copy (TCV103 stays silent)."""
    folder = make_modules(tmp_path, views=VIEWS, show=SHOW)
    findings = lint_findings(folder / "views.py")
    assert [(f.code, f.start.line) for f in findings] == [("TCV101", 6), ("TCV104", 10)]
    assert findings[0].message.endswith("(`p` comes from `net(im)` on line 7 of show.py, outside `no_grad`)")
    assert [(r.path, r.start.line) for r in findings[0].related] == [(str(folder / "show.py"), 7)]
    assert findings[0].fix is not None and findings[0].fix.applicability.value == "unsafe"
    assert lint_text_alone(folder / "views.py") == [("TCV104", 10)]


@pytest.mark.parametrize(
    "change",
    [
        ("print(show_prob(torch.softmax(net(im), dim=1)))", "with torch.no_grad():\n    print(show_prob(net(im)))"),
        ("print(show_data(net(im)))", "print(show_data(net(im)))\nprint(show_prob(net(im).detach()))"),
        ("from .views import show_data, show_prob, to_host", "from .views import show_data, to_host"),
    ],
    ids=["under-no-grad", "one-call-detached", "nobody-calls-it"],
)
def test_outputs_with_grad_must_reach_every_call(tmp_path, change):
    folder = make_modules(tmp_path, views=VIEWS, show=SHOW.replace(*change))
    assert ("TCV101", 6) not in [(f.code, f.start.line) for f in lint_findings(folder / "views.py")]


RUN_SHOW = """\
import sys

import torch

sys.path.insert(0, sys.argv[1])
from proj.views import show_prob

net = torch.nn.Linear(4, 2)
im = torch.ones(1, 4)
try:
    show_prob(torch.softmax(net(im), dim=1))
except RuntimeError as error:
    print("raised:", str(error)[:28])
print(show_prob(torch.softmax(net(im), dim=1).detach()).shape)
"""


def test_what_the_callers_outputs_make_of_the_helper_holds_at_run_time(tmp_path):
    """TCV101's claim where the package's callers decide it: given the output with grad, `p.numpy()` raises; the fix's
    `.detach()` gives the values."""
    import subprocess
    import sys

    make_modules(tmp_path, views=VIEWS)
    run = subprocess.run([sys.executable, "-c", RUN_SHOW, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["raised: Can't call numpy() on Tensor", "(1, 2)"]


def test_a_helper_that_many_modules_write_is_not_asked_to_make_a_grad_finding(tmp_path):
    """A library's conversion helper named by more than `MAX_CALLING_FILES` other modules: reading them all costs more
    than the site is worth, so the grad rules leave it to TCV111 there (the silence of unknown)."""
    from flake8_tensorconv.rules import _receivers

    extra = {f"user{index}": "from .views import show_prob\n" for index in range(_receivers.MAX_CALLING_FILES)}
    folder = make_modules(tmp_path, views=VIEWS, show=SHOW, **extra)
    assert ("TCV101", 6) not in [(f.code, f.start.line) for f in lint_findings(folder / "views.py")]


def test_sarif_names_the_callers_step_in_its_own_file(tmp_path, tensorconv):
    """The related location of a finding the package's callers made is in the calling module (and the cache keeps it)."""
    import json

    make_modules(tmp_path, agent=RL_AGENT, play=PLAY)
    for _ in range(2):  # the second run reads the result cache
        result = tensorconv("check", "--output-format", "sarif", "proj/agent.py", cwd=tmp_path)
        results = json.loads(result.stdout)["runs"][0]["results"]
        related = [r["relatedLocations"][0]["physicalLocation"] for r in results if r["ruleId"] == "TCV204"]
        assert [(place["artifactLocation"]["uri"], place["region"]["startLine"]) for place in related] == [
            ("proj/play.py", 9), ("proj/play.py", 14)
        ]
