"""HostSlot, Scheduler and host_key, on a virtual-time event loop (no wall-clock sleeps).

``VirtualTimeLoop`` is a selector event loop whose ``time()`` is virtual: when
nothing is ready, the selector jumps the clock to the next timer instead of
blocking. aiolimiter (which reads ``loop.time()``), ``asyncio.sleep`` and the
slot's default clock all see the same virtual seconds, and a test that waits
minutes of virtual time runs in milliseconds.
"""

from __future__ import annotations

import asyncio
import itertools
import selectors
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from harvester.config import HostPolicy, PolitenessConfig
from harvester.crawl.scheduler import HostSlot, Scheduler, host_key
from harvester.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

T = TypeVar("T")
EPS = 1e-6  # the virtual clock also ticks 1 ns per loop iteration


def approx(expected: object) -> Any:
    return pytest.approx(expected, abs=EPS)


class _FastForwardSelector(selectors.SelectSelector):
    """Polls real fds without blocking; 'waiting' for a timeout just advances virtual time."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if events:
            return events
        if timeout is None:
            # Nothing scheduled and nothing ready: only another thread could
            # wake us (the loop's self-pipe). Give it a moment, then call it a deadlock.
            events = super().select(1.0)
            if not events:
                raise RuntimeError("virtual-time loop would block forever (deadlock in test)")
            return events
        # At least 1 ns per loop iteration, as on a real clock: a callback that
        # re-arms a timer for "now" (float dust in aiolimiter's leak maths)
        # would otherwise spin forever on a clock that never moves.
        self.now += max(timeout, 1e-9)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock only moves when every task is waiting on a timer."""

    def __init__(self) -> None:
        self._ff = _FastForwardSelector()
        super().__init__(self._ff)

    def time(self) -> float:
        return self._ff.now


def run(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` on a fresh virtual-time loop."""
    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        return runner.run(main())


def now() -> float:
    return asyncio.get_running_loop().time()


def policy(concurrency: int = 100, rate: float = 1000.0, burst: int = 1) -> HostPolicy:
    return HostPolicy(concurrency=concurrency, rate=rate, burst=burst)


async def starts_of(slot: HostSlot, n: int, hold: float = 0.0) -> list[float]:
    """Run ``n`` concurrent requests through ``slot``; return their start times, sorted."""
    starts: list[float] = []

    async def one() -> None:
        async with slot.request():
            starts.append(now())
            await asyncio.sleep(hold)

    async with asyncio.TaskGroup() as tg:
        for _ in range(n):
            tg.create_task(one())
    return sorted(starts)


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def assert_clean(slot: HostSlot) -> None:
    """Nothing is held: no active or waiting request, every concurrency slot free."""
    assert (slot.active, slot.waiting) == (0, 0)
    assert slot._holding == 0
    assert not slot._slot_waiters


# -- the virtual loop itself -------------------------------------------------------


def test_virtual_loop_sleeps_without_wall_time() -> None:
    async def main() -> float:
        await asyncio.sleep(3600)
        return now()

    assert run(main) == approx(3600)


# -- rate ---------------------------------------------------------------------------


def test_rate_spaces_requests() -> None:
    slot = HostSlot("a.test", policy(rate=2.0))
    starts = run(lambda: starts_of(slot, 10))
    assert starts[-1] - starts[0] >= 4.5 - EPS
    assert all(g >= 0.5 - EPS for g in gaps(starts))
    assert starts[-1] - starts[0] < 5.0  # and not slower than asked
    assert_clean(slot)


def test_burst_allows_that_many_at_once() -> None:
    slot = HostSlot("a.test", policy(rate=1.0, burst=3))
    starts = run(lambda: starts_of(slot, 6))
    assert starts[:3] == approx([0.0, 0.0, 0.0])
    assert starts[-1] >= 3.0 - EPS


# -- concurrency --------------------------------------------------------------------


def test_concurrency_cap_is_never_exceeded() -> None:
    slot = HostSlot("a.test", policy(concurrency=3, burst=100))  # rate is not the limit here
    inside = 0
    peak = 0

    async def one() -> None:
        nonlocal inside, peak
        async with slot.request():
            inside += 1
            peak = max(peak, inside)
            assert slot.active == inside
            await asyncio.sleep(1.0)
            inside -= 1

    async def main() -> float:
        async with asyncio.TaskGroup() as tg:
            for _ in range(20):
                tg.create_task(one())
            await asyncio.sleep(0.5)
            assert (slot.active, slot.waiting) == (3, 17)
        return now()

    elapsed = run(main)
    assert peak == 3
    assert elapsed == approx(7.0)  # ceil(20 / 3) rounds of 1 s
    assert_clean(slot)


def test_slot_is_released_when_the_body_raises() -> None:
    slot = HostSlot("a.test", policy(concurrency=1))

    async def main() -> None:
        with pytest.raises(ZeroDivisionError):
            async with slot.request():
                1 / 0  # noqa: B018
        async with slot.request():
            assert slot.active == 1

    run(main)
    assert_clean(slot)


# -- crawl delay ----------------------------------------------------------------------


def test_slow_down_spaces_requests() -> None:
    slot = HostSlot("a.test", policy(rate=2.0, burst=5))
    slot.slow_down(3.0)
    starts = run(lambda: starts_of(slot, 4))
    assert all(g >= 3.0 - EPS for g in gaps(starts))
    assert "rate=0.333333/s" in repr(slot)


def test_slow_down_never_speeds_up() -> None:
    slot = HostSlot("a.test", policy(rate=2.0))
    slot.slow_down(0.1)  # 10/s would be faster than the policy's 2/s

    async def main() -> tuple[list[float], list[float]]:
        fast = await starts_of(slot, 5)
        slot.slow_down(3.0)
        slot.slow_down(1.0)  # smaller than the current delay: ignored
        slot.slow_down(float("nan"))
        slot.slow_down(float("inf"))
        slot.slow_down(-1.0)
        return fast, await starts_of(slot, 3)

    fast, slow = run(main)
    assert all(g >= 0.5 - EPS for g in gaps(fast))
    assert all(g >= 3.0 - EPS for g in gaps(slow))


def test_slow_down_counts_from_the_last_start() -> None:
    """A crawl delay applied between two requests must not let the next slip in early."""
    slot = HostSlot("a.test", policy(rate=1000.0))

    async def main() -> list[float]:
        async with slot.request():
            pass
        await asyncio.sleep(0.1)
        slot.slow_down(2.0)
        return await starts_of(slot, 2)

    assert run(main) == approx([2.0, 4.0])


@pytest.mark.parametrize(
    ("rate", "delay", "expected"),
    [
        pytest.param(1.0, 0.1, [1.0, 1.0, 1.0, 1.0], id="rate-1-delay-0.1"),
        pytest.param(0.5, 0.2, [2.0, 2.0], id="rate-0.5-delay-0.2"),
    ],
)
def test_a_crawl_delay_shorter_than_the_rate_never_shortens_a_gap(
    rate: float, delay: float, expected: list[float]
) -> None:
    """Issue 50: robots.txt is fetched at the policy's rate, its Crawl-delay applied, then
    the sitemaps. The gap after robots.txt was the delay (a fresh limiter forgot the
    token robots.txt spent): every gap must be at least 1 / rate."""
    slot = HostSlot("a.test", policy(rate=rate))

    async def main() -> list[float]:
        async with slot.request():  # robots.txt
            first = now()
        slot.slow_down(delay)
        return [first, *await starts_of_one_by_one(slot, len(expected))]

    starts = run(main)
    assert gaps(starts) == approx(expected)


async def starts_of_one_by_one(slot: HostSlot, n: int) -> list[float]:
    """Start times of ``n`` requests made one after the other (a host worker's sitemaps)."""
    starts = []
    for _ in range(n):
        async with slot.request():
            starts.append(now())
    return starts


def test_slow_down_applies_to_requests_already_waiting() -> None:
    slot = HostSlot("a.test", policy(rate=1.0))

    async def main() -> list[float]:
        task = asyncio.create_task(starts_of(slot, 4))
        await asyncio.sleep(0.5)  # first started at 0, the rest wait for tokens
        slot.slow_down(5.0)
        return await task

    starts = run(main)
    assert starts[0] == approx(0.0)
    assert all(g >= 5.0 - EPS for g in gaps(starts))


# -- backoff --------------------------------------------------------------------------


def test_back_off_delays_the_next_start() -> None:
    slot = HostSlot("a.test", policy())

    async def main() -> list[float]:
        async with slot.request():
            slot.back_off(10.0)
        return await starts_of(slot, 2)

    assert run(main) == pytest.approx([10.0, 10.001], abs=EPS)


def test_back_off_extends_but_never_shortens() -> None:
    slot = HostSlot("a.test", policy())

    async def main() -> float:
        slot.back_off(10.0)
        slot.back_off(2.0)
        slot.back_off(0.0)
        slot.back_off(-5.0)
        async with slot.request():
            return now()

    assert run(main) == approx(10.0)


def test_back_off_rejects_infinity() -> None:
    slot = HostSlot("a.test", policy(), clock=lambda: 0.0)
    with pytest.raises(ValueError, match="finite"):
        slot.back_off(float("inf"))


def test_back_off_reaches_requests_that_hold_a_slot_or_a_token() -> None:
    """Requests queued behind the limiter when a 429 arrives still wait for the window."""
    slot = HostSlot("a.test", policy(rate=1.0))

    async def main() -> list[float]:
        task = asyncio.create_task(starts_of(slot, 3))
        await asyncio.sleep(0.5)  # one started, two hold slots and wait for tokens
        slot.back_off(5.0)  # until t=5.5
        return await task

    starts = run(main)
    assert starts[0] == approx(0.0)
    assert starts[1] >= 5.5 - EPS
    assert starts[2] - starts[1] >= 1.0 - EPS  # the rate still holds after the window


def test_injected_clock_drives_the_backoff_window() -> None:
    clock_now = [100.0]
    slot = HostSlot("a.test", policy(), clock=lambda: clock_now[0])
    slot.back_off(30.0)
    assert "next start in 30.000s" in repr(slot)
    clock_now[0] = 131.0

    async def main() -> float:
        async with slot.request():
            return now()

    assert run(main) == approx(0.0)  # the window is over by the injected clock: no wait


# -- cancellation ---------------------------------------------------------------------


def test_cancel_while_waiting_for_a_concurrency_slot() -> None:
    slot = HostSlot("a.test", policy(concurrency=1))

    async def main() -> None:
        release = asyncio.Event()

        async def holder() -> None:
            async with slot.request():
                await release.wait()

        async def waiter() -> None:
            async with slot.request():
                raise AssertionError("the cancelled waiter must not get in")

        held = asyncio.create_task(holder())
        waiting = asyncio.create_task(waiter())
        await asyncio.sleep(1)
        assert (slot.active, slot.waiting) == (1, 1)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (slot.active, slot.waiting, slot._holding) == (1, 0, 1)
        release.set()
        await held
        assert_clean(slot)
        async with slot.request():  # the slot is free again
            assert slot.active == 1

    run(main)
    assert_clean(slot)


def test_cancel_while_waiting_for_a_rate_token() -> None:
    slot = HostSlot("a.test", policy(concurrency=2, rate=0.1))

    async def main() -> None:
        async with slot.request():  # takes the only token for 10 s
            waiting = asyncio.create_task(starts_of(slot, 1))
            await asyncio.sleep(1)
            assert (slot.active, slot.waiting, slot._holding) == (1, 1, 2)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            assert (slot.active, slot.waiting, slot._holding) == (1, 0, 1)
        # The cancelled waiter spent no token: the next one comes at t=10.
        assert await starts_of(slot, 1) == approx([10.0])

    run(main)
    assert_clean(slot)


def test_cancel_while_in_the_backoff_window() -> None:
    slot = HostSlot("a.test", policy(concurrency=1))

    async def main() -> None:
        slot.back_off(60.0)
        waiting = asyncio.create_task(starts_of(slot, 1))
        await asyncio.sleep(1)
        assert (slot.active, slot.waiting, slot._holding) == (0, 1, 0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting

    run(main)
    assert_clean(slot)


def test_cancel_right_after_the_slot_was_handed_over_passes_it_on() -> None:
    """The hand-over race: A's exit gives the slot to B, B is cancelled before it runs."""
    slot = HostSlot("a.test", policy(concurrency=1))
    order: list[str] = []
    tasks: dict[str, asyncio.Task[None]] = {}

    async def user(name: str, hold: float = 0.0) -> None:
        async with slot.request():
            order.append(name)
            await asyncio.sleep(hold)

    async def first() -> None:
        await user("a", hold=1.0)
        # Same step as A's exit: B's future is resolved, B has not resumed yet.
        assert not tasks["b"].done()
        tasks["b"].cancel()

    async def main() -> None:
        a = asyncio.create_task(first())
        await asyncio.sleep(0)
        tasks["b"] = asyncio.create_task(user("b"))
        c = asyncio.create_task(user("c"))
        await asyncio.sleep(0.5)
        assert slot.waiting == 2
        await asyncio.gather(a, tasks["b"], c, return_exceptions=True)
        assert tasks["b"].cancelled()

    run(main)
    assert order == ["a", "c"]
    assert_clean(slot)


def test_invalid_policy_is_refused() -> None:
    # A zero rate would divide by zero in the limiter: the config refuses it up front.
    with pytest.raises(ConfigError, match="concurrency: must be > 0"):
        HostPolicy(concurrency=0)
    with pytest.raises(ConfigError, match="rate: must be > 0"):
        HostPolicy(rate=0.0)


def test_repr_shows_live_state() -> None:
    slot = HostSlot("a.test", policy(concurrency=2, rate=2.0))

    async def main() -> str:
        async with slot.request():
            return repr(slot)

    text = run(main)
    assert text.startswith("<HostSlot a.test active=1/2 waiting=0 rate=2/s next start in")
    assert "next start unknown" in repr(slot)  # no loop, no clock: still printable


# -- Scheduler --------------------------------------------------------------------------


def test_scheduler_shares_slots_and_refcounts() -> None:
    scheduler = Scheduler(PolitenessConfig())
    a1 = scheduler.acquire("a.test")
    a2 = scheduler.acquire("a.test")
    b = scheduler.acquire("b.test")
    assert a1 is a2
    assert a1 is not b
    assert len(scheduler) == 2

    scheduler.release("a.test")
    assert len(scheduler) == 2  # one holder left
    assert scheduler.acquire("a.test") is a1
    scheduler.release("a.test")
    scheduler.release("a.test")
    assert len(scheduler) == 1  # dropped at zero: no idle slot lingers
    scheduler.release("b.test")
    assert len(scheduler) == 0
    assert repr(scheduler) == "<Scheduler slots=0>"

    assert scheduler.acquire("a.test") is not a1  # a new slot, fresh state
    with pytest.raises(KeyError, match=r"c\.test"):
        scheduler.release("c.test")


def test_scheduler_applies_host_overrides() -> None:
    fast = HostPolicy(concurrency=8, rate=50.0)
    cfg = PolitenessConfig(
        default=HostPolicy(concurrency=1), hosts=MappingProxyType({"fast.test": fast})
    )
    scheduler = Scheduler(cfg)
    assert scheduler.acquire("fast.test").policy is fast
    assert scheduler.acquire("fast.test:8080").policy is fast  # the port falls back to the name
    assert scheduler.acquire("slow.test").policy.concurrency == 1
    assert scheduler.acquire("[::1]:8080").policy.concurrency == 1


def test_scheduler_passes_its_clock_to_slots() -> None:
    scheduler = Scheduler(PolitenessConfig(), clock=lambda: 50.0)
    slot = scheduler.acquire("a.test")
    slot.back_off(5.0)
    assert slot._backoff_until == 55.0


def test_scheduler_slots_are_shared_by_all_users_of_a_host() -> None:
    scheduler = Scheduler(PolitenessConfig(default=policy(rate=1.0)))

    async def worker() -> list[float]:
        slot = scheduler.acquire("a.test")
        try:
            return await starts_of(slot, 2)
        finally:
            scheduler.release("a.test")

    async def main() -> list[float]:
        results = await asyncio.gather(worker(), worker())
        return sorted(results[0] + results[1])

    starts = run(main)
    assert all(g >= 1.0 - EPS for g in gaps(starts))  # one rate across both workers
    assert len(scheduler) == 0


# -- host_key ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("http://example.com/sitemap.xml", "example.com"),
        ("http://example.com:80/", "example.com"),
        ("https://example.com:443/", "example.com"),
        ("https://example.com:80/", "example.com:80"),
        ("http://example.com:443/", "example.com:443"),
        ("HTTP://WWW.Example.COM/Path", "www.example.com"),
        ("http://127.0.0.2:8080/robots.txt", "127.0.0.2:8080"),
        ("http://[::1]/", "[::1]"),
        ("http://[::1]:8080/", "[::1]:8080"),
        ("https://[2001:DB8::1]:443/", "[2001:db8::1]"),
        ("http://example.com./", "example.com"),
        ("http://Bücher.de/", "xn--bcher-kva.de"),
        ("http://user:pw@example.com:8000/", "example.com:8000"),
    ],
)
def test_host_key(url: str, key: str) -> None:
    assert host_key(url) == key


@pytest.mark.parametrize("url", ["/relative/path", "mailto:someone@example.com", ""])
def test_host_key_needs_a_host(url: str) -> None:
    with pytest.raises(ValueError, match="no host"):
        host_key(url)


def test_a_slot_is_first_contact_until_the_host_answers() -> None:
    slot = HostSlot("a.test", HostPolicy(), clock=lambda: 0.0)
    states = [(slot.answered, repr(slot))]
    slot.mark_answered()
    states.append((slot.answered, repr(slot)))
    assert [answered for answered, _ in states] == [False, True]
    assert states[0][1].endswith("first contact>")
    assert states[1][1].endswith(" answered>")
