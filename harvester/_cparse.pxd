# The entry builder, shared with harvester/_cpush.pyx (which reads <url> nodes that
# libxml2 built without lxml); see _cparse.pyx.
from lxml.includes cimport tree


# Entries built in C and not yet added to the parser's stats (see _url_entry).
cdef struct Count:
    Py_ssize_t total  # stats.entries + stats.children, pending included; -1: read them again
    Py_ssize_t pending  # entries to add to stats.entries at the next flush


cdef int _flush_count(tuple ctx, Count* count) except -1
cdef object _url_entry(
    tree.xmlNode* c_url, object el, tuple ctx, object parser, list out, Count* count
)
cdef object _values_entry(
    object raw_loc, object lastmod, object changefreq, object priority,
    tuple ctx, object parser, list out, Count* count,
)
cdef object _short_bytes(const char* raw, size_t n)
cdef int _classify_name(
    const tree.const_xmlChar* href, const tree.const_xmlChar* name
) noexcept


# Codes of a <url> child, as parse._classify gives them (CORE: a namespace that is none
# of the extensions', from _classify_name before the local name is read).
cdef enum:
    IGNORE, LOC, LASTMOD, CHANGEFREQ, PRIORITY, IMAGE, VIDEO, NEWS, XLINK, CORE
