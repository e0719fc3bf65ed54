"""The file facts read from the text with regexes find what the plain patterns find, only faster."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference import files as F

# The patterns as they were written before they were made to start with literals.
_PLAIN_TRAINED = re.compile(
    r"\b(?:" + "|".join(sorted(K.OPTIMIZER_NAMES)) + r")\(\s*(?:params\s*=\s*)?(?:list\()?\s*((?:self\.)?\w+)\.(?:named_)?parameters\(\)"
)
_PLAIN_SELF_FOR_TARGET = re.compile(r"\bfor\b(?:(?!\bin\b)[^\n])*?\bself\s*\.")
_FROZEN_NEEDLES = ("freeze(", "requires_grad_(")

_TEXTS = [
    "model.freeze()\nself.encoder.requires_grad_(False)\nnet.eval().requires_grad_(False).to(device)\n",
    "self.x.freeze().freeze()  # only the first call is a match\n",
    "a.to(\n    device,\n).cuda().freeze( )\n",
    "f(a).freeze()\nunfreeze()\nb.to(g(x)).freeze()\nx.requires_grad_(requires_grad=False)\n",
    "é.freeze()\n_x9.requires_grad_( False )\nself . y.freeze()\n(m).freeze()\nm.to((1)).freeze()\n",
    "opt = torch.optim.Adam(model.parameters())\nxAdam(net.parameters())\nSGD(params=list(self.net.named_parameters()))\n",
    "for self.i in range(3): pass\nformat(self.x)\n[y for y in self.items]\nfor_x = self.y\n",
]


@pytest.mark.parametrize("text", _TEXTS)
def test_the_chained_scan_finds_what_findall_finds(text: str):
    assert F._chain_findall(F._FROZEN, text, _FROZEN_NEEDLES) == F._FROZEN.findall(text)


@pytest.mark.parametrize("text", _TEXTS)
def test_patterns_that_start_with_their_words_match_as_before(text: str):
    assert F._TRAINED.findall(text) == _PLAIN_TRAINED.findall(text)
    assert [m.span() for m in F._SELF_FOR_TARGET.finditer(text)] == [m.span() for m in _PLAIN_SELF_FOR_TARGET.finditer(text)]


def test_the_scans_find_something_in_the_examples():
    """The comparisons above compare matches, not two empty lists."""
    joined = "".join(_TEXTS)
    assert set(F._chain_findall(F._FROZEN, joined, _FROZEN_NEEDLES)) >= {"model", "self.encoder", "net", "a", "self.x", "x", "_x9"}
    assert set(F._TRAINED.findall(joined)) == {"model", "self.net"}
    assert F._SELF_FOR_TARGET.search(joined) is not None


# Pieces that chains, calls, needles and what breaks them are made of.
_PIECES = st.sampled_from(
    ["self", ".", "x", "to", "eval", "(", ")", "freeze", "freeze(", "requires_grad_(", "False", " ", "\n", ",", "=", "requires_grad", "#", "é", "1"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_the_chained_scan_agrees_with_findall_on_any_text(text: str):
    assert F._chain_findall(F._FROZEN, text, _FROZEN_NEEDLES) == F._FROZEN.findall(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["", " ", "  ", "\t", "a", "b c", "\u3000", "x:", "\n", "\n", "\r", "\f"]), max_size=30).map("".join))
def test_docstrings_are_cleaned_as_inspect_cleans_them(text: str):
    import inspect

    from flake8_tensorconv.inference.summaries import clean_docstring

    assert clean_docstring(text) == inspect.cleandoc(text)


def test_a_check_does_not_import_inspect_to_read_a_docstring():
    import subprocess
    import sys

    code = (
        "import sys\nfrom flake8_tensorconv.config import Settings\nfrom flake8_tensorconv.engine import lint_source\n"
        "from flake8_tensorconv.source import Source\n"
        "text = 'import torch\\n\\ndef f(logits, device):\\n    \\'\\'\\'Args:\\n        logits: output of the model\\n    \\'\\'\\'\\n"
        "    return logits.to(device).numpy()\\n'\n"
        "lint_source(Source(text=text), Settings())\nprint('inspect' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False"]


def test_attributes_of_self_bound_by_a_for_are_found_in_the_function_that_binds_them():
    import ast
    import textwrap

    from flake8_tensorconv.inference.files import analyze_file_facts

    text = textwrap.dedent(
        """
        class A:
            def plain(self, xs):
                self.a = 1
                return [x for x in xs]

            @decorate([0 for self.d in range(2)])
            def loops(self, xs):
                for self.i in xs:
                    pass
                return [0 for self.j in xs]
        """
    )
    for written in (text, text.replace("\n", "\r")):
        tree = ast.parse(written)
        facts = analyze_file_facts(tree, written)
        plain, loops = (node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef))
        assert facts.self_stores(plain) == {"a"}
        assert facts.self_stores(loops) == {"d", "i", "j"}


def _trained(text: str) -> frozenset[str]:
    import ast

    return F.analyze_file_facts(ast.parse(text), text).trained_models


def test_torch_optimizers_train_torch_models_however_they_are_named():
    text = (
        "import torch\nfrom torch import optim\nfrom torch.optim import Adam\n"
        "a = optim.SGD(model.parameters())\nb = Adam(net.parameters())\nc = torch . optim.AdamW(self.actor.parameters())\n"
    )
    assert _trained(text) == {"model", "net", "self.actor"}


@pytest.mark.parametrize(
    "imports",
    [
        "import mytorch.nn as nn\nimport mytorch.optim as optim\n",  # a project's own autograd framework
        "import flax.linen as nn\nimport optax as optim\nimport jax\n",
        "from mytorch import nn, optim\n",
    ],
)
def test_an_optimizer_of_another_framework_trains_no_torch_model(imports: str):
    """A file writing against another framework (its `nn` is not torch's) hands that framework's optimizer
    its own model: no evidence of a torch module with parameters."""
    text = imports + "from torch.utils.data import DataLoader\nopt = optim.SGD(model.parameters(), lr=0.1)\n"
    assert _trained(text) == frozenset()
    assert _trained(text + "import torch\nopt2 = torch.optim.Adam(critic.parameters())\n") == {"critic"}
