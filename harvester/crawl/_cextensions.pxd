# What harvester/crawl/_chost.pyx uses of harvester/crawl/_cextensions.pyx at C level.


cdef bytes _extensions_json(tuple entry)
