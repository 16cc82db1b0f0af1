"""harvester/reader/_ckept.pyx has no Python API: _cfast and _cpush use it at C level."""
