# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the normalize stage: the canonical form of the usual URLs.

``already_canonical``. In: a ``loc`` and the rule set's ``strip_trailing_slash``.
Out: True when the URL is ``http(s)://host[:port]/path`` and already in
canonical form, so ``normalize.Rules.canonical`` may return it untouched; False
for anything else (a query, a fragment, upper case in the scheme or host, a
default port, a path character that may need encoding, a dot segment, ...).

``canonical_query``. In: a ``loc`` and the rule set (``strip_trailing_slash``,
its dropped keys and key prefixes, ``sort_query``). Out: the canonical form of
a URL whose part before the query passes the check above and whose query is
made of non-empty ``key[=value]`` pairs of characters that never need encoding,
none of them dropped: ``loc`` itself when the keys are in order, else ``loc``
with its pairs sorted by key (a stable sort, as the general route's). None for
anything else, which then takes the Python path (the fast regex, then the
general route) as before.

It answers exactly what ``Rules.canonical``'s fast regex does for URLs without
a query (tests/unit/urls/test_cnormalize.py checks both on generated URLs), as a
scan of the characters: most sitemap URLs have no query and are canonical
already, and the regex match with its groups and checks costs several times
this scan. A URL with a query went the general route whenever its pairs were
out of order; here it is sorted in C.
"""

from libc.string cimport memchr


cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)

DEF MAX_PAIRS = 32  # more pairs than this: the Python path

# Character classes of the ASCII range, as bits: a URL with any other character is
# never decided here (the Python path percent-encodes or IDNA-encodes it).
cdef enum:
    HOST = 1  # a-z 0-9 -  (a host label)
    PATH = 2  # A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , = : @ /  (no '%', ';', '?', '#')
    QUERY = 4  # normalize._QUERY_CHARS: A-Z a-z 0-9 - . _ ~ ! $ ' ( ) * + , ; : @ / ?

cdef unsigned char CLASS[128]


cdef void _classes() noexcept:
    cdef int c
    for c in range(128):
        CLASS[c] = 0
    for c in range(ord("a"), ord("z") + 1):
        CLASS[c] = HOST | PATH | QUERY
    for c in range(ord("0"), ord("9") + 1):
        CLASS[c] = HOST | PATH | QUERY
    for c in range(ord("A"), ord("Z") + 1):
        CLASS[c] = PATH | QUERY
    CLASS[ord("-")] = HOST | PATH | QUERY
    for c in b"._~!$'()*+,:@/":
        CLASS[c] = PATH | QUERY
    CLASS[ord("&")] = PATH
    CLASS[ord("=")] = PATH
    CLASS[ord(";")] = QUERY
    CLASS[ord("?")] = QUERY


_classes()


cdef inline bint _is(const unsigned char* d, Py_ssize_t i, unsigned char cls) noexcept:
    return CLASS[d[i]] & cls  # d holds ASCII only (< 128)


def already_canonical(str loc, bint strip_slash):
    """True: ``loc`` is a query-less http(s) URL in canonical form (return it as it is)."""
    return _already_canonical(loc, strip_slash)


cdef bint _already_canonical(str loc, bint strip_slash):
    return _base_end(loc, strip_slash) == len(loc)


cdef inline int _key_cmp(
    const unsigned char* d, Py_ssize_t a, Py_ssize_t a_end, Py_ssize_t b, Py_ssize_t b_end
) noexcept:
    """Compare the keys d[a:a_end] and d[b:b_end] as Python compares (ASCII) strings."""
    while a < a_end and b < b_end:
        if d[a] != d[b]:
            return -1 if d[a] < d[b] else 1
        a += 1
        b += 1
    return (a < a_end) - (b < b_end)


def canonical_query(str loc, bint strip_slash, frozenset drop, tuple prefixes, bint sort):
    """The canonical form of ``loc`` when the compiled rules decide it, else None (see above).

    ``drop`` and ``prefixes`` are ``Rules._drop`` and ``Rules._drop_prefixes`` (lower case).
    """
    return _canonical_query(loc, strip_slash, drop, prefixes, sort)


cdef object _canonical_query(str loc, bint strip_slash, frozenset drop, tuple prefixes, bint sort):
    # canonical_query, for _chost's loop to call without a Python call.
    cdef Py_ssize_t n = len(loc), q = _base_end(loc, strip_slash), i, start, key_end
    cdef Py_ssize_t count = 0
    cdef Py_ssize_t starts[MAX_PAIRS]
    cdef Py_ssize_t keys[MAX_PAIRS]
    cdef Py_ssize_t ends[MAX_PAIRS]
    cdef const unsigned char* d
    cdef unsigned char c
    cdef bint in_order = True, dropping = bool(drop) or bool(prefixes)
    if q < 0:
        return None
    if q == n:
        return loc
    d = <const unsigned char*>PyUnicode_DATA(loc)  # ASCII: _base_end said yes
    i = q + 1  # d[q] is '?'
    while True:
        if count == MAX_PAIRS:
            return None
        start = i
        while i < n:
            c = d[i]
            if c == b"=" or c == b"&":
                break
            if not _is(d, i, QUERY):
                return None  # '%', '#', a space, non-ASCII...: the general route
            i += 1
        key_end = i
        if key_end == start:
            return None  # an empty pair or key ('&&', '?&', '?=x', a trailing '&')
        if i < n and d[i] == b"=":
            i += 1
            while i < n:
                c = d[i]
                if c == b"&":
                    break
                if c != b"=" and not _is(d, i, QUERY):
                    return None
                i += 1
        if dropping:
            key = loc[start:key_end].lower()
            if key in drop or (prefixes and key.startswith(prefixes)):
                return None  # a tracking or session key: the general route drops it
        starts[count] = start
        keys[count] = key_end
        ends[count] = i
        if count and _key_cmp(d, starts[count - 1], keys[count - 1], start, key_end) > 0:
            in_order = False
        count += 1
        if i == n:
            break
        i += 1  # the '&'
        if i == n:
            return None
    if in_order or not sort:
        return loc
    return _sorted_query(loc, d, q, count, starts, keys, ends)


cdef object _sorted_query(
    str loc,
    const unsigned char* d,
    Py_ssize_t q,
    Py_ssize_t count,
    Py_ssize_t* starts,
    Py_ssize_t* keys,
    Py_ssize_t* ends,
):
    """``loc`` with the ``count`` pairs of its query (from ``q``, its '?') sorted by key:
    a stable insertion sort (``pairs.sort(key=...)`` of the general route)."""
    cdef Py_ssize_t order[MAX_PAIRS]
    cdef Py_ssize_t k, j
    for k in range(count):
        j = k
        while j > 0 and _key_cmp(
            d, starts[order[j - 1]], keys[order[j - 1]], starts[k], keys[k]
        ) > 0:
            order[j] = order[j - 1]
            j -= 1
        order[j] = k
    return loc[: q + 1] + "&".join([loc[starts[order[k]] : ends[order[k]]] for k in range(count)])


cdef inline Py_ssize_t _authority_end(
    const unsigned char* d, Py_ssize_t i, Py_ssize_t n, bint https
) noexcept:
    """Where the canonical ``host[:port]`` starting at ``i`` ends; -1: not canonical."""
    cdef Py_ssize_t start = i
    cdef unsigned char c, prev = b"."
    cdef long port = 0
    # Host: dot-separated non-empty labels of [a-z0-9-].
    while i < n:
        c = d[i]
        if c == b".":
            if prev == b".":
                return -1
        elif not _is(d, i, HOST):
            break
        prev = c
        i += 1
    if i == start or prev == b".":
        return -1
    # Port: ':' and 1-5 digits, no leading zero, and not the scheme's default.
    if i < n and d[i] == b":":
        i += 1
        start = i
        while i < n and b"0" <= d[i] <= b"9" and i - start < 6:
            port = port * 10 + <long>(d[i] - 48)
            i += 1
        if i - start < 1 or i - start > 5 or d[start] == b"0":
            return -1
        if port == (443 if https else 80):
            return -1
    return i


cdef Py_ssize_t _base_end(str loc, bint strip_slash):
    """Where the query of a canonical ``http(s)://host[:port]/path`` begins (its '?').

    ``len(loc)`` when it has none; -1 when the part before it is not canonical (also
    for any non-ASCII character, which no canonical form the Python path makes keeps).
    """
    cdef Py_ssize_t n, i, path_start, end, k
    cdef const unsigned char* d
    cdef const unsigned char* found
    cdef unsigned char cls
    cdef bint https
    if not PyUnicode_IS_COMPACT_ASCII(loc):
        return -1
    n = len(loc)
    d = <const unsigned char*>PyUnicode_DATA(loc)
    if n < 8 or d[0] != b"h" or d[1] != b"t" or d[2] != b"t" or d[3] != b"p":
        return -1
    https = d[4] == b"s"
    i = 5 if https else 4
    if n < i + 4 or d[i] != b":" or d[i + 1] != b"/" or d[i + 2] != b"/":
        return -1
    i = _authority_end(d, i + 3, n, https)
    if i < 0:
        return -1
    # Path: required, every character allowed, no dot segment ('/.' anywhere).
    if i >= n or d[i] != b"/":
        return -1
    path_start = i
    # Up to the first '?': memchr, then the classes ANDed without a branch a character,
    # then each '.' (a few a URL) looked behind. A loop testing each character for '?',
    # its class and a dot segment in turn was the costliest of our functions but the hash.
    found = <const unsigned char*>memchr(d + i, b"?", n - i)
    end = found - d if found is not NULL else n
    cls = PATH
    for k in range(path_start, end):
        cls &= CLASS[d[k]]
    if not cls:
        return -1  # also '#': fragments go the Python way
    found = d + path_start
    while True:
        found = <const unsigned char*>memchr(found + 1, b".", end - (found + 1 - d))
        if found is NULL:
            break
        if (found - 1)[0] == b"/":
            return -1
    if strip_slash and d[end - 1] == b"/" and end - path_start > 1:
        return -1
    return end
