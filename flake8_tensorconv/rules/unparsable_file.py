from __future__ import annotations

from flake8_tensorconv.rules.base import Rule


class UnparsableFile(Rule):
    """
    ## What it does
    Reports a file that `tensorconv check` cannot decode (bad PEP 263 cookie,
    invalid bytes for its encoding) or parse, at the error's position. The run
    goes on with the other files.

    In a notebook, a code cell that does not parse is reported in that cell and
    left out; the other cells are checked. That is how Jupyter runs them: each
    cell is compiled on its own, so a cell with a syntax error fails alone and the
    others still run (an unfinished exercise cell, a Python 2 `print`).

    ## Why is this bad?
    A file that cannot be parsed cannot be checked: none of the other rules ran
    on it. Files without any trigger token are never parsed, so a syntax error in
    them is left to the tools that parse everything.

    ## Example
    ```python
    arr = out.numpy(
    ```

    ## Use instead
    ```python
    arr = out.numpy()
    ```

    ## Fix safety
    No fix. The flake8 plugin stays silent here: flake8 reports E999 itself.
    """

    code = "TCV001"
    name = "unparsable-file"
    message = "cannot check this file: {reason}"
    cell_message = "cannot check this cell: {reason} (the notebook's other cells are checked)"
    triggers = ()
