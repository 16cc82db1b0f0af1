"""Rediscovery past the 24 h discovery memory: robots.txt again, the rest kept if unchanged.

In: the state's discovery memory of a host (what ``HostIncremental`` stored: ``source``,
``refs``, ``origin``, ``robots_url``, ``robots_status``, ``robots``: its text,
``robots_etag`` / ``robots_modified``: its validators, ``missing``, ``probed_at``,
``tdmrep``, ``tdmrep_until``) and what this run's robots.txt request found
(``discovery.Discovered``). Out: whether the memory may be kept at all (``usable``), the
conditional-GET headers (``validators``), the host's rediscovery state (``Rediscovery``:
what to keep, whether it was, tdmrep.json's clock) and the memory the run leaves
(``remember``). Whether robots.txt is unchanged, and the discovery it keeps, are
``discovery.py``'s (``_unchanged``, ``_kept``: it knows the ``Discovered``).

Why (issue 53): robots.txt may be cached for 24 h at most (RFC 9309 §2.4), so a daily
cron asks it on every run; but the sitemaps it lists, and where the fallback probes
found one (or that none answered), follow from robots.txt and the site, and a site
whose robots.txt did not change rarely moved its sitemaps. Asking robots.txt
(conditionally) and keeping the rest saves the probes and home page of every host
without a ``Sitemap:`` line. What bounds it, so that nothing is lost:

* a robots.txt that changed (text, status or where it is finally served from), or a
  bot wall, runs the whole discovery again;
* a probe outcome (a fallback hit, or none) is kept for ``state.max_revisit_interval``
  at most after the probes were made (``probed_at``): a site that adds a
  ``/sitemap.xml`` without touching robots.txt is found within that interval;
* a kept sitemap that is gone (404/410, or a probe hit that is no sitemap any more)
  marks the memory stale: the next run discovers afresh (``HostIncremental.gone``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harvester.state.codec import now

if TYPE_CHECKING:
    from harvester.crawl.settings import MemorySettings
    from harvester.state.memory import HostMemory

__all__ = ["Rediscovery", "usable", "validators"]

_SOURCES = ("robots", "fallback", "none")


def usable(memory: dict[str, Any] | None, discovered_at: float, now: float, cap: float) -> bool:
    """Whether ``memory`` (past ``state.rediscover_after``) may be kept if robots.txt is
    unchanged: a discovery of robots.txt, with its text remembered, and for a probe
    outcome (``fallback`` / ``none``) probes made less than ``cap`` seconds ago."""
    if memory is None or memory.get("source") not in _SOURCES or "robots" not in memory:
        return False
    if memory["source"] == "robots":
        return True
    probed_at = memory.get("probed_at", discovered_at)
    return isinstance(probed_at, (int, float)) and now - probed_at < cap


def validators(known: dict[str, Any] | None) -> dict[str, str] | None:
    """The conditional-GET headers for robots.txt from ``known`` (None: none stored)."""
    if known is None or known.get("robots_status") != 200:
        return None
    headers = {}
    if isinstance(etag := known.get("robots_etag"), str):
        headers["If-None-Match"] = etag
    if isinstance(modified := known.get("robots_modified"), str):
        headers["If-Modified-Since"] = modified
    return headers or None


class Rediscovery:
    """One host's discovery memory past ``state.rediscover_after`` (``HostIncremental``'s)."""

    __slots__ = ("cap", "hits", "kept", "known", "tdmrep_until")

    def __init__(self, cap: float) -> None:
        """``cap``: ``state.max_revisit_interval``, the longest a kept answer goes unasked."""
        self.cap = cap
        self.known: dict[str, Any] | None = None  # to keep if robots.txt is unchanged
        self.kept = False  # ...and it was (``discovery.discover``)
        self.tdmrep_until: float | None = None  # tdmrep.json asked: fresh until (wall clock)
        self.hits: list[str] = []  # probe locations that hit before, carried (304, not due)

    def recall(self, host: HostMemory, t: float, settings: MemorySettings) -> bool:
        """Whether the host's discovery memory is recalled as it is at time ``t``, without
        a request (younger than ``state.rediscover_after``); else ``known`` is set when
        robots.txt, unchanged, may keep it."""
        memory, at = host.discovery, host.discovered_at
        if memory is None or t - at < settings.rediscover_after:
            return memory is not None
        if usable(memory, at, t, self.cap):
            self.known = memory
        return False

    def remember(
        self, memory: dict[str, Any] | None, known: dict[str, Any] | None, found: Any
    ) -> dict[str, Any] | None:
        """The discovery memory the run leaves (``remember``; None: keep the old one).
        ``found``: the run's ``discovery.Discovered``."""
        if memory is None:
            return None
        validators = (found.robots_etag, found.robots_modified)
        return remember(memory, known, validators, now(), self.tdmrep_until, kept=found.kept)


def remember(
    memory: dict[str, Any],
    known: dict[str, Any] | None,
    validators: tuple[str | None, str | None],
    t: float,
    tdmrep_until: float | None,
    *,
    kept: bool,
) -> dict[str, Any]:
    """The discovery memory a run leaves, from ``memory`` (``_discovery_memory``'s, this
    run's), ``known`` (the state's before it), robots.txt's ``validators`` (ETag,
    Last-Modified) and the time ``t``.

    ``kept`` (robots.txt unchanged): the probes' time and misses of ``known``; else ``t``.
    tdmrep.json: this run's answer with the time it stays fresh (``tdmrep_until``, set
    when it was asked), else the remembered answer and time when this run reused it or
    did not get to it.
    """
    known = known or {}
    if kept:  # what robots.txt's sameness keeps (a gone sitemap made the memory stale)
        memory["source"], memory["refs"] = known["source"], known.get("refs", [])
        memory["missing"] = known.get("missing", [])
        memory["probed_at"] = known.get("probed_at", t)
    else:
        memory["probed_at"] = t
    memory["robots_etag"], memory["robots_modified"] = validators
    tdm = memory.get("tdmrep")
    if tdmrep_until is not None:
        memory["tdmrep_until"] = tdmrep_until
    elif (tdm is None or tdm.get("recalled")) and "tdmrep" in known:
        memory["tdmrep"] = known["tdmrep"]
        if "tdmrep_until" in known:
            memory["tdmrep_until"] = known["tdmrep_until"]
    return memory
