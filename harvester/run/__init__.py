"""Run: many hosts (shards, worker processes, the writer, output, reports).

The modules are imported by their full path; this package exports nothing.
"""
