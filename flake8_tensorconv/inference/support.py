"""What every part of the interpreter shares: the state at a node and small helpers on nodes and values."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.trees import last_name
from flake8_tensorconv.values import (
    NUMBER,
    UNKNOWN,
    Device,
    Fact,
    Grad,
    Kind,
    Value,
    join,
)

if TYPE_CHECKING:
    from flake8_tensorconv.inference.files import FileFacts

Env = dict[str, Value]

STRING = Value(kind=Kind.STRING, grad=Grad.NO)

# Values of other array and data libraries (TensorFlow, JAX, PIL, pandas, ONNX Runtime...), and
# whatever their methods, attributes and items give: never a torch tensor.

FOREIGN = Value(kind=Kind.OTHER, grad=Grad.NO, facts=frozenset({Fact.FOREIGN}))

SHAPE = Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=NUMBER)


class State:
    """What the interpreter knows at a node."""

    __slots__ = ("env", "grad_enabled", "function", "class_name")

    def __init__(self, env: Env, grad_enabled: bool, function: ast.AST | None, class_name: str | None) -> None:
        self.env = env
        self.grad_enabled = grad_enabled
        self.function = function  # the enclosing FunctionDef/Lambda, or the Module
        self.class_name = class_name


Listener = Callable[[ast.AST, State], None]


def attribute_key(node: ast.expr) -> str | None:
    """``self.x`` -> ``"self.x"``: how an attribute stored in a function is kept in its environment."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def union_members(annotation: ast.expr, facts: FileFacts) -> list[ast.expr] | None:
    """The members of ``A | B``, ``Optional[A]`` or ``Union[A, B]``, else None."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return [*(union_members(annotation.left, facts) or [annotation.left]), *(union_members(annotation.right, facts) or [annotation.right])]
    if isinstance(annotation, ast.Subscript):
        qualname = facts.qualname(annotation.value) or ""
        if qualname.rpartition(".")[2] in ("Optional", "Union") and qualname.partition(".")[0] in ("typing", "typing_extensions"):
            index = annotation.slice
            return list(index.elts) if isinstance(index, ast.Tuple) else [index]
    return None


def is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def is_staticmethod(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)


def is_classmethod(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "classmethod" for d in node.decorator_list)


def terminates(body: list[ast.stmt]) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    return False


def element_of(value: Value) -> Value:
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


def flatten(values: Iterable[Value]) -> list[Value]:
    flat: list[Value] = []
    for value in values:
        if value.kind is Kind.SEQUENCE:
            if value.elements is None and value.element is None:
                flat.append(UNKNOWN)  # items not known: any of them may be a tensor that requires grad
            else:
                flat.extend(flatten(value.elements or ([value.element] if value.element else [])))
        else:
            flat.append(value)
    return flat


def grad_operands(inputs: Iterable[Value], others: Iterable[Value]) -> list[Value]:
    """The values an op's result takes its grad and device from.

    Every tensor counts, and so does a value of unknown kind passed as the op's input. Elsewhere
    (`torch.sum(t, dim)`, `t * scale`, `F.interpolate(t, size=n)`) a value of unknown kind may be a
    size or a scale: that a caller supplies it is no evidence that it requires grad.
    """
    flat = [value for value in flatten(inputs) if value.kind in (Kind.TENSOR, Kind.UNKNOWN)]
    for value in flatten(others):
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


def keeps_grad(node: ast.expr, value: Value) -> bool:
    """Leaves created with requires_grad (and Parameters) require grad even under no_grad."""
    return value.grad is Grad.YES and (Fact.PARAMETER in value.facts or (isinstance(node, ast.Call) and kwarg(node, "requires_grad") is not None))


def made_without_grad(value: Value) -> Value:
    """What a container made with grad mode off holds: its tensors (and items of unknown kind) do not require grad,
    as one tensor made there does not (``logits, value, hx = net.step(obs)`` under ``no_grad``). Leaves keep
    it: a parameter (``model.parameters()``) or a layer's weight requires grad in any grad mode."""
    if value.kind in (Kind.TENSOR, Kind.UNKNOWN):
        if value.grad is Grad.NO or value.facts & {Fact.PARAMETER, Fact.LEAF}:
            return value
        return value.with_(grad=Grad.NO, grad_origin=None)
    if value.kind not in (Kind.SEQUENCE, Kind.MAPPING, Kind.ITERABLE) or (value.elements is None and value.element is None):
        return value
    elements = None if value.elements is None else tuple(made_without_grad(element) for element in value.elements)
    element = None if value.element is None else made_without_grad(value.element)
    return value.with_(elements=elements, element=element)


def items_without_grad(items: Iterable[Value]) -> Value | None:
    """What a dict holds whose every item is known to hold no grad (tensors without grad, numbers, strings, arrays; not
    a leaf, which requires grad in any grad mode): an item read from it holds none either. Only that is kept (of
    unknown kind), so that it takes findings away and makes none. None where one item may require grad or is of
    another kind (a list, an object, a module), or there is no item."""
    found = False
    for item in items:
        if item.kind in (Kind.TENSOR, Kind.UNKNOWN):
            if item.grad is not Grad.NO or item.facts & {Fact.PARAMETER, Fact.LEAF}:
                return None
        elif item.kind not in (Kind.NUMBER, Kind.STRING, Kind.NDARRAY):
            return None
        found = True
    return Value(grad=Grad.NO) if found else None


def kwarg(node: ast.Call, name: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == name:
            return keyword.value
    return None


def literal_bool(node: ast.expr | None) -> bool | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int)):
        return bool(node.value)
    return None


def root_name(node: ast.expr) -> str | None:
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


def device_from(value: Value, expression: ast.expr | None = None) -> Device:
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return Device.CPU if expression.value.split(":")[0] == "cpu" else Device.ACCELERATOR
    if isinstance(expression, ast.Constant) and isinstance(expression.value, int) and not isinstance(expression.value, bool):
        return Device.ACCELERATOR  # a CUDA ordinal
    if value.kind is Kind.DEVICE:
        return value.device if value.device is not Device.UNKNOWN else Device.MAYBE
    if (
        isinstance(expression, ast.Call)
        and not expression.args
        and isinstance(expression.func, (ast.Attribute, ast.Name))
        and (expression.func.attr if isinstance(expression.func, ast.Attribute) else expression.func.id) == "cpu"
    ):
        return Device.CPU  # `.to(other.cpu())` takes a CPU tensor's device; `.to(helpers.cpu())` names the CPU
    if value.kind is Kind.STRING:
        return Device.MAYBE
    # A device held in a variable is configurable: it may be an accelerator.
    return Device.MAYBE


def dtype_of_expression(node: ast.expr, value: Value | None) -> str | None:
    if value is not None and value.kind is Kind.DTYPE:
        return value.dtype
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return K.dtype_from_string(node.value)
    if isinstance(node, ast.Name):
        return K.dtype_from_builtin(node.id)
    return None


def arange_dtype(node: ast.Call) -> str:
    numbers = [a for a in node.args if isinstance(a, ast.Constant)]
    return "float32" if any(isinstance(a.value, float) for a in numbers) else "int64"


# Wrappers that yield the items of the iterable they are given (with an index, a progress bar...).
_ITEM_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip"})


def as_data(value: Value) -> Value:
    """What a data loader yields: whatever is not known otherwise does not require grad."""
    if value.elements is not None:
        return value.with_(elements=tuple(as_data(element) for element in value.elements))
    if value.kind in (Kind.UNKNOWN, Kind.TENSOR) and value.grad is Grad.UNKNOWN:
        return value.with_(grad=Grad.NO)
    return value


def iterates_a_loader(node: ast.expr, binding: Callable[[str], ast.expr | None] = lambda name: None, depth: int = 0) -> bool:
    """``for batch in loader``, ``enumerate(train_loader)``, ``tqdm(dataloader)``, ``DataLoader(...)``: the batches of a
    data loader (or the samples of a dataset), also through a name bound once to one (``it = tqdm(dl)``, ``with tqdm(loader) as t``)."""
    while isinstance(node, ast.Call) and (node.args or _dunder_iter(node)):
        func = node.func
        if _dunder_iter(node):
            node = func.value  # type: ignore[attr-defined]  # `loader.__iter__()`, as `iter(loader)`
            continue
        name = last_name(func)
        if name.endswith(("DataLoader", "Dataset")):
            return True
        if name not in _ITEM_WRAPPERS:
            return False
        if name == "zip":
            return all(iterates_a_loader(argument, binding, depth) for argument in node.args)
        node = node.args[0]
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    if name.lower().endswith(("loader", "dataset")):
        return True  # a loader's batches, a dataset's samples
    bound = binding(name) if isinstance(node, ast.Name) and depth < 3 else None
    return bound is not None and iterates_a_loader(bound, binding, depth + 1)


def _dunder_iter(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr == "__iter__" and not call.args and not call.keywords
