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
