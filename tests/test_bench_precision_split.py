"""The precision benchmark's split file: a part it does not know must stop the run, not fall into the hash split."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "precision.py"
spec = importlib.util.spec_from_file_location("precision_bench", SCRIPT)
precision = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = precision  # its dataclasses look their module up
spec.loader.exec_module(precision)


def test_known_parts_are_read_and_comments_skipped(tmp_path):
    split = tmp_path / "split.txt"
    split.write_text("# header\ntuning a/b\n\nfresh-10 c  # a comment\n", encoding="utf-8")
    assert precision.read_split(split) == {"a/b": "tuning", "c": "fresh-10"}


def test_an_unknown_part_names_the_file_and_line(tmp_path):
    split = tmp_path / "split.txt"
    split.write_text("tuning a\nfresh-99 b\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"split.txt:2: .*fresh-99"):
        precision.read_split(split)


def test_the_repository_split_names_only_known_parts():
    split = precision.read_split(precision.SPLIT)
    assert set(split.values()) <= set(precision.PARTS)
    assert set(precision.HELD_OUT) <= set(precision.PARTS)
