"""harvester/reader/_cwalk.pyx has no Python API: _cparse and _cpush use it at C level."""
