"""The interpreter, composed from its parts: one mixin per concern.

Each function body (and the module body) is walked in order with an environment
mapping local names to :class:`~flake8_tensorconv.values.Value`. Branches are
walked separately and joined; loops are walked twice so that values flowing
around the back edge are seen. Grad mode (``no_grad``, ``inference_mode``,
``set_grad_enabled``) is tracked as part of the walk.

After evaluating each node the interpreter calls ``listener(node, state)``, which
is how rules see the node together with what is known at that point.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from flake8_tensorconv.inference.calls import CallsMixin
from flake8_tensorconv.inference.expressions import ExpressionsMixin
from flake8_tensorconv.inference.files import FileFacts
from flake8_tensorconv.inference.guards import GuardsMixin
from flake8_tensorconv.inference.modules import ModulesMixin
from flake8_tensorconv.inference.statements import StatementsMixin
from flake8_tensorconv.inference.summaries import SummariesMixin
from flake8_tensorconv.inference.support import Listener, State
from flake8_tensorconv.values import Value


class Interpreter(StatementsMixin, ExpressionsMixin, CallsMixin, ModulesMixin, GuardsMixin, SummariesMixin):
    def __init__(self, facts: FileFacts, listener: Listener | None, walks: Callable[[ast.AST], bool] | None = None) -> None:
        self.facts = facts
        self.listener = listener
        # Whether to walk the body of a function or class (None: all of them). A body that is
        # not walked changes nothing outside it: a def binds its name, its decorators are evaluated.
        self.walks = walks
        self.values: dict[int, Value] = {}
        self.state = State(env={}, grad_enabled=True, function=facts.tree, class_name=None)
        self.attribute_stores: list[tuple[str, Value]] = []
        # Parameters hold what callers pass (maybe requiring grad, maybe on a GPU); not so when
        # summarising a helper, whose result must not depend on what one caller passes.
        self.caller_params = True
        # How deep in summaries this interpreter works (0: the walk that rules listen to).
        self.depth = 0
        # Names that attributes were stored on (``self`` in ``self.x = ...``), in any function walked so far.
        self.attribute_bases: set[str] = set()
        # While summarising a helper: the helper and the values its return statements give.
        self.summary_of: ast.FunctionDef | None = None
        self.returns: list[Value] = []
        # While summarising a helper for one call: what the call passes (by parameter), and the
        # literals it passes to parameters the helper never rebinds (``requires_grad=False``).
        self.bound_parameters: dict[str, Value] = {}
        self.literal_parameters: dict[str, ast.expr] = {}

    def _notify(self, node: ast.AST) -> None:
        if self.listener is not None:
            self.listener(node, self.state)
