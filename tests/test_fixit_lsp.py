"""`fixit lsp` with our rules enabled, driven by a real LSP client (pytest-lsp) over stdio, as an editor drives it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("fixit")
pytest_lsp = pytest.importorskip("pytest_lsp")
FIXIT = Path(sys.executable).with_name("fixit")
if not FIXIT.exists():
    pytest.skip(f"the fixit command is not installed beside {sys.executable}", allow_module_level=True)

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

# No debounce: the test waits for the diagnostics of the document it opens, not for a pause.
SERVER = ClientServerConfig(server_command=[str(FIXIT), "lsp", "--debounce-interval", "0"])
GRAD = """\
import torch

model = torch.nn.Linear(3, 2)
scores = model(torch.ones(1, 3))
values = scores.numpy()
"""


# Module-scoped, as the tests' event loop is (pyproject.toml).
@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    await lsp_client.initialize_session(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path_factory.getbasetemp().as_uri())
    )
    yield
    await lsp_client.shutdown_session()


async def test_fixit_lsp_reports_tcv101_on_an_open_file_and_its_formatting_applies_the_safe_fix(client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.fixit]\nroot = true\nenable = ["flake8_tensorconv.fixit"]\n')
    path = tmp_path / "train.py"
    path.write_text(GRAD)
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=GRAD))
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.source == "fixit"
    assert diagnostic.code == "NumpyRequiresGrad"
    assert diagnostic.message.startswith("TCV101 `.numpy()` on a tensor that may require grad raises RuntimeError")
    assert diagnostic.range == types.Range(start=types.Position(line=4, character=9), end=types.Position(line=4, character=23))

    # Fixit's fix-all in an editor is document formatting: the replacement of every safe fix.
    edits = await client.text_document_formatting_async(
        types.DocumentFormattingParams(text_document=types.TextDocumentIdentifier(uri=uri), options=types.FormattingOptions(tab_size=4, insert_spaces=True))
    )
    assert edits is not None and len(edits) == 1
    assert edits[0].new_text == GRAD.replace("scores.numpy()", "scores.detach().numpy()")
