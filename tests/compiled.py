"""The compiled module a parity test compares with its Python path, or a skip.

Usage (at the top of a test module)::

    cdates = compiled_module("_cdates")
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from types import ModuleType


def compiled_module(name: str) -> ModuleType:
    """``harvester.<name>``; skips the calling test module where there is nothing to compare.

    Not built (tests/unit/test_compiled.py fails then, saying why), or
    ``HARVESTER_PURE_PYTHON=1`` (the Python path alone was asked for).
    """
    if os.environ.get("HARVESTER_PURE_PYTHON"):
        pytest.skip("the pure-Python path was asked for", allow_module_level=True)
    module: ModuleType = pytest.importorskip(
        f"harvester.{name}",
        reason="compiled module not built (test_compiled says why)",
        exc_type=ImportError,
    )
    return module
