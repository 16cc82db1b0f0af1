# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The extension fields of a record (images, alternates, videos, news) as JSON, in the
line ``_crecords._write_record`` writes.

In: a ``UrlEntry`` with extensions and the batch's bytes, the entry's line open after
its ``priority`` (``_extensions_into``). Out: ``,"images":[...]`` and so on appended,
as ``records.record`` puts them in the record and orjson writes them; False when a
value needs ``encode_record``'s json fallback.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libc.string cimport memcpy

import orjson

from harvester.dates import format_utc_seconds
from harvester.urls.records import iso_text

from harvester.crawl._crecords cimport PyUnicode_DATA, _grow, _plain

cdef object _dumps = orjson.dumps
cdef object _ISO_TEXT = iso_text  # a video's dates, as records writes them
cdef object _FORMAT_UTC = format_utc_seconds  # a news item's date, likewise

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


cdef bint _extensions_into(bytearray out, tuple entry) except -1:
    """Append the extension fields of a ``UrlEntry`` (its images, alternates, videos,
    news) to ``out`` as ``records.record`` puts them in the record and orjson writes
    them: ``,"images":[...]`` and so on, in that order, with the leading comma; False
    when a value needs ``encode_record``'s json fallback (what was appended is then
    the caller's to cut: it encodes the record dict instead).

    Every field is written here, from the entry's own values, in the order
    ``records.add_extensions`` puts it in the record (no dict, namedtuple or dataclass
    copy per entry), straight into the batch's bytes (a bytearray of its own and a
    bytes copy of it per entry cost more than the writing); only a video's dates
    (``records.iso_text``) and a news item's (``format_utc_seconds``) go through Python.
    """
    cdef Py_ssize_t k, i
    cdef bint first
    images, alternates, videos, news = entry[5], entry[6], entry[7], entry[8]
    try:
        if images:
            _raw(out, b',"images":[', 11)
            for i in range(len(<tuple>images)):  # (enumerate was a Python call an entry)
                image = (<tuple>images)[i]
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
            for i in range(len(<tuple>alternates)):
                pair = (<tuple>alternates)[i]
                _raw(out, b'{"hreflang":' if i == 0 else b',{"hreflang":', 12 if i == 0 else 13)
                _json_value(out, (<tuple>pair)[0])
                _raw(out, b',"href":', 8)
                _json_value(out, (<tuple>pair)[1])
                _raw(out, b"}", 1)
            _raw(out, b"]", 1)
        if videos:
            _raw(out, b',"videos":[', 11)
            for i in range(len(<tuple>videos)):
                video = (<tuple>videos)[i]
                if i:
                    _raw(out, b",", 1)
                _video_json(out, video)
            _raw(out, b"]", 1)
        if news is not None:
            _raw(out, b',"news":', 8)
            _news_json(out, news)
    except TypeError:  # orjson: a lone surrogate; encode_record's json fallback decides
        return False
    return True


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
