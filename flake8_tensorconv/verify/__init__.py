"""Runtime verification of the rules' claims: the only part of flake8-tensorconv that imports torch and NumPy.

They are imported inside functions only, so importing this package stays cheap.
"""
