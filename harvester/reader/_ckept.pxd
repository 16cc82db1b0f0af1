# What harvester/reader/_cpush.pyx and harvester/reader/_cfast.pyx use of
# harvester/reader/_ckept.pyx at C level: the fast <url>'s state (``KeptUrl``, the base
# of ``_cpush.UrlsetPush``), what it keeps of each element (``_Cap``, ``_Attr``), and the
# functions that close them and replay them to libxml2's tree builder.
from lxml.includes cimport tree, xmlparser


cdef enum:
    _MAX_CAPS = 64  # values (images, links) in one <url> read without nodes; then the tree
    _MAX_TEXT = 1 << 20  # bytes of their text, at most; then the tree
    _MAX_ATTRS = 32  # attributes of the links of one <url>, at most; then the tree
    _IMAGE_FIELD = 100  # the code of a child of an image (its field in _Cap.field)


ctypedef struct _Cap:
    int code  # LOC, LASTMOD, CHANGEFREQ, PRIORITY, IMAGE, XLINK or _IMAGE_FIELD
    int parent  # the index of the image it is in (-1: a child of the <url>)
    int field  # an image child's index in Image's fields
    bint closed  # its end tag seen
    const tree.const_xmlChar* localname  # the parser's (dictionary) strings
    const tree.const_xmlChar* prefix
    const tree.const_xmlChar* uri
    Py_ssize_t start  # its text in KeptUrl._text
    Py_ssize_t length  # -1: no text at all (the node would have no children)
    int attr_first  # a link's attributes: KeptUrl._attrs[attr_first:attr_first + attr_count]
    int attr_count


ctypedef struct _Attr:
    const tree.const_xmlChar* localname  # the parser's (dictionary) string
    Py_ssize_t start  # its value in KeptUrl._text, followed by one byte that is not NUL
    Py_ssize_t length


cdef class KeptUrl:
    # libxml2's tree builder's handlers (the parser's own are _cpush's callbacks).
    cdef xmlparser.endElementNsSAX2Func _end
    cdef xmlparser.startElementNsSAX2Func _build_start
    cdef xmlparser.charactersSAXFunc _build_characters
    cdef xmlparser.referenceSAXFunc _build_reference
    # The <url> whose values are read without nodes (NULL: none), its values so far,
    # whether one is open, and their text.
    cdef tree.xmlNode* _fast
    cdef bint _fast_on  # _cpush's fast_path() when this reader was made
    cdef const tree.const_xmlChar* _url_name  # the parser's string "url", once seen
    cdef const tree.const_xmlChar* _core_uri  # a namespace URI none of the extensions'
    cdef _Cap _caps[_MAX_CAPS]
    cdef int _ncaps  # caps opened (the last one may still be open)
    cdef _Attr _attrs[_MAX_ATTRS]
    cdef int _nattrs
    cdef bint _in_value  # the last cap is a value, open
    cdef bint _in_link  # the last cap is a link, open
    cdef int _image  # the cap of the image open (-1: none)
    cdef const tree.const_xmlChar* _image_uri  # the parser's string for the image namespace
    cdef char* _text
    cdef Py_ssize_t _text_len, _text_room
    cdef tree.xmlNode _shadow  # the parser's current node while a value is read
    cdef tree.xmlNode _shadow_text  # its one child once the value has text
    cdef tree.xmlNode _shadow_image  # the parser's current node inside an image
    cdef tree.xmlNode _shadow_child  # its last child once one of its values closed
    cdef object _exc  # a Python exception raised in a callback, re-raised by feed/close

    cdef void _init_shadows(self) noexcept
    cdef void _maybe_fast(
        self,
        xmlparser.xmlParserCtxt* ctxt,
        tree.xmlNode* node,
        const tree.const_xmlChar* localname,
    ) noexcept
    cdef int _keep(self, const tree.const_xmlChar* ch, int n) noexcept


cdef bint _close_fast(KeptUrl self, xmlparser.xmlParserCtxt* ctxt) noexcept
cdef void _materialize(KeptUrl self, xmlparser.xmlParserCtxt* ctxt) noexcept
# A link's attributes kept in the <url>'s text (the parser's "&#38;" decoded), and the
# first of them with a given name (_cfast's reading of links).
cdef bint _keep_attributes(
    KeptUrl self, int n, const tree.const_xmlChar** attributes
) noexcept
cdef _Attr* _find(_Cap* cap, _Attr* attrs, const char* name) noexcept
