from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.findings import Applicability, Edit, Related
from flake8_tensorconv.rules._numpy_call import describe_origin, evidence
from flake8_tensorconv.rules._receivers import (
    grad_free_as_called,
    holds_gradients,
    only_declared,
    own_classes_may_have,
    requires_grad_as_called,
)
from flake8_tensorconv.rules._saved_for_backward import kept_for_backward
from flake8_tensorconv.rules.base import Context, Rule, make_fix
from flake8_tensorconv.trees import is_class_name, is_number_literal, names_a_class_outside, parent_map, statements_after, walk
from flake8_tensorconv.values import INTEGER_DTYPES, Fact, Grad, Kind, Value, origin

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings

# Methods right after `.data` that only exist on torch tensors: with a receiver of unknown kind,
# the evidence that `x.data` is `Tensor.data` at all.
_TORCH_CHAIN = frozenset(
    {"numpy", "cpu", "cuda", "clone", "float", "double", "half", "long", "int", "to", "detach", "contiguous"}
)
# Methods whose result never shares memory with the receiver.
_ALWAYS_COPY = frozenset({"clone", "item", "tolist", "new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"})
# Casts to a fixed dtype (`.to(dtype)` and `.type(dtype)` aside): a copy where the source's dtype differs.
_CASTS = {**K.FLOAT_METHODS, "long": "int64", "int": "int32", "short": "int16", "char": "int8", "byte": "uint8", "bool": "bool"}
# Methods that reshape a tensor (or an array) without changing what it is.
_RESHAPES = frozenset({"view", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "contiguous"})
# How parameters are named (besides "param"): a write into one through `.data` is an update.
_PARAMETER_NAME_ENDINGS = ("weight", "weights", "bias")
# Builtins whose result is a Python value (or that only read their argument): no tensor leaves.
_PYTHON_VALUE_BUILTINS = frozenset(
    "float int bool complex str repr len round format hash id isinstance type print abs".split()
)
# Calls that convert a tensor argument to NumPy: NumPy's functions, and plotting (`plt.imshow(x)`,
# `ax.plot(x)` call `np.asarray` on it, which `.numpy()` backs).
_NUMPY_SINKS = ("numpy.", "matplotlib.")
# Methods of a NumPy array or scalar whose result is a Python value (`bytes` for `tobytes`): nothing that shares
# memory leaves.
_PYTHON_VALUE_METHODS = frozenset({"item", "tolist", "tobytes"})
# Methods whose result is a 1-d array (`reshape` only as `reshape(-1)`): one element of it is a NumPy scalar, a copy.
_FLATTENS = frozenset({"ravel", "flatten"})
# Factories whose positional arguments are sizes (one integer: a 1-d tensor).
_SIZED_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
# The dimensions of the `weight` and `bias` of torch's layers, whatever sizes they are built with.
_LAYER_PARAMETER_DIMS: dict[str, dict[str, int]] = {
    "torch.nn.Linear": {"weight": 2, "bias": 1},
    "torch.nn.Bilinear": {"weight": 3, "bias": 1},
    "torch.nn.Conv1d": {"weight": 3, "bias": 1},
    "torch.nn.Conv2d": {"weight": 4, "bias": 1},
    "torch.nn.Conv3d": {"weight": 5, "bias": 1},
    "torch.nn.ConvTranspose1d": {"weight": 3, "bias": 1},
    "torch.nn.ConvTranspose2d": {"weight": 4, "bias": 1},
    "torch.nn.ConvTranspose3d": {"weight": 5, "bias": 1},
    "torch.nn.Embedding": {"weight": 2},
    "torch.nn.BatchNorm1d": {"weight": 1, "bias": 1},
    "torch.nn.BatchNorm2d": {"weight": 1, "bias": 1},
    "torch.nn.BatchNorm3d": {"weight": 1, "bias": 1},
    "torch.nn.GroupNorm": {"weight": 1, "bias": 1},
    "torch.nn.PReLU": {"weight": 1},
}
# Attributes of an array that describe it (`x.data.numpy().shape` sizes something): none of its memory leaves.
_ARRAY_METADATA = frozenset({"shape", "dtype", "ndim", "size", "nbytes", "itemsize", "strides"})
# Methods of a module that make a tensor its state (a buffer or a parameter): new storage, as `p.data = ...` is.
_REGISTERS_STATE = frozenset({"register_buffer", "register_parameter"})
# Methods of a TensorBoard writer (`SummaryWriter`) that turn a tensor they are given into a NumPy array.
_WRITER_SINKS = frozenset({"add_histogram", "add_image", "add_images", "add_video", "add_audio", "add_embedding"})
# Calls that copy the array they are given (`np.array` unless `copy=False`).
_COPYING_CALLS = frozenset({"numpy.copy", "numpy.array", "torch.tensor", "copy.copy", "copy.deepcopy"})
# Methods that rearrange an array (or a tensor) and keep what it is: followed to what the chain gives.
_ARRAY_RESHAPES = frozenset({"squeeze", "flatten", "ravel", "reshape", "transpose", "view"})
# Methods that move, cast or reshape a tensor: none of them makes what has no grad require it.
_MOVES_AND_RESHAPES = _RESHAPES | {"cpu", "cuda", "to", "float", "double", "half", "clone", "detach", "squeeze", "flatten"}
# Methods that keep a tensor's shape: the number of dimensions before them holds after them.
_KEEP_SHAPE = frozenset({"cpu", "cuda", "to", "float", "double", "half", "contiguous", "type"})
# Words that name data by its role (an input, a target, ground truth): of unknown kind, no evidence of grad.
_DATA_WORDS = frozenset({"input", "inputs", "target", "targets", "gt", "truth", "label", "labels"})
# Attributes of torchvision's datasets (`MNIST`, `CIFAR10`, `ImageFolder`) that no tensor has: beside them, `.data` is the
# dataset's stored data.
_DATASET_ATTRIBUTES = frozenset({"targets", "classes", "class_to_idx", "train_labels", "test_labels", "train_data", "test_data"})
# Receivers whose `.data` is their own attribute, not `Tensor.data`.
_CONTAINER_NAMES = frozenset(
    {
        "dataset", "datasets", "loader", "dataloader", "data_loader", "df", "frame", "series",
        "batch", "sample", "record", "response", "request", "module", "model",
    }
)


class _Use(enum.Enum):
    """What becomes of the tensor that `x.data` gives (or of a view of it)."""

    COPIED = "copied"  # copied or consumed by an out-of-place operation: no alias survives
    NUMPY = "numpy"  # reaches NumPy (`.numpy()`, a NumPy function)
    KEPT = "kept"  # bound, stored, returned or handed to code out of sight
    WRITTEN = "written"  # changed in place
    PARAMETER = "parameter"  # a parameter's new storage (`p.data = ...`, `nn.Parameter(x.data)`)


class DataInsteadOfDetach(Rule):
    """
    ## What it does
    Flags `Tensor.data` used to take a tensor that can require grad out of
    autograd where an alias of it survives: a conversion chain that reaches
    NumPy (`x.data.cpu().numpy()`, also through a name converted later,
    `w = x.data` then `w.numpy()`, a helper whose result is converted at once,
    `to_cpu(x.data).numpy()`, a helper of the file that converts its parameter,
    `tensor2im(x.data)`, a method of the class that hands it to a TensorBoard
    writer, `self.log_histogram(key, layer.weight.data, step)`, or a plot,
    `plt.imshow(x.data)`), a chain that is
    bound, stored, returned or handed on (`y = x.data.cpu()`), and an in-place
    write through `.data` (`x.data.zero_()`, `x.data[0] = v`, `y = x.data` then
    `y.mul_(2)`) into a computed tensor (the message names the step that makes
    it require grad; without one, as for a value that is a parameter on one path
    and a buffer on another, it is silent). Such a write gives silently wrong
    gradients only where a recorded op kept the tensor for backward, and the
    message says so only there: the op that made it keeps its result (`exp`,
    `sigmoid`, `tanh`, `softmax`, `relu`, `sqrt`; also a view of it), or an op
    that read it before the write keeps its input (`h * w`, `h @ w`, a layer,
    `log`, `pow`; also on the next pass of a loop). An op the table of what ops
    keep does not know, a call of the project's code or a tensor made out of
    sight (a parameter of the function) may have kept it too; a method of the
    class (`self.energies(q)`, one no subclass of the file overrides) and a layer
    of a module class of the file (`self.v(x)`, its `forward`) are followed to
    what they return, as if written in place; so is what the statement right
    before the write stores on `self` (`self.sigma =
    nn.Parameter(...).to(device)` then `self.sigma.data.fill_(v)`: a leaf, or a
    device copy whose backward keeps nothing); so is a layer that `__init__`
    builds from a module class of another module of the package (`self.net =
    Net(...)` with `Net` imported, or made by a function of the package that
    returns one), where the file is on disk and every binding of the attribute
    is in sight (its `forward` read there, the package's modules read then).
    Where nothing kept
    it (`dots = torch.einsum(...)` masked with `dots.data.masked_fill_(...)`
    before a softmax: einsum keeps its inputs, softmax its own result) the
    gradients are right and nothing is hidden: not reported (below). A view keeps
    the memory of what it views (`attn = torch.bmm(q, k)` then `attn =
    attn.view(n, -1)`, `torch.squeeze(torch.bmm(...), 2)`: the op that made the
    memory is `bmm`).

    It needs evidence that `x` is a torch tensor that can require grad: not a
    gradient (`p.grad.data`, `layer.grad.cpu().data`, the items of a hook's
    saved `self.gradients`, what `torch.autograd.grad` returns without
    `create_graph=True`), a buffer (also a normalisation layer's
    `running_mean` / `running_var`), a parameter made with
    `requires_grad=False` that the class stores on `self` in `__init__` or
    registers with `register_parameter` (where the file never turns
    `requires_grad` back on), an integer or bool tensor (`out.ge(0.5)`),
    a data loader's batch (also through a name bound to one, or
    `next(iter(loader))`), a sample of a dataset (`dataset[i]`), a field of a
    loader's batch (`batch.text`), an item of a dict named as data
    (`batch_dict["labels"]`, `inputs["input_ids"]`), a parameter named as labels
    or targets (`source_label`, `y_target`), also kept in a list on `self` by a
    method of the class or one it inherits from a base class of the file
    (`self.labels.append(labels)` in the base's `update`), a dataset's stored data (also sliced, reshaped, cast
    with `.type(torch.FloatTensor)` or `.float()`, or combined with numbers
    and noise: what cannot add grad keeps it data), storage that `__init__`
    allocates with a factory or a legacy constructor (of a module-level
    constant too) and no other method rebinds (a replay buffer's),
    the output of a model of the file whose weights are plain tensors (no
    `nn.Parameter`) on data, or of a module the file freezes (a loop setting
    every parameter's `requires_grad = False`, also of one of another library,
    and its layers: `cnn._modules.values()`, `children()`) or that a function of
    another module of the package returns frozen so (`model = load_model(path)`),
    where nothing in the file turns `requires_grad` back on or stores a layer
    into it, a tensor after
    `requires_grad_(False)`, or a value made under `no_grad` (an item of one
    too, a tensor op of such values after the block, `actions.gather(0, best)`,
    or one that another method stores on `self` where `__init__` only
    declares it as `None`), also as a helper of the file returns it for what a
    call passes (a tensor without grad and a number: `tv_loss(image, 2e-2)`), or
    as a method of the class decorated with `@torch.no_grad()` /
    `@torch.inference_mode()` returns it (an item of a dict it fills one by
    one, `outputs["model_outputs"] = y`, too). Where the kind of `x` is unknown, a torch-only method right after
    `.data` (`x.data.cpu()`, `out[0].data.cpu()` judged by `out`; not
    `x.data[0].numpy()`; an item of `net.forward(x)`, a module's forward pass,
    judged by the call), or a layer's `weight` / `bias` whose chain reaches
    NumPy, is the evidence, and no class of the file, or imported from its own
    package, may have its own `data`, nor may the receiver be an object that a
    class of another library makes, or that a method of one returns, also
    through names bound only to such calls (`samples =
    AudioDecoder(path).get_all_samples()`: torchcodec's record of decoded
    audio, whose `data` is its own field); a receiver named as data (`mel_input[0]`,
    `outputs["pitch_target"]`, ground truth, scikit-learn's `y_true`) has none, nor has
    a name whose `targets` or `classes` is read too (`mnist.data` beside
    `mnist.targets`: a torchvision dataset; a tensor has no `targets`). A public method of a class that the file
    never builds is called from other modules too: its same-file callers running
    under `no_grad` do not make it grad-free, its package's callers do: where
    the file cannot settle how a function or method is called, the finding asks
    the package before it is reported, as for TCV101 (every call in the
    package's other modules under `no_grad` / `inference_mode`, or passing
    values without grad, also into a calling function's parameters that it
    hands on, one level up: silent; one call with grad on keeps it). Where the
    file knows nothing of a parameter converted through `.data`, every call of
    the function in the package passing a tensor that requires grad makes the
    finding, naming that step (file and line).

    Not reported, because nothing can be hidden from autograd there:
    - an in-place write through `.data` into a computed tensor that no recorded op
      kept (the mask written into `einsum`'s or `bmm`'s scores, or a view of
      them, before their softmax; also into energies that a method of the class
      returns from a linear layer of the file, or into what a network of
      another module of the package returns from its last linear layer);
    - parameter updates: writes through `.data` into a leaf (an `nn.Parameter`,
      `parameters()`, a module's `weight`, a tensor made with
      `requires_grad=True`, a value named as a parameter) such as an optimizer's
      step, clipping, an EMA copy or init, unless an op that keeps the leaf for
      backward read it before the write (`(w ** 2).sum()`, not `(w + 1).sum()`) and
      a backward follows it in the same block of statements (a graph built from
      the old value then runs on the new one); new storage for a parameter
      (`p.data = p.data.half()`, `nn.Parameter(p.data.to(device))`), also computed
      out of place from an alias that nothing else reads (`w = p.data.double()` then
      `p.data = w - w.mean()`), and state moved into a module
      (`new.register_buffer("w", old.w.data.cpu())`);
    - a `.data` copied or consumed at once: `.clone()`, `.item()`, `.tolist()`,
      `copy.deepcopy`, a cast to another dtype (`.long()` of a float tensor,
      `.to(integer_dtype)` where every binding of the name is the same integer
      dtype), an operand of arithmetic, an argument of a torch function, the
      source of `dst.copy_(...)`, a move to the `meta` device (which holds no
      data), `np.array(w.data)` (a copy unless `copy=False`);
    - a chain whose array only gives a Python value or a copy made at once:
      `.numpy().item()`, `.numpy().tolist()`, `float(x.data.cpu().numpy()[0])`,
      one element of a 1-d array (`.numpy().ravel()[0]`, `.flatten()[-1]`,
      `.reshape(-1)[0]`: a NumPy scalar; also where the chain shows the shape
      before `.numpy()`: `x.view(-1).data.cpu().numpy()[0]`, and `[0]` of a loss
      or a reduction to one value (also a sum of such and Python numbers,
      `ce + 0.01 * reg`), a 0-d array that old torch gave as shape (1,); or
      where its maker does: `[0]` of a torch layer's `bias` and
      `[0][0]` of a linear layer's `weight`, also `model.linear.bias` of a
      class of the file whose `__init__` stores the layer, and a parameter of
      `named_parameters()` under `if name == "linear.bias"`, and `[0]` of a
      factory or a legacy constructor given one size or a flat list of numbers,
      `torch.randn(1, requires_grad=True)`, `Variable(torch.Tensor([0.5]))`,
      also through a name or a list literal of such), an array used as an index
      (`eye[y.data.numpy()]`: only integers or bools index, and the items are
      copied), `.numpy().tobytes()` (a new `bytes`),
      `np.copy(x.data.numpy())`, `torch.tensor(x.data.cpu().numpy())`,
      `.numpy().copy()`, a comparison (`np.where(e.data.numpy() == 1)`: a bool
      array, as `x.data.cpu() > 0.5` is a bool tensor), or only describes the
      array (`p.data.numpy().shape`, `.dtype`, `len(p.data.numpy())`). An array printed, reduced (`.argmax()`),
      cast with `.astype()`, used in arithmetic or written into another array is
      reported: the chain reaches NumPy through `.data` (most labels say flag;
      see docs/precision.md, round 9), and an item bound to a name
      (`row = x.data.numpy()[0]`) of a 2-d array is a view that still shares the
      tensor's memory;
    - a plain `x.data` that is only read (printed, handed to a function,
      returned, bound and never written), and a chain that calls `.detach()`
      anyway (`x.data.detach()`, `x.data.cpu().detach().numpy()`).

    ## Why is this bad?
    `.data` shares memory with `x` but hides changes from autograd's version
    counter. An in-place change through it silently corrupts gradients: with
    `c = out.data; c.zero_()` backward succeeds and returns wrong (zero)
    gradients, where `.detach()` raises "one of the variables needed for gradient
    computation has been modified by an inplace operation". That happens where an
    op kept the tensor for backward (sigmoid keeps its output, a product keeps its
    operands); where nothing kept what is changed, the write hides nothing and is
    not reported. Where nothing is changed in place, `.detach()` does the same as
    `.data` and keeps that check for the day someone adds a write to the alias. The message names where the
    tensor's grad comes from, where the inference saw it; at an in-place write, where that step is not the
    binding of the name that reaches the write, it names that binding first (`h` is made by `torch.exp(h)`
    on line 6, which requires grad through `model(x)` on line 5).

    ## Example
    ```python
    arr = weight.data.numpy()
    ```

    ## Use instead
    ```python
    arr = weight.detach().numpy()
    ```

    ## Fix safety
    Safe in conversion chains on a known tensor (same values, dtype and memory).
    Where the tensor is changed in place through `.data` the fix is unsafe: an op
    kept it, so the code that silently computed wrong gradients will raise
    instead, which is the point. With no evidence but the torch-only chain after `.data` (the
    receiver's kind is unknown) the fix is unsafe too: the receiver may still be
    an object whose `data` is its own.
    """

    code = "TCV104"
    name = "data-instead-of-detach"
    message = "`.data` detaches without autograd's check; `.detach()` does the same and keeps the check"
    in_place_message = (
        "`.data` hides the in-place change that follows from autograd (silently wrong gradients); "
        "use `.detach()`, which makes backward raise instead"
    )
    triggers = (".data",)
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._parents: dict[int, dict[int, ast.AST]] = {}
        self._own_classes: bool | None = None
        self._helpers_converting: dict[tuple[int, str], bool] = {}

    def visit_Attribute(self, node: ast.Attribute, ctx: Context) -> None:
        if node.attr != "data" or not isinstance(node.ctx, ast.Load):
            return
        use, after, direct = self._use(node, ctx)
        if use in (_Use.COPIED, _Use.PARAMETER) or (use is _Use.KEPT and after not in _TORCH_CHAIN):
            return  # a plain `x.data` that is only read (handed on, returned, bound) hides no write
        if use is not _Use.WRITTEN and (after == "detach" or _detached_later(node, self._parent_map(ctx))):
            return  # `.detach()` is called in the chain: `.data` is redundant there, not used instead of it
        receiver = node.value
        value = ctx.value(receiver)
        if value.kind not in (Kind.TENSOR, Kind.UNKNOWN):
            return  # a dataset, an array, a project's object: its `data` is its own
        if value.grad is Grad.NO or value.is_integer or _cannot_require_grad(receiver, ctx) or self._iterates_gradients(receiver, ctx):
            return  # a gradient, a buffer, an integer tensor, a value made under no_grad
        base = _chain_base(receiver)
        base_value = ctx.value(base)
        if base is not receiver and ((base_value.kind in (Kind.TENSOR, Kind.UNKNOWN) and base_value.grad is Grad.NO) or _cannot_require_grad(base, ctx)):
            return  # an item or a copy of what holds no grad (`audio[0]` made under no_grad, `grads[0].cpu()`)
        known = value.kind is Kind.TENSOR
        if use is _Use.WRITTEN:
            # Writing into a leaf through `.data` is how parameters are updated (an optimizer's step,
            # an EMA copy, init); the write hides something only from a graph that saved the
            # computed tensor, or from a backward that follows in the same code.
            if not known or value.grad not in (Grad.YES, Grad.MAYBE) or value.grad_origin is None:
                return  # no step that makes the tensor require grad to name
            leaf = _is_leaf(receiver, value)
            if leaf and not self._graph_then_backward(node, ctx):
                return
            if grad_free_as_called(receiver, ctx):
                return  # the package's callers run the function without grad, or pass what has none
            # The gradients go wrong only where a recorded op kept the tensor for backward (the op that made it
            # keeps its result, or one that read it before the write keeps its input); elsewhere the write
            # changes nothing backward reads (a parameter update, a mask written in before a softmax).
            if not kept_for_backward(receiver, self._write_position(node, ctx), ctx, self._parent_map(ctx)):
                return  # no recorded op kept what the write changes: nothing is hidden from autograd
            because, related = evidence(ctx, receiver, value, grad=True, device=False)
            because, related = self._made_by(receiver, node, ctx, value, because, related)
            ctx.report(self, node, self.in_place_message + because, self._fix(node, ctx, Applicability.UNSAFE), related)
            return
        as_called = False
        if not known and not (
            (direct and after in _TORCH_CHAIN or use is _Use.NUMPY and _names_a_parameter(receiver)) and self._unknown_may_be_tensor(receiver, ctx)
        ):
            # Unknown in the file: the package's calls may show a tensor that requires grad.
            elsewhere = requires_grad_as_called(receiver, ctx) if value.grad is Grad.UNKNOWN and ctx.grad_enabled else None
            if elsewhere is None:
                return
            value, known, as_called = elsewhere, True, True
        if not as_called and grad_free_as_called(receiver, ctx):
            return  # the package's callers run the function without grad, or pass what has none
        safe = known and not only_declared(receiver, ctx) and not as_called  # a caller outside the package may pass anything
        because, related = evidence(ctx, receiver, value, grad=value.grad in (Grad.YES, Grad.MAYBE), device=False) if known else ("", ())
        fix = self._fix(node, ctx, Applicability.SAFE if safe else Applicability.UNSAFE)
        ctx.report(self, node, self.message + because, fix, related)

    def _made_by(
        self, receiver: ast.expr, data: ast.Attribute, ctx: Context, value: Value, because: str, related: tuple
    ) -> tuple[str, tuple]:
        """The evidence of an in-place write names the binding of the name that reaches the write (the op that made
        the tensor written, ``e_t = torch.sigmoid(h)``) where the step that makes it require grad is another one
        (``h = self.decoder(x)``): "`e_t` comes from `self.decoder(x)`" named an earlier step, not the tensor."""
        name = _view_base(receiver, ctx)
        origin_ = value.grad_origin
        if name is None or origin_ is None or not because:
            return because, related
        write = self._write_position(data, ctx)
        reaching = [binding for binding in ctx.scope.bindings.get(name, ()) if binding.position < write]
        if not reaching or reaching[-1].value is None:
            return because, related
        made = reaching[-1].value
        if not self._always_before(made, data, ctx):
            return because, related  # bound in a branch: another binding may reach the write
        if made.lineno <= origin_.line <= (made.end_lineno or made.lineno):
            return because, related  # the binding is the step the evidence names
        step = origin(made)
        what = describe_origin(ctx, step)
        clause = f"`{name}` is made by {what} on {ctx.source.describe_line(made.lineno)}, which requires grad through "
        prefix = f" (`{name}` comes from " if because.startswith(f" (`{name}` comes from ") else " (it comes from "
        if not because.startswith(prefix):
            return because, related
        made_by = Related(ctx.position(step.line, step.column), ctx.position(step.end_line, step.end_column), f"made by: {what}")
        return " (" + clause + because[len(prefix) :], (*related, made_by)

    def _always_before(self, made: ast.expr, data: ast.Attribute, ctx: Context) -> bool:
        """Whether the statement that binds ``made`` lies in a block that holds (a statement around) ``data``, earlier."""
        parents = self._parent_map(ctx)
        if id(made) not in parents:
            return False
        return any(_within(data, later, parents) for later in statements_after(_statement(made, parents), parents))

    def _use(self, data: ast.Attribute, ctx: Context) -> tuple[_Use, str | None, bool]:
        """What becomes of ``x.data`` (followed through views and containers), the method called on it first,
        and whether that method is called on ``x.data`` itself (not on an item of it)."""
        parents = self._parent_map(ctx)
        first: str | None = None
        direct = False
        node: ast.AST = data
        source_dtype = ctx.value(data.value).dtype
        shape_kept = True  # whether the chain keeps the shape of what `.data` gives (its dimensions are asked only at `[i]`)
        while True:
            parent = parents.get(id(node))
            if isinstance(parent, ast.Attribute):
                call = parents.get(id(parent))
                if not (isinstance(call, ast.Call) and call.func is parent):
                    if parent.attr not in K.ALIASING_ATTRIBUTES:
                        return _Use.COPIED, first, direct  # `.shape`, `.dtype`, `.device`...
                    node = parent
                    continue
                method = parent.attr
                if first is None:
                    first, direct = method, node is data
                if method == "numpy":
                    dims = (lambda: _known_dims(data.value, ctx, parents, data)) if shape_kept else None
                    return (_Use.COPIED if _only_a_copy_leaves(call, parents, ctx, dims) else _Use.NUMPY), first, direct
                if method not in _KEEP_SHAPE:
                    shape_kept = False
                if _is_in_place(method):
                    return _Use.WRITTEN, first, direct
                if method in _ALWAYS_COPY or method not in K.ALIASING_METHODS:
                    return _Use.COPIED, first, direct  # a copy, a reduction, arithmetic...
                if method == "to" and any(isinstance(a, ast.Constant) and a.value == "meta" for a in call.args):
                    return _Use.COPIED, first, direct  # the meta device holds no data: nothing is shared
                cast = _CASTS.get(method) if method not in ("to", "type") else _cast_target(call, ctx)
                if cast in INTEGER_DTYPES or (cast is not None and source_dtype is not None and cast != source_dtype):
                    return _Use.COPIED, first, direct  # only a float tensor can require grad: an integer cast copies
                node = call
            elif isinstance(parent, ast.Subscript):
                if isinstance(parent.ctx, ast.Store):
                    return _Use.WRITTEN, first, direct
                if parent.value is not node or isinstance(parent.ctx, ast.Del):
                    return _Use.COPIED, first, direct  # an index
                shape_kept = False
                node = parent
            elif isinstance(parent, (ast.Starred, ast.Tuple, ast.List, ast.Set, ast.Dict, ast.IfExp, ast.BoolOp)):
                if isinstance(parent, ast.IfExp) and parent.test is node:
                    return _Use.COPIED, first, direct
                node = parent  # a container (or a choice) that holds the alias
            elif isinstance(parent, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                if node not in (getattr(parent, "elt", None), getattr(parent, "value", None)):
                    return _Use.KEPT, first, direct  # iterated: the rows are bound
                node = parent
            elif isinstance(parent, ast.keyword):
                call = parents.get(id(parent))
                return self._argument_use(call, node, ctx), first, direct  # type: ignore[arg-type]
            elif isinstance(parent, ast.Call):
                if parent.func is node:
                    return _Use.COPIED, first, direct
                use = self._argument_use(parent, node, ctx)
                if use is not None:
                    return use, first, direct
                node = parent  # a torch function that returns a view of its argument
            elif isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                return self._binding_use(parent, ctx), first, direct
            elif isinstance(parent, (ast.Return, ast.Yield, ast.YieldFrom, ast.Lambda, ast.For, ast.AsyncFor, ast.comprehension)):
                return _Use.KEPT, first, direct
            else:
                # An operand (arithmetic, comparison, an in-place op's source), a statement of its
                # own, a condition, an f-string: nothing that shares memory with it is kept.
                return _Use.COPIED, first, direct

    def _parent_map(self, ctx: Context) -> dict[int, ast.AST]:
        """The parent of each node of the function being walked (or of the module, at its top level).

        Every question of this rule climbs from `x.data` to its statement or its function at most: a
        map of the whole file, built once, cost a quarter of the analysis of torch/nn."""
        root = ctx.state.function or ctx.facts.tree
        parents = self._parents.get(id(root))
        if parents is None:
            parents = self._parents[id(root)] = parent_map(root)
        return parents

    def _argument_use(self, call: ast.Call, argument: ast.AST, ctx: Context) -> _Use | None:
        """What a call does with an argument that holds the alias (None: returns a view of it)."""
        func = call.func
        qualname = ctx.qualname(func)
        if qualname is not None:
            if qualname in K.PARAMETER_CLASSES:
                return _Use.PARAMETER
            if qualname in K.ALIASING_FUNCTIONS and call.args and call.args[0] is argument:
                return None
            if qualname.startswith("torch.") or qualname == "copy.deepcopy":
                return _Use.COPIED
            if qualname in _COPYING_CALLS and call.args and call.args[0] is argument and not _copy_false(call):
                return _Use.COPIED  # `np.array(w.data)` copies at once (unless `copy=False`): no alias survives
            if qualname.startswith(_NUMPY_SINKS):
                return _Use.NUMPY  # NumPy, or a plotting call that converts its argument with `np.asarray`
        if isinstance(func, ast.Name) and func.id in _PYTHON_VALUE_BUILTINS and qualname is None:
            return _Use.COPIED
        if isinstance(func, ast.Attribute) and func.attr in _REGISTERS_STATE:
            return _Use.PARAMETER  # `m.register_buffer("w", old.w.data.cpu())`: state moved between modules
        if isinstance(func, ast.Attribute) and (_is_in_place(func.attr) or ctx.value(func.value).kind is Kind.TENSOR):
            return _Use.COPIED  # the source of `dst.copy_(...)`, an operand of a tensor method
        if _converted_at_once(call, self._parent_map(ctx)):
            return _Use.NUMPY  # `to_cpu(x.data).numpy()`: what the helper returns goes to NumPy
        if isinstance(func, ast.Name) and self._helper_converts(func.id, call, argument, ctx):
            return _Use.NUMPY  # `tensor2im(x.data)`, a helper of this file that converts its parameter to NumPy
        if _on_self(func) and self._method_converts(func.attr, call, argument, ctx):  # type: ignore[attr-defined]
            return _Use.NUMPY  # `self.log_histogram(key, p.weight.data, step)`: a method of the class converts it
        return _Use.KEPT  # handed to code out of sight, which may keep it

    def _helper_converts(self, name: str, call: ast.Call, argument: ast.AST, ctx: Context) -> bool:
        """Whether the same-file helper ``name`` converts the parameter that ``argument`` binds to NumPy (its
        own view of it: `.numpy()` on the parameter, an item, a move or a reshape of it, or a name bound to one)."""
        helper = ctx.facts.helpers.get(name)
        if helper is None:
            return False
        positional = [*helper.args.posonlyargs, *helper.args.args]
        if argument in call.args:
            index = call.args.index(argument)  # type: ignore[arg-type]
            if index >= len(positional) or any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                return False
            parameter = positional[index].arg
        else:
            keyword = next((k for k in call.keywords if k.value is argument), None)
            if keyword is None or keyword.arg is None:
                return False
            parameter = keyword.arg
        key = (id(helper), parameter)
        known = self._helpers_converting.get(key)
        if known is None:
            known = self._helpers_converting[key] = _converts_to_numpy(helper, parameter, ctx)
        return known

    def _method_converts(self, name: str, call: ast.Call, argument: ast.AST, ctx: Context) -> bool:
        """Whether the method ``name`` of the enclosing class hands the parameter that ``argument`` binds to NumPy, a
        plot or a TensorBoard writer, itself or through one more method of the class (a logger's ``log_histogram``
        that calls ``self._try_log_histogram``)."""
        cls = _enclosing_class(ctx)
        if cls is None or any(isinstance(a, ast.Starred) for a in call.args) or argument not in call.args:
            return False
        method = _class_method(cls, name)
        if method is None:
            return False
        positional = [*method.args.posonlyargs, *method.args.args][1:]  # past `self`
        index = call.args.index(argument)  # type: ignore[arg-type]
        if index >= len(positional):
            return False
        key = (id(method), positional[index].arg)
        known = self._helpers_converting.get(key)
        if known is None:
            known = self._helpers_converting[key] = _converts_to_numpy(method, positional[index].arg, ctx, cls, hops=1)
        return known

    def _binding_use(self, node: ast.Assign | ast.AnnAssign | ast.NamedExpr, ctx: Context) -> _Use:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(_is_data(target) for target in targets):
            return _Use.PARAMETER  # `p.data = ...`: new storage for a parameter
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return _Use.KEPT  # stored on an object or in a container
        name = targets[0].id
        scope = ctx.scope
        if scope.written_in_place_after(name, node):
            return _Use.WRITTEN
        after = _end(node)
        # A new binding takes effect once its value is computed (`y = y * 2` reads `y` first).
        rebound = min(
            (_end(binding.value) if binding.value is not None else binding.position for binding in scope.bindings.get(name, ()) if binding.position > after),
            default=None,
        )
        read = any(after < position and (rebound is None or position < rebound) for position in scope.uses.reads.get(name, ()))
        if read and any(
            mention.method == "numpy" and after < _start(mention.node) and (rebound is None or _start(mention.node) < rebound)
            for mention in scope.mentions(name)
        ):
            return _Use.NUMPY  # `w = p.data` then `w.numpy()`: the alias goes to NumPy
        if read and _only_rewrites_data(name, scope.node, after, rebound, scope.uses.reads.get(name, ())):
            return _Use.PARAMETER  # `w = p.data.double()` then `p.data = w - w.mean()`: a parameter rewritten
        return _Use.KEPT if read or isinstance(scope.node, ast.Module) else _Use.COPIED

    def _iterates_gradients(self, receiver: ast.expr, ctx: Context) -> bool:
        """``g`` in ``[g.cpu().data for g in self.gradients]``: an item of gradients saved by a hook."""
        while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
            receiver = receiver.func.value
        if not isinstance(receiver, ast.Name) or ctx.value(receiver).kind is Kind.TENSOR:
            return False
        node: ast.AST | None = receiver
        while node is not None and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
            loops: list = []
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                loops = node.generators
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                loops = [node]
            for loop in loops:
                if isinstance(loop.target, ast.Name) and loop.target.id == receiver.id:
                    return holds_gradients(loop.iter, ctx)
            node = self._parent_map(ctx).get(id(node))
        return False

    def _graph_then_backward(self, data: ast.Attribute, ctx: Context) -> bool:
        """Whether the leaf ``name`` in ``name.data`` is read before the write and ``loss.backward()`` is called
        after it in the same block of statements (one training step): a graph built from the old value then
        runs on the new one. A backward in another loop or cell is another step."""
        if not isinstance(data.value, ast.Name):
            return False
        here = _start(data)
        if not any(position < here for position in ctx.scope.uses.reads.get(data.value.id, ())):
            return False
        parents = self._parent_map(ctx)
        block = parents.get(id(_statement(data, parents)))
        return any(
            mention.method == "backward" and _start(mention.node) > here and _within(mention.node, block, parents)
            for mentions in ctx.scope.uses.mentions.values()
            for mention in mentions
        )

    def _write_position(self, data: ast.Attribute, ctx: Context) -> tuple[int, int]:
        """Where the write through ``data`` happens: at ``data`` itself, or at the first in-place write into the
        name bound to it (``buf = out.data`` then ``buf.zero_()``)."""
        parents = self._parent_map(ctx)
        statement = _statement(data, parents)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name):
            after = _end(statement)
            writes = [position for position in ctx.scope.uses.in_place.get(statement.targets[0].id, ()) if position > after]
            if writes:
                return min(writes)
        return _start(data)

    def _unknown_may_be_tensor(self, receiver: ast.expr, ctx: Context) -> bool:
        """A receiver of unknown kind whose `.data` is followed by torch-only methods: rule out objects
        with their own `.data` (a class of the project, a dataset, a loader)."""
        if self._own_classes is None:
            self._own_classes = own_classes_may_have(frozenset({"data"}), ctx, attributes=True)
        if self._own_classes:
            return False
        while (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in _RESHAPES) or (
            isinstance(receiver, ast.Subscript)
        ):
            # `x.view(n, -1).data.float()`, `out[0].data.cpu()`: judged by `x` and `out`
            if isinstance(receiver, ast.Subscript) and isinstance(receiver.slice, ast.Constant) and isinstance(receiver.slice.value, str):
                if _names_data(receiver.slice.value):
                    return False  # `outputs["pitch_target"][0]`: the item is named as data
            receiver = receiver.func.value if isinstance(receiver, ast.Call) else receiver.value  # type: ignore[union-attr]
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "forward":
            return ctx.facts.imports_torch  # `net.forward(x)[-1].data.numpy()`: what a module's forward pass gives
        if _made_by_another_library(receiver, ctx):
            return False  # `samples = AudioDecoder(path).get_all_samples()`: a record whose `data` is its own field
        if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and _names_a_batch(receiver.value.id):
            return False  # `batch.text`: a field of a loader's batch (torchtext's, PyG's) is data
        if isinstance(receiver, ast.Name) and _reads_dataset_attributes(receiver.id, ctx):
            return False  # `mnist.data` beside `mnist.targets`: a tensor has no `targets`, a torchvision dataset has both
        name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
        if name is None or name.lower() in _CONTAINER_NAMES or name.lower().endswith(("dataset", "loader", "_set", "trainset", "testset", "valset")):
            return False
        if _names_data(name):
            return False  # `mel_input[0].data.cpu()`: an input or a target, data that does not require grad
        return ctx.facts.imports_torch

    def _fix(self, data: ast.Attribute, ctx: Context, applicability: Applicability):
        start = ctx.attribute_name_start(data)
        return make_fix(applicability, "Replace `.data` with `.detach()`", Edit(start, ctx.end(data), "detach()"))


def _made_by_another_library(node: ast.expr, ctx: Context, depth: int = 0) -> bool:
    """An object that a class of another library makes (a CamelCase class imported from outside torch and NumPy), or
    that a method of one returns, directly or through names the function binds only to such calls
    (``decoder = AudioDecoder(path)``, ``samples = decoder.get_all_samples()``): its ``data`` may be its own field."""
    if isinstance(node, ast.Name):
        scope = ctx.scope
        values = [binding.value for binding in scope.bindings.get(node.id, ())]
        return (
            depth < 3 and bool(values) and not scope.is_parameter(node.id)
            and all(value is not None and _made_by_another_library(value, ctx, depth + 1) for value in values)
        )
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute) and not is_class_name(func.attr):
        return _made_by_another_library(func.value, ctx, depth)  # a method of such an object
    return names_a_class_outside(func, ctx.qualname(func), ("torch", "numpy"))


def _only_rewrites_data(name: str, scope: ast.AST, after: tuple[int, int], rebound: tuple[int, int] | None, reads) -> bool:
    """Whether every read of ``name`` between ``after`` and ``rebound`` lies in the value of an assignment to
    ``x.data`` (``p.data = w - w.mean()``): the alias only computes a parameter's new storage out of place."""
    spans = [
        (_start(node.value), _end(node.value))
        for node in walk(scope)
        if isinstance(node, ast.Assign) and any(_is_data(target) for target in node.targets)
    ]
    live = [position for position in reads if after < position and (rebound is None or position < rebound)]
    return bool(spans) and all(any(start <= position < end for start, end in spans) for position in live)


def _start(node: ast.AST) -> tuple[int, int]:
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return (node.end_lineno or 0, node.end_col_offset or 0)  # type: ignore[attr-defined]


def _is_data(node: ast.expr) -> bool:
    """``x.data`` or ``x.data[...]``."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "data"


def _is_leaf(receiver: ast.expr, value: Value) -> bool:
    """A leaf that requires grad: known as one, or named as a parameter (``target_param``, ``self.bias``)
    where a join, a zip or a helper's return lost what the inference knew."""
    if Fact.PARAMETER in value.facts or Fact.LEAF in value.facts:
        return True
    name = (receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")).lower()
    return "param" in name or name.endswith(_PARAMETER_NAME_ENDINGS)


def _names_data(name: str) -> bool:
    """A name whose words give it the role of data (issue 10, class 4): an input, a target, ground truth, a label,
    a loader's batch (``mel_input``, ``pitch_target_1``, ``energy_avg_gt``)."""
    lowered = name.lower()
    return not _DATA_WORDS.isdisjoint(lowered.split("_")) or lowered in K.DATA_PARAMETER_NAMES or lowered.endswith(K.DATA_PARAMETER_SUFFIXES)


def _names_a_batch(name: str) -> bool:
    """``batch``, ``train_batch``, ``sample``: a loader's batch (or a dataset's sample), whose fields are data."""
    lowered = name.lower()
    return lowered in ("batch", "minibatch", "sample") or lowered.endswith("_batch")


def _reads_dataset_attributes(name: str, ctx: Context) -> bool:
    """Whether the scope reads an attribute of ``name`` that torchvision's datasets have and a tensor has not
    (``targets``, ``classes``...), where ``name`` is bound at most once: the name holds a dataset, not a tensor."""
    scope = ctx.scope
    if len(scope.bindings.get(name, ())) > 1:
        return False
    return any(
        isinstance(node, ast.Attribute) and node.attr in _DATASET_ATTRIBUTES and isinstance(node.value, ast.Name) and node.value.id == name
        for node in walk(scope.node)
    )


def _names_a_parameter(receiver: ast.expr) -> bool:
    """``conv.weight``, ``model.fc.bias``: how a layer's parameters are read (evidence of a tensor that requires grad
    where the layer's kind is unknown)."""
    return isinstance(receiver, ast.Attribute) and receiver.attr in ("weight", "bias")


def _cannot_require_grad(receiver: ast.expr, ctx: Context) -> bool:
    """``p.grad`` (a gradient), or ``self.X`` registered as a buffer of the enclosing class.

    Of unknown kind, a name that says it holds gradients (``self.gradients`` saved by a
    backward hook, ``grads``) does not require grad either: hooks get plain gradients.
    """
    if holds_gradients(receiver, ctx):
        return True
    if not isinstance(receiver, ast.Attribute):
        return False
    if not (isinstance(receiver.value, ast.Name) and receiver.value.id == "self"):
        return False
    for cls in walk(ctx.facts.tree):
        if isinstance(cls, ast.ClassDef) and cls.name == ctx.state.class_name:
            return receiver.attr in _buffers(cls, ctx)
    return False


def _buffers(cls: ast.ClassDef, ctx: Context) -> set[str]:
    """Names a class registers with ``self.register_buffer("name", ...)``, or with ``self.register_parameter("name",
    nn.Parameter(t, requires_grad=False))`` where the file never turns ``requires_grad`` back on (a frozen parameter)."""
    names = set()
    for node in walk(cls):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("register_buffer", "register_parameter")
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        ):
            continue
        if node.func.attr == "register_buffer" or (len(node.args) == 2 and _frozen_parameter(node.args[1], ctx)):
            names.add(node.args[0].value)
    return names


def _frozen_parameter(node: ast.expr, ctx: Context) -> bool:
    """``nn.Parameter(t, requires_grad=False)``, where the file never turns ``requires_grad`` on."""
    if not (isinstance(node, ast.Call) and ctx.qualname(node.func) in K.PARAMETER_CLASSES):
        return False
    flag = next((keyword.value for keyword in node.keywords if keyword.arg == "requires_grad"), None)
    return isinstance(flag, ast.Constant) and flag.value is False and not ctx.facts.turns_grad_on()


def _chain_base(receiver: ast.expr) -> ast.expr:
    """``x`` of ``x[i]``, ``x[i].cpu()``, ``x.view(-1)``: what items, moves and reshapes start from (none of them
    gives grad to what has none)."""
    while True:
        if isinstance(receiver, ast.Subscript):
            receiver = receiver.value
        elif isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute) and receiver.func.attr in _MOVES_AND_RESHAPES:
            receiver = receiver.func.value
        else:
            return receiver


def _detached_later(data: ast.Attribute, parents: dict[int, ast.AST]) -> bool:
    """Whether ``.detach()`` is called further along the chain of views that starts at ``x.data``
    (``x.data.cpu().detach().numpy()``): the chain detaches anyway, `.data` adds nothing to hide."""
    node: ast.AST = data
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
            node = parent
            continue
        if not isinstance(parent, ast.Attribute):
            return False
        call = parents.get(id(parent))
        if not (isinstance(call, ast.Call) and call.func is parent):
            return False
        if parent.attr == "detach":
            return True
        if parent.attr not in K.ALIASING_METHODS or parent.attr == "numpy":
            return False
        node = call


def _known_dims(receiver: ast.expr, ctx: Context, parents: dict[int, ast.AST], data: ast.Attribute) -> int | None:
    """How many dimensions the tensor of ``receiver`` has, where the code shows it: ``x.view(-1)``,
    ``x.reshape(-1)``, ``x.flatten()`` give 1, a loss or a reduction to one value (``criterion(out, y)``,
    ``loss.mean()``) 0, a factory given one size (``torch.randn(1, requires_grad=True)``, also through a name bound
    only to one, or an item of a list literal of such names) 1, and a parameter of a layer of torch's (``lin.bias``,
    ``model.linear.weight``, or what ``named_parameters()`` gives under ``if name == "linear.bias"``) the
    dimensions its class gives it; else None."""
    if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        method = receiver.func.attr
        if (method in ("view", "reshape") and _is_minus_one(receiver)) or (method == "flatten" and not receiver.args and not receiver.keywords):
            return 1
    if Fact.ZERO_D_TENSOR in ctx.value(receiver).facts:
        return 0
    if isinstance(receiver, ast.Attribute) and receiver.attr in ("weight", "bias"):
        return _LAYER_PARAMETER_DIMS.get(_torch_layer(receiver.value, ctx) or "", {}).get(receiver.attr)
    if isinstance(receiver, ast.Name):
        return _named_parameter_dims(receiver, ctx, parents, data) or _factory_dims(receiver, ctx)
    if isinstance(receiver, ast.Subscript) and _is_integer(receiver.slice) and isinstance(receiver.value, ast.Name):
        return _factory_dims(receiver, ctx)
    return None


def _factory_dims(receiver: ast.expr, ctx: Context, depth: int = 0) -> int | None:
    """1 where ``receiver`` is a torch factory or a legacy constructor given one integer size (``torch.randn(1)``,
    ``torch.zeros((3,))``, ``torch.Tensor(1)``) or a flat list of numbers (``torch.tensor([0.5])``,
    ``torch.FloatTensor([0.5])``), wrapped in ``Variable`` or ``nn.Parameter`` or not, a name every binding of which in the scope is one, or an item of a
    name every binding of which is a list or tuple literal of such."""
    if depth > 2:
        return None
    if isinstance(receiver, ast.Call):
        qualname = ctx.qualname(receiver.func) or ""
        name = qualname.rpartition(".")[2]
        if (qualname in K.VARIABLE_CLASSES or qualname in K.PARAMETER_CLASSES) and receiver.args:
            return _factory_dims(receiver.args[0], ctx, depth + 1)  # `Variable(torch.randn(1), requires_grad=True)`
        legacy = qualname in K.LEGACY_CONSTRUCTORS
        if not (legacy or qualname in K.TORCH_FACTORIES) or len(receiver.args) != 1:
            return None
        size = receiver.args[0]
        if legacy and isinstance(size, ast.List):
            name = "tensor"  # `torch.Tensor([0.5])`: the data, where an integer is a size
        elif legacy:
            name = "zeros"
        if name == "tensor":
            flat = isinstance(size, ast.List) and size.elts and all(is_number_literal(item) for item in size.elts)
            return 1 if flat else None
        if name not in _SIZED_FACTORIES:
            return None
        if isinstance(size, (ast.Tuple, ast.List)) and len(size.elts) == 1:
            size = size.elts[0]
        return 1 if isinstance(size, ast.Constant) and type(size.value) is int else None
    if isinstance(receiver, ast.Subscript) and isinstance(receiver.value, ast.Name) and _is_integer(receiver.slice):
        bindings = ctx.scope.bindings.get(receiver.value.id, ())
        if not bindings or not all(isinstance(binding.value, (ast.List, ast.Tuple)) and binding.value.elts for binding in bindings):
            return None
        dims = {_factory_dims(item, ctx, depth + 1) for binding in bindings for item in binding.value.elts}  # type: ignore[union-attr]
        return 1 if dims == {1} else None
    if isinstance(receiver, ast.Name):
        bindings = ctx.scope.bindings.get(receiver.id, ())
        if not bindings or any(binding.value is None for binding in bindings):
            return None
        dims = {_factory_dims(binding.value, ctx, depth + 1) for binding in bindings}  # type: ignore[arg-type]
        return 1 if dims == {1} else None
    return None


def _torch_layer(module: ast.expr, ctx: Context, depth: int = 0) -> str | None:
    """The class of torch's layer that ``module`` holds (``torch.nn.Linear``): by its value, or, for ``model.linear``,
    by what ``__init__`` of the file's class of ``model`` stores on ``self.linear`` (no other method storing there)."""
    value = ctx.value(module)
    if value.kind is Kind.MODULE and value.instance_of in _LAYER_PARAMETER_DIMS:
        return value.instance_of
    if depth > 3 or not isinstance(module, ast.Attribute) or isinstance(module.value, ast.Name) and module.value.id == "self":
        return None
    owner = _file_class_of(module.value, ctx, depth)
    return _layer_of_class(owner, (module.attr,), ctx) if owner is not None else None


def _file_class_of(module: ast.expr, ctx: Context, depth: int = 0) -> str | None:
    """The file's module class whose instance ``module`` is (``model = LinReg()``, or ``model.block`` stored so)."""
    value = ctx.value(module)
    if value.kind is Kind.MODULE and value.instance_of and ctx.facts.class_defined_once(value.instance_of) is not None:
        return value.instance_of
    return None


def _layer_of_class(class_name: str, path: tuple[str, ...], ctx: Context) -> str | None:
    """The class of torch's layer that ``__init__`` of the file's ``class_name`` stores at ``path`` (``("linear",)``,
    ``("encoder", "fc")`` through another class of the file), where no other method of a class on the way stores
    there."""
    for depth, attribute in enumerate(path):
        if depth > 3 or attribute in ctx.facts.stored_outside_init(class_name):
            return None
        held = ctx.facts.class_attributes.get(class_name, {}).get(attribute)
        if held is None or held.kind is not Kind.MODULE or not held.instance_of:
            return None
        if depth == len(path) - 1:
            return held.instance_of if held.instance_of in _LAYER_PARAMETER_DIMS else None
        if ctx.facts.class_defined_once(held.instance_of) is None:
            return None
        class_name = held.instance_of
    return None


def _named_parameter_dims(receiver: ast.Name, ctx: Context, parents: dict[int, ast.AST], data: ast.Attribute) -> int | None:
    """The dimensions of ``param`` in ``for name, param in model.named_parameters():`` where ``data`` lies in the body of
    ``if name == "linear.bias":`` (inside that loop): the parameter the name picks, of a layer of torch's that
    ``__init__`` of the file's class of ``model`` stores there."""
    node: ast.AST = data
    guard: str | None = None
    while (parent := parents.get(id(node))) is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        if isinstance(parent, ast.If) and node in parent.body and guard is None:
            guard = _compared_name(parent.test)
        if isinstance(parent, (ast.For, ast.AsyncFor)) and node in parent.body:
            target = parent.target
            loop = parent.iter
            if not (
                isinstance(target, ast.Tuple) and len(target.elts) == 2 and all(isinstance(e, ast.Name) for e in target.elts)
                and target.elts[1].id == receiver.id  # type: ignore[attr-defined]
                and isinstance(loop, ast.Call) and isinstance(loop.func, ast.Attribute) and loop.func.attr == "named_parameters"
                and not loop.args and not loop.keywords
            ):
                return None
            name = target.elts[0].id  # type: ignore[attr-defined]
            if guard is None or guard[0] != name or _rebound_in(parent, receiver.id, name):
                return None
            *path, attribute = guard[1].split(".")
            owner = _file_class_of(loop.func.value, ctx)
            if owner is None or not path or attribute not in ("weight", "bias"):
                return None
            layer = _layer_of_class(owner, tuple(path), ctx)
            return _LAYER_PARAMETER_DIMS.get(layer or "", {}).get(attribute)
        node = parent
    return None


def _compared_name(test: ast.expr) -> tuple[str, str] | None:
    """``("name", "linear.bias")`` of ``name == "linear.bias"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    left, right = test.left, test.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if isinstance(left, ast.Name) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return left.id, right.value
    return None


def _rebound_in(loop: ast.For | ast.AsyncFor, *names: str) -> bool:
    """Whether the loop's body binds one of ``names`` again."""
    return any(
        isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in names
        for statement in loop.body
        for node in walk(statement)
    )


def _only_a_copy_leaves(
    numpy_call: ast.Call, parents: dict[int, ast.AST], ctx: Context, dims: Callable[[], int | None] | None = None
) -> bool:
    """Whether the array of ``x.data....numpy()`` only gives a Python number or list (
    ``x.data.numpy().item()``, ``.tolist()``, ``float(...)`` of an element), a comparison's bool array (as
    ``x.data.cpu() > 0.5`` does in torch) or a copy made at once (``.copy()``, ``np.copy(...)``, ``np.array(...)``,
    ``torch.tensor(...)``, also of a row or a reshape): nothing that shares the tensor's memory is kept. ``dims``: asked
    at an integer index, how many dimensions the array has, where the chain before ``.numpy()`` shows it
    (``x.view(-1).data.numpy()[0]``, and ``loss.data.numpy()[0]``, a 0-d array that old torch gave as shape (1,), take
    one element: a NumPy scalar, or an IndexError on today's torch; ``[0][0]`` of a linear layer's 2-d weight too)."""
    node: ast.AST = numpy_call
    remaining: int | None = -1  # dimensions left to index; -1: not asked yet
    while True:
        parent = parents.get(id(node))
        if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Load):
            taken = _integer_indices(parent.slice)
            if remaining == -1:
                remaining = (dims() if dims is not None else None) if taken else None
            if remaining is not None and taken:
                if taken >= remaining:
                    return True  # `.ravel()[0]`, `w.numpy()[0][0]` of a 2-d weight: one element is a NumPy scalar, no view
                remaining -= taken
            else:
                remaining = None
            node = parent
        elif isinstance(parent, ast.Attribute) and parent.value is node:
            call = parents.get(id(parent))
            if not (isinstance(call, ast.Call) and call.func is parent):
                return parent.attr in _ARRAY_METADATA  # `.shape`, `.dtype`: only a description leaves
            if parent.attr in _PYTHON_VALUE_METHODS or parent.attr == "copy":
                return True
            if parent.attr not in _ARRAY_RESHAPES:
                return False
            remaining = 1 if parent.attr in _FLATTENS or (parent.attr == "reshape" and _is_minus_one(call)) else None
            node = call
        elif _indexes(node, parent, parents):
            return True  # `eye[y.data.numpy()]`: only an integer or bool array indexes, and the items are copied
        elif isinstance(parent, ast.Compare):
            return True  # `x.data.numpy() == k`: a new bool array, which neither aliases the tensor nor requires grad
        elif isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
            if isinstance(parent.func, ast.Name) and parent.func.id in ("float", "int", "bool", "complex", "len"):
                return True
            if ctx.qualname(parent.func) not in _COPYING_CALLS:
                return False
            return not _copy_false(parent)
        else:
            return False


def _indexes(node: ast.AST, parent: ast.AST | None, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` is the index of a subscript (``t[node]``, ``t[node, :]``): a tensor, an array or a list indexed
    by an array raises IndexError unless it holds integers or bools (which no tensor that requires grad does), and
    advanced indexing copies the items."""
    if isinstance(parent, ast.Tuple):
        node, parent = parent, parents.get(id(parent))
    return isinstance(parent, ast.Subscript) and parent.slice is node and isinstance(parent.ctx, ast.Load)


def _integer_indices(index: ast.expr) -> int:
    """How many dimensions an index of integer literals takes (``[0]`` 1, ``[0, -1]`` 2); 0 for any other index."""
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    return len(items) if items and all(_is_integer(item) for item in items) else 0


def _is_integer(index: ast.expr) -> bool:
    """Whether an index is an integer literal (``0``, ``-1``): it takes one element, where a slice takes a view."""
    if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):
        index = index.operand
    return isinstance(index, ast.Constant) and type(index.value) is int


def _is_minus_one(call: ast.Call) -> bool:
    """Whether a ``reshape`` call is ``reshape(-1)`` (a 1-d result)."""
    if len(call.args) != 1 or call.keywords:
        return False
    shape = call.args[0]
    if isinstance(shape, ast.Tuple) and len(shape.elts) == 1:
        shape = shape.elts[0]  # `reshape((-1,))`
    return isinstance(shape, ast.UnaryOp) and isinstance(shape.op, ast.USub) and _is_integer(shape) and shape.operand.value == 1


def _cast_target(call: ast.Call, ctx: Context) -> str | None:
    """The dtype that ``t.to(...)`` / ``t.type(...)`` casts to, where the call spells it (``torch.uint8``) or names a
    variable that every binding of the scope sets to the same dtype (``integer_dtype = torch.uint8``)."""
    found: set[str | None] = set()
    for argument in [*call.args, *(keyword.value for keyword in call.keywords if keyword.arg == "dtype")]:
        if isinstance(argument, ast.Name) and argument.id not in ctx.scope.parameters:
            bindings = ctx.scope.bindings.get(argument.id, ())
            values = [binding.value for binding in bindings]
            if values and all(value is not None for value in values):
                found |= {K.dtype_from_qualname(ctx.qualname(value) or "") for value in values}  # type: ignore[arg-type]
                continue
        qualname = ctx.qualname(argument)
        if qualname is not None and K.dtype_from_qualname(qualname) is not None:
            found.add(K.dtype_from_qualname(qualname))
    return found.pop() if len(found) == 1 else None


def _copy_false(call: ast.Call) -> bool:
    """``np.array(x, copy=False)``: no copy where none is needed."""
    copy = next((keyword.value for keyword in call.keywords if keyword.arg == "copy"), None)
    return isinstance(copy, ast.Constant) and copy.value is False


def _on_self(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"


def _enclosing_class(ctx: Context) -> ast.ClassDef | None:
    return ctx.facts.class_defined_once(ctx.state.class_name or "")


def _class_method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    methods = [node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == name]
    return methods[0] if len(methods) == 1 and not methods[0].decorator_list else None


def _converts_to_numpy(function: ast.FunctionDef, parameter: str, ctx: Context, cls: ast.ClassDef | None = None, hops: int = 0) -> bool:
    """Whether ``function`` hands ``parameter`` itself (not a copy) to NumPy or to a plot; a method (``cls`` given)
    also to a TensorBoard writer's ``add_histogram`` / ``add_image``... (which converts it with NumPy), or to
    another method of its class that does (``hops`` more)."""
    views = {parameter}
    assignments = [node for node in walk(function) if isinstance(node, ast.Assign) and len(node.targets) == 1]
    for _ in range(2):  # a name bound to a view of a view
        for node in assignments:
            target = node.targets[0]
            if isinstance(target, ast.Name) and _view_base(node.value, ctx) in views:
                views.add(target.id)
    for node in walk(function):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "numpy" and not node.args and _view_base(func.value, ctx) in views:
            return True
        qualname = ctx.qualname(func) or ""
        if (qualname == "torch.Tensor.numpy" or qualname.startswith(_NUMPY_SINKS)) and node.args and _view_base(node.args[0], ctx) in views:
            return True
        if cls is None or not isinstance(func, ast.Attribute):
            continue
        passed = [index for index, arg in enumerate(node.args) if _view_base(arg, ctx) in views]
        if passed and func.attr in _WRITER_SINKS:
            return True  # `self._sw.add_histogram(key, histogram, step)`
        if passed and hops > 0 and _on_self(func) and not any(isinstance(a, ast.Starred) for a in node.args):
            method = _class_method(cls, func.attr)
            positional = [*method.args.posonlyargs, *method.args.args][1:] if method is not None else []
            if method is not None and passed[0] < len(positional) and _converts_to_numpy(method, positional[passed[0]].arg, ctx, cls, hops - 1):
                return True
    return False


def _view_base(node: ast.expr, ctx: Context) -> str | None:
    """The name that ``node`` is a view of (``t[0].cpu().float()`` of ``t``), or None."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in K.ALIASING_METHODS:
            node = node.func.value
        elif isinstance(node, ast.Attribute) and node.attr in K.ALIASING_ATTRIBUTES:
            node = node.value
        else:
            return node.id if isinstance(node, ast.Name) else None


def _converted_at_once(call: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """``helper(x.data).numpy()`` (or ``.cpu().numpy()``): the call's result goes to NumPy at once."""
    node: ast.AST = call
    while True:
        parent = parents.get(id(node))
        if not isinstance(parent, ast.Attribute):
            return False
        method = parents.get(id(parent))
        if not (isinstance(method, ast.Call) and method.func is parent):
            return False
        if parent.attr == "numpy":
            return True
        if parent.attr not in ("cpu", "detach", "float", "contiguous"):
            return False
        node = method


def _is_in_place(method: str) -> bool:
    return method.endswith("_") and not method.startswith("_")


def _statement(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The statement that holds ``node``."""
    while not isinstance(node, ast.stmt):
        node = parents[id(node)]
    return node


def _within(node: ast.AST | None, block: ast.AST | None, parents: dict[int, ast.AST]) -> bool:
    """Whether ``node`` sits in a statement of ``block`` (directly or nested in one, as in a ``try``)."""
    while node is not None and node is not block:
        node = parents.get(id(node))
    return node is not None
