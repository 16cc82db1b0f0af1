# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of robotsrules.py: ordered path patterns matched against URLs in C.

In: rules already in matching order, each a normalized pattern (``robotsrules.
_normalize``: ASCII, escapes upper-cased) cut at its ``*`` into segments, whether a
final ``$`` anchors it, and the value it gives; the value when none matches; a
Python function that gives the normalized path of a URL the C path does not take.
Out: ``Matcher.value(url)``: the value of the first rule matching the URL's path
(and query), which is what ``RobotsRules`` (robots.txt: rules sorted longest
first, Allow before Disallow) and ``TdmRules`` (TDMRep: file order) ask; and
``LineLabels.of(loc)``: the bytes a record's JSON line gets before its closing brace
(``,"robots":"allowed","tdm_reserved":true``), which the compiled URL loop
(``_chost.url_entries``) writes in place as it writes the line.

The C path takes an ASCII URL whose authority ends in ``/`` and whose path has no
``%`` (nearly every sitemap URL): the path needs no normalizing, so it is matched
where it stands in the string. Any other URL goes through ``slow_path`` (the Python
normalization), and its path is matched the same way.

Why compiled: with the regular expression (``RobotsRules.allowed_many``) each URL
was a Python-level ``re.match`` call, a match object and a list item, and the
record's line was split, labelled and joined again after the loop had written it.
Here the label is chosen while the line is written, and no Python object is made
per URL (the odd URL of the slow path aside).

Why a dispatch on the path's second byte: in priority order, most of a host's rules
are literal prefixes (``/cart``, ``/api/``) that a path can only match if its second
byte is theirs. The rules are held in C arrays; each byte value has the list of the
rules whose prefix starts ``/`` + that byte, and the rules whose prefix is ``/`` or
empty (``/*.pdf$``, ``/*?page=``) are a second list every path tries. The two lists
are walked merged by priority, so the first match is the same rule as without the
dispatch; a path tries only the rules that can match its start. A ``*`` segment is
found by its rarest byte (``memchr``), then compared whole.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.string cimport memchr, memcmp

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)

cdef enum:
    _NO_SECOND = 256  # the bucket of the path "/" (no second byte)

# Bytes from the most to the least common in URL paths: a segment is searched for by its
# rarest byte (memchr), so that a find costs few false starts ('-' is in every slug).
_COMMON = b"-/etaoinsrhldcu0123456789mfpgwybvk._xjqzETAOINSRHLDCUMFPGWYBVKXJQZ"


cdef inline Py_ssize_t _find(
    const char* s, Py_ssize_t n, const char* sub, Py_ssize_t m, Py_ssize_t key
) noexcept nogil:
    """Where ``sub`` (``m`` bytes) first occurs in ``s`` (``n`` bytes), or -1;
    ``key``: the offset in ``sub`` of the byte to look for first (its rarest)."""
    cdef const char* hit
    cdef const char* last
    cdef char c
    if m == 0:
        return 0
    if m > n:
        return -1
    c = sub[key]
    hit = s + key
    last = s + n - m + key  # the last place the key byte of a whole match can be
    while hit <= last:
        hit = <const char*>memchr(hit, c, last - hit + 1)
        if hit is NULL:
            return -1
        if memcmp(hit - key, sub, m) == 0:
            return hit - key - s
        hit += 1
    return -1


cdef Py_ssize_t _key_of(bytes segment):
    """The offset of ``segment``'s rarest byte (by ``_COMMON``; absent from it: rarest)."""
    cdef Py_ssize_t i, best = 0, rank, best_rank = -1
    for i in range(len(segment)):
        rank = _COMMON.find(segment[i : i + 1])
        rank = 1000 if rank < 0 else rank
        if rank > best_rank:
            best, best_rank = i, rank
    return best


cdef void _fill_order(Matcher m, list generic, list buckets):
    """``m.order``: the generic rules, then each byte's (``buckets``), all in priority
    order, and where each byte's start (``m.bucket_start``)."""
    cdef Py_ssize_t j = 0
    cdef int b, i
    for i in generic:
        m.order[j] = i
        j += 1
    m.n_generic = j
    for b in range(_NO_SECOND + 1):
        m.bucket_start[b] = j
        for i in buckets[b]:
            m.order[j] = i
            j += 1
    m.bucket_start[_NO_SECOND + 1] = j


cdef class Matcher:
    """Rules in order, the first that matches gives the value (``fallback``: none does)."""

    def __cinit__(self):
        self.seg = NULL
        self.seg_len = NULL
        self.seg_key = NULL
        self.rule_seg = NULL
        self.rule_k = NULL
        self.rule_anchored = NULL
        self.rule_value = NULL
        self.order = NULL

    def __dealloc__(self):
        PyMem_Free(self.seg)
        PyMem_Free(self.seg_len)
        PyMem_Free(self.seg_key)
        PyMem_Free(self.rule_seg)
        PyMem_Free(self.rule_k)
        PyMem_Free(self.rule_anchored)
        PyMem_Free(self.rule_value)
        PyMem_Free(self.order)

    def __init__(self, list rules, int fallback, object slow_path, bint robots_txt=False):
        """``rules``: ``(normalized pattern without its final $, anchored, value)`` in
        order; ``slow_path``: url -> normalized path; ``robots_txt``: ``/robots.txt``
        gives ``fallback`` whatever the rules say (robots.txt itself is always allowed)."""
        cdef Py_ssize_t i, j, n_seg = 0
        cdef bytes first
        split = [
            (tuple((<str>p).encode("ascii", "replace").split(b"*")), bool(a), int(v))
            for p, a, v in rules
        ]
        self.n_rules = len(split)
        self.fallback = fallback
        self.slow_path = slow_path
        self.robots_txt = robots_txt
        self.keep = [seg for segments, _, _ in split for seg in segments]
        n_total = len(self.keep)
        self.seg = <const char**>PyMem_Malloc(max(n_total, 1) * sizeof(const char*))
        self.seg_len = <Py_ssize_t*>PyMem_Malloc(max(n_total, 1) * sizeof(Py_ssize_t))
        self.seg_key = <Py_ssize_t*>PyMem_Malloc(max(n_total, 1) * sizeof(Py_ssize_t))
        self.rule_seg = <Py_ssize_t*>PyMem_Malloc(max(self.n_rules, 1) * sizeof(Py_ssize_t))
        self.rule_k = <Py_ssize_t*>PyMem_Malloc(max(self.n_rules, 1) * sizeof(Py_ssize_t))
        self.rule_anchored = <bint*>PyMem_Malloc(max(self.n_rules, 1) * sizeof(bint))
        self.rule_value = <int*>PyMem_Malloc(max(self.n_rules, 1) * sizeof(int))
        # Each rule once in its byte's list or in the list every path tries.
        self.order = <int*>PyMem_Malloc(max(self.n_rules, 1) * sizeof(int))
        if (
            self.seg is NULL or self.seg_len is NULL or self.seg_key is NULL
            or self.rule_seg is NULL
            or self.rule_k is NULL or self.rule_anchored is NULL or self.rule_value is NULL
            or self.order is NULL
        ):
            raise MemoryError()
        for j in range(n_total):
            self.seg[j] = PyBytes_AS_STRING(<bytes>self.keep[j])
            self.seg_len[j] = PyBytes_GET_SIZE(<bytes>self.keep[j])
            self.seg_key[j] = _key_of(<bytes>self.keep[j])
        buckets = [[] for _ in range(_NO_SECOND + 1)]
        generic = []
        for i in range(self.n_rules):
            segments, anchored, value = split[i]
            self.rule_seg[i] = n_seg
            self.rule_k[i] = len(segments)
            self.rule_anchored[i] = anchored
            self.rule_value[i] = value
            n_seg += len(segments)
            first = <bytes>segments[0]
            if len(first) >= 2:
                buckets[first[1]].append(i)  # only a path whose second byte is first[1]
            else:
                generic.append(i)  # "" or a lone byte: any path may match
        _fill_order(self, generic, buckets)

    cdef bint matches(self, int r, const char* p, Py_ssize_t n) noexcept nogil:
        """Whether rule ``r`` matches path ``p`` (``n`` bytes) from its start.

        ``s0*s1*...*sk`` (anchored: ``$``): ``s0`` is a prefix, each middle segment is
        found leftmost after the previous one, the last found after them (anchored: it
        must end the path, at or after that point). Leftmost is enough because ``*``
        matches any run: a later find only leaves less room.
        """
        cdef Py_ssize_t i, m, pos, at, s = self.rule_seg[r], k = self.rule_k[r]
        m = self.seg_len[s]
        if m > n or (m and memcmp(p, self.seg[s], m) != 0):
            return False
        if k == 1:
            return not self.rule_anchored[r] or m == n
        pos = m
        for i in range(s + 1, s + k - 1):
            m = self.seg_len[i]
            at = _find(p + pos, n - pos, self.seg[i], m, self.seg_key[i])
            if at < 0:
                return False
            pos += at + m
        m = self.seg_len[s + k - 1]
        if self.rule_anchored[r]:
            return n - pos >= m and memcmp(p + n - m, self.seg[s + k - 1], m) == 0
        return _find(p + pos, n - pos, self.seg[s + k - 1], m, self.seg_key[s + k - 1]) >= 0

    cdef int path_value(self, const char* path, Py_ssize_t n) except -2:
        cdef Py_ssize_t g = 0, b, b_end
        cdef int bucket, r
        if self.robots_txt and n == 11 and memcmp(path, b"/robots.txt", 11) == 0:
            return self.fallback
        bucket = _NO_SECOND
        if n >= 2:
            bucket = <unsigned char>path[1]
        b = self.bucket_start[bucket]
        b_end = self.bucket_start[bucket + 1]
        # The generic list and the path's bucket, merged: rule numbers are priorities.
        while g < self.n_generic or b < b_end:
            if b == b_end or (g < self.n_generic and self.order[g] < self.order[b]):
                r = self.order[g]
                g += 1
            else:
                r = self.order[b]
                b += 1
            if self.matches(r, path, n):
                return self.rule_value[r]
        return self.fallback

    cdef bytes path(self, str url, const char** p, Py_ssize_t* n):
        """Point ``p``/``n`` at ``url``'s path as the rules match it: in the string itself
        (a plain ASCII URL: None returned), else in the returned bytes (the slow path's
        normalized path), which must be kept while ``p`` is read."""
        cdef Py_ssize_t size = PyUnicode_GET_LENGTH(url), start, end
        cdef const char* s
        cdef const char* hit
        cdef char c
        if PyUnicode_IS_COMPACT_ASCII(url):
            s = PyUnicode_DATA(url)
            # The path starts at the first '/' after "://" (robotsrules.path_of).
            start = _find(s, size, b"://", 3, 0)
            if start >= 0:
                start += 3
            while 0 <= start < size:
                c = s[start]
                if c == b"/":
                    break
                if c == b"?" or c == b"#":
                    start = -1  # no path before the query or fragment: the slow path
                    break
                start += 1
            if 0 <= start < size:
                # A '#' ends the path; a '%' before it needs the slow path's normalizing.
                hit = <const char*>memchr(s + start, b"#", size - start)
                end = size if hit is NULL else hit - s
                if memchr(s + start, b"%", end - start) is NULL:
                    p[0], n[0] = s + start, end - start
                    return None
        slow = (<str>self.slow_path(url)).encode("ascii", "replace")
        p[0], n[0] = PyBytes_AS_STRING(slow), PyBytes_GET_SIZE(slow)
        return slow

    cdef int value(self, str url) except -2:
        cdef const char* p
        cdef Py_ssize_t n
        slow = self.path(url, &p, &n)  # (kept while p is read)
        return self.path_value(p, n)

    def __call__(self, str url):
        """The value for an absolute URL."""
        return self.value(url)

    def many(self, list urls):
        """The value of each URL, in order."""
        return [self.value(<str>url) for url in urls]


cdef class LineLabels:
    """What each record's JSON line gets before its closing brace, by its loc."""

    def __init__(self, Matcher robots, int robots_fixed, Matcher tdm, int tdm_fixed, tuple table):
        """``robots``/``tdm``: the matchers (None: the ``_fixed`` value for every loc);
        ``table``: 9 bytes objects, the label of robots value r and tdm value t at
        ``r * 3 + t + 1`` (r: 0 disallowed, 1 allowed, 2 unknown; t: -1 none, 0 no,
        1 yes)."""
        if len(table) != 9 or not all(type(label) is bytes for label in table):
            raise ValueError("table must hold 9 labels (bytes)")
        self.robots, self.robots_fixed = robots, robots_fixed
        self.tdm, self.tdm_fixed = tdm, tdm_fixed
        self.table = table

    cdef bytes of(self, str loc):
        cdef int r = self.robots_fixed, t = self.tdm_fixed
        cdef const char* p
        cdef Py_ssize_t n
        if self.robots is not None:
            # The path is found once for both matchers (their slow paths are the same).
            slow = self.robots.path(loc, &p, &n)  # (kept while p is read)
            r = self.robots.path_value(p, n)
            if self.tdm is not None:
                t = self.tdm.path_value(p, n)
        elif self.tdm is not None:
            t = self.tdm.value(loc)
        return <bytes>self.table[r * 3 + t + 1]

    def __call__(self, str loc):
        """The label of a record whose loc is ``loc``."""
        return self.of(loc)
