"""Which files a run looks at."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

# Folders that hold no project sources (as Ruff's default excludes).
EXCLUDED_DIRECTORIES = frozenset(
    {
        ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".mypy_cache", ".nox", ".pants.d",
        ".pytype", ".ruff_cache", ".svn", ".tox", ".venv", "__pypackages__", "_build", "buck-out",
        "dist", "node_modules", "venv", "__pycache__", ".tensorconv_cache", ".ipynb_checkpoints",
    }
)


class Discovery:
    def __init__(self) -> None:
        self.files: list[str] = []
        self.missing: list[str] = []


def discover(paths: Iterable[str]) -> Discovery:
    """Python files under ``paths``: folders are searched for ``*.py`` and ``*.ipynb``; files named explicitly are always taken."""
    discovery = Discovery()
    seen: set[str] = set()
    for path in paths:
        if os.path.isfile(path):
            candidates: Iterable[str] = [path]
        elif os.path.isdir(path):
            candidates = _walk(path)
        else:
            discovery.missing.append(path)
            continue
        for candidate in candidates:
            key = os.path.normpath(candidate)
            if key not in seen:
                seen.add(key)
                discovery.files.append(candidate)
    return discovery


def _walk(root: str) -> Iterator[str]:
    for directory, folders, names in os.walk(root):
        folders[:] = sorted(f for f in folders if f not in EXCLUDED_DIRECTORIES and not f.endswith(".egg-info"))
        for name in sorted(names):
            if name.endswith((".py", ".ipynb")):
                path = os.path.join(directory, name)
                yield path[2:] if path.startswith("./") else path
