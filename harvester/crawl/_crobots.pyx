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

Matching a pattern ``s0*s1*...*sk`` (``$``: anchored): ``s0`` is a prefix, each
middle segment is found leftmost after the previous one, the last is found after
them (anchored: it must end the path, at or after that point). Leftmost is enough
because ``*`` matches any run: a later find only leaves less room.

Why compiled: with the regular expression (``RobotsRules.allowed_many``) each URL
was a Python-level ``re.match`` call, a match object and a list item, and the
record's line was split, labelled and joined again after the loop had written it.
Here the label is chosen while the line is written; most URLs cost a few
``memcmp`` of the first rules' prefixes.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.string cimport memchr, memcmp

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)


cdef inline Py_ssize_t _find(
    const char* s, Py_ssize_t n, const char* sub, Py_ssize_t m
) noexcept:
    """Where ``sub`` (``m`` bytes) first occurs in ``s`` (``n`` bytes), or -1."""
    cdef Py_ssize_t i = 0
    cdef const char* hit
    if m == 0:
        return 0
    while i + m <= n:
        hit = <const char*>memchr(s + i, sub[0], n - m + 1 - i)
        if hit is NULL:
            return -1
        i = hit - s
        if memcmp(hit, sub, m) == 0:
            return i
        i += 1
    return -1


cdef class _Rule:
    """One pattern: its ``*``-separated segments (bytes), its final ``$``, its value."""

    cdef tuple segments
    cdef const char* first  # segment 0, the prefix every match starts with
    cdef Py_ssize_t n_first, k
    cdef bint anchored
    cdef int value

    def __init__(self, str pattern, bint anchored, int value):
        self.segments = tuple(pattern.encode("ascii", "replace").split(b"*"))
        self.k = len(self.segments)
        self.first = PyBytes_AS_STRING(<bytes>self.segments[0])
        self.n_first = PyBytes_GET_SIZE(<bytes>self.segments[0])
        self.anchored = anchored
        self.value = value

    cdef bint matches(self, const char* p, Py_ssize_t n) noexcept:
        """Whether the pattern matches path ``p`` (``n`` bytes) from its start."""
        cdef Py_ssize_t i, m, pos, at
        cdef bytes seg
        m = self.n_first
        if m > n or (m and (p[0] != self.first[0] or memcmp(p, self.first, m) != 0)):
            return False
        if self.k == 1:
            return not self.anchored or m == n
        pos = m
        for i in range(1, self.k - 1):
            seg = <bytes>self.segments[i]
            m = PyBytes_GET_SIZE(seg)
            at = _find(p + pos, n - pos, PyBytes_AS_STRING(seg), m)
            if at < 0:
                return False
            pos += at + m
        seg = <bytes>self.segments[self.k - 1]
        m = PyBytes_GET_SIZE(seg)
        if self.anchored:
            return n - pos >= m and memcmp(p + n - m, PyBytes_AS_STRING(seg), m) == 0
        return _find(p + pos, n - pos, PyBytes_AS_STRING(seg), m) >= 0


cdef class Matcher:
    """Rules in order, the first that matches gives the value (``fallback``: none does)."""

    def __init__(self, list rules, int fallback, object slow_path, bint robots_txt=False):
        """``rules``: ``(normalized pattern without its final $, anchored, value)`` in
        order; ``slow_path``: url -> normalized path; ``robots_txt``: ``/robots.txt``
        gives ``fallback`` whatever the rules say (robots.txt itself is always allowed)."""
        self.rules = tuple(_Rule(p, a, v) for p, a, v in rules)
        self.fallback = fallback
        self.slow_path = slow_path
        self.robots_txt = robots_txt

    cdef int path_value(self, const char* path, Py_ssize_t n) except -2:
        cdef _Rule rule
        if self.robots_txt and n == 11 and memcmp(path, b"/robots.txt", 11) == 0:
            return self.fallback
        for rule in self.rules:
            if rule.matches(path, n):
                return rule.value
        return self.fallback

    cdef int value(self, str url) except -2:
        cdef Py_ssize_t n = PyUnicode_GET_LENGTH(url), i, start, end
        cdef const char* s
        cdef char c
        if PyUnicode_IS_COMPACT_ASCII(url):
            s = PyUnicode_DATA(url)
            # The path starts at the first '/' after "://" (robotsrules.path_of).
            start = -1
            for i in range(n - 2):
                if s[i] == b":" and s[i + 1] == b"/" and s[i + 2] == b"/":
                    start = i + 3
                    break
            while 0 <= start < n:
                c = s[start]
                if c == b"/":
                    break
                if c == b"?" or c == b"#":
                    start = -1  # no path before the query or fragment: the slow path
                    break
                start += 1
            if 0 <= start < n:
                end = start
                while end < n:
                    c = s[end]
                    if c == b"#" or c == b"%":
                        break
                    end += 1
                if end == n or s[end] == b"#":
                    return self.path_value(s + start, end - start)
        path = (<str>self.slow_path(url)).encode("ascii", "replace")
        return self.path_value(PyBytes_AS_STRING(path), PyBytes_GET_SIZE(path))

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
        cdef int r = self.robots_fixed if self.robots is None else self.robots.value(loc)
        cdef int t = self.tdm_fixed if self.tdm is None else self.tdm.value(loc)
        return <bytes>self.table[r * 3 + t + 1]

    def __call__(self, str loc):
        """The label of a record whose loc is ``loc``."""
        return self.of(loc)
