"""Output: a run's files (the records, the per-host lines, the run report) and their one writer.

Owns: the ``Writer`` and the close's order, the sinks (JSON Lines, CSV, Parquet) and
the format choice, the ``OUT.part`` files (``parts``: cut back, published, written
atomically), the opening of a resumed output, the run report and its display.

May import: ``crawl`` (the batches and host reports it writes), ``state``, ``audit``,
``reader``, ``urls`` and the ground floor.

The modules are imported by their full path; this package exports nothing.
"""
