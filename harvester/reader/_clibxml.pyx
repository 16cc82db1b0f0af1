# cython: language_level=3
"""lxml's own libxml2, for harvester/reader/_cpush.pyx: its push-parser functions, looked up.

In: nothing (it runs at import). Out: ``functions()``, the pointers to the
libxml2 functions ``_cpush`` calls (``_clibxml.pxd``), or NULL with the reason
in ``MISSING``.

Why a lookup: the libxml2 that lxml runs is the one linked into its ``etree``
module (statically, in lxml's wheels), not a system library a build could
link against. So its functions are found with ``dlsym`` in that module, and
this module (and ``_cpush``) link against nothing but Python. They are used
only when lxml runs the libxml2 it was built for, and that is the libxml2 whose
headers these modules were compiled with (their structs are read directly);
``compiled.load`` also keeps ``_cpush`` to the tested releases.
"""

from lxml import etree


cdef extern from "dlfcn.h" nogil:
    void* dlopen(const char* filename, int flag)
    void* dlsym(void* handle, const char* symbol)
    int RTLD_LAZY
    int RTLD_NOLOAD


cdef extern from "libxml/xmlversion.h":
    int LIBXML_VERSION  # of the headers this module was compiled with


cdef Functions _FOUND  # filled by _resolve; read through functions() once it succeeded

# The libxml2 symbols, in the order of Functions' fields.
_NAMES = (
    b"xmlCreatePushParserCtxt", b"xmlCtxtResetPush", b"xmlParseChunk",
    b"xmlCtxtUseOptions", b"xmlFreeParserCtxt", b"xmlStopParser", b"xmlFreeDoc",
    b"xmlUnlinkNode", b"xmlFreeNode", b"xmlCtxtSetErrorHandler", b"xmlSearchNs",
)


cdef str _resolve():
    """Look up libxml2's functions in lxml's etree module; why not, or None when all found."""
    if etree.LIBXML_VERSION != etree.LIBXML_COMPILED_VERSION:
        return f"lxml runs libxml2 {etree.LIBXML_VERSION}, built for {etree.LIBXML_COMPILED_VERSION}"
    running = etree.LIBXML_VERSION
    if running[0] * 10000 + running[1] * 100 + running[2] != LIBXML_VERSION:
        return f"libxml2 {running} is not the {LIBXML_VERSION} this module was built with"
    cdef bytes path = etree.__file__.encode()
    cdef void* handle = dlopen(path, RTLD_LAZY | RTLD_NOLOAD)
    if handle is NULL:
        return f"cannot open {etree.__file__}"
    cdef list found = []
    for name in _NAMES:
        address = <size_t>dlsym(handle, <const char*>name)
        if address == 0:
            return f"{name.decode()} not found in {etree.__file__}"
        found.append(address)
    _FOUND.create_push = <create_push_f><size_t>found[0]
    _FOUND.reset_push = <reset_push_f><size_t>found[1]
    _FOUND.parse_chunk = <parse_chunk_f><size_t>found[2]
    _FOUND.use_options = <use_options_f><size_t>found[3]
    _FOUND.free_ctxt = <ctxt_f><size_t>found[4]
    _FOUND.stop = <ctxt_f><size_t>found[5]
    _FOUND.free_doc = <doc_f><size_t>found[6]
    _FOUND.unlink = <node_f><size_t>found[7]
    _FOUND.free_node = <node_f><size_t>found[8]
    _FOUND.set_handler = <set_handler_f><size_t>found[9]
    _FOUND.search_ns = <search_ns_f><size_t>found[10]
    return None


MISSING = _resolve()  # why libxml2's functions cannot be used here, or None


cdef const Functions* functions() noexcept:
    return &_FOUND if MISSING is None else NULL
