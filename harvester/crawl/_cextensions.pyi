"""harvester/crawl/_cextensions.pyx has no Python API: _chost uses it at C level."""
