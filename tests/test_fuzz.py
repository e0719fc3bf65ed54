"""Generated programs with conversions spliced in: no exception escapes, fixes compile and are idempotent.

Programs come from hypothesmith's grammar strategy; each gets conversion code (sources of
grad and device, `.numpy()`, legacy constructors, NumPy calls on tensors...) before it,
after it, or around it in a function. `TENSORCONV_FUZZ_EXAMPLES` sets the number of
examples (a few hundred in the normal run; thousands for the slow run, see
docs/robustness.md).
"""

from __future__ import annotations

import ast
import os
import warnings

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import ParseError, fix_source, lint_source
from flake8_tensorconv.runner import Mode, check_files
from flake8_tensorconv.source import Source

hypothesmith = pytest.importorskip("hypothesmith")

# Generated programs such as `1()` compile with a SyntaxWarning (hypothesmith compiles them too).
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")
EXAMPLES = int(os.environ.get("TENSORCONV_FUZZ_EXAMPLES", "200"))
EVERYTHING = Settings(select=("ALL",))
HEADER = "import numpy as np\nimport torch\nfrom torch import nn\n"
# Statements that the rules act on: each is a source, a sink, or both.
CONVERSIONS = [
    "model = nn.Linear(3, 2).cuda()",
    "out = model(torch.ones(1, 3))",
    "arr = out.numpy()",
    "w = torch.ones(3, requires_grad=True)",
    "v = w.cpu().detach().numpy()",
    "y = w.data; y.zero_()",
    "t = torch.Tensor(np.arange(3))",
    "s = torch.FloatTensor(4)",
    "z = torch.tensor([np.zeros(2), np.ones(2)])",
    "c = torch.tensor(w)",
    "m = np.asarray(out)",
    "k = np.sum(w)",
    "a = np.arange(6)[::-1]; b = torch.from_numpy(a)",
    "n = w.numpy(); n[0] = 1",
    "h = out.double(); model(h)",
]
PROGRAMS = hypothesmith.from_grammar()
SNIPPETS = st.lists(st.sampled_from(CONVERSIONS), min_size=1, max_size=6)


def _splice(program: str, before: list[str], after: list[str], in_function: bool) -> str:
    if in_function:
        lines = [*before, *program.splitlines(), *after]
        body = "".join(f"    {line}\n" for line in lines)
        return f"{HEADER}def fuzzed(x, model):\n{body}    pass\n"
    return HEADER + "\n".join(before) + "\n" + program + ("\n" if not program.endswith("\n") else "") + "\n".join(after) + "\n"


def _parses(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


SPLICED = st.builds(_splice, PROGRAMS, SNIPPETS, SNIPPETS, st.booleans()).filter(_parses)


def _compile(text: str, name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # `1()` compiles, with a warning
        compile(text, name, "exec", dont_inherit=True)


def _compiles(text: str) -> bool:
    try:
        _compile(text, "<original>")
    except SyntaxError:
        return False
    return True


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=SPLICED)
def test_no_exception_escapes_and_every_fix_compiles_and_is_idempotent(text: str) -> None:
    try:
        lint_source(Source(text=text), EVERYTHING)
    except ParseError:
        assume(False)
    # Some programs parse but never compile (`from . import *` inside a function): a fix is only
    # asked to compile where the original did.
    assume(_compiles(text))
    first = fix_source(Source(text=text), EVERYTHING, unsafe=True)
    assert _parses(first.text), first.text
    _compile(first.text, "<fixed>")
    second = fix_source(Source(text=first.text), EVERYTHING, unsafe=True)
    assert second.text == first.text


@settings(max_examples=max(EXAMPLES // 20, 5), deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(SPLICED, min_size=4, max_size=12))
def test_parallel_and_serial_runs_agree(texts: list[str], tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    paths = []
    for index, text in enumerate(texts):
        path = root / f"m{index}.py"
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    serial = check_files(paths, EVERYTHING, Mode(), jobs=1)
    parallel = check_files(paths, EVERYTHING, Mode(), jobs=2)
    assert serial == parallel
