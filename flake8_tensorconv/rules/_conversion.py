"""Shared pieces of the data -> tensor rules: the converting calls and how fixes spell things."""

from __future__ import annotations

import ast

from flake8_tensorconv.rules.base import Context

# Functions that build a tensor from data (a list, an array, a tensor).
TENSOR_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})

# Expressions a method call can follow without parentheses.
_ATOMS = (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.List, ast.ListComp, ast.Dict, ast.DictComp, ast.Set, ast.SetComp)


def module_alias(ctx: Context, module: str) -> str | None:
    """The local name that refers to ``module`` (``np`` for ``numpy``) and is not shadowed here."""
    for name, qualname in ctx.facts.aliases.items():
        if qualname == module and name not in ctx.state.env:
            return name
    return None


def needs_parentheses(node: ast.expr) -> bool:
    """Whether ``.method()`` after ``node`` would bind to a part of it (``a * b``, ``-x``, ``x if c else y``)."""
    return not isinstance(node, _ATOMS)


def receiver_text(ctx: Context, node: ast.expr) -> str:
    """The source of ``node``, ready to have a method called on it."""
    text = ctx.text(node)
    return f"({text})" if needs_parentheses(node) else text


def single_data_argument(node: ast.Call) -> ast.expr | None:
    """The one positional argument of a converting call, or None (no data, several, ``*args``)."""
    if len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
        return None
    return node.args[0]
