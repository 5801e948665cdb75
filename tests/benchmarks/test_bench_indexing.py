"""Tests for benchmarks.bench_indexing's summary lines (the measuring itself is the benchmark's job)."""

from benchmarks.bench_indexing import speedups


def test_speedups_compare_each_default_setting_with_torch():
    best = {
        ("scifact", "torch", 32, 0, 0): (3.6, 36.0),
        ("scifact", "onnx-int8", 32, 0, 0): (0.1, 85.2),
        ("scifact", "onnx-int8", 32, 0, 8): (0.1, 70.0),  # a swept run size: not the default
        ("handbook", "onnx-int8", 32, 0, 0): (0.1, 187.6),  # no torch row for this corpus
    }
    assert speedups(best) == ["scifact: onnx-int8 / torch = 2.37x"]
