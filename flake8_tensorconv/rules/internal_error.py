from __future__ import annotations

from flake8_tensorconv.rules.base import Rule


class InternalError(Rule):
    """
    ## What it does
    Reports, in the flake8 plugin, that flake8-tensorconv itself failed on a file,
    so that one bad file does not abort the whole flake8 run. The command line
    prints the same error to stderr and exits with status 2.

    ## Why is this bad?
    It is a bug in flake8-tensorconv, not in your code: the file was not checked.
    Please report it with the file (or a reduced version of it).

    ## Example
    ```python
    # any file on which the linter raised an exception
    ```

    ## Use instead
    ```python
    # nothing to change in your code; `# noqa: TCV002` silences it meanwhile
    ```

    ## Fix safety
    No fix.
    """

    code = "TCV002"
    name = "internal-error"
    message = "internal error in flake8-tensorconv, this file was not checked: {reason}"
    triggers = ()
