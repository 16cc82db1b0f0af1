# What harvester/reader/_cpush.pyx, _cfast.pyx and _ckept.pyx use of harvester/reader/_cparse.pyx at C level: the entry builder
# (which reads <url> nodes that libxml2 built without lxml there) and its context.
# (The walk of a <url>'s nodes and the codes of its children: harvester/reader/_cwalk.pxd.)
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.unicode cimport Py_UNICODE_ISSPACE, PyUnicode_GET_LENGTH, PyUnicode_READ_CHAR
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


# Small helpers the entry builders share (inline: each module's compiler inlines them).
cdef extern from "Python.h":
    # What a tuple subclass defined in Python allocates with (its tp_alloc).
    object PyType_GenericAlloc(PyTypeObject* cls, Py_ssize_t items)  # a new reference


cdef inline void _put(object entry, Py_ssize_t i, object value) noexcept:
    """Item ``i`` of a tuple just allocated (``PyType_GenericAlloc``) set to ``value``."""
    Py_INCREF(value)  # SET_ITEM takes over a reference
    PyTuple_SET_ITEM(entry, i, value)


cdef inline str _strip(str text):
    """``text.strip()``; the same object, without the method call, when neither end is
    whitespace (the usual value: a lookup and a call per value showed in profiles)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    if n and not Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(text, 0)) and not Py_UNICODE_ISSPACE(
        PyUnicode_READ_CHAR(text, n - 1)
    ):
        return text
    return text.strip()
