"""read -> prefilter -> parse -> infer -> rules -> findings -> fixes.

Every face (flake8 plugin, CLI, LSP) calls :func:`lint_source` or
:func:`fix_source`; nothing here prints or exits.
"""

from __future__ import annotations

import ast
import gc
import re
import sys
from bisect import bisect_left
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv.config import Settings
from flake8_tensorconv.findings import Applicability, Edit, Finding, Position
from flake8_tensorconv.prefilter import Triggers
from flake8_tensorconv.rules import ALL_RULES
from flake8_tensorconv.rules.base import Context, Rule
from flake8_tensorconv.source import Source, SourceError

if TYPE_CHECKING:
    from flake8_tensorconv.inference import FileFacts, Interpreter

MAX_FIX_PASSES = 10
ANALYSIS_RECURSION_LIMIT = 20_000
NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


class ParseError(SourceError):
    """The file is not valid Python."""


class RuleSet(NamedTuple):
    """The enabled rules, and their triggers that decide what is parsed and walked."""

    rules: tuple[type[Rule], ...]
    triggers: Triggers | None  # None: no rule has a trigger, nothing is parsed

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(rule.code for rule in self.rules)


@lru_cache(maxsize=64)
def rule_set(codes: frozenset[str]) -> RuleSet:
    rules = tuple(rule for rule in ALL_RULES if rule.code in codes)
    tokens = [token for rule in rules for token in rule.triggers]
    # A token counts at a call of literal numbers only if a rule that listens to it may report there.
    literal_silent = frozenset(tokens) - {token for rule in rules if not rule.silent_on_literal_data for token in rule.triggers}
    return RuleSet(rules=rules, triggers=Triggers(tokens, literal_silent) if tokens else None)


# A statement that imports torch or a torch submodule, or a star import (which may re-export
# torch). Good enough for a prefilter: the analysis reads the imports from the tree.
_IMPORTS_TORCH = re.compile(r"\b(?:from|import)\b(?:[^\n\\;]|\\[\s\S])*?(?:\btorch\b|\*)")


def select_rules(settings: Settings, path: str = "") -> RuleSet:
    codes = _enabled_codes(settings)
    ignored = settings.ignored_for(path) if path else ()
    if ignored:
        codes = frozenset(code for code in codes if not any(code.startswith(prefix) for prefix in ignored))
    return rule_set(codes)


@lru_cache(maxsize=64)
def _enabled_codes(settings: Settings) -> frozenset[str]:
    # Asked for every file of a run, always with the same settings.
    return settings.enabled_codes((rule.code, rule.default_enabled) for rule in ALL_RULES)


def needs_parse(text: str, rules: RuleSet) -> bool:
    """Whether the file writes a trigger and imports torch; most files stop here, unparsed."""
    # `in` runs at memchr speed: files that never say torch are dropped before any regex runs.
    return (
        rules.triggers is not None
        and "torch" in text
        and rules.triggers.in_file(text)
        and _IMPORTS_TORCH.search(text) is not None
    )


def parse(source: Source) -> ast.Module:
    try:
        return ast.parse(source.normalized)
    except SyntaxError as error:
        line = error.lineno or 1
        column = max((error.offset or 1) - 1, 0)
        raise ParseError(f"cannot parse: {error.msg}", Position(line, column)) from None
    except (ValueError, RecursionError, MemoryError) as error:
        raise ParseError(f"cannot parse: {error}") from None


def lint_source(
    source: Source,
    settings: Settings,
    rules: RuleSet | None = None,
    tree: ast.Module | None = None,
    honour_noqa: bool = True,
    prefiltered: bool = False,
    path: str | None = None,
    dependencies: dict[str, str] | None = None,
) -> list[Finding]:
    """Findings for one file's text, sorted by position. Raises ParseError.

    ``prefiltered``: the caller has seen :func:`needs_parse` say yes for this text.
    ``path``: the file on disk the text is, whose package a rule may ask about a would-be finding;
    ``dependencies`` is then filled with the other files read (path -> content hash).
    """
    rules = rules or select_rules(settings)
    if not prefiltered and not needs_parse(source.text, rules):
        return []
    if tree is None:
        tree = parse(source)
    findings = run_rules(source, tree, rules, settings, path, dependencies)
    return unsuppressed(findings, source) if honour_noqa else findings


def unsuppressed(findings: Sequence[Finding], source: Source) -> list[Finding]:
    """The findings that no ``# noqa`` on their line silences."""
    return [finding for finding in findings if not _suppressed(finding, source)]


def run_rules(
    source: Source, tree: ast.Module, rules: RuleSet, settings: Settings, path: str | None = None, dependencies: dict[str, str] | None = None
) -> list[Finding]:
    # Imported here so that files the prefilter drops never pay for the interpreter.
    from flake8_tensorconv.inference import analyze_file_facts

    # The analysis makes many short-lived objects and a few reference cycles: with the cyclic collector
    # running, every 700 allocations (10,000 under the command line) started a collection, some of them of
    # everything the process holds (flake8's, in the plugin). Paused for the file, it runs once after it, which
    # frees the file's cycles; a host that paused it keeps it paused. 15% of a check of torch/nn in-process.
    collecting = gc.isenabled()
    gc.disable()
    try:
        facts = analyze_file_facts(tree, source.text)
        if not facts.imports_torch:
            return []
        interpreter, context = prepare_walk(source, facts, rules, settings, path)
        walk_deeply(interpreter.walk_module)
        if dependencies is not None:
            dependencies.update(context.dependencies)
        return unique_findings(context.findings)
    finally:
        if collecting:
            gc.enable()


def prepare_walk(
    source: Source, facts: FileFacts, rules: RuleSet, settings: Settings, path: str | None = None, kept: dict[str, object] | None = None
) -> tuple[Interpreter, Context]:
    """The interpreter that walks the file, with the enabled rules listening; the context collects their findings.

    ``kept``: what the rules may keep for the next version of the same document (see ``Context.kept``)."""
    from flake8_tensorconv.inference import Interpreter

    handlers: dict[type, list] = {}
    for rule in rules.rules:
        instance = rule(settings)
        for node_type in _visited_node_types(rule):
            handlers.setdefault(getattr(ast, node_type), []).append(getattr(instance, f"visit_{node_type}"))
    interpreter = Interpreter(facts, listener=None, walks=_scopes_to_walk(source, facts.aliases, rules))
    context = Context(source, facts, interpreter, settings, rules.codes, path, kept)
    # Called after every node the walk evaluates: most have no handler, and a call has about twenty.
    handlers_of = handlers.get

    def listener(node: ast.AST, state: object) -> None:
        found = handlers_of(type(node))
        if found:
            context.state = state  # type: ignore[assignment]
            for handler in found:
                handler(node, context)

    interpreter.listener = listener
    return interpreter, context


def walk_deeply(walk: Callable[[], None]) -> None:
    """Run a walk of the interpreter; a file nested too deeply for it raises ParseError, not RecursionError."""
    # Each nesting level of an expression costs a few Python frames in the interpreter.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, ANALYSIS_RECURSION_LIMIT))
    try:
        walk()
    except RecursionError:
        raise ParseError("too deeply nested to analyse") from None
    finally:
        sys.setrecursionlimit(limit)


def unique_findings(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per code and range (the last one reported), sorted by position."""
    unique = {(f.code, f.start, f.end): f for f in findings}
    return sorted(unique.values(), key=lambda finding: finding.sort_key)


@cache
def _visited_node_types(rule: type[Rule]) -> tuple[str, ...]:
    # dir() sorts every attribute name of the class: once per rule, not once per rule and file.
    return tuple(attribute[len("visit_") :] for attribute in dir(rule) if attribute.startswith("visit_"))


def _scopes_to_walk(source: Source, aliases: dict[str, str], rules: RuleSet) -> Callable[[ast.AST], bool] | None:
    """Whether a function or class has a trigger written in it; the others are not walked.

    Rules report only where one of their triggers is written (a file without any is not
    even parsed), so walking what holds none cannot find anything. Module-level statements
    are always walked: functions start from the module's names. A trigger in the scope's
    own docstring (`Returns torch.tensor(...)`) is text, not code: it does not count.
    """
    if rules.triggers is None:
        return None
    trigger_lines = rules.triggers.lines(source.normalized, aliases)

    def walks(node: ast.AST) -> bool:
        first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        index = bisect_left(trigger_lines, first)
        if index == len(trigger_lines) or trigger_lines[index] > last:
            return False
        docstring = _docstring_lines(node, source)
        if docstring is not None:
            while index < len(trigger_lines) and docstring[0] <= trigger_lines[index] <= docstring[1]:
                index += 1
        return index < len(trigger_lines) and trigger_lines[index] <= last

    return walks


def _docstring_lines(node: ast.AST, source: Source) -> tuple[int, int] | None:
    """The lines of the docstring of a function or class, when nothing else is written on them."""
    body = getattr(node, "body", None)
    if not body:
        return None
    docstring = body[0]
    if not (isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant) and isinstance(docstring.value.value, str)):
        return None
    # Columns count UTF-8 bytes; what may stand around the docstring (spaces, a comment) is
    # ASCII, so anything else makes the line count as code.
    if source.line(docstring.lineno)[: docstring.col_offset].strip():
        return None
    after = source.line(docstring.end_lineno).encode("utf-8")[docstring.end_col_offset :].strip()  # type: ignore[arg-type]
    if after and not after.startswith(b"#"):
        return None
    return docstring.lineno, docstring.end_lineno  # type: ignore[return-value]


def _suppressed(finding: Finding, source: Source) -> bool:
    # Every noqa on the line counts: the first one may stand in a string literal before the comment.
    for match in NOQA.finditer(source.line(finding.start.line)):
        codes = match.group("codes")
        if not codes or any(finding.code.startswith(code.upper()) for code in re.split(r"[,\s]+", codes.strip())):
            return True
    return False


# --------------------------------------------------------------------- fixes
class FixResult:
    def __init__(self, text: str) -> None:
        self.text = text
        self.applied: list[Finding] = []
        # Fixes whose result did not parse: never written.
        self.dropped: list[Finding] = []
        self.remaining: list[Finding] = []

    @property
    def changed(self) -> bool:
        return bool(self.applied)


def fixable(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (unsafe or finding.fix.applicability is Applicability.SAFE)


def apply_edits(source: Source, findings: Sequence[Finding]) -> tuple[str, list[Finding]]:
    """Apply non-overlapping fixes (first come first served); returns text and the applied findings."""
    accepted: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    for finding in findings:
        assert finding.fix is not None
        spans = [(source.offset(e.start), source.offset(e.end), e.content) for e in finding.fix.edits]
        if all(span in accepted for span in spans):
            applied.append(finding)  # the same edit as a fix already taken (e.g. TCV101 + TCV102)
            continue
        if any(_overlaps(span, other) for span in spans for other in accepted if span != other):
            continue
        accepted.extend(span for span in spans if span not in accepted)
        applied.append(finding)
    text = source.text
    for start, end, content in sorted(accepted, key=lambda span: (span[0], span[1]), reverse=True):
        text = text[:start] + _with_newline(content, source.newline) + text[end:]
    return text, applied


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    if a[0] == b[0]:
        return True  # two edits at one point: the result would depend on their order
    return a[0] < b[1] and b[0] < a[1]


def _with_newline(content: str, newline: str) -> str:
    return content.replace("\n", newline) if newline != "\n" else content


def fix_source(
    source: Source,
    settings: Settings,
    unsafe: bool = False,
    rules: RuleSet | None = None,
    path: str | None = None,
    dependencies: dict[str, str] | None = None,
) -> FixResult:
    """Apply fixes until none is left (at most MAX_FIX_PASSES passes). Raises ParseError.

    ``path`` and ``dependencies``: as for :func:`lint_source`."""
    rules = rules or select_rules(settings)
    result = FixResult(text=source.text)
    current = source
    dropped_keys: set[tuple[str, Position]] = set()
    for _ in range(MAX_FIX_PASSES):
        findings = lint_source(current, settings, rules, path=path, dependencies=dependencies)
        candidates = [f for f in findings if fixable(f, unsafe) and (f.code, f.start) not in dropped_keys]
        if not candidates:
            break
        text, applied = apply_edits(current, candidates)
        if not _parses(text):
            # Find the culprits one at a time; keep the fixes that are fine on their own.
            good = []
            for finding in applied:
                single, _ = apply_edits(current, [finding])
                if _parses(single):
                    good.append(finding)
                else:
                    dropped_keys.add((finding.code, finding.start))
                    result.dropped.append(finding)
            text, applied = apply_edits(current, good)
            if not applied or not _parses(text):
                break
        result.applied.extend(applied)
        current = Source(text=text, encoding=source.encoding, has_bom=source.has_bom)
    result.text = current.text
    result.remaining = lint_source(current, settings, rules, path=path, dependencies=dependencies)
    return result


def _parses(text: str) -> bool:
    try:
        ast.parse(re.sub(r"\r\n?", "\n", text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


__all__ = [
    "Edit",
    "FixResult",
    "ParseError",
    "RuleSet",
    "fix_source",
    "lint_source",
    "needs_parse",
    "parse",
    "rule_set",
    "select_rules",
]
