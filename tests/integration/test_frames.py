"""``harvester.to_arrow`` / ``to_pandas`` on a loopback web: in a script, and from inside a
running event loop as a Jupyter cell calls it; the tables read in pandas and DuckDB.

The sites run on a loop of their own in a thread, so a call that blocks the
caller's loop (what a notebook cell does) still gets its answers.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa
import pytest

import harvester
from harvester.errors import ConfigError
from tests.integration.conftest import Sites, free_port
from tests.integration.webs import site_with_tree

if TYPE_CHECKING:
    from collections.abc import Iterator


class Web:
    """Loopback sites served by their own event loop on a thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.sites = Sites()

    def call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def close(self) -> None:
        self.call(self.sites.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture
def web() -> Iterator[tuple[list[str], dict[str, str]]]:
    """Two sites (p/1..3, lastmod on two; one 404 child) and a dead host: the domains
    and each one's loc prefix."""
    w = Web()
    try:
        a = w.call(site_with_tree(w.sites, "127.0.0.71"))
        b = w.call(site_with_tree(w.sites, "127.0.0.72"))
        dead = f"http://127.0.0.73:{free_port('127.0.0.73')}"
        yield [a.origin, b.origin, dead], {"a": a.origin, "b": b.origin, "dead": dead}
    finally:
        w.close()


def check_tables(urls: pa.Table, hosts: pa.Table, origins: dict[str, str]) -> None:
    assert urls.schema.field("lastmod").type == pa.timestamp("us", tz="UTC")
    rows = sorted(urls.select(["loc", "lastmod"]).to_pylist(), key=lambda r: r["loc"])
    expected = []
    for name in ("a", "b"):
        dated = datetime(2024, 1, 1, 8, 0, tzinfo=UTC)  # 10:00+02:00
        o = origins[name]
        # p/2 is first met in b.xml.gz (the newest child, read first): no lastmod there.
        expected += [(f"{o}/p/1", dated), (f"{o}/p/2", None), (f"{o}/p/3", None)]
    assert [(r["loc"], r["lastmod"]) for r in rows] == sorted(expected)
    by_host = {row["host"]: row for row in hosts.to_pylist()}
    assert len(by_host) == 3
    a = by_host[origins["a"].removeprefix("http://")]
    assert (a["urls"], a["failed"], a["partial"]) == (3, False, True)  # the 404 child
    assert [f["class"] for f in a["failures"]] == ["http_status"]
    dead = by_host[origins["dead"].removeprefix("http://")]
    assert (dead["urls"], dead["failed"], dead["partial"]) == (0, True, False)
    assert [f["class"] for f in dead["failures"]] == ["connect"]


def test_to_arrow_in_a_script_with_keyword_options(web: Any) -> None:
    domains, origins = web
    urls, hosts = harvester.to_arrow(domains, allow_private=True, retries=0, rate=1000)
    check_tables(urls, hosts, origins)
    # DuckDB reads the Arrow table as it is.
    relation = duckdb.sql(
        "select strftime(lastmod, '%Y-%m') as m, count(*) as n from urls group by m order by m"
    )
    assert relation is not None
    per_month = relation.fetchall()
    assert per_month == [("2024-01", 2), (None, 4)]


def test_to_pandas_from_inside_a_running_event_loop(web: Any) -> None:
    domains, origins = web

    async def cell() -> Any:
        # A notebook cell: a plain call while the kernel's loop runs.
        asyncio.get_running_loop()
        return harvester.to_pandas(domains, allow_private=True, retries=0, max_urls_per_host=2)

    urls, hosts = asyncio.run(cell())
    assert type(urls).__module__.startswith("pandas")  # a DataFrame
    assert str(urls["lastmod"].dtype) == "datetime64[us, UTC]"
    assert len(urls) == 4  # two per host: max_urls_per_host
    assert set(urls["host"]) == {o.removeprefix("http://") for o in (origins["a"], origins["b"])}
    assert urls["lastmod"].dropna().tolist() == [datetime(2024, 1, 1, 8, 0, tzinfo=UTC)] * len(
        urls["lastmod"].dropna()
    )
    assert hosts.set_index("host")["failed"].sum() == 1
    assert "max_urls_per_host" in {x for lims in hosts["limits_hit"] for x in lims}


def test_unknown_option_is_a_config_error_naming_the_options() -> None:
    with pytest.raises(ConfigError, match=r"unknown option 'rates'.*allow_private"):
        harvester.to_arrow(["127.0.0.1"], rates=3)


def test_no_private_address_without_allow_private(web: Any) -> None:
    domains, _ = web
    urls, hosts = harvester.to_arrow(domains[:1], retries=0)
    assert urls.num_rows == 0
    assert [f["class"] for f in hosts.column("failures").to_pylist()[0]] == ["forbidden_address"]
