from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability
from flake8_tensorconv.rules._conversion import needs_parentheses
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix
from flake8_tensorconv.trees import walk
from flake8_tensorconv.values import Fact, Grad, Kind, Value

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

# Layer functions: qualified name -> (positions of the inputs, position of the weight).
_LAYER_FUNCTIONS = {
    **{f"torch.nn.functional.{name}": ((0,), 1) for name in (
        "linear conv1d conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d prelu"
    ).split()},
    "torch.nn.functional.bilinear": ((0, 1), 2),
}
# Modules whose input is an index tensor: a float input is wrong there, and `.float()` would not help.
_INDEX_INPUT_MODULES = frozenset(f"torch.nn.{name}" for name in ("Embedding", "EmbeddingBag"))
# Names whose presence in a class shows that it takes care of dtypes itself.
_DTYPE_ATTRIBUTES = frozenset({"dtype", "float", "double", "half", "bfloat16", "type", "type_as", "float32", "float64", "float16"})


class Float64IntoFloat32Model(Rule):
    """
    ## What it does
    Flags a float64 tensor passed to a float32 `nn.Module` (a layer with
    parameters: `nn.Linear`, `nn.Conv2d`, `nn.LSTM`, a model class of the file
    built from them) or to a layer function (`F.linear`, `F.conv2d`, ...) with
    float32 weights. The float64 tensor is typically a NumPy array converted
    with `torch.from_numpy`, `torch.as_tensor` or `torch.tensor`: NumPy's
    `np.random.rand`, `np.linspace`, `np.zeros`, float literals and friends
    produce float64, and the conversion keeps it. Parameter-free layers
    (`nn.ReLU`, `nn.CosineSimilarity`, losses), also imported from the module
    that defines them (`torch.nn.modules.distance`), follow their input's dtype
    and are not reported. A wrapper (`nn.DataParallel`,
    `DistributedDataParallel`) holds the wrapped module's parameters: a layer
    made `.double()` before it is wrapped takes float64 inputs, also where a
    helper of the file receives it.

    ## Why is this bad?
    Layers do not promote their input to the weights' dtype. The call raises
    `RuntimeError: mat1 and mat2 must have the same dtype, but got Double and
    Float` (`nn.Linear`), `Input type (double) and bias type (float) should be
    the same` (convolutions), `RNN input dtype (torch.float64) does not match
    weight dtype (torch.float32)` (recurrent layers).

    ## Example
    ```python
    model = torch.nn.Linear(3, 2)
    features = np.random.rand(8, 3)
    scores = model(torch.from_numpy(features))
    ```

    ## Use instead
    ```python
    scores = model(torch.from_numpy(features).float())
    ```

    ## Fix safety
    Unsafe: `.float()` is appended to the argument, which changes its dtype to
    float32 (with the precision loss that brings) and makes a copy where
    `torch.from_numpy` shared memory with the array. Where the original call
    could not fail, that is a change in behaviour; the linter cannot see every
    way a model's dtype is set (parameters cast in another function or file).

    ## Known problems
    Stays silent in a file that calls `torch.set_default_dtype`, for modules
    whose dtype it does not know (`.to(dtype=...)` with a computed dtype, a
    model returned by a function or loaded), and for model classes of the
    file that handle dtypes themselves (`.double()`, `.float()`, `.type_as`,
    `.dtype`, `dtype=` anywhere in the class). `model.to(x)` with a variable
    `x` is taken for a device move: a float64 model made by
    `model.to(some_dtype)` is not seen.
    """

    code = "TCV206"
    name = "float64-into-float32-model"
    message = (
        "a float64 input to a layer with float32 weights raises a dtype mismatch error (`Double and Float`); "
        "`.float()` casts the input to float32"
    )
    triggers = ("torch.from_numpy(", "torch.as_tensor(", "torch.asarray(", "torch.tensor(")
    silent_on_literal_data = True
    fix_safety = "unsafe"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._default_dtype_changed: bool | None = None
        self._dtype_aware_classes: dict[str, bool] = {}

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        inputs = self._float32_inputs(node, ctx)
        if not inputs or self._changes_default_dtype(ctx):
            return
        for argument in inputs:
            value = ctx.value(argument)
            if value.kind is Kind.TENSOR and value.dtype == "float64":
                edits = [insertion(ctx.end(argument), ".float()")]
                if needs_parentheses(argument):
                    edits = [insertion(ctx.start(argument), "("), insertion(ctx.end(argument), ").float()")]
                ctx.report(self, argument, fix=make_fix(Applicability.UNSAFE, "Cast the input with `.float()`", *edits))

    def _float32_inputs(self, node: ast.Call, ctx: Context) -> list[ast.expr]:
        """The arguments of ``node`` that meet float32 weights."""
        positional = [argument for argument in node.args if not isinstance(argument, ast.Starred)]
        if len(positional) != len(node.args):
            return []
        layer = _LAYER_FUNCTIONS.get(ctx.qualname(node.func) or "")
        if layer is not None:
            input_positions, weight_position = layer
            weight = node.args[weight_position] if len(node.args) > weight_position else _keyword(node, "weight")
            if weight is None or not _float32_weight(ctx.value(weight)):
                return []
            return [node.args[position] for position in input_positions if position < len(node.args)]
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "forward":
            func = func.value
        if self._float32_module(_callee(func, ctx), func, ctx):
            return positional
        return []

    def _float32_module(self, module: Value, func: ast.expr, ctx: Context) -> bool:
        if module.kind is not Kind.MODULE or Fact.PARAMETRIZED not in module.facts or module.instance_of in _INDEX_INPUT_MODULES:
            return False
        classes = [module.instance_of] if module.instance_of is not None else []
        if Fact.SELF in module.facts or _is_self_attribute(func):
            classes.append(ctx.state.class_name or "")
        return module.dtype == "float32" and not any(self._handles_dtypes(name, ctx) for name in classes)

    def _handles_dtypes(self, class_name: str, ctx: Context) -> bool:
        """Whether a class of the file mentions dtypes (casts, `dtype=`); unknown classes count as not."""
        if class_name not in self._dtype_aware_classes:
            self._dtype_aware_classes[class_name] = False  # a class that derives from itself ends here
            definitions = [n for n in ctx.facts.classes if n.name == class_name]
            self._dtype_aware_classes[class_name] = any(
                _mentions_dtypes(definition) or any(isinstance(base, ast.Name) and self._handles_dtypes(base.id, ctx) for base in definition.bases)
                for definition in definitions
            )
        return self._dtype_aware_classes[class_name]

    def _changes_default_dtype(self, ctx: Context) -> bool:
        if self._default_dtype_changed is None:
            self._default_dtype_changed = any(
                isinstance(node, ast.Call) and ctx.facts.qualname(node.func) in ("torch.set_default_dtype", "torch.set_default_tensor_type")
                for node in walk(ctx.facts.tree)
            )
        return self._default_dtype_changed


def _callee(func: ast.expr, ctx: Context) -> Value:
    """What is called: ``self.fc`` is the layer that ``__init__`` assigned (calls of attributes are method calls to the inference)."""
    value = ctx.value(func)
    if value.kind is Kind.UNKNOWN and _is_self_attribute(func) and ctx.state.class_name:
        known = ctx.facts.class_attributes.get(ctx.state.class_name, {}).get(func.attr)  # type: ignore[attr-defined]
        if known is not None and Fact.SELF in ctx.value(func.value).facts:  # type: ignore[attr-defined]
            return known
    return value


def _float32_weight(weight: Value) -> bool:
    """A float32 weight: known float32, or a parameter / requires-grad tensor created in the default dtype."""
    if weight.kind is not Kind.TENSOR:
        return False
    return weight.dtype == "float32" or (weight.dtype is None and (weight.grad is Grad.YES or Fact.PARAMETER in weight.facts))


def _mentions_dtypes(definition: ast.ClassDef) -> bool:
    for node in walk(definition):
        if isinstance(node, ast.Attribute) and node.attr in _DTYPE_ATTRIBUTES:
            return True
        if isinstance(node, ast.keyword) and node.arg == "dtype":
            return True
    return False


def _is_self_attribute(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    return next((keyword.value for keyword in node.keywords if keyword.arg == name), None)
