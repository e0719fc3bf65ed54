"""What the language server asks of the engine, for one document's text; no LSP in here.

The server keeps no findings: it lints the text it holds, and code actions work from the
data its diagnostics carry, or from the text again (noqa, fix-all).
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from flake8_tensorconv.config import ConfigError, Settings, find_config, load_config
from flake8_tensorconv.engine import ParseError, fix_source, lint_source, select_rules
from flake8_tensorconv.findings import Edit, Finding, Position
from flake8_tensorconv.incremental import IncrementalLinter
from flake8_tensorconv.source import Source

if TYPE_CHECKING:
    from flake8_tensorconv.notebook import CodeCell

UNPARSABLE = "TCV001"
INTERNAL_ERROR = "TCV002"
# The engine's noqa syntax, with the codes list as a group to merge a new code into.
_NOQA = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


class DocumentConfig(NamedTuple):
    """The settings for one document and where they come from."""

    settings: Settings
    pyproject: str | None  # the config file (pyproject.toml or .tensorconv.toml); None: the defaults apply
    error: str | None = None  # the config file is invalid: the defaults apply, the server says why

    def relative(self, path: str | None) -> str:
        """The path that per-file-ignores globs match (the settings know the config's folder they are relative to)."""
        return os.path.abspath(path) if path else ""


class ConfigStore:
    """The nearest config file's settings (as the CLI finds it), read once until :meth:`forget`."""

    def __init__(self) -> None:
        self._by_pyproject: dict[str, DocumentConfig] = {}

    def for_path(self, path: str | None) -> DocumentConfig:
        pyproject = find_config(os.path.dirname(path)) if path else None
        if pyproject is None:
            return DocumentConfig(Settings(), None)
        if pyproject not in self._by_pyproject:
            try:
                config = DocumentConfig(load_config(pyproject).settings, pyproject)
            except ConfigError as error:
                config = DocumentConfig(Settings(), pyproject, f"{error}; using the default settings until it is fixed")
            self._by_pyproject[pyproject] = config
        return self._by_pyproject[pyproject]

    def forget(self) -> None:
        """A pyproject.toml changed (or appeared): read them again when next asked."""
        self._by_pyproject.clear()


def lint(text: str, path: str | None, config: DocumentConfig, linter: IncrementalLinter | None = None) -> list[Finding]:
    """The findings the CLI would report for this text; a file that does not parse gives TCV001 (if enabled).

    ``linter``: the document's :class:`IncrementalLinter`, which analyses again only what changed since its last text.
    ``path``: the document's file; a would-be finding may ask about the other modules of its package, read as they
    are on disk (an unsaved buffer of another module counts as its saved text).
    """
    relative = config.relative(path)
    rules = select_rules(config.settings, relative)
    try:
        if linter is not None:
            return linter.lint(Source(text=text), config.settings, rules, path=path)
        return lint_source(Source(text=text), config.settings, rules, path=path)
    except ParseError as error:
        if not _enabled(UNPARSABLE, config, relative):
            return []
        return [_tool_finding(UNPARSABLE, str(error), error.position)]


def internal_error(error: Exception, path: str | None, config: DocumentConfig) -> list[Finding]:
    """TCV002 at the top of a document that the engine failed on (if enabled)."""
    if not _enabled(INTERNAL_ERROR, config, config.relative(path)):
        return []
    return [_tool_finding(INTERNAL_ERROR, f"{type(error).__name__}: {error}", Position(1, 0))]


def _enabled(code: str, config: DocumentConfig, relative: str) -> bool:
    settings = config.settings
    return code in settings.enabled_codes([(code, True)]) and not any(code.startswith(p) for p in settings.ignored_for(relative))


def _tool_finding(code: str, reason: str, position: Position) -> Finding:
    from flake8_tensorconv.rules import RULES_BY_CODE

    return Finding(code=code, message=RULES_BY_CODE[code].message.format(reason=reason), start=position, end=position)


def fix_all(text: str, path: str | None, config: DocumentConfig) -> Edit | None:
    """The safe fixes of the whole document as one edit (the changed span only), or None."""
    try:
        result = fix_source(Source(text=text), config.settings, unsafe=False, rules=select_rules(config.settings, config.relative(path)), path=path)
    except ParseError:
        return None
    if result.text == text:
        return None
    return minimal_edit(text, result.text)


def minimal_edit(before: str, after: str) -> Edit:
    """One edit that turns ``before`` into ``after``, without their common start and end."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and before[-1 - suffix] == after[-1 - suffix]:
        suffix += 1
    source = Source(text=before)
    return Edit(position_of(source, prefix), position_of(source, len(before) - suffix), after[prefix : len(after) - suffix])


def position_of(source: Source, offset: int) -> Position:
    line_index = bisect_right(source.line_starts, offset) - 1
    return Position(line_index + 1, offset - source.line_starts[line_index])


def noqa_edit(text: str, line: int, code: str) -> Edit | None:
    """Adds ``# noqa: CODE`` to a 1-based line, or merges CODE into its ``# noqa: ...``.

    None when the code is already there, or when the line ends inside a string or with a
    backslash continuation (a comment cannot be added there).
    """
    source = Source(text=text)
    current = source.line(line)
    match = _NOQA.search(current)
    if match is not None:
        codes = match.group("codes")
        if codes is None or code in re.split(r"[,\s]+", codes.upper()):
            return None
        end = Position(line, match.end("codes"))
        return Edit(end, end, f", {code}")
    if current.rstrip().endswith("\\") or _ends_inside_string(source, line):
        return None
    end = Position(line, len(current))
    return Edit(end, end, f"{'  ' if current.strip() else ''}# noqa: {code}")


def _ends_inside_string(source: Source, line: int) -> bool:
    import io
    import tokenize

    try:
        for token in tokenize.generate_tokens(io.StringIO(source.normalized).readline):
            if token.start[0] > line:
                return False
            if token.start[0] <= line < token.end[0] and token.type not in (tokenize.NL, tokenize.NEWLINE):
                return True
    except (tokenize.TokenError, SyntaxError):
        return False
    return False


def lint_notebook(cells: Sequence[CodeCell], path: str | None, config: DocumentConfig) -> list[Finding]:
    """Findings for a notebook's code cells (``Finding.cell`` says which, positions are relative to it)."""
    from flake8_tensorconv.notebook import CellParseError, lint_cells

    relative = config.relative(path)
    try:
        findings = lint_cells(cells, config.settings, select_rules(config.settings, relative))
    except CellParseError as error:
        if not _enabled(UNPARSABLE, config, relative):
            return []
        return [_tool_finding(UNPARSABLE, str(error), error.position)._replace(cell=error.cell)]
    if _enabled(UNPARSABLE, config, relative):
        return findings
    return [finding for finding in findings if finding.code != UNPARSABLE]  # a cell that is not Python


def fix_notebook(cells: Sequence[CodeCell], path: str | None, config: DocumentConfig) -> dict[int, Edit]:
    """The safe fixes of a notebook's code cells: one edit per changed cell, by cell index."""
    from flake8_tensorconv.notebook import fix_cells

    try:
        result = fix_cells(cells, config.settings, unsafe=False, rules=select_rules(config.settings, config.relative(path)))
    except ParseError:
        return {}
    return {before.index: minimal_edit(before.text, after.text) for before, after in result.changed}
