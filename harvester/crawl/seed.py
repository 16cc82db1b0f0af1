"""A seed: one host to harvest, and where to start looking (``Seed``).

In: nothing; ``harvester.run.seeds`` makes seeds of the input's lines. Out: the value
the host worker starts from (its discovery reads ``sitemap``, ``robots`` and
``explicit_scheme``), sent as it is through a worker's seed pipe. In crawl/, the lowest
layer that needs it: a host knows its seed, not the input it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Seed"]


@dataclass(frozen=True, slots=True)
class Seed:
    """One unit of work for the host workers: a host, and where to start looking.

    ``host`` is the per-host key, ``scheduler.host_key(origin)`` (lower-case
    ASCII host, ``:port`` when not the scheme's default); ``origin`` is
    ``scheme://host[:port]``. ``sitemap`` is set when the line was a sitemap
    URL (discovery is skipped), ``robots`` when it was a robots.txt URL.
    ``line`` is the 1-based line number in its source (None for CLI arguments).
    ``explicit_scheme`` is False for a bare host, whose discovery may fall back
    from https to http.
    """

    host: str
    origin: str
    sitemap: str | None
    robots: str | None
    line: int | None
    explicit_scheme: bool
