"""View: what a person reads: the sitemap tree of a host, the run report as a page.

Owns: ``tree`` (a host's sitemap log as a tree), ``summary``, ``page`` and ``charts``
(the run report's files as one HTML page). It reads files a run wrote, not the run.

May import: ``run``, ``output``, ``crawl``, ``state``, ``audit``, ``reader``, ``urls``
and the ground floor. It sits beside ``distributed/``.

The modules are imported by their full path; this package exports nothing.
"""
