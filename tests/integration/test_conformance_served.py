"""The conformance corpus served over real HTTP and harvested by the pipeline.

Every case whose URL is plain http is served at its own URL: a test resolver maps
its host name (www.example.com, domain.com, ...) to 127.0.0.80, where one server
listens on port 80 and answers by Host header and path, with the case's headers.
No name is ever looked up in real DNS and no packet leaves loopback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from tests.integration.conftest import LoopbackResolver, Sites
from tests.integration.harvesting import collect

DATA = Path(__file__).parent.parent / "data" / "conformance"
CASES: list[dict[str, Any]] = json.loads((DATA / "expected.json").read_text())
ADDRESS = "127.0.0.80"


async def serve_corpus(sites: Sites, robots: dict[str, Any] | None = None) -> LoopbackResolver:
    """Serve every http case at its URL; ``robots`` picks the one robots.txt case to serve
    (several cases share one robots.txt URL)."""
    served = [c for c in CASES if c["url"].startswith("http://") and c["kind"] != "robots"]
    if robots is not None:
        served.append(robots)
    by_url = {(urlsplit(c["url"]).hostname, urlsplit(c["url"]).path): c for c in served}

    async def handle(request: web.Request) -> web.Response:
        case = by_url.get((request.host.split(":")[0], request.path))
        if case is None:
            return web.Response(status=404)
        headers = case.get("headers", {})
        return web.Response(body=(DATA / case["file"]).read_bytes(), headers=headers)

    try:
        await sites.start(ADDRESS, {"/": handle, **_catch_all(handle)}, port=80)
    except PermissionError:  # pragma: no cover - CI and the dev machines run as root
        pytest.skip("binding port 80 on loopback needs root")
    names = {host: ADDRESS for host, _ in by_url}
    return LoopbackResolver(names)


def _catch_all(handler: Any) -> dict[str, Any]:
    # Sites routes by exact path; list every served path so all reach the handler.
    return {urlsplit(c["url"]).path: handler for c in CASES} | {"/robots.txt": handler}


async def test_nested_index_tree_reaches_every_page(sites: Sites) -> None:
    resolver = await serve_corpus(sites)
    (root,) = [c for c in CASES if "reachable_urls" in c]
    records, hosts = await collect([root["url"]], resolver=resolver)
    assert sorted(r["loc"] for r in records) == sorted(root["reachable_urls"])
    report = hosts["www.example.com"]
    failed = [f["url"] for f in report["failures"]]
    assert failed == root["reachable_errors"]
    assert report["failures"][0]["status"] == 404


@pytest.mark.parametrize(
    "case",
    [c for c in CASES if c["kind"] == "robots" and c["url"].startswith("http://")],
    ids=lambda c: c["file"].removeprefix("cases/"),
)
async def test_robots_cases_drive_discovery(sites: Sites, case: dict[str, Any]) -> None:
    """Each robots.txt is served at its URL; discovery must ask for exactly its sitemaps."""
    resolver = await serve_corpus(sites, robots=case)
    origin = case["url"].removesuffix("/robots.txt")
    _, hosts = await collect([origin], resolver=resolver, **{"discovery.cross_host": "any"})
    (report,) = hosts.values()
    # Sitemaps are not in the corpus (404), so each one expected is a failure with its URL.
    asked = [f["url"] for f in report["failures"]]
    if case["children"]:
        assert report["discovery"] == "robots"
        assert asked == case["children"]
    else:
        # No Sitemap: line: the usual locations are probed (www.example.com serves
        # sitemapindex_basic.xml at /sitemap_index.xml, so that probe hits).
        assert report["discovery"] in ("none", f"fallback:{origin}/sitemap_index.xml")
