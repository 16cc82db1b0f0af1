"""A host's ``/.well-known/tdmrep.json`` (W3C TDM Reservation Protocol), at most one request.

In: the host's fetcher and slot, the origin its robots.txt was read from, and the state
file's discovery memory of the host (``HostIncremental``; None without a state file).
Out: the host report's ``allows["tdmrep"]``: ``allow.parse_tdmrep``'s rules with the
``status`` and the validators (``etag``, ``last_modified``) of the answer; ``{"url",
"status"}`` for a 4xx (none published); ``{"url", "error"}`` when it could not be read.
The state file keeps it with the discovery memory (``HostIncremental._discovery_memory``
stores the report's block), like robots.txt's text. ``EarlyRecords``: the host's
records read before the ask, held and given ``tdm_reserved`` after it.

Cheap and harmless by design (the host's sitemaps are what the run is for):

* one attempt, no retries: a 404 is "no TDMRep" at once, and a timeout or a 5xx costs
  one wait at most (a read timeout: it is never the host's first contact, see
  ``HostTdmRep``);
* under the host's slot, after robots.txt: its politeness (rate, Crawl-delay, a
  Retry-After) applies as to any request;
* never a failure of the host: nothing here touches the report's failures, the wall or
  the discovery outcome; an error is only this block's ``error``;
* a host recalled from the state file (its robots.txt not asked again either) reuses the
  remembered answer without a request; so does a host discovered again while the answer
  is fresh by its HTTP caching (issue 53: ``max-age``, ``Expires``, else 10 % of its
  ``Last-Modified`` age, else 7 days; at most ``state.max_revisit_interval``;
  ``state.freshness``); past that it is asked with the remembered validators, and a 304
  keeps the remembered rules.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

from harvester.crawl.allow import TDMREP_PATH, parse_tdmrep
from harvester.crawl.scheduler import host_key
from harvester.crawl.tdmheaders import into_report
from harvester.crawl.verdicts import line_loc
from harvester.errors import FetchError
from harvester.state.codec import now
from harvester.state.freshness import lifetime

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from contextvars import Token

    from harvester.config.policy import PolicyConfig
    from harvester.crawl.batch import RecordBatch, UrlBatch
    from harvester.crawl.discovery import Discovered
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.incremental import HostIncremental
    from harvester.crawl.report import HostReport
    from harvester.crawl.robotsrules import PathPatterns
    from harvester.crawl.scheduler import HostSlot, Scheduler
    from harvester.crawl.verdicts import HostVerdicts

__all__ = ["MAX_BYTES", "EarlyRecords", "HostTdmRep", "fetch", "remembered", "with_tdm"]

MAX_BYTES = 65_536  # a tdmrep.json is a few rules; more is not one


class HostTdmRep:
    """One host run's TDMRep and signal headers: ``ask`` after discovery and after each
    sitemap (it asks once), ``close`` at the host's end.

    tdmrep.json is never the host's first contact: until the host has answered something
    (a recalled discovery or a seed sitemap asks robots.txt nothing), a dead host would
    cost a first-contact timeout twice; it is then asked after the host's first answer.
    Not asked of a host that refused us (robots.txt a 401/403/451 or a challenge page, a
    ``blocked`` failure): ``{"url", "skipped": why}``, as the same answer would come.
    Asked under the slot of the host it is on (``www.`` when robots.txt was served
    there: that host's Crawl-delay paces it, as it paces the sitemaps).
    """

    __slots__ = (
        "_fetcher",
        "_inc",
        "_pending",
        "_policy",
        "_report",
        "_scheduler",
        "_watch",
        "emit",
    )

    def __init__(
        self,
        policy: PolicyConfig,
        report: HostReport,
        fetcher: Fetcher,
        scheduler: Scheduler,
        inc: HostIncremental | None,
        emit: Callable[[RecordBatch], Awaitable[None]],
    ) -> None:
        """``policy``: ``tdmrep`` (ask at all) and ``signals`` (report the headers);
        ``emit``: where the host's record batches go (``self.emit`` wraps it)."""
        self._policy = policy
        self._report = report
        self._fetcher = fetcher
        self._scheduler = scheduler
        self._inc = inc
        self._pending = policy.tdmrep
        # The host run's watch of its responses' headers (tdmheaders), from the first ask.
        self._watch: Token[Any] | None = None
        # ``emit`` wrapped: the host's records read before the ask wait for it.
        self.emit = EarlyRecords(emit)

    async def release(self, batch: UrlBatch) -> None:
        """The records held so far let go (``EarlyRecords.release``): after the ask, and
        at the host's end whatever happened (its records are never lost)."""
        await self.emit.release(batch.verdicts, batch)

    async def ask(self, slot: HostSlot, found: Discovered, batch: UrlBatch) -> None:
        """The host's TDMRep into ``report.allows["tdmrep"]``, if not done yet and the
        host has answered or its discovery was recalled (see the class doc); ``found``:
        the host's discovery (tdmrep.json is asked where robots.txt was read from).
        Once asked, the records held until then go on (``early``; ``batch``: the
        host's URL batch)."""
        await self._ask(slot, found)
        if not self._pending and self.emit.holding:
            await self.release(batch)

    async def _ask(self, slot: HostSlot, found: Discovered) -> None:
        if self._watch is None:
            self._watch = self._fetcher.signals.watch()
        if not found.origin:
            self._pending = False  # (nowhere to ask: never)
        if not self._pending:
            return
        url, inc = found.origin + TDMREP_PATH, self._inc
        memory = remembered(inc, url)  # the state file's answer, if any
        recalled = memory is not None and inc is not None and _reusable(inc)
        if not recalled and not slot.answered:
            self.emit.holding = True  # the records read until it is asked wait (EarlyRecords)
            return
        self._pending = False
        if memory is not None and recalled:
            answer = {**memory, "recalled": True}  # robots.txt was not asked: nor is this
        elif found.wall.robots is not None:
            answer = {"url": url, "skipped": f"robots.txt answered {found.wall.robots}"}
        elif self._report.failures_by_class.get("blocked"):
            answer = {"url": url, "skipped": "the host answered with a bot wall"}
        else:
            answer, fresh_for = await self._fetch(slot, found.origin, memory)
            if inc is not None:  # issue 53: not asked again before then (_reusable)
                inc.rediscovery.tdmrep_until = now() + fresh_for
        self._report.allows = {**(self._report.allows or {}), "tdmrep": answer}

    async def _fetch(
        self, slot: HostSlot, origin: str, memory: Mapping[str, Any] | None
    ) -> tuple[dict[str, Any], float]:
        """``fetch`` under the slot of ``origin``'s host (``slot`` when it is its own)."""
        host = host_key(origin)
        cap = self._inc.rediscovery.cap if self._inc is not None else 0.0
        if host == slot.host:
            return await fetch(self._fetcher, origin, slot, memory, cap)
        try:
            return await fetch(self._fetcher, origin, self._scheduler.acquire(host), memory, cap)
        finally:
            self._scheduler.release(host)

    def close(self) -> None:
        """At the host's end: the signal headers of its responses into ``report.allows``
        (``tdmheaders``; with ``policy.signals``), and the run's watch ended."""
        heard = self._fetcher.signals.take(self._report.host, self._watch)
        self._watch = None
        if self._policy.signals:
            into_report(self._report, heard)


class EarlyRecords:
    """The host's record batches on their way to ``emit``, held while its tdmrep.json
    is still to be asked (``holding``: the host has not answered yet), then labelled and
    let go.

    Why: a seed sitemap (or a recalled discovery) is read before the host has answered
    anything, and tdmrep.json is never a first contact, so that sitemap's records are
    taken before the rules are known. Held until ``release`` (after the ask), they get
    ``tdm_reserved`` like the records after them (``HostVerdicts.late_tdm``). Only
    the records read before the ask are held: at most the host's first sitemap.
    """

    __slots__ = ("_emit", "_held", "holding")

    def __init__(self, emit: Callable[[RecordBatch], Awaitable[None]]) -> None:
        self._emit = emit
        self._held: list[RecordBatch] = []
        self.holding = False  # (set by ``HostTdmRep`` when its ask has to wait)

    async def __call__(self, out: RecordBatch) -> None:
        """Emit ``out``, or hold it while ``holding``."""
        if self.holding:
            self._held.append(out)
        else:
            await self._emit(out)

    async def release(self, verdicts: HostVerdicts | None, batch: UrlBatch) -> None:
        """Stop holding; emit what was held, in order, with ``tdm_reserved`` when the
        host's rules came after it (``verdicts``: the host's, None: none; ``batch``:
        its URL batch, whose label the verdicts decide again)."""
        self.holding = False
        tdm = verdicts.late_tdm(batch) if verdicts is not None else None
        held, self._held = self._held, []
        for out in held:
            await self._emit(out if tdm is None else with_tdm(out, tdm))


def with_tdm(out: RecordBatch, tdm: PathPatterns) -> RecordBatch:
    """``out`` (records taken before the host's TDMRep rules were known) with each
    record's ``tdm_reserved``, after the fields it has (``HostVerdicts.late_tdm``)."""
    if out.data is None:
        for rec in out.records:
            rec["tdm_reserved"] = tdm.value(rec["loc"])
        return out
    lines = bytes(out.data).split(b"}\n")
    lines.pop()  # (after the last line's end)
    labelled = [
        b'%s,"tdm_reserved":%s}\n' % (line, json.dumps(tdm.value(line_loc(line))).encode())
        for line in lines
    ]
    return dataclasses.replace(out, data=b"".join(labelled))


def remembered(inc: HostIncremental | None, url: str) -> dict[str, Any] | None:
    """The tdmrep.json answer the state file remembers for ``url`` (None: none usable:
    no state file, another URL, or an error, which is asked again)."""
    discovery = inc.memory.discovery if inc is not None else None
    memory = (discovery or {}).get("tdmrep")
    if not isinstance(memory, dict) or memory.get("url") != url or "error" in memory:
        return None
    return memory


async def fetch(
    fetcher: Fetcher,
    origin: str,
    slot: HostSlot,
    memory: Mapping[str, Any] | None = None,
    cap: float = 0.0,
) -> tuple[dict[str, Any], float]:
    """Ask for ``origin``'s tdmrep.json once (conditionally when ``memory``, an earlier
    answer, has validators). Never raises a ``FetchError``. Out: the answer, and the
    seconds it stays fresh by its HTTP caching (``state.freshness``), at most ``cap``."""
    url = origin + TDMREP_PATH
    headers = _validators(memory)
    t = now()
    try:
        async with fetcher.stream(
            url, slot, max_bytes=MAX_BYTES, headers=headers, retries=0
        ) as body:
            status, answer = body.status, body.headers
            parts = [] if status == 304 else [chunk async for chunk in body.chunks()]
    except FetchError as exc:
        status_of = getattr(exc, "status", None)
        if status_of is not None and 400 <= status_of < 500:
            return {"url": url, "status": status_of}, lifetime({}, status_of, t, cap)
        return {"url": url, "error": exc.message}, 0.0
    known = memory.get("last_modified") if memory is not None else None
    fresh_for = lifetime(answer, status, t, cap, last_modified=known)
    if status == 304 and memory is not None:
        return {**memory, "status": 304}, fresh_for
    out = parse_tdmrep(b"".join(parts), url)
    out["status"] = status
    for key, name in (("etag", "ETag"), ("last_modified", "Last-Modified")):
        if (value := answer.get(name)) is not None:
            out[key] = value
    return out, fresh_for


def _reusable(inc: HostIncremental) -> bool:
    """Whether the remembered answer stands without a request: the discovery was recalled
    (robots.txt not asked either), or the answer is still fresh (issue 53: its own clock,
    ``tdmrep_until`` in the discovery memory)."""
    if inc.remembered and not inc.rediscovery.kept:
        return True
    until = (inc.memory.discovery or {}).get("tdmrep_until")
    return isinstance(until, (int, float)) and now() < until


def _validators(memory: Mapping[str, Any] | None) -> dict[str, str]:
    """The conditional-GET headers of an earlier answer with rules (none for a 4xx)."""
    if memory is None or "rules" not in memory:
        return {}
    headers = {}
    if isinstance(etag := memory.get("etag"), str):
        headers["If-None-Match"] = etag
    if isinstance(since := memory.get("last_modified"), str):
        headers["If-Modified-Since"] = since
    return headers
