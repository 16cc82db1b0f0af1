"""What the distributed tests share: a LocalCluster, a small loopback web, a site
served by a child process and the CLI run as a user types it.

Used by ``test_distributed.py``, ``test_distributed_formats.py`` and
``test_object_storage.py``.
"""

from __future__ import annotations

import gzip
import subprocess
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import free_port
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.integration.conftest import Sites

__all__ = ["SERVER", "Web", "cli", "local_cluster", "make_web"]


def local_cluster(*, processes: bool) -> Iterator[Any]:
    """A LocalCluster of two one-thread workers on loopback, and a client of it."""
    import distributed

    # Not ``with Client(...)``: that sets a context variable, and pytest-asyncio tears
    # module fixtures down in another context; the client is passed explicitly anyway.
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=processes,
        dashboard_address="127.0.0.1:0",
        host="127.0.0.1",
        protocol="tcp://",  # (inproc:// looks its address up off loopback: fenced here)
    ) as cluster:
        client = distributed.Client(cluster, set_as_default=False)
        try:
            yield client
        finally:
            client.close()


@dataclass
class Web:
    """A small loopback web: hosts with an index, a gzip child, a shared URL, a dead host."""

    lines: list[str] = field(default_factory=list)
    routes: dict[str, dict[str, Any]] = field(default_factory=dict)  # origin -> its routes
    urls: dict[str, list[str]] = field(default_factory=dict)  # origin -> its /a.xml URLs

    def publish(self, origin: str) -> None:
        """(Re)serve ``origin``'s /a.xml from its URL list."""
        self.routes[origin]["/a.xml"] = urlset(*self.urls[origin])


async def make_web(sites: Sites, hosts: int = 7, first: int = 40) -> Web:
    """``hosts`` sites on 127.0.0.FIRST and up, a dead host and an invalid line."""
    web = Web()
    shared = "http://shared.example/same-page"  # listed by two hosts: a cross-host duplicate
    for i in range(hosts):
        routes: dict[str, Any] = {}
        site = await sites.start(f"127.0.0.{first + i}", routes)
        origin = site.origin
        web.routes[origin] = routes
        routes["/robots.txt"] = robots(site.url("/index.xml"))
        routes["/index.xml"] = index(site.url("/a.xml"), site.url("/b.xml.gz"))
        web.urls[origin] = [site.url(f"/a/{j}") for j in range(12)]
        web.publish(origin)
        extra = [shared] if i < 2 else []
        routes["/b.xml.gz"] = gzip.compress(
            urlset(*[site.url(f"/b/{j}") for j in range(9)], *extra)
        )
        web.lines.append(origin)
    web.lines.append(f"http://127.0.0.{first + hosts}:{free_port('127.0.0.1')}")  # dead
    web.lines.append("not a host at all!")  # invalid input line, counted once
    return web


# A site of 5 URLs at /sitemap.xml on the address argv[1]; prints its origin.
SERVER = """
import sys
from aiohttp import web
urls = "".join(f"<url><loc>http://{sys.argv[1]}:{{port}}/p/{j}</loc></url>" for j in range(5))
async def sitemap(request):
    port = request.transport.get_extra_info("sockname")[1]
    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    return web.Response(text=body.replace("{port}", str(port)), content_type="application/xml")
app = web.Application()
app.router.add_get("/sitemap.xml", sitemap)
import socket
sock = socket.socket()
sock.bind((sys.argv[1], 0))
print(f"http://{sys.argv[1]}:{sock.getsockname()[1]}", flush=True)
web.run_app(app, sock=sock, print=None)
"""


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``harvester ARGS`` in a child process (50 s at most)."""
    return subprocess.run(
        [sys.executable, "-m", "harvester", *args],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
