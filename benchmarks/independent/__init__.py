"""An independent harness for issue 34's targets (harness.py): run it as a script, never with `python -m`.

A package only so mypy and import-linter check it; `python benchmarks/independent/harness.py` keeps the
checkout off `sys.path`, so the aqueduct it measures is the interpreter's installed one (README.md).
"""
