# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the parse stage, first part: one ``<url>``'s raw values, read from
libxml2's nodes.

``_url_values`` is the walk. In: a ``<url>`` node that has just closed, still
whole (built by lxml, or by libxml2 for ``_cpush``), and whether extension
children (image, video, news, xhtml:link) are read. Out: the raw values that
``entries.UrlBuilder.values`` reads from the same element, as the tuple
``(loc, lastmod, changefreq, priority, images, alternates, videos, news)``
(``images`` a list of ``Image`` or None, ``alternates`` a list of
``(hreflang, href)`` or None, ``videos`` a list of ``Video`` or None, ``news`` a
``News`` or None, each as ``extensions.parse_video`` / ``parse_news`` make them), or
``None`` when the element holds something this walker leaves to Python: markup
nested inside a value, an attribute made of several nodes, an entity reference. The
caller (``harvester/reader/_cparse.pyx``) then runs the Python path on that element,
so the two agree by construction and the tests check they agree everywhere else
(tests/unit/reader/test_cparse.py, test_cwalk_extensions.py).

Why compiled: through lxml's Python API every child, sub-child and attribute read
makes a proxy object and a string for its tag, which costs more per ``<url>`` than
libxml2's whole parse of it. Here the walk is plain pointer reads on the nodes;
only the values become Python strings. Nothing in libxml2 is called (only its
struct layout, from the headers that lxml ships), so the module links against
nothing but Python.
"""

from cpython.object cimport PyObject, PyObject_GenericSetAttr
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcmp, memcpy, strcmp, strlen

from lxml.includes cimport tree

from harvester._cdates cimport _w3c

from harvester.dates import parse_lastmod
from harvester.models import Image, News, Video

cdef const char* NS_IMAGE = b"http://www.google.com/schemas/sitemap-image/1.1"
cdef const char* NS_VIDEO = b"http://www.google.com/schemas/sitemap-video/1.1"
cdef const char* NS_NEWS = b"http://www.google.com/schemas/sitemap-news/0.9"
cdef const char* NS_XHTML = b"http://www.w3.org/1999/xhtml"

# tuple.__new__ straight: Image._make is a Python-level function, a frame per image.
cdef object _new_tuple = tuple.__new__
cdef object _new_object = object.__new__


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
    images = alternates = videos = news = None
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
        elif code == VIDEO:
            video = _video(c, &punt)
            if video is not None:
                if videos is None:
                    videos = []
                videos.append(video)
        elif code == NEWS:
            news = _news(c, &punt)
        if punt:
            return None
        c = c.next
    return loc, lastmod, changefreq, priority, images, alternates, videos, news


# -- video:video and news:news: extensions.parse_video and parse_news over the nodes ----
#
# Their sub-elements match on local name in any namespace (or none), the first with
# non-empty trimmed text winning (extensions._fields); a field whose text is not all
# text nodes sends the <url> to Python (``punt``), as for images.

cdef const char* _VIDEO_NAMES[10]
_VIDEO_NAMES[:] = [
    b"thumbnail_loc", b"title", b"description", b"content_loc", b"player_loc",
    b"duration", b"publication_date", b"expiration_date", b"family_friendly", b"live",
]
cdef const char* _NEWS_NAMES[6]
_NEWS_NAMES[:] = [
    b"publication_date", b"title", b"keywords", b"genres", b"stock_tickers", b"access",
]
cdef const char* _PUBLICATION_NAMES[2]
_PUBLICATION_NAMES[:] = [b"name", b"language"]

# The fields of Video and News, in their order, and the (interned) attribute names
# that fill them.
cdef tuple _VIDEO_SLOTS = (
    "thumbnail_loc", "title", "description", "content_loc", "player_loc", "duration",
    "publication_date", "expiration_date", "family_friendly", "live", "tags",
)
cdef tuple _NEWS_SLOTS = (
    "name", "language", "publication_date", "publication_date_raw", "title", "keywords",
    "genres", "stock_tickers", "access",
)


cdef inline int _field_index(
    const tree.const_xmlChar* name, const char** names, int n
) noexcept:
    """Index of the local name ``name`` in ``names[:n]``, -1 when it is none of them."""
    cdef int i
    for i in range(n):
        if _eq(name, names[i]):
            return i
    return -1


cdef inline bint _in_some_ns(tree.xmlNode* c, const char* name) noexcept:
    """``c``'s lxml tag ends with ``"}" + name``: a namespace (any) and that local name."""
    return c.ns is not NULL and c.ns.href is not NULL and _eq(c.name, name)


cdef int _fields(
    tree.xmlNode* parent, const char** names, int n, list found, bint* punt
) except -1:
    """``extensions._fields`` of ``parent`` into ``found`` (one slot per name, None where
    absent): trimmed non-empty text of the children named ``names[:n]``, first wins."""
    cdef tree.xmlNode* c = parent.children
    cdef int index
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE:
            index = _field_index(c.name, names, n)
            if index >= 0 and found[index] is None:
                text = _text(c, punt)
                if punt[0]:
                    return 0
                if text:
                    text = text.strip()
                    if text:
                        found[index] = text
        c = c.next
    return 0


cdef object _filled(object cls, tuple slots, list values):
    """An instance of the frozen slots dataclass ``cls`` with ``values[i]`` in its field
    ``slots[i]`` (every field given): what ``cls(**fields)`` builds, without the Python
    frame of its ``__init__`` (which sets each field with ``object.__setattr__``, the C
    call made here)."""
    obj = _new_object(cls)
    cdef Py_ssize_t i
    for i in range(len(slots)):
        PyObject_GenericSetAttr(obj, slots[i], values[i])
    return obj


cdef object _video(tree.xmlNode* c_video, bint* punt):
    """``extensions.parse_video`` of a video:video node (None and ``punt`` set: Python's)."""
    cdef list found = [None] * 10
    cdef tree.xmlNode* c
    _fields(c_video, _VIDEO_NAMES, 10, found, punt)
    if punt[0]:
        return None
    tags = []
    c = c_video.children
    while c is not NULL:
        if c.type == tree.XML_ELEMENT_NODE and _in_some_ns(c, b"tag"):
            text = _text(c, punt)  # lxml's .text; anything but text nodes: Python's
            if punt[0]:
                return None
            if text:
                text = text.strip()
                if text:
                    tags.append(text)
        c = c.next
    found.append(tuple(tags))
    return _filled(Video, _VIDEO_SLOTS, found)


cdef tuple _split(object text):
    """``extensions._split``: a comma-separated list, each item trimmed, empty ones dropped."""
    if not text:
        return ()
    items = []
    for part in (<str>text).split(","):
        item = part.strip()
        if item:
            items.append(item)
    return tuple(items)


cdef object _news(tree.xmlNode* c_news, bint* punt):
    """``extensions.parse_news`` of a news:news node (None and ``punt`` set: Python's)."""
    cdef list f = [None] * 6
    cdef list pub = [None, None]
    cdef tree.xmlNode* c
    _fields(c_news, _NEWS_NAMES, 6, f, punt)
    if punt[0]:
        return None
    c = c_news.children
    while c is not NULL:  # the first news:publication (in any namespace) only
        if c.type == tree.XML_ELEMENT_NODE and _in_some_ns(c, b"publication"):
            _fields(c, _PUBLICATION_NAMES, 2, pub, punt)
            if punt[0]:
                return None
            break
        c = c.next
    raw = f[0]
    when = None
    if raw is not None:
        when = _w3c(<str>raw)  # parse_lastmod's own first try, without its frame
        if when is None:
            when = parse_lastmod(raw)[0]
    return _filled(
        News,
        _NEWS_SLOTS,
        [pub[0], pub[1], when, raw, f[1], _split(f[2]), f[3], _split(f[4]), f[5]],
    )
