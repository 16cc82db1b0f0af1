"""fetch.headers and per-host headers and cookies, as the servers see them (issue 32).

Two hosts: A has its own header and cookies, B none. A's sitemap redirects to B: the
request to B must carry the global headers and not A's header or cookies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.integration.harvesting import collect
from tests.integration.webs import robots, urlset

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tests.integration.conftest import Sites


def recording(
    seen: list[tuple[str, dict[str, str]]], body: bytes | None = None, location: str | None = None
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        seen.append((request.path, dict(request.headers)))
        if location is not None:
            raise web.HTTPFound(location)
        return web.Response(body=body or b"", content_type="application/xml")

    return handle


async def test_headers_and_cookies_reach_their_hosts_only(sites: Sites) -> None:
    seen_a: list[tuple[str, dict[str, str]]] = []
    seen_b: list[tuple[str, dict[str, str]]] = []
    routes_a: dict[str, Any] = {}
    routes_b: dict[str, Any] = {}
    a = await sites.start("127.0.0.2", routes_a)
    b = await sites.start("127.0.0.3", routes_b)
    routes_a.update(
        {
            "/robots.txt": recording(seen_a, robots(a.url("/sitemap.xml"), a.url("/moved.xml"))),
            "/sitemap.xml": recording(seen_a, urlset(a.url("/p/1"))),
            "/moved.xml": recording(seen_a, location=b.url("/sitemap.xml")),
        }
    )
    routes_b["/sitemap.xml"] = recording(seen_b, urlset(b.url("/p/2")))
    records, _ = await collect(
        [a.origin],
        **{
            "fetch.headers": {"X-Team": "data", "Accept-Language": "de"},
            "fetch.user_agent": "teambot/1.0",
            "discovery.cross_host": "any",
            "politeness.hosts": {
                f"127.0.0.2:{a.port}": {
                    "headers": {"Authorization": "Bearer a-only", "X-A-Key": "k"},
                    "cookies": {"consent": "yes", "session": "abc"},
                }
            },
        },
    )
    assert sorted(r["loc"] for r in records) == [a.url("/p/1"), b.url("/p/2")]
    assert [path for path, _ in seen_a] == ["/robots.txt", "/sitemap.xml", "/moved.xml"]
    for _, headers in seen_a:
        assert headers["X-Team"] == "data"
        assert headers["Accept-Language"] == "de"
        assert headers["User-Agent"] == "teambot/1.0"  # the flag stays
        assert headers["Authorization"] == "Bearer a-only"
        assert headers["X-A-Key"] == "k"
        assert headers["Cookie"] == "consent=yes; session=abc"
    [(path, headers)] = seen_b  # reached through A's redirect
    assert path == "/sitemap.xml"
    assert headers["X-Team"] == "data"
    assert headers["User-Agent"] == "teambot/1.0"
    assert "Authorization" not in headers  # A's own headers stay with A
    assert "X-A-Key" not in headers  # (aiohttp itself drops only Authorization)
    assert "Cookie" not in headers


async def test_a_host_key_without_port_applies_to_every_port(sites: Sites) -> None:
    seen: list[tuple[str, dict[str, str]]] = []
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.2", routes)
    routes["/robots.txt"] = recording(seen, robots(site.url("/s.xml")))
    routes["/s.xml"] = recording(seen, urlset(site.url("/p")))
    await collect([site.origin], **{"politeness.hosts": {"127.0.0.2": {"cookies": {"k": "v"}}}})
    assert [h.get("Cookie") for _, h in seen] == ["k=v", "k=v"]


async def test_a_redirect_to_the_host_gets_its_headers_on_that_hop(sites: Sites) -> None:
    # The middleware runs per hop: B (nothing of its own) redirects to A, and the
    # request to A carries A's cookie although the first request went to B.
    seen_a: list[tuple[str, dict[str, str]]] = []
    seen_b: list[tuple[str, dict[str, str]]] = []
    routes_a: dict[str, Any] = {}
    routes_b: dict[str, Any] = {}
    a = await sites.start("127.0.0.2", routes_a)
    b = await sites.start("127.0.0.3", routes_b)
    routes_b["/s.xml"] = recording(seen_b, location=a.url("/s.xml"))
    routes_a["/s.xml"] = recording(seen_a, urlset(a.url("/p")))
    records, _ = await collect(
        [b.url("/s.xml")],
        **{
            "discovery.cross_host": "any",
            "politeness.hosts": {f"127.0.0.2:{a.port}": {"cookies": {"a": "1"}}},
        },
    )
    assert [r["loc"] for r in records] == [a.url("/p")]
    assert [h.get("Cookie") for _, h in seen_b] == [None]
    assert [h.get("Cookie") for _, h in seen_a] == ["a=1"]
