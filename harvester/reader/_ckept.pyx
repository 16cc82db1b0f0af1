# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""What a fast ``<url>`` keeps instead of nodes, and its replay to libxml2's tree builder.

In: a ``<url>`` child of the root that the tree builder just made (``_maybe_fast``:
read by the fast path, unless the document has a DTD or the fast path is off), then the
parser's events inside it, as ``_cfast`` sorts them: each kept element opened
(``_cfast._open_cap``), its text kept (``KeptUrl._keep``), closed (``_close_fast``).
Out: the caps and their text, from which ``_cfast._fast_entry`` makes the entry; or,
when something inside the ``<url>`` is not for the fast path, the same events given to
the tree builder (``_materialize``), and the rest of the ``<url>`` is built and read as
before. A link's attributes are kept with the caps, their values in the same text
(``_keep_attributes``: the parser's "&#38;" for '&' decoded), and found by name
(``_find``).

Why: libxml2's tree builder makes, for every ``<loc>``, ``<lastmod>``, ``<changefreq>``
and ``<priority>``, an element node and a text node, links them, and the end of the
``<url>`` frees them: 8 of the 9 nodes of a usual ``<url>``, with a malloc and a free
each, more than the rest of its parse.

The replay gives the builder the children read so far as the parser gave them (start,
text or attributes, end; what is open left open). So what the builder builds is the
same tree, and the parser's decisions that depend on it are the same: the only one is
whether a run of blanks is dropped (``NOBLANKS``; libxml2's ``areBlanks`` reads the
current node, its children and last child). While a value is read, the parser's current
node is a stand-in (``_shadow``): an element with no children until the value has text,
then one text child, as the builder's node would be; inside an image, ``_shadow_image``,
with one child (``_shadow_child``) once one of its values closed. At the level of the
``<url>`` itself the one run it decides differently (blanks just before ``</url>``,
after children that were not built) is dropped by ``_cfast._on_characters``, as the
builder's tree makes libxml2 drop it.
"""

from libc.stdlib cimport free, realloc
from libc.string cimport memchr, memcmp, memcpy, strcmp

from lxml.includes cimport tree, xmlparser

from harvester.reader._clibxml cimport Functions, functions
from harvester.reader._cwalk cimport IMAGE

# libxml2's functions, as harvester/reader/_clibxml.pyx found them (all NULL when it could not).
cdef Functions LIB
if functions() is not NULL:
    LIB = functions()[0]


cdef class KeptUrl:
    """The fast path's state of one reader (the base of ``_cpush.UrlsetPush``)."""

    def __dealloc__(self):
        free(self._text)
        self._text = NULL

    cdef void _init_shadows(self) noexcept:
        """The stand-in nodes' types, names and links (their children change as values
        open and close)."""
        self._shadow.type = tree.XML_ELEMENT_NODE
        self._shadow.name = <const tree.const_xmlChar*>b"value"
        self._shadow_text.type = tree.XML_TEXT_NODE
        self._shadow_text.parent = &self._shadow
        self._shadow_image.type = tree.XML_ELEMENT_NODE
        self._shadow_image.name = <const tree.const_xmlChar*>b"image"
        self._shadow_child.type = tree.XML_ELEMENT_NODE
        self._shadow_child.name = <const tree.const_xmlChar*>b"value"
        self._shadow_child.parent = &self._shadow_image

    cdef void _maybe_fast(
        self,
        xmlparser.xmlParserCtxt* ctxt,
        tree.xmlNode* node,
        const tree.const_xmlChar* localname,
    ) noexcept:
        """The builder made ``node``: a <url> child of the root is read by the fast path,
        unless the document has a DTD or the fast path is off."""
        cdef tree.xmlNode* root
        cdef tree.xmlDoc* doc = ctxt.myDoc
        # Names are the parser's dictionary strings: one pointer per name, so "url" is
        # found once by strcmp and then by address.
        if localname is not self._url_name:
            if self._url_name is not NULL or strcmp(<const char*>localname, b"url"):
                return
            self._url_name = localname
        root = node.parent
        if (
            root is not NULL
            and root.type == tree.XML_ELEMENT_NODE
            and root.parent is not NULL
            and root.parent.type == tree.XML_DOCUMENT_NODE
            and doc is not NULL
            and doc.intSubset is NULL
            and doc.extSubset is NULL
            and self._exc is None
            and self._fast_on
        ):
            self._fast = node
            self._ncaps = 0
            self._nattrs = 0
            self._text_len = 0
            self._image = -1

    cdef int _keep(self, const tree.const_xmlChar* ch, int n) noexcept:
        """Append ``n`` bytes of a value's text; -1 when out of memory (``_exc`` is set:
        feed raises it)."""
        cdef Py_ssize_t need = self._text_len + n
        cdef Py_ssize_t room
        cdef char* grown
        if need > self._text_room:
            room = max(need, 2 * self._text_room, 512)
            grown = <char*>realloc(self._text, room)
            if grown is NULL:
                self._exc = MemoryError()
                return -1
            self._text = grown
            self._text_room = room
        memcpy(self._text + self._text_len, ch, n)
        self._text_len = need
        return 0


cdef bint _close_fast(KeptUrl self, xmlparser.xmlParserCtxt* ctxt) noexcept:
    """An end tag in the fast <url>: a value, link or image closes (True), or the
    <url> itself (False)."""
    cdef _Cap* cap
    if self._in_value or self._in_link:
        cap = &self._caps[self._ncaps - 1]
        cap.closed = True
        self._in_value = self._in_link = False
        if cap.parent >= 0:
            # The image has a child now, as areBlanks would find it in the tree.
            self._shadow_image.children = &self._shadow_child
            self._shadow_image.last = &self._shadow_child
            ctxt.node = &self._shadow_image
        else:
            ctxt.node = self._fast
        return True
    if self._image >= 0:
        self._caps[self._image].closed = True
        self._image = -1
        ctxt.node = self._fast
        return True
    return False


cdef void _materialize(KeptUrl self, xmlparser.xmlParserCtxt* ctxt) noexcept:
    """Give the tree builder the children of the fast <url> read so far, as the parser
    gave them (start, text or attributes, end; what is open left open), and read the
    rest of this <url> from the tree."""
    cdef tree.xmlNode* url = self._fast
    cdef int i, image = -1, n = self._ncaps
    cdef _Cap* cap
    self._fast = NULL
    self._in_value = self._in_link = False
    self._image = -1
    ctxt.node = url
    for i in range(n):
        cap = &self._caps[i]
        if image >= 0 and cap.parent != image:
            _end_image(self, ctxt, image)
            image = -1
        _replay(self, ctxt, cap)
        if cap.code == IMAGE:
            image = i
    if image >= 0 and self._caps[image].closed:
        _end_image(self, ctxt, image)


cdef void _end_image(KeptUrl self, xmlparser.xmlParserCtxt* ctxt, int image) noexcept:
    cdef _Cap* cap = &self._caps[image]
    self._end(<void*>ctxt, cap.localname, cap.prefix, cap.uri)


cdef void _replay(KeptUrl self, xmlparser.xmlParserCtxt* ctxt, _Cap* cap) noexcept:
    """One kept element to the tree builder: its start, with its attributes (a link)
    or text (a value), and its end if it was seen (not an image's: ``_materialize``)."""
    cdef tree.xmlNode* parent = ctxt.node
    cdef tree.xmlNode* node
    cdef const tree.const_xmlChar* attributes[5 * _MAX_ATTRS]
    cdef const tree.const_xmlChar* value
    cdef _Attr* attr
    cdef int i
    for i in range(cap.attr_count):
        # Unprefixed; the value followed by a byte that is not NUL, which tells the
        # builder it is the text itself, already decoded (SAX2.c, xmlSAX2AttributeNs).
        attr = &self._attrs[cap.attr_first + i]
        value = <const tree.const_xmlChar*>(self._text + attr.start)
        attributes[5 * i] = attr.localname
        attributes[5 * i + 1] = NULL
        attributes[5 * i + 2] = NULL
        attributes[5 * i + 3] = value
        attributes[5 * i + 4] = value + attr.length
    # No prefix and namespace to the builder: what it would do with them looks up the
    # parser's bindings now, and the element that made this call may have declared
    # new ones. The binding in scope at the value is its parent's, from the tree.
    self._build_start(
        <void*>ctxt, cap.localname, NULL, NULL, 0, NULL, cap.attr_count, 0, attributes
    )
    node = ctxt.node
    if node is parent:
        return  # the builder made nothing (out of memory: it stopped the parser)
    if cap.uri is not NULL and node is not NULL:
        node.ns = LIB.search_ns(ctxt.myDoc, parent, cap.prefix)
    if cap.length >= 0:
        self._build_characters(
            <void*>ctxt, <const tree.const_xmlChar*>(self._text + cap.start), <int>cap.length
        )
    if cap.closed and cap.code != IMAGE:
        self._end(<void*>ctxt, cap.localname, cap.prefix, cap.uri)


cdef bint _keep_attributes(
    KeptUrl self, int n, const tree.const_xmlChar** attributes
) noexcept:
    """Keep the ``n`` attributes of a link (SAX2's five pointers each): their values
    as the tree builder would make them, the parser's "&#38;" decoded. False (nothing
    kept) for a prefixed one, a '&' in any other form, or past the bounds."""
    cdef int i, first = self._nattrs
    cdef Py_ssize_t k, length, start
    cdef const tree.const_xmlChar* value
    cdef _Attr* attr
    if first + n > _MAX_ATTRS:
        return False
    for i in range(n):
        if attributes[5 * i + 1] is not NULL or attributes[5 * i + 2] is not NULL:
            return False
    start = self._text_len
    for i in range(n):
        value = attributes[5 * i + 3]
        length = attributes[5 * i + 4] - value
        if self._text_len + length + 1 > _MAX_TEXT or self._keep(value, <int>length) < 0:
            self._text_len = start
            return False
        attr = &self._attrs[first + i]
        attr.localname = attributes[5 * i]
        attr.start = self._text_len - length
        attr.length = _decode_amp(self._text + attr.start, length)
        if attr.length < 0:
            self._text_len = start
            return False
        self._text_len = attr.start + attr.length
        if self._keep(<const tree.const_xmlChar*>b'"', 1) < 0:  # not NUL: see _replay
            self._text_len = start
            return False
    self._nattrs = first + n
    return True


cdef Py_ssize_t _decode_amp(char* text, Py_ssize_t n) noexcept:
    """Decode, in place, the "&#38;" by which libxml2's parser passes a '&' in an attribute
    value (its tree builder decodes it so): the new length, or -1 for a '&' in any other
    form (not seen from this parser: the tree decides then)."""
    cdef const char* amp = <const char*>memchr(text, b"&", n)
    cdef Py_ssize_t i, j
    if amp is NULL:
        return n  # (most values: nothing to move, found at memchr's speed)
    i = j = amp - text
    while i < n:
        if text[i] == b"&":
            if i + 5 > n or memcmp(text + i, b"&#38;", 5) != 0:
                return -1
            text[j] = b"&"
            i += 5
        else:
            text[j] = text[i]
            i += 1
        j += 1
    return j


cdef _Attr* _find(_Cap* cap, _Attr* attrs, const char* name) noexcept:
    """A link's first attribute called ``name``, or NULL."""
    cdef int k
    cdef _Attr* attr
    for k in range(cap.attr_count):
        attr = &attrs[cap.attr_first + k]
        if strcmp(<const char*>attr.localname, name) == 0:
            return attr
    return NULL
