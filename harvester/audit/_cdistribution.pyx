# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the lastmod distribution: ``LastmodDistribution.add_many``'s count.

In: a ``harvester.audit.distribution.LastmodDistribution`` (its surface for this
module is the group of methods beside ``counting_tables``, its references already
set by ``add_many``), and a sample's lastmods and their texts, in order (what
``UrlBatch`` sampled, whichever of its loops took the entries). Out: the same counts
``LastmodDistribution.count_entries`` makes of them, in the distribution's tables: an
entry without a lastmod or with a ``datetime`` in UTC is counted here (its
Misra-Gries eviction and the sketch below its cap too); any other goes to
``count_entries`` itself. tests/unit/audit/test_cdistribution.py compares the two.

Why compiled: the count runs for most URLs of a host, and in Python its datetime and
64-bit arithmetic cost several times the rest of the URL's loop. Beside its Python
half in audit/ (it was part of ``crawl/_chost.pyx``, the batch's loop, which the
audit may not import).
"""

from cpython.datetime cimport (
    PyDateTime_CheckExact,
    PyDateTime_GET_MONTH,
    PyDateTime_GET_YEAR,
    datetime_tzinfo,
    import_datetime,
)
from cpython.dict cimport PyDict_DelItem, PyDict_GetItem, PyDict_Next, PyDict_SetItem
from cpython.long cimport PyLong_AsLong, PyLong_AsUnsignedLongLong, PyLong_FromUnsignedLongLong
from cpython.object cimport PyObject
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.unicode cimport PyUnicode_GET_LENGTH, PyUnicode_READ_CHAR
from libc.stdint cimport int64_t, uint64_t

from datetime import UTC

from harvester._cdates cimport _days_from_civil, _epoch_us

cdef object _UTC = UTC

import_datetime()


cdef int64_t DAY_US = 86400 * 1000000
cdef int64_t WEB_EPOCH_US = _days_from_civil(1995, 1, 1) * DAY_US  # audit.WEB_EPOCH


cdef inline bint _is_space(Py_UCS4 c) noexcept:
    # \s of an ASCII regex: space, \t \n \v \f \r
    return c == 32 or 9 <= c <= 13


cdef bint _date_only(str raw) noexcept:
    """``audit._DATE_ONLY(raw)`` for a text of at most 10 characters: ``YYYY[-MM[-DD]]``."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(raw), i = 0, k
    cdef Py_UCS4 c
    while i < n and _is_space(PyUnicode_READ_CHAR(raw, i)):
        i += 1
    while n > i and _is_space(PyUnicode_READ_CHAR(raw, n - 1)):
        n -= 1
    if n - i not in (4, 7, 10):
        return False
    for k in range(n - i):
        c = PyUnicode_READ_CHAR(raw, i + k)
        if k == 4 or k == 7:
            if c != 45:  # "-"
                return False
        elif not 48 <= c <= 57:
            return False
    return True


cdef inline uint64_t _mix64(uint64_t z) noexcept:
    """``audit._mix64`` (splitmix64's finaliser), in uint64 arithmetic (mod 2**64 as there)."""
    z += 0x9E3779B97F4A7C15ULL
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline int _bump(dict counts, object key) except -1:
    cdef PyObject* count = PyDict_GetItem(counts, key)
    PyDict_SetItem(counts, key, 1 if count is NULL else <object>count + 1)
    return 0


cdef enum:
    _MONTH_SLOTS = 32  # distinct months a call counts in C before adding them to the dict


cdef class _Counts:
    """One ``count_lastmods`` call: the distribution's tables, references and counters.

    The month counts are kept in C (``_month``) and added to the distribution's dict
    when the slots are full and at ``close``: a sample's lastmods fall in a few months,
    and a dict bump per entry (a lookup, an int for the month and one for the count,
    a store) was a third of the count's cost.
    """

    cdef object dist
    cdef Py_ssize_t month_keys[_MONTH_SLOTS]
    cdef Py_ssize_t month_counts[_MONTH_SLOTS]
    cdef int n_months, last_month  # slots in use; the one the last entry fell in
    cdef dict months, modal
    cdef set kmv
    cdef list heap
    cdef int64_t fetch_us, header_us, future_us, tol
    cdef bint has_header, full, evicted
    cdef uint64_t kth  # the sketch's largest kept hash, once it is full
    cdef Py_ssize_t modal_cap, distinct_cap
    cdef Py_ssize_t total, dated, generation, future, before, date_only

    cdef int open(self, dist) except -1:
        self.dist = dist
        tables = dist.counting_tables()
        self.months, self.modal, self.kmv, self.heap = tables[0], tables[1], tables[2], tables[3]
        self.fetch_us, self.future_us, self.tol = tables[4], tables[6], tables[7]
        self.has_header = tables[5] is not None
        self.header_us = tables[5] if self.has_header else 0
        self.modal_cap, self.distinct_cap = dist.modal_cap, dist.distinct_cap
        self._kth()
        return 0

    cdef int _kth(self) except -1:
        self.full = len(self.kmv) >= self.distinct_cap
        if self.full:
            self.kth = PyLong_AsUnsignedLongLong(-self.heap[0])
        return 0

    cdef int add(self, object lastmod, object raw) except -1:
        """``count_entries``' step for a UTC ``datetime``, the same arithmetic in C."""
        cdef int64_t key = _epoch_us(lastmod), limit = self.future_us
        cdef Py_ssize_t month = PyDateTime_GET_YEAR(lastmod) * 12 + PyDateTime_GET_MONTH(lastmod) - 1
        cdef uint64_t h
        self.total += 1
        self.dated += 1
        if abs(key - self.fetch_us) <= self.tol or (
            self.has_header and abs(key - self.header_us) <= self.tol
        ):
            self.generation += 1
        if type(raw) is str and PyUnicode_GET_LENGTH(<str>raw) <= 10 and _date_only(<str>raw):
            self.date_only += 1
            limit += DAY_US
        if key > limit:
            self.future += 1
            month = -2
        elif key < WEB_EPOCH_US:
            self.before += 1
            month = -1
        self._month(month)
        k = key
        if PyDict_GetItem(self.modal, k) is not NULL or len(self.modal) < self.modal_cap:
            _bump(self.modal, k)
        else:
            self._evict()
        h = _mix64(<uint64_t>key)
        if self.full and h >= self.kth:
            return 0  # what the sketch does with it once full, held or not: nothing
        hk = PyLong_FromUnsignedLongLong(h)
        if PySet_Contains(self.kmv, hk):
            return 0
        if not self.full and len(self.kmv) + 1 < self.distinct_cap:
            PySet_Add(self.kmv, hk)  # below the cap the sketch is the set alone
            return 0
        self.dist.sketch(hk)  # fills the heap at the cap, or replaces its largest hash
        self._kth()
        return 0

    cdef int _month(self, Py_ssize_t month) except -1:
        """Count one entry in ``month`` (an index, or -1 / -2: before 1995 / future)."""
        cdef int k = self.last_month
        if k < self.n_months and self.month_keys[k] == month:
            self.month_counts[k] += 1
            return 0
        for k in range(self.n_months):
            if self.month_keys[k] == month:
                self.month_counts[k] += 1
                self.last_month = k
                return 0
        if self.n_months == _MONTH_SLOTS:
            self._add_months()
        k = self.n_months
        self.month_keys[k] = month
        self.month_counts[k] = 1
        self.n_months = k + 1
        self.last_month = k
        return 0

    cdef int _add_months(self) except -1:
        """Add the months counted in C to the distribution's dict; the slots start again."""
        cdef int k
        cdef PyObject* old
        cdef int n = self.n_months
        self.n_months = self.last_month = 0
        for k in range(n):
            key = self.month_keys[k]
            old = PyDict_GetItem(self.months, key)
            PyDict_SetItem(
                self.months, key,
                self.month_counts[k] if old is NULL else <object>old + self.month_counts[k],
            )
        return 0

    cdef int _evict(self) except -1:
        """``count_modal(key, 1)`` for a key not kept, the counter full (Misra-Gries):
        every kept count loses 1, those at 1 go, and the key is not added. In place,
        without the Python loop over the whole counter (once per ``modal_cap`` new
        timestamps, which is often on a host whose timestamps are all distinct)."""
        cdef Py_ssize_t pos = 0
        cdef PyObject* key
        cdef PyObject* value
        cdef list gone = []
        cdef long count
        self.evicted = True
        while PyDict_Next(self.modal, &pos, &key, &value):
            count = PyLong_AsLong(<object>value)
            if count <= 1:
                gone.append(<object>key)
            else:  # (a new value for a key it has: allowed while iterating)
                PyDict_SetItem(self.modal, <object>key, count - 1)
        for k in gone:
            PyDict_DelItem(self.modal, k)
        return 0

    cdef int close(self) except -1:
        self._add_months()
        self.dist.add_counts(
            self.total,
            self.dated,
            self.generation,
            self.future,
            self.before,
            self.date_only,
            modal_evicted=self.evicted,
        )
        return 0


def count_lastmods(dist, list lastmods not None, list raws not None):
    """``LastmodDistribution.count_entries(lastmods, raws)``, the usual entries in C.

    ``dist``: the ``LastmodDistribution`` (its surface for this function is the group
    of methods beside ``counting_tables``), its references already set by
    ``add_many``. An entry without a lastmod or with a ``datetime`` in UTC is counted
    here (its Misra-Gries eviction and the sketch below its cap too); any other goes
    to ``count_entries`` itself. Why compiled: the count runs for
    most URLs of a host, and in Python its datetime and 64-bit arithmetic cost
    several times the rest of the URL's loop.
    """
    cdef Py_ssize_t i, n = len(lastmods)
    cdef _Counts counts = _Counts()
    if len(raws) != n:
        raise ValueError("lastmods and raws differ in length")
    counts.open(dist)
    try:
        for i in range(n):
            lastmod = lastmods[i]
            if lastmod is None:
                counts.total += 1
            elif PyDateTime_CheckExact(lastmod) and datetime_tzinfo(lastmod) is _UTC:
                counts.add(lastmod, raws[i])
            else:
                dist.count_entries([lastmod], [raws[i]])
                counts._kth()
    finally:
        # What was counted stays counted even if an entry raised.
        counts.close()
