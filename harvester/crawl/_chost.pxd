# The compiled URL loop's state (harvester/crawl/_chost.pyx): one per UrlBatch, made
# with it and kept between the calls of ``url_entries``, so each call reads and writes
# these fields in place. Its Python twin, with the same fields, is
# harvester/crawl/urlloop.py ``PyUrlLoop``; the interface both give the batch is
# ``urlloop.UrlLoop``.

from cpython cimport array
from libc.stdint cimport uint64_t

from harvester.crawl._crobots cimport LineLabels
from harvester.urls._cdedupe cimport Compact, FpTable


cdef class UrlLoop:
    # Given once, for the whole host.
    cdef readonly str host
    cdef readonly object rules, report
    cdef object canon  # rules.canonical
    cdef bint strip_slash, direct, sort  # direct: the rules' query step called in C
    cdef frozenset drop
    cdef tuple prefixes
    cdef Py_ssize_t cap  # max_urls_per_host

    # Between calls: the batch's buffers (``hand_over`` starts new ones) ...
    cdef readonly list records
    cdef readonly array.array fps, lastmods
    cdef readonly bytearray encoded, urls
    cdef Py_ssize_t room_encoded, room_urls  # their room at the next call (the last sizes)
    cdef readonly list sample_lastmods, sample_raws
    # ... and where the host's reading stands.
    cdef public object seen  # SeenSet, made by the batch at its first entries
    cdef public bytes label
    cdef public LineLabels labels  # issue 48: each line's label by its loc, or None
    cdef public Py_ssize_t replayed
    cdef readonly Py_ssize_t listed, position
    cdef readonly bint cap_hit
    cdef readonly tuple home
    cdef list foreign_examples  # report.foreign_loc_examples

    # One call's: the seen-set's small set (a table, else a set of ints, else None) or
    # its compact buckets' handle,
    # the counters written to the seen-set and report at its end, the sitemap's JSON.
    cdef object small
    cdef FpTable table
    cdef Compact compact  # past the small set: its compact buckets, added to in C
    cdef Py_ssize_t small_added, small_limit, duplicates, added, foreign
    cdef str sitemap
    cdef bytes middle

    cdef int open(self, str sitemap) except -1
    cdef int _small(self) except -1
    cdef int _settle(self) except -1
    cdef str canonical_of(self, str loc)
    cdef bint is_new(self, uint64_t fp) except -1
    cdef int keep(self, tuple entry, str loc, str url, uint64_t fp) except -1
    cdef int write(self, tuple entry, str loc, str url) except -1
    cdef int close(self) except -1
