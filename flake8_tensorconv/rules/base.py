"""The contract every rule module fulfils, and what a rule sees while it runs."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, ClassVar

from flake8_tensorconv.findings import Applicability, Edit, Finding, Fix, Position, Related
from flake8_tensorconv.values import Origin, Value

if TYPE_CHECKING:
    from collections.abc import Callable

    from flake8_tensorconv.config import Settings
    from flake8_tensorconv.inference import FileFacts, Interpreter, State
    from flake8_tensorconv.inference.bindings import Scope
    from flake8_tensorconv.inference.package import PackageOracle
    from flake8_tensorconv.source import Source


class Rule:
    """One pitfall. Subclasses define ``visit_<AstNodeType>(node, ctx)`` methods.

    The docstring is the rule's documentation, with the sections
    ``What it does`` / ``Why is this bad?`` / ``Example`` / ``Use instead`` /
    ``Fix safety``; ``tensorconv rule`` prints it.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    # What must be written where the rule reports: text (`.numpy(`, `Tensor(`; identifiers match
    # whole) or a qualified call (`numpy.sum(`: `np.sum(`, or `sum(` imported from numpy). Files
    # without any are not parsed, and functions and classes without any are not walked.
    triggers: ClassVar[tuple[str, ...]]
    # True when the rule cannot report at a call of its qualified triggers whose arguments are
    # only literal numbers (`torch.tensor([0.5, 1.0])`, `np.sum([1, 2])`): such a call is no
    # trigger for it, unless an attribute or an index follows the call (`torch.tensor(1.0).double()`).
    silent_on_literal_data: ClassVar[bool] = False
    default_enabled: ClassVar[bool] = True
    # "safe", "unsafe", "sometimes" (depends on evidence) or "none".
    fix_safety: ClassVar[str] = "none"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @classmethod
    def documentation(cls) -> str:
        import textwrap

        return textwrap.dedent(cls.__doc__ or "").strip()

    @classmethod
    def sections(cls) -> dict[str, str]:
        """The docstring's ``## Heading`` sections, by heading."""
        sections: dict[str, str] = {}
        heading = None
        for line in cls.documentation().splitlines():
            if line.startswith("## "):
                heading = line[3:].strip()
                sections[heading] = ""
            elif heading is not None:
                sections[heading] += line + "\n"
        return {key: value.strip() for key, value in sections.items()}

    @classmethod
    def summary(cls) -> str:
        """The first sentence of "What it does", on one line."""
        text = " ".join(cls.sections().get("What it does", cls.name).split())
        return text.split(". ")[0].rstrip(".") + "."


class Context:
    """What a rule may ask about the node it visits."""

    def __init__(
        self,
        source: Source,
        facts: FileFacts,
        interpreter: Interpreter,
        settings: Settings,
        enabled_codes: frozenset[str] = frozenset(),
        path: str | None = None,
        kept: dict[str, object] | None = None,
    ) -> None:
        self.source = source
        self.facts = facts
        self.interpreter = interpreter
        self.settings = settings
        # The codes running on this file: a strict rule stays quiet where its default twin reports.
        self.enabled_codes = enabled_codes
        self.state: State = interpreter.state
        self.findings: list[Finding] = []
        # The interpreter's index of the file's scopes: a scope it indexed for its own questions is not indexed again.
        self._scopes = facts.scopes
        # The file on disk whose package ``elsewhere`` may read (None: stdin, a notebook), and the files it read
        # (path -> content hash): a result cache keeps the findings only while those stay the same.
        self.path = path
        self.dependencies: dict[str, str] = {}
        self._elsewhere: dict[int, tuple[dict[int, Value], dict[int, bool]] | None] = {}
        self._oracle: PackageOracle | None | bool = False  # False: not made yet
        # What several rules share of this file (built by the first that asks); it goes with the context.
        self.shared: dict[str, object] = {}
        # What a host that analyses successive versions of one document keeps between them (the incremental
        # linter: a rule may reuse its work on the statements an edit did not touch). Anything else gives a new
        # dict per file, so that nothing of a file outlives its analysis: a process that lints many files (flake8)
        # would otherwise carry a whole tree through each of its garbage collections until the next file.
        self.kept: dict[str, object] = {} if kept is None else kept

    # -------------------------------------------------------------- knowledge
    def value(self, node: ast.expr) -> Value:
        return self.interpreter.value_of(node)

    @property
    def grad_enabled(self) -> bool:
        return self.state.grad_enabled

    def qualname(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name) and node.id in self.state.env:
            return None
        return self.facts.qualname(node)

    @property
    def scope(self) -> Scope:
        """The bindings / def-use index of the function (or module) being walked."""
        return self._scopes.of(self.state.function or self.facts.tree)

    def scope_of(self, function: ast.AST) -> Scope:
        """The bindings / def-use index of another function of the file."""
        return self._scopes.of(function)

    def used_after(self, name: str, node: ast.AST) -> bool:
        """Whether ``name`` is read after ``node`` in the enclosing function."""
        return self.scope.read_after(name, node)

    def elsewhere(self, node: ast.expr) -> tuple[Value, bool] | None:
        """What ``node`` holds, and the grad mode there, when the function being walked runs as the other modules
        of the package call it and with what the package's functions and classes it calls return; None where the
        file alone decides (or the package says nothing).

        Asked only by a rule about to report a finding that the file cannot settle: the package is read then, never
        while the file is walked (inference/package.py)."""
        function, class_name = self.state.function, self.state.class_name
        if self.path is None or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            return None
        key = id(function)
        if key not in self._elsewhere:
            self._elsewhere[key] = self._walk_as_called(function, class_name)
        walked = self._elsewhere[key]
        if walked is None or id(node) not in walked[0]:
            return None
        values, modes = walked
        return values[id(node)], modes.get(id(node), True)

    def passed_by_package(self, name: str, files: int | None = None) -> Value | None:
        """What every call the package makes of the function being walked passes for its parameter ``name`` (joined), as
        its calling files show it without their own callers; None where the package has no answer (nobody calls it, a
        name passed as a value...), or where more than ``files`` other files of the package write its name (a library's
        helper used everywhere: reading them all costs more than such a site is worth). A cheap first question before
        ``elsewhere``: it walks the calling files only."""
        function, class_name = self.state.function, self.state.class_name
        if self.path is None or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        tree = self.facts.tree
        owner = next((c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == class_name), None) if class_name else None
        if function not in (owner.body if owner is not None else tree.body):
            return None
        oracle = self.package_oracle()
        if oracle is None or files is not None and oracle.files_writing(function.name) > files:
            return None
        answer = oracle.callers(function, class_name, depth=1)
        self.dependencies.update(answer.dependencies)
        self.dependencies.update(oracle.read)
        return None if answer.summary is None else answer.summary.arguments.get(name)

    def as_called(self) -> AsCalled:
        """This context with what ``elsewhere`` knows for ``value``: the file's values where the package's callers
        decide them (unknown where it says nothing). For a rule whose trigger the file alone leaves unknown."""
        return AsCalled(self)

    def where(self, origin: Origin) -> str:
        """How a message names the line of a step: ``line 12``, or ``line 30 of train.py`` in another module."""
        if origin.path is None:
            return self.source.describe_line(origin.line)
        import os

        here = os.path.dirname(os.path.abspath(self.path or "."))
        return f"line {origin.line} of {os.path.relpath(origin.path, here).replace(os.sep, '/')}"

    def related(self, origin: Origin, message: str) -> Related:
        """The step ``origin`` as a finding's related location (in another module where it is there)."""
        if origin.path is not None:
            # Another file's columns: its text is not at hand, and ast's byte columns are what SARIF's tools show.
            return Related(Position(origin.line, origin.column), Position(origin.end_line, origin.end_column), message, origin.path)
        return Related(self.position(origin.line, origin.column), self.position(origin.end_line, origin.end_column), message)

    def package_oracle(self) -> PackageOracle | None:
        from flake8_tensorconv.inference import analyze_file_facts
        from flake8_tensorconv.inference.package import oracle_for

        if self._oracle is False:
            tree = self.facts.tree
            # The same tree (node ids are the same), with caches of its own: the walk rules listen to is untouched.
            self._oracle = oracle_for(self.path, lambda: analyze_file_facts(tree, self.facts.text))
        return self._oracle  # type: ignore[return-value]

    def _walk_as_called(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Module, class_name: str | None
    ) -> tuple[dict[int, Value], dict[int, bool]] | None:
        """The function walked once more: with what the package's callers pass and their grad mode where they are all
        in sight (a module-level function, or a method of a module-level class), and with what the calls it makes into
        the package's other modules return. None where neither is known."""
        tree = self.facts.tree
        owner = next((c for c in tree.body if isinstance(c, ast.ClassDef) and c.name == class_name), None) if class_name else None
        top_level = function is not tree and function in (owner.body if owner is not None else tree.body)
        holding = None if function is tree else next(
            (s for s in tree.body if s.lineno <= function.lineno <= (s.end_lineno or s.lineno)), None  # type: ignore[union-attr]
        )
        if function is not tree and holding is None:
            return None
        oracle = self.package_oracle()
        if oracle is None:
            return None
        from flake8_tensorconv.engine import walk_deeply
        from flake8_tensorconv.inference import Interpreter, State

        summary = None
        if top_level:
            answer = oracle.callers(function, class_name)  # type: ignore[arg-type]
            self.dependencies.update(answer.dependencies)
            summary = answer.summary
        if summary is None and not oracle.calls_into_package(holding or tree):
            return None
        facts = oracle.own_facts
        modes: dict[int, bool] = {}

        def listener(node: ast.AST, state: State) -> None:
            modes[id(node)] = modes.get(id(node), False) or state.grad_enabled

        if summary is not None:
            facts.caller_summaries[id(function)] = summary
            if class_name is not None:
                facts.classes_used_in_file[class_name] = True  # the package's calls are the method's calls
            interpreter = Interpreter(facts, listener=listener)
            env = {} if class_name is not None else dict(interpreter._module_names())
            interpreter.state = State(env=env, grad_enabled=summary.grad_enabled, function=owner or function, class_name=class_name)
            walk: Callable[[], None] = lambda: interpreter.walk_function(function, class_name)  # type: ignore[arg-type]  # noqa: E731
        else:
            # As the file runs it (its callers, its grad modes), only the statement that holds the function walked.
            span = (holding.lineno, holding.end_lineno or holding.lineno) if holding is not None else None
            interpreter = Interpreter(
                facts, listener=listener, walks=lambda node: span is not None and span[0] <= node.lineno <= span[1]  # type: ignore[attr-defined]
            )
            walk = interpreter.walk_module
        try:
            walk_deeply(walk)
        except Exception:  # noqa: BLE001 - a walk that fails gives no evidence; the finding stands
            return None
        finally:
            self.dependencies.update(oracle.read)
        return interpreter.values, modes

    # -------------------------------------------------------------- positions and text
    def start(self, node: ast.AST) -> Position:
        return self.position(node.lineno, node.col_offset)  # type: ignore[attr-defined]

    def end(self, node: ast.AST) -> Position:
        return self.position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]

    def position(self, line: int, byte_column: int) -> Position:
        """ast columns count UTF-8 bytes; findings and edits count characters."""
        text = self.source.line(line)
        if text.isascii():
            return Position(line, byte_column)
        return Position(line, len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore")))

    def text(self, node: ast.AST) -> str:
        start, end = self.start(node), self.end(node)
        return self.source.text[self.source.offset(start) : self.source.offset(end)]

    def attribute_name_start(self, node: ast.Attribute) -> Position:
        """Where the attribute's name begins (``numpy`` in ``x . numpy``)."""
        end = self.end(node)
        return Position(end.line, end.column - len(node.attr))

    # -------------------------------------------------------------- reporting
    def report(
        self,
        rule: Rule,
        node: ast.AST,
        message: str | None = None,
        fix: Fix | None = None,
        related: tuple[Related, ...] = (),
    ) -> None:
        self.findings.append(
            Finding(code=rule.code, message=message or rule.message, start=self.start(node), end=self.end(node), fix=fix, related=related)
        )


class AsCalled:
    """A context whose ``value`` is what the function holds as the package's modules call it (``Context.elsewhere``);
    anything else is the context's own."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx

    def value(self, node: ast.expr) -> Value:
        known = self._ctx.elsewhere(node)
        return known[0] if known is not None else Value()

    def __getattr__(self, name: str) -> object:
        return getattr(self._ctx, name)


def make_fix(applicability: Applicability, message: str, *edits: Edit) -> Fix:
    return Fix(applicability=applicability, message=message, edits=tuple(edits))


def insertion(at: Position, content: str) -> Edit:
    return Edit(start=at, end=at, content=content)
