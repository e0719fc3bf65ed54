"""flake8-tensorconv: a linter with autofixes for where PyTorch tensors and NumPy arrays meet."""

__version__ = "0.1.0"

__all__ = ["__version__"]
