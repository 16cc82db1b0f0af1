# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the dates module: the common ``<lastmod>`` shapes, both ways.

In: a trimmed lastmod string, or an aware ``datetime``. Out:

- ``w3c(raw)``: the UTC ``datetime`` of a strict W3C Datetime in one of the
  shapes sitemaps use almost exclusively (``YYYY-MM-DD``, ``YYYY-MM-DDThh:mm``
  and ``YYYY-MM-DDThh:mm:ss``, each with ``Z`` or ``±hh:mm``), or ``None`` for
  anything else: other shapes (fractions, ``YYYY``, lenient and RFC 822 forms),
  impossible values (Feb 30) and the years 1 and 9999 (whose offsets can leave
  the datetime range). ``dates.parse_lastmod`` then runs its Python path, which
  decides every string by itself; so this only ever answers where that path
  would give the same ``(datetime, W3C)``, and tests/unit/test_cdates.py checks
  that it does.
- ``format_utc(dt)``: ``dates.format_utc``: the same string, and the same
  ``ValueError`` for a naive datetime; ``format_utc_seconds(dt)`` likewise for
  ``dates.format_utc_seconds`` (the output records' whole-second form).

Why compiled: sitemaps stamp most URLs with a distinct time, so the Python
path's cache rarely hits, and its regex, ``fromisoformat`` and ``astimezone``
and formatting it back were a large share of a worker's CPU per URL. Here both
are digit arithmetic.
"""

from cpython.datetime cimport (
    PyDateTime_DATE_GET_HOUR,
    PyDateTime_DATE_GET_MICROSECOND,
    PyDateTime_DATE_GET_MINUTE,
    PyDateTime_DATE_GET_SECOND,
    PyDateTime_GET_DAY,
    PyDateTime_GET_MONTH,
    PyDateTime_GET_YEAR,
    datetime_new,
    datetime_tzinfo,
    import_datetime,
)
from cpython.unicode cimport PyUnicode_DecodeASCII

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)
from libc.stdint cimport int64_t

from datetime import UTC, datetime

import_datetime()

cdef object _UTC = UTC
cdef object _datetime = datetime
cdef int[13] _DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


cdef inline int _digits(const char* s, Py_ssize_t i, Py_ssize_t n) noexcept:
    """The value of ``n`` ASCII digits at ``s[i]``, or -1 if any is not one."""
    cdef int value = 0
    cdef int c
    cdef Py_ssize_t k
    for k in range(i, i + n):
        c = s[k]
        if c < 48 or c > 57:
            return -1
        value = value * 10 + c - 48
    return value


cdef inline bint _leap(int y) noexcept:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


cdef inline void _civil_from_days(int64_t z, int* y, int* m, int* d) noexcept:
    z += 719468
    cdef int64_t era = (z if z >= 0 else z - 146096) // 146097
    cdef int64_t doe = z - era * 146097
    cdef int64_t yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    cdef int64_t doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    cdef int64_t mp = (5 * doy + 2) // 153
    d[0] = <int>(doy - (153 * mp + 2) // 5 + 1)
    m[0] = <int>(mp + (3 if mp < 10 else -9))
    y[0] = <int>(yoe + era * 400 + (m[0] <= 2))


def w3c(str raw):
    """The UTC datetime of a strict W3C lastmod in a common shape; None: not handled here."""
    return _w3c(raw)


cdef object _w3c(str raw):
    """``w3c``, for compiled callers (``_cparse``: a C call, not a Python one, per lastmod)."""
    cdef Py_ssize_t n = len(raw)
    cdef int year, month, day, hour = 0, minute = 0, second = 0, oh = 0, om = 0, sign = 0
    cdef Py_ssize_t zone
    cdef char z
    cdef const char* text
    if n != 10 and n != 17 and n != 20 and n != 22 and n != 25:
        return None
    if not PyUnicode_IS_COMPACT_ASCII(raw):
        return None  # every shape handled here is ASCII; the Python path decides the rest
    text = PyUnicode_DATA(raw)
    if text[4] != b"-" or text[7] != b"-":
        return None
    year = _digits(text, 0, 4)
    month = _digits(text, 5, 2)
    day = _digits(text, 8, 2)
    if year < 2 or year > 9998 or month < 1 or month > 12 or day < 1:
        return None
    if day > _DAYS[month] and not (month == 2 and day == 29 and _leap(year)):
        return None
    if n > 10:
        if text[10] != b"T" or text[13] != b":":
            return None
        hour = _digits(text, 11, 2)
        minute = _digits(text, 14, 2)
        zone = 16
        if n == 20 or n == 25:
            if text[16] != b":":
                return None
            second = _digits(text, 17, 2)
            zone = 19
        if hour < 0 or hour > 23 or minute < 0 or minute > 59 or second < 0 or second > 59:
            return None
        z = text[zone]
        if z == b"Z":
            if n - zone != 1:
                return None
        elif z == b"+" or z == b"-":
            if n - zone != 6 or text[zone + 3] != b":":
                return None
            oh = _digits(text, zone + 1, 2)
            om = _digits(text, zone + 4, 2)
            if oh < 0 or oh > 23 or om < 0 or om > 59:
                return None
            sign = 1 if z == b"+" else -1
        else:
            return None
    if sign != 0 and (oh != 0 or om != 0):
        # Local time minus the offset, through days since the epoch (the date may roll).
        _shift(&year, &month, &day, &hour, &minute, -sign * (oh * 60 + om))
    return datetime_new(year, month, day, hour, minute, second, 0, _UTC)


cdef void _shift(int* y, int* m, int* d, int* hour, int* minute, int delta) noexcept:
    cdef int64_t total = (
        _days_from_civil(y[0], m[0], d[0]) * 1440 + hour[0] * 60 + minute[0] + delta
    )
    cdef int64_t days = total // 1440  # floor division in Cython's Python semantics
    cdef int64_t rest = total - days * 1440
    _civil_from_days(days, y, m, d)
    hour[0] = <int>(rest // 60)
    minute[0] = <int>(rest % 60)


cdef inline void _put(char* out, int value, int width) noexcept:
    cdef int k
    for k in range(width - 1, -1, -1):
        out[k] = <char>(48 + value % 10)
        value //= 10


def format_utc(dt):
    """``YYYY-MM-DDTHH:MM:SS[.ffffff]Z`` in UTC, as ``dates.format_utc`` (same errors)."""
    return _format(dt, True)


def format_utc_seconds(dt):
    """``YYYY-MM-DDTHH:MM:SSZ`` in UTC (a fraction dropped), as
    ``dates.format_utc_seconds`` (same errors)."""
    return _format(dt, False)


cdef str _format(object dt, bint fraction):
    cdef char buf[28]
    cdef int us
    cdef Py_ssize_t n = 19
    if type(dt) is not _datetime or datetime_tzinfo(dt) is not _UTC:
        if not isinstance(dt, _datetime):
            raise TypeError(f"format_utc needs a datetime, not {type(dt).__name__}")
        if dt.utcoffset() is None:
            raise ValueError(f"naive datetime has no instant: {dt!r}")
        dt = dt.astimezone(_UTC)
        if type(dt) is not _datetime:  # a subclass: what isoformat says, as the Python path
            return dt.isoformat(timespec="auto" if fraction else "seconds")[:-6] + "Z"
    _put(buf, PyDateTime_GET_YEAR(dt), 4)
    buf[4] = b"-"
    _put(buf + 5, PyDateTime_GET_MONTH(dt), 2)
    buf[7] = b"-"
    _put(buf + 8, PyDateTime_GET_DAY(dt), 2)
    buf[10] = b"T"
    _put(buf + 11, PyDateTime_DATE_GET_HOUR(dt), 2)
    buf[13] = b":"
    _put(buf + 14, PyDateTime_DATE_GET_MINUTE(dt), 2)
    buf[16] = b":"
    _put(buf + 17, PyDateTime_DATE_GET_SECOND(dt), 2)
    us = PyDateTime_DATE_GET_MICROSECOND(dt) if fraction else 0
    if us:
        buf[19] = b"."
        _put(buf + 20, us, 6)
        n = 26
    buf[n] = b"Z"
    return PyUnicode_DecodeASCII(buf, n + 1, NULL)
