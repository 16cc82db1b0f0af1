# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the parse stage: one ``<url>``, read from libxml2's tree.

``url_entry`` (what the parser calls) builds the ``UrlEntry`` itself in the usual
case, with ``_url``'s checks: an absolute http(s) loc within the protocol's
length, a lastmod in a common W3C shape (``_cdates.w3c``), the file's counts
below their limits. Anything else it hands back with the values read, for the
Python path to finish, before changing anything; so the entries, counters and
flags are the Python path's by construction. ``_url_values`` is the walk:

In: an lxml element (a ``<url>`` that has just closed, still whole) and whether
extension children (image, xhtml:link) are read. Out: the raw values that
``entries.UrlBuilder.values`` reads from the same element, as the tuple
``(loc, lastmod, changefreq, priority, images, alternates, None, None)`` (``images``
a list of ``Image`` or None, ``alternates`` a list of ``(hreflang, href)`` or None;
the last two, videos and news, are always None here), or
``None`` when the element holds something this walker leaves to Python: a video or
news child, markup nested inside a value, an attribute made of several nodes. The
caller then runs the Python path on that element, so the two agree by construction
and the tests check they agree everywhere else (tests/unit/test_cparse.py).

Why compiled: through lxml's Python API every child, sub-child and attribute read
makes a proxy object and a string for its tag, which costs more per ``<url>`` than
libxml2's whole parse of it. Here the walk is plain pointer reads on the nodes lxml
already built; only the values become Python strings. Nothing in libxml2 is called
(only its struct layout, from the headers that lxml ships), so the module links
against nothing but Python.

What it reads of the Python side comes in one ``EntryContext`` per parser, whose
fields are declared in ``_cparse.pxd`` and filled from the public fields of
``entries.UrlBuilder`` and ``entries.EntrySink``; what it leaves to Python goes to
that ``UrlBuilder``'s public methods. Nothing here reads a private attribute.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.unicode cimport (
    Py_UNICODE_ISSPACE,
    PyUnicode_DecodeUTF8,
    PyUnicode_GET_LENGTH,
    PyUnicode_READ_CHAR,
)
from libc.string cimport memcmp, memcpy, strcmp, strlen

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree

from lxml import etree

from harvester._cdates cimport _w3c

from harvester.models import Image, UrlEntry

cetree.import_lxml__etree()

# Where the Python walker's copies of nodes from outside lxml live (see _url_entry).
cdef cetree._Document _SCRATCH = cetree.documentOrRaise(etree.Element("scratch"))

cdef const char* NS_IMAGE = b"http://www.google.com/schemas/sitemap-image/1.1"
cdef const char* NS_VIDEO = b"http://www.google.com/schemas/sitemap-video/1.1"
cdef const char* NS_NEWS = b"http://www.google.com/schemas/sitemap-news/0.9"
cdef const char* NS_XHTML = b"http://www.w3.org/1999/xhtml"

# tuple.__new__ straight: Image._make is a Python-level function, a frame per image.
cdef object _new_tuple = tuple.__new__


cdef inline bint _eq(const tree.const_xmlChar* a, const char* b) noexcept:
    return strcmp(<const char*>a, b) == 0


cdef inline str _decode(const tree.const_xmlChar* s):
    if s is NULL:
        return ""
    return PyUnicode_DecodeUTF8(<const char*>s, strlen(<const char*>s), NULL)


cdef int _classify(tree.xmlNode* c, tree.xmlNs** core) noexcept:
    """The code of a child element: extensions by namespace, core elements by local name.

    ``core``: the namespace of an earlier sibling that was none of the extensions'
    (NULL at first); a child in it skips those four comparisons. Siblings share one
    ``xmlNs`` (declared once, on the root), so with the four ``strcmp`` per child, and
    one per candidate name, most of a ``<url>``'s comparisons were spent on what the
    first child had already answered.
    """
    cdef tree.xmlNs* ns = c.ns
    cdef const tree.const_xmlChar* href = ns.href if ns is not NULL else NULL
    cdef int code
    if href is not NULL and href[0] != 0 and ns is not core[0]:
        code = _classify_name(href, c.name)
        if code != CORE:
            return code
        core[0] = ns
    return _classify_name(NULL, c.name)


cdef int _classify_name(
    const tree.const_xmlChar* href, const tree.const_xmlChar* name
) noexcept:
    """``_classify`` of an element by its namespace URI (NULL or empty: none) and local
    name; ``CORE`` for a namespace that is none of the extensions' when ``name`` is not
    looked at (``_classify`` then caches it), else the code."""
    if href is not NULL and href[0] != 0:
        if _eq(href, NS_IMAGE):
            return IMAGE if _eq(name, b"image") else IGNORE
        if _eq(href, NS_XHTML):
            return XLINK if _eq(name, b"link") else IGNORE
        if _eq(href, NS_VIDEO):
            return VIDEO if _eq(name, b"video") else IGNORE
        if _eq(href, NS_NEWS):
            return NEWS if _eq(name, b"news") else IGNORE
        return CORE
    # Core elements match on local name in any other namespace (or none): the wild
    # uses every sitemaps.org variant, Google's old ones and none at all.
    if name[0] == b"l":
        if _eq(name, b"loc"):
            return LOC
        if _eq(name, b"lastmod"):
            return LASTMOD
    elif name[0] == b"c":
        if _eq(name, b"changefreq"):
            return CHANGEFREQ
    elif name[0] == b"p":
        if _eq(name, b"priority"):
            return PRIORITY
    return IGNORE


cdef object _text(tree.xmlNode* c_node, bint* punt):
    """An element's text when all its children are text or CDATA (lxml's ``.text``).

    None when it has no children; sets ``punt`` (and returns None) when a child is
    anything else: the string value then needs lxml's itertext, left to Python.
    """
    cdef tree.xmlNode* c = c_node.children
    if c is NULL:
        return None
    if c.next is NULL:
        if c.type == tree.XML_TEXT_NODE or c.type == tree.XML_CDATA_SECTION_NODE:
            return _decode(c.content)
        punt[0] = True
        return None
    parts = []
    while c is not NULL:
        if c.type != tree.XML_TEXT_NODE and c.type != tree.XML_CDATA_SECTION_NODE:
            punt[0] = True
            return None
        parts.append(_decode(c.content))
        c = c.next
    return "".join(parts)


cdef object _attr(tree.xmlNode* c_node, const char* name, bint* punt):
    """The value of the attribute ``name`` in no namespace (lxml's ``.get``), or None."""
    cdef tree.xmlAttr* a = c_node.properties
    cdef tree.xmlNode* v
    while a is not NULL:
        if a.ns is NULL and _eq(a.name, name):
            v = a.children
            if v is NULL:
                return ""
            if v.next is NULL and v.type == tree.XML_TEXT_NODE:
                return _decode(v.content)
            punt[0] = True  # entity references in the value: lxml expands them
            return None
        a = a.next
    return None


cdef inline int _image_field(tree.xmlNode* c) noexcept:
    """Index of an image:image child in ``Image``'s fields, -1 when it is none of them."""
    if c.ns is NULL or not _eq(c.ns.href, NS_IMAGE):
        return -1
    cdef const tree.const_xmlChar* name = c.name
    if _eq(name, b"loc"):
        return 0
    if _eq(name, b"caption"):
        return 1
    if _eq(name, b"title"):
        return 2
    if _eq(name, b"geo_location"):
        return 3
    if _eq(name, b"license"):
        return 4
    return -1


cdef object _image(tree.xmlNode* c_image, bint* punt):
    """One image:image as an ``Image``, None without an image:loc; first of each field wins."""
    cdef list fields = [None, None, None, None, None]
    cdef tree.xmlNode* sub = c_image.children
    cdef int index
    while sub is not NULL:
        if sub.type == tree.XML_ELEMENT_NODE:
            index = _image_field(sub)
            if index >= 0 and fields[index] is None:
                text = _text(sub, punt)
                if punt[0]:
                    return None
                if text:
                    fields[index] = text.strip() or None
        sub = sub.next
    if fields[0] is None:
        return None
    return _new_tuple(Image, fields)


# _short_text's cache: a short text seen before, and its str. A changefreq or priority is
# one of a few values repeated in every <url>; the same str object each time spares its
# decoding, allocation and free, and the memo dict's hash of it (a str caches its hash).
cdef enum:
    _SHORT_SLOTS = 32
    _SHORT_MAX = 15  # bytes of text cached, at most
ctypedef struct _Short:
    char raw[16]  # the text, NUL-terminated ("" in an empty slot: never looked up)
    PyObject* text  # its str, referenced here (NULL: empty slot)
cdef _Short _SHORT[_SHORT_SLOTS]


cdef object _short_text(tree.xmlNode* c_node, bint* punt):
    """``_text`` of an element, its str shared with earlier calls for the same short text."""
    cdef tree.xmlNode* c = c_node.children
    cdef const char* raw
    if c is NULL or c.next is not NULL or (
        c.type != tree.XML_TEXT_NODE and c.type != tree.XML_CDATA_SECTION_NODE
    ):
        return _text(c_node, punt)
    raw = <const char*>c.content
    if raw is NULL:
        return ""
    return _short_bytes(raw, strlen(raw))


cdef object _short_bytes(const char* raw, size_t n):
    """The str of the UTF-8 text ``raw[:n]`` (no NUL in it), shared with earlier calls for
    the same short text (``_SHORT``)."""
    cdef _Short* slot
    if n == 0 or n > _SHORT_MAX:
        return PyUnicode_DecodeUTF8(raw, n, NULL)
    slot = &_SHORT[(<unsigned char>raw[0] * 31 + <unsigned char>raw[n - 1] + n) % _SHORT_SLOTS]
    if slot.text is not NULL and slot.raw[n] == 0 and memcmp(slot.raw, raw, n) == 0:
        return <object>slot.text
    text = PyUnicode_DecodeUTF8(raw, n, NULL)
    cdef PyObject* old = slot.text
    Py_INCREF(text)
    memcpy(slot.raw, raw, n)
    slot.raw[n] = 0
    slot.text = <PyObject*>text
    Py_XDECREF(old)  # once the slot is whole again
    return text


cdef object _url_values(tree.xmlNode* c_url, bint extensions):
    """The raw values of one ``<url>``; None: let the Python path read this one."""
    cdef tree.xmlNode* c = c_url.children
    cdef tree.xmlNs* core = NULL  # see _classify
    cdef bint punt = False
    cdef int code
    loc = lastmod = changefreq = priority = None
    images = alternates = None
    while c is not NULL:
        if c.type != tree.XML_ELEMENT_NODE:
            if c.type == tree.XML_ENTITY_REF_NODE:
                return None  # lxml iterates these too; rare enough to leave to Python
            c = c.next
            continue
        code = _classify(c, &core)
        if code == LOC:
            if loc is None:
                loc = _text(c, &punt)
        elif code == LASTMOD:
            lastmod = _text(c, &punt)
        elif code == CHANGEFREQ:
            changefreq = _short_text(c, &punt)
        elif code == PRIORITY:
            priority = _short_text(c, &punt)
        elif not extensions:
            pass
        elif code == IMAGE:
            image = _image(c, &punt)
            if image is not None:
                if images is None:
                    images = []
                images.append(image)
        elif code == XLINK:
            href = _attr(c, b"href", &punt)
            lang = _attr(c, b"hreflang", &punt)
            if punt:
                return None
            if href and lang and _attr(c, b"rel", &punt) == "alternate":
                if alternates is None:
                    alternates = []
                alternates.append((lang.strip(), href.strip()))
        elif code == VIDEO or code == NEWS:
            return None
        if punt:
            return None
        c = c.next
    return loc, lastmod, changefreq, priority, images, alternates, None, None


cdef inline object _cached(dict memo, object raw, object builder, bint priority):
    """The ``UrlBuilder``'s ``priority(raw)`` or ``changefreq(raw)`` for a text; None for None.

    A text whose memoised value is valid needs no call: the method would only have
    looked it up. Invalid ones (None in ``memo``) go through it, which counts them.
    The method is looked up only then: a bound method per ``<url>`` would cost more
    than the rest of this.
    """
    cdef PyObject* value
    if raw is None:
        return None
    value = PyDict_GetItem(memo, raw)
    if value is not NULL and <object>value is not None:
        return <object>value
    return builder.priority(raw) if priority else builder.changefreq(raw)


cdef extern from "Python.h":
    # What a tuple subclass defined in Python allocates with (its tp_alloc).
    object PyType_GenericAlloc(PyTypeObject* cls, Py_ssize_t items)  # a new reference


cdef inline void _put(object entry, Py_ssize_t i, object value) noexcept:
    Py_INCREF(value)  # SET_ITEM takes over a reference
    PyTuple_SET_ITEM(entry, i, value)


cdef object _entry(
    object cls, object loc, object when, object raw, object changefreq, object priority,
    object images, object alternates,
):
    """``cls(loc, when, raw, changefreq, priority, images, alternates, (), None)``: a
    ``UrlEntry`` allocated as its type allocates and filled in place, as ``tuple.__new__``
    does, without the argument tuple it copies from (an allocation and a call per
    ``<url>``)."""
    entry = PyType_GenericAlloc(<PyTypeObject*>cls, 9)  # (raises MemoryError itself)
    _put(entry, 0, loc)
    _put(entry, 1, when)
    _put(entry, 2, raw)
    _put(entry, 3, changefreq)
    _put(entry, 4, priority)
    _put(entry, 5, images)
    _put(entry, 6, alternates)
    _put(entry, 7, ())
    _put(entry, 8, None)
    return entry


cdef inline str _strip(str text):
    """``text.strip()``; the same object, without the method call, when neither end is
    whitespace (the usual value: a lookup and a call per value showed in profiles)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    if n and not Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(text, 0)) and not Py_UNICODE_ISSPACE(
        PyUnicode_READ_CHAR(text, n - 1)
    ):
        return text
    return text.strip()


cdef Py_ssize_t PROTOCOL_MAX_LOC = 2_048
cdef Py_ssize_t PROTOCOL_MAX_ENTRIES = 50_000


cdef inline bint _http_start(str loc) noexcept:
    """``parse._HTTP_URL`` for the usual case: ``http(s)://`` (any case) and then a host
    character that is ASCII and neither '/', '?', '#' nor whitespace. False also where
    that regex might say yes (a non-ASCII first host character): Python decides those."""
    cdef Py_ssize_t n = len(loc), i
    cdef Py_UCS4 c
    if n < 8:
        return False
    if loc[0] not in u"hH" or loc[1] not in u"tT" or loc[2] not in u"tT" or loc[3] not in u"pP":
        return False
    i = 4
    if loc[4] in u"sS":
        i = 5
    if n < i + 4 or loc[i] != u":" or loc[i + 1] != u"/" or loc[i + 2] != u"/":
        return False
    c = loc[i + 3]
    return 33 <= <int>c <= 126 and c not in u"/?#"


cdef class EntryContext:
    """What the entry builder reads of one parser, by name (fields: ``_cparse.pxd``).

    ``EntryContext(builder, sink)``: ``builder`` an ``entries.UrlBuilder``, ``sink``
    its ``entries.EntrySink``; their public fields are read here, once, and a
    missing one fails here. It holds the builder (for what is left to Python) but
    nothing that holds it, so it makes no reference cycle.
    """

    def __cinit__(self, builder not None, sink not None):
        self.builder = builder
        self.extensions = builder.extensions
        self.changefreqs = builder.changefreqs
        self.priorities = builder.priorities
        self.stats = sink.stats
        self.seen = sink.seen
        self.cap = sink.cap
        self.entry_type = UrlEntry


def url_entry(cetree._Element el not None, EntryContext ctx not None, list out):
    """Append the ``UrlEntry`` of one ``<url>`` (see ``_url_entry``); the parser's per-element call."""
    cdef Count count = Count(-1, 0)
    try:
        return _url_entry(el._c_node, el, ctx, out, &count)
    finally:
        _flush_count(ctx, &count)


def drain(EntryContext ctx not None, events, list out, root, handle):
    """``XmlSitemapParser._drain`` for a urlset or sitemapindex, as one C loop.

    In: the parser's context, its ``read_events()`` iterator, the entry list, the
    root element found by an earlier call (None at first), and ``handle``: None for
    a urlset, whose ``<url>``s go to ``_url_entry`` (and, when it hands values back,
    to ``ctx.builder.finish``); for an index, the function called with each
    ``<sitemap>`` and ``out``. Only closed entry elements whose parent is the root
    count (found as ``_drain`` finds it). Then the handled entries are pruned from
    the tree, as ``parse._prune`` does. Out: entries appended to ``out``; returns
    the root, for the next call.

    Why: per ``<url>`` the Python loop costs a ``getparent`` proxy, two method calls
    and its bytecode; here they are pointer reads and C calls.
    """
    cdef tree.xmlNode* root_node = NULL
    cdef tree.xmlNode* p
    cdef cetree._Element el
    last = None
    if root is not None:
        root_node = (<cetree._Element?>root)._c_node
    cdef Count count = Count(-1, 0)
    try:
        for event in events:
            el = <cetree._Element?>(<tuple>event)[1]
            p = el._c_node.parent
            if p is NULL or not cetree._isElement(p):
                continue  # getparent() is None: the root itself
            if root_node is NULL and (p.parent is NULL or not cetree._isElement(p.parent)):
                root = cetree.elementFactory(el._doc, p)
                root_node = p
            if p is not root_node:
                continue  # nested inside a value: part of its string, not an entry
            if handle is None:
                found = _url_entry(el._c_node, el, ctx, out, &count)
                if found is not None:
                    ctx.builder.finish(found, out)
            else:
                handle(el, out)
            last = el
    finally:
        _flush_count(ctx, &count)  # the entries counted in C, even if one raised
    if last is not None:
        # parse._prune: the handled entries, and every sibling before them.
        del root[: root.index(last) + 1]
    return root


cdef int _flush_count(EntryContext ctx, Count* count) except -1:
    """Add the entries ``count`` holds to ``ctx.stats``; read them again next time."""
    cdef Py_ssize_t pending = count.pending
    count.pending = 0
    count.total = -1
    if pending:
        ctx.stats.entries += pending
    return 0


cdef object _url_entry(
    tree.xmlNode* c_url, object el, EntryContext ctx, list out, Count* count
):
    """``_entry_or_values``; the count is flushed to the stats before values go back to
    Python (whose ``UrlBuilder.finish`` counts, and checks the caps, on the stats
    themselves).

    ``count`` keeps the entries built here in C until a flush: through the stats object
    each ``<url>`` would cost two attribute reads, a write and an int.
    Whoever passes a count flushes it when done (``drain``, ``url_entry``, ``_cpush``).
    """
    found = _entry_or_values(c_url, el, ctx, out, count)
    if found is not None:
        _flush_count(ctx, count)
    return found


cdef object _entry_or_values(
    tree.xmlNode* c_url, object el, EntryContext ctx, list out, Count* count
):
    """Append the ``UrlEntry`` of one ``<url>`` to ``out`` and return None, exactly as
    ``entries.UrlBuilder`` would; or change nothing and return its raw values (from
    ``_url_values``, or from ``ctx.builder.values`` when the walker declines) for the
    Python path to finish: a loc it must drop or flag, a lastmod not in a common
    W3C shape, an entry at a count limit.

    ``c_url`` is the element's node; ``el`` its lxml proxy, or None when the node is in
    no document of lxml's (``_cpush``: the Python walker then reads a copy).
    """
    values = _url_values(c_url, ctx.extensions)  # a C call: no Python frame per <url>
    if values is None:
        if el is None:
            # Read by libxml2 without lxml (harvester/_cpush.pyx): the Python walker gets a
            # copy of the element in a document of lxml's; the copy is freed with its proxy.
            el = cetree.deepcopyNodeToDocument(_SCRATCH, c_url)
        return ctx.builder.values(el)  # the Python walker (video, news, nested markup)
    return _entry_from_values(values, ctx, out, count)


cdef object _values_entry(
    object raw_loc, object lastmod, object changefreq, object priority,
    EntryContext ctx, list out, Count* count,
):
    """``_url_entry`` for the raw values of a ``<url>`` read without its nodes (``_cpush``'s
    fast path: the core values of ``_url_values``, no extensions in it): the entry
    appended and None, or ``_url_values``' tuple of them for the Python path, the count
    flushed first as there. (The tuple is made only then: one less object per URL.)"""
    if _entry_of(raw_loc, lastmod, changefreq, priority, None, None, ctx, out, count):
        return None
    _flush_count(ctx, count)
    return (raw_loc, lastmod, changefreq, priority, None, None, None, None)


cdef object _entry_from_values(tuple values, EntryContext ctx, list out, Count* count):
    """The second half of ``_entry_or_values``: from the raw values, the entry appended
    and None, or ``values`` back unchanged for the Python path to finish."""
    if _entry_of(values[0], values[1], values[2], values[3], values[4], values[5], ctx, out, count):
        return None
    return values


cdef bint _entry_of(
    object raw_loc, object lastmod, object changefreq, object priority, object images,
    object alternates, EntryContext ctx, list out, Count* count,
) except -1:
    """The entry of a ``<url>``'s raw values (``_url_values``' first six) appended to
    ``out``: True; or False, nothing changed, for the Python path to finish."""
    cdef Py_ssize_t total
    cdef set seen = ctx.seen
    if raw_loc is None:
        return False
    loc = _strip(<str>raw_loc)
    if len(loc) > PROTOCOL_MAX_LOC or not _http_start(loc):
        return False
    key = None
    if seen is not None:
        key = hash(loc)
        if key in seen:
            return False
    if count.total < 0:
        stats = ctx.stats
        count.total = stats.entries + stats.children
    total = count.total
    if total >= ctx.cap or total == PROTOCOL_MAX_ENTRIES:
        return False
    when = raw = None
    if lastmod is not None:
        raw = _strip(<str>lastmod)
        if raw:
            # _cdates.w3c, EntrySink.lastmod's first try, called in C (parse.py uses
            # this builder only where _cdates loaded too).
            when = _w3c(raw)
            if when is None:
                return False
        else:
            raw = None
    # Nothing can send it back to Python now: the side effects of accept() and count().
    if seen is not None:
        seen.add(key)
    count.total += 1  # stats.entries += 1, at the next flush
    count.pending += 1
    out.append(
        _entry(
            ctx.entry_type,
            loc,
            when,
            raw,
            _cached(ctx.changefreqs, changefreq, ctx.builder, False),
            _cached(ctx.priorities, priority, ctx.builder, True),
            tuple(images) if images else (),
            tuple(alternates) if alternates else (),
        )
    )
    return True
