"""Check files on disk: read, lint or fix, write back; in parallel when asked."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import ParseError, fix_source, lint_source, needs_parse, select_rules
from flake8_tensorconv.findings import Finding, Position
from flake8_tensorconv.source import SourceError, decode, write_atomically

UNPARSABLE = "TCV001"


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    unsafe_fixes: bool = False
    diff: bool = False  # compute fixes, report the diff, write nothing


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    dropped_fixes: list[Finding] = field(default_factory=list)
    diff: str = ""
    error: str | None = None  # an internal error: the file was not checked


def check_file(path: str, settings: Settings, mode: Mode) -> FileResult:
    result = FileResult(path=path)
    try:
        _check(path, settings, mode, result)
    except Exception as error:  # one broken file must not stop the run
        result.error = f"internal error: {type(error).__name__}: {error}"
    return result


def _check(path: str, settings: Settings, mode: Mode, result: FileResult) -> None:
    rules = select_rules(settings, path)
    unparsable_enabled = UNPARSABLE in settings.enabled_codes([(UNPARSABLE, True)]) and UNPARSABLE not in settings.ignored_for(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
        source = decode(raw)
    except OSError as error:
        if unparsable_enabled:
            result.findings.append(_unparsable(f"cannot read: {error.strerror or error}", Position(1, 0)))
        return
    except SourceError as error:
        if unparsable_enabled:
            result.findings.append(_unparsable(str(error), error.position))
        return
    if not needs_parse(source.text, rules):
        return
    try:
        if mode.fix or mode.diff:
            fixed = fix_source(source, settings, unsafe=mode.unsafe_fixes, rules=rules)
            result.findings = fixed.remaining
            result.fixed = len(fixed.applied)
            result.dropped_fixes = fixed.dropped
            if fixed.text != source.text:
                if mode.diff:
                    result.diff = unified_diff(path, source.text, fixed.text)
                else:
                    try:
                        write_atomically(path, source.encode(fixed.text))
                    except OSError as error:
                        result.error = f"cannot write the fixed file: {error.strerror or error}; it was left unchanged"
        else:
            result.findings = lint_source(source, settings, rules)
    except ParseError as error:
        if unparsable_enabled:
            result.findings = [_unparsable(str(error), error.position)]


def _unparsable(reason: str, position: Position) -> Finding:
    from flake8_tensorconv.rules import RULES_BY_CODE

    message = RULES_BY_CODE[UNPARSABLE].message.format(reason=reason)
    return Finding(code=UNPARSABLE, message=message, start=position, end=position)


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=path, tofile=path
    )
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n" for line in lines)


def check_files(paths: Sequence[str], settings: Settings, mode: Mode, jobs: int) -> list[FileResult]:
    jobs = max(1, min(jobs, len(paths)))
    if jobs == 1:
        return [check_file(path, settings, mode) for path in paths]
    chunk = max(1, len(paths) // (jobs * 8))
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(check_file, paths, [settings] * len(paths), [mode] * len(paths), chunksize=chunk))


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
