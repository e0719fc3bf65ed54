"""Guards and grad-mode switches: what a test says about a name on each branch, and where grad is off."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.support import (
    Env,
    literal_bool,
)
from flake8_tensorconv.trees import walk
from flake8_tensorconv.values import (
    INTEGER_DTYPES,
    UNKNOWN,
    Device,
    Fact,
    Grad,
    Kind,
    Origin,
    Value,
    ndarray,
    origin,
)

if TYPE_CHECKING:
    from flake8_tensorconv.inference.files import FileFacts

# What a guard says about a value that is known not to be a torch tensor (``not isinstance(x, torch.Tensor)``).
_NOT_TENSOR: dict[str, object] = {Fact.NOT_TENSOR: True}
# The class names `type(x).__name__` is compared with: the kind of `x` where they match.
_TYPE_NAMES = {"ndarray": Kind.NDARRAY, "Tensor": Kind.TENSOR}


class GuardsMixin:
    def _grad_switch(self, node: ast.expr) -> bool | None:
        """Grad mode inside ``with node:`` or under ``@node``, or None if it does not switch."""
        call = node if isinstance(node, ast.Call) else None
        qualname = self.facts.qualname(call.func if call else node)
        if qualname in K.GRAD_MODE_SWITCHES:
            if call is not None and call.args and qualname.endswith("inference_mode"):
                mode = literal_bool(call.args[0])
                return None if mode is None else not mode
            return K.GRAD_MODE_SWITCHES[qualname]
        if qualname in K.SET_GRAD_ENABLED and call is not None and call.args:
            return literal_bool(call.args[0])
        return None

    def _refine(self, test: ast.expr) -> tuple[Env, Env]:
        """Environments for the true and false branches of ``test``."""
        true_env, false_env = dict(self.state.env), dict(self.state.env)
        for name, when_true, when_false in self._guard_facts(test):
            # Facts about one name add up (`not t.requires_grad and t.device.type == "cpu"`).
            if when_true is not None:
                true_env[name] = _refined(true_env.get(name, UNKNOWN), when_true)
            if when_false is not None:
                false_env[name] = _refined(false_env.get(name, UNKNOWN), when_false)
        host_branch = self._host_only_branch(test)
        if host_branch is not None:
            _on_host(true_env if host_branch else false_env, lambda value: True)
        flag = _flag(test)
        placement = _cpu_device_test(test) if flag is None else None
        if (flag is not None or placement is not None) and any(_at_risk(value) for value in self.state.env.values()):
            spans = self._device_spans()
            if flag is not None and flag[0] in spans.flag_arms:
                # `if use_gpu: x = x.cuda()` ... `x.numpy() if not use_gpu else ...`: where the flag is off,
                # no move it guards has run.
                arms = spans.flag_arms[flag[0]]
                _on_host(true_env if flag[1] else false_env, lambda value: _within_any(value.device_origin, arms))
            if placement is not None and placement[0] in spans.moves_to:
                # `if device != "cpu": x = x.cpu()` ... `x.numpy()`: where `device` is the CPU, so is what was moved to it.
                moves = spans.moves_to[placement[0]]
                _on_host(
                    true_env if placement[1] else false_env,
                    lambda value: value.device_origin is not None and value.device_origin[:4] in moves,
                )
        return true_env, false_env

    def _device_spans(self) -> DeviceSpans:
        """Where the function being walked runs code only when a flag is true, and where it places tensors on a
        device held in a variable (one walk per function, kept for the file)."""
        function = self.state.function if self.state.function is not None else self.facts.tree
        spans = self.facts.device_spans.get(id(function))
        if spans is None:
            spans = self.facts.device_spans[id(function)] = _device_spans(function)
        return spans

    def _for_another_framework(self, node: ast.AST) -> bool:
        """Whether ``node`` lies in code that runs only where the model is another framework's (see
        :func:`other_framework_arms`): there, calling a model is no torch module's forward."""
        arms = self.facts.other_framework_arms
        if arms is None:
            arms = self.facts.other_framework_arms = other_framework_arms(self.facts)
        return bool(arms) and _within_any(origin(node), arms)

    def _host_only_branch(self, test: ast.expr) -> bool | None:
        """The branch of ``test`` that runs only where CUDA is not available (True: the true branch), or None."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._host_only_branch(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.Call) and not test.args and self.facts.qualname(test.func) in K.ACCELERATOR_CHECKS:
            return False
        if isinstance(test, ast.Name) and Fact.ACCELERATOR_CHECK in self.state.env.get(test.id, UNKNOWN).facts:
            return False
        return None

    def _guard_facts(self, test: ast.expr) -> Iterator[tuple[str, dict[str, object] | None, dict[str, object] | None]]:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            for name, when_true, when_false in self._guard_facts(test.operand):
                yield name, when_false, when_true
            return
        if isinstance(test, ast.Name):
            stored = self._stored_type_test(test)
            if stored is not None:
                yield from self._guard_facts(stored)
            return
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            # `a and b` is false when any operand is: facts that every operand's false branch gives hold.
            shared: dict[str, dict[str, object] | None] = {}
            for index, value in enumerate(test.values):
                found: dict[str, dict[str, object] | None] = {}
                for name, when_true, when_false in self._guard_facts(value):
                    yield name, when_true, None
                    found[name] = when_false
                shared = found if index == 0 else {name: facts for name, facts in shared.items() if found.get(name) == facts}
            for name, facts in shared.items():
                if facts is not None:
                    yield name, None, facts
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
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "hasattr" and len(test.args) == 2:
            subject, attribute = test.args
            if isinstance(subject, ast.Name) and isinstance(attribute, ast.Constant) and attribute.value == "requires_grad":
                yield subject.id, None, {"grad": Grad.NO}  # no `requires_grad` at all: nothing that requires grad
            return
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "isinstance" and len(test.args) == 2:
            subject, classes = test.args
            if isinstance(subject, ast.Name):
                names = _class_alternatives(classes)
                qualnames = [self.facts.qualname(c) for c in names]
                if len(qualnames) == 1 and qualnames[0] in K.TENSOR_CLASSES:
                    # Not a torch.Tensor: not a tensor at all (not a Parameter says nothing).
                    yield subject.id, {"kind": Kind.TENSOR}, _NOT_TENSOR if qualnames[0] == "torch.Tensor" else None
                elif len(qualnames) == 1 and qualnames[0] in K.NDARRAY_CLASSES:
                    yield subject.id, {"kind": Kind.NDARRAY}, None
                if all(self._is_non_tensor_class(c, q) or _out_of_sight_class(q) for c, q in zip(names, qualnames)):
                    # An instance of another library's or module's class (`NonTensorData`): what the annotation
                    # or the flow said of its kind does not hold in that branch.
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
            tested = self._type_test(test)
            if tested is not None:
                name, kind = tested
                if isinstance(test.ops[0], (ast.Eq, ast.Is)):
                    yield name, {"kind": kind}, None
                elif isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
                    yield name, None, {"kind": kind}
                return
            device_name = _device_type_subject(test.left)
            other = test.comparators[0]
            if device_name is None:
                device_name = _device_type_subject(other)
                other = test.left
            if (
                isinstance(test.ops[0], (ast.In, ast.NotIn)) and isinstance(test.left, ast.Constant)
                and test.left.value in ("cuda", "cpu") and (name := _device_type_subject(test.comparators[0])) is not None
            ):
                # `"cuda" in str(t.device)`: as `t.is_cuda` (elsewhere: the CPU, or another accelerator); `"cpu" in ...`.
                found = {"device": Device.CPU} if test.left.value == "cpu" else {"device": Device.ACCELERATOR}
                other_device = {"device": Device.MAYBE} if test.left.value == "cpu" else {"device": Device.UNKNOWN}
                if isinstance(test.ops[0], ast.In):
                    yield name, found, other_device  # type: ignore[misc]
                else:
                    yield name, other_device, found  # type: ignore[misc]
                return
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

    def _stored_type_test(self, flag: ast.Name) -> ast.Call | None:
        """The type test a flag holds (``is_tensor = isinstance(x, torch.Tensor)`` then ``if not is_tensor:``): where
        the flag is bound once in the function, before the test, and ``x`` gets no new value between the two (nor
        anywhere after the flag, where the test sits in a loop), the test of the flag is the type test of ``x``."""
        scope = self.facts.scopes.of(self.state.function or self.facts.tree)
        bindings = scope.bindings.get(flag.id, ())
        if len(bindings) != 1 or scope.is_parameter(flag.id):
            return None
        call = bindings[0].value
        if not (isinstance(call, ast.Call) and call.args and isinstance(call.args[0], ast.Name)):
            return None
        if bindings[0].position >= (flag.lineno, flag.col_offset):
            return None
        is_type_test = (isinstance(call.func, ast.Name) and call.func.id == "isinstance" and len(call.args) == 2) or (
            self.facts.qualname(call.func) == "torch.is_tensor"
        )
        if not is_type_test:
            return None
        subject = call.args[0].id
        if scope.rebound_between(subject, call, flag):
            return None
        if scope.in_loop(flag) and any(binding.position > bindings[0].position for binding in scope.bindings.get(subject, ())):
            return None  # a later pass may test the flag after `x` got a new value
        return call

    def _type_test(self, test: ast.Compare) -> tuple[str, Kind] | None:
        """``type(x) is np.ndarray``, ``type(x).__name__ == "ndarray"`` (either side): the name and the kind
        it has where the test holds (an exact type, so a subclass such as `nn.Parameter` does not pass)."""
        for subject, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            by_name = isinstance(subject, ast.Attribute) and subject.attr == "__name__"
            call = subject.value if by_name else subject  # type: ignore[attr-defined]
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "type"
                    and len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.Name)):
                continue
            name = call.args[0].id
            if by_name:
                if isinstance(other, ast.Constant) and other.value in _TYPE_NAMES:
                    return name, _TYPE_NAMES[other.value]
                return None
            qualname = self.facts.qualname(other)
            if qualname in K.NDARRAY_CLASSES:
                return name, Kind.NDARRAY
            if qualname == "torch.Tensor":
                return name, Kind.TENSOR
            return None
        return None

    def _named_dtypes(self, node: ast.expr) -> list[str]:
        """``torch.int64`` or a tuple/list/set of such -> their dtypes; [] if any is not one."""
        parts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        dtypes = [K.dtype_from_qualname(self.facts.qualname(part) or "") for part in parts]
        return [dtype for dtype in dtypes if dtype is not None] if all(dtypes) else []

    def _is_non_tensor_class(self, node: ast.expr, qualname: str | None) -> bool:
        if qualname is not None:
            return qualname in K.NON_TENSOR_CLASSES
        return isinstance(node, ast.Name) and node.id in K.NON_TENSOR_BUILTINS and node.id not in self.state.env


def _flag(test: ast.expr) -> tuple[str, bool] | None:
    """``use_gpu``, ``not self.cuda``: the flag a test reads (a name or attribute chain) and whether it is negated."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = not negated, test.operand
    parts = []
    while isinstance(test, ast.Attribute):
        parts.append(test.attr)
        test = test.value
    if not isinstance(test, ast.Name):
        return None
    return ".".join([test.id, *reversed(parts)]), negated


class DeviceSpans(NamedTuple):
    # flag -> the spans of code that run only when it is true (`if use_gpu:` bodies, `a if use_gpu else b`'s `a`)
    flag_arms: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]]
    # device variable -> the spans (line, column, end line, end column) of the calls that place a tensor on it
    moves_to: dict[str, set[tuple[int, int, int, int]]]


def _device_spans(function: ast.AST) -> DeviceSpans:
    arms: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
    moves: dict[str, set[tuple[int, int, int, int]]] = {}
    for node in walk(function):
        if isinstance(node, (ast.If, ast.IfExp)):
            flag = _flag(node.test)
            if flag is not None:
                arm = node.orelse if flag[1] else node.body
                parts = arm if isinstance(arm, list) else [arm]
                if parts:
                    arms.setdefault(flag[0], []).append(_span(parts[0], parts[-1]))
        elif isinstance(node, ast.Call):
            device_name = _placed_on(node)
            if device_name is not None:
                moves.setdefault(device_name, set()).add((node.lineno, node.col_offset, node.end_lineno or 0, node.end_col_offset or 0))
    return DeviceSpans(arms, moves)


# `import torch` / `from torch ... import` indented: inside a block (a `try:` body among them).
_NESTED_TORCH_IMPORT = re.compile(r"^[ \t]+(?:import|from)[ \t]+torch\b", re.MULTILINE)
# Exceptions whose handler runs where an import failed (a bare `except:` too).
_IMPORT_FAILURES = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


def other_framework_arms(facts: FileFacts) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The spans of code that run only where the model is another framework's, not torch's:

    - an arm of a test of a string against the names of frameworks (``if self.model_type == "tf":``, the ``else`` of
      ``if framework == "torch":``, ``a if backend in ("jax", "flax") else b``), in a file that imports another
      framework (TensorFlow, Keras, JAX...): the file dispatches on the framework, and the string names it;
    - a handler of a ``try:`` whose body imports torch, for a failed import (bare, ``ImportError``, ``Exception``):
      the path written for where torch, or the torch path, is not there.

    Worked out once per file, by one walk, only where the file's imports allow either."""
    text = facts.text or ""
    dispatches = any(name.partition(".")[0] in K.OTHER_FRAMEWORKS for name in facts.aliases.values())
    falls_back = _NESTED_TORCH_IMPORT.search(text) is not None if text else True
    if not (dispatches or falls_back):
        return []
    arms: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for node in walk(facts.tree):
        if dispatches and isinstance(node, (ast.If, ast.IfExp)):
            tested = _framework_test(node.test)
            if tested is None:
                continue
            for other, arm in zip(tested, (node.body, node.orelse)):
                parts = arm if isinstance(arm, list) else [arm]
                if other and parts:
                    arms.append(_span(parts[0], parts[-1]))
        elif falls_back and isinstance(node, ast.Try) and any(_imports_torch(statement) for statement in node.body):
            for handler in node.handlers:
                if handler.body and _catches_import_failure(handler.type):
                    arms.append(_span(handler.body[0], handler.body[-1]))
    return arms


def _framework_test(test: ast.expr) -> tuple[bool, bool] | None:
    """Whether the true and the false branch of ``test`` run only for a framework other than torch, where ``test``
    compares strings with the names of frameworks (None where no operand does)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _framework_test(test.operand)
        return None if inner is None else (inner[1], inner[0])
    if isinstance(test, ast.BoolOp):
        parts = [_framework_test(value) for value in test.values]
        if all(part is None for part in parts):
            return None
        known = [part or (False, False) for part in parts]
        if isinstance(test.op, ast.And):  # true where every operand is, false where any is
            return any(true for true, _ in known), all(false for _, false in known)
        return all(true for true, _ in known), any(false for _, false in known)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    names = _string_constants(test.comparators[0])
    if names is None:
        names = _string_constants(test.left)
        if names is None or isinstance(test.ops[0], (ast.In, ast.NotIn)):
            return None
    if not names:
        return None
    if names <= K.TORCH_FRAMEWORK_NAMES:
        torch_when_equal = True
    elif names <= K.OTHER_FRAMEWORK_NAMES:
        torch_when_equal = False
    else:
        return None
    if isinstance(test.ops[0], (ast.Eq, ast.Is, ast.In)):
        return (not torch_when_equal, torch_when_equal)
    if isinstance(test.ops[0], (ast.NotEq, ast.IsNot, ast.NotIn)):
        return (torch_when_equal, not torch_when_equal)
    return None


def _string_constants(node: ast.expr) -> set[str] | None:
    """``"tf"`` or a tuple, list or set of string literals -> the strings (lower case); None for anything else."""
    parts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    if not all(isinstance(part, ast.Constant) and isinstance(part.value, str) for part in parts):
        return None
    return {part.value.lower() for part in parts}  # type: ignore[attr-defined]


def _imports_torch(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.partition(".")[0] == "torch" for alias in statement.names)
    return isinstance(statement, ast.ImportFrom) and (statement.module or "").partition(".")[0] == "torch" and not statement.level


def _catches_import_failure(caught: ast.expr | None) -> bool:
    if caught is None:
        return True
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(isinstance(name, ast.Name) and name.id in _IMPORT_FAILURES for name in names)


def _span(first: ast.AST, last: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return ((first.lineno, first.col_offset), (last.end_lineno or 0, last.end_col_offset or 0))  # type: ignore[attr-defined]


def _at_risk(value: Value) -> bool:
    return value.device in (Device.ACCELERATOR, Device.MAYBE) and value.device_origin is not None


def _cpu_device_test(test: ast.expr) -> tuple[str, bool] | None:
    """``device == "cpu"``, ``device.type != "cpu"``: the device variable and whether the true branch is the CPU one."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        negated, test = not negated, test.operand
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
        return None
    subject, other = test.left, test.comparators[0]
    if isinstance(subject, ast.Constant):
        subject, other = other, subject
    if not (isinstance(other, ast.Constant) and other.value == "cpu"):
        return None
    if isinstance(subject, ast.Attribute) and subject.attr == "type":
        subject = subject.value
    elif isinstance(subject, ast.Call) and isinstance(subject.func, ast.Name) and subject.func.id == "str" and len(subject.args) == 1:
        subject = subject.args[0]
    if not isinstance(subject, ast.Name):
        return None
    return subject.id, isinstance(test.ops[0], ast.Eq) != negated


def _placed_on(call: ast.Call) -> str | None:
    """``x.to(device)``, ``x.to(device, dtype)``, ``torch.zeros(3, device=device)``: the device variable, or None."""
    for keyword in call.keywords:
        if keyword.arg == "device" and isinstance(keyword.value, ast.Name):
            return keyword.value.id
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr in ("to", "cuda") and call.args and isinstance(call.args[0], ast.Name):
        return call.args[0].id
    return None


def _within_any(where: Origin | None, arms: list[tuple[tuple[int, int], tuple[int, int]]]) -> bool:
    if where is None:
        return False
    return any(first <= (where.line, where.column) and (where.end_line, where.end_column) <= last for first, last in arms)


def _on_host(env: Env, applies: Callable[[Value], bool]) -> None:
    """Values of ``env`` that ``applies`` to are on the CPU: in a branch where they cannot be on a GPU."""
    for name, value in env.items():
        if value.device in (Device.ACCELERATOR, Device.MAYBE) and applies(value):
            env[name] = value.with_(device=Device.CPU, device_origin=None)


def _class_alternatives(node: ast.expr) -> list[ast.expr]:
    """The classes an ``isinstance`` test accepts: a tuple's items and a PEP 604 union's operands
    (``(np.ndarray, list)``, ``np.ndarray | list``, nested), each as its own expression."""
    if isinstance(node, ast.Tuple):
        return [part for element in node.elts for part in _class_alternatives(element)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _class_alternatives(node.left) + _class_alternatives(node.right)
    return [node]


def _out_of_sight_class(qualname: str | None) -> bool:
    """A class imported from a module other than torch's or NumPy's."""
    return qualname is not None and qualname.partition(".")[0] not in ("torch", "numpy")


def _refined(value: Value, changes: dict[str, object]) -> Value:
    if changes is _NOT_TENSOR:
        return UNKNOWN if value.kind is Kind.TENSOR else value
    if changes.get("kind") is Kind.NDARRAY and value.kind is Kind.TENSOR:
        # Where a test says it is an array, it is one whenever that branch runs (the inferred kind was a guess).
        return ndarray()
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
