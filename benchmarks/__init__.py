"""Benchmarks for harvester (run them as ``python -m benchmarks.<name>``)."""
