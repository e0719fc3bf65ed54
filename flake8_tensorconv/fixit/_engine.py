"""What every generated Fixit rule does: run the engine on the module, map its findings to CST nodes.

No ``LintRule`` subclass lives here: Fixit collects every one it finds in the modules of
an enabled package, and this module only holds the shared machinery.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cached_property, lru_cache
from typing import ClassVar

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, PositionProvider

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import ParseError, apply_edits, lint_source, rule_set
from flake8_tensorconv.findings import Applicability, Edit, Finding, Position
from flake8_tensorconv.rules import ALL_RULES
from flake8_tensorconv.rules.base import Rule
from flake8_tensorconv.source import Source

DEFAULT_CODES = frozenset(rule.code for rule in ALL_RULES if rule.default_enabled and rule.triggers)


@lru_cache(maxsize=8)
def findings_of(text: str, codes: frozenset[str]) -> tuple[Finding, ...]:
    """One engine run per module and set of codes, shared by the rules that ask for it."""
    try:
        return tuple(lint_source(Source(text=text), Settings(select=tuple(sorted(codes))), rule_set(codes)))
    except ParseError:  # libcst parsed it: only the analysis' own limits (nesting depth) get here
        return ()


class EngineVisitor:
    """Mixed into each generated ``LintRule``: reports the findings of ``CODE`` on a module.

    The default rules run the engine together (one analysis per file, and a strict rule
    stays quiet where its default twin reports, as in the CLI); an opt-in rule adds its
    code to them.
    """

    CODE: ClassVar[str]
    CODES: ClassVar[frozenset[str]]

    def visit_Module(self, node: cst.Module) -> None:
        findings = [finding for finding in findings_of(node.code, self.CODES) if finding.code == self.CODE]
        if not findings:
            return
        source = Source(text=node.code)
        nodes = list(_replaceable(node, self.get_metadata))  # type: ignore[attr-defined]
        for finding in findings:
            target, replacement = _target(nodes, source, finding)
            self.report(  # type: ignore[attr-defined]
                target or node,
                f"{finding.code} {finding.message}",
                position=CodeRange(CodePosition(*finding.start), CodePosition(*finding.end)),
                replacement=replacement,
            )


def _target(
    nodes: Sequence[tuple[cst.CSTNode, CodeRange]], source: Source, finding: Finding
) -> tuple[cst.CSTNode | None, cst.CSTNode | None]:
    """The node to report, and its replacement: the smallest node that holds the safe fix's
    edits and whose edited text parses; without one, the smallest that holds the finding."""
    fix = finding.fix
    if fix is not None and fix.applicability is Applicability.SAFE:
        # Inner nodes come later in the walk.
        for node, code_range in reversed(nodes):
            if all(_contains(code_range, edit.start, edit.end) for edit in fix.edits):
                replacement = _replacement(source, node, code_range, fix.edits)
                if replacement is not None:
                    return node, replacement
    holders = [node for node, code_range in nodes if _contains(code_range, finding.start, finding.end)]
    return (holders[-1] if holders else None), None


def _replaceable(module: cst.Module, get_metadata) -> Iterator[tuple[cst.CSTNode, CodeRange]]:  # noqa: ANN001
    """Expressions and statements that a parsed snippet may replace, with their ranges, outer before inner.

    Names that are not expressions of their own (an attribute's name, a keyword, a def's
    name, what an import binds) are left out: a call put in their place would not be Python.
    """
    stack: list[cst.CSTNode] = [module]
    not_expressions: set[int] = set()
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(node, cst.Attribute):
            not_expressions.add(id(node.attr))
        elif isinstance(node, cst.Arg) and node.keyword is not None:
            not_expressions.add(id(node.keyword))
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            not_expressions.add(id(node.name))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)) or (
            isinstance(node, cst.BaseExpression) and id(node) not in not_expressions
        ):
            yield node, get_metadata(PositionProvider, node)
        stack.extend(reversed(node.children))


def _contains(code_range: CodeRange, start: Position, end: Position) -> bool:
    """Whether an edit from ``start`` to ``end`` falls inside the node; text inserted right before
    a node belongs to its parent (``a.`` + ``detach().`` + ``cpu()`` is not a change of ``cpu``)."""
    node_start = (code_range.start.line, code_range.start.column)
    node_end = (code_range.end.line, code_range.end.column)
    if start == end:
        return node_start < start <= node_end or node_start == start == node_end
    return node_start <= start and end <= node_end


def _replacement(source: Source, node: cst.CSTNode, code_range: CodeRange, edits: Sequence[Edit]) -> cst.CSTNode | None:
    """``node`` with the fix's text edits applied, parsed back with libcst (None if it does not parse)."""
    start = source.offset(Position(code_range.start.line, code_range.start.column))
    end = source.offset(Position(code_range.end.line, code_range.end.column))
    text = source.text[start:end]
    for edit in sorted(edits, key=lambda edit: edit.start, reverse=True):
        edit_start, edit_end = source.offset(edit.start) - start, source.offset(edit.end) - start
        text = text[:edit_start] + edit.content.replace("\n", source.newline) + text[edit_end:]
    try:
        if isinstance(node, cst.BaseExpression):
            # A node's range leaves out its own parentheses; parsing inside a pair allows line breaks.
            parsed = cst.parse_expression(f"({text})")
            return parsed.with_changes(lpar=node.lpar, rpar=node.rpar) if hasattr(parsed, "lpar") else parsed
        if isinstance(node, cst.SimpleStatementLine):
            parsed_line = cst.parse_statement(text + source.newline)
            return parsed_line.with_changes(leading_lines=node.leading_lines, trailing_whitespace=node.trailing_whitespace)
        if isinstance(node, cst.BaseCompoundStatement):
            # Its first line starts at its indentation; the lines after it carry that indentation too.
            indentation = code_range.start.column
            lines = text.split(source.newline)
            if any(line[:indentation].strip() for line in lines[1:]):
                return None
            dedented = source.newline.join([lines[0], *(line[indentation:] for line in lines[1:])])
            return cst.parse_statement(dedented + source.newline).with_changes(leading_lines=node.leading_lines)
    except cst.ParserSyntaxError:
        return None
    return None


def class_name(rule: type[Rule]) -> str:
    """``numpy-requires-grad`` -> ``NumpyRequiresGrad``: the name Fixit shows and ``lint-ignore`` takes."""
    return "".join(part.capitalize() for part in rule.name.split("-"))


def lint_rules(opt_in: bool, module: str) -> dict[str, type]:
    """One Fixit ``LintRule`` per engine rule with triggers (default-on or opt-in ones), for ``module``."""
    from fixit import LintRule

    rules = {}
    for rule in ALL_RULES:
        if not rule.triggers or rule.default_enabled == opt_in:
            continue
        name = class_name(rule)
        generated = type(
            name,
            (EngineVisitor, LintRule),
            {
                "__module__": module,
                "__doc__": rule.documentation(),
                "CODE": rule.code,
                "CODES": DEFAULT_CODES | {rule.code},
                "MESSAGE": rule.summary(),
                "TAGS": {"tensorconv", rule.code},
                # Replacements are made from safe fixes only: `fixit fix --automatic` has no --unsafe-fixes.
                "AUTOFIX": rule.fix_safety in ("safe", "sometimes"),
            },
        )
        # Set after the class exists: LintRule.__init_subclass__ reads INVALID, which would load
        # every fixture (and lint them) each time `fixit lint` imports the rules.
        generated.VALID = FixtureCases(rule.code, valid=True)
        generated.INVALID = FixtureCases(rule.code, valid=False)
        rules[name] = generated
    return rules


class FixtureCases(Sequence):
    """A rule's VALID or INVALID cases, made from its fixtures when Fixit's test harness asks.

    Negatives are VALID. Positives are INVALID; their ``expected_replacement`` is the
    ``.fixed.py`` beside them where the engine's safe fixes of this rule alone, applied
    once, make exactly that file (Fixit applies one pass of one rule's replacements).
    """

    def __init__(self, code: str, valid: bool) -> None:
        self.code = code
        self.valid = valid

    @cached_property
    def cases(self) -> list:
        from fixit import Invalid, Valid

        from flake8_tensorconv.examples import fixtures_for

        fixtures = [fixture for fixture in fixtures_for(self.code) if fixture.is_negative == self.valid]
        if self.valid:
            return [Valid(fixture.source) for fixture in fixtures]
        return [Invalid(fixture.source, expected_replacement=self._expected(fixture.source, fixture.fixed_source)) for fixture in fixtures]

    def _expected(self, text: str, fixed: str | None) -> str | None:
        if fixed is None:
            return None
        codes = DEFAULT_CODES | {self.code}
        safe = [f for f in findings_of(text, codes) if f.code == self.code and f.fix is not None and f.fix.applicability is Applicability.SAFE]
        once, _ = apply_edits(Source(text=text), safe)
        return fixed if safe and once == fixed else None

    def __getitem__(self, index):  # noqa: ANN001, ANN204 (Sequence's signature)
        return self.cases[index]

    def __len__(self) -> int:
        return len(self.cases)
