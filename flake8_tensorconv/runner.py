"""Check files on disk: read, lint or fix, write back; in parallel, and from the cache, when asked."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple, Union

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import ParseError, RuleSet, fix_source, fixable, lint_source, needs_parse, select_rules
from flake8_tensorconv.findings import Finding, Position
from flake8_tensorconv.parallel import run_tasks
from flake8_tensorconv.source import Source, SourceError, decode, write_atomically

if TYPE_CHECKING:
    from flake8_tensorconv.cache import Cache
    from flake8_tensorconv.notebook import CodeCell, Notebook

UNPARSABLE = "TCV001"
NOTEBOOK_SUFFIX = ".ipynb"


class Mode(NamedTuple):
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes, report the diff, write nothing
    digest: bool = False  # hash what is checked, for the cache
    add_noqa: bool = False  # add a noqa comment with the codes to each reported line, instead of reporting
    fix_read_only: bool = False  # with fix or add_noqa: also rewrite files without write permission


# One Settings for every file, or the Settings of each path.
SettingsFor = Union[Settings, Callable[[str], Settings]]


class FileResult:
    def __init__(self, path: str, findings: list[Finding] | None = None, digest: str | None = None) -> None:
        self.path = path
        self.findings: list[Finding] = findings or []
        self.fixed = 0
        self.fixed_codes: dict[str, int] = {}  # code -> fixes applied, for --show-fixes
        self.noqa_added = 0
        self.warnings: list[str] = []  # said on stderr, naming the file; the run goes on
        self.dropped_fixes: list[Finding] = []
        self.diff = ""
        self.error: str | None = None  # the file could not be read, checked or written: said on stderr, exit 2
        # The content hash of the file that ``findings`` describe (after a fix was written), or
        # None where they describe no file on disk: they may then not be cached.
        self.digest = digest
        # Other files the findings were drawn from (path -> content hash): a cached result holds while they do.
        self.dependencies: dict[str, str] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FileResult) and vars(self) == vars(other)

    def __repr__(self) -> str:
        return f"FileResult({', '.join(f'{name}={value!r}' for name, value in vars(self).items())})"


def check_file(path: str, settings: Settings, mode: Mode) -> FileResult:
    result = FileResult(path=path)
    try:
        _check(path, settings, mode, result)
    except Exception as error:  # one broken file must not stop the run
        result.error = f"internal error: {type(error).__name__}: {error}"
    return result


def _check(path: str, settings: Settings, mode: Mode, result: FileResult) -> None:
    rules = select_rules(settings, path)
    unparsable_enabled = _unparsable_enabled(settings, path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        result.error = f"cannot read: {error.strerror or error}"
        return
    if mode.digest:
        result.digest = _digest(raw)
    if path.endswith(NOTEBOOK_SUFFIX):
        _check_notebook(path, raw, settings, mode, rules, unparsable_enabled, result)
        return
    try:
        source = decode(raw)
    except SourceError as error:
        if unparsable_enabled:
            result.findings.append(_unparsable(str(error), error.position))
        return
    if not needs_parse(source.text, rules):
        return
    try:
        new_text = check_source(source, path, settings, mode, result, rules)
        if new_text is None:
            return
        result.digest = None  # the findings are those of the new text
        if mode.diff:
            return
        if _refused(path, mode):  # what remains is what the file still has
            result.findings = lint_source(source, settings, rules, prefiltered=True, path=path, dependencies=result.dependencies)
            result.fixed, result.fixed_codes, result.noqa_added = 0, {}, 0
        _write(path, source.encode(new_text), mode, result)
    except ParseError as error:
        if unparsable_enabled:
            result.findings = [_unparsable(str(error), error.position)]


def check_source(
    source: Source, path: str, settings: Settings, mode: Mode, result: FileResult, rules: RuleSet | None = None, on_disk: bool = True
) -> str | None:
    """Lint, fix or add noqa comments to one text, filling ``result``; the new text when it changed. Raises ParseError.

    ``on_disk``: the text is the file ``path`` (not stdin named so), whose package a would-be finding may read."""
    rules = rules or select_rules(settings, path)
    package_path = path if on_disk else None
    if mode.fix or mode.diff:
        fixed = fix_source(source, settings, unsafe=mode.unsafe_fixes, rules=rules, path=package_path, dependencies=result.dependencies)
        result.findings = fixed.remaining
        result.fixed = len(fixed.applied)
        for finding in fixed.applied:
            result.fixed_codes[finding.code] = result.fixed_codes.get(finding.code, 0) + 1
        result.dropped_fixes = fixed.dropped
        if fixed.text == source.text:
            return None
        if mode.diff:
            result.diff = unified_diff(path, source.text, fixed.text)
        return fixed.text
    result.findings = lint_source(source, settings, rules, prefiltered=True, path=package_path, dependencies=result.dependencies)
    if mode.add_noqa and result.findings:
        from flake8_tensorconv.noqa import add_noqa

        added = add_noqa(source, result.findings)
        result.noqa_added = added.count
        result.warnings.extend(f"{path}:{line}: {reason}" for line, reason in added.skipped)
        result.findings = []
        return added.text if added.count else None
    return None


def check_stdin(raw: bytes, path: str, settings: Settings, mode: Mode) -> tuple[FileResult, bytes]:
    """Check text that came on stdin as if it were the file ``path``: the result, and the bytes to echo (fixed with ``--fix``)."""
    result = FileResult(path=path)
    rules = select_rules(settings, path)
    unparsable_enabled = _unparsable_enabled(settings, path)
    try:
        source = decode(raw)
    except SourceError as error:
        if unparsable_enabled:
            result.findings.append(_unparsable(str(error), error.position))
        return result, raw
    if not needs_parse(source.text, rules):
        return result, raw
    try:
        new_text = check_source(source, path, settings, mode._replace(add_noqa=False), result, rules, on_disk=False)
    except ParseError as error:
        if unparsable_enabled:
            result.findings = [_unparsable(str(error), error.position)]
        return result, raw
    return result, raw if new_text is None else source.encode(new_text)


def _unparsable_enabled(settings: Settings, path: str) -> bool:
    return UNPARSABLE in settings.enabled_codes([(UNPARSABLE, True)]) and UNPARSABLE not in settings.ignored_for(path)


def is_read_only(path: str) -> bool:
    """No write permission for this user, or (for root, who may write anyway) for anyone."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not os.access(path, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


def _check_notebook(path: str, raw: bytes, settings: Settings, mode: Mode, rules: RuleSet, unparsable_enabled: bool, result: FileResult) -> None:
    """As for a Python file, on the code cells; a fix rewrites only the "source" of the cells it changed."""
    from flake8_tensorconv.notebook import CellParseError, NotebookError, fix_cells, lint_cells, read_notebook, replace_sources

    try:
        notebook = read_notebook(raw)
    except NotebookError as error:
        if unparsable_enabled:
            result.findings.append(_unparsable(str(error), error.position))
        return
    if not needs_parse("\n".join(cell.text for cell in notebook.cells), rules):
        return
    try:
        if mode.fix or mode.diff:
            fixed = fix_cells(notebook.cells, settings, unsafe=mode.unsafe_fixes, rules=rules)
            result.findings = fixed.remaining
            result.fixed = len(fixed.applied)
            result.dropped_fixes = fixed.dropped
            for finding in fixed.applied:
                result.fixed_codes[finding.code] = result.fixed_codes.get(finding.code, 0) + 1
            if fixed.changed:
                if mode.diff:
                    result.digest = None
                    result.diff = "".join(_cell_diff(path, before, after) for before, after in fixed.changed)
                else:
                    if _refused(path, mode):  # what remains is what the file still has
                        result.findings = lint_cells(notebook.cells, settings, rules)
                        result.fixed, result.fixed_codes = 0, {}
                    _write(path, replace_sources(notebook, {after.index: after.text for _, after in fixed.changed}), mode, result)
        else:
            result.findings = lint_cells(notebook.cells, settings, rules)
            if mode.add_noqa and result.findings:
                _add_noqa_to_cells(path, notebook, mode, result)
    except CellParseError as error:
        if unparsable_enabled:
            result.findings = [_unparsable(str(error), error.position)._replace(cell=error.cell)]
        return
    if not unparsable_enabled:  # cells that are not Python are reported as TCV001 by lint_cells
        result.findings = [finding for finding in result.findings if finding.code != UNPARSABLE]


def _add_noqa_to_cells(path: str, notebook: Notebook, mode: Mode, result: FileResult) -> None:
    """``--add-noqa`` in a notebook: the comments go into the cells' lines; only those cells' sources are rewritten."""
    from flake8_tensorconv.noqa import add_noqa
    from flake8_tensorconv.notebook import replace_sources

    texts: dict[int, str] = {}
    for cell in notebook.cells:  # a cell that is not Python cannot take a comment that is read (as in a file)
        findings = [finding for finding in result.findings if finding.cell == cell.index and finding.code != UNPARSABLE]
        if not findings:
            continue
        added = add_noqa(Source(cell.text), findings)
        result.noqa_added += added.count
        result.warnings.extend(f"{path}:cell {cell.index}:{line}: {reason}" for line, reason in added.skipped)
        if added.count:
            texts[cell.index] = added.text
    result.findings = [finding for finding in result.findings if finding.code == UNPARSABLE]
    if texts:
        _write(path, replace_sources(notebook, texts), mode, result)


def _cell_diff(path: str, before: CodeCell, after: CodeCell) -> str:
    """A unified diff of one cell, headed ``path:cell N``; a cell's last line has no line break, and that is no news."""
    if not before.text.endswith("\n") and not after.text.endswith("\n"):
        before, after = before._replace(text=before.text + "\n"), after._replace(text=after.text + "\n")
    return unified_diff(f"{path}:cell {after.index}", before.text, after.text)


def _refused(path: str, mode: Mode) -> bool:
    """A read-only file is not rewritten unless ``--fix-read-only`` says so."""
    return is_read_only(path) and not mode.fix_read_only


def _write(path: str, data: bytes, mode: Mode, result: FileResult) -> None:
    """Replace the file atomically, or say why not in ``result.error`` (the file is then untouched)."""
    result.digest = None  # the findings are those of the fixed text
    if _refused(path, mode):
        result.error = "the file is read-only: not rewritten (--fix-read-only rewrites it)"
        return
    try:
        write_atomically(path, data)
    except OSError as error:
        result.error = f"cannot write the fixed file: {error.strerror or error}; it was left unchanged"
    else:
        result.digest = _digest(data) if mode.digest else None


def _unparsable(reason: str, position: Position) -> Finding:
    from flake8_tensorconv.rules import RULES_BY_CODE

    message = RULES_BY_CODE[UNPARSABLE].message.format(reason=reason)
    return Finding(code=UNPARSABLE, message=message, start=position, end=position)


def unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=path, tofile=path
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def check_files(
    paths: Sequence[str],
    settings: SettingsFor,
    mode: Mode,
    jobs: int,
    cache: Cache | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[FileResult]:
    """Results in the order of ``paths``: from the cache where it has them, else checked in ``jobs`` processes.

    ``progress`` is told how many more files are done, as they are.
    """
    results: list[FileResult | None] = [None] * len(paths)
    pending: list[tuple[int, int]] = []  # (index in paths, size in bytes)
    mode = mode._replace(digest=cache is not None and not mode.add_noqa)
    per_path = [settings if isinstance(settings, Settings) else settings(path) for path in paths]
    for index, path in enumerate(paths):
        cached, size = _from_cache(path, per_path[index], mode, cache) if mode.digest and cache is not None else (None, _size(path))
        if cached is not None:
            results[index] = cached
        else:
            pending.append((index, size))
    if progress is not None and len(pending) < len(paths):
        progress(len(paths) - len(pending))
    for index, result in _run(pending, paths, per_path, mode, jobs, progress):
        results[index] = result
        if cache is not None and result.digest is not None and result.error is None:
            cache.put(result.path, result.digest, _codes(per_path[index], result.path), result.findings, result.dependencies)
    if cache is not None:
        cache.save()
    return results  # type: ignore[return-value]


def _from_cache(path: str, settings: Settings, mode: Mode, cache: Cache) -> tuple[FileResult | None, int]:
    """The cached result for the file as it is now (None on a miss), and its size."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None, 0  # checking it reports why
    digest = _digest(raw)
    findings = cache.get(path, digest, _codes(settings, path))
    if findings is None:
        return None, len(raw)
    if (mode.fix or mode.diff) and any(fixable(finding, mode.unsafe_fixes) for finding in findings):
        return None, len(raw)  # a fix to make: only the engine can make it
    return FileResult(path=path, findings=findings, digest=digest), len(raw)


def _codes(settings: Settings, path: str) -> str:
    """What besides the content a file's findings depend on: its enabled codes and the fix options of its config."""
    from flake8_tensorconv.cache import codes_key

    return f"{codes_key(select_rules(settings, path).codes)}:{settings.fix_style}:{settings.target_torch}"


def _digest(data: bytes) -> str:
    from flake8_tensorconv.cache import content_digest

    return content_digest(data)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# A task sent to a worker holds files of about this many bytes together (or one bigger file):
# few enough tasks that sending them costs little, and at least this many per worker, so
# that small tasks come last and the workers end together.
_TASK_BYTES = (8 * 1024, 256 * 1024)
_TASKS_PER_WORKER = 16


def _run(
    pending: list[tuple[int, int]],
    paths: Sequence[str],
    settings: Sequence[Settings],
    mode: Mode,
    jobs: int,
    progress: Callable[[int], None] | None,
) -> list[tuple[int, FileResult]]:
    # Biggest first, so that no worker is left with a big file at the end while the others idle.
    pending = sorted(pending, key=lambda item: item[1], reverse=True)
    smallest, largest = _TASK_BYTES
    limit = max(smallest, min(largest, sum(size for _, size in pending) // (jobs * _TASKS_PER_WORKER)))
    tasks: list[list[int]] = []
    task_bytes = limit
    for index, size in pending:
        if task_bytes + size > limit:
            tasks.append([])
            task_bytes = 0
        tasks[-1].append(index)
        task_bytes += size
    check = functools.partial(_check_task, mode=mode)
    done_callback = None if progress is None else (lambda task_index: progress(len(tasks[task_index])))
    done = run_tasks(check, [[(paths[index], settings[index]) for index in task] for task in tasks], jobs, done_callback)
    return [(index, result) for task, results in zip(tasks, done) for index, result in zip(task, results)]


def _check_task(items: list[tuple[str, Settings]], mode: Mode) -> list[FileResult]:
    return [check_file(path, settings, mode) for path, settings in items]


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
