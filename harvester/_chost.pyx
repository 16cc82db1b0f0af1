# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the host worker: a batch of URL entries into records (``HostWorker._entries``).

In: a list of reader entries and the worker's per-URL state (its canonicalizer,
seen-set, output batch and counters, see ``url_entries``). Out: for each
``UrlEntry``, what ``HostWorker._entries``' Python loop does: the canonical URL
(the compiled check, else the host's rules), its fingerprint, the per-host
dedupe, the ``max_urls_per_host`` cap, the lastmod audit's sample (counted by
``_Audit``, ``LastmodDistribution.add`` in C), and the record appended to the batch
(or, given ``encoded``, its JSON line written by ``_write_record``); returned are the updated counters and the
entries that are not URLs (index children), which the Python loop then handles.

Only the usual cases are done here; every other one calls the same Python the
loop calls (``canonical`` for a URL the check says no to, ``SeenSet.add`` past
its small set, ``records.record`` for an entry with extensions, ``dist.add`` for
a lastmod that is not a UTC ``datetime``).
tests/unit/test_chost.py runs both loops on the same entries and compares the
batches, fingerprints, counters, the seen-set and the audit.

Why compiled: the loop is about 3.7 µs a URL in Python, most of it calls and
attribute reads between small steps; here those are C, and the steps that were
already compiled (the canonical check, the fingerprint) need no call at all.
"""

from cpython.datetime cimport (
    PyDateTime_CheckExact,
    PyDateTime_DATE_GET_HOUR,
    PyDateTime_DATE_GET_MICROSECOND,
    PyDateTime_DATE_GET_MINUTE,
    PyDateTime_DATE_GET_SECOND,
    PyDateTime_GET_DAY,
    PyDateTime_GET_MONTH,
    PyDateTime_GET_YEAR,
    datetime_tzinfo,
    import_datetime,
)
from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_DelItem, PyDict_GetItem, PyDict_Next, PyDict_SetItem
from cpython.long cimport PyLong_AsLong, PyLong_AsUnsignedLongLong, PyLong_FromUnsignedLongLong
from cpython.object cimport Py_SIZE, PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.unicode cimport PyUnicode_GET_LENGTH, PyUnicode_READ_CHAR
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memchr, memcpy

cdef extern from "Python.h":
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_alloc  # bytes allocated (CPython's struct; the size is separate)
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)

import orjson

from datetime import UTC
from heapq import heappushpop

from harvester.audit import _DAY_US, _WEB_EPOCH_US, _fill_heap
from harvester.normalize import Rules
from harvester.sink import encode_record

from harvester._cdates cimport _days_from_civil
from harvester._cdedupe cimport FpTable, _fingerprint
from harvester._cnormalize cimport _already_canonical, _canonical_query

cdef object _CANONICAL = Rules.canonical  # the method the loop may stand in for
cdef Py_ssize_t AUDIT_ALL = 500  # host.py's _AUDIT_ALL (the test checks they are equal)
cdef int64_t DAY_US = _DAY_US
cdef int64_t WEB_EPOCH_US = _WEB_EPOCH_US
cdef int64_t EXACT_DOUBLE = 1LL << 53  # |µs| below this: the float timestamp is key / 1e6
cdef object _UTC = UTC

import_datetime()


cdef inline int64_t _epoch_us(object dt) noexcept:
    """Microseconds since 1970 of a UTC ``datetime``: ``(dt - _UNIX_EPOCH) // _MICROSECOND``."""
    cdef int64_t days = _days_from_civil(
        PyDateTime_GET_YEAR(dt), PyDateTime_GET_MONTH(dt), PyDateTime_GET_DAY(dt)
    )
    return (
        ((days * 24 + PyDateTime_DATE_GET_HOUR(dt)) * 60 + PyDateTime_DATE_GET_MINUTE(dt)) * 60
        + PyDateTime_DATE_GET_SECOND(dt)
    ) * 1000000 + PyDateTime_DATE_GET_MICROSECOND(dt)


cdef inline bint _is_space(Py_UCS4 c) noexcept:
    # \s of an ASCII regex: space, \t \n \v \f \r
    return c == 32 or 9 <= c <= 13


cdef bint _date_only(str raw) noexcept:
    """``audit._DATE_ONLY(raw)`` for a text of at most 10 characters: ``YYYY[-MM[-DD]]``."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(raw), i = 0, j, k
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


cdef enum:
    _MONTH_FIRST = 1995 * 12  # the first month counted in _Audit's array (WEB_EPOCH_US's)
    _MONTHS = 150 * 12  # months it holds (to 2144); others go to the dict directly


cdef class _Audit:
    """``LastmodDistribution.add`` for one batch, its counters kept in C until ``close``.

    The usual entry (no lastmod, or a ``datetime`` in UTC) is counted here with
    the same arithmetic; the dicts, sets and heap it updates are the distribution's
    own, and the Misra-Gries eviction (rare) calls its Python method. Any other lastmod calls ``dist.add`` itself. Counters are
    added back to the distribution by ``close``, so the two kinds of call mix.
    """

    cdef object dist, modified, fetched_at, months, modal, kmv, heap
    cdef Py_ssize_t modal_cap, distinct_cap
    cdef bint ready, heap_full
    cdef int64_t fetch_us, header_us, future_us, tol
    cdef bint has_header
    cdef uint64_t kth  # the sketch's largest kept hash, once it is full
    cdef Py_ssize_t total, dated, generation, future, before, date_only
    # The batch's month counts (the distribution's months dict, month = year*12+month-1):
    # those from 1995 on here, [month_lo, month_hi] the range used; -1 and -2 (before
    # 1995, future) on their own.
    cdef int month_counts[_MONTHS]
    cdef Py_ssize_t month_lo, month_hi, before_months, future_months

    def __cinit__(self, dist, modified, fetched_at):
        self.dist = dist
        self.modified = modified
        self.fetched_at = fetched_at
        self.month_lo = _MONTH_FIRST + _MONTHS
        self.month_hi = -1

    cdef int _setup(self) except -1:
        # As the first add() of LastmodDistribution does, only when one is made.
        dist = self.dist
        ref = dist._ref
        if self.fetched_at is not (<tuple>ref)[0] or self.modified is not (<tuple>ref)[1]:
            dist._set_references(self.fetched_at, self.modified)
            ref = dist._ref
        self.fetch_us = (<tuple>ref)[2]
        self.has_header = (<tuple>ref)[3] is not None
        self.header_us = (<tuple>ref)[3] if self.has_header else 0
        self.future_us = (<tuple>ref)[4]
        self.tol = dist._tol_us
        self.months = dist._months
        self.modal = dist._modal
        self.modal_cap = dist.modal_cap
        self.kmv = dist._kmv
        self.heap = dist._kmv_heap
        self.distinct_cap = dist.distinct_cap
        self._kth()
        self.ready = True
        return 0

    cdef int _kth(self) except -1:
        self.heap_full = len(<set>self.kmv) >= self.distinct_cap
        if self.heap_full:
            self.kth = PyLong_AsUnsignedLongLong(-(<list>self.heap)[0])
        return 0

    cdef int add(self, object lastmod, object raw) except -1:
        cdef int64_t key, limit
        cdef Py_ssize_t month
        cdef uint64_t h
        cdef PyObject* count
        if not self.ready:
            self._setup()
        if lastmod is None:
            self.total += 1
            return 0
        if not PyDateTime_CheckExact(lastmod) or datetime_tzinfo(lastmod) is not _UTC:
            self.dist.add(
                lastmod, raw, sitemap_last_modified=self.modified, fetched_at=self.fetched_at
            )
            return 0
        self.total += 1
        self.dated += 1
        key = _epoch_us(lastmod)
        month = PyDateTime_GET_YEAR(lastmod) * 12 + PyDateTime_GET_MONTH(lastmod) - 1
        if abs(key - self.fetch_us) <= self.tol or (
            self.has_header and abs(key - self.header_us) <= self.tol
        ):
            self.generation += 1
        limit = self.future_us
        if type(raw) is str and PyUnicode_GET_LENGTH(<str>raw) <= 10 and _date_only(<str>raw):
            self.date_only += 1
            limit += DAY_US
        if key > limit:
            self.future += 1
            month = -2
        elif key < WEB_EPOCH_US:
            self.before += 1
            month = -1
        if _MONTH_FIRST <= month < _MONTH_FIRST + _MONTHS:
            # Counted here; close() adds them to the dict (a get, a set and two ints
            # per URL were ~20 % of this method's instructions).
            self.month_counts[month - _MONTH_FIRST] += 1
            if month < self.month_lo:
                self.month_lo = month
            if month > self.month_hi:
                self.month_hi = month
        elif month == -1:
            self.before_months += 1
        elif month == -2:
            self.future_months += 1
        else:
            m = month
            count = PyDict_GetItem(self.months, m)
            PyDict_SetItem(self.months, m, 1 if count is NULL else <object>count + 1)
        k = key
        count = PyDict_GetItem(self.modal, k)
        if count is not NULL:
            PyDict_SetItem(self.modal, k, <object>count + 1)
        elif len(<dict>self.modal) < self.modal_cap:
            PyDict_SetItem(self.modal, k, 1)
        else:
            self._evict()
        h = _mix64(<uint64_t>key)
        if self.heap_full and h >= self.kth:
            # What the sketch does with it once full, whether it holds it or not:
            # nothing. Known here without the int object and the set lookup.
            return 0
        hk = PyLong_FromUnsignedLongLong(h)
        if not PySet_Contains(self.kmv, hk):
            # LastmodDistribution._sketch past its membership test, with heapq's C functions.
            if not self.heap_full:
                PySet_Add(self.kmv, hk)
                if len(<set>self.kmv) >= self.distinct_cap:
                    _fill_heap(self.heap, self.kmv)
                    self._kth()
            elif h < self.kth:
                self.kmv.discard(-heappushpop(self.heap, -hk))
                PySet_Add(self.kmv, hk)
                self._kth()
        return 0

    cdef int _add_month(self, Py_ssize_t month, Py_ssize_t n) except -1:
        m = month
        count = PyDict_GetItem(self.months, m)
        PyDict_SetItem(self.months, m, n if count is NULL else <object>count + n)
        return 0

    cdef int _evict(self) except -1:
        # LastmodDistribution._count_modal(key, 1) for a key not kept, the table full:
        # every kept count loses 1 (those at 1 go) and the key is not added. Its Python
        # loop took ~60 µs a round (one round per ~257 new timestamps); in place here.
        cdef Py_ssize_t pos = 0
        cdef PyObject* key
        cdef PyObject* value
        cdef list gone = []
        cdef long count
        self.dist._modal_evicted = True
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
        cdef Py_ssize_t month, n
        if self.before_months:
            self._add_month(-1, self.before_months)
            self.before_months = 0
        if self.future_months:
            self._add_month(-2, self.future_months)
            self.future_months = 0
        for month in range(self.month_lo, self.month_hi + 1):
            n = self.month_counts[month - _MONTH_FIRST]
            if n:
                self.month_counts[month - _MONTH_FIRST] = 0
                self._add_month(month, n)
        self.month_lo = _MONTH_FIRST + _MONTHS
        self.month_hi = -1
        dist = self.dist
        if self.total:
            dist.total += self.total
        if self.dated:
            dist.dated += self.dated
        if self.generation:
            dist.generation += self.generation
        if self.future:
            dist.future += self.future
        if self.before:
            dist.before_1995 += self.before
        if self.date_only:
            dist.date_only += self.date_only
        return 0


# -- the JSON line of a record, written straight into the batch's bytes -----------------

cdef object _dumps = orjson.dumps
cdef dict _VALUE_JSON = {}  # changefreq text or priority float -> its orjson encoding
cdef Py_ssize_t _VALUE_JSON_MAX = 4096  # distinct values kept (a file repeats a handful)


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


# _value_json's identity cache: the last value seen in each slot (by its address) and
# its encoding, both referenced here. A sitemap's changefreq and priority values are the
# parser's memoised objects, so the same few come back for every <url>; found by
# identity they need no equality test against 0 and no dict lookup (with the float's
# hash and compare), ~0.8 % of a worker's instructions (valgrind, many benchmark).
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


cdef inline int _grow(bytearray buf, Py_ssize_t size) except -1:
    """Make ``buf`` ``size`` bytes long, doubling its room when it must grow.

    bytearray's own growth adds an eighth, so as a batch's lines filled it, realloc
    moved the whole batch every few records (1.6 % of a worker's CPU, all of it in
    memmove). Asking for twice the size, then for the size (a minor shrink, which
    keeps the room), moves it at most about once per doubling.
    """
    if size + 1 > (<PyByteArrayObject*>buf).ob_alloc:
        PyByteArray_Resize(buf, 2 * size)
    PyByteArray_Resize(buf, size)
    return 0


cdef inline char* _put(char* p, const char* s, Py_ssize_t n) noexcept:
    memcpy(p, s, n)
    return p + n


cdef bint _write_record(
    bytearray buf, str loc, str url, bytes middle, object lastmod, object changefreq,
    object priority, bytes label,
) except -1:
    """Append the JSON line ``encode_record`` makes of the record dict built above.

    ``middle`` is ``,"host":<host>,"sitemap":<sitemap>,"lastmod":`` as orjson encodes
    them (once per batch); ``label`` (or None) goes before the closing brace. False
    (nothing written) when a value needs what only orjson does: escapes, non-ASCII, a
    lastmod that is not a UTC ``datetime``; the caller then encodes the dict itself.
    """
    cdef Py_ssize_t n_loc = _plain(loc), n_url, size, start
    cdef Py_ssize_t n_label = PyBytes_GET_SIZE(label) if label is not None else 0
    cdef int us = 0
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
        us = PyDateTime_DATE_GET_MICROSECOND(lastmod)
    cf = _value_json(changefreq)
    pr = _value_json(priority)
    size = (
        8 + n_loc + 9 + n_url + 1 + PyBytes_GET_SIZE(middle)
        + ((22 + (7 if us else 0)) if dated else 4)
        + 14 + PyBytes_GET_SIZE(cf) + 12 + PyBytes_GET_SIZE(pr) + n_label + 2
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
    if dated:
        # records.lastmod_iso (dates.format_utc): YYYY-MM-DDTHH:MM:SS[.ffffff]Z
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
        if us:
            p[0] = b"."
            p = _put_digits(p + 1, us, 6)
        p = _put(p, b'Z"', 2)
    else:
        p = _put(p, b"null", 4)
    p = _put(p, b',"changefreq":', 14)
    p = _put(p, PyBytes_AS_STRING(cf), PyBytes_GET_SIZE(cf))
    p = _put(p, b',"priority":', 12)
    p = _put(p, PyBytes_AS_STRING(pr), PyBytes_GET_SIZE(pr))
    if n_label:
        p = _put(p, PyBytes_AS_STRING(label), n_label)
    p = _put(p, b"}\n", 2)
    return True


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
    """``,"host":...,"sitemap":...,"lastmod":`` as orjson writes them; None if it cannot."""
    try:
        return b',"host":' + _dumps(host) + b',"sitemap":' + _dumps(sitemap) + b',"lastmod":'
    except TypeError:  # a lone surrogate: encode_record's json fallback, record by record
        return None


cdef inline int64_t _epoch_s(object lastmod) except? -1:
    """``int(lastmod.timestamp())`` (the filter's lastmod epoch), without the float object."""
    cdef int64_t key
    if PyDateTime_CheckExact(lastmod) and datetime_tzinfo(lastmod) is _UTC:
        key = _epoch_us(lastmod)
        if -EXACT_DOUBLE < key < EXACT_DOUBLE:
            # timestamp() divides the exact microseconds by 10**6, correctly rounded;
            # so does one double division of two exact doubles; int() truncates.
            return <int64_t>(<double>key / 1e6)
    return int(lastmod.timestamp())


cdef int _append_line(bytearray buf, str url) except -1:
    """Append ``url``'s UTF-8 and a newline to ``buf`` (a raw newline in it as ``%0A``,
    as ``chunks.pack`` does: a line must stay one URL)."""
    cdef Py_ssize_t n, start
    cdef const char* data
    cdef char* p
    if PyUnicode_IS_COMPACT_ASCII(url):
        data = PyUnicode_DATA(url)
        n = PyUnicode_GET_LENGTH(url)
        if memchr(data, b"\n", n) == NULL:
            start = PyByteArray_GET_SIZE(buf)
            _grow(buf, start + n + 1)
            p = PyByteArray_AS_STRING(buf) + start
            memcpy(p, data, n)
            p[n] = b"\n"
            return 0
    buf += url.replace("\n", "%0A").encode("utf-8", "surrogatepass") + b"\n"
    return 0


cdef inline int _append_u64(array.array values, uint64_t value) except -1:
    """``values.append(value)`` for an ``array('Q')``."""
    cdef Py_ssize_t n = Py_SIZE(values)
    array.resize_smart(values, n + 1)
    values.data.as_ulonglongs[n] = value
    return 0


cdef inline int _append_i64(array.array values, int64_t value) except -1:
    """``values.append(value)`` for an ``array('q')``."""
    cdef Py_ssize_t n = Py_SIZE(values)
    array.resize_smart(values, n + 1)
    values.data.as_longlongs[n] = value
    return 0


def url_entries(
    list entries,
    canon,
    bint strip_slash,
    seen,
    list batch,
    fps,
    lastmods,
    no_lastmod,
    str host,
    str sitemap,
    Py_ssize_t cap,
    Py_ssize_t listed,
    Py_ssize_t position,
    Py_ssize_t replayed,
    bint cap_hit,
    dist,
    modified,
    fetched_at,
    iso,
    record,
    url_entry_type,
    report,
    bytearray encoded=None,
    bytearray canonical=None,
    bytes label=None,
):
    """Handle the ``UrlEntry`` items of ``entries`` as ``HostWorker._entries`` does.

    ``canon``: the host's ``Rules.canonical`` (``strip_slash`` its rule);
    ``seen``: its ``SeenSet``; ``batch``/``fps``/``lastmods``: the output batch,
    its fingerprints (``array('Q')``) and, when filtering, lastmod epochs
    (``array('q')``, ``no_lastmod`` for none; None when not filtering);
    ``dist``: the ``LastmodDistribution`` or None; ``iso`` and ``record``:
    ``records._iso`` and ``records.record``; ``report``: the ``HostReport``;
    ``encoded``: when given, records go into it as the JSON lines that
    ``sink.encode_records`` makes of them (``batch`` stays empty); ``canonical``:
    when given, each record's canonical URL is appended to it too, as UTF-8 and a
    newline (``_append_line``): the state file's ledger chunks are made of that text
    (``LedgerRows.pack_text``), and it cannot be read back from an escaped line;
    ``label``: with ``encoded``, a label such as ``,"event":"new"`` that every line
    gets before its closing brace (``label_lines`` need not insert it afterwards).

    Returns ``(listed, position, cap_hit, others)``: the counters after the batch
    and, in order, the entries that are not ``UrlEntry`` (for the Python loop).
    """
    cdef list others = []
    cdef Py_ssize_t duplicates = 0, urls = 0, small_added = 0, small_limit = 0
    cdef uint64_t fp
    cdef object small = seen._small
    # The small set as a table (dedupe's small sets), else None: added to in C below.
    cdef FpTable table = small if type(small) is FpTable else None
    cdef int added
    cdef bint is_new
    cdef _Audit audit = _Audit(dist, modified, fetched_at) if dist is not None else None
    cdef bytes middle = None
    # canon as Rules.canonical does it, its compiled step called here without a Python
    # call (~0.4 µs each, for the ~12 % of URLs of the many benchmark not already
    # canonical: queries in another order); the rest still go through canon.
    cdef object rules = getattr(canon, "__self__", None)
    cdef bint direct = type(rules) is Rules and getattr(type(rules), "canonical") is _CANONICAL
    cdef frozenset drop = rules._drop if direct else None
    cdef tuple prefixes = rules._drop_prefixes if direct else None
    cdef bint sort = rules._sort if direct else False
    # The fingerprints and lastmod epochs go into the arrays' memory directly: through
    # .append each was a method call, an int object and its conversion back.
    cdef array.array fp_array = fps
    cdef array.array lastmod_array = lastmods
    cdef int64_t no_epoch = no_lastmod
    if fp_array.ob_descr.typecode != b"Q" or (
        lastmod_array is not None and lastmod_array.ob_descr.typecode != b"q"
    ):
        raise TypeError("fps must be an array('Q'), lastmods an array('q') or None")
    if encoded is not None and host is not None and sitemap is not None:
        middle = _middle(host, sitemap)
    if small is not None:
        small_limit = seen._small_limit
    try:
        for entry in entries:
            if type(entry) is not url_entry_type:
                others.append(entry)
                continue
            if cap_hit:
                continue
            loc = (<tuple>entry)[0]
            if _already_canonical(loc, strip_slash):
                url = loc
            else:
                url = _canonical_query(loc, strip_slash, drop, prefixes, sort) if direct else None
                if url is None:
                    url = canon(loc)
            position += 1
            fp = _fingerprint(url)
            # The seen-set's small mode inline (a table, or a set of ints, as
            # SeenSet.add); at its limit, and in the other modes, SeenSet.add itself.
            if table is not None and table.count + table.zero + 1 < small_limit:
                added = table.add1(fp)
                small_added += added
                is_new = added
            elif table is None and small is not None and len(<set>small) + 1 < small_limit:
                key = fp
                if PySet_Contains(small, key):
                    is_new = False
                else:
                    PySet_Add(small, key)
                    small_added += 1
                    is_new = True
            else:
                if small_added:
                    seen.count += small_added
                    small_added = 0
                is_new = seen.add(fp)
                small = seen._small
                table = small if type(small) is FpTable else None
            if not is_new:
                if position > replayed:
                    duplicates += 1
                continue
            if listed >= cap:
                # Added to the seen-set above but not emitted, as in the Python loop.
                cap_hit = True
                report.limit("max_urls_per_host")
                continue
            listed += 1
            urls += 1
            lastmod = (<tuple>entry)[1]
            if audit is not None and (listed <= AUDIT_ALL or not fp & 7):
                audit.add(lastmod, (<tuple>entry)[2])
            if (
                (<tuple>entry)[5] or (<tuple>entry)[6] or (<tuple>entry)[7]
                or (<tuple>entry)[8] is not None
            ):
                if encoded is not None:
                    line = encode_record(record(entry, sitemap, host, url=url))
                    _append_labelled(encoded, line, label)
                else:
                    batch.append(record(entry, sitemap, host, url=url))
            elif encoded is not None and middle is not None and _write_record(
                encoded, loc, url, middle, lastmod, (<tuple>entry)[3], (<tuple>entry)[4], label
            ):
                pass
            else:
                # records.record's dict for an entry without extensions, key for key.
                rec = {
                    "loc": loc,
                    "url": url,
                    "host": host,
                    "sitemap": sitemap,
                    "lastmod": iso(lastmod) if lastmod is not None else None,
                    "changefreq": (<tuple>entry)[3],
                    "priority": (<tuple>entry)[4],
                }
                if encoded is not None:
                    # A value only orjson can write.
                    _append_labelled(encoded, encode_record(rec), label)
                else:
                    batch.append(rec)
            _append_u64(fp_array, fp)
            if lastmod_array is not None:
                _append_i64(lastmod_array, no_epoch if lastmod is None else _epoch_s(lastmod))
            if canonical is not None:
                _append_line(canonical, url)
    finally:
        # What the batch counted reaches the distribution even if a step raised.
        if audit is not None:
            audit.close()
    if small_added:
        seen.count += small_added
    if duplicates:
        report.duplicates += duplicates
    if urls:
        report.urls += urls
    return listed, position, cap_hit, others


def label_lines(bytearray data not None, bytes label not None):
    """``data`` (JSON lines) with ``label`` inserted before the closing brace that ends
    each line, as one new bytes object.

    In: a batch of lines as the loop above writes them (each ends in ``}`` and a
    newline; JSON escapes any newline inside a string, so a newline ends a line and
    nothing else) and a label such as ``,"event":"new"``. Out: the same as
    ``bytes(data.replace(b"}\\n", label + b"}\\n"))``, which ``HostWorker._select_lines``
    does without this module. Why: that replace searches for each line's end one at a
    time and then copies the result again (0.54 µs a line, 8 % of a worker's time with
    a state file); here two ``memchr`` passes size and fill the result once.
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
