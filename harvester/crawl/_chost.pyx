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
the batch (or, given ``encoded``, its JSON line written by
``_crecords._write_record``, with ``_cextensions``' JSON of its extension fields), and
whether its URL is on another host than the sitemap's (``home``: counted as a
foreign loc, the first few kept as examples in the report); the counters go to the
report and seen-set at the end of each call, and the entries that are not URLs
(index children) are returned.

Only the usual cases are done here; every other one calls the same Python the
loop calls (``Rules.canonical`` for a URL the check says no to, ``SeenSet.add``
past its small set where there are no compact buckets to add to in C (bloom or
table mode), ``records.record`` for an entry whose line ``_write_record``
cannot write, or with records kept as dicts). The constants both loops use
(``AUDIT_ALL``, ``FOREIGN_EXAMPLES``) are imported from urlloop.py.
tests/unit/crawl/test_chost.py runs both loops on the same entries and compares
the batches, fingerprints, counters, the seen-set and the audit.

Why compiled: the loop in Python is mostly calls and attribute reads between
small steps; here those are C, and the steps that were already compiled (the
canonical check, the fingerprint) need no call at all.
"""

from cpython.datetime cimport PyDateTime_CheckExact, datetime_tzinfo, import_datetime
from cpython cimport array
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.list cimport PyList_Append
from cpython.object cimport Py_SIZE
from cpython.set cimport PySet_Add, PySet_Contains
from cpython.unicode cimport PyUnicode_GET_LENGTH
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memchr, memcmp, memcpy

cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const char* PyUnicode_DATA(object o)

from datetime import UTC

from harvester.crawl.urlloop import AUDIT_ALL as _AUDIT_ALL, FOREIGN_EXAMPLES as _FOREIGN
from harvester.crawl.urlloop import authority
from harvester.state.chunks import NO_LASTMOD
from harvester.models import UrlEntry
from harvester.urls.normalize import Rules
from harvester.urls.records import encode_record, lastmod_iso, record
from harvester.crawl._crecords import label_lines  # (selection.py finds it here)

from harvester._cdates cimport _epoch_us
from harvester.urls._cdedupe cimport Compact, FpTable, _fingerprint
from harvester.urls._cnormalize cimport _already_canonical, _canonical_query
from harvester.crawl._crobots cimport LineLabels
from harvester.crawl._cextensions cimport _extensions_into
from harvester.crawl._crecords cimport (
    _append_labelled, _close_record, _grow, _middle, _reserve, _write_record
)

cdef object _CANONICAL = Rules.canonical  # the method the loop may stand in for
cdef int64_t EXACT_DOUBLE = 1LL << 53  # |µs| below this: the float timestamp is key / 1e6
cdef int64_t NO_EPOCH = NO_LASTMOD
cdef Py_ssize_t ROOM_MAX = 4 << 20  # bytes a batch's buffer is given ahead, at most
cdef object _UTC = UTC
cdef object _URL_ENTRY = UrlEntry
cdef object _ISO = lastmod_iso
cdef object _RECORD = record
cdef object _AUTHORITY = authority  # (the rare URL: not compact ASCII, not http(s))
# The Python loop's constants (urlloop.py), as C values.
cdef Py_ssize_t AUDIT_ALL = _AUDIT_ALL  # every URL sampled up to here, then 1 in 8
cdef Py_ssize_t FOREIGN_EXAMPLES = _FOREIGN  # foreign locs kept as examples

import_datetime()


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
            # on as it is, which saves moving every output byte once more. Its room
            # is reserved at the next call (open): as large as this batch's.
            self.room_encoded = min(PyByteArray_GET_SIZE(self.encoded), ROOM_MAX)
            self.encoded = bytearray()
        if self.urls is not None:
            self.room_urls = min(PyByteArray_GET_SIZE(self.urls), ROOM_MAX)
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
        if self.room_encoded or self.room_urls:
            # The buffers start where the last batch ended: grown from empty, a batch's
            # lines were moved by realloc at each doubling (1.4 % of a run's
            # instructions); the room is taken only once the host reads on.
            if self.encoded is not None:
                _reserve(self.encoded, self.room_encoded)
            if self.urls is not None:
                _reserve(self.urls, self.room_urls)
            self.room_encoded = self.room_urls = 0
        return 0

    cdef int _small(self) except -1:
        self.small = self.seen.small
        self.table = self.small if type(self.small) is FpTable else None
        # Past the small set, the compact buckets in C (SeenSet.compact; settled in close).
        self.compact = self.seen.compact() if self.small is None else None
        return 0

    cdef int _settle(self) except -1:
        """The compact handle's adds into the seen-set (``SeenSet.settle``); no handle."""
        cdef Py_ssize_t added
        if self.compact is not None:
            # The handle goes first: it holds the spilled runs' buffers, which the
            # settle's spill or merge must not find exported.
            added = self.compact.added
            self.compact = None
            if added:
                self.seen.settle(added)
        return 0

    cdef str canonical_of(self, str loc):
        if _already_canonical(loc, self.strip_slash):
            return loc
        url = None
        if self.direct:
            url = _canonical_query(loc, self.strip_slash, self.drop, self.prefixes, self.sort)
        return self.canon(loc) if url is None else url

    cdef bint is_new(self, uint64_t fp) except -1:
        """``SeenSet.add(fp)``: past its small set, its compact buckets in C (a handle
        from ``SeenSet.compact``); its small mode inline (a table, or a set of ints); at
        its limit, and in the other modes, the method itself."""
        cdef int added
        if self.compact is not None:
            added = self.compact.add1(fp)
            if self.compact.added >= self.compact.room:
                self._settle()  # the set splits or spills here, as add would have
                self._small()
            return added
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
        """The record of a new URL: its JSON line (``_crecords._write_record``), else
        ``records.record``'s dict, encoded (``encoded``) or kept as it is."""
        cdef bint lines = self.encoded is not None and self.middle is not None
        cdef Py_ssize_t start
        lastmod = entry[1]
        if entry[5] or entry[6] or entry[7] or entry[8] is not None:
            # An entry with extensions: its line written as one without them, left open,
            # the extension fields' JSON appended, then the label and closing brace; the
            # record dict only for what that cannot write (the line cut off again), and
            # when records are kept as dicts.
            if lines:
                start = PyByteArray_GET_SIZE(self.encoded)
                if _write_record(
                    self.encoded, loc, url, self.middle, lastmod, entry[3], entry[4], None,
                    True,
                ):
                    if _extensions_into(self.encoded, entry):
                        _close_record(self.encoded, self.label)
                        return 0
                    PyByteArray_Resize(self.encoded, start)
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
        self._settle()
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

