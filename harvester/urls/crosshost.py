"""Cross-host duplicates: URLs that several hosts' sitemaps list (reported, not merged).

In: for each batch of emitted records, the harvesting host and the 64-bit
fingerprints of the records' canonical URLs. Out: per host, how many of its
URLs another host had already listed (``cross_host_duplicates`` in its report).

Owned by the one consumer that sees every record (the writer in ``shards.py``,
or ``pipeline.harvest``): hosts live in different shards, so only that place
can compare them. Both records are still emitted; the count is the report.
Per-host dedupe already removed repeats within a host, so any fingerprint seen
before belongs to another host. Memory: one ``SeenSet`` in table mode (a hash
table: 11-21 bytes a URL, 16 MB at most at the default
``dedupe.cross_host_spill_threshold`` of 1.5 million, past which it spills to
disk as a sorted run).
"""

from __future__ import annotations

from array import array
from dataclasses import replace

from harvester.config import DedupeConfig
from harvester.urls.dedupe import SeenSet

__all__ = ["CrossHostTracker"]


class CrossHostTracker:
    """Counts, per host, emitted URLs that an earlier host had listed too."""

    def __init__(self, cfg: DedupeConfig | None = None) -> None:
        cfg = cfg or DedupeConfig()
        # Spills at its own, lower threshold: one set for the whole run (see the config).
        # A hash table in memory (table mode): every URL of the run goes through it.
        self._seen = SeenSet(
            replace(cfg, spill_threshold=cfg.cross_host_spill_threshold), table=True
        )
        self._counts: dict[str, int] = {}  # host -> duplicates so far (until take())

    def add(self, host: str, fingerprints: array[int] | bytes) -> None:
        """Record a batch of ``host``'s emitted URLs by fingerprint."""
        if isinstance(fingerprints, bytes):
            fps: array[int] = array("Q")
            fps.frombytes(fingerprints)
        else:
            fps = fingerprints
        repeated = self._seen.add_many(fps)
        if repeated:
            self._counts[host] = self._counts.get(host, 0) + repeated

    def take(self, host: str) -> int:
        """The host's count, once its last batch was added (forgets the host)."""
        return self._counts.pop(host, 0)

    def close(self) -> None:
        """Release the seen-set (and its spill file)."""
        self._seen.close()
