# The C-level fingerprint, for other compiled modules (harvester/_chost.pyx).
from libc.stdint cimport uint8_t, uint64_t

cdef uint64_t _blake2b_64(const uint8_t* data, Py_ssize_t n) noexcept nogil
cdef uint64_t _fingerprint(str url) except? 0
