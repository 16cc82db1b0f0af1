"""How complete is a site's sitemap? The coverage check of a list of domains (issue 49).

May import: ``run``, ``output``, ``crawl``, ``state``, ``audit``, ``reader``, ``urls``
and the ground floor. It sits beside ``distributed/`` and ``view/``.

``check.py``: ``coverage(domains, cfg, pages)``, the report of ``harvester coverage``:
a run with ``discovery.coverage = K`` (the check itself is each host worker's,
``crawl/cover.py``, so ``run --coverage K`` makes the same figures).
"""
