from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from flake8_tensorconv.findings import Applicability, Edit, Related
from flake8_tensorconv.rules._legacy_constructor import (
    LEGACY_CONSTRUCTORS,
    TRIGGERS,
    Initialisation,
    LegacyCall,
    Use,
    declared_int,
    initialisation_of,
    is_python_int,
    is_size_argument,
    legacy_call,
)
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix
from flake8_tensorconv.values import Kind

if TYPE_CHECKING:
    from flake8_tensorconv.config import Settings


def _sizes(arguments: list[ast.expr], ctx: Context) -> bool:
    """Integers, or (two or more of them) values that can only be sizes: data is one argument."""
    if all(is_size_argument(argument, ctx) for argument in arguments):
        return True
    return len(arguments) >= 2 and all(
        is_size_argument(argument, ctx)
        or (isinstance(argument, (ast.Name, ast.Attribute, ast.BinOp)) and ctx.value(argument).kind in (Kind.UNKNOWN, Kind.NUMBER))
        for argument in arguments
    )


class LegacyConstructorSize(Rule):
    """
    ## What it does
    Flags a legacy constructor given sizes (`torch.Tensor(3)`, `torch.FloatTensor(n, m)`,
    `torch.Tensor(np.array(3))`) whose uninitialised values are read before anything
    writes them: used as an operand, passed to a function that is not an initialiser,
    fed to a layer, or returned; for one integer, which reads like the value, also
    printed or shown as a notebook cell's value. And an `nn.Parameter` of such an
    allocation stored on a module that nothing in the file initialises.

    It follows the allocation through names (the def-use index of its function), casts,
    device moves, views and `nn.Parameter`. It is silent where the first use writes the
    values: an in-place initialiser (`uniform_`, `fill_`, `zero_`, `copy_`, `normal_`...),
    slice or item assignment, `out=`, an `nn.init` function (also wrapping the allocation,
    `nn.init.kaiming_uniform_(nn.Parameter(torch.Tensor(3, 4)))`), or a callee named for
    it (`init_weights(w)`); where only the shape, dtype or device is used (also of a result
    computed from it, `len(layer(torch.Tensor(1, 3)).flatten())`); where a shape is only
    shown; and for a module's attribute that some initialiser of the file writes
    (`nn.init.normal_(module.weight)` in an `_init_weights`, any call in a method named
    `reset_parameters` or `init_weights`, a loop over `self.parameters()` (also in a method the class
    inherits from a base class of the file, the one Python's MRO resolves: a subclass's override wins, and
    a base from elsewhere met first leaves it unknown), either arm of
    `nn.init.xavier_uniform_(a if c else b)`), except where that initialiser runs only under a test
    of the module's class name (`classname.find('TransformerLM') != -1`, `'Norm' in type(m).__name__`)
    that neither the allocating class nor a subclass of the file passes: then the message names the
    test. A subclass of a torch module whose `reset_parameters()` initialises every parameter
    (`nn.LSTM`, `nn.LSTMCell`, `nn.GRUCell`...) that calls `self.reset_parameters()`, and a method
    that replaces the parameter with a value it is given (`self.mu = nn.Parameter(mu)` in a
    `set_values`), initialise it too. `x.new_empty(...)` (`new_zeros`, `new`...)
    uses only its dtype and device. `x.resize_as_(y)` keeps the allocation for
    what follows (`.copy_(y)` writes it). Handed to a function of the file that only
    measures that parameter (`.shape`, `.size()`, `len`), the values are not read. Where
    the allocation goes somewhere it does not
    follow (a container, an attribute, a function imported from the project's own
    modules, which may keep or ignore it, a callee the file never binds, such as
    `Parameter` from a star import, or its address handed to foreign code through
    `.numpy().ctypes.data` or `.data_ptr()`, where a C library may fill it), it stays silent. A size named as a count
    (`2 * self.out_features`) is read as a size. A parameter's module must derive from torch's or the file's own classes (a
    base from elsewhere, such as a pretrained-model class, may initialise every parameter)
    and be able to run: a library's class, or (for a class
    local to a function, such as a test's, or defined by a script or notebook) one whose
    instance the file calls. A parameter of a module that another module of the file
    builds (`self.gnn = GNN(...)`) is initialised by that module's loop over
    `self.parameters()`; in a library, such a building block is built by users of the outer
    module in other files, who may initialise every parameter it holds, so it stays silent,
    unless a module of the file applies the file's initialiser to it (`self.apply(self.init_weights)`).
    A loop over a name bound to a list of attributes (`params = [self.u, self.v]`)
    initialises them. Nor is `torch.Tensor(0)` reported, which has no element to read.
    A parameter annotated `int` counts as a size (the fix is then unsafe: a caller
    may pass a list, which the legacy call reads as data).
    A float written as the only argument (`torch.FloatTensor(0.0)`) is reported too: a
    legacy constructor takes a number only as a size, so the call always raises
    `TypeError: new(): data must be a sequence (got float)`.

    The other way round, it flags a shape written as one list or tuple of integers
    (`torch.FloatTensor((x.shape[0], 1, 1, 1)).uniform_()`) when an initialiser chained on
    the call overwrites every value at once: the legacy constructor reads the sequence as
    data (a tensor of four values), and the overwrite shows the values were never meant.

    ## Why is this bad?
    An integer argument is a *size*: `torch.Tensor(3)` allocates an uninitialised tensor
    of three elements holding whatever was in memory, not `tensor(3.)`. A 0-d integer
    array or a NumPy integer scalar is read the same way. Whatever is computed from those
    values (a sum, a product, a layer's output, a parameter's first forward pass) is
    garbage that changes from run to run: often zeros, sometimes NaN or huge numbers.

    ## Example
    ```python
    buffer = torch.Tensor(3)
    total = buffer.sum()
    print(total)
    ```

    ## Use instead
    ```python
    buffer = torch.zeros(3)       # if a buffer was meant: initialise it
    value = torch.tensor(3.0)     # if the value was meant
    ```

    ## Fix safety
    Safe: `torch.empty(...)` (with the typed constructor's dtype) does exactly what
    the legacy call did, and says so. Initialising the values, or writing the value that
    was meant, is left to the author. For a shape written as one sequence the fix is
    unsafe: `torch.empty((...))` reads it as the shape that was meant, so the result's
    shape changes.
    """

    code = "TCV202"
    name = "legacy-constructor-size"
    message = (
        "`{call}` allocates an uninitialised tensor of that size, not a tensor holding the value, and {step}; "
        "use `torch.tensor(...)` for the value, or `torch.empty(...)` and fill it first if a buffer was meant"
    )
    shape_message = (
        "`{call}` allocates an uninitialised tensor and {step} before anything writes them: the results are "
        "whatever was in memory; initialise it (`torch.zeros`, `torch.rand`...), or write `torch.empty(...)` and fill it first"
    )
    shape_as_data_message = (
        "`{call}` makes a tensor holding these {count} values, not a tensor of that shape, and `{initialiser}` "
        "then overwrites every value: the sequence was meant as a shape; write `torch.empty(...)`, which reads it as one"
    )
    parameter_message = (
        "`{call}` in `nn.Parameter` is never initialised in this file: the parameter starts from "
        "whatever was in memory; initialise it (`nn.init...`), and write `torch.empty(...)` for the allocation"
    )
    skipped_parameter_message = (
        "`{call}` in `nn.Parameter` is never initialised in this file: the initialiser that writes this attribute runs "
        "only where `{test}` holds ({where}), and neither this class's name nor a subclass's passes it; the parameter "
        "starts from whatever was in memory; initialise it (`nn.init...`), and write `torch.empty(...)` for the allocation"
    )
    float_message = (
        "`{call}` raises TypeError (`new(): data must be a sequence`): a legacy constructor takes a number only as "
        "a size, and a float is none; use `torch.tensor({literal})` for the value"
    )
    triggers = TRIGGERS
    fix_safety = "sometimes"

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._initialisation: Initialisation | None = None

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        call = legacy_call(node, ctx)
        if call is None:
            return
        if self._initialisation is None:
            self._initialisation = initialisation_of(ctx)
        overwritten = self._initialisation.overwritten_at_once(node)
        if overwritten is not None and _shape_display(node.args):
            self._report_shape_as_data(node, call, overwritten, ctx)
            return
        if len(node.args) == 1 and _float_literal(node.args[0]):
            self._report_float(node, call, ctx)
            return
        if not _sizes(node.args, ctx):
            return
        if any(isinstance(argument, ast.Constant) and argument.value == 0 for argument in node.args):
            return  # `torch.Tensor(0)`: no element, nothing uninitialised to read
        fate = self._initialisation.fate(node, ctx)
        arguments = ", ".join(ctx.text(argument) for argument in node.args)
        spelled = f"{ctx.text(node.func)}({arguments if len(arguments) < 30 else '...'})"
        related: tuple[Related, ...] = ()
        if fate.use is Use.PARAMETER:
            message = self.parameter_message.format(call=spelled)
            if fate.node is not None:  # the file's initialiser writes the attribute, only for other classes
                test = " ".join(ctx.text(fate.node).split())  # type: ignore[arg-type]
                where = ctx.source.describe_line(fate.node.lineno)  # type: ignore[attr-defined]
                message = self.skipped_parameter_message.format(call=spelled, test=test, where=where)
                related = (Related(ctx.start(fate.node), ctx.end(fate.node), "the initialiser runs only where this holds"),)  # type: ignore[arg-type]
        elif fate.use is Use.READ or (fate.use is Use.DISPLAY and len(node.args) == 1):
            # Shown, a shape is a demonstration of what the call allocates; one integer shown is a value misread.
            assert fate.node is not None
            where = ctx.source.describe_line(fate.node.lineno)  # type: ignore[attr-defined]
            verb = "reads" if fate.use is Use.READ else "shows"
            step = f"{_describe(ctx, fate.node)} on {where} {verb} them"
            template = self.message if len(node.args) == 1 else self.shape_message
            message = template.format(call=spelled, step=step)
            related = (Related(ctx.start(fate.node), ctx.end(fate.node), f"{verb} the uninitialised values"),)
        else:
            return  # written first, only measured, or kept where the analysis does not follow
        fix = None
        if call.torch_alias is not None:
            edits = _modern_call(node, call, "empty", ctx)
            # One size known only by its `int` annotation may be a list at run time, which the legacy call reads as
            # data (two or more arguments are sizes whatever they are).
            declared = len(node.args) == 1 and declared_int(node.args[0], ctx)
            fix = make_fix(Applicability.UNSAFE if declared else Applicability.SAFE, "Use `torch.empty`, which does the same explicitly", *edits)
        ctx.report(self, node, message, fix, related)

    def _report_float(self, node: ast.Call, call: LegacyCall, ctx: Context) -> None:
        literal = ctx.text(node.args[0])
        message = self.float_message.format(call=f"{ctx.text(node.func)}({literal})", literal=literal)
        fix = None
        if call.torch_alias is not None:
            # The original always raises: any working code changes nothing that ran.
            fix = make_fix(Applicability.SAFE, "Use `torch.tensor`, which holds the value", *_modern_call(node, call, "tensor", ctx))
        ctx.report(self, node, message, fix)

    def _report_shape_as_data(self, node: ast.Call, call: LegacyCall, overwritten: ast.Attribute, ctx: Context) -> None:
        display = node.args[0]
        assert isinstance(display, (ast.List, ast.Tuple))
        message = self.shape_as_data_message.format(
            call=f"{ctx.text(node.func)}({_shortened(ctx.text(display))})", count=len(display.elts), initialiser=overwritten.attr
        )
        related = (Related(ctx.attribute_name_start(overwritten), ctx.end(overwritten), "overwrites every value at once"),)
        fix = None
        if call.torch_alias is not None:
            # torch.empty takes the tuple as a size: the shape that was meant, so the result changes (unsafe).
            last = node.keywords[-1].value if node.keywords else node.args[-1]
            fix = make_fix(
                Applicability.UNSAFE,
                "Use `torch.empty`, which reads the sequence as a shape",
                Edit(ctx.start(node.func), ctx.end(node.func), f"{call.torch_alias}.empty"),
                insertion(ctx.end(last), f", dtype={call.dtype_expression()}"),
            )
        ctx.report(self, node, message, fix, related)


def _modern_call(node: ast.Call, call: LegacyCall, function: str, ctx: Context) -> list[Edit]:
    """The edits that make the legacy call ``torch.<function>(...)``, with the dtype a typed constructor (not
    ``torch.Tensor``) names."""
    edits = [Edit(ctx.start(node.func), ctx.end(node.func), f"{call.torch_alias}.{function}")]
    if LEGACY_CONSTRUCTORS[call.qualname] is not None:
        last = node.keywords[-1].value if node.keywords else node.args[-1]
        edits.append(insertion(ctx.end(last), f", dtype={call.dtype_expression()}"))
    return edits


def _float_literal(node: ast.expr) -> bool:
    """``0.0``, ``-1.5``: a float written as the only argument, which no legacy constructor accepts."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is float


def _shape_display(arguments: list[ast.expr]) -> bool:
    """One list or tuple display of two or more integers: data, or a shape written as one argument."""
    return (
        len(arguments) == 1 and isinstance(arguments[0], (ast.List, ast.Tuple)) and len(arguments[0].elts) >= 2
        and all(is_python_int(element) for element in arguments[0].elts)
    )


def _shortened(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) < 30 else text[:1] + "..." + text[-1:]


def _describe(ctx: Context, node: ast.AST) -> str:
    text = " ".join(ctx.text(node).split())
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"
