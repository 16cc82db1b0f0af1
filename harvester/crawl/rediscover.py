"""Rediscovery past the 24 h discovery memory: robots.txt again, the rest kept if unchanged.

In: the state's discovery memory of a host (what ``HostIncremental`` stored: ``source``,
``refs``, ``origin``, ``robots_url``, ``robots_status``, ``robots``: its text,
``robots_etag`` / ``robots_modified``: its validators, ``missing``, ``probed_at``,
``tdmrep``, ``tdmrep_until``) and what this run's robots.txt request found
(``discovery.Discovered``). Out: the conditional-GET headers (``validators``), whether
robots.txt is unchanged (``unchanged``), the remembered discovery kept (``kept``), and
the memory the run leaves (``remember``).

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

from harvester.crawl.frontier import SitemapRef
from harvester.crawl.robots import parse_robots

if TYPE_CHECKING:
    from harvester.crawl.discovery import Discovered

__all__ = ["kept", "remember", "unchanged", "usable", "validators"]

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


def unchanged(found: Discovered, known: dict[str, Any]) -> bool:
    """Is this run's robots.txt answer (``found``) the one ``known`` was discovered from?

    A 304 to the conditional GET, or the same status, final URL and text; never a bot
    wall, a truncated robots.txt or one read as missing despite a fault.
    """
    if found.wall.robots is not None or found.warning is not None or found.robots_truncated:
        return False
    if found.robots_url != known.get("robots_url"):
        return False
    if found.robots_status == 304:
        return known.get("robots_status") == 200
    text = found.robots_text.decode("utf-8", "replace")
    return found.robots_status == known.get("robots_status") and text == known.get("robots", "")


def kept(found: Discovered, known: dict[str, Any], agent: str) -> Discovered:
    """``found`` (robots.txt asked this run, unchanged) with the remembered discovery's
    sitemaps and outcome; the rules from the remembered text after a 304."""
    if found.robots_status == 304:
        text = str(known.get("robots", "")).encode()
        found.robots = parse_robots(text, found.robots_url or "", agent) if text else found.robots
        found.robots_text = text
        found.robots_status = found.wall.status = 200
        found.robots_etag = found.robots_etag or known.get("robots_etag")
        found.robots_modified = found.robots_modified or known.get("robots_modified")
    found.source = known["source"]
    kind = "robots" if found.source == "robots" else "fallback"
    found.refs = [SitemapRef(url, source=kind) for url in known.get("refs", ())]
    found.kept = True
    return found


def remember(
    memory: dict[str, Any],
    known: dict[str, Any] | None,
    found: Discovered,
    now: float,
    tdmrep_until: float | None,
) -> dict[str, Any]:
    """The discovery memory a run leaves, from ``memory`` (``_discovery_memory``'s, this
    run's), ``known`` (the state's before it), ``found`` and the time ``now``.

    Kept (``found.kept``): the probes' time and misses of ``known``. Probed again: now.
    tdmrep.json: this run's answer with the time it stays fresh (``tdmrep_until``, set
    when it was asked), else the remembered answer and time when this run reused it or
    did not get to it.
    """
    known = known or {}
    if found.kept:
        memory["missing"] = known.get("missing", [])
        memory["probed_at"] = known.get("probed_at", now)
    else:
        memory["probed_at"] = now
    memory["robots_etag"] = found.robots_etag
    memory["robots_modified"] = found.robots_modified
    tdm = memory.get("tdmrep")
    if tdmrep_until is not None:
        memory["tdmrep_until"] = tdmrep_until
    elif (tdm is None or tdm.get("recalled")) and "tdmrep" in known:
        memory["tdmrep"] = known["tdmrep"]
        if "tdmrep_until" in known:
            memory["tdmrep_until"] = known["tdmrep_until"]
    return memory
