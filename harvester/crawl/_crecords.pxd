# What harvester/crawl/_chost.pyx and harvester/crawl/_cextensions.pyx use of
# harvester/crawl/_crecords.pyx at C level: a record's JSON line written into the batch's
# bytes, and the small writers both modules call for every record (inline, here, so that
# each module's C compiler inlines them as before).
from cpython.bytearray cimport PyByteArray_Resize
from cpython.object cimport Py_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

cdef extern from "Python.h":
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_alloc  # bytes allocated (CPython's struct; the size is separate)
        char* ob_bytes  # the allocation
        char* ob_start  # the first byte (after ob_bytes when bytes were deleted in front)
        Py_ssize_t ob_exports  # buffers exported: no resize while there are any
    void Py_SET_SIZE(object o, Py_ssize_t size)
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)


cdef inline Py_ssize_t _plain(str s) noexcept:
    """The length of ``s`` when orjson writes it as it is (ASCII, no quote, backslash or
    control character), else -1."""
    cdef Py_ssize_t n, i = 0
    cdef const char* d
    cdef char c
    cdef uint64_t w
    if not PyUnicode_IS_COMPACT_ASCII(s):
        return -1
    n = PyUnicode_GET_LENGTH(s)
    d = PyUnicode_DATA(s)
    # Eight bytes at a time: with every byte below 0x80 (ASCII), a byte below 0x20, or
    # equal to '"' (0x22) or '\\' (0x5C) after the XOR, is the only way a byte of these
    # differences gets its top bit (a borrow only runs upward from such a byte).
    while i + 8 <= n:
        memcpy(&w, d + i, 8)
        if (
            (w - 0x2020202020202020ULL)
            | ((w ^ 0x2222222222222222ULL) - 0x0101010101010101ULL)
            | ((w ^ 0x5C5C5C5C5C5C5C5CULL) - 0x0101010101010101ULL)
        ) & 0x8080808080808080ULL:
            return -1
        i += 8
    while i < n:
        c = d[i]
        if c < 32 or c == 34 or c == 92:
            return -1
        i += 1
    return n


cdef inline int _grow(bytearray buf, Py_ssize_t size) except -1:
    """Make ``buf`` ``size`` bytes long, doubling its room when it must grow.

    bytearray's own growth adds an eighth, so as a batch's lines filled it, realloc
    moved the whole batch every few records (all of it in memmove). Asking for twice
    the size, then for the size (a minor shrink, which keeps the room), moves it at most
    about once per doubling. Growing within the room (most calls: a record's pieces
    are appended one by one) sets the size as ``PyByteArray_Resize`` would, without
    the call and its checks, when no buffer is exported and nothing was cut in front.
    """
    cdef PyByteArrayObject* b = <PyByteArrayObject*>buf
    if size + 1 > b.ob_alloc:
        PyByteArray_Resize(buf, 2 * size)
    elif size >= Py_SIZE(buf) and b.ob_start == b.ob_bytes and b.ob_exports == 0:
        Py_SET_SIZE(buf, size)
        b.ob_start[size] = 0  # bytearray's trailing NUL
        return 0
    PyByteArray_Resize(buf, size)
    return 0


cdef inline int _reserve(bytearray buf, Py_ssize_t room) except -1:
    """Give an empty ``buf`` room for ``room`` bytes; it stays empty (its size 0).

    ``PyByteArray_Resize`` to 0 would give the room back (a shrink below half the room
    reallocates), so the size is set here, as its minor shrink sets it.
    """
    cdef PyByteArrayObject* b = <PyByteArrayObject*>buf
    if Py_SIZE(buf) == 0 and room + 1 > b.ob_alloc and b.ob_exports == 0:
        PyByteArray_Resize(buf, room)
        Py_SET_SIZE(buf, 0)
        b.ob_start[0] = 0  # bytearray's trailing NUL
    return 0


cdef inline char* _put(char* p, const char* s, Py_ssize_t n) noexcept:
    memcpy(p, s, n)
    return p + n


cdef bint _write_record(
    bytearray buf, str loc, str url, bytes middle, object lastmod, object changefreq,
    object priority, bytes label, bint open_end=*,
) except -1
cdef int _close_record(bytearray buf, bytes label) except -1
cdef int _append_labelled(bytearray buf, bytes line, bytes label) except -1
cdef bytes _middle(str host, str sitemap)
