"""The reader: one sitemap document's bytes (any chunking) -> entries and a result.

Owns: ``sitemap`` (``SitemapReader``), ``decompress``, ``sniff``, ``parse``, ``text``,
``entries``, ``extensions``, ``utf8`` and their compiled halves. Pure and sync: no
network, no files, no knowledge of hosts or runs.

May import: ``urls`` (a loc's authority is checked there) and the ground floor.

The modules are imported by their full path; this package exports nothing.
"""
