"""URLs: a loc -> its canonical form and fingerprint; the per-host seen-set; cross-host dedupe.

Owns: ``normalize`` (the canonical form, per-host rules), ``validate`` (can a loc's
host and port name a server), ``fingerprint``, ``dedupe`` and ``spill`` (the seen-set,
spilled to disk when big), ``crosshost`` (URLs listed by several hosts).

May import: the ground floor only. The lowest layer: everything above may use it.

The modules are imported by their full path; this package exports nothing.
"""
