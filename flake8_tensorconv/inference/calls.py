"""Calls: torch functions (factories, legacy constructors), NumPy functions, and methods of tensors and other values."""

from __future__ import annotations

import ast
import re

from flake8_tensorconv import arrays, environments
from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.summaries import model_parameter
from flake8_tensorconv.inference.support import (
    FOREIGN,
    SHAPE,
    arange_dtype,
    as_data,
    attribute_key,
    device_from,
    dtype_of_expression,
    element_of,
    grad_operands,
    iterates_a_loader,
    kwarg,
    literal_bool,
    root_name,
)
from flake8_tensorconv.trees import last_name, names_a_class_outside
from flake8_tensorconv.values import (
    INTEGER_DTYPES,
    NUMBER,
    OTHER,
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
    ndarray,
    origin,
    tensor,
)

# torch's defaults for Python literals differ from NumPy's.
_TORCH_LITERAL_DTYPES = {"float64": "float32", "complex128": "complex64"}


def _pretrained_model_class(cls: ast.expr) -> bool:
    """``AutoModel``, ``BertForMaskedLM``, ``UNet2DConditionModel``: a model class by the naming of the hubs' libraries
    (a tokenizer, processor, config or scheduler is none)."""
    name = last_name(cls)
    return (re.search(r"Model|[a-z]For[A-Z]", name) is not None) and re.search(K.NOT_A_PRETRAINED_MODEL, name) is None


# What a tensor and an nn.Module both have: moves and casts that return the object moved.
_MOVES_AND_CASTS = K.MODULE_RETURNING_ITSELF & K.TORCH_ONLY_METHODS


class CallsMixin:
    def expr_Call(self, node: ast.Call) -> Value:
        value = self._call(node)
        if self.facts.package is not None:
            value = self.facts.package.refine(self, node, value)  # a walk for a would-be finding: the package answers
        # `self.reset()`, `update(state)`: the call may rebind the attributes stored on its receiver or arguments.
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            self._forget_attributes(func.value.id)
        for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
            if isinstance(argument, ast.Name):
                self._forget_attributes(argument.id)
        return value

    def _call(self, node: ast.Call) -> Value:
        func = node.func
        receiver: Value | None = None
        if isinstance(func, ast.Attribute):
            receiver = self.eval(func.value)
            self.values[id(func)] = UNKNOWN
            self._notify(func)
        else:
            self.eval(func)
        args = [self.eval(arg) for arg in node.args]
        keywords = {kw.arg: self.eval(kw.value) for kw in node.keywords}
        if isinstance(func, ast.Attribute) and func.attr == "from_pretrained" and _pretrained_model_class(func.value):
            return model_parameter()  # its parameters require grad; where it is moved later is not followed
        qualname = self.facts.qualname(func)
        if qualname is not None and not (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in self.state.env
        ):
            return self._call_qualified(qualname, node, args, keywords)
        if isinstance(func, ast.Attribute) and receiver is not None:
            return self._call_on(receiver, func, node, args, keywords)
        callee = self.value_of(func)
        if callee.kind is Kind.OTHER and (callee.instance_of or "").startswith(K.TRANSFORM_MODULES):
            return Value(grad=Grad.NO)  # what a data transform makes of an image is data (a tensor or an image)
        if callee.kind is Kind.OTHER and callee.instance_of == "numpy.vectorize":
            return arrays.vectorized_call(args)
        if callee.kind is Kind.MODULE:
            # `self(x)`, `net(x)` of a module class of the file whose forward detaches or runs under no_grad.
            free = self._grad_free_forward(callee)
            if free is not None:
                return free
            # A tuple whose items the forward shows without grad (`action` drawn with `dist.sample()`) keeps them.
            return self._with_grad_free_items(callee, self._module_output(callee, args, node))
        if Fact.FOREIGN in callee.facts:
            return FOREIGN  # a Keras model, an ONNX session's method...
        if isinstance(func, ast.Name) and func.id in self.facts.record_fields and callee.kind in (Kind.OTHER, Kind.UNKNOWN):
            return self._record(self.facts.record_fields[func.id], node, args, keywords)
        if isinstance(func, ast.Name) and func.id in self.facts.helpers and callee.kind in (Kind.OTHER, Kind.UNKNOWN):
            return self._helper_return(func.id, node)
        if isinstance(func, ast.Name) and func.id in self.facts.plain_classes:
            return Value(kind=Kind.OTHER, grad=Grad.NO, instance_of=func.id)  # an instance of a plain class of this file
        if isinstance(func, ast.Name) and func.id in self.facts.module_classes:
            return self._file_module_instance(func.id, node)
        if isinstance(func, ast.Name) and func.id in ("len", "int", "float", "round", "sum", "max", "min", "abs"):
            if func.id in ("sum", "max", "min", "abs") and any(a.kind is not Kind.NUMBER for a in args):
                return UNKNOWN
            return NUMBER
        if isinstance(func, ast.Name) and func.id in ("list", "tuple", "sorted", "reversed") and args:
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element_of(args[0]))
        if isinstance(func, ast.Name) and func.id in ("str", "repr", "bool", "isinstance", "hasattr", "callable"):
            return OTHER
        if isinstance(func, ast.Name) and func.id == "next" and node.args and iterates_a_loader(node.args[0], self._loader_binding):
            return as_data(element_of(args[0]))  # `images, labels = next(iter(train_loader))`: a batch of data
        if isinstance(func, ast.Name) and func.id in ("next", "iter") and args and args[0].kind in (Kind.ITERABLE, Kind.SEQUENCE):
            return element_of(args[0]) if func.id == "next" else args[0]  # `next(model.parameters())`
        if isinstance(func, ast.Name) and func.id == "range":
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=NUMBER)
        if isinstance(func, ast.Name) and func.id == "zip" and len(node.args) == 1 and isinstance(node.args[0], ast.Starred):
            return _transposed(args[0])
        if isinstance(func, ast.Name) and func.id in ("zip", "enumerate"):
            items = [NUMBER] if func.id == "enumerate" else []
            items += [element_of(arg) for arg in args]
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=tuple(items)))
        return UNKNOWN

    def _call_on(self, receiver: Value, func: ast.Attribute, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        """``receiver.name(...)``: a module held in an attribute, a method of the file's classes, or any other method."""
        if Fact.SELF in receiver.facts and self.state.class_name:
            key = attribute_key(func)
            held = self.state.env.get(key) if key is not None else None
            if held is None:
                held = self.facts.class_attributes.get(self.state.class_name, {}).get(func.attr)
            if key is not None:
                held = self._trained(key, held or UNKNOWN)  # `self.net(x)` where the class trains `self.net`'s parameters
            if held is not None and held.kind is Kind.MODULE:
                return self._module_output(held, args, node)  # `self.net(x)`: the layer `__init__` built
            returned = self._method_return(self.state.class_name, func.attr)
            if returned is not None:
                return returned
        elif (receiver.kind is Kind.OTHER and receiver.instance_of in self.facts.plain_classes) or (
            receiver.kind is Kind.MODULE and receiver.instance_of in self.facts.module_classes and func.attr not in ("forward", "__call__")
        ):
            # `agent.act(obs)`, `self.policy_old.act(state)`: a method of a class of the file, whose return is summarised.
            returned = self._method_return(receiver.instance_of, func.attr)
            if returned is not None:
                return returned
        return self._call_method(receiver, func.attr, node, args, keywords)

    def _call_qualified(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        if qualname.startswith(K.DATASET_MODULES):
            return Value(kind=Kind.OTHER, grad=Grad.NO, instance_of=qualname)  # a dataset object: its `data` and `targets` are stored data
        if qualname.startswith(K.TRANSFORM_MODULES) and qualname.rpartition(".")[2][:1].isupper():
            return Value(kind=Kind.OTHER, grad=Grad.NO, instance_of=qualname)  # `transforms.Compose([...])`: a data transform
        if qualname in K.DATA_LOADERS:
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=Value(grad=Grad.NO))  # its batches are data
        if qualname in K.PARAMETER_CLASSES:
            source = args[0] if args else UNKNOWN
            grad = Grad.NO if "requires_grad" in keywords and literal_bool(self._literal(kwarg(node, "requires_grad"))) is False else Grad.YES
            device = source.device if source.kind is Kind.TENSOR else Device.CPU
            return tensor(grad, device, source.dtype, facts=frozenset({Fact.PARAMETER}), grad_origin=origin(node), device_origin=source.device_origin)
        if qualname in K.VARIABLE_CLASSES:
            # The legacy wrapper leaves autograd unless asked: `Variable(model(x)).requires_grad` is False.
            source = args[0] if args else UNKNOWN
            requires_grad = literal_bool(self._literal(kwarg(node, "requires_grad"))) if "requires_grad" in keywords else False
            grad = Grad.UNKNOWN if requires_grad is None else Grad.YES if requires_grad else Grad.NO
            leaf = frozenset({Fact.LEAF}) if requires_grad else frozenset()
            grad_origin = origin(node) if requires_grad else None
            return tensor(grad, source.device, source.dtype, facts=leaf, grad_origin=grad_origin, device_origin=source.device_origin)
        if qualname == "torch.device":
            return Value(kind=Kind.DEVICE, grad=Grad.NO, device=device_from(args[0], node.args[0]) if args else Device.UNKNOWN)
        if qualname in K.TORCH_CONJ_VIEWS and args:
            return tensor(args[0].grad, args[0].device, args[0].dtype, facts=frozenset({Fact.CONJ}))
        if qualname in K.TORCH_FACTORIES:
            return self._factory(qualname, node, args, keywords)
        if qualname in K.LEGACY_CONSTRUCTORS:
            return self._legacy_constructor(qualname, node, args, keywords)
        if qualname in K.TORCH_INTEGER_RESULTS:
            tensors = [a for a in args if a.kind is Kind.TENSOR]
            if tensors:
                return tensor(Grad.NO, any_device([a.device for a in tensors]), K.TORCH_INTEGER_RESULTS[qualname], device_origin=device_origin_of(tensors))
            return tensor(Grad.NO, self._device_keyword(node, keywords), K.TORCH_INTEGER_RESULTS[qualname])
        if qualname in K.GRADIENT_FUNCTIONS:
            return self._gradients(node, K.GRADIENT_FUNCTIONS[qualname])
        if qualname in K.TORCH_DTYPE_RESULTS:
            return Value(kind=Kind.DTYPE, grad=Grad.NO)
        if qualname == "torch.load":
            # Whatever was saved (a state dict, a tensor...); on the CPU when mapped there.
            location = kwarg(node, "map_location")
            on_cpu = location is not None and device_from(self.value_of(location), location) is Device.CPU
            return Value(device=Device.CPU if on_cpu else Device.UNKNOWN)
        if qualname == "torch.compile":
            return args[0] if args and args[0].kind is Kind.MODULE else UNKNOWN  # the same module, compiled
        if qualname.startswith("torch.distributions.") and qualname.rpartition(".")[2][:1].isupper():
            # A distribution object; what it samples has its parameters' device (Categorical: indices).
            flat = grad_operands(args[:1], [*args[1:], *keywords.values()])
            dtype = "int64" if qualname.rpartition(".")[2] == "Categorical" else None
            return Value(kind=Kind.OTHER, grad=Grad.NO, device=any_device([a.device for a in flat]), dtype=dtype, facts=frozenset({Fact.DISTRIBUTION}))
        if qualname in K.TORCH_NON_TENSOR_RESULTS:
            return OTHER
        if qualname in K.TORCH_DETACHED_RESULTS:
            return tensor(Grad.NO, Device.UNKNOWN)
        if qualname in K.TORCH_NUMBER_RESULTS:
            count = K.TORCH_NUMBER_RESULTS[qualname]
            return NUMBER if count == 1 else Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(NUMBER,) * count)
        if qualname in K.ACCELERATOR_CHECKS:
            return Value(kind=Kind.OTHER, grad=Grad.NO, facts=frozenset({Fact.ACCELERATOR_CHECK}))
        if qualname in environments.MAKERS:
            return environments.made(qualname, node, self._string_literal(environments.id_argument(node)))
        if qualname.startswith(environments.WRAPPER_PACKAGES) and args:
            return environments.wrapped(qualname, args[0])
        if qualname == "collections.deque":
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=() if not args else None, element=element_of(args[0]) if args else None)
        if qualname in K.PICKS_FROM_SEQUENCE and args:
            item = element_of(args[0])
            return item if qualname in K.PICKS_ONE else Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=item)
        if qualname.startswith("torch.") and qualname.count(".") >= 1:
            name = qualname.rpartition(".")[2]
            if qualname.startswith("torch.nn.") and name[:1].isupper():
                module = self._torch_module_instance(qualname, keywords, args)
                if name.endswith("Loss") and not name.endswith("WithLoss") and self._reduces_to_one_value(node, positional=1):
                    module = module.with_(facts=module.facts | {Fact.REDUCING_LOSS})
                return module
            if name in ("topk", "sort", "kthvalue", "mode") or (name in K.VALUES_INDICES_WITH_DIM and len(args) + len(keywords) > 1):
                return self._values_indices(args[0] if args else UNKNOWN)
            if qualname in K.SET_GRAD_ENABLED or qualname in K.GRAD_MODE_SWITCHES:
                return OTHER
            dtype = K.dtype_from_qualname(qualname)
            if dtype is not None:
                return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=dtype)
            if qualname.startswith(("torch.nn.functional.", "torch.nn.init.")) or qualname.count(".") == 1:
                # torch.cat((a, b)), torch.stack([...]): the tensors may sit in a sequence argument.
                first = 2 if args and args[0].kind is Kind.STRING else 1  # torch.einsum("ij,jk", a, b)
                inputs = [*args[:first], *(value for key, value in keywords.items() if key in ("input", "tensors"))]
                others = [*args[first:], *(value for key, value in keywords.items() if key not in ("input", "tensors"))]
                flat = grad_operands(inputs, others)
                grad, device = any_grad([a.grad for a in flat]), any_device([a.device for a in flat])
                one_value = (qualname in K.FUNCTIONAL_LOSSES and self._reduces_to_one_value(node, positional=3)) or (
                    name in K.WHOLE_REDUCTIONS and qualname.count(".") == 1 and len(node.args) == 1 and set(keywords) <= {"dtype"}
                )
                facts = frozenset({Fact.ZERO_D_TENSOR}) if one_value else frozenset()
                return tensor(grad, device, facts=facts, grad_origin=grad_origin_of(flat), device_origin=device_origin_of(flat))
            return UNKNOWN
        if qualname.startswith("numpy."):
            return self._numpy_call(qualname, node, args, keywords)
        if qualname in K.ARRAY_RESULTS:
            result = K.ARRAY_RESULTS[qualname]
            if isinstance(result, tuple):
                return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=tuple(ndarray(dtype) for dtype in result))
            return ndarray(result)
        if qualname.partition(".")[0] in K.FOREIGN_LIBRARIES:
            return FOREIGN
        return UNKNOWN

    def _reduces_to_one_value(self, node: ast.Call, positional: int) -> bool:
        """A loss of torch's called or built with its default reduction ("mean") or "sum": its result is 0-d.
        Past ``positional`` arguments the old ``reduce`` flag may stand, which may keep one value per element."""
        if len(node.args) > positional or any(isinstance(argument, ast.Starred) for argument in node.args):
            return False
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg in K.LOSS_REDUCTION_KEYWORDS - {"reduction"}:
                return False
            if keyword.arg == "reduction" and self._string_literal(keyword.value) not in ("mean", "sum"):
                return False
        return True

    def _gradients(self, node: ast.Call, create_graph_position: int) -> Value:
        """``torch.autograd.grad(loss, params)``: a tuple of gradients, which require grad only where ``create_graph``
        is set (a double backward); without it they are made outside any graph."""
        create_graph = node.args[create_graph_position] if len(node.args) > create_graph_position else kwarg(node, "create_graph")
        literal = False if create_graph is None else literal_bool(self._literal(create_graph))
        grad = Grad.NO if literal is False else Grad.UNKNOWN if literal is None else Grad.YES
        gradient = tensor(grad, Device.UNKNOWN, grad_origin=origin(node) if grad is Grad.YES else None)
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=gradient)

    def _string_literal(self, node: ast.expr | None) -> str | None:
        """The string ``node`` spells, or that the name ``node`` is bound to once (in its function, else the module)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if not isinstance(node, ast.Name):
            return None
        for scope in dict.fromkeys((self.state.function or self.facts.tree, self.facts.tree)):
            index = self.facts.scopes.of(scope)
            if index.is_parameter(node.id):
                return None
            bindings = index.bindings.get(node.id)
            if bindings:
                value = bindings[0].value if len(bindings) == 1 else None
                return value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
        return None

    def _record(self, names: tuple[str, ...], node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        """``Transition(state, action, ...)`` of a namedtuple class of the file: a tuple whose fields are known."""
        if len(node.args) == 1 and isinstance(node.args[0], ast.Starred):
            passed = list(args[0].elements or ())  # `Transition(*zip(*transitions))`
        elif any(isinstance(argument, ast.Starred) for argument in node.args):
            passed = []
        else:
            passed = list(args)
        by_name = dict(zip(names, passed))
        by_name.update((key, value) for key, value in keywords.items() if key in names)
        items = tuple(by_name.get(name, UNKNOWN) for name in names)
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=items, fields=tuple(zip(names, items)))

    def _legacy_constructor(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        source = args[0] if len(args) == 1 else NUMBER
        if source.kind is Kind.TENSOR:
            return source.with_(shares_with=None)  # `torch.Tensor(t)` is `t` itself
        dtype = K.LEGACY_CONSTRUCTORS[qualname] or "float32"
        if source.kind is Kind.UNKNOWN and source.grad is not Grad.NO:
            # Data or a tensor: fresh from data, the tensor itself otherwise.
            return tensor(Grad.UNKNOWN, Device.UNKNOWN if "device" not in keywords else self._device_keyword(node, keywords), dtype)
        return tensor(Grad.NO, self._device_keyword(node, keywords), dtype)

    def _factory(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        name = qualname.rpartition(".")[2]
        requires_grad = self._literal(kwarg(node, "requires_grad"))
        grad = Grad.NO
        if requires_grad is not None:
            literal = literal_bool(requires_grad)
            grad = Grad.UNKNOWN if literal is None else (Grad.YES if literal else Grad.NO)
        source = args[0] if args else UNKNOWN
        dtype = keywords.get("dtype").dtype if keywords.get("dtype") is not None else None  # type: ignore[union-attr]
        device = self._device_keyword(node, keywords)
        if name.endswith("_like") or (name in ("tensor", "as_tensor", "asarray") and source.kind is Kind.TENSOR):
            if source.kind is Kind.TENSOR and "device" not in keywords:
                device = source.device
            if name == "as_tensor" and requires_grad is None:
                grad = source.grad
            dtype = dtype or source.dtype
        elif name in ("from_numpy", "as_tensor", "tensor", "asarray") and dtype is None:
            dtype = source.dtype
            if dtype is None and name != "from_numpy" and node.args:
                literal = arrays.literal_dtype(node.args[0])
                dtype = _TORCH_LITERAL_DTYPES.get(literal, literal)  # type: ignore[arg-type]
        elif name in ("randint", "randperm") and dtype is None:
            dtype = "int64"
        elif name == "arange" and dtype is None and all(a.kind is Kind.NUMBER for a in args):
            dtype = arange_dtype(node)
        shares = None
        if name in ("from_numpy", "as_tensor", "asarray") and node.args and isinstance(node.args[0], ast.Name):
            shares = node.args[0].id
            if name == "from_numpy" and source.kind is Kind.UNKNOWN and shares in self.state.env:
                # `torch.from_numpy` raises TypeError on anything but an ndarray: past it, the name holds one.
                self.state.env[shares] = ndarray()
        facts = frozenset({Fact.FROM_NUMPY}) if name == "from_numpy" else frozenset({Fact.LEAF}) if grad is Grad.YES else frozenset()
        grad_origin = origin(node) if grad is Grad.YES else source.grad_origin
        device_origin = origin(node) if "device" in keywords else source.device_origin
        return tensor(grad, device, dtype, shares_with=shares, facts=facts, grad_origin=grad_origin, device_origin=device_origin)

    def _device_keyword(self, node: ast.Call, keywords: dict[str | None, Value]) -> Device:
        if "device" not in keywords:
            return Device.CPU
        expression = kwarg(node, "device")
        return device_from(keywords["device"], expression)

    def _values_indices(self, source: Value) -> Value:
        origins = {"grad_origin": source.grad_origin, "device_origin": source.device_origin}
        values = tensor(source.grad, source.device, source.dtype, **origins) if source.kind is Kind.TENSOR else Value(device=source.device)
        indices = tensor(Grad.NO, source.device if source.kind is Kind.TENSOR else Device.UNKNOWN, "int64", device_origin=source.device_origin)
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(values, indices), fields=(("values", values), ("indices", indices)))

    def _unique(self, source: Value, node: ast.Call) -> Value:
        """``t.unique(return_counts=True)``: the values as ``t`` (grad kept), then int64 inverse and counts."""
        counts = tensor(Grad.NO, source.device, "int64", device_origin=source.device_origin)
        extra = tuple(counts for flag in ("return_inverse", "return_counts") if literal_bool(kwarg(node, flag)))
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(source, *extra))

    def _numpy_call(self, qualname: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        name = qualname[len("numpy."):]
        if K.dtype_from_qualname(qualname) is not None and not args:
            return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=K.dtype_from_qualname(qualname))
        if name in ("ndarray", "generic") or name.startswith(("random.seed", "testing.", "save", "savez", "copyto", "put")):
            return OTHER
        return arrays.numpy_call(qualname, node, args, keywords)

    def _call_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        kind = receiver.kind
        if kind is Kind.MODULE:
            return self._module_method(receiver, name, node, args, keywords)
        if kind is Kind.MAPPING:
            if name in ("values",):
                return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=receiver.element)
            if name == "items" and receiver.element is not None:
                item = Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(UNKNOWN, receiver.element))
                return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=item)
            if name in ("get", "pop") and receiver.element is not None:
                if receiver.element.kind is Kind.NDARRAY and (len(args) > 1 or name == "get"):
                    # `vectors.get(word)` is None for a missing word, `vectors.get(word, 0.0)` the default: an array or not
                    return join(receiver.element, args[1] if len(args) > 1 else OTHER)
                return receiver.element
            return UNKNOWN
        if kind is Kind.NDARRAY:
            return self._ndarray_method(receiver, name, node, args)
        if kind is Kind.DTYPE:
            return arrays.dtype_method(receiver, name, node)
        if name in ("sample", "sample_n") and kind in (Kind.TENSOR, Kind.UNKNOWN):
            # A tensor has no `.sample()`: the receiver is a distribution (what a model returned) or another
            # library's space or sampler. Distribution.sample runs under no_grad (rsample is the differentiable
            # one); what an unknown receiver's sample is (a gym space's is an array) is not known.
            if kind is Kind.TENSOR:
                return tensor(Grad.NO, receiver.device)
            return Value(grad=Grad.NO)
        if kind is Kind.UNKNOWN and name in _MOVES_AND_CASTS and self._imported_instance(node.func.value):  # type: ignore[attr-defined]
            # `Meta(args).to(device)`: an instance of another module's class, moved or cast, is a module (no tensor is
            # made by calling a project's class); what its other methods return is not known.
            return self._module_method(Value(kind=Kind.MODULE, grad=Grad.NO), name, node, args, keywords)
        if kind is Kind.TENSOR or (kind is Kind.UNKNOWN and name in K.TORCH_ONLY_METHODS):
            return self._tensor_method(receiver, name, node, args, keywords)
        if kind is Kind.SEQUENCE and name in ("pop", "copy"):
            return element_of(receiver) if name == "pop" else receiver
        if Fact.FOREIGN in receiver.facts:
            return FOREIGN
        if Fact.ENVIRONMENT in receiver.facts:
            return environments.method_result(receiver, name, node, self._four_item_step(node.func)) or UNKNOWN
        if kind in (Kind.UNKNOWN, Kind.OTHER) and name in environments.OBSERVING_METHODS and self._shaped_environment(node.func):
            return environments.method_result(environments.SHAPED, name, node, self._four_item_step(node.func)) or UNKNOWN
        if kind is Kind.OTHER and Fact.DISTRIBUTION in receiver.facts and name in ("sample", "sample_n", "enumerate_support"):
            # Distribution.sample runs under no_grad (rsample is the differentiable one).
            return tensor(Grad.NO, receiver.device, receiver.dtype)
        if kind is Kind.UNKNOWN:
            return self._unknown_method(receiver, name, node, args, keywords)
        return UNKNOWN

    def _four_item_step(self, func: ast.expr) -> bool:
        """``env.reset()`` where the file unpacks ``env.step(a)`` into four items (the same last name)."""
        return (last := _receiver_last_name(func)) is not None and last in self.facts.four_item_steps

    def _shaped_environment(self, func: ast.expr) -> bool:
        """``env.step(a)`` where the file reads ``env.observation_space.shape`` (the same last name: ``self.env`` too)."""
        return (last := _receiver_last_name(func)) is not None and last in self.facts.shaped_environments

    def _imported_instance(self, expression: ast.expr) -> bool:
        """``Meta(args)``: a call of a class imported from outside torch and NumPy (a CamelCase name)."""
        if not isinstance(expression, ast.Call):
            return False
        return names_a_class_outside(expression.func, self.facts.qualname(expression.func), ("torch", "numpy", "tensorflow", "jax"))

    def _unknown_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        """Methods that say what they return whatever the receiver (a tensor, an array, a module...)."""
        if name == "state_dict":
            # Module and optimizer state: values are detached unless keep_vars=True.
            keep_vars = kwarg(node, "keep_vars")
            grad = Grad.NO if keep_vars is None or literal_bool(keep_vars) is False else Grad.UNKNOWN
            return Value(kind=Kind.MAPPING, grad=Grad.NO, element=Value(grad=grad))
        if name in ("parameters", "named_parameters") and not node.args and not node.keywords:
            # Only an nn.Module has these: its parameters require grad (where it lives is not known).
            parameter = Value(kind=Kind.TENSOR, grad=Grad.YES, facts=frozenset({Fact.PARAMETER, Fact.LEAF}), grad_origin=origin(node))
            if name == "named_parameters":
                parameter = Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=(Value(kind=Kind.STRING, grad=Grad.NO), parameter))
            return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=parameter)
        if name == K.SPARSE_COO_METHOD and not node.args and not node.keywords and not self._imports_sparse_lookalike():
            # Only a sparse matrix has `.tocoo()`: its `row`, `col` and `data` are NumPy arrays.
            made = origin(node)
            coordinates = tuple((field, ndarray(None, array_origin=made)) for field in K.SPARSE_COO_ARRAYS)
            return Value(kind=Kind.OTHER, grad=Grad.NO, fields=coordinates)
        if name in K.INTEGER_RESULT_METHODS:
            return Value(grad=Grad.NO, dtype="int64")  # an integer tensor or array
        if name in K.BOOL_RESULT_METHODS:
            return Value(grad=Grad.NO, dtype="bool")  # `outputs.ge(0.5)`: a comparison never requires grad
        if name in K.SHAPE_METHODS and receiver.grad is not Grad.UNKNOWN:
            # What is known of grad (none, or a caller's risk) holds for the reshaped value too.
            return Value(grad=receiver.grad, device=receiver.device, dtype=receiver.dtype,
                         grad_origin=receiver.grad_origin, device_origin=receiver.device_origin)
        if name in K.GRAD_KEEPING_METHODS and receiver.grad is Grad.NO:
            # `images.type(torch.FloatTensor)`, `.contiguous()`: a cast or a view of what holds no grad holds none.
            return Value(grad=Grad.NO)
        if name in K.TENSOR_API and receiver.grad is Grad.NO and node.args and all(_holds_no_grad(a) for a in [*args, *keywords.values()]):
            # `action.gather(0, index)` after the `no_grad` block that made both: a tensor op whose operands all
            # hold no grad gives a result that holds none, whatever grad mode it runs in.
            return Value(grad=Grad.NO)
        if name in ("size", "dim", "numel", "nelement", "ndimension", "item") and (name != "size" or node.args):
            return NUMBER  # `.size(0)` is a tensor's (an array's `size` is not callable)
        return UNKNOWN

    def _imports_sparse_lookalike(self) -> bool:
        return any(alias.partition(".")[0] in K.SPARSE_LOOKALIKE_LIBRARIES for alias in self.facts.aliases.values())

    def _records_copy(self, receiver: Value) -> bool:
        """Whether autograd records a device copy of ``receiver`` here: it requires grad, and grad mode is on."""
        return self.state.grad_enabled and receiver.kind is Kind.TENSOR and receiver.grad in (Grad.YES, Grad.MAYBE)

    def _tensor_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value], keywords: dict[str | None, Value]) -> Value:
        plain = receiver.with_(elements=None, element=None, fields=(), facts=frozenset(), shares_with=None, kind=Kind.TENSOR)
        if name == "numpy":
            return ndarray(receiver.dtype, shares_with=root_name(node.func.value))  # type: ignore[attr-defined]
        effect = K.TENSOR_METHODS.get(name)
        if effect is not None:
            facts = effect.facts | (receiver.facts & K.TENSOR_VIEW_FACTS) if effect.keeps_view_facts else effect.facts
            moved = effect.device is Device.ACCELERATOR and plain.device is not Device.ACCELERATOR
            if effect.device is not None and effect.device is not plain.device and self._records_copy(receiver):
                facts = facts | {Fact.RECORDED_COPY}
            if name in K.SHAPE_KEEPING_TENSOR_METHODS:
                facts = facts | (receiver.facts & {Fact.ZERO_D_TENSOR})
            return plain.with_(
                grad=plain.grad if effect.grad is None else effect.grad,
                device=plain.device if effect.device is None else effect.device,
                dtype=plain.dtype if effect.dtype is None else effect.dtype,
                facts=facts,
                device_origin=origin(node) if moved else plain.device_origin,
            )
        if name == "to":
            dtype = next((a.dtype for a in [*args, *keywords.values()] if a.kind is Kind.DTYPE), None)
            if args[:1] and args[0].kind is Kind.TENSOR:  # `t.to(other)` takes `other`'s dtype, known or not
                dtype = args[0].dtype
            elif dtype is None:
                dtype = receiver.dtype
            device = self._to_device(node, args, keywords, receiver.device)
            moved = device is not receiver.device and device in (Device.ACCELERATOR, Device.MAYBE)
            if dtype in INTEGER_DTYPES:
                # A cast to an integer or bool dtype leaves autograd: nothing is recorded, the result cannot require grad.
                return plain.with_(grad=Grad.NO, device=device, dtype=dtype, device_origin=origin(node) if moved else plain.device_origin)
            copied = device is not receiver.device and device is not Device.UNKNOWN and self._records_copy(receiver)
            return plain.with_(
                device=device, dtype=dtype, device_origin=origin(node) if moved else plain.device_origin,
                facts=frozenset({Fact.RECORDED_COPY}) if copied else plain.facts,
            )
        if name == "requires_grad_":
            literal = literal_bool(self._literal(node.args[0])) if node.args else True
            kw = self._literal(kwarg(node, "requires_grad"))
            if kw is not None:
                literal = literal_bool(kw)
            grad = Grad.UNKNOWN if literal is None else (Grad.YES if literal else Grad.NO)
            leaf = plain.facts | {Fact.LEAF} if grad is Grad.YES else plain.facts  # `t.requires_grad_()` makes a leaf require grad
            return plain.with_(grad=grad, facts=leaf, grad_origin=origin(node) if grad is Grad.YES else None)
        if name in K.VALUES_INDICES_METHODS or (name in K.VALUES_INDICES_WITH_DIM and (args or keywords)):
            return self._values_indices(plain)
        if name in K.UNIQUE_METHODS and any(literal_bool(kwarg(node, flag)) for flag in ("return_inverse", "return_counts")):
            return self._unique(plain, node)
        if name == "size" and not node.args:
            return SHAPE
        if name in K.NON_TENSOR_METHODS:
            return NUMBER if name in K.NUMBER_METHODS else OTHER
        if name == "view" and len(args) == 1 and not keywords and args[0].kind is Kind.DTYPE and args[0].dtype is not None:
            # `t.view(torch.int16)` reinterprets the bits as another dtype (a view, the same memory).
            dtype = args[0].dtype
            return plain.with_(dtype=dtype, grad=Grad.NO if dtype in INTEGER_DTYPES else plain.grad)
        if name in ("type",) and node.args:
            dtype = dtype_of_expression(node.args[0], args[0])
            device = plain.device
            # `.type(torch.LongTensor)`, `.type("torch.cuda.FloatTensor")`: a tensor type names dtype and device.
            spelled = node.args[0].value if isinstance(node.args[0], ast.Constant) else self.facts.qualname(node.args[0])
            if isinstance(spelled, str) and spelled.replace(".cuda.", ".") in K.LEGACY_CONSTRUCTORS:
                dtype = K.LEGACY_CONSTRUCTORS[spelled.replace(".cuda.", ".")] or "float32"
                device = Device.ACCELERATOR if ".cuda." in spelled else Device.CPU
            return plain.with_(dtype=dtype, device=device, grad=Grad.NO if dtype in INTEGER_DTYPES else plain.grad)
        if name in ("type_as", "view_as", "expand_as", "reshape_as") and args:
            other = args[0]
            return plain.with_(dtype=other.dtype if name == "type_as" else plain.dtype)
        if name in K.SPLITTING_METHODS:
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=plain)
        if name in K.GRAD_FROM_OPERANDS_METHODS:
            flat = grad_operands([plain], [*args, *keywords.values()])
            return plain.with_(grad=any_grad([a.grad for a in flat]), grad_origin=grad_origin_of(flat))
        if name not in K.TENSOR_API and plain.grad not in (Grad.YES, Grad.MAYBE):
            # No tensor has this method: the receiver is another object (moved with its own `.to()`), and with no
            # grad source behind it what the method returns is unknown. What an object made by a grad source (a
            # model-named callable's result) returns keeps that evidence.
            return UNKNOWN
        if name in K.WHOLE_REDUCTIONS and not node.args and set(keywords) <= {"dtype"}:
            return plain.with_(facts=frozenset({Fact.ZERO_D_TENSOR}))  # `loss.mean()`: one value, a 0-d tensor
        return plain

    def _ndarray_method(self, receiver: Value, name: str, node: ast.Call, args: list[Value]) -> Value:
        return arrays.method(receiver, name, node, args)

    def _to_device(self, node: ast.Call, args: list[Value], keywords: dict[str | None, Value], current: Device) -> Device:
        if "device" in keywords:
            return device_from(keywords["device"], kwarg(node, "device"))
        for expression, value in zip(node.args, args):
            if value.kind is Kind.DTYPE:
                continue
            if value.kind is Kind.TENSOR:
                return value.device
            return device_from(value, expression)
        return current


def _transposed(rows: Value) -> Value:
    """``zip(*rows)`` where each row's items are known (``zip(*transitions)``): the i-th tuple holds every row's i-th item."""
    row = element_of(rows)
    if row.elements is None:
        return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=Value(kind=Kind.SEQUENCE, grad=Grad.NO))  # tuples of unknown items
    columns = tuple(Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=item) for item in row.elements)
    return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=columns)


def _receiver_last_name(func: ast.expr) -> str | None:
    """The last name of a method's receiver: ``env`` of ``env.step`` and of ``self.env.step``; None for any other callee."""
    receiver = func.value if isinstance(func, ast.Attribute) else None
    return receiver.id if isinstance(receiver, ast.Name) else receiver.attr if isinstance(receiver, ast.Attribute) else None


def _holds_no_grad(value: Value) -> bool:
    """An operand that cannot give a result grad: a number, a string, a dtype, a device, or what holds none."""
    return value.kind in (Kind.NUMBER, Kind.STRING, Kind.DTYPE, Kind.DEVICE) or value.grad is Grad.NO
