"""Frames: a harvest as tables for data teams, ``to_arrow`` and ``to_pandas``.

Owns: ``tables`` (the calls, their keyword options, the run in a loop of its own
when the caller's thread runs one) and ``hosts`` (the host reports as a table).
The public API (``harvester/__init__.py``) exports both calls.

May import: ``run``, ``output``, ``crawl``, ``state``, ``audit``, ``reader``, ``urls``
and the ground floor. It sits beside ``distributed/`` and ``view/``.

The modules are imported by their full path; this package exports nothing.
"""
