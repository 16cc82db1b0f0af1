# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""Compiled half of the parse stage, second part: one ``<url>``'s ``UrlEntry``.

``url_entry`` (what the parser calls) builds the ``UrlEntry`` itself in the usual
case, with ``entries.UrlBuilder``'s checks: an absolute http(s) loc within the
protocol's length whose host and port are plainly valid (``urls.validate``), a
lastmod in a common W3C shape (``_cdates.w3c``), the file's counts below their
limits. Anything else it hands back with the values read, for
the Python path to finish, before changing anything; so the entries, counters and
flags are the Python path's by construction. The values come from
``harvester/reader/_cwalk.pyx``'s walk of the ``<url>``'s nodes; ``drain`` is the
parser's loop over the closed entries, in C.

Why compiled: the walk leaves values as Python strings; checking them and
building the entry through Python calls would cost more per ``<url>`` than the
walk itself. Nothing in libxml2 is called here either.

What it reads of the Python side comes in one ``EntryContext`` per parser, whose
fields are declared in ``_cparse.pxd`` and filled from the public fields of
``entries.UrlBuilder`` and ``entries.EntrySink``; what it leaves to Python goes to
that ``UrlBuilder``'s public methods. Nothing here reads a private attribute.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.unicode cimport Py_UNICODE_ISSPACE, PyUnicode_GET_LENGTH, PyUnicode_READ_CHAR

cimport lxml.includes.etreepublic as cetree
from lxml.includes cimport tree

from lxml import etree

from harvester._cdates cimport _w3c
from harvester.reader._cwalk cimport _url_values

from harvester.models import UrlEntry

cetree.import_lxml__etree()

# Where the Python walker's copies of nodes from outside lxml live (see _url_entry).
cdef cetree._Document _SCRATCH = cetree.documentOrRaise(etree.Element("scratch"))

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


cdef object _entry(
    object cls, object loc, object when, object raw, object changefreq, object priority,
    object images, object alternates, object videos, object news,
):
    """``cls(loc, when, raw, changefreq, priority, images, alternates, videos, news)``: a
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
    _put(entry, 7, videos)
    _put(entry, 8, news)
    return entry


cdef Py_ssize_t PROTOCOL_MAX_LOC = 2_048
cdef Py_ssize_t PROTOCOL_MAX_ENTRIES = 50_000


cdef extern from "Python.h":
    bint PyUnicode_IS_COMPACT_ASCII(object o)
    const void* PyUnicode_DATA(object o)


cdef inline bint _lower_is(unsigned char c, char lower) noexcept:
    return c == lower or c == lower - 32  # an ASCII letter in either case


cdef inline bint _http_start(const unsigned char* d, Py_ssize_t n) noexcept:
    """``parse._HTTP_URL`` for the usual case, on a loc's ASCII bytes: ``http(s)://`` (any
    case) and then a host character that is neither '/', '?', '#' nor whitespace."""
    cdef Py_ssize_t i
    cdef unsigned char c
    if n < 8:
        return False
    if not (_lower_is(d[0], b"h") and _lower_is(d[1], b"t") and _lower_is(d[2], b"t")
            and _lower_is(d[3], b"p")):
        return False
    i = 5 if _lower_is(d[4], b"s") else 4
    if n < i + 4 or d[i] != b":" or d[i + 1] != b"/" or d[i + 2] != b"/":
        return False
    c = d[i + 3]
    return 33 <= c <= 126 and c != b"/" and c != b"?" and c != b"#"


cdef inline bint _dotted_quad(const unsigned char* d, Py_ssize_t start, Py_ssize_t end) noexcept:
    """``d[start:end]`` is an IPv4 address as ``ipaddress.IPv4Address`` reads one: four
    labels of 1-3 digits, each at most 255, no leading zero (the loopback hosts of the
    tests and benchmarks, so not handed to Python each time)."""
    cdef Py_ssize_t i, labels = 0, digits = 0
    cdef long value = 0
    cdef unsigned char c
    for i in range(start, end + 1):
        c = d[i] if i < end else b"."
        if c == b".":
            if digits == 0 or value > 255 or (digits > 1 and d[i - digits] == b"0"):
                return False
            labels += 1
            digits = 0
            value = 0
        elif b"0" <= c <= b"9" and digits < 3:
            value = value * 10 + (c - 48)
            digits += 1
        else:
            return False
    return labels == 4


cdef inline bint _plain_authority(const unsigned char* d, Py_ssize_t n) noexcept:
    """``urls.validate.valid_authority`` for the plain case, after ``_http_start`` said yes:
    a host of ASCII labels (``A-Z a-z 0-9 - _``, 1-63 each, at most 253 in all, no
    trailing dot), its last label not all digits unless it is an IPv4 address, no label
    starting "xn--", no userinfo, a port of 1-5 digits in 1-65535, then
    the end or '/', '?' or '#'. False for anything else, which Python then decides
    (``EntrySink.accept``): it may still be valid (an IPv4 or IPv6 address, userinfo, a
    non-ASCII host or an A-label, a tab or newline to remove), so this never says no for
    Python."""
    cdef Py_ssize_t i, label = 0, host = 0, digits
    cdef unsigned char c
    cdef bint numeric = True  # the label so far is all digits
    cdef long port = 0
    i = 8 if _lower_is(d[4], b"s") else 7  # past "http(s)://" (_http_start checked it)
    while i < n:
        c = d[i]
        if c == b".":
            if label == 0:
                return False  # an empty label
            label = 0
            numeric = True
        elif (
            (b"a" <= c <= b"z") or (b"A" <= c <= b"Z") or (b"0" <= c <= b"9")
            or c == b"-" or c == b"_"
        ):
            if (
                c == b"-" and label == 3 and d[i - 1] == b"-"
                and _lower_is(d[i - 2], b"n") and _lower_is(d[i - 3], b"x")
            ):
                return False  # an "xn--" label: Python checks that it decodes
            label += 1
            if label > 63:
                return False
            if not (b"0" <= c <= b"9"):
                numeric = False
        else:
            break
        host += 1
        i += 1
    if label == 0 or host > 253:
        return False  # no host, a trailing dot (rare: Python decides), or a name too long
    if numeric and not _dotted_quad(d, i - host, i):
        return False  # a numeric last label: an IPv4 address, or no name (Python decides)
    if i < n and d[i] == b":":
        i += 1
        digits = 0
        while i < n and b"0" <= d[i] <= b"9" and digits < 6:
            port = port * 10 + (d[i] - 48)
            digits += 1
            i += 1
        if digits == 0 or digits > 5 or port < 1 or port > 65535:
            return False
    return i == n or d[i] == b"/" or d[i] == b"?" or d[i] == b"#"


cdef inline bint _plain_loc(str loc) noexcept:
    """The checks of ``EntrySink.accept`` on a trimmed loc, for the usual one, read as
    bytes: not too long (``PROTOCOL_MAX_LOC``), ``_http_start``, ``_plain_authority``.
    False for anything else, non-ASCII included: Python decides those (it may still
    accept them), so the answer is never a no that Python would not give."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(loc)
    cdef const unsigned char* d
    if n > PROTOCOL_MAX_LOC or not PyUnicode_IS_COMPACT_ASCII(loc):
        return False
    d = <const unsigned char*>PyUnicode_DATA(loc)
    return _http_start(d, n) and _plain_authority(d, n)


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
            # Read by libxml2 without lxml (harvester/reader/_cpush.pyx): the Python walker gets a
            # copy of the element in a document of lxml's; the copy is freed with its proxy.
            el = cetree.deepcopyNodeToDocument(_SCRATCH, c_url)
        return ctx.builder.values(el)  # the Python walker (nested markup, entity references)
    return _entry_from_values(values, ctx, out, count)


cdef object _values_entry(
    object raw_loc, object lastmod, object changefreq, object priority, object images,
    object alternates, EntryContext ctx, list out, Count* count,
):
    """``_url_entry`` for the raw values of a ``<url>`` read without its nodes (``_cpush``'s
    fast path: the values of ``_url_values`` but videos and news, not in it): the entry
    appended and None, or ``_url_values``' tuple of them for the Python path, the count
    flushed first as there. (The tuple is made only then: one less object per URL.)"""
    if _entry_of(
        raw_loc, lastmod, changefreq, priority, images, alternates, None, None, ctx, out, count
    ):
        return None
    _flush_count(ctx, count)
    return (raw_loc, lastmod, changefreq, priority, images, alternates, None, None)


cdef object _entry_from_values(tuple values, EntryContext ctx, list out, Count* count):
    """The second half of ``_entry_or_values``: from the raw values, the entry appended
    and None, or ``values`` back unchanged for the Python path to finish."""
    if _entry_of(
        values[0], values[1], values[2], values[3], values[4], values[5], values[6], values[7],
        ctx, out, count,
    ):
        return None
    return values


cdef bint _entry_of(
    object raw_loc, object lastmod, object changefreq, object priority, object images,
    object alternates, object videos, object news, EntryContext ctx, list out, Count* count,
) except -1:
    """The entry of a ``<url>``'s raw values (``_url_values``' eight) appended to
    ``out``: True; or False, nothing changed, for the Python path to finish."""
    cdef Py_ssize_t total
    cdef set seen = ctx.seen
    if raw_loc is None:
        return False
    loc = _strip(<str>raw_loc)
    if not _plain_loc(loc):
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
            tuple(videos) if videos else (),
            news,
        )
    )
    return True
