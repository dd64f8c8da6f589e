"""Reproducible comparisons of fastdual with its peers (run as ``python -m benchmarks.<name>``)."""
