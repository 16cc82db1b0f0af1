# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled reader of urlset documents: libxml2's push parser driven without lxml.

In: the decoded bytes of one urlset (``UrlsetPush.feed``, in any split; then
``close``), and the parser's ``_cparse.EntryContext`` (the entry builder's
named inputs: memos, counters, and the ``entries.UrlBuilder`` for what is left
to Python). Out: entries appended to the caller's list as each
``<url>`` closes; ``feed`` and ``close`` return None, or ``(message, line,
column)`` of the first libxml2 error (the caller raises it as lxml's errors
are raised), and re-raise a Python exception raised while building an entry
(``LimitExceeded``).

Why: lxml's ``XMLPullParser`` costs more per ``<url>`` than libxml2's parse
of it. It releases the GIL for each fed piece and takes it back in a SAX
callback for every end tag (``loc`` and ``lastmod`` too), makes an event
tuple and a proxy object per ``<url>``, and pruning deletes through proxies.
Here the parser context is our own: the GIL stays held, the tree builder is
libxml2's (``xmlSAX2EndElementNs``), and a callback runs when an element
closes: at a child of the root it hands a ``<url>`` node to
``_cparse._url_entry`` (pointer reads on the node) and frees it and
everything before it, so the tree never holds more than the ``<url>`` being
read. A usual ``<url>`` (loc, lastmod, changefreq, priority, image:image and
xhtml:link alternates, nothing else) is not even built: its values are kept
from the parser's events, as the builder would have received them (the fast
path, described below), and any other content hands it back to the builder.

The same parse as lxml's: the options ``XMLPullParser`` gets in parse.py
(no entity substitution, no network, no DTD loading, no huge trees, blank
text dropped, CDATA as text, comments and PIs not built), the same 16 KiB
slices, the first four bytes given at reset as lxml gives them, and its
rule for errors (after each slice, the first error of level ERROR or above).
The tests read every document both ways and compare, and with and without
the fast path (tests/unit/reader/test_cpush.py).

libxml2 is lxml's own copy, the one its ``etree`` module is linked with: its
functions are looked up in that module (``harvester/reader/_clibxml.pyx``), so this one
links against nothing but Python, and is not used (``MISSING`` says why, the
lxml path reads) when a function is missing or the libxml2 lxml runs is not
the one whose headers it was built with. Beyond its public functions it
relies on libxml2's parser context (the current node, the input cursor, the
SAX handler table) and on what its tree builder reads there: ``compiled.load``
imports this module only for the lxml and libxml2 releases it is tested with
(``compiled.LXML_TESTED``), as a layout change would crash rather than fail.
"""

from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, strcmp

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree, xmlerror, xmlparser

from harvester.reader._clibxml cimport Functions, functions
from harvester.reader._cparse cimport Count, EntryContext, _flush_count, _url_entry, _values_entry
from harvester.reader._cwalk cimport (
    CORE, IMAGE, LASTMOD, LOC, PRIORITY, XLINK, _classify_name, _short_bytes
)

from cpython.unicode cimport PyUnicode_DecodeUTF8

from harvester.models import Image

cdef object _new_tuple = tuple.__new__  # Image._make is a Python function: a frame per image
from harvester.reader import _clibxml

cetree.import_lxml__etree()


# libxml2's functions, as harvester/reader/_clibxml.pyx found them (all NULL when it could not).
cdef Functions LIB
if functions() is not NULL:
    LIB = functions()[0]

# What lxml's XMLPullParser gets from parse.py: lxml's defaults (NOENT taken off by
# resolve_entities=False) and NOBLANKS for remove_blank_text=True.
cdef int OPTIONS = (
    xmlparser.XML_PARSE_NOCDATA
    | xmlparser.XML_PARSE_NONET
    | xmlparser.XML_PARSE_COMPACT
    | xmlparser.XML_PARSE_BIG_LINES
    | xmlparser.XML_PARSE_NOBLANKS
)
cdef Py_ssize_t SLICE = 16_384  # parse._FEED_SLICE: the same pieces as the lxml path


MISSING = _clibxml.MISSING  # why this module cannot read, or None
AVAILABLE = MISSING is None


cdef void _on_error(void* data, const xmlerror.xmlError* error) noexcept:
    """libxml2's error handler: keep the first error of level ERROR or above (lxml's rule)."""
    cdef UrlsetPush self = <UrlsetPush>data
    cdef const char* text
    self._last_level = error.level  # what lxml reads as the context's lastError.level
    if self._error is not None or error.level < xmlerror.XML_ERR_ERROR:
        return
    text = error.message
    if text is NULL or text[0] == 0 or (text[0] == b"\n" and text[1] == 0):
        message = "unknown error"  # lxml's words for it
    else:
        raw = <bytes>text
        try:  # as lxml decodes it
            message = raw.decode("utf-8")
        except UnicodeDecodeError:
            message = raw.decode("ascii", "backslashreplace")
    self._error = (message, error.line, error.int2)


# -- the fast path: a <url>'s values read from SAX events, its children not built --------
#
# libxml2's tree builder makes, for every <loc>, <lastmod>, <changefreq> and <priority>,
# an element node and a text node, links them, and the end of the <url> frees them: 8
# of the 9 nodes of a usual <url>, with a malloc and a free each, more than the rest of
# its parse. In a <url> child of the root whose children
# are only those four elements, without attributes, namespace declarations or markup
# inside, their text is kept here instead (``_Cap``: which element, where its text is)
# and the entry is made from it when the <url> closes: the values are those
# ``_cwalk._url_values`` reads from the nodes (first non-empty loc; last lastmod,
# changefreq, priority), and the rest is ``_url_entry``'s own code.
#
# Anything else inside that <url> (another element, markup or an entity reference in a
# value, text beside the children) first hands the children read so far to the tree
# builder, as the parser would have (``_materialize``), and the rest of the <url> is
# built and read as before. So what the builder builds is the same tree, and the
# parser's decisions that depend on it are the same: the only one is whether a run of
# blanks is dropped (``NOBLANKS``; libxml2's ``areBlanks`` reads the current node, its
# children and last child). While a value is read, the parser's current node is a
# stand-in (``_shadow``): an element with no children until the value has text, then
# one text child, as the builder's node would be. At the level of the <url> itself the
# one run it decides differently (blanks just before ``</url>``, after children that
# were not built) is dropped here, as the builder's tree makes libxml2 drop it.
# Documents with a DTD (whose declarations libxml2 consults there) are read as before.
#
# The two extensions most sites publish are read the same way: an <image:image> whose
# children are image:loc, caption, title, geo_location or license (each a value as
# above, its stand-in inside the image's), and an <xhtml:link> with no content whose
# attributes are unprefixed (their values kept as the builder would have received them,
# the parser's "&#38;" for '&' decoded as its tree builder decodes it). Any other child,
# attribute or text inside them hands the <url> to the tree as above: the image is
# replayed with its children, the link with its attributes. Text directly inside an
# image reaches this module only where the builder would keep it (an image with no
# children yet, just before its end tag), so it too goes to the tree.

cdef enum:
    _MAX_CAPS = 64  # values (images, links) in one <url> read without nodes; then the tree
    _MAX_TEXT = 1 << 20  # bytes of their text, at most; then the tree
    _MAX_ATTRS = 32  # attributes of the links of one <url>, at most; then the tree
    _IMAGE_FIELD = 100  # the code of a child of an image (its field in _Cap.field)

cdef const char* NS_IMAGE = b"http://www.google.com/schemas/sitemap-image/1.1"

cdef bint _FAST = True  # the fast path on (tests and benchmarks turn it off: fast_path)


def fast_path(on=None):
    """Whether new readers take the fast path; ``on``: set it (returns the old value)."""
    global _FAST
    old = _FAST
    if on is not None:
        _FAST = bool(on)
    return old


ctypedef struct _Cap:
    int code  # LOC, LASTMOD, CHANGEFREQ, PRIORITY, IMAGE, XLINK or _IMAGE_FIELD
    int parent  # the index of the image it is in (-1: a child of the <url>)
    int field  # an image child's index in Image's fields
    bint closed  # its end tag seen
    const tree.const_xmlChar* localname  # the parser's (dictionary) strings
    const tree.const_xmlChar* prefix
    const tree.const_xmlChar* uri
    Py_ssize_t start  # its text in UrlsetPush._text
    Py_ssize_t length  # -1: no text at all (the node would have no children)
    int attr_first  # a link's attributes: UrlsetPush._attrs[attr_first:attr_first + attr_count]
    int attr_count


ctypedef struct _Attr:
    const tree.const_xmlChar* localname  # the parser's (dictionary) string
    Py_ssize_t start  # its value in UrlsetPush._text, followed by one byte that is not NUL
    Py_ssize_t length


cdef inline bint _blanks(const tree.const_xmlChar* ch, int n) noexcept:
    cdef int i
    for i in range(n):
        if ch[i] != 0x20 and ch[i] != 0x09 and ch[i] != 0x0A and ch[i] != 0x0D:
            return False
    return True


cdef Py_ssize_t _decode_amp(char* text, Py_ssize_t n) noexcept:
    """Decode, in place, the "&#38;" by which libxml2's parser passes a '&' in an attribute
    value (its tree builder decodes it so): the new length, or -1 for a '&' in any other
    form (not seen from this parser: the tree decides then)."""
    cdef Py_ssize_t i = 0, j = 0
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
    cdef UrlsetPush self = <UrlsetPush>ctxt._private
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
    """Text: a value's kept; beside the children of a fast <url>, see the comment above."""
    cdef xmlparser.xmlParserCtxt* ctxt = <xmlparser.xmlParserCtxt*>ctx
    cdef UrlsetPush self = <UrlsetPush>ctxt._private
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
        _materialize(self, ctxt)  # (inside an image or a link: see the comment above)
    self._build_characters(ctx, ch, n)


cdef void _on_reference(void* ctx, const tree.const_xmlChar* name) noexcept:
    """An entity reference node: the tree builds it, and the Python walker reads it."""
    cdef xmlparser.xmlParserCtxt* ctxt = <xmlparser.xmlParserCtxt*>ctx
    cdef UrlsetPush self = <UrlsetPush>ctxt._private
    if self._fast is not NULL:
        _materialize(self, ctxt)
    self._build_reference(ctx, name)


cdef void _on_end(
    void* ctx,
    const tree.const_xmlChar* localname,
    const tree.const_xmlChar* prefix,
    const tree.const_xmlChar* uri,
) noexcept:
    """An element closed: a value of a fast <url> ends here; else libxml2's tree builder
    first, then, at a child of the root, the entry (a ``<url>`` in any namespace, as
    lxml's ``{*}url``) and the freeing."""
    cdef xmlparser.xmlParserCtxt* ctxt = <xmlparser.xmlParserCtxt*>ctx
    cdef UrlsetPush self = <UrlsetPush>ctxt._private
    cdef tree.xmlNode* node
    cdef tree.xmlNode* root
    cdef tree.xmlNode* first
    cdef bint fast
    if self._fast is not NULL and _close_fast(self, ctxt):
        return
    node = ctxt.node  # the element closing (the builder pops it)
    fast = node is not NULL and node is self._fast
    self._end(ctx, localname, prefix, uri)
    if node is NULL:
        return
    root = node.parent
    if (
        root is NULL
        or root.type != tree.XML_ELEMENT_NODE
        or root.parent is NULL
        or root.parent.type != tree.XML_DOCUMENT_NODE
    ):
        return  # the root itself, or deeper: part of an entry still open
    if fast:
        self._fast = NULL
    if self._exc is None and strcmp(<const char*>localname, b"url") == 0:
        try:
            if fast:
                self.fast_urls += 1
                found = _fast_entry(
                    self._caps, self._ncaps, self._attrs, self._text, self._ctx, self._out,
                    &self._count,
                )
            else:
                found = _url_entry(node, None, self._ctx, self._out, &self._count)
            if found is not None:
                self._ctx.builder.finish(found, self._out)
        except BaseException as exc:  # raised again by feed, as lxml's drain raises it
            self._exc = exc
            LIB.stop(ctxt)
    # Done with it, and with everything before it (text, other elements): the builder
    # holds no pointer to them (its current node is the root; end tags reset its text
    # state), so the tree keeps at most the entry being read.
    while True:
        first = root.children
        LIB.unlink(first)
        LIB.free_node(first)
        if first is node:
            break


cdef class UrlsetPush:
    """One urlset document's libxml2 push parser (see the module docstring)."""

    cdef xmlparser.xmlParserCtxt* _ctxt
    cdef xmlparser.endElementNsSAX2Func _end  # libxml2's tree builder's handlers
    cdef xmlparser.startElementNsSAX2Func _build_start
    cdef xmlparser.charactersSAXFunc _build_characters
    cdef xmlparser.referenceSAXFunc _build_reference
    # The fast path (see above): the <url> whose values are read without nodes (NULL:
    # none), its values so far, whether one is open, and their text.
    cdef tree.xmlNode* _fast
    cdef bint _fast_on  # _FAST when this reader was made
    cdef const tree.const_xmlChar* _url_name  # the parser's string "url", once seen
    cdef const tree.const_xmlChar* _core_uri  # a namespace URI none of the extensions'
    cdef readonly Py_ssize_t fast_urls  # <url>s read by the fast path (the tests look)
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
    cdef EntryContext _ctx  # the parser's; holds nothing that holds this reader
    cdef list _out
    cdef object _exc  # a Python exception raised in _on_end, re-raised by feed/close
    cdef object _error  # (message, line, column): the first libxml2 error
    cdef int _last_level  # the level of the last error or warning libxml2 reported
    cdef Count _count  # entries not yet in the stats: flushed at the end of feed and close
    cdef bytes _encoding
    cdef bint _done

    def __cinit__(self, EntryContext ctx not None, encoding=None):
        """``ctx``: the parser's ``EntryContext``; ``encoding``: the one sniffed, or None
        (the document's own)."""
        if not AVAILABLE:
            raise RuntimeError(MISSING)
        self._ctx = ctx
        self._fast_on = _FAST
        self._count.total = -1
        self._count.pending = 0
        self._encoding = encoding.encode("ascii") if encoding else None

    def __dealloc__(self):
        cdef xmlparser.xmlParserCtxt* ctxt = self._ctxt
        free(self._text)
        self._text = NULL
        if ctxt is not NULL:
            self._ctxt = NULL
            if ctxt.myDoc is not NULL:
                LIB.free_doc(ctxt.myDoc)
                ctxt.myDoc = NULL
            LIB.free_ctxt(ctxt)

    cdef int _start(self, const char* head, int size) except -1:
        """Make the context: lxml's reset with the first bytes, options and SAX changes."""
        cdef xmlparser.xmlParserCtxt* ctxt = LIB.create_push(NULL, NULL, NULL, 0, NULL)
        if ctxt is NULL:
            raise MemoryError()
        self._ctxt = ctxt
        ctxt._private = <void*>self
        # Cast: libxml2's types say nogil; both callbacks run in a parse call, GIL held.
        LIB.set_handler(ctxt, <xmlerror.xmlStructuredErrorFunc>_on_error, <void*>self)
        LIB.use_options(ctxt, OPTIONS)
        if LIB.reset_push(
            ctxt, head, size, NULL,
            <const char*>self._encoding if self._encoding is not None else NULL,
        ):
            raise MemoryError()
        # What lxml's remove_comments, remove_pis and strip_cdata do to the handler.
        ctxt.sax.comment = NULL
        ctxt.sax.processingInstruction = NULL
        ctxt.sax.cdataBlock = NULL
        self._end = ctxt.sax.endElementNs
        ctxt.sax.endElementNs = <xmlparser.endElementNsSAX2Func>_on_end
        self._build_start = ctxt.sax.startElementNs
        ctxt.sax.startElementNs = <xmlparser.startElementNsSAX2Func>_on_start
        self._build_characters = ctxt.sax.characters
        ctxt.sax.characters = <xmlparser.charactersSAXFunc>_on_characters
        self._build_reference = ctxt.sax.reference
        ctxt.sax.reference = <xmlparser.referenceSAXFunc>_on_reference
        self._shadow.type = tree.XML_ELEMENT_NODE
        self._shadow.name = <const tree.const_xmlChar*>b"value"
        self._shadow_text.type = tree.XML_TEXT_NODE
        self._shadow_text.parent = &self._shadow
        self._shadow_image.type = tree.XML_ELEMENT_NODE
        self._shadow_image.name = <const tree.const_xmlChar*>b"image"
        self._shadow_child.type = tree.XML_ELEMENT_NODE
        self._shadow_child.name = <const tree.const_xmlChar*>b"value"
        self._shadow_child.parent = &self._shadow_image
        return 0

    cdef int _value_code(
        self, const tree.const_xmlChar* localname, const tree.const_xmlChar* uri
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

    cdef object _result(self, int status, bint end):
        """After a parse call: raise the Python exception raised in it, or return the
        first error (and read no more), or None.

        lxml's rule: a fed piece fails on a fatal error; the end of input on any error
        (a namespace error, say, lets the parse go on to the end) unless the last thing
        libxml2 reported was a warning: lxml's close() looks at the level of the context's
        ``lastError`` (``_last_level`` here), so a namespace URI that is not valid, then a
        relative one, is a document it accepts.
        """
        if self._exc is not None:
            exc, self._exc = self._exc, None
            self._done = True
            raise exc
        if (
            status != 0
            or not self._ctxt.wellFormed
            or (
                end
                and self._error is not None
                and self._last_level >= xmlerror.XML_ERR_ERROR
            )
        ):
            self._done = True
            if self._error is None:
                return ("Document is not well formed", 0, 0)  # lxml's default message
            return self._error
        return None

    def feed(self, const unsigned char[:] data not None, list out):
        """Parse ``data`` in 16 KiB slices; append finished entries to ``out``.

        Returns None, or ``(message, line, column)`` of the error that ended the
        document (no more input is read then).
        """
        cdef Py_ssize_t n = data.shape[0], start = 0, size
        cdef const char* p = b""
        cdef int status, first
        if self._done:
            return None
        if n:
            p = <const char*>&data[0]
        self._out = out
        try:
            while True:
                size = min(SLICE, n - start)
                first = 0
                if self._ctxt is NULL:
                    first = 4 if size > 4 else <int>size  # lxml's: enough to see the encoding
                    self._start(p + start, first)
                status = 0
                if size > first:
                    status = LIB.parse_chunk(self._ctxt, p + start + first, <int>(size - first), 0)
                error = self._result(status, False)
                start += size
                if error is not None or start >= n:
                    return error
        finally:
            self._out = None
            _flush_count(self._ctx, &self._count)

    def close(self, list out):
        """End of input: append the last entries; None, or the error as ``feed`` gives it."""
        if self._done:
            return None
        if self._ctxt is NULL:
            return ("no element found", 0, 0)  # lxml's close() before any feed()
        self._out = out
        try:
            return self._result(LIB.parse_chunk(self._ctxt, NULL, 0, 1), True)
        finally:
            self._out = None
            self._done = True
            _flush_count(self._ctx, &self._count)

    def held(self):
        """How many nodes the root element holds now: what is read is freed, so at most
        the ``<url>`` still open (the tests check it)."""
        return _held(self._ctxt)


cdef bint _open_fast(
    UrlsetPush self,
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
    code = self._value_code(localname, uri)
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
    UrlsetPush self,
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


cdef bint _close_fast(UrlsetPush self, xmlparser.xmlParserCtxt* ctxt) noexcept:
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


cdef int _image_field(
    UrlsetPush self, const tree.const_xmlChar* localname, const tree.const_xmlChar* uri
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


cdef bint _keep_attributes(
    UrlsetPush self, int n, const tree.const_xmlChar** attributes
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


cdef void _materialize(UrlsetPush self, xmlparser.xmlParserCtxt* ctxt) noexcept:
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


cdef void _end_image(UrlsetPush self, xmlparser.xmlParserCtxt* ctxt, int image) noexcept:
    cdef _Cap* cap = &self._caps[image]
    self._end(<void*>ctxt, cap.localname, cap.prefix, cap.uri)


cdef void _replay(UrlsetPush self, xmlparser.xmlParserCtxt* ctxt, _Cap* cap) noexcept:
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
    field wins; None without a loc."""
    cdef list fields = [None, None, None, None, None]
    cdef _Cap* cap
    cdef int parent = i[0] - 1
    while i[0] < ncaps and caps[i[0]].parent == parent:
        cap = &caps[i[0]]
        i[0] += 1
        if cap.length > 0 and fields[cap.field] is None:
            fields[cap.field] = (
                PyUnicode_DecodeUTF8(text + cap.start, cap.length, NULL).strip() or None
            )
    if fields[0] is None:
        return None
    return _new_tuple(Image, fields)


cdef object _alternate(_Cap* cap, _Attr* attrs, const char* text, object alternates):
    """``alternates`` with the (hreflang, href) of one link added when ``_cwalk._url_values``
    would add it (a list made for the first one)."""
    href = _attribute(cap, attrs, text, b"href")
    lang = _attribute(cap, attrs, text, b"hreflang")
    if href and lang and _attribute(cap, attrs, text, b"rel") == "alternate":
        if alternates is None:
            alternates = []
        alternates.append((lang.strip(), href.strip()))
    return alternates


cdef object _attribute(_Cap* cap, _Attr* attrs, const char* text, const char* name):
    """The value of a link's attribute ``name`` (the first of that name), or None."""
    cdef int k
    cdef _Attr* attr
    for k in range(cap.attr_count):
        attr = &attrs[cap.attr_first + k]
        if strcmp(<const char*>attr.localname, name) == 0:
            return PyUnicode_DecodeUTF8(text + attr.start, attr.length, NULL)
    return None


cdef int _held(xmlparser.xmlParserCtxt* ctxt) noexcept:
    """The nodes the root element of ``ctxt``'s document holds (0: none yet)."""
    cdef tree.xmlNode* node
    cdef int count = 0
    if ctxt is NULL or ctxt.myDoc is NULL:
        return 0
    node = ctxt.myDoc.children
    while node is not NULL and node.type != tree.XML_ELEMENT_NODE:
        node = node.next
    if node is not NULL:
        node = node.children
    while node is not NULL:
        count += 1
        node = node.next
    return count
