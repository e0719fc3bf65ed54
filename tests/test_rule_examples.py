"""Each rule's documented `Example` fires the rule, and its `Use instead` does not.

`Use instead` is often the fixed line alone (`arr = out.detach().numpy()`): it is read in
the example's context, with the example's reported lines taken out, so that the names
it uses mean what they meant in the example. Examples leave out the usual imports, as
documentation does; they are put back.
"""

from __future__ import annotations

import ast
import re

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import lint_source
from flake8_tensorconv.rules import ALL_RULES
from flake8_tensorconv.source import Source

_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
DOCUMENTED = [rule for rule in ALL_RULES if not rule.code.startswith("TCV0")]
IMPORTS = "import numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


def _code(rule: type, section: str) -> str:
    blocks = _BLOCK.findall(rule.sections().get(section, ""))
    assert blocks, f"{rule.code}: no python block under '## {section}'"
    return "\n".join(blocks)


def _example(rule: type) -> str:
    return IMPORTS + _code(rule, "Example")


def _lines_reported(text: str, code: str) -> set[int]:
    findings = lint_source(Source(text=text), Settings(select=(code,)))
    return {line for finding in findings if finding.code == code for line in range(finding.start.line, finding.end.line + 1)}


@pytest.mark.parametrize("rule", DOCUMENTED, ids=lambda rule: rule.code)
def test_the_example_fires_the_rule(rule):
    assert _lines_reported(_example(rule), rule.code), f"{rule.code}: its own Example is not reported"


@pytest.mark.parametrize("rule", DOCUMENTED, ids=lambda rule: rule.code)
def test_use_instead_does_not_fire_the_rule(rule):
    example = _example(rule)
    reported = _lines_reported(example, rule.code)
    context = "".join(line for number, line in enumerate(example.splitlines(keepends=True), 1) if number not in reported)
    replacement = _code(rule, "Use instead")
    texts = [IMPORTS + replacement]
    try:  # the example without its reported lines may not stand on its own (a function left without a body)
        ast.parse(context + replacement)
        texts.append(context + replacement)
    except SyntaxError:
        pass
    for text in texts:
        assert not _lines_reported(text, rule.code), f"{rule.code}: 'Use instead' is still reported:\n{text}"
