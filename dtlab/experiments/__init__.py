"""Experiments: sweeps returning DataFrames, and the registries of figures and benchmarks."""
