"""The compiled modules (``harvester/_c*.pyx``): load each one, remember why one did not.

In: a module name. Out: the module, or None when it is not there, with the
reason kept in ``MISSING`` (``harvester --version`` prints it: a slow reader is
otherwise hard to tell from a slow network). Every compiled module has a
Python path beside it that does the same work with the same results, so a
machine without a C compiler, a module built against another lxml, or
``HARVESTER_PURE_PYTHON=1`` only costs speed. The tests run both paths.

Usage::

    _cdates = compiled.load("_cdates")   # None: use the Python path
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["MISSING", "NAMES", "load"]

NAMES = (
    "_cparse",
    "_cpush",
    "_cdates",
    "_cnormalize",
    "_cdedupe",
    "_chost",
)  # every compiled module setup.py builds
MISSING: dict[str, str] = {}  # module name -> why it is not in use


def load(name: str) -> ModuleType | None:
    """``harvester.<name>``, or None (and the reason in ``MISSING[name]``)."""
    if os.environ.get("HARVESTER_PURE_PYTHON"):
        MISSING[name] = "HARVESTER_PURE_PYTHON is set"
        return None
    try:
        module = importlib.import_module(f"harvester.{name}")
    except Exception as exc:  # not built, or built against another lxml
        # ImportError when it was not built; ValueError when Cython finds lxml's
        # types changed size since the build (lxml upgraded under it). Either way
        # the Python path does the work; test_compiled fails on such a machine.
        MISSING[name] = f"{type(exc).__name__}: {exc}"
        return None
    MISSING.pop(name, None)
    return module


def status() -> str:
    """One line for ``--version``: 'yes', or which modules are missing and why."""
    for name in NAMES:
        if name not in MISSING:
            load(name)
    if not MISSING:
        return "yes"
    return "no: " + "; ".join(f"{name} ({why})" for name, why in sorted(MISSING.items()))
