"""Output: a run's files (the records, the per-host lines, the run report) and their one writer.

The modules are imported by their full path; this package exports nothing.
"""
