"""The bindings / def-use index that rules query through ``ctx.scope``, and the typed facts."""

from __future__ import annotations

import ast
import textwrap

from flake8_tensorconv.inference import Interpreter, analyze_file_facts
from flake8_tensorconv.inference.bindings import Scope
from flake8_tensorconv.values import Fact, Kind

SOURCE = textwrap.dedent(
    """
    import numpy as np

    def f(a, *rest, key=None):
        b = np.zeros(3)
        c: int = 4
        for i in range(3):
            rows.append(b)
            b[i] = 1
        b += 1
        (d := a)
        del c
        def inner():
            return b
        b.fill_(0)
        helper(b)
        return [x for x in rest]
    """
)


def _function_scope() -> tuple[Scope, ast.FunctionDef]:
    tree = ast.parse(SOURCE)
    function = tree.body[1]
    assert isinstance(function, ast.FunctionDef)
    return Scope(function), function


def _line(function: ast.FunctionDef, line: int) -> ast.stmt:
    return next(node for node in ast.walk(function) if isinstance(node, ast.stmt) and node.lineno == line)


def test_bindings_are_the_scopes_own_in_source_order() -> None:
    scope, function = _function_scope()
    assert scope.parameters == {"a", "rest", "key"}
    assert [binding.position for binding in scope.bindings["b"]] == [(5, 4)]
    assert isinstance(scope.bindings["b"][0].value, ast.Call)
    assert scope.bindings["c"][0].value is not None  # `c: int = 4` assigns a value
    assert [binding.value for binding in scope.bindings["c"]][1:] == [None]  # `del c`
    assert isinstance(scope.bindings["d"][0].value, ast.Name)  # `(d := a)`
    assert "inner" in scope.bindings and "x" not in scope.bindings  # the comprehension binds its own `x`
    assert scope.definitions("a") == [None]  # a parameter: no value known
    assert scope.before("b", _line(function, 7)) == scope.bindings["b"]
    assert not scope.rebound_between("b", _line(function, 5), _line(function, 17))  # `b += 1` writes in place


def test_reads_and_in_place_writes_include_nested_code() -> None:
    scope, function = _function_scope()
    assert scope.read_after("b", _line(function, 15))  # read by `helper(b)`
    assert scope.read_after("b", _line(function, 12))  # read by `inner`'s return
    assert not scope.read_after("d", _line(function, 11))
    assert scope.written_in_place_after("b", _line(function, 14))  # `b.fill_(0)`
    assert not scope.written_in_place_after("b", _line(function, 15))
    assert {"a", "rest", "key", "x", "rows", "helper"} <= scope.names


def test_mentions_say_how_a_name_may_change() -> None:
    scope, function = _function_scope()
    mentions = scope.mentions("b")
    kinds = sorted((type(m.node).__name__, m.method or "") for m in mentions)
    assert kinds == [("AugAssign", ""), ("Call", ""), ("Call", ""), ("Call", "fill_"), ("Subscript", "")]
    append = next(node for node in ast.walk(function) if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "append")
    assert scope.in_loop(append)
    assert not scope.in_loop(_line(function, 16))


def test_facts_are_typed_and_an_instance_class_is_a_field() -> None:
    tree = ast.parse(
        textwrap.dedent(
            """
            import torch
            layer = torch.nn.Linear(2, 2)
            act = torch.nn.ReLU()
            sparse = torch.ones(2).to_sparse()
            """
        )
    )
    interpreter = Interpreter(analyze_file_facts(tree), listener=None)
    interpreter.walk_module()
    env = interpreter.state.env
    assert env["layer"].kind is Kind.MODULE
    assert env["layer"].instance_of == "torch.nn.Linear"
    assert env["layer"].facts == {Fact.PARAMETRIZED}
    assert env["act"].facts == frozenset() and env["act"].instance_of == "torch.nn.ReLU"
    assert env["sparse"].facts == {Fact.SPARSE}
    assert all(isinstance(fact, Fact) for value in env.values() for fact in value.facts)
