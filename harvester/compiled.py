"""The compiled modules (``harvester/*/_c*.pyx``): load each one, remember why one did not.

In: a module name. Out: the module, or None when it is not there, with the
reason kept in ``MISSING`` (``harvester --version`` prints it: a slow reader is
otherwise hard to tell from a slow network). Every compiled module has a
Python path beside it that does the same work with the same results, so a
machine without a C compiler, a module built against another lxml, an lxml
outside ``LXML_TESTED`` (for ``_cpush``), or ``HARVESTER_PURE_PYTHON=1`` only
costs speed. ``HARVESTER_COMPILED_OFF=_cpush,_cparse`` turns off the ones named
(the benchmarks measure what each one is worth that way). The tests run both paths.

``HARVESTER_PURE_PYTHON`` (``pure_python``): ``1``, ``true``, ``yes``, ``on`` (any
case) ask for the Python path; unset, empty, ``0``, ``false``, ``no``, ``off`` for the
compiled one; any other value gives a ``RuntimeWarning`` and the Python path.

Usage::

    _cdates = compiled.load("_cdates")   # None: use the Python path
"""

from __future__ import annotations

import importlib
import os
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "LIBXML_TESTED",
    "LXML_TESTED",
    "MISSING",
    "NAMES",
    "PACKAGES",
    "PURE_ENV",
    "load",
    "module_path",
    "pure_python",
    "untested_lxml",
]

# Every compiled module setup.py builds, by its own name, with the feature package it
# sits in beside its Python half (``reader/_cparse.pyx`` beside ``reader/parse.py``;
# "": the package's ground floor, ``_cdates.pyx`` beside ``dates.py``).
PACKAGES = {
    "_cwalk": "reader",
    "_cparse": "reader",
    "_clibxml": "reader",
    "_ckept": "reader",
    "_cfast": "reader",
    "_cpush": "reader",
    "_cdates": "",
    "_cnormalize": "urls",
    "_cdedupe": "urls",
    "_cdistribution": "audit",
    "_crobots": "crawl",
    "_crecords": "crawl",
    "_cextensions": "crawl",
    "_chost": "crawl",
}
NAMES = tuple(PACKAGES)
MISSING: dict[str, str] = {}  # module name -> why it is not in use

# The (major, minor) releases of lxml, and of the libxml2 it runs, that ``_cpush`` is
# tested against (tests/unit/reader/test_cpush.py, on every machine of the project). ``_cpush``
# drives libxml2 itself: it replaces the tree builder's SAX handlers and reads and sets
# fields of libxml2's parser context that are no public API (the current node, the
# input cursor). A release that changes them could crash the process rather than fail
# a test, so any other release reads through lxml's XMLPullParser instead, until the
# tests have run against it and it is added here (and to pyproject.toml's lxml range).
LXML_TESTED = frozenset({(6, 1)})
LIBXML_TESTED = frozenset({(2, 14)})
# The modules these releases apply to (_ckept and _cfast: _cpush's fast path, on the same
# parser context).
_LXML_GATED = frozenset({"_clibxml", "_ckept", "_cfast", "_cpush"})


PURE_ENV = "HARVESTER_PURE_PYTHON"
_PURE_YES = frozenset({"1", "true", "yes", "on"})
_PURE_NO = frozenset({"", "0", "false", "no", "off"})


def pure_python() -> bool:
    """Whether ``HARVESTER_PURE_PYTHON`` asks for the Python path alone.

    Yes for ``1``, ``true``, ``yes``, ``on``; no when unset, empty, ``0``, ``false``,
    ``no`` or ``off`` (any case, blanks around ignored). Any other value: yes, with a
    ``RuntimeWarning`` naming it. Yes rather than no because the variable is only ever
    set to ask for the Python path, which is always correct (only slower): a typo
    must not quietly measure or test the compiled path instead.
    """
    raw = os.environ.get(PURE_ENV, "")
    value = raw.strip().lower()
    if value in _PURE_NO:
        return False
    if value not in _PURE_YES:
        warnings.warn(
            f"{PURE_ENV}={raw!r} is neither 1/true/yes/on nor 0/false/no/off:"
            " the Python path is used",
            RuntimeWarning,
            stacklevel=1,  # here, not the loading module's line: said once, not once a module
        )
    return True


def untested_lxml() -> str | None:
    """Why ``_cpush`` must not drive this lxml's libxml2, or None when it is a tested pair."""
    from lxml import etree

    lxml_version = tuple(etree.LXML_VERSION[:2])
    libxml_version = tuple(etree.LIBXML_VERSION[:2])
    if lxml_version not in LXML_TESTED:
        return f"lxml {_dotted(etree.LXML_VERSION)} is not a tested release ({_list(LXML_TESTED)})"
    if libxml_version not in LIBXML_TESTED:
        return (
            f"libxml2 {_dotted(etree.LIBXML_VERSION)} is not a tested release"
            f" ({_list(LIBXML_TESTED)})"
        )
    return None


def module_path(name: str) -> str:
    """The importable name of compiled module ``name``: ``harvester[.<package>].<name>``."""
    package = PACKAGES[name]
    return f"harvester.{package}.{name}" if package else f"harvester.{name}"


def load(name: str) -> ModuleType | None:
    """``module_path(name)`` imported, or None (and the reason in ``MISSING[name]``)."""
    if pure_python():
        MISSING[name] = f"{PURE_ENV}={os.environ.get(PURE_ENV)} asks for the Python path"
        return None
    if name in os.environ.get("HARVESTER_COMPILED_OFF", "").split(","):
        MISSING[name] = "HARVESTER_COMPILED_OFF names it"
        return None
    if name in _LXML_GATED:
        # Checked before the import: these look libxml2's functions up as they load.
        untested = untested_lxml()
        if untested is not None:
            MISSING[name] = untested
            return None
    try:
        module = importlib.import_module(module_path(name))
    except Exception as exc:  # not built, or built against another lxml
        # ImportError when it was not built; ValueError when Cython finds lxml's
        # types changed size since the build (lxml upgraded under it). Either way
        # the Python path does the work; test_compiled fails on such a machine.
        MISSING[name] = f"{type(exc).__name__}: {exc}"
        return None
    why_not = getattr(module, "MISSING", None)  # a module that loaded but cannot run here
    if why_not is not None:
        MISSING[name] = why_not
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


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _list(versions: frozenset[tuple[int, ...]]) -> str:
    return ", ".join(f"{_dotted(v)}.x" for v in sorted(versions))
