"""How complete is a site's sitemap? The coverage check per host (issue 49 item 1).

May import: ``run``, ``output``, ``crawl``, ``state``, ``audit``, ``reader``, ``urls``
and the ground floor. It sits beside ``distributed/`` and ``view/``.

``check.py``: ``coverage(domains, cfg, pages)``, the report (it harvests the listed
URLs with ``run.pipeline.harvest``, walks links with ``crawl.links``);
``figures.py``: the shares, their intervals and the run's summary.
"""
