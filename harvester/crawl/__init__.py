"""Crawl: one host end to end (robots.txt, discovery, fetch, frontier, batches).

Owns: the host worker and its retry policy (``host``, ``attempt``), discovery,
robots.txt, the per-host frontier, politeness (``scheduler``), the HTTP client
(``fetch``, ``body``, ``connector``, ``resolver``, ``guard``, ``headers``, ``socks``),
the URL batch (``batch`` and its compiled loop), what a host remembers
(``incremental``), what the crawl reads of the config (``settings``), and the values
a host hands up: its ``Seed``, its ``HostReport``, its ``RecordBatch``es (records
made by ``urls.records``). It knows nothing of processes, output files or a run's
report.

May import: ``state`` and ``audit`` (the layer below it), ``reader``, ``urls`` and the
ground floor.

The modules are imported by their full path; this package exports nothing.
"""
