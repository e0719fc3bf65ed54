"""The rule catalogue: one module per rule, found by listing this package.

A module whose name starts with ``_`` holds shared helpers, not a rule.
"""

from __future__ import annotations

import importlib
import pkgutil

from flake8_tensorconv.rules.base import Rule


def _discover() -> tuple[type[Rule], ...]:
    rules = []
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        rules.extend(
            value
            for value in vars(module).values()
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__
        )
    return tuple(sorted(rules, key=lambda rule: rule.code))


ALL_RULES: tuple[type[Rule], ...] = _discover()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Rule"]
