"""Loopback sites for the coverage tests (issue 49), whose truth is known.

``known_site``: 200 linked pages, 70 % of them listed, with dead, redirecting, noindex
and canonical-elsewhere listed URLs in known shares; ``wp_only_site``: a WordPress home
page and a sitemap only at /wp-sitemap.xml; ``page``: an HTML reply linking ``hrefs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.integration.conftest import Reply
from tests.integration.webs import urlset

if TYPE_CHECKING:
    from tests.integration.conftest import Site, Sites

HTML = {"Content-Type": "text/html"}


def page(*hrefs: str, head: str = "", headers: dict[str, str] | None = None) -> Reply:
    links = "".join(f'<a href="{h}">.</a>' for h in hrefs)
    body = f"<html><head>{head}</head><body>{links}</body></html>".encode()
    return Reply(body, headers={**HTML, **(headers or {})})


async def known_site(sites: Sites, host: str) -> Site:
    """200 pages found by links (the home page and 199 it links), 140 of them listed (70 %);
    200 listed URLs: those 140, 20 dead (10 %), 10 redirecting (5 %; half to a listed
    page), 10 noindex (5 %; half by meta, half by X-Robots-Tag), 20 live unlinked pages
    (10 of them with a canonical elsewhere: 5 %). /private/ is linked but disallowed."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    linked = [f"/p/{i}" for i in range(199)]
    routes["/"] = page(*linked, "/private/x")
    for path in linked:
        routes[path] = page("/")
    listed = ["/", *linked[:139]]
    listed += [f"/d/{i}" for i in range(20)]  # no route: 404
    for i in range(10):
        target = f"/p/{i}" if i < 5 else f"/u/{i}"  # listed / unlisted
        routes[f"/r/{i}"] = Reply(b"", status=301, headers={"Location": target})
        routes[f"/u/{i}"] = page()
        meta = '<meta name="robots" content="noindex">' if i < 5 else ""
        routes[f"/n/{i}"] = page(head=meta, headers={} if i < 5 else {"X-Robots-Tag": "noindex"})
    listed += [f"/r/{i}" for i in range(10)] + [f"/n/{i}" for i in range(10)]
    for i in range(20):
        head = f'<link rel="canonical" href="/p/{i}">' if i < 10 else ""
        routes[f"/o/{i}"] = page(head=head)
        listed.append(f"/o/{i}")
    routes["/private/x"] = page()
    routes["/robots.txt"] = (
        f"Sitemap: {u('/sitemap.xml')}\nUser-agent: *\nDisallow: /private/\n".encode()
    )
    routes["/sitemap.xml"] = urlset(*(u(p) for p in listed))
    return site


async def wp_only_site(sites: Sites, host: str) -> Site:
    """No Sitemap: line; a WordPress home page (its generator meta) and /wp-sitemap.xml
    listing 3 of the 4 pages the home page links."""
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    routes["/robots.txt"] = b"User-agent: *\nDisallow: /private/\n"
    generator = '<meta name="generator" content="WordPress 6.5">'
    routes["/"] = page("/a", "/b", "/c", "/d", "/private/p", head=generator)
    for path in ("/a", "/b", "/c", "/d"):
        routes[path] = page("/")
    routes["/wp-sitemap.xml"] = urlset(u("/"), u("/a"), u("/b"), u("/c"), u("/private/q"))
    return site
