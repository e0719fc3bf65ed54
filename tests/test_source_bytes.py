"""--fix never loses a byte: encodings, BOM, newlines, mode, atomic writes."""

from __future__ import annotations

import io
import os
import stat
import tokenize

import pytest

from flake8_tensorconv.config import Settings
from flake8_tensorconv.engine import fix_source, lint_source
from flake8_tensorconv.source import SourceError, decode

BODY = "import torch\n\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()\n"
FIXED = BODY.replace("out.numpy()", "out.detach().numpy()")


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", [False, True])
def test_fix_keeps_newlines_and_bom(tensorconv, tmp_path, newline, bom):
    raw = BODY.replace("\n", newline).encode()
    path = tmp_path / "f.py"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + raw)
    result = tensorconv("check", "--fix", "f.py", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert path.read_bytes() == (b"\xef\xbb\xbf" if bom else b"") + FIXED.replace("\n", newline).encode()


def test_mixed_newlines_outside_the_edit_are_untouched(tensorconv, tmp_path):
    raw = b"import torch\r\n\nmodel = torch.nn.Linear(3, 2)\r\rout = model(torch.ones(1, 3))\narr = out.numpy()\r\n# end"
    path = tmp_path / "f.py"
    path.write_bytes(raw)
    assert tensorconv("check", "--fix", "f.py", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == raw.replace(b"out.numpy()", b"out.detach().numpy()")


def test_pep263_encoding_is_kept(tensorconv, tmp_path):
    text = "# -*- coding: latin-1 -*-\nimport torch\n# café\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\narr = out.numpy()  # é\n"
    path = tmp_path / "f.py"
    path.write_bytes(text.encode("latin-1"))
    assert tensorconv("check", "--fix", "f.py", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == text.replace("out.numpy()", "out.detach().numpy()").encode("latin-1")


def test_columns_count_characters_not_bytes(tensorconv, tmp_path):
    text = "import torch\nmodel = torch.nn.Linear(3, 2)\nout = model(torch.ones(1, 3))\né = 'ü'; arr = out.numpy()\n"
    (tmp_path / "f.py").write_text(text, encoding="utf-8")
    result = tensorconv("check", "f.py", cwd=tmp_path)
    assert result.stdout.startswith("f.py:4:16: TCV101")
    assert tensorconv("check", "--fix", "f.py", cwd=tmp_path).returncode == 0
    assert (tmp_path / "f.py").read_text(encoding="utf-8").endswith("é = 'ü'; arr = out.detach().numpy()\n")


def test_file_mode_and_no_temporary_left(tensorconv, tmp_path):
    path = tmp_path / "f.py"
    path.write_text(BODY)
    os.chmod(path, 0o700)
    assert tensorconv("check", "--fix", "f.py", cwd=tmp_path).returncode == 0
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    assert [name for name in os.listdir(tmp_path) if name != ".tensorconv_cache"] == ["f.py"]


def test_write_failure_names_the_file_and_keeps_it(tmp_path, monkeypatch, capsys):
    from flake8_tensorconv import cli, source

    path = tmp_path / "f.py"
    path.write_text(BODY)

    def refuse(path: str, data: bytes) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(source.os, "replace", lambda *args: refuse("", b""))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--fix", "-j1", "f.py"]) == 2
    assert "f.py: cannot write the fixed file: Permission denied" in capsys.readouterr().err
    assert path.read_text() == BODY
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".tensorconv_cache") == ["f.py"]


def test_no_trailing_newline():
    source = decode(BODY.rstrip("\n").encode())
    assert fix_source(source, Settings()).text == FIXED.rstrip("\n")


def test_bad_cookie_is_a_source_error():
    with pytest.raises(SourceError, match="encoding"):
        decode(b"# -*- coding: klingon -*-\nimport torch\n")


@pytest.mark.parametrize(
    "raw",
    [
        b"# -*- coding: latin-1 -*-\nx = 1\n",
        b"#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\nx = 1\n",
        b"#!/usr/bin/env python\r\n# coding=latin-1\r\nx = 1\r\n",
        b"x = 1\ny = 2\n# coding: latin-1\n",  # line 3: not a cookie
        b'x = "coding: latin-1"\n',  # not a comment: not a cookie
        b"# coding: latin-1",  # one line, no newline
        b"\xef\xbb\xbfx = 1\n",
        b"\xef\xbb\xbf# coding: utf-8\nx = 1\n",
        b"",
        b"\n\n\n",
    ],
)
def test_encoding_is_what_the_interpreter_reads(raw):
    expected, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    source = decode(raw)
    assert (source.encoding, source.has_bom) == (("utf-8", True) if expected == "utf-8-sig" else (expected, False))


def test_invalid_utf8_on_the_first_line_is_a_source_error():
    with pytest.raises(SourceError) as error:
        decode(b"x = '\xff'\nimport torch\n")
    assert error.value.position.line == 1


def test_invalid_utf8_is_a_source_error_with_its_line():
    with pytest.raises(SourceError) as error:
        decode(b"import torch\nx = 1\ny = '\xff'\n")
    assert error.value.position.line == 3


def test_form_feed_does_not_shift_lines():
    source = decode(("import torch\n\x0c\n" + BODY.split("\n", 1)[1]).encode())
    (finding,) = lint_source(source, Settings())
    assert finding.start.line == 6
