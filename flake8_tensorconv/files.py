"""Which files a run looks at: folders are walked, excludes and ignore files are honoured.

Like Ruff: a folder is searched for Python files, skipping what the configuration that
applies there excludes (``exclude``, ``extend-exclude``, by name or by path from the
config's folder) and, unless ``respect-gitignore = false``, what ``.gitignore`` files
(inside a git repository), ``.ignore`` files and ``.git/info/exclude`` ignore, nested ones
included. A file named on the command line is always checked, unless ``force-exclude`` is
on and an exclude matches it or a folder above it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from typing import Any

from flake8_tensorconv.config import Resolver

# The suffixes of the files a folder walk takes (one place, so that a new kind is one entry).
SOURCE_SUFFIXES = (".py", ".ipynb")
IGNORE_FILES = (".gitignore", ".ignore")  # in a folder, .ignore wins over .gitignore (as in ripgrep and Ruff)


class Discovery:
    def __init__(self) -> None:
        self.files: list[str] = []
        self.missing: list[str] = []  # named paths that do not exist
        self.errors: list[str] = []  # "path: why" for what could not be read


# (folder the patterns are relative to, compiled pathspec), shallowest first.
_IgnoreChain = tuple[tuple[str, Any], ...]


def discover(paths: Iterable[str], resolver: Resolver | None = None) -> Discovery:
    """Python files under ``paths``, in a stable order, each once."""
    resolver = resolver or Resolver()
    discovery = Discovery()
    seen: set[str] = set()

    def add(path: str) -> None:
        key = os.path.normpath(path)
        if key not in seen:
            seen.add(key)
            discovery.files.append(_shown(path))

    for path in paths:
        try:
            is_folder = stat.S_ISDIR(os.stat(path).st_mode)
        except FileNotFoundError:
            if os.path.lexists(path):  # a link to nothing: reading it says why
                add(path)
            else:
                discovery.missing.append(path)
            continue
        except OSError as error:
            discovery.errors.append(f"{_shown(path)}: {error.strerror or error}")
            continue
        if is_forced_out(path, resolver):
            continue
        if is_folder:
            _walk(path, resolver, discovery, add)
        else:
            add(path)
    return discovery


def _shown(path: str) -> str:
    """A path as reports name it: as given, without a leading ``./``."""
    return path[2:] if path.startswith("./") else path


def is_forced_out(path: str, resolver: Resolver) -> bool:
    """Whether ``force-exclude`` keeps out a path named explicitly: an exclude matches it or a folder above it in its project."""
    config = resolver.config_for(path)
    if not config.files.force_exclude:
        return False
    absolute = os.path.abspath(path)
    top = os.path.dirname(os.path.abspath(config.path)) if config.path else os.getcwd()
    while absolute.startswith(top + os.sep):
        if config.files.excludes(absolute):
            return True
        absolute = os.path.dirname(absolute)
    return False


def _walk(root: str, resolver: Resolver, discovery: Discovery, add: Callable[[str], None]) -> None:
    chain = _ancestor_ignores(root, resolver, discovery)
    stack = [(root, chain)]
    while stack:
        folder, chain = stack.pop()
        absolute_folder = os.path.abspath(folder)
        config = resolver.config_for(absolute_folder)
        if config.files.respect_gitignore:
            chain = chain + _ignore_specs(absolute_folder, _in_git_repository(absolute_folder), discovery)
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            discovery.errors.append(f"{_shown(folder)}: cannot read the folder: {error.strerror or error}")
            continue
        subfolders = []
        for entry in entries:
            absolute = os.path.join(absolute_folder, entry.name)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_folder = False
            if not is_folder and not entry.name.endswith(SOURCE_SUFFIXES):
                continue
            if config.files.excludes(absolute):
                continue
            if config.files.respect_gitignore and _ignored(chain, absolute, is_folder):
                continue
            if is_folder:
                subfolders.append(os.path.join(folder, entry.name))
            else:
                add(os.path.join(folder, entry.name))
        # Depth first, in name order: the stack takes them reversed.
        stack.extend((subfolder, chain) for subfolder in reversed(subfolders))


def _ignored(chain: _IgnoreChain, path: str, is_folder: bool) -> bool:
    """The deepest ignore file with a pattern for ``path`` decides (a ``!pattern`` re-includes)."""
    for base, spec in reversed(chain):
        relative = os.path.relpath(path, base).replace(os.sep, "/")
        if relative.startswith(".."):
            continue
        decision = spec.check_file(relative + "/" if is_folder else relative).include
        if decision is not None:
            return bool(decision)
    return False


def _ancestor_ignores(root: str, resolver: Resolver, discovery: Discovery) -> _IgnoreChain:
    """The ignore files above a walked folder, inside its git repository: they apply in it too."""
    absolute = os.path.abspath(root)
    repository = _in_git_repository(absolute)
    if repository is None or not resolver.config_for(absolute).files.respect_gitignore:
        return ()
    chain: list[tuple[str, Any]] = []
    exclude = os.path.join(repository, ".git", "info", "exclude")
    if os.path.isfile(exclude):
        spec = _read_spec(exclude, discovery)
        if spec is not None:
            chain.append((repository, spec))
    folders = []
    folder = os.path.dirname(absolute)
    while len(folder) >= len(repository) and folder.startswith(repository):
        folders.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in reversed(folders):
        chain.extend(_ignore_specs(folder, repository, discovery))
    if _ignored(tuple(chain), absolute, True):
        return ()  # a folder named explicitly is checked, as a file named explicitly is: its own ignore files still apply
    return tuple(chain)


def _ignore_specs(folder: str, repository: str | None, discovery: Discovery) -> _IgnoreChain:
    specs = []
    for name in IGNORE_FILES:
        if name == ".gitignore" and repository is None:
            continue  # as git (and Ruff): a .gitignore outside a repository means nothing
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            spec = _read_spec(path, discovery)
            if spec is not None:
                specs.append((folder, spec))
    return tuple(specs)


def _read_spec(path: str, discovery: Discovery) -> Any:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            lines = handle.read().splitlines()
    except OSError as error:
        discovery.errors.append(f"{_shown(path)}: cannot read: {error.strerror or error}")
        return None
    return ignore_spec(lines)


def ignore_spec(lines: list[str]) -> Any:
    """The patterns of an ignore file, compiled: what ``pathspec.GitIgnoreSpec.from_lines`` makes of them.

    Most ignore files hold only plain lines (``build/``, ``*.egg-info/``, ``/docs/_build``: names, ``*`` and ``/``),
    which :class:`_PlainPatterns` matches itself; importing pathspec is a tenth of a check's time on a small project
    (17 ms: it imports dataclasses, inspect and typing_extensions), so only a file with other lines pays for it."""
    plain = _PlainPatterns.of(lines)
    if plain is not None:
        return plain
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


class _Decision:
    def __init__(self, include: bool | None) -> None:
        self.include = include


class _PlainPatterns:
    """Gitignore patterns made only of names, ``*`` within a name, and ``/`` (no ``!``, ``**``, ``?``, ``[``, ``\\``,
    spaces, or a segment that is ``*``, ``.`` or ``..`` alone): git's rules for them are short. A pattern without a
    ``/`` but a trailing one matches at any depth, one with a ``/`` from the ignore file's folder; a trailing ``/``
    matches folders only (a folder's path is given with a trailing ``/``), and a pattern matches what is inside what
    it matches. With no ``!``, a path is ignored when any pattern matches it."""

    _LINE = re.compile(r"/?[\w.-]*(?:\*[\w.-]*)*(?:/[\w.-]*(?:\*[\w.-]*)*)*/?", re.ASCII)
    _SEGMENT_ALONE = frozenset({"*", ".", ".."})

    def __init__(self, pattern: re.Pattern[str] | None) -> None:
        self._pattern = pattern

    @classmethod
    def of(cls, lines: list[str]) -> _PlainPatterns | None:
        """The patterns of ``lines``, or None where a line is not plain."""
        alternatives = []
        for line in lines:
            if not line or line.startswith("#"):
                continue
            if cls._LINE.fullmatch(line) is None or "**" in line:
                return None
            folder_only = line.endswith("/")
            body = line[:-1] if folder_only else line
            anchored = "/" in body
            body = body[1:] if body.startswith("/") else body
            segments = body.split("/")
            if any(not segment or segment in cls._SEGMENT_ALONE for segment in segments):
                return None
            regex = "/".join("[^/]*".join(re.escape(part) for part in segment.split("*")) for segment in segments)
            alternatives.append(("" if anchored else "(?:.+/)?") + regex + ("/" if folder_only else "(?:/|$)"))
        return cls(re.compile("|".join(f"(?:{alternative})" for alternative in alternatives)) if alternatives else None)

    def check_file(self, path: str) -> _Decision:
        return _Decision(True if self._pattern is not None and self._pattern.match(path) is not None else None)


_REPOSITORIES: dict[str, str | None] = {}


def _in_git_repository(folder: str) -> str | None:
    """The root of the git repository holding ``folder`` (a folder with ``.git``), or None."""
    if folder in _REPOSITORIES:
        return _REPOSITORIES[folder]
    parent = os.path.dirname(folder)
    if os.path.exists(os.path.join(folder, ".git")):
        root: str | None = folder
    elif parent == folder:
        root = None
    else:
        root = _in_git_repository(parent)
    _REPOSITORIES[folder] = root
    return root
