from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from flake8_tensorconv import arrays
from flake8_tensorconv.findings import Applicability, Fix, Related
from flake8_tensorconv.rules._conversion import TENSOR_FROM_DATA, module_alias, single_data_argument
from flake8_tensorconv.rules._legacy_constructor import LEGACY_CONSTRUCTORS, legacy_call
from flake8_tensorconv.rules._legacy_constructor import TRIGGERS as LEGACY_TRIGGERS
from flake8_tensorconv.rules._numpy_call import describe_origin
from flake8_tensorconv.rules.base import Context, Rule, insertion, make_fix
from flake8_tensorconv.values import Kind, Value

if TYPE_CHECKING:
    from flake8_tensorconv.inference.bindings import Mention

# NumPy functions that return an array whatever they are given (`map(np.load, paths)`).
_ARRAY_FUNCTIONS = frozenset(
    "numpy." + name for name in "load array asarray ascontiguousarray stack vstack hstack concatenate copy".split()
)
# Calls that only read a list: passing it to them cannot add an item of another dtype.
_READ_ONLY_CALLS = frozenset({"len", "print", "repr", "str", "enumerate", "zip", "sorted", "reversed", "any", "all", "isinstance"})
# List methods that add nothing, or add what the inference follows (append, extend).
_ADDS_NOTHING_UNSEEN = frozenset({"append", "extend", "copy", "count", "index", "pop", "remove", "clear", "reverse"})


class TensorFromListOfArrays(Rule):
    """
    ## What it does
    Flags `torch.tensor(items)` (and `torch.as_tensor`, `torch.asarray`, and the
    legacy constructors `torch.Tensor`, `torch.FloatTensor`...) where `items` is a
    list of NumPy arrays: a list display or comprehension of arrays (nested ones
    too: a list of lists of arrays), `list(...)` of a generator of arrays or of
    `map(np.load, paths)`, or a list built with `.append(array)` or `+ [array]`. The arrays are
    made by NumPy (also by a function made with `np.vectorize(f)`, called on an array
    or a list), or by functions of other libraries known to return them
    (`scipy.optimize.linear_sum_assignment`, `cv2.imread`, `scipy.ndimage.zoom`...),
    or values that `torch.from_numpy` accepted earlier (it raises on anything else),
    or the observations of a gym / gymnasium environment made in the file with an id
    whose observation space is a `Box` (`gym.make("CartPole-v1")`: `env.reset()`,
    `env.step(a)`), or of any environment (made in another module, a helper, a
    wrapper, passed in) whose `observation_space.shape` the file reads: a space
    with a shape is a `Box` (a `Discrete` space has none to index, `Dict` and
    `Tuple` spaces have `None`), so its observations are arrays. Where the file
    unpacks an environment's `step(a)` into four items (gym's API before 0.26),
    its `reset()` is the observation alone, also unbound (`torch.Tensor([env.reset()])`);
    else `reset()` gives `(observation, info)` unless bound to one name. An environment
    handed to a function of the file observes arrays there too, and the lists a
    function returns reach the parameters of a call they are unpacked into
    (`train(*play(env))`). The index arrays of `np.where(mask)` and
    `np.nonzero(a)` (`np.where(mask)[0]`) are arrays too, and so are the tuples of
    index arrays `np.tril_indices(n)`, `np.triu_indices(n)` and `np.diag_indices(n)`
    (and their `_from` forms) give, and the `row`, `col` and `data` of what
    `.tocoo()` returns (only a SciPy sparse matrix has that method; a file that
    imports CuPy, whose sparse matrices hold GPU arrays there, is left alone). The arrays are followed through namedtuple, `NamedTuple` and
    dataclass records (`[t.state for t in batch]`), `zip(*batch)`, and the file's
    classes: a replay buffer whose `push(transition)` is called on an instance
    (`memory = ReplayBuffer()`, `self.memory = ReplayBuffer()`) and whose other
    methods read the container it fills (`random.sample(self.memory, n)`). An item
    of a dict that the function makes and fills only with arrays
    (`vectors[word] = np.array(row)`) is an array, and so is one of such a dict that
    `__init__` alone keeps on `self` from a method of the class returning it
    (`self.vectors = self.load_vectors()`, no item stored into it elsewhere). A
    list display of a parameter, or a parameter, that the file knows nothing of
    (`def act(self, state): torch.tensor([state])`) is reported where every call
    of the function in the package passes arrays (`agent.act(obs)` with
    `obs = env.reset()` in a training script of another module, also an
    environment that script hands to a helper that calls `agent.act`); a
    function nobody in the package calls stays silent. The
    message names the step that made the arrays (in the other module: its file
    and line).

    ## Why is this bad?
    torch does not see a list of arrays as one block of memory: it walks it
    element by element, reading every number as a Python object. It warns
    `UserWarning: Creating a tensor from a list of numpy.ndarrays is extremely
    slow. Please consider converting the list to a single numpy.ndarray with
    numpy.array() before converting to a tensor.` (once per process, so it is
    easy to miss) and is 9x-100x slower than converting one array (10,000
    arrays of 100 floats: 126-216 ms against 2-19 ms).

    ## Example
    ```python
    rows = []
    for path in paths:
        rows.append(np.load(path))
    batch = torch.tensor(rows)
    ```

    ## Use instead
    ```python
    batch = torch.tensor(np.array(rows))
    ```

    ## Fix safety
    Safe when the items visibly share one dtype (one NumPy call in a
    comprehension, or every appended array known to have the same dtype): then
    `np.array(items)` holds the same values, and `torch.tensor` gives the same
    dtype, shape and strides and a fresh copy, as before (measured for every
    NumPy dtype torch supports, big-endian, strided, negative-stride and
    read-only items included). Otherwise unsafe: NumPy promotes mixed dtypes
    differently from torch (`[int64 array, float32 array]` becomes float32 with
    `torch.tensor` but float64 through `np.array`), and masked arrays lose their
    mask in NumPy but not in torch. A named list that may change in ways the
    linter does not follow (`insert`, item assignment, passed to a function) is
    not visible enough either, nor is a list that only the package's callers
    show to hold arrays (a caller outside the package may pass numbers, which
    `np.array` makes float64). No fix when the file does not import NumPy
    under a name.

    ## Known problems
    Lists the linter cannot see into (filled by another function, `list(x)` of
    a value of unknown kind, `list(arr)` of a 2-D array) are not reported, nor are items `a[i]` of an array of unknown
    rank: they are NumPy scalars when `a` is 1-D, which torch reads without the
    warning. Nor are lists of whole-array reductions (`np.min(a)`, `np.mean(a)`
    without an axis), of element-wise functions of numbers (`np.sqrt(5) * k`,
    `np.sin(2 * np.pi * t)`: `np.pi` and `math.pi` are Python floats), of such functions
    of a value that may be a scalar (`np.clip(np.sin(x), 0, 1)`, `-np.log(n)`, `np.inner(x, x)`)
    or of random draws without a size (`np.random.normal(0, 1)`): numbers too. Environments made in another module or from an id held in a
    variable are followed only where the file reads their `observation_space.shape`
    (matched by the last name: `self.env` and `env` alike); those observing
    integers, tuples or dicts (`FrozenLake`, `Blackjack`) are not followed, nor are buffers filled from another module (a method's
    parameter stored on `self` by one method and converted by another). A list of 0-d
    arrays is reported: `torch.tensor` raises `TypeError: len() of unsized object`
    on it, and the fix makes it work.
    """

    code = "TCV204"
    name = "tensor-from-list-of-arrays"
    message = (
        "`{name}()` of a list of NumPy arrays{evidence} converts element by element (UserWarning: extremely slow); "
        "stack the list into one array with `np.array()` first"
    )
    triggers = (*(f"{name}(" for name in sorted(TENSOR_FROM_DATA)), *LEGACY_TRIGGERS)
    silent_on_literal_data = True
    fix_safety = "sometimes"

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        qualname = ctx.qualname(node.func)
        if qualname not in TENSOR_FROM_DATA and (qualname not in LEGACY_CONSTRUCTORS or legacy_call(node, ctx) is None):
            return
        items = single_data_argument(node)
        if items is None or isinstance(items, ast.GeneratorExp):
            return  # torch.tensor of a generator raises before it looks at the items
        elements = _array_elements(items, ctx)
        as_called = elements is None and _parameter_items(items, ctx)
        if as_called:
            # Unknown in the file, and a parameter's: the package's callers may show the arrays (all of its calls do).
            elements = _array_elements(items, ctx.as_called())  # type: ignore[arg-type]
        if elements is None:
            return
        clause, related = _evidence(items, elements, ctx.as_called() if as_called else ctx)  # type: ignore[arg-type]
        if as_called and not related:
            return  # the callers' arrays must be named where the finding is printed
        message = self.message.format(name=ctx.text(node.func), evidence=clause)
        ctx.report(self, node, message, self._fix(items, elements, node, ctx, as_called), related)

    def _fix(self, items: ast.expr, elements: list[Value], call: ast.Call, ctx: Context, as_called: bool = False) -> Fix | None:
        numpy = module_alias(ctx, "numpy")
        if numpy is None:
            return None
        dtypes = {element.dtype for element in elements}
        shared = len(dtypes) == 1 and None not in dtypes and not any(arrays.MASKED in e.facts for e in elements)
        if as_called or isinstance(items, ast.Name) and _changed_out_of_sight(items.id, call, ctx):
            shared = False  # a caller outside the package may pass a list of numbers, which `np.array` makes float64
        return make_fix(
            Applicability.SAFE if shared else Applicability.UNSAFE,
            "Convert the list with `np.array()` first",
            insertion(ctx.start(items), f"{numpy}.array("),
            insertion(ctx.end(items), ")"),
        )


def _evidence(items: ast.expr, elements: list[Value], ctx: Context) -> tuple[str, tuple[Related, ...]]:
    """Where the arrays come from, as a clause (" (`s_lst` holds arrays from `env.step(a)` on line 40)") and a related
    location; nothing where the inference recorded no source step or the code at the call shows it."""
    where = next((element.array_origin for element in elements if element.array_origin is not None), None)
    if where is None:
        return "", ()
    what = describe_origin(ctx, where)
    if isinstance(items, ast.Name):
        subject = f"`{items.id}` holds arrays"
    else:
        shown = _shown_item(items, ctx)
        if shown is not None and f"`{' '.join(ctx.text(shown).split())}`" == what:
            return "", ()  # `[np.load(p) for p in paths]`: the call is right there
        subject = f"`{ctx.text(shown)}` is an array" if shown is not None and _short(ctx.text(shown)) else "its items are arrays"
    if where.path is not None:
        return f" ({subject} from {what} on {ctx.where(where)}: every call in the package passes one)", (ctx.related(where, f"a NumPy array: {what}"),)
    return f" ({subject} from {what} on {ctx.where(where)})", (ctx.related(where, f"a NumPy array: {what}"),)


def _parameter_items(items: ast.expr, ctx: Context) -> bool:
    """Whether the list's items are, or are held by, a parameter of the function being walked (`[state]`, `obs_list`):
    where the file alone does not know them, its callers in the package may."""
    function = ctx.state.function
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    args = function.args
    names = {arg.arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]} - {"self", "cls"}
    shown = items.elts if isinstance(items, (ast.List, ast.Tuple)) else [items]
    return any(isinstance(item, ast.Name) and item.id in names and ctx.value(item).kind is Kind.UNKNOWN for item in shown)


def _shown_item(items: ast.expr, ctx: Context) -> ast.expr | None:
    """The item expression a display or comprehension shows (`obs` in `[obs]`, `t.state` in `[t.state for t in batch]`)."""
    if isinstance(items, ast.ListComp):
        return items.elt
    if isinstance(items, (ast.List, ast.Tuple)):
        return next((element for element in items.elts if ctx.value(element).array_origin is not None), None)
    return None


def _short(text: str) -> bool:
    return len(text) <= 40 and "\n" not in text


def _array_elements(items: ast.expr, ctx: Context) -> list[Value] | None:
    """What the innermost items are, when every one is known to be a NumPy array; else None."""
    return list_items(items, ctx, _is_array)


def list_items(items: ast.expr, ctx: Context, keep: Callable[[Value], bool]) -> list[Value] | None:
    """What the innermost items of a list are, when every one passes ``keep``; else None.

    A display or comprehension (nested ones too: `[[a, b], [c, d]]`), `list(...)` /
    `tuple(...)` of a generator or of `map(np.load, paths)`, or a name holding such a list.
    TCV212 asks it about tensors.
    """
    if isinstance(items, (ast.List, ast.Tuple)):
        if not items.elts or any(isinstance(element, ast.Starred) for element in items.elts):
            return None
        elements: list[Value] = []
        for element in items.elts:
            inner = list_items(element, ctx, keep) if isinstance(element, (ast.List, ast.Tuple, ast.ListComp)) else None
            elements.extend(inner if inner is not None else [ctx.value(element)])
    elif isinstance(items, ast.ListComp):
        nested = list_items(items.elt, ctx, keep) if isinstance(items.elt, (ast.List, ast.Tuple, ast.ListComp)) else None
        elements = nested if nested is not None else [ctx.value(items.elt)]
    elif _is_list_call(items, ctx):
        source = items.args[0]  # type: ignore[attr-defined]
        if isinstance(source, ast.GeneratorExp):
            elements = [ctx.value(source.elt)]
        elif _maps_an_array_function(source, ctx):
            return [Value(kind=Kind.NDARRAY)] if keep(Value(kind=Kind.NDARRAY)) else None
        else:
            return list_items(source, ctx, keep) if not isinstance(source, ast.Call) else None
    else:
        elements = _leaves(ctx.value(items))
        if elements is None:
            return None
    if elements and all(keep(element) for element in elements):
        return elements
    return None


def _leaves(value: Value) -> list[Value] | None:
    """The innermost items of a list the inference knows (a list of lists of arrays too)."""
    if value.kind is not Kind.SEQUENCE:
        return None
    items = list(value.elements) if value.elements else [value.element] if value.element is not None else None
    if not items:
        return None
    leaves: list[Value] = []
    for item in items:
        inner = _leaves(item) if item.kind is Kind.SEQUENCE else None
        leaves.extend(inner if inner is not None else [item])
    return leaves


def _is_list_call(node: ast.expr, ctx: Context) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "tuple")
        and node.func.id not in ctx.state.env and len(node.args) == 1 and not node.keywords
    )


def _maps_an_array_function(node: ast.expr, ctx: Context) -> bool:
    """``map(np.load, paths)``: every item is what a NumPy function returns, an array."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "map" and node.args):
        return False
    return ctx.facts.qualname(node.args[0]) in _ARRAY_FUNCTIONS


def _is_array(value: Value) -> bool:
    # `x[i]` of an array of unknown rank may be a NumPy scalar, which torch reads without warning.
    return value.kind is Kind.NDARRAY and arrays.MAYBE_SCALAR not in value.facts


def _changed_out_of_sight(name: str, call: ast.Call, ctx: Context) -> bool:
    """Whether the list ``name`` may get items the inference does not see.

    It follows ``.append``/``.extend`` in the scope itself; anything else that can
    add an item (``insert``, item assignment, ``+=``, a function that gets the list,
    an append inside a nested function) is out of sight.
    """
    scope = ctx.scope
    # Outside a loop, what happens after the conversion cannot change what it converted.
    in_loop = scope.in_loop(call)
    at = (call.lineno, call.col_offset)
    return any(
        _hides_a_change(mention, call, ctx)
        for mention in scope.mentions(name)
        if in_loop or (mention.node.lineno, mention.node.col_offset) < at  # type: ignore[attr-defined]
    )


def _hides_a_change(mention: Mention, call: ast.Call, ctx: Context) -> bool:
    node = mention.node
    if not isinstance(node, ast.Call):
        return True  # `name[i] = v`, `name += v`
    if node is call:
        return False
    if mention.method is not None:
        return mention.nested or mention.method not in _ADDS_NOTHING_UNSEEN
    func = node.func
    if isinstance(func, ast.Name) and func.id in _READ_ONLY_CALLS:
        return False
    # NumPy and torch functions read lists, they never append to them
    return not (ctx.facts.qualname(func) or "").startswith(("numpy.", "torch."))
