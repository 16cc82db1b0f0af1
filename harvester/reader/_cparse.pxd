# What harvester/reader/_cpush.pyx, _cfast.pyx and _ckept.pyx use of harvester/reader/_cparse.pyx at C level: the entry builder
# (which reads <url> nodes that libxml2 built without lxml there) and its context.
# (The walk of a <url>'s nodes and the codes of its children: harvester/reader/_cwalk.pxd.)
from lxml.includes cimport tree


cdef class EntryContext:
    # What the entry builder reads per <url>, by name: one per XmlSitemapParser, made in
    # parse.py from the public fields of its entries.UrlBuilder and entries.EntrySink
    # (EntryContext.__cinit__ reads them, once). Typed fields: plain struct reads in C.
    cdef readonly object builder  # the UrlBuilder: values, finish, changefreq, priority
    cdef readonly bint extensions  # UrlBuilder.extensions
    cdef readonly dict changefreqs  # UrlBuilder.changefreqs (raw text -> value or None)
    cdef readonly dict priorities  # UrlBuilder.priorities
    cdef readonly object stats  # EntrySink.stats (ReadStats): entries added at each flush
    cdef readonly set seen  # EntrySink.seen (None: no in-document dedup); added to here
    cdef readonly Py_ssize_t cap  # EntrySink.cap (reader.max_entries_per_file)
    cdef readonly object entry_type  # models.UrlEntry, the type of the entries built


# Entries built in C and not yet added to the parser's stats (see _url_entry).
cdef struct Count:
    Py_ssize_t total  # stats.entries + stats.children, pending included; -1: read them again
    Py_ssize_t pending  # entries to add to stats.entries at the next flush


cdef int _flush_count(EntryContext ctx, Count* count) except -1
cdef object _url_entry(
    tree.xmlNode* c_url, object el, EntryContext ctx, list out, Count* count
)
cdef object _values_entry(
    object raw_loc, object lastmod, object changefreq, object priority, object images,
    object alternates, EntryContext ctx, list out, Count* count,
)
