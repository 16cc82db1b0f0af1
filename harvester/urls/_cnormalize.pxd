# The C-level check and canonical form, for other compiled modules (harvester/crawl/_chost.pyx).
cdef bint _already_canonical(str loc, bint strip_slash)
cdef object _canonical_query(str loc, bint strip_slash, frozenset drop, tuple prefixes, bint sort)
