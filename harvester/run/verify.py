"""Verify stage: check a host's sitemap lastmods against the pages themselves (issue 7).

In: the state file (opened for writing: the audit is its one writer while it
runs), the config, ``K`` pages per host and optionally which hosts. Out: one
``HostAudit`` per host (for ``auditreport``), and in the state each sampled
page (``samples``) and the host's trust level with its evidence
(``hosts.trust``, ``hosts.trust_evidence``).

Per host:

1. **Sample**: ``K`` listed URLs stratified over the host's sitemaps (round
   robin over sitemaps, each ordered by URL fingerprint). The order is stable,
   so the next audit samples the same URLs again, which is what makes content
   changes comparable across runs.
2. **Fetch** each page as harvesting fetches sitemaps: the same fetcher (SSRF
   guard, timeouts, retries), the same per-host politeness, robots.txt rules
   from the host's remembered robots.txt (the discovery parser), and only the
   first ``audit.max_page_bytes`` of the body.
3. **Compare**: the page's own dates (``pagedates``) against the sitemap
   lastmod (``agreement``: agree / disagree / no signal), and, against the URL's
   previous sample, whether the main text changed (``fingerprint``: simhash
   distance) and whether the sitemap lastmod moved.
4. **Score** (``audit.score_trust``): recall and precision of lastmod moves
   over the last audits' pairs, page-date agreement, and the host's last
   distribution verdict → ``trusted`` / ``untrusted`` / ``unknown``.

The next run reads the trust level (``memory.HostMemory.trust``): lastmod then
filters URLs (``--since``, ``--emit changed|delta``) only where it is trusted.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from harvester.audit.content import content_changed
from harvester.audit.pageread import read_page
from harvester.audit.trust import SignalAgreement, score_trust
from harvester.crawl.fetch import Fetcher
from harvester.crawl.robots import parse_robots
from harvester.crawl.scheduler import Scheduler, host_key
from harvester.errors import FetchError
from harvester.run.admission import host_limit
from harvester.state.codec import now
from harvester.state.rows import signed
from harvester.state.samples import (
    KEEP,
    audited_hosts,
    fresh_samples,
    history,
    host_row,
    picks,
    save_samples,
    save_trust,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from aiohttp.abc import AbstractResolver

    from harvester.audit.report import HostAudit
    from harvester.config import Config
    from harvester.crawl.robots import RobotsTxt
    from harvester.state.store import StateStore

__all__ = ["verify_hosts"]

logger = logging.getLogger(__name__)


async def verify_hosts(
    store: StateStore,
    cfg: Config,
    sample: int,
    hosts: Sequence[str] | None = None,
    *,
    resolver: AbstractResolver | None = None,
) -> list[HostAudit]:
    """Audit ``hosts`` (default: every host of the state with a verdict); return the report."""
    names = audited_hosts(store) if hosts is None else list(hosts)
    scheduler = Scheduler(cfg.politeness)
    limit = asyncio.Semaphore(host_limit(cfg))  # (0: auto, as the harvest's upper bound)
    results: dict[str, _HostSample] = {}

    async with Fetcher(cfg.fetch, resolver=resolver, hosts=cfg.politeness) as fetcher:

        async def one(name: str) -> None:
            async with limit:
                results[name] = await _sample_host(store, cfg, fetcher, scheduler, name, sample)

        async with asyncio.TaskGroup() as tg:
            for name in names:
                tg.create_task(one(name))
    # The writes happen here, in one thread, after the fetching: one writer.
    return [results[name].save(store) for name in names if name in results]


class _HostSample:
    """One host's sampled pages, before they are scored and stored."""

    def __init__(self, name: str, host_id: int | None, audit: dict[str, Any] | None) -> None:
        self.name = name
        self.host_id = host_id
        self.audit = audit or {}
        self.rows: list[tuple[Any, ...]] = []  # samples rows to insert
        self.agree = self.disagree = self.no_signal = 0
        self.robots_disallowed = 0
        self.other_host = 0
        self.failed = 0
        self.from_run = 0  # pages a run's coverage check fetched since the last audit

    def count(self, agreement: str | None) -> None:
        """Count one page read (``agreement``'s value; None: its fetch failed)."""
        if agreement == "agree":
            self.agree += 1
        elif agreement == "disagree":
            self.disagree += 1
        elif agreement is None:
            self.failed += 1
        else:
            self.no_signal += 1

    def save(self, store: StateStore) -> HostAudit:
        verdict = self.audit.get("verdict")
        entry: HostAudit = {
            "host": self.name,
            "verdict": {k: v for k, v in self.audit.items() if k != "histogram"}
            or {"verdict": None, "reason": "never harvested with distribution checks"},
            "histogram": [{"bucket": b, "count": n} for b, n in self.audit.get("histogram", ())],
            "sample": {
                "agree": self.agree,
                "disagree": self.disagree,
                "no_signal": self.no_signal,
                "robots_disallowed": self.robots_disallowed,
                "other_host": self.other_host,
                "failed": self.failed,
                "from_run": self.from_run,
            },
            "score": None,
        }
        if self.host_id is None or verdict is None:
            return entry
        store.begin()
        # The last KEEP samples per URL are kept (the score needs no more).
        save_samples(store, self.host_id, self.rows, KEEP)
        agreement = SignalAgreement(self.agree, self.disagree, self.no_signal)
        score = score_trust(_pairs(store, self.host_id), agreement, verdict=verdict)
        evidence = score.as_dict()
        save_trust(store, self.host_id, str(score.level), evidence)
        store.commit(None)
        entry["score"] = evidence
        return entry


async def _sample_host(
    store: StateStore, cfg: Config, fetcher: Fetcher, scheduler: Scheduler, name: str, k: int
) -> _HostSample:
    row = host_row(store, name)
    if row is None:
        return _HostSample(name, None, None)
    host_id, discovery, audit = row
    result = _HostSample(name, host_id, audit)
    robots = _robots(discovery or {}, cfg)
    # Held for the whole host, so a robots.txt Crawl-delay paces every sampled page.
    slot = scheduler.acquire(name)
    try:
        if robots is not None and robots.crawl_delay and cfg.politeness.respect_crawl_delay:
            slot.slow_down(min(robots.crawl_delay, cfg.politeness.max_crawl_delay))
        await _sample_pages(store, result, cfg, fetcher, scheduler, robots, name, k)
    finally:
        scheduler.release(name)
    return result


async def _sample_pages(
    store: StateStore,
    result: _HostSample,
    cfg: Config,
    fetcher: Fetcher,
    scheduler: Scheduler,
    robots: RobotsTxt | None,
    name: str,
    k: int,
) -> None:
    host_id = result.host_id
    assert host_id is not None  # (_sample_host returns early for a host never recorded)
    # Pages a run's coverage check read since the last audit (crawl/cover.py), stored as
    # samples: counted as they are, not fetched again, while the lastmod is the same.
    fresh = fresh_samples(store, host_id)
    for fp, url, lastmod in picks(store, host_id, k):
        if host_key(url) != name:
            # The protocol keeps a sitemap's URLs on its host; pages elsewhere are not
            # this host's evidence (and a sitemap must not steer our requests elsewhere).
            result.other_host += 1
            continue
        if robots is not None and not robots.can_fetch(url):
            result.robots_disallowed += 1
            continue
        if fp in fresh and fresh[fp][0] == lastmod:
            result.count(fresh[fp][1])
            result.from_run += 1
            continue
        await _sample_page(result, cfg, fetcher, scheduler, fp, url, lastmod)


async def _sample_page(
    result: _HostSample,
    cfg: Config,
    fetcher: Fetcher,
    scheduler: Scheduler,
    fp: int,
    url: str,
    lastmod: int | None,
) -> None:
    cap = cfg.audit.max_page_bytes
    key = host_key(url)
    slot = scheduler.acquire(key)
    parts: list[bytes] = []
    status: int | None = None
    headers: dict[str, str] = {}
    try:
        async with fetcher.stream(url, slot) as body:
            status = body.status
            headers = dict(body.headers)
            size = 0
            async for chunk in body.chunks():
                parts.append(chunk)
                size += len(chunk)
                if size >= cap:
                    break  # the dates are in the head; the text sample is enough
    except FetchError as exc:
        result.failed += 1
        result.rows.append(
            (result.host_id, fp, url, now(), lastmod, None, None, None, status, exc.kind)
        )
        return
    finally:
        scheduler.release(key)
    reading = read_page(b"".join(parts), headers, lastmod, cap=cap)
    result.count(str(reading.agreement))
    result.rows.append(
        (
            result.host_id,
            fp,
            url,
            reading.at,
            lastmod,
            None if reading.fingerprint is None else signed(reading.fingerprint),
            reading.page_modified,
            str(reading.agreement),
            status,
            None,
        )
    )


def _pairs(store: StateStore, host_id: int) -> list[tuple[bool, bool]]:
    """(lastmod moved, content changed) for each URL between consecutive samples of it."""
    pairs: list[tuple[bool, bool]] = []
    previous: dict[int, tuple[int | None, int | None]] = {}
    for fp, lastmod, fingerprint in history(store, host_id):
        before = previous.get(fp)
        previous[fp] = (lastmod, fingerprint)
        if before is None:
            continue
        changed = content_changed(_unsigned(before[1]), _unsigned(fingerprint))
        if changed is None:
            continue  # no text on one side: nothing to compare
        pairs.append((before[0] != lastmod, changed))
    return pairs


def _unsigned(value: int | None) -> int | None:
    return None if value is None else value & 0xFFFF_FFFF_FFFF_FFFF


def _robots(discovery: dict[str, Any], cfg: Config) -> RobotsTxt | None:
    text = discovery.get("robots")
    if not text:
        return None
    url = discovery.get("robots_url") or ""
    return parse_robots(text.encode(), url, cfg.fetch.user_agent)


def run_audit(
    cfg: Config,
    state_path: str,
    sample: int,
    hosts: Sequence[str] | None = None,
    *,
    run_id: int | None = None,
    json_path: str | None = None,
    html_path: str | None = None,
    resolver: AbstractResolver | None = None,
) -> list[HostAudit]:
    """``harvester audit`` and ``run --verify-lastmod``: verify, store, write the reports.

    ``hosts`` defaults to every host of the state with a distribution verdict, or
    with ``run_id`` to the hosts that run finished. Takes the state file's lock
    (``StateLocked`` when a run holds it). Returns the per-host audits.
    """
    from pathlib import Path

    from harvester.audit.report import render_html, render_json
    from harvester.run.runtime import event_loop_runner
    from harvester.state.store import StateStore

    with StateStore(state_path) as store:
        if hosts is None and run_id is not None:
            hosts = audited_hosts(store, run_id)
        runner = event_loop_runner(cfg)  # uvloop when installed and enabled, as runs do
        audits: list[HostAudit] = runner(verify_hosts(store, cfg, sample, hosts, resolver=resolver))
    if json_path:
        Path(json_path).write_bytes(render_json(audits))
    if html_path:
        Path(html_path).write_text(
            render_html(audits, generated_at=datetime.now(UTC)), encoding="utf-8"
        )
    return audits
