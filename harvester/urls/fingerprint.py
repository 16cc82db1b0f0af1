"""Dedupe stage, its key: the 64-bit fingerprint of a canonical URL.

In: a canonical URL (``harvester.urls.normalize``). Out: ``fingerprint(url)``, an
unsigned 64-bit int, the compiled ``harvester/urls/_cdedupe.pyx``'s where it is built
and ``fingerprint_py``'s (the same value) where it is not. The per-host seen-sets
(``harvester.urls.dedupe.SeenSet``), the cross-host count and the state file all
key URLs by it. Its own module: a contract of its own (it cannot change), used
apart from any seen-set, with its compiled and pure paths side by side
(tests/unit/urls/test_cdedupe.py compares them).

**Fingerprints** are the first 8 bytes of BLAKE2b of the UTF-8 canonical URL
(the same function as ``benchmarks/webgen.py``'s truth digest and ``seeds.py``'s
host digests; the state file keys URLs by it, so it cannot change). Through
hashlib it is mostly object overhead; the compiled ``harvester/urls/_cdedupe.pyx``
computes the same value in about half the time. xxh3_64 would be faster still
but would change every stored fingerprint. For ``n`` distinct URLs of one host the chance
that any two share a fingerprint is about ``n² / 2**65``: 2.7e-6 at 10 million
URLs, **2.7e-4 (1 in 3,700) at 100 million**; a collision wrongly drops one
URL as a duplicate. Per-host sets keep ``n`` small; 128 bits would double the
memory for odds nobody needs.
"""

from __future__ import annotations

from hashlib import blake2b
from typing import TYPE_CHECKING

from harvester import compiled

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["fingerprint"]


def fingerprint_py(url: str) -> int:
    """The 64-bit fingerprint of a canonical URL (unsigned, stable across runs and hosts).

    >>> fingerprint("https://example.com/")  # doctest: +SKIP
    1234567890123456789
    """
    return int.from_bytes(blake2b(url.encode(), digest_size=8).digest(), "big")


_cdedupe = compiled.load("_cdedupe")
# The same value from harvester/urls/_cdedupe.pyx (BLAKE2b in C over the str's cached
# UTF-8); the Python one where it is not built.
fingerprint: Callable[[str], int] = _cdedupe.fingerprint if _cdedupe is not None else fingerprint_py
