# The C-level check, for other compiled modules (harvester/_chost.pyx).
cdef bint _already_canonical(str loc, bint strip_slash)
