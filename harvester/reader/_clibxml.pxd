# What harvester/reader/_cpush.pyx calls of libxml2 (lxml's own copy), found by
# harvester/reader/_clibxml.pyx: the types of those functions and one struct of pointers.
from lxml.includes cimport tree, xmlerror, xmlparser


ctypedef xmlparser.xmlParserCtxt* (*create_push_f)(
    xmlparser.xmlSAXHandler*, void*, const char*, int, const char*) noexcept nogil
ctypedef int (*reset_push_f)(
    xmlparser.xmlParserCtxt*, const char*, int, const char*, const char*) noexcept nogil
ctypedef int (*parse_chunk_f)(xmlparser.xmlParserCtxt*, const char*, int, int) noexcept nogil
ctypedef int (*use_options_f)(xmlparser.xmlParserCtxt*, int) noexcept nogil
ctypedef void (*ctxt_f)(xmlparser.xmlParserCtxt*) noexcept nogil
ctypedef void (*doc_f)(tree.xmlDoc*) noexcept nogil
ctypedef void (*node_f)(tree.xmlNode*) noexcept nogil
ctypedef void (*set_handler_f)(
    xmlparser.xmlParserCtxt*, xmlerror.xmlStructuredErrorFunc, void*) noexcept nogil
ctypedef tree.xmlNs* (*search_ns_f)(
    tree.xmlDoc*, tree.xmlNode*, const tree.const_xmlChar*) noexcept nogil


# libxml2's functions of these names (xmlCreatePushParserCtxt, xmlCtxtResetPush, ...).
cdef struct Functions:
    create_push_f create_push
    reset_push_f reset_push
    parse_chunk_f parse_chunk
    use_options_f use_options
    ctxt_f free_ctxt
    ctxt_f stop
    doc_f free_doc
    node_f unlink
    node_f free_node
    set_handler_f set_handler
    search_ns_f search_ns


# The functions, all found; NULL when not (harvester.reader._clibxml.MISSING says why).
cdef const Functions* functions() noexcept
