"""Notebooks: code cells checked together, IPython syntax kept, positions per cell (Ruff's numbering),
fixes that change no byte outside the edited cells' source, and every output format naming the cell."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flake8_tensorconv.config import Settings
from flake8_tensorconv.examples import all_fixtures
from flake8_tensorconv.findings import Position
from flake8_tensorconv.notebook import CellParseError, CodeCell, NotebookError, _mask, fix_cells, lint_cells, read_notebook

NOTEBOOKS = Path(__file__).resolve().parent / "notebooks"
SARIF_SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "sarif-schema-2.1.0.json"
# training.ipynb: as nbformat writes it (indent 1, sorted keys, raw UTF-8, sources as lists of
# lines, final newline). training_ascii.ipynb: the same cells as another writer saves them
# (indent 2, non-ASCII escaped, sources as one string, no final newline).
FIXTURES = ["training.ipynb", "training_ascii.ipynb"]
TCV101 = "`.numpy()` on a tensor that may require grad raises RuntimeError; call `.detach()` first"
# The evidence names the cell and the row where the value comes from, not the joined source's line.
EVIDENCE = " (`out` comes from `model(torch.ones(1, 3))` on line 2 of cell 3, outside `no_grad`)"


def codes_and_cells(findings):
    return [(f.code, f.cell, f.start.line, f.start.column) for f in findings]


# --------------------------------------------------------------------- the engine on cells
def test_a_name_defined_in_one_cell_is_known_in_the_next():
    cells = [
        CodeCell(1, "import torch\nmodel = torch.nn.Linear(3, 2)"),
        CodeCell(3, "out = model(torch.ones(1, 3))\n"),
        CodeCell(4, "# plot it\narr = out.numpy()"),
    ]
    assert codes_and_cells(lint_cells(cells, Settings())) == [("TCV101", 4, 2, 6)]
    assert lint_cells(cells[1:], Settings()) == []  # without the first cell nothing says `model` is a module


def test_fix_cells_returns_the_new_texts_and_leaves_other_cells_alone():
    cells = [CodeCell(2, "import torch\n%time out = torch.nn.Linear(3, 2)(torch.ones(1, 3))\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))"),
             CodeCell(5, "arr = out.numpy()\nlst = out.numpy()")]
    result = fix_cells(cells, Settings())
    assert [cell.text for cell in result.cells] == [cells[0].text, "arr = out.detach().numpy()\nlst = out.detach().numpy()"]
    assert [(before.index, after.index) for before, after in result.changed] == [(5, 5)]
    assert len(result.applied) == 2 and result.remaining == []
    assert fix_cells(result.cells, Settings()).changed == []


@pytest.mark.parametrize(
    "line",
    [
        "%matplotlib inline",
        "!pip install torch",
        "!!ls",
        "files = !ls *.py",
        "a, b = %sx echo 1 2",
        "?torch.tensor",
        "torch.tensor?",
        "torch.tensor??",
        "np.*load*?",
        "%config InlineBackend.figure_format = 'retina'",
        "!echo a \\\n  b",
        "pip install torch==2.1",
        "cd ../data",
        "env CUDA_VISIBLE_DEVICES=0",
    ],
)
def test_ipython_syntax_is_kept_and_never_unparsable(line):
    cells = [CodeCell(1, f"import torch\nx = torch.ones(3, requires_grad=True)\n{line}\ny = x.numpy()\n")]
    findings = lint_cells(cells, Settings())
    assert [(f.code, f.start.line) for f in findings] == [("TCV101", 3 + line.count("\n") + 1)]
    assert fix_cells(cells, Settings()).cells[0].text == cells[0].text.replace("\ny = x.numpy()", "\ny = x.detach().numpy()")


def test_magics_inside_blocks_are_masked_with_their_indentation():
    text = "import torch\n\ndef f(x):\n    if x.requires_grad:\n        %time x = x.detach()\n    !echo\n    return x.numpy()\n"
    assert lint_cells([CodeCell(1, text)], Settings()) == []


def test_a_cell_magic_makes_the_whole_cell_not_python():
    cells = [
        CodeCell(1, "import torch\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))"),
        CodeCell(2, "%%writefile helper.py\narr = out.numpy()"),
        CodeCell(3, "\n%%bash\nif [ -f x ]; then echo out.numpy(; fi"),
        CodeCell(4, "arr = out.numpy()"),
    ]
    assert codes_and_cells(lint_cells(cells, Settings())) == [("TCV101", 4, 1, 6)]
    assert [cell.text for cell in fix_cells(cells, Settings()).cells[:3]] == [cell.text for cell in cells[:3]]


@pytest.mark.parametrize(
    "line",
    [
        'print("a = !b", "why?")',
        "ok = (x.sum()\n      != 3)",
        "rest = (7\n        % 3)",
        "s = '''\n%not a magic\n!nor this\n'''",
        "value = 3  # is it?",
        "time = 3",
        "ls -l",
        "pip = run(\n    3)",
    ],
)
def test_python_that_looks_like_ipython_is_still_python(line):
    """These lines are Python (a string, an operator in brackets, a comment): analysed, not masked."""
    cells = [CodeCell(1, f"import torch\nx = torch.ones(3, requires_grad=True)\n{line}\ny = x.numpy()\n")]
    assert [f.start.line for f in lint_cells(cells, Settings())] == [3 + line.count("\n") + 1]
    assert _mask(cells[0].text.splitlines())[0] == cells[0].text.splitlines()


def test_masking_keeps_line_numbers_and_indentation():
    text = "for i in range(2):\n    !echo $i \\\n        more\n    x = i?\n%%time is no cell magic here\n"
    assert _mask(text.splitlines())[0] == ["for i in range(2):", "    pass", "", "    pass", "pass"]


def test_timing_magics_keep_the_statement_they_run():
    """`%time t = t.detach()` runs the assignment: it is analysed, at its own columns."""
    text = "def f(t):\n    %time t = t.detach()\n    return t\n%timeit -n 3 y = f(1)\n%%time is no cell magic here"
    masked, shifts = _mask(text.splitlines())
    assert masked == ["def f(t):", "    t = t.detach()", "    return t", "y = f(1)", "pass"]
    assert shifts == [0, 6, 0, 13, 0]
    cells = [CodeCell(1, "import torch\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))"), CodeCell(2, "%time arr = out.numpy()")]
    (finding,) = lint_cells(cells, Settings())
    assert (finding.cell, finding.start) == (2, Position(1, 12))
    assert fix_cells(cells, Settings()).cells[1].text == "%time arr = out.detach().numpy()"


def test_a_timing_cell_magic_keeps_its_body_and_others_empty_the_cell():
    assert _mask(["%%time", "x = 1"])[0] == ["", "x = 1"]
    assert _mask(["%%bash", "ls"])[0] == ["", ""]


def test_a_cell_indented_as_a_whole_runs_dedented_as_in_ipython():
    cells = [CodeCell(1, "import torch\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))"), CodeCell(2, "  # plot\n  if True:\n      arr = out.numpy()\n\n  arr")]
    (finding,) = lint_cells(cells, Settings())
    assert (finding.cell, finding.start, finding.fix.edits[0].start) == (2, Position(3, 12), Position(3, 15))
    assert fix_cells(cells, Settings()).cells[1].text == "  # plot\n  if True:\n      arr = out.detach().numpy()\n\n  arr"


def test_a_cell_that_is_not_python_is_reported_there_and_the_other_cells_are_checked():
    """Jupyter compiles each cell on its own: the broken cell fails alone and the others still run."""
    cells = [
        CodeCell(2, "import torch\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\n"),
        CodeCell(4, "def exercise(x):\n    # YOUR CODE HERE\n"),
        CodeCell(5, "    print 'indented, and Python 2'\n"),
        CodeCell(6, "arr = out.numpy()\n"),
    ]
    findings = lint_cells(cells, Settings())
    assert [(f.code, f.cell, f.start.line) for f in findings] == [("TCV001", 4, 2), ("TCV001", 5, 1), ("TCV101", 6, 1)]
    assert findings[0].message.startswith("cannot check this cell: cannot parse: ")
    result = fix_cells(cells, Settings())
    assert [after.index for _, after in result.changed] == [6]
    assert result.cells[3].text == "arr = out.detach().numpy()\n" and result.cells[1:3] == cells[1:3]
    assert [(f.code, f.cell) for f in result.remaining] == [("TCV001", 4), ("TCV001", 5)]


def test_what_a_broken_cell_would_have_defined_is_unknown_to_the_others():
    """Its code never ran: nothing it binds or sanitises reaches the later cells."""
    cells = [CodeCell(1, "import torch\nx = torch.ones(3, requires_grad=True)\n"), CodeCell(2, "x = x.detach(\n"), CodeCell(3, "y = x.numpy()\n")]
    assert [(f.code, f.cell) for f in lint_cells(cells, Settings())] == [("TCV001", 2), ("TCV101", 3)]


def test_a_fix_that_would_span_two_cells_is_not_offered():
    cells = [CodeCell(1, "import torch\nout = torch.nn.Linear(3, 2)(torch.ones(1, 3))\narr = (out"), CodeCell(2, ".numpy())\n")]
    (finding,) = lint_cells(cells, Settings())
    assert (finding.code, finding.cell, finding.start, finding.fix) == ("TCV101", 1, Position(3, 7), None)
    assert fix_cells(cells, Settings()).changed == []


def test_noqa_in_a_cell():
    cells = [CodeCell(1, "import torch\nx = torch.ones(3, requires_grad=True)"), CodeCell(2, "y = x.numpy()  # noqa: TCV101")]
    assert lint_cells(cells, Settings()) == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"cells": [', "invalid JSON"),
        (b"[1, 2]", 'no "cells" list'),
        (b'{"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "cells": []}', "nbformat 3"),
        (b"\xff\xfe{}", "cannot decode as UTF-8"),
    ],
)
def test_what_is_not_a_notebook_is_an_error_that_says_why(content, reason):
    with pytest.raises(NotebookError, match=reason):
        read_notebook(content)


def test_markdown_raw_and_other_languages_are_skipped():
    notebook = read_notebook((NOTEBOOKS / "training.ipynb").read_bytes())
    assert [cell.index for cell in notebook.cells] == [2, 3, 4, 5, 6, 8]
    r_notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "R", "name": "ir"}},
                  "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": "library(torch)"}]}
    assert read_notebook(json.dumps(r_notebook).encode()).cells == []


MAGICS = ["%matplotlib inline", "!pip install torch", "files = !ls", "torch.tensor?", "?np.asarray", "%time y = 1"]
EVERYTHING = Settings(select=("ALL",))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from([fixture.source for fixture in all_fixtures()]), data=st.data())
def test_fixture_code_cut_into_cells_with_magics_never_crashes_and_keeps_the_magics(seed, data):
    """Each rule's fixture, cut into cells at random lines, with magics between statements."""
    lines = seed.splitlines(keepends=True)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(len(lines) - 1, 1)), max_size=4)))
    texts = ["".join(lines[start:end]) for start, end in zip([0, *cuts], [*cuts, len(lines)])]
    magic = data.draw(st.sampled_from(MAGICS))
    cells = [CodeCell(2 * number + 1, f"{magic}\n{text}" if number % 2 else text) for number, text in enumerate(texts)]
    try:
        findings = lint_cells(cells, EVERYTHING)
        result = fix_cells(cells, EVERYTHING, unsafe=True)
    except CellParseError as error:
        assert error.cell in {cell.index for cell in cells}
        return
    by_index = {cell.index: cell.text.split("\n") for cell in cells}
    for finding in findings:
        assert 1 <= finding.start.line <= len(by_index[finding.cell]) and finding.start.column <= len(by_index[finding.cell][finding.start.line - 1])
    for before, after in zip(cells, result.cells):
        assert after.text.startswith(magic) == before.text.startswith(magic)
    assert fix_cells(result.cells, EVERYTHING, unsafe=True).changed == []


def test_an_empty_notebook_has_nothing_to_report():
    notebook = read_notebook(b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    assert notebook.cells == [] and lint_cells(notebook.cells, EVERYTHING) == []


def test_the_pre_commit_hooks_take_notebooks():
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert hooks.count("  types_or: [python, pyi, jupyter]\n") == hooks.count("- id: ") == 2


# --------------------------------------------------------------------- the command line
@pytest.fixture
def project(tmp_path):
    for name in FIXTURES:
        shutil.copy(NOTEBOOKS / name, tmp_path / name)
    return tmp_path


def test_text_output_names_the_cell(tensorconv, project):
    result = tensorconv("check", "--no-cache", "training.ipynb", cwd=project)
    assert result.returncode == 1, result.stderr
    assert result.stdout.splitlines()[0] == f"training.ipynb:cell 4:2:7: TCV101 [*] {TCV101}{EVIDENCE}"
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == [
        "training.ipynb:cell 4:2:7", "training.ipynb:cell 5:2:1", "training.ipynb:cell 6:4:11"
    ]


def test_json_output_has_the_cell_and_cell_relative_rows(tensorconv, project):
    findings = json.loads(tensorconv("check", "--no-cache", "--output-format", "json", "training.ipynb", cwd=project).stdout)
    first = findings[0]
    assert (first["code"], first["cell"], first["location"], first["end_location"], first["noqa_row"]) == (
        "TCV101", 4, {"row": 2, "column": 7}, {"row": 2, "column": 18}, 2
    )
    assert first["fix"]["edits"] == [{"content": ".detach()", "location": {"row": 2, "column": 10}, "end_location": {"row": 2, "column": 10}}]
    assert [finding["cell"] for finding in findings] == [4, 5, 6]


def test_sarif_names_the_cell_and_stays_valid(tensorconv, project):
    jsonschema = pytest.importorskip("jsonschema")
    (project / "script.py").write_text("import torch\nx = torch.ones(3, requires_grad=True).numpy()\n")
    log = json.loads(tensorconv("check", "--no-cache", "--output-format", "sarif", "training.ipynb", "script.py", cwd=project).stdout)
    if SARIF_SCHEMA.is_file():
        jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text()))
    notebook_result, *_, script_result = log["runs"][0]["results"]
    assert notebook_result["properties"] == {"cell": 4}
    assert notebook_result["message"]["text"] == f"cell 4: {TCV101}{EVIDENCE}"
    assert notebook_result["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 7, "endLine": 2, "endColumn": 18}
    assert "fixes" not in notebook_result  # cell-relative edits would corrupt the .ipynb file if a tool applied them
    assert "properties" not in script_result and "fixes" in script_result


def test_github_annotations_name_the_cell(tensorconv, project):
    first = tensorconv("check", "--no-cache", "--output-format", "github", "training.ipynb", cwd=project).stdout.splitlines()[0]
    assert first == (
        "::warning file=training.ipynb,line=2,col=7,endLine=2,endColumn=18,title=TCV101 (cell 4)"
        f"::cell 4:2:7: TCV101 {TCV101}{EVIDENCE}"
    )


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_fix_changes_only_the_edited_source_lines(tensorconv, project, name, newline):
    import nbformat  # a test dependency: the written notebook must validate
    path = project / name
    original = path.read_bytes().replace(b"\n", newline)
    path.write_bytes(original)
    result = tensorconv("check", "--no-cache", "--fix", name, cwd=project)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    fixed = path.read_bytes()
    before, after = original.split(newline), fixed.split(newline)
    assert len(before) == len(after)
    changed = [(old, new) for old, new in zip(before, after) if old != new]
    if name == "training.ipynb":  # one JSON string per source line: exactly the three edited lines differ
        assert changed == [
            (b'    "arr = out.numpy()\\n",', b'    "arr = out.detach().numpy()\\n",'),
            (b'    "out.numpy()"', b'    "out.detach().numpy()"'),  # the body of a %%timeit cell is Python
            (b'    "weights = torch.Tensor(labels)\\n",', b'    "weights = torch.as_tensor(labels, dtype=torch.get_default_dtype())\\n",'),
        ]
    else:  # each source is one JSON string on one line: those three lines differ, in those words only
        assert [old.replace(b"out.numpy()", b"out.detach().numpy()").replace(
            b"torch.Tensor(labels)", b"torch.as_tensor(labels, dtype=torch.get_default_dtype())") for old, _ in changed] == [new for _, new in changed]
        assert len(changed) == 3 and all(new.lstrip().startswith(b'"source": ') for _, new in changed)
    notebook = nbformat.reads(fixed.decode("utf-8"), as_version=4)
    nbformat.validate(notebook)
    assert [cell.source for cell in notebook.cells if cell.cell_type == "code"][4].startswith("!pip list | grep torch\nfiles = !ls\n")
    again = tensorconv("check", "--no-cache", "--fix", name, cwd=project)
    assert again.returncode == 0 and path.read_bytes() == fixed  # idempotent


def test_diff_names_each_changed_cell_and_writes_nothing(tensorconv, project):
    before = (project / "training.ipynb").read_bytes()
    result = tensorconv("check", "--no-cache", "--diff", "training.ipynb", cwd=project)
    assert result.returncode == 1
    assert (project / "training.ipynb").read_bytes() == before
    assert result.stdout == (
        "--- training.ipynb:cell 4\n+++ training.ipynb:cell 4\n@@ -1,3 +1,3 @@\n"
        " # predictions, for the plot (étiquettes → colonnes)\n-arr = out.numpy()\n+arr = out.detach().numpy()\n plt.imshow(arr)\n"
        "--- training.ipynb:cell 5\n+++ training.ipynb:cell 5\n@@ -1,2 +1,2 @@\n %%timeit\n-out.numpy()\n+out.detach().numpy()\n"
        "--- training.ipynb:cell 6\n+++ training.ipynb:cell 6\n@@ -1,5 +1,5 @@\n"
        " !pip list | grep torch\n files = !ls\n labels = np.array([0, 1, 2])\n-weights = torch.Tensor(labels)\n"
        "+weights = torch.as_tensor(labels, dtype=torch.get_default_dtype())\n torch.Tensor?\n"
    )


def test_invalid_json_is_tcv001_naming_the_file(tensorconv, tmp_path):
    (tmp_path / "broken.ipynb").write_text('{"cells": [\n  {"cell_type": "code",\n')
    (tmp_path / "list.ipynb").write_text("[]\n")
    result = tensorconv("check", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("broken.ipynb:3:1: TCV001 ") and "invalid JSON" in lines[0]
    assert lines[1].startswith("list.ipynb:1:1: TCV001 ") and 'no "cells" list' in lines[1]


def test_a_syntax_error_in_a_cell_is_tcv001_in_that_cell_and_the_rest_is_fixed(tensorconv, tmp_path):
    def code(*lines):
        return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": list(lines)}

    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# x"},
             code("import numpy as np\n", "y = x.numpy(\n"),
             code("import torch\n", "out = torch.nn.Linear(3, 2)(torch.ones(1, 3))\n", "arr = out.numpy()")]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    listed = tensorconv("check", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert listed.returncode == 1 and listed.stdout.splitlines()[:2] == [
        "nb.ipynb:cell 2:2:12: TCV001 cannot check this cell: cannot parse: '(' was never closed (the notebook's other cells are checked)",
        "nb.ipynb:cell 3:3:7: TCV101 [*] `.numpy()` on a tensor that may require grad raises RuntimeError; call `.detach()` first"
        " (`out` comes from `torch.nn.Linear(3, 2)(torch.ones(1, 3))` on line 2 of cell 3, outside `no_grad`)",
    ]
    ignored = tensorconv("check", "--no-cache", "--ignore", "TCV001", "nb.ipynb", cwd=tmp_path)
    assert [line.split()[2] for line in ignored.stdout.splitlines()] == ["TCV101"]
    fixed = tensorconv("check", "--no-cache", "--fix", "nb.ipynb", cwd=tmp_path)
    assert fixed.returncode == 1 and fixed.stdout.startswith("nb.ipynb:cell 2:2:")
    written = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert written[1] == cells[1] and written[2]["source"][2] == "arr = out.detach().numpy()"


def test_folders_yield_notebooks_but_not_checkpoints_and_cache_and_jobs_agree(tensorconv, project):
    (project / "sub").mkdir()
    shutil.copy(NOTEBOOKS / "training.ipynb", project / "sub" / "copy.ipynb")
    (project / ".ipynb_checkpoints").mkdir()
    shutil.copy(NOTEBOOKS / "training.ipynb", project / ".ipynb_checkpoints" / "training-checkpoint.ipynb")
    serial = tensorconv("check", "--no-cache", "-j1", ".", cwd=project)
    files = sorted({line.split(":")[0] for line in serial.stdout.splitlines()})
    assert files == ["sub/copy.ipynb", "training.ipynb", "training_ascii.ipynb"]
    assert len(serial.stdout.splitlines()) == 9
    assert tensorconv("check", "--no-cache", "-j2", ".", cwd=project).stdout == serial.stdout
    first = tensorconv("check", ".", cwd=project)
    cached = tensorconv("check", ".", cwd=project)
    assert first.stdout == cached.stdout == serial.stdout
    fixed = tensorconv("check", "--fix", ".", cwd=project)  # the cache knows fixes remain: the engine makes them
    assert fixed.returncode == 0 and "Found 9 errors (9 fixed, 0 remaining)." in fixed.stderr


# --------------------------------------------------------------------- flake8 users: nbqa
def test_nbqa_runs_flake8_with_the_plugin_on_a_notebook(project):
    if importlib.util.find_spec("nbqa") is None:
        pytest.skip("nbqa is not installed (it is in the test extra)")
    result = subprocess.run(
        [sys.executable, "-m", "nbqa", "flake8", "training.ipynb", "--select=TCV"], cwd=project, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1, result.stderr
    # nbqa numbers the code cells only: the 4th cell of the notebook is its 3rd code cell.
    # nbqa maps positions back to cells but not the text: the evidence's line is one of nbqa's own script.
    assert any(line.startswith(f"training.ipynb:cell_3:2:7: TCV101 [*] {TCV101}") for line in result.stdout.splitlines()), result.stdout


def test_positions_are_cell_relative_in_the_public_api():
    notebook = read_notebook((NOTEBOOKS / "training.ipynb").read_bytes())
    findings = lint_cells(notebook.cells, Settings())
    assert [(f.cell, f.start) for f in findings] == [(4, Position(2, 6)), (5, Position(2, 0)), (6, Position(4, 10))]


def test_the_readme_shows_what_the_user_sees(tensorconv, project):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    for command in ("check training.ipynb", "check --diff training.ipynb"):
        shown = readme.split(f"$ tensorconv {command}\n", 1)[1].split("\n$ ", 1)[0].split("\n```", 1)[0]
        result = tensorconv(*command.split(), "--no-cache", cwd=project)
        assert shown == (result.stdout + result.stderr).rstrip("\n")


def test_add_noqa_writes_into_the_cells_and_keeps_every_other_byte(tensorconv, project):
    import nbformat

    path = project / "training.ipynb"
    before = path.read_bytes()
    result = tensorconv("check", "--no-cache", "--add-noqa", "training.ipynb", cwd=project)
    assert result.returncode == 0 and "Added 3 noqa directives." in result.stderr, result.stderr
    after = path.read_bytes()
    changed = [(old, new) for old, new in zip(before.split(b"\n"), after.split(b"\n")) if old != new]
    assert [new for _, new in changed] == [
        b'    "arr = out.numpy()  # noqa: TCV101\\n",',
        b'    "out.numpy()  # noqa: TCV101"',
        b'    "weights = torch.Tensor(labels)  # noqa: TCV201\\n",',
    ]
    nbformat.validate(nbformat.reads(after.decode("utf-8"), as_version=4))
    assert tensorconv("check", "--no-cache", "training.ipynb", cwd=project).returncode == 0
    again = tensorconv("check", "--no-cache", "--add-noqa", "training.ipynb", cwd=project)
    assert "Added 0 noqa directives." in again.stderr and path.read_bytes() == after


def test_a_read_only_notebook_is_not_rewritten_and_its_findings_are_shown(tensorconv, project):
    path = project / "training.ipynb"
    before = path.read_bytes()
    path.chmod(0o444)
    try:
        result = tensorconv("check", "--no-cache", "--fix", "training.ipynb", cwd=project)
    finally:
        path.chmod(0o644)
    assert result.returncode == 2 and "training.ipynb: the file is read-only" in result.stderr
    assert path.read_bytes() == before
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == [
        "training.ipynb:cell 4:2:7", "training.ipynb:cell 5:2:1", "training.ipynb:cell 6:4:11"
    ]
