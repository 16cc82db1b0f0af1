"""Crawl: one host end to end (robots.txt, discovery, fetch, frontier, batches).

The modules are imported by their full path; this package exports nothing.
"""
