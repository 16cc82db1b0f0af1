# What harvester/reader/_cpush.pyx uses of harvester/reader/_cfast.pyx at C level: which
# element of a fast <url> is kept, and the entry made from what was kept.
from lxml.includes cimport tree, xmlparser

from harvester.reader._cparse cimport Count, EntryContext
from harvester.reader._ckept cimport KeptUrl, _Attr, _Cap


cdef bint _open_fast(
    KeptUrl self,
    xmlparser.xmlParserCtxt* ctxt,
    const tree.const_xmlChar* localname,
    const tree.const_xmlChar* prefix,
    const tree.const_xmlChar* uri,
    int nb_attributes,
    const tree.const_xmlChar** attributes,
) noexcept
cdef object _fast_entry(
    _Cap* caps, int ncaps, _Attr* attrs, const char* text, EntryContext ctx, list out,
    Count* count,
)
