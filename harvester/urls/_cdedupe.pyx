# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""Compiled half of the dedupe stage: URL fingerprints, and seen-set inserts in bulk.

``fingerprint``. In: a canonical URL (``str``). Out: the same int as
``fingerprint.fingerprint_py(url)``: the first 8 bytes of BLAKE2b (unkeyed,
``digest_size=8``) of its UTF-8, read big-endian. The value is a contract (the
state file keys URLs by it, and the benchmark's ground truth uses it), so this
computes exactly that hash, written from RFC 7693; tests/unit/urls/test_cdedupe.py
compares it with ``hashlib.blake2b`` on thousands of generated strings, every length
from 0 to 300 bytes among them.

Why compiled: through hashlib each URL costs an encode, a hash object, a digest
and an ``int.from_bytes``; here the UTF-8 CPython already caches for an ASCII
string is hashed in place, a fraction of that. A URL of up to 127 bytes is a
single BLAKE2b block.

``add_many``: a batch of fingerprints into a ``SeenSet``'s sorted buckets (the
run-wide cross-host set in the writer takes every URL of the run, too slow
through Python's bisect and ``array.insert`` one by one).

``sort_unique`` and ``find_many``: a host's ledger view (``harvester/state/chunks.py``):
its chunks' fingerprints sorted once, then each batch looked up by bisection.
"""

from cpython cimport array
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport Py_SIZE
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.unicode cimport PyUnicode_AsUTF8AndSize
from libc.stdlib cimport calloc, free, qsort
from libc.string cimport memcpy, memmove, memset
from libc.errno cimport errno
from posix.types cimport off_t
from posix.unistd cimport pread, write

cdef extern from *:
    """
    #define HARVESTER_PREFETCH(p) __builtin_prefetch(p)
    """
    void _prefetch "HARVESTER_PREFETCH" (const void* p) noexcept nogil

cdef extern from *:
    """
    #define HARVESTER_ARRAY_ROOM(a) (((arrayobject *)(a))->allocated)
    #define HARVESTER_SET_SIZE(a, n) Py_SET_SIZE((PyVarObject *)(a), (n))
    """
    Py_ssize_t _room "HARVESTER_ARRAY_ROOM" (array.array a) noexcept
    void _set_size "HARVESTER_SET_SIZE" (array.array a, Py_ssize_t n) noexcept

cdef uint64_t[8] IV = [
    0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
    0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179,
]

cdef extern from *:
    """
    /* BLAKE2b's F (RFC 7693 section 3.2) with its 12 rounds written out, so that every
       message-word index is a constant and v0..v15 are plain locals the compiler keeps
       in registers: a loop over rounds that reads SIGMA at run time is markedly
       slower (benchmarks/README.md has the timing).
       m: the block's 16 words, already little-endian-decoded. */
    static inline uint64_t harvester_rotr64(uint64_t x, int n) {
        return (x >> n) | (x << (64 - n));
    }
    #define HARVESTER_G(a, b, c, d, x, y) do { \
        a = a + b + (x); d = harvester_rotr64(d ^ a, 32); \
        c = c + d;       b = harvester_rotr64(b ^ c, 24); \
        a = a + b + (y); d = harvester_rotr64(d ^ a, 16); \
        c = c + d;       b = harvester_rotr64(b ^ c, 63); \
    } while (0)
    #define HARVESTER_ROUND(s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15) do { \
        HARVESTER_G(v0, v4, v8, v12, m[s0], m[s1]);   HARVESTER_G(v1, v5, v9, v13, m[s2], m[s3]); \
        HARVESTER_G(v2, v6, v10, v14, m[s4], m[s5]);  HARVESTER_G(v3, v7, v11, v15, m[s6], m[s7]); \
        HARVESTER_G(v0, v5, v10, v15, m[s8], m[s9]);  HARVESTER_G(v1, v6, v11, v12, m[s10], m[s11]); \
        HARVESTER_G(v2, v7, v8, v13, m[s12], m[s13]); HARVESTER_G(v3, v4, v9, v14, m[s14], m[s15]); \
    } while (0)
    static void harvester_blake2b_f(uint64_t* h, const uint64_t* m, uint64_t t, int last) {
        uint64_t v0 = h[0], v1 = h[1], v2 = h[2], v3 = h[3];
        uint64_t v4 = h[4], v5 = h[5], v6 = h[6], v7 = h[7];
        uint64_t v8 = 0x6A09E667F3BCC908ULL, v9 = 0xBB67AE8584CAA73BULL;
        uint64_t v10 = 0x3C6EF372FE94F82BULL, v11 = 0xA54FF53A5F1D36F1ULL;
        /* the byte counter's low word (no input here reaches 2**64 bytes) */
        uint64_t v12 = 0x510E527FADE682D1ULL ^ t, v13 = 0x9B05688C2B3E6C1FULL;
        uint64_t v14 = 0x1F83D9ABFB41BD6BULL, v15 = 0x5BE0CD19137E2179ULL;
        if (last) v14 = ~v14;
        HARVESTER_ROUND(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        HARVESTER_ROUND(14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
        HARVESTER_ROUND(11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4);
        HARVESTER_ROUND(7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8);
        HARVESTER_ROUND(9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13);
        HARVESTER_ROUND(2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9);
        HARVESTER_ROUND(12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11);
        HARVESTER_ROUND(13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10);
        HARVESTER_ROUND(6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5);
        HARVESTER_ROUND(10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0);
        HARVESTER_ROUND(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        HARVESTER_ROUND(14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
        h[0] ^= v0 ^ v8;  h[1] ^= v1 ^ v9;  h[2] ^= v2 ^ v10; h[3] ^= v3 ^ v11;
        h[4] ^= v4 ^ v12; h[5] ^= v5 ^ v13; h[6] ^= v6 ^ v14; h[7] ^= v7 ^ v15;
    }
    """
    void _f "harvester_blake2b_f"(uint64_t* h, const uint64_t* m, uint64_t t, int last) noexcept nogil


cdef inline uint64_t _load64(const uint8_t* p) noexcept nogil:
    # Little-endian, whatever the machine's byte order.
    return (
        <uint64_t>p[0] | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16) | (<uint64_t>p[3] << 24)
        | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40) | (<uint64_t>p[6] << 48)
        | (<uint64_t>p[7] << 56)
    )


cdef void _compress(uint64_t* h, const uint8_t* block, uint64_t t, bint last) noexcept nogil:
    """RFC 7693 section 3.2, F: one 128-byte block into the state ``h``."""
    cdef uint64_t[16] m
    cdef int i
    for i in range(16):
        m[i] = _load64(block + 8 * i)
    _f(h, m, t, last)


cdef uint64_t _blake2b_64(const uint8_t* data, Py_ssize_t n) noexcept nogil:
    """The first 8 digest bytes of unkeyed BLAKE2b-64 of ``data``, as a big-endian int."""
    cdef uint64_t[8] h
    cdef uint8_t[128] block
    cdef uint64_t t = 0
    cdef int i
    cdef uint64_t out = 0
    for i in range(8):
        h[i] = IV[i]
    h[0] ^= 0x01010000 ^ 8  # parameter block: fanout 1, depth 1, no key, 8-byte digest
    # Every block but the last is compressed as not last; the last (possibly partial,
    # possibly empty) one is zero-padded and flagged.
    while n > 128:
        t += 128
        _compress(h, data, t, False)
        data += 128
        n -= 128
    memset(block, 0, 128)
    memcpy(block, data, n)
    t += <uint64_t>n
    _compress(h, block, t, True)
    # The digest is h[0]'s bytes little-endian; the fingerprint reads them big-endian.
    for i in range(8):
        out = (out << 8) | ((h[0] >> (8 * i)) & 0xFF)
    return out


def fingerprint(str url):
    """``int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "big")``."""
    return _fingerprint(url)


cdef uint64_t _fingerprint(str url) except? 0:
    cdef Py_ssize_t n
    cdef const char* data = PyUnicode_AsUTF8AndSize(url, &n)  # raises as str.encode() does
    return _blake2b_64(<const uint8_t*>data, n)


FENCE = 512  # fingerprints a fence entry stands for: one 4 KiB page of a run
cdef Py_ssize_t _FENCE = FENCE
cdef int FILTER_PROBES = 6  # bits set and tested per fingerprint (8 bits each: ~2 % false)


cdef inline bint _filter_maybe(const unsigned char* bits, uint64_t mask, uint64_t fp) noexcept:
    """Whether ``fp`` may be in the run that ``bits`` (a Bloom filter, ``mask + 1`` bits)
    was made of: False is certain. Fingerprints are hashes already, so the probes are
    ``fp`` and steps of its other half (double hashing)."""
    cdef uint64_t h = fp, step = ((fp >> 32) | (fp << 32)) | 1, pos
    cdef int i
    for i in range(FILTER_PROBES):
        pos = h & mask
        if not (bits[pos >> 3] & (1 << (pos & 7))):
            return False
        h += step
    return True


cdef inline void _filter_add(unsigned char* bits, uint64_t mask, uint64_t fp) noexcept:
    """Set ``fp``'s bits in the Bloom filter ``bits`` (``mask + 1`` bits): the probes
    ``_filter_maybe`` tests."""
    cdef uint64_t h = fp, step = ((fp >> 32) | (fp << 32)) | 1, pos
    cdef int i
    for i in range(FILTER_PROBES):
        pos = h & mask
        bits[pos >> 3] |= <unsigned char>(1 << (pos & 7))
        h += step


cdef inline uint64_t _filter_bits(Py_ssize_t n) noexcept:
    """The bits of a filter of ``n`` fingerprints: 8 each, rounded up to a power of two."""
    cdef uint64_t size = 64
    while size < <uint64_t>n * 8:
        size <<= 1
    return size


def run_filter(run):
    """A Bloom filter of a spilled run: 8 bits a fingerprint (rounded up to a power of
    two), ``FILTER_PROBES`` probes; a ``bytearray`` for ``add_many``'s ``filters``.

    ``run``: the run as one uint64 buffer, or as a list of them in order (the set's
    buckets, before they are written: the filter is then made without reading the
    spilled run back through its mapping, which would count in the process's RSS).

    Why: after a spill every later fingerprint is looked up in the run too, a bisection
    of 21 probes in a 2-million run (the writer's cross-host set spills there), and
    nearly all of them are not in it; the filter answers those in a few bit tests.
    """
    cdef list parts = run if isinstance(run, list) else [run]
    cdef const unsigned long long[::1] part
    cdef Py_ssize_t n = 0, i
    cdef uint64_t size
    for item in parts:
        part = item
        n += part.shape[0]
    size = _filter_bits(n)
    out = bytearray(size // 8)
    cdef unsigned char* bits = out
    for item in parts:
        part = item
        for i in range(part.shape[0]):
            _filter_add(bits, size - 1, part[i])
    return out


cdef Py_ssize_t _MERGE_CHUNK = 65536  # fingerprints read (from each run) or written at once


cdef int _read_all(int fd, unsigned long long* buf, Py_ssize_t count, off_t offset) except -1:
    """``count`` fingerprints from ``fd`` at byte ``offset`` into ``buf`` (all, or OSError)."""
    cdef char* at = <char*>buf
    cdef Py_ssize_t want = count * 8, got
    while want > 0:
        got = pread(fd, at, want, offset)
        if got < 0:
            raise OSError(errno, "reading a spilled run")
        if got == 0:
            raise OSError(0, "a spilled run ends early")
        at += got
        want -= got
        offset += got
    return 0


cdef int _write_all(int fd, const unsigned long long* buf, Py_ssize_t count) except -1:
    """Write ``count`` fingerprints of ``buf`` to ``fd`` at its position (all, or OSError)."""
    cdef const char* at = <const char*>buf
    cdef Py_ssize_t want = count * 8, done
    while want > 0:
        done = write(fd, at, want)
        if done < 0:
            raise OSError(errno, "writing a merged run")
        at += done
        want -= done
    return 0


cdef inline Py_ssize_t _refill(
    int fd, unsigned long long* buf, Py_ssize_t n, Py_ssize_t p, long long off
) except -1:
    """Read a run's next fingerprints (at most ``_MERGE_CHUNK``, from position ``p`` of
    its ``n``, the run at byte ``off``) into ``buf``; how many."""
    cdef Py_ssize_t count = min(_MERGE_CHUNK, n - p)
    _read_all(fd, buf, count, off + <off_t>p * 8)
    return count


# Why merge: ``SeenSet`` merges its runs as they spill, so a lookup checks a few runs, not
# one per spill (the writer's cross-host set spills every 1.5 million URLs).
def merge_runs(int fd_a, long long off_a, Py_ssize_t n_a, int fd_b, long long off_b,
               Py_ssize_t n_b, int fd_out, bint filtered=True):
    """Merge two spilled sorted runs into one, written to ``fd_out`` at its position:
    ``(count, filter, fence)``.

    In: each run as ``(fd, byte offset, fingerprints)``, read with ``pread`` in chunks
    (never through a mapping: pages read that way count in the process's RSS).
    Out: the fingerprints written (a fingerprint in both runs is written once), the
    merged run's ``run_filter`` (None unless ``filtered``) and its fence
    (``run[::FENCE]`` as ``array('Q')``), both made while merging, not read back.
    """
    cdef Py_ssize_t n = n_a + n_b, ia = 0, ib = 0, la = 0, lb = 0, pa = 0, pb = 0, filled = 0
    cdef Py_ssize_t written = 0
    cdef uint64_t size = _filter_bits(n), v
    cdef unsigned char* bits = NULL
    bloom = bytearray(size // 8) if filtered else None
    if filtered:
        bits = bloom
    cdef array.array fence = array.clone(array.array("Q"), (n + _FENCE - 1) // _FENCE, zero=True)
    cdef unsigned long long* keys = fence.data.as_ulonglongs
    cdef unsigned long long* a = <unsigned long long*>PyMem_Malloc(_MERGE_CHUNK * 8 * 3)
    if a is NULL:
        raise MemoryError()
    cdef unsigned long long* b = a + _MERGE_CHUNK
    cdef unsigned long long* out = b + _MERGE_CHUNK
    try:
        while True:
            if ia == la and pa < n_a:  # refill a: la fingerprints from run position pa
                la = _refill(fd_a, a, n_a, pa, off_a)
                pa += la
                ia = 0
            if ib == lb and pb < n_b:
                lb = _refill(fd_b, b, n_b, pb, off_b)
                pb += lb
                ib = 0
            if ia < la and (ib == lb or a[ia] <= b[ib]):
                v = a[ia]
                ia += 1
                if ib < lb and b[ib] == v:
                    ib += 1
            elif ib < lb:
                v = b[ib]
                ib += 1
            else:
                break
            if written % _FENCE == 0:
                keys[written // _FENCE] = v
            if bits is not NULL:
                _filter_add(bits, size - 1, v)
            out[filled] = v
            filled += 1
            written += 1
            if filled == _MERGE_CHUNK:
                _write_all(fd_out, out, filled)
                filled = 0
        _write_all(fd_out, out, filled)
    finally:
        PyMem_Free(a)
    # (Shorter than made when the runs shared fingerprints: a slice of n / FENCE keys.)
    return written, bloom, fence[: (written + _FENCE - 1) // _FENCE]


cdef struct Run:
    # One spilled run, as add_many sees it for one batch.
    const unsigned long long* start  # the run through its mapping
    Py_ssize_t size
    const unsigned char* filter  # its run_filter, or NULL
    uint64_t mask  # the filter's bit count - 1
    const unsigned long long* fence  # its first fingerprint of every FENCE, or NULL
    Py_ssize_t fence_size
    int fd  # the spill file to pread the run from, or -1 (read through the mapping)
    off_t offset  # the run's byte offset in it


cdef bint _in_runs(const Run* runs, Py_ssize_t count, uint64_t fp) noexcept:
    """Whether ``fp`` is in one of the ``count`` spilled sorted runs, each bisected only
    when its filter (NULL: none) says it may be there.

    A run with a fence (NULL: none), the first fingerprint of each of its ``FENCE``-long
    pages, is bisected in the fence first, then in that one page: read with ``pread``
    from its ``fd`` when that is not -1 (so the run's mapping is never touched and never
    counts in the process's RSS), else through the mapping.
    """
    cdef Py_ssize_t r, lo, hi, mid, end, base, top
    cdef const Run* run
    cdef const unsigned long long* data
    cdef unsigned long long buf[512]  # one page: FENCE fingerprints
    for r in range(count):
        run = &runs[r]
        if run.filter is not NULL and not _filter_maybe(run.filter, run.mask, fp):
            continue
        data = run.start  # data[i - base] is the run's i-th fingerprint, for lo <= i < top
        base = 0
        lo = 0
        top = run.size
        if run.fence is not NULL:
            end = run.fence_size
            while lo < end:  # lo: how many pages start at or below fp
                mid = (lo + end) >> 1
                if run.fence[mid] <= fp:
                    lo = mid + 1
                else:
                    end = mid
            if lo == 0:
                continue  # below the run's first fingerprint
            lo = (lo - 1) * _FENCE  # fp is in this page or nowhere in the run
            if lo + _FENCE < top:
                top = lo + _FENCE
            if run.fd >= 0 and pread(
                run.fd, buf, (top - lo) * 8, run.offset + <off_t>lo * 8
            ) == (top - lo) * 8:
                data = buf
                base = lo
        hi = top
        while lo < hi:
            mid = (lo + hi) >> 1
            if data[mid - base] < fp:
                lo = mid + 1
            else:
                hi = mid
        if lo < top and data[lo - base] == fp:
            return True
    return False


cdef class _Runs:
    """The spilled runs as ``_in_runs`` reads them, described once per batch; the typed
    views it holds keep their buffers valid while it lives."""

    cdef Run* runs
    cdef Py_ssize_t count
    cdef list held

    def __cinit__(self, list runs, list filters, list fences, list reads):
        cdef Py_ssize_t r
        cdef const unsigned long long[::1] view
        cdef const unsigned char[::1] bits
        cdef const unsigned long long[::1] keys
        self.count = len(runs)
        self.held = []
        if filters is not None and len(filters) != self.count:
            raise ValueError("one filter (or None) per run")
        if fences is not None and len(fences) != self.count:
            raise ValueError("one fence (or None) per run")
        if reads is not None and len(reads) != self.count:
            raise ValueError("one (fd, offset) (or None) per run")
        if not self.count:
            return
        self.runs = <Run*>PyMem_Malloc(self.count * sizeof(Run))
        if self.runs is NULL:
            raise MemoryError()
        memset(self.runs, 0, self.count * sizeof(Run))
        for r in range(self.count):
            view = runs[r]
            self.held.append(view)
            self.runs[r].size = view.shape[0]
            self.runs[r].start = &view[0] if view.shape[0] else NULL
            self.runs[r].fd = -1
            found = filters[r] if filters is not None else None
            if found is not None:
                bits = found
                self.held.append(bits)
                if bits.shape[0] < 8 or bits.shape[0] & (bits.shape[0] - 1):
                    raise ValueError("not a run_filter: its size is a power of two")
                self.runs[r].filter = &bits[0]
                self.runs[r].mask = <uint64_t>bits.shape[0] * 8 - 1
            found = fences[r] if fences is not None else None
            if found is not None:
                keys = found
                self.held.append(keys)
                if keys.shape[0] != (view.shape[0] + _FENCE - 1) // _FENCE:
                    raise ValueError("not a fence of this run: one key a FENCE")
                if keys.shape[0]:
                    self.runs[r].fence = &keys[0]
                    self.runs[r].fence_size = keys.shape[0]
            found = reads[r] if reads is not None else None
            if found is not None:
                self.runs[r].fd, self.runs[r].offset = found

    def __dealloc__(self):
        PyMem_Free(self.runs)


def add_many(
    list buckets,
    int shift,
    const unsigned long long[::1] fps,
    list runs,
    list filters=None,
    list fences=None,
    list reads=None,
    Py_ssize_t ahead=8,
):
    """Insert ``fps`` into ``SeenSet``'s sorted buckets: ``(added, already_there)``.

    ``buckets`` are the set's ``array('Q')`` buckets (bucket ``fp >> shift``, or the
    only one when ``shift`` is 64), ``runs`` its spilled runs as uint64 memoryviews,
    ``filters`` their ``run_filter``s (None, or None for a run: none), ``fences``
    their first fingerprint of every ``FENCE`` (``run[::FENCE]`` as ``array('Q')``;
    None, or None for a run: none), so a lookup reads one page of a run; ``reads``
    their ``(fd, byte offset)`` in the spill file (None, or None for a run: through the
    mapping), so that page is read with ``pread`` and the mapping is never touched.
    Each fingerprint is looked up (bisect in its bucket, then in each run) and, when
    new, inserted in order, exactly as ``SeenSet._add_compact`` does one at a time;
    the caller then splits or spills as that would have (dedupe.SeenSet.add_many).
    ``ahead``: how many fingerprints ahead to prefetch each one's bucket line (0 or less:
    none; benchmarks/bench_writer.py compares).
    """
    # The runs' buffers, acquired once per batch (not once per fingerprint).
    cdef _Runs described = _Runs(runs, filters, fences, reads)
    return _add_sorted(buckets, shift, fps, described.runs, described.count, ahead)


cdef Py_ssize_t _TABLE_START = 1024  # FpTable's first size, in slots (8 KiB)
cdef Py_ssize_t _TABLE_JUMP = 1 << 20  # the size (8 MiB) from which it grows to its room


cdef class FpTable:
    """A set of 64-bit fingerprints in one open-addressing hash table: ``SeenSet``'s
    in-memory part for the writer's run-wide cross-host set (``SeenSet(table=True)``),
    and every host's small set (its first ``dedupe.SMALL_LIMIT`` fingerprints), which
    ``_chost``'s loop adds to with ``add1``.

    Fingerprints are hashes already, so a fingerprint's slot is its top bits, probed
    linearly (0 marks an empty slot; the fingerprint 0 is kept aside). The table
    doubles past three quarters full: 11-21 bytes a fingerprint. Why: the sorted
    buckets cost each new fingerprint a bisection and a ``memmove`` in a bucket that
    is rarely in cache; here it is one probe, most often one cache line
    (benchmarks/bench_writer.py compares them). Slots by top bits keep the table in
    nearly sorted order, so ``sort`` (for a spill) is cheap and needs no copy.
    """

    # (Its fields and C methods are declared in _cdedupe.pxd.)

    def __cinit__(self, Py_ssize_t capacity=0):
        """``capacity``: the fingerprints it is expected to hold at most. Where doubling
        would reach ``_TABLE_JUMP`` slots it grows straight to the size for them: a
        growth holds the old table and the new one at once, and a table growing to
        16 MB by doubling held 24 MB at its last step (8 + 16); this way, 20 (4 + 16),
        and a run of fewer than ~390,000 URLs keeps a table of 4 MB at most."""
        self.room = _TABLE_START
        while self.room * 3 < capacity * 4:
            self.room *= 2
        self._alloc(_TABLE_START)

    cdef int _alloc(self, Py_ssize_t size) except -1:
        # calloc: a large table is fresh zero pages from the kernel, not written here.
        cdef uint64_t* slots = <uint64_t*>calloc(size, sizeof(uint64_t))
        if slots is NULL:
            raise MemoryError()
        self.slots = slots
        self.size = size
        self.shift = 64
        while (<Py_ssize_t>1 << (64 - self.shift)) < size:
            self.shift -= 1
        return 0

    def __dealloc__(self):
        free(self.slots)

    def __len__(self):
        return self.count + self.zero

    @property
    def nbytes(self):
        """The table's bytes."""
        return self.size * sizeof(uint64_t)

    def __contains__(self, fp):
        return self._has(<uint64_t>fp)

    cdef bint _has(self, uint64_t v) noexcept:
        cdef Py_ssize_t j
        if v == 0:
            return self.zero
        j = <Py_ssize_t>(v >> self.shift)
        while self.slots[j]:
            if self.slots[j] == v:
                return True
            j = (j + 1) & (self.size - 1)
        return False

    cdef void _put(self, uint64_t v) noexcept:
        cdef Py_ssize_t j = <Py_ssize_t>(v >> self.shift)
        while self.slots[j]:
            j = (j + 1) & (self.size - 1)
        self.slots[j] = v

    cdef int add1(self, uint64_t v) except -1:
        """Insert ``v`` (no spilled runs to check): 1 if it was new, else 0."""
        cdef Py_ssize_t j
        if v == 0:
            if self.zero:
                return 0
            self.zero = True
            return 1
        j = <Py_ssize_t>(v >> self.shift)
        while self.slots[j]:
            if self.slots[j] == v:
                return 0
            j = (j + 1) & (self.size - 1)
        self.slots[j] = v
        self.count += 1
        if self.count * 4 > self.size * 3:
            self._grow()
        return 1

    def add(self, fp):
        """Insert ``fp``: True if it was new (a ``set.add`` that says whether it added)."""
        return self.add1(<uint64_t>fp) == 1

    def __iter__(self):
        """Its fingerprints (0 first, then in slot order), from a copy: adding while
        iterating may move the slots."""
        cdef Py_ssize_t i
        cdef list out = [0] if self.zero else []
        for i in range(self.size):
            if self.slots[i]:
                out.append(self.slots[i])
        return iter(out)

    cdef int _grow(self) except -1:
        cdef uint64_t* old = self.slots
        cdef Py_ssize_t size = self.size, i
        self._alloc(size * 2 if size * 2 < _TABLE_JUMP else max(size * 2, self.room))
        for i in range(size):
            if old[i]:
                self._put(old[i])
        free(old)
        return 0

    def add_many(
        self,
        const unsigned long long[::1] fps,
        list runs,
        list filters=None,
        list fences=None,
        list reads=None,
        Py_ssize_t ahead=8,
    ):
        """Insert ``fps``: ``(added, already_there)``; one already in a spilled run (the
        arguments as ``add_many``'s) counts as there. ``ahead``: how many fingerprints
        ahead to prefetch each one's slot and first run-filter bit (0 or less: none)."""
        cdef _Runs described = _Runs(runs, filters, fences, reads)
        cdef Py_ssize_t k, r, j, total = fps.shape[0], added = 0, repeated = 0
        cdef uint64_t v
        for k in range(total):
            if ahead > 0 and k + ahead < total:
                v = fps[k + ahead]
                _prefetch(self.slots + (v >> self.shift))
                for r in range(described.count):  # and each run filter's first bit
                    if described.runs[r].filter is not NULL:
                        _prefetch(described.runs[r].filter + ((v & described.runs[r].mask) >> 3))
            v = fps[k]
            if v == 0:
                if self.zero or (described.count and _in_runs(described.runs, described.count, v)):
                    repeated += 1
                else:
                    self.zero = True
                    added += 1
                continue
            # One probe sequence finds it or the empty slot where it goes.
            j = <Py_ssize_t>(v >> self.shift)
            while self.slots[j] and self.slots[j] != v:
                j = (j + 1) & (self.size - 1)
            if self.slots[j] or (
                described.count and _in_runs(described.runs, described.count, v)
            ):
                repeated += 1
                continue
            self.slots[j] = v
            added += 1
            self.count += 1
            if self.count * 4 > self.size * 3:
                self._grow()
        return added, repeated

    def sort(self):
        """Sort its fingerprints in place, into the front of its own memory, and return
        them as a uint64 ``memoryview`` of it: a run to spill, with no copy (a copy would
        add half the table to the writer's peak memory at each spill). The table holds
        nothing once sorted; ``clear`` it (which ends the view) before adding again.

        Slots are in order of home slot (the top bits), so moving the fingerprints to
        the front in slot order leaves each within its cluster of its place, and an
        insertion sort finishes. Those at the front that wrapped round from the end are
        set aside first and go last.
        """
        cdef Py_ssize_t n = 0, i, j, e = 0, wrapped = 0, size = self.size
        cdef uint64_t v
        cdef uint64_t* data = self.slots
        cdef uint64_t* tail = NULL
        while e < size and data[e]:  # the first empty slot (there is one: <= 3/4 full)
            e += 1
        for i in range(e):  # the first cluster: those whose home is after it wrapped
            if <Py_ssize_t>(data[i] >> self.shift) > e:
                wrapped += 1
        if wrapped:
            tail = <uint64_t*>PyMem_Malloc(wrapped * sizeof(uint64_t))
            if tail is NULL:
                raise MemoryError()
            j = 0
            for i in range(e):
                if <Py_ssize_t>(data[i] >> self.shift) > e:
                    tail[j] = data[i]
                    data[i] = 0
                    j += 1
        for i in range(size):
            v = data[i]
            if v:
                data[i] = 0
                data[n] = v  # (n <= i)
                n += 1
        if wrapped:
            memcpy(data + n, tail, wrapped * sizeof(uint64_t))
            n += wrapped
            PyMem_Free(tail)
        for i in range(1, n):
            v = data[i]
            j = i
            while j > 0 and data[j - 1] > v:
                data[j] = data[j - 1]
                j -= 1
            data[j] = v
        if self.zero:  # the one fingerprint no slot holds: first
            memmove(data + 1, data, n * sizeof(uint64_t))
            data[0] = 0
            n += 1
        self.count = 0
        self.zero = False
        if n == 0:
            return memoryview(b"").cast("Q")
        cdef unsigned long long[::1] run = <unsigned long long[:n]> <unsigned long long*> data
        return memoryview(run)

    def clear(self):
        """Empty it, back to its first capacity."""
        cdef uint64_t* old = self.slots
        self._alloc(_TABLE_START)
        free(old)
        self.count = 0
        self.zero = False


cdef inline Py_ssize_t _locate(
    const unsigned long long* data, Py_ssize_t n, uint64_t fp, Py_ssize_t guess
) noexcept nogil:
    """The first index of sorted ``data[:n]`` holding ``fp`` or more, searched from ``guess``.

    Fingerprints are uniform (BLAKE2b), so interpolating into the bucket (the
    caller's ``guess``) lands within a few entries: gallop from there, then bisect
    what the gallop bounded. A bucket holds ~512 entries (4 KiB): plain bisection
    was ~9 dependent loads, most of them cache misses, and the writer's
    cross-host set spent 68 % of its time on one such load (perf annotate).
    Any order of values stays correct, at worst ~2 log2(n) probes.
    """
    cdef Py_ssize_t lo, hi, mid, probe, step = 1
    if n == 0:
        return 0
    if guess >= n:
        guess = n - 1
    elif guess < 0:
        guess = 0
    if data[guess] < fp:  # the answer is after guess
        lo = guess + 1
        probe = guess + 1
        while probe < n and data[probe] < fp:
            lo = probe + 1
            step <<= 1
            probe = guess + step
        hi = probe if probe < n else n
    else:  # the answer is guess or before it
        hi = guess
        probe = guess - 1
        while probe >= 0 and data[probe] >= fp:
            hi = probe
            step <<= 1
            probe = guess - step
        lo = probe + 1 if probe >= 0 else 0
    while lo < hi:  # data[lo - 1] < fp <= data[hi] (where they exist)
        mid = (lo + hi) >> 1
        if data[mid] < fp:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef tuple _add_sorted(
    list buckets,
    int shift,
    const unsigned long long[::1] fps,
    const Run* runs,
    Py_ssize_t count,
    Py_ssize_t ahead,
):
    cdef Py_ssize_t k
    cdef double width = 18446744073709551616.0 if shift >= 64 else <double>(1ULL << shift)
    cdef Py_ssize_t added = 0, repeated = 0
    cdef Py_ssize_t total = fps.shape[0]
    cdef uint64_t later
    cdef array.array other
    for k in range(total):
        if ahead > 0 and k + ahead < total and shift < 64:
            # A big set's bucket is rarely in cache: start loading the line the guess
            # for a later fingerprint lands on now, so the misses overlap.
            later = fps[k + ahead]
            other = buckets[<Py_ssize_t>(later >> shift)]
            _prefetch(other.data.as_ulonglongs + <Py_ssize_t>(
                <double>(later - ((later >> shift) << shift)) / width * Py_SIZE(other)))
        if _insert1(buckets, shift, width, fps[k], runs, count):
            added += 1
        else:
            repeated += 1
    return added, repeated


cdef int _insert1(
    list buckets, int shift, double width, uint64_t fp, const Run* runs, Py_ssize_t count
) except -1:
    """``fp`` into its sorted bucket (``width``: a bucket's span of values): 1 if it
    was new, 0 if the bucket or a spilled run held it."""
    cdef Py_ssize_t lo, n
    cdef uint64_t base
    cdef unsigned long long* data
    cdef array.array bucket
    if shift >= 64:
        bucket = buckets[0]
        base = 0
    else:
        bucket = buckets[<Py_ssize_t>(fp >> shift)]
        base = (fp >> shift) << shift
    n = Py_SIZE(bucket)
    data = bucket.data.as_ulonglongs
    lo = _locate(data, n, fp, <Py_ssize_t>(<double>(fp - base) / width * n))
    if (lo < n and data[lo] == fp) or (count and _in_runs(runs, count, fp)):
        return 0
    _grow1(bucket, n)
    data = bucket.data.as_ulonglongs  # (the resize may have moved it)
    memmove(data + lo + 1, data + lo, (n - lo) * sizeof(unsigned long long))
    data[lo] = fp
    return 1


cdef inline int _grow1(array.array bucket, Py_ssize_t n) except -1:
    """``bucket`` (of ``n`` entries) one entry longer, with the room CPython's
    ``array.insert`` leaves (a sixteenth more), not ``resize_smart``'s half: a big
    host's buckets weigh what they did when each URL went through ``insert``."""
    if n + 1 <= _room(bucket):
        _set_size(bucket, n + 1)
        return 0
    array.resize(bucket, n + 1 + ((n + 1) >> 4) + (3 if n < 8 else 7))
    _set_size(bucket, n + 1)
    return 0


cdef class Compact:
    """One call's handle on a ``SeenSet``'s compact buckets and spilled runs
    (``SeenSet.compact``), for ``_chost``'s loop: ``add1`` is ``add_many`` of one
    fingerprint, without a Python call. The set's count, splits and spills wait for
    ``SeenSet.settle(added)`` once the handle is dropped (the handle holds the runs'
    buffers, which a spill or merge must not find exported); ``room``: the adds after
    which ``add`` would have split or spilled, when its owner settles and takes a new
    handle, so that both happen when they did one ``add`` at a time.
    """

    # (Its fields and C methods are declared in _cdedupe.pxd.)

    def __cinit__(
        self, list buckets not None, int shift, list runs not None, list filters=None,
        list fences=None, list reads=None, Py_ssize_t room=PY_SSIZE_T_MAX,
    ):
        self.buckets = buckets
        self.shift = shift
        self.room = room
        self.width = 18446744073709551616.0 if shift >= 64 else <double>(1ULL << shift)
        self.runs = _Runs(runs, filters, fences, reads)
        self.added = 0

    cdef int add1(self, uint64_t fp) except -1:
        """``fp`` into the buckets unless they or a spilled run hold it: 1 if new."""
        cdef _Runs described = <_Runs>self.runs
        cdef int new = _insert1(
            self.buckets, self.shift, self.width, fp, described.runs, described.count
        )
        self.added += new
        return new

    def add(self, fp):
        """``add1`` from Python (tests): True if ``fp`` was new."""
        return self.add1(<uint64_t>fp) == 1

    @property
    def count(self):
        """Fingerprints this handle added."""
        return self.added


# -- the ledger view (harvester/state/chunks.py) -------------------------------------------

cdef struct Entry:
    long long fp
    Py_ssize_t at  # position in the input: among equal fps, the older chunk first


cdef int _entry_order(const void* a, const void* b) noexcept nogil:
    cdef const Entry* x = <const Entry*>a
    cdef const Entry* y = <const Entry*>b
    if x.fp != y.fp:
        return -1 if x.fp < y.fp else 1
    return -1 if x.at < y.at else (1 if x.at > y.at else 0)


def sort_unique(array.array fps, array.array lastmods):
    """``(fps, lastmods)`` sorted by fp, one entry each, with the newest lastmod given.

    In: signed fps and lastmods (``array('q')``) of chunks, oldest chunk first.
    Out: two new ``array('q')``; ``chunks.NO_LASTMOD`` never overrides a lastmod.
    """
    cdef Py_ssize_t n = Py_SIZE(fps), i, k = -1
    if Py_SIZE(lastmods) != n:
        raise ValueError("fps and lastmods differ in length")
    cdef const long long* f = fps.data.as_longlongs
    cdef const long long* m = lastmods.data.as_longlongs
    cdef long long none = -0x7FFFFFFFFFFFFFFF - 1
    cdef Entry* order = <Entry*>PyMem_Malloc(max(n, 1) * sizeof(Entry))
    if order == NULL:
        raise MemoryError()
    out_fps = array.clone(fps, n, False)
    out_lms = array.clone(lastmods, n, False)
    cdef long long* of = out_fps.data.as_longlongs
    cdef long long* om = out_lms.data.as_longlongs
    try:
        for i in range(n):
            order[i].fp = f[i]
            order[i].at = i
        qsort(order, n, sizeof(Entry), _entry_order)
        for i in range(n):
            if k >= 0 and of[k] == order[i].fp:
                if m[order[i].at] != none:
                    om[k] = m[order[i].at]
                continue
            k += 1
            of[k] = order[i].fp
            om[k] = m[order[i].at]
    finally:
        PyMem_Free(order)
    array.resize(out_fps, k + 1)
    array.resize(out_lms, k + 1)
    return out_fps, out_lms


cdef inline Py_ssize_t _find(const long long* v, Py_ssize_t n, long long fp) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if v[mid] < fp:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < n and v[lo] == fp else -1


def classify_many(
    array.array listed,
    array.array listed_lastmods,
    array.array recorded,
    array.array fps,
    array.array lastmods,
    tuple labels,
):
    """``ledger.LedgerReader.events`` for a batch, in one pass (see its Python loop).

    In: the host's views (sorted fps and their lastmods; this run's recorded fps),
    the batch's signed fps and lastmods, and ``labels`` = ("new", "changed",
    "unchanged"). Out: a list of those labels, None where ``recorded`` has the fp.
    """
    cdef Py_ssize_t n = Py_SIZE(fps), i, j
    if Py_SIZE(lastmods) != n or Py_SIZE(listed_lastmods) != Py_SIZE(listed):
        raise ValueError("columns differ in length")
    cdef const long long* lv = listed.data.as_longlongs
    cdef const long long* lm = listed_lastmods.data.as_longlongs
    cdef const long long* rv = recorded.data.as_longlongs
    cdef const long long* f = fps.data.as_longlongs
    cdef const long long* m = lastmods.data.as_longlongs
    cdef Py_ssize_t nl = Py_SIZE(listed), nr = Py_SIZE(recorded)
    cdef long long none = -0x7FFFFFFFFFFFFFFF - 1, old, new
    new_label, changed, unchanged = labels
    out = [None] * n
    for i in range(n):
        if nr and _find(rv, nr, f[i]) >= 0:
            continue  # recorded by this run before it was cut short: None
        j = _find(lv, nl, f[i])
        if j < 0:
            out[i] = new_label
            continue
        old = lm[j]
        new = m[i]
        out[i] = changed if new != none and (old == none or new > old) else unchanged
    return out


def find_many(array.array view, array.array fps):
    """The position of each of ``fps`` in the sorted ``view`` (``-1``: absent), as ``array('q')``."""
    cdef Py_ssize_t n = Py_SIZE(view), count = Py_SIZE(fps), i
    cdef const long long* v = view.data.as_longlongs
    cdef const long long* f = fps.data.as_longlongs
    out = array.clone(view, count, False)
    cdef long long* o = out.data.as_longlongs
    for i in range(count):
        o[i] = _find(v, n, f[i])
    return out
