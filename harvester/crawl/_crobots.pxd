# Path-pattern matching in C (robots.txt rules, TDMRep locations), for other compiled
# modules (harvester/crawl/_chost.pyx writes each line's label with ``LineLabels.of``).

cdef class Matcher:
    # The rules in C arrays (rule r: segments seg[rule_seg[r] .. + rule_k[r]], cut at '*').
    cdef list keep  # the segments' bytes objects, which seg[] points into
    cdef const char** seg
    cdef Py_ssize_t* seg_len
    cdef Py_ssize_t* seg_key  # the offset of each segment's rarest byte (what a find seeks)
    cdef Py_ssize_t* rule_seg
    cdef Py_ssize_t* rule_k
    cdef bint* rule_anchored
    cdef int* rule_value
    cdef Py_ssize_t n_rules
    # order[:n_generic]: the rules any path may match; order[bucket_start[b]:
    # bucket_start[b + 1]]: those only a path whose second byte is b (256: the path "/").
    cdef int* order
    cdef Py_ssize_t n_generic
    cdef Py_ssize_t bucket_start[258]
    cdef int fallback  # the value when no rule matches
    cdef bint robots_txt  # "/robots.txt" is implicitly allowed (RFC 9309 §2.2.2)
    cdef object slow_path  # url -> its normalized path (str), for the odd URL

    cdef bint matches(self, int r, const char* p, Py_ssize_t n) noexcept nogil
    cdef int path_value(self, const char* path, Py_ssize_t n) except -2
    cdef bytes path(self, str url, const char** p, Py_ssize_t* n)
    cdef int value(self, str url) except -2


cdef class LineLabels:
    cdef Matcher robots  # None: robots_fixed for every line
    cdef Matcher tdm  # None: tdm_fixed for every line
    cdef int robots_fixed, tdm_fixed
    cdef tuple table  # bytes per robots value (0, 1, 2) x tdm value (-1, 0, 1): [r * 3 + t + 1]

    cdef bytes of(self, str loc)
