"""``ast``'s walks, in the same order, at about half the cost: the analysis walks trees a lot.

``ast.iter_child_nodes`` goes through two generators (``iter_fields``, then its own) for every
node; building each node's children as a list does the same work without them. Whatever uses
these gets exactly what the ``ast`` functions give, in the same order.
"""

from __future__ import annotations

import ast
import builtins
from collections import deque
from collections.abc import Iterator

_AST = ast.AST


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``."""
    children: list[ast.AST] = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, _AST):
            children.append(value)
        elif value.__class__ is list:
            for item in value:
                if isinstance(item, _AST):
                    children.append(item)
    return children


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk(node)``: breadth first, the node itself first."""
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(child_nodes(node))
        yield node


def parent_map(root: ast.AST) -> dict[int, ast.AST]:
    """The parent of every node under ``root`` (``root`` itself has none), by ``id``: what
    ``{id(child): parent for parent in ast.walk(root) for child in ast.iter_child_nodes(parent)}`` gives,
    in one pass (a node met twice, such as a shared ``Load`` context, keeps its last parent, as there)."""
    parents: dict[int, ast.AST] = {}
    todo = deque([root])
    while todo:
        node = todo.popleft()
        for child in child_nodes(node):
            parents[id(child)] = node
            todo.append(child)
    return parents


def last_name(node: ast.expr) -> str:
    """The last name of a name or an attribute chain (``step`` of ``env.step``, ``Linear`` of ``nn.Linear``); ``""``
    for any other expression."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def name_chain(node: ast.expr) -> tuple[str, ...] | None:
    """The names of a name or an attribute chain, outermost first: ``Net`` -> ("Net",), ``models.common.Net`` ->
    ("models", "common", "Net"); None for any other expression."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return tuple(reversed(parts))


def is_self_attribute(node: ast.AST, name: str) -> bool:
    """Whether ``node`` is ``self.<name>``."""
    return isinstance(node, ast.Attribute) and node.attr == name and isinstance(node.value, ast.Name) and node.value.id == "self"


def is_number_literal(node: ast.AST) -> bool:
    """A number written in the code, signed or not (``2``, ``-0.5``; not ``True``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def is_class_name(name: str) -> bool:
    """A CamelCase name, as classes are written (``Linear``, ``AudioDecoder``; not ``ALL_CAPS`` constants)."""
    return name[:1].isupper() and not name.isupper()


def names_a_class_outside(func: ast.expr, qualname: str | None, libraries: tuple[str, ...]) -> bool:
    """Whether ``func`` names a class (a CamelCase name) imported from a library other than ``libraries`` (its
    qualified name, ``qualname``, is known and starts elsewhere)."""
    return is_class_name(last_name(func)) and qualname is not None and qualname.partition(".")[0] not in libraries


def statements_after(statement: ast.AST, parents: dict[int, ast.AST]) -> list[ast.stmt]:
    """The statements after ``statement`` in the block that holds it (a ``body``, ``orelse`` or ``finalbody``);
    none where it is in no such block."""
    owner = parents.get(id(statement))
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and statement in block:
            return block[block.index(statement) + 1 :]
    return []


# What a module reads without binding it: the builtins and the module's own dunders.
_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__path__", "__cached__", "__builtins__", "__annotations__", "__class__"}


def free_names(tree: ast.Module, bound: set[str] | None = None) -> frozenset[str]:
    """Names read in the file but bound nowhere in it (nor in ``bound``) and no builtins: they come from a
    star import, a notebook's earlier session or ``exec``, none of which the file shows."""
    loaded: set[str] = set()
    bound = set() if bound is None else bound
    for node in walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.alias):
            bound.add(node.asname or node.name.partition(".")[0])
    return frozenset(loaded - bound - _BUILTINS)
