"""Lint successive versions of one document, analysing again only what an edit can change.

The language server lints a document after each pause in typing, and an edit usually
touches one function of a file. :class:`IncrementalLinter` keeps two things between versions:

- **The tree.** Only the top-level statements around the changed lines are parsed again,
  and only when they parse on their own (then the whole text parses to the same tree: the
  unchanged text before them ends where a top-level statement starts, and so does the text
  after them); the rest of the previous tree is kept, its lines shifted. Anything else
  (a syntax error, a change that may join statements) parses the whole text, as
  :func:`engine.parse` does.
- **The findings of each top-level function's and class's body**, under a key that holds
  everything those findings can depend on. A run walks every module-level statement,
  decorator and class base as a full run does, walks the bodies whose key is new, and takes
  the other bodies' findings from the previous run, in the walk's order; so the result is
  what :func:`engine.lint_source` reports for the text (tests/test_incremental.py checks
  that on random edit sequences).

What a body's findings depend on besides its own text, and so what its key holds:

- the file's imports (the aliases), the members and bases of its classes (rules ask whether
  any class of the file has its own ``.data`` or ``.numpy``), calls that switch a default
  for the whole file (``torch.set_default_dtype``), the settings and the rules: the file's
  key, which when it changes drops every kept body;
- the definitions and module-level statements it is linked to by a name, followed
  transitively: a name it mentions that another one defines (a call, whose result the
  inference summarises; a class, whose methods and ``__init__`` it reads; a module-level
  variable it reads), or a name it defines that another one mentions (a call of it, whose
  arguments its parameters hold). The key holds the text of every member of that group and
  their lines counted from the group's first one.

So a group that an edit moves (a line added above it) keeps its key, and its findings move
with it: their positions, and the lines their messages name, which the analysis writes
through :meth:`Source.describe_line` with a mark that is renumbered here.

A rule that reads a part of the file other than these (a new file-wide question) must add
it to :func:`_file_key`. And as the engine's own pruned walk does (functions without a
trigger are not walked), this relies on the inference's lazily made summaries not depending
on which function asks for them first: bodies taken from the previous run are not walked,
so the others may ask first.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import RuleSet, needs_parse, parse, prepare_walk, unique_findings, unsuppressed, walk_deeply
from flake8_tensorconv.findings import Edit, Finding, Position, Related
from flake8_tensorconv.source import Source

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_WORD = re.compile(r"[^\W\d]\w*")
# Calls that change a default for everything after them (torch.set_default_dtype, set_default_tensor_type, set_default_device).
_FILE_WIDE = re.compile(r"\bset_default_\w+")
# Around a line number in a message (`on line 12`), so that the number can follow a move of the
# finding's group. A control character: a text that holds one is analysed as it is, and nothing is reused.
_MARK = "\x1f"
_MARKED_LINE = re.compile(f"{_MARK}(\\d+){_MARK}")


class _Statement(NamedTuple):
    """What the keys need of one top-level statement; a function of its text alone (and of where in it the statement starts)."""

    words: frozenset[str]  # every identifier-like word of its text, comments and strings included
    defines: frozenset[str]  # the names of the functions and classes in it; for a module statement, every name it binds
    imports: tuple[str, ...]  # each import statement in it (ast.dump: no positions)
    classes: tuple[tuple, ...]  # each class in it: name, bases, decorators, members, attributes stored
    star: bool  # a star import: which names it binds depends on the whole file
    switches: tuple[str, ...]  # file-wide defaults it may switch (`set_default_dtype`)


class _Parsed(NamedTuple):
    lines: list[str]  # the normalized text's lines
    tree: ast.Module


class IncrementalLinter:
    """Findings for successive texts of one document, as :func:`engine.lint_source` gives them."""

    def __init__(self) -> None:
        self.forget()
        # How many bodies the last run walked and how many it took from the run before (for tests and the benchmark).
        self.walked = 0
        self.reused = 0

    def forget(self) -> None:
        """Drop what is kept from earlier texts: the next run analyses its text from scratch."""
        self._parsed: _Parsed | None = None
        self._statements: dict[tuple[str, int, int], _Statement] = {}
        self._file_key: tuple | None = None
        # (its group's key, its place in the group) -> the first line of the group then, and the findings its walk reported.
        self._bodies: dict[tuple, tuple[int, tuple[Finding, ...]]] = {}
        # Other files of the package that kept findings were drawn from (path -> content hash then).
        self._dependencies: dict[str, str] = {}
        # What the rules keep for the next version (Context.kept): their work on statements an edit did not touch.
        self._kept: dict[str, object] = {}

    def lint(self, source: Source, settings: Settings, rules: RuleSet, path: str | None = None) -> list[Finding]:
        """The findings of ``source``, sorted by position. Raises ParseError.

        ``path``: as for :func:`engine.lint_source`; a body's findings drawn from other files of the package are
        kept only while those files stay as they were."""
        self.walked = self.reused = 0
        if self._dependencies:
            from flake8_tensorconv.inference.package import dependency_digest

            if any(dependency_digest(key) != digest for key, digest in self._dependencies.items()):
                self._bodies, self._dependencies = {}, {}
        if not needs_parse(source.text, rules):
            return []
        tree = self._parse(source)
        from flake8_tensorconv.inference import analyze_file_facts

        facts = analyze_file_facts(tree, source.text)
        if not facts.imports_torch:
            return []
        lines = self._parsed.lines  # type: ignore[union-attr]
        spans = [(_first_line(statement, lines), statement.end_lineno or statement.lineno) for statement in tree.body]
        texts = ["\n".join(lines[first - 1 : last]) for first, last in spans]
        # Statements that share a line (`net = build(); size = 3`) share its text: where each starts tells them apart.
        where = [(text, statement.lineno - first, statement.col_offset) for statement, text, (first, _) in zip(tree.body, texts, spans)]
        known = self._statements
        statements = [known.get(place) or _describe(statement, place[0]) for statement, place in zip(tree.body, where)]
        self._statements = dict(zip(where, statements))  # what the next version may share with this one
        file_key = _file_key(statements, settings, rules)
        if file_key != self._file_key:
            self._file_key, self._bodies = file_key, {}
        units = [index for index, statement in enumerate(tree.body) if isinstance(statement, _DEFINITIONS)]
        marked = _MARK not in source.text
        if any(statement.star for statement in statements) or not marked:
            keys: dict[int, tuple[tuple, int]] = {}  # no body is kept: nothing is reused
        else:
            keys = _body_keys(units, spans, texts, statements)
        interpreter, context = prepare_walk(_MarkedSource(source) if marked else source, facts, rules, settings, path, self._kept)
        findings = context.findings
        walks_by_trigger = interpreter.walks
        unit_of = {id(tree.body[index]): index for index in units}
        current: list[object] = [None, 0, 0]  # the unit being walked, where its body's findings start and end
        kept = self._bodies
        bodies: dict[tuple, tuple[int, tuple[Finding, ...]]] = {}

        def walks(node: ast.AST) -> bool:
            if node is current[0]:
                current[1] = current[2] = len(findings)
                key = keys.get(unit_of[id(node)])
                if key is not None and key[0] in kept:
                    return False
            return walks_by_trigger is None or walks_by_trigger(node)

        listen = interpreter.listener

        def listener(node: ast.AST, state: object) -> None:
            if node is current[0]:
                current[2] = len(findings)  # the statement itself is notified after its body
            listen(node, state)  # type: ignore[misc]

        interpreter.walks = walks
        interpreter.listener = listener

        def walk() -> None:
            for index, statement in enumerate(tree.body):
                is_unit = isinstance(statement, _DEFINITIONS)
                current[0] = statement if is_unit else None
                current[1] = current[2] = len(findings)
                interpreter.walk_statement(statement)
                if not is_unit:
                    continue
                key, base = keys.get(index, (None, 0))
                start, end = current[1], current[2]
                if key is not None and key in kept:
                    then, body = kept[key]
                    if base != then:  # its group moved as a whole: so did what it reports
                        body = tuple(_moved(finding, base - then) for finding in body)
                    findings[start:start] = body  # type: ignore[index]
                    bodies[key] = (base, body)
                    self.reused += 1
                else:
                    if key is not None:
                        bodies[key] = (base, tuple(findings[start:end]))  # type: ignore[arg-type]
                    self.walked += 1

        walk_deeply(walk)
        self._bodies = bodies  # what this version has: an edit elsewhere reuses it
        self._dependencies.update(context.dependencies)
        findings = unique_findings(findings)
        return unsuppressed([_unmarked(finding) for finding in findings] if marked else findings, source)

    # ------------------------------------------------------------------ parsing
    def _parse(self, source: Source) -> ast.Module:
        lines = source.lines  # split at every line break, as the normalized text is at its \n
        tree = _reparse(self._parsed, lines) if self._parsed is not None else None
        if tree is None:
            # Raises ParseError for a text that does not parse (half-typed code): the last text
            # that did stays, and the next one, a few keys later, is compared with it.
            tree = parse(source)
        self._parsed = _Parsed(lines, tree)
        return tree


def _first_line(statement: ast.stmt, lines: list[str]) -> int:
    """The line a top-level statement starts on: for a decorated one, its first ``@``."""
    decorators = getattr(statement, "decorator_list", None)
    if not decorators:
        return statement.lineno  # a statement's position includes its opening brackets
    # A decorator's position is its expression's, which may start below its `@` (`@(` on a line of its own).
    line = decorators[0].lineno
    while line > 1 and not lines[line - 1].lstrip().startswith("@"):
        line -= 1
    return line


def _reparse(previous: _Parsed, lines: list[str]) -> ast.Module | None:
    """The tree of ``lines`` from the previous tree and a parse of the changed top-level statements; None: parse it all."""
    old = previous.lines
    if old == lines:
        return previous.tree
    if any("barry_as_FLUFL" in line for line in lines):
        return None  # a future import that changes how the rest of the file tokenizes
    limit = min(len(old), len(lines))
    prefix = 0
    while prefix < limit and old[prefix] == lines[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == lines[-1 - suffix]:
        suffix += 1
    first_changed, last_changed = prefix + 1, len(old) - suffix  # old lines; last < first: lines were only inserted
    body = previous.tree.body
    # Where a top-level statement starts a line of its own, the text before it ends cleanly:
    # no open bracket, string or block. The changed lines are parsed from such a line to the next.
    region_start, first_index = 1, 0
    region_end, end_index = len(old) + 1, len(body)
    previous_end = 0
    for index, statement in enumerate(body):
        first = _first_line(statement, old)
        if first > previous_end:
            if first <= first_changed:
                region_start, first_index = first, index
            elif first > last_changed:
                region_end, end_index = first, index
                break
        previous_end = statement.end_lineno or statement.lineno
    shift = len(lines) - len(old)
    end = region_end - 1 + shift
    region = "\n".join(lines[region_start - 1 : end]) + ("\n" if end < len(lines) else "")
    try:
        parsed = ast.parse(region)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # the whole text decides: it may be an error, or a statement that the next one continues
    if region_start > 1:
        for statement in parsed.body:
            _shift_lines(statement, region_start - 1)
    if shift:
        for statement in body[end_index:]:
            _shift_lines(statement, shift)
    return ast.Module(body=[*body[:first_index], *parsed.body, *body[end_index:]], type_ignores=[])


def _shift_lines(tree: ast.AST, lines: int) -> None:
    """``ast.increment_lineno`` without its generators: moving the statements after an inserted line
    was the largest part of a change once the findings of unchanged definitions are reused."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if "lineno" in node._attributes:
            node.lineno += lines  # type: ignore[attr-defined]
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += lines  # type: ignore[attr-defined]
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
            elif isinstance(value, ast.AST):
                stack.append(value)


def _describe(statement: ast.stmt, text: str) -> _Statement:
    is_unit = isinstance(statement, _DEFINITIONS)
    defines: set[str] = set()
    imports: list[str] = []
    classes: list[tuple] = []
    star = False
    for node in ast.walk(statement):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            imports.append(ast.dump(node))
            star = star or any(alias.name == "*" for alias in node.names)
        elif isinstance(node, _DEFINITIONS):
            defines.add(node.name)
            if isinstance(node, ast.ClassDef):
                classes.append(_class_outline(node))
                # Class attributes (`dtype = torch.float64` in a class body) are read through its instances.
                defines.update(target.id for target in _class_body_targets(node) if isinstance(target, ast.Name))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            defines.update(node.names)
        elif not is_unit and isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            defines.add(node.id)  # a module-level variable, which the functions after it start from
        elif not is_unit and isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            defines.add(node.name)
        elif not is_unit and isinstance(node, ast.MatchMapping) and node.rest:
            defines.add(node.rest)
        elif not is_unit and isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name):
                defines.add(root.id)  # `config.device = ...`: what the functions read as `config.device`
    return _Statement(
        words=frozenset(_WORD.findall(text)),
        defines=frozenset(defines),
        imports=tuple(imports),
        classes=tuple(classes),
        star=star,
        switches=tuple(sorted(set(_FILE_WIDE.findall(text)))),
    )


def _class_body_targets(cls: ast.ClassDef) -> list[ast.expr]:
    targets: list[ast.expr] = []
    for statement in cls.body:
        if isinstance(statement, ast.Assign):
            targets.extend(statement.targets)
        elif isinstance(statement, ast.AnnAssign):
            targets.append(statement.target)
    return targets


def _class_outline(cls: ast.ClassDef) -> tuple:
    """What the file-wide questions about classes read: name, bases, decorators, members, attributes stored anywhere in it."""
    methods = tuple(
        (statement.name, tuple(ast.dump(decorator) for decorator in statement.decorator_list))
        for statement in cls.body
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    stored = sorted({node.attr for node in ast.walk(cls) if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)})
    return (
        cls.name,
        tuple(ast.dump(base) for base in cls.bases),
        tuple(ast.dump(keyword) for keyword in cls.keywords),
        tuple(ast.dump(decorator) for decorator in cls.decorator_list),
        methods,
        tuple(ast.dump(target) for target in _class_body_targets(cls)),
        tuple(stored),
    )


def _file_key(statements: list[_Statement], settings: Settings, rules: RuleSet) -> tuple:
    return (
        settings,
        rules.codes,
        tuple(line for statement in statements for line in statement.imports),
        tuple(cls for statement in statements for cls in statement.classes),
        tuple(sorted({switch for statement in statements for switch in statement.switches})),
    )


def _body_keys(units: list[int], spans: list[tuple[int, int]], texts: list[str], statements: list[_Statement]) -> dict[int, tuple[tuple, int]]:
    """Top-level statement index of each definition -> the key of its body's findings, and the first line of its group."""
    count = len(statements)
    module = count  # one node for all module-level statements: they are walked in order, each from the one before
    unit_set = set(units)
    parent = list(range(count + 1))

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    definers: dict[str, list[int]] = {}
    module_words: set[str] = set()
    for index, statement in enumerate(statements):
        node = index if index in unit_set else module
        for name in statement.defines:
            definers.setdefault(name, []).append(node)
        if node == module:
            module_words |= statement.words
    defined = definers.keys()
    for index in units:
        for name in statements[index].words & defined:
            for other in definers[name]:
                parent[root(other)] = root(index)
    for name in module_words & defined:
        for other in definers[name]:
            parent[root(other)] = root(module)
    members: dict[int, list[int]] = {}
    for index in units:
        members.setdefault(root(index), []).append(index)
    module_root = root(module)
    module_statements = [index for index in range(count) if index not in unit_set]
    keys: dict[int, tuple[tuple, int]] = {}
    for group_root, group in members.items():
        with_module = group_root == module_root and bool(module_statements)
        # Lines count from the group's first one: a group that moves as a whole keeps its key.
        base = min(spans[index][0] for index in (group + module_statements if with_module else group))
        group_key = (
            tuple((spans[index][0] - base, texts[index]) for index in group),
            tuple((spans[index][0] - base, texts[index]) for index in module_statements) if with_module else None,
        )
        for index in group:
            keys[index] = ((group_key, spans[index][0] - base), base)
    return keys


class _MarkedSource(Source):
    """The document's source, naming lines in messages with a mark that a move of the finding's group can renumber."""

    def __init__(self, source: Source) -> None:
        super().__init__(source.text, source.encoding, source.has_bom)
        self.__dict__.update(source.__dict__)  # its lines and offsets, already worked out

    def describe_line(self, line: int) -> str:
        return f"line {_MARK}{line}{_MARK}"


def _moved(finding: Finding, lines: int) -> Finding:
    """``finding`` with its positions, evidence, edits and the lines its messages name moved down by ``lines``."""

    def move(position: Position) -> Position:
        return Position(position.line + lines, position.column)

    def renumber(text: str) -> str:
        return _MARKED_LINE.sub(lambda match: f"{_MARK}{int(match.group(1)) + lines}{_MARK}", text) if _MARK in text else text

    fix = finding.fix
    if fix is not None:
        edits = tuple(Edit(move(edit.start), move(edit.end), edit.content) for edit in fix.edits)
        fix = fix._replace(message=renumber(fix.message), edits=edits)
    related = tuple(
        item._replace(message=renumber(item.message)) if item.path else Related(move(item.start), move(item.end), renumber(item.message))
        for item in finding.related
    )
    return finding._replace(message=renumber(finding.message), start=move(finding.start), end=move(finding.end), fix=fix, related=related)


def _unmarked(finding: Finding) -> Finding:
    """The finding as the engine words it: ``line 12``."""
    if _MARK not in finding.message and not finding.related and (finding.fix is None or _MARK not in finding.fix.message):
        return finding
    fix = finding.fix and finding.fix._replace(message=finding.fix.message.replace(_MARK, ""))
    related = tuple(item._replace(message=item.message.replace(_MARK, "")) for item in finding.related)
    return finding._replace(message=finding.message.replace(_MARK, ""), fix=fix, related=related)
