"""Settings shared by every face: which codes are enabled, fix style, per-file ignores."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from typing import NamedTuple

FIX_STYLES = ("detach-cpu", "force")


class ConfigError(Exception):
    """Invalid configuration; the message names the file or option."""


class Settings(NamedTuple):
    select: tuple[str, ...] = ()  # empty: every default-on rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fix_style: str = "detach-cpu"
    target_torch: str | None = None

    def enabled_codes(self, codes: Iterable[tuple[str, bool]]) -> frozenset[str]:
        """The codes that run, given (code, on-by-default) pairs.

        As in flake8 and Ruff the most specific matching prefix wins between
        select and ignore. Opt-in rules run only when selected by their full code
        or by ``ALL``, so ``--select TCV`` keeps them off.
        """
        enabled = set()
        for code, default_on in codes:
            selected = _longest_match(code, (*self.select, *self.extend_select))
            if not self.select and default_on:
                selected = max(selected, 0)
            if selected < 0 or (not default_on and selected not in (len(code), 3.5)):
                continue
            if selected > _longest_match(code, self.ignore):
                enabled.add(code)
        return frozenset(enabled)

    def ignored_for(self, path: str) -> tuple[str, ...]:
        normalized = path.replace(os.sep, "/")
        if normalized.startswith("./"):
            normalized = normalized[2:]
        ignored: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if fnmatch.fnmatch(normalized, pattern) or fnmatch.fnmatch(os.path.basename(normalized), pattern):
                ignored.extend(codes)
        return tuple(ignored)


def _longest_match(code: str, prefixes: Sequence[str]) -> float:
    """Length of the longest prefix matching ``code`` (``ALL`` counts as 3.5), -1 if none."""
    best: float = -1
    for prefix in prefixes:
        if prefix == "ALL":
            best = max(best, 3.5)
        elif code.startswith(prefix):
            best = max(best, len(prefix))
    return best


def split_codes(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = value.replace(",", " ").split() if isinstance(value, str) else [str(v).strip() for v in value]
    return tuple(item.upper() for item in items if item)


def load_pyproject(path: str) -> dict[str, object]:
    """The ``[tool.tensorconv]`` table of a pyproject.toml (empty when absent)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError(f"{path}: reading pyproject.toml needs Python 3.11+ or the 'tomli' package") from None
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: {error}") from None
    table = data.get("tool", {}).get("tensorconv", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.tensorconv] must be a table")
    return table


def find_pyproject(start: str) -> str | None:
    directory = os.path.abspath(start)
    if not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


_KNOWN_KEYS = {"select", "extend-select", "ignore", "per-file-ignores", "fix-style", "target-torch"}


def settings_from_table(table: dict[str, object], origin: str) -> Settings:
    unknown = set(table) - _KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{origin}: unknown option(s) in [tool.tensorconv]: {', '.join(sorted(unknown))}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{origin}: per-file-ignores must be a table of glob = [codes]")
    fix_style = str(table.get("fix-style", "detach-cpu"))
    if fix_style not in FIX_STYLES:
        raise ConfigError(f"{origin}: fix-style must be one of {', '.join(FIX_STYLES)}, not {fix_style!r}")
    target = table.get("target-torch")
    return Settings(
        select=split_codes(table.get("select")),  # type: ignore[arg-type]
        extend_select=split_codes(table.get("extend-select")),  # type: ignore[arg-type]
        ignore=split_codes(table.get("ignore")),  # type: ignore[arg-type]
        per_file_ignores=tuple((str(glob), split_codes(codes)) for glob, codes in per_file.items()),  # type: ignore[arg-type]
        fix_style=fix_style,
        target_torch=str(target) if target is not None else None,
    )
