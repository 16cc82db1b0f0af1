"""Types of the compiled half of the lastmod distribution (harvester/audit/_cdistribution.pyx)."""

from datetime import datetime

from harvester.audit.distribution import LastmodDistribution

def count_lastmods(
    dist: LastmodDistribution, lastmods: list[datetime | None], raws: list[str | None]
) -> None:
    """``LastmodDistribution.count_entries``, the usual entries in C."""
