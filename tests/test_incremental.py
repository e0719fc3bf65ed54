"""The language server's incremental analysis gives exactly what a fresh analysis of the same text gives.

A document is made of rule fixtures (every rule's sources, sinks and cross-function flows)
(or a file of functions, a class and module-level names that use each other) and edited at
random, line by line as an editor does: lines deleted, duplicated, moved, joined, typed in
from the fixtures, names renamed (which links and unlinks functions), digits changed,
`# noqa` added. After every edit the findings of one :class:`IncrementalLinter`
that saw every version must equal :func:`lint_source` on the text alone, and the tree it
reparsed must be the tree ``ast.parse`` makes.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import ParseError, lint_source, select_rules
from flake8_tensorconv.incremental import IncrementalLinter
from flake8_tensorconv.source import Source

LINKED_WORDS = "build net size buffer Model forward last history helper convert caller evaluate batch"  # LINKED's own names
FIXTURES = sorted(Path(__file__).resolve().parent.parent.joinpath("fixtures").glob("TCV*/*.py"))
TEXTS = [path.read_text(encoding="utf-8") for path in FIXTURES]
# Lines that open or close what spans lines (brackets, strings, blocks, decorators): the reparse must not split them.
FRAGMENTS = ["(", ")", "x = [", "]", '"""', "'''", "@(", "@torch.no_grad()", "else:", "    pass", "if x:", "def g():", "class C:", "y = 1 \\", "#", "\f"]
LINES = sorted({line for text in TEXTS for line in text.splitlines() if line.strip()})
WORDS = sorted({word for text in [*TEXTS, LINKED_WORDS] for word in re.findall(r"\b[A-Za-z_]\w*\b", text)} - {"def", "class", "return", "import", "from"})
EVERYTHING = Settings(select=("ALL",))
# Edit sequences per property (a long hunt: TENSORCONV_INCREMENTAL_EXAMPLES=3000).
EXAMPLES = int(os.environ.get("TENSORCONV_INCREMENTAL_EXAMPLES", "60"))

DENSE_FUNCTION = '''\
def step_{n}(model, batch, labels):
    scores = model(batch)
    values = scores.numpy()
    table = torch.Tensor(labels)
    snapshot = values.copy()
    snapshot[0] = {n}
    return values, table, snapshot


'''
DENSE = "import numpy as np\nimport torch\n\n\n" + "".join(DENSE_FUNCTION.format(n=n) for n in range(6))
# Functions, a class and module-level names that depend on each other, for edits to link and unlink.
LINKED = '''\
import numpy as np
import torch
from torch import nn


def build(width):
    return nn.Linear(width, 2)


net = build(3); size = 3
buffer = torch.zeros(size)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.history = []

    def forward(self, batch):
        out = self.fc(batch)
        self.history.append(out)
        return out

    def last(self):
        return self.history[-1].numpy()


def helper(size):
    return torch.ones(size, requires_grad=True)


def convert(x):
    values = helper(x).numpy()
    table = torch.Tensor(np.arange(size))
    return net(buffer).numpy(), values, table


def caller(model, batch):
    with torch.no_grad():
        return convert(model(batch))


@torch.no_grad()
def evaluate(model, batch):
    return model(batch).numpy(), Model().last()


if __name__ == "__main__":
    print(caller(Model(), torch.ones(1, 3)))
'''


def outcome(lint, text: str):
    try:
        return lint(text)
    except ParseError as error:
        return ("ParseError", str(error), error.position)


def edit(lines: list[str], operation: tuple) -> list[str]:
    kind, where, payload = operation
    lines = list(lines)
    index = where % (len(lines) + 1)
    if kind == "insert":
        lines.insert(index, payload)
    elif not lines:
        return [payload]
    else:
        index %= len(lines)
        if kind == "delete":
            del lines[index]
        elif kind == "replace":
            lines[index] = payload
        elif kind == "duplicate":
            lines.insert(index, lines[index])
        elif kind == "move":
            line = lines.pop(index)
            lines.insert(len(payload) % (len(lines) + 1), line)
        elif kind == "rename":  # one of the line's names becomes another name
            which, new = payload
            names = re.findall(r"\b[A-Za-z_]\w*\b", lines[index])
            if names:
                lines[index] = re.sub(rf"\b{names[which % len(names)]}\b", new, lines[index])
        elif kind == "digit":
            lines[index] = re.sub(r"\d", payload, lines[index], count=1)
        elif kind == "noqa":
            lines[index] += "  # noqa"
        elif kind == "blank":
            lines.insert(index, "")
        elif kind == "join" and index + 1 < len(lines):  # two statements on one line, when both are simple
            lines[index : index + 2] = [f"{lines[index]}; {lines[index + 1].strip()}"]
    return lines


OPERATIONS = st.one_of(
    st.tuples(st.sampled_from(["insert", "replace"]), st.integers(0, 10_000), st.sampled_from(LINES) | st.sampled_from(FRAGMENTS)),
    st.tuples(st.sampled_from(["delete", "duplicate", "noqa", "blank", "join"]), st.integers(0, 10_000), st.just("")),
    st.tuples(st.just("move"), st.integers(0, 10_000), st.text(alphabet="x", max_size=40)),
    st.tuples(st.just("rename"), st.integers(0, 10_000), st.tuples(st.integers(0, 100), st.sampled_from(LINKED_WORDS.split()) | st.sampled_from(WORDS))),
    st.tuples(st.just("digit"), st.integers(0, 10_000), st.sampled_from("0123456789")),
)


def check_sequence(base: str, operations: list[tuple], settings_: Settings) -> None:
    rules = select_rules(settings_)
    linter = IncrementalLinter()
    lines = base.split("\n")
    for step in range(len(operations) + 1):
        if step:
            lines = edit(lines, operations[step - 1])
        text = "\n".join(lines)
        incremental = outcome(lambda text: linter.lint(Source(text=text), settings_, rules), text)
        fresh = outcome(lambda text: lint_source(Source(text=text), settings_, rules), text)
        assert incremental == fresh, f"after {operations[:step]}:\n{text}"
        parsed = linter._parsed
        if parsed is not None and parsed.lines == Source(text=text).normalized.split("\n"):  # this text was parsed
            assert ast.dump(parsed.tree, include_attributes=True) == ast.dump(ast.parse(Source(text=text).normalized), include_attributes=True)


# Typed-in lines hold escapes such as "\\w" outside raw strings, which Python warns about when it parses them.
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    fixtures=st.lists(st.sampled_from(TEXTS), min_size=1, max_size=3),
    operations=st.lists(OPERATIONS, min_size=1, max_size=10),
    every_rule=st.booleans(),
)
def test_random_edits_of_fixtures_give_the_findings_of_a_fresh_analysis(fixtures: list[str], operations: list[tuple], every_rule: bool):
    check_sequence("\n".join(fixtures), operations, EVERYTHING if every_rule else Settings())


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::SyntaxWarning")
@settings(max_examples=max(EXAMPLES // 2, 1), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from([DENSE, LINKED]), operations=st.lists(OPERATIONS, min_size=1, max_size=8), every_rule=st.booleans())
def test_random_edits_of_linked_and_dense_files_give_the_findings_of_a_fresh_analysis(base: str, operations: list[tuple], every_rule: bool):
    check_sequence(base, operations, EVERYTHING if every_rule else Settings())


def test_a_change_inside_one_function_walks_that_function_alone():
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    first = linter.lint(Source(text=DENSE), Settings(), rules)
    assert (linter.walked, linter.reused) == (6, 0)
    changed = DENSE.replace("snapshot[0] = 3", "snapshot[0] = 7")
    assert linter.lint(Source(text=changed), Settings(), rules) == lint_source(Source(text=changed), Settings(), rules)
    assert (linter.walked, linter.reused) == (1, 5)
    assert len(first) == len(lint_source(Source(text=DENSE), Settings(), rules)) > 0


# A helper whose `.detach()` decides a finding in its caller (also opened in the real server by test_server).
CALLER_AND_HELPER = (Path(__file__).parent / "sources" / "helper_and_caller.py").read_text(encoding="utf-8")


def test_a_change_in_a_helper_walks_its_callers_again_and_leaves_unrelated_functions():
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    before = linter.lint(Source(text=CALLER_AND_HELPER), Settings(), rules)
    assert [finding.start.line for finding in before] == [13]  # the helper detaches what `convert` converts
    changed = CALLER_AND_HELPER.replace("requires_grad=True).detach()", "requires_grad=True)")
    after = linter.lint(Source(text=changed), Settings(), rules)
    assert after == lint_source(Source(text=changed), Settings(), rules)
    assert [finding.start.line for finding in after] == [9, 13]
    assert (linter.walked, linter.reused) == (2, 1)


def test_a_line_added_above_a_function_moves_its_findings():
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    linter.lint(Source(text=CALLER_AND_HELPER), Settings(), rules)
    changed = CALLER_AND_HELPER.replace("def other", "# a comment\ndef other")
    after = linter.lint(Source(text=changed), Settings(), rules)
    assert [finding.start.line for finding in after] == [14]
    assert after == lint_source(Source(text=changed), Settings(), rules)


def test_a_syntax_error_while_typing_is_the_error_a_fresh_parse_reports_and_the_next_text_recovers():
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    linter.lint(Source(text=CALLER_AND_HELPER), Settings(), rules)
    broken = CALLER_AND_HELPER.replace(".detach()", ".detach(")
    incremental = outcome(lambda text: linter.lint(Source(text=text), Settings(), rules), broken)
    assert incremental == outcome(lambda text: lint_source(Source(text=text), Settings(), rules), broken)
    assert incremental[0] == "ParseError"
    assert linter.lint(Source(text=CALLER_AND_HELPER), Settings(), rules) == lint_source(Source(text=CALLER_AND_HELPER), Settings(), rules)


def test_a_line_added_above_a_group_moves_its_findings_and_the_lines_their_messages_name_without_walking_it():
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    text = CALLER_AND_HELPER.replace("requires_grad=True).detach()", "requires_grad=True)")
    before = linter.lint(Source(text=text), Settings(), rules)
    assert "on line 5)" in before[0].message
    moved = "# a comment on top\n" + text
    after = linter.lint(Source(text=moved), Settings(), rules)
    assert after == lint_source(Source(text=moved), Settings(), rules)
    assert "on line 6)" in after[0].message and after[0].start.line == before[0].start.line + 1
    assert (linter.walked, linter.reused) == (0, 3)


def test_statements_that_share_a_line_are_told_apart():
    # `net` is bound by the first statement of its line: `f` reads it, so `f` depends on `build`.
    text = "import torch\n\n\ndef build():\n    return torch.nn.Linear(2, 2)\n\n\nnet = build(); size = 3\n\n\ndef f(x):\n    return net(x).numpy()\n"
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    for version in (text, text + "\n", text.replace("return torch.nn.Linear(2, 2)", "return 3")):
        assert linter.lint(Source(text=version), Settings(), rules) == lint_source(Source(text=version), Settings(), rules)
    assert linter.walked == 2


def test_the_legacy_constructors_statement_maps_are_kept_for_the_next_version_only_by_the_linter():
    from flake8_tensorconv.rules._legacy_constructor import _KEPT_MAPS

    text = "import torch\n\n\ndef make():\n    return torch.FloatTensor(0.0)\n\n\ndef other():\n    return 1\n"
    linter = IncrementalLinter()
    rules = select_rules(Settings())
    assert [finding.code for finding in linter.lint(Source(text=text), Settings(), rules)] == ["TCV202"]
    first = dict(linter._kept[_KEPT_MAPS])
    changed = text.replace("    return torch", "    size = 2\n    return torch")
    assert linter.lint(Source(text=changed), Settings(), rules) == lint_source(Source(text=changed), Settings(), rules)
    assert (linter.walked, linter.reused) == (1, 1)
    second = linter._kept[_KEPT_MAPS]
    # The statements the edit did not touch keep their maps; the edited function has new ones.
    assert len(first) == len(second) == 3
    assert sum(second[key] is maps for key, maps in first.items() if key in second) == 2
