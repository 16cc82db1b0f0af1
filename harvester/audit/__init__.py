"""The lastmod audit: is a host's sitemap lastmod to be trusted.

The modules are imported by their full path; this package exports nothing.
"""
