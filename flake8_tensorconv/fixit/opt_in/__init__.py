"""The opt-in rules as Fixit rules: ``enable = ["flake8_tensorconv.fixit.opt_in"]`` (or one by name)."""

from flake8_tensorconv.fixit._engine import lint_rules

globals().update(lint_rules(opt_in=True, module=__name__))
