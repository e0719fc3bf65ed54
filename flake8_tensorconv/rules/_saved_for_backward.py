"""Whether autograd may have kept a tensor for backward before an in-place write into it.

TCV104 asks this at a write through ``.data`` (``dots.data.masked_fill_(mask, v)``,
``buf = out.data; buf.zero_()``): the write changes what backward reads, silently,
only where some recorded op kept the tensor, either

- the op that made it, which keeps its own result (``exp``, ``sigmoid``, ``softmax``), or
- an op that read it before the write and keeps its inputs (``w * x``, ``matmul``, a
  layer's input), also through a view of it (the view shares its memory).

What ops keep is data (``knowledge.SAVED_FOR_BACKWARD``); an op that is not there, a call
of the project's code, a module of unknown class, a parameter of the function, a name
bound out of sight: any of them may have kept it, so the answer is "kept" (unknown is no
evidence of safety). The project's code is followed where its class is in sight: a method of
the file's class, and the ``forward`` of a layer that ``__init__`` builds from a module class of
the file or of another module of the package (``self.net = Net(...)``, ``Net`` imported; the
package is read then, through its oracle). Asked only at such writes, from the scope's bindings
index: no eager work.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.rules.base import Context
from flake8_tensorconv.trees import is_number_literal, is_self_attribute, last_name, name_chain, statements_after
from flake8_tensorconv.values import UNKNOWN, Grad, Kind, Value

if TYPE_CHECKING:
    from collections.abc import Callable

    from flake8_tensorconv.inference.bindings import Scope
    from flake8_tensorconv.inference.files import FileFacts
    from flake8_tensorconv.inference.package import PackageOracle

# How deep names bound to views or aliases of other names are followed.
_DEPTH = 4
# Per process: (path, text, class, line of forward, depth) of a layer of another module -> whether its forward's result
# may be kept (only answers that read no further module: they rest on that module's text alone).
_FORWARDS_KEPT: dict[tuple, bool] = {}
_MAX_FORWARDS_KEPT = 4096
# Methods of `nn.Module` that return the module itself.
_RETURN_THE_MODULE = frozenset("to cuda cpu float double half bfloat16 train eval requires_grad_ type share_memory".split())
# How many functions that return a layer (``def resnet18(n): return ResNet(...)``) are followed to its class.
_MAX_BUILDER_HOPS = 2
# Methods and builtins that only describe a tensor or read its values as Python data: no graph records them.
_DESCRIBING_METHODS = K.NUMBER_METHODS | frozenset(
    "size stride dim is_contiguous is_floating_point is_complex data_ptr tolist numpy detach".split()
)
_READING_BUILTINS = frozenset("len print str repr format isinstance type id hasattr getattr float int bool".split())
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


class Binding(NamedTuple):
    """Where a name gets the tensor (as the scope's bindings index says), and what it is bound to (None: out of sight)."""

    position: tuple[int, int]
    value: ast.expr | None


def start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]


def kept_for_backward(receiver: ast.expr, write: tuple[int, int], ctx: Context, parents: dict[int, ast.AST]) -> bool:
    """Whether an op recorded before ``write`` (a position) may have kept the tensor ``receiver`` holds, or the
    tensor it is a view of, for its backward. ``parents``: the parent of each node of the scope."""
    module = _Module(ctx.facts, ctx.path, ctx.value, ctx.qualname, ctx.package_oracle)
    question = _Question(module, parents, write, ctx.state.function or ctx.facts.tree, ctx.state.class_name)
    try:
        return question.kept(receiver, 0)
    finally:
        if question.read_package:
            oracle = ctx.package_oracle()
            if oracle is not None:
                ctx.dependencies.update(oracle.read)  # the answer rests on the modules read


class _Module(NamedTuple):
    """The file a question is asked in: the linted file (what its walk knows of each node), or another module of the
    package (nothing known of its values: unknown, which keeps every op whose answer would need them)."""

    facts: FileFacts
    path: str | None
    value: Callable[[ast.expr], Value]
    qualname: Callable[[ast.expr], str | None]
    oracle: Callable[[], PackageOracle | None]


class _Question:
    def __init__(
        self,
        module: _Module,
        parents: dict[int, ast.AST],
        write: tuple[int, int],
        function: ast.AST,
        class_name: str | None,
    ) -> None:
        """``function`` and ``class_name``: the function (and its class) the question is about, the one being walked
        or one whose result it writes into (a method of the file, a layer's ``forward`` of another module)."""
        self.module = module
        self.facts = module.facts
        self.parents = parents
        self.write = write
        self.scope = module.facts.scopes.of(function)
        self.class_name = class_name
        self.read_package = False

    def kept(self, node: ast.expr, depth: int) -> bool:
        """The tensor of ``node`` (an expression evaluated before the write) may be kept."""
        if depth > _DEPTH:
            return True
        base = self._view_base(node)
        if base is not node:
            return self.kept(base, depth + 1)  # a view or an alias: the memory is the base's
        if isinstance(node, ast.Name):
            return self._name_kept(node.id, depth, self.write)
        return self._result_kept(node, depth)

    # ------------------------------------------------------------------ the tensor a name holds at the write
    def _name_kept(self, name: str, depth: int, at: tuple[int, int]) -> bool:
        """The tensor that ``name`` holds at ``at`` (the write, or a binding of ``name`` to a view of itself)."""
        if depth > _DEPTH:
            return True
        scope = self.scope
        loop = self._loop_around_write() if at == self.write else None
        bindings = self._reaching(name, loop, at)
        if not bindings or any(binding.value is None for binding in bindings):
            return True  # a parameter, a loop target, unpacked, bound in another scope: made out of sight
        for binding in bindings:
            base = self._view_base(binding.value)  # type: ignore[arg-type]
            if isinstance(base, ast.Name) and base.id == name and base is not binding.value:
                # `attn = attn.view(n, -1)`: the same memory as the tensor the name held before this binding
                if binding.position > at or self._name_kept(name, depth + 1, binding.position):
                    return True
            elif self._result_kept(binding.value, depth):  # type: ignore[arg-type]
                return True
        first = min(binding.position for binding in bindings)
        values = [(start(binding.value), end(binding.value)) for binding in bindings]  # type: ignore[arg-type]
        # In a loop that the tensor's first binding is outside of (or that binds it again after the write), reads
        # after the write come before the write of the next pass.
        again = loop is not None and (not loop[0] <= first <= loop[1] or any(binding.position > self.write for binding in bindings))
        for load in scope.loads(name):
            position = start(load)
            if not (first < position < at or (again and loop[0] <= position <= loop[1])):  # type: ignore[index]
                continue
            if any(low <= position < high for low, high in values):
                continue  # read by the value of a binding: an older tensor than the one written
            if self._reader_keeps(load, depth):
                return True
        return False

    def _reaching(self, name: str, loop: tuple[tuple[int, int], tuple[int, int]] | None, at: tuple[int, int]) -> list[Binding]:
        """The bindings of ``name`` that may give the tensor at the write: the last binding before it whose
        statement runs whenever the write does, every binding between the two, and bindings after the write
        in a loop around it (the next pass writes into what they give)."""
        scope = self.scope
        every = scope.bindings.get(name, ())
        reaching = [binding for binding in every if binding.position > at and loop is not None and loop[0] <= binding.position <= loop[1]]
        stores = {start(store): store for store in scope.stores(name)}
        for binding in reversed([binding for binding in every if binding.position < at]):
            reaching.append(binding)
            store = stores.get(binding.position)
            if store is not None and self._runs_before(store, at):
                return reaching
        if name in scope.parameters:
            reaching.append(Binding((0, 0), None))  # no binding always runs first: the caller's tensor may
        return reaching

    def _runs_before(self, store: ast.AST, at: tuple[int, int]) -> bool:
        """The statement of ``store`` lies in a block that also holds (a statement around) ``at``, earlier."""
        return any(start(later) <= at <= end(later) for later in statements_after(self._statement(store), self.parents))

    def _loop_around_write(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """The span of the innermost loop around the write, if any."""
        loops = [
            (start(node), end(node))
            for node in self.parents.values()
            if isinstance(node, _LOOPS) and start(node) <= self.write <= end(node)
        ]
        return max(loops, default=None)

    def _statement(self, node: ast.AST) -> ast.AST:
        while not isinstance(node, ast.stmt) and id(node) in self.parents:
            node = self.parents[id(node)]
        return node

    def _view_base(self, node: ast.expr) -> ast.expr:
        """What ``node`` is a view or an alias of (``x`` of ``x[0]``, ``x.view(-1)``, ``x.data``, ``x.float()``,
        ``torch.squeeze(x, 2)``), else ``node``."""
        if isinstance(node, ast.Subscript):
            return node.value
        if isinstance(node, ast.Attribute) and node.attr in K.ALIASING_ATTRIBUTES:
            return node.value
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            qualname = self.module.qualname(node.func)
            if qualname is not None and qualname.startswith("torch."):
                # `torch.squeeze(x, 2)`: a function of torch, not a method of a tensor named `torch`
                return node.args[0] if qualname in K.ALIASING_FUNCTIONS and node.args and not isinstance(node.args[0], ast.Starred) else node
            if node.func.attr in K.ALIASING_METHODS:
                return node.func.value
        return node

    # ------------------------------------------------------------------ what made it
    def _result_kept(self, node: ast.expr, depth: int) -> bool:
        """The op that made the tensor of ``node`` keeps its result, or ``node`` is a view or alias of a tensor kept."""
        base = self._view_base(node)
        if base is not node:
            return self.kept(base, depth + 1)
        if isinstance(node, ast.Name):
            return self.kept(node, depth + 1)
        if isinstance(node, ast.IfExp):
            return self._result_kept(node.body, depth) or self._result_kept(node.orelse, depth)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.MatMult)):
                return False
            # `x ** 2` keeps `x`, not its result; `x ** y` and `2 ** x` keep the result.
            return not (isinstance(node.op, ast.Pow) and is_number_literal(node.right) and not is_number_literal(node.left))
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, (ast.USub, ast.UAdd))
        if isinstance(node, ast.Call):
            qualname = self.module.qualname(node.func)
            if qualname in K.TORCH_FACTORIES or qualname in K.PARAMETER_CLASSES:
                return False  # a fresh tensor: a leaf, which no op made
            own = self._own_method(node) if qualname is None else None
            if own is not None:
                return self._returns_kept(*own, depth)
            saved = self._op(node, qualname)
            if saved is None and qualname is None:
                layers = self._layers_built_in_init(node)
                if layers is not None:
                    return any(self._forward_kept(module, forward, name, depth) for module, forward, name in layers)
            return saved is None or saved.result
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            made = self._stored_just_before_write(node.attr)
            if made is not None:
                return self._result_kept(made, depth + 1)  # `self.w = Parameter(...).to(d)` then `self.w.data.fill_(v)`
        return True

    def _stored_just_before_write(self, attribute: str) -> ast.expr | None:
        """What the statement right before the write's own (in the same block) stores into ``self.<attribute>``: no
        code runs between the two, so the write changes that tensor and nothing has read it since."""
        around = [
            node for node in self.parents.values()
            if isinstance(node, ast.stmt) and start(node) <= self.write <= end(node)
        ]
        statement = max(around, key=start, default=None)
        if statement is None:
            return None
        owner = self.parents.get(id(statement))
        for field in ("body", "orelse", "finalbody"):
            block = getattr(owner, field, None)
            if isinstance(block, list) and statement in block and block.index(statement) > 0:
                before = block[block.index(statement) - 1]
                if isinstance(before, ast.Assign) and len(before.targets) == 1 and is_self_attribute(before.targets[0], attribute):
                    return before.value
        return None

    def _own_method(self, call: ast.Call) -> tuple[ast.FunctionDef, str] | None:
        """The method of a class of the file that ``call`` runs, with its class: ``self.energies(q)`` (a method of
        the class being walked that no other class of the file defines) or ``self.v(x)`` (a layer built in
        ``__init__`` from a module class of the file: its ``forward``). None for any other call, an inherited or a
        decorated method."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" and self.class_name):
            return None
        module = self.facts.class_attributes.get(self.class_name, {}).get(func.attr)
        if module is not None:
            if module.instance_of not in self.facts.module_classes:
                return None
            class_name, method_name = module.instance_of, "forward"
        else:
            class_name, method_name = self.class_name, func.attr
        classes = {cls.name: cls for cls in self.facts.classes}
        method = _defined(classes.get(class_name), method_name)
        if method is None or method.decorator_list:
            return None  # inherited or wrapped: out of sight
        if any(_defined(cls, method_name) is not None for cls in _subclasses(class_name, classes)):
            return None  # `self` may be an instance of a subclass of the file that overrides it
        return method, class_name

    def _layers_built_in_init(self, call: ast.Call) -> list[tuple[_Module, ast.FunctionDef, str]] | None:
        """The ``forward`` methods that ``self.net(x)`` (or ``self.net.forward(x)``) may run, with their modules and
        classes: ``__init__`` binds ``self.net`` (no other method of the class or of a subclass of the file does) only
        to instances of module classes of the file or of the package that define ``forward`` themselves
        (``Net(...)``, ``common.Net(...)``, or a function of the package that returns one, ``resnet18(...)``). None
        where any binding is out of sight."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self" and self.class_name):
            return None
        cls = self.facts.class_defined_once(self.class_name)
        init = _defined(cls, "__init__")
        if cls is None or init is None or func.attr in self.facts.stored_outside_init_of(cls):
            return None
        classes = {each.name: each for each in self.facts.classes}
        if any(func.attr in self.facts.stored_outside_init_of(sub) or func.attr in self.facts.self_stores(_defined(sub, "__init__") or sub)
               for sub in _subclasses(self.class_name, classes)):
            return None  # `self` may be an instance of a subclass of the file that builds another layer
        values = _bound_on_self(init, func.attr)
        if not values:
            return None
        # `self.net = self.net.to(device)`: the layer an earlier binding built, moved.
        values = [value for value in map(_module_itself, values) if not is_self_attribute(value, func.attr)]
        if not values:
            return None
        layers: list[tuple[_Module, ast.FunctionDef, str]] = []
        for value in values:
            found = self._built(self.module, value, self.facts.scopes.of(init), 0)
            if found is None:
                return None
            layers.extend(found)
        return layers

    def _built(self, module: _Module, value: ast.expr, scope: Scope, hops: int) -> list[tuple[_Module, ast.FunctionDef, str]] | None:
        """The module classes (their ``forward``) whose instance ``value``, an expression of ``module`` in ``scope``,
        makes: a call of a class, or of a function whose every return makes one (MAX_BUILDER_HOPS deep)."""
        chain = name_chain(value.func) if isinstance(value, ast.Call) else None
        if chain is None or chain[0] in scope.bindings or chain[0] in scope.parameters or hops > _MAX_BUILDER_HOPS:
            return None
        found = self._definition(module, chain)
        if found is None:
            return None
        where, node = found
        if isinstance(node, ast.ClassDef):
            forward = _defined(node, "forward")
            if forward is None or forward.decorator_list or not self._is_module_class(where, node, 0):
                return None  # inherited or wrapped: out of sight
            return [(where, forward, node.name)]
        if node.decorator_list or isinstance(node, ast.AsyncFunctionDef):
            return None
        returns = where.facts.scopes.of(node).returns()
        if not returns:
            return None
        layers: list[tuple[_Module, ast.FunctionDef, str]] = []
        for statement in returns:
            made = self._built(where, statement.value, where.facts.scopes.of(node), hops + 1) if statement.value is not None else None
            if made is None:
                return None
            layers.extend(made)
        return layers

    def _definition(self, module: _Module, chain: tuple[str, ...]) -> tuple[_Module, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] | None:
        """The class or function that ``chain`` names in ``module``: its own (defined once at the top), or one that it
        imports from another module of the package (read through the package's oracle)."""
        if len(chain) == 1:
            own = module.facts.definitions.get(chain[0], ())
            if len(own) == 1 and own[0] in module.facts.tree.body:
                return module, own[0]  # type: ignore[return-value]
            if own:
                return None
        oracle = module.oracle() if module.path is not None else None
        if oracle is None:
            return None
        self.read_package = True
        definition = oracle.definition(module.path, module.facts, chain)  # type: ignore[arg-type]
        if definition is None:
            return None
        facts = definition.facts
        return _Module(facts, definition.path, _unknown, facts.qualname, module.oracle), definition.node

    def _is_module_class(self, module: _Module, cls: ast.ClassDef, hops: int) -> bool:
        """Whether ``cls`` of ``module`` derives from ``nn.Module``, through bases of its file or of the package."""
        if cls.name in module.facts.module_classes:
            return True
        if hops > _MAX_BUILDER_HOPS:
            return False
        for base in cls.bases:
            chain = name_chain(base)
            found = self._definition(module, chain) if chain is not None else None
            if found is not None and isinstance(found[1], ast.ClassDef) and self._is_module_class(found[0], found[1], hops + 1):
                return True
        return False

    def _returns_kept(self, method: ast.FunctionDef, class_name: str, depth: int) -> bool:
        """Whether what ``method`` returns may be a tensor that an op kept, asked in the method's own scope at each
        ``return`` (what read the tensor there before returning counts, as at a write)."""
        return self._returns_kept_in(self.module, method, class_name, depth)

    def _forward_kept(self, module: _Module, forward: ast.FunctionDef, class_name: str, depth: int) -> bool:
        """``_returns_kept_in`` for a layer's ``forward``; the answer of one in another module that reads no further
        module is kept for the process while that module's text stays the same (asked once per package)."""
        key = (module.path, module.facts.text, class_name, forward.lineno, depth) if module.value is _unknown else None
        if key is not None and key in _FORWARDS_KEPT:
            self.read_package = True
            return _FORWARDS_KEPT[key]
        before, self.read_package = self.read_package, False
        kept = self._returns_kept_in(module, forward, class_name, depth)
        if key is not None and not self.read_package:
            if len(_FORWARDS_KEPT) >= _MAX_FORWARDS_KEPT:
                _FORWARDS_KEPT.clear()
            _FORWARDS_KEPT[key] = kept
        self.read_package = True if key is not None else self.read_package or before
        return kept

    def _returns_kept_in(self, module: _Module, method: ast.FunctionDef, class_name: str, depth: int) -> bool:
        returns = module.facts.scopes.of(method).returns()
        if not returns or any(statement.value is None for statement in returns):
            return True
        parents = {id(child): parent for parent in ast.walk(method) for child in ast.iter_child_nodes(parent)}
        for statement in returns:
            question = _Question(module, parents, start(statement), method, class_name)
            try:
                if question.kept(statement.value, depth + 1):  # type: ignore[arg-type]
                    return True
            finally:
                self.read_package = self.read_package or question.read_package
        return False

    def _op(self, call: ast.Call, qualname: str | None) -> K.Saved | None:
        """What the op that ``call`` runs keeps (None: not known)."""
        if call.keywords and any(keyword.arg == "inplace" for keyword in call.keywords):
            return None  # `F.relu(x, inplace=True)` keeps its result, which is its input
        if qualname is not None:
            if qualname.startswith("torch.") and qualname.count(".") >= 1:
                return K.SAVED_FOR_BACKWARD.get(qualname.rpartition(".")[2])
            return None
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value  # `layer.forward(x)`: the layer's op
        elif isinstance(func, ast.Attribute):
            if self.module.value(func.value).kind is Kind.TENSOR:
                return K.SAVED_FOR_BACKWARD.get(func.attr)  # a tensor method
            if isinstance(func.value, ast.Name) and func.value.id == "self" and self.class_name:
                module = self.facts.class_attributes.get(self.class_name, {}).get(func.attr)
                op = K.SAVED_BY_MODULE.get(module.instance_of or "") if module is not None else None
                return K.SAVED_FOR_BACKWARD.get(op) if op is not None else None  # `self.fc(x)`, a layer built in `__init__`
            return None
        op = K.SAVED_BY_MODULE.get(self.module.value(func).instance_of or "")
        return K.SAVED_FOR_BACKWARD.get(op) if op is not None else None

    # ------------------------------------------------------------------ what read it before the write
    def _reader_keeps(self, load: ast.Name, depth: int) -> bool:
        """The op that reads ``load`` (through views of it) may keep it for backward."""
        node: ast.AST = load
        while True:
            parent = self.parents.get(id(node))
            if isinstance(parent, ast.Subscript):
                if parent.value is not node:
                    return False  # an index: integer or bool, never kept for a gradient
                if not isinstance(parent.ctx, ast.Load):
                    return False  # `x[i] = v` writes into it and keeps nothing of it
                node = parent  # a view (or a copy) of it
            elif isinstance(parent, ast.Attribute):
                call = self.parents.get(id(parent))
                if not (isinstance(call, ast.Call) and call.func is parent):
                    if parent.attr in K.ALIASING_ATTRIBUTES and parent.attr != "data":
                        node = parent  # `x.T`
                        continue
                    return False  # `.shape`, `.dtype`, `.data`: read outside autograd
                method = parent.attr
                if method in _DESCRIBING_METHODS:
                    return False
                if method in K.ALIASING_METHODS:
                    node = call  # `x.view(-1)`, `x.float()`: the same memory
                    continue
                if method.endswith("_") and not method.startswith("_"):
                    return True  # a recorded in-place op: what it keeps is not modelled
                saved = self._op(call, None)
                if saved is None or not saved.inputs:
                    return saved is None
                return not (saved.for_other_operand and all(self._holds_no_grad(a) for a in call.args))
            elif isinstance(parent, (ast.List, ast.Tuple, ast.Starred)):
                holder = self.parents.get(id(parent))
                if isinstance(holder, ast.Call) and parent is not holder.func:
                    return self._argument_keeps(holder, parent)  # `torch.cat([x, y])`
                return True  # a container that holds it: read out of sight
            elif isinstance(parent, ast.keyword):
                return self._argument_keeps(self.parents[id(parent)], node)  # type: ignore[arg-type]
            elif isinstance(parent, ast.Call):
                if parent.func is node:
                    return True
                return self._argument_keeps(parent, node)
            elif isinstance(parent, ast.BinOp):
                other = parent.right if parent.left is node else parent.left
                if isinstance(parent.op, (ast.Add, ast.Sub)):
                    return False
                if isinstance(parent.op, (ast.Mult, ast.MatMult)):
                    return not self._holds_no_grad(other)  # kept only for the other operand's gradient
                if isinstance(parent.op, ast.Div) and parent.left is node:
                    return not self._holds_no_grad(other)
                return True  # a divisor, a power: kept
            elif isinstance(parent, ast.UnaryOp):
                return not isinstance(parent.op, (ast.USub, ast.UAdd, ast.Not, ast.Invert))
            elif isinstance(parent, ast.IfExp) and parent.test is not node:
                node = parent
            elif isinstance(parent, (ast.Compare, ast.BoolOp, ast.IfExp, ast.If, ast.While, ast.Assert, ast.FormattedValue, ast.Expr)):
                return False  # a comparison, a test, a formatted value: read, never kept
            else:
                return True  # bound to another name, stored, returned, handed on: out of sight

    def _argument_keeps(self, call: ast.Call, argument: ast.AST) -> bool:
        qualname = self.module.qualname(call.func)
        if isinstance(call.func, ast.Name) and call.func.id in _READING_BUILTINS and qualname is None:
            return False
        if qualname is None or not qualname.startswith("torch."):
            return True  # a module, a model, the project's code: may keep it
        saved = self._op(call, qualname)
        if saved is None or not saved.inputs:
            return saved is None
        if not saved.for_other_operand:
            return True
        operands = [a for a in call.args if a is not argument and not (isinstance(a, ast.Constant) and isinstance(a.value, str))]
        return not all(self._holds_no_grad(operand) for operand in operands)

    def _holds_no_grad(self, node: ast.expr) -> bool:
        if is_number_literal(node):
            return True
        value = self.module.value(node)
        return value.kind is Kind.NUMBER or (value.kind in (Kind.TENSOR, Kind.NDARRAY) and value.grad is Grad.NO)


def _unknown(node: ast.expr) -> Value:
    return UNKNOWN


def _bound_on_self(init: ast.FunctionDef, name: str) -> list[ast.expr] | None:
    """What ``__init__`` binds to ``self.<name>``, each binding (None where one is not a plain ``self.<name> = ...``:
    unpacked, augmented, set through ``setattr``)."""
    values: list[ast.expr] = []
    for node in ast.walk(init):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for store in ast.walk(target):
                    if is_self_attribute(store, name):
                        if store is not target:
                            return None
                        values.append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.withitem, ast.NamedExpr)):
            target = node.optional_vars if isinstance(node, ast.withitem) else node.target
            if target is not None and any(is_self_attribute(store, name) for store in ast.walk(target)):
                return None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            return None
    return values


def _module_itself(value: ast.expr) -> ast.expr:
    """The module that ``value`` is: ``Net(...)`` of ``Net(...).to(device)`` (``nn.Module``'s ``to``, ``cuda``, ``eval``...
    return the module itself)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _RETURN_THE_MODULE:
        value = value.func.value
    return value


def _defined(cls: ast.ClassDef | None, name: str) -> ast.FunctionDef | None:
    """The method ``name`` that the body of ``cls`` defines, if any."""
    if cls is None:
        return None
    return next((item for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == name), None)


def _subclasses(name: str, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The classes of the file that derive from the class ``name``, directly or through others of the file."""
    found: list[ast.ClassDef] = []
    names = {name}
    changed = True
    while changed:
        changed = False
        for cls in classes.values():
            if cls not in found and any(last_name(base) in names for base in cls.bases):
                found.append(cls)
                names.add(cls.name)
                changed = True
    return found
