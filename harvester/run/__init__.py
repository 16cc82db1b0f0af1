"""Run: many hosts (seeds, admission, shards, worker processes).

Owns: the input read into seeds, how many hosts are in flight (``admission``), one
shard's wiring (``pipeline``), the shards in this process or in worker processes
(``shards``, ``workers``, ``transport``), the stop and its grace, the event loop's
tuning, and the sampled lastmod verification of many hosts (``verify``).

May import: ``output``, ``crawl``, ``state``, ``audit``, ``reader``, ``urls`` and the
ground floor.

The modules are imported by their full path; this package exports nothing.
"""
