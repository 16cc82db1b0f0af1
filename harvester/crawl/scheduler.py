"""Scheduler stage: per-host politeness, owned in one place.

In: a host key (``host_key(url)``) and the ``PolitenessConfig``. Out: a shared
``HostSlot`` whose ``request()`` context admits one HTTP request at a time
when the host allows it. Everything that talks to one host in this process
goes through that host's slot, so politeness is exact per shard (a host lives
in exactly one shard, see DESIGN.md) and visible in one object, like Scrapy's
downloader slots.

A request is admitted when, in this order:

1. the host's backoff window is over (``back_off``, from 429/503 Retry-After),
2. a concurrency slot is free (``policy.concurrency``),
3. the crawl-delay spacing since the last start has passed (``slow_down``), and
4. the rate limiter (aiolimiter, ``policy.rate`` with ``policy.burst``) gives a token.

Example::

    scheduler = Scheduler(cfg.politeness)
    key = host_key("https://example.com/sitemap.xml")
    slot = scheduler.acquire(key)
    try:
        async with slot.request():
            ...  # one HTTP request (fetch.Fetcher.stream holds this for us)
    finally:
        scheduler.release(key)
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque
from typing import TYPE_CHECKING

from aiolimiter import AsyncLimiter
from yarl import URL

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable
    from contextlib import AbstractAsyncContextManager

    from harvester.config import HostPolicy, PolitenessConfig

__all__ = ["HostSlot", "Scheduler", "host_key"]


def host_key(url: str) -> str:
    """Return the politeness key of ``url``: lower-case host, plus ``:port`` if not the default.

    IPv6 hosts keep their brackets (``[::1]:8080``), international names are
    IDNA-encoded and a trailing dot is dropped, so every spelling of one
    authority maps to one slot. Keyed here, in one function, so that keying by
    registrable domain or by IP can replace it later.

    >>> host_key("HTTP://Example.COM:80/sitemap.xml")
    'example.com'
    >>> host_key("http://127.0.0.2:8080/")
    '127.0.0.2:8080'
    """
    parsed = URL(url)
    # raw_host, never host: yarl's host IDNA-decodes, and raises on a label that
    # claims to be an A-label and is none (xn--zz), which a stranger's sitemap may list.
    if not parsed.raw_host:
        raise ValueError(f"URL has no host: {url!r}")
    # yarl drops the port when it is the scheme's default and lower-cases the host.
    key = parsed.host_port_subcomponent
    assert key is not None  # a URL with a host always has this subcomponent
    return key


class HostSlot:
    """Politeness for one host: concurrency cap, request rate (aiolimiter), backoff window.

    ``request()`` waits until the host may receive one more request and holds
    a concurrency slot until the context exits. ``slow_down`` applies a
    robots.txt Crawl-delay, ``back_off`` pauses the host after a 429/503. Both
    only ever make the host slower. Times come from ``clock`` (seconds,
    monotonic), defaulting to the running loop's ``time()``; the waits are loop
    sleeps, so an injected clock must move at the loop's pace (or jump ahead).

    Example::

        slot = HostSlot("example.com", HostPolicy(concurrency=2, rate=2.0))
        async with slot.request():   # at most 2 inside, at most 2 starts per second
            ...
        slot.back_off(30.0)          # Retry-After: nothing new starts for 30 s
    """

    __slots__ = (
        "_active",
        "_answered",
        "_backoff_until",
        "_clock",
        "_holding",
        "_last_start",
        "_limiter",
        "_min_interval",
        "_slot_waiters",
        "_waiting",
        "host",
        "policy",
    )

    def __init__(
        self, host: str, policy: HostPolicy, *, clock: Callable[[], float] | None = None
    ) -> None:
        if policy.concurrency < 1 or policy.rate <= 0 or policy.burst < 1:
            raise ValueError(f"host policy for {host} needs concurrency, rate and burst > 0")
        self.host = host
        self.policy = policy
        self._clock = clock  # None: the running loop's time(), looked up per call
        # aiolimiter reads loop.time() itself; it binds to a loop lazily, so a
        # slot may be built outside the loop that later uses it.
        self._limiter = AsyncLimiter(policy.burst, policy.burst / policy.rate)
        self._min_interval = 0.0  # with a crawl delay: least seconds between two starts
        self._last_start = -math.inf  # clock time of the latest admitted request
        self._backoff_until = -math.inf  # clock time before which nothing may start
        self._holding = 0  # concurrency slots taken (started + waiting for a token)
        self._slot_waiters: deque[asyncio.Future[None]] = deque()  # FIFO for fairness
        self._active = 0  # requests admitted and not yet finished
        self._waiting = 0  # requests inside request() not yet admitted
        self._answered = False  # the host sent a response once (fetch's first-contact rules)

    @property
    def active(self) -> int:
        """Requests admitted by ``request()`` and not finished yet."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests inside ``request()`` still waiting to be admitted."""
        return self._waiting

    @property
    def interval(self) -> float:
        """Least seconds between two request starts in the long run: the Crawl-delay
        spacing (``slow_down``) or ``1 / policy.rate``, whichever is longer (a chain of
        n requests takes about n times this; run/lookahead.py predicts with it)."""
        return max(self._min_interval, 1.0 / self.policy.rate)

    @property
    def answered(self) -> bool:
        """Has the host answered a request through this slot (any status)?

        Until it has, the fetcher treats every request as first contact: a
        timeout is final (no retry, no http fallback), so a dead host costs one
        timeout, not ``retries + 1`` of them.
        """
        return self._answered

    def mark_answered(self) -> None:
        """Record that the host sent a response (the fetcher calls this on response headers)."""
        self._answered = True

    def request(self) -> AbstractAsyncContextManager[None]:
        """Wait until one more request may start on this host; hold its slot until exit.

        Cancellation while waiting gives back exactly what was taken so far
        (a concurrency slot, never a rate token: aiolimiter only counts a token
        once ``acquire`` returns).
        """
        return self._request()

    @contextlib.asynccontextmanager
    async def _request(self) -> AsyncIterator[None]:
        self._waiting += 1
        started = False
        holding = False
        try:
            # Wait out a backoff before queueing for a slot, so a paused host
            # does not tie up slots that an early finisher could use. A loop,
            # not an Event: the window is a deadline back_off() may push later.
            while (delay := self._backoff_until - self._now()) > 0:  # noqa: ASYNC110
                await asyncio.sleep(delay)
            await self._take_slot()
            holding = True  # no await since _take_slot returned: cannot be lost
            while not started:
                delay = self._start_delay()
                if delay > 0:
                    await asyncio.sleep(delay)
                    continue
                await self._limiter.acquire()
                # A back_off() or slow_down() may have run while we waited for
                # the token: _try_start re-checks and, if so, we take a fresh
                # token later (the spent one only makes us slower, never faster).
                started = self._try_start()
            yield
        finally:
            if started:
                self._active -= 1
            else:
                self._waiting -= 1
            if holding:
                self._give_slot()

    def slow_down(self, min_interval: float) -> None:
        """Start requests at least ``min_interval`` seconds apart (robots.txt Crawl-delay).

        Only ever slows down, on every gap: an interval no longer than the current
        one changes nothing, and the rate never rises above ``policy.rate`` (an
        interval shorter than ``1 / policy.rate`` keeps that rate, minus its bursts).
        Non-positive and non-finite values are ignored.
        """
        # `not >` also rejects NaN; inf would stop the host forever.
        if not min_interval > 0 or not math.isfinite(min_interval):
            return
        # Burst 1: "at least this far apart" rules out bursts, so the spacing alone
        # says when the next start may come, counted from the last one (_start_delay).
        # The limiter stays as it is: swapping in a fresh one forgot the token just
        # spent and let the next request in after the delay alone, faster than the rate.
        spacing = max(min_interval, 1.0 / self.policy.rate)
        if spacing > self._min_interval:
            self._min_interval = spacing

    def back_off(self, seconds: float) -> None:
        """Start no new request before ``clock() + seconds`` (429/503 Retry-After).

        Extends the current window, never shortens it; ``seconds <= 0`` is a no-op.
        Requests already admitted are not interrupted.
        """
        if not math.isfinite(seconds):
            raise ValueError(f"back_off needs a finite number of seconds, got {seconds!r}")
        self._backoff_until = max(self._backoff_until, self._now() + seconds)

    def __repr__(self) -> str:
        policy = self.policy
        try:
            next_in = max(self._start_delay(), 0.0)
            when = f"next start in {next_in:.3f}s"
        except RuntimeError:  # no running loop and no injected clock
            when = "next start unknown"
        rate = min(policy.rate, 1.0 / self._min_interval) if self._min_interval else policy.rate
        contact = "answered" if self._answered else "first contact"
        return (
            f"<HostSlot {self.host} active={self._active}/{policy.concurrency} "
            f"waiting={self._waiting} rate={rate:g}/s {when} {contact}>"
        )

    # State transitions below are plain defs: no await between check and
    # mutation, so no other task can observe or break a half-done change.

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def _start_delay(self) -> float:
        """Seconds until the backoff window and the crawl-delay spacing both allow a start."""
        not_before = max(self._backoff_until, self._last_start + self._min_interval)
        return not_before - self._now()

    def _try_start(self) -> bool:
        """Admit the caller that just got a token from the limiter, if still allowed."""
        if self._start_delay() > 0:
            return False
        self._waiting -= 1
        self._active += 1
        self._last_start = self._now()
        return True

    async def _take_slot(self) -> None:
        """Take one concurrency slot, waiting in FIFO order when all are taken."""
        if self._holding < self.policy.concurrency and not self._slot_waiters:
            self._holding += 1
            return
        fut = asyncio.get_running_loop().create_future()
        self._slot_waiters.append(fut)
        try:
            # _give_slot hands its slot over by resolving fut (_holding unchanged).
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                # Cancelled after the hand-over but before we resumed: the slot
                # is ours now, so pass it on rather than leak it.
                self._give_slot()
            else:
                # Still queued, unless a _give_slot already popped it (it skips
                # cancelled futures). Remove it now: a stale entry would keep
                # the fast path above closed while slots are free.
                with contextlib.suppress(ValueError):
                    self._slot_waiters.remove(fut)
            raise

    def _give_slot(self) -> None:
        """Hand our slot to the longest waiter, or free it when nobody waits."""
        while self._slot_waiters:
            fut = self._slot_waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                return
        self._holding -= 1


class Scheduler:
    """Owns every ``HostSlot`` of this process: ``dict[str, HostSlot]``, refcounted.

    Everything working on one host shares its slot. ``acquire`` creates the
    slot on first use with the host's policy (``PolitenessConfig.policy_for``),
    ``release`` drops it once nobody holds it, so no idle slots linger. Hold a
    slot for as long as its state (backoff, crawl delay) should last: a host
    worker acquires once per host, not once per file.

    Example::

        scheduler = Scheduler(cfg.politeness)
        slot = scheduler.acquire("example.com")
        try:
            ...
        finally:
            scheduler.release("example.com")
    """

    def __init__(self, cfg: PolitenessConfig, *, clock: Callable[[], float] | None = None) -> None:
        self._cfg = cfg
        self._clock = clock  # handed to every slot
        self._slots: dict[str, HostSlot] = {}  # host key -> its one slot
        self._refs: dict[str, int] = {}  # host key -> holders; a key leaves both dicts at 0

    def acquire(self, host: str) -> HostSlot:
        """Return the slot of ``host`` (a ``host_key``), creating it on first use."""
        slot = self._slots.get(host)
        if slot is None:
            slot = self._slots[host] = HostSlot(host, self._policy(host), clock=self._clock)
            self._refs[host] = 0
        self._refs[host] += 1
        return slot

    def release(self, host: str) -> None:
        """Give back one hold on ``host``'s slot; the slot is dropped when none remain."""
        refs = self._refs.get(host)
        if refs is None:
            raise KeyError(f"release of {host!r}, which holds no slot")
        if refs > 1:
            self._refs[host] = refs - 1
        else:
            del self._refs[host], self._slots[host]

    def __len__(self) -> int:
        return len(self._slots)

    def __repr__(self) -> str:
        return f"<Scheduler slots={len(self._slots)}>"

    def _policy(self, host: str) -> HostPolicy:
        # Overrides are keyed by host name; a key with a port falls back to it.
        if host in self._cfg.hosts:
            return self._cfg.hosts[host]
        name, sep, port = host.rpartition(":")
        if sep and port.isdigit():
            return self._cfg.policy_for(name)
        return self._cfg.default
