"""State: the SQLite file that makes cron runs incremental and resumable.

The modules are imported by their full path; this package exports nothing.
"""
