"""Expressions other than calls: names, attributes, subscripts, literals, operators, annotations."""

from __future__ import annotations

import ast
from collections.abc import Callable

from flake8_tensorconv import arrays, environments
from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.summaries import is_data_name, is_model_name, model_parameter
from flake8_tensorconv.inference.support import (
    FOREIGN,
    SHAPE,
    STRING,
    State,
    attribute_key,
    element_of,
    grad_operands,
    is_none,
    items_without_grad,
    iterates_a_loader,
    keeps_grad,
    made_without_grad,
    union_members,
)
from flake8_tensorconv.trees import child_nodes
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
    join_all,
    ndarray,
    origin,
    same,
    tensor,
)

_DEVICE_STRINGS = frozenset({"cpu", "cuda", "mps", "xpu", "meta", "hpu", "xla", "npu"})

# Annotations (``typing`` and builtin spellings, lower-cased) of containers: not a tensor themselves.
_CONTAINER_ANNOTATIONS = frozenset(
    "list tuple sequence iterable iterator collection set frozenset dict mapping mutablemapping ordereddict defaultdict".split()
)


# Operators torch defines on integer and bool tensors only.
_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
# Comparisons whose result Python itself makes a bool, whatever the operands: identity, and membership (`in` calls `__contains__` and takes its truth).
_TRUTH_VALUED = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


class ExpressionsMixin:
    # Each node type's handler (``expr_<type>``, None: none), per interpreter class, looked up once: ``getattr(self,
    # "expr_" + name)`` built a string and a bound method at each of the walk's evaluations.
    _expr_handlers: dict[type, Callable[..., Value] | None] = {}

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls._expr_handlers = {}

    def eval(self, node: ast.expr) -> Value:
        node_type = node.__class__
        try:
            handler = self._expr_handlers[node_type]
        except KeyError:
            handler = self._expr_handlers[node_type] = getattr(type(self), "expr_" + node_type.__name__, None)
        if handler is not None:
            value = handler(self, node)
        else:
            for child in child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)
            value = UNKNOWN
        if not self.state.grad_enabled and value.kind in (Kind.TENSOR, Kind.UNKNOWN) and not keeps_grad(node, value):
            value = value.with_(grad=Grad.NO)
        elif not self.state.grad_enabled and value.kind in (Kind.SEQUENCE, Kind.MAPPING, Kind.ITERABLE):
            value = made_without_grad(value)  # `out, h = net.step(x)` under no_grad: the items have no grad either
        elif value.kind is Kind.NDARRAY and value.array_origin is None and isinstance(node, ast.Call):
            value = value.with_(array_origin=origin(node))  # the call that made the array: evidence for TCV2xx messages
        self.values[id(node)] = value
        listener = self.listener  # _notify, inlined: called at every node the walk evaluates
        if listener is not None:
            listener(node, self.state)
        return value

    def value_of(self, node: ast.expr) -> Value:
        return self.values.get(id(node), UNKNOWN)

    def expr_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, str):
            device = node.value.partition(":")[0]
            if device in _DEVICE_STRINGS:
                return Value(kind=Kind.DEVICE, grad=Grad.NO, device=Device.CPU if device == "cpu" else Device.ACCELERATOR)
            return STRING
        if isinstance(node.value, (int, float, complex)) and not isinstance(node.value, bool):
            return NUMBER
        return OTHER

    def expr_JoinedStr(self, node: ast.JoinedStr) -> Value:
        for child in node.values:
            self.eval(child)
        return STRING

    def expr_Name(self, node: ast.Name) -> Value:
        if node.id in self.state.env:
            return self._trained(node.id, self.state.env[node.id])
        qualname = self.facts.aliases.get(node.id)
        if qualname is not None:
            return self._qualified_value(qualname)
        return self._trained(node.id, UNKNOWN)

    def expr_Attribute(self, node: ast.Attribute) -> Value:
        receiver = self.eval(node.value)
        qualname = self.facts.qualname(node)
        if qualname is not None and not (isinstance(node.value, ast.Name) and node.value.id in self.state.env):
            return self._qualified_value(qualname)
        key = attribute_key(node)
        if key is not None and key in self.state.env:
            value = self.state.env[key]
        else:
            value = self._attribute(receiver, node)
        return self._trained(key, value) if key is not None and Fact.SELF in receiver.facts else value

    def _trained(self, key: str, value: Value) -> Value:
        """A name or ``self`` attribute whose parameters the file trains is a module with parameters, where
        nothing else is known of it (or only that `.to(device)` was called on it, which modules have too);
        one the file freezes (``.freeze()``, ``.requires_grad_(False)``) holds none that require grad."""
        if value.kind is Kind.MODULE and Fact.PARAMETRIZED in value.facts and key in self.facts.frozen_models:
            return value.with_(facts=value.facts - {Fact.PARAMETRIZED})  # frozen: its outputs require grad only through its inputs
        unknown = value.kind is Kind.UNKNOWN or (value.kind is Kind.TENSOR and value.grad is Grad.UNKNOWN) or (
            value.kind is Kind.MODULE and not value.facts  # another module's class, moved: its parameters are not known
        )
        if unknown and not value.facts and key in self.facts.trained_models and key not in self.facts.frozen_models:
            return model_parameter().with_(device=value.device, device_origin=value.device_origin)
        if (
            value.kind is Kind.UNKNOWN and not value.facts and self.facts.freezes_by_name
            and key in self.facts.frozen_models and self.facts.stays_frozen(key)
        ):
            # `cnn = torchvision.models.squeezenet1_1(pretrained=True).features` frozen by a loop over its parameters,
            # and nothing in the file unfreezes a parameter or adds a layer to it: a module whose parameters all hold
            # no grad, so what it computes requires grad only through its inputs.
            return Value(kind=Kind.MODULE, grad=Grad.NO, device=value.device, device_origin=value.device_origin)
        return value

    @staticmethod
    def _frozen_module(value: Value) -> bool:
        """A module whose parameters all hold no grad (frozen in the file, or holding none)."""
        return value.kind is Kind.MODULE and value.grad is Grad.NO and Fact.PARAMETRIZED not in value.facts and Fact.SELF not in value.facts

    def _attribute(self, receiver: Value, node: ast.Attribute) -> Value:
        name = node.attr
        named = receiver.field(name)
        if named is not None:
            return named
        if Fact.FOREIGN in receiver.facts:
            return FOREIGN
        if Fact.ENVIRONMENT in receiver.facts and name in environments.SAME_ENVIRONMENT_ATTRIBUTES:
            return receiver
        if name == "dtype" and receiver.kind in (Kind.TENSOR, Kind.UNKNOWN, Kind.MODULE):
            # `t.to(other.dtype)` casts; it is no device move.
            return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=receiver.dtype if receiver.kind is Kind.TENSOR else None)
        if Fact.SELF in receiver.facts and self.state.class_name:
            known = self.facts.class_attributes.get(self.state.class_name, {}).get(name)
            if known is None:
                known = self._held_by_self(self.state.class_name, name)
            if known is None and name in self.facts.stored_outside_init(self.state.class_name):
                known = self._stored_by_methods(self.state.class_name, name)
            elif known is None:
                known = self._returned_into_init(self.state.class_name, name)
            return UNKNOWN if known is None else known
        if receiver.kind is Kind.OTHER and (receiver.instance_of or "").startswith(K.DATASET_MODULES):
            return Value(grad=Grad.NO)  # `test_data.test_labels`, `train_set.data`: a dataset's stored data
        if name == "grad" and receiver.kind is Kind.UNKNOWN:
            return Value(grad=Grad.NO)  # a gradient (`layer.grad`), whatever holds it, does not require grad
        if name in K.NORM_BUFFER_ATTRIBUTES and receiver.kind in (Kind.UNKNOWN, Kind.MODULE):
            # A normalisation layer's running statistics: buffers, which never require grad.
            if receiver.kind is Kind.MODULE:
                return tensor(Grad.NO, receiver.device, device_origin=receiver.device_origin)
            return Value(grad=Grad.NO)
        if receiver.kind is Kind.MODULE and Fact.PARAMETRIZED in receiver.facts and is_model_name(name):
            # `model.encoder`, `self.model.decoder`: a submodule named as a network holds parameters too.
            return model_parameter().with_(device=receiver.device, device_origin=receiver.device_origin)
        if name == "_modules" and self._frozen_module(receiver):
            return Value(kind=Kind.MAPPING, grad=Grad.NO, element=receiver)  # the layers of a frozen module are frozen
        if receiver.kind is Kind.MODULE and name in ("weight", "bias"):
            device = receiver.device if receiver.device is not Device.UNKNOWN else Device.CPU
            return tensor(Grad.YES, device, receiver.dtype, facts=frozenset({Fact.LEAF}), grad_origin=origin(node), device_origin=receiver.device_origin)
        if receiver.kind is Kind.TENSOR:
            if name in ("data", "grad"):
                return receiver.with_(grad=Grad.NO, elements=None, element=None, fields=())
            if name == "device":
                return Value(kind=Kind.DEVICE, grad=Grad.NO, device=receiver.device)
            if name == "shape":
                return SHAPE
            if name in K.NON_TENSOR_ATTRIBUTES:
                return OTHER
            facts: frozenset[str] = frozenset()
            if name in ("mH", "H"):
                facts = frozenset({Fact.CONJ})
            elif name == "imag" and Fact.CONJ in receiver.facts and receiver.dtype in K.COMPLEX_DTYPES:
                facts = frozenset({Fact.NEG})  # `.imag` of a real tensor raises instead
            dtype = receiver.dtype
            if name in ("real", "imag") and dtype in ("complex64", "complex128"):
                dtype = "float32" if dtype == "complex64" else "float64"
            return receiver.with_(elements=None, element=None, fields=(), facts=facts, dtype=dtype, shares_with=None)
        if receiver.kind is Kind.NDARRAY:
            if name == "shape":
                return SHAPE
            if name in ("T", "real", "imag", "flat", "base"):
                return receiver.with_(facts=frozenset())
            if name == "dtype":
                return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=receiver.dtype, facts=receiver.facts & {arrays.NON_NATIVE})
            return OTHER
        if receiver.kind is Kind.UNKNOWN and receiver.grad is Grad.NO and name in ("T", "mT", "real", "data"):
            return Value(grad=Grad.NO)  # a transpose or a view of what holds no grad (a batch of data) holds none
        if receiver.kind is Kind.UNKNOWN and name in ("shape", "size"):
            # Sizes (`img.shape[:2]`, a PIL image's `img.size`, an array's element count) never require grad: passed
            # beside a tensor (`F.interpolate(pred, shape)`) they add no grad to the result.
            return Value(grad=Grad.NO)
        return UNKNOWN

    def expr_Subscript(self, node: ast.Subscript) -> Value:
        container = self.eval(node.value)
        index = self.eval(node.slice)
        key = node.slice
        if (
            isinstance(key, ast.Constant) and isinstance(key.value, str) and is_model_name(key.value)
            and isinstance(node.value, ast.Call) and self.facts.qualname(node.value.func) == "torch.load"
        ):
            return model_parameter()  # `torch.load(path)["model"]`: a whole model pickled in a checkpoint
        if container.kind is Kind.TENSOR:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and is_data_name(key.value):
                # `outputs["labels"]`: no tensor takes a string index, so this is a model's dict of outputs,
                # and the item named as data (labels, indices, masks) needs no grad.
                return Value(grad=Grad.NO, device=container.device, device_origin=container.device_origin)
            if Fact.ZERO_D_TENSOR in container.facts and _integer_index(key):
                # `loss.data[0]`: IndexError on a 0-d tensor since torch 0.5; the PyTorch the code was written for
                # gave a Python number. Either way no tensor comes out.
                return UNKNOWN
            # An item of a recorded device copy is a view of it: detaching the item throws the recorded copy away.
            return container.with_(elements=None, element=None, fields=(), facts=container.facts & {Fact.RECORDED_COPY})
        if container.kind is Kind.NDARRAY:
            return arrays.subscript(container, node.slice, index)
        if Fact.FOREIGN in container.facts:
            return FOREIGN
        if container.kind is Kind.UNKNOWN and arrays.has_negative_step(node.slice) and arrays.numpy_only_index(node.slice):
            return ndarray(facts=frozenset({arrays.NEGATIVE_STRIDE}))
        if (
            container.kind in (Kind.UNKNOWN, Kind.MAPPING) and container.element is None and not container.facts
            and isinstance(key, ast.Constant) and isinstance(key.value, str) and is_data_name(key.value)
        ):
            # `batch["labels"]`, `inputs["input_ids"]`: an item named as data (labels, token ids, masks) needs no grad,
            # whatever dict holds it (a loader's batch, a tokenizer's output).
            return Value(grad=Grad.NO, device=container.device, device_origin=container.device_origin)
        if container.kind in (Kind.SEQUENCE, Kind.MAPPING, Kind.ITERABLE):
            index = node.slice
            if container.elements is not None and isinstance(index, ast.Constant) and isinstance(index.value, int):
                if -len(container.elements) <= index.value < len(container.elements):
                    return container.elements[index.value]
            if isinstance(index, ast.Slice):
                return container
            return element_of(container)
        if container.kind is Kind.UNKNOWN and container.grad is Grad.NO and not container.facts:
            return Value(grad=Grad.NO)  # an item or a slice of what holds no grad (a dataset's labels, a batch)
        if container.kind is Kind.UNKNOWN and not container.facts and isinstance(node.value, (ast.Name, ast.Attribute)) and iterates_a_loader(node.value):
            return Value(grad=Grad.NO)  # `dataset[i]`, `self.train_dataset[idx]`: a sample of a dataset is data
        return UNKNOWN

    def expr_Starred(self, node: ast.Starred) -> Value:
        return self.eval(node.value)

    def expr_Tuple(self, node: ast.Tuple | ast.List) -> Value:
        elements = tuple(self.eval(element) for element in node.elts)
        if any(isinstance(element, ast.Starred) for element in node.elts):
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO)
        element = elements[0] if elements and all(same(e, elements[0]) for e in elements) else None
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=elements, element=element)

    expr_List = expr_Tuple

    def expr_Set(self, node: ast.Set) -> Value:
        for element in node.elts:
            self.eval(element)
        return OTHER

    def expr_Dict(self, node: ast.Dict) -> Value:
        values = []
        for key in node.keys:
            if key is not None:
                self.eval(key)
        for value in node.values:
            values.append(self.eval(value))
        element = values[0] if values and all(same(v, values[0]) for v in values) else items_without_grad(values)
        # `{}` holds nothing yet (no items, as `[]`): what `d[key] = v` stores says what it holds.
        return Value(kind=Kind.MAPPING, grad=Grad.NO, element=element, elements=None if node.keys else ())

    def _comprehension(self, generators: list[ast.comprehension], elements: list[ast.expr]) -> list[Value]:
        saved = self.state.env
        self.state.env = dict(saved)
        try:
            for generator in generators:
                self.bind(generator.target, element_of(self.eval(generator.iter)))
                for condition in generator.ifs:
                    self.eval(condition)
            return [self.eval(element) for element in elements]
        finally:
            self.state.env = saved

    def expr_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp) -> Value:
        (element,) = self._comprehension(node.generators, [node.elt])
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element)

    expr_GeneratorExp = expr_ListComp

    def expr_SetComp(self, node: ast.SetComp) -> Value:
        self._comprehension(node.generators, [node.elt])
        return OTHER

    def expr_DictComp(self, node: ast.DictComp) -> Value:
        _, element = self._comprehension(node.generators, [node.key, node.value])
        return Value(kind=Kind.MAPPING, grad=Grad.NO, element=element)

    def expr_Lambda(self, node: ast.Lambda) -> Value:
        saved = self.state
        env = dict(saved.env)
        for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
            env[arg.arg] = self._parameter_evidence(None, arg, UNKNOWN, None)
        self.state = State(env=env, grad_enabled=saved.grad_enabled, function=node, class_name=saved.class_name)
        try:
            self.eval(node.body)
        finally:
            self.state = saved
        return OTHER

    def expr_IfExp(self, node: ast.IfExp) -> Value:
        self.eval(node.test)
        true_env, false_env = self._refine(node.test)
        saved = self.state.env
        self.state.env = true_env
        body = self.eval(node.body)
        self.state.env = false_env
        orelse = self.eval(node.orelse)
        self.state.env = saved
        return join(body, orelse)

    def expr_BoolOp(self, node: ast.BoolOp) -> Value:
        return join_all([self.eval(value) for value in node.values])

    def expr_NamedExpr(self, node: ast.NamedExpr) -> Value:
        value = self.eval(node.value)
        self.bind(node.target, value)
        return value

    def expr_BinOp(self, node: ast.BinOp) -> Value:
        left, right = self.eval(node.left), self.eval(node.right)
        if isinstance(node.op, ast.Add) and left.kind is Kind.SEQUENCE and right.kind is Kind.SEQUENCE:
            return concatenated(left, right)
        if isinstance(node.op, _BITWISE) and Kind.TENSOR in (left.kind, right.kind):
            # `a & b`, `a | b`, `a << 2`: torch defines these on integer and bool tensors only, which never require grad.
            tensors = [value for value in (left, right) if value.kind is Kind.TENSOR]
            dtype = left.dtype if left.dtype == right.dtype else None
            return tensor(Grad.NO, any_device([v.device for v in tensors]), dtype, device_origin=device_origin_of(tensors))
        return self._binary(left, right)

    def _binary(self, left: Value, right: Value, in_place: bool = False) -> Value:
        operands = (left, right)
        if not any(value.kind is Kind.TENSOR for value in operands):
            if all(value.kind is Kind.NDARRAY or value.kind is Kind.NUMBER for value in operands) and Kind.NDARRAY in (
                left.kind,
                right.kind,
            ):
                # NumPy scalars combine into NumPy scalars: `x * np.sqrt(5)` is an array only where an operand is one.
                arrays_in = [value for value in operands if value.kind is Kind.NDARRAY]
                maybe_scalar = all(arrays.MAYBE_SCALAR in value.facts for value in arrays_in)
                return ndarray(shares_with=left.shares_with if in_place else None, facts=frozenset({arrays.MAYBE_SCALAR}) if maybe_scalar else frozenset())
            if all(value.kind in (Kind.NUMBER, Kind.STRING, Kind.OTHER) for value in operands):
                return left if left.kind is right.kind else OTHER
            if all(_grad_free_data(value) for value in operands):
                # `images / 255.`, `batch - mean` (data, numbers): arithmetic makes no grad that no operand had.
                return Value(grad=Grad.NO)
            return UNKNOWN
        # `t * scale`: a caller's `scale` is no evidence of a tensor that requires grad.
        tensors = grad_operands([], operands)
        grads = [v.grad for v in tensors]
        devices = [v.device for v in tensors]
        base = left if left.kind is Kind.TENSOR else right
        # `ce + lamb * reg` of 0-d losses and Python numbers: broadcasting 0-d operands gives a 0-d result.
        zero_d = all(v.kind is Kind.NUMBER or (v.kind is Kind.TENSOR and Fact.ZERO_D_TENSOR in v.facts) for v in operands)
        return tensor(
            any_grad(grads),
            any_device(devices),
            base.dtype if left.dtype == right.dtype or Kind.NUMBER in (left.kind, right.kind) else None,
            facts=frozenset({Fact.ZERO_D_TENSOR}) if zero_d else frozenset(),
            shares_with=left.shares_with if in_place else None,
            grad_origin=grad_origin_of(tensors),
            device_origin=device_origin_of(tensors),
        )

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Value:
        operand = self.eval(node.operand)
        if isinstance(node.op, ast.Not):
            return OTHER
        if isinstance(node.op, ast.Invert) and operand.kind is Kind.TENSOR:
            return operand.with_(grad=Grad.NO, grad_origin=None, shares_with=None, facts=frozenset())  # integer or bool only
        # `-np.log(n)` of a maybe-scalar is a maybe-scalar still (and `-a` of a 0-d array 0-d).
        kept = operand.facts & {arrays.MAYBE_SCALAR, arrays.ZERO_D} if operand.kind is Kind.NDARRAY else frozenset()
        return operand.with_(shares_with=None, facts=kept)

    def expr_Compare(self, node: ast.Compare) -> Value:
        operands = [self.eval(node.left), *(self.eval(c) for c in node.comparators)]
        if all(isinstance(op, _TRUTH_VALUED) for op in node.ops):
            return OTHER  # `t.grad is None`, `x in t`: Python makes a bool of identity and membership, as of `not`
        if any(value.kind is Kind.TENSOR for value in operands):
            return tensor(Grad.NO, any_device([v.device for v in operands if v.kind is Kind.TENSOR]), "bool")
        if any(value.kind is Kind.NDARRAY for value in operands):
            return ndarray("bool")
        return OTHER if all(v.kind is not Kind.UNKNOWN for v in operands) else Value(grad=Grad.NO)

    def expr_Await(self, node: ast.Await) -> Value:
        self.eval(node.value)
        return UNKNOWN

    def _qualified_value(self, qualname: str) -> Value:
        dtype = K.dtype_from_qualname(qualname)
        if dtype is not None:
            return Value(kind=Kind.DTYPE, grad=Grad.NO, dtype=dtype)
        if qualname in K.FLOAT_CONSTANTS:
            return Value(kind=Kind.NUMBER, grad=Grad.NO, dtype="float64")
        if qualname.startswith(("torch", "numpy")):
            return OTHER
        if qualname.partition(".")[0] in K.FOREIGN_LIBRARIES:
            return FOREIGN
        return UNKNOWN

    def _annotation_value(self, annotation: ast.expr | None) -> Value:
        if annotation is None:
            return UNKNOWN
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return UNKNOWN
        members = union_members(annotation, self.facts)
        if members is not None:
            # Optional[Tensor], Tensor | None: a tensor whenever it is used as one. A union with
            # arrays, numbers or sequences is not known to be a tensor.
            members = [member for member in members if not is_none(member)]
            values = [self._annotation_value(member) for member in members]
            if values and all(value.kind is Kind.TENSOR for value in values):
                return values[0]
            if any(value.kind is Kind.TENSOR for value in values) and all(
                value.kind in (Kind.TENSOR, Kind.UNKNOWN) and not self._is_container_annotation(member)
                for member, value in zip(members, values)
            ):
                return Value(kind=Kind.TENSOR)
            return UNKNOWN
        qualname = self.facts.qualname(annotation)
        if qualname in K.TENSOR_CLASSES:
            return Value(kind=Kind.TENSOR)
        legacy_dtype = K.LEGACY_CONSTRUCTORS.get(qualname or "")
        if legacy_dtype in INTEGER_DTYPES:
            # `ids: torch.LongTensor`: an integer tensor, which cannot require grad.
            return tensor(Grad.NO, Device.UNKNOWN, legacy_dtype)
        if qualname in K.NDARRAY_CLASSES:
            return ndarray()
        array_qualname = self.facts.qualname(annotation.value) if isinstance(annotation, ast.Subscript) else qualname
        if array_qualname == "numpy.typing.NDArray":
            return ndarray()
        if qualname is not None and qualname.startswith("numpy."):
            return Value(kind=Kind.OTHER, grad=Grad.NO)  # npt.ArrayLike, np.float32: not a tensor
        if isinstance(annotation, ast.Name) and annotation.id in ("int", "float", "bool"):
            return NUMBER
        if isinstance(annotation, ast.Name) and annotation.id == "str":
            return STRING
        return UNKNOWN

    def _is_container_annotation(self, annotation: ast.expr) -> bool:
        """``List[Tensor]``, ``dict``, ``Sequence[float]``...: a container, not a tensor."""
        container = annotation.value if isinstance(annotation, ast.Subscript) else annotation
        name = (self.facts.qualname(container) or getattr(container, "id", "")).rpartition(".")[2]
        return name.lower() in _CONTAINER_ANNOTATIONS


def _grad_free_data(value: Value) -> bool:
    """A number, or a value of unknown kind known to hold no grad and nothing else (a dataset's stored data)."""
    return value.kind is Kind.NUMBER or (value.kind is Kind.UNKNOWN and value.grad is Grad.NO and not value.facts)


def concatenated(left: Value, right: Value) -> Value:
    """``a + b`` of two lists or tuples (``states + [obs]``, ``states += [obs]``): the items of both."""
    items: list[Value] = []
    for side in (left, right):
        if side.elements is not None:
            items.extend(side.elements)
        elif side.element is not None:
            items.append(side.element)
        else:
            return Value(kind=Kind.SEQUENCE, grad=Grad.NO)  # the items of one side are not known
    if left.elements is not None and right.elements is not None:
        element = items[0] if items and all(same(item, items[0]) for item in items) else None
        return Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=tuple(items), element=element)
    element = items[0]
    for item in items[1:]:
        element = join(element, item)
    return Value(kind=Kind.SEQUENCE, grad=Grad.NO, element=element)


def _integer_index(key: ast.expr) -> bool:
    """``0`` or ``-1``: an integer literal as the whole index."""
    if isinstance(key, ast.UnaryOp) and isinstance(key.op, ast.USub):
        key = key.operand
    return isinstance(key, ast.Constant) and type(key.value) is int
