# The C-level fingerprint, for other compiled modules (harvester/crawl/_chost.pyx).
from libc.stdint cimport uint8_t, uint64_t

cdef uint64_t _blake2b_64(const uint8_t* data, Py_ssize_t n) noexcept nogil
cdef uint64_t _fingerprint(str url) except? 0


cdef class FpTable:
    # Declared here so that _chost's loop can add to a host's small set in C.
    cdef uint64_t* slots
    cdef Py_ssize_t size  # slots, a power of two
    cdef int shift  # a fingerprint's home slot is fp >> shift
    cdef Py_ssize_t count
    cdef bint zero
    cdef Py_ssize_t room  # the size that holds ``capacity``

    cdef int _alloc(self, Py_ssize_t size) except -1
    cdef bint _has(self, uint64_t v) noexcept
    cdef void _put(self, uint64_t v) noexcept
    cdef int _grow(self) except -1
    cdef int add1(self, uint64_t v) except -1


cdef class Compact:
    # Declared here so that _chost's loop can add past a host's small set in C.
    cdef list buckets
    cdef int shift
    cdef double width  # a bucket's span of values
    cdef object runs  # a _Runs: the spilled runs, described once for the handle
    cdef Py_ssize_t added
    cdef readonly Py_ssize_t room  # adds before the set must split or spill

    cdef int add1(self, uint64_t fp) except -1
