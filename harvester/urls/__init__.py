"""URLs: an entry's loc -> its canonical form, fingerprint, record; dedupe across hosts.

The modules are imported by their full path; this package exports nothing.
"""
