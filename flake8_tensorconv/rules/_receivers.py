"""Whether a receiver is a torch tensor, when the inference does not know its kind.

A method chain such as ``x.data.cpu()`` or ``x.to(d).detach()`` looks like torch, but a
project's own classes have ``data``, ``to`` and ``detach`` too (an image class whose
``data`` is a property, a mixture model with ``to`` and ``detach``). Where such classes are
in sight the chain is no evidence of a tensor.
"""

from __future__ import annotations

import ast

from flake8_tensorconv.rules.base import Context
from flake8_tensorconv.trees import is_class_name, walk
from flake8_tensorconv.values import Fact, Grad, Kind, Value

_TENSOR_BASES = frozenset({"torch.Tensor", "torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def own_classes_may_have(
    members: frozenset[str], ctx: Context, attributes: bool = False, imported: bool = True, called: bool = False
) -> bool:
    """The file defines a class with one of ``members`` (not a torch.Tensor subclass), or imports
    classes from its own package (a relative import of a capitalised name), whose members it cannot see.

    ``imported``: whether relative imports of classes count (their members are out of sight).
    ``attributes``: the members are read as attributes (``x.data``), so a method (a pytest
    fixture named ``data``) does not count; a property or a stored value does.
    ``called``: the members are called as methods (``x.detach()``), so only a method counts, not a
    value stored under that name (``self.detach = detach``, a flag).
    """
    for node in walk(ctx.facts.tree):
        if isinstance(node, ast.ClassDef) and members & (_methods(node) if called else _members(node, attributes)):
            bases = [ctx.facts.qualname(base) or "" for base in node.bases]
            if not any(base in _TENSOR_BASES for base in bases):
                return True
        elif imported and isinstance(node, ast.ImportFrom) and node.level > 0:
            if any(is_class_name(alias.name) for alias in node.names):
                return True
    return False


def _members(cls: ast.ClassDef, attributes: bool) -> set[str]:
    found: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            is_property = any(ast.unparse(decorator).endswith("property") for decorator in statement.decorator_list)
            if not attributes or is_property:
                found.add(statement.name)
            found.update(
                node.attr for node in walk(statement)
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            )
        elif isinstance(statement, ast.Assign):
            found.update(target.id for target in statement.targets if isinstance(target, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            found.add(statement.target.id)
    return found


def _methods(cls: ast.ClassDef) -> set[str]:
    return {statement.name for statement in cls.body if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))}


def only_declared(node: ast.expr, ctx: Context) -> bool:
    """``node`` is a parameter of the enclosing function, not rebound before it is used here.

    What the inference knows about it comes from an annotation (or a name) alone: enough to
    report, never enough for a safe fix. A caller may pass what the annotation does not say
    (an int from JSON for an ``Optional[Tensor]``), on which ``.detach()`` raises.
    """
    function = ctx.state.function
    if not isinstance(node, ast.Name) or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return False
    arguments = function.args
    names = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg) if a}
    if node.id not in names:
        return False
    here = (node.lineno, node.col_offset)
    return not any(
        isinstance(other, ast.Name) and other.id == node.id and isinstance(other.ctx, ast.Store)
        and (other.lineno, other.col_offset) < here
        for other in walk(function)
    )


def holds_gradients(node: ast.expr, ctx: Context) -> bool:
    """``p.grad``, or a value of unknown kind whose name says it holds gradients (``self.gradients``
    saved by a backward hook, ``grads``): gradients do not require grad themselves."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    if isinstance(node, ast.Attribute) and name == "grad":
        return True
    return "grad" in name.lower() and ctx.value(node).kind is not Kind.TENSOR


def grad_free_as_called(node: ast.expr, ctx: Context) -> bool:
    """Whether ``node`` holds no grad when its function runs as the other modules of the package call it: under
    `no_grad` / `inference_mode` everywhere, or given values without grad. Asked only before a finding is reported
    (the package is read then, see ``Context.elsewhere``)."""
    if Fact.LEAF in ctx.value(node).facts or Fact.PARAMETER in ctx.value(node).facts or _a_layer_parameter(node):
        return False  # a parameter requires grad whatever the grad mode, and whoever hands its layer in
    known = ctx.elsewhere(node)
    if known is None:
        return False
    value, grad_enabled = known
    return not grad_enabled or value.grad is Grad.NO or value.is_integer or value.kind not in (Kind.TENSOR, Kind.UNKNOWN)


def _a_layer_parameter(node: ast.expr) -> bool:
    """``layer.weight``, ``model.fc.bias``, also moved or viewed (``layer.weight.cpu()``)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        node = node.func.value
    while isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr in ("weight", "bias")


# The grad rules ask the package to make a finding only for a function whose name at most this many of its other files
# write: a script's helper (`show_prob(net(im))`), not a library's conversion helper that every module calls (recbole's
# 17 such functions tripled its check's time and made no finding).
MAX_CALLING_FILES = 2


def requires_grad_as_called(node: ast.expr, ctx: Context) -> Value | None:
    """What ``node`` holds where the file leaves it unknown and the package's calls decide it: a tensor that requires grad
    whatever the function is given by the package (every call passes one: a model's output computed with grad on, a
    parameter), made by a step in another module that the value names. None otherwise (also where nobody calls it).

    Asked only at a sink whose receiver is unknown in the file and rooted at a parameter of the function: the callers
    are read then, once per function (``Context.elsewhere``)."""
    root = _parameter_root(node, ctx)
    if root is None:
        return None
    passed = ctx.passed_by_package(root, files=MAX_CALLING_FILES)
    if passed is None or passed.kind is not Kind.TENSOR or passed.grad is not Grad.YES:
        return None  # the calls themselves show no such tensor: the function is not walked again
    known = ctx.elsewhere(node)
    if known is None:
        return None
    # Grad mode on at a call at least, counting the callers of the calling functions (a model's output computed in a
    # function that the package runs only under `no_grad` requires none).
    value, grad_enabled = known
    origin = value.grad_origin
    if not grad_enabled or value.kind is not Kind.TENSOR or value.grad is not Grad.YES or origin is None or origin.path is None:
        return None
    return value


def _parameter_root(node: ast.expr, ctx: Context) -> str | None:
    """The parameter (not ``self``) at the root of ``x``, ``x.cpu()``, ``x[0]``, ``x.data``..., or None."""
    function = ctx.state.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    arguments = function.args
    names = {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)} - {"self", "cls"}
    return node.id if isinstance(node, ast.Name) and node.id in names else None
