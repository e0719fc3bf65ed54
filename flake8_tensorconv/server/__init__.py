"""``tensorconv server``: a language server over stdio, on the engine the CLI uses.

pygls and lsprotocol come with the ``server`` extra; the linter itself never imports them.
"""

from __future__ import annotations

import sys

MISSING_EXTRA = (
    "tensorconv: error: `tensorconv server` needs the 'server' extra ({missing} is not installed): "
    "pip install 'flake8-tensorconv[server]'"
)


def main() -> int:
    """Serve LSP on stdin/stdout until the client says exit; 2 when pygls is missing."""
    try:
        import lsprotocol  # noqa: F401
        import pygls  # noqa: F401
    except ModuleNotFoundError as error:
        print(MISSING_EXTRA.format(missing=error.name), file=sys.stderr)
        return 2
    from flake8_tensorconv.server.lsp import build_server

    build_server().start_io()
    return 0
