"""Findings of earlier runs, so that a file whose bytes have not changed is not linted again.

The cache lives in ``.tensorconv_cache/`` in the project root (the folder of the
configuration in use for the current folder, else of the nearest ``pyproject.toml``, else the
current folder), tagged with ``CACHEDIR.TAG`` and
ignored by git. It holds one file per *fingerprint*: the tool's version and source
code, the Python version and the settings. So a change of any of them starts a new
file, and an entry inside it is used only when the file's content hash and the
codes enabled for that path are those the findings were made with, and every other file
of the package that a finding's question read (the callers of a method, the package's list of
files) still has the content hash it had: the cache can make a run faster, never different.

A run writes its new entries merged into the cache file as it is on disk at that
moment, through a temporary file that replaces it in one step: concurrent runs see
the old file or the new one, never half of one. Two runs that write at the same
moment may lose one's new entries, which later comes back as a miss; an unreadable
or malformed cache file or entry is a miss too. The files of the most recent
fingerprints are kept, older ones (another version, edited rules) are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from flake8_tensorconv import __version__
from flake8_tensorconv.config import Settings, find_config, find_pyproject
from flake8_tensorconv.findings import Applicability, Edit, Finding, Fix, Position, Related

CACHE_DIRECTORY = ".tensorconv_cache"
_FORMAT = 4
# Cache files kept: one per fingerprint, so a few settings used in turn all stay cached.
_KEPT_FILES = 8
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by tensorconv.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def project_root(config: str | None = None, start: str | None = None) -> str:
    """The folder of the configuration in use (``config``, else the nearest one), else of the nearest pyproject.toml, else ``start``."""
    start = start or os.getcwd()
    marker = config or find_config(start) or find_pyproject(start)
    return os.path.dirname(os.path.abspath(marker)) if marker else os.path.abspath(start)


def content_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@lru_cache(maxsize=64)
def codes_key(codes: frozenset[str]) -> str:
    """A short name for a set of enabled codes (per-file ignores make it differ between paths)."""
    return hashlib.blake2b(",".join(sorted(codes)).encode(), digest_size=6).hexdigest()


class Cache:
    """Findings by absolute path, valid for one content digest and one set of enabled codes."""

    def __init__(self, root: str, settings: Settings) -> None:
        self.directory = os.path.join(root, CACHE_DIRECTORY)
        self.path = os.path.join(self.directory, f"{fingerprint(settings)}.json")
        self._entries: dict[str, Any] = self._load()
        self._added: dict[str, Any] = {}
        # The dependencies' content hashes as they are on disk now, worked out once a run.
        self._current: dict[str, str | None] = {}
        self.write_error: str | None = None  # why save() could not write, for the run to report

    def get(self, path: str, digest: str, codes: str) -> list[Finding] | None:
        entry = self._entries.get(os.path.abspath(path))
        try:
            if entry is None or entry[0] != digest or entry[1] != codes:
                return None
            if not all(self._unchanged(dependency, hash_) for dependency, hash_ in entry[3].items()):
                return None  # another file of the package the findings were drawn from changed
            return [_finding(item) for item in entry[2]]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            return None  # a malformed entry: lint the file again

    def _unchanged(self, dependency: str, digest: str) -> bool:
        if dependency not in self._current:
            from flake8_tensorconv.inference.package import dependency_digest

            self._current[dependency] = dependency_digest(dependency)
        return self._current[dependency] == digest

    def put(self, path: str, digest: str, codes: str, findings: Iterable[Finding], dependencies: dict[str, str] | None = None) -> None:
        entry = [digest, codes, [_encode(finding) for finding in findings], dict(dependencies or {})]
        key = os.path.abspath(path)
        self._entries[key] = self._added[key] = entry

    def save(self) -> None:
        """Write what this run added, merged into what is on disk now (another run may have written since).

        A cache that cannot be written is not an error of the run: ``write_error`` says why.
        """
        if not self._added:
            return
        entries = {**self._load(), **self._added}
        # A name of our own (not mkstemp's, which is private to the user): the cache is shared like the project.
        temporary = f"{self.path}.{os.getpid()}-{os.urandom(4).hex()}.tmp"
        try:
            self._prepare_directory()
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as error:
            self.write_error = f"cannot write the cache in {self.directory}: {error.strerror or error}"
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"format": _FORMAT, "entries": entries}, handle, separators=(",", ":"))
            os.replace(temporary, self.path)
        except OSError as error:
            self.write_error = f"cannot write the cache in {self.directory}: {error.strerror or error}"
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        self._added.clear()
        self._remove_old_files()

    def _remove_old_files(self) -> None:
        try:
            files = [entry for entry in os.scandir(self.directory) if entry.name.endswith(".json") and entry.is_file()]
            files.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
            for entry in files[_KEPT_FILES:]:
                os.unlink(entry.path)
        except OSError:
            pass  # another run removed it first, or it is not ours to remove: it costs disk space, not results

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("entries"), dict):
            return {}
        return data["entries"]

    def _prepare_directory(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        for name, content in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", "# Created by tensorconv.\n*\n")):
            marker = os.path.join(self.directory, name)
            if not os.path.exists(marker):
                with open(marker, "w", encoding="utf-8") as handle:
                    handle.write(content)


def fingerprint(settings: Settings) -> str:
    """What, besides a file's bytes and enabled codes, its findings depend on."""
    parts = [str(_FORMAT), __version__, _source_fingerprint(), sys.implementation.cache_tag or sys.version, repr(settings)]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=12).hexdigest()


@lru_cache(maxsize=1)
def _source_fingerprint() -> str:
    """A hash of the linter's own code: an edited rule must not be answered from the cache."""
    package = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.blake2b(digest_size=16)
    for directory, folders, names in os.walk(package):
        folders[:] = sorted(folder for folder in folders if folder != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                digest.update(os.path.relpath(path, package).encode())
                with open(path, "rb") as handle:
                    digest.update(handle.read())
    return digest.hexdigest()


# Findings as plain JSON lists: [code, message, line, column, end line, end column, fix or null, cell or null, related],
# fix: [applicability, message, [[line, column, end line, end column, content], ...]],
# related: [[line, column, end line, end column, message, (path, where another module's)], ...].
def _encode(finding: Finding) -> list[Any]:
    fix = None
    if finding.fix is not None:
        edits = [[e.start.line, e.start.column, e.end.line, e.end.column, e.content] for e in finding.fix.edits]
        fix = [finding.fix.applicability.value, finding.fix.message, edits]
    related = [[r.start.line, r.start.column, r.end.line, r.end.column, r.message, *([r.path] if r.path else [])] for r in finding.related]
    return [
        finding.code, finding.message, finding.start.line, finding.start.column, finding.end.line, finding.end.column, fix, finding.cell, related
    ]


def _finding(item: list[Any]) -> Finding:
    code, message, line, column, end_line, end_column, fix, cell, related_items = item
    if not all(isinstance(value, int) for value in (line, column, end_line, end_column)) or not isinstance(cell, (int, type(None))):
        raise TypeError("position is not an int")
    decoded = None
    if fix is not None:
        applicability, fix_message, edits = fix
        decoded = Fix(
            applicability=Applicability(applicability),
            message=str(fix_message),
            edits=tuple(Edit(Position(a, b), Position(c, d), str(content)) for a, b, c, d, content in edits),
        )
    related = tuple(Related(Position(a, b), Position(c, d), str(text), *elsewhere) for a, b, c, d, text, *elsewhere in related_items)
    return Finding(
        code=str(code), message=str(message), start=Position(line, column), end=Position(end_line, end_column),
        fix=decoded, cell=cell, related=related,
    )
