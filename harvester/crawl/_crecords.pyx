# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""A record's JSON line, written straight into the batch's bytes (``_chost.UrlLoop``).

In: a new URL's values (``_write_record``: its loc, canonical URL, lastmod, changefreq
and priority, the host and sitemap's JSON made once per call by ``_middle``, the
extension fields' JSON from ``_cextensions``, the line's label). Out: the line
appended to the batch's ``bytearray``, the bytes ``records.encode_record`` makes of
``records.record``'s dict (orjson's), or False when a value needs orjson (the loop
then encodes the dict: ``_append_labelled`` appends that line with the label).
``label_lines`` labels a whole batch of such lines at once.

Why: a dict per record and orjson's encoding of it cost more than the loop around
them; the usual values (ASCII text without escapes, a UTC lastmod, the parser's
memoised changefreq and priority) are written here with a memcpy each.
"""

from cpython.datetime cimport (
    PyDateTime_CheckExact,
    PyDateTime_DATE_GET_HOUR,
    PyDateTime_DATE_GET_MINUTE,
    PyDateTime_DATE_GET_SECOND,
    PyDateTime_GET_DAY,
    PyDateTime_GET_MONTH,
    PyDateTime_GET_YEAR,
    datetime_tzinfo,
    import_datetime,
)
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.string cimport memchr

import orjson

from datetime import UTC

cdef object _UTC = UTC

import_datetime()

cdef object _dumps = orjson.dumps
cdef dict _VALUE_JSON = {}  # changefreq text or priority float -> its orjson encoding
cdef Py_ssize_t _VALUE_JSON_MAX = 4096  # distinct values kept (a file repeats a handful)


# _value_json's identity cache: the last value seen in each slot (by its address) and
# its encoding, both referenced here. A sitemap's changefreq and priority values are the
# parser's memoised objects, so the same few come back for every <url>; found by
# identity they need no equality test against 0 and no dict lookup (with the float's
# hash and compare) for every record.
cdef enum:
    _JSON_SLOTS = 16
cdef PyObject* _JSON_KEYS[_JSON_SLOTS]
cdef PyObject* _JSON_VALUES[_JSON_SLOTS]


cdef inline bytes _value_json(object value):
    """orjson's encoding of a changefreq or priority, memoised (None: null)."""
    cdef size_t slot = (<size_t><PyObject*>value >> 4) % _JSON_SLOTS
    if _JSON_KEYS[slot] == <PyObject*>value:
        return <bytes>_JSON_VALUES[slot]
    encoded = _value_json_slow(value)
    cdef PyObject* old_key = _JSON_KEYS[slot]
    cdef PyObject* old_value = _JSON_VALUES[slot]
    Py_INCREF(value)
    Py_INCREF(encoded)
    _JSON_KEYS[slot] = <PyObject*>value
    _JSON_VALUES[slot] = <PyObject*>encoded
    # Released once the slot holds the new pair: a release may run arbitrary code.
    Py_XDECREF(old_key)
    Py_XDECREF(old_value)
    return encoded


cdef bytes _value_json_slow(object value):
    cdef PyObject* found
    if value is None:
        return b"null"
    if value == 0:
        # -0.0 equals 0.0 as a dict key, but orjson writes them differently.
        return _dumps(value)
    found = PyDict_GetItem(_VALUE_JSON, value)
    if found is not NULL:
        return <bytes>found
    encoded = _dumps(value)
    if len(_VALUE_JSON) < _VALUE_JSON_MAX:
        _VALUE_JSON[value] = encoded
    return encoded


cdef inline char* _put_digits(char* p, int value, int width) noexcept:
    cdef int k
    for k in range(width - 1, -1, -1):
        p[k] = <char>(48 + value % 10)
        value //= 10
    return p + width


cdef inline char* _put_lastmod(char* p, object lastmod) noexcept:
    """Write a UTC ``datetime`` (checked by the caller) as ``records.lastmod_iso``
    (``dates.format_utc``) and orjson do: ``"YYYY-MM-DDTHH:MM:SSZ"``, whole seconds, in
    the 22 bytes at ``p``; returns the byte after them."""
    p[0] = b'"'
    p = _put_digits(p + 1, PyDateTime_GET_YEAR(lastmod), 4)
    p[0] = b"-"
    p = _put_digits(p + 1, PyDateTime_GET_MONTH(lastmod), 2)
    p[0] = b"-"
    p = _put_digits(p + 1, PyDateTime_GET_DAY(lastmod), 2)
    p[0] = b"T"
    p = _put_digits(p + 1, PyDateTime_DATE_GET_HOUR(lastmod), 2)
    p[0] = b":"
    p = _put_digits(p + 1, PyDateTime_DATE_GET_MINUTE(lastmod), 2)
    p[0] = b":"
    p = _put_digits(p + 1, PyDateTime_DATE_GET_SECOND(lastmod), 2)
    p[0] = b"Z"
    p[1] = b'"'
    return p + 2


cdef bint _write_record(
    bytearray buf, str loc, str url, bytes middle, object lastmod, object changefreq,
    object priority, bytes label, bint open_end=False,
) except -1:
    """Append the JSON line ``encode_record`` makes of the record dict ``_chost``'s loop
    would build (``UrlLoop.write``).

    ``middle`` is ``,"host":<host>,"sitemap":<sitemap>,"source":"sitemap","lastmod":`` as
    orjson encodes them (once per batch); ``label`` (or None) goes before the closing
    brace. ``open_end``: the line stops after ``priority`` (the caller appends the
    extension fields, ``_cextensions._extensions_into``, then ``_close_record``). False
    (nothing written) when a value needs what only orjson does: escapes, non-ASCII, a
    lastmod that is not a UTC ``datetime``; the caller then encodes the dict itself.
    """
    cdef Py_ssize_t n_loc = _plain(loc), n_url, size, start
    cdef Py_ssize_t n_label = PyBytes_GET_SIZE(label) if label is not None else 0
    cdef bint dated = lastmod is not None
    cdef char* p
    if n_loc < 0:
        return False
    n_url = n_loc if url is loc else _plain(url)
    if n_url < 0:
        return False
    if dated:
        if not PyDateTime_CheckExact(lastmod) or datetime_tzinfo(lastmod) is not _UTC:
            return False
    cf = _value_json(changefreq)
    pr = _value_json(priority)
    size = (
        8 + n_loc + 9 + n_url + 1 + PyBytes_GET_SIZE(middle)
        + (22 if dated else 4)
        + 14 + PyBytes_GET_SIZE(cf) + 12 + PyBytes_GET_SIZE(pr)
        + (0 if open_end else n_label + 2)
    )
    start = PyByteArray_GET_SIZE(buf)
    _grow(buf, start + size)
    p = PyByteArray_AS_STRING(buf) + start
    p = _put(p, b'{"loc":"', 8)
    p = _put(p, PyUnicode_DATA(loc), n_loc)
    p = _put(p, b'","url":"', 9)
    p = _put(p, PyUnicode_DATA(url), n_url)
    p = _put(p, b'"', 1)
    p = _put(p, PyBytes_AS_STRING(middle), PyBytes_GET_SIZE(middle))
    p = _put_lastmod(p, lastmod) if dated else _put(p, b"null", 4)
    p = _put(p, b',"changefreq":', 14)
    p = _put(p, PyBytes_AS_STRING(cf), PyBytes_GET_SIZE(cf))
    p = _put(p, b',"priority":', 12)
    p = _put(p, PyBytes_AS_STRING(pr), PyBytes_GET_SIZE(pr))
    if not open_end:
        if n_label:
            p = _put(p, PyBytes_AS_STRING(label), n_label)
        _put(p, b"}\n", 2)
    return True


cdef int _close_record(bytearray buf, bytes label) except -1:
    """End a line ``_write_record`` left open: ``label`` (or None), the closing brace and
    the newline."""
    cdef Py_ssize_t start = PyByteArray_GET_SIZE(buf)
    cdef Py_ssize_t n_label = PyBytes_GET_SIZE(label) if label is not None else 0
    cdef char* p
    _grow(buf, start + n_label + 2)
    p = PyByteArray_AS_STRING(buf) + start
    if n_label:
        p = _put(p, PyBytes_AS_STRING(label), n_label)
    _put(p, b"}\n", 2)
    return 0


cdef int _append_labelled(bytearray buf, bytes line, bytes label) except -1:
    """Append ``line`` (a JSON object and a newline) with ``label`` (or None) before its
    closing brace, as ``label_lines`` would put it."""
    cdef Py_ssize_t start = PyByteArray_GET_SIZE(buf), n = PyBytes_GET_SIZE(line), k
    cdef char* p
    if label is None:
        buf += line
        return 0
    k = PyBytes_GET_SIZE(label)
    _grow(buf, start + n + k)
    p = PyByteArray_AS_STRING(buf) + start
    p = _put(p, PyBytes_AS_STRING(line), n - 2)
    p = _put(p, PyBytes_AS_STRING(label), k)
    _put(p, b"}\n", 2)
    return 0


cdef bytes _middle(str host, str sitemap):
    """``,"host":...,"sitemap":...,"source":"sitemap","lastmod":`` as orjson writes them
    (``records.record``'s order; every entry of this loop came from a sitemap); None if it
    cannot."""
    try:
        return (
            b',"host":' + _dumps(host) + b',"sitemap":' + _dumps(sitemap)
            + b',"source":"sitemap","lastmod":'
        )
    except TypeError:  # a lone surrogate: encode_record's json fallback, record by record
        return None


def label_lines(bytearray data not None, bytes label not None):
    """``data`` (JSON lines) with ``label`` inserted before the closing brace that ends
    each line, as one new bytes object.

    In: a batch of lines as ``_write_record`` writes them (each ends in ``}`` and a
    newline; JSON escapes any newline inside a string, so a newline ends a line and
    nothing else) and a label such as ``,"event":"new"``. Out: the same as
    ``bytes(data.replace(b"}\\n", label + b"}\\n"))``, which ``Selection.select_lines``
    does without this module. Why: that replace searches for each line's end one at a
    time and then copies the result again (a sizeable share of a worker's time with a
    state file); here two ``memchr`` passes size and fill the result once.
    """
    cdef Py_ssize_t n = PyByteArray_GET_SIZE(data), k = PyBytes_GET_SIZE(label), count = 0
    cdef const char* src = PyByteArray_AS_STRING(data)
    cdef const char* end = src + n
    cdef const char* p = src
    cdef const char* nl
    cdef const char* tag = PyBytes_AS_STRING(label)
    cdef char* dst
    while p < end:
        nl = <const char*>memchr(p, b"\n", end - p)
        if nl is NULL:
            break
        if nl > src and nl[-1] == b"}":
            count += 1
        p = nl + 1
    out = PyBytes_FromStringAndSize(NULL, n + count * k)
    dst = PyBytes_AS_STRING(out)
    p = src
    while p < end:
        nl = <const char*>memchr(p, b"\n", end - p)
        if nl is NULL:
            break
        if nl > src and nl[-1] == b"}":
            memcpy(dst, p, nl - 1 - p)  # the line up to its closing brace
            dst += nl - 1 - p
            memcpy(dst, tag, k)
            dst += k
            dst[0] = b"}"
            dst[1] = b"\n"
            dst += 2
        else:
            memcpy(dst, p, nl + 1 - p)
            dst += nl + 1 - p
        p = nl + 1
    memcpy(dst, p, end - p)  # a last piece without a newline, if any
    return out
