"""Statements: how each kind of statement changes the environment and the grad mode."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from flake8_tensorconv import arrays, environments
from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.expressions import concatenated
from flake8_tensorconv.inference.summaries import _bound_values, callable_from_other_modules
from flake8_tensorconv.inference.support import (
    Env,
    State,
    as_data,
    attribute_key,
    element_of,
    is_classmethod,
    is_staticmethod,
    items_without_grad,
    iterates_a_loader,
    kwarg,
    literal_bool,
    terminates,
)
from flake8_tensorconv.trees import child_nodes, is_class_name, last_name
from flake8_tensorconv.values import (
    OTHER,
    UNKNOWN,
    Fact,
    Grad,
    Kind,
    Value,
    join,
    join_all,
    join_envs,
    origin,
    tensor,
)

# Statements that bind nothing unless they complete.
_SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return, ast.Raise, ast.Assert, ast.Delete, ast.Pass)
# Tensor.backward's keywords: a call with others is some other class's method.
_TENSOR_BACKWARD_KEYWORDS = frozenset({"gradient", "retain_graph", "create_graph", "inputs"})


class StatementsMixin:
    # Each statement type's handler (``stmt_<type>``, None: none), per interpreter class, looked up once (as the
    # expressions' handlers are).
    _stmt_handlers: dict[type, Callable[..., None] | None] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._stmt_handlers = {}

    def walk_module(self) -> None:
        self.walk_body(self.facts.tree.body)

    def walk_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> None:
        if self.walks is not None and not self.walks(node):
            return
        outer = self.state
        grad_enabled = outer.grad_enabled if outer.function is not self.facts.tree else True
        if class_name in self.facts.lightning_classes and node.name in K.LIGHTNING_NO_GRAD_HOOKS:
            grad_enabled = False  # Lightning runs validation, test and predict under no_grad
        if class_name in self.facts.optimizer_classes:
            grad_enabled = False  # the parameter update and its state: torch's optimizers run them under no_grad
        if class_name in self.facts.autograd_function_classes and node.name in K.AUTOGRAD_FUNCTION_NO_GRAD_METHODS:
            # torch runs a custom Function's forward and backward with grad mode off; backward only sees grad mode on
            # in a double backward (`create_graph=True`), which the file would have to ask for.
            grad_enabled = node.name == "backward" and "create_graph=True" in (self.facts.text or "")
        args = node.args
        all_args = [*args.posonlyargs, *args.args, *args.kwonlyargs]
        bound_first = class_name is not None and not is_staticmethod(node)
        callers = self._caller_summary(node, class_name) if self.caller_params and len(all_args) > bound_first else None
        if callers is not None and not callers.grad_enabled and not callable_from_other_modules(self.facts, node, class_name):
            grad_enabled = False  # every call runs under no_grad / inference_mode
        if grad_enabled and self.caller_params and node.name in self.facts.forward_hooks and self._hooked_forwards_without_grad(node):
            grad_enabled = False  # a forward hook runs inside the calls of the layers it hooks, all under no_grad here
        for decorator in node.decorator_list:
            switch = self._grad_switch(decorator)
            if switch is not None:
                grad_enabled = switch
        env: Env = {name: value for name, value in outer.env.items()} if class_name is None else {}
        for index, arg in enumerate(all_args):
            if index == 0 and bound_first:
                env[arg.arg] = self._annotation_value(arg.annotation)  # self / cls: not a caller's tensor
                if class_name in self.facts.module_classes and arg.arg == "self":
                    env["self"] = Value(kind=Kind.MODULE, grad=Grad.NO, facts=frozenset({Fact.PARAMETRIZED, Fact.SELF}))
                elif env[arg.arg] == UNKNOWN and not is_classmethod(node):
                    env[arg.arg] = Value(facts=frozenset({Fact.SELF}))  # an instance of a class of the file
            elif not self.caller_params:
                bound = self.bound_parameters.get(arg.arg) if node is self.summary_of else None
                env[arg.arg] = bound if bound is not None else self._annotation_value(arg.annotation)
            else:
                env[arg.arg] = self._parameter_value(node, arg, class_name, callers)
        for arg in (args.vararg, args.kwarg):
            if arg is not None:
                env[arg.arg] = UNKNOWN
        self.state = State(env=env, grad_enabled=grad_enabled, function=node, class_name=class_name)
        try:
            self.walk_body(node.body)
        finally:
            self.state = outer

    def walk_body(self, body: list[ast.stmt]) -> None:
        for statement in body:
            self.walk_statement(statement)

    def walk_statement(self, node: ast.stmt) -> None:
        node_type = node.__class__
        try:
            handler = self._stmt_handlers[node_type]
        except KeyError:
            handler = self._stmt_handlers[node_type] = getattr(type(self), "stmt_" + node_type.__name__, None)
        if handler is not None:
            handler(self, node)
        else:
            for child in child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)
        listener = self.listener  # _notify, inlined: called at every node the walk evaluates
        if listener is not None:
            listener(node, self.state)

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
            if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name):
                self._set_requires_grad(target.value.id, node)

    def _set_requires_grad(self, name: str, node: ast.Assign) -> None:
        """``t.requires_grad = True``: the tensor is a leaf that requires grad from here on (``False``: it no longer
        does), as ``t.requires_grad_()`` makes it."""
        tensor_value = self.state.env.get(name)
        flag = literal_bool(self._literal(node.value))
        if tensor_value is None or tensor_value.kind is not Kind.TENSOR or flag is None or tensor_value.is_integer:
            return
        if flag:
            self.state.env[name] = tensor_value.with_(grad=Grad.YES, facts=tensor_value.facts | {Fact.LEAF}, grad_origin=origin(node))
        else:
            self.state.env[name] = tensor_value.with_(grad=Grad.NO, facts=tensor_value.facts - {Fact.LEAF}, grad_origin=None)

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
            if isinstance(node.op, ast.Add) and left.kind is Kind.SEQUENCE and right.kind is Kind.SEQUENCE:
                self.state.env[node.target.id] = concatenated(left, right)  # `states += [obs]`
            else:
                # In-place arithmetic keeps the target's identity (and its memory).
                self.state.env[node.target.id] = self._binary(left, right, in_place=True)
        else:
            self.eval_target_parts(node.target)
            key = attribute_key(node.target)
            if key is not None and key in self.state.env:
                self.state.env[key] = self._binary(self.state.env[key], right, in_place=True)

    def stmt_Expr(self, node: ast.Expr) -> None:
        self.eval(node.value)
        if isinstance(node.value, ast.Call):
            self._mutation(node.value)
            self._backward(node.value)
            qualname = self.facts.qualname(node.value.func)
            if qualname in K.SET_GRAD_ENABLED:
                enabled = literal_bool(node.value.args[0]) if node.value.args else None
                if enabled is not None:
                    self.state.grad_enabled = enabled

    def _backward(self, call: ast.Call) -> None:
        """``loss.backward()`` with grad mode on: ``loss`` requires grad (backward raises on a tensor that does not)."""
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr == "backward" and isinstance(func.value, ast.Name)) or not self.state.grad_enabled:
            return
        current = self.state.env.get(func.value.id, UNKNOWN)
        if current.kind is Kind.UNKNOWN and (
            any(keyword.arg not in _TENSOR_BACKWARD_KEYWORDS for keyword in call.keywords)
            or any("backward" in self.facts.class_members.get(cls.name, ()) for cls in self.facts.classes)
        ):
            return  # another class's `backward` (a Grad-CAM's `backward(ids=...)`), not autograd's
        if current.kind in (Kind.TENSOR, Kind.UNKNOWN) and current.grad is not Grad.YES:
            where = origin(call, f"`{func.value.id}.backward()`")
            self.state.env[func.value.id] = tensor(Grad.YES, current.device, current.dtype, grad_origin=where, device_origin=current.device_origin)

    def _mutation(self, call: ast.Call) -> None:
        """Method calls that change what a variable holds: ``lst.append(a)``, ``a.setflags(write=False)``."""
        func = call.func
        frozen = _freezing_call(call)
        if frozen is not None:
            # `model.m.requires_grad_(False)`, `net.eval().requires_grad_(False).to(d)`: from here on the tensor (or the
            # module's parameters) no longer require grad.
            receiver = frozen.func.value  # type: ignore[attr-defined]
            while isinstance(receiver, ast.Call):  # a module's own methods return it: the chain's start is frozen
                receiver = receiver.func.value  # type: ignore[attr-defined]
            key = receiver.id if isinstance(receiver, ast.Name) else attribute_key(receiver)
            if key is not None and (frozen.func.value is receiver or self.value_of(receiver).kind is Kind.MODULE):  # type: ignore[attr-defined]
                self.state.env[key] = self.value_of(frozen if frozen.func.value is receiver else call)  # type: ignore[attr-defined]
            return
        if self._moved_in_place(call):
            return
        if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
            return
        name = func.value.id
        current = self.state.env.get(name)
        if current is None:
            return
        if current.kind is Kind.SEQUENCE and func.attr in ("append", "extend") and call.args:
            added = self.value_of(call.args[0])
            if func.attr == "extend":
                added = element_of(added)
            known = current.element if current.element is not None else (element_of(current) if current.elements else None)
            element = added if known is None else join(known, added)
            self.state.env[name] = Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element)
        elif current.kind is Kind.MAPPING and current.element is not None and current.element.kind is Kind.NDARRAY and func.attr in ("update", "setdefault"):
            self.state.env[name] = Value(kind=Kind.MAPPING, grad=Grad.NO)  # items the file does not show: arrays or not
        elif current.kind is Kind.NDARRAY and func.attr == "setflags":
            write = kwarg(call, "write") or (call.args[0] if call.args else None)
            if literal_bool(write) is False:
                self.state.env[name] = current.with_(facts=current.facts | {arrays.READONLY})
            elif literal_bool(write) is True:  # succeeds only on an array that owns writable memory
                self.state.env[name] = current.with_(facts=current.facts - {arrays.READONLY})
        elif current.kind is Kind.MODULE and func.attr in K.MODULE_DTYPE_METHODS:
            # nn.Module casts its parameters in place: `model.double()` alone changes `model`.
            self.state.env[name] = current.with_(dtype=self.value_of(call).dtype)

    def _moved_in_place(self, call: ast.Call) -> bool:
        """``model.cuda()``, ``net.to(device).eval()`` as a statement: nn.Module moves its parameters in place, so the
        name now holds a module on that device. A tensor's move returns a copy that a statement throws away, so a
        value of unknown kind moved this way is a module (an instance of an imported class, ``net = NeRF()``)."""
        steps: list[ast.Call] = []
        node: ast.expr = call
        while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in K.MODULE_RETURNING_ITSELF:
            steps.append(node)
            node = node.func.value
        moves = [step for step in steps if step.func.attr in ("cuda", "cpu", "to")]  # type: ignore[attr-defined]
        if not moves or not isinstance(node, ast.Name):
            return False
        current = self.state.env.get(node.id, UNKNOWN)
        if current.kind not in (Kind.MODULE, Kind.UNKNOWN):
            return False
        if current.kind is Kind.UNKNOWN and not self._constructed(node.id):
            return False  # `pipe = Pipeline.from_pretrained(...)`: other objects move in place too
        # Of a module of unknown kind nothing says whether it holds parameters: what it computes keeps unknown grad.
        module = current if current.kind is Kind.MODULE else Value(kind=Kind.MODULE, grad=Grad.UNKNOWN)
        for step in reversed(steps):  # innermost first
            args = [self.value_of(argument) for argument in step.args]
            keywords = {keyword.arg: self.value_of(keyword.value) for keyword in step.keywords}
            module = self._module_method(module, step.func.attr, step, args, keywords)  # type: ignore[attr-defined]
        if module.kind is not Kind.MODULE:
            return False
        self.state.env[node.id] = module
        return True

    def _constructed(self, name: str) -> bool:
        """Every binding of ``name`` in this scope calls a class's constructor (``net = NeRF()``), of a class named as
        no pipeline, tokenizer or other non-module (a factory such as ``from_pretrained`` may return anything)."""
        values = _bound_values(self.facts, name, self.state.function or self.facts.tree)
        for value in values:
            func = value.func if isinstance(value, ast.Call) else None
            last = last_name(func)
            if not is_class_name(last) or re.search(K.NOT_A_PRETRAINED_MODEL, last):
                return False
        return bool(values)

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
        body_exits, else_exits = terminates(body), terminates(orelse)
        if body_exits and not else_exits:
            self.state.env, self.state.grad_enabled = else_env, else_grad
        elif else_exits and not body_exits:
            self.state.env, self.state.grad_enabled = body_env, body_grad
        else:
            self.state.env = join_envs(body_env, else_env)
            self.state.grad_enabled = body_grad or else_grad

    def stmt_For(self, node: ast.For | ast.AsyncFor) -> None:
        iterable = self.eval(node.iter)
        item = element_of(iterable)
        if iterates_a_loader(node.iter, self._loader_binding):
            item = as_data(item)  # a data loader's batches: data, which does not require grad
        before = self.state.env
        for _ in range(2):
            self.state.env = dict(self.state.env)
            self.bind(node.target, item)
            self.walk_body(node.body)
            self.state.env = join_envs(before, self.state.env)
        self.walk_body(node.orelse)

    stmt_AsyncFor = stmt_For

    def _loader_binding(self, name: str) -> ast.expr | None:
        """What ``name`` is bound to where it gets one value only in the function being walked: ``it = tqdm(dl)``,
        or the context of ``with tqdm(loader) as t`` (what a progress bar's context gives is the bar itself)."""
        scope = self.facts.scopes.of(self.state.function or self.facts.tree)
        bindings = scope.bindings.get(name, ())
        if len(bindings) != 1 or scope.is_parameter(name):
            return None
        if bindings[0].value is not None:
            return bindings[0].value
        return scope.with_context(name)  # one walk of the scope for every name asked (it was one per question)

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
        # A handler runs after a statement of the body raised: it sees what was bound before that
        # statement, not what the statement would have bound (`q = f(q)` that raised leaves `q` as it was).
        # A compound statement may have raised after binding some names inside it.
        raised_in = self.state.env
        for statement in node.body:
            raised_in = join_envs(raised_in, self.state.env)
            self.walk_statement(statement)
            if not isinstance(statement, _SIMPLE_STATEMENTS):
                raised_in = join_envs(raised_in, self.state.env)
        self.walk_body(node.orelse)
        merged = self.state.env
        for handler in node.handlers:
            self.state.env = dict(raised_in)
            if handler.type is not None:
                self.eval(handler.type)
            if handler.name:
                self.state.env[handler.name] = OTHER
            self.walk_body(handler.body)
            if not terminates(handler.body):
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
                key = attribute_key(target)
                if key is not None:
                    self.state.env.pop(key, None)

    def stmt_Global(self, node: ast.stmt) -> None:
        pass

    stmt_Nonlocal = stmt_Import = stmt_ImportFrom = stmt_Pass = stmt_Break = stmt_Continue = stmt_Global

    def bind(self, target: ast.expr, value: Value) -> None:
        if Fact.ENV_RESULT in value.facts:
            value = environments.unpacked(value, target)
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
                    item = Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element_of(value))
                else:
                    item = element_of(value)
                self.bind(element.value if isinstance(element, ast.Starred) else element, item)
        elif isinstance(target, ast.Attribute):
            self.eval(target.value)
            if isinstance(target.value, ast.Name) and target.value.id == "self":
                self.attribute_stores.append((target.attr, value))
            key = attribute_key(target)
            if key is not None:
                self.state.env[key] = value  # `self.x = t.detach()`: read back as such in this function
                self.attribute_bases.add(target.value.id)  # type: ignore[attr-defined]
            self._notify(target)
        elif isinstance(target, ast.Subscript):
            self.eval_target_parts(target)
            self._item_stored(target, value)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value)

    def _item_stored(self, target: ast.Subscript, value: Value) -> None:
        """``outputs[key] = v`` into a dict the function made (``outputs = {}``): where every item stored holds no grad
        (a dict of outputs filled under ``no_grad``), so does every item read back. Only that is kept (items under other
        keys may be anything else: a model's output beside its labels); an item that may require grad makes the items
        unknown for good. Where every item stored is a NumPy array (``vectors[word] = np.array(row)``), an item read
        back is one, as an item of a list that ``append`` fills is."""
        if not isinstance(target.value, ast.Name):
            return
        current = self.state.env.get(target.value.id)
        if current is None or current.kind is not Kind.MAPPING or (current.element is None and current.elements != ()):
            return  # items of unknown kind: one more says nothing of the others
        stored = [value] if current.element is None else [current.element, value]
        if all(item.kind is Kind.NDARRAY for item in stored):
            self.state.env[target.value.id] = Value(kind=Kind.MAPPING, grad=Grad.NO, element=join_all(stored))
            return
        element = items_without_grad(stored)
        self.state.env[target.value.id] = Value(kind=Kind.MAPPING, grad=Grad.NO, element=element)

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


def _freezing_call(call: ast.Call) -> ast.Call | None:
    """The ``x.requires_grad_(False)`` in ``call``'s chain of methods that return the module itself, or None."""
    current: ast.expr = call
    while isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute):
        if current.func.attr == "requires_grad_":
            return current if current.args and literal_bool(current.args[0]) is False else None
        if current.func.attr not in K.MODULE_RETURNING_ITSELF and current.func.attr != "to":
            return None
        current = current.func.value
    return None
