"""Benchmark readers and writers. Readers never call models; they validate and report every bad row."""

from tailorbench.datasets.loader import Benchmark, detect_layout, filter_cases, load_benchmark
from tailorbench.datasets.native import read_native, write_native

__all__ = ["Benchmark", "detect_layout", "filter_cases", "load_benchmark", "read_native", "write_native"]
