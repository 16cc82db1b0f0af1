"""Host admission: the ceiling's moves on fake samples (RSS, lag) and a fake clock."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import pytest

from harvester.config import Config, RunConfig
from harvester.run.admission import (
    OUTPUT_HOLD,
    OUTPUT_SHRINK,
    QUEUE_SHRINK,
    SETTLE,
    START,
    Admission,
    CpuMeter,
    admitted,
    auto_limit,
    host_limit,
    read_rss,
    watch,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

MiB = 1 << 20


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fill(a: Admission) -> int:
    """Admit hosts while the admission lets them in; return how many came in."""
    n = 0
    while a.may_admit():
        a.admitted()
        n += 1
    return n


def test_the_limit_bounds_the_hosts_in_flight() -> None:
    a = Admission(3)
    assert fill(a) == 3
    a.released()
    assert a.may_admit()
    assert (a.in_flight, a.peak, a.admitted_total) == (2, 3, 3)


def test_one_host_is_always_admitted_when_none_is_in_flight() -> None:
    a = Admission(10, memory_budget=100 * MiB, max_lag=0.1, clock=FakeClock())
    a.observe(900 * MiB, 5.0)  # far over budget, and lagging
    assert a.ceiling == 1
    assert fill(a) == 1  # progress: one host
    assert not a.may_admit()


def test_between_samples_each_new_host_counts_the_estimate() -> None:
    a = Admission(1000, memory_budget=100 * MiB, estimate=MiB)
    a.observe(90 * MiB, 0.0)
    assert fill(a) == 10  # 90 MiB + 10 x 1 MiB
    a.observe(95 * MiB, 0.0)  # the ten measured: 5 more fit
    assert fill(a) == 5


def test_the_ceiling_starts_at_64_and_grows_by_half_with_each_good_sample() -> None:
    clock = FakeClock()
    a = Admission(1000, max_lag=0.1, clock=clock)
    assert fill(a) == START == 64
    a.observe(0, 0.0)
    assert fill(a) == 32
    clock.now += SETTLE
    a.observe(0, 0.0)
    assert a.ceiling == 144
    assert Admission(10).ceiling == 10


def test_over_budget_and_growing_cuts_the_ceiling_to_seven_eighths() -> None:
    a = Admission(1000, memory_budget=100 * MiB, estimate=0, settle=0.0)
    n = 0
    while a.ceiling < 1000:
        n += fill(a)
        a.observe(50 * MiB, 0.0)
    assert n + fill(a) == 1000
    a.observe(120 * MiB, 0.0)
    assert a.ceiling == 875
    assert a.held == "memory"
    assert not a.may_admit()
    for _ in range(200):
        a.released()
    assert fill(a) == 75  # back up to the ceiling, no further
    a.observe(120 * MiB, 0.0)  # over, not growing: held where it is
    assert a.ceiling == 875


def test_lag_holds_the_ceiling_at_the_hosts_in_flight() -> None:
    a = Admission(1000, max_lag=0.1)
    for _ in range(40):
        a.admitted()
    a.observe(0, 0.25)
    assert (a.ceiling, a.held) == (40, "lag")
    assert not a.may_admit()
    a.released()
    assert a.may_admit()  # a finished host is replaced
    a.admitted()
    a.observe(0, 0.02)  # the loop keeps up again: the ceiling grows by half
    assert (a.ceiling, a.held) == (60, "")
    assert fill(a) == 20


def test_a_good_sample_grows_the_ceiling_by_at_least_16_up_to_the_limit() -> None:
    a = Admission(100, max_lag=0.1, settle=0.0)
    assert a.ceiling == 64
    a.admitted()
    a.observe(0, 1.0)
    assert a.ceiling == 1
    a.observe(0, 0.0)
    assert a.ceiling == 17
    for _ in range(10):
        fill(a)
        a.observe(0, 0.0)
    assert a.ceiling == 100


def test_the_ceiling_grows_again_only_once_the_last_growth_has_settled() -> None:
    # Hosts just admitted use no CPU yet (DNS, connect, TLS, the server's latency):
    # idle samples right after a growth must not grow the ceiling again, or it runs
    # away (300 -> 3,000 hosts on the realweb) before the loop shows their cost.
    clock = FakeClock()
    a = Admission(10_000, max_cpu=0.9, clock=clock)
    fill(a)
    a.observe(0, 0.0, 0.2, 0.2)
    assert a.ceiling == 96
    for _ in range(4):  # 0.4 s of idle samples, each with every host admitted
        fill(a)
        clock.now += 0.1
        a.observe(0, 0.0, 0.2, 0.2)
    assert a.ceiling == 96
    fill(a)
    clock.now += 0.1  # SETTLE after the growth
    a.observe(0, 0.0, 0.2, 0.2)
    assert a.ceiling == 144


def test_a_ceiling_that_holds_no_host_back_does_not_grow() -> None:
    clock = FakeClock()
    a = Admission(10_000, max_cpu=0.9, clock=clock)
    for _ in range(10):  # too few seeds: 10 hosts in flight under a ceiling of 64
        a.admitted()
    for _ in range(20):
        clock.now += SETTLE
        a.observe(0, 0.0, 0.1, 0.1)
    assert a.ceiling == START  # a burst of seeds later starts from here, not from 10,000


def test_zero_budget_and_lag_turn_the_checks_off() -> None:
    a = Admission(5)
    a.observe(1 << 40, 60.0)
    assert fill(a) == 5


def test_repr_shows_the_live_state() -> None:
    clock = FakeClock()
    a = Admission(64, memory_budget=512 * MiB, max_lag=0.1, clock=clock)
    assert "sampled=never" in repr(a)
    a.admitted()
    a.observe(200 * MiB, 0.15)
    clock.now += 0.5
    text = repr(a)
    for part in ("in_flight=1", "ceiling=1", "limit=64", "rss=200MiB/512MiB"):
        assert part in text
    assert "lag=150ms/100ms" in text
    assert "held=lag" in text
    assert "sampled=0.50s ago" in text


def test_auto_limit_leaves_descriptors_for_the_connections() -> None:
    assert auto_limit(256, nofile=1024) == 352
    assert auto_limit(256, nofile=200) == 1
    assert auto_limit(256, nofile=1 << 20) == 8192
    assert auto_limit(256) >= 1


def test_host_limit_resolves_zero_to_auto() -> None:
    assert host_limit(Config(run=RunConfig(hosts_in_flight=7))) == 7
    assert host_limit(Config()) == auto_limit(Config().fetch.max_connections)


def test_read_rss_reads_this_process() -> None:
    assert read_rss() > 1 * MiB


async def test_admitted_takes_a_seed_only_once_a_host_may_start() -> None:
    a = Admission(2)
    changed = asyncio.Event()
    taken: list[int] = []

    async def source() -> AsyncIterator[int]:
        for i in range(5):
            taken.append(i)
            yield i

    seeds = admitted(source(), a, changed)
    assert [await anext(seeds), await anext(seeds)] == [0, 1]
    third = asyncio.ensure_future(anext(seeds))
    await asyncio.sleep(0.01)
    assert not third.done()
    assert taken == [0, 1]  # the third seed is not taken while no host may start
    a.released()
    changed.set()
    assert await third == 2
    assert a.in_flight == 2


async def test_watch_samples_rss_and_lag() -> None:
    a = Admission(10, memory_budget=100 * MiB, max_lag=0.1)
    changed = asyncio.Event()
    task = asyncio.create_task(watch(a, changed, rss=lambda: 42 * MiB, interval=0.01))
    await changed.wait()
    await asyncio.sleep(0.03)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert a.rss == 42 * MiB
    assert a.sampled_at is not None
    assert 0.0 <= a.lag < 1.0


def test_a_busy_cpu_holds_the_ceiling_at_the_hosts_in_flight() -> None:
    a = Admission(1000, max_cpu=0.9)
    for _ in range(40):
        a.admitted()
    a.observe(0, 0.0, 0.95)
    assert (a.ceiling, a.held) == (40, "cpu")
    assert not a.may_admit()
    a.released()
    assert a.may_admit()  # a finished host is replaced, no more
    a.admitted()
    a.observe(0, 0.0, 0.5)  # the CPU has room again: the ceiling grows by half
    assert (a.ceiling, a.held) == (60, "")
    assert a.holds == {"cpu": 1}
    assert "cpu=0.50(avg 0.00)/0.90" in repr(a)


def test_a_cpu_busy_for_a_while_drains_the_hosts_in_flight_down_to_start() -> None:
    a = Admission(10_000, max_cpu=0.9)
    for _ in range(320):
        a.admitted()
    a.observe(0, 0.0, 0.95, 0.92)  # busy on average: shrink by 1/16 of those in flight
    assert (a.ceiling, a.held) == (300, "cpu")
    assert not a.may_admit()  # nothing starts until 20 have ended
    for _ in range(320 - START):
        a.released()
    a.observe(0, 0.0, 0.95, 0.95)  # never below START: a busy machine is not this run
    assert a.ceiling == START
    a.observe(0, 0.0, 0.5, 0.93)  # an idle moment does not grow a saturated average
    assert (a.ceiling, a.held) == (START, "cpu")
    a.observe(0, 0.0, 0.5, 0.6)
    assert (a.ceiling, a.held) == (START + START // 2, "")


def test_max_cpu_zero_turns_the_cpu_check_off() -> None:
    a = Admission(100)
    fill(a)
    a.observe(0, 0.0, 1.0)
    assert a.held == ""
    assert a.ceiling == 96  # grown by half from 64


class Ticks:
    """A fake source of times: each call returns the next value."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0)


def test_cpu_meter_counts_the_time_the_thread_ran_or_waited_for_a_core() -> None:
    # run + run-queue wait of the loop's thread: 0.75 of 1 wall s, then all of 1 s.
    meter = CpuMeter(demand=Ticks(0.0, 0.75, 1.75), process=Ticks(0, 0, 0), clock=Ticks(0, 1, 2))
    assert meter.sample() == pytest.approx(0.75)
    assert meter.share == pytest.approx(0.25 * 0.75)  # the average, from 0
    assert meter.sample() == pytest.approx(1.0)
    assert meter.share == pytest.approx(0.25 * 0.75 + 0.25 * (1.0 - 0.25 * 0.75))


def test_cpu_meter_without_schedstat_measures_the_process_cpu() -> None:
    meter = CpuMeter(demand=lambda: None, process=Ticks(0.0, 0.2), clock=Ticks(0.0, 1.0))
    assert meter.sample() == pytest.approx(0.2)
    assert meter.share == pytest.approx(0.25 * 0.2)


def test_cpu_meter_reads_this_thread() -> None:
    meter = CpuMeter()
    deadline = time.monotonic() + 0.05
    while time.monotonic() < deadline:  # keep this thread busy for a moment
        pass
    assert meter.sample() > 0.5  # on a core or queued for one nearly all the time


def test_cpu_meter_sees_an_idle_thread_as_idle() -> None:
    meter = CpuMeter()
    time.sleep(0.05)  # blocked, like a loop in epoll: neither running nor runnable
    assert meter.sample() < 0.5


async def test_watch_feeds_the_cpu_meter_into_the_admission() -> None:
    a = Admission(10, max_cpu=0.5)
    changed = asyncio.Event()
    meter = CpuMeter(demand=lambda: None, process=lambda: 0.0)
    meter.share = 0.99  # pretend a saturated CPU: an idle sample moves the average a bit
    task = asyncio.create_task(watch(a, changed, rss=lambda: 0, cpu=meter, interval=0.01))
    await changed.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert a.cpu == 0.0
    assert a.cpu_avg > 0.5
    assert a.held == "cpu"


def test_an_output_behind_holds_then_drains_the_hosts_in_flight() -> None:
    # The writer behind (the results pipe full): more hosts would only wait to send.
    a = Admission(10_000)
    for _ in range(40):
        a.admitted()
    a.observe(0, 0.0, 0.2, 0.2, OUTPUT_HOLD, OUTPUT_HOLD / 4)  # behind for a while
    assert (a.ceiling, a.held) == (40, "output")
    assert not a.may_admit()
    for _ in range(280):
        a.admitted()
    a.observe(0, 0.0, 0.2, 0.2, 1.0, OUTPUT_SHRINK)  # behind on average: shrink by 1/16
    assert (a.ceiling, a.held) == (300, "output")
    for _ in range(320 - START):
        a.released()
    a.observe(0, 0.0, 0.2, 0.2, 1.0, 0.9)
    assert a.ceiling == START  # never below START
    a.observe(0, 0.0, 0.2, 0.2, 0.0, 0.3)  # caught up: the ceiling grows again
    assert (a.ceiling, a.held) == (START + START // 2, "")
    assert a.holds == {"output": 3}
    assert "output=0.00(avg 0.30)" in repr(a)


async def test_watch_turns_blocked_seconds_into_the_output_share() -> None:
    a = Admission(100)
    for _ in range(80):
        a.admitted()
    changed = asyncio.Event()
    loop = asyncio.get_running_loop()
    began = loop.time()

    def blocked() -> float:  # behind the whole time since the watch began
        return loop.time() - began

    task = asyncio.create_task(watch(a, changed, rss=lambda: 0, blocked=blocked, interval=0.02))
    for _ in range(3):
        changed.clear()
        await changed.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert a.output > 0.9
    assert 0.5 < a.output_avg <= 1.0
    assert a.held == "output"
    assert START <= a.ceiling < 80  # held, then (behind on average) shrunk; never grown


async def test_results_count_the_seconds_a_frame_waits_for_room(tmp_path: Path) -> None:
    # A real pipe nobody reads: the frames that do not fit wait, and the time counts.
    import os

    from harvester.run.transport import DoneMessage, Results

    read_end, write_end = os.pipe()
    results = Results(write_end)
    await results.open()
    try:
        assert results.blocked() == 0.0
        # A pipe holds 64 KiB: the rest of the frame waits for room (put returns).
        await results.put(DoneMessage(0), [b"x" * (256 << 10)])
        await asyncio.sleep(0.05)
        waited = results.blocked()
        assert waited >= 0.05
        assert not results.ready.is_set()
        while not results.ready.is_set():  # now read it all: the frame goes out
            os.read(read_end, 1 << 20)
            await asyncio.sleep(0.001)
        done = results.blocked()
        await asyncio.sleep(0.05)
        assert results.blocked() == done >= waited  # no longer counting
        assert results.ready.is_set()
    finally:
        os.close(read_end)
        await results.close()


def test_requests_queued_for_a_connection_hold_then_drain_the_hosts_in_flight() -> None:
    # The connection limit binding: more hosts would only queue for it (even for DNS).
    a = Admission(10_000)
    for _ in range(40):
        a.admitted()
    a.observe(0, 0.0, 0.2, 0.2, 0.0, 0.0, 3, 0.25)  # queued now: hold
    assert (a.ceiling, a.held) == (40, "connections")
    for _ in range(280):
        a.admitted()
    a.observe(0, 0.0, 0.2, 0.2, 0.0, 0.0, 0, QUEUE_SHRINK)  # queued in half the samples
    assert (a.ceiling, a.held) == (300, "connections")
    a.observe(0, 0.0, 0.2, 0.2, 0.0, 0.0, 0, 0.3)  # none now, fewer lately: grows again
    assert (a.ceiling, a.held) == (300 + 150, "")
    assert "queued=0(avg 0.30)" in repr(a)


async def test_watch_samples_the_requests_queued_for_a_connection() -> None:
    a = Admission(1000)
    for _ in range(200):
        a.admitted()
    changed = asyncio.Event()
    task = asyncio.create_task(watch(a, changed, rss=lambda: 0, queued=lambda: 7, interval=0.01))
    for _ in range(4):
        changed.clear()
        await changed.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert a.queued == 7
    assert 0.5 < a.queued_avg < 1.0
    assert a.held == "connections"
    assert START <= a.ceiling < 200
