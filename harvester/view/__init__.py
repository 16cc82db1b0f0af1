"""View: what a person reads: the sitemap tree of a host, the run report as a page.

The modules are imported by their full path; this package exports nothing.
"""
