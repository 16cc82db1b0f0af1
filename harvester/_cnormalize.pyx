# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the normalize stage: is a query-less URL already canonical?

In: a ``loc`` and the rule set's ``strip_trailing_slash``. Out: True when the
URL is ``http(s)://host[:port]/path`` and already in canonical form, so
``normalize.Rules.canonical`` may return it untouched; False for anything else
(a query, a fragment, upper case in the scheme or host, a default port, a path
character that may need encoding, a dot segment, ...), which then takes the
Python path (the fast regex, then the general route) as before.

It answers exactly what ``Rules.canonical``'s fast regex does for URLs without
a query (tests/unit/test_cnormalize.py checks both on generated URLs), as a
scan of the characters: most sitemap URLs have no query and are canonical
already, and the regex match with its groups and checks costs ~0.8 µs a URL
against ~0.1 µs here.
"""


cdef inline bint _host_char(Py_UCS4 c) noexcept:
    return (u"a" <= c <= u"z") or (u"0" <= c <= u"9") or c == u"-"


cdef inline bint _path_char(Py_UCS4 c) noexcept:
    # A-Z a-z 0-9 - . _ ~ ! $ & ' ( ) * + , = : @ /  (no '%', ';', '?', '#')
    if (u"a" <= c <= u"z") or (u"A" <= c <= u"Z") or (u"0" <= c <= u"9"):
        return True
    return c in u"-._~!$&'()*+,=:@/"


def already_canonical(str loc, bint strip_slash):
    """True: ``loc`` is a query-less http(s) URL in canonical form (return it as it is)."""
    return _already_canonical(loc, strip_slash)


cdef bint _already_canonical(str loc, bint strip_slash):
    cdef Py_ssize_t n = len(loc)
    cdef Py_ssize_t i, start, path_start
    cdef Py_UCS4 c, prev
    cdef bint https
    cdef long port = 0
    if n < 8 or loc[0] != u"h" or loc[1] != u"t" or loc[2] != u"t" or loc[3] != u"p":
        return False
    https = loc[4] == u"s"
    i = 5 if https else 4
    if n < i + 4 or loc[i] != u":" or loc[i + 1] != u"/" or loc[i + 2] != u"/":
        return False
    i += 3
    # Host: dot-separated non-empty labels of [a-z0-9-].
    start = i
    prev = u"."
    while i < n:
        c = loc[i]
        if c == u".":
            if prev == u".":
                return False
        elif not _host_char(c):
            break
        prev = c
        i += 1
    if i == start or prev == u".":
        return False
    # Port: ':' and 1-5 digits, no leading zero, and not the scheme's default.
    if i < n and loc[i] == u":":
        i += 1
        start = i
        while i < n and u"0" <= loc[i] <= u"9" and i - start < 6:
            port = port * 10 + <long>(<int>loc[i] - 48)
            i += 1
        if i - start < 1 or i - start > 5 or loc[start] == u"0":
            return False
        if port == (443 if https else 80):
            return False
    # Path: required, every character allowed, no dot segment ('/.' anywhere).
    if i >= n or loc[i] != u"/":
        return False
    path_start = i
    prev = 0
    while i < n:
        c = loc[i]
        if not _path_char(c):
            return False  # also '?' and '#': queries and fragments go the Python way
        if c == u"." and prev == u"/":
            return False
        prev = c
        i += 1
    if strip_slash and prev == u"/" and n - path_start > 1:
        return False
    return True
