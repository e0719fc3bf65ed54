"""`tensorconv server` driven by a real LSP client (pytest-lsp) over stdio, as an editor drives it."""

from __future__ import annotations

import asyncio
import collections
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "flake8_tensorconv", "server"])
# No debounce: a test waits for the diagnostics of its change, not for a typing pause.
OPTIONS = {"debounceMs": 0}

GRAD = """\
import torch

model = torch.nn.Linear(3, 2)
scores = model(torch.ones(1, 3))
values = scores.numpy()
"""
GRAD_FIXED = GRAD.replace("scores.numpy()", "scores.detach().numpy()")
SHARED = """\
import numpy as np
import torch

weights = torch.ones(3)
snapshot = np.asarray(weights)
np.copyto(snapshot, 0)
norm = weights.norm()
"""


# One server for the module, as an editor keeps one (pyproject.toml makes the tests' loop
# module-scoped to match): every test uses its own files.
@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory):
    record_diagnostics(lsp_client)
    lsp_client.registrations = []  # type: ignore[attr-defined]

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        lsp_client.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    params = types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=tmp_path_factory.getbasetemp().as_uri(),
        initialization_options=OPTIONS,
    )
    lsp_client.initialize_result = await lsp_client.initialize_session(params)  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def open_document(client: LanguageClient, path: Path, text: str, version: int = 1) -> list[types.Diagnostic]:
    path.write_text(text, encoding="utf-8")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=version, text=text)
        )
    )
    return await diagnostics_for(client, path.as_uri())


class PublishedDiagnostics(dict):
    """pytest-lsp's client.diagnostics, which also queues every publish by URI: two may arrive
    before a test asks for the first."""

    def __init__(self) -> None:
        super().__init__()
        self.queues: collections.defaultdict[str, asyncio.Queue] = collections.defaultdict(asyncio.Queue)

    def __setitem__(self, uri: str, diagnostics: list[types.Diagnostic]) -> None:
        super().__setitem__(uri, diagnostics)
        self.queues[uri].put_nowait(diagnostics)


def record_diagnostics(client: LanguageClient) -> None:
    client.diagnostics = PublishedDiagnostics()


async def diagnostics_for(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    """The next diagnostics published for ``uri`` (a server that publishes none fails the test, not hangs it)."""
    return list(await asyncio.wait_for(client.diagnostics.queues[uri].get(), timeout=30))  # type: ignore[attr-defined]


async def replace_text(client: LanguageClient, uri: str, text: str, version: int) -> list[types.Diagnostic]:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return await diagnostics_for(client, uri)


def utf16_offset(text: str, position: types.Position) -> int:
    """What a UTF-16 client (VS Code) does with an LSP position."""
    lines = text.splitlines(keepends=True)
    offset = sum(len(line) for line in lines[: position.line])
    units = 0
    column = 0
    line = lines[position.line] if position.line < len(lines) else ""
    while units < position.character:
        units += 2 if ord(line[column]) > 0xFFFF else 1
        column += 1
    return offset + column


def apply(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(((utf16_offset(text, e.range.start), utf16_offset(text, e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new_text in spans:
        text = text[:start] + new_text + text[end:]
    return text


async def code_actions(client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic], only=None) -> list[types.CodeAction]:
    whole = types.Range(start=types.Position(0, 0), end=types.Position(10_000, 0))
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostics[0].range if diagnostics else whole,
        context=types.CodeActionContext(diagnostics=diagnostics, only=only),
    )
    return list(await client.text_document_code_action_async(params) or [])


async def test_initialize_announces_incremental_sync_utf16_and_our_code_actions(client: LanguageClient):
    capabilities = client.initialize_result.capabilities  # type: ignore[attr-defined]
    assert capabilities.position_encoding == types.PositionEncodingKind.Utf16
    assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    assert capabilities.text_document_sync.save is not None
    assert set(capabilities.code_action_provider.code_action_kinds) == {"quickfix", "source.fixAll.tensorconv"}
    assert await code_actions(client, "file:///notes.txt", []) == []  # a round trip: the registration has arrived
    (registration,) = client.registrations  # type: ignore[attr-defined]
    assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    assert registration.register_options["watchers"] == [{"globPattern": "**/pyproject.toml"}]


async def test_open_reports_the_finding_with_code_link_source_and_fix_data(client: LanguageClient, tmp_path: Path):
    (diagnostic,) = await open_document(client, tmp_path / "grad.py", GRAD)
    assert diagnostic.code == "TCV101"
    assert diagnostic.source == "tensorconv"
    assert diagnostic.severity == types.DiagnosticSeverity.Warning
    assert diagnostic.code_description.href.endswith("docs/rules.md#tcv101-numpy-requires-grad")
    assert diagnostic.range == types.Range(start=types.Position(4, 9), end=types.Position(4, 23))
    assert diagnostic.data["version"] == 1
    assert diagnostic.data["fix"]["title"] == "Fix TCV101: Insert `.detach()`"


async def test_columns_count_utf16_units_after_an_astral_character(client: LanguageClient, tmp_path: Path):
    # "😀" is one code point (the engine's column unit) and two UTF-16 units.
    text = GRAD.replace("values = scores.numpy()", 'label, values = "😀", scores.numpy()')
    (diagnostic,) = await open_document(client, tmp_path / "astral.py", text)
    assert diagnostic.range.start == types.Position(4, 22)
    actions = await code_actions(client, (tmp_path / "astral.py").as_uri(), [diagnostic], only=["quickfix"])
    assert apply(text, actions[0].edit.changes[(tmp_path / "astral.py").as_uri()]) == text.replace("scores.numpy()", "scores.detach().numpy()")


async def test_an_incremental_change_is_linted_again(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "typing.py"
    uri = path.as_uri()
    assert not await open_document(client, path, GRAD.replace("values = scores.numpy()", "values = scores"))
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(start=types.Position(4, 15), end=types.Position(4, 15)), text=".numpy()")
            ],
        )
    )
    (diagnostic,) = await diagnostics_for(client, uri)
    assert (diagnostic.code, diagnostic.data["version"]) == ("TCV101", 2)


HELPER_AND_CALLER = (Path(__file__).parent / "sources" / "helper_and_caller.py").read_text(encoding="utf-8")


async def test_a_change_in_a_helper_reports_in_its_caller_and_keeps_the_other_diagnostics_current(client: LanguageClient, tmp_path: Path):
    # The server analyses again only what a change can affect: the caller of an edited helper is among it.
    path = tmp_path / "helpers.py"
    uri = path.as_uri()
    (other,) = await open_document(client, path, HELPER_AND_CALLER)
    assert other.range.start.line == 12
    removal = types.Range(start=types.Position(4, 47), end=types.Position(4, 56))  # `.detach()`
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangePartial(range=removal, text="")],
        )
    )
    diagnostics = await diagnostics_for(client, uri)
    assert [(d.range.start.line, d.data["version"]) for d in diagnostics] == [(8, 2), (12, 2)]
    assert "on line 5" in diagnostics[0].message  # the helper's line, where the tensor that requires grad is made


async def test_quick_fix_applied_makes_the_diagnostic_go_away(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "fix.py"
    uri = path.as_uri()
    diagnostics = await open_document(client, path, GRAD)
    actions = await code_actions(client, uri, diagnostics)
    assert [action.title for action in actions] == ["Fix TCV101: Insert `.detach()`", "Disable TCV101 for this line", "Fix all safe tensorconv findings"]
    fixed = apply(GRAD, actions[0].edit.changes[uri])
    assert fixed == GRAD_FIXED
    assert actions[0].is_preferred
    assert await replace_text(client, uri, fixed, version=2) == []


async def test_an_unsafe_fix_is_titled_unsafe_and_not_preferred(client: LanguageClient, tmp_path: Path):
    diagnostics = await open_document(client, tmp_path / "unsafe.py", SHARED)
    assert [d.code for d in diagnostics] == ["TCV106"]
    (fix, _noqa) = await code_actions(client, (tmp_path / "unsafe.py").as_uri(), diagnostics, only=["quickfix"])
    assert fix.title.startswith("Fix TCV106 (unsafe): ")
    assert not fix.is_preferred


async def test_fix_all_applies_the_safe_fixes_only(client: LanguageClient, tmp_path: Path):
    text = SHARED + GRAD.replace("import torch\n", "")
    path = tmp_path / "all.py"
    uri = path.as_uri()
    diagnostics = await open_document(client, path, text)
    assert sorted(d.code for d in diagnostics) == ["TCV101", "TCV106"]
    (action,) = await code_actions(client, uri, [], only=["source.fixAll"])
    assert action.kind == "source.fixAll.tensorconv"
    fixed = apply(text, action.edit.changes[uri])
    assert fixed == text.replace("scores.numpy()", "scores.detach().numpy()")
    assert [d.code for d in await replace_text(client, uri, fixed, version=2)] == ["TCV106"]


async def test_noqa_action_adds_then_merges_a_noqa_comment(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "noqa.py"
    uri = path.as_uri()
    text = GRAD.replace("values = scores.numpy()", "values = scores.numpy()  # noqa: E501")
    diagnostics = await open_document(client, path, text)
    noqa = [a for a in await code_actions(client, uri, diagnostics) if a.title == "Disable TCV101 for this line"]
    merged = apply(text, noqa[0].edit.changes[uri])
    assert merged.splitlines()[4] == "values = scores.numpy()  # noqa: E501, TCV101"
    assert await replace_text(client, uri, merged, version=2) == []

    bare = GRAD
    diagnostics = await replace_text(client, uri, bare, version=3)
    noqa = [a for a in await code_actions(client, uri, diagnostics) if a.title == "Disable TCV101 for this line"]
    added = apply(bare, noqa[0].edit.changes[uri])
    assert added.splitlines()[4] == "values = scores.numpy()  # noqa: TCV101"
    assert await replace_text(client, uri, added, version=4) == []


async def test_actions_of_an_older_version_are_not_offered(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "stale.py"
    uri = path.as_uri()
    stale = await open_document(client, path, GRAD)
    await replace_text(client, uri, "\n" + GRAD, version=2)
    assert await code_actions(client, uri, stale, only=["quickfix"]) == []


async def test_a_broken_document_gives_tcv001_and_the_server_keeps_working(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "broken.py"
    uri = path.as_uri()
    (diagnostic,) = await open_document(client, path, GRAD.replace("scores.numpy()", "scores.numpy(("))
    assert diagnostic.code == "TCV001"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert "cannot parse" in diagnostic.message
    assert await code_actions(client, uri, [diagnostic]) == []  # no fix, no noqa: the file was not checked
    assert await code_actions(client, uri, [], only=["source.fixAll"]) == []
    assert [d.code for d in await replace_text(client, uri, GRAD, version=2)] == ["TCV101"]


async def test_config_comes_from_the_nearest_pyproject_and_is_reread_when_it_changes(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.tensorconv]\nignore = ["TCV101"]\n')
    path = project / "src" / "model.py"
    assert await open_document(client, path, GRAD) == []

    pyproject.write_text('[tool.tensorconv]\nignore = ["TCV2"]\n')
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(changes=[types.FileEvent(uri=pyproject.as_uri(), type=types.FileChangeType.Changed)])
    )
    assert [d.code for d in await diagnostics_for(client, path.as_uri())] == ["TCV101"]


async def test_saving_an_open_pyproject_rereads_the_config(client: LanguageClient, tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.tensorconv]\nignore = ["TCV101"]\n')
    path = tmp_path / "saved.py"
    assert await open_document(client, path, GRAD) == []
    pyproject.write_text("[tool.tensorconv]\n")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=pyproject.as_uri())))
    assert [d.code for d in await diagnostics_for(client, path.as_uri())] == ["TCV101"]


async def test_an_invalid_pyproject_is_named_in_a_message_and_the_defaults_apply(client: LanguageClient, tmp_path: Path):
    project = tmp_path / "bad"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.tensorconv]\nfix-style = "sideways"\n')
    assert [d.code for d in await open_document(client, project / "m.py", GRAD)] == ["TCV101"]
    (message,) = [m for m in client.messages if "pyproject.toml" in m.message]
    assert message.type == types.MessageType.Error
    assert str(project / "pyproject.toml") in message.message and "fix-style" in message.message


async def test_close_clears_the_diagnostics(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "close.py"
    await open_document(client, path, GRAD)
    client.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri())))
    assert await diagnostics_for(client, path.as_uri()) == []


@pytest_lsp.fixture(config=SERVER, scope="module")
async def utf8_client(lsp_client: LanguageClient):
    record_diagnostics(lsp_client)
    capabilities = client_capabilities("neovim")
    capabilities.general = types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8])
    result = await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities, initialization_options=OPTIONS))
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    yield
    await lsp_client.shutdown_session()


async def test_columns_count_utf8_bytes_when_the_client_asks_for_utf8(utf8_client: LanguageClient, tmp_path: Path):
    text = GRAD.replace("values = scores.numpy()", 'label, values = "é😀", scores.numpy()')
    (diagnostic,) = await open_document(utf8_client, tmp_path / "utf8.py", text)
    assert diagnostic.range.start == types.Position(4, 26)  # é is 2 bytes, 😀 is 4


def test_without_torch_and_numpy_it_reports_and_shutdown_exit_end_it_with_status_0(tmp_path: Path):
    uri = (tmp_path / "grad.py").as_uri()
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None, "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": GRAD}}},
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"},
        {"jsonrpc": "2.0", "method": "exit"},
    ]
    stream = b""
    for message in messages:
        body = json.dumps(message).encode()
        stream += b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    # torch and numpy cannot be imported in this process: the server must not need them.
    code = "import sys\nsys.modules['torch'] = sys.modules['numpy'] = None\nfrom flake8_tensorconv.cli import main\nsys.exit(main(['server']))\n"
    result = subprocess.run([sys.executable, "-c", code], input=stream, capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr.decode()
    assert b'"code": "TCV101"' in result.stdout
    assert b'"id": 2' in result.stdout and b'"result": null' in result.stdout


def test_without_pygls_the_command_names_the_missing_extra():
    code = "import sys\nsys.modules['pygls'] = None\nfrom flake8_tensorconv.cli import main\nsys.exit(main(['server']))\n"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "flake8-tensorconv[server]" in result.stderr and "pygls" in result.stderr
    assert "Traceback" not in result.stderr


def notebook_cells(path: Path, texts: list[str | None]) -> tuple[list[types.NotebookCell], list[types.TextDocumentItem]]:
    """Cells of a notebook as VS Code sends them; None stands for a markdown cell."""
    cells, documents = [], []
    for number, text in enumerate(texts):
        uri = f"vscode-notebook-cell:{path}#cell{number}"
        kind = types.NotebookCellKind.Markup if text is None else types.NotebookCellKind.Code
        cells.append(types.NotebookCell(kind=kind, document=uri))
        language = "markdown" if text is None else "python"
        documents.append(types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text or "# Training\n"))
    return cells, documents


async def test_a_notebook_is_checked_as_one_program_and_reported_in_its_cells(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "train.ipynb"
    first = "import torch\nmodel = torch.nn.Linear(3, 2)\n"
    third = "scores = model(torch.ones(1, 3))\nvalues = scores.numpy()\n"
    cells, documents = notebook_cells(path, [first, None, third])
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=path.as_uri(), notebook_type="jupyter-notebook", version=1, cells=cells),
            cell_text_documents=documents,
        )
    )
    assert await diagnostics_for(client, documents[0].uri) == []
    (diagnostic,) = await diagnostics_for(client, documents[2].uri)
    assert diagnostic.code == "TCV101"
    assert diagnostic.range == types.Range(start=types.Position(1, 9), end=types.Position(1, 23))  # relative to the cell

    actions = await code_actions(client, documents[2].uri, [diagnostic], only=["quickfix"])
    assert apply(third, actions[0].edit.changes[documents[2].uri]) == third.replace("scores.numpy()", "scores.detach().numpy()")
    (fix_all,) = await code_actions(client, documents[2].uri, [], only=["source.fixAll"])
    assert list(fix_all.edit.changes) == [documents[2].uri]
    fixed = apply(third, fix_all.edit.changes[documents[2].uri])

    client.notebook_document_did_change(
        types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=path.as_uri()),
            change=types.NotebookDocumentChangeEvent(
                cells=types.NotebookDocumentCellChanges(
                    text_content=[
                        types.NotebookDocumentCellContentChanges(
                            document=types.VersionedTextDocumentIdentifier(uri=documents[2].uri, version=2),
                            changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
                        )
                    ]
                )
            ),
        )
    )
    assert await diagnostics_for(client, documents[2].uri) == []


async def test_a_cell_that_does_not_parse_gives_tcv001_there_and_the_other_cells_are_checked(client: LanguageClient, tmp_path: Path):
    path = tmp_path / "broken.ipynb"
    cells, documents = notebook_cells(
        path, ["import torch\n%matplotlib inline\n", "x = torch.ones(3).numpy((\n", "w = torch.ones(3, requires_grad=True)\nw.numpy()\n"]
    )
    client.notebook_document_did_open(
        types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=path.as_uri(), notebook_type="jupyter-notebook", version=1, cells=cells),
            cell_text_documents=documents,
        )
    )
    assert await diagnostics_for(client, documents[0].uri) == []  # the magic is IPython, not an error
    (diagnostic,) = await diagnostics_for(client, documents[1].uri)
    assert diagnostic.code == "TCV001"
    assert [diagnostic.code for diagnostic in await diagnostics_for(client, documents[2].uri)] == ["TCV101"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x = t.numpy()", "x = t.numpy()  # noqa: TCV101"),
        ("x = t.numpy()  # keep", "x = t.numpy()  # keep  # noqa: TCV101"),
        ("x = t.numpy()  # noqa:E501", "x = t.numpy()  # noqa:E501, TCV101"),
        ("x = t.numpy()  # noqa: TCV101", None),  # already there
        ("x = t.numpy() + \\", None),  # a comment cannot follow a backslash continuation
        ('x = t.numpy(), """', None),  # the line ends inside a string
    ],
)
def test_the_noqa_edit_adds_merges_or_declines(line: str, expected: str | None):
    from flake8_tensorconv.server.documents import noqa_edit
    from flake8_tensorconv.source import Source

    text = f"import torch\n{line}\n1\n\"\"\"\n"
    edit = noqa_edit(text, 2, "TCV101")
    if expected is None:
        assert edit is None
        return
    source = Source(text=text)
    start, end = source.offset(edit.start), source.offset(edit.end)
    assert (text[:start] + edit.content + text[end:]).splitlines()[1] == expected


def test_the_fix_all_edit_spans_only_what_changed():
    from flake8_tensorconv.server.documents import minimal_edit

    edit = minimal_edit("a = 1\nb = t.numpy()\nc = 3\n", "a = 1\nb = t.detach().numpy()\nc = 3\n")
    assert (edit.start, edit.end, edit.content) == ((2, 6), (2, 6), "detach().")
