"""File facts: imports and their aliases, the classes and helpers of a file, worked out before any function is walked."""

from __future__ import annotations

import ast
import bisect
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.bindings import ScopeIndex
from flake8_tensorconv.source import newline_starts
from flake8_tensorconv.trees import free_names, walk
from flake8_tensorconv.values import (
    Value,
)

if TYPE_CHECKING:
    from flake8_tensorconv.inference.guards import DeviceSpans
    from flake8_tensorconv.inference.package import PackageCalls

_T = TypeVar("_T")

# Fields that hold statements (or except/case clauses), in the order ast.walk visits them.
_STATEMENT_FIELDS = ("body", "handlers", "orelse", "finalbody", "cases")

_STATEMENT_FIELDS_OF: dict[type, tuple[str, ...]] = {}


def iter_statements(tree: ast.Module) -> Iterator[ast.AST]:
    """The module and every statement in it, in ``ast.walk``'s order, without entering expressions.

    Expressions hold no statements, and they are most of a tree's nodes.
    """
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        fields = _STATEMENT_FIELDS_OF.get(type(node))
        if fields is None:
            fields = _STATEMENT_FIELDS_OF[type(node)] = tuple(name for name in _STATEMENT_FIELDS if name in node._fields)
        for name in fields:
            queue.extend(getattr(node, name))
        yield node


def collect_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name for every import in the file."""
    aliases: dict[str, str] = {}
    star = False
    for node in iter_statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    aliases[top] = top
        elif isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            star = True
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    if star:
        aliases.update(_star_exports(tree, aliases))
    return aliases


# What a package that re-exports torch (``from fastai.basics import *``) provides under its usual names.
_STAR_EXPORTS = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "Tensor": "torch.Tensor", "np": "numpy"}


def _star_exports(tree: ast.Module, aliases: dict[str, str]) -> dict[str, str]:
    """Names that can only come from a star import: read in the file but bound nowhere in it.

    If ``torch`` is one of them, the star import re-exports torch, and with it the usual aliases.
    """
    free = free_names(tree, set(aliases))
    if "torch" not in free:
        return {}
    return {name: qualname for name, qualname in _STAR_EXPORTS.items() if name in free}


def _word_first(words: str) -> str:
    """``\\b(?:a|b)`` as a regex that starts with the words themselves, each followed by a lookbehind that sees no word
    character before it: a pattern that starts with literals is scanned for quickly, one that starts with ``\\b`` is
    tried at every position of the text (a few ms per scan of a large file, scans that were a third of the analysis of
    torch/nn). Same matches."""
    return "(?:" + "|".join(rf"{word}(?<!\w{word})" for word in words.split("|")) + ")"


# `requires_grad_()` of anything but False, `.requires_grad =` of anything but False: grad may be turned on.
_GRAD_TURNED_ON = re.compile(r"requires_grad_\((?!\s*False\s*\))|\.requires_grad\s*=(?!=)\s*(?!\s*False\b)")
_FILLED_ON_SELF = re.compile(r"self\.(\w+)\.(?:append|extend)\(")
# `Adam(model.parameters(), ...)`, `optim.SGD(params=self.net.parameters())`: a model whose parameters are trained.
_TRAINED = re.compile(
    _word_first("|".join(sorted(K.OPTIMIZER_NAMES))) + r"\(\s*(?:params\s*=\s*)?(?:list\()?\s*((?:self\.)?\w+)\.(?:named_)?parameters\(\)"
)
# The dotted chain just before an optimizer's name (`torch.optim.` of `torch.optim.Adam(`), read backwards from it.
_CALLEE_PREFIX = re.compile(r"(?:\w+\s*\.\s*)+$")

# `model.freeze()`, `self.encoder.requires_grad_(False)`, `net.eval().requires_grad_(False).to(device)`: a model whose
# parameters no longer require grad (the module methods that return the module itself may come between).
_FROZEN = re.compile(
    r"\b((?:self\.)?\w+)(?:\.(?:eval|train|cpu|cuda|to|float|half|double|bfloat16)\([^()]*\))*"
    r"\.(?:freeze\(\s*\)|requires_grad_\(\s*(?:requires_grad\s*=\s*)?False\s*\))"
)


def _chain_findall(pattern: re.Pattern[str], text: str, needles: Iterable[str]) -> list[str]:
    """``pattern.findall(text)`` (one group) for a pattern each of whose matches ends with a needle and is, before it,
    a chain of names, dots and calls whose arguments hold no parentheses (``self.net.to(device).``).

    The pattern is tried only at the positions between each needle and the earliest start of a chain leading to it
    (:func:`_chain_start`), in order, going on after each match as ``findall`` does: the same matches, without trying
    a pattern that starts with ``\\b\\w+`` at every word of a large file (10-20 ms for torch's ``functional.py``).
    A chain cannot pass a needle's own ``(`` without reaching the needle, so a match that ends with a later needle
    does not start before the earliest start of an earlier one: nothing before that is skipped."""
    found: list[str] = []
    position = 0  # where findall goes on: the end of the last match
    look_from = 0  # where the next needle is looked for
    while True:
        needle = min((index for needle in needles if (index := text.find(needle, look_from)) >= 0), default=-1)
        if needle < 0:
            return found
        for start in range(max(position, _chain_start(text, needle)), needle):
            match = pattern.match(text, start)
            if match is not None:
                found.append(match.group(1))
                position = look_from = match.end()
                break
        else:
            look_from = needle + 1


def _chain_start(text: str, end: int) -> int:
    """The earliest position from which a chain of names, dots and calls with flat arguments may reach ``end``."""
    index = end
    while index > 0:
        character = text[index - 1]
        if character.isalnum() or character in "_.":  # what `\\w` and `.` match
            index -= 1
        elif character == ")":
            opening = text.rfind("(", 0, index - 1)
            if opening < 0 or text.rfind(")", 0, index - 1) > opening:
                return index  # arguments with parentheses: no chain goes through this call
            index = opening
        else:
            return index
    return index


# `for p in model.parameters(): p.requires_grad = False` (the loop's first statement): every parameter frozen.
# Any freeze at all: `requires_grad = False`, `requires_grad_(False)` (a file without one freezes nothing by a loop).
_FREEZES_AT_ALL = re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*(?:requires_grad\s*=\s*)?False")
# What turns a parameter's grad back on: `p.requires_grad = True`, `m.requires_grad_(True)`, `m.requires_grad_()`.
_UNFREEZES = re.compile(r"\.requires_grad\s*=\s*True\b|\brequires_grad_\(\s*(?:(?:requires_grad\s*=\s*)?True\s*)?\)")
_FROZEN_BY_LOOP = re.compile(
    _word_first("for") + r"\s+[\w\s,()]+?\s+in\s+((?:self\.)?\w+)\.(?:named_)?parameters\(\)\s*:(?:\s*#[^\n]*)?\s*"
    r"\w+\.(?:requires_grad\s*=\s*False|requires_grad_\(\s*False\s*\))"
)
# `layer.register_forward_hook(self.save_activation)`: a function that receives a module's output.
_FORWARD_HOOK = re.compile(r"register_forward_hook\(\s*(?:self\.)?(\w+)")
# `obs, reward, done, info = env.step(a)`: four items, gym's API before 0.26 (0.26 and gymnasium return five), whose
# `reset()` returns the observation alone. The last name before `.step`.
_FOUR_ITEM_STEP = re.compile(
    r"^[ \t]*\(?[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+){3}[ \t]*\)?[ \t]*=[ \t]*(?:[\w.]*\.)?(\w+)[ \t]*\.[ \t]*step[ \t]*\(", re.MULTILINE
)
# `env.observation_space.shape`, `self.env.observation_space.shape[0]`: the last name before the space.
_SHAPED_SPACE = re.compile(r"\b(\w+)\s*\.\s*observation_space\s*\.\s*shape\b")


class FileFacts:
    """What is known about a whole file before any function is walked."""

    def __init__(self, tree: ast.Module, aliases: dict[str, str], text: str | None = None) -> None:
        self.tree = tree
        self.aliases = aliases
        # The file's text, where summaries look for the mentions of a name (None: no summaries).
        self.text = text
        # name -> every function and class of the file with that name, nested ones included.
        self.definitions: dict[str, list[ast.stmt]] = {}
        # Summaries of what same-file callers pass, by function (None: some caller is out of sight).
        self.caller_summaries: dict[int, object] = {}
        self.hook_grad_modes: dict[int, bool] = {}  # forward hooks whose hooked layers run only with grad off
        # Parameters without grad in every call the package makes of a function, by function (inference/package.py:
        # set only in the facts a package oracle walks, for the functions that hold the calls it asks about).
        self.package_parameters: dict[int, dict[str, object]] = {}
        # (caller, depth) -> its walk for summaries, as far as it went (see summaries._CallerWalk).
        self.caller_walks: dict[tuple[int, int], object] = {}
        # function -> the names it binds (a walk of its body, done once: see summaries.call_context).
        self.rebound_names: dict[int, frozenset[str]] = {}
        # function -> where it runs code only when a flag is true, and where it places tensors on a device variable.
        self.device_spans: dict[int, DeviceSpans] = {}
        # The spans of code that run only for another framework's model (see guards.other_framework_arms; None: not
        # worked out yet).
        self.other_framework_arms: list[tuple[tuple[int, int], tuple[int, int]]] | None = None
        # function -> parameter name -> its first `name.device` read in the function (worked out when a parameter asks).
        self.device_reads: dict[int, dict[str, ast.Attribute]] = {}
        self._line_starts: list[int] | None = None
        # id of an attribute chain -> (the chain, its qualified name): see qualname.
        self._qualnames: dict[int, tuple[ast.Attribute, str | None]] = {}
        self._record_fields: dict[str, tuple[str, ...]] | None = None
        self._filled_on_self: frozenset[str] | None = None
        self._turns_grad_on: bool | None = None
        # pattern -> the names it captures in the file's text (see _names_matching).
        self._names_by_pattern: dict[re.Pattern[str], frozenset[str]] = {}
        self._trained_models: frozenset[str] | None = None
        self._freezes_by_name: bool | None = None
        self.filled_on_self_lines: list[int] = []
        # The bindings / def-use index of the scopes summaries ask about (whose names hold a class's instance).
        self.scopes = ScopeIndex(text)
        # What the module's own statements bind, for summaries of module-level functions (None: not worked out).
        self.module_names: dict[str, Value] | None = None
        # (class, method) -> what a call of the method returns.
        self.method_returns: dict[tuple[str, str], Value] = {}
        # class -> attribute -> what the container ``self.<attribute>`` holds, filled in the class's methods.
        self.self_containers: dict[str, dict[str, Value]] = {}
        # Every class statement of the file, nested ones included.
        self.classes: list[ast.ClassDef] = []
        self.module_classes: set[str] = set()
        # nn.Module subclasses of the file that hold no parameters (worked out when first instantiated).
        self.parameter_free_classes: dict[str, bool] = {}
        # Classes of this file whose instances are plain objects: no base that may be a tensor or a module.
        self.plain_classes: set[str] = set()
        # LightningModule subclasses: their evaluation hooks run with grad disabled.
        self.lightning_classes: set[str] = set()
        # torch.autograd.Function subclasses: their forward and backward run with grad disabled.
        self.autograd_function_classes: set[str] = set()
        # torch.optim.Optimizer subclasses: their methods update parameters, with grad disabled.
        self.optimizer_classes: set[str] = set()
        # Module-level functions defined once (undecorated, or only switching grad mode), and what
        # calls to them return, worked out when first called.
        self.helpers: Mapping[str, ast.FunctionDef] = {}
        # Only for facts a package oracle holds (walks made for a would-be finding): what calls into the package's
        # other modules return (inference/package.py).
        self.package: PackageCalls | None = None
        # The file's classes whose bases are all imported (their inherited methods may be the package's), when asked.
        self.derived_classes: frozenset[str] | None = None
        # (helper, what a call passes it, the literals among that) -> what the call returns.
        self.helper_returns: dict[tuple, Value] = {}
        # helper -> how many calls with different arguments it was summarised for.
        self.helper_contexts: dict[str, int] = {}
        # class name -> attribute name -> value assigned in __init__ (modules, parameters).
        self.class_attributes: Mapping[str, dict[str, Value]] = {}
        # class name -> names it defines (methods, properties, class attributes, ``self.X = ...`` in its methods).
        self.class_members: Mapping[str, set[str]] = {}
        # class name -> whether the file names it anywhere but its own definition (builds, subclasses, passes it).
        self.classes_used_in_file: dict[str, bool] = {}
        # (class name, attribute) -> what methods other than __init__ store on ``self`` under that name, when known.
        self.method_stores: dict[tuple[str, str], Value | None] = {}
        # (class name, attribute) -> the NumPy data that ``__init__`` alone stores there from a method's return.
        self.init_returns: dict[tuple[str, str], Value | None] = {}
        # class name -> attribute -> the methods of ``self`` whose return ``__init__`` alone binds it to.
        self.init_method_bindings: dict[str, dict[str, list[str]]] = {}
        # id of a function -> the names it binds on ``self`` (``self_stores``).
        self._self_stores: dict[int, frozenset[str]] = {}
        # class name -> ``stored_outside_init``.
        self._stored_outside_init: dict[str, frozenset[str]] = {}
        # The lines where a `for` clause may bind an attribute of `self` (`for self.i in ...`, also in a comprehension),
        # read from the text once (None: not yet; [0]: line numbers unknown, every function counts): a function without
        # one in its lines is looked at for its statements' targets only (``self_stores``).
        self._self_for_target_lines: list[int] | None = None

    def self_stores(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> frozenset[str]:
        """Names that ``function`` binds on ``self`` (``self.x = ...``, ``self.x += ...``, ``self.x, y = ...``), worked
        out once per function: the class's storage facts, `__init__`'s and the other methods' stores all ask."""
        found = self._self_stores.get(id(function))
        if found is None:
            nodes = walk(function) if self._may_bind_self_in_for(function) else _target_nodes(function)
            found = frozenset(
                node.attr
                for node in nodes
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self"
            )
            self._self_stores[id(function)] = found
        return found

    def _may_bind_self_in_for(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether a `for` written in the lines of ``function`` (decorators included) may bind an attribute of `self`.
        Asked per function rather than per file: one such `for` in a file (or in its prose) made every method of
        the file walked whole, a sixth of the analysis of torch's trigger files under a profiler."""
        lines = self._self_for_target_lines
        if lines is None:
            text = self.text
            if text is None or "\r" in text:  # lines not numbered as the parser numbers them
                lines = [0]
            else:
                lines = [bisect.bisect_right(self.line_starts, match.start()) for match in _SELF_FOR_TARGET.finditer(text)]
            self._self_for_target_lines = lines
        if lines == [0]:
            return True
        first = min([function.lineno, *(decorator.lineno for decorator in function.decorator_list)])
        index = bisect.bisect_left(lines, first)
        return index < len(lines) and lines[index] <= (function.end_lineno or function.lineno)

    def class_defined_once(self, name: str) -> ast.ClassDef | None:
        """The file's class ``name``, where the file defines it exactly once (a name defined twice is not known)."""
        classes = [node for node in self.definitions.get(name, ()) if isinstance(node, ast.ClassDef)]
        return classes[0] if len(classes) == 1 else None

    def stored_outside_init_of(self, cls: ast.ClassDef) -> frozenset[str]:
        """Names that a method of ``cls`` other than ``__init__`` binds on ``self``."""
        return frozenset().union(
            *(
                self.self_stores(method)
                for method in cls.body
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method.name != "__init__"
            )
        )

    def stored_outside_init(self, class_name: str) -> frozenset[str]:
        """Names that a method of the file's class ``class_name`` (defined once) other than ``__init__`` binds on
        ``self``, worked out once per class when first asked."""
        found = self._stored_outside_init.get(class_name)
        if found is None:
            cls = self.class_defined_once(class_name)
            found = self.stored_outside_init_of(cls) if cls is not None else frozenset()
            self._stored_outside_init[class_name] = found
        return found

    def turns_grad_on(self) -> bool:
        """Whether the file may turn ``requires_grad`` on for a tensor: ``requires_grad_()`` of anything but ``False``,
        or ``.requires_grad =`` of anything but ``False`` (``p.requires_grad = flag`` too)."""
        if self._turns_grad_on is None:
            self._turns_grad_on = _GRAD_TURNED_ON.search(self.text or "") is not None
        return self._turns_grad_on

    @property
    def filled_on_self(self) -> frozenset[str]:
        """Names of ``self`` attributes that some method fills (``self.buffer.append(x)``, ``.extend``)."""
        if self._filled_on_self is None:
            matches = list(_FILLED_ON_SELF.finditer(self.text or ""))
            self._filled_on_self = frozenset(match.group(1) for match in matches)
            self.filled_on_self_lines = [bisect.bisect_right(self.line_starts, match.start()) for match in matches]
        return self._filled_on_self

    def _names_matching(self, pattern: re.Pattern[str], *needles: str, chained: bool = False) -> frozenset[str]:
        """What ``pattern`` captures in the file's text, worked out once; nothing where no needle occurs (no scan).

        ``chained``: every match is a chain of names, dots and calls (``self.x.to(d).freeze(``) that leads to a needle,
        so it is tried only at the chains before the needles (:func:`_chain_findall`), not at every word of the text."""
        found = self._names_by_pattern.get(pattern)
        if found is None:
            text = self.text or ""
            if not any(needle in text for needle in needles):
                found = frozenset()
            else:
                found = frozenset(_chain_findall(pattern, text, needles) if chained else pattern.findall(text))
            self._names_by_pattern[pattern] = found
        return found

    @property
    def trained_models(self) -> frozenset[str]:
        """Names (``model``, ``self.actor``) whose parameters the file hands to an optimizer or a gradient clip:
        modules with parameters that are trained, whatever class (of another module) they are."""
        if self._trained_models is None:
            text = self.text or ""
            foreign = self._foreign_frameworks if "parameters()" in text else frozenset()
            self._trained_models = frozenset(
                match.group(1) for match in (_TRAINED.finditer(text) if "parameters()" in text else ())
                if not foreign or self._optimizer_module(text, match) not in foreign
            )
        return self._trained_models

    def _optimizer_module(self, text: str, match: re.Match[str]) -> str:
        """The top-level module the optimizer of a ``_TRAINED`` match comes from ('' where not imported)."""
        prefix = _CALLEE_PREFIX.search(text, max(0, match.start() - 120), match.start())
        first = prefix.group().partition(".")[0].strip() if prefix else text[match.start():].partition("(")[0]
        return (self.aliases.get(first) or "").partition(".")[0]

    @property
    def _foreign_frameworks(self) -> frozenset[str]:
        """Top-level modules of other frameworks the file imports: the known ones (Keras, JAX, Paddle...) and any
        module whose ``nn`` it uses (``import mytorch.nn as nn``, ``import flax.linen as nn``): an optimizer of such a
        framework (``optim.SGD(model.parameters())`` with ``optim`` from ``mytorch``) trains no torch module."""
        tops = {value.partition(".")[0] for key, value in self.aliases.items() if key == "nn" or value.endswith(".nn")}
        return frozenset(K.FOREIGN_LIBRARIES | {top for top in tops if top != "torch"})

    @property
    def frozen_models(self) -> frozenset[str]:
        """Names (``model``, ``self.encoder``) on which the file calls ``.freeze()`` or ``.requires_grad_(False)``,
        or whose parameters a loop sets ``requires_grad = False`` one by one."""
        return self._names_matching(_FROZEN, "freeze(", "requires_grad_(", chained=True) | self._names_matching(
            _FROZEN_BY_LOOP, "requires_grad"
        )

    @property
    def freezes_by_name(self) -> bool:
        """Whether the file's text can freeze a module at all (``requires_grad = False``, ``requires_grad_(False)``,
        ``.freeze()``): worked out once, so that a name of unknown kind asks :attr:`frozen_models` only in such files."""
        if self._freezes_by_name is None:
            text = self.text or ""
            self._freezes_by_name = "freeze(" in text or ("requires_grad" in text and _FREEZES_AT_ALL.search(text) is not None)
        return self._freezes_by_name

    def stays_frozen(self, name: str) -> bool:
        """Whether nothing in the file can give the frozen module ``name`` a parameter that requires grad again: no
        ``.requires_grad = True`` / ``requires_grad_(True)`` anywhere, no layer stored into it (``name.fc = ...``,
        ``name[0] = ...``, ``name.add_module(...)``, ``name.append(...)``)."""
        text = self.text or ""
        if _UNFREEZES.search(text):
            return False
        quoted = re.escape(name)
        stored = re.compile(
            rf"(?<![\w.]){quoted}\s*(?:\.\s*\w+|\[[^\]\n]*\])+\s*=(?!=)|(?<![\w.]){quoted}\.(?:add_module|append|insert|extend)\("
        )
        return not stored.search(text)

    @property
    def forward_hooks(self) -> frozenset[str]:
        """Names of the functions and methods the file registers as forward hooks (``register_forward_hook(f)``)."""
        return self._names_matching(_FORWARD_HOOK, "register_forward_hook")

    @property
    def shaped_environments(self) -> frozenset[str]:
        """Names (``env`` of ``env`` and ``self.env``) whose ``observation_space.shape`` the file reads: gym-style
        environments whose observation space has a shape, a ``Box``, so their observations are NumPy arrays."""
        return self._names_matching(_SHAPED_SPACE, "observation_space")

    @property
    def four_item_steps(self) -> frozenset[str]:
        """Names (``env`` of ``env`` and ``self.env``) whose ``step(a)`` the file unpacks into four items: gym's API
        before 0.26, where ``reset()`` returns the observation alone (a five-item step would raise there)."""
        return self._names_matching(_FOUR_ITEM_STEP, ".step(")

    @property
    def record_fields(self) -> dict[str, tuple[str, ...]]:
        """Record classes of the file (namedtuples, ``NamedTuple`` and dataclass classes) -> their field names."""
        if self._record_fields is None:
            text = self.text or ""
            found = "namedtuple(" in text or "NamedTuple" in text or "@dataclass" in text or "dataclasses.dataclass" in text
            self._record_fields = record_classes(self) if found else {}
        return self._record_fields

    @property
    def line_starts(self) -> list[int]:
        """Offsets in ``text`` where each line starts (line N starts at ``line_starts[N - 1]``)."""
        if self._line_starts is None:
            text = self.text or ""
            self._line_starts = newline_starts(text)
        return self._line_starts

    @property
    def imports_torch(self) -> bool:
        return any(name == "torch" or name.startswith("torch.") for name in self.aliases.values())

    def qualname(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            # Asked of the same chains over and over (every rule's handler asks of every call's function): kept,
            # by node (an id is trusted only with its node: the language server keeps facts across edits).
            known = self._qualnames.get(id(node))
            if known is not None and known[0] is node:
                return known[1]
            base = self.qualname(node.value)
            qualname = f"{base}.{node.attr}" if base else None
            self._qualnames[id(node)] = (node, qualname)
            return qualname
        return None


class LazyByName(Mapping[str, _T]):
    """Name (of a class or function of the file) -> a fact about it, worked out the first time it is asked for.

    Most classes and functions of a file are never asked about: only code that is walked asks.
    A name whose fact comes out None is not in the mapping.
    """

    def __init__(self, names: Iterable[str], compute: Callable[[str], _T]) -> None:
        self._names = frozenset(names)
        self._compute = compute
        self._known: dict[str, _T] = {}
        self._computing: set[str] = set()

    def __getitem__(self, name: str) -> _T:
        if name not in self._known:
            # Asked again while working it out (a class nested in its own __init__): not known yet.
            if name not in self._names or name in self._computing:
                raise KeyError(name)
            self._computing.add(name)
            try:
                self._known[name] = self._compute(name)
            finally:
                self._computing.discard(name)
        value = self._known[name]
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def analyze_file_facts(tree: ast.Module, text: str | None = None) -> FileFacts:
    from flake8_tensorconv.inference.modules import init_attributes

    facts = FileFacts(tree=tree, aliases=collect_aliases(tree), text=text)
    classes: list[ast.ClassDef] = []
    for node in iter_statements(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            facts.definitions.setdefault(node.name, []).append(node)
            if isinstance(node, ast.ClassDef):
                classes.append(node)
    facts.classes = classes
    # nn.Module subclasses, following bases defined in this file.
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in facts.module_classes:
                continue
            for base in cls.bases:
                qualname = facts.qualname(base)
                if (qualname and (qualname in K.MODULE_BASES or _is_torch_module_class(qualname))) or (
                    isinstance(base, ast.Name) and base.id in facts.module_classes
                ):
                    facts.module_classes.add(cls.name)
                    changed = True
                    break
    facts.lightning_classes = _subclasses(classes, K.LIGHTNING_MODULE_BASES, facts, _follows_lightning)
    facts.autograd_function_classes = _subclasses(classes, K.AUTOGRAD_FUNCTION_BASES, facts)
    facts.optimizer_classes = _subclasses(classes, K.OPTIMIZER_BASES, facts)
    by_name: dict[str, list[ast.ClassDef]] = {}
    for cls in classes:
        by_name.setdefault(cls.name, []).append(cls)
    facts.plain_classes = _plain_classes(by_name, facts)
    facts.helpers = _helpers(tree, facts)
    facts.class_members = LazyByName(by_name, lambda name: _members_with_bases(name, by_name))
    # A name defined twice: the last definition in walk order wins.
    facts.class_attributes = LazyByName(by_name, lambda name: init_attributes(by_name[name][-1], facts))
    return facts


# Bases that make no tensor: builtins and typing/abc/enum helpers.
_PLAIN_BASES = frozenset({"object", "dict", "list", "tuple", "set", "str", "int", "float", "Exception", "ValueError", "RuntimeError"})

_PLAIN_BASE_QUALNAMES = frozenset(
    {"typing.NamedTuple", "typing.Generic", "typing.Protocol", "abc.ABC", "enum.Enum", "enum.IntEnum", "dataclasses.dataclass"}
)


def _plain_classes(by_name: dict[str, list[ast.ClassDef]], facts: FileFacts) -> set[str]:
    """Classes defined once in this file whose bases (followed within the file) are all plain.

    A base imported from elsewhere may derive from torch.Tensor, so it makes the class unknown.
    """
    plain: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, definitions in by_name.items():
            if name in plain or len(definitions) != 1 or name in facts.module_classes:
                continue
            bases = [base.value if isinstance(base, ast.Subscript) else base for base in definitions[0].bases]
            if all(_is_plain_base(base, plain, facts) for base in bases):
                plain.add(name)
                changed = True
    return plain


def _helpers(tree: ast.Module, facts: FileFacts) -> Mapping[str, ast.FunctionDef]:
    """Module-level functions whose return value a call can be given: defined once, no other decorator
    than a grad-mode switch, not a generator."""
    definitions: dict[str, list[ast.stmt]] = {}
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions.setdefault(statement.name, []).append(statement)
    helpers = {}
    for name, nodes in definitions.items():
        node = nodes[0]
        if len(nodes) != 1 or not isinstance(node, ast.FunctionDef):
            continue
        decorators = [d.func if isinstance(d, ast.Call) else d for d in node.decorator_list]
        if any(facts.qualname(d) not in K.GRAD_MODE_SWITCHES and facts.qualname(d) not in K.SET_GRAD_ENABLED for d in decorators):
            continue
        helpers[name] = node
    # Whether one is a generator (a walk of its body) is looked at only when a call of it is walked.
    return LazyByName(helpers, lambda name: None if _is_generator(helpers[name], facts) else helpers[name])


# A `for` whose target names an attribute of `self` (`for self.i in range(n)`, `[... for self.x in xs]`).
_SELF_FOR_TARGET = re.compile(_word_first("for") + r"\b(?:(?!\bin\b)[^\n])*?\bself\s*\.")


def _target_nodes(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of what the statements of ``function`` (nested ones too) bind: assignment, augmented and annotated
    assignment targets, `for` targets and `with ... as` targets; the expressions they compute are not looked into."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        statement = stack.pop()
        targets: list[ast.expr] = []
        if isinstance(statement, ast.Assign):
            targets = list(statement.targets)
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [statement.target]
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in statement.items if item.optional_vars is not None]
        for target in targets:
            yield from walk(target)
        for field in ("body", "orelse", "finalbody"):
            stack.extend(getattr(statement, field, ()))
        for handler in getattr(statement, "handlers", ()):
            stack.extend(handler.body)
        for case in getattr(statement, "cases", ()):
            stack.extend(case.body)


def _is_generator(function: ast.FunctionDef, facts: FileFacts) -> bool:
    # A yield is written `yield`: a function whose lines never say it is no generator, and its tree is not walked.
    text = facts.text
    if text is not None and "\r" not in text:  # lines end in "\n" only: line_starts numbers them as the parser does
        starts = facts.line_starts
        last = function.end_lineno or function.lineno
        if "yield" not in text[starts[function.lineno - 1] : starts[last] if last < len(starts) else len(text)]:
            return False
    return any(isinstance(child, (ast.Yield, ast.YieldFrom)) for child in walk(function))


def _is_plain_base(base: ast.expr, plain: set[str], facts: FileFacts) -> bool:
    if isinstance(base, ast.Name) and base.id not in facts.aliases:
        return base.id in _PLAIN_BASES or base.id in plain
    return facts.qualname(base) in _PLAIN_BASE_QUALNAMES


def _subclasses(
    classes: list[ast.ClassDef],
    bases: frozenset[str],
    facts: FileFacts,
    also: Callable[[ast.ClassDef, FileFacts], bool] | None = None,
) -> set[str]:
    """Classes deriving from one of ``bases`` (qualified names), following bases defined in this file; ``also``
    names other evidence that a class is one (it follows the bases' contract)."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name not in found and (
                any(facts.qualname(base) in bases or (isinstance(base, ast.Name) and base.id in found) for base in cls.bases)
                or (also is not None and also(cls, facts))
            ):
                found.add(cls.name)
                changed = True
    return found


def _follows_lightning(cls: ast.ClassDef, facts: FileFacts) -> bool:
    """A LightningModule whose base comes from another module of the project: the base is named one
    (``ReAgentLightningModule``), or the class defines a hook only Lightning calls (``configure_optimizers``)."""
    if not cls.bases:
        return False
    for base in cls.bases:
        qualname = facts.qualname(base)
        if qualname is not None and not qualname.startswith("torch.") and qualname.endswith("LightningModule"):
            return True
    return any(
        isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name in K.LIGHTNING_ONLY_METHODS
        for statement in cls.body
    )


def _members_with_bases(name: str, by_name: dict[str, list[ast.ClassDef]]) -> set[str]:
    """What a class defines, with what its bases defined in this file define (a NamedTuple's fields)."""
    members: set[str] = set()
    pending, seen = [name], set()
    while pending:
        current = pending.pop()
        if current in seen or current not in by_name:
            continue
        seen.add(current)
        for cls in by_name[current]:
            members |= _class_members(cls)
            pending.extend(base.id for base in cls.bases if isinstance(base, ast.Name))
    return members


def _class_members(cls: ast.ClassDef) -> set[str]:
    members: set[str] = set()
    for statement in cls.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(statement.name)
            members.update(_instance_attributes(statement))
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            members.update(t.id for t in targets if isinstance(t, ast.Name))
    return members


def _instance_attributes(method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names a method assigns on its instance (``self.data = ...``)."""
    positional = [*method.args.posonlyargs, *method.args.args]
    if not positional:
        return set()
    instance = positional[0].arg
    return {
        node.attr
        for node in walk(method)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name) and node.value.id == instance
    }


_NAMEDTUPLE_FACTORIES = frozenset({"collections.namedtuple", "typing.NamedTuple", "typing_extensions.NamedTuple"})
_DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass"})


def record_classes(facts: FileFacts) -> dict[str, tuple[str, ...]]:
    """``Transition = namedtuple("Transition", "state action")`` at module level, ``class Transition(NamedTuple)``
    with annotated fields, a ``@dataclass`` without its own ``__init__``: name -> field names, for names the
    module binds once."""
    records: dict[str, tuple[str, ...]] = {}
    bound: dict[str, int] = {}
    for statement in facts.tree.body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = bound.get(target.id, 0) + 1
                    fields = _namedtuple_fields(statement.value, facts) if isinstance(statement.value, ast.Call) else None
                    if fields is not None and len(statement.targets) == 1:
                        records[target.id] = fields
    for cls in facts.classes:
        bound[cls.name] = bound.get(cls.name, 0) + 1
        fields = _record_class_fields(cls, facts)
        if fields is not None:
            records[cls.name] = fields
    return {name: fields for name, fields in records.items() if bound.get(name) == 1 and len(facts.definitions.get(name, ())) <= 1}


def _namedtuple_fields(call: ast.expr, facts: FileFacts) -> tuple[str, ...] | None:
    if not (isinstance(call, ast.Call) and facts.qualname(call.func) in _NAMEDTUPLE_FACTORIES):
        return None
    spelled = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg in ("field_names", "fields")), None)
    if isinstance(spelled, ast.Constant) and isinstance(spelled.value, str):
        return tuple(spelled.value.replace(",", " ").split())
    if isinstance(spelled, (ast.List, ast.Tuple)):
        names = []
        for item in spelled.elts:
            if isinstance(item, (ast.Tuple, ast.List)) and item.elts:  # NamedTuple("T", [("state", np.ndarray), ...])
                item = item.elts[0]
            if not (isinstance(item, ast.Constant) and isinstance(item.value, str)):
                return None
            names.append(item.value)
        return tuple(names)
    return None


def _record_class_fields(cls: ast.ClassDef, facts: FileFacts) -> tuple[str, ...] | None:
    decorators = [d.func if isinstance(d, ast.Call) else d for d in cls.decorator_list]
    is_dataclass = any(facts.qualname(d) in _DATACLASS_DECORATORS for d in decorators)
    is_named = any(facts.qualname(base) in _NAMEDTUPLE_FACTORIES for base in cls.bases)
    if len(cls.bases) == 1 and not cls.decorator_list:
        inherited = _namedtuple_fields(cls.bases[0], facts)  # class Transition(namedtuple("Transition", "s a")): ...
        if inherited is not None:
            return None if _defines(cls, "__new__") else inherited
    if not (is_dataclass or is_named) or _defines(cls, "__init__") or _defines(cls, "__new__"):
        return None
    return tuple(
        statement.target.id
        for statement in cls.body
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
        and "ClassVar" not in ast.dump(statement.annotation)
    )


def _defines(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == name for statement in cls.body)


def _is_torch_module_class(qualname: str) -> bool:
    head, _, name = qualname.rpartition(".")
    return head.startswith("torch.nn") and name[:1].isupper() and qualname not in K.PARAMETER_CLASSES
