"""Benchmark and one-off scripts: not part of the installed library (the wheel ships only `haygraph`).

Run them from the repository root as modules, e.g. ``python -m benchmarks.bench_retrieval``; they
share one fixture module, `benchmarks.fixtures` (the labelled handbook cases, the handbook store, the
example agent and its tools), and use the library only through its public modules.
"""
