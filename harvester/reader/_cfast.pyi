"""harvester/reader/_cfast.pyx has no Python API: _cpush uses it at C level."""
