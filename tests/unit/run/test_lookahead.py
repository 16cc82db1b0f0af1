"""The lookahead's window and order (run/lookahead.py), on fake probes whose ends the test
decides; the prediction (crawl/probe.py) and ``HostSlot.interval`` it rests on."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import pytest

from harvester.config import HostPolicy
from harvester.crawl.discovery import Discovered
from harvester.crawl.frontier import SitemapRef
from harvester.crawl.probe import predicted_chain
from harvester.crawl.scheduler import HostSlot
from harvester.run.lookahead import Lookahead
from harvester.run.seeds import parse_seed

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from harvester.crawl.probe import RobotsProbe
    from harvester.crawl.seed import Seed


class FakeProbe:
    """A probe the test ends: ``finish(chain)`` or ``fail()``."""

    def __init__(self, seed: Seed) -> None:
        self.seed = seed
        self.task: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._chain = 0.0
        self.closed = False

    def finish(self, chain: float) -> None:
        self._chain = chain
        self.task.set_result(None)

    def fail(self) -> None:
        self.task.set_exception(OSError("refused"))
        self.task.exception()

    def failed(self) -> bool:
        return self.task.done() and self.task.exception() is not None

    def chain(self) -> float:
        return self._chain if self.task.done() and not self.failed() else 0.0

    def close(self) -> None:
        self.closed = True


class Source:
    """Seeds ``h0.test`` ... in input order, counting how many were read."""

    def __init__(self, count: int) -> None:
        self.seeds = [parse_seed(f"h{i}.test") for i in range(count)]
        self.read = 0

    async def __call__(self) -> AsyncIterator[Seed]:
        for seed in self.seeds:
            self.read += 1
            yield seed


def starter(probes: dict[str, FakeProbe]) -> Callable[[Seed], RobotsProbe | None]:
    def start(seed: Seed) -> RobotsProbe | None:
        probe = probes[seed.host] = FakeProbe(seed)
        return cast("RobotsProbe", probe)

    return start


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def names(look: Lookahead, count: int) -> list[str]:
    return [(await anext(look)).seed.host for _ in range(count)]


async def test_the_longest_predicted_chain_is_taken_first() -> None:
    source, probes = Source(4), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=10, probes=10) as look:
        await settle()
        for host, chain in zip(
            ("h0.test", "h1.test", "h2.test", "h3.test"), (1, 5, 3, 0), strict=True
        ):
            probes[host].finish(chain)
        await settle()  # (a future's callbacks run on the next loop turn)
        assert await names(look, 4) == ["h1.test", "h2.test", "h0.test", "h3.test"]
        with pytest.raises(StopAsyncIteration):
            await anext(look)


async def test_a_failed_probe_goes_first_and_ties_keep_input_order() -> None:
    source, probes = Source(4), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=10, probes=10) as look:
        await settle()
        probes["h0.test"].finish(2)
        probes["h1.test"].finish(2)
        probes["h2.test"].finish(9)
        probes["h3.test"].fail()  # dead: ends at once and frees its place
        await settle()
        assert await names(look, 4) == ["h3.test", "h2.test", "h0.test", "h1.test"]


async def test_no_probe_done_takes_the_oldest_with_its_probe_running() -> None:
    source, probes = Source(3), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=10, probes=1) as look:
        await settle()
        assert list(probes) == ["h0.test"]  # one probe in flight at most
        first = await anext(look)
        assert first.seed.host == "h0.test"
        assert first.probe is cast("Any", probes["h0.test"])  # the host awaits it
        # Its probe still counts until it ends (a host that awaits it asks DNS too).
        await settle()
        assert list(probes) == ["h0.test"]
        probes["h0.test"].finish(1)
        await settle()
        assert list(probes) == ["h0.test", "h1.test"]


async def test_the_window_bounds_the_seeds_read() -> None:
    source, probes = Source(10), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=3, probes=2) as look:
        await settle()
        assert source.read == 3
        assert len(probes) == 2
        await anext(look)
        await settle()
        assert source.read == 4


async def test_a_stop_ends_it_and_close_gives_back_the_probes_never_taken() -> None:
    source, probes = Source(5), {}  # type: ignore[var-annotated]
    stop = False
    async with Lookahead(
        source(), starter(probes), window=5, probes=5, stopped=lambda: stop
    ) as look:
        await settle()
        taken = await anext(look)
        stop = True
        with pytest.raises(StopAsyncIteration):
            await anext(look)
    assert not probes[taken.seed.host].closed  # its host closes it
    assert all(p.closed for host, p in probes.items() if host != taken.seed.host)


async def test_a_seed_without_a_probe_is_ready_with_no_chain() -> None:
    source, probes = Source(2), {}  # type: ignore[var-annotated]
    start = starter(probes)

    def some(seed: Seed) -> RobotsProbe | None:
        return None if seed.host == "h0.test" else start(seed)

    async with Lookahead(source(), some, window=5, probes=5) as look:
        await settle()
        probes["h1.test"].finish(1)
        await settle()
        assert await names(look, 2) == ["h1.test", "h0.test"]


def test_window_and_probes_must_be_positive() -> None:
    async def empty() -> AsyncIterator[Seed]:
        return
        yield

    with pytest.raises(ValueError, match="at least 1"):
        Lookahead(empty(), lambda s: None, window=0, probes=1)


def test_the_predicted_chain_is_the_slots_interval_times_the_files() -> None:
    slot = HostSlot("a.test", HostPolicy(concurrency=2, rate=2.0))
    assert slot.interval == 0.5
    refs = [SitemapRef(f"https://a.test/s{i}.xml", source="robots") for i in range(8)]
    assert predicted_chain(Discovered(refs), slot.interval) == 4.0
    slot.slow_down(10.0)  # Crawl-delay: 10
    assert slot.interval == 10.0
    assert predicted_chain(Discovered(refs), slot.interval) == 80.0
    assert predicted_chain(Discovered([]), slot.interval) == 10.0  # nothing announced: one


def test_the_predicted_chain_counts_tdmrep_json_under_the_slot() -> None:
    # tdmrep.json (policy.tdmrep) is one more request under the host's slot: a Crawl-delay
    # host with one sitemap then outranks a fast host with thirty, as it will end later.
    fast = HostSlot("a.test", HostPolicy(concurrency=2, rate=2.0))
    slow = HostSlot("b.test", HostPolicy(concurrency=2, rate=2.0))
    slow.slow_down(10.0)
    many = Discovered([SitemapRef(f"https://a.test/s{i}.xml", source="robots") for i in range(30)])
    one = Discovered([SitemapRef("https://b.test/index.xml", source="robots")])
    assert predicted_chain(one, slow.interval) < predicted_chain(many, fast.interval)
    assert predicted_chain(one, slow.interval, tdmrep=True) == 20.0
    assert predicted_chain(many, fast.interval, tdmrep=True) == 15.5
    walled = Discovered([])
    walled.wall.robots_answer(403, why="HTTP 403")
    assert predicted_chain(walled, slow.interval, tdmrep=True) == 10.0  # not asked


async def test_a_probe_predicts_with_tdmrep_when_the_policy_asks_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from harvester.config import PolitenessConfig
    from harvester.crawl import probe
    from harvester.crawl.scheduler import Scheduler

    async def discover(*_: object) -> Discovered:
        return Discovered([SitemapRef("https://a.test/s.xml", source="robots")])

    monkeypatch.setattr(probe, "discover", discover)
    scheduler = Scheduler(PolitenessConfig())
    seed = parse_seed("a.test")
    fetcher = cast("Any", None)
    asks, silent = (
        probe.RobotsProbe(seed, fetcher, scheduler, cast("Any", None), tdmrep=tdm)
        for tdm in (True, False)
    )
    await asyncio.gather(asks.task, silent.task)
    assert (asks.chain(), silent.chain()) == (1.0, 0.5)
    asks.close()
    silent.close()


async def test_scouts_probe_the_back_only_once_a_probe_waits_untaken() -> None:
    # The start's burst is the front's alone: no probe is done, so none goes to the back.
    source, probes = Source(10), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=10, probes=4) as look:
        await settle()
        assert list(probes) == ["h0.test", "h1.test", "h2.test", "h3.test"]
        # h0's probe ends and nobody takes it (the admission is at its ceiling): the free
        # probe goes to the newest seed held, and the next one, at half the probes at most.
        probes["h0.test"].finish(1)
        await settle()
        assert list(probes)[4:] == ["h9.test"]
        probes["h1.test"].finish(1)
        await settle()
        assert list(probes)[5:] == ["h8.test"]
        probes["h2.test"].finish(1)  # two scouts in flight already: the front again
        await settle()
        assert list(probes)[6:] == ["h4.test"]
        # The long chain at the back is taken first, before the front's results.
        probes["h9.test"].finish(30)
        await settle()
        assert (await anext(look)).seed.host == "h9.test"


async def test_the_results_bound_the_probes_ahead_of_the_admission() -> None:
    source, probes = Source(10), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=10, probes=5, results=2) as look:
        await settle()
        assert source.read == 10  # the window holds every seed, compact
        assert list(probes) == ["h0.test", "h1.test"]  # two probed seeds held at most
        probes["h0.test"].finish(1)
        await settle()
        assert len(probes) == 2  # done but not taken: still held
        assert (await anext(look)).seed.host == "h0.test"
        await settle()
        assert len(probes) == 3


async def test_equal_chains_are_taken_in_the_order_their_probes_ended() -> None:
    # A host starts soon after its robots.txt (its DNS answer and connection still fresh),
    # whether its probe was the front's or a scout's.
    source, probes = Source(3), {}  # type: ignore[var-annotated]
    async with Lookahead(source(), starter(probes), window=5, probes=5) as look:
        await settle()
        for host in ("h2.test", "h0.test", "h1.test"):
            probes[host].finish(1)
            await settle()
        assert await names(look, 3) == ["h2.test", "h0.test", "h1.test"]
