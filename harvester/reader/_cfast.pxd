# What harvester/reader/_cpush.pyx uses of harvester/reader/_cfast.pyx at C level: the SAX
# handlers that keep a fast <url>'s children, and the entry made from what was kept.
from lxml.includes cimport tree

from harvester.reader._cparse cimport Count, EntryContext
from harvester.reader._ckept cimport _Attr, _Cap


# libxml2's SAX handlers for an element's start, text and entity reference: the fast
# path's, which hand what is not for it to the tree builder's.
cdef void _on_start(
    void* ctx,
    const tree.const_xmlChar* localname,
    const tree.const_xmlChar* prefix,
    const tree.const_xmlChar* uri,
    int nb_namespaces,
    const tree.const_xmlChar** namespaces,
    int nb_attributes,
    int nb_defaulted,
    const tree.const_xmlChar** attributes,
) noexcept
cdef void _on_characters(void* ctx, const tree.const_xmlChar* ch, int n) noexcept
cdef void _on_reference(void* ctx, const tree.const_xmlChar* name) noexcept
cdef object _fast_entry(
    _Cap* caps, int ncaps, _Attr* attrs, const char* text, EntryContext ctx, list out,
    Count* count,
)
