"""The notebook converter of the precision benchmark: labels point at lines of its output."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "corpus" / "nb2py.py"
spec = importlib.util.spec_from_file_location("nb2py", SCRIPT)
nb2py = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nb2py)


def notebook(*sources: str) -> dict:
    return {"cells": [{"cell_type": "code", "source": source} for source in sources], "nbformat": 4}


def test_a_block_holding_only_a_magic_still_parses_and_keeps_its_lines():
    source = "if IN_COLAB:\n    !pip install gym\n    %load_ext autoreload\nx = 1"
    text = nb2py.notebook_to_python(notebook(source))
    ast.parse(text)
    assert text.splitlines() == ["if IN_COLAB:", "    pass  # !pip install gym", "    pass  # %load_ext autoreload", "x = 1"]


def test_top_level_magics_become_comments_and_cells_are_joined_by_one_blank_line():
    text = nb2py.notebook_to_python(notebook("%matplotlib inline\nimport torch", "torch.zeros?"))
    assert text == "# %matplotlib inline\nimport torch\n\n# torch.zeros?\n"


def test_convert_folder_skips_a_broken_notebook_by_name(tmp_path, capsys):
    (tmp_path / "good.ipynb").write_text(json.dumps(notebook("y = 2")), encoding="utf-8")
    (tmp_path / "bad.ipynb").write_text("{not json", encoding="utf-8")
    assert nb2py.convert_folder(tmp_path) == 1
    assert (tmp_path / "good.ipynb.py").read_text(encoding="utf-8") == "y = 2\n"
    assert "bad.ipynb" in capsys.readouterr().err


def test_a_line_that_continues_an_expression_is_python_even_when_it_starts_with_percent():
    source = "steps = (total\n         % every)\nx = [1,\n     !flag]\n%time f()"
    text = nb2py.notebook_to_python(notebook(source))
    assert text.splitlines() == ["steps = (total", "         % every)", "x = [1,", "     !flag]", "# %time f()"]


def test_a_magic_after_a_finished_multi_line_string_or_backslash_is_still_a_magic():
    source = 'doc = """a\n%not a magic\n"""\ny = 1 + \\\n    2\n%matplotlib inline'
    text = nb2py.notebook_to_python(notebook(source))
    assert text.splitlines()[1] == "%not a magic"
    assert text.splitlines()[-1] == "# %matplotlib inline"
    ast.parse(text)
