"""In-place writes into a named array.

Shared by the aliasing rules: TCV106 (a write into ``t.numpy()`` changes ``t``)
and TCV207 (a write into ``a`` changes ``torch.from_numpy(a)``). Both report at
the write and fix the conversion that made the two share memory, so both need
to find the conversion that reaches the write: the scope's bindings index
(``ctx.scope``) answers that from syntax, because a Value records only the *name*
it shares memory with.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import NamedTuple

from flake8_tensorconv.rules.base import Context
from flake8_tensorconv.trees import walk
from flake8_tensorconv.values import Kind

# ndarray methods that change the array's contents.
WRITE_METHODS = frozenset({"fill", "sort", "put", "partition", "setfield", "itemset"})
# NumPy functions that write into their first argument.
FIRST_ARGUMENT_WRITERS = frozenset(
    {
        "numpy.copyto",
        "numpy.put",
        "numpy.place",
        "numpy.putmask",
        "numpy.fill_diagonal",
        "numpy.put_along_axis",
        "numpy.random.shuffle",
    }
)
# ndarray attributes that are views of the array: ``a.flat[...] = v`` writes into ``a``.
VIEW_ATTRIBUTES = frozenset({"flat", "real", "imag", "T", "mT"})


class InPlaceWrite(NamedTuple):
    """A write into the array held by ``name``."""

    name: ast.Name  # the array's name at the write (its value is the array before the write)
    node: ast.AST  # where the finding goes
    statement: ast.AST  # reads that end after this node happen after the write


def in_place_writes(node: ast.AST, ctx: Context) -> list[InPlaceWrite]:
    """The writes into a named array that ``node`` performs (an Assign, AugAssign or Call)."""
    if isinstance(node, ast.Assign):
        return [InPlaceWrite(name, target, node) for target in _flat_targets(node.targets) if (name := _written_name(target))]
    if isinstance(node, ast.AugAssign):
        if isinstance(node.target, ast.Name):
            return [InPlaceWrite(node.target, node.target, node)]  # ndarray `+=` writes in place
        name = _written_name(node.target)
        return [InPlaceWrite(name, node.target, node)] if name else []
    if isinstance(node, ast.Call):
        return [InPlaceWrite(name, node, node) for name in _call_writes(node, ctx)]
    return []


def _flat_targets(targets: list[ast.expr]) -> Iterator[ast.expr]:
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _flat_targets(target.elts)
        elif isinstance(target, ast.Starred):
            yield from _flat_targets([target.value])
        else:
            yield target


def _written_name(target: ast.expr) -> ast.Name | None:
    """``a`` in ``a[...]`` and ``a.flat[...]`` (store targets)."""
    if not isinstance(target, ast.Subscript):
        return None
    base = target.value
    if isinstance(base, ast.Attribute) and base.attr in VIEW_ATTRIBUTES:
        base = base.value
    return base if isinstance(base, ast.Name) else None


def _call_writes(call: ast.Call, ctx: Context) -> Iterator[ast.Name]:
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.attr in WRITE_METHODS or (func.attr == "byteswap" and _is_true(_keyword(call, "inplace"))):
            yield func.value
    qualname = ctx.qualname(func)
    if qualname is not None and call.args and isinstance(call.args[0], ast.Name):
        if qualname in FIRST_ARGUMENT_WRITERS or (qualname.startswith("numpy.") and qualname.endswith(".at")):
            yield call.args[0]  # np.copyto(a, ...), np.add.at(a, ...)
    out = _keyword(call, "out")
    for item in out.elts if isinstance(out, ast.Tuple) else [out]:
        if isinstance(item, ast.Name):
            yield item


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def is_basic_index(index: ast.expr, ctx: Context) -> bool:
    """An index that gives a view, for tensors and arrays alike: slices, ints, ``...``, ``None``."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    for part in parts:
        if isinstance(part, ast.Slice):
            continue
        if isinstance(part, ast.Constant) and (part.value is None or part.value is Ellipsis or type(part.value) is int):
            continue
        if isinstance(part, ast.UnaryOp) and isinstance(part.operand, ast.Constant) and type(part.operand.value) is int:
            continue
        if ctx.value(part).kind is Kind.NUMBER and ctx.value(part).dtype is None:
            continue  # a Python int (range() counter, len(...)): a NumPy int scalar would be fine too
        return False
    return True


def used_after_write(name: str, statement: ast.AST, ctx: Context, item: int | None = None) -> bool:
    """Whether the value ``name`` holds is read after ``statement``, before ``name`` is bound to another
    value (reads after ``t = torch.zeros(3)`` are of the new tensor, which shares nothing).

    ``item``: the write reaches only ``name[item]`` (the array was made from that item); a read of
    another item by a constant index (``name[1]``) does not see it."""
    scope = ctx.scope
    after = _end(statement)
    rebinding = next((binding for binding in scope.bindings.get(name, ()) if binding.position > after), None)
    other_items = _other_items(name, item, scope.node) if item is not None else set()
    for load in scope.loads(name):
        position = (load.lineno, load.col_offset)
        if position <= after or id(load) in other_items:
            continue
        if rebinding is None or position < rebinding.position:
            return True
        value = rebinding.value  # `t = t * 2`: read by the value of its own rebinding
        if value is not None and (value.lineno, value.col_offset) <= position < _end(value):
            return True
    return False


def _other_items(name: str, item: int, function: ast.AST) -> set[int]:
    """The loads of ``name`` indexed by a non-negative constant other than ``item`` (``name[1]`` where ``item`` is 0)."""
    return {
        id(node.value)
        for node in walk(function)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == name
        and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and not isinstance(node.slice.value, bool)
        and node.slice.value >= 0 and node.slice.value != item
    }


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]


def caller_reads_argument(name: str, ctx: Context) -> bool:
    """Some caller in sight reads what it passed as parameter ``name`` after the call: then a write into the
    parameter's memory changes a value that code in the file reads.

    False where no caller is in sight (the harm would rest on code nobody can show) and where every caller
    passes a temporary: a fresh value (`f(model(x))`), or a name it rebinds (`dets = f(dets)`) or never
    reads again."""
    function = ctx.state.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    from flake8_tensorconv.inference.summaries import call_sites  # the facts a trigger asks for, not eager work

    sites = call_sites(ctx.facts, function, ctx.state.class_name)
    if sites is None:
        return False
    return any(_reads_after(site.call, argument, site.scope) for site in sites for argument in _passed_as(function, site, name))


def _passed_as(function: ast.FunctionDef | ast.AsyncFunctionDef, site: object, name: str) -> list[ast.expr]:
    """The argument expressions that may bind parameter ``name`` at ``site`` (all of a `*args` / `**kwargs` call's)."""
    call: ast.Call = site.call  # type: ignore[attr-defined]
    if any(isinstance(argument, ast.Starred) for argument in call.args) or any(keyword.arg is None for keyword in call.keywords):
        return [*call.args, *(keyword.value for keyword in call.keywords)]
    keyword = next((keyword.value for keyword in call.keywords if keyword.arg == name), None)
    if keyword is not None:
        return [keyword]
    positional = [argument.arg for argument in (*function.args.posonlyargs, *function.args.args)]
    if site.bound and positional:  # type: ignore[attr-defined]
        positional = positional[1:]  # `self.method(...)`: the receiver is the first parameter
    if name in positional and positional.index(name) < len(call.args):
        return [call.args[positional.index(name)]]
    return []


def _reads_after(call: ast.Call, argument: ast.expr, scope: ast.AST) -> bool:
    """The caller reads the value it passed as ``argument`` (its root name) after ``call``, before rebinding it."""
    root = argument
    while isinstance(root, (ast.Subscript, ast.Attribute, ast.Starred)):
        root = root.value
    if not isinstance(root, ast.Name):
        return False  # a value made for the call (`model(x)`, `torch.mul(a, b)[j]`): nobody else holds it
    if _passed_again(call, root.id, scope):
        return True
    after = _end(call)
    rebound: tuple[int, int] | None = None
    loads: list[tuple[int, int]] = []
    for node in walk(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None and _within(call, node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(leaf, ast.Name) and leaf.id == root.id for leaf in _flat_targets(targets)):
                if isinstance(node, ast.AugAssign):
                    return True  # `x += f(x)`: reads the value it passed
                rebound = after  # `dets = f(dets)`: the name holds the result from here on
        elif isinstance(node, ast.Name) and node.id == root.id:
            position = (node.lineno, node.col_offset)
            if position <= after:
                continue
            if isinstance(node.ctx, ast.Load):
                loads.append(position)
            elif rebound is None or position < rebound:
                rebound = position
    return any(rebound is None or position < rebound for position in loads if position > after)


def _passed_again(call: ast.Call, name: str, scope: ast.AST) -> bool:
    """``call`` sits in a loop that never rebinds ``name``: the next pass hands over the value the last one changed."""
    for node in walk(scope):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and any(_within(call, statement) for statement in node.body):
            stores = (
                leaf for statement in node.body for leaf in walk(statement)
                if isinstance(leaf, ast.Name) and leaf.id == name and isinstance(leaf.ctx, ast.Store)
            )
            if next(stores, None) is None:
                return True
    return False


def _within(inner: ast.AST, outer: ast.AST) -> bool:
    return (outer.lineno, outer.col_offset) <= (inner.lineno, inner.col_offset) and _end(inner) <= _end(outer)  # type: ignore[attr-defined]
