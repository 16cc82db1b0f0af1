"""The lastmod audit: is a host's sitemap lastmod to be trusted.

Owns: the distribution of a host's lastmods and its verdict (``distribution``,
``verdict``, the count's compiled half), a page's own dates (``pagedates``), their
agreement with lastmod, content change (``content``), the trust score and the audit
report. Pure: the fetching of sample pages is ``harvester.run.verify``'s.

May import: ``urls`` and ``reader`` below it, and the ground floor. It sits beside
``state/`` (neither imports the other) and below ``crawl/``, whose URL batch feeds
the distribution.

The modules are imported by their full path; this package exports nothing.
"""
