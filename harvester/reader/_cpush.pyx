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
path: ``_cfast`` says what it keeps, ``_ckept`` how, and how it hands a ``<url>``
back to the builder when anything else is inside).

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

from libc.string cimport strcmp

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree, xmlerror, xmlparser

from harvester.reader._cfast cimport _fast_entry, _on_characters, _on_reference, _on_start
from harvester.reader._ckept cimport KeptUrl, _close_fast
from harvester.reader._clibxml cimport Functions, functions
from harvester.reader._cparse cimport Count, EntryContext, _flush_count, _url_entry

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
# The parser's handlers for an element's start, text and entity reference are
# ``_cfast``'s: inside a <url> child of the root they keep its children while the fast
# path is on (``KeptUrl._maybe_fast`` says when: not in a document with a DTD, whose
# declarations libxml2 consults to drop blanks), and hand the rest to the tree builder.
# ``_on_end`` below closes what they kept (``_ckept._close_fast``) and makes the entry
# of the <url> from it (``_cfast._fast_entry``).

cdef bint _FAST = True  # the fast path on (tests and benchmarks turn it off: fast_path)


def fast_path(on=None):
    """Whether new readers take the fast path; ``on``: set it (returns the old value)."""
    global _FAST
    old = _FAST
    if on is not None:
        _FAST = bool(on)
    return old


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


cdef class UrlsetPush(KeptUrl):
    """One urlset document's libxml2 push parser (see the module docstring); the fast
    path's state (its <url>'s caps, their text, the stand-in nodes, the tree builder's
    handlers) is its base's (``_ckept.KeptUrl``)."""

    cdef xmlparser.xmlParserCtxt* _ctxt
    cdef readonly Py_ssize_t fast_urls  # <url>s read by the fast path (the tests look)
    cdef EntryContext _ctx  # the parser's; holds nothing that holds this reader
    cdef list _out
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
        self._init_shadows()
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
