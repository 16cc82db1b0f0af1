"""URLs: a loc -> its canonical form, fingerprint and output record; dedupe.

Owns: ``normalize`` (the canonical form, per-host rules), ``validate`` (can a loc's
host and port name a server), ``fingerprint``, ``dedupe`` and ``spill`` (the seen-set,
spilled to disk when big), ``crosshost`` (URLs listed by several hosts), ``records``
(an entry's output record and its JSON line, the contract every sink writes).

May import: the ground floor only. The lowest layer: everything above may use it.

The modules are imported by their full path; this package exports nothing.
"""
