"""Benchmark readers and writers. Readers never call models; they validate and report every bad row. Each
layout is registered in `LAYOUTS` (datasets/layouts.py; plugins: entry-point group `tailorbench.layouts`)."""

from tailorbench.datasets.benchmark import Benchmark
from tailorbench.datasets.layouts import LAYOUTS, Layout, register_layout
from tailorbench.datasets.loader import detect_layout, filter_cases, find_layout, load_benchmark
from tailorbench.datasets.native import read_native, write_benchmark, write_native

__all__ = ["LAYOUTS", "Benchmark", "Layout", "detect_layout", "filter_cases", "find_layout", "load_benchmark",
           "read_native", "register_layout", "write_benchmark", "write_native"]
