# Path-pattern matching in C (robots.txt rules, TDMRep locations), for other compiled
# modules (harvester/crawl/_chost.pyx writes each line's label with ``LineLabels.of``).

cdef class Matcher:
    cdef tuple rules  # (segments: tuple of bytes, anchored: bint, value: int), in order
    cdef int fallback  # the value when no rule matches
    cdef bint robots_txt  # "/robots.txt" is implicitly allowed (RFC 9309 §2.2.2)
    cdef object slow_path  # url -> its normalized path (str), for the odd URL

    cdef int path_value(self, const char* path, Py_ssize_t n) except -2
    cdef int value(self, str url) except -2


cdef class LineLabels:
    cdef Matcher robots  # None: robots_fixed for every line
    cdef Matcher tdm  # None: tdm_fixed for every line
    cdef int robots_fixed, tdm_fixed
    cdef tuple table  # bytes per robots value (0, 1, 2) x tdm value (-1, 0, 1): [r * 3 + t + 1]

    cdef bytes of(self, str loc)
