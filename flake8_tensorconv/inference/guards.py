"""Guards and grad-mode switches: what a test says about a name on each branch, and where grad is off."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.support import (
    Env,
    literal_bool,
)
from flake8_tensorconv.values import (
    INTEGER_DTYPES,
    UNKNOWN,
    Device,
    Fact,
    Grad,
    Kind,
    Value,
    ndarray,
)

# What a guard says about a value that is known not to be a torch tensor (``not isinstance(x, torch.Tensor)``).
_NOT_TENSOR: dict[str, object] = {Fact.NOT_TENSOR: True}


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
        return true_env, false_env

    def _guard_facts(self, test: ast.expr) -> Iterator[tuple[str, dict[str, object] | None, dict[str, object] | None]]:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            for name, when_true, when_false in self._guard_facts(test.operand):
                yield name, when_false, when_true
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
