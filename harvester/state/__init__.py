"""State: the SQLite file that makes cron runs incremental and resumable.

Owns: the state file's schema, its one writer (``store``), the ledger of what runs
listed, a host's memory of earlier runs, the lastmod audit's samples and trust.

May import: ``urls`` and ``reader`` below it, and the ground floor. It sits beside
``audit/`` (neither imports the other) and below ``crawl/``, which reads and fills
it: the state knows rows, not hosts being crawled.

The modules are imported by their full path; this package exports nothing.
"""
