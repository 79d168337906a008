"""Helpers that only tests and benchmarks use: `testing.pgtemp` (a throwaway PostgreSQL server on
loopback) and `testing.synthetic` (a synthetic corpus of the study's shape).

Not installed with the product (pyproject.toml leaves it out); tests and benchmarks run from the
repository root, where it imports. Product packages never import it
(tests/test_architecture.py checks).
"""
