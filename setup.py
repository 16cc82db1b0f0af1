"""Build of the compiled modules (everything else is in pyproject.toml).

- ``harvester.reader._cwalk``: the walk of each ``<url>``'s nodes for its raw values (libxml2's
  struct layouts, from the headers lxml ships: they are needed at build time).
- ``harvester.reader._cparse``: the parse stage's loop over closed entries and the entry builder
  of each ``<url>`` (Cython against lxml's public C API).
- ``harvester.reader._clibxml``: lxml's own libxml2, the functions ``_cpush`` calls found with
  ``dlsym`` in lxml's ``etree`` module (lxml's headers again).
- ``harvester.reader._ckept``: what the fast path keeps of a ``<url>`` instead of nodes,
  and its replay to libxml2's tree builder (the state ``_cpush``'s reader extends).
- ``harvester.reader._cfast``: the fast path's reading of a ``<url>`` (libxml2's start,
  text and reference handlers): which children are kept (values, images, alternates)
  and the entry made from them.
- ``harvester.reader._cpush``: libxml2's push parser driven without lxml for urlsets, its
  ``<url>`` nodes read by ``_cparse`` (or by ``_cfast``, not built); used only on the lxml
  releases it is tested with (``compiled.LXML_TESTED``).
- ``harvester._cdates``: the common lastmod shapes, parsed and formatted.
- ``harvester.urls._cnormalize``: the canonical form of URLs without a query or with a plain one.
- ``harvester.urls._cdedupe``: the URL fingerprint (BLAKE2b-64, the same value as hashlib's).
- ``harvester.audit._cdistribution``: the lastmod distribution's count of a host's sample.
- ``harvester.crawl._crobots``: robots.txt rules and TDMRep locations matched against URLs
  (each record's ``robots`` / ``tdm_reserved`` label).
- ``harvester.crawl._crecords``: a record's JSON line written into the batch's bytes (and
  a batch's lines labelled at once).
- ``harvester.crawl._cextensions``: a record's extension fields (images, alternates,
  videos, news) as JSON, for that line.
- ``harvester.crawl._chost``: ``UrlBatch``'s loop over a batch of URL entries (records, or
  their JSON lines, and the lastmod audit's sample).

Each extension is optional: where it cannot be built (no C compiler), the install goes
on and the Python path does the same work, with the same results.
"""

from __future__ import annotations

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(
        "harvester.reader._cwalk",
        ["harvester/reader/_cwalk.pyx"],
        # The libxml2 headers that match the lxml it ships with; only struct layouts are
        # used, so nothing is linked but Python.
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    # Uses _cwalk at C level (its .pxd) and lxml's public C API.
    Extension(
        "harvester.reader._cparse",
        ["harvester/reader/_cparse.pyx"],
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    # lxml's libxml2 functions for _cpush, found with dlsym; links nothing but Python.
    Extension(
        "harvester.reader._clibxml",
        ["harvester/reader/_clibxml.pyx"],
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    # The fast path's state and its replay to libxml2's tree builder (a base class
    # _cpush's reader extends); uses _cwalk and _clibxml at C level.
    Extension(
        "harvester.reader._ckept",
        ["harvester/reader/_ckept.pyx"],
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    # The fast path's SAX handlers and the entry of a <url> read by it: uses _ckept,
    # _cwalk, _cparse and _clibxml at C level.
    Extension(
        "harvester.reader._cfast",
        ["harvester/reader/_cfast.pyx"],
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    # Uses _cparse's entry builder, _cfast, _ckept and _clibxml's functions at C level.
    Extension(
        "harvester.reader._cpush",
        ["harvester/reader/_cpush.pyx"],
        include_dirs=lxml.get_include(),
        optional=True,
    ),
    Extension("harvester._cdates", ["harvester/_cdates.pyx"], optional=True),
    # Uses _cdates at C level (its .pxd).
    Extension(
        "harvester.audit._cdistribution", ["harvester/audit/_cdistribution.pyx"], optional=True
    ),
    Extension("harvester.urls._cnormalize", ["harvester/urls/_cnormalize.pyx"], optional=True),
    Extension("harvester.urls._cdedupe", ["harvester/urls/_cdedupe.pyx"], optional=True),
    Extension("harvester.crawl._crobots", ["harvester/crawl/_crobots.pyx"], optional=True),
    # A record's JSON line; its .pxd holds the small writers _cextensions and _chost
    # inline.
    Extension("harvester.crawl._crecords", ["harvester/crawl/_crecords.pyx"], optional=True),
    # Uses _crecords at C level.
    Extension("harvester.crawl._cextensions", ["harvester/crawl/_cextensions.pyx"], optional=True),
    # Uses _cdates, _cnormalize, _cdedupe, _crobots, _crecords and _cextensions at C level
    # (their .pxd files); its own .pxd declares the URL loop's state (UrlLoop, a cdef class
    # each UrlBatch keeps).
    Extension("harvester.crawl._chost", ["harvester/crawl/_chost.pyx"], optional=True),
]

setup(ext_modules=cythonize(extensions, language_level=3, quiet=True))
