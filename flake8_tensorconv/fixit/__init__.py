"""The rules as Fixit 2 rules, on the same engine: ``[tool.fixit] enable = ["flake8_tensorconv.fixit"]``.

One ``LintRule`` per default rule, generated from the rule registry; the opt-in rules
(TCV108, TCV111, TCV112) are in ``flake8_tensorconv.fixit.opt_in``, which Fixit enables
only when named. Each rule runs the engine on the module's source, reports each finding
at the CST node that holds it, and turns a safe fix's text edits into a replacement node.
Needs the ``fixit`` extra (fixit, libcst); the linter itself never imports either.
"""

from flake8_tensorconv.fixit._engine import lint_rules

globals().update(lint_rules(opt_in=False, module=__name__))
