"""The flake8 face: flake8 parses the file; this hands its ast to the engine."""

from __future__ import annotations

import argparse
import ast
from collections.abc import Iterator, Sequence
from typing import Any

from flake8_tensorconv import __version__
from flake8_tensorconv.config import FIX_STYLES, Settings

# flake8 reports syntax errors itself (E999): TCV001 belongs to the command line only.
_CLI_ONLY = frozenset({"TCV001"})


class TensorConvChecker:
    name = "flake8-tensorconv"
    version = __version__

    settings = Settings()
    enabled: frozenset[str] | None = None  # None: decided by flake8 alone

    def __init__(self, tree: ast.Module, lines: Sequence[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        from flake8_tensorconv.rules import ALL_RULES

        option_manager.add_option(
            "--tensorconv-fix-style",
            default="detach-cpu",
            choices=FIX_STYLES,
            parse_from_config=True,
            help="how fixable .numpy() findings describe their fix: detach-cpu (default) or force",
        )
        option_manager.extend_default_ignore([rule.code for rule in ALL_RULES if not rule.default_enabled])

    @classmethod
    def parse_options(cls, options: argparse.Namespace) -> None:
        from flake8_tensorconv.rules import ALL_RULES

        fix_style = getattr(options, "tensorconv_fix_style", "detach-cpu")
        if fix_style not in FIX_STYLES:  # flake8 checks `choices` on the command line, not in config files
            raise SystemExit(f"flake8: tensorconv-fix-style = {fix_style!r} is not one of {', '.join(FIX_STYLES)}")
        cls.settings = Settings(select=("ALL",), fix_style=fix_style)
        enabled = _codes_flake8_reports([rule.code for rule in ALL_RULES], options)
        if enabled is not None:
            # As in the CLI, an opt-in rule runs only when its full code is selected (`--select=TCV` keeps it off).
            named = _named_in_full(options)
            enabled = frozenset(code for code in enabled if code in named or any(r.code == code and r.default_enabled for r in ALL_RULES))
        cls.enabled = enabled

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from flake8_tensorconv.engine import rule_set

        codes = self.enabled if self.enabled is not None else frozenset(
            code for code in self.settings.enabled_codes(_all_codes()) if code not in _CLI_ONLY
        )
        rules = rule_set(frozenset(codes - _CLI_ONLY - {"TCV002"}))
        if not rules.rules:
            return
        text = "".join(self.lines)
        try:
            from flake8_tensorconv.engine import lint_source, needs_parse
            from flake8_tensorconv.source import Source

            if not needs_parse(text, rules):
                return
            # The engine pauses Python's cyclic garbage collector during the analysis (engine.run_rules).
            findings = lint_source(
                Source(text=text), self.settings, rules, tree=self.tree, honour_noqa=False, prefiltered=True, path=self.filename
            )
        except Exception as error:  # report it on this file, don't abort flake8's run
            if "TCV002" in codes:
                yield 1, 0, f"TCV002 internal error in flake8-tensorconv, this file was not checked: {type(error).__name__}: {error}", type(self)
            return
        for finding in findings:
            # flake8 cannot apply fixes: a fixable finding says what `tensorconv check --fix` would do.
            fix = f" (fix: {finding.fix.message})" if finding.fix is not None else ""
            marker = " [*]" if finding.fix is not None else ""
            yield finding.start.line, finding.start.column, f"{finding.code}{marker} {finding.message}{fix}", type(self)


def _all_codes() -> list[tuple[str, bool]]:
    from flake8_tensorconv.rules import ALL_RULES

    return [(rule.code, rule.default_enabled) for rule in ALL_RULES]


def _named_in_full(options: argparse.Namespace) -> frozenset[str]:
    """The codes written out in full in flake8's select and extend-select options."""
    return frozenset(code.strip().upper() for option in ("select", "extend_select") for code in getattr(options, option, None) or ())


def _codes_flake8_reports(codes: list[str], options: argparse.Namespace) -> frozenset[str] | None:
    """The codes flake8 will show under its select/ignore options (None if that can't be asked)."""
    try:
        from flake8.style_guide import Decision, DecisionEngine

        engine = DecisionEngine(options)
        return frozenset(code for code in codes if engine.decision_for(code) is Decision.Selected)
    except Exception:  # a flake8 without this API: run everything, flake8 filters afterwards
        return None
