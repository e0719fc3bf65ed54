"""The rule catalogue: one module per rule, found by listing this package.

A module whose name starts with ``_`` holds shared helpers, not a rule.
"""

from __future__ import annotations

import importlib
import os

from flake8_tensorconv.rules.base import Rule


def _discover() -> tuple[type[Rule], ...]:
    rules = []
    # Listed by hand: pkgutil.iter_modules imports inspect, a tenth of the package's import time.
    names = {name[:-3] for directory in __path__ for name in os.listdir(directory) if name.endswith(".py")}
    for name in sorted(names):
        if name.startswith("_") or name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{name}")
        rules.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
        )
    return tuple(sorted(rules, key=lambda rule: rule.code))


ALL_RULES: tuple[type[Rule], ...] = _discover()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Rule"]
