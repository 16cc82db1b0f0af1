# What harvester/crawl/_chost.pyx uses of harvester/crawl/_cextensions.pyx at C level.


cdef bint _extensions_into(bytearray out, tuple entry) except -1
