"""The reader: one sitemap document's bytes (any chunking) -> entries and a result.

The modules are imported by their full path; this package exports nothing.
"""
