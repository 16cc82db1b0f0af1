# What harvester/reader/_cparse.pyx and harvester/reader/_cpush.pyx use of harvester/reader/_cwalk.pyx at C
# level: the walk of a <url>'s nodes and the classification of its children.
from lxml.includes cimport tree


cdef object _url_values(tree.xmlNode* c_url, bint extensions)
cdef object _short_bytes(const char* raw, size_t n)
cdef int _classify_name(
    const tree.const_xmlChar* href, const tree.const_xmlChar* name
) noexcept


# Codes of a <url> child, as entries.TagCodes gives them (CORE: a namespace that is none
# of the extensions', from _classify_name before the local name is read).
cdef enum:
    IGNORE, LOC, LASTMOD, CHANGEFREQ, PRIORITY, IMAGE, VIDEO, NEWS, XLINK, CORE
