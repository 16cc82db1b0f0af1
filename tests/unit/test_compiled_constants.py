"""The compiled halves' constants are their Python halves' (issue 46 item 4).

A ``.pyx`` that needs a Python module's constant as a C value imports it
(``_chost.pyx``: ``AUDIT_ALL`` and ``FOREIGN_EXAMPLES`` from crawl/urlloop.py) or,
where it does not yet, repeats it: each repeated value is listed here with the
Python constant it stands for, and this test fails when the two differ. Read from
the source text, so it holds on the pure-Python path (nothing compiled) too.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "harvester"

# (.pyx under harvester/, its C constant, the Python module and name it repeats)
REPEATED = [
    ("reader/_cparse.pyx", "PROTOCOL_MAX_LOC", "harvester.reader.entries", "PROTOCOL_MAX_LOC"),
    (
        "reader/_cparse.pyx",
        "PROTOCOL_MAX_ENTRIES",
        "harvester.reader.entries",
        "PROTOCOL_MAX_ENTRIES",
    ),
    ("reader/_cpush.pyx", "SLICE", "harvester.reader.parse", "_FEED_SLICE"),
]

# ``cdef <type> NAME = <value>`` at the start of a line; the value is the text up to a
# comment.
_CDEF = r"^cdef\s+[\w .]+?\s+{name}\s*=\s*([^#\n]+?)\s*(?:#.*)?$"


def c_value(pyx: str, name: str, root: Path = ROOT) -> str:
    """The text a module-level ``cdef`` constant of ``root / pyx`` is set to."""
    source = (root / pyx).read_text()
    found = re.findall(_CDEF.format(name=re.escape(name)), source, re.MULTILINE)
    assert len(found) == 1, f"{pyx}: {name} is set {len(found)} times"
    return str(found[0])


@pytest.mark.parametrize(("pyx", "name", "module", "attr"), REPEATED)
def test_a_repeated_constant_equals_the_python_one(
    pyx: str, name: str, module: str, attr: str
) -> None:
    value = c_value(pyx, name)
    assert re.fullmatch(r"[0-9_]+", value), f"{pyx}: {name} = {value} is not a literal"
    assert int(value) == getattr(importlib.import_module(module), attr)


def test_the_url_loop_reads_its_constants_from_the_python_loop() -> None:
    # No literal: _chost's C values are urlloop.py's constants, imported.
    assert c_value("crawl/_chost.pyx", "AUDIT_ALL") == "_AUDIT_ALL"
    assert c_value("crawl/_chost.pyx", "FOREIGN_EXAMPLES") == "_FOREIGN"
    source = (ROOT / "crawl/_chost.pyx").read_text()
    assert re.search(
        r"^from harvester\.crawl\.urlloop import AUDIT_ALL as _AUDIT_ALL, "
        r"FOREIGN_EXAMPLES as _FOREIGN$",
        source,
        re.MULTILINE,
    )


def test_the_reader_finds_what_it_checks(tmp_path: Path) -> None:
    # A value with a comment, a typed name, a name set twice, a name not set.
    (tmp_path / "_probe.pyx").write_text(
        "cdef Py_ssize_t A = 2_048  # why\ncdef int64_t B = 7\ncdef int B = 8\n"
        "    cdef Py_ssize_t C = 1\n"
    )
    assert c_value("_probe.pyx", "A", tmp_path) == "2_048"
    for name in ("B", "C"):
        with pytest.raises(AssertionError):
            c_value("_probe.pyx", name, tmp_path)
