"""The language server: pygls glue between LSP messages and :mod:`.documents`.

Diagnostics carry what their code actions need (the fix's edits, in the client's position
encoding, and the document version they belong to), so that actions need no server state.
"""

from __future__ import annotations

import asyncio
import gc
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
from cattrs import Converter
from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import default_converter
from pygls.uris import to_fs_path

from flake8_tensorconv import __version__
from flake8_tensorconv.findings import Applicability, Edit, Finding, Position
from flake8_tensorconv.incremental import IncrementalLinter
from flake8_tensorconv.output.report import rule_url
from flake8_tensorconv.server import documents
from flake8_tensorconv.source import Source

if TYPE_CHECKING:
    from flake8_tensorconv.notebook import CodeCell

SOURCE = "tensorconv"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.tensorconv"
# Typing pauses shorter than this do not start a run; the latest text is linted once.
DEFAULT_DEBOUNCE_SECONDS = 0.2
PYTHON_SUFFIXES = (".py", ".pyi")

# Jupyter notebooks whose code cells are Python; the cells are checked together, as the CLI does.
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")
    ],
    save=True,
)


class OpenFile:
    """What the server keeps of an open file's last version, for the next version to reuse."""

    def __init__(self) -> None:
        self.linter = IncrementalLinter()
        # Its diagnostics, by finding and the text of the lines the finding names; and those of
        # the version before, which come back after a version that does not parse (TCV001 alone).
        self.diagnostics: dict[tuple, PublishedDiagnostic] = {}
        self.earlier: dict[tuple, PublishedDiagnostic] = {}


@attrs.define
class PublishedDiagnostic(types.Diagnostic):
    """A diagnostic that keeps its JSON form: a finding that a change leaves alone is written once, not once per version."""

    unstructured: dict = attrs.field(factory=dict, eq=False, repr=False)

    def for_version(self, version: int | None) -> PublishedDiagnostic:
        data = {**self.data, "version": version}
        return attrs.evolve(self, data=data, unstructured={**self.unstructured, "data": data} if self.unstructured else {})


def converter() -> Converter:
    """pygls' converter, which writes a :class:`PublishedDiagnostic` from the JSON form it keeps."""
    converter = default_converter()
    plain = converter.get_unstructure_hook(types.Diagnostic)

    def unstructure(diagnostic: types.Diagnostic) -> dict:
        if not isinstance(diagnostic, PublishedDiagnostic):
            return plain(diagnostic)
        if not diagnostic.unstructured:
            diagnostic.unstructured = plain(diagnostic)
        return diagnostic.unstructured

    converter.register_unstructure_hook(types.Diagnostic, unstructure)
    return converter


class TensorConvServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            name="tensorconv",
            version=__version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=NOTEBOOK_SYNC,
            converter_factory=converter,
        )
        self.configs = documents.ConfigStore()
        self.debounce = DEFAULT_DEBOUNCE_SECONDS
        self._pending: dict[str, asyncio.TimerHandle] = {}
        self.open_files: dict[str, OpenFile] = {}
        self._reported_config_errors: set[str] = set()

    def settle(self) -> None:
        """Exempt what the server holds now (a file's tree and findings, its own modules) from the garbage collector's scans.

        The collector's full scans walk every object that lives on: with a 2,000-line file's
        tree kept for the next change, one took tens of milliseconds, in the middle of a
        change's analysis. What is kept is freed by reference counting when it is dropped
        (trees and findings hold no cycles), so it needs no scan; the garbage of the analysis
        just made, which has cycles, is collected first.
        """
        gc.collect()
        gc.freeze()

    # ------------------------------------------------------------ diagnostics
    def schedule(self, uri: str) -> None:
        """Lint ``uri`` once typing pauses; a change before then replaces this run."""
        self.cancel(uri)
        self._pending[uri] = asyncio.get_running_loop().call_later(self.debounce, self.publish, uri)

    def cancel(self, uri: str) -> None:
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()

    def publish(self, uri: str) -> None:
        self._pending.pop(uri, None)
        notebook = self.workspace.get_notebook_document(notebook_uri=uri)
        if notebook is not None:
            self.publish_notebook(notebook)
            return
        document = self.workspace.get_text_document(uri)
        open_file = self.open_files.setdefault(uri, OpenFile())
        diagnostics = self.diagnostics(document.source, path_of(uri), document.version, open_file)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version))

    def diagnostics(self, text: str, path: str | None, version: int | None, open_file: OpenFile | None = None) -> list[types.Diagnostic]:
        """The diagnostics of a file's text; ``open_file``: what its previous version left, reused where it still holds."""
        config = self.config_for(path)
        try:
            findings = documents.lint(text, path, config, open_file.linter if open_file else None)
        except Exception as error:  # a bug of ours must not take the editor's server down
            if open_file is not None:
                open_file.linter.forget()  # start the next run from the text alone
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"tensorconv: {path or 'document'}: {traceback.format_exc()}")
            )
            findings = documents.internal_error(error, path, config)
        lines = Source(text=text).lines
        if open_file is None:
            return [self.diagnostic(finding, lines, version) for finding in findings]
        # A finding on unchanged lines is the diagnostic it was: only the version it belongs to is new.
        made: dict[tuple, PublishedDiagnostic] = {}
        for finding in findings:
            key = (finding, tuple(lines[line - 1] for line in lines_of(finding) if 0 < line <= len(lines)))
            diagnostic = open_file.diagnostics.get(key) or open_file.earlier.get(key)
            if diagnostic is None:
                diagnostic = self.diagnostic(finding, lines, version)
            elif diagnostic.data["version"] != version:
                diagnostic = diagnostic.for_version(version)
            made[key] = diagnostic
        open_file.diagnostics, open_file.earlier = made, open_file.diagnostics
        return list(made.values())

    def publish_notebook(self, notebook: types.NotebookDocument) -> None:
        """Diagnostics for every Python code cell of a notebook (an empty list clears a cell's)."""
        path = path_of(notebook.uri)
        config = self.config_for(path)
        cells = self.code_cells(notebook)
        try:
            findings = documents.lint_notebook([cell for cell, _ in cells], path, config)
        except Exception as error:  # as for a file: log it, report TCV002 in the first cell
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=f"tensorconv: {path}: {traceback.format_exc()}"))
            findings = [finding._replace(cell=cells[0][0].index) for finding in documents.internal_error(error, path, config)] if cells else []
        for cell, uri in cells:
            document = self.workspace.get_text_document(uri)
            lines = Source(text=cell.text).lines
            diagnostics = [self.diagnostic(finding, lines, document.version) for finding in findings if finding.cell == cell.index]
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version))

    def code_cells(self, notebook: types.NotebookDocument) -> list[tuple[CodeCell, str]]:
        """The notebook's Python code cells, numbered among all its cells as the CLI numbers them, with their URIs."""
        from flake8_tensorconv.notebook import CodeCell

        cells = []
        for index, cell in enumerate(notebook.cells, start=1):
            if cell.kind != types.NotebookCellKind.Code:
                continue
            document = self.workspace.get_text_document(cell.document)
            if document.language_id in (None, "python"):
                cells.append((CodeCell(index=index, text=document.source), cell.document))
        return cells

    def config_for(self, path: str | None) -> documents.DocumentConfig:
        config = self.configs.for_path(path)
        if config.error is not None and config.pyproject not in self._reported_config_errors:
            self._reported_config_errors.add(config.pyproject)  # type: ignore[arg-type]
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"tensorconv: {config.error}"))
        return config

    def config_changed(self) -> None:
        self.configs.forget()
        self._reported_config_errors.clear()
        notebooks = list(self.workspace.notebook_documents)
        cells = {cell.document for notebook in self.workspace.notebook_documents.values() for cell in notebook.cells}
        for uri, document in list(self.workspace.text_documents.items()):
            if uri not in cells and is_python(uri, document.language_id):
                self.publish(uri)
        for uri in notebooks:
            self.publish(uri)

    def diagnostic(self, finding: Finding, lines: Sequence[str], version: int | None) -> PublishedDiagnostic:
        data: dict[str, object] = {"version": version}
        if finding.fix is not None:
            data["fix"] = {
                "title": fix_title(finding),
                "safe": finding.fix.applicability is Applicability.SAFE,
                "edits": [self.text_edit(edit, lines) for edit in finding.fix.edits],
            }
        return PublishedDiagnostic(
            range=self.range(finding.start, finding.end, lines),
            message=finding.message,
            severity=types.DiagnosticSeverity.Error if finding.code < "TCV1" else types.DiagnosticSeverity.Warning,
            code=finding.code,
            code_description=types.CodeDescription(href=rule_url(finding.code)),
            source=SOURCE,
            related_information=related_information(finding),
            data=data,
        )

    # ---------------------------------------------------------------- positions
    def position(self, position: Position, lines: Sequence[str]) -> types.Position:
        """A 1-based line and code-point column as an LSP position in the negotiated encoding."""
        if position.line > len(lines):
            return types.Position(line=len(lines) - 1, character=units(lines[-1], self.workspace.position_encoding))
        text = lines[position.line - 1][: position.column]
        return types.Position(line=position.line - 1, character=units(text, self.workspace.position_encoding))

    def range(self, start: Position, end: Position, lines: Sequence[str]) -> types.Range:
        return types.Range(start=self.position(start, lines), end=self.position(end, lines))

    def text_edit(self, edit: Edit, lines: Sequence[str]) -> dict[str, object]:
        # A plain dict: it travels in Diagnostic.data, which the client sends back untouched.
        edit_range = self.range(edit.start, edit.end, lines)
        return {
            "range": {
                "start": {"line": edit_range.start.line, "character": edit_range.start.character},
                "end": {"line": edit_range.end.line, "character": edit_range.end.character},
            },
            "newText": edit.content,
        }

    # ------------------------------------------------------------- code actions
    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        document = self.workspace.get_text_document(uri)
        if not is_python(uri, document.language_id):
            return []
        only = params.context.only
        actions: list[types.CodeAction] = []
        ours = [d for d in params.context.diagnostics if d.source == SOURCE and isinstance(d.data, dict)]
        # Diagnostics of an older version carry edits for text that is no longer there.
        current = [d for d in ours if d.data.get("version") in (None, document.version)]  # type: ignore[union-attr]
        newline = Source(text=document.source).newline
        if wants(only, types.CodeActionKind.QuickFix):
            for diagnostic in current:
                fix = diagnostic.data.get("fix")  # type: ignore[union-attr]
                if fix:
                    actions.append(self.quick_fix(uri, diagnostic, fix, newline))
            # TCV001 and TCV002 say the file was not checked: a noqa comment does not change that.
            for diagnostic in (d for d in current if str(d.code) >= "TCV1"):
                action = self.noqa_action(uri, document.source, diagnostic)
                if action is not None:
                    actions.append(action)
        explicit = only is not None and wants(only, FIX_ALL)
        offered = only is None and any(d.data.get("fix", {}).get("safe") for d in current)  # type: ignore[union-attr]
        if explicit or offered:
            action = self.fix_all_action(uri, document.source)
            if action is not None:
                actions.append(action)
        return actions

    def quick_fix(self, uri: str, diagnostic: types.Diagnostic, fix: dict, newline: str) -> types.CodeAction:
        edits = [
            types.TextEdit(range=range_from_data(edit["range"]), new_text=edit["newText"].replace("\n", newline))
            for edit in fix["edits"]
        ]
        return types.CodeAction(
            title=fix["title"],
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=types.WorkspaceEdit(changes={uri: edits}),
            is_preferred=bool(fix["safe"]),
        )

    def noqa_action(self, uri: str, text: str, diagnostic: types.Diagnostic) -> types.CodeAction | None:
        code = str(diagnostic.code)
        line = diagnostic.range.start.line + 1
        edit = documents.noqa_edit(text, line, code)
        if edit is None:
            return None
        lines = Source(text=text).lines
        text_edit = types.TextEdit(range=self.range(edit.start, edit.end, lines), new_text=edit.content)
        return types.CodeAction(
            title=f"Disable {code} for this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=types.WorkspaceEdit(changes={uri: [text_edit]}),
        )

    def fix_all_action(self, uri: str, text: str) -> types.CodeAction | None:
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            return self.fix_all_notebook_action(notebook)
        path = path_of(uri)
        edit = documents.fix_all(text, path, self.config_for(path))
        if edit is None:
            return None
        lines = Source(text=text).lines
        text_edit = types.TextEdit(range=self.range(edit.start, edit.end, lines), new_text=edit.content)
        return types.CodeAction(
            title="Fix all safe tensorconv findings",
            kind=FIX_ALL,
            edit=types.WorkspaceEdit(changes={uri: [text_edit]}),
        )

    def fix_all_notebook_action(self, notebook: types.NotebookDocument) -> types.CodeAction | None:
        """Fix-all asked in one cell fixes the notebook: the cells are analysed together."""
        path = path_of(notebook.uri)
        cells = self.code_cells(notebook)
        edits = documents.fix_notebook([cell for cell, _ in cells], path, self.config_for(path))
        if not edits:
            return None
        changes = {}
        for cell, uri in cells:
            if cell.index in edits:
                edit = edits[cell.index]
                lines = Source(text=cell.text).lines
                changes[uri] = [types.TextEdit(range=self.range(edit.start, edit.end, lines), new_text=edit.content)]
        return types.CodeAction(title="Fix all safe tensorconv findings", kind=FIX_ALL, edit=types.WorkspaceEdit(changes=changes))


def units(text: str, encoding: str | None) -> int:
    """The length of ``text`` in the code units of a position encoding (UTF-16 unless negotiated)."""
    if text.isascii() or encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def lines_of(finding: Finding) -> set[int]:
    """The lines whose text a finding's diagnostic is made from (its range, its evidence's and its fix's edits')."""
    lines = {finding.start.line, finding.end.line}
    for related in finding.related:
        lines.update((related.start.line, related.end.line))
    if finding.fix is not None:
        for edit in finding.fix.edits:
            lines.update((edit.start.line, edit.end.line))
    return lines


def fix_title(finding: Finding) -> str:
    assert finding.fix is not None
    unsafe = " (unsafe)" if finding.fix.applicability is Applicability.UNSAFE else ""
    return f"Fix {finding.code}{unsafe}: {finding.fix.message}"


def related_information(finding: Finding) -> list[types.DiagnosticRelatedInformation] | None:
    """The finding's evidence as related locations.

    Seam: a Finding names its evidence in its message only; once it carries the evidence's
    locations (DESIGN.md: also SARIF relatedLocations), they become
    DiagnosticRelatedInformation here.
    """
    return None


def range_from_data(data: dict) -> types.Range:
    start, end = data["start"], data["end"]
    return types.Range(start=types.Position(start["line"], start["character"]), end=types.Position(end["line"], end["character"]))


def wants(only: Sequence[str] | None, kind: str) -> bool:
    """Whether a code action request restricted to ``only`` asks for actions of ``kind``."""
    return only is None or any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def is_python(uri: str, language_id: str | None) -> bool:
    return language_id == "python" or uri.endswith(PYTHON_SUFFIXES)


def build_server() -> TensorConvServer:
    server = TensorConvServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: TensorConvServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("debounceMs"), (int, float)):
            ls.debounce = max(0.0, options["debounceMs"] / 1000)

    @server.feature(types.INITIALIZED)
    def initialized(ls: TensorConvServer, params: types.InitializedParams) -> None:
        watched = ls.client_capabilities.workspace and ls.client_capabilities.workspace.did_change_watched_files
        if watched and watched.dynamic_registration:
            ls.client_register_capability(
                types.RegistrationParams(
                    registrations=[
                        types.Registration(
                            id="tensorconv-pyproject",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=types.DidChangeWatchedFilesRegistrationOptions(
                                watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
                            ),
                        )
                    ]
                )
            )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TensorConvServer, params: types.DidOpenTextDocumentParams) -> None:
        if is_python(params.text_document.uri, params.text_document.language_id):
            ls.publish(params.text_document.uri)
            ls.settle()

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TensorConvServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if is_python(uri, ls.workspace.get_text_document(uri).language_id):
            ls.schedule(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: TensorConvServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("/pyproject.toml"):
            ls.config_changed()
        elif is_python(uri, ls.workspace.get_text_document(uri).language_id):
            ls.cancel(uri)
            ls.publish(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TensorConvServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.open_files.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    # pygls keeps the notebook and its cells' texts in the workspace before these run.
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: TensorConvServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.publish(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: TensorConvServer, params: types.DidChangeNotebookDocumentParams) -> None:
        structure = params.change.cells.structure if params.change.cells else None
        for removed in (structure.did_close or []) if structure else []:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=removed.uri, diagnostics=[]))
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: TensorConvServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.cancel(params.notebook_document.uri)
        ls.publish(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: TensorConvServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.cancel(params.notebook_document.uri)
        for cell in params.cell_text_documents:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TensorConvServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("/pyproject.toml") for change in params.changes):
            ls.config_changed()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def code_action(ls: TensorConvServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return ls.code_actions(params)

    return server


def path_of(uri: str) -> str | None:
    return to_fs_path(uri) if uri.startswith("file:") else None
