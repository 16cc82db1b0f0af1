"""What a host says in its response headers about AI use, TDM and indexing (issue 48).

In: every response the fetcher hands over or refuses (``Fetcher`` calls ``seen`` with
the host's slot, the response's final URL and its headers): the home page when the
probes fetched it, robots.txt, the sitemaps, tdmrep.json. Out: per host, the
``tdm-reservation`` and ``tdm-policy`` headers (W3C TDMRep, HTTP header form) and
``X-Robots-Tag`` (``noindex``, ``noai``, ``noimageai``...), each distinct value once
with the first URL that carried it and how many responses did: ``take`` gives them
for the host report's ``allows`` block (``"headers"``) and forgets them.

Kept for the host run whose task fetched the response (a context variable the worker
sets: a www host's or another host's sitemap counts for the host harvested), or, outside
a host run (its discovery, the lookahead's ahead of the worker), by the host of the
``HostSlot`` it went through, which the worker takes. Only once a header was seen:
most hosts send none, and what a host sent is forgotten when its worker takes it.
Harvester reports these; it decides nothing from them.

Example::

    signals = HeaderSignals()
    signals.seen(slot, "https://e.com/sitemap.xml", {"X-Robots-Tag": "noindex"})
    signals.take(slot.host)
    # [{"header": "x-robots-tag", "value": "noindex", "url": "https://e.com/sitemap.xml",
    #   "responses": 1, "directives": ["noindex"]}]
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping
    from contextvars import Token

    from harvester.crawl.report import HostReport
    from harvester.crawl.scheduler import HostSlot

__all__ = ["HEADERS", "HeaderSignals", "into_report", "robots_tag"]

# The headers kept, lower-case (aiohttp's header mapping is case-insensitive).
HEADERS = ("tdm-reservation", "tdm-policy", "x-robots-tag")
_VALUES = 16  # distinct (header, value) pairs kept per host: a few is normal, more is noise
_VALUE_CHARS = 512  # a header value longer than this is cut (it comes from the web)
# X-Robots-Tag directives that carry a value after a colon ("max-snippet: 20"): the
# word before the colon is then no user agent.
_VALUED = frozenset({"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"})


# The host run in this task's context (``HeaderSignals.watch``): its responses are kept
# for it whatever slot they went through (a www host's, another host's sitemap).
_HOST: ContextVar[dict[tuple[str, str], dict[str, Any]] | None] = ContextVar(
    "harvester_tdm_headers", default=None
)


class HeaderSignals:
    """The signal headers seen per host run, until its worker ``take``s them.

    A host worker ``watch``es from its start: what its task fetches is kept for it. A
    response outside any host run (the lookahead's discovery, ahead of the worker) is
    kept by its slot's host, and the worker's ``take`` gathers that too.
    """

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}  # by slot host

    def seen(self, slot: HostSlot, url: object, headers: Mapping[str, str]) -> None:
        """A response through ``slot`` at ``url`` (its final URL: a ``str`` or a
        ``yarl.URL``, made a string only when kept) came with ``headers``.

        Cheap for the usual response: three lookups, nothing kept.
        """
        for name in HEADERS:
            value = headers.get(name)
            if value is not None:
                kept = _HOST.get()
                if kept is None:
                    kept = self._seen.setdefault(slot.host, {})
                _keep(kept, name, value[:_VALUE_CHARS].strip(), url)

    def watch(self) -> Token[dict[tuple[str, str], dict[str, Any]] | None]:
        """Keep what this task (and the tasks it starts) fetches for its host run; the
        token goes back to ``take``."""
        return _HOST.set({})

    def take(
        self, host: str, token: Token[dict[tuple[str, str], dict[str, Any]] | None] | None = None
    ) -> list[dict[str, Any]]:
        """The headers seen for ``host`` (a slot's host key): through its slot outside a
        host run, then in the run ``token`` watched (ended here); in the order first seen,
        each pair once (its responses added up). Forgotten here."""
        kept = self._seen.pop(host, {})
        if token is not None:
            for key, entry in (_HOST.get() or {}).items():
                if key in kept:
                    kept[key]["responses"] += entry["responses"]
                elif len(kept) < _VALUES:
                    kept[key] = entry
            _HOST.reset(token)
        return list(kept.values())

    def __len__(self) -> int:
        """Hosts with headers kept outside a host run and not yet taken."""
        return len(self._seen)


def _keep(kept: dict[tuple[str, str], dict[str, Any]], name: str, value: str, url: object) -> None:
    """Count one more response with ``name: value``; keep the pair if it is new and there
    is room."""
    entry = kept.get((name, value))
    if entry is not None:
        entry["responses"] += 1
        return
    if len(kept) >= _VALUES:
        return
    entry = {"header": name, "value": value, "url": str(url), "responses": 1}
    if name == "x-robots-tag":
        entry.update(robots_tag(value))
    kept[(name, value)] = entry


def robots_tag(value: str) -> dict[str, Any]:
    """An ``X-Robots-Tag`` value's directives (lower-case), and the user agent it names,
    if it starts with one (``googlebot: noindex``).

    >>> robots_tag("noindex, nofollow")
    {'directives': ['noindex', 'nofollow']}
    >>> robots_tag("otherbot: noai, noimageai")
    {'directives': ['noai', 'noimageai'], 'agent': 'otherbot'}
    >>> robots_tag("max-snippet: 20, noarchive")
    {'directives': ['max-snippet: 20', 'noarchive']}
    """
    out: dict[str, Any] = {}
    head, colon, rest = value.partition(":")
    head = head.strip().lower()
    if colon and head and head not in _VALUED and " " not in head and "," not in head:
        out["agent"] = head
        value = rest
    words = [word.strip().lower() for word in value.split(",")]
    return {"directives": [word for word in words if word], **out}


def into_report(report: HostReport, headers: list[dict[str, Any]]) -> None:
    """``headers`` (``HeaderSignals.take``'s) into ``report.allows["headers"]``; nothing
    when the host sent none (the block stays as it was)."""
    if headers:
        report.allows = {**(report.allows or {}), "headers": headers}
