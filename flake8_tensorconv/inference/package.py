"""Facts from the other modules of a package, asked for only by a would-be finding.

Nothing here runs while a file is walked. A rule about to report a finding whose risk rests on
how a function or method is called (TCV101, TCV103, TCV104) asks, through ``Context.elsewhere``,
one question: how does the package's code call it? :class:`PackageOracle` lists the files that
may call it once per process (the folder that imports the package: its scripts, tests and
sibling packages, where that is small enough, else the package alone; for a file outside any
package, its folder, or the folder above where a script there names it), keeps their texts while
their size and mtime stay the same, parses only the files whose text writes the function's name,
looks only at the lines that write it, and walks each calling file with the interpreter once per
process, as far as the functions holding the calls (so that their ``no_grad`` blocks, grad-mode
decorators, framework hooks and same-file callers count; one more level of the package's callers
of a calling function too). The answer is a
:class:`~flake8_tensorconv.inference.summaries.CallerSummary`: what the calls pass and whether
grad mode is on at one of them at least. The context then walks the function once more with it.

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
import weakref
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv import knowledge as K
from flake8_tensorconv.inference.files import iter_statements

if TYPE_CHECKING:
    from collections.abc import Callable

    from flake8_tensorconv.inference.files import FileFacts
    from flake8_tensorconv.inference.summaries import CallerSummary

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
        if _imported_from_above(folder):
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
        self._answers: dict[tuple, Answer] = {}

    @property
    def own_facts(self) -> FileFacts:
        return self._facts[self.path]  # type: ignore[return-value]

    def _facts_of(self, path: str, loaded: _Loaded) -> FileFacts | None:
        if path not in self._facts:
            from flake8_tensorconv.inference.files import analyze_file_facts

            tree = _tree(path, loaded)
            self._facts[path] = analyze_file_facts(tree, loaded.text) if tree is not None else None
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
            calls = _calls_of(other, name, class_name, own=loaded is None, function=function)
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
    facts: FileFacts, name: str, class_name: str | None, own: bool, function: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[ast.Call] | None:
    """The calls of the function ``name`` that a file makes; None where the name is used otherwise (passed as a
    value, so called out of sight). A method's calls are every ``x.name(...)``: calls of a method of the same name
    of another class are more calls, not fewer. A function's are ``name(...)`` where the file imports it (or
    defines it: its own file) and ``module.name(...)``. Only the lines that write the name are looked at."""
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
    imports_it = own or any(
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
            per_site.append(bind_arguments(function, site, interpreter.values))
    return CallerSummary(join_arguments(per_site), grad_enabled)


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


# Each calling file's walk, for one linted file (weakly keyed by facts made for that file).
_CALLER_WALKS: weakref.WeakKeyDictionary[FileFacts, _CallingFileWalk] = weakref.WeakKeyDictionary()


def _called_without_grad(oracle: PackageOracle, path: str, facts: FileFacts, call: ast.Call, dependencies: dict[str, str]) -> bool:
    """Whether the function of ``facts`` that makes ``call`` (module-level, or a method of a module-level class)
    is called by the package only without grad."""
    for statement in facts.tree.body:
        if isinstance(statement, ast.ClassDef):
            owner, candidates = statement.name, statement.body
        else:
            owner, candidates = None, [statement]
        for candidate in candidates:
            if isinstance(candidate, (ast.FunctionDef, ast.AsyncFunctionDef)) and candidate.lineno <= call.lineno <= (candidate.end_lineno or 0):
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
