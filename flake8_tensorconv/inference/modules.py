"""nn.Module instances: what their methods do, what calling one gives, what ``__init__`` stores on ``self``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.files import FileFacts
from flake8_tensorconv.inference.summaries import is_model_name
from flake8_tensorconv.inference.support import (
    STRING,
    dtype_of_expression,
    flatten,
    kwarg,
    literal_bool,
)
from flake8_tensorconv.trees import last_name, walk
from flake8_tensorconv.values import (
    UNKNOWN,
    Device,
    Fact,
    Grad,
    Kind,
    Value,
    any_device,
    any_grad,
    device_origin_of,
    grad_origin_of,
    join,
    join_all,
    origin,
    tensor,
)


class ModulesMixin:
    def _torch_module_instance(self, qualname: str, keywords: dict[str | None, Value], args: list[Value] | None = None) -> Value:
        """``torch.nn.Linear(...)``: a module of torch's, holding parameters unless it is parameter-free."""
        if qualname.startswith("torch.nn.modules."):
            # `from torch.nn.modules.distance import CosineSimilarity`: the class torch.nn exports by its name.
            qualname = "torch.nn." + qualname.rpartition(".")[2]
        if qualname in K.WRAPPING_MODULES:
            # `nn.DataParallel(net)`: the wrapped module's parameters, in its dtype and on its device.
            wrapped = args[0] if args else UNKNOWN
            if wrapped.kind is Kind.MODULE:
                return wrapped.with_(facts=wrapped.facts - {Fact.SELF}, instance_of=qualname)
            return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.CPU, facts=frozenset({Fact.PARAMETRIZED}), instance_of=qualname)
        free = qualname in K.PARAMETER_FREE_MODULES or (
            # A chain of modules without parameters that require grad (fixed transforms, frozen layers) has none either.
            qualname == "torch.nn.Sequential" and bool(args) and all(a.kind is Kind.MODULE and Fact.PARAMETRIZED not in a.facts for a in args or ())
        )
        facts = frozenset() if free else frozenset({Fact.PARAMETRIZED})
        # Parameters are created in the default dtype (float32) unless `dtype=` says otherwise.
        dtype = None if free else (keywords["dtype"].dtype if "dtype" in keywords else "float32")
        return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.CPU, dtype=dtype, facts=facts, instance_of=qualname)

    def _file_module_instance(self, class_name: str, call: ast.Call) -> Value:
        """An instance of an nn.Module subclass of this file: without parameters that require grad where the class holds
        none, or its constructor freezes every one for the arguments of ``call`` (and the file never unfreezes)."""
        known = self.facts.parameter_free_classes
        if class_name not in known:
            known[class_name] = holds_no_parameters(class_name, self.facts)
        frozen = known[class_name] or (
            "requires_grad" in (self.facts.text or "")
            and (cls := self.facts.class_defined_once(class_name)) is not None
            and freezes_every_parameter(cls, call)
            and not unfreezes(self.facts)
        )
        facts = frozenset() if frozen else frozenset({Fact.PARAMETRIZED})
        # Its layers are built in the default dtype unless the class says otherwise (rules look at the class).
        return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.CPU, dtype="float32", facts=facts, instance_of=class_name)

    def _module_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        if name in K.MODULE_RETURNING_ITSELF:
            device = receiver.device
            if name == "cuda":
                device = Device.ACCELERATOR
            elif name == "cpu":
                device = Device.CPU
            elif name == "to":
                device = self._to_device(node, args, keywords, receiver.device)
            facts = receiver.facts - {Fact.SELF}
            if name == "requires_grad_" and node.args and literal_bool(node.args[0]) is False:
                facts = facts - {Fact.PARAMETRIZED}
            moved = device is not receiver.device and device in (Device.ACCELERATOR, Device.MAYBE)
            device_origin = origin(node) if moved else receiver.device_origin
            dtype = self._module_dtype(receiver, name, node, args, keywords)
            return receiver.with_(device=device, facts=facts, dtype=dtype, device_origin=device_origin)
        if name in ("children", "modules") and not node.args and self._frozen_module(receiver):
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=receiver)  # the layers of a frozen module are frozen
        if name in ("parameters", "buffers"):
            grad = Grad.YES if name == "parameters" else Grad.NO
            parameter = tensor(grad, receiver.device, facts=frozenset({Fact.PARAMETER}), grad_origin=origin(node), device_origin=receiver.device_origin)
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=parameter)
        if name in ("named_parameters", "named_buffers"):
            grad = Grad.YES if name == "named_parameters" else Grad.NO
            leaf = frozenset({Fact.LEAF}) if grad is Grad.YES else frozenset()
            item = Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(STRING, tensor(grad, receiver.device, facts=leaf)))
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=item)
        if name == "state_dict":
            keep_vars = kwarg(node, "keep_vars")
            grad = Grad.NO if keep_vars is None or literal_bool(keep_vars) is False else Grad.UNKNOWN
            return Value(kind=Kind.MAPPING, grad=Grad.NO, element=tensor(grad, receiver.device))
        if name == "forward":
            return self._module_output(receiver, args, node)
        if name in ("modules", "children", "named_modules", "named_children"):
            return Value(kind=Kind.ITERABLE, grad=Grad.NO)
        if Fact.PARAMETRIZED in receiver.facts and is_model_name(name):
            # `model.encoder(x)`: a submodule named as a network holds parameters too.
            return self._module_output(receiver.with_(facts=frozenset({Fact.PARAMETRIZED})), args, node)
        return UNKNOWN

    def _module_dtype(self, module: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> str | None:
        """The parameters' dtype after ``module.<name>(...)``."""
        if name in K.FLOAT_METHODS:
            return K.FLOAT_METHODS[name]
        if name == "to":
            dtype = next((a for a in [*args, *keywords.values()] if a.kind in (Kind.DTYPE, Kind.TENSOR)), None)
            if dtype is not None:
                return dtype.dtype
            return None if "dtype" in keywords else module.dtype  # a dtype held in a variable
        if name == "type" and node.args:
            return dtype_of_expression(node.args[0], args[0])
        return module.dtype

    def _module_output(self, module: Value, args: list[Value], node: ast.Call) -> Value:
        if self._for_another_framework(node):
            return UNKNOWN  # `if self.model_type == "tf": self.model(x)`: the model there is another framework's
        flat = flatten(args)
        if args and all(a.kind is Kind.NDARRAY for a in args) and module.instance_of not in self.facts.module_classes:
            # Torch's layers take tensors: a model called on NumPy arrays is another library's (a Keras model behind
            # a multi-backend wrapper); only a module class of the file is seen converting them itself.
            return UNKNOWN
        inputs = [a for a in flat if a.kind in (Kind.TENSOR, Kind.UNKNOWN)]
        parametrized = Fact.PARAMETRIZED in module.facts
        grad = Grad.YES if parametrized else Grad.UNKNOWN if module.grad is Grad.UNKNOWN else any_grad([a.grad for a in inputs])
        grad_origin = origin(node) if parametrized else grad_origin_of(inputs)
        # A loss of torch's with its reduction returns one value: a 0-d tensor.
        facts = frozenset({Fact.ZERO_D_TENSOR}) if Fact.REDUCING_LOSS in module.facts else frozenset()
        if any(a.kind is Kind.TENSOR for a in inputs) and all(a.device is Device.CPU for a in inputs) and not self._moves_its_input(module):
            # Inputs on the CPU: a module on a GPU fails at this call, so wherever the call returns, its output
            # is on the CPU too (unless the file's own forward moves the input to the module's device).
            return tensor(grad, Device.CPU, facts=facts, grad_origin=grad_origin)
        device = any_device([module.device, *(a.device for a in inputs)])
        return tensor(grad, device, facts=facts, grad_origin=grad_origin, device_origin=device_origin_of([module, *inputs]))

    def _moves_its_input(self, module: Value) -> bool:
        """The module may move its inputs to its own device: a wrapper that scatters them (``DataParallel``), a model
        whose placement is not known (``from_pretrained(..., device_map=...)`` dispatches inputs), or an instance of a
        class of this file whose ``forward`` moves something (``x.to(self.device)``)."""
        name = module.instance_of
        if module.device is Device.UNKNOWN or name in K.SCATTERING_MODULES:
            return True
        if name is None or name not in self.facts.module_classes:
            return False
        for definition in self.facts.definitions.get(name, ()):
            for statement in getattr(definition, "body", ()):
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == "forward":
                    for node in walk(statement):
                        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cuda"):
                            return True
        return False


def init_attributes(cls: ast.ClassDef, facts: FileFacts) -> dict[str, Value]:
    """Values of ``self.X = ...`` in ``__init__`` (modules, parameters, instances of the file's plain classes, storage
    it allocates, and the CPU as a device it keeps)."""
    from flake8_tensorconv.inference.interpreter import Interpreter

    attributes: dict[str, Value] = {}
    stored_elsewhere: set[str] | None = None
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            interpreter = Interpreter(facts, listener=None)
            # `__init__` reads the module's names as any function does (`torch.FloatTensor(V_RANGE)` of a constant).
            interpreter.state.env = dict(interpreter._module_names())
            interpreter.walk_function(statement, class_name=None)
            for target, value in interpreter.attribute_stores:
                # Modules, parameters, and instances of the file's plain classes (`self.memory = ReplayBuffer()`,
                # whose methods' returns are summarised).
                if value.kind is Kind.MODULE or (value.kind is Kind.TENSOR and value.grad is Grad.YES) or (
                    value.kind is Kind.OTHER and value.instance_of in facts.plain_classes
                ) or _frozen_parameter(value, target, cls, facts):
                    if value.kind is Kind.TENSOR and value.grad is Grad.NO:
                        value = value.with_(device=Device.UNKNOWN, device_origin=None)  # the module may be moved later
                    attributes[target] = join(attributes[target], value) if target in attributes else value
            # Storage that `__init__` allocates (`self.buf_state = torch.empty(...)`, a replay buffer's) wherever it
            # binds the name, and that no other method rebinds, is data: filling it item by item gives it no grad
            # source. Where it lives is left unknown (a device argument may change between instances).
            # The CPU as a device that `__init__` keeps (`self._cpu_device = torch.device("cpu")`, `self.host = "cpu"`)
            # wherever it binds the name, and that no other method rebinds: `.to(self._cpu_device)` moves to the CPU.
            by_target: dict[str, list[Value]] = {}
            for target, value in interpreter.attribute_stores:
                by_target.setdefault(target, []).append(value)
            for target, values in by_target.items():
                storage = all(value.kind is Kind.TENSOR and value.grad is Grad.NO and not value.facts for value in values)
                on_cpu = all(value.kind is Kind.DEVICE and value.device is Device.CPU for value in values)
                if target in attributes or not (storage or on_cpu):
                    continue
                if stored_elsewhere is None:
                    stored_elsewhere = facts.stored_outside_init_of(cls)
                if target in stored_elsewhere:
                    continue
                if storage:
                    attributes[target] = join_all(values).with_(device=Device.UNKNOWN, device_origin=None, shares_with=None)
                else:
                    attributes[target] = Value(kind=Kind.DEVICE, grad=Grad.NO, device=Device.CPU)
    if not any(isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == "__init__" for statement in cls.body):
        attributes.update(_inherited_data(cls, facts))
    return attributes


def _frozen_parameter(value: Value, target: str, cls: ast.ClassDef, facts: FileFacts) -> bool:
    """``self.scale = nn.Parameter(t, requires_grad=False)``: a parameter that does not require grad, where no other
    method of the class stores there and the file never turns ``requires_grad`` back on."""
    return (
        value.kind is Kind.TENSOR and value.grad is Grad.NO and Fact.PARAMETER in value.facts
        and not facts.turns_grad_on() and target not in facts.stored_outside_init_of(cls)
    )


def _inherited_data(cls: ast.ClassDef, facts: FileFacts) -> dict[str, Value]:
    """A class without an ``__init__`` of its own runs its first base's: the storage and CPU device that a base of the
    file keeps there (an evaluator's ``self._cpu_device`` used by its subclass's ``process``), where no method of the
    class rebinds them (the base's own methods were asked where the base's attributes were worked out)."""
    base = cls.bases[0] if cls.bases else None
    if not isinstance(base, ast.Name) or facts.class_defined_once(base.id) is None:
        return {}
    ancestor: ast.ClassDef | None = facts.class_defined_once(base.id)
    for _ in range(8):  # a chain of bases that comes back to the class (`class A(B)`, `class B(A)`) never runs
        if ancestor is None or ancestor is cls:
            break
        first = ancestor.bases[0] if ancestor.bases else None
        ancestor = facts.class_defined_once(first.id) if isinstance(first, ast.Name) else None
    if ancestor is not None:
        return {}
    inherited = facts.class_attributes.get(base.id) or {}
    data = {
        name: value for name, value in inherited.items()
        if value.kind is Kind.DEVICE or (value.kind is Kind.TENSOR and value.grad is Grad.NO)
    }
    if data:
        rebound = facts.stored_outside_init_of(cls)
        data = {name: value for name, value in data.items() if name not in rebound}
    return data


# Calls that give a module parameters or submodules other than by `self.x = ...`.
_REGISTERS = frozenset({"register_parameter", "add_module", "register_module", "setattr", "__setattr__", "load_state_dict"})


def holds_no_parameters(class_name: str, facts: FileFacts, depth: int = 0) -> bool:
    """An nn.Module subclass of the file, defined once, derived from ``nn.Module`` itself or from such a class
    of the file, that stores only settings on ``self`` (literals, parameters of its methods whose defaults are
    literals or that are annotated as numbers, strings or flags, parameter-free torch layers, plain tensors): it
    has no parameters, so what it computes requires grad only where its inputs do (a dequantisation, a fixed
    transform, a multi-frame filter).
    """
    cls = facts.class_defined_once(class_name)
    if cls is None or not cls.bases or depth > 4:
        return False
    if cls.keywords or cls.decorator_list:
        return False
    for base in cls.bases:
        if facts.qualname(base) == "torch.nn.Module":
            continue
        if not (isinstance(base, ast.Name) and base.id != class_name and holds_no_parameters(base.id, facts, depth + 1)):
            return False
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not _stores_only_settings(statement, facts):
                return False
        elif not (isinstance(statement, (ast.Pass, ast.Expr)) and (isinstance(statement, ast.Pass) or _setting(statement.value, {}))):
            if isinstance(statement, ast.AnnAssign) and statement.value is None:
                continue  # `num_freqs: Final[int]`: an annotation binds nothing
            if not (isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None and _setting(statement.value, {})):
                return False
    return True


# Annotations of a method's parameter that make it a setting, never a module or a parameter.
_SETTING_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})


def _annotated_setting(arg: ast.arg) -> bool:
    """``num_freqs: int``, ``eps: Final[float]``, ``name: Optional[str]``."""
    annotation = arg.annotation
    while isinstance(annotation, ast.Subscript) and last_name(annotation.value) in ("Final", "Optional"):
        annotation = annotation.slice
    return annotation is not None and isinstance(annotation, (ast.Name, ast.Attribute)) and last_name(annotation) in _SETTING_ANNOTATIONS


def _stores_only_settings(method: ast.FunctionDef | ast.AsyncFunctionDef, facts: FileFacts) -> bool:
    args = method.args
    positional = [*args.posonlyargs, *args.args]
    literal_defaults = {
        arg.arg
        for arg, default in [
            *zip(positional[len(positional) - len(args.defaults):], args.defaults),
            *zip(args.kwonlyargs, args.kw_defaults),
        ]
        if default is not None and (_setting(default, {}) or _plain_tensor(default, set(), facts))
    } | {arg.arg for arg in [*positional, *args.kwonlyargs] if _annotated_setting(arg)}
    literal_defaults |= _local_settings(method, literal_defaults, facts)
    for node in walk(method):
        if isinstance(node, ast.Call):
            func = node.func
            name = last_name(func)
            if name in _REGISTERS or name == "Parameter" or name.endswith(("ModuleList", "ModuleDict", "Sequential", "ParameterList", "ParameterDict")):
                return False
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for part in _stored_into(target):
                if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                    value = getattr(node, "value", None)
                    if value is None or not (
                        _setting(value, literal_defaults) or _parameter_free_layer(value, facts) or _plain_tensor(value, literal_defaults, facts)
                    ):
                        return False
    return True


def _local_settings(method: ast.FunctionDef | ast.AsyncFunctionDef, settings: set[str], facts: FileFacts) -> set[str]:
    """Locals of ``method`` every binding of which, in order, is a plain ``name = value`` of a setting or a plain
    tensor (``r = kernel_size // 2``, then ``self.padding = r``): what they hold is no parameter and no module.
    A name bound any other way (a loop, unpacking, ``with``, ``+=``) or to another value is not one."""
    known = set(settings)
    excluded = {arg.arg for arg in [*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs]}
    plain: set[int] = set()
    for node in walk(method):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            plain.add(id(node.targets[0]))
            if name in excluded or not (_setting(node.value, known) or _plain_tensor(node.value, known, facts)):
                excluded.add(name)
            else:
                known.add(name)
    for node in walk(method):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and id(node) not in plain:
            excluded.add(node.id)
    return known - excluded - settings


def _stored_into(target: ast.expr) -> Iterator[ast.expr]:
    """What an assignment's target stores into: ``self.a`` for ``self.a[i]`` and ``self.a.b``, each element of a
    tuple; not the names it only reads (``x[self.idx] = v`` stores into ``x``)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _stored_into(element)
        return
    if isinstance(target, ast.Starred):
        yield from _stored_into(target.value)
        return
    while True:
        yield target
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return
        target = target.value


# Tensor methods that move, cast, copy or reshape: a plain tensor stays one.
_MOVES_AND_CASTS = frozenset("to cuda cpu float double half long int bool clone detach contiguous view reshape t unsqueeze squeeze".split())


def _plain_tensor(node: ast.expr, literal_parameters: set[str], facts: FileFacts) -> bool:
    """A tensor that is no parameter, stored on ``self``: made by a torch factory without ``requires_grad``
    (``torch.zeros(dim, 1).to(device)``), a setting, another attribute of ``self`` (each of them is checked where
    it is stored), items and containers of these, arithmetic, or what a torch function returns (a hand-written
    model's weights and gradients, updated by its own ``optimize`` step)."""
    if _setting(node, literal_parameters):
        return True
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "self" or node.attr == "T" and _plain_tensor(node.value, literal_parameters, facts)
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        return True  # arithmetic gives a tensor or a number, never a parameter or a module
    if isinstance(node, ast.Subscript):
        return _plain_tensor(node.value, literal_parameters, facts)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_plain_tensor(element, literal_parameters, facts) for element in node.elts)
    if isinstance(node, ast.Dict):
        return all(_plain_tensor(value, literal_parameters, facts) for value in node.values)
    if not isinstance(node, ast.Call):
        return False
    if any(keyword.arg == "requires_grad" and not (isinstance(keyword.value, ast.Constant) and keyword.value.value is False) for keyword in node.keywords):
        return False
    qualname = facts.qualname(node.func) or ""
    if qualname in K.TORCH_FACTORIES:
        return True
    if isinstance(node.func, ast.Attribute) and node.func.attr in _MOVES_AND_CASTS:
        # `.to(device)`, `.float()`: the device or dtype argument is a setting or a name of the method
        return _plain_tensor(node.func.value, literal_parameters, facts)
    name = qualname.rpartition(".")[2]
    if qualname.startswith("torch.") and not qualname.startswith("torch.nn.") and name[:1].islower() and name != "load":
        return True  # `torch.mm(x, y)`: a torch function gives a tensor, never a parameter
    return False


def _parameter_free_layer(node: ast.expr, facts: FileFacts) -> bool:
    """``nn.Dropout(p)``, ``nn.ReLU()``: a layer without parameters of its own, stored on ``self``."""
    return isinstance(node, ast.Call) and facts.qualname(node.func) in K.PARAMETER_FREE_MODULES


def _setting(node: ast.expr, literal_parameters: set[str]) -> bool:
    """A literal, or arithmetic on literals and on parameters whose defaults are literals."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in literal_parameters
    if isinstance(node, ast.UnaryOp):
        return _setting(node.operand, literal_parameters)
    if isinstance(node, ast.BinOp):
        return _setting(node.left, literal_parameters) and _setting(node.right, literal_parameters)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_setting(element, literal_parameters) for element in node.elts)
    if isinstance(node, ast.Compare):
        return all(_setting(operand, literal_parameters) for operand in (node.left, *node.comparators))  # a flag
    if isinstance(node, ast.BoolOp):
        return all(_setting(value, literal_parameters) for value in node.values)
    return False


def freezes_every_parameter(cls: ast.ClassDef, call: ast.Call) -> bool:
    """Whether the class's ``__init__``, run with the arguments of ``call``, freezes every parameter the instance holds:
    ``self.requires_grad_(False)`` or a loop over ``self.parameters()`` whose first statement sets ``requires_grad``
    false, after the last layer it stores, at the top of ``__init__`` or under a flag the call (or its default) sets."""
    init = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return False
    flags = _flag_values(init, call)
    for index, statement in enumerate(init.body):
        block = [statement]
        if isinstance(statement, ast.If):
            taken = _condition(statement.test, flags)
            block = statement.body if taken is True else statement.orelse if taken is False else []
        if any(_freezes(inner, flags) for inner in block):
            return not any(_stores_on_self(later) for later in init.body[index + 1 :])
    return False


def _flag_values(init: ast.FunctionDef, call: ast.Call) -> dict[str, bool]:
    """The bool literals ``__init__``'s parameters hold for ``call``: passed, or left to their defaults."""
    positional = [arg.arg for arg in [*init.args.posonlyargs, *init.args.args]][1:]
    values: dict[str, ast.expr] = dict(zip(positional[len(positional) - len(init.args.defaults):], init.args.defaults))
    values.update((arg.arg, default) for arg, default in zip(init.args.kwonlyargs, init.args.kw_defaults) if default is not None)
    if any(isinstance(argument, ast.Starred) for argument in call.args) or any(keyword.arg is None for keyword in call.keywords):
        return {}
    values.update(zip(positional, call.args))
    values.update((keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg is not None)
    return {name: value.value for name, value in values.items() if isinstance(value, ast.Constant) and isinstance(value.value, bool)}


def _condition(test: ast.expr, flags: dict[str, bool]) -> bool | None:
    if isinstance(test, ast.Name):
        return flags.get(test.id)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _condition(test.operand, flags)
        return None if inner is None else not inner
    return None


def _false(expression: ast.expr, flags: dict[str, bool]) -> bool:
    """``False``, or a parameter of ``__init__`` that holds it for the call (``param.requires_grad = requires_grad``)."""
    if isinstance(expression, ast.Name):
        return flags.get(expression.id) is False
    return isinstance(expression, ast.Constant) and expression.value is False


def _freezes(statement: ast.stmt, flags: dict[str, bool]) -> bool:
    if isinstance(statement, ast.Expr) and _requires_grad_false(statement.value, "self", flags):
        return True
    if not (isinstance(statement, ast.For) and statement.body and isinstance(statement.iter, ast.Call)):
        return False
    func = statement.iter.func
    if not (isinstance(func, ast.Attribute) and func.attr in ("parameters", "named_parameters") and isinstance(func.value, ast.Name)
            and func.value.id == "self" and not statement.iter.args):
        return False
    target = statement.target.elts[-1] if isinstance(statement.target, ast.Tuple) and statement.target.elts else statement.target
    if not isinstance(target, ast.Name):
        return False
    first = statement.body[0]
    if isinstance(first, ast.Assign) and len(first.targets) == 1:
        assigned = first.targets[0]
        return (isinstance(assigned, ast.Attribute) and assigned.attr == "requires_grad" and isinstance(assigned.value, ast.Name)
                and assigned.value.id == target.id and _false(first.value, flags))
    return isinstance(first, ast.Expr) and _requires_grad_false(first.value, target.id, flags)


def _requires_grad_false(expression: ast.expr, name: str, flags: dict[str, bool] | None = None) -> bool:
    """``name.requires_grad_(False)``, also after the module's own methods (``self.eval().requires_grad_(False)``), or
    with a flag of ``__init__`` that holds False for the call."""
    if not (isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute) and expression.func.attr == "requires_grad_"):
        return False
    if not (len(expression.args) == 1 and _false(expression.args[0], flags or {})):
        return False
    receiver = expression.func.value
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in K.MODULE_RETURNING_ITSELF:
        receiver = receiver.func.value
    return isinstance(receiver, ast.Name) and receiver.id == name


def _stores_on_self(statement: ast.stmt) -> bool:
    """A layer stored after the freeze (``self.head = nn.Linear(...)``) holds parameters that require grad."""
    return any(
        (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self")
        or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("add_module", "register_parameter", "register_module"))
        for node in walk(statement)
    )


def unfreezes(facts: FileFacts) -> bool:
    """The file that builds the instance may turn ``requires_grad`` back on: then nothing is frozen for sure."""
    text = facts.text or ""
    return "requires_grad_(True)" in text or "requires_grad_()" in text or re.search(r"\.requires_grad\s*=\s*True", text) is not None
