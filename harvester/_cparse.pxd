# The entry builder, shared with harvester/_cpush.pyx (which reads <url> nodes that
# libxml2 built without lxml); see _cparse.pyx.
from lxml.includes cimport tree


cdef object _url_entry(tree.xmlNode* c_url, object el, tuple ctx, object parser, list out)
