"""Convert every Jupyter notebook under a folder to a `.py` file next to it.

Usage: python3 bench/corpus/nb2py.py FOLDER

For each `NAME.ipynb` under FOLDER (recursively, in sorted order) this writes
`NAME.ipynb.py`: the sources of the code cells joined with one blank line
between cells; markdown and raw cells are skipped. A line that is IPython
syntax rather than Python (it starts a statement, and after leading whitespace it
starts with `%`, `!` or `?`, or it ends with `?`; a line inside brackets, a string or
after a backslash, such as `% n)` continuing an expression, is Python) becomes a comment, `# ` + the line, so the file
parses and every other line keeps its text; an indented one (inside an `if` or a
loop) becomes `pass  # ` + the line at its indentation, so that a block holding
only a magic (`if IN_COLAB:` / `    !pip install ...`) still has a body. The labels of the benchmark refer
to lines of these files, so the output depends only on the notebook: UTF-8,
`\\n` line endings, a final newline.

A notebook that is not valid JSON (or not a notebook) is reported by name on
stderr and skipped; the exit status is 1 if any was skipped, else 0. Both
nbformat 4 (cells at the top) and nbformat 3 (cells in worksheets, a code
cell's source under "input") are read.
Standard library only.
"""

from __future__ import annotations

import io
import json
import sys
import tokenize
from pathlib import Path


def is_ipython_line(line: str) -> bool:
    """Whether a line is IPython syntax (magic, shell escape, help) rather than Python."""
    stripped = line.strip()
    return stripped.startswith(("%", "!", "?")) or stripped.endswith("?")


def python_line(line: str) -> str:
    """The line as Python: IPython syntax commented out, as a `pass` statement where it is indented."""
    if not is_ipython_line(line):
        return line
    body = line.lstrip()
    indent = line[: len(line) - len(body)]
    return f"{indent}pass  # {body}" if indent else "# " + line


def cell_lines(source: str | list[str]) -> list[str]:
    """The lines of one cell's source (stored as a string or a list of strings)."""
    text = source if isinstance(source, str) else "".join(source)
    return text.splitlines()


def notebook_cells(notebook: dict) -> list[dict]:
    """The cells of a notebook: nbformat 4 keeps them at the top, nbformat 3 in worksheets."""
    if "cells" in notebook:
        return notebook["cells"]
    return [cell for sheet in notebook["worksheets"] for cell in sheet["cells"]]


def python_cells(notebook: dict) -> list[str]:
    """The text of each code cell as it stands in the `.py` file (IPython syntax commented out)."""
    cells = []
    for cell in notebook_cells(notebook):
        if cell.get("cell_type") != "code":
            continue
        # nbformat 3 calls a code cell's source "input"
        source = cell.get("source", cell.get("input", ""))
        cells.append("\n".join(_python_lines(cell_lines(source))))
    return cells


def _python_lines(lines: list[str]) -> list[str]:
    """A cell's lines as Python: only a line that starts a statement can be IPython syntax."""
    converted, statement = [], ""
    for line in lines:
        if not statement and is_ipython_line(line):
            converted.append(python_line(line))
            continue
        converted.append(line)
        statement += line + "\n"
        if not _continues(statement):
            statement = ""
    return converted


def _continues(text: str) -> bool:
    """Whether the statement begun in ``text`` goes on: an open bracket or string, or a backslash at the end."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except tokenize.TokenError:
        return True
    except SyntaxError:  # the parser reports it; the next line starts afresh
        return False
    return False


def notebook_to_python(notebook: dict) -> str:
    """The text of the `.py` file for one parsed notebook."""
    return "\n\n".join(python_cells(notebook)) + "\n"


def convert_folder(folder: Path) -> int:
    """Convert the notebooks under `folder`; return how many were skipped."""
    skipped = 0
    for path in sorted(folder.rglob("*.ipynb")):
        if not path.is_file():
            continue
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
            text = notebook_to_python(notebook)
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            print(f"{path}: not a valid notebook (invalid JSON: {error}); skipped", file=sys.stderr)
            skipped += 1
            continue
        except (KeyError, TypeError, AttributeError):
            print(f"{path}: not a valid notebook (no list of cells); skipped", file=sys.stderr)
            skipped += 1
            continue
        path.with_name(path.name + ".py").write_text(text, encoding="utf-8", newline="\n")
    return skipped


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python3 bench/corpus/nb2py.py FOLDER", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    if not folder.is_dir():
        print(f"{folder}: not a folder", file=sys.stderr)
        return 2
    return 1 if convert_folder(folder) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
