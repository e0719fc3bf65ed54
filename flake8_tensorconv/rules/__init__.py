"""The rule catalogue: one module per rule."""

from __future__ import annotations

from flake8_tensorconv.rules.base import Rule
from flake8_tensorconv.rules.cpu_before_detach import CpuBeforeDetach
from flake8_tensorconv.rules.data_instead_of_detach import DataInsteadOfDetach
from flake8_tensorconv.rules.legacy_constructor_cast import LegacyConstructorCast
from flake8_tensorconv.rules.legacy_constructor_size import LegacyConstructorSize
from flake8_tensorconv.rules.numpy_on_accelerator import NumpyOnAccelerator
from flake8_tensorconv.rules.numpy_requires_grad import NumpyRequiresGrad

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted(
        (
            NumpyRequiresGrad,
            NumpyOnAccelerator,
            CpuBeforeDetach,
            DataInsteadOfDetach,
            LegacyConstructorCast,
            LegacyConstructorSize,
        ),
        key=lambda rule: rule.code,
    )
)
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "Rule"]
