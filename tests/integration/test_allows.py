"""What the site allows (issue 48), on a real loopback server: the records' robots.txt
verdicts, --respect-robots, and the host report's AI crawler groups, Content-Signal
lines and TDMRep file, exactly as the site says them."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from tests.integration.conftest import Reply
from tests.integration.harvesting import collect, harvest_state, in_thread
from tests.integration.webs import ChangingSite, urlset

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites

ROBOTS = """\
User-agent: *
Content-Signal: search=yes, ai-train=no
Disallow: /private/
Allow: /private/open$
Disallow: /*.pdf$

User-agent: GPTBot
User-agent: CCBot
Disallow: /

User-agent: ClaudeBot
Disallow: /drafts/

User-agent: PerplexityBot
Allow: /

User-agent: harvester-test
Disallow: /shop/
"""
PATHS = ["/a", "/private/x", "/private/open", "/private/open2", "/doc.pdf", "/doc.pdf?x", "/shop/1"]
TDMREP = [{"location": "/news/*", "tdm-reservation": 1, "tdm-policy": "https://e.org/p.json"}]


def robots_txt(s: Site) -> bytes:
    return (ROBOTS + f"Sitemap: {s.url('/sitemap.xml')}\n").encode()


async def harvested(sites: Sites, **cfg: Any) -> tuple[Site, dict[str, str | None], dict[str, Any]]:
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    routes.update(
        {
            "/robots.txt": robots_txt(s),
            "/sitemap.xml": urlset(*(s.url(p) for p in PATHS)),
            "/.well-known/tdmrep.json": Reply(
                json.dumps(TDMREP).encode(), headers={"tdm-reservation": "1"}
            ),
        }
    )
    records, hosts = await collect([s.origin], **cfg)
    verdicts = {r["loc"].removeprefix(s.origin): r.get("robots") for r in records}
    return s, verdicts, hosts[f"127.0.0.2:{s.port}"]


async def test_verdicts_for_the_star_group(sites: Sites) -> None:
    _, verdicts, report = await harvested(sites, **{"policy.verdicts": True})
    assert verdicts == {
        "/a": "allowed",
        "/private/x": "disallowed",
        "/private/open": "allowed",  # Allow /private/open$ is longer
        "/private/open2": "disallowed",  # ... and anchored
        "/doc.pdf": "disallowed",
        "/doc.pdf?x": "allowed",  # /*.pdf$ ends at the path's end
        "/shop/1": "allowed",
    }
    assert report["robots_disallowed_urls"] == 0
    assert report["robots_unknown"] is None


async def test_verdicts_for_a_named_agent(sites: Sites) -> None:
    cfg = {"policy.verdicts": True, "policy.user_agent": "harvester-test/2.0"}
    _, verdicts, _ = await harvested(sites, **cfg)
    # Its own group only: the * group's rules do not apply to it.
    assert {p for p, v in verdicts.items() if v == "disallowed"} == {"/shop/1"}


async def test_respect_robots_drops_exactly_the_disallowed(sites: Sites) -> None:
    over = {"policy.respect_robots": True}
    _, verdicts, report = await harvested(sites, **over)
    assert sorted(verdicts) == ["/a", "/doc.pdf?x", "/private/open", "/shop/1"]
    assert set(verdicts.values()) == {"allowed"}  # (policy.verdicts: on by default)
    assert report["robots_disallowed_urls"] == 3
    assert report["urls"] == 4


async def test_by_default_each_record_has_its_verdict_and_none_is_dropped(sites: Sites) -> None:
    s, verdicts, _ = await harvested(sites)
    assert len(verdicts) == len(PATHS)
    assert set(verdicts.values()) == {"allowed", "disallowed"}  # policy.verdicts: on
    _, off, _ = await harvested(sites, **{"policy.verdicts": False})
    assert set(off.values()) == {None}  # --no-verdicts: no field
    assert s.hits("/.well-known/tdmrep.json") == 1  # policy.tdmrep is on by default


async def test_host_report_says_what_the_site_said(sites: Sites) -> None:
    s, _, report = await harvested(sites, **{"policy.tdmrep": True})
    allows = report["allows"]
    assert allows["robots_url"] == s.url("/robots.txt")
    crawlers = allows["ai_crawlers"]
    assert crawlers["GPTBot"] == {"disallowed": "entirely", "group": "gptbot", "lines": [9]}
    assert crawlers["CCBot"] == {"disallowed": "entirely", "group": "ccbot", "lines": [9]}
    assert crawlers["ClaudeBot"] == {"disallowed": "partly", "group": "claudebot", "lines": [12]}
    assert crawlers["PerplexityBot"] == {"disallowed": "not", "group": "perplexitybot", "lines": []}
    # Tokens without a group of their own get the * group: partly (its Disallow lines).
    assert crawlers["Bytespider"] == {"disallowed": "partly", "group": "*", "lines": [3, 5]}
    assert allows["content_signals"] == [
        {
            "agents": ["*"],
            "line": 2,
            "signals": {"search": "yes", "ai-train": "no"},
            "value": "search=yes, ai-train=no",
        }
    ]
    assert allows["tdmrep"] == {
        "url": s.url("/.well-known/tdmrep.json"),
        "rules": TDMREP,
        "status": 200,
    }
    # Its response's header, as any response's (crawl/tdmheaders.py).
    assert allows["headers"] == [
        {
            "header": "tdm-reservation",
            "value": "1",
            "url": s.url("/.well-known/tdmrep.json"),
            "responses": 1,
        }
    ]
    assert s.hits("/.well-known/tdmrep.json") == 1


async def test_missing_robots_txt_allows_everything(sites: Sites) -> None:
    routes: dict[str, Any] = {}
    s = await sites.start("127.0.0.2", routes)
    routes["/sitemap.xml"] = urlset(s.url("/a"), s.url("/private/b"))  # robots.txt: 404
    records, hosts = await collect([s.origin], **{"policy.verdicts": True})
    assert [r["robots"] for r in records] == ["allowed", "allowed"]  # RFC 9309 §2.3.1.3
    report = hosts[f"127.0.0.2:{s.port}"]
    assert report["robots_status"] == 404
    # No robots.txt: no robots.txt signals; tdmrep.json (on by default) was not there either.
    tdmrep = {"url": s.url("/.well-known/tdmrep.json"), "status": 404}
    assert report["allows"] == {"tdmrep": tdmrep}


async def test_a_run_from_the_state_file_keeps_the_verdicts(sites: Sites, tmp_path: Path) -> None:
    # Run two recalls the host's discovery (robots.txt included) from the state file:
    # no second robots.txt request, the same verdicts from the remembered text.
    changing = ChangingSite("etag")
    routes: dict[str, Any] = {p: changing.handle for p in ("/index.xml", "/a.xml", "/b.xml")}
    changing.site = await sites.start("127.0.0.2", routes)
    index = changing.url("/index.xml")
    routes["/robots.txt"] = f"User-agent: *\nDisallow: /b/\nSitemap: {index}\n".encode()
    verdicts = []
    for name in ("one", "two"):
        _run, records = await in_thread(
            harvest_state, changing, tmp_path, name, **{"policy.verdicts": True}
        )
        verdicts.append(Counter((r["loc"].split("/")[3], r["robots"]) for r in records))
    assert verdicts[0] == verdicts[1] == Counter({("a", "allowed"): 20, ("b", "disallowed"): 10})
    assert changing.site.hits("/robots.txt") == 1
