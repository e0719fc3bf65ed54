"""Jupyter notebooks (.ipynb): the code cells checked as one Python file, reported and fixed per cell.

The code cells are joined in order into one source, so that a name defined in one cell is
known in the next. IPython syntax (``%magic``, ``!shell``, ``?help``, ``obj?``, ``x = !cmd``,
automagics such as ``pip install x``, and cells that start with a ``%%`` cell magic) is masked in that source (each such line reads
``pass``, a cell magic's cell reads as empty lines) and never edited; a cell indented as a
whole is dedented, as IPython runs it. Markdown and raw cells are skipped.

Cells are numbered as Ruff numbers them: ``cell`` is the 1-based index among *all* cells of
the notebook, markdown included, and rows count from the cell's first line.

For the language server, which holds the cells' texts itself::

    cells = [CodeCell(index=1, text="import torch\\n"), CodeCell(index=3, text="x.numpy()\\n")]
    findings = lint_cells(cells, settings)              # Finding.cell says which cell
    result = fix_cells(cells, settings, unsafe=False)    # result.cells: the new texts

A fix never touches a masked line, and a fix whose edits would span two cells is not offered.
Writing a fixed notebook (:func:`replace_sources`) splices the new ``source`` values into the
file's original text: every other byte stays as it was.
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from collections.abc import Sequence
from typing import NamedTuple

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import MAX_FIX_PASSES, ParseError, RuleSet, apply_edits, fixable, lint_source, parse, select_rules
from flake8_tensorconv.findings import Edit, Finding, Fix, Position
from flake8_tensorconv.source import Source, SourceError

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"


class NotebookError(SourceError):
    """A file that is not a readable notebook (not JSON, or not nbformat 4); the message says why."""


class CodeCell(NamedTuple):
    """A code cell's text and its 1-based index among all cells of the notebook."""

    index: int
    text: str


class Notebook:
    """A notebook file: its text (for splicing) and its code cells."""

    def __init__(self, text: str, has_bom: bool, cells: list[CodeCell]) -> None:
        self.text = text  # without the BOM, if the file has one
        self.has_bom = has_bom
        self.cells = cells


# --------------------------------------------------------------------- reading
def read_notebook(raw: bytes) -> Notebook:
    """Parse a notebook file's bytes; raise NotebookError when it is not an nbformat 4 notebook."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise NotebookError(f"not a notebook: cannot decode as UTF-8: {error.reason}", Position(line, 0)) from None
    has_bom = text.startswith(_BOM)
    if has_bom:
        text = text[1:]
    try:
        data = json.loads(text)
    except RecursionError:
        raise NotebookError("not a notebook that can be read: its JSON is nested too deeply") from None
    except ValueError as error:
        line, column = (error.lineno, error.colno - 1) if isinstance(error, json.JSONDecodeError) else (1, 0)
        raise NotebookError(f"not a notebook: invalid JSON: {getattr(error, 'msg', error)}", Position(line, column)) from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError('not a notebook: no "cells" list at the top level of the JSON')
    if data.get("nbformat") != 4:
        raise NotebookError(f"not a notebook that can be checked: nbformat {data.get('nbformat')!r} (only version 4 is supported)")
    cells = []
    for number, cell in enumerate(data["cells"], start=1):
        if not isinstance(cell, dict):
            raise NotebookError(f"not a notebook: cell {number} is not a JSON object")
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(line, str) for line in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(f'not a notebook: the "source" of cell {number} is neither a string nor a list of strings')
        cells.append(CodeCell(number, source))
    if not _is_python(data.get("metadata")):
        cells = []  # another kernel's language: nothing here is Python
    return Notebook(text, has_bom, cells)


def _is_python(metadata: object) -> bool:
    """Whether the notebook's kernel language is Python (or is not stated)."""
    if not isinstance(metadata, dict):
        return True
    for table, key in (("language_info", "name"), ("kernelspec", "language")):
        language = metadata.get(table, {}).get(key) if isinstance(metadata.get(table), dict) else None
        if isinstance(language, str):
            return language.lower() == "python"
    return True


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _source_spans(text: str, wanted: set[int]) -> dict[int, tuple[int, int]]:
    """Where the "source" values of the ``wanted`` cells are written in ``text`` (the file is valid JSON)."""
    cells_start, _ = _members(text, _skip_space(text, 0))["cells"]
    spans = {}
    for number, (cell_start, _) in enumerate(_elements(text, cells_start), start=1):
        source = _members(text, cell_start).get("source") if number in wanted else None
        if source is not None:  # a cell without "source" is empty: nothing to fix in it
            spans[number] = source
    return spans


def _skip_space(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()  # type: ignore[union-attr]


def _members(text: str, position: int) -> dict[str, tuple[int, int]]:
    """Key -> (start, end) of its value, for the JSON object at ``position`` (a later key wins, as in json.loads)."""
    members = {}
    position = _skip_space(text, position + 1)
    while text[position] != "}":
        key, position = _DECODER.raw_decode(text, position)
        start = _skip_space(text, _skip_space(text, position) + 1)  # past the ":"
        _, end = _DECODER.raw_decode(text, start)
        members[key] = (start, end)
        position = _skip_space(text, end)
        if text[position] == ",":
            position = _skip_space(text, position + 1)
    return members


def _elements(text: str, position: int) -> list[tuple[int, int]]:
    """(start, end) of each element of the JSON array at ``position``."""
    elements = []
    position = _skip_space(text, position + 1)
    while text[position] != "]":
        _, end = _DECODER.raw_decode(text, position)
        elements.append((position, end))
        position = _skip_space(text, end)
        if text[position] == ",":
            position = _skip_space(text, position + 1)
    return elements


# --------------------------------------------------------------------- the joined source
# A line that IPython reads as a magic, a shell command or a help request, when it starts a
# logical line: `%time f()`, `!pip install x`, `?obj`, `files = !ls`, `out = %sx ls`.
_MAGIC_LINE = re.compile(r"\s*(?:[%!?]|[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!])")


# IPython's line magics that run without their "%" (automagic): `pip install x`, `cd data`.
_AUTOMAGIC = re.compile(
    r"\s*(?:alias|autoreload|bookmark|cat|cd|clear|colors|conda|config|cp|debug|dhist|dirs|doctest_mode|ed|edit|env|gui|"
    r"history|killbgscripts|ldir|less|lf|lk|ll|load|load_ext|loadpy|logoff|logon|logstart|logstate|logstop|ls|lsmagic|lx|"
    r"macro|magic|man|matplotlib|mkdir|more|mv|notebook|page|pastebin|pdb|pdef|pdoc|pfile|pinfo|pinfo2|pip|popd|pprint|"
    r"precision|prun|psearch|psource|pushd|pwd|pycat|pylab|quickref|recall|rehashx|reload_ext|rep|rerun|reset|"
    r"reset_selective|rm|rmdir|run|save|sc|set_env|store|sx|system|tb|time|timeit|unalias|unload_ext|who|who_ls|whos|"
    r"xdel|xmode)[ \t]+\S"
)


def _lines(text: str) -> list[str]:
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


class _Scan(NamedTuple):
    """Where a line leaves the Python tokenizer: inside a string, inside brackets, continued."""

    quote: str | None = None
    depth: int = 0
    continued: bool = False

    @property
    def at_statement_start(self) -> bool:
        return self.quote is None and self.depth == 0 and not self.continued


# On a line, what changes the scanner's state: a comment, a bracket, a backslash, a quote.
_SIGNIFICANT = re.compile("|".join(["#", r"[()\[\]{}\\]", "'''", '"""', "['\"]"]))
# From inside a string, its end (escaped characters skipped); no match: the string goes on.
_STRING_END = {quote: re.compile(r"(?:\\.|[^\\])*?" + quote, re.DOTALL) for quote in ("'", '"', "'''", '"""')}


def _scan(line: str, state: _Scan) -> tuple[_Scan, int]:
    """The state after ``line``, and where its code ends (a comment, or the line's end)."""
    quote, depth = state.quote, state.depth
    index, code_end = 0, len(line)
    while True:
        if quote is not None:
            string_end = _STRING_END[quote].match(line, index)
            if string_end is None:
                break
            index, quote = string_end.end(), None
        match = _SIGNIFICANT.search(line, index)
        if match is None:
            break
        token, index = match.group(), match.end()
        if token == "#":
            code_end = match.start()
            break
        if token in ("(", "[", "{"):
            depth += 1
        elif token in (")", "]", "}"):
            depth = max(depth - 1, 0)
        elif token != "\\":
            quote = token
    continued = code_end == len(line) and line.endswith("\\")
    if quote in ("'", '"') and not continued:
        quote = None  # an unterminated string: the parser will say so
    return _Scan(quote, depth, continued), code_end


def _dedent(lines: list[str]) -> tuple[list[str], list[int]]:
    """The lines without the indentation of the cell's first line, as IPython runs them, and how much each lost."""
    first = next((line for line in lines if line.strip()), "")
    prefix = first[: len(first) - len(first.lstrip(" \t"))]
    if not prefix:
        return lines, [0] * len(lines)
    dedented = [line[len(prefix) :] if line.startswith(prefix) else line for line in lines]
    return dedented, [len(line) - len(new) for line, new in zip(lines, dedented)]


# Magics that run the Python statement or cell they are given: the code is analysed, the magic is not.
_TIMING_LINE = re.compile(r"(?P<indent>\s*)%(?:time|timeit|prun)\s+(?:-\S+\s+(?:\d+\s+)?)*(?P<statement>[^-\s].*)$")
_PYTHON_CELL_MAGIC = re.compile(r"\s*%%(?:time|timeit|capture|prun)\b")


def _mask(lines: list[str]) -> tuple[list[str], list[int]]:
    """The cell's lines with IPython syntax replaced by ``pass`` (same indentation), or emptied for a cell magic.

    ``%time stmt`` (and ``%timeit``, ``%prun``) keeps ``stmt``, moved left over the magic: the second list
    says how many columns each line lost. A ``%%time`` (``%%timeit``, ``%%capture``, ``%%prun``) cell keeps its
    body; other cell magics empty the cell.
    """
    shifts = [0] * len(lines)
    first = next((index for index, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        if not _PYTHON_CELL_MAGIC.match(lines[first]):
            return [""] * len(lines), shifts
        masked_body, body_shifts = _mask(lines[first + 1 :])
        return [""] * (first + 1) + masked_body, shifts[: first + 1] + body_shifts
    masked = []
    state = _Scan()
    magic_continues = False
    for index, line in enumerate(lines):
        after, code_end = _scan(line, state) if not magic_continues else (state, 0)
        if magic_continues or (state.at_statement_start and _is_magic(line, after, code_end)):
            timed = _TIMING_LINE.match(line) if not magic_continues and not line.endswith("\\") else None
            if timed is not None and _parses_alone(timed.group("statement")):
                masked.append(timed.group("indent") + timed.group("statement"))
                shifts[index] = timed.start("statement") - len(timed.group("indent"))
                state = _scan(masked[-1], state)[0]
                continue
            indentation = line[: len(line) - len(line.lstrip())]
            masked.append(indentation + "pass" if not magic_continues else "")
            magic_continues = line.endswith("\\")
            continue
        masked.append(line)
        state = after
    return masked, shifts


def _is_magic(line: str, after: _Scan, code_end: int) -> bool:
    """Whether a line that starts a statement is IPython syntax; ``after``, ``code_end``: what _scan says of it."""
    if _MAGIC_LINE.match(line):
        return True
    if not after.at_statement_start:
        return False
    if line[:code_end].rstrip().endswith("?"):  # `obj?`, `obj.method??`
        return True
    # `pip install x` is a magic; `time = 3` and `ls -l` (a subtraction) are Python.
    return _AUTOMAGIC.match(line) is not None and not _parses_alone(line.strip())


def _parses_alone(statement: str) -> bool:
    try:
        ast.parse(statement)
    except (SyntaxError, ValueError):
        return False
    return True


class _JoinedSource(Source):
    """The joined cells' text: a message names a line by its cell and its row there."""

    def __init__(self, text: str, joined: _Joined) -> None:
        super().__init__(text)
        self._joined = joined

    def describe_line(self, line: int) -> str:
        number, position = self._joined.locate(Position(line, 0))
        return f"line {position.line} of cell {self._joined.cells[number].index}"


class _Joined:
    """The code cells joined into one masked source, and the way back to (cell, row)."""

    def __init__(self, cells: Sequence[CodeCell], left_out: frozenset[int] = frozenset()) -> None:
        """``left_out``: positions in ``cells`` of cells that do not parse; their lines stay, empty."""
        self.cells = list(cells)
        self.left_out = left_out
        # For each cell with at least one line: its first line in the joined source, its position in ``cells``.
        self.first_lines: list[int] = []
        self.numbers: list[int] = []
        self.line_counts: list[int] = []
        # For each cell, each line's indentation that the joined source leaves out (see _dedent).
        self.dedents: list[list[int]] = []
        parts: list[str] = []
        for number, cell in enumerate(self.cells):
            lines, dedents = _dedent(_lines(cell.text))
            masked, shifts = _mask(lines)
            if number in left_out:
                masked = [""] * len(masked)
            self.line_counts.append(len(masked))
            self.dedents.append([dedent + shift for dedent, shift in zip(dedents, shifts)])
            if masked:
                self.first_lines.append(len(parts) + 1)
                self.numbers.append(number)
                parts.extend(line + "\n" for line in masked)
        self.source = _JoinedSource("".join(parts), self)

    def locate(self, position: Position) -> tuple[int, Position]:
        """The cell (its position in ``cells``) and the cell-relative position of a joined position."""
        if not self.numbers:
            return 0, Position(1, 0)
        which = max(bisect_right(self.first_lines, position.line) - 1, 0)
        number = self.numbers[which]
        row = position.line - self.first_lines[which] + 1
        if row > self.line_counts[number]:  # past the cell's last line (a parse error at the end)
            row = self.line_counts[number]
            return number, Position(row, len(_lines(self.cells[number].text)[row - 1]))
        return number, Position(row, position.column + self.dedents[number][row - 1])

    def to_cells(self, finding: Finding) -> tuple[int, Finding]:
        """The finding with cell-relative positions (and ``cell`` set), and the cell's position in ``cells``."""
        number, start = self.locate(finding.start)
        end_number, end = self.locate(finding.end)
        if end_number != number:
            end = start
        fix = finding.fix
        if fix is not None:
            edits = []
            for edit in fix.edits:
                (edit_start_cell, edit_start), (edit_end_cell, edit_end) = self.locate(edit.start), self.locate(edit.end)
                if edit_start_cell != number or edit_end_cell != number:
                    fix = None  # an edit in another cell, or across cells: not offered
                    break
                edits.append(Edit(edit_start, edit_end, edit.content))
            else:
                fix = Fix(fix.applicability, fix.message, tuple(edits))
        related = []
        for step in finding.related:  # evidence in the same cell keeps a cell-relative place
            (step_cell, step_start), (step_end_cell, step_end) = self.locate(step.start), self.locate(step.end)
            if step_cell == step_end_cell == number:
                related.append(step._replace(start=step_start, end=step_end))
        return number, finding._replace(start=start, end=end, fix=fix, cell=self.cells[number].index, related=tuple(related))


# --------------------------------------------------------------------- linting and fixing
def lint_cells(cells: Sequence[CodeCell], settings: Settings, rules: RuleSet | None = None) -> list[Finding]:
    """Findings for code cells (in notebook order), each with ``cell`` set and rows relative to it.

    Jupyter compiles each cell on its own, so a cell that is not Python fails alone when it is run
    and the others still run: such a cell is reported as TCV001 (at its syntax error) and left out,
    and the other cells are checked. Raises CellParseError (a ParseError with a cell-relative
    position and the cell) only when the cells are not Python even without the failing ones.
    """
    rules = rules or select_rules(settings)
    joined, tree = _parsed(cells)
    findings = lint_source(joined.source, settings, rules, tree=tree)
    return [finding for _, finding in _unparsable_cells(joined)] + [joined.to_cells(finding)[1] for finding in findings]


def _parsed(cells: Sequence[CodeCell], left_out: frozenset[int] | None = None) -> tuple[_Joined, ast.Module]:
    """The joined cells without those that do not parse on their own (found here unless given), and its tree."""
    joined = _Joined(cells, left_out or frozenset())
    try:
        return joined, parse(joined.source)
    except ParseError as error:
        if left_out is None:
            failing = frozenset(number for number, cell in enumerate(cells) if not _parses_on_its_own(cell))
            if failing:
                return _parsed(cells, failing)
        raise _cell_parse_error(joined, error) from None


def _parses_on_its_own(cell: CodeCell) -> bool:
    return _own_error(cell) is None


def _own_error(cell: CodeCell) -> CellParseError | None:
    """Why the cell alone is not Python (a cell-relative position), or None."""
    alone = _Joined([cell])
    try:
        parse(alone.source)
    except ParseError as error:
        return _cell_parse_error(alone, error)
    return None


def _unparsable_cells(joined: _Joined) -> list[tuple[int, Finding]]:
    """TCV001 for each cell left out, at its syntax error, with the cell's position in ``cells``."""
    if not joined.left_out:
        return []
    from flake8_tensorconv.rules import RULES_BY_CODE

    template = RULES_BY_CODE["TCV001"].cell_message
    findings = []
    for number in sorted(joined.left_out):
        error = _own_error(joined.cells[number])
        if error is not None:
            finding = Finding(code="TCV001", message=template.format(reason=error), start=error.position, end=error.position, cell=error.cell)
            findings.append((number, finding))
    return findings


class CellsFixResult:
    def __init__(self, original: Sequence[CodeCell]) -> None:
        self.original = list(original)
        self.cells = list(original)  # the code cells with their fixed texts (same order and indices)
        self.applied: list[Finding] = []
        self.dropped: list[Finding] = []  # fixes whose result did not parse: never applied
        self.remaining: list[Finding] = []

    @property
    def changed(self) -> list[tuple[CodeCell, CodeCell]]:
        """(before, after) of each cell whose text changed."""
        return [(before, after) for before, after in zip(self.original, self.cells) if before.text != after.text]


def fix_cells(cells: Sequence[CodeCell], settings: Settings, unsafe: bool = False, rules: RuleSet | None = None) -> CellsFixResult:
    """Apply fixes to code cells until none is left (at most MAX_FIX_PASSES passes). Raises ParseError as lint_cells."""
    rules = rules or select_rules(settings)
    current = list(cells)
    result = CellsFixResult(cells)
    left_out = _parsed(cells)[0].left_out  # cells that are not Python: never edited, left out of every pass
    dropped: set[tuple[str, int | None, Position]] = set()
    for _ in range(MAX_FIX_PASSES):
        candidates = [
            (number, finding)
            for number, finding in _lint_mapped(current, settings, rules, left_out)
            if fixable(finding, unsafe) and (finding.code, finding.cell, finding.start) not in dropped
        ]
        if not candidates:
            break
        fixed, applied = _apply(current, candidates)
        if not _parses(fixed, left_out):
            # Find the culprits one at a time; keep the fixes that are fine on their own.
            good = []
            for candidate in candidates:
                single, single_applied = _apply(current, [candidate])
                if not single_applied:
                    continue
                if _parses(single, left_out):
                    good.append(candidate)
                else:
                    dropped.add((candidate[1].code, candidate[1].cell, candidate[1].start))
                    result.dropped.append(candidate[1])
            fixed, applied = _apply(current, good)
            if not applied or not _parses(fixed, left_out):
                break
        result.applied.extend(applied)
        current = fixed
    result.cells = current
    result.remaining = [finding for _, finding in _lint_mapped(current, settings, rules, left_out)]
    return result


def _lint_mapped(cells: list[CodeCell], settings: Settings, rules: RuleSet, left_out: frozenset[int]) -> list[tuple[int, Finding]]:
    joined, tree = _parsed(cells, left_out)
    findings = lint_source(joined.source, settings, rules, tree=tree)
    return _unparsable_cells(joined) + [joined.to_cells(finding) for finding in findings]


def _apply(cells: list[CodeCell], candidates: Sequence[tuple[int, Finding]]) -> tuple[list[CodeCell], list[Finding]]:
    """Apply each cell's fixes to its own text (never to the masked source)."""
    fixed = list(cells)
    applied: list[Finding] = []
    for number in sorted({number for number, _ in candidates}):
        cell = cells[number]
        text, cell_applied = apply_edits(Source(cell.text), [finding for n, finding in candidates if n == number])
        fixed[number] = cell._replace(text=text)
        applied.extend(cell_applied)
    return fixed, applied


def _parses(cells: list[CodeCell], left_out: frozenset[int]) -> bool:
    try:
        parse(_Joined(cells, left_out).source)
    except ParseError:
        return False
    return True


class CellParseError(ParseError):
    """The joined code cells are not valid Python; ``position`` is relative to cell ``cell``."""

    def __init__(self, message: str, position: Position, cell: int) -> None:
        super().__init__(message, position)
        self.cell = cell


def _cell_parse_error(joined: _Joined, error: ParseError) -> CellParseError:
    number, position = joined.locate(error.position)
    return CellParseError(str(error), position, joined.cells[number].index)


# --------------------------------------------------------------------- writing
def replace_sources(notebook: Notebook, texts: dict[int, str]) -> bytes:
    """The notebook file with the "source" of the cells in ``texts`` (by cell index) replaced; nothing else changes.

    A source written as a list of lines stays a list (lines that did not change keep their
    exact JSON text and indentation); one written as a string stays a string. Non-ASCII
    characters are escaped only when the file has no raw non-ASCII character.
    """
    ensure_ascii = notebook.text.isascii()
    spans = _source_spans(notebook.text, set(texts))
    pieces = []
    position = 0
    for index in sorted(texts):
        start, end = spans[index]
        pieces.append(notebook.text[position:start])
        pieces.append(_source_json(notebook.text[start:end], texts[index], ensure_ascii))
        position = end
    pieces.append(notebook.text[position:])
    return ((_BOM if notebook.has_bom else "") + "".join(pieces)).encode("utf-8")


def _source_json(old: str, text: str, ensure_ascii: bool) -> str:
    if not old.startswith("["):
        return json.dumps(text, ensure_ascii=ensure_ascii)
    spans = _elements(old, 0)
    lines = _split_lines(text)
    if not spans or not lines:
        return json.dumps(lines, ensure_ascii=ensure_ascii)
    written = {json.loads(old[start:end]): old[start:end] for start, end in spans}
    leading = old[1 : spans[0][0]]  # e.g. "\n    ": the indentation of a line
    between = old[spans[0][1] : spans[1][0]] if len(spans) > 1 else "," + (leading or " ")
    closing = old[spans[-1][1] : -1]  # e.g. "\n   " before the "]"
    items = [written.get(line) or json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    return "[" + leading + between.join(items) + closing + "]"


def _split_lines(text: str) -> list[str]:
    """Lines as Jupyter writes them into a "source" list: each with its line break, the last one maybe without."""
    return re.findall(r"[^\n]*\n|[^\n]+", text)


__all__ = ["CellParseError", "CellsFixResult", "CodeCell", "Notebook", "NotebookError", "fix_cells", "lint_cells", "read_notebook", "replace_sources"]
