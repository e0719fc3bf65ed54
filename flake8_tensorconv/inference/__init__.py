"""Provenance inference: an abstract interpreter over one file's ``ast``.

The parts, by concern: ``files`` (imports, aliases, the file's classes and helpers),
``statements``, ``expressions``, ``calls`` (torch and NumPy functions, methods),
``modules`` (nn.Module instances and their outputs), ``guards`` (refinement by tests,
grad-mode switches); ``interpreter`` composes them.
"""

from flake8_tensorconv.inference.files import FileFacts, LazyByName, analyze_file_facts, collect_aliases, iter_statements
from flake8_tensorconv.inference.interpreter import Interpreter
from flake8_tensorconv.inference.support import Env, Listener, State

__all__ = [
    "Env",
    "FileFacts",
    "Interpreter",
    "LazyByName",
    "Listener",
    "State",
    "analyze_file_facts",
    "collect_aliases",
    "iter_statements",
]
