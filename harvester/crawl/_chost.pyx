# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the URL batch: a list of URL entries into records (``UrlBatch.take``).

In: the host's ``UrlLoop`` (a ``cdef class``, declared in _chost.pxd, that the
``UrlBatch`` makes once and keeps: the host's ``Rules``, ``SeenSet`` and report, the
batch's records, fingerprints and lastmod epochs, where the reading stands), a list
of reader entries and the sitemap that listed them. Out: for each ``UrlEntry``,
what ``urlloop.PyUrlLoop.take`` does: the canonical URL (the compiled check, else
the host's rules), its fingerprint, the per-host dedupe, the ``max_urls_per_host``
cap, the lastmod audit's sample (appended to the loop's sample lists, which
``LastmodDistribution.add_many`` counts for both loops), and the record appended to
the batch (or, given ``encoded``, its JSON line written by ``_write_record``), and
whether its URL is on another host than the sitemap's (``home``: counted as a
foreign loc, the first few kept as examples in the report); the counters go to the
report and seen-set at the end of each call, and the entries that are not URLs
(index children) are returned.

Only the usual cases are done here; every other one calls the same Python the
loop calls (``Rules.canonical`` for a URL the check says no to, ``SeenSet.add``
past its small set, ``records.record`` for an entry whose line ``_write_record``
cannot write, or with records kept as dicts). The constants both loops use
(``AUDIT_ALL``, ``FOREIGN_EXAMPLES``) are imported from urlloop.py.
tests/unit/crawl/test_chost.py runs both loops on the same entries and compares
the batches, fingerprints, counters, the seen-set and the audit.

Why compiled: the loop in Python is mostly calls and attribute reads between
small steps; here those are C, and the steps that were already compiled (the
canonical check, the fingerprint) need no call at all.
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
from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_Append
from cpython.object cimport Py_SIZE, PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

cdef extern from "Python.h":
    ctypedef struct PyByteArrayObject:
        Py_ssize_t ob_alloc  # bytes allocated (CPython's struct; the size is separate)
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)

import orjson

from datetime import UTC

from harvester.crawl.urlloop import AUDIT_ALL as _AUDIT_ALL, FOREIGN_EXAMPLES as _FOREIGN
from harvester.crawl.urlloop import authority
from harvester.state.chunks import NO_LASTMOD
from harvester.models import UrlEntry
from harvester.urls.normalize import Rules
from harvester.dates import format_utc_seconds
from harvester.urls.records import encode_record, iso_text, lastmod_iso, record

from harvester._cdates cimport _epoch_us
from harvester.urls._cdedupe cimport FpTable, _fingerprint
from harvester.urls._cnormalize cimport _already_canonical, _canonical_query
from harvester.crawl._crobots cimport LineLabels

cdef object _CANONICAL = Rules.canonical  # the method the loop may stand in for
cdef int64_t EXACT_DOUBLE = 1LL << 53  # |µs| below this: the float timestamp is key / 1e6
cdef int64_t NO_EPOCH = NO_LASTMOD
cdef object _UTC = UTC
cdef object _URL_ENTRY = UrlEntry
cdef object _ISO = lastmod_iso
cdef object _RECORD = record
cdef object _ISO_TEXT = iso_text  # a video's dates, as records writes them
cdef object _FORMAT_UTC = format_utc_seconds  # a news item's date, likewise
cdef object _AUTHORITY = authority  # (the rare URL: not compact ASCII, not http(s))
# The Python loop's constants (urlloop.py), as C values.
cdef Py_ssize_t AUDIT_ALL = _AUDIT_ALL  # every URL sampled up to here, then 1 in 8
cdef Py_ssize_t FOREIGN_EXAMPLES = _FOREIGN  # foreign locs kept as examples

import_datetime()


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


cdef inline int _grow(bytearray buf, Py_ssize_t size) except -1:
    """Make ``buf`` ``size`` bytes long, doubling its room when it must grow.

    bytearray's own growth adds an eighth, so as a batch's lines filled it, realloc
    moved the whole batch every few records (all of it in memmove). Asking for twice the size, then for the size (a minor shrink, which
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
    object priority, bytes label, bytes tail=None,
) except -1:
    """Append the JSON line ``encode_record`` makes of the record dict built above.

    ``middle`` is ``,"host":<host>,"sitemap":<sitemap>,"source":"sitemap","lastmod":`` as
    orjson encodes them (once per batch); ``tail`` (or None) is the extension fields'
    JSON (``_extensions_json``) after ``priority``; ``label`` (or None) goes before the
    closing brace. False
    (nothing written) when a value needs what only orjson does: escapes, non-ASCII, a
    lastmod that is not a UTC ``datetime``; the caller then encodes the dict itself.
    """
    cdef Py_ssize_t n_loc = _plain(loc), n_url, size, start
    cdef Py_ssize_t n_label = PyBytes_GET_SIZE(label) if label is not None else 0
    cdef Py_ssize_t n_tail = PyBytes_GET_SIZE(tail) if tail is not None else 0
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
        + 14 + PyBytes_GET_SIZE(cf) + 12 + PyBytes_GET_SIZE(pr) + n_tail + n_label + 2
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
    if n_tail:
        p = _put(p, PyBytes_AS_STRING(tail), n_tail)
    if n_label:
        p = _put(p, PyBytes_AS_STRING(label), n_label)
    p = _put(p, b"}\n", 2)
    return True


# -- the extension fields of a record, as JSON ------------------------------------------

cdef tuple _IMAGE_KEYS = (b'"loc":', b'"caption":', b'"title":', b'"geo_location":', b'"license":')


cdef inline int _raw(bytearray out, const char* s, Py_ssize_t n) except -1:
    """Append ``n`` bytes at ``s`` to ``out``."""
    cdef Py_ssize_t start = PyByteArray_GET_SIZE(out)
    _grow(out, start + n)
    memcpy(PyByteArray_AS_STRING(out) + start, s, n)
    return 0


cdef inline int _json_value(bytearray out, object value) except -1:
    """Append orjson's encoding of ``value`` (a str in the usual case: written directly
    when ``_plain``); a TypeError (a lone surrogate) reaches the caller."""
    cdef Py_ssize_t n
    cdef char* p
    if value is None:
        return _raw(out, b"null", 4)
    if type(value) is str:
        n = _plain(<str>value)
        if n >= 0:
            _grow(out, PyByteArray_GET_SIZE(out) + n + 2)
            p = PyByteArray_AS_STRING(out) + PyByteArray_GET_SIZE(out) - n - 2
            p[0] = b'"'
            memcpy(p + 1, PyUnicode_DATA(value), n)
            p[n + 1] = b'"'
            return 0
    out += _dumps(value)
    return 0


cdef bytes _extensions_json(tuple entry):
    """The extension fields of a ``UrlEntry`` (its images, alternates, videos, news) as
    ``records.record`` puts them in the record and orjson writes them: ``,"images":[...]``
    and so on, in that order, with the leading comma; None when a value needs
    ``encode_record``'s json fallback (the caller then encodes the record dict).

    Every field is written here, from the entry's own values, in the order
    ``records.add_extensions`` puts it in the record (no dict, namedtuple or dataclass
    copy per entry); only a video's dates (``records.iso_text``) and a news item's
    (``format_utc_seconds``) go through Python.
    """
    cdef bytearray out = bytearray()
    cdef Py_ssize_t k
    cdef bint first
    images, alternates, videos, news = entry[5], entry[6], entry[7], entry[8]
    try:
        if images:
            _raw(out, b',"images":[', 11)
            for i, image in enumerate(<tuple>images):
                _raw(out, b'{' if i == 0 else b',{', 1 if i == 0 else 2)
                first = True
                for k in range(5):
                    value = (<tuple>image)[k]
                    if value is None:
                        continue
                    key = <bytes>_IMAGE_KEYS[k]
                    if not first:
                        _raw(out, b",", 1)
                    _raw(out, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
                    _json_value(out, value)
                    first = False
                _raw(out, b"}", 1)
            _raw(out, b"]", 1)
        if alternates:
            _raw(out, b',"alternates":[', 15)
            for i, pair in enumerate(<tuple>alternates):
                _raw(out, b'{"hreflang":' if i == 0 else b',{"hreflang":', 12 if i == 0 else 13)
                _json_value(out, (<tuple>pair)[0])
                _raw(out, b',"href":', 8)
                _json_value(out, (<tuple>pair)[1])
                _raw(out, b"}", 1)
            _raw(out, b"]", 1)
        if videos:
            _raw(out, b',"videos":[', 11)
            for i, video in enumerate(<tuple>videos):
                if i:
                    _raw(out, b",", 1)
                _video_json(out, video)
            _raw(out, b"]", 1)
        if news is not None:
            _raw(out, b',"news":', 8)
            _news_json(out, news)
    except TypeError:  # orjson: a lone surrogate; encode_record's json fallback decides
        return None
    return bytes(out)


# A Video's fields in its order (records._video's keys), as JSON keys; the two dates
# and the tags are told apart by index.
cdef tuple _VIDEO_FIELDS = (
    "thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration",
    "publication_date", "expiration_date", "family_friendly", "live", "tags",
)
cdef tuple _VIDEO_KEYS = tuple(f'"{name}":'.encode() for name in _VIDEO_FIELDS)


cdef int _key(bytearray out, bint first, bytes key) except -1:
    """Append ``key`` (``"name":``), after a comma unless it is the object's first."""
    if not first:
        _raw(out, b",", 1)
    _raw(out, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key))
    return 0


cdef int _json_array(bytearray out, tuple values) except -1:
    """Append a tuple of values as the JSON array orjson writes for its list."""
    cdef Py_ssize_t i
    _raw(out, b"[", 1)
    for i in range(len(values)):
        if i:
            _raw(out, b",", 1)
        _json_value(out, values[i])
    _raw(out, b"]", 1)
    return 0


cdef int _video_json(bytearray out, object video) except -1:
    """Append the JSON object ``records._video`` makes of a ``Video``: its fields that
    are not None or empty, in order; the dates as ``records.iso_text`` writes them (one
    that is not a date left out), the tags as a list."""
    cdef Py_ssize_t k
    cdef bint first = True
    _raw(out, b"{", 1)
    for k in range(11):
        value = getattr(video, <str>_VIDEO_FIELDS[k])
        if value is None or value == ():
            continue
        if k == 6 or k == 7:
            value = _ISO_TEXT(value)
            if value is None:
                continue
        _key(out, first, <bytes>_VIDEO_KEYS[k])
        first = False
        if k == 10:
            _json_array(out, tuple(value))
        else:
            _json_value(out, value)
    _raw(out, b"}", 1)
    return 0


cdef int _news_json(bytearray out, object news) except -1:
    """Append the JSON object ``records._news`` makes of a ``News``: name, language,
    publication_date (``format_utc_seconds``, or null) and title always; keywords,
    genres, stock_tickers and access when given."""
    _raw(out, b'{"name":', 8)
    _json_value(out, news.name)
    _raw(out, b',"language":', 12)
    _json_value(out, news.language)
    _raw(out, b',"publication_date":', 20)
    when = news.publication_date
    _json_value(out, _FORMAT_UTC(when) if when is not None else None)
    _raw(out, b',"title":', 9)
    _json_value(out, news.title)
    if news.keywords:
        _raw(out, b',"keywords":', 12)
        _json_array(out, tuple(news.keywords))
    if news.genres:
        _raw(out, b',"genres":', 10)
        _json_value(out, news.genres)
    if news.stock_tickers:
        _raw(out, b',"stock_tickers":', 17)
        _json_array(out, tuple(news.stock_tickers))
    if news.access:
        _raw(out, b',"access":', 10)
        _json_value(out, news.access)
    _raw(out, b"}", 1)
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


cdef bint _foreign(tuple home, str url) except -1:
    """Whether ``url``'s authority (``urlloop.authority``) is none of ``home``'s.

    For the usual URL (compact ASCII, ``http://`` or ``https://``) in C, with no scan
    of the authority: a home authority matches where it is followed by the end, ``/``,
    ``?`` or ``#`` (an authority holds none of them). Any other URL: in Python.
    """
    cdef Py_ssize_t n, start, k
    cdef const char* d
    cdef char c
    if not PyUnicode_IS_COMPACT_ASCII(url):
        return _AUTHORITY(url) not in home
    n = PyUnicode_GET_LENGTH(url)
    d = PyUnicode_DATA(url)
    if n >= 8 and memcmp(d, b"https://", 8) == 0:
        start = 8
    elif n >= 7 and memcmp(d, b"http://", 7) == 0:
        start = 7
    else:
        return _AUTHORITY(url) not in home
    for a in home:
        if not PyUnicode_IS_COMPACT_ASCII(a):
            continue  # (never equal to an ASCII authority)
        k = PyUnicode_GET_LENGTH(a)
        if start + k <= n and memcmp(d + start, PyUnicode_DATA(a), k) == 0:
            if start + k == n:
                return False
            c = d[start + k]
            if c == 47 or c == 63 or c == 35:  # "/", "?", "#"
                return False
    return True


cdef class UrlLoop:
    """The state of one host's URL loop, kept between the calls of ``url_entries``
    (fields declared in _chost.pxd; ``urlloop.PyUrlLoop`` is its Python twin).

    In: the host, its ``Rules`` and ``HostReport``, ``max_urls_per_host``, and which
    buffers to keep: lastmod epochs (``filtering``), JSON lines instead of record dicts
    (``encoded``), the canonical URLs' text for the ledger (``ledger_text``, with
    ``encoded``), the audit's sample (``audit``). Out: the buffers, read in place by
    the batch and handed over by ``hand_over``; the counters, into the report and the
    seen-set at the end of each call (``close``).
    """

    def __init__(
        self, str host not None, rules, report, Py_ssize_t cap, *, bint filtering,
        bint encoded, bint ledger_text, bint audit,
    ):
        self.host, self.rules, self.report, self.cap = host, rules, report, cap
        self.canon = rules.canonical
        self.strip_slash = rules.strip_slash
        # canon as Rules.canonical does it, its compiled step called here without a
        # Python call, for URLs not already canonical (queries in another order, say);
        # the rest still go through canon.
        self.direct = type(rules) is Rules and getattr(type(rules), "canonical") is _CANONICAL
        if self.direct:
            self.drop, self.prefixes, self.sort = rules.drop, rules.drop_prefixes, rules.sort_query
        self.records = []
        self.fps = array.array("Q")
        self.lastmods = array.array("q") if filtering else None
        self.encoded = bytearray() if encoded else None
        self.urls = bytearray() if encoded and ledger_text else None
        self.sample_lastmods = [] if audit else None
        self.sample_raws = [] if audit else None
        self.foreign_examples = report.foreign_loc_examples

    def take(self, list entries not None, str sitemap not None):
        """``url_entries(self, entries, sitemap)``."""
        return url_entries(self, entries, sitemap)

    def at_home(self, tuple authorities):
        """The authorities the current sitemap's URLs belong on (``urlloop.authority``)."""
        self.home = authorities

    def new_file(self):
        """A sitemap starts: no entry of it read yet."""
        self.position = self.replayed = 0

    def new_read(self):
        """A (re-)read of the current file starts from its first entry."""
        self.replayed = max(self.replayed, self.position)
        self.position = 0

    def hand_over(self):
        """The buffers (records, fps, lastmods, encoded, urls) as they are; each one
        kept (not None) starts again empty."""
        out = (self.records, self.fps, self.lastmods, self.encoded, self.urls)
        self.records, self.fps = [], array.array("Q")
        if self.lastmods is not None:
            self.lastmods = array.array("q")
        if self.encoded is not None:
            # A new buffer rather than a copy (bytes(encoded)): the old one is handed
            # on as it is, which saves moving every output byte once more.
            self.encoded = bytearray()
        if self.urls is not None:
            self.urls = bytearray()
        return out

    cdef int open(self, str sitemap) except -1:
        """A call starts: its counters at zero, the seen-set's small set, the sitemap's
        JSON (made again only when the sitemap changed)."""
        self.duplicates = self.added = self.foreign = self.small_added = 0
        self._small()
        self.small_limit = self.seen.small_limit
        if self.encoded is not None and (self.sitemap is None or sitemap != self.sitemap):
            self.middle = _middle(self.host, sitemap)
        self.sitemap = sitemap
        return 0

    cdef int _small(self) except -1:
        self.small = self.seen.small
        self.table = self.small if type(self.small) is FpTable else None
        return 0

    cdef str canonical_of(self, str loc):
        if _already_canonical(loc, self.strip_slash):
            return loc
        url = None
        if self.direct:
            url = _canonical_query(loc, self.strip_slash, self.drop, self.prefixes, self.sort)
        return self.canon(loc) if url is None else url

    cdef bint is_new(self, uint64_t fp) except -1:
        """``SeenSet.add(fp)``: its small mode inline (a table, or a set of ints); at its
        limit, and in the other modes, the method itself."""
        cdef int added
        if self.table is not None and self.table.count + self.table.zero + 1 < self.small_limit:
            added = self.table.add1(fp)
            self.small_added += added
            return added
        if self.table is None and self.small is not None and (
            len(<set>self.small) + 1 < self.small_limit
        ):
            key = fp
            if PySet_Contains(self.small, key):
                return False
            PySet_Add(self.small, key)
            self.small_added += 1
            return True
        if self.small_added:
            self.seen.count += self.small_added
            self.small_added = 0
        is_new = self.seen.add(fp)
        self._small()
        return is_new

    cdef int keep(self, tuple entry, str loc, str url, uint64_t fp) except -1:
        """A new URL within the cap: its audit sample, record (or line) and fingerprint."""
        lastmod = entry[1]
        if self.sample_lastmods is not None and (self.listed <= AUDIT_ALL or not fp & 7):
            PyList_Append(self.sample_lastmods, lastmod)
            PyList_Append(self.sample_raws, entry[2])
        self.write(entry, loc, url)
        _append_u64(self.fps, fp)
        if self.lastmods is not None:
            _append_i64(self.lastmods, NO_EPOCH if lastmod is None else _epoch_s(lastmod))
        if self.urls is not None:
            _append_line(self.urls, url)
        return 0

    cdef int write(self, tuple entry, str loc, str url) except -1:
        """The record of a new URL: its JSON line written here (``_write_record``), else
        ``records.record``'s dict, encoded (``encoded``) or kept as it is."""
        cdef bint lines = self.encoded is not None and self.middle is not None
        lastmod = entry[1]
        if entry[5] or entry[6] or entry[7] or entry[8] is not None:
            # An entry with extensions: its line written as one without them, with the
            # extension fields' JSON before the closing brace; the record dict only for
            # what that cannot write (and when records are kept as dicts).
            tail = _extensions_json(entry) if lines else None
            if tail is not None and _write_record(
                self.encoded, loc, url, self.middle, lastmod, entry[3], entry[4], self.label,
                tail,
            ):
                return 0
            rec = _RECORD(entry, self.sitemap, self.host, url=url)
        elif lines and _write_record(
            self.encoded, loc, url, self.middle, lastmod, entry[3], entry[4], self.label
        ):
            return 0
        else:
            # records.record's dict for an entry without extensions, key for key.
            rec = {
                "loc": loc,
                "url": url,
                "host": self.host,
                "sitemap": self.sitemap,
                "source": "sitemap",
                "lastmod": _ISO(lastmod) if lastmod is not None else None,
                "changefreq": entry[3],
                "priority": entry[4],
            }
        if self.encoded is not None:
            # A value only orjson can write.
            _append_labelled(self.encoded, encode_record(rec), self.label)
        else:
            PyList_Append(self.records, rec)
        return 0

    cdef int close(self) except -1:
        """A call ends: what it counted into the seen-set and the report."""
        if self.small_added:
            self.seen.count += self.small_added
            self.small_added = 0
        if self.duplicates:
            self.report.duplicates += self.duplicates
        if self.added:
            self.report.urls += self.added
        if self.foreign:
            self.report.foreign_locs += self.foreign
        return 0


def url_entries(UrlLoop loop not None, list entries not None, str sitemap not None):
    """Handle the ``UrlEntry`` items of ``entries`` as ``urlloop.PyUrlLoop.take`` does.

    ``loop``: the host's ``UrlLoop`` (its batch's state); with ``loop.encoded``, records
    go into it as the JSON lines that ``records.encode_records`` makes of them
    (``loop.records`` stays empty); with ``loop.urls``, each record's canonical URL is
    appended to it too, as UTF-8 and a newline (``_append_line``): the state file's
    ledger chunks are made of that text (``LedgerRows.pack_text``), and it cannot be
    read back from an escaped line; ``loop.label``: with ``encoded``, a label such as
    ``,"event":"new"`` that every line gets before its closing brace.

    Returns, in order, the entries that are not ``UrlEntry`` (for the crawl).
    """
    cdef list others = []
    cdef uint64_t fp
    loop.open(sitemap)
    try:
        for entry in entries:
            if type(entry) is not _URL_ENTRY:
                others.append(entry)
                continue
            if loop.cap_hit:
                continue
            loc = (<tuple>entry)[0]
            url = loop.canonical_of(loc)
            loop.position += 1
            fp = _fingerprint(url)
            if not loop.is_new(fp):
                # Within what a broken earlier read of this file already handled, a
                # seen URL is that read's record (or duplicate) again: not counted.
                if loop.position > loop.replayed:
                    loop.duplicates += 1
                continue
            if loop.listed >= loop.cap:
                # Added to the seen-set above but not emitted, as in the Python loop.
                loop.cap_hit = True
                loop.report.limit("max_urls_per_host")
                continue
            loop.listed += 1
            loop.added += 1
            if loop.labels is not None:
                loop.label = loop.labels.of(loc)
            loop.keep(<tuple>entry, loc, url, fp)
            if loop.home is not None and _foreign(loop.home, url):
                loop.foreign += 1  # emitted all the same
                if len(loop.foreign_examples) < FOREIGN_EXAMPLES:
                    PyList_Append(loop.foreign_examples, loc)
    finally:
        # What the call counted reaches the report and seen-set even if a step raised.
        loop.close()
    return others


def label_lines(bytearray data not None, bytes label not None):
    """``data`` (JSON lines) with ``label`` inserted before the closing brace that ends
    each line, as one new bytes object.

    In: a batch of lines as the loop above writes them (each ends in ``}`` and a
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
