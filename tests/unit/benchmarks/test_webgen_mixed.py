"""``benchmarks.webgen --profile mixed``: ``many``'s URLs with the extensions sites publish.

The plain and the mixed corpus of bench_mix must hold the same URLs (the same size, so
their CPU per URL compares the entries' extensions and nothing else), and the mixed one
must parse into entries with images, alternates and news in about the shares it states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.webgen import generate, load_manifest
from tests.unit.benchmarks.corpus import entries_of

if TYPE_CHECKING:
    from pathlib import Path


def test_mixed_has_the_urls_of_many_and_the_extensions(tmp_path: Path) -> None:
    plain = generate("many", tmp_path / "many", hosts=12, jobs=1)
    mixed = generate("mixed", tmp_path / "mixed", hosts=12, jobs=1)
    assert mixed.total_urls == plain.total_urls
    a, b = entries_of(tmp_path / "many"), entries_of(tmp_path / "mixed")
    assert [e.loc for e in a] == [e.loc for e in b]
    assert [e.lastmod for e in a] == [e.lastmod for e in b]
    assert not any(e.images or e.alternates or e.news for e in a)
    with_images = sum(1 for e in b if e.images) / len(b)
    assert 0.1 < with_images < 0.8  # about 40 % over many hosts; 12 hosts vary
    assert any(e.alternates for e in b)
    gz = [f for h in load_manifest(tmp_path / "mixed")["hosts"] for f in h["files"] if f["gzip"]]
    assert gz  # some children are gzip files, as in many
