"""Build of the one compiled module, harvester/_cparse.pyx (everything else is in pyproject.toml).

The extension is optional: where it cannot be built (no C compiler), the install goes on
and the parser reads every <url> through its Python path, with the same results.
"""

from __future__ import annotations

import lxml
from Cython.Build import cythonize
from setuptools import Extension, setup

extension = Extension(
    "harvester._cparse",
    ["harvester/_cparse.pyx"],
    # lxml's public C API and the libxml2 headers that match the lxml it ships with;
    # only struct layouts are used, so nothing is linked but Python.
    include_dirs=lxml.get_include(),
    optional=True,
)

setup(ext_modules=cythonize([extension], language_level=3, quiet=True))
