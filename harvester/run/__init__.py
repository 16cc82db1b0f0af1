"""Run: many hosts (seeds, admission, shards, worker processes).

The modules are imported by their full path; this package exports nothing.
"""
