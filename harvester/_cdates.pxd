# Shared with other compiled modules (harvester/crawl/_chost.pyx,
# harvester/audit/_cdistribution.pyx), defined here as inline.
from cpython.datetime cimport (
    PyDateTime_DATE_GET_HOUR,
    PyDateTime_DATE_GET_MICROSECOND,
    PyDateTime_DATE_GET_MINUTE,
    PyDateTime_DATE_GET_SECOND,
    PyDateTime_GET_DAY,
    PyDateTime_GET_MONTH,
    PyDateTime_GET_YEAR,
)
from libc.stdint cimport int64_t


cdef inline int64_t _days_from_civil(int64_t y, int64_t m, int64_t d) noexcept:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    y -= m <= 2
    cdef int64_t era = (y if y >= 0 else y - 399) // 400
    cdef int64_t yoe = y - era * 400
    cdef int64_t doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    cdef int64_t doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef inline int64_t _epoch_us(object dt) noexcept:
    """Microseconds since 1970 of a UTC ``datetime``: ``(dt - _UNIX_EPOCH) // _MICROSECOND``."""
    cdef int64_t days = _days_from_civil(
        PyDateTime_GET_YEAR(dt), PyDateTime_GET_MONTH(dt), PyDateTime_GET_DAY(dt)
    )
    return (
        ((days * 24 + PyDateTime_DATE_GET_HOUR(dt)) * 60 + PyDateTime_DATE_GET_MINUTE(dt)) * 60
        + PyDateTime_DATE_GET_SECOND(dt)
    ) * 1000000 + PyDateTime_DATE_GET_MICROSECOND(dt)


cdef object _w3c(str raw)  # w3c() without the Python call (see _cdates.pyx)
