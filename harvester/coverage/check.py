"""The coverage check of a list of domains: ``harvester coverage``.

In: domains (input lines as for ``run``), the config and ``pages`` (K). Out: the
report, ``{"hosts": [...], "summary": {...}}``.

It is a run with ``discovery.coverage = K`` whose records are not kept: each host's
sitemaps are harvested as ``run`` harvests them, and its check then runs in the same
host worker (``crawl/cover.py``), with the robots.txt and home page discovery read,
under the host's politeness. Each host's line is its figures with ``urls_listed``
(the distinct URLs its sitemaps listed) and ``discovery`` (where they were found);
the summary is the run report's (``crawl.spread.Spread``).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from harvester.crawl.spread import Spread
from harvester.run.pipeline import harvest

if TYPE_CHECKING:
    from aiohttp.abc import AbstractResolver

    from harvester.config import Config

__all__ = ["DEFAULT_PAGES", "coverage"]

DEFAULT_PAGES = 20  # K: pages walked and listed URLs sampled per host


async def coverage(
    domains: list[str],
    cfg: Config,
    pages: int = DEFAULT_PAGES,
    *,
    resolver: AbstractResolver | None = None,
) -> dict[str, Any]:
    """The coverage report of ``domains`` (see the module), hosts in the order they finished."""
    cfg = dataclasses.replace(cfg, discovery=dataclasses.replace(cfg.discovery, coverage=pages))
    reports: list[dict[str, Any]] = []
    async for _ in harvest(domains, cfg, resolver=resolver, on_host=reports.append):
        pass  # the records: the check needs only what each host's worker kept
    spread = Spread()
    hosts = []
    for report in reports:
        figures = report.get("coverage") or {"skipped": _why(report)}
        spread.add(figures)
        line = {"host": report["host"], "urls_listed": report.get("urls", 0)}
        hosts.append({**line, "discovery": report.get("discovery"), **figures})
    return {"hosts": hosts, "summary": spread.summary()}


def _why(report: dict[str, Any]) -> str:
    """Why a host has no figures: its first failure, else its deadline."""
    failures = report.get("failures") or []
    if failures:
        first = failures[0]
        return f"{first['class']}: {first['message']}"
    return "not checked (the host's deadline, max_host_seconds, came first)"
