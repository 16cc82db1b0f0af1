"""`harvester tree` as a user runs it: a subprocess against a real site on loopback.

The site: robots.txt → an index → a nested index with two gzip children (one a
.gz file, one Content-Encoding: gzip), a plain child, a 404 child and a child
that is not XML; the tree must show each one's kind, counts, gzip, newest
lastmod and failure, in text and in JSON.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from typing import TYPE_CHECKING, Any, cast

import dnslib  # type: ignore[import-untyped]

from tests.integration.conftest import Reply
from tests.integration.harvesting import CONFIG, collect
from tests.integration.webs import index, robots, urlset

if TYPE_CHECKING:
    from pathlib import Path

    from tests.integration.conftest import Site, Sites


async def tree_cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "harvester",
        "tree",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"},  # a pipe: whole lines, no width
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def tree_site(sites: Sites, host: str) -> Site:
    routes: dict[str, Any] = {}
    site = await sites.start(host, routes)
    u = site.url
    routes.update(
        {
            "/robots.txt": robots(u("/index.xml")),
            "/index.xml": index(u("/news/index.xml.gz"), u("/plain.xml"), u("/gone.xml")),
            "/news/index.xml.gz": gzip.compress(index(u("/news/a.xml.gz"), u("/news/b.xml"))),
            "/news/a.xml.gz": Reply(
                gzip.compress(urlset(u("/a/1"), u("/a/2"), u("/a/3"), lastmod="2024-05-01")),
                headers={"Content-Type": "application/gzip"},
            ),
            "/news/b.xml": Reply(
                gzip.compress(urlset(u("/b/1"), lastmod="2023-02-03T04:05:06Z")),
                headers={"Content-Type": "application/xml", "Content-Encoding": "gzip"},
            ),
            "/plain.xml": urlset(u("/p/1"), u("/p/2")),
            "/gone.xml": Reply(b"gone", status=404),
        }
    )
    return site


def _by_url(nodes: list[dict[str, Any]], out: dict[str, dict[str, Any]]) -> dict[str, Any]:
    for node in nodes:
        out[node["url"]] = node
        _by_url(node["children"], out)
    return out


async def test_tree_json_shows_the_hierarchy_counts_gzip_and_failures(
    sites: Sites, tmp_path: Path
) -> None:
    site = await tree_site(sites, "127.0.0.2")
    config = tmp_path / "h.toml"
    config.write_text(CONFIG)
    code, out, err = await tree_cli(site.origin, "--json", "--config", str(config))
    assert code == 0, err
    data = json.loads(out)
    u = site.url
    assert data["robots"] == {"url": u("/robots.txt"), "status": 200}
    assert data["urls"] == 6
    assert data["sitemaps_failed"] == 1
    [top] = data["sitemaps"]
    assert top["url"] == u("/index.xml")
    assert (top["kind"], top["source"], top["outcome"]) == ("sitemapindex", "robots", "ok")
    assert (top["sitemaps"], top["urls"], top["gzip"]) == (3, 0, 0)
    assert [c["url"] for c in top["children"]] == [
        u("/news/index.xml.gz"),
        u("/plain.xml"),
        u("/gone.xml"),
    ]
    nodes = _by_url(data["sitemaps"], {})
    news = nodes[u("/news/index.xml.gz")]
    assert (news["kind"], news["gzip"], news["children"][0]["parent"]) == (
        "sitemapindex",
        1,
        u("/news/index.xml.gz"),
    )
    a = nodes[u("/news/a.xml.gz")]
    assert (a["kind"], a["urls"], a["gzip"], a["newest"], a["status"]) == (
        "urlset",
        3,
        1,
        "2024-05-01T00:00:00Z",
        200,
    )
    assert a["bytes"] == len(
        gzip.compress(urlset(u("/a/1"), u("/a/2"), u("/a/3"), lastmod="2024-05-01"))
    )
    b = nodes[u("/news/b.xml")]
    # Content-Encoding: gzip is undone by the HTTP client: no gzip layer in the body.
    assert (b["kind"], b["urls"], b["gzip"], b["newest"]) == (
        "urlset",
        1,
        0,
        "2023-02-03T04:05:06Z",
    )
    plain = nodes[u("/plain.xml")]
    assert (plain["urls"], plain["gzip"], plain["newest"]) == (2, 0, None)
    gone = nodes[u("/gone.xml")]
    assert (gone["outcome"], gone["error"], gone["status"], gone["kind"]) == (
        "failed",
        "http_status",
        404,
        None,
    )


async def test_tree_text_is_a_readable_tree(sites: Sites, tmp_path: Path) -> None:
    site = await tree_site(sites, "127.0.0.3")
    config = tmp_path / "h.toml"
    config.write_text(CONFIG)
    code, out, err = await tree_cli(site.origin, "--config", str(config))
    assert code == 0, err
    lines = out.splitlines()
    u = site.url
    root = lines[0]
    assert f"robots.txt {u('/robots.txt')} (200)" in root
    assert "6 URLs" in root
    a_line = next(line for line in lines if u("/news/a.xml.gz") in line)
    assert "[urlset]" in a_line
    assert "3 URLs" in a_line
    assert "gzip" in a_line
    assert "newest 2024-05-01T00:00:00Z" in a_line
    gone = next(line for line in lines if u("/gone.xml") in line)
    assert "✗" in gone
    assert "http_status 404: HTTP 404 Not Found" in gone  # whole lines into a pipe
    # Nesting: each child is drawn indented under its index.
    indent = {
        url: next(line for line in lines if u(url) in line).index("✓")
        for url in ("/index.xml", "/news/index.xml.gz", "/news/a.xml.gz")
    }
    assert indent["/index.xml"] < indent["/news/index.xml.gz"] < indent["/news/a.xml.gz"]


async def test_tree_of_a_site_without_sitemaps_marks_each_location_missed(
    sites: Sites, tmp_path: Path
) -> None:
    # Nothing anywhere (a 404, an HTML page, the last one a 404 too): every location is a
    # miss (·), and nothing is drawn as failed.
    routes: dict[str, Any] = {
        "/robots.txt": b"User-agent: *\nDisallow:\n",
        "/sitemap_index.xml": Reply(b"<!DOCTYPE html><html><body>no</body></html>"),
    }  # /sitemap.xml and /sitemap.txt: the helper's 404
    site = await sites.start("127.0.0.5", routes)
    config = tmp_path / "h.toml"
    config.write_text(CONFIG)
    code, out, err = await tree_cli(site.origin, "--config", str(config))
    assert code == 0, err
    lines = out.splitlines()
    assert "0 sitemaps read, 0 failed" in lines[0]
    assert "discovery none" in lines[0]
    for path in ("/sitemap.xml", "/sitemap_index.xml", "/sitemap.txt"):
        line = next(line for line in lines if site.url(path) in line)
        assert line.split()[1:] == ["·", "[?]", site.url(path), "missed"], line
    assert "✗" not in out
    code, out, err = await tree_cli(site.origin, "--json", "--config", str(config))
    data = json.loads(out)
    assert (data["failures"], data["sitemaps_failed"]) == ([], 0)
    assert [(n["source"], n["outcome"], n["error"]) for n in data["sitemaps"]] == [
        ("fallback", "missed", None)
    ] * 5  # issue 49: fallback_paths and two more probes (budget 6, the home page one)


async def test_tree_of_a_bad_target_is_a_usage_error() -> None:
    code, out, err = await tree_cli("ftp://example.com/x")
    assert code == 2
    assert out == ""
    assert "unsupported scheme 'ftp'" in err


async def test_run_keeps_the_log_in_the_host_report_with_skips_and_their_reasons(
    sites: Sites,
) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.4", routes)
    u = site.url
    routes.update(
        {
            "/robots.txt": robots(u("/index.xml")),
            "/index.xml": index(u("/deep.xml"), "http://elsewhere.example/s.xml", u("/a.xml")),
            "/deep.xml": index(u("/deeper.xml")),
            "/deeper.xml": urlset(u("/never")),
            "/a.xml": urlset(u("/a/1")),
        }
    )
    _, hosts = await collect([site.origin], **{"output.sitemap_log": True, "limits.max_depth": 1})
    [host] = hosts.values()
    log = host["sitemap_log"]
    assert log["robots"] == {"url": u("/robots.txt"), "status": 200}
    nodes = {n["url"]: n for n in log["sitemaps"]}
    assert (nodes[u("/deeper.xml")]["outcome"], nodes[u("/deeper.xml")]["error"]) == (
        "skipped",
        "max_depth",
    )
    assert nodes[u("/deeper.xml")]["parent"] == u("/deep.xml")
    away = nodes["http://elsewhere.example/s.xml"]
    assert (away["outcome"], away["error"]) == ("skipped", "cross_host")
    assert (nodes[u("/a.xml")]["outcome"], nodes[u("/a.xml")]["urls"]) == ("ok", 1)
    assert site.hits("/deeper.xml") == 0
    # Off (the default): no log in the report.
    _, hosts = await collect([site.origin])
    assert next(iter(hosts.values()))["sitemap_log"] is None


async def test_tree_of_a_host_whose_name_does_not_resolve_exits_1(tmp_path: Path) -> None:
    # The name is asked of a DNS server on loopback that answers NXDOMAIN: nothing is
    # read, the host failed as a whole, and a script sees it in the exit status.
    asked: list[str] = []

    class NoSuchName(asyncio.DatagramProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = cast("asyncio.DatagramTransport", transport)

        def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
            request = dnslib.DNSRecord.parse(data)
            asked.append(str(request.q.qname).rstrip("."))
            reply = request.reply()
            reply.header.rcode = dnslib.RCODE.NXDOMAIN
            self.transport.sendto(reply.pack(), addr)

    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        NoSuchName, local_addr=("127.0.0.1", 0)
    )
    try:
        port = transport.get_extra_info("sockname")[1]
        config = tmp_path / "h.toml"
        config.write_text(
            CONFIG.replace("[fetch]\n", f'[fetch]\nnameservers = ["127.0.0.1:{port}"]\n')
        )
        code, out, err = await tree_cli("nowhere.test", "--json", "--config", str(config))
    finally:
        transport.close()
    assert "nowhere.test" in asked
    assert code == 1, err
    data = json.loads(out)  # the tree is still printed: it says what failed
    assert [f["class"] for f in data["failures"]] == ["dns"]
    assert "harvester tree: nowhere.test failed: dns:" in err


async def test_tree_marks_a_listed_sitemap_that_is_an_html_page_failed(
    sites: Sites, tmp_path: Path
) -> None:
    routes: dict[str, Any] = {}
    site = await sites.start("127.0.0.6", routes)
    routes.update(
        {
            "/robots.txt": robots(site.url("/page.xml"), site.url("/ok.xml")),
            "/page.xml": Reply(b"<!DOCTYPE html><html><body>hello</body></html>"),
            "/ok.xml": urlset(site.url("/a")),
        }
    )
    config = tmp_path / "h.toml"
    config.write_text(CONFIG)
    code, out, err = await tree_cli(site.origin, "--config", str(config))
    assert code == 0, err  # one sitemap was read: the host did not fail as a whole
    page = next(line for line in out.splitlines() if site.url("/page.xml") in line)
    assert page.split()[1] == "✗", page
    assert "not_a_sitemap" in page
    assert "?" not in page.split()[1:3]
    code, out, err = await tree_cli(site.origin, "--json", "--config", str(config))
    nodes = _by_url(json.loads(out)["sitemaps"], {})
    assert (nodes[site.url("/page.xml")]["outcome"], nodes[site.url("/page.xml")]["error"]) == (
        "error",
        "not_a_sitemap",
    )
