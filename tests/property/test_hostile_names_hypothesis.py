"""Hostile host names from untrusted input never reach the run as an exception (issue 50).

Every path that takes a host from input or from a document (a seed line, a robots.txt
``Sitemap:`` line, a sitemap's ``<loc>``, an index child, a redirect's Location) is fed
names that break one rule or another: A-labels that do not decode (``xn--zz``), bidi and
direction overrides, labels over 63 characters, names over 253, percent escapes, IPv6
zone ids, empty labels, spaces. The gate (``urls.validate.valid_authority``, and
``run.seeds.parse_seed`` for input lines) either refuses a name, or every later step
that looks at it (yarl's ``URL.host`` under aiohttp, the politeness key, the
cross-host policy, the canonical form) copes with it. The last test runs a real
harvest on loopback with such names in every place at once.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from yarl import URL

from harvester import errors, harvest, read_bytes
from harvester.crawl.discovery import child_allowed, home_hosts
from harvester.crawl.robots import parse_robots
from harvester.crawl.scheduler import host_key
from harvester.crawl.seed import Seed
from harvester.errors import InputError
from harvester.run.seeds import parse_seed
from harvester.urls.normalize import canonical
from harvester.urls.validate import valid_authority
from tests.integration.conftest import LoopbackResolver, Reply, Sites, fast_config

# -- hostile names -----------------------------------------------------------------------

_BAD_ALABELS = ["xn--zz", "XN--ZZ", "xn--", "xn--0", "xn--a", "xn--ls8h-", "xn--99999999"]
_BIDI = [
    "\u202eevil",
    "\u05d0a",
    "a\u05d0",
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u200fx",
]
_OTHER = [
    "a" * 64,
    "ex%41mple",
    "%00",
    "a%2eb",
    "a b",
    "",
    "a..b",
    "exa\u3002mple",
    "\u00ad",
    "\u0661\u0662\u0663",
    "-a-",
    "a_b",
    "b\u00fccher",
    "xn--bcher-kva",
    "\ufffd",
    "@",
    "a\\b",
]
_ZONES = ["[fe80::1%25eth0]", "[fe80::1%eth0]", "[::1%251]", "[::1]", "[fe80::1"]

LABEL = st.one_of(
    st.sampled_from(_BAD_ALABELS + _BIDI + _OTHER),
    st.text("xn-abcz019", min_size=1, max_size=12).map(lambda s: "xn--" + s),
    st.text("abc\u05d0\u0627\u202e\u200f1-", min_size=1, max_size=6),
)


@st.composite
def hosts(draw: st.DrawFn) -> str:
    """A host part of a URL: a few labels (one of them hostile), or a bracketed literal."""
    if draw(st.integers(0, 5)) == 0:
        return draw(st.sampled_from(_ZONES))
    labels = draw(st.lists(LABEL, min_size=1, max_size=3))
    if draw(st.booleans()):
        labels.append("test")
    if draw(st.integers(0, 9)) == 0:
        labels = ["a" * 63] * 4 + labels  # over 253 in all
    return ".".join(labels)


def _url(host: str, path: str = "/x.xml", port: int | None = None) -> str:
    return f"http://{host}{f':{port}' if port else ''}{path}"


# -- the gates, one input at a time --------------------------------------------------------


@given(hosts(), st.sampled_from(["{h}", "http://{h}:8080/", "https://{h}/robots.txt", "{h}/s.xml"]))
@example("xn--zz.test", "http://{h}:8080/")
@example("[fe80::1%25eth0]", "{h}")
def test_a_seed_line_is_refused_or_usable(host: str, shape: str) -> None:
    """An input line is an ``InputError`` value, or a seed every later step can use."""
    try:
        seed = parse_seed(shape.format(h=host), line=7)
    except InputError as exc:
        line = exc.line
        assert line == 7
        return
    assert isinstance(seed, Seed)
    assert valid_authority(seed.origin + "/")
    assert host_key(seed.origin) == seed.host
    assert URL(seed.origin).host  # yarl (aiohttp) can name it


@given(hosts())
@example("xn--zz.test")
@example("e\u200bvil.test")  # (zero-width space: IDNA would name evil.test)
def test_a_url_the_gate_accepts_is_safe_downstream(host: str) -> None:
    """What ``valid_authority`` accepts, yarl, the politeness key, the cross-host policy and
    the canonical form all handle; what it refuses is never looked at again."""
    url = _url(host)
    if not valid_authority(url):
        return
    assert URL(url).host is not None  # raises UnicodeError on a bad A-label
    key = host_key(url)
    homes = home_hosts("example.com", "https://www.example.com")
    assert child_allowed(url, "example.com", homes, "same-site", frozenset()) in (True, False)
    assert canonical(url).startswith("http://")
    assert key


@given(st.lists(hosts(), min_size=1, max_size=4))
@example(["xn--zz.test"])
@example(["a.\xad"])  # a default-ignorable code point: IDNA deletes it, yarl 1.25 refuses it
def test_robots_sitemap_lines_never_raise(names: list[str]) -> None:
    body = "\n".join(f"Sitemap: {_url(h)}" for h in names).encode()
    robots = parse_robots(body, "https://example.com/robots.txt", "harvester")
    for url in robots.sitemaps:
        if valid_authority(url):  # the host worker's gate (HostWorker._admit)
            host_key(url)


@given(st.lists(hosts(), min_size=1, max_size=4), st.sampled_from(["urlset", "sitemapindex"]))
@example(["xn--zz.test"], "sitemapindex")
def test_a_document_drops_what_no_client_can_name(names: list[str], root: str) -> None:
    """The reader emits only locs the gate accepts (compiled and pure paths alike: the
    suite runs both), and counts the others as dropped."""
    tag = "url" if root == "urlset" else "sitemap"
    ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    good = "http://good.test/ok"
    locs = [good, *(_url(h, "/p") for h in names)]
    items = "".join(f"<{tag}><loc>{_xml(loc)}</loc></{tag}>" for loc in locs)
    entries, result = read_bytes(f"<{root} {ns}>{items}</{root}>".encode(), "http://good.test/s")
    emitted = [e.loc for e in entries]
    assert good in emitted
    for loc in emitted:
        assert valid_authority(loc)
        host_key(loc)
    dropped = len(locs) - len(emitted) - result.stats.dropped_duplicate
    assert result.stats.dropped_invalid_loc == dropped


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;")


# -- a real harvest on loopback: every path at once ------------------------------------------

_HOSTILE_RUN = st.lists(hosts(), min_size=1, max_size=3)
# Every class of the error tree but the catch-alls: a failure must say what went wrong.
_KNOWN = {getattr(errors, name).kind for name in errors.__all__ if name not in ("FetchError",)} - {
    "error",
    "fetch",
}


@settings(max_examples=12)
@given(_HOSTILE_RUN)
@example(["xn--zz.test"])
@example(["[fe80::1%25eth0]", "\u202eevil.test"])
def test_a_run_with_hostile_names_everywhere_finishes(names: list[str]) -> None:
    """Seeds, robots.txt lines, index children, locs and a redirect, all hostile at once:
    the run ends normally, every good URL is emitted, every failure has a class, and no
    name the gate refuses is ever looked up."""
    records, reports, asked = asyncio.run(_harvest_hostile(names))
    locs = {r["loc"] for r in records}
    good = {loc for loc in locs if "127.0.0.2" in loc}
    assert {"/p/1", "/p/2", "/p/3"} <= {URL(loc).path for loc in good}
    for report in reports.values():
        for failure in report["failures"]:
            assert failure["class"] in _KNOWN, failure
    for name in asked:
        assert valid_authority(f"http://{name}/"), f"looked up {name!r}"


async def _harvest_hostile(
    names: list[str],
) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
    sites = Sites()
    routes: dict[str, Any] = {}
    try:
        site = await sites.start("127.0.0.2", routes)
        port, u = site.port, site.url
        bad = [_url(h, "/bad.xml", port) for h in names]
        ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        routes.update(
            {
                "/robots.txt": "\n".join(
                    [*(f"Sitemap: {b}" for b in bad), f"Sitemap: {u('/index.xml')}"]
                ).encode(),
                "/index.xml": (
                    f"<sitemapindex {ns}>"
                    + "".join(
                        f"<sitemap><loc>{_xml(loc)}</loc></sitemap>"
                        for loc in [*bad, u("/a.xml"), u("/moved.xml")]
                    )
                    + "</sitemapindex>"
                ).encode(),
                "/a.xml": (
                    f"<urlset {ns}>"
                    + "".join(
                        f"<url><loc>{_xml(loc)}</loc></url>"
                        for loc in [u("/p/1"), *(_url(h, "/page", port) for h in names), u("/p/2")]
                    )
                    + "</urlset>"
                ).encode(),
                "/moved.xml": Reply(b"", 302, {"Location": bad[0]}),
                "/b.xml": f"<urlset {ns}><url><loc>{u('/p/3')}</loc></url></urlset>".encode(),
            }
        )
        routes["/robots.txt"] += f"\nSitemap: {u('/b.xml')}".encode()
        # Every name maps to the site: were a refused name looked up, the query log says so.
        resolver = _AnyName("127.0.0.2")
        records: list[dict[str, Any]] = []
        reports: dict[str, Any] = {}
        seeds = [site.origin, *(_url(h, "/", port) for h in names), *names]
        async for record in harvest(
            seeds,
            fast_config(**{"run.hosts_in_flight": 4}),
            resolver=resolver,
            on_host=lambda r: reports.update({r["host"]: r}),
        ):
            records.append(record)
        return records, reports, resolver.queries
    finally:
        await sites.close()


class _AnyName(LoopbackResolver):
    """Resolves every name to one loopback address, and logs the names asked."""

    def __init__(self, address: str) -> None:
        super().__init__({})
        self._address = address

    async def resolve(self, host: str, port: int = 0, family: Any = None) -> Any:
        self.names.setdefault(host, self._address)
        return await super().resolve(host, port)


@pytest.mark.parametrize("line", ["http://xn--zz.test:18766/", "[fe80::1%25eth0]"])
def test_the_cli_run_skips_such_a_seed(line: str, tmp_path: Any) -> None:
    """The issue's command: exit 0, the line reported as invalid, nothing looked up."""
    import subprocess
    import sys

    out = tmp_path / "o.jsonl"
    # Were the line accepted, its name would be asked of a server on loopback that never
    # answers (c-ares), never of the system's resolver.
    config = tmp_path / "h.toml"
    config.write_text('[fetch]\nnameservers = ["127.0.0.1:9"]\ndns_timeout = 0.5\n')
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "harvester", "run", "--allow-private", "--no-state"),
            *("--config", str(config), "-o", str(out), line),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "line" in proc.stderr or "invalid" in proc.stderr.lower()
    assert out.exists()
