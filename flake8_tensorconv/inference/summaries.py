"""Module-level summaries: what a function's same-file callers pass and the grad mode they call it in.

Worked out lazily, for a function the walk enters (one that holds a trigger), never for the
whole file up front. The callers of a function are known when every mention of its name in
the file is a direct call (``helper(...)``, or ``self.method(...)`` in its class) and the
name is defined once; then a parameter holds the join of what the calls pass, and grad mode
is off inside when every call runs under ``no_grad`` / ``inference_mode``. Otherwise (no
same-file caller, a name passed around as a value, a decorator that may call it) the
parameter's value comes from the evidence its declaration gives: its annotation, its name's
role and the docstring.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.support import element_of, flatten, is_staticmethod, root_name
from flake8_tensorconv.trees import child_nodes, is_self_attribute, walk
from flake8_tensorconv.values import UNKNOWN, Device, Fact, Grad, Kind, Origin, Value, grad_free_items, join, join_all, origin

if TYPE_CHECKING:
    from flake8_tensorconv.inference.files import FileFacts

# How far summaries nest: a caller's own parameters are judged by evidence, not by its callers,
# and what a summarised method calls is not summarised again.
MAX_DEPTH = 1
# A function called from more places than this is summarised as out of sight.
MAX_CALL_SITES = 8
# A helper is summarised for at most this many different calls; further calls get the summary
# that holds whatever it is given.
MAX_CONTEXTS = 6


class CallSite(NamedTuple):
    call: ast.Call
    scope: ast.AST  # the function, lambda or module whose code makes the call
    class_name: str | None  # the class whose method ``scope`` is
    bound: bool  # ``self.method(...)``: the first parameter is the receiver


class CallerSummary(NamedTuple):
    """What every same-file call of a function passes (by parameter name), and its grad mode there."""

    arguments: dict[str, Value]
    grad_enabled: bool  # grad mode is on at one of the calls at least


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def call_sites(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> list[CallSite] | None:
    """Every same-file call of ``function``, or None when some caller may be out of sight."""
    name = function.name
    if name.startswith("__") or len(facts.definitions.get(name, ())) != 1 or facts.text is None:
        return None
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        qualname = facts.qualname(target)
        if qualname not in K.GRAD_MODE_SWITCHES and qualname not in K.SET_GRAD_ENABLED and not (
            isinstance(target, ast.Name) and target.id == "staticmethod"
        ):
            return None  # registered, wrapped, a property...: called from elsewhere
    if class_name is not None and name in K.CALLED_BY_FRAMEWORKS:
        return None
    starts = facts.line_starts
    lines = sorted({bisect.bisect_right(starts, offset) for offset in _word_offsets(facts.text, name)})
    sites: list[CallSite] = []
    for node, parent, scope, owner in _mentions(facts.tree, name, lines):
        if node is function:
            continue
        if class_name is None and isinstance(node, ast.Name):
            if not (isinstance(node.ctx, ast.Load) and isinstance(parent, ast.Call) and parent.func is node):
                return None  # passed as a value, rebound...
            sites.append(CallSite(parent, scope, owner, bound=False))
        elif class_name is not None and isinstance(node, ast.Attribute):
            receiver = node.value
            called = isinstance(parent, ast.Call) and parent.func is node
            if called and isinstance(receiver, ast.Name) and receiver.id == class_name and len(facts.definitions.get(class_name, ())) == 1:
                sites.append(CallSite(parent, scope, owner, bound=False))  # `Class.method(...)`: every argument explicit
                continue
            if not called:
                return None  # passed as a value
            on_self = isinstance(receiver, ast.Name) and receiver.id == "self" and owner == class_name
            holds = True if on_self else _holds_instance(facts, receiver, scope, owner, class_name)
            if holds is None:
                return None  # called on an object that may be an instance
            if holds:
                sites.append(CallSite(parent, scope, owner, bound=True))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or (isinstance(node, ast.Name) and class_name is not None):
            continue  # a local of the same name in a method, or a definition
        elif isinstance(node, ast.Attribute):
            if class_name is None and not _may_name_a_module(facts, node.value):
                continue  # `model.train()` of a function `train`: a module-level function is an attribute only of a module
            return None  # `module.helper`, `obj.helper`: may be this function
    if len(sites) > MAX_CALL_SITES:
        return None  # called from all over: what the calls pass joins to little, and walking them costs
    return sites or None


# Module methods that do not run the module's forward: calling them on a hooked model fires no forward hook.
_NOT_RUNNING_FORWARD = frozenset(
    "to cuda cpu eval train half float double bfloat16 type apply requires_grad_ zero_grad share_memory "
    "modules named_modules children named_children parameters named_parameters buffers named_buffers state_dict "
    "load_state_dict register_forward_hook register_forward_pre_hook register_full_backward_hook register_backward_hook "
    "register_buffer register_parameter add_module get_submodule".split()
)


def hooked_forward_calls(facts: FileFacts, hook: ast.FunctionDef | ast.AsyncFunctionDef) -> list[CallSite] | None:
    """The calls that run the layers ``hook`` is registered on (``model.layer1[-1].register_forward_hook(hook)``):
    each call of that model or of a part of it (``model(x)``, ``model.forward(x)``, ``model.layer4(x)``), or None
    where the file may run them out of sight: the hook is mentioned otherwise than registered, the model is passed
    or bound as a value (``train(model)``, ``m = model``), or no call of it is in the file."""
    name = hook.name
    chains: set[str] = set()
    roots: set[str] = set()
    if facts.text is None:
        return None
    starts = facts.line_starts
    lines = sorted({bisect.bisect_right(starts, offset) for offset in _word_offsets(facts.text, name)})
    for node, parent, _scope, _owner in _mentions(facts.tree, name, lines):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue  # this hook, or another function of the same name whose registrations count as well
        registering = parent
        if isinstance(node, ast.Attribute) and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            return None
        if not (
            isinstance(registering, ast.Call) and registering.args and registering.args[0] is node
            and isinstance(registering.func, ast.Attribute) and registering.func.attr == "register_forward_hook"
        ):
            return None  # passed on, wrapped or registered some other way: where it runs is out of sight
        prefix: ast.expr = registering.func.value
        while isinstance(prefix, (ast.Attribute, ast.Subscript)):
            chains.add(ast.unparse(prefix))
            prefix = prefix.value
        if not isinstance(prefix, ast.Name):
            return None
        if prefix.id != "self":
            chains.add(prefix.id)
        roots.add(prefix.id)
    if not chains:
        return None
    sites: list[CallSite] = []
    stack: list[tuple[ast.AST, ast.AST | None, ast.AST | None, ast.AST, str | None]] = [(facts.tree, None, None, facts.tree, None)]
    while stack:
        node, parent, grandparent, scope, owner = stack.pop()
        inner_scope = node if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) else scope
        inner_owner = node.name if isinstance(node, ast.ClassDef) else owner
        stack.extend((child, node, parent, inner_scope, inner_owner) for child in child_nodes(node))
        if not (isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and root_name(node) in roots):
            continue
        if not isinstance(getattr(node, "ctx", None), ast.Load) or ast.unparse(node) not in chains:
            continue
        if isinstance(parent, ast.Call) and parent.func is node:
            sites.append(CallSite(parent, scope, owner, bound=False))
        elif isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
            if ast.unparse(parent) in chains or (isinstance(parent, ast.Attribute) and parent.attr in _NOT_RUNNING_FORWARD):
                continue
            if not (isinstance(grandparent, ast.Call) and grandparent.func is parent):
                return None  # a part of the model read as a value (`feats = model.features`)
            sites.append(CallSite(grandparent, scope, owner, bound=False))  # `model.forward(x)`, `model.layer4(x)`
        else:
            return None  # the model passed or bound as a value: it may run anywhere
    if len(sites) > MAX_CALL_SITES:
        return None
    return sites or None


def _may_name_a_module(facts: FileFacts, receiver: ast.expr) -> bool:
    """``receiver`` may be a module object, whose attribute may be a module-level function of this file (a file
    that imports itself): an imported name or what it reaches (``pkg.task``), or what a call returns. A chain
    from any other name (``model``, ``self.model``, ``args.net``) holds a value, not a module."""
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    return not isinstance(receiver, ast.Name) or receiver.id in facts.aliases


def _holds_instance(facts: FileFacts, receiver: ast.expr, scope: ast.AST, owner: str | None, class_name: str) -> bool | None:
    """Whether ``receiver`` holds an instance of the file's class ``class_name`` (defined once): True where it is
    bound only to ``ClassName(...)`` (``memory = ReplayBuffer()`` in ``scope`` or the module, ``self.memory =
    ReplayBuffer()`` in the methods of ``owner``); False where it is bound only to what imported code makes
    (``env = gym.make(...)``, ``opt = torch.optim.Adam(...)``); None where it may be either (a parameter, a loop
    variable, a helper's result)."""
    if len(facts.definitions.get(class_name, ())) != 1:
        return None
    if isinstance(receiver, ast.Name) and receiver.id in facts.aliases:
        return False  # `random.sample(...)`, `np.add(...)`: a module's function of the same name
    if f"{class_name}(" not in (facts.text or ""):
        return None  # never instantiated in the file: its instances come from elsewhere (most library classes)
    if isinstance(receiver, ast.Name):
        values = _bound_values(facts, receiver.id, scope)
    elif isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self" and owner:
        cls = facts.class_defined_once(owner)
        values = list(_self_stores(cls, receiver.attr)) if cls is not None else []
    elif isinstance(receiver, ast.Name | ast.Attribute | ast.Call):
        return False if _made_elsewhere(facts, receiver) else None
    else:
        return None
    if not values or None in values:
        return None
    if all(isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == class_name for v in values):
        return True
    if all(_made_elsewhere(facts, v) for v in values):  # type: ignore[arg-type]
        return False
    return None


def _bound_values(facts: FileFacts, name: str, scope: ast.AST) -> list[ast.expr | None]:
    """What ``name`` is assigned in ``scope``, or at module level when ``scope`` only reads it (None: a binding
    that is no plain assignment, such as a parameter or a loop variable)."""
    if scope is not facts.tree:
        index = facts.scopes.of(scope)
        if index.is_parameter(name):
            return [None]
        bindings = index.bindings.get(name)
        if bindings:
            return [binding.value for binding in bindings]
    return _module_assignments(facts.tree, name)


def _module_assignments(tree: ast.Module, name: str) -> list[ast.expr | None]:
    """What the module's top-level statements bind ``name`` to (None: an import, a loop, a def, a nested block)."""
    values: list[ast.expr | None] = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets):
            values.append(statement.value)
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if statement.name == name:
                values.append(None)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name.partition(".")[0]) == name for alias in statement.names):
                values.append(None)
        elif not isinstance(statement, ast.Expr):
            values.extend(_assignments_within(statement, name))  # `if __name__ == "__main__":` blocks, loops
    return values


def _assignments_within(statement: ast.stmt, name: str) -> list[ast.expr | None]:
    assigned: set[int] = set()
    values: list[ast.expr | None] = []
    for node in walk(statement):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == name:
                    assigned.add(id(target))
                    values.append(node.value)
    for node in walk(statement):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) and id(node) not in assigned:
            values.append(None)  # a loop target, `with ... as`, unpacking: not followed
    return values


def _made_elsewhere(facts: FileFacts, expression: ast.expr) -> bool:
    """An object that imported code makes or is: its chain starts at an imported name (``gym.make(...).unwrapped``)."""
    while isinstance(expression, ast.Attribute | ast.Call | ast.Subscript):
        expression = expression.func if isinstance(expression, ast.Call) else expression.value
    return isinstance(expression, ast.Name) and expression.id in facts.aliases


def _self_stores(cls: ast.ClassDef, attribute: str):
    """What the methods of ``cls`` assign to ``self.<attribute>``; None for a store that is no plain assignment."""
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        assigned: set[int] = set()
        for node in walk(method):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if is_self_attribute(target, attribute):
                        assigned.add(id(target))
                        yield node.value
        for node in walk(method):
            if is_self_attribute(node, attribute) and not isinstance(node.ctx, ast.Load) and id(node) not in assigned:  # type: ignore[attr-defined]
                yield None


def callable_from_other_modules(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> bool:
    """A public method of a class the file never names outside its definition: the class is built in other
    modules, which may call the method there, so its same-file calls are not all its calls."""
    if class_name is None or function.name.startswith("_"):
        return False
    used = facts.classes_used_in_file.get(class_name)
    if used is None:
        used = facts.text is None or len(_word_offsets(facts.text, class_name)) > 1 and any(
            isinstance(node, ast.Name) and node.id == class_name for node in walk(facts.tree)
        )
        facts.classes_used_in_file[class_name] = used
    return not used


def _word_offsets(text: str, word: str) -> list[int]:
    """Where ``word`` occurs as a whole identifier (a str.find loop: no pattern to compile per name)."""
    offsets = []
    start = text.find(word)
    while start != -1:
        end = start + len(word)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            offsets.append(start)
        start = text.find(word, end)
    return offsets


def _mentions(tree: ast.Module, name: str, lines: list[int]):
    """(node, parent, enclosing scope, enclosing class) for each Name / Attribute / def spelled ``name`` on ``lines``."""
    stack: list[tuple[ast.AST, ast.AST | None, ast.AST, str | None]] = [(tree, None, tree, None)]
    while stack:
        node, parent, scope, owner = stack.pop()
        if isinstance(node, ast.Name) and node.id == name:
            yield node, parent, scope, owner
        elif isinstance(node, ast.Attribute) and node.attr == name:
            yield node, parent, scope, owner
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            yield node, parent, scope, owner
        inner_scope = node if isinstance(node, (*_FUNCTIONS, ast.ClassDef)) else scope
        inner_owner = node.name if isinstance(node, ast.ClassDef) else owner  # a method's closures see its `self` too
        for child in child_nodes(node):
            first = getattr(child, "lineno", None)
            if first is not None:
                decorators = getattr(child, "decorator_list", None)
                if decorators:
                    first = min(first, *(decorator.lineno for decorator in decorators))
                index = bisect.bisect_left(lines, first)
                if index == len(lines) or lines[index] > (child.end_lineno or first):  # type: ignore[attr-defined]
                    continue  # no line of the name inside
            stack.append((child, node, inner_scope, inner_owner))


def bind_arguments(function: ast.FunctionDef | ast.AsyncFunctionDef, site: CallSite, values: dict[int, Value]) -> dict[str, Value]:
    """Parameter name -> what the call passes (a missing argument: its default, unknown unless a literal)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    if site.bound and not is_staticmethod(function):
        positional = positional[1:]
    call = site.call
    passed: dict[str, Value] = {}
    arguments = _positional_values(call, values)
    if arguments is None or any(keyword.arg is None for keyword in call.keywords):
        return {arg.arg: UNKNOWN for arg in [*positional, *args.kwonlyargs]}
    for parameter, value in zip(positional, arguments):
        passed[parameter.arg] = value
    for keyword in call.keywords:
        passed[keyword.arg] = values.get(id(keyword.value), UNKNOWN)  # type: ignore[index]
    defaults = dict(zip([arg.arg for arg in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults.update((arg.arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default is not None)
    for parameter in [*positional, *args.kwonlyargs]:
        if parameter.arg not in passed:
            default = defaults.get(parameter.arg)
            literal = isinstance(default, ast.Constant)
            passed[parameter.arg] = Value(kind=Kind.OTHER, grad=Grad.NO, device=Device.CPU) if literal else UNKNOWN
    return passed


def _positional_values(call: ast.Call, values: dict[int, Value]) -> list[Value] | None:
    """What a call passes by position; ``*x`` counts where ``x`` is a tuple of known length
    (``train(*generate_session(env))``), else nothing is known of the positions (None)."""
    passed: list[Value] = []
    for argument in call.args:
        if not isinstance(argument, ast.Starred):
            passed.append(values.get(id(argument), UNKNOWN))
            continue
        unpacked = values.get(id(argument.value), UNKNOWN)
        if unpacked.kind is not Kind.SEQUENCE or unpacked.elements is None:
            return None
        passed.extend(unpacked.elements)
    return passed


# What a call passes that a helper's result may depend on: the values the analysis follows.
_CONTEXT_KINDS = (Kind.TENSOR, Kind.NDARRAY, Kind.MODULE, Kind.DEVICE, Kind.DTYPE)


def call_context(
    function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, values: dict[int, Value], default: Callable[[ast.expr], Value],
    rebound_names: dict[int, frozenset[str]] | None = None,
) -> tuple[dict[str, Value], dict[str, ast.expr]]:
    """The parameters a call decides: what it passes to them (or leaves to a literal default), and the
    bool literals among them, for parameters the helper never rebinds (``rebound_names``: the names each
    helper binds, by function, worked out on the first bool literal passed to it and kept there)."""
    if any(isinstance(argument, ast.Starred) for argument in call.args) or any(keyword.arg is None for keyword in call.keywords):
        return {}, {}
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    expressions: dict[str, ast.expr] = dict(zip((arg.arg for arg in positional), call.args))
    expressions.update((keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg is not None)
    defaults = dict(zip([arg.arg for arg in positional][len(positional) - len(args.defaults):], args.defaults))
    defaults.update((arg.arg, value) for arg, value in zip(args.kwonlyargs, args.kw_defaults) if value is not None)
    rebound: frozenset[str] | None = None
    bound: dict[str, Value] = {}
    numbers: dict[str, Value] = {}
    literals: dict[str, ast.expr] = {}
    for parameter in [*positional, *args.kwonlyargs]:
        name = parameter.arg
        expression = expressions.get(name)
        value = values.get(id(expression), UNKNOWN) if expression is not None else UNKNOWN
        if expression is None and name in defaults:
            expression = defaults[name]
            value = default(expression)
        if expression is None:
            continue
        if value.kind in _CONTEXT_KINDS or (value.kind is Kind.UNKNOWN and value.grad is not Grad.UNKNOWN):
            bound[name] = value
        elif Fact.ENVIRONMENT in value.facts:
            bound[name] = value  # `generate_session(env)`: what its reset() / step() observe
        elif value.kind is Kind.NUMBER:
            numbers[name] = value  # `tv_loss(image, 2e-2)`: a weight that holds no grad (bound only with a followed value)
        if isinstance(expression, ast.Constant) and isinstance(expression.value, bool):
            if rebound is None:
                rebound = _names_bound_in(function, rebound_names if rebound_names is not None else {})
            if name not in rebound:
                literals[name] = expression
    if bound:
        bound.update(numbers)  # a call walked in its own context anyway: no more walks than before
    return bound, literals


def _names_bound_in(function: ast.FunctionDef | ast.AsyncFunctionDef, known: dict[int, frozenset[str]]) -> frozenset[str]:
    """The names ``function`` binds anywhere in its body (a walk of it, once per function in ``known``)."""
    names = known.get(id(function))
    if names is None:
        names = known[id(function)] = frozenset(
            node.id for node in walk(function) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
        )
    return names


def join_arguments(per_site: list[dict[str, Value]]) -> dict[str, Value]:
    joined = dict(per_site[0])
    for passed in per_site[1:]:
        for name, value in passed.items():
            joined[name] = join(joined[name], value) if name in joined else value
    return joined


# ---------------------------------------------------------------------------------- evidence
def _role(name: str, names: frozenset[str], suffixes: tuple[str, ...]) -> bool:
    lowered = name.lower()
    return lowered in names or lowered.endswith(suffixes)


def is_model_name(name: str) -> bool:
    return _role(name, K.MODEL_PARAMETER_NAMES, K.MODEL_PARAMETER_SUFFIXES)


def is_data_name(name: str) -> bool:
    return _role(name, K.DATA_PARAMETER_NAMES, K.DATA_PARAMETER_SUFFIXES)


def is_output_name(name: str) -> bool:
    """Named as a model's output (``logits``, ``y_pred``); a gradient of one (``grad_output``, ``output_grad``) is not."""
    return _role(name, K.OUTPUT_PARAMETER_NAMES, K.OUTPUT_PARAMETER_SUFFIXES) and not any(
        word in K.GRADIENT_WORDS for word in name.lower().split("_")
    )


def _private(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``_helper``: not part of a module's or class's API (dunder methods are)."""
    return function.name.startswith("_") and not function.name.endswith("__")


def is_truth_name(name: str) -> bool:
    """Named as ground truth (``targets``, ``y_true``, ``gt_labels``): what a prediction is scored against."""
    return _role(name, K.TRUTH_PARAMETER_NAMES, K.TRUTH_PARAMETER_SUFFIXES)


def scored_against_truth(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``name`` is a prediction that ``function`` scores against a ground-truth parameter it converts to NumPy as well
    (``roc_auc(y_preds, y_targets)`` calling ``y_targets.cpu().numpy()``): a metric, fed what evaluation made."""
    args = function.args
    truths = {arg.arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs] if arg.arg != name and is_truth_name(arg.arg)}
    if not truths:
        return False
    for node in walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "numpy" and root_name(func.value) in truths:
                return True
    return False


def clean_docstring(text: str) -> str:
    """What ``ast.get_docstring(node, clean=True)`` gives for a docstring ``text``: tabs expanded, the first line's
    leading whitespace and the other lines' common indentation removed, blank lines at either end dropped. Worked out
    here because ``ast`` does it with ``inspect.cleandoc``, and importing ``inspect`` is 3 ms of a check."""
    lines = text.expandtabs().split("\n")
    margins = [len(line) - len(line.lstrip()) for line in lines[1:] if line.lstrip()]
    margin = min(margins, default=0)
    lines = [lines[0].lstrip()] + [line[margin:] for line in lines[1:]]
    while lines and not lines[-1]:
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start]:
        start += 1
    return "\n".join(lines[start:])


def documented_as_output(function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """The first sentence of the docstring's entry for parameter ``name`` describes it as a model's output
    (``logits: ...``, ``preds: output of the model``). What the entry relates the value to (``IoU values for
    ground truth and predictions``, ``targets for the logits``) and what later sentences say (``If unset,
    predictions will not be resized``) describe other values, not this one."""
    docstring = ast.get_docstring(function, clean=False)
    if not docstring or name not in docstring:
        return False
    docstring = clean_docstring(docstring)
    entry = _parameter_entry(docstring.splitlines(), name)
    if entry is None:
        return False
    first_sentence = re.split(r"\.(?:\s|$)", entry, maxsplit=1)[0]
    own = K.RELATION_WORDS.split(first_sentence, maxsplit=1)[0]
    match = K.OUTPUT_DOC_WORDS.search(own)
    # "shape of the output of the network", "number of predictions": a property of an output, not the output.
    return match is not None and K.PROPERTY_OF.search(own[: match.start()]) is None


def _parameter_entry(lines: list[str], name: str) -> str | None:
    """The text of the docstring's entry for ``name`` (Google, NumPy, Sphinx or Epydoc style, with its continuation lines)."""
    for index, line in enumerate(lines):
        stripped = line.strip()
        match = K.PARAMETER_ENTRY.match(stripped)
        if match is None or match.group("name").lstrip("*") != name:
            continue
        indent = len(line) - len(line.lstrip())
        parts = [stripped[match.end():].strip()]
        for following in lines[index + 1:]:
            text = following.strip()
            if not text or len(following) - len(following.lstrip()) <= indent or K.PARAMETER_ENTRY.match(text):
                break
            parts.append(text)
        return " ".join(part for part in parts if part)
    return None


def model_parameter() -> Value:
    """A module a caller hands in: it holds parameters; where it lives is not visible."""
    return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.UNKNOWN, facts=frozenset({Fact.PARAMETRIZED}))


def data_parameter(annotated: Value) -> Value:
    """Data a caller hands in (a batch, images, labels, a forward's input): no grad; its device is not visible."""
    if annotated.kind not in (Kind.TENSOR, Kind.UNKNOWN):
        return annotated
    return annotated.with_(grad=Grad.NO, device=Device.UNKNOWN)


class _CallsWalked(Exception):
    """Raised by a caller's walk once it is past the statement that holds its last call of the summarised function."""


def _last_statement_with(scope: ast.AST, sites: list[CallSite]) -> ast.stmt | None:
    """The last statement of ``scope``'s own body (a function's or the module's) that holds one of ``sites``: the
    walk of the scope stops after it. A loop or a ``try`` holding a call is walked whole (its later statements may
    change what the call passes on its next pass)."""
    body = getattr(scope, "body", None)
    if not isinstance(body, list):
        return None
    lines = [site.call.lineno for site in sites]
    for statement in reversed(body):
        decorators = getattr(statement, "decorator_list", None)
        first = min(statement.lineno, *(decorator.lineno for decorator in decorators)) if decorators else statement.lineno
        last = statement.end_lineno or statement.lineno
        if any(first <= line <= last for line in lines):
            return statement
    return None


class _CallerWalk:
    """A caller's walk for summaries, statement by statement of its own body, as far as asked so far."""

    def __init__(self, asking: SummariesMixin, scope: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> None:
        from flake8_tensorconv.inference.interpreter import Interpreter

        self.scope = scope
        self.class_name = class_name
        self.modes_at: dict[int, list[bool]] = {}
        self.walked = -1  # the index in the scope's body of the last statement walked
        self.state: object = None  # the state after it, where the walk goes on
        self.stop: ast.AST | None = None
        self.interpreter = interpreter = Interpreter(asking.facts, listener=self._listen)
        interpreter.depth = asking.depth + 1
        if isinstance(scope, ast.Module):
            interpreter.walks = lambda node: False  # the module's own statements only
        else:
            # The calls are in the scope's own code, none in a function or class nested in it: those bodies are not
            # walked (a def binds its name, as in the walk rules listen to).
            interpreter.walks = lambda node: node is scope
            if class_name is None and scope in asking.facts.tree.body:
                # A module-level function reads the module's names (`env = gym.make(...)` above `def main()`).
                interpreter.state.env = dict(asking._module_names())

    def _listen(self, node: ast.AST, state: object) -> None:
        if isinstance(node, ast.Call):
            self.modes_at.setdefault(id(node), []).append(state.grad_enabled)  # type: ignore[attr-defined]
        elif node is self.stop:
            self.state = state
            raise _CallsWalked  # what the scope does after the calls asked about cannot change what they pass

    def walk_to(self, index: int) -> None:
        """Walk the scope's body up to its statement at ``index`` (the whole of a loop or ``try`` holding a call)."""
        if index <= self.walked:
            return
        body = self.scope.body
        self.stop = body[index] if index < len(body) - 1 else None
        interpreter = self.interpreter
        try:
            if self.walked >= 0:
                interpreter.state = self.state  # type: ignore[assignment]
                interpreter.walk_body(body[self.walked + 1 :])
            elif isinstance(self.scope, ast.Module):
                interpreter.walk_module()
            else:
                interpreter.walk_function(self.scope, class_name=self.class_name)
        except _CallsWalked:
            pass
        self.walked = index


class SummariesMixin:
    """The interpreter's side of summaries: parameters from callers or evidence, what same-file methods return."""

    def _caller_summary(self, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> CallerSummary | None:
        known = self.facts.caller_summaries
        key = id(function)
        if key in known:
            return known[key]  # type: ignore[return-value]
        if self.depth >= MAX_DEPTH:
            return None  # not cached: at a shallower depth it may be worked out
        known[key] = None  # a recursive call while summarising: out of sight
        sites = call_sites(self.facts, function, class_name)
        summary = None
        if sites is not None:
            summary = self._summarise_calls(function, sites)
        known[key] = summary
        return summary

    def _hooked_forwards_without_grad(self, hook: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether every call of the file that runs the layers ``hook`` is registered on runs with grad off: the
        hook runs inside those calls, so the layer output it receives holds no grad."""
        known = self.facts.hook_grad_modes
        if id(hook) in known:
            return known[id(hook)]
        known[id(hook)] = False  # asked again while working it out
        if self.depth >= MAX_DEPTH:
            return False
        sites = hooked_forward_calls(self.facts, hook)
        if sites is None:
            return False
        by_scope: dict[int, list[CallSite]] = {}
        for site in sites:
            by_scope.setdefault(id(site.scope), []).append(site)
        for scope_sites in by_scope.values():
            scope = scope_sites[0].scope
            if not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                return False  # a call in a lambda or a class body: grad mode not followed there
            _values, modes_at = self._caller_walk(scope, scope_sites)
            modes = [mode for site in scope_sites for mode in modes_at.get(id(site.call), ())]
            if not modes or any(modes):
                return False
        known[id(hook)] = True
        return True

    def _summarise_calls(self, function: ast.FunctionDef | ast.AsyncFunctionDef, sites: list[CallSite]) -> CallerSummary:
        per_site: list[dict[str, Value]] = []
        grad_enabled = False
        by_scope: dict[int, list[CallSite]] = {}
        for site in sites:
            by_scope.setdefault(id(site.scope), []).append(site)
        for scope_sites in by_scope.values():
            scope = scope_sites[0].scope
            if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
                values, modes_at = self._caller_walk(scope, scope_sites)
                modes = [mode for site in scope_sites for mode in modes_at.get(id(site.call), ())]
            else:
                values, modes = {}, [True]  # a call in a lambda or a class body: grad mode not followed there
            grad_enabled = grad_enabled or not modes or any(modes)
            per_site.extend(bind_arguments(function, site, values) for site in scope_sites)
        return CallerSummary(join_arguments(per_site), grad_enabled)

    def _caller_walk(self, scope: ast.Module | ast.FunctionDef | ast.AsyncFunctionDef, sites: list[CallSite]) -> tuple[dict[int, Value], dict[int, list[bool]]]:
        """The values of a caller's walk, and the grad mode at each call it makes (one entry per pass over the call).

        A caller is walked once per depth for all the functions it calls that are summarised (the file's
        ``__init__`` that calls several helpers), and only as far as the statement holding the last call asked
        about so far: a call further down goes on with the same walk from where it stopped."""
        last = _last_statement_with(scope, sites)
        body = scope.body
        needed = len(body) - 1 if last is None else body.index(last)
        key = (id(scope), self.depth + 1)
        walk = self.facts.caller_walks.get(key)
        if walk is None:
            walk = self.facts.caller_walks[key] = _CallerWalk(self, scope, sites[0].class_name)
        walk.walk_to(needed)
        return walk.interpreter.values, walk.modes_at

    def _module_names(self) -> dict[str, Value]:
        """What the module's own statements bind (its functions and classes not walked), worked out once per file."""
        from flake8_tensorconv.inference.interpreter import Interpreter

        if self.facts.module_names is None:
            self.facts.module_names = {}  # asked again while working it out: nothing known yet
            walker = Interpreter(self.facts, listener=None, walks=lambda node: False)
            walker.depth = MAX_DEPTH  # no summaries of its own: what the module binds, as written
            walker.walk_module()
            self.facts.module_names = walker.state.env
        return self.facts.module_names

    def _parameter_value(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, arg: ast.arg, class_name: str | None, summary: CallerSummary | None
    ) -> Value:
        """What a parameter holds: what the same-file callers pass, else what its declaration says; a value without grad
        that every call of the package passes, where a package oracle found one."""
        from_package = self.facts.package_parameters.get(id(function))
        if from_package and arg.arg in from_package:
            return from_package[arg.arg]  # type: ignore[return-value]
        annotated = self._annotation_value(arg.annotation)
        if summary is not None and arg.arg in summary.arguments:
            passed = summary.arguments[arg.arg]
            # Tensors, arrays and modules are what the analysis follows; for other data (lists, numbers)
            # the callers' literals say more than their values do, so the declaration decides.
            if passed.kind in (Kind.TENSOR, Kind.NDARRAY, Kind.MODULE) or (passed.kind is Kind.UNKNOWN and passed.grad is not Grad.UNKNOWN):
                return passed
            if passed.kind is Kind.SEQUENCE and (_holds_arrays(passed) or _holds_detached_tensors(passed)):
                return passed  # `buffer.put((obs, action, reward))`: the arrays a transition holds
            if Fact.ENVIRONMENT in passed.facts:
                return passed  # `run_episode(env, agent)`: an environment whose observations are arrays
            # Every caller is in sight and none is seen passing a risk: a name is no evidence against them.
            # (A public method is API: a subclass or a user elsewhere may call it with a model's output.)
            in_sight = class_name is None or function.name.startswith("_")
            return _device_expected(self.facts, function, arg.arg, self._parameter_evidence(function, arg, annotated, class_name, callers_in_sight=in_sight))
        return _device_expected(self.facts, function, arg.arg, self._parameter_evidence(function, arg, annotated, class_name))

    def _parameter_evidence(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef | None, arg: ast.arg, annotated: Value, class_name: str | None,
        callers_in_sight: bool = False,
    ) -> Value:
        name = arg.arg
        is_class = name[:1].isupper()  # `Model: nn.Module` is a class to instantiate, not a model
        used_as_model = is_model_name(name) and function is not None and _used_as_model(self.facts, function, name)
        if not is_class and (self._annotated_module(arg.annotation) or used_as_model):
            annotation = arg.annotation
            if isinstance(annotation, ast.Name) and annotation.id in self.facts.module_classes:
                # `net: Net`, a module class of the file: calling it runs that class's forward.
                return model_parameter().with_(instance_of=annotation.id)
            return model_parameter()
        if (function is not None and function.name == "forward" and class_name in self.facts.module_classes) or is_data_name(name):
            return data_parameter(annotated)
        # A `Tensor` annotation says what kind of value comes in, not that it requires grad or lives on a
        # GPU: a name or a docstring that calls it a model's output is the evidence of that risk.
        if function is not None and function.name in self.facts.forward_hooks and _hook_output(function, arg, class_name):
            # A forward hook's `output` is what the layer computed: it requires grad wherever the forward ran with grad.
            return caller_risk(annotated, origin(arg, f"the layer output that forward hook `{function.name}()` receives"))
        if callers_in_sight or (function is not None and _private(function)) or (
            function is not None and scored_against_truth(function, name)
        ):
            # A private function is no API: its callers are the file's, and where they are not in sight (passed
            # as a value) what they pass is unknown, not a model's output. A prediction scored against ground
            # truth that the function converts too is evaluation: the name says what it is, not that it has grad.
            return annotated
        documented = function is not None and documented_as_output(function, name)
        if is_output_name(name) or documented:
            owner = f"`{function.name}()`" if function is not None else "a lambda"
            where = origin(arg, f"a parameter of {owner} {'documented' if documented else 'named'} as a model's output")
            return caller_risk(annotated, where)
        return annotated  # no evidence: unknown, which the strict twins report

    def _annotated_module(self, annotation: ast.expr | None) -> bool:
        if annotation is None:
            return False
        if isinstance(annotation, ast.Name) and annotation.id in self.facts.module_classes:
            return True
        qualname = self.facts.qualname(annotation)
        return qualname is not None and (qualname in K.MODULE_BASES or qualname == "torch.nn.Module")

    def _literal(self, expression: ast.expr | None) -> ast.expr | None:
        """A parameter of the helper being summarised stands for the literal its call passes."""
        if isinstance(expression, ast.Name) and self.state.function is self.summary_of:
            return self.literal_parameters.get(expression.id, expression)
        return expression

    def _helper_return(self, name: str, call: ast.Call) -> Value:
        """What this call of the module-level helper ``name`` returns, given what it passes.

        A helper's result often depends on its arguments (``sample(n, device="cpu")``, a tensor
        returned converted): what the call passes to the parameters the analysis follows, and the
        literals it passes or leaves to their defaults, are bound for the walk. A call that decides
        nothing (or one past MAX_CONTEXTS) gets the summary that holds whatever is passed.
        """
        function = self.facts.helpers[name]
        bound, literals = call_context(function, call, self.values, self.eval_default, self.facts.rebound_names)
        key = (name, tuple(sorted(bound.items())), tuple(sorted((k, ast.dump(v)) for k, v in literals.items())))
        known = self.facts.helper_returns
        if key not in known:
            if bound or literals:
                contexts = self.facts.helper_contexts[name] = self.facts.helper_contexts.get(name, 0) + 1
                if contexts > MAX_CONTEXTS:
                    return self._helper_return_in(function, (name, (), ()), {}, {})
            return self._helper_return_in(function, key, bound, literals)
        return known[key]

    def _helper_return_in(self, function: ast.FunctionDef, key: tuple, bound: dict[str, Value], literals: dict[str, ast.expr]) -> Value:
        known = self.facts.helper_returns
        if key in known:
            return known[key]
        known[key] = UNKNOWN  # a recursive call while summarising
        known[key] = value = self._walked_return(function, None, bound, literals)
        return value

    def _walked_return(
        self, function: ast.FunctionDef, class_name: str | None, bound: dict[str, Value], literals: dict[str, ast.expr]
    ) -> Value:
        """What ``function`` returns, walked on its own with ``bound`` / ``literals`` for its parameters."""
        from flake8_tensorconv.inference.interpreter import Interpreter

        # Only what `function` itself returns counts: the bodies of functions and classes nested in it are not walked.
        summary = Interpreter(self.facts, listener=None, walks=lambda node: node is function)
        summary.caller_params = False
        summary.depth = self.depth + 1
        summary.summary_of = function
        summary.bound_parameters = bound
        summary.literal_parameters = literals
        summary.walk_function(function, class_name=class_name)
        value = join_all(summary.returns) if summary.returns else UNKNOWN
        return value.with_(shares_with=None)

    def eval_default(self, expression: ast.expr) -> Value:
        """A parameter's default, as a value: literals only (a device string, a number...)."""
        return self.expr_Constant(expression) if isinstance(expression, ast.Constant) else UNKNOWN  # type: ignore[attr-defined]

    def _method_return(self, class_name: str, name: str) -> Value | None:
        """What ``obj.name(...)`` returns for an instance of the file's class ``class_name``, whatever it is given."""
        key = (class_name, name)
        known = self.facts.method_returns
        if key in known:
            return known[key]
        if self.depth >= MAX_DEPTH:
            return None
        method = _method(self.facts, class_name, name)
        if method is None:
            return None
        known[key] = UNKNOWN  # a recursive call while summarising
        known[key] = value = self._walked_return(method, class_name, {}, {})
        return value

    def _grad_free_forward(self, module: Value) -> Value | None:
        """What calling ``module`` returns where its class is the file's and its ``forward`` shows the result holds no
        grad (it detaches, or computes under ``no_grad``): calling a module runs its ``forward``, a sanitiser there is
        on the path. None where the forward is not the file's or may return something that requires grad."""
        class_name = self.state.class_name if Fact.SELF in module.facts else module.instance_of
        if class_name is None or class_name not in self.facts.module_classes or self.depth >= MAX_DEPTH:
            return None
        key = (class_name, "forward()")
        known = self.facts.method_returns
        if key not in known:
            known[key] = UNKNOWN  # `self(x)` inside forward itself
            method = _forward(self.facts, class_name)
            known[key] = UNKNOWN if method is None else self._walked_return(method, class_name, {}, {})
        value = known[key]
        return value if value.kind is Kind.TENSOR and value.grad is Grad.NO else None

    def _with_grad_free_items(self, module: Value, output: Value) -> Value:
        """What calling ``module`` returns where its class is the file's and its ``forward`` returns a tuple some of whose
        items hold no grad (``return action, dist.log_prob(action)`` of an action drawn with ``dist.sample()``): those
        items as the forward shows them, on the device of the call's ``output``; the others as ``output``. ``output``
        itself where the forward shows no such item."""
        if output.kind is not Kind.TENSOR:
            return output
        class_name = self.state.class_name if Fact.SELF in module.facts else module.instance_of
        returned = self.facts.method_returns.get((class_name, "forward()")) if class_name is not None else None
        return grad_free_items(output, returned)

    def _stored_by_methods(self, class_name: str, name: str) -> Value | None:
        """What ``self.<name>`` holds where methods other than ``__init__`` store it (``__init__`` stores at most
        ``None``): a tensor without grad where every such store is one (``self.c = c`` of a centre computed under
        ``no_grad`` in ``set_c``), a value without grad of unknown kind where each store is one of those or a tensor
        (a model's dict of outputs). Anything else is left unknown: whether a stored model output requires grad
        depends on how the storing method is called, which one level of summaries does not see."""
        key = (class_name, name)
        known = self.facts.method_stores
        if key in known:
            return known[key]
        if self.depth >= MAX_DEPTH:
            return None  # not cached: at a shallower depth it may be worked out
        known[key] = None  # a read while summarising: out of sight
        cls = self.facts.class_defined_once(class_name)
        if cls is None:
            return None
        storing = [
            method for method in cls.body
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and name in self.facts.self_stores(method)
        ]
        if not storing or any(method.name == "__init__" and not _stores_only_none(method, name) for method in storing):
            return None
        from flake8_tensorconv.inference.interpreter import Interpreter

        values: list[Value] = []
        for method in storing:
            if method.name == "__init__":
                continue
            walker = Interpreter(self.facts, listener=None)
            walker.depth = self.depth + 1
            # Parameters as declared, not as callers pass them: whether a caller summary is already cached depends on
            # which functions were walked before, and what is stored must not (`self.gradients = grad`).
            walker.caller_params = False
            walker.walk_function(method, class_name=class_name)
            values.extend(value for stored, value in walker.attribute_stores if stored == name)
        if values and all(value.grad is Grad.NO and (value.kind is Kind.TENSOR or value.kind is Kind.UNKNOWN and not value.facts) for value in values):
            # A model's output computed under no_grad may be a dict or a tuple of tensors (`self.model_output = output`):
            # whatever it holds, none of it requires grad.
            kind = Kind.TENSOR if all(value.kind is Kind.TENSOR for value in values) else Kind.UNKNOWN
            known[key] = Value(kind=kind, grad=Grad.NO, dtype=values[0].dtype if len({v.dtype for v in values}) == 1 else None)
        return known[key]

    def _returned_into_init(self, class_name: str, name: str) -> Value | None:
        """What ``self.<name>`` holds where ``__init__`` alone binds it, each time to what a method of the class returns
        (``self.vectors = self.load_vectors()``), and that is NumPy data: an array, or a dict whose every item stored is
        one. Where no method stores an item into it either (``self.vectors[w] = v``), and nothing outside the class binds
        the attribute, an item read back is an array (a read before ``__init__`` binds the name raises). None elsewhere."""
        methods = self._init_bindings_by_method(class_name).get(name)
        if not methods:
            return None  # the common case: `__init__` binds it to something else, or does not bind it
        key = (class_name, name)
        known = self.facts.init_returns
        if key in known:
            return known[key]
        if self.depth >= MAX_DEPTH:
            return None
        known[key] = None  # a read while summarising: out of sight
        values: list[Value] = []
        for method in methods:
            returned = self._method_return(class_name, method)
            if returned is None:
                return None
            values.append(returned)
        value = join_all(values)
        if not (value.kind is Kind.NDARRAY or value.kind is Kind.MAPPING and value.element is not None and value.element.kind is Kind.NDARRAY):
            return None
        cls = self.facts.class_defined_once(class_name)
        if cls is None or any(
            isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load) and is_self_attribute(node.value, name) for node in walk(cls)
        ):
            return None  # items stored out of sight of `__init__`
        if any(
            isinstance(node, ast.Attribute) and node.attr == name and not isinstance(node.ctx, ast.Load)
            and not cls.lineno <= node.lineno <= (cls.end_lineno or cls.lineno)
            for node in walk(self.facts.tree)
        ):
            return None  # `individual.vectors = v` outside the class: stored out of sight of `__init__`
        known[key] = value
        return value

    def _init_bindings_by_method(self, class_name: str) -> dict[str, list[str]]:
        """The attributes that ``__init__`` of the file's class binds only to what a method of ``self`` returns
        (``self.vectors = self.load_vectors()``), and no other method binds: the names of those methods, by attribute.
        Worked out once per class, with one walk of its ``__init__``."""
        found = self.facts.init_method_bindings.get(class_name)
        if found is not None:
            return found
        found = self.facts.init_method_bindings[class_name] = {}
        init = _method(self.facts, class_name, "__init__")
        if init is None:
            return found
        stores: dict[str, int] = {}
        for node in walk(init):
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) and node.value.id == "self":
                stores[node.attr] = stores.get(node.attr, 0) + 1
            call = node.value if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            target = node.targets[0] if call is not None else None  # type: ignore[union-attr]
            if (
                isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
                and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"
            ):
                found.setdefault(target.attr, []).append(call.func.attr)
        outside = self.facts.stored_outside_init(class_name)
        for name in [name for name, methods in found.items() if stores[name] != len(methods) or name in outside]:
            del found[name]  # also bound in another way (`self.x, y = ...`, `self.x += ...`), or by another method
        return found

    def _held_by_self(self, class_name: str, name: str) -> Value | None:
        """What the container ``self.<name>`` holds, filled in any method of the class (``self.buffer.append(obs)``)."""
        if name not in self.facts.filled_on_self:
            return None  # filled nowhere in sight: the common case
        containers = self.facts.self_containers.get(class_name)
        if containers is None:
            containers = self.facts.self_containers[class_name] = {}  # a read while summarising: not known yet
            containers.update(self._summarise_containers(class_name))
        return containers.get(name)

    def _methods_with_inherited(self, cls: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The methods of ``cls`` and those it inherits from its bases of the file (``class SM(COD)`` runs ``COD.update``
        where it does not define its own), the class's own first."""
        methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        seen: set[int] = set()
        pending = [cls]
        while pending:
            current = pending.pop(0)
            if id(current) in seen:
                continue
            seen.add(id(current))
            for method in current.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    methods.setdefault(method.name, method)
            for base in current.bases:
                defined = self.facts.class_defined_once(base.id) if isinstance(base, ast.Name) else None
                if defined is not None:
                    pending.append(defined)
        return list(methods.values())

    def _summarise_containers(self, class_name: str) -> dict[str, Value]:
        from flake8_tensorconv.inference.interpreter import Interpreter

        cls = self.facts.class_defined_once(class_name)
        if cls is None:
            return {}
        items: dict[str, Value] = {}

        def add(name: str, item: Value) -> None:
            items[name] = join(items[name], item) if name in items else item

        lines = self.facts.filled_on_self_lines
        for method in self._methods_with_inherited(cls):
            if not any(method.lineno <= line <= (method.end_lineno or method.lineno) for line in lines):
                continue  # fills nothing on `self`
            walker = Interpreter(self.facts, listener=None)
            # One level further out than the walk rules listen to, whichever walk asks first (the summary is kept for
            # the class): what a method appends is what its callers pass (`put(self, transition)`), and those may pass
            # their own callers' values on (`agent.step(obs, ...)` calling `self.memory.add(state, ...)`).
            walker.depth = -1

            def listener(node: ast.AST, state: object, walker: Interpreter = walker) -> None:
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("append", "extend") and node.args:
                    container = node.func.value
                    if isinstance(container, ast.Attribute) and isinstance(container.value, ast.Name) and container.value.id == "self":
                        item = walker.value_of(node.args[0])
                        add(container.attr, element_of(item) if node.func.attr == "extend" else item)

            walker.listener = listener
            walker.walk_function(method, class_name=class_name)
            for name, value in walker.attribute_stores:
                if value.kind is Kind.SEQUENCE and value.elements:
                    add(name, element_of(value))
                elif value.kind is not Kind.SEQUENCE:
                    items[name] = UNKNOWN  # also holds something else
        return {name: Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=item) for name, item in items.items() if item != UNKNOWN}


def _hook_output(function: ast.FunctionDef | ast.AsyncFunctionDef, arg: ast.arg, class_name: str | None) -> bool:
    """``arg`` is the third parameter of a forward hook ``(module, input, output)`` (after ``self`` in a method)."""
    positional = [*function.args.posonlyargs, *function.args.args]
    if class_name is not None and not is_staticmethod(function):
        positional = positional[1:]
    return len(positional) == 3 and positional[2] is arg


def _holds_arrays(sequence: Value) -> bool:
    """A list or tuple holding NumPy arrays and no tensor or module (whose grad the declaration judges, as before)."""
    items = flatten([sequence])
    return any(item.kind is Kind.NDARRAY for item in items) and not any(item.kind in (Kind.TENSOR, Kind.MODULE) for item in items)


def _device_expected(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str, value: Value) -> Value:
    """A parameter of unknown placement whose device the function reads (`torch.zeros(3).to(x.device)`): the function
    itself expects it on any device, a GPU included."""
    if value.kind not in (Kind.TENSOR, Kind.UNKNOWN) or value.device is not Device.UNKNOWN:
        return value
    read = _device_read(facts, function, name)
    if read is None:
        return value
    return value.with_(device=Device.MAYBE, device_origin=origin(read, f"a parameter of `{function.name}()` whose device it reads"))


def _device_read(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> ast.Attribute | None:
    """The first ``name.device`` that ``function`` reads (its parameter ``name``), worked out once per function."""
    reads = facts.device_reads.get(id(function))
    if reads is None:
        reads = {}
        text = facts.text
        if text is not None:  # the function's own text first: most functions read no device
            starts = facts.line_starts
            end = starts[function.end_lineno] if function.end_lineno is not None and function.end_lineno < len(starts) else len(text)
            if ".device" not in text[starts[function.lineno - 1] : end]:
                facts.device_reads[id(function)] = reads
                return None
        for node in walk(function):
            if isinstance(node, ast.Attribute) and node.attr == "device" and isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load):
                known = reads.get(node.value.id)
                if known is None or (node.lineno, node.col_offset) < (known.lineno, known.col_offset):
                    reads[node.value.id] = node
        facts.device_reads[id(function)] = reads
    return reads.get(name)


def _holds_detached_tensors(sequence: Value) -> bool:
    """A tuple of known items, every one a tensor without grad (`(q_norm, pi_norm)` of gradient clipping): what
    they are is known, and they carry no risk a declaration would have to judge."""
    items = sequence.elements
    return bool(items) and all(item.kind is Kind.TENSOR and item.grad is Grad.NO for item in items)  # type: ignore[union-attr]


def caller_risk(value: Value, where: Origin) -> Value:
    """A parameter with evidence of risk: whatever a caller passes, e.g. a model output that requires grad on a GPU."""
    if value.kind in (Kind.TENSOR, Kind.UNKNOWN) and value == Value(kind=value.kind):
        return value.with_(grad=Grad.MAYBE, device=Device.MAYBE, grad_origin=where, device_origin=where)
    return value


def _used_as_model(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """``model(x)`` in the function; for a parameter of ``__init__``, also ``self.model(x)`` in its class's
    methods when ``__init__`` stores it there (``self.model = model``)."""
    if _called(facts, function, name):
        return True
    if function.name != "__init__" or not any(
        isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == name
        and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and t.attr == name for t in node.targets)
        for node in function.body
    ):
        return False
    owner = next((cls for cls in facts.classes if function in cls.body), None)
    return owner is not None and any(
        method is not function and _called(facts, method, f"self.{name}")
        for method in owner.body
        if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
    )


def _called(facts: FileFacts, function: ast.AST, name: str) -> bool:
    """Whether ``name`` is called in ``function`` (``model(x)``): a model is used as one."""
    if facts.text is None:
        return False
    starts = facts.line_starts
    first, last = function.lineno, function.end_lineno or function.lineno  # type: ignore[attr-defined]
    body = facts.text[starts[first - 1] : starts[last] if last < len(starts) else len(facts.text)]
    return any(body.startswith("(", offset + len(name)) for offset in _word_offsets(body, name))


def _method(facts: FileFacts, class_name: str, name: str) -> ast.FunctionDef | None:
    """The method ``name`` defined once in the file's class ``class_name`` (defined once), not a generator, decorated
    at most by a grad-mode switch (``@torch.no_grad()``: the walk runs its body in that mode, as it runs the call)."""
    cls = facts.class_defined_once(class_name)
    if cls is None:
        return None
    methods = [node for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name]
    if len(methods) != 1 or not isinstance(methods[0], ast.FunctionDef) or not all(
        _grad_mode_switch(decorator, facts) for decorator in methods[0].decorator_list
    ):
        return None
    method = methods[0]
    if any(isinstance(child, (ast.Yield, ast.YieldFrom)) for child in walk(method)):
        return None
    return method


def _grad_mode_switch(decorator: ast.expr, facts: FileFacts) -> bool:
    """``@torch.no_grad()``, ``@torch.inference_mode()``, ``@torch.enable_grad()``, ``@torch.set_grad_enabled(flag)``."""
    qualname = facts.qualname(decorator.func if isinstance(decorator, ast.Call) else decorator)
    return qualname in K.GRAD_MODE_SWITCHES or qualname in K.SET_GRAD_ENABLED


def _forward(facts: FileFacts, class_name: str) -> ast.FunctionDef | None:
    """The ``forward`` defined once in the file's class ``class_name``, not a generator. A decorator is allowed
    (`@torch.no_grad()`, an argument validator): its summary is only trusted where it shows no grad."""
    cls = facts.class_defined_once(class_name)
    methods = [] if cls is None else [node for node in cls.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "forward"]
    if len(methods) != 1 or not isinstance(methods[0], ast.FunctionDef):
        return None
    if any(isinstance(child, (ast.Yield, ast.YieldFrom)) for child in walk(methods[0])):
        return None
    return methods[0]


def _stores_only_none(method: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Every store of ``self.<name>`` in ``method`` is ``self.<name> = None`` (a placeholder that another method fills)."""
    placeholders = {
        id(target)
        for node in walk(method)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) and node.value.value is None
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
    }
    return all(
        id(node) in placeholders
        for node in walk(method)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and is_self_attribute(node, name)
    )
