# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the host worker: a batch of URL entries into records (``HostWorker._entries``).

In: a list of reader entries and the worker's per-URL state (its canonicalizer,
seen-set, output batch and counters, see ``url_entries``). Out: for each
``UrlEntry``, what ``HostWorker._entries``' Python loop does: the canonical URL
(the compiled check, else the host's rules), its fingerprint, the per-host
dedupe, the ``max_urls_per_host`` cap, the lastmod audit's sample, and the
record appended to the batch; returned are the updated counters and the
entries that are not URLs (index children), which the Python loop then handles.

Only the usual cases are done here; every other one calls the same Python the
loop calls (``canonical`` for a URL the check says no to, ``SeenSet.add`` past
its small set, ``records.record`` for an entry with extensions, ``dist.add``).
tests/unit/test_chost.py runs both loops on the same entries and compares the
batches, fingerprints, counters, the seen-set and the audit.

Why compiled: the loop is about 3.7 µs a URL in Python, most of it calls and
attribute reads between small steps; here those are C, and the steps that were
already compiled (the canonical check, the fingerprint) need no call at all.
"""

from cpython.set cimport PySet_Add, PySet_Contains
from libc.stdint cimport uint64_t

from harvester._cdedupe cimport _fingerprint
from harvester._cnormalize cimport _already_canonical

cdef Py_ssize_t AUDIT_ALL = 500  # host.py's _AUDIT_ALL (the test checks they are equal)


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
):
    """Handle the ``UrlEntry`` items of ``entries`` as ``HostWorker._entries`` does.

    ``canon``: the host's ``Rules.canonical`` (``strip_slash`` its rule);
    ``seen``: its ``SeenSet``; ``batch``/``fps``/``lastmods``: the output batch,
    its fingerprints (``array('Q')``) and, when filtering, lastmod epochs
    (``array('q')``, ``no_lastmod`` for none; None when not filtering);
    ``dist``: the ``LastmodDistribution`` or None; ``iso`` and ``record``:
    ``records._iso`` and ``records.record``; ``report``: the ``HostReport``.

    Returns ``(listed, position, cap_hit, others)``: the counters after the batch
    and, in order, the entries that are not ``UrlEntry`` (for the Python loop).
    """
    cdef list others = []
    cdef Py_ssize_t duplicates = 0, urls = 0, small_added = 0, small_limit = 0
    cdef uint64_t fp
    cdef object small = seen._small
    cdef bint is_new
    if small is not None:
        small_limit = seen._small_limit
    for entry in entries:
        if type(entry) is not url_entry_type:
            others.append(entry)
            continue
        if cap_hit:
            continue
        loc = (<tuple>entry)[0]
        url = loc if _already_canonical(loc, strip_slash) else canon(loc)
        position += 1
        fp = _fingerprint(url)
        # The seen-set's small mode inline (a set of ints, as SeenSet.add); at its
        # limit, and in the other modes, SeenSet.add itself.
        if small is not None and len(<set>small) + 1 < small_limit:
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
        if dist is not None and (listed <= AUDIT_ALL or not fp & 7):
            dist.add(lastmod, (<tuple>entry)[2], sitemap_last_modified=modified, fetched_at=fetched_at)
        if (
            (<tuple>entry)[5] or (<tuple>entry)[6] or (<tuple>entry)[7]
            or (<tuple>entry)[8] is not None
        ):
            batch.append(record(entry, sitemap, host, url=url))
        else:
            # records.record's dict for an entry without extensions, key for key.
            batch.append({
                "loc": loc,
                "url": url,
                "host": host,
                "sitemap": sitemap,
                "lastmod": iso(lastmod) if lastmod is not None else None,
                "changefreq": (<tuple>entry)[3],
                "priority": (<tuple>entry)[4],
            })
        fps.append(fp)
        if lastmods is not None:
            lastmods.append(no_lastmod if lastmod is None else int(lastmod.timestamp()))
    if small_added:
        seen.count += small_added
    if duplicates:
        report.duplicates += duplicates
    if urls:
        report.urls += urls
    return listed, position, cap_hit, others
