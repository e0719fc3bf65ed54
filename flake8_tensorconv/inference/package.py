"""Facts from the other modules of a package, asked for only by a would-be finding.

Nothing here runs while a file is walked. A rule about to report a finding whose risk rests on
how a function or method is called (TCV101, TCV103, TCV104) asks, through ``Context.elsewhere``,
one question: how does the package's code call it? :class:`PackageOracle` lists the files that
may call it once per process (the folder that imports the package: its scripts, tests and
sibling packages, where that is small enough, else the package alone; for a file outside any
package, its folder, or the folder above where a script there names it or where a script of the folder imports a
module of the folder above), keeps their texts while
their size and mtime stay the same, parses only the files whose text writes the function's name,
looks only at the lines that write it, and walks each calling file with the interpreter once per
process, as far as the functions holding the calls (so that their ``no_grad`` blocks, grad-mode
decorators, framework hooks and same-file callers count; one more level of the package's callers
of a calling function too, for its grad mode and for what it hands on from its own parameters).
A call that the function's signature could not take is not one of its calls. The answer is a
:class:`~flake8_tensorconv.inference.summaries.CallerSummary`: what the calls pass and whether
grad mode is on at one of them at least. The context then walks the function once more with it.

The same walk answers a second question: what do the package's other modules return? The facts the oracle
holds carry a :class:`PackageCalls` (``facts.package``), which every walk of them asks at each call of a name
the file imports from another module of the package: a function is walked in its module with what the call
passes and in the call's grad mode (a generator gives what it yields), a class gives an instance (a module
whose constructor freezes every parameter for the call's arguments holds none that require grad) whose
``forward`` and methods are walked there too (calling it, where the file sees the module's output and its
``forward`` returns a tuple there, gives the items that ``forward`` shows without grad, the others as the file saw
them). Followed MAX_RETURN_HOPS modules deep, through re-exports of a
package's ``__init__.py``, only into the files listed for the linted file. The answers are trusted only where
they show no grad: they drop findings, never make one. The walk that rules listen to never asks.

The package's answers also make findings (round 13), at one kind of site only: a trigger whose value the file leaves
unknown (where only a strict twin would report) and whose expression is rooted at a parameter of the function being
walked (`torch.tensor([state])`, `p.numpy()`, `p.data.numpy()`). There the rule asks ``Context.elsewhere`` (the same
walk as above: once per function, the package's files read once per process) and reports by default where the walk with
the callers' arguments shows a source on every path: the join of every call the package makes must show it (an
array in each, a tensor that requires grad in each); one call passing numbers, or a value the package does not know,
makes the join unknown and the site stays silent. A function nobody in the package calls (public API) has no answer
and stays silent. The evidence names the step in the calling module: :func:`located` gives the callers' values
origins with that file's path and code, which messages print as "on line 30 of main.py" and SARIF as a related
location in that file. The fixes of such findings are unsafe: a caller outside the package may pass anything. Gym
environments handed on by a caller's caller (``train(env, agent)`` passing ``env.reset()`` to ``agent.act``) are
followed one level further, as values without grad are (:func:`_parameters_from_package`).

Bounds: at most MAX_PACKAGE_FILES files in at most MAX_FOLDERS folders (a framework's own tree,
such as torch, is never worked across), files up to MAX_FILE_BYTES, at most MAX_SITES calls.
A function passed as a value, registered by a decorator, a dunder or a framework's hook
(``forward``, ``step``) is called out of sight: no answer. Text with no file (stdin, a
notebook) has no package. Every file an answer was read from, and the list of files, is a
dependency with its content hash, so that a result cache can tell when a finding went stale
(:func:`dependency_digest`).
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import weakref
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.files import iter_statements
from flake8_tensorconv.inference.modules import freezes_every_parameter, holds_no_parameters, unfreezes
from flake8_tensorconv.inference.support import is_classmethod, is_staticmethod
from flake8_tensorconv.trees import name_chain, walk

if TYPE_CHECKING:
    from collections.abc import Callable

    from flake8_tensorconv.inference.files import FileFacts
    from flake8_tensorconv.inference.summaries import CallerSummary
    from flake8_tensorconv.values import Value

MAX_PACKAGE_FILES = 300
MAX_FILE_BYTES = 200_000
MAX_FOLDERS = 200
# A function called from more places than this is out of sight: the package uses it everywhere.
MAX_SITES = 16
_SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})


class _Loaded(NamedTuple):
    stamp: tuple[int, int]  # (size, mtime_ns) when read
    digest: str
    text: str | None  # None: too large or undecodable
    tree: ast.Module | None  # parsed on first need; None until then (or when it does not parse)
    parsed: bool


class Answer(NamedTuple):
    """What the package says of a function's callers: None where they are not all in sight."""

    summary: CallerSummary | None
    dependencies: dict[str, str]  # path (or a package's listing key) -> content hash


# Per process: path -> what was read there (the stamp tells when the file changed since).
_FILES: dict[str, _Loaded] = {}
# Per process: listing key -> (folder stamps, files or None when too many).
_LISTINGS: dict[str, tuple[tuple[tuple[str, int | None], ...], tuple[str, ...] | None]] = {}


def digest_of(raw: bytes) -> str:
    from flake8_tensorconv.cache import content_digest  # hashlib: paid only where a package is read

    return content_digest(raw)


def _read(path: str) -> _Loaded | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    stamp = (status.st_size, status.st_mtime_ns)
    loaded = _FILES.get(path)
    if loaded is not None and loaded.stamp == stamp:
        return loaded
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    text = None
    if len(raw) <= MAX_FILE_BYTES:
        from flake8_tensorconv.source import SourceError, decode

        try:
            text = decode(raw).normalized
        except SourceError:
            text = None
    loaded = _FILES[path] = _Loaded(stamp, digest_of(raw), text, None, False)
    return loaded


def _tree(path: str, loaded: _Loaded) -> ast.Module | None:
    """The tree of a package file, parsed once per process and content (its facts are made per linted file)."""
    current = _FILES.get(path)
    if current is not None and current.digest == loaded.digest:
        loaded = current
    if loaded.parsed or loaded.text is None:
        return loaded.tree
    try:
        tree = ast.parse(loaded.text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    _FILES[path] = loaded._replace(tree=tree, parsed=True)
    return tree


def _top_package(folder: str) -> str | None:
    """The outermost folder of the ``__init__.py`` chain that holds ``folder``, or None."""
    top = None
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        top = folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return top


def _folder_stamp(folder: str) -> int | None:
    try:
        return os.stat(folder).st_mtime_ns
    except OSError:
        return None


# How a folder is listed: every subfolder ("tree": a package), none ("loose": a script's folder), or only the
# subfolders that hold ``__init__.py`` ("packages": where a package's importers live, beside its sibling packages).
_MODES = ("tree", "loose", "packages")


def _listing_key(root: str, mode: str) -> str:
    """How a folder's list of files is named among the dependencies: the folder, then ``:`` and the mode."""
    return f"{root}{os.sep}:{mode}"


def _package_files(root: str, mode: str) -> tuple[str, ...] | None:
    """The folder's ``.py`` files as ``mode`` lists them (None: more than MAX_PACKAGE_FILES), kept while no folder
    of them changes."""
    key = _listing_key(root, mode)
    known = _LISTINGS.get(key)
    if known is not None and all(_folder_stamp(folder) == stamp for folder, stamp in known[0]):
        return known[1]
    files: list[str] = []
    stamps: list[tuple[str, int | None]] = []
    too_many = False
    for folder, folders, names in os.walk(root):
        if len(stamps) >= MAX_FOLDERS:
            too_many = True  # a home folder, a data tree: no package
            break
        kept = sorted(name for name in folders if not name.startswith(".") and name not in _SKIPPED_FOLDERS)
        if mode == "loose":
            kept = []
        elif mode == "packages":
            kept = [name for name in kept if os.path.isfile(os.path.join(folder, name, "__init__.py"))]
        folders[:] = kept
        stamps.append((folder, _folder_stamp(folder)))
        files.extend(os.path.join(folder, name) for name in sorted(names) if name.endswith(".py"))
        if len(files) > MAX_PACKAGE_FILES:
            too_many = True
            break
    result = None if too_many else tuple(files)
    _LISTINGS[key] = (tuple(stamps), result)
    return result


def _listing_digest(files: tuple[str, ...]) -> str:
    return digest_of("\n".join(files).encode("utf-8", "surrogateescape"))


def dependency_digest(key: str) -> str | None:
    """The content hash of a dependency as it is on disk now (a file, or a folder's list of files); None: gone."""
    root, separator, mode = key.rpartition(os.sep + ":")
    if separator and mode in _MODES:
        files = _package_files(root, mode)
        return _listing_digest(files) if files is not None else None
    loaded = _read(key)
    return loaded.digest if loaded is not None else None


def _imported_from_above(folder: str) -> bool:
    """Whether a script in the folder above writes this folder's name (``from agent.ddpg import ...``, a
    namespace package): only then are the files around it read."""
    parent = os.path.dirname(folder)
    name = os.path.basename(folder)
    scripts = _package_files(parent, "loose") if parent != folder and name.isidentifier() else None
    for path in scripts or ():
        loaded = _read(path)
        if loaded is not None and loaded.text is not None and (f"{name}." in loaded.text or f"import {name}" in loaded.text):
            return True
    return False


_IMPORTED = re.compile(r"^[ \t]*(?:from[ \t]+([A-Za-z_]\w*)[ \t.]|import[ \t]+([A-Za-z_]\w*))", re.MULTILINE)


def _imports_from_above(path: str, folder: str) -> bool:
    """Whether the script ``path``, or another script beside it, imports a module that is not in their folder but in
    the folder above (``import rl_utils`` in ``AC/a2c.py``, run from the repository's root): the code there calls
    the functions of the folder's modules, so it is read too."""
    parent = os.path.dirname(folder)
    if parent == folder:
        return False
    scripts = [path, *(other for other in _package_files(folder, "loose") or () if other != path)]
    return any(_imports_from(script, folder, parent) for script in scripts)


def _imports_from(path: str, folder: str, parent: str) -> bool:
    loaded = _read(path)
    if loaded is None or loaded.text is None:
        return False
    for match in _IMPORTED.finditer(loaded.text):
        name = match.group(1) or match.group(2)
        beside = os.path.join(folder, name)
        above = os.path.join(parent, name)
        if not (os.path.exists(beside + ".py") or os.path.isdir(beside)) and (
            os.path.isfile(above + ".py") or os.path.isfile(os.path.join(above, "__init__.py"))
        ):
            return True
    return False


def _listing(path: str) -> tuple[str, tuple[str, ...]] | None:
    """The files that may call the functions of ``path``, and their listing's key: the folder that imports the
    package (its scripts, tests and the packages beside it) where that is small enough, else the package alone;
    for a file outside any package, the folder above its own (a folder imported as a namespace package by the
    scripts there), else its own folder. None: too large to work across (a framework's own tree)."""
    folder = os.path.dirname(path)
    top = _top_package(folder)
    if top is not None:
        choices = [(os.path.dirname(top), "tree"), (top, "tree")]
    else:
        choices = [(folder, "tree"), (folder, "loose")]
        if _imported_from_above(folder) or _imports_from_above(path, folder):
            choices.insert(0, (os.path.dirname(folder), "tree"))
    for root, mode in choices:
        files = _package_files(root, mode)
        if files is not None:
            return _listing_key(root, mode), files
    return None


class PackageOracle:
    """The package of one linted file, asked about the callers of its functions while that file is linted.

    Texts and trees are kept for the process; facts, walks and answers only for the linted file (``facts``
    is its own copy), so that no finding depends on which files a process linted before."""

    def __init__(self, path: str, facts: FileFacts) -> None:
        self.path = os.path.abspath(path)
        self._facts: dict[str, FileFacts | None] = {self.path: facts}
        # Every walk of the facts the oracle holds (the linted file's copy, the other modules') asks it what calls into
        # the package return; the walk that rules listen to does not.
        facts.package = PackageCalls(self, self.path)
        self._answers: dict[tuple, Answer] = {}
        # What calls into other modules return (None: not known), and the files those answers were read from.
        self._returns: dict[tuple, Value | None] = {}
        self._listed: dict[str, frozenset[str]] = {}
        self.read: dict[str, str] = {}
        self._package_names: frozenset[str] | None = None
        # How many returns of other modules are being walked, one inside the other (at most MAX_RETURN_HOPS).
        self.depth = 0

    @property
    def own_facts(self) -> FileFacts:
        return self._facts[self.path]  # type: ignore[return-value]

    def _facts_of(self, path: str, loaded: _Loaded) -> FileFacts | None:
        if path not in self._facts:
            from flake8_tensorconv.inference.files import analyze_file_facts

            tree = _tree(path, loaded)
            facts = analyze_file_facts(tree, loaded.text) if tree is not None else None
            if facts is not None:
                facts.package = PackageCalls(self, path)
            self._facts[path] = facts
        return self._facts[path]

    def callers(
        self, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None, depth: int = 0, path: str | None = None
    ) -> Answer:
        """How the package's code calls ``function`` (a module-level function, or a method of ``class_name``) of
        the file ``path`` (default: the linted file).

        A call made with grad on in a function of its own (``depth`` 0) counts as made without grad where the
        package calls that function only without grad: one level of callers' callers, no further."""
        where = path or self.path
        key = (where, class_name, function.name, function.lineno, depth)
        if key not in self._answers:
            self._answers[key] = self._callers(function, class_name, depth, where)
        return self._answers[key]

    def _callers(self, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None, depth: int, where: str) -> Answer:
        listing = _listing(where)
        facts = self._facts.get(where)
        if listing is None or facts is None or not _may_be_called_in_sight(facts, function, class_name):
            return Answer(None, {})
        name = function.name
        listing_key, files = listing
        dependencies = {listing_key: _listing_digest(files)}
        mentioning: list[tuple[str, _Loaded]] = []
        for path in files:
            if path == where:
                continue
            loaded = _read(path)
            if loaded is None:
                continue
            dependencies[path] = loaded.digest  # a file that starts to call the function changes the answer
            if loaded.text is not None and name in loaded.text:
                mentioning.append((path, loaded))
        sites: list[tuple[str, FileFacts, list[ast.Call], bool]] = []
        count = 0
        for path, loaded in [(where, None), *mentioning]:
            other = facts if loaded is None else self._facts_of(path, loaded)
            if other is None:
                continue
            star = loaded is not None and class_name is None and "import *" in (loaded.text or "") and self._star_imports(path, other, where)
            calls = _calls_of(other, name, class_name, own=loaded is None, function=function, star=star)
            if calls is None:
                return Answer(None, dependencies)
            count += len(calls)
            if count > MAX_SITES:
                return Answer(None, dependencies)
            if calls:
                sites.append((path, other, calls, class_name is not None))
        if not sites:
            return Answer(None, dependencies)
        return Answer(_summarise(self, function, sites, depth, dependencies), dependencies)

    def files_writing(self, name: str) -> int:
        """How many files of the package other than the linted one write ``name`` (a text search, no parse); the listing's
        size plus one where there is none."""
        listing = _listing(self.path)
        if listing is None:
            return MAX_PACKAGE_FILES + 1
        count = 0
        for path in listing[1]:
            loaded = _read(path) if path != self.path else None
            if loaded is not None and loaded.text is not None and name in loaded.text:
                count += 1
        return count

    # ------------------------------------------------------------------ what the package's functions and classes return
    def definition(self, where: str, facts: FileFacts, chain: tuple[str, ...]) -> _Definition | None:
        """The function or class of another module of the package that the name ``chain`` (``f``, ``utils.f``) of the
        file ``where`` imports, followed through modules that import it in turn; None where it is not the package's."""
        spec = _imported(facts, chain[0])
        if spec is None:
            return None
        level, module, name = spec
        dotted = [*(module.split(".") if module else []), *([name] if name else []), *chain[1:]]
        # The longest prefix that names a module file of the package; the rest is a name in it.
        for cut in range(len(dotted), -1, -1):
            path = self._module_path(where, level, dotted[:cut])
            if path is not None:
                rest = dotted[cut:]
                return self._defined_in(path, rest[0], 0) if len(rest) == 1 else None
        return None

    def calls_into_package(self, scope: ast.AST) -> bool:
        """Whether ``scope`` of the linted file (a top-level statement, or the module) names what the file imports from
        another module of the package: only then can a walk with what the package returns change a value."""
        if self._package_names is None:
            facts = self.own_facts
            names = set()
            for name in _imported_names(facts):
                spec = _imported(facts, name)
                if spec is None:
                    continue
                level, module, imported = spec
                parts = module.split(".") if module else []
                if self._module_path(self.path, level, parts) or imported and self._module_path(self.path, level, [*parts, imported]):
                    names.add(name)
            # The file's classes derived from the package's (their instances inherit its methods).
            names.update(name for name in _derived_classes(facts) if _bases_named(facts, name) & names)
            # A module-level name bound to what a call of one of them makes (`model = Net().to(device)`): the functions
            # that use it call into the package too.
            names.update(_bound_to_package_calls(facts.tree, names))
            self._package_names = frozenset(names)
        if not self._package_names:
            return False
        return any(isinstance(node, ast.Name) and node.id in self._package_names for node in walk(scope))

    def class_definition(self, path: str, class_name: str) -> _Definition | None:
        found = self._defined_in(path, class_name, MAX_REEXPORTS)
        return found if found is not None and isinstance(found.node, ast.ClassDef) else None

    def _module_path(self, where: str, level: int, parts: list[str], linted: bool = False) -> str | None:
        """The file of the package that the module ``parts`` (``level`` dots before it) names from ``where``: a module
        file or a package's ``__init__.py`` among the files listed for the linted file (the linted file itself only
        where ``linted`` says so: what it returns is what the file walk sees)."""
        listing = _listing(self.path)
        if listing is None or (not parts and not level):
            return None
        files = self._listed.get(listing[0])
        if files is None:
            files = self._listed[listing[0]] = frozenset(listing[1])
            self.read[listing[0]] = _listing_digest(listing[1])
        folder = os.path.dirname(where)
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            bases = [folder]
        else:
            top = _top_package(folder)
            bases = list(dict.fromkeys([*([os.path.dirname(top)] if top else []), folder, os.path.dirname(folder)]))
        for base in bases:
            stem = os.path.join(base, *parts)
            for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                if candidate in files and (linted or candidate != self.path):
                    return candidate
        return None

    def _star_imports(self, path: str, facts: FileFacts, where: str) -> bool:
        """Whether the file ``path`` imports every name of the module ``where`` (``from utils.plot_utils import *``)."""
        return any(
            isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names)
            and self._module_path(path, statement.level, (statement.module or "").split(".") if statement.module else [], linted=True) == where
            for statement in iter_statements(facts.tree)
        )

    def _defined_in(self, path: str, name: str, followed: int) -> _Definition | None:
        """The top-level function or class ``name`` of the module ``path``, followed through ``from .x import name``."""
        from flake8_tensorconv.inference.summaries import _module_assignments

        loaded = _read(path)
        facts = self._facts_of(path, loaded) if loaded is not None else None
        if facts is None:
            return None
        self.read[path] = loaded.digest  # type: ignore[union-attr]
        found = [s for s in facts.tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == name]
        if len(found) == 1 and len(facts.definitions.get(name, ())) == 1:
            # Bound once, by its definition: `name = wrap(name)` later would make it something else.
            return _Definition(path, facts, found[0]) if len(_module_assignments(facts.tree, name)) == 1 else None
        if found or followed >= MAX_REEXPORTS:
            return None
        spec = _imported(facts, name)  # `from .core import f` in a package's `__init__.py`
        if spec is None:
            return None
        level, module, original = spec
        target = self._module_path(path, level, module.split(".") if module else [])
        if target is None or original is None:
            return None
        return self._defined_in(target, original, followed + 1)

    def instance(self, definition: _Definition, facts: FileFacts, call: ast.Call) -> Value | None:
        """What ``Class(...)`` of another module makes: a module (its parameters frozen where its constructor freezes
        every one for the arguments given) or a plain object; None for any other class."""
        from flake8_tensorconv.values import Device, Fact, Grad, Kind, Value

        cls = definition.node
        marker = f"{PACKAGE_CLASS}{definition.path}:{cls.name}"
        if cls.name in definition.facts.module_classes:  # type: ignore[union-attr]
            frozen = holds_no_parameters(cls.name, definition.facts) or (
                freezes_every_parameter(cls, call) and not unfreezes(facts)  # type: ignore[arg-type]
            )
            parametrized = frozenset() if frozen else frozenset({Fact.PARAMETRIZED})
            return Value(kind=Kind.MODULE, grad=Grad.NO, device=Device.CPU, dtype="float32", facts=parametrized, instance_of=marker)
        if cls.name in definition.facts.plain_classes:  # type: ignore[union-attr]
            return Value(kind=Kind.OTHER, grad=Grad.NO, instance_of=marker)
        return None

    def returned(
        self, definition: _Definition, method: ast.FunctionDef | ast.AsyncFunctionDef | None, call: ast.Call,
        interpreter, grad_enabled: bool, as_method: bool = True,
    ) -> Value | None:
        """What ``call`` returns: the function (or ``method`` of the class) walked in its module with what the call passes
        and in the call's grad mode. A generator gives what it yields. None where the walk fails. A method walked not
        ``as_method`` (inherited by a class of another file) sees ``self`` as an object of unknown class."""
        from flake8_tensorconv.inference.summaries import CallSite, bind_arguments, call_context
        from flake8_tensorconv.values import UNKNOWN

        function = method or definition.node
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) or (
            method is None and any(not _plain_decorator(d, definition.facts) for d in function.decorator_list)
        ):
            return None
        class_name = definition.node.name if method is not None and as_method else None
        bound_first = method is not None and not is_staticmethod(function)
        bound = bind_arguments(function, CallSite(call, interpreter.facts.tree, None, bound=bound_first), interpreter.values)
        _, literals = call_context(function, call, interpreter.values, interpreter.eval_default)
        bound = {name: value for name, value in bound.items() if value != UNKNOWN}
        key = (definition.path, class_name, function.name, function.lineno, tuple(sorted(bound.items())),
               tuple(sorted((k, ast.dump(v)) for k, v in literals.items())), grad_enabled, self.depth)
        if key not in self._returns:
            self._returns[key] = None  # a recursive call while it is walked
            self.depth += 1
            try:
                self._returns[key] = _walk_return(definition, function, class_name, bound, literals, grad_enabled)
            finally:
                self.depth -= 1
        return self._returns[key]


def _may_be_called_in_sight(facts: FileFacts, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> bool:
    """Whether the package's calls can be all of the function's calls: not a framework's hook (``forward``,
    ``step``), a dunder or a name defined twice in the file, not registered or wrapped by a decorator."""
    name = function.name
    if name.startswith("__") or len(facts.definitions.get(name, ())) > 1 and class_name is None:
        return False
    if class_name is not None and name in K.CALLED_BY_FRAMEWORKS:
        return False
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        qualname = facts.qualname(target)
        if qualname not in K.GRAD_MODE_SWITCHES and qualname not in K.SET_GRAD_ENABLED and not (
            isinstance(target, ast.Name) and target.id in ("staticmethod", "classmethod")
        ):
            return False
    return True


def _calls_of(
    facts: FileFacts, name: str, class_name: str | None, own: bool, function: ast.FunctionDef | ast.AsyncFunctionDef,
    star: bool = False,
) -> list[ast.Call] | None:
    """The calls of the function ``name`` that a file makes; None where the name is used otherwise (passed as a
    value, so called out of sight). A method's calls are every ``x.name(...)``: calls of a method of the same name
    of another class are more calls, not fewer. A function's are ``name(...)`` where the file imports it (or
    defines it: its own file; or imports every name of its module: ``star``) and ``module.name(...)``. Only the
    lines that write the name are looked at."""
    from flake8_tensorconv.inference.summaries import _mentions, _word_offsets

    if facts.text is None:
        return None
    starts = facts.line_starts
    lines = sorted({bisect.bisect_right(starts, offset) for offset in _word_offsets(facts.text, name)})
    if not lines:
        return []
    if class_name is None and not own and any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name for node in facts.tree.body
    ):
        return []  # another function of the same name: its file's calls are its own
    imports_it = own or star or any(
        isinstance(node, ast.ImportFrom) and any(alias.name == name for alias in node.names) for node in iter_statements(facts.tree)
    )
    # A method read but not called (`self.data.act`) is passed on as a value only in code that knows its class:
    # elsewhere it is some other object's attribute of the same name.
    knows_class = own or (class_name is not None and class_name in facts.text)
    inside = (function.lineno, function.end_lineno or function.lineno) if own else (0, -1)
    calls: list[ast.Call] = []
    for node, parent, _scope, _owner in _mentions(facts.tree, name, lines):
        if inside[0] <= getattr(node, "lineno", 0) <= inside[1]:
            continue  # the function itself, and its recursive calls, which run as its caller does
        called = isinstance(parent, ast.Call) and parent.func is node
        if called and not _accepts(function, parent, class_name is not None):  # type: ignore[arg-type]
            continue  # `db.add(context, action, reward)`: a TypeError if it were this function, so another's
        if class_name is not None and isinstance(node, ast.Attribute):
            if called:
                calls.append(parent)  # type: ignore[arg-type]
            elif isinstance(node.ctx, ast.Load) and knows_class:
                return None  # `callback=self.method`: called where the analysis cannot see
        elif class_name is None and isinstance(node, ast.Name) and imports_it:
            if called:
                calls.append(parent)  # type: ignore[arg-type]
            elif isinstance(node.ctx, ast.Load):
                return None  # `pool.map(helper, ...)`
        elif class_name is None and isinstance(node, ast.Attribute) and called and _names_a_module(facts, node.value):
            calls.append(parent)  # type: ignore[arg-type]
    return calls


def _accepts(function: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, method: bool) -> bool:
    """Whether ``function`` can take the arguments ``call`` spells (``*x`` and ``**x`` may be anything): a call that
    passes more positions than it has, a keyword it lacks or leaves a required parameter out is some other
    function's (or would raise TypeError before anything is passed)."""
    if any(isinstance(argument, ast.Starred) for argument in call.args) or any(keyword.arg is None for keyword in call.keywords):
        return True
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    unbound = isinstance(receiver, ast.Name) and receiver.id[:1].isupper() and not is_classmethod(function)  # `Class.method(obj, ...)`
    if method and not unbound and not is_staticmethod(function):
        positional, required = positional[1:], required - 1
    if len(call.args) > len(positional) and args.vararg is None:
        return False
    names = {arg.arg for arg in [*args.args, *args.kwonlyargs]}
    keywords = {keyword.arg for keyword in call.keywords}
    if args.kwarg is None and not keywords <= names:
        return False
    missing = [arg.arg for arg in positional[len(call.args) : max(required, 0)]]
    missing += [arg.arg for arg, default in zip(args.kwonlyargs, args.kw_defaults) if default is None]
    return all(name in keywords for name in missing)


def _names_a_module(facts: FileFacts, receiver: ast.expr) -> bool:
    while isinstance(receiver, ast.Attribute):
        receiver = receiver.value
    return isinstance(receiver, ast.Name) and receiver.id in facts.aliases


def _summarise(
    oracle: PackageOracle,
    function: ast.FunctionDef | ast.AsyncFunctionDef, sites: list[tuple[str, FileFacts, list[ast.Call], bool]], depth: int, dependencies: dict[str, str]
) -> CallerSummary:
    """What the calls pass and whether grad mode is on at one of them at least: each calling file is walked by the
    interpreter as far as the functions that hold the calls, so that its `no_grad` blocks, grad-mode decorators,
    framework hooks and the same-file callers of the calling function count; at ``depth`` 0, so do the package's
    callers of the calling function."""
    from flake8_tensorconv.inference.summaries import CallerSummary, CallSite, bind_arguments, join_arguments

    per_site = []
    grad_enabled = False
    for path, facts, calls, bound in sites:
        walk = _CALLER_WALKS.get(facts)
        if walk is None:
            walk = _CALLER_WALKS[facts] = _CallingFileWalk(facts)
        if depth == 0:
            _parameters_from_package(oracle, path, facts, calls, dependencies)
        if not walk.reach(calls):
            return CallerSummary({}, True)  # another file's trouble is no finding's evidence
        interpreter, modes = walk.interpreter, walk.modes
        for call in calls:
            if id(call) not in modes:
                grad_enabled = True  # a call the walk did not reach (a lambda, a class body): its grad mode is unknown
            elif modes[id(call)] and not (depth == 0 and _called_without_grad(oracle, path, facts, call, dependencies)):
                grad_enabled = True
            receiver_is_class = isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and call.func.value.id[:1].isupper()
            site = CallSite(call, facts.tree, None, bound=bound and not receiver_is_class)
            passed = bind_arguments(function, site, interpreter.values)
            if path != oracle.path:
                passed = {name: located(value, path, facts.text) for name, value in passed.items()}
            per_site.append(passed)
    return CallerSummary(join_arguments(per_site), grad_enabled)


def located(value: Value, path: str, text: str | None) -> Value:
    """``value`` as a file other than ``path``'s sees it: the steps its origins name are placed in ``path`` and
    described with that file's text (``env.reset()``), so that a finding that names one names where it is."""
    from flake8_tensorconv.values import Origin

    def place(where: Origin | None) -> Origin | None:
        if where is None or where.path is not None:
            return where
        return where._replace(path=path, description=where.description or _code_at(text, where))

    if value.elements is not None:
        value = value.with_(elements=tuple(located(element, path, text) for element in value.elements))
    if value.element is not None:
        value = value.with_(element=located(value.element, path, text))
    if value.fields:
        value = value.with_(fields=tuple((name, located(field, path, text)) for name, field in value.fields))
    if value.grad_origin is None and value.device_origin is None and value.array_origin is None:
        return value
    return value.with_(
        grad_origin=place(value.grad_origin), device_origin=place(value.device_origin), array_origin=place(value.array_origin)
    )


def _code_at(text: str | None, where) -> str:
    """The code of a step, as a message shows it (`` `env.reset()` ``; long code cut at 40 characters)."""
    lines = (text or "").splitlines()
    if not 0 < where.line <= where.end_line <= len(lines):
        return "a step there"
    chunk = [line.encode("utf-8") for line in lines[where.line - 1 : where.end_line]]
    if len(chunk) == 1:
        chunk[0] = chunk[0][where.column : where.end_column]
    else:
        chunk[0], chunk[-1] = chunk[0][where.column :], chunk[-1][: where.end_column]
    code = " ".join(b" ".join(chunk).decode("utf-8", errors="ignore").split())
    return f"`{code}`" if len(code) <= 40 else f"`{code[:37]}...`"


class _CallingFileWalk:
    """One walk of a calling file, extended as questions need more of it: the module's statements, then the
    top-level functions and classes that hold the calls asked about. Grad mode is recorded at every call."""

    def __init__(self, facts: FileFacts) -> None:
        from flake8_tensorconv.inference.interpreter import Interpreter

        self.facts = facts
        self.lines: list[int] = []
        self.modes: dict[int, bool] = {}
        self.started = False
        self.failed = False
        self.interpreter = Interpreter(facts, listener=self._listen, walks=self._walks)

    def _listen(self, node: ast.AST, state) -> None:
        if isinstance(node, ast.Call):
            self.modes[id(node)] = self.modes.get(id(node), False) or state.grad_enabled

    def _walks(self, node: ast.AST) -> bool:
        first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        index = bisect.bisect_left(self.lines, first)
        return index < len(self.lines) and self.lines[index] <= last

    def reach(self, calls: list[ast.Call]) -> bool:
        """Walk as far as ``calls``; False where the walk fails."""
        from flake8_tensorconv.engine import walk_deeply

        if self.failed:
            return False
        new = sorted({call.lineno for call in calls} - set(self.lines))
        if not new and self.started:
            return True
        self.lines = sorted({*self.lines, *new})
        holding = [statement for statement in self.facts.tree.body if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        try:
            if not self.started:
                self.started = True
                walk_deeply(self.interpreter.walk_module)
            else:
                for statement in holding:
                    if any(statement.lineno <= line <= (statement.end_lineno or 0) for line in new):
                        walk_deeply(lambda statement=statement: self.interpreter.walk_statement(statement))
        except Exception:  # noqa: BLE001 - another file's trouble is no finding's evidence
            self.failed = True
            return False
        return True


def _holders(facts: FileFacts, calls: list[ast.Call]):
    """The module-level functions and methods of module-level classes that make ``calls``, with their class names."""
    lines = {call.lineno for call in calls}
    for statement in facts.tree.body:
        if isinstance(statement, ast.ClassDef):
            owner, candidates = statement.name, statement.body
        else:
            owner, candidates = None, [statement]
        for candidate in candidates:
            if isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                candidate.lineno <= line <= (candidate.end_lineno or 0) for line in lines
            ):
                yield candidate, owner


def _parameters_from_package(oracle: PackageOracle, path: str, facts: FileFacts, calls: list[ast.Call], dependencies: dict[str, str]) -> None:
    """A calling function's parameters that every call of it in the package passes without grad (one level further),
    so that what it hands on from them (`show(ids)` passing `ids` to `_decode`) holds none either. Only those: the
    answer removes risk, never adds it (the rest of its parameters are what the file alone says). Asked before the
    calls are walked, once per function, and only for one whose calls name one of its parameters in their arguments
    (a parameter handed on through a local is not followed: reading every caller's callers cost 18 % of the corpus's
    time)."""
    from flake8_tensorconv.values import Fact, Kind

    followed = (Kind.TENSOR, Kind.NDARRAY, Kind.UNKNOWN, Kind.SEQUENCE, Kind.MAPPING, Kind.ITERABLE)
    for holder, owner in _holders(facts, calls):
        arguments = [*holder.args.posonlyargs, *holder.args.args, *holder.args.kwonlyargs]
        if id(holder) in facts.package_parameters or len(arguments) <= (owner is not None):
            continue
        names = {arg.arg for arg in arguments[owner is not None :]}
        made = [call for call in calls if holder.lineno <= call.lineno <= (holder.end_lineno or 0)]
        if not any(isinstance(node, ast.Name) and node.id in names for call in made for node in _argument_nodes(call)) and not (
            _observes_a_parameter(holder, names)
        ):
            continue  # its calls pass none of its parameters on as such: not worth reading its callers for
        facts.package_parameters[id(holder)] = {}
        answer = oracle.callers(holder, owner, depth=1, path=path)
        dependencies.update(answer.dependencies)
        if answer.summary is not None:
            facts.package_parameters[id(holder)] = {
                name: value for name, value in answer.summary.arguments.items()
                if value.kind in followed and _grad_free(value) or Fact.ENVIRONMENT in value.facts
            }


def _observes_a_parameter(holder: ast.FunctionDef | ast.AsyncFunctionDef, names: set[str]) -> bool:
    """Whether ``holder`` calls ``reset()`` or ``step(...)`` of one of its parameters (``env.reset()``): gym's API, so
    the environment its callers pass decides what the observations it hands on are (``agent.act(state)``)."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("reset", "step")
        and isinstance(node.func.value, ast.Name) and node.func.value.id in names
        for node in walk(holder)
    )


def _argument_nodes(call: ast.Call):
    for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
        yield from walk(argument)


# Each calling file's walk, for one linted file (weakly keyed by facts made for that file).
_CALLER_WALKS: weakref.WeakKeyDictionary[FileFacts, _CallingFileWalk] = weakref.WeakKeyDictionary()


def _called_without_grad(oracle: PackageOracle, path: str, facts: FileFacts, call: ast.Call, dependencies: dict[str, str]) -> bool:
    """Whether the function of ``facts`` that makes ``call`` (module-level, or a method of a module-level class)
    is called by the package only without grad."""
    for candidate, owner in _holders(facts, [call]):
        answer = oracle.callers(candidate, owner, depth=1, path=path)
        dependencies.update(answer.dependencies)
        return answer.summary is not None and not answer.summary.grad_enabled
    return False


def oracle_for(path: str | None, make_facts: Callable[[], FileFacts]) -> PackageOracle | None:
    """The package oracle of a linted file on disk (``make_facts``: a copy of its facts for the oracle's walks, made
    only where there is a package); None for text with no file (stdin, a notebook) and for a file among too many
    to work across (a framework's own tree)."""
    if not path or path == "-" or not path.endswith(".py") or _listing(os.path.abspath(path)) is None:
        return None
    return PackageOracle(path, make_facts())


# ------------------------------------------------------------------------------------ what the package returns
# How many modules deep a question about what a call returns follows the package's code: the linted file's call
# into another module, and that module's calls into one more.
MAX_RETURN_HOPS = 2
# How many imports (``from .utils import f`` in ``utils/__init__.py``) a name is followed through to its definition.
MAX_REEXPORTS = 3
# ``instance_of`` of an instance of another module's class: ``package:<path>:<class>`` (no class name of a file).
PACKAGE_CLASS = "package:"


class _Definition(NamedTuple):
    path: str
    facts: FileFacts
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


class PackageCalls:
    """What a call into another module of the package returns, asked by each walk of facts the oracle holds
    (``facts.package``).

    Asked only by a walk made for a would-be finding (``Context.elsewhere``): the called function is walked in its own
    module with what the call passes and in the grad mode of the call; a class of another module gives an instance
    whose ``forward`` and methods are walked there too. Each answer is trusted only where it shows no grad: the walk
    that asks uses it to drop a finding, never to make one."""

    def __init__(self, oracle: PackageOracle, path: str) -> None:
        self.oracle = oracle
        self.path = path  # the file whose facts these are
        self._imported_names: frozenset[str] | None = None
        self._definitions: dict[tuple[str, ...], _Definition | None] = {}

    def refine(self, interpreter, node: ast.Call, value: Value) -> Value:
        """What ``node`` returns, ``value`` as the file alone sees it: an instance where it builds a class of another
        module, a value without grad where the package's code shows one (and the file did not)."""
        from flake8_tensorconv.values import UNKNOWN, Grad, Kind, Value, grad_free_items

        if self.oracle.depth >= MAX_RETURN_HOPS or _grad_free(value):
            return value
        if not interpreter.state.grad_enabled and value.kind is not Kind.UNKNOWN:
            # Under no_grad what the call returns holds no grad anyway (the walk makes it so): only the kind of a value
            # the file cannot name is worth asking about; a tensor it knows is more precise than a tuple walked there.
            return value
        func = node.func
        receiver = interpreter.values.get(id(func.value)) if isinstance(func, ast.Attribute) else None
        args = [interpreter.values.get(id(argument), UNKNOWN) for argument in node.args]
        returned: Value | None = None
        if isinstance(func, ast.Attribute) and receiver is not None and (receiver.instance_of or "").startswith(PACKAGE_CLASS):
            returned = self._method(interpreter, node, receiver, func.attr, args)
        elif isinstance(func, ast.Attribute) and receiver is not None and receiver.instance_of in _derived_classes(interpreter.facts):
            returned = self._inherited(interpreter, node, receiver.instance_of, func.attr)  # type: ignore[arg-type]
        elif isinstance(func, ast.Name) and func.id in _derived_classes(interpreter.facts) and (
            interpreter.state.env.get(func.id) == interpreter._module_names().get(func.id)  # the class, not a local
        ):
            # `agent = Agent(...)` of a class of the file derived from one of the package: named, so that the methods it
            # inherits can be asked about.
            return Value(kind=Kind.OTHER, grad=Grad.NO, instance_of=func.id) if value.kind is Kind.UNKNOWN else value
        else:
            callee = interpreter.values.get(id(func)) if not isinstance(func, ast.Attribute) else _held_by_self(interpreter, func, receiver)
            if callee is not None and callee.kind is Kind.MODULE and (callee.instance_of or "").startswith(PACKAGE_CLASS):
                returned = self._method(interpreter, node, callee, "forward", args)
                if returned is not None and value.kind is Kind.TENSOR and not _grad_free(returned):
                    # `loss, acc = model(x, y)`: the file sees the module's output; the items its forward shows
                    # without grad there (`acc` of a comparison, argmax indices) hold none.
                    return grad_free_items(value, returned)
            else:
                definition = self._definition(interpreter, func)
                if definition is not None and isinstance(definition.node, ast.ClassDef):
                    instance = self.oracle.instance(definition, interpreter.facts, node)
                    return instance if instance is not None and value.kind is Kind.UNKNOWN else value
                if definition is not None:
                    returned = self.oracle.returned(definition, None, node, interpreter, grad_enabled=interpreter.state.grad_enabled)
        if returned is None:
            return value
        if _grad_free(returned) or (value.kind is Kind.UNKNOWN and (returned.instance_of or "").startswith(PACKAGE_CLASS)):
            return returned  # no grad, or an instance of the package's class (`build()` returning `Encoder()`)
        if value.kind is Kind.UNKNOWN and _frozen_module(returned) and _stays_frozen_where_bound(interpreter, node):
            return returned  # `model = load_model(path)` that froze every parameter there (and nothing here unfreezes it)
        return _refined_items(value, returned)

    def _definition(self, interpreter, func: ast.expr) -> _Definition | None:
        """The function or class of another module that ``func`` names: an imported name, not rebound here."""
        chain = name_chain(func)
        if chain is None or chain[0] in interpreter.state.env:
            return None  # a local name, an attribute of a value
        if chain not in self._definitions:
            imported = self._imported_names
            if imported is None:
                imported = self._imported_names = frozenset(_imported_names(interpreter.facts))
            known = chain[0] in imported
            self._definitions[chain] = self.oracle.definition(self.path, interpreter.facts, chain) if known else None
        return self._definitions[chain]

    def _inherited(self, interpreter, node: ast.Call, class_name: str, name: str) -> Value | None:
        """What ``x.name(...)`` returns where ``x`` is an instance of the file's class ``class_name`` that does not define
        ``name`` and inherits it from a base class of another module of the package, whose method is walked there.
        ``self`` is walked as an object of unknown class: the file's class may override what the method calls on it."""
        cls = interpreter.facts.class_defined_once(class_name)
        if cls is None or any(name in _bound_names(statement) for statement in cls.body):
            return None
        for base in cls.bases:
            chain = name_chain(base)
            definition = self._definition(interpreter, base) if chain is not None else None
            if definition is None or not isinstance(definition.node, ast.ClassDef):
                return None  # a base of another library, or one of the file's own: the method may be defined there
            method = _method_of(definition, name)
            if method is not None:
                return self.oracle.returned(definition, method, node, interpreter, grad_enabled=interpreter.state.grad_enabled, as_method=False)
            if any(name in _bound_names(statement) for statement in definition.node.body) or definition.node.bases:
                return None  # defined otherwise (an assignment, a decorated method), or inherited from further up
        return None

    def _method(self, interpreter, node: ast.Call, instance: Value, name: str, args: list[Value]) -> Value | None:
        from flake8_tensorconv.values import Device, Fact, Grad, Kind, tensor

        path, _, class_name = (instance.instance_of or "")[len(PACKAGE_CLASS):].rpartition(":")
        definition = self.oracle.class_definition(path, class_name)
        if definition is None:
            return None
        method = _method_of(definition, "forward" if name == "__call__" else name)
        if method is None:
            return None
        value = self.oracle.returned(definition, method, node, interpreter, grad_enabled=interpreter.state.grad_enabled)
        if value is not None and _grad_free(value):
            return value
        if name == "forward" and instance.kind is Kind.MODULE and Fact.PARAMETRIZED not in instance.facts:
            # A module whose constructor froze every parameter: its output requires grad only through its inputs
            # (NumPy arrays it converts, tensors without grad).
            if args and all(_grad_free(argument) or argument.kind in (Kind.NDARRAY, Kind.NUMBER, Kind.STRING) for argument in args):
                return tensor(Grad.NO, Device.UNKNOWN)
        return value


def _frozen_module(value: Value) -> bool:
    """A module whose parameters all hold no grad where it was made (a loop setting every parameter's ``requires_grad``
    false, ``requires_grad_(False)``, a constructor that freezes them): what it computes requires grad only through
    its inputs."""
    from flake8_tensorconv.values import Fact, Grad, Kind

    return value.kind is Kind.MODULE and value.grad is Grad.NO and not value.facts & {Fact.PARAMETRIZED, Fact.SELF}


def _stays_frozen_where_bound(interpreter, call: ast.Call) -> bool:
    """Whether the calling file leaves frozen what ``call`` returns: nothing in it turns ``requires_grad`` back on, and
    where the call is bound to a name (``model = load_model(path)``) no layer is stored into that name. A call bound
    otherwise (an attribute, an item, several targets) is not followed."""
    scope = interpreter.state.function or interpreter.facts.tree
    for node in walk(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is call:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) != 1 or not isinstance(targets[0], ast.Name):
                return False
            return interpreter.facts.stays_frozen(targets[0].id)
    return not unfreezes(interpreter.facts)


def _refined_items(value: Value, returned: Value) -> Value:
    """A tuple the package returns (``G, x, labels = make_graph()``) whose items are trusted one by one: each item that
    holds no grad (or is an instance of the package's class) there replaces what the file saw of it; the rest stay as
    the file saw them (unknown where it saw nothing)."""
    from flake8_tensorconv.values import UNKNOWN, Grad, Kind, Value

    items = returned.elements
    if returned.kind is not Kind.SEQUENCE or not items:
        return value
    if value.kind is Kind.UNKNOWN:
        seen: tuple[Value, ...] = (UNKNOWN,) * len(items)
    elif value.kind is Kind.SEQUENCE and value.elements is not None and len(value.elements) == len(items):
        seen = value.elements
    else:
        return value
    refined = tuple(
        item if _grad_free(item) or (mine.kind is Kind.UNKNOWN and (item.instance_of or "").startswith(PACKAGE_CLASS)) else mine
        for item, mine in zip(items, seen)
    )
    return value if refined == seen else Value(kind=Kind.SEQUENCE, grad=Grad.NO, elements=refined)


def _bound_to_package_calls(tree: ast.Module, names: set[str]) -> set[str]:
    """The module-level names that a top-level assignment binds, alone, to a call of one of ``names`` (moved or cast
    after it: ``model = Net().to(device)``)."""
    bound = set()
    for statement in tree.body:
        if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
            continue
        value = statement.value
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Call):
            value = value.func.value
        chain = name_chain(value.func) if isinstance(value, ast.Call) else None
        if chain is not None and chain[0] in names:
            bound.add(statement.targets[0].id)
    return bound


def _derived_classes(facts: FileFacts) -> frozenset[str]:
    """The file's classes, each defined once, whose bases are all imported names (``class I2A(OnPolicy)``): the
    methods they inherit may be the package's."""
    if facts.derived_classes is None:
        imported = frozenset(_imported_names(facts))
        facts.derived_classes = frozenset(
            cls.name for cls in facts.classes
            if cls.bases and facts.class_defined_once(cls.name) is cls and not cls.keywords
            and all((chain := name_chain(base)) is not None and chain[0] in imported for base in cls.bases)
        )
    return facts.derived_classes


def _bases_named(facts: FileFacts, class_name: str) -> set[str]:
    """The first names of the bases of the file's class ``class_name`` (``OnPolicy``, ``policies`` of ``policies.Base``)."""
    cls = facts.class_defined_once(class_name)
    return {chain[0] for base in (cls.bases if cls is not None else ()) if (chain := name_chain(base)) is not None}


def _bound_names(statement: ast.stmt) -> set[str]:
    """The names a statement of a class body binds (a method, an attribute)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
    return {node.id for target in targets for node in walk(target) if isinstance(node, ast.Name)}


def _held_by_self(interpreter, func: ast.Attribute, receiver: Value | None) -> Value | None:
    """What ``self.<name>`` holds where it is called (``self.vgg(x)``): a module ``__init__`` built."""
    from flake8_tensorconv.inference.support import attribute_key
    from flake8_tensorconv.values import Fact

    class_name = interpreter.state.class_name
    if receiver is None or Fact.SELF not in receiver.facts or class_name is None:
        return None
    key = attribute_key(func)
    held = interpreter.state.env.get(key) if key is not None else None
    return held if held is not None else interpreter.facts.class_attributes.get(class_name, {}).get(func.attr)


def _grad_free(value: Value) -> bool:
    from flake8_tensorconv.values import Grad, Kind

    if value.kind in (Kind.TENSOR, Kind.UNKNOWN):
        return value.grad is Grad.NO
    if value.kind in (Kind.SEQUENCE, Kind.MAPPING, Kind.ITERABLE):
        items = [*(value.elements or ()), *((value.element,) if value.element is not None else ())]
        return bool(items) and all(_grad_free(item) for item in items)
    return value.kind is not Kind.MODULE


def _method_of(definition: _Definition, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The class's own method ``name``, defined once, decorated at most by a grad-mode switch or ``staticmethod``."""
    found = [s for s in definition.node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name]  # type: ignore[union-attr]
    if len(found) != 1 or any(not _plain_decorator(d, definition.facts) for d in found[0].decorator_list):
        return None
    return found[0]


def _plain_decorator(decorator: ast.expr, facts: FileFacts) -> bool:
    """A decorator that leaves a function's result as its body makes it: a grad-mode switch (the walk follows it) or
    ``staticmethod``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    qualname = facts.qualname(target)
    return qualname in K.GRAD_MODE_SWITCHES or qualname in K.SET_GRAD_ENABLED or (isinstance(target, ast.Name) and target.id == "staticmethod")


def _imported_names(facts: FileFacts):
    """The names the file's imports bind (``from m import a as b``: ``b``; ``import a.b``: ``a``)."""
    for statement in iter_statements(facts.tree):
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                yield alias.asname or alias.name.partition(".")[0]


def _imported(facts: FileFacts, name: str) -> tuple[int, str, str | None] | None:
    """How the file imports ``name``: (dots, module, the name imported from it, or None where ``name`` is the module)."""
    found = None
    for statement in iter_statements(facts.tree):
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    found = (statement.level, statement.module or "", alias.name)
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname == name:
                    found = (0, alias.name, None)
                elif alias.asname is None and alias.name.partition(".")[0] == name:
                    found = (0, name, None)
    return found


def _walk_return(
    definition: _Definition, function: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None, bound: dict[str, Value],
    literals: dict[str, ast.expr], grad_enabled: bool,
) -> Value | None:
    """What ``function`` of another module returns (yields, for a generator), walked there on its own with ``bound``
    for its parameters and ``grad_enabled`` as the caller's grad mode; its own calls into the package are followed
    MAX_RETURN_HOPS modules deep (its facts ask the oracle too)."""
    from flake8_tensorconv.engine import walk_deeply
    from flake8_tensorconv.inference.interpreter import Interpreter
    from flake8_tensorconv.inference.support import State
    from flake8_tensorconv.values import UNKNOWN, Grad, Kind, Value, join_all

    yields: list[ast.expr] = []

    def listener(node: ast.AST, state: State) -> None:
        if isinstance(node, (ast.Yield, ast.YieldFrom)) and node.value is not None and state.function is function:
            yields.append(node.value)

    walker = Interpreter(definition.facts, listener=listener, walks=lambda node: node is function)
    walker.caller_params = False
    walker.summary_of = function  # type: ignore[assignment]
    walker.bound_parameters = bound
    walker.literal_parameters = literals
    env = dict(walker._module_names()) if class_name is None else {}
    # The call's grad mode: the walk enters the function as from a caller running in it (not from the module).
    walker.state = State(env=env, grad_enabled=grad_enabled, function=function, class_name=class_name)
    try:
        walk_deeply(lambda: walker.walk_function(function, class_name))
    except Exception:  # noqa: BLE001 - another file's trouble is no finding's evidence
        return None
    if yields:
        element = join_all([walker.values.get(id(node), UNKNOWN) for node in yields])
        return Value(kind=Kind.ITERABLE, grad=Grad.NO, element=_named_in_package(element.with_(shares_with=None), definition))
    if not walker.returns:
        return None
    return _named_in_package(join_all(walker.returns).with_(shares_with=None), definition)


def _named_in_package(value: Value, definition: _Definition) -> Value:
    """An instance of a class of the module walked, named so that the caller's file can ask about it (``model =
    TorchMoji(...)`` returned by a builder of that module)."""
    if value.elements is not None:
        value = value.with_(elements=tuple(_named_in_package(element, definition) for element in value.elements))
    if value.element is not None:
        value = value.with_(element=_named_in_package(value.element, definition))
    name = value.instance_of
    facts = definition.facts
    if name is not None and (name in facts.module_classes or name in facts.plain_classes) and facts.class_defined_once(name) is not None:
        return value.with_(instance_of=f"{PACKAGE_CLASS}{definition.path}:{name}")
    return value
