# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The fast path's reading of a ``<url>``: which children are kept without nodes, and
the entry made from them.

In: libxml2's events for an element's start, text and entity reference (``_on_start``,
``_on_characters``, ``_on_reference``: the handlers ``_cpush.UrlsetPush`` gives the
parser): inside a ``<url>`` read by the fast path, an element is kept in the next
``_ckept._Cap`` (``_open_fast``) with its text, or the ``<url>`` goes to the tree; all
else goes to the tree builder. Then, when the ``<url>`` closes, what its caps hold
(``_fast_entry``). Out: the entry, made by ``_cparse._values_entry`` from the values
``_cwalk._url_values`` would have read from the nodes (None), or their tuple for the
Python path.

What is kept: in a ``<url>`` child of the root, its ``<loc>``, ``<lastmod>``,
``<changefreq>`` and ``<priority>`` without attributes, namespace declarations or
markup inside (their text, as the builder would have received it); an
``<image:image>`` whose children are image:loc, caption, title, geo_location or license
(each a value as above, its stand-in inside the image's); and an ``<xhtml:link>`` with
no content whose attributes are unprefixed (their values kept as the builder would have
received them, the parser's "&#38;" for '&' decoded as its tree builder decodes it).
Anything else inside that ``<url>`` (another element, attribute, markup or an entity
reference in a value, text beside the children) hands it to the tree
(``_ckept._materialize``): the image is replayed with its children, the link with its
attributes. Text directly inside an image reaches the fast path only where the builder
would keep it (an image with no children yet, just before its end tag), so it too goes
to the tree.
"""

from libc.string cimport memcmp, strcmp

from lxml.includes cimport tree, xmlparser

from harvester.reader._cparse cimport (
    Count, EntryContext, PyType_GenericAlloc, _put, _strip, _values_entry
)
from harvester.reader._ckept cimport (
    _IMAGE_FIELD, _MAX_CAPS, _MAX_TEXT, KeptUrl, _Attr, _Cap, _find, _keep_attributes,
    _materialize,
)
from harvester.reader._clibxml cimport Functions, functions
from harvester.reader._cwalk cimport (
    CORE, IMAGE, LASTMOD, LOC, PRIORITY, XLINK, _classify_name, _short_bytes
)

from cpython.object cimport PyObject, PyTypeObject
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_GET_LENGTH

from harvester.models import Image

cdef extern from "Python.h":
    # A tuple's item as it is (NULL while an allocated tuple's slot is not yet set).
    PyObject* _item "PyTuple_GET_ITEM"(object p, Py_ssize_t pos)

cdef PyTypeObject* IMAGE_TYPE = <PyTypeObject*>Image

cdef const char* NS_IMAGE = b"http://www.google.com/schemas/sitemap-image/1.1"

# libxml2's functions, as harvester/reader/_clibxml.pyx found them (all NULL when it could not).
cdef Functions LIB
if functions() is not NULL:
    LIB = functions()[0]


cdef inline bint _blanks(const tree.const_xmlChar* ch, int n) noexcept:
    cdef int i
    for i in range(n):
        if ch[i] != 0x20 and ch[i] != 0x09 and ch[i] != 0x0A and ch[i] != 0x0D:
            return False
    return True


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
) noexcept:
    """An element opens: a value of a fast <url> is read here; else the tree builder."""
    cdef xmlparser.xmlParserCtxt* ctxt = <xmlparser.xmlParserCtxt*>ctx
    cdef KeptUrl self = <KeptUrl>ctxt._private
    cdef tree.xmlNode* node
    if self._fast is not NULL:
        if (
            not self._in_value
            and not self._in_link
            and nb_namespaces == 0
            and (prefix is NULL or uri is not NULL)  # (else the builder names it "p:name")
            and self._ncaps < _MAX_CAPS
            and _open_fast(self, ctxt, localname, prefix, uri, nb_attributes, attributes)
        ):
            return
        _materialize(self, ctxt)
    self._build_start(ctx, localname, prefix, uri, nb_namespaces, namespaces, nb_attributes,
                nb_defaulted, attributes)
    node = ctxt.node
    if node is not NULL and node.type == tree.XML_ELEMENT_NODE:
        self._maybe_fast(ctxt, node, localname)


cdef void _on_characters(void* ctx, const tree.const_xmlChar* ch, int n) noexcept:
    """Text: a value's kept; beside the children of a fast <url>, the tree's (``_ckept``),
    but for the blanks before its end tag."""
    cdef xmlparser.xmlParserCtxt* ctxt = <xmlparser.xmlParserCtxt*>ctx
    cdef KeptUrl self = <KeptUrl>ctxt._private
    cdef const tree.const_xmlChar* cur
    cdef _Cap* cap
    if self._in_value and self._text_len + n > _MAX_TEXT:
        # A huge value: the builder's, whose limit on a text node (10 MB, "huge text
        # node") ends the document where it would have.
        _materialize(self, ctxt)
    elif self._in_value:
        if self._keep(ch, n) < 0:
            LIB.stop(ctxt)
            return
        cap = &self._caps[self._ncaps - 1]
        if cap.length < 0:
            cap.length = 0
        cap.length += n
        self._shadow.children = &self._shadow_text
        self._shadow.last = &self._shadow_text
        return
    if self._fast is not NULL:
        cur = ctxt.input.cur
        if (
            ctxt.node is self._fast
            and self._ncaps > 0
            and _blanks(ch, n)
            and cur[0] == b"<"
            and cur[1] == b"/"
        ):
            # Blanks before </url>: with the children built, areBlanks drops them.
            return
        _materialize(self, ctxt)  # (inside an image or a link: see the module docstring)
    self._build_characters(ctx, ch, n)


cdef void _on_reference(void* ctx, const tree.const_xmlChar* name) noexcept:
    """An entity reference node: the tree builds it, and the Python walker reads it."""
    cdef xmlparser.xmlParserCtxt* ctxt = <xmlparser.xmlParserCtxt*>ctx
    cdef KeptUrl self = <KeptUrl>ctxt._private
    if self._fast is not NULL:
        _materialize(self, ctxt)
    self._build_reference(ctx, name)


cdef bint _open_fast(
    KeptUrl self,
    xmlparser.xmlParserCtxt* ctxt,
    const tree.const_xmlChar* localname,
    const tree.const_xmlChar* prefix,
    const tree.const_xmlChar* uri,
    int nb_attributes,
    const tree.const_xmlChar** attributes,
) noexcept:
    """An element opens in the fast <url>, no value or link open: kept in the next
    ``_Cap`` (True), or False when it is none the fast path reads there."""
    cdef int code, field
    cdef _Cap* cap
    if self._image >= 0:  # a child of the image open
        if ctxt.node is not &self._shadow_image or nb_attributes:
            return False
        field = _image_field(self, localname, uri)
        if field < 0:
            return False
        _open_cap(self, ctxt, _IMAGE_FIELD, localname, prefix, uri).field = field
        self._in_value = True
        return True
    if ctxt.node is not self._fast:
        return False
    code = _value_code(self, localname, uri)
    if LOC <= code <= PRIORITY or code == IMAGE:
        if nb_attributes:
            return False
        _open_cap(self, ctxt, code, localname, prefix, uri)
        if code == IMAGE:
            self._image = self._ncaps - 1
            self._shadow_image.children = NULL
            self._shadow_image.last = NULL
            ctxt.node = &self._shadow_image
        else:
            self._in_value = True
        return True
    if code == XLINK and _keep_attributes(self, nb_attributes, attributes):
        cap = _open_cap(self, ctxt, code, localname, prefix, uri)
        cap.attr_first = self._nattrs - nb_attributes
        cap.attr_count = nb_attributes
        self._in_link = True
        return True
    return False


cdef _Cap* _open_cap(
    KeptUrl self,
    xmlparser.xmlParserCtxt* ctxt,
    int code,
    const tree.const_xmlChar* localname,
    const tree.const_xmlChar* prefix,
    const tree.const_xmlChar* uri,
) noexcept:
    """The next ``_Cap`` for an element of the fast <url>, not built; the parser's
    current node is a stand-in (``_shadow``, with no children) until it closes."""
    cdef _Cap* cap = &self._caps[self._ncaps]
    self._ncaps += 1
    cap.code = code
    cap.parent = self._image
    cap.field = -1
    cap.closed = False
    cap.localname = localname
    cap.prefix = prefix
    cap.uri = uri
    cap.start = self._text_len
    cap.length = -1
    cap.attr_first = 0
    cap.attr_count = 0
    self._shadow.children = NULL
    self._shadow.last = NULL
    ctxt.node = &self._shadow
    return cap


cdef int _value_code(
    KeptUrl self, const tree.const_xmlChar* localname, const tree.const_xmlChar* uri
) noexcept:
    """The code of a child of the fast <url> (``_cwalk._classify_name``)."""
    cdef int code
    # The sitemap namespace's URI is the parser's one string for it: found once
    # to be none of the extensions', it needs no four strcmp a value after that.
    if uri is not NULL and uri is self._core_uri:
        return _classify_name(NULL, localname)
    code = _classify_name(uri, localname)
    if code == CORE:
        self._core_uri = uri
        code = _classify_name(NULL, localname)
    return code


cdef int _image_field(
    KeptUrl self, const tree.const_xmlChar* localname, const tree.const_xmlChar* uri
) noexcept:
    """Index of an image child in ``Image``'s fields (``_cwalk._image_field``), -1
    when it is none of them (or in another namespace)."""
    if uri is NULL:
        return -1
    if uri is not self._image_uri:
        if strcmp(<const char*>uri, NS_IMAGE) != 0:
            return -1
        self._image_uri = uri
    if strcmp(<const char*>localname, b"loc") == 0:
        return 0
    if strcmp(<const char*>localname, b"caption") == 0:
        return 1
    if strcmp(<const char*>localname, b"title") == 0:
        return 2
    if strcmp(<const char*>localname, b"geo_location") == 0:
        return 3
    if strcmp(<const char*>localname, b"license") == 0:
        return 4
    return -1


cdef object _fast_entry(
    _Cap* caps, int ncaps, _Attr* attrs, const char* text, EntryContext ctx, list out,
    Count* count,
):
    """``_cparse._url_entry`` of a fast <url>, from what its ``ncaps`` caps hold in
    ``text``: its values as ``_cwalk._url_values`` reads them from the nodes (the first
    loc with text; the last lastmod, changefreq, priority; images and alternates in
    order, when ``ctx.extensions``), then the entry (None), or their tuple for the
    Python path."""
    cdef int i = 0
    cdef _Cap* cap
    loc = lastmod = changefreq = priority = None
    images = alternates = None
    while i < ncaps:
        cap = &caps[i]
        if cap.code == IMAGE:
            i += 1
            image = _image_of(caps, &i, ncaps, text)
            if image is not None and ctx.extensions:
                if images is None:
                    images = []
                images.append(image)
            continue
        i += 1
        if cap.code == XLINK:
            if ctx.extensions:
                alternates = _alternate(cap, attrs, text, alternates)
            continue
        if cap.code == LOC and loc is not None:
            continue  # the first loc with text is the one (_url_values)
        if cap.length < 0:
            value = None
        elif cap.code == LOC or cap.code == LASTMOD:
            value = PyUnicode_DecodeUTF8(text + cap.start, cap.length, NULL)
        else:
            value = _short_bytes(text + cap.start, <size_t>cap.length)
        if cap.code == LOC:
            if loc is None:
                loc = value
        elif cap.code == LASTMOD:
            lastmod = value
        elif cap.code == PRIORITY:
            priority = value
        else:
            changefreq = value
    return _values_entry(
        loc, lastmod, changefreq, priority, images, alternates, ctx, out, count
    )


cdef object _image_of(_Cap* caps, int* i, int ncaps, const char* text):
    """The ``Image`` of the image whose children are the caps from ``i[0]`` on (moved
    past them), as ``_cwalk._image`` reads it: the first non-empty trimmed text of each
    field wins; None without a loc.

    The ``Image`` is allocated first and filled in place, as ``_cparse._entry`` fills an
    entry: a list of fields and ``tuple.__new__`` (a call, an argument tuple and a copy)
    cost more per image than reading it.
    """
    cdef _Cap* cap
    cdef int parent = i[0] - 1, k
    image = PyType_GenericAlloc(IMAGE_TYPE, 5)  # its slots NULL until set
    while i[0] < ncaps and caps[i[0]].parent == parent:
        cap = &caps[i[0]]
        i[0] += 1
        if cap.length > 0 and _item(image, cap.field) is NULL:
            value = _strip(PyUnicode_DecodeUTF8(text + cap.start, cap.length, NULL))
            if PyUnicode_GET_LENGTH(value):
                _put(image, cap.field, value)
    if _item(image, 0) is NULL:
        return None  # (freed with its NULL slots, as a tuple can be)
    for k in range(1, 5):
        if _item(image, k) is NULL:
            _put(image, k, None)
    return image


cdef object _alternate(_Cap* cap, _Attr* attrs, const char* text, object alternates):
    """``alternates`` with the (hreflang, href) of one link added when ``_cwalk._url_values``
    would add it (a list made for the first one): an href and an hreflang that are not
    empty, and rel "alternate" (compared as bytes: the decoded text equals "alternate"
    exactly when its UTF-8 does)."""
    cdef _Attr* href = _find(cap, attrs, b"href")
    cdef _Attr* lang = _find(cap, attrs, b"hreflang")
    cdef _Attr* rel = _find(cap, attrs, b"rel")
    if href is NULL or lang is NULL or href.length <= 0 or lang.length <= 0:
        return alternates
    if rel is NULL or rel.length != 9 or memcmp(text + rel.start, b"alternate", 9) != 0:
        return alternates
    if alternates is None:
        alternates = []
    alternates.append((
        _strip(PyUnicode_DecodeUTF8(text + lang.start, lang.length, NULL)),
        _strip(PyUnicode_DecodeUTF8(text + href.start, href.length, NULL)),
    ))
    return alternates
