"""The bindings / def-use index of one scope: where each name is bound, read and written in place, in order.

Rules ask ``ctx.scope`` (a :class:`Scope` for the function being walked) instead of
re-walking the tree. The index is built on first use, one pass over the scope, and
kept for the file.

Bindings are the scope's own (nested functions, classes and comprehensions aside: they
bind their own names); reads, stores and in-place writes include nested code, because a
closure that reads or changes a name is a use of that name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import NamedTuple

from flake8_tensorconv.trees import child_nodes, walk

Position = tuple[int, int]

_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# The nodes that may bind a name (see _binds).
_BINDERS = (
    ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.withitem, ast.Delete,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.ExceptHandler,
)


def start(node: ast.AST) -> Position:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def end(node: ast.AST) -> Position:
    return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]


class Binding(NamedTuple):
    """One place where a name gets a new value."""

    position: Position
    # ``name = value`` (also ``x = name = value``, ``name: T = value`` and ``(name := value)``); None for
    # parameters, loop targets, unpacking, ``with ... as name``, ``del name``, imports, defs.
    value: ast.expr | None


class Mention(NamedTuple):
    """A use of a name that may change what it holds: ``name.method(...)``, ``f(name)``, ``name[i] = v``, ``name += v``."""

    node: ast.AST  # the Call, the store Subscript or the AugAssign
    nested: bool  # inside a nested function or class
    method: str | None = None  # the method called on the name, for ``name.method(...)``


class Scope:
    """The def-use index of one function (or lambda, module, class body)."""

    def __init__(self, node: ast.AST, walrus: bool = True) -> None:
        """``walrus``: whether ``:=`` may be written in the scope; where it cannot, no expression binds a name, and the
        expressions (most of a scope's nodes) are not walked for bindings."""
        self.node = node
        self.bindings: dict[str, list[Binding]] = {}
        self.parameters: frozenset[str] = frozenset()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            self.parameters = frozenset(arg.arg for arg in every if arg is not None)
        for child in _walk_own(node, walrus):
            if isinstance(child, _BINDERS):  # the only nodes _binds yields for: most nodes skip the call
                for name, position, value in _binds(child):
                    self.bindings.setdefault(name, []).append(Binding(position, value))
        for bindings in self.bindings.values():
            bindings.sort(key=lambda binding: binding.position)
        self._uses: _Uses | None = None
        self._with_contexts: dict[str, ast.expr] | None = None

    # ------------------------------------------------------------------ bindings
    def before(self, name: str, node: ast.AST) -> list[Binding]:
        """Bindings of ``name`` that start before ``node`` starts, in source order."""
        limit = start(node)
        return [binding for binding in self.bindings.get(name, ()) if binding.position < limit]

    def rebound_between(self, name: str, first: ast.AST, second: ast.AST) -> bool:
        """Whether ``name`` gets a new value after ``first`` ends and before ``second`` starts."""
        low, high = end(first), start(second)
        return any(low <= binding.position < high for binding in self.bindings.get(name, ()))

    def is_parameter(self, name: str) -> bool:
        return name in self.parameters

    def definitions(self, name: str) -> list[ast.expr | None]:
        """What each binding of ``name`` assigns (None where no single value is assigned), parameters first."""
        definitions: list[ast.expr | None] = [None] if name in self.parameters else []
        definitions.extend(binding.value for binding in self.bindings.get(name, ()))
        return definitions

    def returns(self) -> list[ast.Return]:
        """The scope's own ``return`` statements (not those of the functions nested in it), in source order."""
        return [node for node in _walk_own(self.node, expressions=False) if isinstance(node, ast.Return)]

    def with_context(self, name: str) -> ast.expr | None:
        """The context of the first ``with ... as name`` under the scope's node (nested code included, in
        ``ast.walk``'s order), worked out once for every name."""
        if self._with_contexts is None:
            contexts: dict[str, ast.expr] = {}
            for node in walk(self.node):
                if isinstance(node, (ast.With, ast.AsyncWith)):
                    for item in node.items:
                        if isinstance(item.optional_vars, ast.Name):
                            contexts.setdefault(item.optional_vars.id, item.context_expr)
            self._with_contexts = contexts
        return self._with_contexts.get(name)

    # ------------------------------------------------------------------ uses (nested code included)
    @property
    def uses(self) -> _Uses:
        if self._uses is None:
            self._uses = _Uses(self.node)
        return self._uses

    def read_after(self, name: str, node: ast.AST) -> bool:
        """Whether ``name`` is read after ``node`` ends."""
        after = end(node)
        return any(read > after for read in self.uses.reads.get(name, ()))

    def written_in_place_after(self, name: str, node: ast.AST) -> bool:
        """Whether an in-place op (``name.add_(...)``, ``name += v``, ``name[i] = v``) starts after ``node`` ends,
        before ``name`` is bound to something else (``y = w.data; y = torch.zeros(3); y.zero_()`` does not
        write to ``w``)."""
        after = end(node)
        rebound = min((binding.position for binding in self.bindings.get(name, ()) if binding.position > after), default=None)
        return any(after < write and (rebound is None or write < rebound) for write in self.uses.in_place.get(name, ()))

    def loads(self, name: str) -> list[ast.Name]:
        """Every read of ``name`` (nested code included), in no particular order."""
        return self.uses.loads.get(name, [])

    def stores(self, name: str) -> list[ast.Name]:
        """Every ``name`` in a store context (assignment and loop targets, unpacking...)."""
        return self.uses.stores.get(name, [])

    def mentions(self, name: str) -> list[Mention]:
        return self.uses.mentions.get(name, [])

    @property
    def names(self) -> frozenset[str]:
        """Every name and parameter used anywhere in the scope: a new name must be none of them."""
        return self.uses.names

    def in_loop(self, node: ast.AST) -> bool:
        """Whether ``node`` sits inside a loop of the scope (or of code nested in it)."""
        first, last = start(node), end(node)
        return any(low <= first and last <= high for low, high in self.uses.loops)


class _Uses:
    """Reads, stores, in-place writes and mentions of every name under a node: one walk."""

    def __init__(self, node: ast.AST) -> None:
        self.reads: dict[str, list[Position]] = {}
        self.loads: dict[str, list[ast.Name]] = {}
        self.stores: dict[str, list[ast.Name]] = {}
        self.in_place: dict[str, list[Position]] = {}
        self.mentions: dict[str, list[Mention]] = {}
        self.loops: list[tuple[Position, Position]] = []
        names: set[str] = set()
        stack = [(child, False) for child in child_nodes(node)]
        while stack:
            child, nested = stack.pop()
            if isinstance(child, ast.Name):
                names.add(child.id)
                if isinstance(child.ctx, ast.Load):
                    self.reads.setdefault(child.id, []).append(start(child))
                    self.loads.setdefault(child.id, []).append(child)
                elif isinstance(child.ctx, ast.Store):
                    self.stores.setdefault(child.id, []).append(child)
            elif isinstance(child, ast.arg):
                names.add(child.arg)
            elif isinstance(child, ast.Call):
                self._call(child, nested)
            elif isinstance(child, ast.AugAssign) and isinstance(child.target, ast.Name):
                self.in_place.setdefault(child.target.id, []).append(start(child))
                self.mentions.setdefault(child.target.id, []).append(Mention(child, nested))
            elif isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Store) and isinstance(child.value, ast.Name):
                self.in_place.setdefault(child.value.id, []).append(start(child))
                self.mentions.setdefault(child.value.id, []).append(Mention(child, nested))
            if isinstance(child, _LOOPS):
                self.loops.append((start(child), end(child)))
            inner = nested or isinstance(child, _FUNCTIONS)
            stack.extend((grandchild, inner) for grandchild in child_nodes(child))
        self.names = frozenset(names)

    def _call(self, call: ast.Call, nested: bool) -> None:
        func = call.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name = func.value.id
            self.mentions.setdefault(name, []).append(Mention(call, nested, func.attr))
            if func.attr.endswith("_") and not func.attr.startswith("_"):
                self.in_place.setdefault(name, []).append(start(call))
        arguments = [argument.value if isinstance(argument, ast.Starred) else argument for argument in call.args]
        arguments += [keyword.value for keyword in call.keywords]
        for name in {argument.id for argument in arguments if isinstance(argument, ast.Name)}:
            if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name):
                self.mentions.setdefault(name, []).append(Mention(call, nested))


def _walk_own(scope: ast.AST, expressions: bool = True) -> Iterator[ast.AST]:
    """The scope's own nodes, in source order: nested scopes are yielded (their names bind here) but not entered.
    Without ``expressions``, what a statement holds as an expression is left out (the scope's statements, handlers,
    ``with`` items... in the same order)."""
    body = scope.body if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else [scope]
    stack: list[ast.AST] = list(reversed(body)) if isinstance(body, list) else [body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _NESTED_SCOPES):
            continue
        children = child_nodes(node)
        children.reverse()
        stack.extend(children if expressions else [child for child in children if not isinstance(child, ast.expr)])


def _binds(node: ast.AST) -> Iterator[tuple[str, Position, ast.expr | None]]:
    """(name, position, assigned value) for each name ``node`` binds; AugAssign writes in place."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name):
                yield target.id, start(target), node.value
            else:
                yield from _stored_names(target)
    elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
        yield node.target.id, start(node.target), node.value
    elif isinstance(node, ast.NamedExpr):
        yield node.target.id, start(node.target), node.value
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        yield from _stored_names(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from _stored_names(node.optional_vars)
    elif isinstance(node, ast.Delete):
        for target in node.targets:
            yield from _stored_names(target, ast.Del)
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield node.name, start(node), None
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        for alias in node.names:
            yield (alias.asname or alias.name).partition(".")[0], start(node), None
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, start(node), None


def _stored_names(target: ast.AST, context: type = ast.Store) -> Iterator[tuple[str, Position, None]]:
    for child in walk(target):
        if isinstance(child, ast.Name) and isinstance(child.ctx, context):
            yield child.id, start(child), None


class ScopeIndex:
    """Scopes by node, built on first use (one per file)."""

    def __init__(self, text: str | None = None) -> None:
        """``text``: the file's text (None: not known), where a walrus may be looked for."""
        self._scopes: dict[int, Scope] = {}
        self._walrus = text is None or ":=" in text

    def of(self, node: ast.AST) -> Scope:
        scope = self._scopes.get(id(node))
        if scope is None or scope.node is not node:
            scope = self._scopes[id(node)] = Scope(node, self._walrus)
        return scope
