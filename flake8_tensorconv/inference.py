"""Provenance inference: an abstract interpreter over one file's ``ast``.

Each function body (and the module body) is walked in order with an environment
mapping local names to :class:`~flake8_tensorconv.values.Value`. Branches are
walked separately and joined; loops are walked twice so that values flowing
around the back edge are seen. Grad mode (``no_grad``, ``inference_mode``,
``set_grad_enabled``) is tracked as part of the walk.

After evaluating each node the interpreter calls ``listener(node, state)``, which
is how rules see the node together with what is known at that point.
Nothing here crosses a function boundary except the cheap, sound cases: module
attributes assigned in ``__init__`` and the class hierarchy of the file.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TypeVar

from flake8_tensorconv import arrays
from flake8_tensorconv import knowledge as K
from flake8_tensorconv.values import (
    INTEGER_DTYPES,
    NUMBER,
    OTHER,
    UNKNOWN,
    Device,
    Grad,
    Kind,
    Value,
    any_device,
    any_grad,
    join,
    join_envs,
    module_class_fact,
    ndarray,
    tensor,
)

Env = dict[str, Value]
_T = TypeVar("_T")
_STRING = Value(kind=Kind.STRING, grad=Grad.NO)
# Values of other array and data libraries (TensorFlow, JAX, PIL, pandas, ONNX Runtime...), and
# whatever their methods, attributes and items give: never a torch tensor.
_FOREIGN_FACT = "foreign"
_FOREIGN = Value(kind=Kind.OTHER, grad=Grad.NO, facts=frozenset({_FOREIGN_FACT}))
# torch's defaults for Python literals differ from NumPy's.
_TORCH_LITERAL_DTYPES = {"float64": "float32", "complex128": "complex64"}
# Tensor layouts and lazy views that .numpy() refuses (TCV107).
_TENSOR_VIEW_FACTS = frozenset({"sparse", "conj", "neg"})
_COMPLEX_DTYPES = frozenset({"complex32", "complex64", "complex128"})
_SHAPE = Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=NUMBER)
# nn.Module methods that cast the parameters in place (and return the module).
_MODULE_DTYPE_METHODS = frozenset({"float", "double", "half", "bfloat16", "to", "type"})
# What a guard says about a value that is known not to be a torch tensor (``not isinstance(x, torch.Tensor)``).
_NOT_TENSOR: dict[str, object] = {"not-tensor": True}
_DEVICE_STRINGS = frozenset({"cpu", "cuda", "mps", "xpu", "meta", "hpu", "xla", "npu"})
# Annotations (``typing`` and builtin spellings, lower-cased) of containers: not a tensor themselves.
_CONTAINER_ANNOTATIONS = frozenset(
    "list tuple sequence iterable iterator collection set frozenset dict mapping mutablemapping ordereddict defaultdict".split()
)


# Fields that hold statements (or except/case clauses), in the order ast.walk visits them.
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")
_STATEMENT_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def iter_statements(tree: ast.Module) -> Iterator[ast.AST]:
    """The module and every statement in it, in ``ast.walk``'s order, without entering expressions.

    Expressions hold no statements, and they are most of a tree's nodes.
    """
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        fields = _STATEMENT_FIELDS_OF.get(type(node))
        if fields is None:
            fields = _STATEMENT_FIELDS_OF[type(node)] = tuple(name for name in _STATEMENT_FIELDS if name in node._fields)
        for name in fields:
            queue.extend(getattr(node, name))
        yield node


def collect_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name for every import in the file."""
    aliases: dict[str, str] = {}
    star = False
    for node in iter_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            star = True
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    if star:
        aliases.update(_star_exports(tree, aliases))
    return aliases


# What a package that re-exports torch (``from fastai.basics import *``) provides under its usual names.
_STAR_EXPORTS = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "Tensor": "torch.Tensor", "np": "numpy"}


def _star_exports(tree: ast.Module, aliases: dict[str, str]) -> dict[str, str]:
    """Names that can only come from a star import: read in the file but bound nowhere in it.

    If ``torch`` is one of them, the star import re-exports torch, and with it the usual aliases.
    """
    loaded: set[str] = set()
    bound = set(aliases)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.partition(".")[0])
    free = loaded - bound
    if "torch" not in free:
        return {}
    return {name: qualname for name, qualname in _STAR_EXPORTS.items() if name in free}


class FileFacts:
    """What is known about a whole file before any function is walked."""

    def __init__(self, tree: ast.Module, aliases: dict[str, str]) -> None:
        self.tree = tree
        self.aliases = aliases
        self.module_classes: set[str] = set()
        # Classes of this file whose instances are plain objects: no base that may be a tensor or a module.
        self.plain_classes: set[str] = set()
        # LightningModule subclasses: their evaluation hooks run with grad disabled.
        self.lightning_classes: set[str] = set()
        # Module-level functions defined once (undecorated, or only switching grad mode), and what
        # calls to them return, worked out when first called.
        self.helpers: Mapping[str, ast.FunctionDef] = {}
        self.helper_returns: dict[str, Value] = {}
        # class name -> attribute name -> value assigned in __init__ (modules, parameters).
        self.class_attributes: Mapping[str, dict[str, Value]] = {}
        # class name -> names it defines (methods, properties, class attributes, ``self.X = ...`` in its methods).
        self.class_members: Mapping[str, set[str]] = {}

    @property
    def imports_torch(self) -> bool:
        return any(name == "torch" or name.startswith("torch.") for name in self.aliases.values())

    def qualname(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


class LazyByName(Mapping[str, _T]):
    """Name (of a class or function of the file) -> a fact about it, worked out the first time it is asked for.

    Most classes and functions of a file are never asked about: only code that is walked asks.
    A name whose fact comes out None is not in the mapping.
    """

    def __init__(self, names: Iterable[str], compute: Callable[[str], _T]) -> None:
        self._names = frozenset(names)
        self._compute = compute
        self._known: dict[str, _T] = {}
        self._computing: set[str] = set()

    def __getitem__(self, name: str) -> _T:
        if name not in self._known:
            # Asked again while working it out (a class nested in its own __init__): not known yet.
            if name not in self._names or name in self._computing:
                raise KeyError(name)
            self._computing.add(name)
            try:
                self._known[name] = self._compute(name)
            finally:
                self._computing.discard(name)
        value = self._known[name]
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def analyze_file_facts(tree: ast.Module) -> FileFacts:
    facts = FileFacts(tree=tree, aliases=collect_aliases(tree))
    classes = [node for node in iter_statements(tree) if isinstance(node, ast.ClassDef)]
    # nn.Module subclasses, following bases defined in this file.
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in facts.module_classes:
                continue
            for base in cls.bases:
                qualname = facts.qualname(base)
                if (qualname and (qualname in K.MODULE_BASES or _is_torch_module_class(qualname))) or (
                    isinstance(base, ast.Name) and base.id in facts.module_classes
                ):
                    facts.module_classes.add(cls.name)
                    changed = True
                    break
    facts.lightning_classes = _subclasses(classes, K.LIGHTNING_MODULE_BASES, facts)
    by_name: dict[str, list[ast.ClassDef]] = {}
    for cls in classes:
        by_name.setdefault(cls.name, []).append(cls)
    facts.plain_classes = _plain_classes(by_name, facts)
    facts.helpers = _helpers(tree, facts)
    facts.class_members = LazyByName(by_name, lambda name: _members_with_bases(name, by_name))
    # A name defined twice: the last definition in walk order wins.
    facts.class_attributes = LazyByName(
        (name for name in by_name if name in facts.module_classes), lambda name: _init_attributes(by_name[name][-1], facts)
    )
    return facts


# Bases that make no tensor: builtins and typing/abc/enum helpers.
_PLAIN_BASES = frozenset({"object", "dict", "list", "tuple", "set", "str", "int", "float", "Exception", "ValueError", "RuntimeError"})
_PLAIN_BASE_QUALNAMES = frozenset(
    {"typing.NamedTuple", "typing.Generic", "typing.Protocol", "abc.ABC", "enum.Enum", "enum.IntEnum", "dataclasses.dataclass"}
)


def _plain_classes(by_name: dict[str, list[ast.ClassDef]], facts: FileFacts) -> set[str]:
    """Classes defined once in this file whose bases (followed within the file) are all plain.

    A base imported from elsewhere may derive from torch.Tensor, so it makes the class unknown.
    """
    plain: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, definitions in by_name.items():
            if name in plain or len(definitions) != 1 or name in facts.module_classes:
                continue
            bases = [base.value if isinstance(base, ast.Subscript) else base for base in definitions[0].bases]
            if all(_is_plain_base(base, plain, facts) for base in bases):
                plain.add(name)
                changed = True
    return plain


def _helpers(tree: ast.Module, facts: FileFacts) -> Mapping[str, ast.FunctionDef]:
    """Module-level functions whose return value a call can be given: defined once, no other decorator
    than a grad-mode switch, not a generator."""
    definitions: dict[str, list[ast.stmt]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions.setdefault(statement.name, []).append(statement)
    helpers = {}
    for name, nodes in definitions.items():
        node = nodes[0]
        if len(nodes) != 1 or not isinstance(node, ast.FunctionDef):
            continue
        decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        if any(facts.qualname(d) not in K.GRAD_MODE_SWITCHES and facts.qualname(d) not in K.SET_GRAD_ENABLED for d in decorators):
            continue
        helpers[name] = node
    # Whether one is a generator (a walk of its body) is looked at only when a call of it is walked.
    return LazyByName(helpers, lambda name: None if _is_generator(helpers[name]) else helpers[name])


def _is_generator(function: ast.FunctionDef) -> bool:
    return any(isinstance(child, (ast.Yield, ast.YieldFrom)) for child in ast.walk(function))


def _is_plain_base(base: ast.expr, plain: set[str], facts: FileFacts) -> bool:
    if isinstance(base, ast.Name) and base.id not in facts.aliases:
        return base.id in _PLAIN_BASES or base.id in plain
    return facts.qualname(base) in _PLAIN_BASE_QUALNAMES


def _subclasses(classes: list[ast.ClassDef], bases: frozenset[str], facts: FileFacts) -> set[str]:
    """Classes deriving from one of ``bases`` (qualified names), following bases defined in this file."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name not in found and any(
                facts.qualname(base) in bases or (isinstance(base, ast.Name) and base.id in found) for base in cls.bases
            ):
                found.add(cls.name)
                changed = True
    return found


def _members_with_bases(name: str, by_name: dict[str, list[ast.ClassDef]]) -> set[str]:
    """What a class defines, with what its bases defined in this file define (a NamedTuple's fields)."""
    members: set[str] = set()
    pending, seen = [name], set()
    while pending:
        current = pending.pop()
        if current in seen or current not in by_name:
            continue
        seen.add(current)
        for cls in by_name[current]:
            members |= _class_members(cls)
            pending.extend(base.id for base in cls.bases if isinstance(base, ast.Name))
    return members


def _class_members(cls: ast.ClassDef) -> set[str]:
    members: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(statement.name)
            members.update(_instance_attributes(statement))
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            members.update(t.id for t in targets if isinstance(t, ast.Name))
    return members


def _instance_attributes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names a method assigns on its instance (``self.data = ...``)."""
    positional = [*method.args.posonlyargs, *method.args.args]
    if not positional:
        return set()
    instance = positional[0].arg
    return {
        node.attr
        for node in ast.walk(method)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name) and node.value.id == instance
    }


def _is_torch_module_class(qualname: str) -> bool:
    head, _, name = qualname.rpartition(".")
    return head.startswith("torch.nn") and name[:1].isupper() and qualname not in K.PARAMETER_CLASSES


def _init_attributes(cls: ast.ClassDef, facts: FileFacts) -> dict[str, Value]:
    """Values of ``self.X = ...`` in ``__init__`` (modules and parameters only)."""
    attributes: dict[str, Value] = {}
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            interpreter = Interpreter(facts, listener=None)
            interpreter.walk_function(statement, class_name=None)
            for target, value in interpreter.attribute_stores:
                if value.kind is Kind.MODULE or (value.kind is Kind.TENSOR and value.grad is Grad.YES):
                    attributes[target] = join(attributes[target], value) if target in attributes else value
    return attributes


class State:
    """What the interpreter knows at a node."""

    __slots__ = ("env", "grad_enabled", "function", "class_name")

    def __init__(self, env: Env, grad_enabled: bool, function: ast.AST | None, class_name: str | None) -> None:
        self.env = env
        self.grad_enabled = grad_enabled
        self.function = function  # the enclosing FunctionDef/Lambda, or the Module
        self.class_name = class_name


Listener = Callable[[ast.AST, State], None]


class Interpreter:
    def __init__(self, facts: FileFacts, listener: Listener | None, walks: Callable[[ast.AST], bool] | None = None) -> None:
        self.facts = facts
        self.listener = listener
        # Whether to walk the body of a function or class (None: all of them). A body that is
        # not walked changes nothing outside it: a def binds its name, its decorators are evaluated.
        self.walks = walks
        self.values: dict[int, Value] = {}
        self.state = State(env={}, grad_enabled=True, function=facts.tree, class_name=None)
        self.attribute_stores: list[tuple[str, Value]] = []
        # Parameters hold what callers pass (maybe requiring grad, maybe on a GPU); not so when
        # summarising a helper, whose result must not depend on what one caller passes.
        self.caller_params = True
        # Names that attributes were stored on (``self`` in ``self.x = ...``), in any function walked so far.
        self.attribute_bases: set[str] = set()
        # While summarising a helper: the helper and the values its return statements give.
        self.summary_of: ast.FunctionDef | None = None
        self.returns: list[Value] = []

    # ----------------------------------------------------------------- entry points
    def walk_module(self) -> None:
        self.walk_body(self.facts.tree.body)

    def walk_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> None:
        if self.walks is not None and not self.walks(node):
            return
        outer = self.state
        grad_enabled = outer.grad_enabled if outer.function is not self.facts.tree else True
        if class_name in self.facts.lightning_classes and node.name in K.LIGHTNING_NO_GRAD_HOOKS:
            grad_enabled = False  # Lightning runs validation, test and predict under no_grad
        for decorator in node.decorator_list:
            switch = self._grad_switch(decorator)
            if switch is not None:
                grad_enabled = switch
        env: Env = {name: value for name, value in outer.env.items()} if class_name is None else {}
        args = node.args
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        bound_first = class_name is not None and not _is_staticmethod(node)
        for index, arg in enumerate(all_args):
            if (index == 0 and bound_first) or not self.caller_params:
                env[arg.arg] = self._annotation_value(arg.annotation)  # self / cls: not a caller's tensor
            else:
                env[arg.arg] = _caller_supplied(self._annotation_value(arg.annotation))
            if index == 0 and class_name and arg.arg == "self" and class_name in self.facts.module_classes:
                env["self"] = Value(kind=Kind.MODULE, grad=Grad.NO, facts=frozenset({"parametrized", "self"}))
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                env[arg.arg] = UNKNOWN
        self.state = State(env=env, grad_enabled=grad_enabled, function=node, class_name=class_name)
        try:
            self.walk_body(node.body)
        finally:
            self.state = outer

    # ----------------------------------------------------------------- statements
    def walk_body(self, body: list[ast.stmt]) -> None:
        for statement in body:
            self.walk_statement(statement)

    def walk_statement(self, node: ast.stmt) -> None:
        handler = getattr(self, "stmt_" + type(node).__name__, None)
        if handler is not None:
            handler(node)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)
        self._notify(node)

    def stmt_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            self.eval(decorator)
        self.walk_function(node, class_name=None)
        self.state.env[node.name] = OTHER

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self.eval(base)
        if self.walks is not None and not self.walks(node):
            self.state.env[node.name] = OTHER
            return
        outer = self.state
        self.state = State(env={}, grad_enabled=True, function=node, class_name=node.name)
        try:
            for statement in node.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    for decorator in statement.decorator_list:
                        self.eval(decorator)
                    self.walk_function(statement, class_name=node.name)
                else:
                    self.walk_statement(statement)
        finally:
            self.state = outer
        outer.env[node.name] = OTHER

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.eval(node.value)
        for target in node.targets:
            self.bind(target, value)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.bind(node.target, self.eval(node.value))
        elif isinstance(node.target, ast.Name):
            self.state.env[node.target.id] = self._annotation_value(node.annotation)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        right = self.eval(node.value)
        if isinstance(node.target, ast.Name):
            left = self.state.env.get(node.target.id, UNKNOWN)
            self.values[id(node.target)] = left
            # In-place arithmetic keeps the target's identity (and its memory).
            self.state.env[node.target.id] = self._binary(left, right, in_place=True)
        else:
            self.eval_target_parts(node.target)
            key = _attribute_key(node.target)
            if key is not None and key in self.state.env:
                self.state.env[key] = self._binary(self.state.env[key], right, in_place=True)

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)
        if isinstance(node.value, ast.Call):
            self._mutation(node.value)
            qualname = self.facts.qualname(node.value.func)
            if qualname in K.SET_GRAD_ENABLED:
                enabled = _literal_bool(node.value.args[0]) if node.value.args else None
                if enabled is not None:
                    self.state.grad_enabled = enabled

    def _mutation(self, call: ast.Call) -> None:
        """Method calls that change what a variable holds: ``lst.append(a)``, ``a.setflags(write=False)``."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return
        name = func.value.id
        current = self.state.env.get(name)
        if current is None:
            return
        if current.kind is Kind.SEQUENCE and func.attr in ("append", "extend") and call.args:
            added = self.value_of(call.args[0])
            if func.attr == "extend":
                added = _element_of(added)
            known = current.element if current.element is not None else (_element_of(current) if current.elements else None)
            element = added if known is None else join(known, added)
            self.state.env[name] = Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element)
        elif current.kind is Kind.NDARRAY and func.attr == "setflags":
            write = _kwarg(call, "write") or (call.args[0] if call.args else None)
            if _literal_bool(write) is False:
                self.state.env[name] = current.with_(facts=current.facts | {arrays.READONLY})
            elif _literal_bool(write) is True:  # succeeds only on an array that owns writable memory
                self.state.env[name] = current.with_(facts=current.facts - {arrays.READONLY})
        elif current.kind is Kind.MODULE and func.attr in _MODULE_DTYPE_METHODS:
            # nn.Module casts its parameters in place: `model.double()` alone changes `model`.
            self.state.env[name] = current.with_(dtype=self.value_of(call).dtype)

    def stmt_Assert(self, node: ast.Assert) -> None:
        self.eval(node.test)
        if node.msg is not None:
            self.eval(node.msg)
        self.state.env, _ = self._refine(node.test)  # past the assert its test held

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            value = self.eval(node.value)
            if self.state.function is self.summary_of:
                self.returns.append(value)

    def _helper_return(self, name: str) -> Value:
        """What a call of the module-level helper ``name`` returns, whatever it is given."""
        known = self.facts.helper_returns.get(name)
        if known is not None:
            return known
        self.facts.helper_returns[name] = UNKNOWN  # a recursive call while summarising
        summary = Interpreter(self.facts, listener=None)
        summary.caller_params = False
        summary.summary_of = self.facts.helpers[name]
        summary.walk_function(summary.summary_of, class_name=None)
        value = summary.returns[0] if summary.returns else UNKNOWN
        for other in summary.returns[1:]:
            value = join(value, other)
        value = value.with_(shares_with=None)
        self.facts.helper_returns[name] = value
        return value

    def stmt_If(self, node: ast.If) -> None:
        self.eval(node.test)
        true_env, false_env = self._refine(node.test)
        self._branches(node.body, node.orelse, true_env, false_env)

    def _branches(self, body: list[ast.stmt], orelse: list[ast.stmt], true_env: Env, false_env: Env) -> None:
        grad_before = self.state.grad_enabled
        self.state.env = true_env
        self.walk_body(body)
        body_env, body_grad = self.state.env, self.state.grad_enabled
        self.state.env = false_env
        self.state.grad_enabled = grad_before
        self.walk_body(orelse)
        else_env, else_grad = self.state.env, self.state.grad_enabled
        body_exits, else_exits = _terminates(body), _terminates(orelse)
        if body_exits and not else_exits:
            self.state.env, self.state.grad_enabled = else_env, else_grad
        elif else_exits and not body_exits:
            self.state.env, self.state.grad_enabled = body_env, body_grad
        else:
            self.state.env = join_envs(body_env, else_env)
            self.state.grad_enabled = body_grad or else_grad

    def stmt_For(self, node: ast.For | ast.AsyncFor) -> None:
        iterable = self.eval(node.iter)
        before = self.state.env
        for _ in range(2):
            self.state.env = dict(self.state.env)
            self.bind(node.target, _element_of(iterable))
            self.walk_body(node.body)
            self.state.env = join_envs(before, self.state.env)
        self.walk_body(node.orelse)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While) -> None:
        before = self.state.env
        for _ in range(2):
            self.eval(node.test)
            true_env, _ = self._refine(node.test)
            self.state.env = true_env
            self.walk_body(node.body)
            self.state.env = join_envs(before, self.state.env)
        self.walk_body(node.orelse)

    def stmt_With(self, node: ast.With | ast.AsyncWith) -> None:
        grad_before = self.state.grad_enabled
        for item in node.items:
            context = self.eval(item.context_expr)
            switch = self._grad_switch(item.context_expr)
            if switch is not None:
                self.state.grad_enabled = switch
            if item.optional_vars is not None:
                self.bind(item.optional_vars, context if context.kind is not Kind.OTHER else UNKNOWN)
        self.walk_body(node.body)
        self.state.grad_enabled = grad_before

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node: ast.Try) -> None:
        before = self.state.env
        self.walk_body(node.body)
        after_body = self.state.env
        self.walk_body(node.orelse)
        merged = self.state.env
        for handler in node.handlers:
            self.state.env = join_envs(before, after_body)
            if handler.type is not None:
                self.eval(handler.type)
            if handler.name:
                self.state.env[handler.name] = OTHER
            self.walk_body(handler.body)
            if not _terminates(handler.body):
                merged = join_envs(merged, self.state.env)
        self.state.env = merged
        self.walk_body(node.finalbody)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node: ast.AST) -> None:
        self.eval(node.subject)  # type: ignore[attr-defined]
        before = self.state.env
        merged = before
        for case in node.cases:  # type: ignore[attr-defined]
            self.state.env = dict(before)
            self.walk_body(case.body)
            merged = join_envs(merged, self.state.env)
        self.state.env = merged

    def stmt_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                self.state.env.pop(target.id, None)
                self._forget_attributes(target.id)
            else:
                self.eval_target_parts(target)
                key = _attribute_key(target)
                if key is not None:
                    self.state.env.pop(key, None)

    def stmt_Global(self, node: ast.stmt) -> None:
        pass

    stmt_Nonlocal = stmt_Import = stmt_ImportFrom = stmt_Pass = stmt_Break = stmt_Continue = stmt_Global

    # ----------------------------------------------------------------- binding
    def bind(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self._forget_attributes(target.id)
            self.state.env[target.id] = value
            self.values[id(target)] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            starred = any(isinstance(element, ast.Starred) for element in target.elts)
            for index, element in enumerate(target.elts):
                if value.elements is not None and not starred and len(value.elements) == len(target.elts):
                    item = value.elements[index]
                elif isinstance(element, ast.Starred):
                    item = Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=_element_of(value))
                else:
                    item = _element_of(value)
                self.bind(element.value if isinstance(element, ast.Starred) else element, item)
        elif isinstance(target, ast.Attribute):
            self.eval(target.value)
            if isinstance(target.value, ast.Name) and target.value.id == "self":
                self.attribute_stores.append((target.attr, value))
            key = _attribute_key(target)
            if key is not None:
                self.state.env[key] = value  # `self.x = t.detach()`: read back as such in this function
                self.attribute_bases.add(target.value.id)  # type: ignore[attr-defined]
            self._notify(target)
        elif isinstance(target, ast.Subscript):
            self.eval_target_parts(target)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value)

    def _forget_attributes(self, name: str) -> None:
        """``name`` is rebound, or a call may change its attributes: what was stored on them no longer holds."""
        if name not in self.attribute_bases:
            return  # nothing was ever stored on it: most names, most calls
        env = self.state.env
        prefix = name + "."
        for key in [key for key in env if key.startswith(prefix)]:
            del env[key]

    def eval_target_parts(self, target: ast.expr) -> None:
        """Evaluate the parts of a store target (``a[i]``, ``a.b``) and notify listeners."""
        if isinstance(target, ast.Subscript):
            self.values[id(target.value)] = self.eval(target.value)
            self.eval(target.slice)
        elif isinstance(target, ast.Attribute):
            self.eval(target.value)
        self._notify(target)

    # ----------------------------------------------------------------- expressions
    def eval(self, node: ast.expr) -> Value:
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is not None:
            value = handler(node)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)
            value = UNKNOWN
        if not self.state.grad_enabled and value.kind in (Kind.TENSOR, Kind.UNKNOWN) and not _keeps_grad(node, value):
            value = value.with_(grad=Grad.NO)
        self.values[id(node)] = value
        self._notify(node)
        return value

    def value_of(self, node: ast.expr) -> Value:
        return self.values.get(id(node), UNKNOWN)

    def expr_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, str):
            device = node.value.partition(":")[0]
            if device in _DEVICE_STRINGS:
                return Value(kind=Kind.DEVICE, grad=Grad.NO, device=Device.CPU if device == "cpu" else Device.ACCELERATOR)
            return _STRING
        if isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool):
            return NUMBER
        return OTHER

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Value:
        for child in node.values:
            self.eval(child)
        return _STRING

    def expr_Name(self, node: ast.Name) -> Value:
        if node.id in self.state.env:
            return self.state.env[node.id]
        qualname = self.facts.aliases.get(node.id)
        if qualname is not None:
            return self._qualified_value(qualname)
        return UNKNOWN

    def expr_Attribute(self, node: ast.Attribute) -> Value:
        receiver = self.eval(node.value)
        qualname = self.facts.qualname(node)
        if qualname is not None and not (isinstance(node.value, ast.Name) and node.value.id in self.state.env):
            return self._qualified_value(qualname)
        key = _attribute_key(node)
        if key is not None and key in self.state.env:
            return self.state.env[key]
        return self._attribute(receiver, node)

    def _attribute(self, receiver: Value, node: ast.Attribute) -> Value:
        name = node.attr
        named = receiver.field(name)
        if named is not None:
            return named
        if _FOREIGN_FACT in receiver.facts:
            return _FOREIGN
        if name == "dtype" and receiver.kind in (Kind.TENSOR, Kind.UNKNOWN, Kind.MODULE):
            # `t.to(other.dtype)` casts; it is no device move.
            return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=receiver.dtype if receiver.kind is Kind.TENSOR else None)
        if receiver.kind is Kind.MODULE and "self" in receiver.facts and self.state.class_name:
            known = self.facts.class_attributes.get(self.state.class_name, {}).get(name)
            if known is not None:
                return known
            return UNKNOWN
        if receiver.kind is Kind.MODULE and name in ("weight", "bias"):
            return tensor(Grad.YES, receiver.device if receiver.device is not Device.UNKNOWN else Device.CPU, receiver.dtype)
        if receiver.kind is Kind.TENSOR:
            if name in ("data", "grad"):
                return receiver.with_(grad=Grad.NO, elements=None, element=None, fields=())
            if name == "device":
                return Value(kind=Kind.DEVICE, grad=Grad.NO, device=receiver.device)
            if name == "shape":
                return _SHAPE
            if name in K.NON_TENSOR_ATTRIBUTES:
                return OTHER
            facts: frozenset[str] = frozenset()
            if name in ("mH", "H"):
                facts = frozenset({"conj"})
            elif name == "imag" and "conj" in receiver.facts and receiver.dtype in _COMPLEX_DTYPES:
                facts = frozenset({"neg"})  # `.imag` of a real tensor raises instead
            dtype = receiver.dtype
            if name in ("real", "imag") and dtype in ("complex64", "complex128"):
                dtype = "float32" if dtype == "complex64" else "float64"
            return receiver.with_(elements=None, element=None, fields=(), facts=facts, dtype=dtype, shares_with=None)
        if receiver.kind is Kind.NDARRAY:
            if name == "shape":
                return _SHAPE
            if name in ("T", "real", "imag", "flat", "base"):
                return receiver.with_(facts=frozenset())
            if name == "dtype":
                return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=receiver.dtype, facts=receiver.facts & {arrays.NON_NATIVE})
            return OTHER
        return UNKNOWN

    def expr_Subscript(self, node: ast.Subscript) -> Value:
        container = self.eval(node.value)
        self.eval(node.slice)
        if container.kind is Kind.TENSOR:
            return container.with_(elements=None, element=None, fields=(), facts=frozenset())
        if container.kind is Kind.NDARRAY:
            return arrays.subscript(container, node.slice)
        if _FOREIGN_FACT in container.facts:
            return _FOREIGN
        if container.kind is Kind.UNKNOWN and arrays.has_negative_step(node.slice) and arrays.numpy_only_index(node.slice):
            return ndarray(facts=frozenset({arrays.NEGATIVE_STRIDE}))
        if container.kind in (Kind.SEQUENCE, Kind.MAPPING, Kind.ITERABLE):
            index = node.slice
            if container.elements is not None and isinstance(index, ast.Constant) and isinstance(index.value, int):
                if -len(container.elements) <= index.value < len(container.elements):
                    return container.elements[index.value]
            if isinstance(index, ast.Slice):
                return container
            return _element_of(container)
        return UNKNOWN

    def expr_Starred(self, node: ast.Starred) -> Value:
        return self.eval(node.value)

    def expr_Tuple(self, node: ast.Tuple | ast.List) -> Value:
        elements = tuple(self.eval(element) for element in node.elts)
        if any(isinstance(element, ast.Starred) for element in node.elts):
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO)
        element = elements[0] if elements and all(e == elements[0] for e in elements) else None
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=elements, element=element)

    expr_List = expr_Tuple

    def expr_Set(self, node: ast.Set) -> Value:
        for element in node.elts:
            self.eval(element)
        return OTHER

    def expr_Dict(self, node: ast.Dict) -> Value:
        values = []
        for key in node.keys:
            if key is not None:
                self.eval(key)
        for value in node.values:
            values.append(self.eval(value))
        element = values[0] if values and all(v == values[0] for v in values) else None
        return Value(kind=Kind.MAPPING, grad=Grad.NO, element=element)

    def _comprehension(self, generators: list[ast.comprehension], elements: list[ast.expr]) -> list[Value]:
        saved = self.state.env
        self.state.env = dict(saved)
        try:
            for generator in generators:
                self.bind(generator.target, _element_of(self.eval(generator.iter)))
                for condition in generator.ifs:
                    self.eval(condition)
            return [self.eval(element) for element in elements]
        finally:
            self.state.env = saved

    def expr_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> Value:
        (element,) = self._comprehension(node.generators, [node.elt])
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element)

    expr_GeneratorExp = expr_ListComp

    def expr_SetComp(self, node: ast.SetComp) -> Value:
        self._comprehension(node.generators, [node.elt])
        return OTHER

    def expr_DictComp(self, node: ast.DictComp) -> Value:
        _, element = self._comprehension(node.generators, [node.key, node.value])
        return Value(kind=Kind.MAPPING, grad=Grad.NO, element=element)

    def expr_Lambda(self, node: ast.Lambda) -> Value:
        saved = self.state
        env = dict(saved.env)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            env[arg.arg] = _caller_supplied(UNKNOWN)
        self.state = State(env=env, grad_enabled=saved.grad_enabled, function=node, class_name=saved.class_name)
        try:
            self.eval(node.body)
        finally:
            self.state = saved
        return OTHER

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        self.eval(node.test)
        true_env, false_env = self._refine(node.test)
        saved = self.state.env
        self.state.env = true_env
        body = self.eval(node.body)
        self.state.env = false_env
        orelse = self.eval(node.orelse)
        self.state.env = saved
        return join(body, orelse)

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        values = [self.eval(value) for value in node.values]
        result = values[0]
        for value in values[1:]:
            result = join(result, value)
        return result

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Value:
        value = self.eval(node.value)
        self.bind(node.target, value)
        return value

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        return self._binary(self.eval(node.left), self.eval(node.right))

    def _binary(self, left: Value, right: Value, in_place: bool = False) -> Value:
        operands = (left, right)
        if not any(value.kind is Kind.TENSOR for value in operands):
            if all(value.kind is Kind.NDARRAY or value.kind is Kind.NUMBER for value in operands) and Kind.NDARRAY in (
                left.kind,
                right.kind,
            ):
                return ndarray(shares_with=left.shares_with if in_place else None)
            if all(value.kind in (Kind.NUMBER, Kind.STRING, Kind.OTHER) for value in operands):
                return left if left.kind is right.kind else OTHER
            return UNKNOWN
        # `t * scale`: a caller's `scale` is no evidence of a tensor that requires grad.
        tensors = _operands([], operands)
        grads = [v.grad for v in tensors]
        devices = [v.device for v in tensors]
        base = left if left.kind is Kind.TENSOR else right
        return tensor(
            any_grad(grads),
            any_device(devices),
            base.dtype if left.dtype == right.dtype or Kind.NUMBER in (left.kind, right.kind) else None,
            shares_with=left.shares_with if in_place else None,
        )

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return OTHER
        return operand.with_(shares_with=None, facts=frozenset())

    def expr_Compare(self, node: ast.Compare) -> Value:
        operands = [self.eval(node.left), *(self.eval(c) for c in node.comparators)]
        if any(value.kind is Kind.TENSOR for value in operands):
            return tensor(Grad.NO, any_device([v.device for v in operands if v.kind is Kind.TENSOR]), "bool")
        if any(value.kind is Kind.NDARRAY for value in operands):
            return ndarray("bool")
        return OTHER if all(v.kind is not Kind.UNKNOWN for v in operands) else Value(grad=Grad.NO)

    def expr_Await(self, node: ast.Await) -> Value:
        self.eval(node.value)
        return UNKNOWN

    # ----------------------------------------------------------------- calls
    def expr_Call(self, node: ast.Call) -> Value:
        value = self._call(node)
        # `self.reset()`, `update(state)`: the call may rebind the attributes stored on its receiver or arguments.
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            self._forget_attributes(func.value.id)
        for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
            if isinstance(argument, ast.Name):
                self._forget_attributes(argument.id)
        return value

    def _call(self, node: ast.Call) -> Value:
        func = node.func
        receiver: Value | None = None
        if isinstance(func, ast.Attribute):
            receiver = self.eval(func.value)
            self.values[id(func)] = UNKNOWN
            self._notify(func)
        else:
            self.eval(func)
        args = [self.eval(arg) for arg in node.args]
        keywords = {kw.arg: self.eval(kw.value) for kw in node.keywords}
        qualname = self.facts.qualname(func)
        if qualname is not None and not (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.state.env
        ):
            return self._call_qualified(qualname, node, args, keywords)
        if isinstance(func, ast.Attribute) and receiver is not None:
            return self._call_method(receiver, func.attr, node, args, keywords)
        callee = self.value_of(func)
        if callee.kind is Kind.MODULE:
            return self._module_output(callee, args)
        if _FOREIGN_FACT in callee.facts:
            return _FOREIGN  # a Keras model, an ONNX session's method...
        if isinstance(func, ast.Name) and func.id in self.facts.helpers and callee.kind in (Kind.OTHER, Kind.UNKNOWN):
            return self._helper_return(func.id)
        if isinstance(func, ast.Name) and func.id in self.facts.plain_classes:
            return Value(kind=Kind.OTHER, grad=Grad.NO)  # an instance of a plain class of this file
        if isinstance(func, ast.Name) and func.id in self.facts.module_classes:
            facts = frozenset({"parametrized", module_class_fact(func.id)})
            # Its layers are built in the default dtype unless the class says otherwise (rules look at the class).
            return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.CPU, dtype="float32", facts=facts)
        if isinstance(func, ast.Name) and func.id in ("len", "int", "float", "round", "sum", "max", "min", "abs"):
            if func.id in ("sum", "max", "min", "abs") and any(a.kind is not Kind.NUMBER for a in args):
                return UNKNOWN
            return NUMBER
        if isinstance(func, ast.Name) and func.id in ("list", "tuple", "sorted", "reversed") and args:
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=_element_of(args[0]))
        if isinstance(func, ast.Name) and func.id in ("str", "repr", "bool", "isinstance", "hasattr", "callable"):
            return OTHER
        if isinstance(func, ast.Name) and func.id == "range":
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=NUMBER)
        if isinstance(func, ast.Name) and func.id in ("zip", "enumerate"):
            items = [NUMBER] if func.id == "enumerate" else []
            items += [_element_of(arg) for arg in args]
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=tuple(items)))
        return UNKNOWN

    def _call_qualified(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        if qualname in K.PARAMETER_CLASSES:
            source = args[0] if args else UNKNOWN
            grad = Grad.NO if "requires_grad" in keywords and _literal_bool(_kwarg(node, "requires_grad")) is False else Grad.YES
            return tensor(grad, source.device if source.kind is Kind.TENSOR else Device.CPU, source.dtype, facts=frozenset({"parameter"}))
        if qualname == "torch.device":
            return Value(kind=Kind.DEVICE, grad=Grad.NO, device=_device_from(args[0], node.args[0]) if args else Device.UNKNOWN)
        if qualname in ("torch.conj", "torch.adjoint") and args:
            return tensor(args[0].grad, args[0].device, args[0].dtype, facts=frozenset({"conj"}))
        if qualname in K.TORCH_FACTORIES:
            return self._factory(qualname, node, args, keywords)
        if qualname in K.LEGACY_CONSTRUCTORS:
            return self._legacy_constructor(qualname, node, args, keywords)
        if qualname in K.TORCH_INTEGER_RESULTS:
            devices = [a.device for a in args if a.kind is Kind.TENSOR]
            return tensor(Grad.NO, any_device(devices) if devices else self._device_keyword(node, keywords), K.TORCH_INTEGER_RESULTS[qualname])
        if qualname in ("torch.promote_types", "torch.result_type", "torch.get_default_dtype"):
            return Value(kind=Kind.DTYPE, grad=Grad.NO)
        if qualname == "torch.load":
            # Whatever was saved (a state dict, a tensor...); on the CPU when mapped there.
            location = _kwarg(node, "map_location")
            on_cpu = location is not None and _device_from(self.value_of(location), location) is Device.CPU
            return Value(device=Device.CPU if on_cpu else Device.UNKNOWN)
        if qualname == "torch.compile":
            return args[0] if args and args[0].kind is Kind.MODULE else UNKNOWN  # the same module, compiled
        if qualname.startswith("torch.distributions.") and qualname.rpartition(".")[2][:1].isupper():
            # A distribution object; what it samples has its parameters' device (Categorical: indices).
            flat = _operands(args[:1], [*args[1:], *keywords.values()])
            dtype = "int64" if qualname.rpartition(".")[2] == "Categorical" else None
            return Value(kind=Kind.OTHER, grad=Grad.NO, device=any_device([a.device for a in flat]), dtype=dtype, facts=frozenset({"distribution"}))
        if qualname in K.TORCH_NON_TENSOR_RESULTS:
            return OTHER
        if qualname.startswith("torch.") and qualname.count(".") >= 1:
            name = qualname.rpartition(".")[2]
            if qualname.startswith("torch.nn.") and name[:1].isupper():
                free = qualname in K.PARAMETER_FREE_MODULES
                facts = frozenset({module_class_fact(qualname)} if free else {"parametrized", module_class_fact(qualname)})
                # Parameters are created in the default dtype (float32) unless `dtype=` says otherwise.
                dtype = None if free else (keywords["dtype"].dtype if "dtype" in keywords else "float32")
                return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.CPU, dtype=dtype, facts=facts)
            if name in ("topk", "sort", "kthvalue", "mode") or (name in K.VALUES_INDICES_WITH_DIM and len(args) + len(keywords) > 1):
                return self._values_indices(args[0] if args else UNKNOWN)
            if qualname in K.SET_GRAD_ENABLED or qualname in K.GRAD_MODE_SWITCHES:
                return OTHER
            dtype = K.dtype_from_qualname(qualname)
            if dtype is not None:
                return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=dtype)
            if qualname.startswith(("torch.nn.functional.", "torch.nn.init.")) or qualname.count(".") == 1:
                # torch.cat((a, b)), torch.stack([...]): the tensors may sit in a sequence argument.
                first = 2 if args and args[0].kind is Kind.STRING else 1  # torch.einsum("ij,jk", a, b)
                inputs = [*args[:first], *(value for key, value in keywords.items() if key in ("input", "tensors"))]
                others = [*args[first:], *(value for key, value in keywords.items() if key not in ("input", "tensors"))]
                flat = _operands(inputs, others)
                return tensor(any_grad([a.grad for a in flat]), any_device([a.device for a in flat]))
            return UNKNOWN
        if qualname.startswith("numpy."):
            return self._numpy_call(qualname, node, args, keywords)
        if qualname.partition(".")[0] in K.FOREIGN_LIBRARIES:
            return _FOREIGN
        return UNKNOWN

    def _legacy_constructor(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        source = args[0] if len(args) == 1 else NUMBER
        if source.kind is Kind.TENSOR:
            return source.with_(shares_with=None)  # `torch.Tensor(t)` is `t` itself
        dtype = K.LEGACY_CONSTRUCTORS[qualname] or "float32"
        if source.kind is Kind.UNKNOWN and source.grad is not Grad.NO:
            # Data or a tensor: fresh from data, the tensor itself otherwise.
            return tensor(Grad.UNKNOWN, Device.UNKNOWN if "device" not in keywords else self._device_keyword(node, keywords), dtype)
        return tensor(Grad.NO, self._device_keyword(node, keywords), dtype)

    def _factory(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        name = qualname.rpartition(".")[2]
        requires_grad = _kwarg(node, "requires_grad")
        grad = Grad.NO
        if requires_grad is not None:
            literal = _literal_bool(requires_grad)
            grad = Grad.UNKNOWN if literal is None else (Grad.YES if literal else Grad.NO)
        source = args[0] if args else UNKNOWN
        dtype = keywords.get("dtype").dtype if keywords.get("dtype") is not None else None  # type: ignore[union-attr]
        device = self._device_keyword(node, keywords)
        if name.endswith("_like") or (name in ("tensor", "as_tensor", "asarray") and source.kind is Kind.TENSOR):
            if source.kind is Kind.TENSOR and "device" not in keywords:
                device = source.device
            if name == "as_tensor" and requires_grad is None:
                grad = source.grad
            dtype = dtype or source.dtype
        elif name in ("from_numpy", "as_tensor", "tensor", "asarray") and dtype is None:
            dtype = source.dtype
            if dtype is None and name != "from_numpy" and node.args:
                literal = arrays.literal_dtype(node.args[0])
                dtype = _TORCH_LITERAL_DTYPES.get(literal, literal)  # type: ignore[arg-type]
        elif name in ("randint", "randperm") and dtype is None:
            dtype = "int64"
        elif name == "arange" and dtype is None and all(a.kind is Kind.NUMBER for a in args):
            dtype = _arange_dtype(node)
        shares = None
        if name in ("from_numpy", "as_tensor", "asarray") and node.args and isinstance(node.args[0], ast.Name):
            shares = node.args[0].id
        facts = frozenset({"from-numpy"}) if name == "from_numpy" else frozenset()
        return tensor(grad, device, dtype, shares_with=shares, facts=facts)

    def _device_keyword(self, node: ast.Call, keywords: dict[str | None, Value]) -> Device:
        if "device" not in keywords:
            return Device.CPU
        expression = _kwarg(node, "device")
        return _device_from(keywords["device"], expression)

    def _values_indices(self, source: Value) -> Value:
        values = tensor(source.grad, source.device, source.dtype) if source.kind is Kind.TENSOR else Value(device=source.device)
        indices = tensor(Grad.NO, source.device if source.kind is Kind.TENSOR else Device.UNKNOWN, "int64")
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(values, indices), fields=(("values", values), ("indices", indices)))

    def _numpy_call(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        name = qualname[len("numpy."):]
        if K.dtype_from_qualname(qualname) is not None and not args:
            return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=K.dtype_from_qualname(qualname))
        if name in ("ndarray", "generic") or name.startswith(("random.seed", "testing.", "save", "savez", "copyto", "put")):
            return OTHER
        return arrays.numpy_call(qualname, node, args, keywords)

    def _call_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        kind = receiver.kind
        if kind is Kind.MODULE:
            if name in _MODULE_DTYPE_METHODS or name in ("cuda", "cpu", "train", "eval", "requires_grad_", "apply", "share_memory", "zero_grad"):
                device = receiver.device
                if name == "cuda":
                    device = Device.ACCELERATOR
                elif name == "cpu":
                    device = Device.CPU
                elif name == "to":
                    device = self._to_device(node, args, keywords, receiver.device)
                facts = receiver.facts - {"self"}
                if name == "requires_grad_" and node.args and _literal_bool(node.args[0]) is False:
                    facts = facts - {"parametrized"}
                return receiver.with_(device=device, facts=facts, dtype=self._module_dtype(receiver, name, node, args, keywords))
            if name in ("parameters", "buffers"):
                grad = Grad.YES if name == "parameters" else Grad.NO
                return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=tensor(grad, receiver.device, facts=frozenset({"parameter"})))
            if name in ("named_parameters", "named_buffers"):
                grad = Grad.YES if name == "named_parameters" else Grad.NO
                item = Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(_STRING, tensor(grad, receiver.device)))
                return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=item)
            if name == "state_dict":
                keep_vars = _kwarg(node, "keep_vars")
                grad = Grad.NO if keep_vars is None or _literal_bool(keep_vars) is False else Grad.UNKNOWN
                return Value(kind=Kind.MAPPING, grad=Grad.NO, element=tensor(grad, receiver.device))
            if name == "forward":
                return self._module_output(receiver, args)
            if name in ("modules", "children", "named_modules", "named_children"):
                return Value(kind=Kind.ITERABLE, grad=Grad.NO)
            return UNKNOWN
        if kind is Kind.MAPPING:
            if name in ("values",):
                return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=receiver.element)
            if name == "items" and receiver.element is not None:
                item = Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(UNKNOWN, receiver.element))
                return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=item)
            if name in ("get", "pop") and receiver.element is not None:
                return receiver.element
            return UNKNOWN
        if kind is Kind.NDARRAY:
            return self._ndarray_method(receiver, name, node, args)
        if kind is Kind.DTYPE:
            return arrays.dtype_method(receiver, name, node)
        if kind is Kind.TENSOR or (kind is Kind.UNKNOWN and name in K.TORCH_ONLY_METHODS):
            return self._tensor_method(receiver, name, node, args, keywords)
        if kind is Kind.SEQUENCE and name in ("pop", "copy"):
            return _element_of(receiver) if name == "pop" else receiver
        if _FOREIGN_FACT in receiver.facts:
            return _FOREIGN
        if kind is Kind.OTHER and "distribution" in receiver.facts and name in ("sample", "sample_n", "enumerate_support"):
            # Distribution.sample runs under no_grad (rsample is the differentiable one).
            return tensor(Grad.NO, receiver.device, receiver.dtype)
        if kind is Kind.UNKNOWN:
            return self._unknown_method(receiver, name, node)
        return UNKNOWN

    def _unknown_method(self, receiver: Value, name: str, node: ast.Call) -> Value:
        """Methods that say what they return whatever the receiver (a tensor, an array, a module...)."""
        if name == "state_dict":
            # Module and optimizer state: values are detached unless keep_vars=True.
            keep_vars = _kwarg(node, "keep_vars")
            grad = Grad.NO if keep_vars is None or _literal_bool(keep_vars) is False else Grad.UNKNOWN
            return Value(kind=Kind.MAPPING, grad=Grad.NO, element=Value(grad=grad))
        if name in K.INTEGER_RESULT_METHODS:
            return Value(grad=Grad.NO, dtype="int64")  # an integer tensor or array
        if name in ("size", "dim", "numel", "nelement", "ndimension", "item") and (name != "size" or node.args):
            return NUMBER  # `.size(0)` is a tensor's (an array's `size` is not callable)
        return UNKNOWN

    def _tensor_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        plain = receiver.with_(elements=None, element=None, fields=(), facts=frozenset(), shares_with=None, kind=Kind.TENSOR)
        if name == "numpy":
            return ndarray(receiver.dtype, shares_with=_root_name(node.func.value))  # type: ignore[attr-defined]
        if name in ("detach", "detach_"):
            return plain.with_(grad=Grad.NO, facts=receiver.facts & _TENSOR_VIEW_FACTS)
        if name in ("to_sparse", "to_sparse_coo", "to_sparse_csr", "to_sparse_csc", "to_sparse_bsr"):
            return plain.with_(facts=frozenset({"sparse"}))
        if name in ("conj", "adjoint"):
            return plain.with_(facts=frozenset({"conj"}))
        if name == "cpu":
            return plain.with_(device=Device.CPU)
        if name == "cuda":
            return plain.with_(device=Device.ACCELERATOR)
        if name == "to":
            dtype = next((a.dtype for a in [*args, *keywords.values()] if a.kind is Kind.DTYPE), None)
            return plain.with_(device=self._to_device(node, args, keywords, receiver.device), dtype=dtype or receiver.dtype)
        if name == "requires_grad_":
            literal = _literal_bool(node.args[0]) if node.args else True
            kw = _kwarg(node, "requires_grad")
            if kw is not None:
                literal = _literal_bool(kw)
            return plain.with_(grad=Grad.UNKNOWN if literal is None else (Grad.YES if literal else Grad.NO))
        if name in K.INTEGER_METHODS:
            return plain.with_(grad=Grad.NO, dtype=K.INTEGER_METHODS[name])
        if name in K.FLOAT_METHODS:
            return plain.with_(dtype=K.FLOAT_METHODS[name])
        if name in ("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"):
            return plain.with_(grad=Grad.NO)
        if name in K.VALUES_INDICES_METHODS or (name in K.VALUES_INDICES_WITH_DIM and (args or keywords)):
            return self._values_indices(plain)
        if name == "size" and not node.args:
            return _SHAPE
        if name in K.NON_TENSOR_METHODS:
            return NUMBER if name in ("item", "dim", "numel", "nelement", "ndimension", "element_size", "get_device") else OTHER
        if name in ("type",) and node.args:
            dtype = _dtype_of_expression(node.args[0], args[0])
            device = plain.device
            # `.type(torch.LongTensor)`, `.type("torch.cuda.FloatTensor")`: a tensor type names dtype and device.
            spelled = node.args[0].value if isinstance(node.args[0], ast.Constant) else self.facts.qualname(node.args[0])
            if isinstance(spelled, str) and spelled.replace(".cuda.", ".") in K.LEGACY_CONSTRUCTORS:
                dtype = K.LEGACY_CONSTRUCTORS[spelled.replace(".cuda.", ".")] or "float32"
                device = Device.ACCELERATOR if ".cuda." in spelled else Device.CPU
            return plain.with_(dtype=dtype, device=device, grad=Grad.NO if dtype in INTEGER_DTYPES else plain.grad)
        if name in ("type_as", "view_as", "expand_as", "reshape_as") and args:
            other = args[0]
            return plain.with_(dtype=other.dtype if name == "type_as" else plain.dtype)
        if name in ("chunk", "split", "unbind", "tensor_split"):
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=plain)
        if name in ("masked_fill", "where", "add", "sub", "mul", "div", "matmul", "mm", "bmm", "cat", "index_add", "scatter", "lerp"):
            flat = _operands([plain], [*args, *keywords.values()])
            return plain.with_(grad=any_grad([a.grad for a in flat]))
        return plain

    def _ndarray_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value]) -> Value:
        return arrays.method(receiver, name, node, args)

    def _module_dtype(self, module: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> str | None:
        """The parameters' dtype after ``module.<name>(...)``."""
        if name in K.FLOAT_METHODS:
            return K.FLOAT_METHODS[name]
        if name == "to":
            dtype = next((a for a in [*args, *keywords.values()] if a.kind in (Kind.DTYPE, Kind.TENSOR)), None)
            if dtype is not None:
                return dtype.dtype
            return None if "dtype" in keywords else module.dtype  # a dtype held in a variable
        if name == "type" and node.args:
            return _dtype_of_expression(node.args[0], args[0])
        return module.dtype

    def _to_device(self, node: ast.Call, args: list[Value], keywords: dict[str | None, Value], current: Device) -> Device:
        if "device" in keywords:
            return _device_from(keywords["device"], _kwarg(node, "device"))
        for expression, value in zip(node.args, args):
            if value.kind is Kind.DTYPE:
                continue
            if value.kind is Kind.TENSOR:
                return value.device
            return _device_from(value, expression)
        return current

    def _module_output(self, module: Value, args: list[Value]) -> Value:
        flat = _flatten(args)
        inputs = [a for a in flat if a.kind in (Kind.TENSOR, Kind.UNKNOWN)]
        grad = Grad.YES if "parametrized" in module.facts else any_grad([a.grad for a in inputs])
        device = any_device([module.device, *(a.device for a in inputs)])
        return tensor(grad, device)

    def _qualified_value(self, qualname: str) -> Value:
        dtype = K.dtype_from_qualname(qualname)
        if dtype is not None:
            return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=dtype)
        if qualname.startswith(("torch", "numpy")):
            return OTHER
        if qualname.partition(".")[0] in K.FOREIGN_LIBRARIES:
            return _FOREIGN
        return UNKNOWN

    def _annotation_value(self, annotation: ast.expr | None) -> Value:
        if annotation is None:
            return UNKNOWN
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return UNKNOWN
        members = _union_members(annotation, self.facts)
        if members is not None:
            # Optional[Tensor], Tensor | None: a tensor whenever it is used as one. A union with
            # arrays, numbers or sequences is not known to be a tensor.
            members = [member for member in members if not _is_none(member)]
            values = [self._annotation_value(member) for member in members]
            if values and all(value.kind is Kind.TENSOR for value in values):
                return values[0]
            if any(value.kind is Kind.TENSOR for value in values) and all(
                value.kind in (Kind.TENSOR, Kind.UNKNOWN) and not self._is_container_annotation(member)
                for member, value in zip(members, values)
            ):
                return Value(kind=Kind.TENSOR)
            return UNKNOWN
        qualname = self.facts.qualname(annotation)
        if qualname in K.TENSOR_CLASSES:
            return Value(kind=Kind.TENSOR)
        if qualname in K.NDARRAY_CLASSES:
            return ndarray()
        array_qualname = self.facts.qualname(annotation.value) if isinstance(annotation, ast.Subscript) else qualname
        if array_qualname == "numpy.typing.NDArray":
            return ndarray()
        if qualname is not None and qualname.startswith("numpy."):
            return Value(kind=Kind.OTHER, grad=Grad.NO)  # npt.ArrayLike, np.float32: not a tensor
        if isinstance(annotation, ast.Name) and annotation.id in ("int", "float", "bool"):
            return NUMBER
        if isinstance(annotation, ast.Name) and annotation.id == "str":
            return _STRING
        return UNKNOWN

    def _is_container_annotation(self, annotation: ast.expr) -> bool:
        """``List[Tensor]``, ``dict``, ``Sequence[float]``...: a container, not a tensor."""
        container = annotation.value if isinstance(annotation, ast.Subscript) else annotation
        name = (self.facts.qualname(container) or getattr(container, "id", "")).rpartition(".")[2]
        return name.lower() in _CONTAINER_ANNOTATIONS

    def _grad_switch(self, node: ast.expr) -> bool | None:
        """Grad mode inside ``with node:`` or under ``@node``, or None if it does not switch."""
        call = node if isinstance(node, ast.Call) else None
        qualname = self.facts.qualname(call.func if call else node)
        if qualname in K.GRAD_MODE_SWITCHES:
            if call is not None and call.args and qualname.endswith("inference_mode"):
                mode = _literal_bool(call.args[0])
                return None if mode is None else not mode
            return K.GRAD_MODE_SWITCHES[qualname]
        if qualname in K.SET_GRAD_ENABLED and call is not None and call.args:
            return _literal_bool(call.args[0])
        return None

    # ----------------------------------------------------------------- guards
    def _refine(self, test: ast.expr) -> tuple[Env, Env]:
        """Environments for the true and false branches of ``test``."""
        true_env, false_env = dict(self.state.env), dict(self.state.env)
        for name, when_true, when_false in self._guard_facts(test):
            # Facts about one name add up (`not t.requires_grad and t.device.type == "cpu"`).
            if when_true is not None:
                true_env[name] = _refined(true_env.get(name, UNKNOWN), when_true)
            if when_false is not None:
                false_env[name] = _refined(false_env.get(name, UNKNOWN), when_false)
        return true_env, false_env

    def _guard_facts(self, test: ast.expr) -> Iterator[tuple[str, dict[str, object] | None, dict[str, object] | None]]:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            for name, when_true, when_false in self._guard_facts(test.operand):
                yield name, when_false, when_true
            return
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for value in test.values:
                for name, when_true, _ in self._guard_facts(value):
                    yield name, when_true, None
            return
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
            # `a or b` is false only when every operand is: all their false-branch facts hold.
            for value in test.values:
                for name, _, when_false in self._guard_facts(value):
                    yield name, None, when_false
            return
        if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name):
            name = test.value.id
            if test.attr == "requires_grad":
                yield name, {"grad": Grad.YES}, {"grad": Grad.NO}
            elif test.attr == "is_cuda":
                yield name, {"device": Device.ACCELERATOR}, {"device": Device.UNKNOWN}
            elif test.attr == "is_cpu":
                yield name, {"device": Device.CPU}, {"device": Device.MAYBE}
            return
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2:
            subject, classes = test.args
            if isinstance(subject, ast.Name):
                names = classes.elts if isinstance(classes, ast.Tuple) else [classes]
                qualnames = [self.facts.qualname(c) for c in names]
                if len(qualnames) == 1 and qualnames[0] in K.TENSOR_CLASSES:
                    # Not a torch.Tensor: not a tensor at all (not a Parameter says nothing).
                    yield subject.id, {"kind": Kind.TENSOR}, _NOT_TENSOR if qualnames[0] == "torch.Tensor" else None
                elif len(qualnames) == 1 and qualnames[0] in K.NDARRAY_CLASSES:
                    yield subject.id, {"kind": Kind.NDARRAY}, None
                if all(self._is_non_tensor_class(c, q) for c, q in zip(names, qualnames)):
                    yield subject.id, _NOT_TENSOR, None
            return
        if isinstance(test, ast.Call) and self.facts.qualname(test.func) == "torch.is_tensor" and test.args:
            if isinstance(test.args[0], ast.Name):
                yield test.args[0].id, {"kind": Kind.TENSOR}, _NOT_TENSOR
            return
        if isinstance(test, ast.Call) and self.facts.qualname(test.func) == "numpy.isscalar" and test.args:
            if isinstance(test.args[0], ast.Name):
                yield test.args[0].id, _NOT_TENSOR, None  # a tensor, even a 0-d one, is no NumPy scalar
            return
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            device_name = _device_type_subject(test.left)
            other = test.comparators[0]
            if device_name is None:
                device_name = _device_type_subject(other)
                other = test.left
            if device_name is not None and isinstance(other, ast.Constant) and isinstance(other.value, str):
                is_cpu = other.value == "cpu"
                equal = {"device": Device.CPU if is_cpu else Device.ACCELERATOR}
                differ = {"device": Device.MAYBE if is_cpu else Device.UNKNOWN}
                if isinstance(test.ops[0], (ast.Eq, ast.Is)):
                    yield device_name, equal, differ
                elif isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
                    yield device_name, differ, equal
            dtype_name = test.left.value.id if _is_dtype_of_name(test.left) else None  # type: ignore[attr-defined]
            dtypes = self._named_dtypes(test.comparators[0])
            if dtype_name is not None and dtypes:
                # `t.dtype == torch.bool`, `t.dtype in (torch.int32, torch.int64)`: an integer tensor needs no grad.
                known: dict[str, object] | None = None
                if all(dtype in INTEGER_DTYPES for dtype in dtypes):
                    known = {"dtype": dtypes[0] if len(dtypes) == 1 else "int64", "grad": Grad.NO}
                elif len(dtypes) == 1:
                    known = {"dtype": dtypes[0]}
                if isinstance(test.ops[0], (ast.Eq, ast.Is, ast.In)):
                    yield dtype_name, known, None
                elif isinstance(test.ops[0], (ast.NotEq, ast.IsNot, ast.NotIn)):
                    yield dtype_name, None, known

    def _named_dtypes(self, node: ast.expr) -> list[str]:
        """``torch.int64`` or a tuple/list/set of such -> their dtypes; [] if any is not one."""
        parts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        dtypes = [K.dtype_from_qualname(self.facts.qualname(part) or "") for part in parts]
        return [dtype for dtype in dtypes if dtype is not None] if all(dtypes) else []

    def _is_non_tensor_class(self, node: ast.expr, qualname: str | None) -> bool:
        if qualname is not None:
            return qualname in K.NON_TENSOR_CLASSES
        return isinstance(node, ast.Name) and node.id in K.NON_TENSOR_BUILTINS and node.id not in self.state.env

    # ----------------------------------------------------------------- plumbing
    def _notify(self, node: ast.AST) -> None:
        if self.listener is not None:
            self.listener(node, self.state)


def _attribute_key(node: ast.expr) -> str | None:
    """``self.x`` -> ``"self.x"``: how an attribute stored in a function is kept in its environment."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _caller_supplied(value: Value) -> Value:
    """A parameter: whatever a caller passes, e.g. a model output that requires grad on a GPU."""
    if value.kind in (Kind.TENSOR, Kind.UNKNOWN) and value == Value(kind=value.kind):
        return value.with_(grad=Grad.MAYBE, device=Device.MAYBE)
    return value


def _union_members(annotation: ast.expr, facts: FileFacts) -> list[ast.expr] | None:
    """The members of ``A | B``, ``Optional[A]`` or ``Union[A, B]``, else None."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return [*(_union_members(annotation.left, facts) or [annotation.left]), *(_union_members(annotation.right, facts) or [annotation.right])]
    if isinstance(annotation, ast.Subscript):
        qualname = facts.qualname(annotation.value) or ""
        if qualname.rpartition(".")[2] in ("Optional", "Union") and qualname.partition(".")[0] in ("typing", "typing_extensions"):
            index = annotation.slice
            return list(index.elts) if isinstance(index, ast.Tuple) else [index]
    return None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_staticmethod(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def _refined(value: Value, changes: dict[str, object]) -> Value:
    if changes is _NOT_TENSOR:
        return UNKNOWN if value.kind is Kind.TENSOR else value
    if "kind" in changes and value.kind not in (Kind.UNKNOWN, changes["kind"]):
        return value
    if "kind" in changes and value.kind is Kind.UNKNOWN:
        if changes["kind"] is Kind.TENSOR:
            return Value(kind=Kind.TENSOR, grad=value.grad, device=value.device)
        return ndarray()
    if "device" in changes and changes["device"] is Device.UNKNOWN and value.device is Device.CPU:
        return value
    return value.with_(**changes)


def _is_dtype_of_name(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name)


def _device_type_subject(node: ast.expr) -> str | None:
    """``x.device.type`` or ``str(x.device)`` -> ``x``."""
    if isinstance(node, ast.Attribute) and node.attr == "type" and isinstance(node.value, ast.Attribute):
        if node.value.attr == "device" and isinstance(node.value.value, ast.Name):
            return node.value.value.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        inner = node.args[0]
        if isinstance(inner, ast.Attribute) and inner.attr == "device" and isinstance(inner.value, ast.Name):
            return inner.value.id
    return None


def _terminates(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.If):
        return _terminates(last.body) and _terminates(last.orelse)
    return False


def _element_of(value: Value) -> Value:
    if value.element is not None:
        return value.element
    if value.elements:
        result = value.elements[0]
        for element in value.elements[1:]:
            result = join(result, element)
        return result
    if value.kind is Kind.TENSOR:
        return value.with_(facts=frozenset(), shares_with=None)
    if value.kind is Kind.NDARRAY:
        return Value(grad=Grad.NO, device=Device.CPU)
    if value.grad is Grad.NO and value.kind is Kind.UNKNOWN:
        return Value(grad=Grad.NO)
    return UNKNOWN


def _flatten(values: Iterable[Value]) -> list[Value]:
    flat: list[Value] = []
    for value in values:
        if value.kind is Kind.SEQUENCE:
            if value.elements is None and value.element is None:
                flat.append(UNKNOWN)  # items not known: any of them may be a tensor that requires grad
            else:
                flat.extend(_flatten(value.elements or ([value.element] if value.element else [])))
        else:
            flat.append(value)
    return flat


def _operands(inputs: Iterable[Value], others: Iterable[Value]) -> list[Value]:
    """The values an op's result takes its grad and device from.

    Every tensor counts, and so does a value of unknown kind passed as the op's input. Elsewhere
    (`torch.sum(t, dim)`, `t * scale`, `F.interpolate(t, size=n)`) a value of unknown kind may be a
    size or a scale: that a caller supplies it is no evidence that it requires grad.
    """
    flat = [value for value in _flatten(inputs) if value.kind in (Kind.TENSOR, Kind.UNKNOWN)]
    for value in _flatten(others):
        if value.kind is Kind.TENSOR:
            flat.append(value)
        elif value.kind is Kind.UNKNOWN:
            flat.append(
                value.with_(
                    grad=Grad.UNKNOWN if value.grad is Grad.MAYBE else value.grad,
                    device=Device.UNKNOWN if value.device is Device.MAYBE else value.device,
                )
            )
    return flat


def _keeps_grad(node: ast.expr, value: Value) -> bool:
    """Leaves created with requires_grad (and Parameters) require grad even under no_grad."""
    return value.grad is Grad.YES and ("parameter" in value.facts or (isinstance(node, ast.Call) and _kwarg(node, "requires_grad") is not None))


def _kwarg(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def _literal_bool(node: ast.expr | None) -> bool | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int)):
        return bool(node.value)
    return None


def _root_name(node: ast.expr) -> str | None:
    """The variable at the root of a chain: ``t`` in ``t.detach().cpu()`` and ``t[0].detach()``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            node = node.func.value
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return None


def _device_from(value: Value, expression: ast.expr | None = None) -> Device:
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return Device.CPU if expression.value.split(":")[0] == "cpu" else Device.ACCELERATOR
    if isinstance(expression, ast.Constant) and isinstance(expression.value, int) and not isinstance(expression.value, bool):
        return Device.ACCELERATOR  # a CUDA ordinal
    if value.kind is Kind.DEVICE:
        return value.device if value.device is not Device.UNKNOWN else Device.MAYBE
    if value.kind is Kind.STRING:
        return Device.MAYBE
    # A device held in a variable is configurable: it may be an accelerator.
    return Device.MAYBE


def _dtype_of_expression(node: ast.expr, value: Value | None) -> str | None:
    if value is not None and value.kind is Kind.DTYPE:
        return value.dtype
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return K.dtype_from_string(node.value)
    if isinstance(node, ast.Name):
        return K.dtype_from_builtin(node.id)
    return None


def _arange_dtype(node: ast.Call) -> str:
    numbers = [a for a in node.args if isinstance(a, ast.Constant)]
    return "float32" if any(isinstance(a.value, float) for a in numbers) else "int64"
