"""The compiled module a parity test compares with its Python path, or a skip.

Usage (at the top of a test module)::

    cdates = compiled_module("_cdates")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from harvester import compiled

if TYPE_CHECKING:
    from types import ModuleType


def compiled_module(name: str) -> ModuleType:
    """``harvester.<name>`` as the code under test loads it (``compiled.load``).

    With ``HARVESTER_PURE_PYTHON=1`` the calling test module is skipped, saying so
    (``pytest -ra`` prints it): only the Python path is in use, and a parity test
    would compare it with itself. Otherwise the module must be in use; when it is
    not (not built, stale, an lxml outside ``compiled.LXML_TESTED``) the test module
    fails with the reason, rather than passing on the Python path alone.
    """
    if compiled.pure_python():
        pytest.skip(
            f"HARVESTER_PURE_PYTHON asks for the Python path: no {name} to compare it with",
            allow_module_level=True,
        )
    module = compiled.load(name)
    if module is None:
        pytest.fail(
            f"{name} not in use, so its parity tests would compare Python with Python: "
            f"{compiled.MISSING.get(name)}",
            pytrace=False,
        )
    return module
