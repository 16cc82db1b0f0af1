"""Discovery stage: a seed → the host's first sitemaps, its robots rules, and the child policy.

In: a ``Seed`` (domain, origin, robots.txt URL or sitemap URL). Out: a
``Discovered`` with the sitemap refs to start the frontier with (robots.txt
``Sitemap:`` lines, else the first fallback location with the rest queued
behind it), the parsed robots.txt and the origin after redirects.

robots.txt outcomes follow RFC 9309: 4xx means "no robots.txt" (everything
allowed, probe the usual locations); 5xx or an unreachable server means
"assume complete disallow", so the host stops with that failure reported.
A bare domain whose https origin refuses the connection or fails the TLS
handshake is tried once over http; one that lets the connection or its first
response time out is not (a dead host would cost a second timeout, DESIGN.md
"The real web").

``child_allowed`` is the cross-host policy for index children and robots
sitemaps (DESIGN.md: report violations instead of dropping them silently);
``home_hosts`` says which hosts are the harvested host's own for it (the host,
and where its robots.txt was finally served from).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harvester.crawl import rediscover
from harvester.crawl.frontier import SitemapRef
from harvester.crawl.probes import probe_urls
from harvester.crawl.robots import RobotsTxt, parse_robots
from harvester.crawl.scheduler import host_key
from harvester.crawl.wall import CHALLENGE_MAX, Wall
from harvester.errors import (
    Blocked,
    ConnectError,
    HTTPStatusError,
    MalformedResponse,
    TruncatedBody,
)

if TYPE_CHECKING:
    from harvester.crawl.fetch import Fetcher
    from harvester.crawl.homepage import Fetched
    from harvester.crawl.scheduler import HostSlot
    from harvester.crawl.seed import Seed
    from harvester.crawl.settings import DiscoverySettings

__all__ = [
    "Discovered",
    "child_allowed",
    "discover",
    "home_hosts",
    "recall",
    "registrable_domain",
]

_EXTRACT: Any = None  # the tldextract instance, built on first use (see _extractor)


def _extractor() -> Any:
    """The public-suffix matcher, built on first cross-host question.

    Lazily, because its table is large (tens of MB per process) and most hosts never list a
    child on another host. The bundled snapshot only (``suffix_list_urls=()``):
    tldextract would otherwise download the list, and harvester never makes
    requests it was not asked to make.
    """
    global _EXTRACT
    if _EXTRACT is None:
        import tldextract

        _EXTRACT = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)
    return _EXTRACT


@dataclass(slots=True)
class Discovered:
    """What discovery found for one host."""

    refs: list[SitemapRef]
    robots: RobotsTxt = field(default_factory=RobotsTxt)
    origin: str = ""
    source: str = "none"  # robots | fallback | seed | none
    robots_status: int | None = None  # HTTP status of robots.txt (None: not fetched)
    robots_truncated: bool = False  # robots.txt was longer than fetch.max_robots_bytes
    robots_url: str | None = None  # where robots.txt was finally read from (after redirects)
    robots_text: bytes = b""  # its first max_robots_bytes (kept for the state's memory)
    redirects: tuple[str, ...] = ()  # URLs that redirected on the way to it
    warning: str | None = None  # robots.txt was read as missing despite a fault (why)
    home: Fetched | None = None  # the home page, when fetched for the probes (probes.py)
    wall: Wall = field(default_factory=Wall)  # robots.txt and the probes as a bot wall
    robots_etag: str | None = None  # robots.txt's validators, for the next conditional GET
    robots_modified: str | None = None
    # Issue 53: robots.txt was asked again and found unchanged (304, or the same text,
    # status and final URL): the rest is the state's memory of the last discovery.
    kept: bool = False


def registrable_domain(host: str) -> str:
    """The registrable domain of a host (``cdn.example.co.uk`` → ``example.co.uk``).

    IP addresses and single-label names are their own registrable domain.
    """
    hostname = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    result = _extractor()(hostname)
    domain: str = result.top_domain_under_public_suffix
    return domain or hostname


def child_allowed(
    child_url: str, host: str, homes: frozenset[str], policy: str, declared: frozenset[str]
) -> bool:
    """May a sitemap listed while harvesting ``host`` be followed?

    In: the sitemap's URL; ``host``, the harvested host (``host_key`` form);
    ``homes``, every host that counts as its own: ``host`` itself and where its
    robots.txt was finally served from after redirects (``Discovered.origin``;
    an apex that sends robots.txt to ``www.`` has told us where it lives);
    the ``discovery.cross_host`` policy; the sitemaps its robots.txt declared.
    Out: whether to fetch it.

    ``same-host``: only ``host`` itself (strict: not even where robots.txt was
    served). ``same-site`` (default): also ``homes`` and the hosts on the same
    registrable domain as any of them, and any sitemap the host's own robots.txt
    declared (cross-submission). ``any``: everything.
    """
    child_host = host_key(child_url)
    if child_host == host or policy == "any":
        return True
    if policy == "same-host":
        return False
    if child_host in homes or child_url in declared:
        return True
    # A TLD the bundled public-suffix list lacks (.test, an intranet name) leaves each
    # name its own registrable domain: only ``homes`` then makes www the host's own.
    site = registrable_domain(child_host)
    return any(registrable_domain(home) == site for home in (host, *homes))


def home_hosts(host: str, origin: str) -> frozenset[str]:
    """The hosts that count as ``host``'s own for ``child_allowed``: ``host`` and the host
    of ``origin``, where its robots.txt was finally served from (empty: not known)."""
    return frozenset({host, host_key(origin)} if origin else {host})


async def discover(
    seed: Seed,
    fetcher: Fetcher,
    slot: HostSlot,
    settings: DiscoverySettings,
    known: dict[str, Any] | None = None,
) -> Discovered:
    """Find the host's first sitemaps. Raises the classified ``FetchError`` that ended it.

    ``known``: the state's discovery memory of the host, past ``state.rediscover_after``
    (``HostIncremental.rediscovery.known``): robots.txt is asked conditionally, and when
    it is unchanged the remembered sitemaps and probe outcome are kept (``_kept``,
    rediscover.py) instead of probing again.
    """
    if seed.sitemap is not None:
        return Discovered(
            [SitemapRef(seed.sitemap, source="seed")], origin=seed.origin, source="seed"
        )
    robots_url = seed.robots or f"{seed.origin}/robots.txt"
    ask = partial(_fetch_robots, fetcher=fetcher, slot=slot, settings=settings, known=known)
    try:
        found = await ask(robots_url)
    except ConnectError as exc:
        # Refused, reset or a failed TLS handshake; never a timeout (FetchTimeout):
        # a host that does not answer on 443 rarely answers on 80. Nor a body cut
        # short (TruncatedBody): the host did answer over https.
        explicit = seed.explicit_scheme or not seed.origin.startswith("https://")
        if explicit or isinstance(exc, TruncatedBody):
            raise
        # A bare domain: many small sites still serve only plain http.
        http_origin = "http://" + seed.origin.removeprefix("https://")
        found = await ask(f"{http_origin}/robots.txt")
    if known is not None and _unchanged(found, known):
        found = _kept(found, known, settings.user_agent)
    robots = found.robots
    settings.pace(slot, robots)
    if found.kept:
        return found
    if robots.sitemaps:
        found.refs = [SitemapRef(url, source="robots") for url in robots.sitemaps]
        found.source = "robots"
        return found
    # Issue 49: the locations platforms use, within a budget (crawl/probes.py).
    probes, found.home = await probe_urls(found.origin, robots, fetcher, slot, settings)
    if probes:
        found.refs = [SitemapRef(probes[0], source="fallback", fallbacks=tuple(probes[1:]))]
        found.source = "fallback"
    return found


def recall(
    memory: dict[str, Any], seed: Seed, settings: DiscoverySettings, slot: HostSlot
) -> Discovered:
    """Discovery from the state's memory of an earlier run: no request at all.

    ``memory`` is what ``HostIncremental`` stored (``source``, ``refs``, ``origin``,
    ``robots_url``, ``robots``: the robots.txt text, ``robots_status``). The
    robots rules and Crawl-delay come from the remembered robots.txt, so the
    host is paced and its Disallow rules apply as if it had been fetched.
    """
    text: str = memory.get("robots") or ""
    robots_url = memory.get("robots_url") or f"{seed.origin}/robots.txt"
    robots = parse_robots(text.encode(), robots_url, settings.user_agent) if text else RobotsTxt()
    settings.pace(slot, robots)
    source = memory.get("source", "none")
    kind = "robots" if source == "robots" else "fallback"
    return Discovered(
        [SitemapRef(url, source=kind) for url in memory.get("refs", ())],
        robots,
        memory.get("origin") or seed.origin,
        source=source,
        robots_status=memory.get("robots_status"),
        robots_url=robots_url,
    )


async def _fetch_robots(
    url: str,
    *,
    fetcher: Fetcher,
    slot: HostSlot,
    settings: DiscoverySettings,
    known: dict[str, Any] | None = None,
) -> Discovered:
    """Fetch and parse robots.txt: the rules, the origin it was finally served from, its status.

    Refs and source are left for ``discover`` to fill in. With ``known`` (a discovery
    memory), conditionally: a 304 comes back as ``robots_status`` 304, nothing parsed.
    """
    cap = settings.max_robots_bytes
    headers = rediscover.validators(known)
    try:
        async with fetcher.stream(url, slot, headers=headers) as body:
            parts: list[bytes] = []
            size = 0
            if body.status != 304:
                async for chunk in body.chunks():
                    parts.append(chunk)
                    size += len(chunk)
                    if size > cap:
                        break  # like Google: read the first max_robots_bytes, ignore the rest
            final, status, redirects = body.url, body.status, body.redirects
            etag, modified = body.headers.get("ETag"), body.headers.get("Last-Modified")
    except HTTPStatusError as exc:
        if 400 <= exc.status < 500 or isinstance(exc, Blocked):
            # No robots.txt: everything allowed (RFC 9309); a 401/403/451 or a challenge
            # may be a bot wall, told apart by the probes (wall.py).
            found = Discovered([], origin=_origin(url), robots_status=exc.status, robots_url=url)
            found.wall.robots_answer(
                exc.status, why=exc.message if isinstance(exc, Blocked) else None
            )
            return found
        raise
    except MalformedResponse as exc:
        # Not valid HTTP (a Content-Length shorter than the body spills into the next
        # message, say): no robots.txt to read, as a 4xx. The sitemaps may be served
        # well; the host report says why robots.txt was not read.
        why = f"robots.txt read as missing: {exc.message}"
        return Discovered([], origin=_origin(url), robots_url=url, warning=why)
    text = b"".join(parts)[:cap]
    wall = Wall()
    wall.robots_answer(status, text[:CHALLENGE_MAX])
    robots = parse_robots(text, final, settings.user_agent) if wall.robots is None else RobotsTxt()
    return Discovered(
        [],
        robots,
        _origin(final),
        wall=wall,
        robots_status=status,
        robots_truncated=size > cap,
        robots_url=final,
        robots_text=text,
        redirects=redirects,
        robots_etag=etag,
        robots_modified=modified,
    )


def _unchanged(found: Discovered, known: dict[str, Any]) -> bool:
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


def _kept(found: Discovered, known: dict[str, Any], agent: str) -> Discovered:
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


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
