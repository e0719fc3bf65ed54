"""Settings shared by every face, and where they come from.

Each checked file takes its settings from the nearest configuration above it: a
``.tensorconv.toml`` (top-level keys) or a ``pyproject.toml`` with a ``[tool.tensorconv]``
table; in one folder ``.tensorconv.toml`` wins, as ``ruff.toml`` does over
``pyproject.toml``. Globs in ``per-file-ignores`` and ``exclude`` are relative to the folder
of the file that states them. Command-line options apply on top of every file's settings;
``--config`` makes one file apply everywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

FIX_STYLES = ("detach-cpu", "force")
CONFIG_FILES = (".tensorconv.toml", "pyproject.toml")  # in order of precedence within a folder

# Folders and files that hold no project sources: Ruff's default excludes, and our cache.
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints", ".mypy_cache",
    ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype", ".ruff_cache", ".svn", ".tox", ".venv",
    ".vscode", "__pypackages__", "_build", "buck-out", "build", "dist", "node_modules", "site-packages",
    "venv", "__pycache__", ".tensorconv_cache",
)


class ConfigError(Exception):
    """Invalid configuration; the message names the file or option."""


class Settings(NamedTuple):
    """What decides a file's findings. Small, hashable and picklable: runs cache by it and fork workers with it."""

    select: tuple[str, ...] = ()  # empty: every default-on rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    fix_style: str = "detach-cpu"
    target_torch: tuple[int, int] | None = None
    root: str = ""  # the folder that per-file-ignores globs are relative to ("": the current folder)

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
        """The code prefixes that ``per-file-ignores`` switch off for ``path``."""
        if not self.per_file_ignores:
            return ()
        absolute = os.path.abspath(path)
        root = self.root or os.getcwd()
        ignored: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if glob_matches(pattern, root, absolute):
                ignored.extend(codes)
        return tuple(ignored)


class FileSettings(NamedTuple):
    """Which files a run looks at, as one configuration says."""

    # (folder the glob is relative to, glob); the defaults apply at any depth.
    exclude: tuple[tuple[str, str], ...] = tuple(("", glob) for glob in DEFAULT_EXCLUDE)
    extend_exclude: tuple[tuple[str, str], ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False

    def excludes(self, path: str) -> bool:
        """Whether ``path`` (absolute) matches an exclude glob: by its name, or by its path from the glob's folder."""
        names, name_pattern, by_root = _exclude_matcher((*self.exclude, *self.extend_exclude))
        name = os.path.basename(path)
        if name in names or (name_pattern is not None and name_pattern.fullmatch(name)):
            return True
        for root, pattern in by_root:
            relative = os.path.relpath(path, root)
            if not relative.startswith("..") and pattern.fullmatch(relative.replace(os.sep, "/")):
                return True
        return False


_WILDCARDS = re.compile(r"[*?\[]")


@lru_cache(maxsize=64)
def _exclude_matcher(
    globs: tuple[tuple[str, str], ...],
) -> tuple[frozenset[str], re.Pattern[str] | None, tuple[tuple[str, re.Pattern[str]], ...]]:
    """What a walk asks of every entry, prepared once: the plain names (most globs, the defaults), one
    regular expression for the other globs against a name, and one per folder for paths."""
    names = frozenset(glob.rstrip("/") for _, glob in globs if not _WILDCARDS.search(glob) and "/" not in glob.rstrip("/"))
    patterns = [_glob_regex(glob).pattern for _, glob in globs if glob.rstrip("/") not in names]
    roots: dict[str, list[str]] = {}
    for root, glob in globs:
        if root and glob.rstrip("/") not in names:
            roots.setdefault(root, []).append(_glob_regex(glob).pattern)
    name_pattern = re.compile("|".join(f"(?:{pattern})" for pattern in patterns)) if patterns else None
    return names, name_pattern, tuple((root, re.compile("|".join(f"(?:{p})" for p in items))) for root, items in roots.items())


class Config(NamedTuple):
    """One configuration file's settings (``path`` None: the defaults, no file applies)."""

    path: str | None
    settings: Settings
    files: FileSettings


class Overrides(NamedTuple):
    """What the command line says; None (or empty) leaves the file's value."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fix_style: str | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool | None = None
    force_exclude: bool | None = None

    def apply(self, config: Config) -> Config:
        settings, files = config.settings, config.files
        cwd = os.getcwd()  # globs given on the command line are relative to where it runs
        settings = settings._replace(
            select=self.select if self.select is not None else settings.select,
            extend_select=settings.extend_select + self.extend_select,
            ignore=settings.ignore + self.ignore,
            fix_style=self.fix_style or settings.fix_style,
        )
        files = files._replace(
            exclude=files.exclude if self.exclude is None else tuple((cwd, glob) for glob in self.exclude),
            extend_exclude=files.extend_exclude + tuple((cwd, glob) for glob in self.extend_exclude),
            respect_gitignore=files.respect_gitignore if self.respect_gitignore is None else self.respect_gitignore,
            force_exclude=files.force_exclude if self.force_exclude is None else self.force_exclude,
        )
        validate(settings, config.path or "the command line")
        return Config(config.path, settings, files)


class Resolver:
    """The configuration of each path: the nearest config file above it (or ``--config``), with the command line on top."""

    def __init__(self, overrides: Overrides | None = None, config_path: str | None = None) -> None:
        self.overrides = overrides or Overrides()
        check_selectors((*(self.overrides.select or ()), *self.overrides.extend_select, *self.overrides.ignore), "command line")
        self._forced: Config | None = None
        if config_path is not None:
            if not os.path.isfile(config_path):
                raise ConfigError(f"{config_path}: no such file")
            self._forced = self.overrides.apply(load_config(config_path))
        self._by_folder: dict[str, Config] = {}

    def config_for(self, path: str) -> Config:
        """The configuration of a file, or of the entries of a folder when given the folder."""
        if self._forced is not None:
            return self._forced
        absolute = os.path.abspath(path)
        return self._folder_config(absolute if os.path.isdir(absolute) else os.path.dirname(absolute))

    def _folder_config(self, folder: str) -> Config:
        config = self._by_folder.get(folder)
        if config is None:
            own = _config_file_in(folder)
            parent = os.path.dirname(folder)
            if own is not None:
                config = self.overrides.apply(load_config(own))
            elif parent == folder:
                config = self.overrides.apply(Config(None, Settings(), FileSettings()))
            else:
                config = self._folder_config(parent)
            self._by_folder[folder] = config
        return config

    def settings_for(self, path: str) -> Settings:
        """The settings of a file (asked for every file of a run: no stat to tell a folder)."""
        if self._forced is not None:
            return self._forced.settings
        return self._folder_config(os.path.dirname(os.path.abspath(path))).settings


def glob_matches(glob: str, root: str, path: str) -> bool:
    """Ruff's exclude semantics: the glob matches ``path``'s name, or its path from ``root`` ("" roots match names only).

    ``*`` crosses folders, as in Ruff's globs: ``tests/*`` covers ``tests/a/b.py``.
    """
    name = os.path.basename(path)
    if _glob_regex(glob).fullmatch(name):
        return True
    if not root:
        return False
    relative = os.path.relpath(path, root)
    if relative.startswith(".."):
        return False
    return _glob_regex(glob).fullmatch(relative.replace(os.sep, "/")) is not None


@lru_cache(maxsize=512)
def _glob_regex(glob: str) -> re.Pattern[str]:
    glob = glob.replace(os.sep, "/")
    if glob.startswith("./"):
        glob = glob[2:]
    glob = glob.rstrip("/") or glob  # `build/` names the folder
    parts = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if glob.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
            continue
        if char == "*":
            parts.append(".*")
        elif char == "?":
            parts.append("[^/]")
        elif char == "[":
            end = glob.find("]", index + 2)
            if end < 0:
                parts.append(re.escape(char))
            else:
                body = glob[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                parts.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
                index = end
        else:
            parts.append(re.escape(char))
        index += 1
    return re.compile("".join(parts))


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


_VERSION = re.compile(r"(\d+)(?:\.(\d+))?(?:\.\d+)*(?:(?:a|b|c|rc|alpha|beta|pre|preview)\.?\d*)?(?:\.?post\d*)?(?:\.?dev\d*)?(?:\+[0-9A-Za-z.]+)?")


def parse_torch_version(text: object, origin: str, key: str = "target-torch") -> tuple[int, int]:
    """``"2.1"``, ``"2.1.0+cu121"``, ``"1.12rc1"`` -> (major, minor); anything else is a ConfigError naming ``origin`` and ``key``."""
    if not isinstance(text, str):
        # A TOML float would read 1.10 as 1.1.
        raise ConfigError(f"{origin}: {key} must be a string such as \"2.1\", not {text!r}")
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise ConfigError(f"{origin}: {key} = {text!r} is not a torch version (write it like \"2.1\" or \"1.13.1\")")
    return int(match.group(1)), int(match.group(2) or 0)


def format_version(version: tuple[int, int] | None) -> str | None:
    return None if version is None else f"{version[0]}.{version[1]}"


def check_selectors(prefixes: Iterable[str], origin: str) -> None:
    from flake8_tensorconv.rules import RULES_BY_CODE

    for prefix in prefixes:
        if prefix != "ALL" and not any(code.startswith(prefix) for code in RULES_BY_CODE):
            raise ConfigError(f"{origin}: unknown rule selector {prefix!r} (codes look like TCV101; `tensorconv rule --all` lists them)")


def validate(settings: Settings, origin: str) -> None:
    """The combination of options is possible (each option was checked where it was read)."""
    if settings.fix_style == "force" and settings.target_torch and settings.target_torch < (1, 13):
        raise ConfigError(
            f"{origin}: fix-style 'force' needs torch 1.13+ (`numpy(force=True)`), but target-torch is {format_version(settings.target_torch)}"
        )


def _toml():  # type: ignore[no-untyped-def]
    try:
        import tomllib
    except ModuleNotFoundError:  # Python < 3.11
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise ConfigError("reading TOML configuration needs Python 3.11+ or the 'tomli' package") from None
    return tomllib


def _read_toml(path: str) -> dict[str, object]:
    tomllib = _toml()
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)  # type: ignore[no-any-return]
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: {error}") from None


def _table(path: str) -> dict[str, object] | None:
    """The settings table of a config file; None for a pyproject.toml without ``[tool.tensorconv]``."""
    data = _read_toml(path)
    if os.path.basename(path) != "pyproject.toml":
        return data
    tool = data.get("tool")
    if not isinstance(tool, dict) or "tensorconv" not in tool:
        return None
    if not isinstance(tool["tensorconv"], dict):
        raise ConfigError(f"{path}: [tool.tensorconv] must be a table")
    return tool["tensorconv"]  # type: ignore[no-any-return]


@lru_cache(maxsize=256)
def _has_table(path: str) -> bool:
    if os.path.basename(path) != "pyproject.toml":
        return True
    try:
        with open(path, "rb") as handle:
            head = handle.read()
    except OSError:
        return True  # reading it reports why
    return b"tensorconv" in head and _table(path) is not None


def _config_file_in(folder: str) -> str | None:
    for name in CONFIG_FILES:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate) and _has_table(candidate):
            return candidate
    return None


def find_config(start: str) -> str | None:
    """The nearest ``.tensorconv.toml``, or ``pyproject.toml`` with a ``[tool.tensorconv]`` table, in ``start`` or above."""
    directory = os.path.abspath(start)
    if not os.path.isdir(directory):
        directory = os.path.dirname(directory)
    while True:
        found = _config_file_in(directory)
        if found is not None:
            return found
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def find_pyproject(start: str) -> str | None:
    """The nearest pyproject.toml in ``start`` or above, with or without our table (the project root's marker)."""
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


def load_config(path: str) -> Config:
    """A configuration file's settings; a pyproject.toml without our table gives the defaults."""
    table = _table(path) or {}
    return Config(path, settings_from_table(table, path), files_from_table(table, path))


_KNOWN_KEYS = {
    "select", "extend-select", "ignore", "per-file-ignores", "fix-style", "target-torch",
    "exclude", "extend-exclude", "respect-gitignore", "force-exclude",
}


def _section(origin: str) -> str:
    return " in [tool.tensorconv]" if os.path.basename(origin) == "pyproject.toml" else ""


def settings_from_table(table: dict[str, object], origin: str) -> Settings:
    unknown = set(table) - _KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{origin}: unknown option(s){_section(origin)}: {', '.join(sorted(unknown))}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{origin}: per-file-ignores must be a table of glob = [codes]")
    fix_style = str(table.get("fix-style", "detach-cpu"))
    if fix_style not in FIX_STYLES:
        raise ConfigError(f"{origin}: fix-style must be one of {', '.join(FIX_STYLES)}, not {fix_style!r}")
    target = table.get("target-torch")
    settings = Settings(
        select=_codes(table, "select", origin),
        extend_select=_codes(table, "extend-select", origin),
        ignore=_codes(table, "ignore", origin),
        per_file_ignores=tuple((str(glob), _codes(per_file, glob, origin)) for glob in per_file),
        fix_style=fix_style,
        target_torch=parse_torch_version(target, origin) if target is not None else None,
        root=os.path.dirname(os.path.abspath(origin)),
    )
    check_selectors((*settings.select, *settings.extend_select, *settings.ignore, *(c for _, codes in settings.per_file_ignores for c in codes)), origin)
    validate(settings, origin)
    return settings


def files_from_table(table: dict[str, object], origin: str) -> FileSettings:
    root = os.path.dirname(os.path.abspath(origin))
    defaults = FileSettings()
    exclude = _globs(table, "exclude", origin)
    return FileSettings(
        exclude=defaults.exclude if exclude is None else tuple((root, glob) for glob in exclude),
        extend_exclude=tuple((root, glob) for glob in _globs(table, "extend-exclude", origin) or ()),
        respect_gitignore=_flag(table, "respect-gitignore", origin, defaults.respect_gitignore),
        force_exclude=_flag(table, "force-exclude", origin, defaults.force_exclude),
    )


def _codes(table: dict[str, object], key: str, origin: str) -> tuple[str, ...]:
    value = table.get(key)
    if value is not None and not isinstance(value, (str, list)):
        raise ConfigError(f"{origin}: {key} must be a list of codes such as [\"TCV1\"], not {value!r}")
    return split_codes(value)  # type: ignore[arg-type]


def _globs(table: dict[str, object], key: str, origin: str) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{origin}: {key} must be a list of globs such as [\"generated/*\"], not {value!r}")
    return tuple(value)


def _flag(table: dict[str, object], key: str, origin: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{origin}: {key} must be true or false, not {value!r}")
    return value


def describe(config: Config, path: str) -> str:
    """``--show-settings``: the settings that apply to ``path``, in the configuration's own words, and their source."""
    from flake8_tensorconv.rules import ALL_RULES

    settings, files = config.settings, config.files

    def strings(items: Iterable[str]) -> str:
        return "[" + ", ".join(f'"{item}"' for item in items) + "]"

    def globs(items: Sequence[tuple[str, str]]) -> str:
        roots = sorted({root for root, _ in items if root})
        where = f" (globs relative to {', '.join(roots)})" if roots else ""
        return strings(glob for _, glob in items) + where

    per_file = ", ".join(f'"{glob}" = {strings(codes)}' for glob, codes in settings.per_file_ignores)
    ignored = settings.ignored_for(path)
    enabled = sorted(
        code
        for code in settings.enabled_codes((rule.code, rule.default_enabled) for rule in ALL_RULES)
        if not any(code.startswith(prefix) for prefix in ignored)
    )
    lines = [
        f"Resolved settings for: {path}",
        f"Settings path: {config.path or '(none: defaults and the command line)'}",
        f"select = {strings(settings.select)}",
        f"extend-select = {strings(settings.extend_select)}",
        f"ignore = {strings(settings.ignore)}",
        f"per-file-ignores = {{ {per_file} }}" + (f" (globs relative to {settings.root})" if per_file else ""),
        f'fix-style = "{settings.fix_style}"',
        f"target-torch = {_quoted(format_version(settings.target_torch))}",
        f"exclude = {globs(files.exclude)}",
        f"extend-exclude = {globs(files.extend_exclude)}",
        f"respect-gitignore = {str(files.respect_gitignore).lower()}",
        f"force-exclude = {str(files.force_exclude).lower()}",
        f"# rules that run on this file: {', '.join(enabled) or 'none'}",
    ]
    return "".join(line + "\n" for line in lines)


def _quoted(value: str | None) -> str:
    return "(not set)" if value is None else f'"{value}"'
