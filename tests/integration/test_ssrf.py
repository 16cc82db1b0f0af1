"""The SSRF guard end to end, under issue 4's test rule: every address involved is loopback.

The allowlist holds only the allowed site's address (127.0.0.61/32) with
``allow_private = false``. Names resolve, through a test resolver, to loopback
addresses OUTSIDE the allowlist, where a real server listens and logs every
request: a working guard leaves that log empty; a broken guard fails the test
with a hit on loopback, never with a packet anywhere else (and the session's
network fence, tests/conftest.py, would refuse that anyway).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from harvester.config import FetchConfig, HostPolicy
from harvester.crawl.fetch import Fetcher
from harvester.crawl.scheduler import HostSlot
from harvester.errors import ForbiddenAddress
from tests.conftest import REFUSED_CONNECTIONS
from tests.integration.conftest import LoopbackResolver, Reply
from tests.integration.harvesting import collect
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from tests.integration.conftest import Site, Sites

ALLOWED = "127.0.0.61"  # the only address on the allowlist
EVIL = "127.0.0.62"  # loopback, outside the allowlist: must never see a request
OTHER = "127.0.0.63"  # loopback, for the no-allowlist case
PROXY = "127.0.0.64"  # an operator-configured proxy (trusted, not on the allowlist)

GUARDED: dict[str, Any] = {
    "fetch.allow_private": False,
    "fetch.allow": [f"{ALLOWED}/32"],
    "fetch.retries": 2,  # a refusal must not be retried even when retries are allowed
}


class ScriptedResolver(AbstractResolver):
    """Answers each name with its scripted address lists in turn (the last one repeats).

    ``{"rebind.test": [["127.0.0.61"], ["127.0.0.62"]]}`` answers the first
    query with the allowed address and every later one with the evil one.
    """

    def __init__(self, script: Mapping[str, list[list[str]]]) -> None:
        self.script = {name: list(answers) for name, answers in script.items()}
        self.queries: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.queries.append(host)
        answers = self.script.get(host)
        if not answers:
            raise OSError(socket.EAI_NONAME, f"test resolver: unknown host {host}")
        addresses = answers.pop(0) if len(answers) > 1 else answers[0]
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


@pytest.fixture(autouse=True)
def _nothing_left_this_machine() -> Iterator[None]:
    """Belt and braces: the session fence saw no attempt to reach a non-loopback address."""
    before = len(REFUSED_CONNECTIONS)
    yield
    assert REFUSED_CONNECTIONS[before:] == []


async def evil_site(sites: Sites, host: str = EVIL, port: int = 0) -> Site:
    """A server that would serve a perfectly good sitemap: only its log tells."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes, port=port)
    routes.update(
        {
            "/robots.txt": robots(site.url("/sitemap.xml")),
            "/sitemap.xml": urlset(site.url("/secret")),
            "/child.xml": urlset(site.url("/secret")),
            "/x": urlset(site.url("/secret")),
        }
    )
    return site


def failures(report: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["class"], f["url"]) for f in report["failures"]]


def guarded_fetcher(resolver: AbstractResolver | None = None, **cfg: Any) -> Fetcher:
    settings: dict[str, Any] = {"allow_private": False, "allow": (f"{ALLOWED}/32",)}
    settings.update(cfg)
    return Fetcher(FetchConfig(**settings), resolver=resolver)


def slot(host: str) -> HostSlot:
    return HostSlot(host, HostPolicy(concurrency=4, rate=1000.0, burst=100))


async def read(fetcher: Fetcher, url: str) -> bytes:
    async with fetcher.stream(url, slot("t")) as body:
        return b"".join([chunk async for chunk in body.chunks()])


# -- through the pipeline ----------------------------------------------------------------


async def test_index_child_on_a_name_resolving_outside_the_allowlist_is_refused(
    sites: Sites,
) -> None:
    evil = await evil_site(sites)
    routes: dict[str, Any] = {}
    good = await sites.start(ALLOWED, routes)
    origin = f"http://good.test:{good.port}"
    child = f"http://evil.test:{evil.port}/child.xml"
    routes.update(
        {
            "/robots.txt": robots(f"{origin}/index.xml"),
            "/index.xml": index(f"{origin}/a.xml", child),
            "/a.xml": urlset(f"{origin}/page"),
        }
    )
    resolver = LoopbackResolver({"good.test": ALLOWED, "evil.test": EVIL})
    # cross_host "any": the discovery policy would skip the child; the guard must stop it.
    records, hosts = await collect(
        [origin], resolver=resolver, **GUARDED, **{"discovery.cross_host": "any"}
    )
    assert [r["loc"] for r in records] == [f"{origin}/page"]
    report = hosts[f"good.test:{good.port}"]
    assert failures(report) == [("forbidden_address", child)]
    assert report["failures_by_class"] == {"forbidden_address": 1}
    (failure,) = report["failures"]
    assert f"refused to connect to {EVIL} (resolved from evil.test): loopback" in failure["message"]
    assert "evil.test" in resolver.queries  # refused after resolution, at connect time
    assert evil.log == []
    tdmrep = "/.well-known/tdmrep.json"  # policy.tdmrep, on by default: asked once
    assert [h.path for h in good.log] == ["/robots.txt", tdmrep, "/index.xml", "/a.xml"]


async def test_redirects_outside_the_allowlist_are_refused(sites: Sites) -> None:
    evil = await evil_site(sites)
    routes: dict[str, Any] = {}
    good = await sites.start(ALLOWED, routes)
    to_literal, to_name, to_file = (good.url(p) for p in ("/r1.xml", "/r2.xml", "/r3.xml"))
    routes.update(
        {
            "/robots.txt": robots(to_literal, to_name, to_file, good.url("/ok.xml")),
            "/r1.xml": Reply(status=302, headers={"Location": f"http://{EVIL}:{evil.port}/x"}),
            "/r2.xml": Reply(status=301, headers={"Location": f"http://evil.test:{evil.port}/x"}),
            "/r3.xml": Reply(status=302, headers={"Location": "file:///etc/passwd"}),
            "/ok.xml": Reply(status=302, headers={"Location": good.url("/final.xml")}),
            "/final.xml": urlset(good.url("/page")),
        }
    )
    resolver = LoopbackResolver({"evil.test": EVIL})
    records, hosts = await collect([good.origin], resolver=resolver, **GUARDED)
    assert [r["loc"] for r in records] == [good.url("/page")]  # an allowed redirect still works
    report = hosts[good.origin.removeprefix("http://")]
    assert sorted(failures(report)) == [
        ("forbidden_address", to_literal),
        ("forbidden_address", to_name),
        ("forbidden_address", to_file),
    ]
    assert evil.log == []
    assert good.hits("/r1.xml") == good.hits("/r2.xml") == good.hits("/r3.xml") == 1  # no retry


async def test_seed_ip_literal_outside_the_allowlist_is_refused(sites: Sites) -> None:
    evil = await evil_site(sites)
    origin = f"http://{EVIL}:{evil.port}"
    sitemap = f"http://{EVIL}:{evil.port}/sitemap.xml"
    records, hosts = await collect([origin], **GUARDED)
    assert records == []
    (report,) = hosts.values()
    assert report["discovery"] == "failed"
    assert failures(report) == [("forbidden_address", f"{origin}/robots.txt")]
    assert "loopback" in report["failures"][0]["message"]
    records, hosts = await collect([sitemap], **GUARDED)  # a sitemap URL: discovery skipped
    assert records == []
    assert [failures(r) for r in hosts.values()] == [[("forbidden_address", sitemap)]]
    assert evil.log == []


async def test_no_allowlist_refuses_plain_loopback(sites: Sites) -> None:
    site = await evil_site(sites, OTHER)
    resolver = LoopbackResolver({"site.test": OTHER})
    name_origin = f"http://site.test:{site.port}"
    records, hosts = await collect(
        [site.origin, name_origin],
        resolver=resolver,
        **{"fetch.allow_private": False, "fetch.allow": ()},
    )
    assert records == []
    assert sorted(failures(r)[0][0] for r in hosts.values()) == ["forbidden_address"] * 2
    assert site.log == []


async def test_allowlisted_host_name_passes_and_other_names_for_the_address_do_not(
    sites: Sites,
) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start(EVIL, routes)
    routes["/sitemap.xml"] = urlset(f"http://intranet.test:{site.port}/page")
    resolver = LoopbackResolver({"intranet.test": EVIL, "alias.test": EVIL})
    named = f"http://intranet.test:{site.port}/sitemap.xml"
    alias = f"http://alias.test:{site.port}/sitemap.xml"
    settings = {"fetch.allow_private": False, "fetch.allow": ["INTRANET.test"]}
    records, hosts = await collect([named, alias], resolver=resolver, **settings)
    assert [r["loc"] for r in records] == [f"http://intranet.test:{site.port}/page"]
    assert failures(hosts[f"alias.test:{site.port}"]) == [("forbidden_address", alias)]
    assert site.hits("/sitemap.xml") == 1


# -- the fetcher directly ----------------------------------------------------------------


async def test_dns_rebinding_is_refused_on_the_second_connect(sites: Sites) -> None:
    good = await sites.start(
        ALLOWED, {"/a.xml": Reply(b"allowed", headers={"Connection": "close"})}
    )
    evil = await evil_site(sites, EVIL, port=good.port)  # same port: only the address differs
    resolver = ScriptedResolver({"rebind.test": [[ALLOWED], [EVIL]]})
    url = f"http://rebind.test:{good.port}/a.xml"
    # dns_cache_ttl 0: every connect resolves again, the worst case for rebinding.
    async with guarded_fetcher(resolver, dns_cache_ttl=0) as fetcher:
        assert await read(fetcher, url) == b"allowed"
        with pytest.raises(ForbiddenAddress) as info:
            await read(fetcher, url)
    assert info.value.url == url
    assert f"{EVIL} (resolved from rebind.test): loopback" in info.value.message
    assert resolver.queries == ["rebind.test", "rebind.test"]  # a second resolution happened
    assert good.hits("/a.xml") == 1
    assert evil.log == []


async def test_only_allowed_answers_of_a_name_are_dialed(sites: Sites) -> None:
    good = await sites.start(ALLOWED, {"/a.xml": b"allowed"})
    evil = await evil_site(sites, EVIL, port=good.port)
    # The forbidden answer first: aiohttp would dial it first if it were kept.
    resolver = ScriptedResolver({"mixed.test": [[EVIL, ALLOWED]]})
    async with guarded_fetcher(resolver) as fetcher:
        for _ in range(3):  # aiohttp rotates cached answers between connects
            assert await read(fetcher, f"http://mixed.test:{good.port}/a.xml") == b"allowed"
    assert evil.log == []


@pytest.mark.parametrize("host", [f"{EVIL}.", f"[::ffff:{EVIL}]"])
async def test_hosts_dialed_without_a_lookup_are_judged_as_addresses(
    sites: Sites, host: str
) -> None:
    # aiohttp never hands these to the resolver: a trailing-dot IPv4 and an IPv4-mapped
    # IPv6 literal. Judged by their text before any connection, both are refused.
    evil = await evil_site(sites)
    resolver = ScriptedResolver({})  # any lookup would fail with another error
    url = f"http://{host}:{evil.port}/x"
    async with guarded_fetcher(resolver) as fetcher:
        with pytest.raises(ForbiddenAddress) as info:
            await read(fetcher, url)
    assert info.value.url == url
    assert resolver.queries == []
    assert evil.log == []


async def test_a_name_is_judged_once_per_connection_not_per_request(sites: Sites) -> None:
    # The guard's cost follows connections: three requests on one kept-alive connection
    # ask (and judge) the name once, even with the resolver's cache off.
    good = await sites.start(ALLOWED, {"/a.xml": b"allowed"})
    resolver = ScriptedResolver({"keep.test": [[ALLOWED]]})
    async with guarded_fetcher(resolver, dns_cache_ttl=0) as fetcher:
        for _ in range(3):
            assert await read(fetcher, f"http://keep.test:{good.port}/a.xml") == b"allowed"
    assert resolver.queries == ["keep.test"]
    assert good.hits("/a.xml") == 3


async def test_refusal_is_not_retried_and_costs_no_request(sites: Sites) -> None:
    evil = await evil_site(sites)
    url = f"http://{EVIL}:{evil.port}/x"
    async with guarded_fetcher(retries=3) as fetcher:
        with pytest.raises(ForbiddenAddress) as info:
            await read(fetcher, url)
    assert info.value.url == url
    assert info.value.kind == "forbidden_address"
    assert evil.log == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://127.0.0.61/x", "gopher://127.0.0.61:70/", "/relative"]
)
async def test_only_http_and_https_schemes(url: str) -> None:
    async with guarded_fetcher() as fetcher:
        with pytest.raises(ForbiddenAddress, match="is not http or https"):
            await read(fetcher, url)


async def test_through_a_proxy_ip_literal_targets_are_still_checked(sites: Sites) -> None:
    evil = await evil_site(sites)
    seen: list[str] = []

    async def forward(request: web.Request) -> web.StreamResponse:
        seen.append(str(request.url))  # a proxy gets the absolute URL; answer for the target
        return web.Response(body=b"via proxy")

    proxy = await sites.start(PROXY, {"/x": forward})
    async with guarded_fetcher(proxy=proxy.origin) as fetcher:
        with pytest.raises(ForbiddenAddress, match=f"{EVIL}: loopback"):
            await read(fetcher, f"http://{EVIL}:{evil.port}/x")
        # A name is the proxy's to resolve; the proxy itself (127.0.0.64) is trusted config.
        assert await read(fetcher, f"http://evil.test:{evil.port}/x") == b"via proxy"
    assert proxy.hits("/x") == 1
    assert evil.log == []
